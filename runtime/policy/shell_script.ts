/**
 * Seeing through an `sh -c` body (DESIGN §2 "Fail closed", §8): which simple commands it runs,
 * with exactly the argv each program receives, and every reason it cannot be fully seen through.
 * A script with any opaque reason must never be auto-allowed; a script without one lists every
 * command that can run, so a policy may decide on each argv.
 *
 * How it runs, each step bounded before the next one starts:
 *
 * 1. {@link prescanScript} (`_script_prescan.ts`): one linear pass with no regular expressions
 *    counts UTF-8 bytes (early exit past the cap), nesting depth (`(`, `$(`, `<(`, `{`, `[[`,
 *    `${`, backticks, quotes, `if`/`case`/loop keywords, unquoted heredoc bodies), commands (1 +
 *    separators: `;` `;;` `&` `&&` `|` `||` `|&`, a newline ending a non-empty command, each `$(`
 *    `<(` `>(` and backtick) and heredocs. It also refuses NUL and lone surrogates. Over a cap →
 *    `prescan: …`, no parse. The pass over-counts rather than under-counts; mvdan-sh's own stack
 *    overflow (about 1,000 levels) is still caught as `unparseable: …` should the pass ever
 *    under-count.
 * 2. `npm:mvdan-sh` (mvdan.cc/sh compiled by GopherJS; its facade is `_script_syntax.ts`) parses
 *    with the Bash grammar, the widest one: dash would reject or take literally most Bash-only
 *    syntax, and everything Bash-only that changes argv (`$'…'`, `{a,b}`, `<(…)`) is opaque
 *    anyway.
 * 3. A recursive walk (`_script_walker.ts`, words read by `_script_words.ts`) over every node kind
 *    of the grammar records commands and reasons; a node kind it does not know is opaque.
 *    Afterwards the library's own `syntax.Walk` counts the nodes of each kind and any count the
 *    walk did not match is opaque too (`internal: …`), so a field this walk forgot can never hide
 *    a command.
 *
 * Loading: mvdan-sh enumerates `process.env` when evaluated, which needs unscoped `--allow-env`.
 * {@link ShellParser.load} imports it lazily while `globalThis.process` is briefly a copy whose
 * `env` is empty (restored in `finally`), so it loads with no permission at all. The loaded
 * library lives in the instance, never in a module variable.
 *
 * Decisions (what a reported argv means and what counts as opaque):
 *
 * - Literal words are concatenations of unquoted text, `'…'` and `"…"` holding only text; escapes
 *   are resolved as the shell does (`a\ b` → `a b`, `"a\"b"` → `a"b`, `"a\b"` → `a\b`, a
 *   backslash-newline disappears). `ScriptCommand.argv` is exactly what the program receives.
 * - A command with any non-literal word is not listed (its argv is unknown); the reason names it.
 *   Commands inside substitutions, subshells, blocks, bodies of `if`/`while`/`for`/`case`,
 *   functions and pipelines are listed, in source order.
 * - A bare assignment (`A=1`) is listed with an empty argv and its assignment: it changes the
 *   environment of later commands, so a caller must not skip it. Prefix assignments (`A=1 cmd`)
 *   are listed with their command. `export`/`declare`/`local`/… are listed as commands.
 * - Globs (`*`, `?`, `[…]`, extended globs) in a word that undergoes pathname expansion are
 *   opaque: the shell replaces them with file names, so the argv is not known, and a file the
 *   agent created named `-rf` or `--checkpoint-action=exec=…` turns `rm *` or `tar cf x *` into
 *   something else. Globs in assignment values, `case` patterns, `[[ ]]` and here-strings are
 *   not expanded and stay literal text.
 * - Brace expansion (`{a,b}`, `{1..3}`) and tilde expansion (`~`, `~user/x`, `A=~/x`, `A=x:~/y`) change
 *   argv and are opaque. `{}` (as in `find -exec`) and `HEAD~1` are literal.
 * - ANSI-C quoting `$'…'` is opaque: Bash decodes it, dash (this machine's `/bin/sh`) takes it
 *   literally, `\u` depends on the locale and `\x00` truncates. `$"…"` (translated) is opaque.
 * - Redirections: `2>&1`, `>&2`, `3>&-`, `<&0` (fd duplication and closing) and `/dev/null`,
 *   `/dev/stdout`, `/dev/stderr` as targets are fine. Any other output target (`>`, `>>`, `>|`,
 *   `&>`, `&>>`, `<>`, `>&file`) is opaque: the shell writes a file no primitive checks. Input
 *   from a file (`<`) is opaque as well: the shell reads it, so `cat < .env` would read a secret
 *   that no read check sees. Here-strings and heredocs are fine unless they expand something
 *   (a quoted delimiter makes the body literal). A named descriptor (`{fd}>…`) is opaque.
 * - Expansions are opaque: `$VAR`/`${…}`, `$(…)` and backticks, `<(…)`/`>(…)` (inner commands
 *   listed), `$((…))` and `$[…]`. Arithmetic (`((…))`, `let`, `for ((…))`, `[[ a -eq b ]]`) that
 *   names a variable is opaque: Bash evaluates a variable's value as an expression, and
 *   `a[$(cmd)]` in it runs `cmd`. The same holds for a subscript in a variable name given to
 *   `read`, `unset`, `printf -v`, `declare`, `test -v`, … (`unset 'a[$(id)]'` runs `id`).
 * - Opaque builtins (listed as commands too): `eval`, `source`/`.`, `exec` with arguments,
 *   `alias`, `trap`, `enable` (loads shared objects), `hash -p`, `fc`, `complete`/`compgen`
 *   (`-C` runs commands), `mapfile -C`; also through `builtin …` and `command …`. Function
 *   definitions (a later `ls` may be a function), `coproc`, array assignments and `a[i]=…`.
 * - Assignments to variables that the shell or the loader turn into code (`PATH`, `BASH_ENV`,
 *   `ENV`, `PS0`, `PS1`, `PS2`, `PS4`, `PROMPT_COMMAND`, `SHELLOPTS`, `BASHOPTS`, `LD_PRELOAD`,
 *   `LD_LIBRARY_PATH`, `LD_AUDIT`) are opaque wherever they happen (prefix, bare, `export`,
 *   `read`, `printf -v`): `PATH=/tmp/x ls` runs another `ls`, and `PS4='$(…)'; set -x` runs code.
 *   Variables that make a *program* run commands (`GIT_SSH_COMMAND`, `PAGER`, `EDITOR`) are
 *   listed in `assignments` for the policy to judge.
 * - Wrapper programs (`xargs`, `env`, `sudo`, `sh -c`) are plain commands here; unwrapping them is
 *   another module's job.
 * - At most 32 reasons are listed, then one `opaque: N more …` line.
 *
 * Cost, measured on this machine: load 50-75 ms; the first analysis about 6 ms (JIT warm-up);
 * a one-line pipeline about 1 ms (the parse is 0.08 ms, the rest is GopherJS wrapping every node
 * on each field access, and about half of it the census); the worst case within the default caps
 * (8 KiB of words) 110-260 ms. The pre-scan itself takes microseconds.
 *
 * @module
 */
import { LibosError } from "../base/errors.ts";
import { prescanScript, type ScriptLimits } from "./_script_prescan.ts";
import {
  calibrate,
  describeParseError,
  facade,
  importWithoutEnv,
  type Operators,
  type SyntaxApi,
  syntaxOf,
} from "./_script_syntax.ts";
import { ScriptWalker } from "./_script_walker.ts";

export {
  type Prescan,
  prescanScript,
  SCRIPT_LIMITS,
  type ScriptLimits,
} from "./_script_prescan.ts";

/** One simple command whose words are all literal. */
export interface ScriptCommand {
  /** Exactly the argv the program receives; empty for a bare assignment such as `A=1`. */
  readonly argv: readonly string[];
  /** Assignments in effect for it (`NAME=value`, `NAME+=value`), values resolved. */
  readonly assignments: readonly string[];
}

/** What {@link ShellParser.analyze} found in a script. */
export interface ScriptAnalysis {
  /**
   * Commands with words the checker cannot resolve (`rm -rf ~`, `rm -rf "$HOME"`, `rm -rf /*`),
   * each such word given as its source text. Never to be allowed from — they are already opaque —
   * but the hardline floor must still see them.
   */
  readonly partial: readonly ScriptCommand[];
  /** Every simple command whose words are all literal, in source order (including those inside subshells, blocks, if/while/for/case bodies, pipelines, command substitutions, process substitutions, functions). */
  readonly commands: readonly ScriptCommand[];
  /** Reasons the script cannot be fully seen through; non-empty means it must never be auto-allowed. */
  readonly opaque: readonly string[];
}

interface Loaded {
  readonly api: SyntaxApi;
  readonly ops: Operators;
}

/**
 * The shell analyser: load mvdan-sh once, then {@link ShellParser.analyze} any number of
 * scripts synchronously.
 *
 * @example
 * const shell = new ShellParser();
 * await shell.load();
 * shell.analyze("cd src && grep -rn TODO . | head"); // commands: cd, grep, head; opaque: []
 */
export class ShellParser {
  readonly #importModule: () => Promise<unknown>;
  #loading: Promise<void> | null = null;
  #loaded: Loaded | null = null;

  /**
   * Builds an unloaded parser. `importModule` replaces the import of mvdan-sh (tests use it to
   * count loads and to make one fail); it must resolve to the module namespace.
   */
  constructor(options: { readonly importModule?: () => Promise<unknown> } = {}) {
    this.#importModule = options.importModule ?? importWithoutEnv;
  }

  /** Whether {@link ShellParser.load} has completed. */
  get loaded(): boolean {
    return this.#loaded !== null;
  }

  /**
   * Loads mvdan-sh once (see the module header); idempotent; concurrent calls share one load.
   * A failed load may be retried.
   *
   * @throws {LibosError} `shell_parser_unavailable` when the pinned package cannot be loaded.
   */
  load(): Promise<void> {
    this.#loading ??= this.#load().catch((error: unknown) => {
      this.#loading = null;
      throw error;
    });
    return this.#loading;
  }

  async #load(): Promise<void> {
    let module: unknown;
    try {
      module = await this.#importModule();
    } catch (error) {
      throw new LibosError(
        "shell_parser_unavailable",
        "operator",
        `Cannot load the shell parser npm:mvdan-sh: ${
          error instanceof Error ? error.message : String(error)
        }; fetch the pinned packages (deno install) and try again`,
        { cause: error },
      );
    }
    try {
      const api = facade(syntaxOf(module));
      this.#loaded = { api, ops: calibrate(api) };
    } catch (error) {
      throw new LibosError(
        "shell_parser_unavailable",
        "operator",
        `Cannot use the shell parser npm:mvdan-sh: ${
          error instanceof Error ? error.message : String(error)
        }; pin the version deno.json names (npm:mvdan-sh@0.10.1)`,
        { cause: error },
      );
    }
  }

  /**
   * Prescan, then parse and walk. Sync; never throws on any script content: a prescan failure
   * or a parse error yields `{ commands: [], opaque: ["prescan: …" | "unparseable: …"] }`.
   *
   * @throws {TypeError} when {@link ShellParser.load} has not completed or `script` is not a
   *   string; {RangeError} for an invalid limit.
   */
  analyze(script: string, limits: Partial<ScriptLimits> = {}): ScriptAnalysis {
    const loaded = this.#loaded;
    if (loaded === null) {
      throw new TypeError("ShellParser.analyze: call and await load() first");
    }
    const prescan = prescanScript(script, limits);
    if (!prescan.ok) return refused(prescan.reason);
    let file: unknown;
    try {
      file = loaded.api.parser.Parse(script, "");
    } catch (error) {
      return refused(`unparseable: ${describeParseError(error)}`);
    }
    try {
      if (file === null || typeof file !== "object") throw new TypeError("no syntax tree");
      return new ScriptWalker(loaded.api, loaded.ops, script).analyze(file);
    } catch (error) {
      return refused(`internal: the walk failed (${describeParseError(error)}); fail closed`);
    }
  }
}

function refused(reason: string): ScriptAnalysis {
  return Object.freeze({
    commands: Object.freeze([]),
    partial: Object.freeze([]),
    opaque: Object.freeze([reason]),
  });
}
