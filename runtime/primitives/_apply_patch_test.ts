import assert from "node:assert/strict";
import { PatchError } from "../base/errors.ts";
import { applyHunks, parsePatch } from "./_apply_patch.ts";

/** Parses a one-file update patch and applies it to `content`. */
function patched(content: string, ...body: string[]): string {
  const parsed = parsePatch(
    ["*** Begin Patch", "*** Update File: f", ...body, "*** End Patch"].join("\n"),
  );
  const op = parsed.operations[0]!;
  assert.equal(op.type, "update");
  return applyHunks("f", content, op.type === "update" ? op.hunks : []);
}

const APPLY: readonly { name: string; content: string; body: string[]; want: string }[] = [
  {
    name: "two hunks, in file order, each after the previous one",
    content: "a\nx\nb\nx\nc\n",
    body: ["@@", " a", "-x", "+1", "@@", " b", "-x", "+2"],
    want: "a\n1\nb\n2\nc\n",
  },
  {
    name: "the same lines twice: the @@ context line picks the second",
    content: "def f():\n    return 1\ndef g():\n    return 1\n",
    body: ["@@ def g():", "-    return 1", "+    return 2"],
    want: "def f():\n    return 1\ndef g():\n    return 2\n",
  },
  {
    name: "a pure addition goes right after its @@ context line",
    content: "import a\n\ncode\n",
    body: ["@@ import a", "+import b"],
    want: "import a\nimport b\n\ncode\n",
  },
  {
    name: "a pure addition without context goes at the end",
    content: "one\n",
    body: ["@@", "+two"],
    want: "one\ntwo\n",
  },
  {
    name: "a file without a final newline keeps that",
    content: "a\nb",
    body: [" a", "-b", "+c"],
    want: "a\nc",
  },
  {
    name: "typographic punctuation in the patch matches ASCII in the file (last pass)",
    content: "say('it's — fine')\n",
    body: ["-say(\u2018it\u2019s \u2014 fine\u2019)", "+say('ok')"],
    want: "say('ok')\n",
  },
  {
    name: "leading-whitespace differences match on the trimmed pass; the file's context is kept",
    content: "\tif x:\n\t\ty()\n",
    body: ["   if x:", "-    y()", "+    z()"],
    want: "\tif x:\n    z()\n",
  },
  {
    name: "mixed line endings: each untouched line keeps its own",
    content: "a\r\nb\nc\r\nd\r\n",
    body: [" b", "-c", "+C"],
    want: "a\r\nb\nC\r\nd\r\n",
  },
  {
    name: "an empty file gets its first lines",
    content: "",
    body: ["@@", "+first"],
    want: "first\n",
  },
];

for (const row of APPLY) {
  Deno.test(`applyHunks(): ${row.name}`, () => {
    assert.equal(patched(row.content, ...row.body), row.want);
  });
}

const INVALID: readonly { name: string; text: string; line: number; says: string }[] = [
  {
    name: "an Update with no hunk",
    text: "*** Begin Patch\n*** Update File: a\n*** End Patch",
    line: 2,
    says: "has no hunks",
  },
  {
    name: "a second hunk without @@",
    text: "*** Begin Patch\n*** Update File: a\n-x\n+y\n*** End of File\n-z\n*** End Patch",
    line: 6,
    says: 'expected "@@"',
  },
  {
    name: "a header without a path",
    text: "*** Begin Patch\n*** Delete File: \n*** End Patch",
    line: 2,
    says: "needs a path",
  },
  {
    name: "an unknown header",
    text: "*** Begin Patch\n*** Rename File: a\n*** End Patch",
    line: 2,
    says: '"*** Add File: path"',
  },
  {
    name: "nothing between the markers",
    text: "*** Begin Patch\n*** End Patch",
    line: 2,
    says: "changes no file",
  },
  {
    name: "line numbers count the blank lines before the patch",
    text: "\n\n*** Begin Patch\n*** Update File: a\n?x\n*** End Patch",
    line: 5,
    says: '"?x"',
  },
  {
    name: "a unified hunk shorter than its header says",
    text: "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+B",
    line: 6,
    says: "ends early",
  },
  {
    name: "an empty patch",
    text: "  \n",
    line: 1,
    says: "empty",
  },
];

for (const row of INVALID) {
  Deno.test(`parsePatch() refuses ${row.name}, naming line ${row.line}`, () => {
    assert.throws(() => parsePatch(row.text), (error: unknown) => {
      assert.ok(error instanceof PatchError);
      assert.equal(error.code, "patch_invalid");
      assert.equal(error.line, row.line, error.message);
      assert.ok(error.message.includes(row.says), error.message);
      assert.ok(error.message.includes("nothing was changed"), error.message);
      return true;
    });
  });
}

Deno.test("parsePatch(): a unified diff with two hunks, a rename and a missing final newline marker", () => {
  const parsed = parsePatch(
    [
      "diff --git a/old.txt b/new.txt",
      "--- a/old.txt",
      "+++ b/new.txt",
      "@@ -1,2 +1,2 @@",
      "-a",
      "+A",
      " b",
      "@@ -9 +9 @@",
      "-z",
      "+Z",
      "\\ No newline at end of file",
    ].join("\n"),
  );
  assert.equal(parsed.format, "unified");
  const op = parsed.operations[0]!;
  assert.equal(op.type, "update");
  if (op.type !== "update") return;
  assert.equal(op.path, "old.txt");
  assert.equal(op.moveTo, "new.txt");
  assert.equal(op.hunks.length, 2);
  assert.equal(op.hunks[1]!.endOfFile, true);
});

Deno.test("applyHunks(): a hunk that is not there is patch_mismatch naming the hunk, the line searched from and the lines", () => {
  assert.throws(
    () => patched("a\nb\nc\n", "@@", " a", "-b", "+B", "@@", " a", "-c", "+C"),
    (error: unknown) => {
      assert.ok(error instanceof PatchError);
      assert.equal(error.code, "patch_mismatch");
      assert.match(
        error.message,
        /^hunk 2 of "f" \(patch line 7\) did not match at or after line 3/,
      );
      assert.match(error.message, /"a"\n {2}"c"/);
      return true;
    },
  );
});
