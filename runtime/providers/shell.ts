/**
 * The shell provider: runs one resolved program with an explicit environment, limits and a
 * timeout, optionally inside the OS wall (bubblewrap). It is the only code that starts host
 * processes for agents, and it starts exactly one kind of process itself: `setsid`.
 *
 * How a run is launched (outermost first):
 * - `setsid`: the run gets its own session and process group, so a timeout kills the whole group
 *   (its pid is the group id);
 * - `setpriv --pdeathsig SIGKILL`: the run dies with the runtime;
 * - `prlimit`: CPU seconds, address space, file size, open files (and processes, when not root);
 * - with the wall, `bwrap`: the host read-only, the workspace read-write, a private `/tmp` and
 *   home, `/proc` and `/dev` of its own, `--unshare-pid --die-with-parent` (every process of the
 *   run dies with it, a `setsid` grandchild included), no network unless allowed, and a
 *   seccomp filter (`_seccomp.ts`) refusing Unix-domain sockets and io_uring: a read-only bind
 *   does not stop `connect(2)` to a host daemon's socket file (`/run/docker.sock`, D-Bus);
 * - the program itself, by absolute path (which is also its argv[0]: bwrap 0.8 cannot set one).
 *
 * Orphans without the wall: every run's process group is reported to a watchdog (`sh`) reading
 * from a pipe the runtime holds. When the runtime ends — closed, or SIGKILLed — the pipe closes
 * and the watchdog kills every group it was told about: a background child that outlived its call
 * dies with the runtime. (A grandchild that leaves the group with `setsid` escapes this; only the
 * wall's PID namespace holds it.)
 *
 * @module
 */
import { join, resolve } from "node:path";
import { filterSupported, unixSocketFilter } from "./_seccomp.ts";

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
  /** Files or directories made visible read-only (after the private `/tmp`, which hides them). */
  readonly readOnly?: readonly string[];
  /**
   * Existing host directories replaced by an empty tmpfs (the libos state directory, the user's
   * home): a command cannot read the database, the audit log or the user's dotfiles. Applied
   * before the workspace is bound, so a workspace inside one stays visible.
   */
  readonly hidden?: readonly string[];
  /**
   * Workspace files covered by an empty read-only file (`/dev/null`), after every other bind: a
   * command reads nothing of them and cannot change them.
   */
  readonly masked?: readonly string[];
}

/** One run. */
export interface ShellRunSpec {
  /** The program, an absolute path. */
  readonly executable: string;
  /** The arguments after the program name (argv[1…]). */
  readonly args: readonly string[];
  readonly cwd: string;
  /** The whole environment (nothing is inherited). */
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** Bytes kept of stdout and of stderr each. */
  readonly maxOutputBytes: number;
  readonly stdin?: string;
  /** The wall, or null to run on the host (still limited, grouped and watched). */
  readonly wall: WallSpec | null;
}

/** What a run did. */
export interface ShellRunResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly timedOut: boolean;
  /**
   * The command exited but something it left running still held stdout or stderr open; reading
   * stopped {@link OUTPUT_GRACE_MS} later and the call returned (what was left keeps running,
   * until the runtime ends).
   */
  readonly outputLeftOpen: boolean;
  readonly durationMs: number;
}

/** A program found for a name or path. */
export interface ResolvedProgram {
  /** The path that will run (absolute; what the approval binds). */
  readonly executable: string;
  /** Where it really leads (symbolic links resolved). */
  readonly real: string;
}

/** Runs programs for the shell primitive. */
export interface ShellProvider extends AsyncDisposable {
  /** Whether the OS wall works on this machine (probed once). */
  wallAvailable(): Promise<boolean>;
  /**
   * The program `token` names: with a `/`, that path (from `cwd`); else the first executable
   * regular file called `token` in `searchPath`. Undefined when there is none.
   */
  resolveProgram(
    token: string,
    cwd: string,
    searchPath: readonly string[],
  ): ResolvedProgram | undefined;
  run(spec: ShellRunSpec, signal?: AbortSignal): Promise<ShellRunResult>;
}

/** Where the host tools live (absolute paths: no PATH lookup for the launchers either). */
export interface HostTools {
  readonly setsid: string;
  readonly setpriv: string;
  readonly prlimit: string;
  readonly bwrap: string;
  readonly sh: string;
}

/** The standard locations on Debian-like systems. */
export const DEFAULT_TOOLS: HostTools = Object.freeze({
  setsid: "/usr/bin/setsid",
  setpriv: "/usr/bin/setpriv",
  prlimit: "/usr/bin/prlimit",
  bwrap: "/usr/bin/bwrap",
  sh: "/bin/sh",
});

/** Limits applied with prlimit. */
export interface RunLimits {
  /** Address space, bytes. */
  readonly addressSpace: number;
  /** Largest file a run may write, bytes. */
  readonly fileSize: number;
  readonly openFiles: number;
  /** Processes of the user (skipped as root, where it would count every root process). */
  readonly processes: number;
}

/** The limits when nothing else is configured. */
export const DEFAULT_RUN_LIMITS: RunLimits = Object.freeze({
  addressSpace: 16 * 1024 * 1024 * 1024,
  fileSize: 1024 * 1024 * 1024,
  openFiles: 1024,
  processes: 512,
});

/**
 * Reads a stream, keeping at most `max` bytes; the rest is drained and counted. When `stop`
 * aborts, reading ends with what was read (a process outside the run's group may hold the pipe
 * open forever).
 */
async function capped(
  stream: ReadableStream<Uint8Array>,
  max: number,
  stop: AbortSignal,
): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let truncated = false;
  const reader = stream.getReader();
  const onStop = () => reader.cancel().catch(() => {});
  stop.addEventListener("abort", onStop, { once: true });
  try {
    for (;;) {
      const { value: chunk, done } = await reader.read().catch(() => ({
        value: undefined,
        done: true as const,
      }));
      if (done || chunk === undefined) break;
      if (kept < max) {
        const take = chunk.subarray(0, Math.min(chunk.length, max - kept));
        chunks.push(take);
        kept += take.length;
        if (take.length < chunk.length) truncated = true;
      } else if (chunk.length) truncated = true;
    }
  } finally {
    stop.removeEventListener("abort", onStop);
  }
  const bytes = new Uint8Array(kept);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return { bytes, truncated };
}

/** How long output is still read after the command exited or its group was killed. */
export const OUTPUT_GRACE_MS = 1000;

/** UTF-8 text of at most the bytes kept, never ending inside a code point. */
function text(bytes: Uint8Array): string {
  return new TextDecoder("utf-8", { fatal: false }).decode(bytes).replace(/\uFFFD$/, "");
}

/**
 * Whether this process runs as root. Without `--allow-sys=uid` the answer is "no": the process
 * limit is then passed, which root's kernel accounting ignores anyway.
 */
function runsAsRoot(): boolean {
  try {
    return Deno.uid() === 0;
  } catch {
    return false;
  }
}

/** bwrap's view of the host: all of it read-only, fresh `/dev` and `/proc`, a private `/tmp`. */
const WALL_ROOT: readonly string[] = Object.freeze([
  "--ro-bind",
  "/",
  "/",
  "--dev",
  "/dev",
  "--proc",
  "/proc",
  "--tmpfs",
  "/tmp",
]);
/** The namespaces a walled run gets (the network one is added unless it may use the network). */
const WALL_NAMESPACES: readonly string[] = Object.freeze([
  "--unshare-pid",
  "--unshare-ipc",
  "--unshare-uts",
  "--unshare-cgroup-try",
]);
/**
 * No capabilities inside: a runtime started as root would otherwise hand bwrap's child every
 * capability in its own namespaces (`CAP_SYS_ADMIN` remounts `/` read-write, `CAP_MKNOD`, …).
 * Unprivileged bwrap drops them anyway; this makes root the same.
 */
const WALL_PRIVILEGES: readonly string[] = Object.freeze(["--cap-drop", "ALL"]);
/** The run ends with its launcher, and cannot reach the caller's terminal. */
const WALL_LIFETIME: readonly string[] = Object.freeze(["--die-with-parent", "--new-session"]);

/**
 * `bwrap` started with the seccomp filter on fd 3: `sh` opens the filter file and execs bwrap,
 * which reads and closes it (`--seccomp 3`, emitted here so no walled run goes without it).
 */
function bwrapLauncher(tools: HostTools, seccomp: string): string[] {
  return [tools.sh, "-c", 'exec 3<"$0" && exec "$@"', seccomp, tools.bwrap, "--seccomp", "3"];
}

/** The launcher argv around a run (see the module documentation). */
export function launchArgv(
  spec: ShellRunSpec,
  tools: HostTools,
  limits: RunLimits,
  root: boolean,
  seccomp?: string,
): string[] {
  const seconds = Math.max(1, Math.ceil(spec.timeoutMs / 1000) + 1);
  const prlimit = [
    tools.prlimit,
    `--cpu=${seconds}`,
    `--as=${limits.addressSpace}`,
    `--fsize=${limits.fileSize}`,
    `--nofile=${limits.openFiles}`,
    ...(root ? [] : [`--nproc=${limits.processes}`]),
    "--",
  ];
  const wall = spec.wall;
  if (wall && seccomp === undefined) {
    throw new TypeError("A walled run needs the seccomp filter file (see _seccomp.ts)");
  }
  const inner = wall
    ? [
      ...bwrapLauncher(tools, seccomp!),
      ...WALL_ROOT,
      ...(wall.hidden ?? []).flatMap((path) => ["--tmpfs", path]),
      wall.writable ? "--bind" : "--ro-bind",
      wall.workspace,
      wall.workspace,
      "--bind",
      wall.home,
      wall.home,
      ...(wall.readOnly ?? []).flatMap((path) => ["--ro-bind", path, path]),
      ...(wall.masked ?? []).flatMap((path) => ["--ro-bind", "/dev/null", path]),
      ...WALL_NAMESPACES,
      ...WALL_PRIVILEGES,
      ...(wall.network ? [] : ["--unshare-net"]),
      ...WALL_LIFETIME,
      "--chdir",
      spec.cwd,
      "--",
      spec.executable,
      ...spec.args,
    ]
    : [spec.executable, ...spec.args];
  return [tools.setpriv, "--pdeathsig", "SIGKILL", "--", ...prlimit, ...inner];
}

/** The host provider. */
export function hostShell(
  options: { readonly tools?: HostTools; readonly limits?: RunLimits } = {},
): ShellProvider {
  const tools = options.tools ?? DEFAULT_TOOLS;
  const limits = options.limits ?? DEFAULT_RUN_LIMITS;
  let probe: Promise<boolean> | undefined;
  let watchdog:
    | { child: Deno.ChildProcess; writer: WritableStreamDefaultWriter<Uint8Array> }
    | undefined;
  const root = runsAsRoot();
  const encoder = new TextEncoder();
  let seccomp: string | undefined;
  /** The seccomp filter file, written once per provider; undefined on an unsupported CPU. */
  const filterFile = (): string | undefined => {
    if (seccomp === undefined && filterSupported(Deno.build.arch)) {
      const file = Deno.makeTempFileSync({ prefix: "libos-seccomp-", suffix: ".bpf" });
      Deno.writeFileSync(file, unixSocketFilter(Deno.build.arch));
      seccomp = file;
    }
    return seccomp;
  };

  /** The watchdog that kills every group when the runtime ends (see the module docs). */
  const watch = (group: number) => {
    if (!watchdog) {
      const child = new Deno.Command(tools.setsid, {
        args: [
          tools.sh,
          "-c",
          // Collect groups until stdin closes (the runtime ended), then kill them all. No `--`:
          // dash's `kill` takes it for a pid and stops ("Illegal number").
          'set --; while read -r g; do set -- "$@" "$g"; done; for g; do kill -KILL "-$g" 2>/dev/null; done',
        ],
        stdin: "piped",
        stdout: "null",
        stderr: "null",
        clearEnv: true,
        env: { PATH: "/usr/bin:/bin" },
      }).spawn();
      child.unref();
      const writer = child.stdin.getWriter();
      watchdog = { child, writer };
    }
    watchdog.writer.write(encoder.encode(`${group}\n`)).catch(() => {});
  };

  return {
    wallAvailable() {
      const filter = filterFile();
      if (filter === undefined) return Promise.resolve(false);
      probe ??= new Deno.Command(tools.setsid, {
        // Every mount and namespace flag a walled run uses, and its seccomp filter, so "works"
        // means runs will.
        args: [
          ...bwrapLauncher(tools, filter),
          ...WALL_ROOT,
          ...WALL_NAMESPACES,
          ...WALL_PRIVILEGES,
          "--unshare-net",
          ...WALL_LIFETIME,
          "--",
          "/bin/true",
        ],
        stdout: "null",
        stderr: "null",
        clearEnv: true,
        env: { PATH: "/usr/bin:/bin" },
      }).output().then((o) => o.success, () => false);
      return probe;
    },

    resolveProgram(token, cwd, searchPath) {
      const candidates = token.includes("/")
        ? [resolve(cwd, token)]
        : searchPath.map((dir) => join(dir, token));
      for (const candidate of candidates) {
        try {
          const facts = Deno.statSync(candidate);
          if (!facts.isFile || ((facts.mode ?? 0) & 0o111) === 0) continue;
          return { executable: candidate, real: Deno.realPathSync(candidate) };
        } catch (error) {
          // A missing permission is not a missing program: say which one it is.
          if (error instanceof Deno.errors.NotCapable) throw error;
          continue;
        }
      }
      return undefined;
    },

    async run(spec, signal) {
      const started = performance.now();
      const child = new Deno.Command(tools.setsid, {
        args: launchArgv(spec, tools, limits, root, spec.wall ? filterFile() : undefined),
        cwd: spec.cwd,
        clearEnv: true,
        env: { ...spec.env },
        stdin: spec.stdin === undefined ? "null" : "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      // setsid made the child a session and group leader: its pid is the group id.
      const group = child.pid;
      if (!spec.wall) watch(group);
      let timedOut = false;
      // Stops reading output a grace period after the kill: a `setsid` grandchild (without the
      // wall) is outside the group and may hold stdout open for ever.
      const stopReading = new AbortController();
      let grace: ReturnType<typeof setTimeout> | undefined;
      const killGroup = () => {
        try {
          Deno.kill(-group, "SIGKILL");
        } catch { /* already gone */ }
        grace ??= setTimeout(() => stopReading.abort(), OUTPUT_GRACE_MS);
      };
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup();
      }, spec.timeoutMs);
      const onAbort = () => killGroup();
      signal?.addEventListener("abort", onAbort, { once: true });
      try {
        if (spec.stdin !== undefined) {
          const writer = child.stdin.getWriter();
          await writer.write(encoder.encode(spec.stdin)).catch(() => {});
          await writer.close().catch(() => {});
        }
        // The command's own exit also starts the grace: a background child it left holding
        // stdout must not keep the call open until the timeout.
        const exited = child.status.then((status) => {
          grace ??= setTimeout(() => stopReading.abort(), OUTPUT_GRACE_MS);
          return status;
        });
        const [out, err, status] = await Promise.all([
          capped(child.stdout, spec.maxOutputBytes, stopReading.signal),
          capped(child.stderr, spec.maxOutputBytes, stopReading.signal),
          exited,
        ]);
        const outputLeftOpen = stopReading.signal.aborted && !timedOut && !signal?.aborted;
        if (timedOut || signal?.aborted) killGroup();
        return {
          exitCode: status.signal ? null : status.code,
          signal: status.signal ?? null,
          stdout: text(out.bytes),
          stderr: text(err.bytes),
          stdoutTruncated: out.truncated,
          stderrTruncated: err.truncated,
          timedOut,
          outputLeftOpen,
          durationMs: performance.now() - started,
        };
      } finally {
        clearTimeout(timer);
        clearTimeout(grace);
        signal?.removeEventListener("abort", onAbort);
      }
    },

    async [Symbol.asyncDispose]() {
      // Closing the watchdog's stdin makes it kill every group it knows: nothing outlives the
      // runtime, however it ended.
      if (watchdog) {
        // Ref'd again: awaiting an unref'd child would let the event loop end under us.
        watchdog.child.ref();
        await watchdog.writer.close().catch(() => {});
        await watchdog.child.status.catch(() => {});
        watchdog = undefined;
      }
      if (seccomp !== undefined) {
        try {
          Deno.removeSync(seccomp);
        } catch { /* already gone */ }
        seccomp = undefined;
      }
    },
  };
}
