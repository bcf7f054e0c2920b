import assert from "node:assert/strict";
import { escapePreview, type EscapePreviewOptions } from "./escape_preview.ts";

interface Case {
  readonly name: string;
  readonly input: string;
  readonly expected: string;
  readonly options?: EscapePreviewOptions;
}

/** `spec` written in Unicode tag characters (U+E0020–U+E007E), e.g. `gbeng`. */
function tags(spec: string): string {
  return Array.from(spec, (c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join("");
}

const CANCEL_TAG = "\u{E007F}";
const BLACK_FLAG = "\u{1F3F4}";
const ENGLAND = BLACK_FLAG + tags("gbeng") + CANCEL_TAG;
const SCOTLAND = BLACK_FLAG + tags("gbsct") + CANCEL_TAG;
const FAMILY = "\u{1F468}\u200D\u{1F469}\u200D\u{1F467}"; // man ZWJ woman ZWJ girl
const RAINBOW_FLAG = "\u{1F3F3}\uFE0F\u200D\u{1F308}"; // white flag VS16 ZWJ rainbow
const RED_HEART = "\u2764\uFE0F";

function check(cases: readonly Case[]): void {
  for (const c of cases) {
    assert.strictEqual(escapePreview(c.input, c.options), c.expected, c.name);
  }
}

const CONTROL_CASES: readonly Case[] = [
  { name: "CSI colour", input: "\x1b[31mred\x1b[0m", expected: "\\x1B[31mred\\x1B[0m" },
  { name: "CSI clear screen", input: "ok\x1b[2J", expected: "ok\\x1B[2J" },
  { name: "CSI cursor up over earlier lines", input: "\x1b[1A\x1b[K", expected: "\\x1B[1A\\x1B[K" },
  {
    name: "OSC window title ended by BEL",
    input: "\x1b]0;title\x07",
    expected: "\\x1B]0;title\\x07",
  },
  {
    name: "OSC 8 hyperlink ended by ST",
    input: "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
    expected: "\\x1B]8;;https://evil.example\\x1B\\\\click\\x1B]8;;\\x1B\\\\",
  },
  { name: "8-bit C1 CSI U+009B", input: "\u009b31mred", expected: "\\x9B31mred" },
  { name: "8-bit C1 OSC U+009D", input: "\u009d0;t\u009c", expected: "\\x9D0;t\\x9C" },
  { name: "C1 NEL U+0085", input: "a\u0085b", expected: "a\\x85b" },
  { name: "NUL", input: "a\0b", expected: "a\\x00b" },
  { name: "DEL", input: "a\x7fb", expected: "a\\x7Fb" },
  {
    name: "backspace overwriting text",
    input: "rm -rf /\b\b\b\bls",
    expected: "rm -rf /\\x08\\x08\\x08\\x08ls",
  },
  { name: "first and last C0 controls", input: "\x01\x1f", expected: "\\x01\\x1F" },
];

Deno.test("escapePreview() shows ANSI, OSC and C1 control sequences literally instead of letting them reach the terminal", () => {
  check(CONTROL_CASES);
});

const LINE_CASES: readonly Case[] = [
  { name: "LF in a single-line field", input: "a\nb", expected: "a\\nb" },
  { name: "CR in a single-line field", input: "a\rb", expected: "a\\rb" },
  { name: "CRLF in a single-line field", input: "a\r\nb", expected: "a\\r\\nb" },
  {
    name: "LF in multiline mode",
    input: "a\nb\n",
    options: { multiline: true },
    expected: "a\nb\n",
  },
  {
    name: "CR overwriting a line in multiline mode",
    input: "safe\rEVIL\n",
    options: { multiline: true },
    expected: "safe\\rEVIL\n",
  },
  {
    name: "CRLF in multiline mode",
    input: "a\r\nb",
    options: { multiline: true },
    expected: "a\\r\nb",
  },
  {
    name: "multiline false is the default",
    input: "a\nb",
    options: { multiline: false },
    expected: "a\\nb",
  },
  { name: "tab in a single-line field", input: "a\tb", expected: "a\\tb" },
  {
    name: "tab in multiline mode",
    input: "\tx\n",
    options: { multiline: true },
    expected: "\\tx\n",
  },
  { name: "vertical tab and form feed", input: "\v\f", expected: "\\x0B\\x0C" },
];

Deno.test("escapePreview() escapes CR, LF and tab in a single-line field and keeps only LF as a line break in multiline mode", () => {
  check(LINE_CASES);
});

const BACKSLASH_CASES: readonly Case[] = [
  { name: "one backslash", input: "a\\b", expected: "a\\\\b" },
  { name: "Windows path", input: "C:\\Users\\x", expected: "C:\\\\Users\\\\x" },
  { name: "text that looks like an escaped ESC", input: "\\x1B[31m", expected: "\\\\x1B[31m" },
  { name: "text that looks like an escaped RLO", input: "\\u{202E}", expected: "\\\\u{202E}" },
  { name: "text that looks like an escaped LF", input: "a\\nb", expected: "a\\\\nb" },
  { name: "real ESC after a literal backslash", input: "\\\x1b", expected: "\\\\\\x1B" },
  { name: "trailing backslash", input: "dir\\", expected: "dir\\\\" },
];

Deno.test("escapePreview() doubles a literal backslash so text that looks like an escape cannot pass for one", () => {
  check(BACKSLASH_CASES);
});

const BIDI_CASES: readonly Case[] = [
  ...[
    0x061c,
    0x200e,
    0x200f,
    0x202a,
    0x202b,
    0x202c,
    0x202d,
    0x202e,
    0x2066,
    0x2067,
    0x2068,
    0x2069,
  ]
    .map((cp) => {
      const code = cp.toString(16).toUpperCase().padStart(4, "0");
      return {
        name: `bidi control U+${code}`,
        input: `a${String.fromCodePoint(cp)}b`,
        expected: `a\\u{${code}}b`,
      };
    }),
  {
    name: "Trojan Source comment-out",
    input: "admin\u202E\u2066// check\u2069\u2066",
    expected: "admin\\u{202E}\\u{2066}// check\\u{2069}\\u{2066}",
  },
  {
    name: "right-to-left override reversing a file extension",
    input: "invoice\u202Efdp.exe",
    expected: "invoice\\u{202E}fdp.exe",
  },
];

Deno.test("escapePreview() reveals each bidi control so a Trojan Source string cannot reorder what the human reads", () => {
  check(BIDI_CASES);
});

const INVISIBLE_CASES: readonly Case[] = [
  { name: "zero-width space", input: "pay\u200Bpal", expected: "pay\\u{200B}pal" },
  { name: "zero-width non-joiner", input: "a\u200Cb", expected: "a\\u{200C}b" },
  { name: "zero-width joiner between letters", input: "a\u200Db", expected: "a\\u{200D}b" },
  { name: "word joiner", input: "a\u2060b", expected: "a\\u{2060}b" },
  { name: "byte order mark", input: "\uFEFFimport", expected: "\\u{FEFF}import" },
  { name: "Mongolian vowel separator", input: "a\u180Eb", expected: "a\\u{180E}b" },
  { name: "soft hyphen", input: "ad\u00ADmin", expected: "ad\\u{00AD}min" },
  { name: "invisible times", input: "x\u2062y", expected: "x\\u{2062}y" },
  { name: "deprecated format character U+206A", input: "a\u206Ab", expected: "a\\u{206A}b" },
  {
    name: "Hangul filler used as an invisible identifier",
    input: "a\u3164b",
    expected: "a\\u{3164}b",
  },
  { name: "line separator", input: "a\u2028b", expected: "a\\u{2028}b" },
  { name: "paragraph separator", input: "a\u2029b", expected: "a\\u{2029}b" },
  {
    name: "interlinear annotation hiding text",
    input: "\uFFF9x\uFFFAy\uFFFB",
    expected: "\\u{FFF9}x\\u{FFFA}y\\u{FFFB}",
  },
];

Deno.test("escapePreview() reveals zero-width and other invisible characters that would hide content", () => {
  check(INVISIBLE_CASES);
});

const VARIATION_CASES: readonly Case[] = [
  { name: "VS16 at the start", input: "\uFE0Fa", expected: "\\u{FE0F}a" },
  { name: "VS16 after a letter", input: "a\uFE0F", expected: "a\\u{FE0F}" },
  {
    name: "two VS16 after an emoji",
    input: `${RED_HEART}\uFE0F`,
    expected: `${RED_HEART}\\u{FE0F}`,
  },
  { name: "VS1", input: "a\uFE00", expected: "a\\u{FE00}" },
  { name: "VS15 text presentation selector", input: "\u2764\uFE0E", expected: "\u2764\\u{FE0E}" },
  {
    name: "ideographic variation selector",
    input: "\u845B\u{E0100}",
    expected: "\u845B\\u{E0100}",
  },
  { name: "red heart emoji presentation sequence", input: RED_HEART, expected: RED_HEART },
  { name: "smiling face with VS16", input: "\u263A\uFE0F ok", expected: "\u263A\uFE0F ok" },
  { name: "keycap sequence", input: "1\uFE0F\u20E3", expected: "1\uFE0F\u20E3" },
];

Deno.test("escapePreview() escapes a variation selector unless it completes an emoji presentation sequence", () => {
  check(VARIATION_CASES);
});

const EMOJI_CASES: readonly Case[] = [
  { name: "family ZWJ sequence", input: `we are ${FAMILY}!`, expected: `we are ${FAMILY}!` },
  { name: "rainbow flag", input: RAINBOW_FLAG, expected: RAINBOW_FLAG },
  {
    name: "transgender flag",
    input: "\u{1F3F3}\uFE0F\u200D\u26A7\uFE0F",
    expected: "\u{1F3F3}\uFE0F\u200D\u26A7\uFE0F",
  },
  {
    name: "skin-tone modifier sequence",
    input: "\u{1F44D}\u{1F3FD}",
    expected: "\u{1F44D}\u{1F3FD}",
  },
  {
    name: "ZWJ sequence with a skin-tone modifier",
    input: "\u{1F469}\u{1F3FD}\u200D\u{1F4BB}",
    expected: "\u{1F469}\u{1F3FD}\u200D\u{1F4BB}",
  },
  {
    name: "person running facing right",
    input: "\u{1F3C3}\u{1F3FD}\u200D\u2640\uFE0F\u200D\u27A1\uFE0F",
    expected: "\u{1F3C3}\u{1F3FD}\u200D\u2640\uFE0F\u200D\u27A1\uFE0F",
  },
  { name: "England tag flag", input: `go ${ENGLAND}`, expected: `go ${ENGLAND}` },
  {
    name: "Scotland tag flag next to England",
    input: SCOTLAND + ENGLAND,
    expected: SCOTLAND + ENGLAND,
  },
  { name: "regional indicator flag", input: "\u{1F1FA}\u{1F1F8}", expected: "\u{1F1FA}\u{1F1F8}" },
  { name: "two family sequences back to back", input: FAMILY + FAMILY, expected: FAMILY + FAMILY },
];

Deno.test("escapePreview() keeps valid emoji ZWJ, modifier, presentation and tag sequences intact", () => {
  check(EMOJI_CASES);
});

const STRAY_JOINER_CASES: readonly Case[] = [
  { name: "ZWJ between letters", input: "pass\u200Dword", expected: "pass\\u{200D}word" },
  { name: "ZWJ at the start", input: "\u200D\u{1F469}", expected: "\\u{200D}\u{1F469}" },
  {
    name: "ZWJ at the end after an emoji",
    input: "\u{1F468}\u200D",
    expected: "\u{1F468}\\u{200D}",
  },
  {
    name: "ZWJ between an emoji and a letter",
    input: "\u{1F468}\u200Da",
    expected: "\u{1F468}\\u{200D}a",
  },
  {
    name: "ZWJ between a letter and an emoji",
    input: "a\u200D\u{1F469}",
    expected: "a\\u{200D}\u{1F469}",
  },
  {
    name: "double ZWJ between emoji",
    input: "\u{1F468}\u200D\u200D\u{1F469}",
    expected: "\u{1F468}\\u{200D}\\u{200D}\u{1F469}",
  },
  { name: "ZWJ between digits", input: "1\u200D2", expected: "1\\u{200D}2" },
  { name: "only ZWJs", input: "\u200D\u200D", expected: "\\u{200D}\\u{200D}" },
];

Deno.test("escapePreview() escapes a ZWJ that does not join two emoji", () => {
  check(STRAY_JOINER_CASES);
});

const STRAY_TAG_CASES: readonly Case[] = [
  { name: "tag character between letters", input: "a\u{E0041}b", expected: "a\\u{E0041}b" },
  {
    name: "black flag and tags without a cancel tag",
    input: `${BLACK_FLAG}${tags("gbeng")}x`,
    expected: `${BLACK_FLAG}\\u{E0067}\\u{E0062}\\u{E0065}\\u{E006E}\\u{E0067}x`,
  },
  { name: "cancel tag alone", input: `a${CANCEL_TAG}`, expected: "a\\u{E007F}" },
  {
    name: "black flag and a cancel tag only",
    input: BLACK_FLAG + CANCEL_TAG,
    expected: `${BLACK_FLAG}\\u{E007F}`,
  },
  {
    name: "England's tags after a non-flag emoji",
    input: `\u{1F600}${tags("gbeng")}${CANCEL_TAG}`,
    expected: "\u{1F600}\\u{E0067}\\u{E0062}\\u{E0065}\\u{E006E}\\u{E0067}\\u{E007F}",
  },
  {
    name: "instruction smuggled in tags behind a black flag",
    input: `${BLACK_FLAG}${tags("rm -rf")}${CANCEL_TAG}`,
    expected: `${BLACK_FLAG}\\u{E0072}\\u{E006D}\\u{E0020}\\u{E002D}\\u{E0072}\\u{E0066}\\u{E007F}`,
  },
  {
    name: "uppercase tag spec",
    input: `${BLACK_FLAG}${tags("GBENG")}${CANCEL_TAG}`,
    expected: `${BLACK_FLAG}\\u{E0047}\\u{E0042}\\u{E0045}\\u{E004E}\\u{E0047}\\u{E007F}`,
  },
  { name: "language tag U+E0001", input: "\u{E0001}en", expected: "\\u{E0001}en" },
];

Deno.test("escapePreview() escapes tag characters outside a valid emoji tag sequence, including smuggled text", () => {
  check(STRAY_TAG_CASES);
});

const SURROGATE_CASES: readonly Case[] = [
  { name: "lone high surrogate", input: "a\uD800b", expected: "a\\u{D800}b" },
  { name: "lone low surrogate", input: "a\uDC00b", expected: "a\\u{DC00}b" },
  { name: "high surrogate at the end", input: "a\uDBFF", expected: "a\\u{DBFF}" },
  { name: "surrogates in the wrong order", input: "\uDC00\uD800", expected: "\\u{DC00}\\u{D800}" },
  { name: "valid surrogate pair", input: "\uD83D\uDE00", expected: "\u{1F600}" },
];

Deno.test("escapePreview() shows a lone surrogate as a code point escape", () => {
  check(SURROGATE_CASES);
});

const PLAIN_CASES: readonly Case[] = [
  { name: "empty string", input: "", expected: "" },
  { name: "ASCII", input: "git commit -m 'fix: x'", expected: "git commit -m 'fix: x'" },
  { name: "CJK", input: "\u4F60\u597D\u4E16\u754C", expected: "\u4F60\u597D\u4E16\u754C" },
  { name: "combining acute accent", input: "e\u0301t\u00E9", expected: "e\u0301t\u00E9" },
  {
    name: "Arabic and Hebrew letters",
    input: "\u0645\u0631\u062D\u0628\u0627 \u05E9\u05DC\u05D5\u05DD",
    expected: "\u0645\u0631\u062D\u0628\u0627 \u05E9\u05DC\u05D5\u05DD",
  },
  { name: "single emoji", input: "\u{1F600}", expected: "\u{1F600}" },
  { name: "no-break space", input: "a\u00A0b", expected: "a\u00A0b" },
];

Deno.test("escapePreview() passes ordinary letters, CJK, combining marks and emoji through unchanged", () => {
  check(PLAIN_CASES);
});

const TRUNCATION_CASES: readonly Case[] = [
  {
    name: "over the limit",
    input: "abcdef",
    options: { maxChars: 3 },
    expected: "abc…[truncated 3 chars]",
  },
  { name: "exactly at the limit", input: "abc", options: { maxChars: 3 }, expected: "abc" },
  { name: "under the limit", input: "abc", options: { maxChars: 5 }, expected: "abc" },
  {
    name: "maxChars 0 on text",
    input: "abc",
    options: { maxChars: 0 },
    expected: "…[truncated 3 chars]",
  },
  { name: "maxChars 0 on empty text", input: "", options: { maxChars: 0 }, expected: "" },
  {
    name: "escapes count as one input code point each",
    input: "\x1b\x1b\x1bX",
    options: { maxChars: 2 },
    expected: "\\x1B\\x1B…[truncated 2 chars]",
  },
  {
    name: "counts code points, not UTF-16 units",
    input: "\u{1F600}\u{1F600}\u{1F600}",
    options: { maxChars: 2 },
    expected: "\u{1F600}\u{1F600}…[truncated 1 chars]",
  },
  {
    name: "does not split a surrogate pair",
    input: "a\u{1F600}",
    options: { maxChars: 1 },
    expected: "a…[truncated 1 chars]",
  },
  {
    name: "cut inside a ZWJ sequence drops the whole sequence",
    input: `a${FAMILY}b`,
    options: { maxChars: 3 },
    expected: "a…[truncated 6 chars]",
  },
  {
    name: "cut right after a ZWJ sequence keeps it",
    input: `a${FAMILY}b`,
    options: { maxChars: 6 },
    expected: `a${FAMILY}…[truncated 1 chars]`,
  },
  {
    name: "cut inside a presentation sequence",
    input: `${RED_HEART}x`,
    options: { maxChars: 1 },
    expected: "…[truncated 3 chars]",
  },
  {
    name: "cut inside a tag flag",
    input: ENGLAND,
    options: { maxChars: 3 },
    expected: "…[truncated 7 chars]",
  },
  {
    name: "stray ZWJ before the cut is escaped whole",
    input: "a\u200Db",
    options: { maxChars: 2 },
    expected: "a\\u{200D}…[truncated 1 chars]",
  },
  {
    name: "lone surrogate before the cut",
    input: "\uD800abc",
    options: { maxChars: 1 },
    expected: "\\u{D800}…[truncated 3 chars]",
  },
  {
    name: "multiline text",
    input: "l1\nl2\nl3",
    options: { maxChars: 5, multiline: true },
    expected: "l1\nl2…[truncated 3 chars]",
  },
];

Deno.test("escapePreview() truncates at maxChars input code points and says how many it dropped, never splitting a pair or an emoji sequence", () => {
  check(TRUNCATION_CASES);
});

Deno.test("escapePreview() rejects a maxChars that is not a non-negative integer with a RangeError", () => {
  const invalid: readonly {
    readonly name: string;
    readonly maxChars: number;
    readonly shown: string;
  }[] = [
    { name: "negative", maxChars: -1, shown: "-1" },
    { name: "fractional", maxChars: 1.5, shown: "1.5" },
    { name: "NaN", maxChars: NaN, shown: "NaN" },
    { name: "infinite", maxChars: Infinity, shown: "Infinity" },
  ];
  for (const c of invalid) {
    assert.throws(
      () => escapePreview("abc", { maxChars: c.maxChars }),
      (error: unknown) =>
        error instanceof RangeError &&
        error.message.includes(`maxChars must be a non-negative integer, got ${c.shown};`),
      c.name,
    );
  }
  assert.throws(
    () => escapePreview(42 as unknown as string),
    (error: unknown) =>
      error instanceof TypeError && error.message.includes("text must be a string, got a number"),
    "text that is not a string",
  );
});

const MB = 1 << 20;
const MEN = Math.floor(MB / 3); // "👨" is two UTF-16 units, the ZWJ one
const FLAGS = Math.floor(MB / 12); // the black flag is two UTF-16 units, each tag two

const HOSTILE_CASES: readonly {
  readonly name: string;
  readonly input: string;
  readonly options?: EscapePreviewOptions;
  readonly length: number;
}[] = [
  { name: "ZWJs", input: "\u200D".repeat(MB), length: 8 * MB },
  { name: "ESCs", input: "\x1b".repeat(MB), length: 4 * MB },
  { name: "backslashes", input: "\\".repeat(MB), length: 2 * MB },
  { name: "lone surrogates", input: "\uD800".repeat(MB), length: 8 * MB },
  { name: "ZWJs between letters", input: "a\u200D".repeat(MB / 2), length: 9 * (MB / 2) },
  // One ZWJ chain of MEN men; only the trailing ZWJ has nothing to join.
  { name: "one huge ZWJ chain", input: "\u{1F468}\u200D".repeat(MEN), length: 3 * MEN - 1 + 8 },
  {
    name: "one huge ZWJ chain cut near the start",
    input: "\u{1F468}\u200D".repeat(MEN),
    options: { maxChars: 10 },
    length: `…[truncated ${2 * MEN} chars]`.length,
  },
  {
    name: "black flag then tags with no cancel tag",
    input: BLACK_FLAG + tags("a").repeat(MB / 2),
    length: 2 + 9 * (MB / 2),
  },
  {
    name: "black flags each followed by tags",
    input: (BLACK_FLAG + tags("gbeng")).repeat(FLAGS),
    length: (2 + 5 * 9) * FLAGS,
  },
  { name: "VS16s", input: "\uFE0F".repeat(MB), length: 8 * MB },
];

Deno.test("escapePreview() finishes on 1 MB hostile inputs with the expected output length", () => {
  for (const c of HOSTILE_CASES) {
    assert.strictEqual(escapePreview(c.input, c.options).length, c.length, c.name);
  }
});

const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\u2028\u2029\uFFF9-\uFFFB]/u;
const JOINS_AFTER =
  /[\p{Extended_Pictographic}\p{Emoji_Modifier}\p{Regional_Indicator}\uFE0F\u20E3\u{E007F}]/u;
const EMOJI = /\p{Emoji}/u;

/**
 * The first code point in `output` that could control, reorder or hide content, described, or
 * `undefined`. Written independently of the module: a ZWJ must sit between emoji, VS16 must follow
 * an emoji, and tag characters must form a black-flag tag run ended by the cancel tag.
 */
function findUnsafe(output: string, multiline: boolean): string | undefined {
  const cps = Array.from(output, (ch) => ch.codePointAt(0) ?? -1);
  const at = (i: number): string =>
    i >= 0 && i < cps.length ? String.fromCodePoint(cps[i] ?? 0) : "";
  const isTag = (cp: number | undefined): boolean =>
    cp !== undefined && cp >= 0xe0020 && cp <= 0xe007f;
  for (let i = 0; i < cps.length; i++) {
    const cp = cps[i] ?? -1;
    const where = `U+${cp.toString(16).toUpperCase()} at ${i} in ${
      JSON.stringify(output.slice(0, 80))
    }`;
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
      if (cp === 0x0a && multiline) continue;
      return `control ${where}`;
    }
    if (cp >= 0xd800 && cp <= 0xdfff) return `lone surrogate ${where}`;
    if (!INVISIBLE.test(at(i))) continue;
    if (cp === 0x200d && JOINS_AFTER.test(at(i - 1)) && EMOJI.test(at(i + 1))) continue;
    if (cp === 0xfe0f && EMOJI.test(at(i - 1))) continue;
    if (isTag(cp)) {
      let start = i;
      while (isTag(cps[start - 1])) start--;
      let end = i;
      while (cps[end] !== 0xe007f && isTag(cps[end + 1])) end++;
      if (cps[start - 1] === 0x1f3f4 && cps[end] === 0xe007f && end - start <= 7) continue;
    }
    return `invisible ${where}`;
  }
  return undefined;
}

/** Deterministic pseudo-random strings over an alphabet of hostile and emoji code points. */
function fuzzInputs(count: number): string[] {
  const alphabet = [
    "a",
    "1",
    "\\",
    "\n",
    "\r",
    "\t",
    "\x1b",
    "[",
    "\u009b",
    "\x7f",
    "\0",
    "\u202E",
    "\u2066",
    "\u200B",
    "\u200D",
    "\u200D",
    "\uFE0F",
    "\uFE0E",
    "\u{1F468}",
    "\u2764",
    "\u{1F3FD}",
    "\u{1F3F4}",
    "\u{E0067}",
    "\u{E0062}",
    "\u{E0065}",
    "\u{E007F}",
    "\u{E0041}",
    "\uD800",
    "\uDC00",
    "\u{1F1FA}",
    "\u20E3",
  ];
  let seed = 0x2545f491;
  const next = (n: number): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  return Array.from({ length: count }, () => {
    let s = "";
    for (let n = next(24); n > 0; n--) s += alphabet[next(alphabet.length)] ?? "";
    return s;
  });
}

Deno.test("escapePreview() output never carries a control, bidi or invisible character outside a kept emoji sequence", () => {
  const tables = [
    CONTROL_CASES,
    LINE_CASES,
    BACKSLASH_CASES,
    BIDI_CASES,
    INVISIBLE_CASES,
    VARIATION_CASES,
    EMOJI_CASES,
    STRAY_JOINER_CASES,
    STRAY_TAG_CASES,
    SURROGATE_CASES,
    PLAIN_CASES,
    TRUNCATION_CASES,
  ];
  const inputs = [...tables.flatMap((t) => t.map((c) => c.input)), ...fuzzInputs(2000)];
  for (const input of inputs) {
    for (const multiline of [false, true]) {
      for (const maxChars of [undefined, 0, 1, 2, 3, 5, 8]) {
        const options: EscapePreviewOptions = maxChars === undefined
          ? { multiline }
          : { multiline, maxChars };
        const problem = findUnsafe(escapePreview(input, options), multiline);
        assert.strictEqual(
          problem,
          undefined,
          `${JSON.stringify(input)} with ${JSON.stringify(options)}`,
        );
      }
    }
  }
  // The checker itself must catch what it is for, or the loop above proves nothing.
  assert.match(findUnsafe("a\x1b[2J", false) ?? "", /^control U\+1B/);
  assert.match(findUnsafe("a\nb", false) ?? "", /^control U\+A/);
  assert.match(findUnsafe("a\u202Eb", false) ?? "", /^invisible U\+202E/);
  assert.match(findUnsafe("a\u200Db", false) ?? "", /^invisible U\+200D/);
  assert.match(findUnsafe(`a${tags("x")}`, false) ?? "", /^invisible U\+E0078/);
  assert.strictEqual(findUnsafe(`${FAMILY}${ENGLAND}${RED_HEART}\n`, true), undefined);
});
