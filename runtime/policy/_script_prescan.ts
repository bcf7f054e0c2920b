/**
 * The pre-scan of an `sh -c` body (step 1 of `shell_script.ts`): one linear pass with no regular
 * expressions that refuses a script over a cap (bytes, nesting, commands, heredocs) before the
 * parser sees it, so a hostile script costs microseconds, never a parse.
 *
 * Hand-written on purpose: it must be linear in the input and must over-count rather than
 * under-count; no parser library promises either. Public names are re-exported by
 * `shell_script.ts`.
 *
 * @module
 */

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
