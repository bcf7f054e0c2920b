/**
 * Line diffs in GNU `diff -u` format, for showing a human an edit before they approve it (DESIGN §5:
 * an approval request for an edit carries "a unified diff against the current content").
 *
 * The human approves what this diff shows, so it must never hide a change: every line that differs
 * appears as a `-` or `+` line, a difference in the final newline alone is a change (marked with GNU's
 * `\ No newline at end of file`), and when the inputs are too large for a minimal diff the output
 * falls back to replacing the whole file rather than guessing. Lines are split on LF only; CR and
 * every other character stay inside the line untouched, because escaping them for a terminal is the
 * renderer's job (`escapePreview` with `multiline: true`), not this module's.
 *
 * The minimal edit script comes from Myers' O(ND) algorithm in its linear-space form ("An O(ND)
 * Difference Algorithm and Its Variations", 1986, §4b): find the middle snake of the edit graph, then
 * recurse on both halves. Two exact reductions run first: the common prefix and suffix are trimmed,
 * and lines that occur nowhere on the other side are set aside as changed, since no longest common
 * subsequence can use them. That keeps a file replaced wholesale from costing O(N²); memory stays
 * linear in the number of lines.
 *
 * Where several diffs are equally short, the one printed follows GNU diffutils' rules (its search
 * order, its analysis window and its sliding of change runs), so on ordinary input the text is
 * byte-for-byte what `diff -u --label a --label b` prints. It differs only where GNU's speed
 * heuristics (provisional discarding of very frequent lines, the too-expensive cut-off) would give
 * up minimality; this module never does, short of the `maxLines` fallback, which it reports.
 *
 * Hand-written rather than the npm `diff` package (jsdiff), measured against jsdiff 9.0.0 (the
 * latest; `diffArrays` over the same interned lines, rendered by `renderHunks` below; Deno 2.9.6,
 * one process per case, 20,000 lines a side). Five scattered edits: both fast (here 174 ms, jsdiff
 * 99 ms). A file replaced wholesale: here 126 ms and 59 MiB RSS; jsdiff unbounded did not finish
 * in 120 s. Alternating `a`/`b` lines against random ones: here 1.5 s and 50 MiB; jsdiff 86 s and
 * 2.5 GB. A shuffled file: here 8.8 s and 58 MiB; jsdiff did not finish in 120 s. Its
 * `maxEditLength` (2,000) and `timeout` (1 s) options bound it to 670-820 ms only by giving up, so
 * the preview becomes the whole file replaced where this module shows the minimal 5,002 lines
 * removed and 5,002 added, and a time cut-off makes a preview depend on the machine's load. Among
 * equally short diffs jsdiff does not choose as GNU does (the GNU tie-break cases of
 * `unified_diff_test.ts` fail), so its previews would stop matching `diff -u`. An approval preview
 * sees hostile files: the exact reductions and linear space here are the reason to keep this
 * module.
 *
 * @module
 */

/** Options for {@linkcode unifiedDiff}. */
export interface UnifiedDiffOptions {
  /** Lines of context around each change (default 3). */
  readonly context?: number;
  /** Label for the `---` header line (default `"a"`). */
  readonly fromLabel?: string;
  /** Label for the `+++` header line (default `"b"`). */
  readonly toLabel?: string;
  /**
   * Give up computing a minimal diff past this many lines on either side (default 20_000) and emit
   * one hunk that removes every old line and adds every new one.
   */
  readonly maxLines?: number;
}

/** The result of {@linkcode unifiedDiff}. */
export interface UnifiedDiff {
  /**
   * The diff text: `--- a\n+++ b\n` then `@@ -l,s +l,s @@` hunks of ` `, `-` and `+` prefixed
   * lines, each ending in LF; `""` when the texts are equal.
   */
  readonly text: string;
  /** Number of `+` lines. */
  readonly added: number;
  /** Number of `-` lines. */
  readonly removed: number;
  /** True when `maxLines` forced the whole-file fallback, so the diff is correct but not minimal. */
  readonly approximate: boolean;
}

const DEFAULT_CONTEXT = 3;
const DEFAULT_MAX_LINES = 20_000;
const NO_NEWLINE_MARKER = "\\ No newline at end of file\n";

/** One side of the comparison: its lines, and whether the text ended with LF. */
interface Side {
  readonly lines: readonly string[];
  readonly endsWithNewline: boolean;
}

/** A maximal run of changed lines: old `[a, aEnd)` is replaced by new `[b, bEnd)` (0-based). */
interface Change {
  readonly a: number;
  readonly aEnd: number;
  readonly b: number;
  readonly bEnd: number;
}

/**
 * Compares two texts line by line and renders the difference as GNU `diff -u` would with
 * `--label fromLabel --label toLabel`.
 *
 * @throws {RangeError} when `context` or `maxLines` is not a non-negative integer, or a label
 * contains a line feed (it would forge extra lines in the header).
 * @example
 * ```ts
 * unifiedDiff("a\nb\n", "a\nc\n").text; // => "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
 * ```
 */
export function unifiedDiff(
  before: string,
  after: string,
  options: UnifiedDiffOptions = {},
): UnifiedDiff {
  const context = checkCount("context", options.context ?? DEFAULT_CONTEXT);
  const maxLines = checkCount("maxLines", options.maxLines ?? DEFAULT_MAX_LINES);
  const fromLabel = checkLabel("fromLabel", options.fromLabel ?? "a");
  const toLabel = checkLabel("toLabel", options.toLabel ?? "b");
  if (before === after) return { text: "", added: 0, removed: 0, approximate: false };

  const from = splitLines(before);
  const to = splitLines(after);
  const n = from.lines.length;
  const m = to.lines.length;
  const approximate = n > maxLines || m > maxLines;
  const changes = approximate
    ? [{ a: 0, aEnd: n, b: 0, bEnd: m }]
    : collectChanges(...markChanges(from, to, context), n, m);
  const header = `--- ${fromLabel}\n+++ ${toLabel}\n`;
  return { ...renderHunks(from, to, changes, context, header), approximate };
}

function checkCount(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `Cannot diff: option ${name} is ${String(value)}, not a non-negative integer; pass 0 or more`,
    );
  }
  return value;
}

function checkLabel(name: string, value: string): string {
  if (value.includes("\n")) {
    throw new RangeError(
      `Cannot diff: option ${name} ${
        JSON.stringify(value)
      } contains a line feed, which would forge header lines; pass a single-line label`,
    );
  }
  return value;
}

/** Splits on LF only; `""` is zero lines and a trailing LF ends the last line rather than adding one. */
function splitLines(text: string): Side {
  if (text === "") return { lines: [], endsWithNewline: true };
  const lines = text.split("\n");
  const endsWithNewline = lines[lines.length - 1] === "";
  if (endsWithNewline) lines.pop();
  return { lines, endsWithNewline };
}

/**
 * Numbers both sides' lines so equal lines get equal ids. A last line without its LF gets a key no
 * real line can have (lines never contain LF), so "x" and "x\n" compare as different lines.
 */
function intern(from: Side, to: Side): [Int32Array, Int32Array] {
  const ids = new Map<string, number>();
  const number = (side: Side): Int32Array => {
    const out = new Int32Array(side.lines.length);
    side.lines.forEach((line, i) => {
      const key = !side.endsWithNewline && i === side.lines.length - 1 ? `\n${line}` : line;
      let id = ids.get(key);
      if (id === undefined) {
        id = ids.size;
        ids.set(key, id);
      }
      out[i] = id;
    });
    return out;
  };
  return [number(from), number(to)];
}

/**
 * Marks, per side, which lines a minimal edit script deletes (old side) or inserts (new side).
 *
 * Like GNU, only a window is analysed: the common prefix and suffix minus `horizon` lines next to
 * the change (GNU's `horizon_lines`, which `diff -u` sets to the context). The window bounds where
 * runs of changes may slide and which lines count as occurring on the other side, so the same
 * window is what makes equally short diffs come out the way GNU prints them.
 */
function markChanges(from: Side, to: Side, horizon: number): [Uint8Array, Uint8Array] {
  const [a, b] = intern(from, to);
  const changedA = new Uint8Array(a.length);
  const changedB = new Uint8Array(b.length);
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  const lo = Math.max(0, prefix - horizon);
  // GNU finds no common suffix when only one side ends with LF; here the last lines then differ.
  const limit = Math.min(a.length, b.length) - lo;
  let suffix = 0;
  while (suffix < limit && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix++;
  const cut = Math.max(0, suffix - horizon);
  const aHi = a.length - cut;
  const bHi = b.length - cut;
  const keptA = keepShared(a, lo, aHi, b, lo, bHi, changedA);
  const keptB = keepShared(b, lo, bHi, a, lo, aHi, changedB);
  const ra = keptA.map((i) => a[i] ?? -1);
  const rb = keptB.map((i) => b[i] ?? -1);
  const reducedA = new Uint8Array(ra.length);
  const reducedB = new Uint8Array(rb.length);
  // Diagonals k = x - y run from -(rb.length + 1) to ra.length + 1, sentinels included.
  const diagonals = ra.length + rb.length + 3;
  const search: Search = {
    a: ra,
    b: rb,
    changedA: reducedA,
    changedB: reducedB,
    forward: new Int32Array(diagonals),
    backward: new Int32Array(diagonals),
    offset: rb.length + 1,
  };
  compareSeq(search, 0, ra.length, 0, rb.length);
  reducedA.forEach((c, i) => {
    if (c) changedA[keptA[i] ?? 0] = 1;
  });
  reducedB.forEach((c, i) => {
    if (c) changedB[keptB[i] ?? 0] = 1;
  });
  const windowA = changedA.subarray(lo, aHi);
  const windowB = changedB.subarray(lo, bHi);
  shiftBoundaries(a.subarray(lo, aHi), windowA, windowB);
  shiftBoundaries(b.subarray(lo, bHi), windowB, windowA);
  return [changedA, changedB];
}

/**
 * Chooses among equally short diffs the way GNU's `shift_boundaries` does: each run of changed lines
 * slides back over equal neighbours (merging with earlier runs), then forward as far as it can
 * (merging with later runs) until it stops growing, and finally back to the last place where it
 * ends together with a run on the other side. Sliding keeps the edit count; `other` is read to
 * track that alignment and is not modified.
 */
function shiftBoundaries(ids: Int32Array, changed: Uint8Array, other: Uint8Array): void {
  const end = ids.length;
  // Reads outside the window see an unchanged line, as if each end had a sentinel.
  const mine = (i: number): boolean => i >= 0 && i < end && changed[i] === 1;
  const theirs = (j: number): boolean => j >= 0 && j < other.length && other[j] === 1;
  let i = 0;
  let j = 0;
  for (;;) {
    // Find the next run of changes, keeping j at the corresponding point on the other side.
    while (i < end && !changed[i]) {
      while (theirs(j++)) continue;
      i++;
    }
    if (i === end) return;
    let start = i;
    while (mine(++i)) continue;
    while (theirs(j)) j++;
    let runLength: number;
    let corresponding: number;
    do {
      runLength = i - start;
      // Slide back while the line before the run equals its last line, merging earlier runs.
      while (start > 0 && ids[start - 1] === ids[i - 1]) {
        changed[--start] = 1;
        changed[--i] = 0;
        while (mine(start - 1)) start--;
        while (theirs(--j)) continue;
      }
      corresponding = theirs(j - 1) ? i : end;
      // Then slide forward as far as possible, merging later runs.
      while (i !== end && ids[start] === ids[i]) {
        changed[start++] = 0;
        changed[i++] = 1;
        while (mine(i)) i++;
        while (theirs(++j)) corresponding = i;
      }
    } while (runLength !== i - start);
    // Move the merged run back to end where a run on the other side ends, if it passed one.
    while (corresponding < i) {
      changed[--start] = 1;
      changed[--i] = 0;
      while (theirs(--j)) continue;
    }
  }
}

/**
 * Returns the indices in `[lo, hi)` of `xs` whose line also occurs in `ys[yLo, yHi)`, and marks the
 * others changed: no common subsequence can match them, so dropping them keeps the diff minimal.
 */
function keepShared(
  xs: Int32Array,
  lo: number,
  hi: number,
  ys: Int32Array,
  yLo: number,
  yHi: number,
  changed: Uint8Array,
): Int32Array {
  const present = new Set(ys.subarray(yLo, yHi));
  const kept: number[] = [];
  for (let i = lo; i < hi; i++) {
    if (present.has(xs[i] ?? -1)) kept.push(i);
    else changed[i] = 1;
  }
  return Int32Array.from(kept);
}

/** Working state of one Myers search; the diagonal arrays are shared by every recursive call. */
interface Search {
  readonly a: Int32Array;
  readonly b: Int32Array;
  readonly changedA: Uint8Array;
  readonly changedB: Uint8Array;
  /** Furthest x reached from the top-left corner, per diagonal k = x - y (at index offset + k). */
  readonly forward: Int32Array;
  /** Smallest x reached from the bottom-right corner, per diagonal k = x - y. */
  readonly backward: Int32Array;
  /** Index of diagonal 0: diagonals run from -(b.length + 1) to a.length + 1. */
  readonly offset: number;
}

/** Stands for "no point reached yet" in the backward search, which minimises x. */
const UNREACHED = 0x7fffffff;

/** Marks a minimal edit script for `a[aLo, aHi)` against `b[bLo, bHi)` (GNU's `compareseq`). */
function compareSeq(s: Search, aLo: number, aHi: number, bLo: number, bHi: number): void {
  while (aLo < aHi && bLo < bHi && s.a[aLo] === s.b[bLo]) {
    aLo++;
    bLo++;
  }
  while (aLo < aHi && bLo < bHi && s.a[aHi - 1] === s.b[bHi - 1]) {
    aHi--;
    bHi--;
  }
  if (aLo === aHi) {
    s.changedB.fill(1, bLo, bHi);
  } else if (bLo === bHi) {
    s.changedA.fill(1, aLo, aHi);
  } else {
    // Both sides are non-empty and differ at both ends, so D >= 2 and the split point lies strictly
    // inside the edit path: each half has fewer edits than the whole and the recursion terminates.
    const [x, y] = middleSnake(s, aLo, aHi, bLo, bHi);
    compareSeq(s, aLo, x, bLo, y);
    compareSeq(s, x, aHi, y, bHi);
  }
}

/**
 * Finds a point `(x, y)` on a shortest edit path through the box `[aLo, aHi) x [bLo, bHi)` by
 * running Myers' greedy search from both corners until the two frontiers overlap. This follows
 * GNU's `diag` (without its too-expensive heuristics): diagonals are clamped to the box, so no
 * frontier point ever lies outside it, and ties break the way GNU breaks them.
 */
function middleSnake(
  s: Search,
  aLo: number,
  aHi: number,
  bLo: number,
  bHi: number,
): [number, number] {
  const { a, b, forward: fd, backward: bd, offset: o } = s;
  const dMin = aLo - bHi;
  const dMax = aHi - bLo;
  const fMid = aLo - bLo;
  const bMid = aHi - bHi;
  let fMin = fMid;
  let fMax = fMid;
  let bMin = bMid;
  let bMax = bMid;
  const odd = ((fMid - bMid) & 1) !== 0;
  fd[o + fMid] = aLo;
  bd[o + bMid] = aHi;
  for (;;) {
    if (fMin > dMin) fd[o + --fMin - 1] = -1;
    else fMin++;
    if (fMax < dMax) fd[o + ++fMax + 1] = -1;
    else fMax--;
    for (let d = fMax; d >= fMin; d -= 2) {
      const lo = fd[o + d - 1] ?? -1;
      const hi = fd[o + d + 1] ?? -1;
      let x = lo < hi ? hi : lo + 1;
      let y = x - d;
      while (x < aHi && y < bHi && a[x] === b[y]) {
        x++;
        y++;
      }
      fd[o + d] = x;
      if (odd && bMin <= d && d <= bMax && (bd[o + d] ?? UNREACHED) <= x) return [x, y];
    }
    if (bMin > dMin) bd[o + --bMin - 1] = UNREACHED;
    else bMin++;
    if (bMax < dMax) bd[o + ++bMax + 1] = UNREACHED;
    else bMax--;
    for (let d = bMax; d >= bMin; d -= 2) {
      const lo = bd[o + d - 1] ?? UNREACHED;
      const hi = bd[o + d + 1] ?? UNREACHED;
      let x = lo < hi ? lo : hi - 1;
      let y = x - d;
      while (aLo < x && bLo < y && a[x - 1] === b[y - 1]) {
        x--;
        y--;
      }
      bd[o + d] = x;
      if (!odd && fMin <= d && d <= fMax && x <= (fd[o + d] ?? -1)) return [x, y];
    }
  }
}

/** Turns per-line change marks into maximal change runs, pairing the unchanged lines in order. */
function collectChanges(
  changedA: Uint8Array,
  changedB: Uint8Array,
  n: number,
  m: number,
): Change[] {
  const changes: Change[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && !changedA[i] && !changedB[j]) {
      i++;
      j++;
      continue;
    }
    const a = i;
    const b = j;
    while (i < n && changedA[i]) i++;
    while (j < m && changedB[j]) j++;
    if (i === a && j === b) {
      throw new Error(
        `unifiedDiff internal error: unchanged lines do not pair up at old line ${
          a + 1
        }, new line ${b + 1}; this is a bug`,
      );
    }
    changes.push({ a, aEnd: i, b, bEnd: j });
  }
  return changes;
}

/**
 * Renders changes as GNU hunks: changes whose gap is at most `2 * context` unchanged lines share a
 * hunk (their contexts overlap or touch), exactly as GNU's `find_hunk` groups them.
 */
function renderHunks(
  from: Side,
  to: Side,
  changes: readonly Change[],
  context: number,
  header: string,
): { text: string; added: number; removed: number } {
  const n = from.lines.length;
  const out: string[] = [header];
  let added = 0;
  let removed = 0;
  const emit = (prefix: string, side: Side, index: number): void => {
    out.push(prefix, side.lines[index] ?? "", "\n");
    if (!side.endsWithNewline && index === side.lines.length - 1) out.push(NO_NEWLINE_MARKER);
  };
  let first = 0;
  while (first < changes.length) {
    let last = first;
    while (last + 1 < changes.length) {
      const next = changes[last + 1];
      const current = changes[last];
      if (next === undefined || current === undefined || next.a - current.aEnd > 2 * context) break;
      last++;
    }
    const head = changes[first];
    const tail = changes[last];
    if (head === undefined || tail === undefined) break;
    const aStart = Math.max(0, head.a - context);
    const aEnd = Math.min(n, tail.aEnd + context);
    const bStart = head.b - (head.a - aStart);
    const bEnd = tail.bEnd + (aEnd - tail.aEnd);
    out.push(`@@ -${range(aStart, aEnd - aStart)} +${range(bStart, bEnd - bStart)} @@\n`);
    let cursor = aStart;
    for (let h = first; h <= last; h++) {
      const change = changes[h];
      if (change === undefined) continue;
      for (; cursor < change.a; cursor++) emit(" ", from, cursor);
      for (let i = change.a; i < change.aEnd; i++) emit("-", from, i);
      for (let j = change.b; j < change.bEnd; j++) emit("+", to, j);
      removed += change.aEnd - change.a;
      added += change.bEnd - change.b;
      cursor = change.aEnd;
    }
    for (; cursor < aEnd; cursor++) emit(" ", from, cursor);
    first = last + 1;
  }
  return { text: out.join(""), added, removed };
}

/**
 * GNU's `print_unidiff_number_range`: `l` for one line, `l,s` otherwise, and for an empty range the
 * line *before* it with `,0` (so `0,0` at the top of the file), which is what `patch` expects.
 */
function range(start: number, count: number): string {
  if (count === 0) return `${start},0`;
  if (count === 1) return `${start + 1}`;
  return `${start + 1},${count}`;
}
