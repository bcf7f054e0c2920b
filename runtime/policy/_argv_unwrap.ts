/**
 * Unwrapping (the first job of `analyzeArgv()`): given a wrapper's argv, the command it runs —
 * past its options, operands and `NAME=value` assignments (`env`, `sudo`, `su -c`, `flock`,
 * `unshare`, `xargs`, `watch`, `script -c`, `sh -c`) — or why that cannot be known. What the found
 * command is, is decided by `_argv_classify.ts`.
 *
 * Linear in the input: no regular expression runs on untrusted text.
 *
 * @module
 */
import type { CommandKind } from "./shell_argv.ts";
import { WRAPPERS, type WrapperSpec } from "./_argv_wrappers.ts";

/** What a wrapper runs: a command, a script, or something that cannot be seen. */
export type Unwrapped =
  | {
    readonly kind: "command";
    readonly wrapper: string;
    readonly rest: readonly string[];
    readonly openEnded?: boolean;
    /** What the wrapper alone is, when it has no command (`env` prints the environment). */
    readonly bare?: CommandKind;
    /** Variables the wrapper sets for its command. */
    readonly env?: readonly string[];
    readonly bareReason?: string;
  }
  | { readonly kind: "script"; readonly wrapper: string; readonly script: string }
  | { readonly kind: "opaque"; readonly reason: string };

/** Skips a wrapper's options; returns the index of its first operand. */
function skipOptions(argv: readonly string[], spec: WrapperSpec, from = 1): number {
  let i = from;
  while (i < argv.length) {
    const token = argv[i]!;
    if (token === "--") return i + 1;
    if (!token.startsWith("-") || token === "-") break;
    const eq = token.indexOf("=");
    const name = eq > 0 ? token.slice(0, eq) : token;
    if (spec.valued.includes(name)) {
      i += eq > 0 ? 1 : 2;
      continue;
    }
    if (spec.flags.includes(token)) {
      i++;
      continue;
    }
    // A short option with its value attached (`-n10`, `-uroot`) or bundled flags (`-iv`).
    if (!token.startsWith("--") && token.length > 2) {
      const first = `-${token[1]}`;
      if (spec.valued.includes(first) || spec.flags.includes(first)) {
        i++;
        continue;
      }
    }
    if (spec.loose) {
      i++;
      continue;
    }
    // An option we do not know: whatever follows cannot be trusted to be the command.
    return -1;
  }
  return i;
}

/** The command the wrapper `name` runs, or undefined when `name` is no wrapper. */
export function unwrap(name: string, argv: readonly string[]): Unwrapped | undefined {
  if (name === "env") return unwrapEnv(argv);
  if (name === "su" || name === "runuser") return unwrapSu(name, argv);
  if (name === "flock") return unwrapFlock(argv);
  if (name === "unshare") return unwrapUnshare(argv);
  if (name === "nice" && argv[1] !== undefined && /^-\d+$/.test(argv[1].slice(0, 12))) {
    return { kind: "command", wrapper: "nice", rest: argv.slice(2) };
  }
  const spec = Object.hasOwn(WRAPPERS, name) ? WRAPPERS[name] : undefined;
  if (!spec) return undefined;
  // Only the wrapper's own options count (`sudo env -i …`: the -i is env's, not sudo's).
  const own = ownOptions(argv, spec);
  const hasFlag = (...letters: string[]) =>
    own.some((t) =>
      letters.some((l) =>
        t === `-${l}` || (!t.startsWith("--") && t.length > 2 && t.slice(1).includes(l))
      )
    );
  if (name === "command" && hasFlag("v", "V")) {
    return { kind: "command", wrapper: name, rest: [], bare: "plain" };
  }
  if (
    (name === "sudo" || name === "doas") &&
    (hasFlag("s", "i") || own.includes("--shell") || own.includes("--login"))
  ) {
    const i = skipOptions(argv, {
      ...spec,
      flags: [...spec.flags, "-s", "-i", "--shell", "--login"],
    });
    if (i < 0 || i >= argv.length) return { kind: "opaque", reason: `${name} starts a shell` };
    return { kind: "script", wrapper: name, script: argv.slice(i).join(" ") };
  }
  if (name === "sudo" && (hasFlag("e") || own.includes("--edit"))) {
    return { kind: "opaque", reason: "sudoedit runs an editor as another user" };
  }
  if ((name === "chrt" || name === "taskset") && (hasFlag("p") || own.includes("--pid"))) {
    return { kind: "command", wrapper: name, rest: [], bare: "plain" };
  }
  let i = skipOptions(argv, spec);
  if (i < 0) return { kind: "opaque", reason: `${name} with an option libos does not know` };
  const env: string[] = [];
  if (spec.assignments) {
    while (i < argv.length && isAssignment(argv[i]!)) {
      env.push(argv[i]!.slice(0, argv[i]!.indexOf("=")));
      i++;
    }
  }
  i += spec.operands ?? 0;
  if (spec.optionsAfterOperands && i < argv.length) {
    i = skipOptions(argv, spec, i);
    if (i < 0) return { kind: "opaque", reason: `${name} with an option libos does not know` };
  }
  if (i > argv.length) return { kind: "command", wrapper: name, rest: [], bare: "plain" };
  const rest = argv.slice(i);
  if (rest.length === 0 && (name === "sudo" || name === "doas" || name === "pkexec")) {
    return { kind: "opaque", reason: `${name} with no command starts a shell` };
  }
  return { kind: "command", wrapper: name, rest, env };
}

/** A wrapper's own option tokens: those before its command (values of valued options skipped). */
function ownOptions(argv: readonly string[], spec: WrapperSpec): string[] {
  const out: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--" || !token.startsWith("-") || token === "-") break;
    out.push(token);
    if (spec.valued.includes(token)) i++;
  }
  return out;
}

function isAssignment(token: string): boolean {
  const eq = token.indexOf("=");
  if (eq < 1) return false;
  for (let i = 0; i < eq; i++) {
    const c = token.charCodeAt(i);
    const ok = c === 95 || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) ||
      (i > 0 && c >= 48 && c <= 57);
    if (!ok) return false;
  }
  return true;
}

/** Splits `env -S` strings the way env does: whitespace, quotes, backslash escapes. */
function splitEnvString(text: string): string[] | undefined {
  const out: string[] = [];
  let current = "";
  let has = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"' && i + 1 < text.length) current += text[++i];
      else current += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      has = true;
    } else if (c === "\\" && i + 1 < text.length) {
      current += text[++i];
      has = true;
    } else if (c === " " || c === "\t" || c === "\n") {
      if (has) out.push(current);
      current = "";
      has = false;
    } else if (c === "$") {
      // ${VAR} expansion inside -S: the value is not known here.
      return undefined;
    } else {
      current += c;
      has = true;
    }
  }
  if (quote) return undefined;
  if (has) out.push(current);
  return out;
}

function unwrapEnv(argv: readonly string[]): Unwrapped {
  const rest: string[] = [];
  let i = 1;
  const spec = WRAPPERS.env!;
  while (i < argv.length) {
    const token = argv[i]!;
    if (
      token === "-S" || token === "--split-string" || token.startsWith("--split-string=") ||
      (token.startsWith("-S") && token.length > 2) ||
      (token.startsWith("-") && !token.startsWith("--") && token.includes("S"))
    ) {
      let value: string | undefined;
      if (token === "-S" || token === "--split-string") value = argv[++i];
      else if (token.startsWith("--split-string=")) value = token.slice("--split-string=".length);
      else {
        const at = token.indexOf("S");
        value = at + 1 < token.length ? token.slice(at + 1) : argv[++i];
      }
      if (value === undefined) return { kind: "opaque", reason: "env -S without a string" };
      const split = splitEnvString(value);
      if (!split) return { kind: "opaque", reason: "env -S with a string libos cannot split" };
      rest.push(...split, ...argv.slice(i + 1));
      return unwrapEnv(["env", ...rest]);
    }
    const next = skipOptions(argv, spec, i);
    if (next < 0) return { kind: "opaque", reason: "env with an option libos does not know" };
    if (next === i) break;
    i = next;
  }
  const env: string[] = [];
  for (let u = 1; u < i; u++) {
    // -u NAME and --unset=NAME change the environment as much as an assignment.
    if (argv[u] === "-u" || argv[u] === "--unset") env.push(argv[u + 1] ?? "");
    else if (argv[u]!.startsWith("--unset=")) env.push(argv[u]!.slice("--unset=".length));
  }
  while (i < argv.length && isAssignment(argv[i]!)) {
    env.push(argv[i]!.slice(0, argv[i]!.indexOf("=")));
    i++;
  }
  const command = argv.slice(i);
  if (command.length === 0) {
    // env alone prints the environment: a plain command the policy decides on.
    return { kind: "command", wrapper: "env", rest: [], bare: "plain" };
  }
  return { kind: "command", wrapper: "env", rest: command, env };
}

function unwrapSu(name: string, argv: readonly string[]): Unwrapped {
  const valued = [
    "-s",
    "--shell",
    "-g",
    "--group",
    "-G",
    "--supp-group",
    "-w",
    "--whitelist-environment",
    "-u",
    "--user",
  ];
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "-c" || token === "--command" || token === "--session-command") {
      const script = argv[i + 1];
      return script === undefined
        ? { kind: "opaque", reason: `${name} -c without a command` }
        : { kind: "script", wrapper: name, script };
    }
    for (const long of ["--command=", "--session-command="]) {
      if (token.startsWith(long)) {
        return { kind: "script", wrapper: name, script: token.slice(long.length) };
      }
    }
    if (token === "--") {
      // runuser -u USER -- COMMAND ARGS
      const rest = argv.slice(i + 1);
      if (name === "runuser" && rest.length) return { kind: "command", wrapper: name, rest };
      break;
    }
    if (valued.includes(token)) i++;
  }
  return { kind: "opaque", reason: `${name} without -c starts a login shell` };
}

function unwrapFlock(argv: readonly string[]): Unwrapped {
  const spec: WrapperSpec = {
    flags: [
      "-s",
      "--shared",
      "-x",
      "-e",
      "--exclusive",
      "-u",
      "--unlock",
      "-n",
      "--nb",
      "--nonblock",
      "-o",
      "--close",
      "-F",
      "--no-fork",
      "--verbose",
    ],
    valued: ["-w", "--wait", "--timeout", "-E", "--conflict-exit-code"],
  };
  let i = skipOptions(argv, spec);
  if (i < 0) return { kind: "opaque", reason: "flock with an option libos does not know" };
  i++; // the lock file or descriptor
  if (i >= argv.length) return { kind: "command", wrapper: "flock", rest: [], bare: "plain" };
  const token = argv[i]!;
  if (token === "-c" || token === "--command") {
    const script = argv[i + 1];
    return script === undefined
      ? { kind: "opaque", reason: "flock -c without a command" }
      : { kind: "script", wrapper: "flock", script };
  }
  return { kind: "command", wrapper: "flock", rest: argv.slice(i) };
}

function unwrapUnshare(argv: readonly string[]): Unwrapped {
  let i = 1;
  const valued = [
    "-S",
    "--setuid",
    "-G",
    "--setgid",
    "-R",
    "--root",
    "-w",
    "--wd",
    "--propagation",
    "--setgroups",
    "--map-user",
    "--map-group",
    "--kill-child",
    "--monotonic",
    "--boottime",
  ];
  while (i < argv.length) {
    const token = argv[i]!;
    if (token === "--") {
      i++;
      break;
    }
    if (!token.startsWith("-")) break;
    if (valued.includes(token)) i += 2;
    else i++;
  }
  const rest = argv.slice(i);
  return rest.length
    ? { kind: "command", wrapper: "unshare", rest }
    : { kind: "opaque", reason: "unshare with no command starts a shell" };
}

/** The command xargs runs, and the replace-string it splices input into (-I R, -i[R]). */
export function xargsCommand(argv: readonly string[]): { argv: string[]; placeholder?: string } {
  const spec: WrapperSpec = {
    flags: [
      "-0",
      "--null",
      "-p",
      "--interactive",
      "-r",
      "--no-run-if-empty",
      "-t",
      "--verbose",
      "-x",
      "--exit",
      "-o",
      "--open-tty",
      "--show-limits",
    ],
    valued: [
      "-a",
      "--arg-file",
      "-d",
      "--delimiter",
      "-E",
      "-I",
      "-L",
      "--max-lines",
      "-n",
      "--max-args",
      "-P",
      "--max-procs",
      "-s",
      "--max-chars",
      "--process-slot-var",
    ],
  };
  let i = 1;
  let placeholder: string | undefined;
  while (i < argv.length) {
    const token = argv[i]!;
    if (token === "-I" || token === "--replace") placeholder = argv[i + 1] ?? "{}";
    else if (token.startsWith("--replace=")) placeholder = token.slice("--replace=".length);
    else if (token.startsWith("-I") && token.length > 2) placeholder = token.slice(2);
    else if (token.startsWith("-i") && !token.startsWith("--")) {
      placeholder = token.length > 2 ? token.slice(2) : "{}";
    }
    // Optional-value short options: -e[eof], -i[replace], -l[max-lines].
    if (token.startsWith("-e") || token.startsWith("-i") || token.startsWith("-l")) {
      if (!token.startsWith("--")) {
        i++;
        continue;
      }
    }
    const next = skipOptions(argv, spec, i);
    if (next < 0) return { argv: ["xargs", ...argv.slice(i)], placeholder: placeholder ?? "" };
    if (next === i) break;
    i = next;
  }
  return placeholder === undefined ? { argv: argv.slice(i) } : { argv: argv.slice(i), placeholder };
}

/** The command watch runs, and whether it is exec'd (`-x`) rather than given to `sh -c`. */
export function watchCommand(argv: readonly string[]): { argv: string[]; exec: boolean } {
  const valued = ["-n", "--interval", "-q", "--equexit", "--differences"];
  let exec = false;
  let i = 1;
  while (i < argv.length) {
    const token = argv[i]!;
    if (token === "--") {
      i++;
      break;
    }
    if (!token.startsWith("-")) break;
    if (token === "-x" || token === "--exec") exec = true;
    if (valued.includes(token)) i += 2;
    else i++;
  }
  return { argv: argv.slice(i), exec };
}

/** What a shell invocation runs: a `-c` script, a script file, or stdin (opaque). */
export type ShellInvocation =
  | { readonly kind: "script"; readonly script: string }
  | { readonly kind: "file"; readonly file: string }
  | { readonly kind: "opaque"; readonly reason: string };

/** What a shell's argv runs (its `-c` script, a script file, or stdin). */
export function shellInvocation(argv: readonly string[]): ShellInvocation {
  const valued = ["-o", "+o", "-O", "+O", "--rcfile", "--init-file"];
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") {
      const file = argv[i + 1];
      return file === undefined
        ? { kind: "opaque", reason: "a shell reading commands from stdin" }
        : { kind: "file", file };
    }
    if (valued.includes(token)) {
      i++;
      continue;
    }
    if (
      (token.startsWith("-") || token.startsWith("+")) && token.length > 1 &&
      !token.startsWith("--")
    ) {
      if (token.includes("c")) {
        const script = argv[i + 1];
        return script === undefined
          ? { kind: "opaque", reason: "a shell -c without a script" }
          : { kind: "script", script };
      }
      if (token.includes("s")) {
        return { kind: "opaque", reason: "a shell reading commands from stdin" };
      }
      continue;
    }
    if (token.startsWith("--")) continue;
    return { kind: "file", file: token };
  }
  return { kind: "opaque", reason: "a shell reading commands from stdin" };
}

/** The command `script` runs: its -c string, or a reason it is opaque. */
export function scriptCommand(
  argv: readonly string[],
): { kind: "script"; script: string } | { kind: "opaque"; reason: string } {
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") break;
    if (token === "-c" || token === "--command") {
      const script = argv[i + 1];
      return script === undefined
        ? { kind: "opaque", reason: "script -c without a command" }
        : { kind: "script", script };
    }
    if (token.startsWith("--command=")) {
      return { kind: "script", script: token.slice("--command=".length) };
    }
    if (token.startsWith("-") && !token.startsWith("--") && token.includes("c")) {
      const at = token.indexOf("c");
      const script = at + 1 < token.length ? token.slice(at + 1) : argv[i + 1];
      return script === undefined
        ? { kind: "opaque", reason: "script -c without a command" }
        : { kind: "script", script };
    }
  }
  return { kind: "opaque", reason: "script without -c runs an interactive shell" };
}
