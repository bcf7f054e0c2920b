import assert from "node:assert/strict";
import { escapePreview } from "../runtime/base/escape_preview.ts";
import { findInvisible } from "./_invisible.ts";
import { JitValidator } from "./validator.ts";

const RUN = "export function run(args, libos) { return args; }\n";

/** Every character `findInvisible` refuses in `text`, as `U+XXXX`. */
function refused(text: string): string[] {
  return findInvisible(text, 1000).map((v) => /U\+[0-9A-F]{4,6}/.exec(v.message)![0]);
}

Deno.test("JitValidator.validate() attack: Trojan Source — a bidi override in a comment that makes an admin check read as commented out is refused, at its line and column, escaped in the message", async () => {
  await using v = new JitValidator();
  // The paper's "commenting-out" example: displayed, the `if` sits inside the comment.
  const source =
    `let isAdmin = false;\n/*\u202E } \u2066if (isAdmin)\u2069 \u2066 begin admins only */\n${RUN}`;
  const report = await v.validate(source);
  assert.equal(report.ok, false);
  assert.deepEqual(
    report.violations.map((x) => [x.rule, x.line, x.column]),
    [
      ["invisible_character", 2, 3],
      ["invisible_character", 2, 7],
      ["invisible_character", 2, 20],
      ["invisible_character", 2, 22],
    ],
  );
  const [first] = report.violations;
  assert.match(first!.message, /^U\+202E RIGHT-TO-LEFT OVERRIDE \(\\u\{202E\}\): .*Trojan Source/);
  assert.match(first!.message, /remove it, or write the escape \\u\{202E\} inside a string/);
  for (const x of report.violations) {
    assert.doesNotMatch(x.message, /[\u202A-\u202E\u2066-\u2069]/, "no raw control in a message");
  }
});

Deno.test("JitValidator.validate() refuses each hidden character anywhere: strings, comments, templates, identifiers", async () => {
  await using v = new JitValidator();
  const cases: [string, string, string][] = [
    ["bidi override in a string", `const s = "user\u202E";`, "U+202E"],
    ["bidi isolate in a line comment", `// ok \u2067 x`, "U+2067"],
    ["right-to-left mark in a template", "const t = `a\u200Fb`;", "U+200F"],
    ["Arabic letter mark in a regex", `const r = /a\u061Cb/;`, "U+061C"],
    ["zero-width space in a string", `const k = "pay\u200Bpal";`, "U+200B"],
    ["zero-width joiner in a name", `const a\u200Db = 1;`, "U+200D"],
    ["zero-width non-joiner in a name", `const a\u200Cb = 1;`, "U+200C"],
    ["Hangul filler as a whole name", `const \u3164 = 1;`, "U+3164"],
    ["halfwidth Hangul filler in a name", `const x\uFFA0 = 1;`, "U+FFA0"],
    ["Hangul choseong filler in a string", `const s = "\u115F";`, "U+115F"],
    ["word joiner", `const s = "a\u2060b";`, "U+2060"],
    ["invisible plus", `const s = "a\u2064b";`, "U+2064"],
    ["soft hyphen in a name", `const ad\u00ADmin = 1;`, "U+00AD"],
    ["Mongolian vowel separator", `// \u180E`, "U+180E"],
    ["combining grapheme joiner", `const s = "a\u034Fb";`, "U+034F"],
    ["variation selector after a letter", `const s = "a\uFE0F";`, "U+FE0F"],
    ["variation selector 1", `const s = "a\uFE00";`, "U+FE00"],
    ["ideographic variation selector", `const s = "\u845B\u{E0100}";`, "U+E0100"],
    ["tag characters spelling hidden text", `// \u{E0069}\u{E0067}\u{E006E}`, "U+E0069"],
    ["byte-order mark in the middle", `const s = 1;\uFEFF`, "U+FEFF"],
    ["byte-order mark at the start", `\uFEFFconst s = 1;`, "U+FEFF"],
    ["line separator ending a comment", `// note\u2028const s = 1;`, "U+2028"],
    ["paragraph separator", `// note\u2029const s = 1;`, "U+2029"],
    ["a carriage return without a line feed", `// note\rconst s = 1;`, "U+000D"],
    ["ESC starting a terminal sequence", `// \x1b[2K\x1b[1A`, "U+001B"],
    ["NUL in a string", `const s = "\0";`, "U+0000"],
    ["a C1 control", `// \u009B`, "U+009B"],
    ["interlinear annotation", `// \uFFF9hidden\uFFFB`, "U+FFF9"],
    ["Egyptian hieroglyph format control", `// \u{13430}`, "U+13430"],
    ["a VS16 that makes a letter-pictograph name", `const \u2139\uFE0F = 1;`, "U+FE0F"],
    ["a keycap's selector after a digit", `const s = "1\uFE0F\u20E3";`, "U+FE0F"],
  ];
  for (const [name, code, codePoint] of cases) {
    const report = await v.validate(`${code}\n${RUN}`);
    const hidden = report.violations.filter((x) => x.rule === "invisible_character");
    assert.ok(hidden.length > 0, `${name}: ${JSON.stringify(report.violations)}`);
    assert.ok(hidden[0]!.message.startsWith(codePoint), `${name}: ${hidden[0]!.message}`);
    assert.equal(hidden[0]!.line, 1, name);
    // The column points at the character itself (UTF-16 units, 1-based).
    const unit = code.codePointAt(hidden[0]!.column - 1)!;
    assert.equal(`U+${unit.toString(16).toUpperCase().padStart(4, "0")}`, codePoint, name);
    assert.doesNotMatch(
      hidden.map((x) => x.message).join(""),
      /[\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cc}\u2028\u2029]/u,
      `${name}: the message shows the character escaped`,
    );
  }
});

Deno.test("JitValidator.validate() keeps emoji written the usual way, CRLF line ends and tabs", async () => {
  await using v = new JitValidator();
  const source = [
    `const warn = "\u26A0\uFE0F careful"; // \u2764\uFE0F`,
    `const coder = "\u{1F469}\u200D\u{1F4BB} and \u{1F469}\u{1F3FD}\u200D\u{1F4BB}";`,
    `const flag = \`\u{1F3F3}\uFE0F\u200D\u{1F308}\`;`,
    `const family = "\u{1F468}\u200D\u{1F469}\u200D\u{1F467}";`,
    "\tconst tabbed = 1;",
    RUN,
  ].join("\r\n");
  assert.deepEqual(await v.validate(source), { ok: true, violations: [] });
});

Deno.test("findInvisible() refuses exactly the hidden classes: every code point, alone between letters", () => {
  const hidden = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029]/u;
  const wrong: string[] = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const ch = String.fromCodePoint(cp);
    const expected = hidden.test(ch) && cp !== 0x09 && cp !== 0x0a;
    const found = findInvisible(`a${ch}b`, 1).length > 0;
    if (found !== expected) wrong.push(cp.toString(16));
    if (wrong.length > 20) break;
  }
  assert.deepEqual(wrong, []);
});

Deno.test("escapePreview() escapes every character the validator refuses, so a preview of source shows each one (the registration's approval card, libos jit output)", () => {
  const missed: string[] = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const text = `a${String.fromCodePoint(cp)}b`;
    if (findInvisible(text, 1).length === 0) continue;
    // A preview of source keeps its line breaks: every other refused character is escaped.
    if (escapePreview(text, { multiline: true }) === text) missed.push(cp.toString(16));
  }
  assert.deepEqual(missed, []);
  assert.deepEqual(refused("\u202Ea\u200Bb\u{E0041}"), ["U+202E", "U+200B", "U+E0041"]);
});

Deno.test("findInvisible() stays linear on a hostile source: 256 Ki hidden characters, capped findings", () => {
  const source = "\u200B".repeat(256 * 1024);
  const start = performance.now();
  const found = findInvisible(source, 200);
  const ms = performance.now() - start;
  assert.equal(found.length, 200);
  assert.equal(found[199]!.column, 200);
  // Generous: the scan takes a few milliseconds; a quadratic one would take minutes.
  assert.ok(ms < 2_000, `${ms} ms`);
  const mixed = `${"x\n".repeat(100_000)}\u202E`;
  assert.deepEqual(
    findInvisible(mixed, 200).map((v) => [v.line, v.column]),
    [[100_001, 1]],
  );
});
