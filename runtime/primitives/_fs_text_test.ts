import assert from "node:assert/strict";
import { ValidationError } from "../base/errors.ts";
import {
  applyEdits,
  binaryKind,
  capLines,
  lineRange,
  splitLines,
  type TextEdit,
} from "./_fs_text.ts";

const bytes = (...b: number[]) => new Uint8Array(b);
const utf8 = (s: string) => new TextEncoder().encode(s);

Deno.test("binaryKind() names known formats by magic number, calls NUL bytes and invalid UTF-8 binary, and leaves text alone", () => {
  const cases: [string, Uint8Array, boolean, string | undefined][] = [
    ["png", bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1), false, "png"],
    ["jpeg", bytes(0xff, 0xd8, 0xff, 0xe0), false, "jpeg"],
    ["gif", utf8("GIF89a..."), false, "gif"],
    ["webp", utf8("RIFF\0\0\0\0WEBPVP8 "), false, "webp"],
    ["pdf", utf8("%PDF-1.7\n"), false, "pdf"],
    ["zip", bytes(0x50, 0x4b, 0x03, 0x04, 20), false, "zip"],
    ["elf", bytes(0x7f, 0x45, 0x4c, 0x46, 2, 1), false, "elf"],
    ["NUL byte", utf8("text\0more"), false, "binary"],
    ["Latin-1", bytes(0x63, 0x61, 0x66, 0xe9), false, "binary"],
    ["plain text", utf8("hello\n"), false, undefined],
    ["UTF-8 text", utf8("héllo ✓\n"), false, undefined],
    ["empty", bytes(), false, undefined],
    // A cut inside "é": the split code point is not held against the file.
    ["cut mid code point", utf8("caf\u00e9").subarray(0, 4), true, undefined],
    ["ends mid code point, not cut", utf8("caf\u00e9").subarray(0, 4), false, "binary"],
  ];
  for (const [name, data, cut, type] of cases) {
    assert.equal(binaryKind(data, cut)?.type, type, name);
  }
});

Deno.test("lineRange() picks lines by 1-based offset and limit, keeping their endings, and refuses an offset past the end with the count", () => {
  const text = "a\nb\r\nc\nd";
  assert.deepEqual(splitLines(text), ["a\n", "b\r\n", "c\n", "d"]);
  assert.deepEqual(lineRange(text, true, "f", 2, 2), {
    content: "b\r\nc\n",
    first: 2,
    last: 3,
    total: 4,
    start: 2,
  });
  assert.deepEqual(lineRange(text, true, "f", 4, undefined).content, "d");
  assert.deepEqual(lineRange("", true, "f", 1, 5), {
    content: "",
    first: 1,
    last: 0,
    total: 0,
    start: 0,
  });
  assert.throws(() => lineRange(text, true, "f", 5, undefined), (e: unknown) => {
    assert.ok(e instanceof ValidationError);
    assert.match(e.message, /it has 4 lines; use an offset from 1 to 4/);
    return true;
  });
  // Not the whole file: the partial last line is left out and the total is unknown.
  assert.deepEqual(lineRange("a\nb\npart", false, "f", 1, undefined), {
    content: "a\nb\n",
    first: 1,
    last: 2,
    total: null,
    start: 0,
  });
  // ...unless it is the only line.
  assert.equal(lineRange("one huge line", false, "f", 1, undefined).content, "one huge line");
});

Deno.test("capLines() keeps whole lines within the byte cap, or cuts a first line that alone is too long", () => {
  const range = lineRange("aaaa\nbbbb\ncccc\n", true, "f", 1, undefined);
  assert.deepEqual(capLines(range, 100), { content: "aaaa\nbbbb\ncccc\n", last: 3, capped: false });
  assert.deepEqual(capLines(range, 11), { content: "aaaa\nbbbb\n", last: 2, capped: true });
  assert.deepEqual(capLines(range, 3), { content: "aaa", last: 1, capped: true });
});

Deno.test("applyEdits() applies edits in order, all or none, and every refusal names the edit and what to do", () => {
  const edit = (oldString: string, newString: string, replaceAll?: boolean): TextEdit => ({
    oldString,
    newString,
    ...(replaceAll === undefined ? {} : { replaceAll }),
  });
  assert.deepEqual(applyEdits("f", "a b a", [edit("b", "c"), edit("c", "d")]), {
    content: "a d a",
    replacements: 2,
  });
  assert.deepEqual(applyEdits("f", "a b a", [edit("a", "x", true)]), {
    content: "x b x",
    replacements: 2,
  });
  // A CRLF file edited with LF text keeps its CRLF, in what is matched and what is written.
  assert.deepEqual(applyEdits("f", "one\r\ntwo\r\n", [edit("one\ntwo", "one\nnew\ntwo")]), {
    content: "one\r\nnew\r\ntwo\r\n",
    replacements: 1,
  });
  // A file with mixed endings is matched exactly (its LF lines stay LF).
  assert.equal(applyEdits("f", "a\r\nb\nc\n", [edit("b\nc", "B\nC")]).content, "a\r\nB\nC\n");
  const refusals: [string, string, TextEdit[], RegExp][] = [
    ["none", "x", [], /no edit was given; pass old_string/],
    ["empty", "x", [edit("", "y")], /old_string is empty; .*write_text_file/],
    ["identical", "x", [edit("x", "x")], /identical.*changes nothing/],
    ["missing", "abc", [edit("zzz", "y")], /old_string was not found in it; read the file again/],
    ["ambiguous", "a a a", [edit("a", "b")], /occurs 3 times .*replace_all: true/],
    [
      "trailing whitespace",
      "x = 1   \ny = 2\n",
      [edit("x = 1\ny = 2", "z")],
      /near line 1 only when trailing whitespace/,
    ],
    [
      "line numbers copied",
      "x\ny\n",
      [edit("     1\tx\n     2\ty", "z")],
      /line numbers .*copy only the text after the tab/,
    ],
    ["second of two", "abc", [edit("a", "A"), edit("q", "Q")], /edits\[1\]\.old_string was not/],
  ];
  for (const [name, content, edits, message] of refusals) {
    assert.throws(() => applyEdits("f", content, edits), (e: unknown) => {
      assert.ok(e instanceof ValidationError, name);
      assert.match(e.message, message, name);
      return true;
    });
  }
});
