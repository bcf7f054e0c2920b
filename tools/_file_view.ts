/**
 * How `read_text_file` shows a file to a model: numbered lines in the `cat -n` shape models are
 * trained on (the number right-aligned in six columns, a tab, the line), long lines cut with a
 * marker, the whole cut to fit what the broker hands a model, and a note saying which lines were
 * shown and how to read on. The JIT syscall `fs.read_text` returns the primitive's structured
 * answer instead (raw content and line range), for code that computes with it.
 *
 * @module
 */
import type { ToolValue } from "../runtime/broker/tool.ts";

/**
 * Characters of numbered content (as JSON text) a read shows at most: what fits, with its
 * envelope, in the 8,000 characters the tool broker hands a model by default.
 */
export const READ_VIEW_CHARS = 6500;

/** Characters of one line shown at most; the rest is replaced by a marker. */
export const LINE_VIEW_CHARS = 2000;

/** The primitive's read, as the view needs it. */
export interface ReadAnswer {
  readonly path: string;
  readonly content: string;
  readonly size: number;
  readonly truncated: boolean;
  readonly lines: { readonly first: number; readonly last: number; readonly total: number | null };
  readonly binary: { readonly type: string; readonly mime: string } | null;
}

/** One line as shown: its ending dropped (CRLF included), a long one cut with a marker. */
function shown(line: string): string {
  const text = line.replace(/\r?\n$/, "");
  return text.length <= LINE_VIEW_CHARS
    ? text
    : `${text.slice(0, LINE_VIEW_CHARS)}… [line cut: ${
      text.length - LINE_VIEW_CHARS
    } more characters; read it with a shell command if you need all of it]`;
}

/** The model's view of a read (see the module documentation). */
export function numberedView(read: ReadAnswer, budget = READ_VIEW_CHARS): ToolValue {
  if (read.binary) {
    return {
      path: read.path,
      size: read.size,
      binary: read.binary.type,
      mime: read.binary.mime,
      note: `"${read.path}" is ${
        read.binary.type === "binary" ? "a binary file" : `a ${read.binary.type} file`
      } (${read.size} bytes, ${read.binary.mime}), not text: its content is not shown`,
    };
  }
  const lines = read.content === "" ? [] : read.content.split(/(?<=\n)/);
  const first = read.lines.first;
  let content = "";
  let used = 0;
  let kept = 0;
  for (const line of lines) {
    const numbered = `${String(first + kept).padStart(6)}\t${shown(line)}\n`;
    const cost = JSON.stringify(numbered).length - 2;
    if (kept > 0 && used + cost > budget) break;
    content += numbered;
    used += cost;
    kept++;
  }
  const last = first + kept - 1;
  const total = read.lines.total;
  const more = kept < lines.length || read.truncated;
  const of = total === null ? `of a ${read.size}-byte file` : `of ${total}`;
  // The last line shown is itself cut when the read stopped inside it (a small max_bytes).
  const partial = more && kept === lines.length && !read.content.endsWith("\n");
  const note = read.size === 0
    ? "The file is empty."
    : kept === 0
    ? `Nothing shown from line ${first}: not even part of it fits in max_bytes; read with a larger max_bytes.`
    : more
    ? `Showing lines ${first}-${last} ${of}${
      partial ? ` (line ${last} cut at max_bytes)` : ""
    }; to read on, call read_text_file with offset=${last + 1}${
      partial ? ", or read again with a larger max_bytes" : ""
    }.`
    : `Showing lines ${first}-${last} ${of} (to the end of the file).`;
  return {
    path: read.path,
    content,
    lines: { first, last, total },
    size: read.size,
    truncated: more,
    note,
  };
}
