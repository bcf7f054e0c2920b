/**
 * Seeing through an `sh -c` body (DESIGN §2 "Fail closed", §8): which simple commands it runs,
 * with exactly the argv each program receives, and every reason it cannot be fully seen through.
 * A script with any opaque reason must never be auto-allowed; a script without one lists every
 * command that can run, so a policy may decide on each argv.
 *
 * How it runs, each step bounded before the next one starts:
 *
 * 1. {@link prescanScript}: one linear pass with no regular expressions counts UTF-8 bytes (early
 *    exit past the cap), nesting depth (`(`, `$(`, `<(`, `{`, `[[`, `${`, backticks, quotes,
 *    `if`/`case`/loop keywords, unquoted heredoc bodies), commands (1 + separators: `;` `;;` `&`
 *    `&&` `|` `||` `|&`, a newline ending a non-empty command, each `$(` `<(` `>(` and backtick)
 *    and heredocs. It also refuses NUL and lone surrogates. Over a cap → `prescan: …`, no parse.
 *    The pass over-counts rather than under-counts; mvdan-sh's own stack overflow (about 1,000
 *    levels) is still caught as `unparseable: …` should the pass ever under-count.
 * 2. `npm:mvdan-sh` (mvdan.cc/sh compiled by GopherJS) parses with the Bash grammar, the widest
 *    one: dash would reject or take literally most Bash-only syntax, and everything Bash-only
 *    that changes argv (`$'…'`, `{a,b}`, `<(…)`) is opaque anyway.
 * 3. A recursive walk over every node kind of the grammar records commands and reasons; a node
 *    kind it does not know is opaque. Afterwards the library's own `syntax.Walk` counts the nodes
 *    of each kind and any count the walk did not match is opaque too (`internal: …`), so a field
 *    this walk forgot can never hide a command.
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

/** Caps applied by {@link prescanScript} before any parse. */
export interface ScriptLimits {
  /** Largest accepted script, in UTF-8 bytes. */
  maxBytes: number;
  /** Deepest accepted nesting of `(`, `{`, `[[`, `$(`, backticks, quotes, keywords, heredocs. */
  maxDepth: number;
  /** Most commands (1 + command separators and substitutions). */
  maxCommands: number;
  /** Most heredocs. */
  maxHeredocs: number;
}

/** Default {@link ScriptLimits}: 8 KiB, 32 levels, 128 commands, 8 heredocs. */
export const SCRIPT_LIMITS: Readonly<ScriptLimits> = Object.freeze({
  maxBytes: 8192,
  maxDepth: 32,
  maxCommands: 128,
  maxHeredocs: 8,
});

/** The outcome of {@link prescanScript}: fine to parse, or refused with a reason. */
export type Prescan = { readonly ok: true } | { readonly ok: false; readonly reason: string };

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

// ---------------------------------------------------------------------------------------------
// Pre-scan
// ---------------------------------------------------------------------------------------------

const ROOT = 0;
const PAREN = 1;
const BRACE = 2;
const DBRACKET = 3;
const PARAM = 4;
const SQ = 5;
const ANSI = 6;
const DQ = 7;
const BQ = 8;
const CASE = 9;
const IF = 10;
const LOOP = 11;

/** Characters that end a plain word in shell code. */
const WORD_END = " \t\n;&|()<>";
/** Characters that end the plain run of a word (quotes and expansions need the main loop). */
const RUN_END = " \t\n;&|()<>'\"`$\\";

interface PendingHeredoc {
  readonly delimiter: string;
  readonly stripTabs: boolean;
  readonly quoted: boolean;
}

/** Checks and completes caller-given limits. @throws {RangeError} for a negative or fractional limit. */
function resolveLimits(limits: Partial<ScriptLimits>): ScriptLimits {
  const resolved = { ...SCRIPT_LIMITS, ...limits };
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(
        `Invalid shell script limit ${name}: ${String(value)}; use an integer ≥ 0`,
      );
    }
  }
  return resolved;
}

/** UTF-8 length of `script`, or a refusal for NUL and lone surrogates; exits early past `max`. */
function measureBytes(script: string, max: number): Prescan | number {
  let bytes = 0;
  for (let i = 0; i < script.length; i++) {
    const unit = script.charCodeAt(i);
    if (unit === 0) return { ok: false, reason: "prescan: the script contains a NUL character" };
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = script.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return loneSurrogate(i);
      bytes += 4;
      i++;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) return loneSurrogate(i);
    else bytes += 3;
    if (bytes > max) {
      return {
        ok: false,
        reason: `prescan: the script is over ${max} bytes of UTF-8 (the cap); shorten it`,
      };
    }
  }
  return bytes;
}

function loneSurrogate(index: number): Prescan {
  return { ok: false, reason: `prescan: lone UTF-16 surrogate at offset ${index}` };
}

/**
 * Refuses a script over a cap without parsing it (DESIGN §8): a single linear pass, no regular
 * expressions, early exit at the first cap exceeded.
 *
 * @throws {TypeError} when `script` is not a string; {RangeError} for an invalid limit.
 * @example
 * prescanScript("(".repeat(65536)); // { ok: false, reason: "prescan: the script is over 8192 bytes…" }
 */
export function prescanScript(script: string, limits: Partial<ScriptLimits> = {}): Prescan {
  if (typeof script !== "string") throw new TypeError("prescanScript: script must be a string");
  const caps = resolveLimits(limits);
  if (script.length > caps.maxBytes) {
    return {
      ok: false,
      reason: `prescan: the script is over ${caps.maxBytes} bytes of UTF-8 (the cap); shorten it`,
    };
  }
  const bytes = measureBytes(script, caps.maxBytes);
  if (typeof bytes !== "number") return bytes;
  return new Prescanner(script, caps).run();
}

/** The state of one pre-scan; see {@link prescanScript}. */
class Prescanner {
  readonly #s: string;
  readonly #caps: ScriptLimits;
  readonly #stack: number[] = [];
  readonly #pending: PendingHeredoc[] = [];
  #i = 0;
  #line = 1;
  #commands = 1;
  #heredocs = 0;
  /** The next word is in command position (where keywords count). */
  #atCommand = true;
  /** The current command has content, so a newline ends a command. */
  #content = false;
  #refusal: string | null = null;

  constructor(script: string, caps: ScriptLimits) {
    this.#s = script;
    this.#caps = caps;
  }

  run(): Prescan {
    while (this.#i < this.#s.length && this.#refusal === null) this.#step();
    return this.#refusal === null ? { ok: true } : { ok: false, reason: this.#refusal };
  }

  get #top(): number {
    return this.#stack.at(-1) ?? ROOT;
  }

  #push(kind: number): void {
    if (this.#stack.length + 1 > this.#caps.maxDepth) {
      this.#refuse(`nesting deeper than ${this.#caps.maxDepth} levels`);
    }
    this.#stack.push(kind);
  }

  #popIf(kind: number): boolean {
    if (this.#top !== kind) return false;
    this.#stack.pop();
    return true;
  }

  #command(): void {
    this.#commands++;
    if (this.#commands > this.#caps.maxCommands) {
      this.#refuse(`more than ${this.#caps.maxCommands} commands`);
    }
  }

  #refuse(what: string): void {
    this.#refusal ??= `prescan: ${what} (line ${this.#line}); split the script or simplify it`;
  }

  #separator(): void {
    this.#command();
    this.#atCommand = true;
    this.#content = false;
  }

  /** Skips a backslash and the character it escapes, counting an escaped newline. */
  #escape(): void {
    if (this.#s[this.#i + 1] === "\n") this.#line++;
    this.#i += 2;
  }

  #step(): void {
    const s = this.#s;
    const c = s[this.#i];
    const next = s[this.#i + 1];
    switch (this.#top) {
      case SQ:
        if (c === "'") this.#stack.pop();
        else if (c === "\n") this.#line++;
        this.#i++;
        return;
      case ANSI:
        if (c === "\\") return this.#escape();
        if (c === "'") this.#stack.pop();
        else if (c === "\n") this.#line++;
        this.#i++;
        return;
      case DQ:
        if (c === "\\") return this.#escape();
        if (c === '"') this.#stack.pop();
        else if (c === "\n") this.#line++;
        else if (c === "$" || c === "`") return this.#expansion(c, next);
        this.#i++;
        return;
      case PARAM:
        if (c === "\\") return this.#escape();
        if (c === "}") {
          this.#stack.pop();
          this.#i++;
          return;
        }
        if (c === "'" || c === '"' || c === "$" || c === "`") return this.#expansion(c, next);
        if (c === "\n") this.#line++;
        this.#i++;
        return;
      default:
        return this.#code(c, next);
    }
  }

  /** `$…`, a quote or a backtick inside double quotes, `${…}` or code. */
  #expansion(c: string | undefined, next: string | undefined): void {
    if (c === "'") {
      this.#push(SQ);
      this.#i++;
    } else if (c === '"') {
      this.#push(DQ);
      this.#i++;
    } else if (c === "`") {
      if (this.#top === BQ) {
        this.#stack.pop();
        this.#atCommand = false;
      } else {
        this.#push(BQ);
        this.#command();
        this.#atCommand = true;
      }
      this.#i++;
    } else if (next === "(") {
      this.#push(PAREN);
      this.#command();
      this.#atCommand = true;
      this.#i += 2;
    } else if (next === "{") {
      this.#push(PARAM);
      this.#i += 2;
    } else if (next === "'" && this.#top !== DQ) {
      this.#push(ANSI);
      this.#i += 2;
    } else if (next === '"' && this.#top !== DQ) {
      this.#push(DQ);
      this.#i += 2;
    } else {
      this.#i++;
    }
  }

  #code(c: string | undefined, next: string | undefined): void {
    const s = this.#s;
    const prev = s[this.#i - 1];
    const wordStart = prev === undefined || WORD_END.includes(prev);
    switch (c) {
      case " ":
      case "\t":
        this.#i++;
        return;
      case "\n":
        if (this.#content) this.#separator();
        this.#atCommand = true;
        this.#line++;
        this.#i++;
        if (this.#pending.length > 0) this.#heredocBodies();
        return;
      case "\\":
        if (next !== "\n") this.#word();
        return this.#escape();
      case "#":
        if (wordStart) {
          while (this.#i < s.length && s[this.#i] !== "\n") this.#i++;
          return;
        }
        break;
      case ";":
        this.#separator();
        this.#i++;
        if (s[this.#i] === ";") this.#i++;
        if (s[this.#i] === "&") this.#i++;
        return;
      case "&":
        if (prev === ">" || prev === "<" || next === ">") break;
        this.#separator();
        this.#i += next === "&" ? 2 : 1;
        return;
      case "|":
        if (prev === ">") break;
        this.#separator();
        this.#i += next === "|" || next === "&" ? 2 : 1;
        return;
      case "(":
        if (prev === "<" || prev === ">") this.#command();
        this.#push(PAREN);
        this.#atCommand = true;
        this.#i++;
        return;
      case ")":
        if (!this.#popIf(PAREN) && this.#top === CASE) {
          this.#atCommand = true; // the end of a case pattern
        } else {
          this.#atCommand = false;
        }
        this.#i++;
        return;
      case "<":
        if (prev !== "<" && next === "<" && s[this.#i + 2] !== "<") return this.#heredoc();
        break;
      case "'":
      case '"':
      case "`":
      case "$":
        this.#word();
        return this.#expansion(c, next);
    }
    if (wordStart && this.#plainWord()) return;
    this.#word();
    this.#i++;
  }

  /** Marks that the current command has content and the next word is an argument. */
  #word(): void {
    this.#content = true;
    this.#atCommand = false;
  }

  /** Handles a whole unquoted word at `#i` if it is a keyword; false to scan it normally. */
  #plainWord(): boolean {
    const s = this.#s;
    let end = this.#i;
    while (end < s.length && !RUN_END.includes(s[end]!)) end++;
    if (end < s.length && !WORD_END.includes(s[end]!)) return false;
    const word = s.slice(this.#i, end);
    if (word === "]]" && this.#popIf(DBRACKET)) {
      this.#i = end;
      this.#word();
      return true;
    }
    if (!this.#atCommand) return false;
    switch (word) {
      case "if":
        this.#push(IF);
        break;
      case "case":
        this.#push(CASE);
        break;
      case "for":
      case "select":
      case "while":
      case "until":
        this.#push(LOOP);
        break;
      case "{":
        this.#push(BRACE);
        break;
      case "[[":
        this.#push(DBRACKET);
        break;
      case "fi":
        this.#popIf(IF);
        break;
      case "esac":
        this.#popIf(CASE);
        break;
      case "done":
        this.#popIf(LOOP);
        break;
      case "}":
        this.#popIf(BRACE);
        break;
      case "then":
      case "do":
      case "else":
      case "elif":
      case "in":
      case "!":
      case "time":
      case "function":
      case "coproc":
        break;
      default:
        return false;
    }
    this.#i = end;
    this.#atCommand = true;
    return true;
  }

  /** `<<DELIM` or `<<-DELIM`: records the heredoc; its body starts after the next newline. */
  #heredoc(): void {
    const s = this.#s;
    this.#word();
    this.#i += 2;
    const stripTabs = s[this.#i] === "-";
    if (stripTabs) this.#i++;
    while (s[this.#i] === " " || s[this.#i] === "\t") this.#i++;
    let delimiter = "";
    let quoted = false;
    while (this.#i < s.length && !WORD_END.includes(s[this.#i]!)) {
      const c = s[this.#i]!;
      if (c === "'" || c === '"') {
        quoted = true;
        const close = s.indexOf(c, this.#i + 1);
        const end = close < 0 ? s.length : close;
        delimiter += s.slice(this.#i + 1, end);
        this.#i = end + 1;
      } else if (c === "\\") {
        quoted = true;
        delimiter += s[this.#i + 1] ?? "";
        this.#i += 2;
      } else {
        delimiter += c;
        this.#i++;
      }
    }
    this.#heredocs++;
    if (this.#heredocs > this.#caps.maxHeredocs) {
      this.#refuse(`more than ${this.#caps.maxHeredocs} heredocs`);
    }
    this.#pending.push({ delimiter, stripTabs, quoted });
  }

  /** Consumes the bodies of the pending heredocs, line by line. */
  #heredocBodies(): void {
    const s = this.#s;
    for (const heredoc of this.#pending.splice(0)) {
      const body = { depth: 0, tick: false };
      while (this.#i < s.length && this.#refusal === null) {
        const newline = s.indexOf("\n", this.#i);
        const end = newline < 0 ? s.length : newline;
        let start = this.#i;
        if (heredoc.stripTabs) { while (s[start] === "\t") start++; }
        const done = s.slice(start, end) === heredoc.delimiter;
        if (!done && !heredoc.quoted) this.#bodyLine(this.#i, end, body);
        this.#i = end + 1;
        this.#line++;
        if (done) break;
      }
    }
  }

  /** Counts `$(`, `${` and backticks in one line of an unquoted heredoc body. */
  #bodyLine(from: number, to: number, body: { depth: number; tick: boolean }): void {
    const s = this.#s;
    for (let i = from; i < to; i++) {
      const c = s[i];
      let opens = false;
      if (c === "\\") {
        i++;
      } else if (c === "$" && (s[i + 1] === "(" || s[i + 1] === "{")) {
        if (s[i + 1] === "(") this.#command();
        opens = true;
        i++;
      } else if (c === "`") {
        body.tick = !body.tick;
        if (body.tick) {
          this.#command();
          opens = true;
        } else if (body.depth > 0) {
          body.depth--;
        }
      } else if ((c === ")" || c === "}") && body.depth > 0) {
        body.depth--;
      }
      if (opens) {
        body.depth++;
        if (this.#stack.length + 1 + body.depth > this.#caps.maxDepth) {
          this.#refuse(`nesting deeper than ${this.#caps.maxDepth} levels`);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The mvdan-sh facade
// ---------------------------------------------------------------------------------------------

/** The members of mvdan-sh's `syntax` namespace this module uses. */
interface SyntaxApi {
  readonly NodeType: (node: object) => string;
  readonly Walk: (node: object, visit: (node: unknown) => boolean) => void;
  readonly parser: { readonly Parse: (source: string, name: string) => unknown };
}

/** Operator numbers of this mvdan-sh build, learned at load time from the library itself. */
interface Operators {
  readonly redirect: ReadonlyMap<number, string>;
  readonly arithmeticTest: readonly number[];
  readonly variableTest: readonly number[];
}

/** Redirection operators, in the order of the calibration script in {@link calibrate}. */
const REDIRECT_OPERATORS: readonly string[] = Object.freeze([
  ">",
  ">>",
  "<",
  "<>",
  "<&",
  ">&",
  ">|",
  "<<<",
  "&>",
  "&>>",
  "<<",
  "<<-",
]);
const ARITHMETIC_TESTS: readonly string[] = Object.freeze([
  "-eq",
  "-ne",
  "-lt",
  "-le",
  "-gt",
  "-ge",
]);
const VARIABLE_TESTS: readonly string[] = Object.freeze(["-v", "-R"]);

function field(node: object, key: string): unknown {
  return Reflect.get(node, key);
}

function child(node: object, key: string): object | null {
  const value = field(node, key);
  if (value === null || value === undefined) return null;
  if (typeof value !== "object") throw new TypeError(`mvdan-sh: field ${key} is not a node`);
  return value;
}

function children(node: object, key: string): readonly object[] {
  const value = field(node, key);
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) throw new TypeError(`mvdan-sh: field ${key} is not a list`);
  return value.map((item: unknown) => {
    if (item === null || typeof item !== "object") {
      throw new TypeError(`mvdan-sh: ${key} holds a non-node`);
    }
    return item;
  });
}

function text(node: object, key: string): string {
  const value = field(node, key);
  if (typeof value !== "string") throw new TypeError(`mvdan-sh: field ${key} is not a string`);
  return value;
}

function flag(node: object, key: string): boolean {
  return field(node, key) === true;
}

function operator(node: object): number {
  const value = field(node, "Op");
  if (typeof value !== "number") throw new TypeError("mvdan-sh: field Op is not a number");
  return value;
}

/** Calls a zero-argument method of a GopherJS object, or returns undefined. */
function call(target: unknown, method: string): unknown {
  if (target === null || typeof target !== "object") return undefined;
  const fn: unknown = Reflect.get(target, method);
  return typeof fn === "function" ? Reflect.apply(fn, target, []) : undefined;
}

/** `line:column` of a node, for reasons. */
function where(node: object): string {
  try {
    const pos = call(node, "Pos");
    return `${String(call(pos, "Line"))}:${String(call(pos, "Col"))}`;
  } catch {
    return "?";
  }
}

/** A parse error's own message (`1:6: reached EOF without closing quote '`). */
function describeParseError(error: unknown): string {
  if (error instanceof RangeError) return `nested too deeply for the parser (${error.message})`;
  try {
    const message = call(error, "Error");
    if (typeof message === "string") return message;
  } catch {
    // fall through to the generic description
  }
  return error instanceof Error ? error.message : String(error);
}

/** Quotes untrusted text for a reason, shortened. */
function quote(value: string): string {
  const points = [...value];
  return JSON.stringify(points.length > 40 ? `${points.slice(0, 40).join("")}…` : value);
}

// ---------------------------------------------------------------------------------------------
// The walk
// ---------------------------------------------------------------------------------------------

/** Most reasons listed; the rest are counted in one last reason. */
const MAX_REASONS = 32;

/** Words in these positions undergo pathname, brace and tilde expansion. */
type WordRole = "argument" | "assignment" | "pattern";

/** Targets of an output redirection that write no file. */
const SAFE_SINKS: readonly string[] = Object.freeze(["/dev/null", "/dev/stdout", "/dev/stderr"]);
/**
 * Variables the shell or the dynamic loader turns into code or a program lookup: `PATH` (which
 * file a command name runs), `BASH_ENV`/`ENV` (sourced by child shells), the prompts (`PS4` is
 * expanded by `set -x`, with command substitution), `LD_*` (loaded into every child).
 */
const CODE_VARIABLES: readonly string[] = Object.freeze([
  "PATH",
  "BASH_ENV",
  "ENV",
  "PS0",
  "PS1",
  "PS2",
  "PS4",
  "PROMPT_COMMAND",
  "SHELLOPTS",
  "BASHOPTS",
  "LD_PRELOAD",
  "LD_LIBRARY_PATH",
  "LD_AUDIT",
]);
const CODE_VARIABLE_EFFECT = "changes which code later commands run";

/** Builtins that declare variables; the parser makes a declaration clause of them. */
const DECLARATION_BUILTINS: readonly string[] = Object.freeze([
  "declare",
  "typeset",
  "local",
  "export",
  "readonly",
]);
/** Builtins whose arguments name variables; a subscript in a name is evaluated as arithmetic. */
const NAME_BUILTINS: readonly string[] = Object.freeze([
  "read",
  "unset",
  "getopts",
  "wait",
  "mapfile",
  "readarray",
  ...DECLARATION_BUILTINS,
]);

interface Found {
  readonly command: ScriptCommand;
  readonly offset: number;
}

/** One analysis: walks a parsed file, collecting commands and reasons. */
class ScriptWalker {
  readonly #api: SyntaxApi;
  readonly #ops: Operators;
  readonly #found: Found[] = [];
  readonly #reasons: string[] = [];
  readonly #seen = new Set<string>();
  #unlisted = 0;
  readonly #counts = new Map<string, number>();
  /** Above 0 while walking what syntax.Walk of this build skips (so the census skips it too). */
  #uncounted = 0;

  readonly #script: string;
  readonly #partial: ScriptCommand[] = [];

  constructor(api: SyntaxApi, ops: Operators, script: string) {
    this.#api = api;
    this.#ops = ops;
    this.#script = script;
  }

  analyze(file: object): ScriptAnalysis {
    this.#enter(file);
    for (const stmt of children(file, "Stmts")) this.#stmt(stmt);
    this.#census(file);
    const commands = this.#found
      .map((found, index) => ({ ...found, index }))
      .sort((a, b) => a.offset - b.offset || a.index - b.index)
      .map((found) => found.command);
    const opaque = [...this.#reasons];
    if (this.#unlisted > 0) {
      opaque.push(`opaque: ${this.#unlisted} more reasons or repeats not listed`);
    }
    return Object.freeze({
      commands: Object.freeze(commands),
      partial: Object.freeze([...this.#partial]),
      opaque: Object.freeze(opaque),
    });
  }

  /** A word's source text (what the script says, before the shell rewrites it). */
  #source(word: object): string {
    try {
      const from = call(call(word, "Pos"), "Offset");
      const to = call(call(word, "End"), "Offset");
      if (typeof from === "number" && typeof to === "number" && to >= from) {
        return this.#script.slice(from, to);
      }
    } catch {
      // fall through
    }
    return "?";
  }

  /**
   * Records a reason once. Built lazily, and at most {@link MAX_REASONS} are listed: positions
   * cost a call into GopherJS each, and a script with thousands of `$x` needs no thousand lines.
   */
  #opaque(reason: () => string): void {
    if (this.#reasons.length >= MAX_REASONS) {
      this.#unlisted++;
      return;
    }
    const text = reason();
    if (this.#seen.has(text)) return;
    this.#seen.add(text);
    this.#reasons.push(text);
  }

  /** Counts a node for the census and returns its kind. */
  #enter(node: object): string {
    const kind = this.#api.NodeType(node);
    if (this.#uncounted === 0) this.#counts.set(kind, (this.#counts.get(kind) ?? 0) + 1);
    return kind;
  }

  /** Compares the walk with the library's own `syntax.Walk`, node kind by node kind. */
  #census(file: object): void {
    const counts = new Map<string, number>();
    this.#api.Walk(file, (node) => {
      if (node !== null && typeof node === "object") {
        const kind = this.#api.NodeType(node);
        if (kind !== "Comment") counts.set(kind, (counts.get(kind) ?? 0) + 1);
      }
      return true;
    });
    for (const kind of new Set([...counts.keys(), ...this.#counts.keys()])) {
      const expected = counts.get(kind) ?? 0;
      const seen = this.#counts.get(kind) ?? 0;
      if (expected !== seen) {
        this.#opaque(() =>
          `internal: the walk saw ${seen} of ${expected} ${kind} nodes; fail closed`
        );
      }
    }
  }

  #stmts(node: object, key: string): void {
    for (const stmt of children(node, key)) this.#stmt(stmt);
  }

  #stmt(stmt: object): void {
    this.#enter(stmt);
    if (flag(stmt, "Coprocess")) this.#opaque(() => `coproc: a coprocess at ${where(stmt)}`);
    const command = child(stmt, "Cmd");
    if (command !== null) this.#command(command);
    for (const redirect of children(stmt, "Redirs")) this.#redirect(redirect);
  }

  #command(node: object): void {
    const kind = this.#enter(node);
    switch (kind) {
      case "CallExpr":
        return this.#call(node);
      case "Subshell":
      case "Block":
        return this.#stmts(node, "Stmts");
      case "BinaryCmd":
        for (const key of ["X", "Y"]) {
          const side = child(node, key);
          if (side !== null) this.#stmt(side);
        }
        return;
      case "IfClause":
        return this.#ifClause(node);
      case "WhileClause":
        this.#stmts(node, "Cond");
        return this.#stmts(node, "Do");
      case "ForClause":
        return this.#forClause(node);
      case "CaseClause":
        return this.#caseClause(node);
      case "FuncDecl": {
        const name = child(node, "Name");
        const label = name === null ? "?" : this.#lit(name);
        this.#opaque(() =>
          `function definition: ${quote(label)} at ${
            where(node)
          }; a later command of that name runs the function`
        );
        const body = child(node, "Body");
        if (body !== null) this.#stmt(body);
        return;
      }
      case "ArithmCmd":
        return this.#arithmetic(child(node, "X"));
      case "LetClause":
        for (const expr of children(node, "Exprs")) this.#arithmetic(expr);
        return;
      case "TestClause":
        this.#test(child(node, "X"));
        return;
      case "DeclClause":
        return this.#declClause(node);
      case "TimeClause": {
        const inner = child(node, "Stmt");
        if (inner !== null) this.#stmt(inner);
        return;
      }
      case "CoprocClause": {
        this.#opaque(() => `coproc: a coprocess at ${where(node)}`);
        const name = child(node, "Name");
        if (name !== null) this.#word(name, "pattern");
        const inner = child(node, "Stmt");
        if (inner !== null) this.#stmt(inner);
        return;
      }
      default:
        this.#opaque(() => `unknown node: ${kind} at ${where(node)}; fail closed`);
    }
  }

  #ifClause(node: object): void {
    this.#stmts(node, "Cond");
    this.#stmts(node, "Then");
    const otherwise = child(node, "Else");
    if (otherwise !== null) {
      this.#enter(otherwise);
      this.#ifClause(otherwise);
    }
  }

  #forClause(node: object): void {
    const loop = child(node, "Loop");
    if (loop !== null) {
      const kind = this.#enter(loop);
      if (kind === "WordIter") {
        const name = child(loop, "Name");
        if (name !== null) this.#lit(name);
        for (const item of children(loop, "Items")) this.#word(item, "argument", "for loop");
      } else if (kind === "CStyleLoop") {
        for (const key of ["Init", "Cond", "Post"]) this.#arithmetic(child(loop, key));
      } else {
        this.#opaque(() => `unknown node: ${kind} at ${where(loop)}; fail closed`);
      }
    }
    this.#stmts(node, "Do");
  }

  #caseClause(node: object): void {
    const subject = child(node, "Word");
    if (subject !== null) this.#word(subject, "pattern");
    for (const item of children(node, "Items")) {
      this.#enter(item);
      for (const pattern of children(item, "Patterns")) this.#word(pattern, "pattern");
      this.#stmts(item, "Stmts");
    }
  }

  #call(node: object): void {
    const assignments = children(node, "Assigns").map((assign) => this.#assign(assign));
    const words = children(node, "Args");
    const name = words[0] === undefined ? null : this.#peekName(words[0]);
    const argv = words.map((word, index) =>
      this.#word(word, "argument", index === 0 ? "the command name" : quote(name ?? "?"))
    );
    if (argv.length > 0 && argv[0] === null) {
      this.#opaque(() =>
        `command name: not literal at ${where(node)}; what runs is decided at run time`
      );
    }
    if (!isLiteral(argv) || !isLiteral(assignments)) {
      // Reported for the hardline floor, each unresolved word as its source text.
      if (this.#partial.length < 256) {
        this.#partial.push(Object.freeze({
          argv: Object.freeze(argv.map((w, i) => w ?? this.#source(words[i]!))),
          assignments: Object.freeze(assignments.map((a) => a ?? "?")),
        }));
      }
      return;
    }
    this.#found.push({
      command: Object.freeze({
        argv: Object.freeze(argv),
        assignments: Object.freeze(assignments),
      }),
      offset: this.#offset(node),
    });
    if (argv.length > 0) this.#builtin(argv, node);
  }

  /** The literal command name for labels, without counting nodes or recording reasons. */
  #peekName(word: object): string | null {
    const parts = children(word, "Parts");
    const first = parts[0];
    if (parts.length !== 1 || first === undefined) return null;
    return this.#api.NodeType(first) === "Lit" ? text(first, "Value") : null;
  }

  #offset(node: object): number {
    try {
      const offset = call(call(node, "Pos"), "Offset");
      return typeof offset === "number" ? offset : 0;
    } catch {
      return 0;
    }
  }

  /**
   * Reasons for builtins that run code or rebind names the argv does not show. `declared`: the
   * argv comes from a declaration clause whose assignments {@link ScriptWalker.#assign} checked.
   */
  #builtin(argv: readonly string[], node: object, declared = false): void {
    let i = 0;
    while (argv[i] === "builtin" || argv[i] === "command") {
      i++;
      while (argv[i]?.startsWith("-") && argv[i] !== "--") {
        if (argv[i] === "-v" || argv[i] === "-V") return; // a lookup, runs nothing
        i++;
      }
      if (argv[i] === "--") i++;
    }
    const name = argv[i];
    const args = argv.slice(i + 1);
    const reason = (what: string) => this.#opaque(() => `${name}: ${what} at ${where(node)}`);
    switch (name) {
      case "eval":
        return reason("runs its arguments as shell code");
      case "source":
      case ".":
        return reason("runs the shell code in a file");
      case "exec":
        if (args.length > 0) reason("replaces the shell with a program and its arguments");
        return;
      case "alias":
        return reason("aliases change what later commands mean");
      case "trap":
        return reason("runs shell code on a signal or at exit");
      case "enable":
        return reason("can load builtins from a shared object");
      case "fc":
        return reason("re-runs commands from the history");
      case "complete":
      case "compgen":
        return reason("-C and -F run commands");
      case "hash":
        if (args.some((arg) => arg.startsWith("-") && arg.includes("p"))) {
          reason("-p makes a name run another file");
        }
        return;
      case "let":
        if (!args.every(isNumber)) reason("arithmetic on a variable can run commands");
        return;
      case "printf": {
        const target = args[args.indexOf("-v") + 1];
        if (args.includes("-v") && target !== undefined) {
          if (target.includes("[")) {
            reason("a subscript in a variable name is evaluated and can run commands");
          }
          if (CODE_VARIABLES.includes(target)) reason(`sets ${target}, ${CODE_VARIABLE_EFFECT}`);
        }
        return;
      }
      case "test":
      case "[": {
        const target = args.findIndex((arg) => VARIABLE_TESTS.includes(arg));
        if (target >= 0 && args[target + 1]?.includes("[")) {
          reason("a subscript in a variable name is evaluated and can run commands");
        }
        return;
      }
    }
    if (name !== undefined && NAME_BUILTINS.includes(name)) {
      const declaration = DECLARATION_BUILTINS.includes(name);
      for (const arg of declared ? [] : args) {
        const variable = arg.split(/\+?=/)[0]!;
        if (CODE_VARIABLES.includes(variable) && (!declaration || arg.includes("="))) {
          reason(`sets ${variable}, ${CODE_VARIABLE_EFFECT}`);
        }
      }
      if (args.some((arg) => arg.includes("["))) {
        reason("a subscript in a variable name is evaluated and can run commands");
      }
      if ((name === "mapfile" || name === "readarray") && args.some((a) => /^-\w*C/.test(a))) {
        reason("-C runs a callback command");
      }
    }
  }

  /** `NAME=value` of an assignment, or null when it is not literal. */
  #assign(node: object): string | null {
    this.#enter(node);
    const name = child(node, "Name");
    const label = name === null ? "" : this.#lit(name);
    const index = child(node, "Index");
    if (index !== null) {
      this.#opaque(() => `assignment: element of array ${quote(label)} at ${where(node)}`);
      this.#arithmetic(index);
    }
    const array = child(node, "Array");
    if (array !== null) {
      this.#opaque(() => `assignment: array ${quote(label)} at ${where(node)}`);
      this.#enter(array);
      for (const element of children(array, "Elems")) {
        this.#enter(element);
        this.#arithmetic(child(element, "Index"));
        const value = child(element, "Value");
        if (value !== null) this.#word(value, "assignment");
      }
    }
    const valueWord = child(node, "Value");
    const naked = flag(node, "Naked");
    const value = valueWord === null
      ? ""
      : this.#word(valueWord, naked ? "argument" : "assignment", "an assignment");
    if (index !== null || array !== null || value === null) return null;
    if (naked) return name === null ? value : label;
    if (CODE_VARIABLES.includes(label)) {
      this.#opaque(() => `environment: ${label}= at ${where(node)} ${CODE_VARIABLE_EFFECT}`);
    }
    return `${label}${flag(node, "Append") ? "+=" : "="}${value}`;
  }

  #declClause(node: object): void {
    // syntax.Walk of this mvdan-sh build does not visit Variant, so neither does the census.
    const variant = child(node, "Variant");
    const name = variant === null ? "declare" : text(variant, "Value");
    const args = children(node, "Args").map((assign) => this.#assign(assign));
    if (!isLiteral(args)) return;
    const argv = [name, ...args];
    this.#found.push({
      command: Object.freeze({ argv: Object.freeze(argv), assignments: Object.freeze([]) }),
      offset: this.#offset(node),
    });
    this.#builtin(argv, node, true);
  }

  #redirect(node: object): void {
    this.#enter(node);
    const op = this.#ops.redirect.get(operator(node)) ?? "?";
    const fd = child(node, "N");
    if (fd !== null) {
      const number = this.#lit(fd);
      if (!isNumber(number)) {
        this.#opaque(() =>
          `redirection: named descriptor ${quote(number)} at ${where(node)} assigns a variable`
        );
      }
    }
    const targetWord = child(node, "Word");
    const body = child(node, "Hdoc");
    if (op === "<<" || op === "<<-") {
      if (targetWord !== null) this.#word(targetWord, "pattern");
      if (body !== null) this.#word(body, "pattern", "a heredoc");
      return;
    }
    const target = targetWord === null ? null : this.#word(targetWord, "pattern", "a redirection");
    if (body !== null) this.#word(body, "pattern", "a heredoc");
    const at = () => where(node);
    switch (op) {
      case "<<<":
        return;
      case ">&":
      case "<&":
        if (target !== null && !isDescriptor(target)) {
          this.#opaque(() => `redirection: ${op} ${quote(target)} at ${at()} opens a file`);
        }
        return;
      case "<":
        if (target !== null && target !== "/dev/null") {
          this.#opaque(() =>
            `redirection: < reads ${quote(target)} at ${at()}, which no read check sees`
          );
        }
        return;
      case ">":
      case ">>":
      case ">|":
      case "&>":
      case "&>>":
      case "<>":
        if (target !== null && !SAFE_SINKS.includes(target)) {
          this.#opaque(() =>
            `redirection: ${op} writes ${quote(target)} at ${at()}, which no write check sees`
          );
        }
        return;
      default:
        this.#opaque(() => `redirection: unknown operator at ${at()}; fail closed`);
    }
  }

  /** The value of a Lit that is a name or a number (counted, taken verbatim). */
  #lit(node: object): string {
    this.#enter(node);
    return text(node, "Value");
  }

  /**
   * The literal value of a word, or null (with a reason) when the shell would compute it.
   * `role` says which expansions the shell applies; `owner` labels reasons.
   */
  #word(word: object, role: WordRole, owner = "a word"): string | null {
    this.#enter(word);
    const parts = children(word, "Parts");
    const scan = new ExpansionScan(role);
    let value = "";
    let literal = true;
    for (const [index, part] of parts.entries()) {
      const kind = this.#enter(part);
      if (kind === "Lit") {
        const raw = text(part, "Value");
        scan.unquoted(raw, index === 0);
        value += unescapeUnquoted(raw);
      } else if (kind === "SglQuoted") {
        const quoted = text(part, "Value");
        scan.quoted(quoted);
        if (flag(part, "Dollar")) {
          this.#opaque(() =>
            `ANSI-C quoting: $'…' in ${owner} at ${where(part)} decodes differently per shell`
          );
          literal = false;
        }
        value += quoted;
      } else if (kind === "DblQuoted") {
        if (flag(part, "Dollar")) {
          this.#opaque(() =>
            `locale quoting: $"…" in ${owner} at ${where(part)} is translated at run time`
          );
          literal = false;
        }
        for (const inner of children(part, "Parts")) {
          if (this.#enter(inner) === "Lit") {
            const quoted = unescapeDoubleQuoted(text(inner, "Value"));
            scan.quoted(quoted);
            value += quoted;
          } else {
            this.#expansion(inner, owner);
            literal = false;
          }
        }
      } else if (kind === "ExtGlob" && role !== "argument") {
        // In a case pattern or [[ ]] it matches a string, it lists no files.
        const pattern = child(part, "Pattern");
        if (pattern !== null) this.#lit(pattern);
        literal = false;
      } else {
        this.#expansion(part, owner, kind);
        literal = false;
      }
    }
    const found = scan.finding();
    if (found !== null) {
      this.#opaque(() =>
        `${found} in ${owner} at ${where(word)}; the shell rewrites it at run time`
      );
      return null;
    }
    return literal ? value : null;
  }

  /** A word part the shell computes: records why and walks what is inside. */
  #expansion(part: object, owner: string, known?: string): void {
    const kind = known ?? this.#api.NodeType(part);
    const at = () => `in ${owner} at ${where(part)}`;
    switch (kind) {
      case "ParamExp": {
        const param = child(part, "Param");
        const name = param === null ? "?" : this.#lit(param);
        this.#opaque(() => `parameter expansion: $${name} ${at()}`);
        this.#arithmetic(child(part, "Index"));
        const slice = child(part, "Slice");
        if (slice !== null) {
          // syntax.Walk of this build skips ${x:offset:length}; walked here all the same.
          this.#uncounted++;
          try {
            this.#arithmetic(child(slice, "Offset"));
            this.#arithmetic(child(slice, "Length"));
          } finally {
            this.#uncounted--;
          }
        }
        const replace = child(part, "Repl");
        if (replace !== null) {
          for (const key of ["Orig", "With"]) {
            const word = child(replace, key);
            if (word !== null) this.#word(word, "pattern", owner);
          }
        }
        const expansion = child(part, "Exp");
        const word = expansion === null ? null : child(expansion, "Word");
        if (word !== null) this.#word(word, "pattern", owner);
        return;
      }
      case "CmdSubst":
        this.#opaque(() =>
          `command substitution: ${flag(part, "Backquotes") ? "`…`" : "$(…)"} ${at()}`
        );
        return this.#stmts(part, "Stmts");
      case "ProcSubst":
        this.#opaque(() => `process substitution: <(…) or >(…) ${at()}`);
        return this.#stmts(part, "Stmts");
      case "ArithmExp":
        this.#opaque(() => `arithmetic expansion: $((…)) ${at()}`);
        return this.#arithmetic(child(part, "X"));
      case "ExtGlob": {
        const pattern = child(part, "Pattern");
        if (pattern !== null) this.#lit(pattern);
        this.#opaque(() => `glob: extended glob ${at()}`);
        return;
      }
      default:
        this.#opaque(() => `unknown node: ${kind} ${at()}; fail closed`);
    }
  }

  /** Arithmetic: opaque when it reads or writes a variable (whose value Bash evaluates). */
  #arithmetic(node: object | null): void {
    if (node === null) return;
    if (this.#api.NodeType(node) === "Word") {
      const value = this.#word(node, "pattern", "arithmetic");
      if (value !== null && !isNumber(value)) {
        this.#opaque(() =>
          `arithmetic: reads variable ${quote(value)} at ${
            where(node)
          }; its value is evaluated and can run commands`
        );
      }
      return;
    }
    const kind = this.#enter(node);
    switch (kind) {
      case "BinaryArithm":
        this.#arithmetic(child(node, "X"));
        return this.#arithmetic(child(node, "Y"));
      case "UnaryArithm":
      case "ParenArithm":
        return this.#arithmetic(child(node, "X"));
      default:
        this.#opaque(() => `unknown node: ${kind} at ${where(node)}; fail closed`);
    }
  }

  /** `[[ … ]]`: returns an operand's literal value so operators can check it. */
  #test(node: object | null): string | null {
    if (node === null) return null;
    if (this.#api.NodeType(node) === "Word") return this.#word(node, "pattern", "[[ ]]");
    const kind = this.#enter(node);
    switch (kind) {
      case "BinaryTest": {
        const op = operator(node);
        const left = this.#test(child(node, "X"));
        const right = this.#test(child(node, "Y"));
        if (this.#ops.arithmeticTest.includes(op)) {
          for (const operand of [left, right]) {
            if (operand !== null && !isNumber(operand)) {
              this.#opaque(() =>
                `arithmetic: [[ ]] compares ${quote(operand)} at ${
                  where(node)
                }; its value is evaluated and can run commands`
              );
            }
          }
        }
        return null;
      }
      case "UnaryTest": {
        const operand = this.#test(child(node, "X"));
        if (this.#ops.variableTest.includes(operator(node)) && operand?.includes("[")) {
          this.#opaque(() =>
            `subscript: [[ ]] tests ${quote(operand)} at ${
              where(node)
            }; a subscript is evaluated and can run commands`
          );
        }
        return null;
      }
      case "ParenTest":
        return this.#test(child(node, "X"));
      default:
        this.#opaque(() => `unknown node: ${kind} at ${where(node)}; fail closed`);
        return null;
    }
  }
}

function isLiteral(values: readonly (string | null)[]): values is string[] {
  return values.every((value) => value !== null);
}

/** A plain integer literal: decimal, octal, `0x` hex or `base#digits`. */
function isNumber(value: string): boolean {
  return /^(?:0[xX][0-9a-fA-F]+|[0-9]+(?:#[0-9a-zA-Z@_]+)?)$/.test(value);
}

/** The target of `>&`/`<&` that duplicates or closes a descriptor (`1`, `-`, `3-`). */
function isDescriptor(value: string): boolean {
  return value === "-" || /^[0-9]+-?$/.test(value);
}

/** Unquoted text as the program receives it: `\c` → `c`, backslash-newline removed. */
function unescapeUnquoted(raw: string): string {
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === "\\" && i + 1 < raw.length) {
      i++;
      if (raw[i] !== "\n") out += raw[i];
    } else {
      out += c;
    }
  }
  return out;
}

/** Text inside `"…"`: a backslash escapes only `$`, backtick, `"`, `\` and newline. */
function unescapeDoubleQuoted(raw: string): string {
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    const next = raw[i + 1];
    if (c === "\\" && next !== undefined && '$`"\\\n'.includes(next)) {
      i++;
      if (next !== "\n") out += next;
    } else {
      out += c;
    }
  }
  return out;
}

/**
 * Finds the expansions the shell applies to the unquoted text of one word: globs and brace
 * expansion (arguments only) and tilde expansion (arguments and assignments).
 */
class ExpansionScan {
  readonly #role: WordRole;
  #finding: string | null = null;
  #brace = 0; // 0 none, 1 after `{`, 2 after `{` and `,` or `..`
  #bracket = false;
  #last = ""; // the previous unquoted character, "" at the start or after quoted text

  constructor(role: WordRole) {
    this.#role = role;
  }

  finding(): string | null {
    return this.#finding;
  }

  #found(what: string): void {
    this.#finding ??= what;
  }

  unquoted(raw: string, first: boolean): void {
    for (let i = 0; i < raw.length; i++) {
      const c = raw[i]!;
      if (c === "\\") {
        i++;
        this.#last = "\\";
        continue;
      }
      if (c === "~" && this.#role !== "pattern") {
        const atStart = first && i === 0;
        const afterAssign = this.#last === "=" || this.#last === ":";
        if (atStart || afterAssign) this.#found("tilde expansion: ~");
      }
      if (this.#role === "argument") {
        if (c === "*" || c === "?") this.#found(`glob: ${c}`);
        else if (c === "[") this.#bracket = true;
        else if (c === "]" && this.#bracket) this.#found("glob: […]");
        else if (c === "{") this.#brace = Math.max(this.#brace, 1);
        else if ((c === "," || (c === "." && this.#last === ".")) && this.#brace > 0) {
          this.#brace = 2;
        } else if (c === "}") {
          if (this.#brace === 2) this.#found("brace expansion: {…}");
          this.#brace = 0;
        }
      }
      this.#last = c;
    }
  }

  quoted(value: string): void {
    if (this.#bracket && value.includes("]")) this.#found("glob: […]");
    this.#last = "";
  }
}

// ---------------------------------------------------------------------------------------------
// The parser
// ---------------------------------------------------------------------------------------------

/** Narrows the imported module to the `syntax` namespace, or throws saying what is missing. */
function syntaxOf(module: unknown): Record<string, unknown> {
  const root = Reflect.get(Object(module), "default") ?? module;
  const syntax: unknown = Reflect.get(Object(root), "syntax");
  if (syntax === null || typeof syntax !== "object") {
    throw new TypeError("the module has no `syntax` namespace");
  }
  for (const name of ["NodeType", "NewParser", "Walk", "Variant"]) {
    if (typeof Reflect.get(syntax, name) !== "function") {
      throw new TypeError(`syntax.${name} is not a function`);
    }
  }
  return syntax as Record<string, unknown>;
}

function facade(syntax: Record<string, unknown>): SyntaxApi {
  const invoke = (name: string, ...args: unknown[]): unknown => {
    const fn = syntax[name];
    if (typeof fn !== "function") throw new TypeError(`syntax.${name} is not a function`);
    return Reflect.apply(fn, syntax, args);
  };
  const parser: unknown = invoke("NewParser", invoke("Variant", syntax.LangBash));
  const parse: unknown = Reflect.get(Object(parser), "Parse");
  if (typeof parse !== "function") throw new TypeError("Parser.Parse is not a function");
  const nodeType = (node: object): string => {
    const kind = invoke("NodeType", node);
    if (typeof kind !== "string") throw new TypeError("syntax.NodeType returned a non-string");
    return kind;
  };
  return {
    NodeType: nodeType,
    Walk: (node, visit) => void invoke("Walk", node, visit),
    parser: { Parse: (source, name) => Reflect.apply(parse, parser, [source, name]) },
  };
}

/** Learns the operator numbers of this build by parsing scripts whose operators are known. */
function calibrate(api: SyntaxApi): Operators {
  const file = (source: string) => api.parser.Parse(source, "") as object;
  const firstStmt = (source: string) => children(file(source), "Stmts")[0]!;
  const redirs = children(
    firstStmt(": >a >>a <a <>a <&0 >&1 >|a <<<a &>a &>>a <<E <<-F\nE\nF\n"),
    "Redirs",
  );
  const redirect = new Map<number, string>();
  redirs.forEach((node, index) => redirect.set(operator(node), REDIRECT_OPERATORS[index]!));
  const testOp = (op: string, unary: boolean) =>
    operator(child(child(firstStmt(unary ? `[[ ${op} a ]]` : `[[ 1 ${op} 1 ]]`), "Cmd")!, "X")!);
  const ops = {
    redirect,
    arithmeticTest: ARITHMETIC_TESTS.map((op) => testOp(op, false)),
    variableTest: VARIABLE_TESTS.map((op) => testOp(op, true)),
  };
  const distinct = new Set([...ops.arithmeticTest, ...ops.variableTest]).size;
  if (redirect.size !== REDIRECT_OPERATORS.length || distinct !== 8) {
    throw new TypeError("operator numbers are not distinct");
  }
  return ops;
}

/** Imports mvdan-sh with an empty `process.env` in view, restoring `process` afterwards. */
async function importWithoutEnv(): Promise<unknown> {
  const saved = Object.getOwnPropertyDescriptor(globalThis, "process");
  const real: unknown = Reflect.get(globalThis, "process");
  const masking = real !== null && typeof real === "object";
  if (masking) {
    Object.defineProperty(globalThis, "process", {
      value: Object.create(real, { env: { value: {}, enumerable: true } }),
      configurable: true,
      writable: true,
      enumerable: saved?.enumerable ?? false,
    });
  }
  try {
    return await import("mvdan-sh");
  } finally {
    if (masking) {
      if (saved === undefined) Reflect.deleteProperty(globalThis, "process");
      else Object.defineProperty(globalThis, "process", saved);
    }
  }
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
