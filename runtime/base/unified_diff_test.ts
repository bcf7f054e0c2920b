import assert from "node:assert/strict";
import { unifiedDiff, type UnifiedDiffOptions } from "./unified_diff.ts";

/** A case whose expected text was produced by GNU diffutils 3.8 `diff -u --label a --label b`. */
interface Case {
  readonly name: string;
  readonly before: string;
  readonly after: string;
  readonly options?: UnifiedDiffOptions;
  readonly expected: string;
  readonly added: number;
  readonly removed: number;
}

/** `count` lines "line 1".."line count", each ending in LF, with `edits` replacing some of them. */
function numbered(count: number, edits: Readonly<Record<number, string>> = {}): string {
  return Array.from({ length: count }, (_, i) => `${edits[i + 1] ?? `line ${i + 1}`}\n`).join("");
}

function check(cases: readonly Case[]): void {
  for (const c of cases) {
    const diff = unifiedDiff(c.before, c.after, c.options);
    assert.equal(diff.text, c.expected, c.name);
    assert.equal(diff.added, c.added, `${c.name}: added`);
    assert.equal(diff.removed, c.removed, `${c.name}: removed`);
    assert.equal(diff.approximate, false, `${c.name}: approximate`);
    assert.equal(applyPatch(c.before, diff.text), c.after, `${c.name}: patch applies`);
  }
}

/** One line of a hunk: its operation and its text including the LF, unless it had none. */
interface PatchLine {
  readonly op: " " | "-" | "+";
  text: string;
}

interface Hunk {
  readonly oldStart: number;
  readonly oldCount: number;
  readonly newStart: number;
  readonly newCount: number;
  readonly lines: PatchLine[];
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$/;

/** Splits a text into lines that keep their LF; the last one has none if the text lacks it. */
function pieces(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** Parses unified diff text strictly, failing on anything GNU `diff -u` would not print. */
function parsePatch(text: string): Hunk[] {
  const rows = text.split("\n");
  assert.equal(rows.pop(), "", "diff text ends with LF");
  assert.match(rows[0] ?? "", /^--- /, "first header line");
  assert.match(rows[1] ?? "", /^\+\+\+ /, "second header line");
  const hunks: Hunk[] = [];
  for (const row of rows.slice(2)) {
    const header = HUNK_HEADER.exec(row);
    const hunk = hunks[hunks.length - 1];
    if (header !== null) {
      hunks.push({
        oldStart: Number(header[1]),
        oldCount: header[2] === undefined ? 1 : Number(header[2]),
        newStart: Number(header[3]),
        newCount: header[4] === undefined ? 1 : Number(header[4]),
        lines: [],
      });
    } else if (row === "\\ No newline at end of file") {
      const last = hunk?.lines[hunk.lines.length - 1];
      assert.ok(last !== undefined, "marker follows a line");
      assert.ok(last.text.endsWith("\n"), "at most one marker per line");
      last.text = last.text.slice(0, -1);
    } else {
      const op = row[0];
      assert.ok(
        op === " " || op === "-" || op === "+",
        `unexpected diff line ${JSON.stringify(row)}`,
      );
      assert.ok(hunk !== undefined, "body line inside a hunk");
      hunk.lines.push({ op, text: `${row.slice(1)}\n` });
    }
  }
  return hunks;
}

/**
 * Applies unified diff text to `before`, checking every context and removed line against it, the
 * hunk headers against the lines actually present, and that hunks neither overlap nor touch.
 */
function applyPatch(before: string, patch: string): string {
  if (patch === "") return before;
  const old = pieces(before);
  const out: string[] = [];
  let pos = 0;
  for (const [index, hunk] of parsePatch(patch).entries()) {
    const at = hunk.oldCount === 0 ? hunk.oldStart : hunk.oldStart - 1;
    assert.ok(
      index === 0 ? at >= pos : at > pos,
      `hunk ${index + 1} starts after the previous one`,
    );
    out.push(...old.slice(pos, at));
    pos = at;
    const newAt = hunk.newCount === 0 ? hunk.newStart : hunk.newStart - 1;
    assert.equal(out.length, newAt, `hunk ${index + 1} new start`);
    for (const line of hunk.lines) {
      if (line.op !== "+") {
        assert.equal(old[pos], line.text, `hunk ${index + 1} matches old line ${pos + 1}`);
        pos++;
      }
      if (line.op !== "-") out.push(line.text);
    }
    assert.equal(pos - at, hunk.oldCount, `hunk ${index + 1} old count`);
    assert.equal(out.length - newAt, hunk.newCount, `hunk ${index + 1} new count`);
  }
  out.push(...old.slice(pos));
  return out.join("");
}

/** Counts the `-` and `+` lines of unified diff text, skipping the two header lines. */
function countOps(text: string): { added: number; removed: number } {
  const rows = text.split("\n").slice(2);
  return {
    added: rows.filter((row) => row.startsWith("+")).length,
    removed: rows.filter((row) => row.startsWith("-")).length,
  };
}

/** Length of a longest common subsequence of two line lists, by dynamic programming. */
function lcsLength(a: readonly string[], b: readonly string[]): number {
  let previous = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    const row = [0];
    b.forEach((y, j) => {
      row.push(x === y ? (previous[j] ?? 0) + 1 : Math.max(previous[j + 1] ?? 0, row[j] ?? 0));
    });
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/** A seeded pseudo-random source in [0, 1) (mulberry32), so failures reproduce. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("unifiedDiff() returns empty text and zero counts when the texts are equal", () => {
  for (const text of ["", "a\n", "a", "one\r\ntwo\r\n", "\n\n", numbered(50)]) {
    assert.deepEqual(
      unifiedDiff(text, text),
      { text: "", added: 0, removed: 0, approximate: false },
      JSON.stringify(text),
    );
  }
});

Deno.test("unifiedDiff() prints a one-line change in the middle of ten lines exactly as GNU diff -u does", () => {
  check([{
    name: "line 5 of 10 changed, context 3",
    before: numbered(10),
    after: numbered(10, { 5: "line five" }),
    options: { context: 3 },
    expected: "--- a\n+++ b\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n" +
      " line 6\n line 7\n line 8\n",
    added: 1,
    removed: 1,
  }]);
});

Deno.test("unifiedDiff() prints insertions, deletions, creation and labels exactly as GNU diff -u does", () => {
  check([
    {
      name: "insertion at the start",
      before: "b\nc\nd\ne\nf\n",
      after: "a\nb\nc\nd\ne\nf\n",
      expected: "--- a\n+++ b\n@@ -1,3 +1,4 @@\n+a\n b\n c\n d\n",
      added: 1,
      removed: 0,
    },
    {
      name: "insertion at the end",
      before: "a\nb\nc\nd\ne\n",
      after: "a\nb\nc\nd\ne\nf\ng\n",
      expected: "--- a\n+++ b\n@@ -3,3 +3,5 @@\n c\n d\n e\n+f\n+g\n",
      added: 2,
      removed: 0,
    },
    {
      name: "deletion of everything",
      before: "a\nb\nc\n",
      after: "",
      expected: "--- a\n+++ b\n@@ -1,3 +0,0 @@\n-a\n-b\n-c\n",
      added: 0,
      removed: 3,
    },
    {
      name: "creation from empty",
      before: "",
      after: "a\nb\nc\n",
      expected: "--- a\n+++ b\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n",
      added: 3,
      removed: 0,
    },
    {
      name: "a single empty line is one line, not zero",
      before: "",
      after: "\n",
      expected: "--- a\n+++ b\n@@ -0,0 +1 @@\n+\n",
      added: 1,
      removed: 0,
    },
    {
      name: "context 0: an empty range names the line before it and a count of 1 is omitted",
      before: "a\nb\nc\nd\n",
      after: "a\nx\nb\nd\n",
      options: { context: 0 },
      expected: "--- a\n+++ b\n@@ -1,0 +2 @@\n+x\n@@ -3 +3,0 @@\n-c\n",
      added: 1,
      removed: 1,
    },
    {
      name: "custom labels",
      before: "x\n",
      after: "y\n",
      options: { fromLabel: "src/app.ts (current)", toLabel: "src/app.ts (proposed)" },
      expected: "--- src/app.ts (current)\n+++ src/app.ts (proposed)\n@@ -1 +1 @@\n-x\n+y\n",
      added: 1,
      removed: 1,
    },
  ]);
});

Deno.test("unifiedDiff() splits distant changes into two hunks and merges changes whose contexts touch", () => {
  check([
    {
      name: "lines 3 and 15 of 20: two hunks",
      before: numbered(20),
      after: numbered(20, { 3: "three", 15: "fifteen" }),
      expected: "--- a\n+++ b\n" +
        "@@ -1,6 +1,6 @@\n line 1\n line 2\n-line 3\n+three\n line 4\n line 5\n line 6\n" +
        "@@ -12,7 +12,7 @@\n line 12\n line 13\n line 14\n-line 15\n+fifteen\n line 16\n" +
        " line 17\n line 18\n",
      added: 2,
      removed: 2,
    },
    {
      name: "lines 5 and 12: six unchanged lines between, contexts touch, one hunk",
      before: numbered(20),
      after: numbered(20, { 5: "five", 12: "twelve" }),
      expected: "--- a\n+++ b\n" +
        "@@ -2,14 +2,14 @@\n line 2\n line 3\n line 4\n-line 5\n+five\n line 6\n line 7\n" +
        " line 8\n line 9\n line 10\n line 11\n-line 12\n+twelve\n line 13\n line 14\n line 15\n",
      added: 2,
      removed: 2,
    },
    {
      name: "lines 5 and 13: seven unchanged lines between, two hunks",
      before: numbered(20),
      after: numbered(20, { 5: "five", 13: "thirteen" }),
      expected: "--- a\n+++ b\n" +
        "@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+five\n line 6\n line 7\n line 8\n" +
        "@@ -10,7 +10,7 @@\n line 10\n line 11\n line 12\n-line 13\n+thirteen\n line 14\n" +
        " line 15\n line 16\n",
      added: 2,
      removed: 2,
    },
  ]);
});

Deno.test("unifiedDiff() picks, among equally short diffs, the one GNU diff -u prints", () => {
  check([
    {
      name: "a removed duplicate is the earlier one when it joins a neighbouring removal",
      before: "d\nc\nc\n",
      after: "c\n",
      expected: "--- a\n+++ b\n@@ -1,3 +1 @@\n-d\n-c\n c\n",
      added: 0,
      removed: 2,
    },
    {
      name: "an added duplicate is the earlier one when it joins a neighbouring addition",
      before: "b\n",
      after: "d\nb\nb\n",
      options: { context: 1 },
      expected: "--- a\n+++ b\n@@ -1 +1,3 @@\n+d\n+b\n b\n",
      added: 2,
      removed: 0,
    },
    {
      name: "a removed duplicate is the later one",
      before: "c\nc\n",
      after: "c\n",
      options: { context: 0 },
      expected: "--- a\n+++ b\n@@ -2 +1,0 @@\n-c\n",
      added: 0,
      removed: 1,
    },
    {
      name: "with context 0 an added duplicate stays next to the change before it",
      before: "a\nb\nc\n",
      after: "b\nc\nc\n",
      options: { context: 0 },
      expected: "--- a\n+++ b\n@@ -1 +0,0 @@\n-a\n@@ -2,0 +2 @@\n+c\n",
      added: 1,
      removed: 1,
    },
    {
      name: "a removal lines up with an addition as one replacement",
      before: "c\nc\n",
      after: "b\nc\n",
      options: { context: 1 },
      expected: "--- a\n+++ b\n@@ -1,2 +1,2 @@\n-c\n+b\n c\n",
      added: 1,
      removed: 1,
    },
  ]);
});

Deno.test("unifiedDiff() marks a missing final newline exactly as GNU diff -u does", () => {
  const marker = "\\ No newline at end of file\n";
  check([
    {
      name: "only the old side lacks it: the last line counts as changed",
      before: "a\nb\nc",
      after: "a\nb\nc\n",
      expected: `--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n b\n-c\n${marker}+c\n`,
      added: 1,
      removed: 1,
    },
    {
      name: "only the new side lacks it",
      before: "a\nb\nc\n",
      after: "a\nb\nc",
      expected: `--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n b\n-c\n+c\n${marker}`,
      added: 1,
      removed: 1,
    },
    {
      name: "both lack it and the last line changed",
      before: "a\nb\nc",
      after: "a\nb\nd",
      expected: `--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n b\n-c\n${marker}+d\n${marker}`,
      added: 1,
      removed: 1,
    },
    {
      name: "both lack it and the last line is context",
      before: "a\nb\nc\nd",
      after: "a\nB\nc\nd",
      expected: `--- a\n+++ b\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n d\n${marker}`,
      added: 1,
      removed: 1,
    },
    {
      name: "both lack it, out of the context's reach",
      before: "a\nb\nc\nd\ne\nf",
      after: "a\nB\nc\nd\ne\nf",
      expected: "--- a\n+++ b\n@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n",
      added: 1,
      removed: 1,
    },
  ]);
});

Deno.test("unifiedDiff() keeps CR characters inside lines instead of splitting on them", () => {
  check([
    {
      name: "CRLF text with one changed line",
      before: "one\r\ntwo\r\nthree\r\n",
      after: "one\r\n2\r\nthree\r\n",
      expected: "--- a\n+++ b\n@@ -1,3 +1,3 @@\n one\r\n-two\r\n+2\r\n three\r\n",
      added: 1,
      removed: 1,
    },
    {
      name: "a line that differs only by a trailing CR",
      before: "a\nb\n",
      after: "a\r\nb\n",
      expected: "--- a\n+++ b\n@@ -1,2 +1,2 @@\n-a\n+a\r\n b\n",
      added: 1,
      removed: 1,
    },
    {
      name: "a lone CR does not end a line",
      before: "a\rb\n",
      after: "a\rc\n",
      expected: "--- a\n+++ b\n@@ -1 +1 @@\n-a\rb\n+a\rc\n",
      added: 1,
      removed: 1,
    },
  ]);
});

Deno.test("unifiedDiff() gives a minimal patch that turns before into after for 200 random pairs", () => {
  const random = seeded(0x5eed);
  const alphabet = ["a", "b", "c", "", "a\r"];
  const pick = (): string => alphabet[Math.floor(random() * alphabet.length)] ?? "";
  const text = (): string => {
    const lines = Array.from({ length: Math.floor(random() * 13) }, pick);
    const body = lines.join("\n");
    return lines.length > 0 && random() < 0.75 ? `${body}\n` : body;
  };
  const mutate = (source: string): string => {
    const lines = source.split("\n");
    for (let k = 0; k < 3; k++) {
      const at = Math.floor(random() * (lines.length + 1));
      const op = random();
      if (op < 1 / 3) lines.splice(at, 1);
      else if (op < 2 / 3) lines.splice(at, 0, pick());
      else lines[at] = pick();
    }
    return lines.join("\n");
  };
  for (let i = 0; i < 200; i++) {
    const before = text();
    const after = random() < 0.5 ? mutate(before) : text();
    const context = [0, 1, 3][i % 3] ?? 3;
    const label = `pair ${i} (context ${context}): ${JSON.stringify([before, after])}`;
    const diff = unifiedDiff(before, after, { context });
    assert.equal(diff.text === "", before === after, `${label}: empty only when equal`);
    assert.equal(applyPatch(before, diff.text), after, `${label}: patch applies`);
    assert.deepEqual(countOps(diff.text), { added: diff.added, removed: diff.removed }, label);
    const [a, b] = [pieces(before), pieces(after)];
    const minimal = a.length + b.length - 2 * lcsLength(a, b);
    assert.equal(diff.added + diff.removed, minimal, `${label}: minimal`);
    assert.equal(diff.approximate, false, label);
  }
});

Deno.test("unifiedDiff() finds 5 scattered edits in 20,000-line inputs", () => {
  const before = numbered(20_000);
  const lines = pieces(before);
  lines[150] = "replaced near the start\n";
  lines.splice(4_000, 0, "inserted\n");
  lines[9_000] = "replaced in the middle\n";
  lines.splice(14_000, 1);
  lines[19_990] = "replaced near the end\n";
  const after = lines.join("");
  const diff = unifiedDiff(before, after);
  assert.equal(diff.approximate, false);
  assert.deepEqual({ added: diff.added, removed: diff.removed }, { added: 4, removed: 4 });
  assert.equal(diff.text.match(/^@@ /gm)?.length, 5);
  assert.equal(applyPatch(before, diff.text), after);
});

Deno.test("unifiedDiff() falls back to one whole-file hunk past maxLines and says it is approximate", () => {
  const cases = [
    {
      name: "completely different 30,000-line inputs",
      before: Array.from({ length: 30_000 }, (_, i) => `old ${i}\n`).join(""),
      after: Array.from({ length: 30_000 }, (_, i) => `new ${i}\n`).join(""),
      maxLines: 20_000,
      header: "@@ -1,30000 +1,30000 @@\n",
    },
    {
      name: "only the new side is past the limit, and a change is never hidden",
      before: "a\nb\nc\n",
      after: "a\nB\nc\nd\n",
      maxLines: 3,
      header: "@@ -1,3 +1,4 @@\n",
    },
    {
      name: "creation from empty past the limit",
      before: "",
      after: "a\nb\n",
      maxLines: 1,
      header: "@@ -0,0 +1,2 @@\n",
    },
  ];
  for (const c of cases) {
    const diff = unifiedDiff(c.before, c.after, { maxLines: c.maxLines });
    assert.equal(diff.approximate, true, c.name);
    assert.ok(diff.text.startsWith(`--- a\n+++ b\n${c.header}`), c.name);
    assert.equal(diff.removed, pieces(c.before).length, c.name);
    assert.equal(diff.added, pieces(c.after).length, c.name);
    assert.deepEqual(countOps(diff.text), { added: diff.added, removed: diff.removed }, c.name);
    assert.equal(applyPatch(c.before, diff.text), c.after, c.name);
  }
});

Deno.test("unifiedDiff() computes a minimal diff at exactly maxLines lines", () => {
  const diff = unifiedDiff("a\nb\nc\n", "a\nB\nc\n", { maxLines: 3 });
  assert.equal(diff.approximate, false);
  assert.equal(diff.text, "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
});

Deno.test("unifiedDiff() rejects a bad context or maxLines and a label that would forge header lines", () => {
  const cases: readonly { name: string; options: UnifiedDiffOptions; message: RegExp }[] = [
    { name: "negative context", options: { context: -1 }, message: /option context is -1/ },
    { name: "fractional context", options: { context: 1.5 }, message: /option context is 1\.5/ },
    { name: "NaN maxLines", options: { maxLines: NaN }, message: /option maxLines is NaN/ },
    {
      name: "LF in fromLabel",
      options: { fromLabel: "a\n+++ forged" },
      message: /option fromLabel "a\\n\+\+\+ forged" contains a line feed/,
    },
    { name: "LF in toLabel", options: { toLabel: "b\n" }, message: /option toLabel/ },
  ];
  for (const c of cases) {
    assert.throws(() => unifiedDiff("x\n", "y\n", c.options), (error: unknown) => {
      assert.ok(error instanceof RangeError, c.name);
      assert.match(error.message, c.message, c.name);
      return true;
    });
  }
});
