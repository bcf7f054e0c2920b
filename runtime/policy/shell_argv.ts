/**
 * Every command an argv will run (DESIGN §2, "Fail closed"): `analyzeArgv()` unwraps wrappers
 * (env, nice, timeout, sudo, xargs, find -exec, …), parses `sh -c` scripts with a real shell
 * parser, and classifies what it finds, so a policy decides on each nested command — never only
 * on the first word.
 *
 * Kinds of command:
 * - `plain`: a program with literal arguments;
 * - `inline_code`: an interpreter running code given on the command line (`python3 -c`,
 *   `node -e`, `perl -e`, `awk PROGRAM`, …) — opaque code, asked about unless a rule allows that
 *   exact form;
 * - `workspace_code`: a program that runs workspace-controlled code by design (`make`,
 *   `npm test`, `pytest`, `cargo test`, a script file) — code execution;
 * - `git_config`: git with `-c`, `--config-env`, `--exec-path`, `-C`, `--git-dir` or `--work-tree`
 *   (each can make git run arbitrary programs) — never auto-allowed;
 * - `opaque`: something the checker cannot see through (a shell reading stdin, an unparseable
 *   or over-long script, expansions, a wrapper nested too deep) — never auto-allowed.
 *
 * Everything here is linear in the input: no regular expression runs on untrusted text.
 *
 * @module
 */

import { matchCodeRow, programEntry, type ProgramTable } from "./shell_programs.ts";

/**
 * What kind of thing a nested command is (see the module documentation). `wrapper`: a wrapper
 * itself (`sudo …`, `env …`, `bash -c …`), decided by rules and capabilities so that a rule on
 * the wrapper applies; `privileged` wrappers (sudo, su, doas, …) are not transparent.
 */
export type CommandKind =
  | "plain"
  | "inline_code"
  | "workspace_code"
  | "git_config"
  | "opaque"
  | "wrapper";

/** The reason of an `opaque` script body when no shell parser was given. */
export const UNPARSED = "the shell parser is not loaded";

/** One command the argv will run. */
export interface NestedCommand {
  /** Its argv, exactly as the program receives it (for `opaque`, what could be seen). */
  readonly argv: readonly string[];
  /** The wrappers it was found through, outermost first, e.g. `["sudo", "sh -c"]`. */
  readonly via: readonly string[];
  readonly kind: CommandKind;
  /** Why it is not `plain`. */
  readonly reason: string | null;
  /** Arguments are appended at run time (xargs, find -exec … +): only a prefix is known. */
  readonly openEnded: boolean;
  /** Environment variables the wrappers set for it (names), e.g. `PATH`, `LD_PRELOAD`. */
  readonly env: readonly string[];
  /** For a wrapper: it runs its command with other privileges (sudo, su, doas, …). */
  readonly privileged: boolean;
  /** Paths find substitutes for `{}` (the floor checks the command with each of them). */
  readonly roots: readonly string[];
}

/** A parsed `sh -c` script (see `shell_script.ts`). */
export interface ScriptAnalysis {
  readonly commands: readonly {
    readonly argv: readonly string[];
    readonly assignments?: readonly string[];
  }[];
  /** Commands with unresolved words (source text), for the hardline floor only. */
  readonly partial?: readonly { readonly argv: readonly string[] }[];
  readonly opaque: readonly string[];
}

/** Wrappers that run their command with other privileges: never transparent. */
const PRIVILEGED: readonly string[] = Object.freeze([
  "sudo",
  "doas",
  "su",
  "runuser",
  "pkexec",
  "chroot",
  "unshare",
  "sg",
  "setpriv",
  "chpst",
  "gosu",
  "su-exec",
  "setuidgid",
  "envuidgid",
]);

/**
 * Environment variables that change what a command runs or loads: set through a wrapper or an
 * assignment they make the command opaque (e.g. `PATH=./bin git status`, `LD_PRELOAD=…`,
 * `GIT_CONFIG_KEY_0=core.fsmonitor`).
 */
function codeVariable(name: string): boolean {
  const upper = name.toUpperCase();
  if (CODE_VARIABLE_PREFIXES.some((prefix) => upper.startsWith(prefix))) return true;
  return [
    "PATH",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
    "IFS",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "LESSOPEN",
    "LESSCLOSE",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "BROWSER",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "MAKEFLAGS",
    "RUSTC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTDOC",
    "MANPAGER",
    "SYSTEMD_PAGER",
    "SYSTEMD_EDITOR",
    "SUDO_EDITOR",
    "FCEDIT",
    "SVN_SSH",
    "CVS_RSH",
    "RSYNC_RSH",
    "RSYNC_CONNECT_PROG",
    "TAR_OPTIONS",
    "ZIPOPT",
    "LESS",
    "LESSKEY",
    "LESSKEYIN",
    "LESSKEY_SYSTEM",
    "PERL5DB",
    "PYTHONBREAKPOINT",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "BUNDLE_GEMFILE",
    "GOFLAGS",
    "GOENV",
    "GCONV_PATH",
    "ZDOTDIR",
    "XDG_CONFIG_HOME",
    "HOME",
    "SHELL",
    "RESTIC_PASSWORD_COMMAND",
    "CRASHPAGER",
    "GROFF_BIN_PATH",
    "CC",
    "CXX",
    "CPP",
    "LD",
  ].includes(upper);
}

/** Prefixes of variables that change what a command runs (`GIT_SSH`, `npm_config_script_shell`). */
const CODE_VARIABLE_PREFIXES: readonly string[] = Object.freeze([
  "LD_",
  "DYLD_",
  "GIT_",
  "NPM_CONFIG_",
  "CARGO_",
  "YARN_",
  "PIP_",
  "UV_",
]);

/** Programs that destroy what their operands name (their operands matter to the floor). */
const DESTRUCTIVE: readonly string[] = Object.freeze([
  "rm",
  "rmdir",
  "shred",
  "dd",
  "mv",
  "chmod",
  "chown",
  "chgrp",
  "truncate",
  "wipefs",
  "mkfs",
  "unlink",
]);

/** Whether a command destroys what it is given (so unknown operands must be seen). */
export function isDestructive(argv: readonly string[]): boolean {
  return argv.length > 0 && DESTRUCTIVE.includes(programName(argv[0]!));
}

/** Directories system programs live in; a program named by another path is workspace code. */
const SYSTEM_BIN: readonly string[] = Object.freeze([
  "/bin/",
  "/sbin/",
  "/usr/bin/",
  "/usr/sbin/",
  "/usr/local/bin/",
  "/usr/local/sbin/",
  "/opt/homebrew/bin/",
]);

/** Parses `sh -c` bodies; absent (or not loaded), every script is opaque. */
export interface ScriptAnalyzer {
  analyze(script: string): ScriptAnalysis;
}

/** How deep wrappers may nest before the argv is opaque. */
const MAX_DEPTH = 16;
/** Most nested commands one argv may produce before the rest is opaque. */
const MAX_COMMANDS = 256;

/**
 * A program's bare name: lowercase, no directory, no `.exe`, no version suffix
 * (`/usr/bin/Python3.11` → `python`). Linear: no regular expression.
 */
export function programName(token: string): string {
  const lower = token.toLowerCase();
  let name = lower.slice(lower.lastIndexOf("/") + 1);
  if (name.endsWith(".exe")) name = name.slice(0, -4);
  let end = name.length;
  let digits = false;
  while (end > 0) {
    const c = name.charCodeAt(end - 1);
    if (c >= 48 && c <= 57) {
      digits = true;
      end--;
    } else if (c === 46 && digits && end > 1) {
      const before = name.charCodeAt(end - 2);
      if (before >= 48 && before <= 57) end--;
      else break;
    } else break;
  }
  if (!digits || end === name.length) return name;
  const sep = name.charCodeAt(end - 1);
  if (end > 1 && (sep === 45 || sep === 95 || sep === 46)) end--;
  return end > 0 ? name.slice(0, end) : name;
}

const SHELLS: readonly string[] = Object.freeze([
  "sh",
  "posh",
  "sash",
  "oksh",
  "loksh",
  "pdksh",
  "bash",
  "dash",
  "zsh",
  "ksh",
  "mksh",
  "ash",
  "yash",
  "fish",
  "csh",
  "tcsh",
]);

/** Interpreters and the option that takes inline code (empty: the first operand is code). */
const INLINE: Readonly<Record<string, readonly string[]>> = Object.freeze({
  python: ["-c"],
  pypy: ["-c"],
  node: ["-e", "--eval", "-p", "--print"],
  nodejs: ["-e", "--eval", "-p", "--print"],
  bun: ["-e", "--eval", "-p", "--print"],
  perl: ["-e", "-E"],
  ruby: ["-e"],
  php: ["-r"],
  lua: ["-e"],
  luajit: ["-e"],
  rscript: ["-e", "--expr"],
  osascript: ["-e"],
  pwsh: ["-c", "-command", "-encodedcommand", "-ec"],
  powershell: ["-c", "-command", "-encodedcommand", "-ec"],
  tclsh: [],
  jshell: [],
  wish: [],
  expect: ["-c"],
  julia: ["-e", "-E", "--eval", "--print"],
  r: ["-e"],
  erl: ["-eval"],
  elixir: ["-e", "--eval"],
  ghc: ["-e"],
  runghc: [],
  groovy: ["-e"],
  scala: ["-e"],
  raku: ["-e"],
  guile: ["-c"],
  racket: ["-e", "--eval"],
  sbcl: ["--eval"],
  clisp: ["-x"],
  gforth: ["-e"],
  swipl: ["-g", "-t"],
  qjs: ["-e", "--eval"],
  jrunscript: ["-e"],
  slsh: ["-e"],
  ipython: ["-c"],
  xonsh: ["-c"],
  elvish: ["-c"],
  nu: ["-c", "--commands"],
  ion: ["-c"],
  rc: ["-c"],
  es: ["-c"],
});

const AWKS: readonly string[] = Object.freeze(["awk", "gawk", "mawk", "nawk", "busybox-awk"]);

/** The git options that can make git run arbitrary programs. */
const GIT_DANGEROUS: readonly string[] = Object.freeze([
  "-c",
  "--config-env",
  "--exec-path",
  "-C",
  "--git-dir",
  "--work-tree",
]);

interface Frame {
  readonly via: readonly string[];
  readonly depth: number;
  /** Variables set on the way (env, sudo and script assignments). */
  readonly env: readonly string[];
  /** Strings the wrappers will replace with run-time input (xargs -I, find {}). */
  readonly placeholders: readonly string[];
  /** Reached through a command with unresolved words: only the floor looks at it. */
  readonly partial: boolean;
  /** Paths find substitutes for `{}`. */
  readonly roots: readonly string[];
}

const TOP: Frame = Object.freeze({
  via: [],
  depth: 0,
  env: [],
  placeholders: [],
  partial: false,
  roots: [],
});

/** The analysis of one argv. */
class Analysis {
  readonly commands: NestedCommand[] = [];
  readonly #scripts: ScriptAnalyzer | null;
  readonly #programs: ProgramTable | undefined;

  constructor(scripts: ScriptAnalyzer | null, programs: ProgramTable | undefined) {
    this.#scripts = scripts;
    this.#programs = programs;
  }

  push(
    argv: readonly string[],
    frame: Frame,
    kind: CommandKind,
    reason: string | null,
    openEnded = false,
    privileged = false,
  ): void {
    const entry = (k: CommandKind, r: string | null): NestedCommand => ({
      argv: [...argv],
      via: frame.via,
      kind: k,
      reason: r,
      openEnded,
      env: frame.env,
      privileged,
      roots: frame.roots,
    });
    if (this.commands.length >= MAX_COMMANDS) {
      if (this.commands.at(-1)?.reason !== "too many nested commands") {
        this.commands.push({ ...entry("opaque", "too many nested commands"), argv: [] });
      }
      return;
    }
    if (frame.partial && kind !== "wrapper") {
      this.commands.push(entry("opaque", "words the checker cannot resolve"));
      return;
    }
    const risky = frame.env.find(codeVariable);
    if (risky !== undefined && kind !== "opaque" && kind !== "wrapper") {
      this.commands.push(entry("opaque", `${risky} is set, which changes what runs`));
      return;
    }
    this.commands.push(entry(kind, reason));
  }

  /** A frame one wrapper deeper. */
  #deeper(frame: Frame, wrapper: string, extra: Partial<Frame> = {}): Frame {
    return {
      ...frame,
      via: [...frame.via, wrapper],
      depth: frame.depth + 1,
      ...extra,
      env: [...frame.env, ...(extra.env ?? [])],
      placeholders: [...frame.placeholders, ...(extra.placeholders ?? [])],
    };
  }

  /** Analyses the command `argv` reached through `frame`. */
  visit(argv: readonly string[], frame: Frame, openEnded = false): void {
    if (argv.length === 0) return;
    if (frame.depth > MAX_DEPTH) {
      this.push(argv, frame, "opaque", "wrappers nested too deep");
      // The floor must still see a destructive command buried under the wrappers.
      let found = 0;
      for (let i = 1; i < argv.length && found < 64; i++) {
        if (isDestructive(argv.slice(i, i + 1))) {
          found++;
          this.push(argv.slice(i), frame, "opaque", "wrappers nested too deep");
        }
      }
      return;
    }
    const program = argv[0]!;
    const malformed = frame.placeholders.some((p) => p !== "" && program.includes(p))
      ? undefined
      : malformedProgram(program);
    if (malformed) {
      this.push(argv, frame, "opaque", `the program name ${malformed}`);
      return;
    }
    const name = programName(program);
    // An option or subcommand that runs code (a wrapper's operand is still decided below).
    const entry = this.#programs ? this.#programs.entryFor(name) : programEntry(name);
    const row = entry ? matchCodeRow(name, argv, entry) : undefined;
    if (row) this.push(argv, frame, row.row.kind, row.reason, openEnded);
    // A program named by a path outside the system directories is whatever that file is.
    if (program.includes("/") && !SYSTEM_BIN.some((dir) => program.startsWith(dir))) {
      this.push(argv, frame, "workspace_code", `runs the program ${program}`, openEnded);
      return;
    }
    const inner = (
      rest: readonly string[],
      wrapper: string,
      open = openEnded,
      extra: Partial<Frame> = {},
    ) => this.visit(rest, this.#deeper(frame, wrapper, extra), open);
    if (name === "script") {
      this.push(argv, frame, "wrapper", null, openEnded);
      const found = scriptCommand(argv);
      if (found.kind === "script") this.#script(argv, found.script, frame, "script -c");
      else this.push(argv, frame, "opaque", found.reason);
      return;
    }
    const unwrapped = unwrap(name, argv);
    if (unwrapped) {
      const privileged = PRIVILEGED.includes(name);
      if (unwrapped.kind === "command" && unwrapped.rest.length === 0) {
        this.push(argv, frame, unwrapped.bare ?? "plain", unwrapped.bareReason ?? null, openEnded);
        return;
      }
      // The wrapper itself, for rules and capabilities that name it.
      this.push(argv, frame, "wrapper", null, openEnded, privileged);
      if (unwrapped.kind === "command") {
        inner(unwrapped.rest, unwrapped.wrapper, openEnded || unwrapped.openEnded === true, {
          env: unwrapped.env ?? [],
        });
        return;
      }
      if (unwrapped.kind === "script") {
        this.#script(argv, unwrapped.script, frame, `${unwrapped.wrapper} -c`);
        return;
      }
      this.push(argv, frame, "opaque", unwrapped.reason);
      return;
    }
    if (SHELLS.includes(name)) {
      this.push(argv, frame, "wrapper", null, openEnded);
      this.#shell(argv, frame);
      return;
    }
    if (name === "find") {
      this.#find(argv, frame);
      return;
    }
    if (name === "xargs") {
      const parsed = xargsCommand(argv);
      this.push(argv, frame, "wrapper", null, openEnded);
      inner(parsed.argv.length ? parsed.argv : ["echo"], "xargs", true, {
        placeholders: parsed.placeholder === undefined ? [] : [parsed.placeholder],
      });
      return;
    }
    if (name === "watch") {
      const rest = watchCommand(argv);
      this.push(argv, frame, "wrapper", null, openEnded);
      if (rest.exec) inner(rest.argv, "watch");
      else if (rest.argv.length) this.#script(argv, rest.argv.join(" "), frame, "watch");
      return;
    }
    if (name === "busybox" || name === "toybox") {
      if (argv.length > 1 && !argv[1]!.startsWith("-")) {
        this.push(argv, frame, "wrapper", null, openEnded);
        inner(argv.slice(1), name);
      } else this.push(argv, frame, "plain", null);
      return;
    }
    if (name === "git") {
      const dangerous = gitDangerous(argv);
      this.push(
        argv,
        frame,
        dangerous ? "git_config" : "plain",
        dangerous ? `git ${dangerous} can make git run other programs` : null,
        openEnded,
      );
      return;
    }
    if (row) return;
    const code = inlineCode(name, argv);
    if (code) {
      this.push(argv, frame, code.kind, code.reason, openEnded);
      return;
    }
    const workspace = workspaceCode(argv);
    if (workspace) {
      this.push(argv, frame, "workspace_code", workspace, openEnded);
      return;
    }
    this.push(argv, frame, "plain", null, openEnded);
  }

  #script(argv: readonly string[], script: string, frame: Frame, via: string): void {
    const next = this.#deeper(frame, via);
    if (frame.placeholders.some((p) => p !== "" && script.includes(p))) {
      // xargs -I{} sh -c '{}' and find -exec sh -c 'echo {}': the script comes from input.
      this.push([script], next, "opaque", "the script is spliced from run-time input");
      return;
    }
    if (!this.#scripts) {
      this.push(argv, frame, "opaque", UNPARSED);
      return;
    }
    const analysis = this.#scripts.analyze(script);
    for (const command of analysis.commands) {
      const env = (command.assignments ?? []).map((a) => a.slice(0, Math.max(0, a.indexOf("="))));
      this.visit(command.argv, { ...next, env: [...next.env, ...env] });
    }
    for (const command of analysis.partial ?? []) {
      this.visit(command.argv, { ...next, partial: true });
    }
    for (const reason of analysis.opaque) this.push([script], next, "opaque", reason);
  }

  #shell(argv: readonly string[], frame: Frame): void {
    const parsed = shellInvocation(argv);
    if (parsed.kind === "script") this.#script(argv, parsed.script, frame, programName(argv[0]!));
    else if (parsed.kind === "file") {
      this.push(argv, frame, "workspace_code", `runs the script file ${parsed.file}`);
    } else this.push(argv, frame, "opaque", parsed.reason);
  }

  #find(argv: readonly string[], frame: Frame): void {
    const paths: string[] = [];
    let i = 1;
    while (i < argv.length && !isFindExpression(argv[i]!)) paths.push(argv[i++]!);
    const roots = paths.length ? paths : ["."];
    let plainFind = true;
    for (; i < argv.length; i++) {
      const token = argv[i]!;
      if (token === "-exec" || token === "-execdir" || token === "-ok" || token === "-okdir") {
        const start = i + 1;
        let end = start;
        while (end < argv.length && argv[end] !== ";" && argv[end] !== "+") end++;
        const command = argv.slice(start, end);
        const plus = argv[end] === "+";
        this.visit(
          command,
          this.#deeper(frame, `find ${token}`, { placeholders: ["{}"], roots }),
          plus || command.some((t) => t.includes("{}")),
        );
        i = end;
        plainFind = false;
      } else if (token === "-delete") {
        // find … -delete removes what it finds: decided as the rm it amounts to.
        this.push(["rm", "-rf", ...roots], this.#deeper(frame, "find -delete"), "plain", null);
        plainFind = false;
      } else if (
        token === "-fprint" || token === "-fprint0" || token === "-fprintf" || token === "-fls"
      ) {
        this.push(argv, frame, "opaque", `find ${token} writes files`);
        plainFind = false;
      }
    }
    if (plainFind) this.push(argv, frame, "plain", null);
  }
}

function isFindExpression(token: string): boolean {
  return token.startsWith("-") || token === "(" || token === "!" || token === ")" ||
    token === ",";
}

/** Options of a wrapper: flags, options taking a value, and whether `--opt=value` forms exist. */
export interface WrapperSpec {
  readonly flags: readonly string[];
  readonly valued: readonly string[];
  /** Operands before the command (timeout's duration, chrt's priority, taskset's mask). */
  readonly operands?: number;
  /** Skip NAME=VALUE assignments before the command. */
  readonly assignments?: boolean;
  /**
   * Every other option token is a flag (its value, if any, attached: `--nofile=10`, `-n10`):
   * for wrappers whose many options all take their values so.
   */
  readonly loose?: boolean;
  /** Options may follow the operands too (`perf stat -e cycles CMD`). */
  readonly optionsAfterOperands?: boolean;
}

/** Exec-style wrappers and their options: each runs its operand as a command. */
export const WRAPPERS: Readonly<Record<string, WrapperSpec>> = Object.freeze({
  env: {
    flags: [
      "-i",
      "--ignore-environment",
      "-0",
      "--null",
      "-v",
      "--debug",
      "-",
      "--list-signal-handling",
    ],
    valued: [
      "-u",
      "--unset",
      "-C",
      "--chdir",
      "--default-signal",
      "--ignore-signal",
      "--block-signal",
    ],
    assignments: true,
  },
  nice: { flags: [], valued: ["-n", "--adjustment"] },
  timeout: {
    flags: ["--preserve-status", "--foreground", "-v", "--verbose"],
    valued: ["-s", "--signal", "-k", "--kill-after"],
    operands: 1,
  },
  nohup: { flags: [], valued: [] },
  stdbuf: { flags: [], valued: ["-i", "-o", "-e", "--input", "--output", "--error"] },
  chrt: {
    flags: [
      "-a",
      "--all-tasks",
      "-m",
      "--max",
      "-R",
      "--reset-on-fork",
      "-v",
      "--verbose",
      "-b",
      "--batch",
      "-d",
      "--deadline",
      "-f",
      "--fifo",
      "-i",
      "--idle",
      "-o",
      "--other",
      "-r",
      "--rr",
    ],
    valued: ["-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline"],
    operands: 1,
  },
  taskset: { flags: ["-a", "--all-tasks", "-c", "--cpu-list"], valued: [], operands: 1 },
  setsid: { flags: ["-c", "--ctty", "-f", "--fork", "-w", "--wait"], valued: [] },
  ionice: { flags: ["-t", "--ignore"], valued: ["-c", "--class", "-n", "--classdata"] },
  sudo: {
    flags: [
      "-A",
      "--askpass",
      "-b",
      "--background",
      "-E",
      "--preserve-env",
      "-H",
      "--set-home",
      "-k",
      "--reset-timestamp",
      "-K",
      "-n",
      "--non-interactive",
      "-P",
      "--preserve-groups",
      "-S",
      "--stdin",
      "-B",
      "--bell",
      "-N",
      "--no-update",
    ],
    valued: [
      "-u",
      "--user",
      "-g",
      "--group",
      "-C",
      "--close-from",
      "-D",
      "--chdir",
      "-h",
      "--host",
      "-p",
      "--prompt",
      "-r",
      "--role",
      "-t",
      "--type",
      "-T",
      "--command-timeout",
      "-U",
      "--other-user",
      "-R",
      "--chroot",
    ],
    assignments: true,
  },
  doas: { flags: ["-n"], valued: ["-u", "-C"] },
  pkexec: { flags: ["--disable-internal-agent", "--keep-cwd"], valued: ["--user"] },
  time: {
    flags: ["-p", "--portability", "-v", "--verbose", "-a", "--append", "-q", "--quiet"],
    valued: ["-o", "--output", "-f", "--format"],
  },
  command: { flags: ["-p"], valued: [] },
  exec: { flags: ["-c", "-l"], valued: ["-a"] },
  builtin: { flags: [], valued: [] },
  catchsegv: { flags: [], valued: [] },
  unbuffer: { flags: ["-p"], valued: [] },
  chroot: { flags: [], valued: ["--userspec", "--groups"], operands: 1 },
  sg: { flags: [], valued: [], operands: 1 },
  prlimit: { flags: [], valued: ["-p", "--pid", "-o", "--output"], loose: true },
  setpriv: {
    flags: [],
    valued: [
      "--reuid",
      "--regid",
      "--ruid",
      "--euid",
      "--rgid",
      "--egid",
      "--groups",
      "--inh-caps",
      "--ambient-caps",
      "--bounding-set",
      "--securebits",
      "--pdeathsig",
      "--selinux-label",
      "--apparmor-profile",
      "--landlock-access",
      "--landlock-rule",
    ],
    loose: true,
  },
  fakeroot: {
    flags: ["-u", "--unknown-is-real", "-h", "-v"],
    valued: ["-l", "--lib", "--faked", "-s", "-i", "-b"],
  },
  faketime: {
    flags: ["-m", "-f", "--exclude-monotonic", "--disable-shm"],
    valued: ["--date-prog", "-p"],
    operands: 1,
  },
  numactl: {
    flags: [],
    valued: [
      "-i",
      "--interleave",
      "-p",
      "--preferred",
      "-m",
      "--membind",
      "-N",
      "--cpunodebind",
      "-C",
      "--physcpubind",
      "-P",
      "--preferred-many",
      "-w",
      "--weighted-interleave",
    ],
    loose: true,
  },
  rlwrap: {
    flags: [],
    valued: [
      "-b",
      "-C",
      "-D",
      "-e",
      "-f",
      "-g",
      "-H",
      "-l",
      "-M",
      "-O",
      "-P",
      "-q",
      "-s",
      "-S",
      "-t",
      "-w",
      "-z",
      "--filter",
    ],
    loose: true,
  },
  "xvfb-run": {
    flags: ["-a", "--auto-servernum", "-l", "--listen-tcp", "-d", "--auto-display"],
    valued: [
      "-n",
      "--server-num",
      "-s",
      "--server-args",
      "-f",
      "--auth-file",
      "-e",
      "--error-file",
      "-p",
      "--xauth-protocol",
      "-w",
      "--wait",
    ],
  },
  "dbus-run-session": { flags: [], valued: ["--config-file", "--dbus-daemon"], loose: true },
  chpst: {
    flags: ["-P", "-0", "-1", "-2", "-v", "-V"],
    valued: [
      "-u",
      "-U",
      "-b",
      "-e",
      "-/",
      "-C",
      "-n",
      "-l",
      "-L",
      "-m",
      "-d",
      "-o",
      "-p",
      "-f",
      "-c",
      "-r",
      "-t",
    ],
  },
  strace: {
    flags: [],
    valued: [
      "-e",
      "-o",
      "-p",
      "-P",
      "-s",
      "-S",
      "-u",
      "-E",
      "-a",
      "-b",
      "-I",
      "-X",
      "-O",
      "-U",
      "--output",
      "--attach",
      "--trace-path",
      "--string-limit",
      "--summary-sort-by",
      "--user",
      "--env",
      "--columns",
      "--detach-on",
      "--interruptible",
      "--const-print-style",
      "--overhead",
      "--summary-columns",
    ],
    loose: true,
  },
  ltrace: {
    flags: [],
    valued: ["-e", "-o", "-p", "-s", "-u", "-a", "-n", "-A", "-D", "-F", "-l", "-w", "--output"],
    loose: true,
  },
  valgrind: { flags: [], valued: [], loose: true },
  perf: {
    flags: [],
    valued: ["-e", "-p", "-t", "-C", "-G", "-o", "-r", "-x", "-I", "-M", "-F", "-c", "-m", "-i"],
    operands: 1,
    optionsAfterOperands: true,
    loose: true,
  },
  rr: { flags: [], valued: [], operands: 1, optionsAfterOperands: true, loose: true },
  heaptrack: { flags: [], valued: ["-o", "--output", "-p", "--pid"], loose: true },
  cpulimit: {
    flags: [],
    valued: ["-l", "--limit", "-p", "--pid", "-e", "--exe", "-c", "--cpu"],
    loose: true,
  },
  choom: { flags: [], valued: ["-n", "--adjust", "-p", "--pid"] },
  setarch: { flags: [], valued: [], operands: 1, optionsAfterOperands: true, loose: true },
  // linux32 and linux64 (programName drops the digits).
  linux: { flags: [], valued: [], loose: true },
  "aa-exec": {
    flags: ["-i", "--immediate", "-v", "--verbose", "-d", "--debug"],
    valued: ["-p", "--profile", "-n", "--namespace"],
  },
  aoss: { flags: [], valued: [] },
  firejail: { flags: [], valued: [], loose: true },
  torsocks: { flags: ["-i", "-d", "-q", "--shell"], valued: ["-u", "-p", "-a", "-P"] },
  torify: { flags: [], valued: [] },
  proxychains: { flags: ["-q"], valued: ["-f"] },
  sshpass: { flags: ["-e", "-v"], valued: ["-p", "-f", "-d", "-P"] },
  "ssh-agent": {
    flags: ["-c", "-D", "-d"],
    valued: ["-a", "-E", "-P", "-t", "-O"],
  },
  softlimit: {
    flags: [],
    valued: ["-m", "-d", "-s", "-l", "-a", "-o", "-p", "-f", "-c", "-r", "-t"],
  },
  setlock: { flags: ["-n", "-N", "-x", "-X"], valued: [], operands: 1 },
  setuidgid: { flags: [], valued: [], operands: 1 },
  envuidgid: { flags: [], valued: [], operands: 1 },
  gosu: { flags: [], valued: [], operands: 1 },
  "su-exec": { flags: [], valued: [], operands: 1 },
  pgrphack: { flags: [], valued: [] },
  logsave: { flags: ["-a", "-s", "-v"], valued: [], operands: 1 },
  eatmydata: { flags: [], valued: [] },
  nocache: { flags: [], valued: ["-n"] },
  "systemd-inhibit": {
    flags: [],
    valued: ["--what", "--who", "--why", "--mode"],
    loose: true,
  },
  chronic: { flags: ["-e", "-v"], valued: [] },
  ifne: { flags: ["-n"], valued: [] },
  tini: { flags: ["-s", "-v", "-g", "-w", "-l"], valued: ["-p", "-e"] },
  "dumb-init": {
    flags: ["-c", "--single-child", "-v", "--verbose"],
    valued: ["-r", "--rewrite"],
  },
  grc: {
    flags: ["-e", "-s", "--stderr", "--stdout", "--colour=on", "--colour=off"],
    valued: ["-c", "--config"],
  },
  trickle: { flags: ["-s", "-v", "-V"], valued: ["-u", "-d", "-w", "-t", "-l", "-n"] },
  cgexec: { flags: ["--sticky"], valued: ["-g"] },
  ccache: { flags: [], valued: [] },
  sccache: { flags: [], valued: [] },
  distcc: { flags: [], valued: [] },
  multitime: { flags: ["-q", "-i"], valued: ["-n", "-s", "-f"] },
  entr: { flags: ["-a", "-c", "-d", "-n", "-p", "-r", "-z"], valued: [] },
});

type Unwrapped =
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

function unwrap(name: string, argv: readonly string[]): Unwrapped | undefined {
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
function xargsCommand(argv: readonly string[]): { argv: string[]; placeholder?: string } {
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

function watchCommand(argv: readonly string[]): { argv: string[]; exec: boolean } {
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

type ShellInvocation =
  | { readonly kind: "script"; readonly script: string }
  | { readonly kind: "file"; readonly file: string }
  | { readonly kind: "opaque"; readonly reason: string };

function shellInvocation(argv: readonly string[]): ShellInvocation {
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

function gitDangerous(argv: readonly string[]): string | undefined {
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i]!;
    for (const option of GIT_DANGEROUS) {
      if (token === option || token.startsWith(`${option}=`)) return option;
      if (
        option === "-c" && token.startsWith("-c") && token.length > 2 && !token.startsWith("--")
      ) {
        return option;
      }
      if (option === "-C" && token.startsWith("-C") && token.length > 2) return option;
    }
    // Options end at the subcommand.
    if (!token.startsWith("-")) return undefined;
  }
  return undefined;
}

/** Whether sed will run commands or write files (its `e` command or flag, `w`, `-f FILE`). */
function sedDanger(argv: readonly string[]): { kind: CommandKind; reason: string } | undefined {
  const scripts: string[] = [];
  let explicit = false;
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "-e" || token === "--expression") {
      scripts.push(argv[++i] ?? "");
      explicit = true;
    } else if (token.startsWith("--expression=")) {
      scripts.push(token.slice("--expression=".length));
      explicit = true;
    } else if (token === "-f" || token === "--file" || token.startsWith("--file=")) {
      return { kind: "workspace_code", reason: "sed runs a script file" };
    } else if (token.startsWith("-e") && token.length > 2 && !token.startsWith("--")) {
      scripts.push(token.slice(2));
      explicit = true;
    } else if (token === "--") {
      if (!explicit && argv[i + 1] !== undefined) scripts.push(argv[i + 1]!);
      break;
    } else if (!token.startsWith("-") && !explicit) {
      scripts.push(token);
      break;
    }
  }
  for (const script of scripts) {
    const found = sedScriptDanger(script);
    if (found) return { kind: "inline_code", reason: `sed ${found}` };
  }
  return undefined;
}

/** The first thing in a sed script that runs commands or writes files, or undefined. Linear. */
function sedScriptDanger(script: string): string | undefined {
  let p = 0;
  const n = script.length;
  const restOfLine = () => {
    while (p < n && script[p] !== "\n") p++;
  };
  /** Skips a delimited part (`/re/`), honouring backslash escapes; false when unterminated. */
  const delimited = (delim: string) => {
    while (p < n && script[p] !== delim) {
      if (script[p] === "\\") p++;
      p++;
    }
    if (p >= n) return false;
    p++;
    return true;
  };
  while (p < n) {
    const c = script[p]!;
    if (
      c === " " || c === "\t" || c === "\n" || c === ";" || c === "{" || c === "}" || c === "!"
    ) {
      p++;
      continue;
    }
    // Addresses: numbers, $, ranges, steps, /regex/ and \cregexc.
    if ((c >= "0" && c <= "9") || c === "$" || c === "," || c === "~" || c === "+") {
      p++;
      continue;
    }
    if (c === "/") {
      p++;
      if (!delimited("/")) return undefined;
      while (p < n && (script[p] === "I" || script[p] === "M")) p++;
      continue;
    }
    if (c === "\\") {
      const delim = script[p + 1];
      p += 2;
      if (delim === undefined || !delimited(delim)) return undefined;
      continue;
    }
    p++;
    switch (c) {
      case "e":
        return "runs shell commands (its e command)";
      case "w":
      case "W":
        return "writes files (its w command)";
      case "s": {
        const delim = script[p++];
        if (delim === undefined || !delimited(delim) || !delimited(delim)) return undefined;
        while (p < n && script[p] !== ";" && script[p] !== "\n" && script[p] !== "}") {
          const flag = script[p]!;
          if (flag === "e") return "runs shell commands (the e flag of s)";
          if (flag === "w") return "writes files (the w flag of s)";
          p++;
        }
        break;
      }
      case "y": {
        const delim = script[p++];
        if (delim === undefined || !delimited(delim) || !delimited(delim)) return undefined;
        break;
      }
      case "a":
      case "i":
      case "c":
      case "r":
      case "R":
      case "b":
      case "t":
      case "T":
      case ":":
      case "l":
      case "q":
      case "Q":
      case "L":
        restOfLine();
        break;
      default:
        break;
    }
  }
  return undefined;
}

function inlineCode(
  name: string,
  argv: readonly string[],
): { kind: CommandKind; reason: string } | undefined {
  if (AWKS.includes(name)) {
    const valued = ["-F", "-v", "--assign", "--field-separator"];
    for (let i = 1; i < argv.length; i++) {
      const token = argv[i]!;
      if (token === "-f" || token === "--file" || token.startsWith("-f")) {
        return { kind: "workspace_code", reason: `${name} runs a program file` };
      }
      if (token === "--") {
        return argv[i + 1] === undefined
          ? undefined
          : { kind: "inline_code", reason: `${name} runs the program given inline` };
      }
      if (valued.includes(token)) {
        i++;
        continue;
      }
      if (token.startsWith("-")) continue;
      return { kind: "inline_code", reason: `${name} runs the program given inline` };
    }
    return undefined;
  }
  if (name === "sed") {
    const danger = sedDanger(argv);
    if (danger) return danger;
  }
  if (name === "deno" && argv[1] === "eval") {
    return { kind: "inline_code", reason: "deno eval runs the code given inline" };
  }
  const options = Object.hasOwn(INLINE, name) ? INLINE[name] : undefined;
  if (!options) return undefined;
  // `python3 --version` runs no program.
  const INFO = ["--version", "-V", "--help", "-h", "-version", "-help"];
  if (argv.length > 1 && argv.slice(1).every((t) => INFO.includes(t))) return undefined;
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i]!;
    const lower = token.toLowerCase();
    if (
      options.includes(lower) ||
      options.some((o) => o.startsWith("--") && lower.startsWith(`${o}=`))
    ) {
      return { kind: "inline_code", reason: `${name} ${token} runs the code given inline` };
    }
    // Bundled short flags ending in the code option: python -Sc, perl -ne, node -pe.
    if (!token.startsWith("--") && token.startsWith("-") && token.length > 2) {
      for (const o of options) {
        if (o.length === 2 && token.slice(1).includes(o[1]!)) {
          return { kind: "inline_code", reason: `${name} ${token} runs the code given inline` };
        }
      }
    }
    if (token === "-") return { kind: "opaque", reason: `${name} reads a program from stdin` };
    if (!token.startsWith("-")) {
      return { kind: "workspace_code", reason: `${name} runs the program file ${token}` };
    }
  }
  return { kind: "opaque", reason: `${name} reads a program from stdin` };
}

/** A program given by a relative path runs a file of the workspace. */
function workspaceCode(argv: readonly string[]): string | undefined {
  const program = argv[0]!;
  return program.startsWith("./") || program.startsWith("../")
    ? `runs the workspace program ${program}`
    : undefined;
}

/**
 * Why `token` cannot be a program name, or undefined: shell syntax in an argv[0] means the
 * caller meant a shell line (`["ls -la"]`, `["FOO=1 make"]`, `["*.sh"]`), which exec would not
 * run as written.
 */
export function malformedProgram(token: string): string | undefined {
  if (token === "") return "is empty";
  if (token === "[" || token.endsWith("/[")) return undefined;
  const first = token[0]!;
  if (first === "~" || first === "#" || first === "!" || first === "-") {
    return `${JSON.stringify(token.slice(0, 60))} starts with ${JSON.stringify(first)}`;
  }
  for (const c of token) {
    const code = c.codePointAt(0)!;
    const what = code < 0x20 || code === 0x7f
      ? "a control character"
      : isSpace(code)
      ? "whitespace"
      : "'\"`\\".includes(c)
      ? "a quote or backslash"
      : "*?[]{}".includes(c)
      ? "a glob character"
      : c === "="
      ? "an assignment"
      : "$;&|<>()".includes(c)
      ? "shell syntax"
      : undefined;
    if (what) {
      return `${JSON.stringify(token.slice(0, 60))} carries ${what} (${JSON.stringify(c)})`;
    }
  }
  return undefined;
}

/** Unicode White_Space above ASCII control characters. */
function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x85 || code === 0xa0 || code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) || code === 0x2028 || code === 0x2029 ||
    code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff;
}

/** The command `script` runs: its -c string, or a reason it is opaque. */
function scriptCommand(
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

/**
 * Every command `argv` will run, unwrapping wrappers and parsing shell scripts with `scripts`
 * (without it, or before it is loaded, every script is opaque); `programs` is the table of
 * programs that run programs, built once by a long-lived caller (without it, looked up by scan).
 */
export function analyzeArgv(
  argv: readonly string[],
  scripts: ScriptAnalyzer | null = null,
  programs?: ProgramTable,
): NestedCommand[] {
  const analysis = new Analysis(scripts, programs);
  analysis.visit(argv, TOP);
  return analysis.commands;
}
