/**
 * Escaped previews of untrusted text for a human's terminal (DESIGN §5, "Escaping contract").
 *
 * Agent-written content, file names, resource strings and audit fields reach the human who approves
 * an action. Printed raw, they can attack that human instead of informing them:
 *
 * - Terminal injection: ESC and the C1 controls start ANSI CSI/OSC sequences that recolour or clear
 *   the screen, move the cursor over earlier lines, set the window title or plant hyperlinks; CR
 *   and LF forge extra lines inside a one-line field.
 * - "Trojan Source" (CVE-2021-42574): bidi controls reorder what is displayed, so the human reads
 *   a different command, path or diff than the one that will run.
 * - Invisible characters: zero-width characters, tag characters, variation selectors and other
 *   default-ignorable code points hide content (or whole smuggled instructions) from the reader
 *   while it stays in the bytes that are approved.
 *
 * `escapePreview` renders every such code point as a visible escape, doubles literal backslashes so
 * an escape in the output can only have come from us, and leaves everything else, including emoji
 * sequences that legitimately use ZWJ, VS16 or tag characters, as it is.
 *
 * Hand-written for security: terminal-sanitising packages (`strip-ansi` and the like) remove
 * escape sequences by regular expression and know nothing of bidi or invisible characters; this
 * contract must escape, never drop, every such code point so that what is approved is what was
 * shown. The Unicode properties come from the engine's own `\p{…}` classes, tested one code
 * point at a time (no pattern runs over the whole text).
 *
 * @module
 */

/** Options for {@linkcode escapePreview}. */
export interface EscapePreviewOptions {
  /** Keep at most this many code points of the input; the rest is replaced by a truncation marker. */
  readonly maxChars?: number;
  /** Keep LF as a line separator (for diffs) instead of escaping it as `\n`. */
  readonly multiline?: boolean;
}

const ZWJ = 0x200d;
const VS16 = 0xfe0f;
const KEYCAP = 0x20e3;
const BLACK_FLAG = 0x1f3f4;
const CANCEL_TAG = 0xe007f;
/** Longest tag spec of an RGI subdivision flag (`gbeng`). */
const MAX_TAG_SPEC = 5;

// No `g` or `y` flag: these are shared, so they must not carry a `lastIndex` between calls.
const EMOJI = /\p{Emoji}/u;
const PICTOGRAPHIC = /\p{Extended_Pictographic}/u;
const EMOJI_MODIFIER = /\p{Emoji_Modifier}/u;
const REGIONAL_INDICATOR = /\p{Regional_Indicator}/u;
/** A CLDR subdivision id (`gbeng`): a 2-letter or 3-digit region, then 1–4 letters or digits. */
/**
 * The tag sequences Unicode recommends for general interchange (RGI, UTS #51): England, Scotland,
 * Wales. Anything else spelled in tags behind a black flag is not an emoji but hidden text, so it
 * is escaped (a syntax-only check would let any short word through invisibly).
 */
const RGI_SUBDIVISIONS: readonly string[] = Object.freeze(["gbeng", "gbsct", "gbwls"]);
/**
 * Code points a terminal draws as nothing (or as a line break) although they change or hide what is
 * shown. Default_Ignorable_Code_Point covers the bidi controls, zero-width characters, word joiner
 * and invisible operators, soft hyphen, BOM, variation selectors, tag characters, Hangul fillers and
 * the Mongolian vowel separator; U+2028/U+2029 break lines; the other format characters (Cf) change
 * how the text around them is shown: U+FFF9–U+FFFB hide annotation text, the Egyptian hieroglyph
 * controls arrange signs, the prepended concatenation marks span the digits after them. It is the
 * set the JIT validator refuses in a tool's source (`jit/_invisible.ts`), so a preview of source
 * shows every character the validator would name.
 */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}\u2028\u2029]/u;

/**
 * Renders untrusted text so that it cannot drive, reorder or hide anything on a human's terminal.
 *
 * C0/C1 controls and DEL become `\xHH` (LF, CR and tab become `\n`, `\r`, `\t`); bidi controls,
 * zero-width and other invisible characters, variation selectors, tag characters and lone
 * surrogates become `\u{XXXX}`, except ZWJ, VS16 and tag characters inside a valid emoji sequence;
 * a backslash becomes `\\`. With `multiline`, LF stays a line break (CR and tab are still escaped).
 * With `maxChars`, at most that many input code points are rendered, never ending inside a surrogate
 * pair or an emoji sequence, followed by `…[truncated N chars]` where N counts the code points left
 * out.
 *
 * @throws {TypeError} when `text` is not a string.
 * @throws {RangeError} when `maxChars` is not a non-negative integer.
 * @example
 * ```ts
 * escapePreview("\x1b[2Jrm -rf /\u202E"); // => "\\x1B[2Jrm -rf /\\u{202E}"
 * escapePreview("a\nb", { multiline: true }); // => "a\nb"
 * escapePreview("abcdef", { maxChars: 2 }); // => "ab…[truncated 4 chars]"
 * ```
 */
export function escapePreview(text: string, options: EscapePreviewOptions = {}): string {
  if (typeof text !== "string") {
    throw new TypeError(
      `Cannot render an escaped preview: text must be a string, got a ${typeof text}; convert the value to a string first`,
    );
  }
  const { maxChars } = options;
  if (maxChars !== undefined && !(Number.isInteger(maxChars) && maxChars >= 0)) {
    const got = typeof maxChars === "number" ? String(maxChars) : `a ${typeof maxChars}`;
    throw new RangeError(
      `Cannot render an escaped preview: maxChars must be a non-negative integer, got ${got}; pass a whole number of code points >= 0, or omit it for no limit`,
    );
  }
  const limit = maxChars ?? Infinity;
  const multiline = options.multiline === true;

  let out = "";
  let runStart = 0; // start (code units) of the pending stretch that passes through unchanged
  let u = 0; // current position in code units
  let kept = 0; // input code points rendered so far
  while (u < text.length && kept < limit) {
    const cp = codePointAt(text, u);
    const end = emojiSequenceEnd(text, u);
    if (end > u + width(cp)) {
      // A multi-code-point emoji sequence passes through whole, or not at all when it would cross
      // the limit: a cut inside it would leave a dangling ZWJ, VS16 or tag character.
      const count = countCodePoints(text, u, end);
      if (kept + count > limit) break;
      kept += count;
      u = end;
      continue;
    }
    const escaped = escapeCodePoint(cp, multiline);
    if (escaped !== undefined) {
      out += text.slice(runStart, u) + escaped;
      runStart = u + width(cp);
    }
    kept += 1;
    u += width(cp);
  }
  out += text.slice(runStart, u);
  if (u < text.length) out += `…[truncated ${countCodePoints(text, u, text.length)} chars]`;
  return out;
}

/** The escape for one code point outside a kept emoji sequence, or `undefined` to keep it. */
function escapeCodePoint(cp: number, multiline: boolean): string | undefined {
  if (cp === 0x5c) return "\\\\";
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
    switch (cp) {
      case 0x0a:
        return multiline ? undefined : "\\n";
      case 0x0d:
        return "\\r";
      case 0x09:
        return "\\t";
      default:
        return `\\x${hex(cp, 2)}`;
    }
  }
  if (cp < 0xa0) return undefined;
  // Only lone surrogates reach here as surrogate values: codePointAt joins valid pairs.
  if ((cp >= 0xd800 && cp <= 0xdfff) || INVISIBLE.test(String.fromCodePoint(cp))) {
    return `\\u{${hex(cp, 4)}}`;
  }
  return undefined;
}

/**
 * Code unit index just past the emoji sequence starting at `u`, or `u` when none starts there.
 * A sequence is one emoji element, or (UTS #51 "possible emoji") several pictographic elements
 * joined by single ZWJs; a ZWJ that does not sit between two such elements is not part of it.
 */
function emojiSequenceEnd(text: string, u: number): number {
  let end = emojiElementEnd(text, u);
  if (end === u || !isJoinable(text, u, end)) return end;
  while (codePointAt(text, end) === ZWJ) {
    const next = end + 1;
    const nextEnd = emojiElementEnd(text, next);
    if (nextEnd === next || !isJoinable(text, next, nextEnd)) break;
    end = nextEnd;
  }
  return end;
}

/**
 * Code unit index just past the emoji element starting at `u`, or `u` when none starts there:
 * a regional-indicator pair, or an Emoji character optionally followed by VS16 (and a keycap mark),
 * a skin-tone modifier, or, for the black flag, a valid tag spec and the cancel tag.
 */
function emojiElementEnd(text: string, u: number): number {
  const base = codePointAt(text, u);
  if (!hasProperty(EMOJI, base)) return u;
  const end = u + width(base);
  const next = codePointAt(text, end);
  if (hasProperty(REGIONAL_INDICATOR, base)) {
    return hasProperty(REGIONAL_INDICATOR, next) ? end + width(next) : end;
  }
  if (next === VS16) return codePointAt(text, end + 1) === KEYCAP ? end + 2 : end + 1;
  if (hasProperty(EMOJI_MODIFIER, next)) return end + width(next);
  if (base === BLACK_FLAG) return tagSequenceEnd(text, end) ?? end;
  return end;
}

/**
 * Code unit index just past a valid tag spec and cancel tag starting at `u`, or `undefined`.
 * Valid means the syntax of a CLDR subdivision id in tag letters (`gbeng` for England: a 2-letter or
 * 3-digit region, then 1–4 lowercase letters or digits), as UTS #51 requires of a flag's tag spec.
 * Anything else, such as tag characters spelling out an instruction, would hide text behind a flag.
 * The scan reads at most eight code points, so it stays constant time on a hostile run of tags.
 */
function tagSequenceEnd(text: string, u: number): number | undefined {
  let spec = "";
  let t = u;
  for (let cp = codePointAt(text, t); cp >= 0xe0020 && cp <= 0xe007e; cp = codePointAt(text, t)) {
    if (spec.length === MAX_TAG_SPEC) return undefined;
    spec += String.fromCharCode(cp - 0xe0000);
    t += 2;
  }
  if (codePointAt(text, t) !== CANCEL_TAG) return undefined;
  return RGI_SUBDIVISIONS.includes(spec) ? t + 2 : undefined;
}

/** Whether the element `[u, end)` may stand next to a ZWJ: it is drawn as a pictograph. */
function isJoinable(text: string, u: number, end: number): boolean {
  const base = codePointAt(text, u);
  if (hasProperty(PICTOGRAPHIC, base)) return true;
  const after = u + width(base);
  if (after === end) return false;
  return codePointAt(text, after) === VS16 || hasProperty(REGIONAL_INDICATOR, base);
}

/** The code point at code unit `u` (a lone surrogate as itself), or -1 past the end. */
function codePointAt(text: string, u: number): number {
  return text.codePointAt(u) ?? -1;
}

/** How many code units `cp` takes. */
function width(cp: number): number {
  return cp > 0xffff ? 2 : 1;
}

function countCodePoints(text: string, from: number, to: number): number {
  let count = 0;
  for (let u = from; u < to; u += width(codePointAt(text, u))) count += 1;
  return count;
}

function hasProperty(property: RegExp, cp: number): boolean {
  return cp >= 0 && property.test(String.fromCodePoint(cp));
}

function hex(cp: number, digits: number): string {
  return cp.toString(16).toUpperCase().padStart(digits, "0");
}
