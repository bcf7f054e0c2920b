/**
 * Line patterns for search (grep): a regular expression, or a literal text, tested against one
 * line at a time. The pattern comes from a model (or a JIT tool) and runs on the host, so no
 * backtracking engine ever runs it: regular expressions are compiled by `re2js`, a pure
 * JavaScript port of RE2 whose matching time is linear in the input (a Thompson NFA / lazy DFA,
 * no backtracking), so `(a+)+$` on a long line costs what a plain search costs. What RE2 has no
 * linear algorithm for — lookaround, backreferences, possessive quantifiers — is refused with an
 * {@link InvalidPatternError} that says what to write instead.
 *
 * Chosen over `re2-wasm` (a WebAssembly build, last released 2021, whose module must be
 * instantiated before the first use) and the native `re2` addon (a compiled binary: not for
 * Deno here): `re2js` is maintained (releases through 2026), MIT, has no dependencies and
 * needs no setup. Syntax: RE2's (Perl classes `\d \w \s \b`, `[[:alpha:]]`, `\p{L}`, named
 * groups, `(?i)`, lazy quantifiers, counted repetition up to 1000); JavaScript's `\uXXXX` is
 * accepted too.
 *
 * Matching is per line, which keeps the total time linear in the file: searching the whole
 * file and then mapping matches to lines would re-scan from each line a candidate spanned. A
 * whole-file test (one linear pass, `^`/`$` at line boundaries) first rules out files with no
 * match at all, the common case of a search.
 *
 * @module
 */
import { RE2JS } from "re2js";
import { InvalidPatternError } from "./errors.ts";

/** A compiled line pattern. */
export interface LinePattern {
  readonly source: string;
  /** Whether the pattern is matched as literal text. */
  readonly literal: boolean;
  /** Whether one line (without its newline) matches. */
  test(line: string): boolean;
  /** False only when no line of `text` can match (one linear pass over a whole file). */
  mayMatch(text: string): boolean;
}

/** Longest pattern, in characters. */
export const LINE_PATTERN_CHARS_MAX = 1000;

const FIX_LITERAL =
  "to search for the text as written, pass fixed_strings: true (or escape each of . * + ? ( ) [ ] { } | ^ $ \\ with a backslash)";

/**
 * Compiles a pattern to test lines with: literal text (`literal`), or an RE2 regular expression.
 * `ignoreCase` folds case either way.
 * @throws {InvalidPatternError} for an empty or over-long pattern, one that does not parse,
 *   uses lookaround or backreferences, or asks to match a newline (lines have none).
 */
export function compileLinePattern(
  source: string,
  options: { readonly literal?: boolean; readonly ignoreCase?: boolean } = {},
): LinePattern {
  if (typeof source !== "string" || source.length === 0) {
    throw new InvalidPatternError(String(source), "The search pattern is empty; give some text");
  }
  if (source.length > LINE_PATTERN_CHARS_MAX) {
    throw new InvalidPatternError(
      source,
      `The search pattern is ${source.length} characters; at most ${LINE_PATTERN_CHARS_MAX} are allowed — search for a shorter distinctive part`,
    );
  }
  if (source.includes("\n")) {
    throw new InvalidPatternError(
      source,
      "The search pattern contains a newline, but grep matches one line at a time; search for one line of it",
    );
  }
  const ignoreCase = options.ignoreCase === true;
  if (options.literal === true && !ignoreCase) {
    return {
      source,
      literal: true,
      test: (line) => line.includes(source),
      mayMatch: (text) => text.includes(source),
    };
  }
  const scanned = options.literal === true
    ? { pattern: RE2JS.quote(source), anchored: false }
    : translate(source);
  const flags = ignoreCase ? RE2JS.CASE_INSENSITIVE : 0;
  const line = compile(source, scanned.pattern, flags);
  // `\A` and `\z` mean a line's start and end per line, but the file's in a whole-file pass:
  // such a pattern is tested line by line only.
  const whole = scanned.anchored
    ? undefined
    : compile(source, scanned.pattern, flags | RE2JS.MULTILINE);
  return {
    source,
    literal: options.literal === true,
    test: (text) => line.test(text),
    mayMatch: (text) => whole === undefined || whole.test(text),
  };
}

function compile(source: string, pattern: string, flags: number): RE2JS {
  try {
    return RE2JS.compile(pattern, flags);
  } catch (error) {
    throw new InvalidPatternError(source, explain(source, error), { cause: error });
  }
}

/**
 * JavaScript's `\uXXXX` as RE2's `\x{XXXX}`; notes `\A`/`\z`; refuses `\n` and `\r` (a line has
 * neither). Escapes are read pairwise, so `\\n` (a backslash, then n) is left alone.
 */
function translate(source: string): { pattern: string; anchored: boolean } {
  let out = "";
  let anchored = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c !== "\\" || i + 1 >= source.length) {
      out += c;
      continue;
    }
    const next = source[i + 1]!;
    if (next === "n" || next === "r") {
      throw new InvalidPatternError(
        source,
        `The search pattern ${
          JSON.stringify(source)
        } matches a line break (\\${next}), but grep matches one line at a time; search for one line of it (use $ for a line's end)`,
      );
    }
    if (next === "A" || next === "z") anchored = true;
    const hex = source.slice(i + 2, i + 6);
    if (next === "u" && /^[0-9a-fA-F]{4}$/.test(hex)) {
      out += `\\x{${hex}}`;
      i += 5;
      continue;
    }
    out += c + next;
    i++;
  }
  return { pattern: out, anchored };
}

/** What failed, why, and what to write instead. */
function explain(source: string, error: unknown): string {
  const quoted = JSON.stringify(source.length > 200 ? `${source.slice(0, 200)}…` : source);
  const detail = error instanceof Error ? error.message.replace(/^error parsing regexp: /, "") : "";
  if (/\(\?<?[=!]/.test(source)) {
    return `Invalid regular expression ${quoted}: lookahead and lookbehind ((?=…), (?!…), (?<=…), (?<!…)) are not supported — grep runs a linear-time engine that has none; match the surrounding text itself, or search for the parts separately`;
  }
  if (/\\[1-9]/.test(source) && /escape/.test(detail)) {
    return `Invalid regular expression ${quoted}: backreferences (\\1…\\9) are not supported — grep runs a linear-time engine that has none; search for the repeated text itself`;
  }
  if (/nested repetition|\+\+|\*\+|\?\+/.test(detail)) {
    return `Invalid regular expression ${quoted}: ${detail} — possessive quantifiers (a++) are not supported; use a+`;
  }
  return `Invalid regular expression ${quoted}: ${detail || String(error)}; ${FIX_LITERAL}`;
}
