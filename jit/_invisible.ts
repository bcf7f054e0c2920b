/**
 * Characters a human must not misread in a tool's source (issue 21 §3): the bidirectional
 * controls of "Trojan Source" (CVE-2021-42574, Boucher and Anderson 2021), which make a tool
 * read one way to the human approving its registration and run another, and the invisible
 * characters that make two names or strings that look alike differ (`const ㅤ = …` declares a
 * variable named U+3164 HANGUL FILLER) or carry hidden text (tag characters spell ASCII no one
 * sees). They are refused anywhere in the raw text — strings, comments, template literals and
 * identifiers alike — with the rule `invisible_character`, in one linear scan of the source.
 *
 * The set, and why:
 * - **Bidi controls** U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C: the Trojan Source
 *   paper's list (rustc's `text_direction_codepoint_in_literal` and `_in_comment` lints cover
 *   the first nine; the marks reorder neutral characters around them just as well).
 * - **Every format character** (`\p{Cf}`) and **every default-ignorable code point**
 *   (`\p{Default_Ignorable_Code_Point}`), the set GitHub's "hidden or bidirectional Unicode"
 *   warning and `escapePreview` escape: zero-width space, joiners and word joiner
 *   (U+200B–U+200D, U+2060–U+2064), the BOM U+FEFF, the soft hyphen U+00AD, U+180E, the
 *   combining grapheme joiner U+034F, the Hangul fillers U+115F, U+1160, U+3164, U+FFA0,
 *   variation selectors U+FE00–U+FE0F and U+E0100–U+E01EF, tag characters U+E0000–U+E007F, the
 *   interlinear annotation characters U+FFF9–U+FFFB. A format character changes how the text
 *   around it is shown; a tool has no use for one that an escape in a string cannot serve.
 * - **U+2028, U+2029** and a **carriage return not followed by a line feed**: JavaScript ends a
 *   line (and so a `//` comment) there, many editors and terminals do not — code can sit on
 *   what looks like a comment line.
 * - **Control characters** (C0 except tab, line feed and CRLF's carriage return; DEL; C1): a
 *   terminal acts on them (ESC starts a sequence that moves the cursor or clears lines) instead
 *   of showing them.
 *
 * Two exceptions keep emoji written the usual way (models put them in messages): VS16 U+FE0F
 * right after a pictograph (`⚠️` is U+26A0 U+FE0F), and ZWJ U+200D between two pictographs
 * (`👩‍💻`). A pictograph that can be part of a name (ℹ U+2139 is a letter) earns neither: in a
 * name, an invisible selector or joiner makes a second name that looks the same. Keycaps (`1️⃣`)
 * and tag flags are refused with the rest. A byte-order mark is refused even at the start: files
 * never bring one here (the CLI decodes them with `TextDecoder`, which drops it), so one that
 * arrives came inside a string, where it has no purpose.
 *
 * Not covered: homoglyphs (Cyrillic `а` for Latin `a`) and irregular spaces (U+00A0 and the
 * U+2000 block; ESLint's `no-irregular-whitespace`), which render as what they resemble: they
 * can make two names look alike, not reorder or hide code.
 *
 * @module
 */
import type { JitViolation } from "./_rules.ts";

/**
 * One candidate per match: a lone CR, or a code point of the hidden classes. Global, so only
 * used through `matchAll` (which copies it; this one never carries a `lastIndex`).
 */
const HIDDEN = /\r(?!\n)|(?![\t\n\r])[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029]/gu;
/** What messages escape: the hidden classes, every control and lone surrogates. */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029\p{Cs}]/gu;
const PICTOGRAPH = /^\p{Extended_Pictographic}$/u;
const NAME_PART = /^\p{ID_Continue}$/u;
const EMOJI_MODIFIER = /^\p{Emoji_Modifier}$/u;

const ZWJ = 0x200d;
const VS16 = 0xfe0f;

/** Names of the characters most likely met (others are described by their class). */
const NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x00: "NULL",
  0x08: "BACKSPACE",
  0x0d: "CARRIAGE RETURN without a line feed",
  0x1b: "ESCAPE",
  0x7f: "DELETE",
  0x9b: "CONTROL SEQUENCE INTRODUCER",
  0xad: "SOFT HYPHEN",
  0x034f: "COMBINING GRAPHEME JOINER",
  0x061c: "ARABIC LETTER MARK",
  0x115f: "HANGUL CHOSEONG FILLER",
  0x1160: "HANGUL JUNGSEONG FILLER",
  0x180e: "MONGOLIAN VOWEL SEPARATOR",
  0x200b: "ZERO WIDTH SPACE",
  0x200c: "ZERO WIDTH NON-JOINER",
  0x200d: "ZERO WIDTH JOINER",
  0x200e: "LEFT-TO-RIGHT MARK",
  0x200f: "RIGHT-TO-LEFT MARK",
  0x2028: "LINE SEPARATOR",
  0x2029: "PARAGRAPH SEPARATOR",
  0x202a: "LEFT-TO-RIGHT EMBEDDING",
  0x202b: "RIGHT-TO-LEFT EMBEDDING",
  0x202c: "POP DIRECTIONAL FORMATTING",
  0x202d: "LEFT-TO-RIGHT OVERRIDE",
  0x202e: "RIGHT-TO-LEFT OVERRIDE",
  0x2060: "WORD JOINER",
  0x2061: "FUNCTION APPLICATION",
  0x2062: "INVISIBLE TIMES",
  0x2063: "INVISIBLE SEPARATOR",
  0x2064: "INVISIBLE PLUS",
  0x2066: "LEFT-TO-RIGHT ISOLATE",
  0x2067: "RIGHT-TO-LEFT ISOLATE",
  0x2068: "FIRST STRONG ISOLATE",
  0x2069: "POP DIRECTIONAL ISOLATE",
  0x3164: "HANGUL FILLER",
  0xfeff: "ZERO WIDTH NO-BREAK SPACE (byte-order mark)",
  0xffa0: "HALFWIDTH HANGUL FILLER",
  0xfff9: "INTERLINEAR ANNOTATION ANCHOR",
  0xfffa: "INTERLINEAR ANNOTATION SEPARATOR",
  0xfffb: "INTERLINEAR ANNOTATION TERMINATOR",
});

/** The bidirectional controls and marks (Trojan Source). */
function isBidi(cp: number): boolean {
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp === 0x200e ||
    cp === 0x200f || cp === 0x061c;
}

/** `U+XXXX NAME`, from the table or the character's class. */
function describeCodePoint(cp: number): string {
  const code = `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
  const name = NAMES[cp] ??
    (cp >= 0xfe00 && cp <= 0xfe0f
      ? `VARIATION SELECTOR-${cp - 0xfe00 + 1}`
      : cp >= 0xe0100 && cp <= 0xe01ef
      ? `VARIATION SELECTOR-${cp - 0xe0100 + 17}`
      : cp >= 0xe0000 && cp <= 0xe007f
      ? "TAG CHARACTER"
      : cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)
      ? "CONTROL CHARACTER"
      : "FORMAT CHARACTER");
  return `${code} ${name}`;
}

/** Why one character is refused. */
function why(cp: number): string {
  if (isBidi(cp)) {
    return "a bidirectional control reorders how the text around it is displayed, so the code a human approves reads differently from the code that runs (Trojan Source, CVE-2021-42574)";
  }
  if (cp === 0x2028 || cp === 0x2029 || cp === 0x0d) {
    return "JavaScript ends a line there (and so a // comment), but many editors and terminals do not, so code can hide on what looks like a comment line";
  }
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
    return "a terminal acts on a control character (moving the cursor, clearing lines) instead of showing it";
  }
  if (cp >= 0xe0000 && cp <= 0xe007f) {
    return "tag characters spell text no one sees";
  }
  return "it is invisible, so two names or strings that look the same can differ, and hidden text can ride along";
}

/** `\u{XXXX}`: how a message, a preview or a fix writes the character. */
function escapeOf(cp: number): string {
  return `\\u{${cp.toString(16).toUpperCase().padStart(4, "0")}}`;
}

/** Renders every unprintable character of a message as `\u{XXXX}`. */
export function escapeInvisible(text: string): string {
  return text.replace(UNPRINTABLE, (ch) => escapeOf(ch.codePointAt(0) ?? 0));
}

/** The code point before UTF-16 index `index`, or -1 at the start. */
function codePointBefore(text: string, index: number): number {
  if (index <= 0) return -1;
  const low = text.charCodeAt(index - 1);
  if (low >= 0xdc00 && low <= 0xdfff && index >= 2) {
    const high = text.charCodeAt(index - 2);
    if (high >= 0xd800 && high <= 0xdbff) return text.codePointAt(index - 2) ?? -1;
  }
  return low;
}

/** Whether a code point is a pictograph that cannot be part of a name. */
function isPictograph(cp: number): boolean {
  if (cp < 0) return false;
  const ch = String.fromCodePoint(cp);
  return PICTOGRAPH.test(ch) && !NAME_PART.test(ch);
}

/** Whether the character at `index` is part of an emoji written the usual way. */
function inEmoji(text: string, index: number, cp: number): boolean {
  if (cp === VS16) return isPictograph(codePointBefore(text, index));
  if (cp !== ZWJ) return false;
  let before = index;
  let previous = codePointBefore(text, before);
  // 👩🏽‍💻 and 🏳️‍🌈: a skin tone or VS16 may sit between the pictograph and the joiner.
  if (previous === VS16 || (previous >= 0 && EMOJI_MODIFIER.test(String.fromCodePoint(previous)))) {
    before -= previous > 0xffff ? 2 : 1;
    previous = codePointBefore(text, before);
  }
  return isPictograph(previous) && isPictograph(text.codePointAt(index + 1) ?? -1);
}

/**
 * The `invisible_character` violations of a source, in order, at most `limit` of them: one
 * regular-expression scan for candidates, line and column counted forward from the previous one
 * (every character is looked at once).
 */
export function findInvisible(source: string, limit: number): JitViolation[] {
  const out: JitViolation[] = [];
  let line = 1;
  let lineStart = 0;
  let counted = 0;
  for (const match of source.matchAll(HIDDEN)) {
    const index = match.index;
    const cp = source.codePointAt(index) ?? 0;
    if (inEmoji(source, index, cp)) continue;
    // Lines as `_source_map.ts` counts them: LF, a CR not before LF, U+2028, U+2029.
    for (; counted < index; counted++) {
      const unit = source.charCodeAt(counted);
      if (
        unit === 0x0a || unit === 0x2028 || unit === 0x2029 ||
        (unit === 0x0d && source.charCodeAt(counted + 1) !== 0x0a)
      ) {
        line++;
        lineStart = counted + 1;
      }
    }
    const escape = escapeOf(cp);
    out.push({
      rule: "invisible_character",
      message: `${describeCodePoint(cp)} (${escape}): ${
        why(cp)
      }; remove it, or write the escape ${escape} inside a string if the tool needs the character`,
      line,
      column: index - lineStart + 1,
    });
    if (out.length >= limit) break;
  }
  return out;
}
