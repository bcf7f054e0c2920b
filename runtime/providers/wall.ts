/**
 * The OS wall (DESIGN §2 "Walls are allowlists"): the bubblewrap arguments that show a command —
 * a shell run, or the JIT sandbox's Deno — only what it needs, and nothing else of the host.
 *
 * A shell run's wall, in mount order:
 * - the system directories programs need, read-only: `/usr` (required), and `/bin`, `/sbin`,
 *   `/lib`, `/lib32`, `/lib64`, `/libx32` where they exist (merged-`/usr` systems make them
 *   links into `/usr`; a bind follows the link);
 * - `/etc` read-only, with every credential file of {@link ETC_CREDENTIALS} that exists covered
 *   by an empty read-only file (a directory: by an empty tmpfs) — decided at each run by the
 *   launcher script, which runs outside Deno's permissions (the runtime needs no read permission
 *   on `/etc`, and a file created since the last run is covered too);
 * - a fresh `/dev` (null, zero, random, tty, …), a fresh `/proc` of the run's own PID
 *   namespace, a private `/tmp`;
 * - the operator's toolchain directories, read-only (`--toolchain`);
 * - the workspace (read-write, or read-only under the read-only and plan modes), then, over it,
 *   what libos keeps of its own inside it (hidden), the shield's masks and read-only paths;
 * - the per-process scratch `HOME`, read-write, and libos's git configuration, read-only;
 * - then the root is remounted read-only: nothing else exists — not the user's home, not the
 *   state or configuration directories, not an env file, not `/root`, `/srv`, `/opt`, `/var`,
 *   `/home`, `/mnt`, `/media`, `/run` (with the network allowed, only systemd-resolved's settings
 *   directory of it, read-only, so that names resolve).
 *
 * Inside, no privileges: a user namespace of its own in which the command is uid/gid 65534
 * (`nobody`; every host file it may touch appears as its own, so git's ownership check holds),
 * every capability dropped (bounding set included), no-new-privs (bubblewrap sets it), no
 * further user namespaces (`--disable-userns`), new PID/IPC/UTS/cgroup namespaces and, unless the
 * run may use the network, a network namespace with nothing in it; the seccomp filter of
 * `_seccomp.ts` refuses Unix-domain sockets and io_uring.
 *
 * Fail closed: a bind that cannot be made stops bubblewrap before the command starts (`bwrap:`
 * on stderr, exit 1), as does a credential path the launcher cannot resolve (`libos-wall:`,
 * exit 125); {@link wallFailure} recognises both, and the shell primitive refuses the run with
 * `wall_incomplete` instead of reporting it as the command's failure.
 *
 * @module
 */
import { filterSupported, unixSocketFilter } from "./_seccomp.ts";

/**
 * The wall's seccomp filter for this machine's CPU (see `_seccomp.ts`), or undefined where no
 * filter exists (then there is no wall: it never runs without one).
 */
export function seccompFilter(): Uint8Array | undefined {
  const arch = Deno.build.arch;
  return filterSupported(arch) ? unixSocketFilter(arch) : undefined;
}

/** The OS wall for one run. */
export interface WallSpec {
  /** The workspace, bound at the same path. */
  readonly workspace: string;
  /** Whether the workspace is bound read-write (read-only under the read-only and plan modes). */
  readonly writable: boolean;
  /** A scratch home bound read-write at the same path (HOME points there). */
  readonly home: string;
  /** Whether the run may use the network (a `net` capability was granted). */
  readonly network: boolean;
  /** Toolchain directories the operator added, bound read-only at the same path. */
  readonly toolchains?: readonly string[];
  /** Files or directories bound read-only (after the workspace: over it where inside it). */
  readonly readOnly?: readonly string[];
  /**
   * Directories inside the workspace replaced by an empty tmpfs: what libos keeps of its own
   * there (its state or configuration directory, when the workspace contains it).
   */
  readonly hidden?: readonly string[];
  /** Files covered by an empty read-only file, after every other bind. */
  readonly masked?: readonly string[];
}

/**
 * Credential files and directories under `/etc` (globs allowed) that no walled command sees:
 * covered when they exist. Whatever else `/etc` holds stays readable (programs need it: the
 * loader cache, users and groups, certificates, alternatives, locales, resolver settings).
 */
export const ETC_CREDENTIALS: readonly { readonly path: string; readonly why: string }[] = Object
  .freeze([
    { path: "/etc/shadow", why: "password hashes" },
    { path: "/etc/shadow-", why: "password hashes (backup)" },
    { path: "/etc/gshadow", why: "group password hashes" },
    { path: "/etc/gshadow-", why: "group password hashes (backup)" },
    { path: "/etc/security/opasswd", why: "old password hashes" },
    { path: "/etc/sudoers", why: "who may become root, and how" },
    { path: "/etc/sudoers.d", why: "who may become root, and how" },
    { path: "/etc/ssh/ssh_host_*key", why: "SSH host private keys" },
    { path: "/etc/ssl/private", why: "TLS private keys (Debian)" },
    { path: "/etc/pki/tls/private", why: "TLS private keys (Red Hat)" },
    { path: "/etc/pki/CA/private", why: "CA private keys (Red Hat)" },
    { path: "/etc/letsencrypt", why: "ACME account and certificate keys" },
    { path: "/etc/krb5.keytab", why: "Kerberos service keys" },
    { path: "/etc/ipsec.secrets", why: "IPsec pre-shared keys" },
    { path: "/etc/ipsec.d/private", why: "IPsec private keys" },
    { path: "/etc/ppp/chap-secrets", why: "PPP passwords" },
    { path: "/etc/ppp/pap-secrets", why: "PPP passwords" },
    { path: "/etc/wireguard", why: "WireGuard private keys" },
    { path: "/etc/openvpn", why: "OpenVPN keys and credentials" },
    { path: "/etc/NetworkManager/system-connections", why: "Wi-Fi and VPN secrets" },
    { path: "/etc/wpa_supplicant", why: "Wi-Fi pre-shared keys" },
    { path: "/etc/netplan", why: "network settings with Wi-Fi secrets" },
    { path: "/etc/mysql/debian.cnf", why: "MySQL maintenance password" },
    { path: "/etc/postfix/sasl_passwd*", why: "mail relay passwords" },
    { path: "/etc/exim4/passwd.client", why: "mail relay passwords" },
    { path: "/etc/ssmtp", why: "mail relay passwords" },
    { path: "/etc/msmtprc", why: "mail relay passwords" },
    { path: "/etc/davfs2/secrets", why: "WebDAV passwords" },
    { path: "/etc/ceph/*.keyring", why: "Ceph keys" },
    { path: "/etc/kubernetes", why: "cluster credentials and PKI" },
    { path: "/etc/rancher", why: "k3s cluster credentials" },
    { path: "/etc/apt/auth.conf", why: "package repository credentials" },
    { path: "/etc/apt/auth.conf.d", why: "package repository credentials" },
    { path: "/etc/credstore", why: "systemd credentials" },
    { path: "/etc/credstore.encrypted", why: "systemd credentials" },
    { path: "/etc/sssd", why: "directory service bind passwords" },
    { path: "/etc/ldap.secret", why: "LDAP bind password" },
    { path: "/etc/gitlab/gitlab-secrets.json", why: "GitLab secrets" },
    { path: "/etc/docker/key.json", why: "Docker daemon key" },
    { path: "/etc/cups/ssl", why: "printing service TLS keys" },
    { path: "/etc/vault.d", why: "Vault configuration and tokens" },
  ]);

/** System directories bound read-only when they exist (`/usr` is required). */
export const SYSTEM_DIRECTORIES: readonly string[] = Object.freeze([
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
]);

/** The uid and gid a walled command runs as, inside its own user namespace. */
export const WALL_UID = 65534;

/** The namespaces and privileges of every walled command (the network one is added apart). */
export const WALL_ISOLATION: readonly string[] = Object.freeze([
  "--unshare-user",
  "--uid",
  String(WALL_UID),
  "--gid",
  String(WALL_UID),
  "--disable-userns",
  "--unshare-pid",
  "--unshare-ipc",
  "--unshare-uts",
  "--unshare-cgroup-try",
  // No capabilities inside, bounding set included: a runtime started as root would otherwise
  // hand the command every capability in its own namespaces.
  "--cap-drop",
  "ALL",
  // The run ends with its launcher, and cannot reach the caller's terminal.
  "--die-with-parent",
  "--new-session",
]);

/** Where systemd-resolved keeps the resolver settings `/etc/resolv.conf` may link to. */
const RESOLVED = "/run/systemd/resolve";

/** What every wall mounts of its own: a fresh `/dev` and `/proc`, a private `/tmp`. */
const PRIVATE_MOUNTS: readonly string[] = Object.freeze([
  "--dev",
  "/dev",
  "--proc",
  "/proc",
  "--tmpfs",
  "/tmp",
]);

/**
 * How every wall's options end: the root remounted read-only (nothing but the binds can be
 * written), the isolation, and no network unless it is allowed.
 */
function sealed(network: boolean): string[] {
  return ["--remount-ro", "/", ...WALL_ISOLATION, ...(network ? [] : ["--unshare-net"])];
}

/**
 * The options of the wall's probe: every mount, namespace and privilege flag a shell run's wall
 * uses (its launcher adds the credential covers and the seccomp filter), without a workspace.
 */
export function probeOptions(): string[] {
  return [...PRIVATE_MOUNTS, ...sealed(false)];
}

/** The prefix of the launcher's own failure messages on stderr. */
export const LAUNCHER_FAILURE = "libos-wall: ";

/** Single-quotes a constant for the launcher script. */
function quoted(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * The launcher script: opens the seccomp filter (`$0`) on fd 3, covers the credential paths of
 * `$3` that exist (a link is followed to where it leads; a dangling one has nothing to show),
 * then execs bubblewrap (`$1`) with the system directories, `/etc`, the covers, and the rest of
 * its arguments. `$2` is the empty file that covers a credential file.
 */
function launcherScript(): string {
  const system = SYSTEM_DIRECTORIES.map((dir) =>
    `${dir === "/usr" ? "--ro-bind" : "--ro-bind-try"} ${quoted(dir)} ${quoted(dir)}`
  ).join(" ");
  return [
    `exec 3<"$0" || { echo "${LAUNCHER_FAILURE}cannot open the seccomp filter $0" >&2; exit 125; }`,
    `b=$1 empty=$2 list=$3`,
    `shift 3`,
    // Unquoted on purpose: the list is libos's own constant globs, expanded here.
    `for p in $list; do`,
    `  [ -e "$p" ] || continue`,
    `  if [ -L "$p" ]; then`,
    `    r=/usr/bin/readlink; [ -x "$r" ] || r=/bin/readlink`,
    `    p=$("$r" -f -- "$p") || { echo "${LAUNCHER_FAILURE}cannot resolve $p" >&2; exit 125; }`,
    `    case $p in /etc/*|/usr/*) ;; *) continue ;; esac`,
    `  fi`,
    `  if [ -d "$p" ]; then set -- --tmpfs "$p" "$@"; else set -- --ro-bind "$empty" "$p" "$@"; fi`,
    `done`,
    `exec "$b" --seccomp 3 ${system} --ro-bind /etc /etc "$@"`,
  ].join("\n");
}

/** The host programs the wall is started through. */
export interface WallTools {
  readonly sh: string;
  readonly bwrap: string;
}

/** Where the launcher finds its filter and its cover file. */
export interface WallFiles {
  /** The seccomp filter (see `_seccomp.ts`). */
  readonly seccomp: string;
  /** An empty read-only regular file (the cover of a credential or secret file). */
  readonly empty: string;
}

/**
 * The argv that starts bubblewrap for a shell run: the launcher, the system directories, `/etc`
 * with its credential covers, then `options` (the run's own mounts and isolation, up to `--`).
 */
export function wallLauncher(
  tools: WallTools,
  files: WallFiles,
  options: readonly string[],
): string[] {
  return [
    tools.sh,
    "-c",
    launcherScript(),
    files.seccomp,
    tools.bwrap,
    files.empty,
    ETC_CREDENTIALS.map((c) => c.path).join(" "),
    ...options,
  ];
}

/**
 * A shell run's mounts after `/etc` (see the module documentation), its isolation and network
 * choice, up to and excluding `--`.
 */
export function wallOptions(wall: WallSpec, empty: string): string[] {
  const ro = (path: string) => ["--ro-bind", path, path];
  return [
    ...PRIVATE_MOUNTS,
    ...(wall.toolchains ?? []).flatMap(ro),
    wall.writable ? "--bind" : "--ro-bind",
    wall.workspace,
    wall.workspace,
    ...(wall.hidden ?? []).flatMap((path) => ["--tmpfs", path]),
    "--bind",
    wall.home,
    wall.home,
    ...(wall.readOnly ?? []).flatMap(ro),
    ...(wall.masked ?? []).flatMap((path) => ["--ro-bind", empty, path]),
    // With the network, the resolver's settings where systemd-resolved keeps them (`/etc/resolv.conf`
    // is a link there on such hosts): names resolve as on the host. Nothing else of `/run`.
    ...(wall.network ? ["--ro-bind-try", RESOLVED, RESOLVED] : []),
    ...sealed(wall.network),
  ];
}

/**
 * Whether a finished run is the wall failing to start rather than the command's own result:
 * bubblewrap's setup errors (`bwrap: …`, exit 1) and the launcher's (`libos-wall: …`, exit 125)
 * come before the command runs. Returns the message, or null.
 */
export function wallFailure(exitCode: number | null, stderr: string): string | null {
  if (exitCode === 1 && stderr.startsWith("bwrap: ")) return stderr.trim().slice(0, 500);
  if (exitCode === 125 && stderr.startsWith(LAUNCHER_FAILURE)) {
    return stderr.trim().slice(0, 500);
  }
  return null;
}

/** Where the JIT sandbox's Deno and its files appear inside its wall. */
export const SANDBOX_DENO = "/deno";
/** The sandbox's own directory inside its wall (harness, vendor, import map, cache, cwd). */
export const SANDBOX_DIR = "/sandbox";

/**
 * Library directories the sandbox's Deno needs (its dynamic loader and the C library), bound
 * read-only where they exist: it is dynamically linked.
 */
const LIBRARY_DIRECTORIES: readonly string[] = Object.freeze([
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/usr/lib",
  "/usr/lib32",
  "/usr/lib64",
  "/usr/libx32",
]);

/** The JIT sandbox's wall for one process. */
export interface SandboxWallSpec {
  /** The Deno executable on the host (bound read-only at {@link SANDBOX_DENO}). */
  readonly deno: string;
  /** The process's own temporary directory (bound read-only at {@link SANDBOX_DIR}). */
  readonly dir: string;
  /** Subdirectories of `dir` bound read-write (the cache `DENO_DIR`, the empty cwd). */
  readonly writable: readonly string[];
}

/**
 * The argv that starts the JIT sandbox's Deno (`command`, which names {@link SANDBOX_DENO} and
 * paths under {@link SANDBOX_DIR}) inside its wall: the Deno binary, the libraries it links,
 * its own directory, a fresh `/dev` and `/proc`, a private `/tmp` — no `/etc`, no workspace, no
 * home, no network — as uid 65534 without capabilities, with the seccomp filter.
 */
export function sandboxWallArgv(
  tools: WallTools,
  seccomp: string,
  spec: SandboxWallSpec,
  command: readonly string[],
): string[] {
  return [
    tools.sh,
    "-c",
    `exec 3<"$0" || { echo "${LAUNCHER_FAILURE}cannot open the seccomp filter $0" >&2; exit 125; }; exec "$@"`,
    seccomp,
    tools.bwrap,
    "--seccomp",
    "3",
    ...LIBRARY_DIRECTORIES.flatMap((dir) => ["--ro-bind-try", dir, dir]),
    "--ro-bind",
    spec.deno,
    SANDBOX_DENO,
    "--ro-bind",
    spec.dir,
    SANDBOX_DIR,
    ...spec.writable.flatMap((name) => ["--bind", `${spec.dir}/${name}`, `${SANDBOX_DIR}/${name}`]),
    ...PRIVATE_MOUNTS,
    ...sealed(false),
    "--chdir",
    `${SANDBOX_DIR}/cwd`,
    "--",
    ...command,
  ];
}
