/**
 * Classifying (the second job of `analyzeArgv()`): what one command found in an argv is — a
 * program's bare name, whether its argv[0] is shell syntax, whether it destroys its operands,
 * runs code given inline (`python -c`, `awk PROGRAM`, `sed e`), runs workspace code, or is git
 * with an option that runs programs — and which environment variables change what runs.
 *
 * Linear in the input: no regular expression runs on untrusted text.
 *
 * @module
 */
import type { CommandKind } from "./shell_argv.ts";

/** Wrappers that run their command with other privileges: never transparent. */
export const PRIVILEGED: readonly string[] = Object.freeze([
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
export function codeVariable(name: string): boolean {
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
export const SYSTEM_BIN: readonly string[] = Object.freeze([
  "/bin/",
  "/sbin/",
  "/usr/bin/",
  "/usr/sbin/",
  "/usr/local/bin/",
  "/usr/local/sbin/",
  "/opt/homebrew/bin/",
]);

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

/** Shells whose `-c` body is parsed as a script. */
export const SHELLS: readonly string[] = Object.freeze([
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

/** The first git option (before the subcommand) that can make git run other programs. */
export function gitDangerous(argv: readonly string[]): string | undefined {
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

/**
 * Whether an interpreter runs code given inline, a program file, or stdin (awk, sed, deno
 * eval, the INLINE table).
 */
export function inlineCode(
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
export function workspaceCode(argv: readonly string[]): string | undefined {
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
