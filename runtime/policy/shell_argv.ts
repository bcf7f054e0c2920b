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
 * Files: this module walks an argv and its nested commands; `_argv_unwrap.ts` finds the command a
 * wrapper runs (the wrappers' options are the table `_argv_wrappers.ts`); `_argv_classify.ts`
 * decides what kind of command each one found is.
 *
 * Everything here is linear in the input: no regular expression runs on untrusted text.
 * Hand-written because no package does this job: command-line splitters (`shell-quote` and the
 * like) give tokens, not what `sudo -u x env -i timeout 5 sh -c …` will run.
 *
 * @module
 */
import { matchCodeRow, programEntry, type ProgramTable } from "./shell_programs.ts";
import {
  codeVariable,
  gitDangerous,
  inlineCode,
  isDestructive,
  malformedProgram,
  PRIVILEGED,
  programName,
  SHELLS,
  SYSTEM_BIN,
  workspaceCode,
} from "./_argv_classify.ts";
import {
  scriptCommand,
  shellInvocation,
  unwrap,
  watchCommand,
  xargsCommand,
} from "./_argv_unwrap.ts";

export { isDestructive, malformedProgram, programName } from "./_argv_classify.ts";
export { WRAPPERS, type WrapperSpec } from "./_argv_wrappers.ts";

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

/** Parses `sh -c` bodies; absent (or not loaded), every script is opaque. */
export interface ScriptAnalyzer {
  analyze(script: string): ScriptAnalysis;
}

/** How deep wrappers may nest before the argv is opaque. */
const MAX_DEPTH = 16;
/** Most nested commands one argv may produce before the rest is opaque. */
const MAX_COMMANDS = 256;

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
