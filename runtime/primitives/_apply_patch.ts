/**
 * The patch formats `apply_patch` accepts, parsed strictly, and the hunk matcher — pure text, no
 * filesystem (the filesystem primitive decides, reads and writes; see `_fs_patch.ts`).
 *
 * Accepted formats:
 * 1. The Codex `apply_patch` envelope (what models trained on Codex emit):
 *    ```text
 *    *** Begin Patch
 *    *** Add File: path          then lines "+text" (the whole new file)
 *    *** Delete File: path
 *    *** Update File: path       then optional "*** Move to: new/path", then hunks:
 *    @@ optional context line    a hunk's lines start with " " (context), "-" or "+";
 *    ...                         "*** End of File" anchors the hunk at the end of the file
 *    *** End Patch
 *    ```
 *    As Codex does: the first hunk of a file may leave out its `@@` line, an empty line inside a
 *    hunk is an empty context line, and a wrapping heredoc (`<<'EOF'` … `EOF`) is taken off.
 * 2. A unified diff (`--- a/x`, `+++ b/x`, `@@ -l,n +l,n @@`; `/dev/null` adds or deletes).
 *
 * Anything else is a `patch_invalid` error naming the line and what was expected there.
 *
 * Matching follows Codex: each hunk's old lines are looked for from where the previous hunk
 * ended — exactly first, then ignoring trailing whitespace, then surrounding whitespace, then
 * typographic punctuation (dashes, quotes, no-break spaces) — and replaced by its new lines.
 * Unlike Codex, context lines keep the file's own text (a fuzzy match never rewrites them) and
 * the file's line endings (LF or CRLF) and final newline are kept.
 *
 * @module
 */
import { PatchError } from "../base/errors.ts";

/** One hunk of an update: where it is, what it replaces and with what. */
export interface PatchHunk {
  /** The `@@ text` line's text: the hunk starts after the first line matching it. */
  readonly context: string | null;
  /** Each line with its kind: " " context, "-" removed, "+" added. */
  readonly lines: readonly { readonly kind: " " | "-" | "+"; readonly text: string }[];
  /** `*** End of File`: the hunk ends at the end of the file. */
  readonly endOfFile: boolean;
  /** The patch line the hunk starts on (1-based), for errors. */
  readonly line: number;
}

/** One file operation of a patch. */
export type PatchOperation =
  | { readonly type: "add"; readonly path: string; readonly content: string; readonly line: number }
  | { readonly type: "delete"; readonly path: string; readonly line: number }
  | {
    readonly type: "update";
    readonly path: string;
    readonly moveTo: string | null;
    readonly hunks: readonly PatchHunk[];
    readonly line: number;
  };

/** A parsed patch. */
export interface ParsedPatch {
  readonly format: "codex" | "unified";
  readonly operations: readonly PatchOperation[];
}

const BEGIN = "*** Begin Patch";
const END = "*** End Patch";
// Without the space after the colon: a header whose path is missing still reads as that header.
const ADD = "*** Add File:";
const DELETE = "*** Delete File:";
const UPDATE = "*** Update File:";
const MOVE = "*** Move to:";
const EOF_MARK = "*** End of File";

/** A parse error at a patch line (1-based). */
function invalid(line: number, message: string): PatchError {
  return new PatchError("patch_invalid", `Patch line ${line}: ${message}; nothing was changed`, {
    line,
  });
}

/**
 * Parses a patch (either accepted format, told apart by its first line).
 * @throws {PatchError} `patch_invalid`, naming the line and what is expected there.
 */
export function parsePatch(text: string): ParsedPatch {
  if (typeof text !== "string" || text.trim() === "") {
    throw invalid(1, `the patch is empty; start it with "${BEGIN}"`);
  }
  const all = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  // Line numbers stay those of the text as given: `first` is the index of the first line kept.
  let first = 0;
  let last = all.length - 1;
  while (first <= last && all[first]!.trim() === "") first++;
  while (last >= first && all[last]!.trim() === "") last--;
  // A heredoc a model wrapped the patch in, as for a shell call (`<<'EOF'` … `EOF`).
  const heredoc = /^(?:apply_patch\s+)?<<\s*(['"]?)([A-Za-z_]+)\1\s*$/.exec(all[first]!.trim());
  if (heredoc && last > first && all[last]!.trim() === heredoc[2]) {
    first++;
    last--;
  }
  const lines = all.slice(first, last + 1);
  const at = (i: number) => first + i + 1;
  if (lines[0]?.trim().startsWith("--- ") || lines[0]?.startsWith("diff --git ")) {
    return { format: "unified", operations: parseUnified(lines, at) };
  }
  if (lines[0]?.trim() !== BEGIN) {
    throw invalid(
      at(0),
      `expected "${BEGIN}" (or a unified diff's "--- a/path" line), found ${quote(lines[0])}`,
    );
  }
  if (lines.length < 2 || lines[lines.length - 1]!.trim() !== END) {
    throw invalid(
      at(lines.length - 1),
      `the patch does not end with "${END}"; add it as the last line (after the last hunk)`,
    );
  }
  const operations: PatchOperation[] = [];
  let i = 1;
  const end = lines.length - 1;
  while (i < end) {
    const line = lines[i]!;
    const head = line.trim();
    if (head.startsWith(ADD)) {
      const path = pathOf(head, ADD, at(i));
      const start = i;
      const content: string[] = [];
      i++;
      while (i < end && !isHeader(lines[i]!)) {
        const l = lines[i]!;
        if (!l.startsWith("+")) {
          throw invalid(
            at(i),
            `expected a line of the new file "${path}" starting with "+", or the next "*** " header; found ${
              quote(l)
            }`,
          );
        }
        content.push(l.slice(1));
        i++;
      }
      operations.push({
        type: "add",
        path,
        content: content.length ? content.join("\n") + "\n" : "",
        line: at(start),
      });
    } else if (head.startsWith(DELETE)) {
      operations.push({ type: "delete", path: pathOf(head, DELETE, at(i)), line: at(i) });
      i++;
    } else if (head.startsWith(UPDATE)) {
      const path = pathOf(head, UPDATE, at(i));
      const start = i;
      i++;
      let moveTo: string | null = null;
      if (i < end && lines[i]!.trim().startsWith(MOVE)) {
        moveTo = pathOf(lines[i]!.trim(), MOVE, at(i));
        i++;
      }
      const hunks: PatchHunk[] = [];
      while (i < end && !isHeader(lines[i]!)) {
        const parsed = parseHunk(lines, i, end, hunks.length === 0, at, path);
        hunks.push(parsed.hunk);
        i = parsed.next;
      }
      if (hunks.length === 0 && moveTo === null) {
        throw invalid(
          at(start),
          `"${UPDATE} ${path}" has no hunks; add "@@" hunks with " ", "-" and "+" lines (or a "${MOVE}" line)`,
        );
      }
      operations.push({ type: "update", path, moveTo, hunks, line: at(start) });
    } else {
      throw invalid(
        at(i),
        `expected "${ADD} path", "${UPDATE} path", "${DELETE} path" or "${END}"; found ${
          quote(line)
        }`,
      );
    }
  }
  if (operations.length === 0) {
    throw invalid(at(1), `the patch changes no file; add an "*** Add/Update/Delete File:" section`);
  }
  return { format: "codex", operations };
}

/** Whether a line starts the next file section (or ends the patch). */
function isHeader(line: string): boolean {
  const t = line.trim();
  return t === END || t.startsWith(ADD) || t.startsWith(DELETE) || t.startsWith(UPDATE);
}

function pathOf(head: string, marker: string, line: number): string {
  const path = head.slice(marker.length).trim();
  if (path === "") throw invalid(line, `"${marker}" needs a path after it`);
  return path;
}

function quote(line: string | undefined): string {
  if (line === undefined) return "the end of the patch";
  return JSON.stringify(line.length > 120 ? line.slice(0, 120) + "…" : line);
}

/** One hunk of an update section, from line `i` (a `@@` line, or the first hunk's first line). */
function parseHunk(
  lines: readonly string[],
  start: number,
  end: number,
  firstOfFile: boolean,
  at: (i: number) => number,
  path: string,
): { hunk: PatchHunk; next: number } {
  let i = start;
  let context: string | null = null;
  const head = lines[i]!;
  if (head.trim() === "@@" || head.startsWith("@@ ")) {
    const ctx = head.trim() === "@@" ? "" : head.slice(3);
    context = ctx.trim() === "" ? null : ctx;
    i++;
  } else if (!firstOfFile) {
    throw invalid(
      at(i),
      `expected "@@" to start the next hunk of "${path}", or a "*** " header; found ${quote(head)}`,
    );
  }
  const body: { kind: " " | "-" | "+"; text: string }[] = [];
  let endOfFile = false;
  while (i < end) {
    const l = lines[i]!;
    if (isHeader(l) || l.trim() === "@@" || l.startsWith("@@ ")) break;
    if (l.trim() === EOF_MARK) {
      endOfFile = true;
      i++;
      break;
    }
    const kind = l[0];
    if (l === "") body.push({ kind: " ", text: "" });
    else if (kind === " " || kind === "-" || kind === "+") body.push({ kind, text: l.slice(1) });
    else {
      throw invalid(
        at(i),
        `expected a hunk line of "${path}" starting with " " (context), "-" (remove) or "+" (add); found ${
          quote(l)
        }`,
      );
    }
    i++;
  }
  if (body.length === 0) {
    throw invalid(
      at(start),
      `this hunk of "${path}" has no lines; give its " ", "-" and "+" lines`,
    );
  }
  return { hunk: { context, lines: body, endOfFile, line: at(start) }, next: i };
}

/** A unified diff's file sections (`--- a/x` / `+++ b/x` / `@@ -l,n +l,n @@` hunks). */
function parseUnified(lines: readonly string[], at: (i: number) => number): PatchOperation[] {
  const operations: PatchOperation[] = [];
  const strip = (raw: string): string | null => {
    const name = raw.replace(/\t.*$/, "").trim();
    if (name === "/dev/null") return null;
    return name.replace(/^[ab]\//, "");
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (
      line.startsWith("diff ") || line.startsWith("index ") || line.startsWith("new file mode") ||
      line.startsWith("deleted file mode") || line.startsWith("similarity index") ||
      line.trim() === ""
    ) {
      i++;
      continue;
    }
    if (!line.startsWith("--- ")) {
      throw invalid(at(i), `expected a unified diff's "--- a/path" line; found ${quote(line)}`);
    }
    const from = strip(line.slice(4));
    const start = i;
    i++;
    if (!lines[i]?.startsWith("+++ ")) {
      throw invalid(at(i), `expected "+++ b/path" after "--- ", found ${quote(lines[i])}`);
    }
    const to = strip(lines[i]!.slice(4));
    i++;
    if (from === null && to === null) throw invalid(at(start), `both sides are /dev/null`);
    const hunks: PatchHunk[] = [];
    let added: string[] | null = from === null ? [] : null;
    while (i < lines.length && lines[i]!.startsWith("@@")) {
      const m = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@(.*)$/.exec(lines[i]!);
      if (!m) {
        throw invalid(at(i), `expected "@@ -line,count +line,count @@"; found ${quote(lines[i])}`);
      }
      let oldLeft = m[1] === undefined ? 1 : Number(m[1]);
      let newLeft = m[2] === undefined ? 1 : Number(m[2]);
      const hunkStart = i;
      i++;
      const body: { kind: " " | "-" | "+"; text: string }[] = [];
      let endOfFile = false;
      while (oldLeft > 0 || newLeft > 0) {
        const l = lines[i];
        if (l === undefined) {
          throw invalid(
            at(i - 1),
            `the hunk ends early: ${oldLeft} old and ${newLeft} new lines are missing`,
          );
        }
        const kind = l === "" ? " " : l[0];
        if (kind === "\\") {
          i++;
          continue;
        }
        if (kind !== " " && kind !== "-" && kind !== "+") {
          throw invalid(
            at(i),
            `expected a hunk line starting with " ", "-" or "+"; found ${quote(l)}`,
          );
        }
        if (kind !== "+") oldLeft--;
        if (kind !== "-") newLeft--;
        if (oldLeft < 0 || newLeft < 0) {
          throw invalid(at(i), `the hunk has more lines than its "@@" header counts`);
        }
        body.push({ kind, text: l.slice(1) });
        i++;
      }
      while (lines[i]?.startsWith("\\")) {
        endOfFile = true;
        i++;
      }
      if (added) added.push(...body.filter((l) => l.kind === "+").map((l) => l.text));
      else hunks.push({ context: null, lines: body, endOfFile, line: at(hunkStart) });
    }
    if (from === null) {
      operations.push({
        type: "add",
        path: to!,
        content: added!.length ? added!.join("\n") + "\n" : "",
        line: at(start),
      });
      added = null;
    } else if (to === null) {
      operations.push({ type: "delete", path: from, line: at(start) });
    } else {
      if (hunks.length === 0 && from === to) {
        throw invalid(at(i), `"--- ${from}" has no "@@" hunks`);
      }
      operations.push({
        type: "update",
        path: from,
        moveTo: from === to ? null : to,
        hunks,
        line: at(start),
      });
    }
  }
  if (operations.length === 0) throw invalid(at(0), "the diff changes no file");
  return operations;
}

/** A file's text split into lines, remembering each line's ending. */
interface Lines {
  readonly text: string[];
  /** Whether each line ended with CRLF. */
  readonly crlf: boolean[];
  /** Whether the last line had a line ending. */
  readonly finalNewline: boolean;
  /** The ending new lines get: the file's dominant one. */
  readonly eol: "\n" | "\r\n";
}

function splitLines(content: string): Lines {
  const parts = content.split("\n");
  const finalNewline = content === "" || parts[parts.length - 1] === "";
  if (finalNewline) parts.pop();
  // Lines with an ending: all but an unterminated last one.
  const ended = finalNewline ? parts.length : parts.length - 1;
  const count = parts.slice(0, ended).filter((p) => p.endsWith("\r")).length;
  const eol = ended > 0 && count * 2 > ended ? "\r\n" : "\n";
  const crlf = parts.map((p, i) => (i < ended ? p.endsWith("\r") : eol === "\r\n"));
  const text = parts.map((p, i) => (i < ended && crlf[i] ? p.slice(0, -1) : p));
  return { text, crlf, finalNewline, eol };
}

/** Typographic punctuation models tend to normalise (or not), folded to ASCII for matching. */
function folded(s: string): string {
  return s.trim()
    .replace(/[\u2010-\u2015\u2212]/g, "-")
    .replace(/[\u2018\u2019\u201A\u201B]/g, "'")
    .replace(/[\u201C\u201D\u201E\u201F]/g, '"')
    .replace(/[\u00A0\u2002-\u200A\u202F\u205F\u3000]/g, " ");
}

const PASSES: readonly ((s: string) => string)[] = [
  (s) => s,
  (s) => s.trimEnd(),
  (s) => s.trim(),
  folded,
];

/**
 * A file's lines as each matching pass sees them, normalised once per pass (lazily: most hunks
 * match exactly, and a large file is not copied four times for nothing).
 */
function passesOver(lines: readonly string[]): (pass: number) => readonly string[] {
  const cache: (readonly string[] | undefined)[] = [lines];
  return (pass) => (cache[pass] ??= lines.map(PASSES[pass]!));
}

/** Where `pattern` occurs in the file at or after `from` (at the end first with `eof`), or -1. */
function seek(
  view: (pass: number) => readonly string[],
  pattern: readonly string[],
  from: number,
  eof: boolean,
): number {
  const total = view(0).length;
  if (pattern.length === 0) return from;
  if (pattern.length > total) return -1;
  for (let pass = 0; pass < PASSES.length; pass++) {
    const want = pattern.map(PASSES[pass]!);
    const have = view(pass);
    const matchAt = (i: number) => want.every((w, k) => have[i + k] === w);
    if (eof) {
      const i = total - pattern.length;
      if (i >= from && matchAt(i)) return i;
    }
    for (let i = from; i <= total - pattern.length; i++) if (matchAt(i)) return i;
  }
  return -1;
}

/**
 * Applies an update's hunks to a file's text, keeping its line endings and final newline.
 * @throws {PatchError} `patch_mismatch`: which hunk did not match where, and what to do.
 */
export function applyHunks(path: string, content: string, hunks: readonly PatchHunk[]): string {
  const file = splitLines(content);
  const lines = file.text;
  const view = passesOver(lines);
  // [start, old length, replacement lines (text, crlf)]
  const edits: [number, number, { text: string; crlf: boolean }[]][] = [];
  let cursor = 0;
  hunks.forEach((hunk, n) => {
    const where = () => `hunk ${n + 1} of "${path}" (patch line ${hunk.line})`;
    if (hunk.context !== null) {
      const found = seek(view, [hunk.context], cursor, false);
      if (found < 0) {
        throw new PatchError(
          "patch_mismatch",
          `${where()} did not match: its "@@ ${
            hunk.context.slice(0, 120)
          }" line was not found at or after line ${
            cursor + 1
          }; read the file again and copy that line exactly (or drop it); nothing was changed`,
          { line: hunk.line },
        );
      }
      cursor = found + 1;
    }
    let body = hunk.lines;
    let old = body.filter((l) => l.kind !== "+").map((l) => l.text);
    if (old.length === 0) {
      // Pure addition: after the context line, else at the end of the file.
      const at = hunk.context !== null ? cursor : lines.length;
      edits.push([at, 0, body.map((l) => ({ text: l.text, crlf: file.eol === "\r\n" }))]);
      return;
    }
    let found = seek(view, old, cursor, hunk.endOfFile);
    if (found < 0 && old[old.length - 1] === "") {
      // A trailing empty context line stands for the file's final newline (as in Codex).
      const lastOld = body.map((l) => l.kind).lastIndexOf(" ");
      if (lastOld >= 0 && body[lastOld]!.text === "") {
        body = body.filter((_, k) => k !== lastOld);
        old = body.filter((l) => l.kind !== "+").map((l) => l.text);
        found = seek(view, old, cursor, hunk.endOfFile);
      }
    }
    if (found < 0) {
      const shown = old.slice(0, 6).map((l) => `  ${JSON.stringify(l.slice(0, 160))}`).join("\n");
      throw new PatchError(
        "patch_mismatch",
        `${where()} did not match at or after line ${cursor + 1}${
          hunk.endOfFile ? " (anchored at the end of the file)" : ""
        }: these ${old.length} context/removed lines were not found in order:\n${shown}${
          old.length > 6 ? "\n  …" : ""
        }\nRead the file again and copy the " " and "-" lines exactly; nothing was changed`,
        { line: hunk.line },
      );
    }
    // Context lines keep the file's own text and ending; added lines get the file's ending.
    const out: { text: string; crlf: boolean }[] = [];
    let k = found;
    for (const l of body) {
      if (l.kind === " ") {
        out.push({ text: lines[k]!, crlf: file.crlf[k]! });
        k++;
      } else if (l.kind === "-") k++;
      else out.push({ text: l.text, crlf: file.eol === "\r\n" });
    }
    edits.push([found, old.length, out]);
    cursor = found + old.length;
  });
  const text = [...lines];
  const crlf = [...file.crlf];
  for (const [start, length, repl] of edits.sort((a, b) => b[0] - a[0])) {
    text.splice(start, length, ...repl.map((r) => r.text));
    crlf.splice(start, length, ...repl.map((r) => r.crlf));
  }
  // An unterminated last line stays unterminated; any other line keeps (or gets) its ending.
  const last = text.length - 1;
  return text.map((line, i) =>
    i < last || file.finalNewline ? line + (crlf[i] ? "\r\n" : "\n") : line
  ).join("");
}
