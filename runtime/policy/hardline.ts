/**
 * The hardline floor (DESIGN §3, layer 1): irreversible destruction, denied in every mode and
 * under every shell policy, through any wrapper — `rm -rf` of `/`, `~` or a system directory,
 * making a filesystem, writing a block device, wiping disks, fork bombs, shutting the machine
 * down. It runs on each nested command `analyzeArgv()` found, after unwrapping, so `sudo env
 * nice rm -rf /` and `find / -delete` meet it too.
 *
 * Linear checks over tokens; no regular expression on untrusted text.
 *
 * @module
 */
import { programName } from "./shell_argv.ts";

/** Directories whose recursive removal (or recursive chmod/chown) is never allowed. */
const SYSTEM_DIRECTORIES: readonly string[] = Object.freeze([
  "/",
  "/bin",
  "/boot",
  "/dev",
  "/etc",
  "/home",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/media",
  "/mnt",
  "/opt",
  "/proc",
  "/root",
  "/run",
  "/sbin",
  "/srv",
  "/sys",
  "/usr",
  "/var",
  "/System",
  "/Library",
  "/Users",
  "/Applications",
]);

/** The home directory in its spellings (the value of $HOME is not known here). */
const HOMES: readonly string[] = Object.freeze(["~", "$HOME", "${HOME}"]);

/**
 * A path with duplicate slashes, `.` segments and trailing slashes removed, and a trailing `/*`
 * or `/.*` (everything in it) dropped: `//etc/./` → `/etc`, `/usr/*` → `/usr`.
 */
function normalise(path: string): string {
  let p = path;
  // A word the shell would unquote: "~", '/etc'.
  if (p.length >= 2 && (p[0] === '"' || p[0] === "'") && p.at(-1) === p[0]) p = p.slice(1, -1);
  for (const suffix of ["/*", "/.*", "/.", "/*/"]) {
    while (p.length > suffix.length && p.endsWith(suffix)) p = p.slice(0, -suffix.length) || "/";
  }
  const absolute = p.startsWith("/");
  const parts: string[] = [];
  for (const segment of p.split("/")) {
    if (segment === "" || segment === ".") continue;
    // `..` is resolved lexically: /usr/../etc is /etc; above the root stays at the root.
    if (segment === "..") {
      if (parts.length && parts.at(-1) !== "..") parts.pop();
      else if (!absolute) parts.push("..");
      continue;
    }
    parts.push(segment);
  }
  const joined = parts.join("/");
  if (!absolute) return joined || ".";
  return `/${joined}`;
}

/** Whether `path` names the root, a home directory or a system directory (or all inside it). */
function isCriticalTarget(raw: string): boolean {
  const path = raw.length >= 2 && (raw[0] === '"' || raw[0] === "'") && raw.at(-1) === raw[0]
    ? raw.slice(1, -1)
    : raw;
  if (path === "*" || path === "/*") return true;
  for (const home of HOMES) {
    if (path === home || path === `${home}/` || path === `${home}/*`) return true;
  }
  const p = normalise(path);
  if (p === "/" || p === "") return true;
  // Case folded: on a case-insensitive host /USERS is /Users (stricter only).
  const lower = p.toLowerCase();
  if (SYSTEM_DIRECTORIES.some((d) => d.toLowerCase() === lower)) return true;
  // /home/alice and /Users/alice: a user's whole home.
  const parts = lower.split("/").filter(Boolean);
  return parts.length === 2 && (parts[0] === "home" || parts[0] === "users");
}

function hasRecursive(argv: readonly string[]): boolean {
  for (const token of argv.slice(1)) {
    if (token === "--") break;
    if (token === "--recursive" || token === "--no-preserve-root") return true;
    if (
      token.startsWith("-") && !token.startsWith("--") &&
      (token.includes("r") || token.includes("R"))
    ) {
      return true;
    }
  }
  return false;
}

function operands(argv: readonly string[]): string[] {
  const out: string[] = [];
  let options = true;
  for (const token of argv.slice(1)) {
    if (options && token === "--") {
      options = false;
      continue;
    }
    if (options && token.startsWith("-") && token !== "-") continue;
    out.push(token);
  }
  return out;
}

const BLOCK_DEVICES: readonly string[] = Object.freeze([
  "/dev/sd",
  "/dev/hd",
  "/dev/vd",
  "/dev/xvd",
  "/dev/nvme",
  "/dev/mmcblk",
  "/dev/disk",
  "/dev/rdisk",
  "/dev/mapper/",
  "/dev/md",
  "/dev/dm-",
  "/dev/loop",
  "/dev/root",
]);

function isBlockDevice(path: string): boolean {
  return BLOCK_DEVICES.some((prefix) => path.startsWith(prefix));
}

const POWER: readonly string[] = Object.freeze(["shutdown", "reboot", "halt", "poweroff"]);
const WIPERS: readonly string[] = Object.freeze([
  "wipefs",
  "blkdiscard",
  "mkswap",
  "mke2fs",
  "badblocks",
]);

/**
 * The hardline rule a command breaks (`rm-rf-root`, `mkfs`, `dd-device`, `wipe`, `power`,
 * `kill-all`, `chmod-root`), or undefined.
 */
export function hardlineRule(argv: readonly string[]): string | undefined {
  if (argv.length === 0) return undefined;
  const name = programName(argv[0]!);
  if (name === "rm" && hasRecursive(argv) && operands(argv).some(isCriticalTarget)) {
    return "rm-rf-root";
  }
  if (name === "rm" && argv.includes("--no-preserve-root")) return "rm-rf-root";
  if ((name === "chmod" || name === "chown" || name === "chgrp") && hasRecursive(argv)) {
    if (operands(argv).slice(1).some(isCriticalTarget)) return "chmod-root";
  }
  if (name === "mkfs" || name.startsWith("mkfs.") || argv[0]!.toLowerCase().includes("mkfs.")) {
    return "mkfs";
  }
  if (WIPERS.includes(name)) return "wipe";
  if (name === "shred" && operands(argv).some(isBlockDevice)) return "wipe";
  if (
    name === "sgdisk" &&
    argv.some((t) => t === "-Z" || t === "--zap-all" || t === "-o" || t === "--clear")
  ) {
    return "wipe";
  }
  if (name === "dd" && argv.some((t) => t.startsWith("of=") && isBlockDevice(t.slice(3)))) {
    return "dd-device";
  }
  if (POWER.includes(name)) return "power";
  if ((name === "init" || name === "telinit") && (argv[1] === "0" || argv[1] === "6")) {
    return "power";
  }
  if (name === "systemctl") {
    const verb = operands(argv)[0];
    if (
      verb &&
      ["poweroff", "reboot", "halt", "kexec", "emergency", "rescue", "suspend", "hibernate"]
        .includes(verb)
    ) {
      return "power";
    }
  }
  if (name === "kill" || name === "pkill" || name === "killall") {
    // kill -9 -1 (every process the user may signal), killall5, pkill with a pattern of "."
    if (name === "kill" && operands(argv).some((t) => t === "-1")) return "kill-all";
    if (argv.slice(1).some((t) => t === "-1")) return "kill-all";
  }
  if (name === "killall5") return "kill-all";
  return undefined;
}

/**
 * Whether a shell script defines a function that runs itself twice in the background — the fork
 * bomb `:(){ :|:& };:` and its renamings. Linear: whitespace is ignored, then each definition
 * `NAME(){` is checked for `NAME|NAME&` in what follows.
 */
export function isForkBomb(script: string): boolean {
  // A definition needs "(" — most tokens have none, and cost one scan.
  if (!script.includes("(")) return false;
  let text = "";
  for (const c of script) if (c !== " " && c !== "\t" && c !== "\n" && c !== "\r") text += c;
  let from = 0;
  // Bounded: a script with more definitions than this is opaque to the policy anyway.
  for (let definitions = 0; definitions < 64; definitions++) {
    const at = text.indexOf("(){", from);
    if (at < 0) return false;
    let start = at;
    while (start > 0) {
      const c = text[start - 1]!;
      const name = c === ":" || c === "_" || c === "." || (c >= "a" && c <= "z") ||
        (c >= "A" && c <= "Z") || (c >= "0" && c <= "9");
      if (!name) break;
      start--;
    }
    const name = text.slice(start, at);
    if (name && text.includes(`${name}|${name}&`, at)) return true;
    from = at + 3;
  }
  return false;
}
