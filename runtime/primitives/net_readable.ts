/**
 * Readable text from a fetched body, for a model (`fetch_url`): an HTML page as Markdown (links,
 * headings, lists, tables' text and code kept; scripts, styles and forms dropped), other text
 * (JSON, plain text, XML, CSS, JavaScript) as it came, and binary content (images, PDFs,
 * archives, fonts) described by its type and size only. The text produced is capped.
 *
 * HTML goes through `turndown` (a maintained HTML-to-Markdown converter; under Deno it parses with
 * its bundled `domino`, so no browser DOM is needed). Chosen over `node-html-markdown`, whose
 * conversion time grew quadratically on plain paragraphs here (a 424 KB page took 9 s). The
 * page is untrusted, so the conversion is bounded: at most {@link HTML_CONVERT_CHARS_MAX}
 * characters of HTML are converted (a measured 2–3 s at worst for deeply nested lists, ~0.5 s
 * for an ordinary page of that size), and a page nested deeper than
 * {@link HTML_DEPTH_MAX} elements — where the converter's recursion turns slow, then overflows
 * the stack — or one it fails on is reduced to its text by a hand-written linear scan instead.
 *
 * @module
 */
import TurndownService from "turndown";

/** How the body was made readable. */
export type ReadableFormat = "markdown" | "text" | "binary";

/** A body made readable. */
export interface Readable {
  readonly format: ReadableFormat;
  readonly text: string;
  /** Whether the text was cut (at `maxChars`, or the HTML at {@link HTML_CONVERT_CHARS_MAX}). */
  readonly cut: boolean;
  /** What a model should know about how it was made (binary, cut, reduced to text). */
  readonly note?: string;
}

/** Most characters of HTML converted to Markdown. */
export const HTML_CONVERT_CHARS_MAX = 512 * 1024;
/** Deepest element nesting converted to Markdown; deeper pages are reduced to text. */
export const HTML_DEPTH_MAX = 200;

/** Elements without an end tag (they never nest). */
const VOID = new Set([
  "area",
  "base",
  "br",
  "col",
  "embed",
  "hr",
  "img",
  "input",
  "link",
  "meta",
  "param",
  "source",
  "track",
  "wbr",
  "!doctype",
]);

/** Elements whose content is not page text. */
const DROPPED = new Set(["script", "style", "noscript", "template", "iframe", "object", "svg"]);

/** Text types that are returned as they came (beyond `text/*`). */
const TEXTUAL =
  /^application\/(?:json|ld\+json|xml|javascript|ecmascript|x-javascript|x-sh|x-yaml|yaml|toml|graphql|sql|x-ndjson|[a-z.+-]*\+(?:json|xml))$/;

/**
 * Makes a body readable by its `Content-Type` (sniffed when absent): HTML → Markdown, text → as
 * is, anything else → a description. `text` is cut at `maxChars`.
 */
export function readableBody(
  body: string,
  contentType: string | undefined,
  bytes: number,
  maxChars: number,
): Readable {
  const type = (contentType ?? "").slice(0, 200).split(";")[0]!.trim().toLowerCase();
  const html = type === "text/html" || type === "application/xhtml+xml" ||
    (type === "" && /^\s*(?:<!doctype html|<html[\s>])/i.test(body.slice(0, 512)));
  const texty = html || type.startsWith("text/") || TEXTUAL.test(type) || type === "";
  if (!texty || looksBinary(body)) {
    return {
      format: "binary",
      text: "",
      cut: false,
      note: `Binary content (${type || "unknown type"}, ${bytes} bytes) is not shown as text`,
    };
  }
  if (!html) return capped("text", body, maxChars, false, undefined);
  const source = body.length > HTML_CONVERT_CHARS_MAX
    ? body.slice(0, HTML_CONVERT_CHARS_MAX)
    : body;
  const sourceCut = source.length < body.length;
  const sourceNote = sourceCut
    ? `Only the first ${HTML_CONVERT_CHARS_MAX} characters of the page's HTML were converted`
    : undefined;
  if (depthOf(source) > HTML_DEPTH_MAX) {
    return capped(
      "text",
      textOf(source),
      maxChars,
      sourceCut,
      `The page nests elements deeper than ${HTML_DEPTH_MAX}: it was reduced to its text`,
    );
  }
  let markdown: string;
  try {
    markdown = converter().turndown(source);
  } catch {
    // The converter failed on this page (a stack it exhausted): its text is still readable.
    return capped(
      "text",
      textOf(source),
      maxChars,
      sourceCut,
      "The page could not be converted to Markdown: it was reduced to its text",
    );
  }
  // Trailing blanks (a `<br>`'s two spaces, a title's space) carry nothing a model reads.
  const tidy = markdown.split("\n").map((line) => line.trimEnd()).join("\n").trim();
  return capped("markdown", tidy, maxChars, sourceCut, sourceNote);
}

function capped(
  format: ReadableFormat,
  text: string,
  maxChars: number,
  already: boolean,
  note: string | undefined,
): Readable {
  const cut = text.length > maxChars;
  const notes = [
    ...(note ? [note] : []),
    ...(cut ? [`The text was cut at ${maxChars} of ${text.length} characters`] : []),
  ];
  return {
    format,
    text: cut ? text.slice(0, maxChars) : text,
    cut: cut || already,
    ...(notes.length ? { note: notes.join("; ") } : {}),
  };
}

/** A converter for one call (no module-level state). */
function converter(): TurndownService {
  const service = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    bulletListMarker: "-",
    emDelimiter: "*",
  });
  // Text is kept as written, not Markdown-escaped: a model reads it, and an escape inside a
  // known secret (`my\_key`) would hide it from the redaction that runs on the result.
  service.escape = (text: string) => text;
  service.remove((node: { readonly nodeName: string }) => DROPPED.has(node.nodeName.toLowerCase()));
  return service;
}

/** Whether decoded text is binary: a NUL, or mostly undecodable bytes, near its start. */
function looksBinary(text: string): boolean {
  const head = text.slice(0, 8_000);
  if (head.includes("\0")) return true;
  let bad = 0;
  for (const c of head) if (c === "\uFFFD") bad++;
  return head.length > 0 && bad / head.length > 0.1;
}

/** The deepest nesting of elements, counted from tags alone (one linear pass). */
function depthOf(html: string): number {
  let depth = 0;
  let deepest = 0;
  for (let at = html.indexOf("<"); at >= 0; at = html.indexOf("<", at + 1)) {
    const end = html.indexOf(">", at + 1);
    if (end < 0) break;
    const tag = html.slice(at + 1, Math.min(end, at + 32));
    const name = /^\/?([!a-zA-Z][a-zA-Z0-9-]*)/.exec(tag)?.[1]?.toLowerCase();
    if (name !== undefined && !name.startsWith("!") && !VOID.has(name)) {
      if (tag.startsWith("/")) depth = Math.max(0, depth - 1);
      else if (!html.slice(at, end).endsWith("/")) depth++;
      deepest = Math.max(deepest, depth);
    }
    at = end;
  }
  return deepest;
}

/** The text of HTML: tags removed, a few entities decoded, blank runs squeezed (linear). */
function textOf(html: string): string {
  let out = "";
  let at = 0;
  while (at < html.length) {
    const open = html.indexOf("<", at);
    if (open < 0) {
      out += html.slice(at);
      break;
    }
    out += html.slice(at, open);
    const close = html.indexOf(">", open + 1);
    if (close < 0) break;
    out += " ";
    at = close + 1;
  }
  const lines: string[] = [];
  for (const raw of decode(out).split("\n")) {
    const line = raw.replace(/[ \t\r\f\v\u00a0]+/g, " ").trim();
    // Blank runs become one blank line.
    if (line !== "" || (lines.length > 0 && lines.at(-1) !== "")) lines.push(line);
  }
  return lines.join("\n").trim();
}

/** The few entities a text fallback decodes. */
function decode(text: string): string {
  return text
    .replace(/&nbsp;/g, " ")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");
}
