/**
 * Text handling of the filesystem primitive that touches no file: telling a binary file from a
 * text one, choosing a range of lines, and applying a list of exact-text edits (the way models
 * write them: copied from a numbered view, with CRLF files edited through LF text).
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";
import { cutUtf8 } from "./_fs_support.ts";

/** What a binary file was recognised as. */
export type BinaryKind = {
  /** A short name (`png`, `pdf`, `elf`…), or `binary` for unrecognised bytes. */
  readonly type: string;
  readonly mime: string;
};

/** Magic numbers of common binary formats: type, MIME type, bytes, and where they sit. */
const MAGIC: readonly (readonly [string, string, readonly number[], number])[] = [
  ["png", "image/png", [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 0],
  ["jpeg", "image/jpeg", [0xff, 0xd8, 0xff], 0],
  ["gif", "image/gif", [0x47, 0x49, 0x46, 0x38], 0],
  ["webp", "image/webp", [0x57, 0x45, 0x42, 0x50], 8],
  ["pdf", "application/pdf", [0x25, 0x50, 0x44, 0x46, 0x2d], 0],
  ["zip", "application/zip", [0x50, 0x4b, 0x03, 0x04], 0],
  ["zip", "application/zip", [0x50, 0x4b, 0x05, 0x06], 0],
  ["gzip", "application/gzip", [0x1f, 0x8b], 0],
  ["xz", "application/x-xz", [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00], 0],
  ["7z", "application/x-7z-compressed", [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c], 0],
  ["tar", "application/x-tar", [0x75, 0x73, 0x74, 0x61, 0x72], 257],
  ["elf", "application/x-elf", [0x7f, 0x45, 0x4c, 0x46], 0],
  ["mach-o", "application/x-mach-binary", [0xcf, 0xfa, 0xed, 0xfe], 0],
  ["mach-o", "application/x-mach-binary", [0xfe, 0xed, 0xfa, 0xcf], 0],
  ["java-class", "application/java-vm", [0xca, 0xfe, 0xba, 0xbe], 0],
  ["wasm", "application/wasm", [0x00, 0x61, 0x73, 0x6d], 0],
  ["sqlite", "application/vnd.sqlite3", [
    0x53,
    0x51,
    0x4c,
    0x69,
    0x74,
    0x65,
    0x20,
    0x66,
    0x6f,
    0x72,
    0x6d,
    0x61,
    0x74,
  ], 0],
  ["mp4", "video/mp4", [0x66, 0x74, 0x79, 0x70], 4],
  ["mp3", "audio/mpeg", [0x49, 0x44, 0x33], 0],
  ["ico", "image/x-icon", [0x00, 0x00, 0x01, 0x00], 0],
  ["exe", "application/vnd.microsoft.portable-executable", [0x4d, 0x5a, 0x90, 0x00], 0],
];

/** How far into a file a NUL byte marks it binary (as git and ripgrep look). */
const NUL_WINDOW = 8192;

/**
 * What a file's first bytes say it is: a known binary format, `binary` for NUL bytes or bytes
 * that are not UTF-8, or undefined for text. `cut` says the bytes stop before the file does (a
 * code point split at the end is then not held against it).
 */
export function binaryKind(bytes: Uint8Array, cut: boolean): BinaryKind | undefined {
  for (const [type, mime, magic, at] of MAGIC) {
    if (bytes.length >= at + magic.length && magic.every((b, i) => bytes[at + i] === b)) {
      return { type, mime };
    }
  }
  if (bytes.subarray(0, NUL_WINDOW).includes(0)) {
    return { type: "binary", mime: "application/octet-stream" };
  }
  try {
    // Streaming: a code point split by the cut is not held against the file.
    new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: cut });
  } catch {
    return { type: "binary", mime: "application/octet-stream" };
  }
  return undefined;
}

/** A range of a text's lines. */
export interface LineRange {
  /** The lines, each with its own line ending. */
  readonly content: string;
  /** 1-based number of the first line returned (the offset asked for). */
  readonly first: number;
  /** Number of the last line returned (`first - 1` when none). */
  readonly last: number;
  /** Lines in the whole text, null when the text read is not the whole file. */
  readonly total: number | null;
  /** Where the range starts in the text (a character index). */
  readonly start: number;
}

/** What a read returns (the primitive's and its syscall's structured answer). */
export type ReadResult = {
  /** Workspace-relative. */
  readonly path: string;
  /** Raw text (no line numbers); empty for a binary file. */
  readonly content: string;
  /** Bytes of `content`. */
  readonly bytes: number;
  /** The file's size in bytes. */
  readonly size: number;
  /** The file goes on past what `content` holds. */
  readonly truncated: boolean;
  /** Which lines `content` holds (`total` null when unknown); null for a binary file. */
  readonly lines: {
    readonly first: number;
    readonly last: number;
    readonly total: number | null;
  } | null;
  /** What a binary file was recognised as; null for text. */
  readonly binary: BinaryKind | null;
};

/** The lines of `text`, each keeping its ending; a final unterminated piece is a line too. */
export function splitLines(text: string): string[] {
  const lines = text.split(/(?<=\n)/);
  if (lines.length === 1 && lines[0] === "") return [];
  return lines;
}

/**
 * Lines `offset` to `offset + limit - 1` of `text`. `complete` says `text` is the whole file
 * (else its last piece may be a partial line, which is not returned unless it is the only one,
 * and the total is unknown).
 * @throws {ValidationError} for an offset past the last line, naming how many lines there are.
 */
export function lineRange(
  text: string,
  complete: boolean,
  path: string,
  offset: number,
  limit: number | undefined,
): LineRange {
  const all = splitLines(text);
  // A partial last line is left out, unless it is all there is (one huge line is shown cut).
  if (!complete && all.length > 1 && !all[all.length - 1]!.endsWith("\n")) all.pop();
  const total = complete ? all.length : null;
  if (offset > Math.max(all.length, 1)) {
    throw new ValidationError(
      complete
        ? `Cannot read "${path}" from line ${offset}: it has ${all.length} line${
          all.length === 1 ? "" : "s"
        }; use an offset from 1 to ${Math.max(all.length, 1)}`
        : `Cannot read "${path}" from line ${offset}: only its first ${all.length} lines are within the bytes a read scans; search it with grep, or read it with a shell command`,
    );
  }
  const chosen = all.slice(offset - 1, limit === undefined ? undefined : offset - 1 + limit);
  const start = all.slice(0, offset - 1).reduce((n, line) => n + line.length, 0);
  return {
    content: chosen.join(""),
    first: offset,
    last: offset - 1 + chosen.length,
    total,
    start,
  };
}

/**
 * The whole lines of a range that fit in `maxBytes` of UTF-8; when not even the first does, that
 * line cut on a code point boundary. `capped` says something was left out.
 */
export function capLines(
  range: LineRange,
  maxBytes: number,
): { content: string; last: number; capped: boolean } {
  const encoder = new TextEncoder();
  if (encoder.encode(range.content).length <= maxBytes) {
    return { content: range.content, last: range.last, capped: false };
  }
  let content = "";
  let bytes = 0;
  let last = range.first - 1;
  for (const line of splitLines(range.content)) {
    const size = encoder.encode(line).length;
    if (bytes + size > maxBytes) break;
    content += line;
    bytes += size;
    last++;
  }
  if (last < range.first) {
    const cut = cutUtf8(encoder.encode(range.content), maxBytes);
    return { content: new TextDecoder().decode(cut), last: range.first, capped: true };
  }
  return { content, last, capped: true };
}

/** One exact-text edit. */
export interface TextEdit {
  readonly oldString: string;
  readonly newString: string;
  readonly replaceAll?: boolean;
}

/** Occurrences of `needle` in `haystack` (non-overlapping, as a replacement sees them). */
function count(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

/** The 1-based line at which index `at` of `text` sits. */
function lineAt(text: string, at: number): number {
  return count(text.slice(0, at), "\n") + 1;
}

/** `text` with trailing spaces and tabs removed from every line and CRLF read as LF. */
function loose(text: string): string {
  return text.replace(/\r\n/g, "\n").replace(/[ \t]+$/gm, "");
}

/** A view's line-number prefix (`    12\t`), as a model copies it from read_text_file. */
const NUMBERED = /^ *\d+\t/;

/** Why `old` does not occur in `content`, with what to do about it. */
function notFound(path: string, which: string, content: string, old: string): ValidationError {
  const lines = old.split("\n");
  let hint = "read the file again and copy the exact text (whitespace and line breaks included)";
  if (lines.length > 0 && lines.every((l) => NUMBERED.test(l))) {
    hint =
      "it carries read_text_file's line numbers (the number and tab before each line): copy only the text after the tab";
  } else {
    const at = loose(content).indexOf(loose(old));
    if (at >= 0 && loose(old).length > 0) {
      hint = `it matches near line ${
        lineAt(loose(content), at)
      } only when trailing whitespace (or CRLF line endings) is ignored: copy the exact text from the file, trailing spaces included`;
    }
  }
  return new ValidationError(`Cannot edit "${path}": ${which} was not found in it; ${hint}`);
}

/** How a refusal names edit `i`. */
function named(edits: readonly TextEdit[], i: number): string {
  return edits.length === 1 ? "old_string" : `edits[${i}].old_string`;
}

/**
 * Refuses a list of edits that could never apply, whatever the file holds: none, an empty
 * `old_string`, or one identical to its `new_string`.
 * @throws {ValidationError} naming the edit and what to do.
 */
export function checkEdits(path: string, edits: readonly TextEdit[]): void {
  if (edits.length === 0) {
    throw new ValidationError(
      `Cannot edit "${path}": no edit was given; pass old_string and new_string, or edits: [{old_string, new_string}]`,
    );
  }
  edits.forEach((edit, i) => {
    if (typeof edit.oldString !== "string" || edit.oldString.length === 0) {
      throw new ValidationError(
        `Cannot edit "${path}": ${
          named(edits, i)
        } is empty; copy the exact text to replace from the file (to write a whole file, use write_text_file)`,
      );
    }
    if (typeof edit.newString !== "string" || edit.oldString === edit.newString) {
      throw new ValidationError(
        `Cannot edit "${path}": ${
          named(edits, i)
        } and its new_string are identical (or new_string is missing), so the edit changes nothing; give the text it should become`,
      );
    }
  });
}

/**
 * Applies `edits` in order to `content` (each to the result of the ones before), exact text
 * only. A file whose line endings are all CRLF is edited through LF text: an `old_string` and
 * `new_string` written with LF are matched and written with CRLF, so the file keeps its endings.
 * @throws {ValidationError} naming the edit that cannot apply (empty, no-op, not found — with a
 *   hint when it matches after trimming trailing whitespace or carries line numbers — or
 *   ambiguous without `replaceAll`) and what to do; nothing is applied then.
 */
export function applyEdits(
  path: string,
  content: string,
  edits: readonly TextEdit[],
): { content: string; replacements: number } {
  checkEdits(path, edits);
  const crlf = content.includes("\r\n") && !/(^|[^\r])\n/.test(content);
  const ending = (s: string) => crlf ? s.replace(/\r?\n/g, "\r\n") : s;
  let text = content;
  let replacements = 0;
  edits.forEach((edit, i) => {
    const which = named(edits, i);
    const old = ending(edit.oldString);
    const found = count(text, old);
    if (found === 0) throw notFound(path, which, text, edit.oldString);
    if (found > 1 && edit.replaceAll !== true) {
      throw new ValidationError(
        `Cannot edit "${path}": ${which} occurs ${found} times (first near line ${
          lineAt(text, text.indexOf(old))
        }); add surrounding lines to make it unique, or set replace_all: true to change all ${found}`,
      );
    }
    const replacement = ending(edit.newString);
    text = edit.replaceAll === true
      ? text.split(old).join(replacement)
      : text.replace(old, () => replacement);
    replacements += edit.replaceAll === true ? found : 1;
  });
  return { content: text, replacements };
}
