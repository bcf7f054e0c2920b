/**
 * Rendering pieces of the materializer: one-line descriptions and summaries (escaped), content
 * lines that cannot forge structure, and segment arithmetic.
 *
 * @module
 */
import type { Segment } from "./context_policy.ts";
import { escapePreview } from "../base/escape_preview.ts";
import type { ObjectInfo } from "./memory_object.ts";

/** `obj_… vN type "name" from source "label"`, every field escaped. */
export function describe(info: ObjectInfo): string {
  const name = info.name === null ? "" : ` ${quoted(info.name, 128)}`;
  return `${token(info.oid, 32)} v${info.version} ${token(info.type, 64)}${name} from ${
    token(info.provenance.source, 16)
  } ${quoted(info.provenance.label, 80)}`;
}

/** The first `maxChars` code points of `content`, whitespace collapsed; `more` if cut. */
export function summaryHead(content: string, maxChars: number): { head: string; more: boolean } {
  // A window of a few times the summary's length leaves enough after collapsing whitespace.
  const windowEnd = maxChars * 4 + 16;
  const window = content.slice(0, windowEnd).replace(/\s+/g, " ").trimStart();
  let end = 0;
  for (let count = 0; count < maxChars && end < window.length; count++) {
    const c = window.charCodeAt(end);
    const low = window.charCodeAt(end + 1);
    end += c >= 0xd800 && c <= 0xdbff && low >= 0xdc00 && low <= 0xdfff ? 2 : 1;
  }
  return { head: window.slice(0, end), more: end < window.length || content.length > windowEnd };
}

/** An unquoted field, one line, with no space that could pass for a field separator. */
export function token(text: string, maxChars: number): string {
  return escapePreview(String(text), { maxChars }).replaceAll(" ", "\\x20");
}

/** Quoted, one line: escapePreview doubles backslashes, so `\"` is unambiguous. */
export function quoted(text: string, maxChars: number, suffix = ""): string {
  const limit = Number.isFinite(maxChars) ? { maxChars } : {};
  return `"${escapePreview(String(text), limit).replaceAll('"', '\\"')}${suffix}"`;
}

/**
 * Content made safe to show as `| ` lines: every control character but TAB and LF (CR, VT, FF,
 * NEL, ESC…), U+2028/U+2029, bidi controls, zero-width, tag and variation-selector characters
 * (which can smuggle invisible instructions) and lone surrogates become visible escapes. ZWJ,
 * ZWNJ, VS15 and VS16 stay: scripts and emoji need them, and they carry no hidden text alone.
 */
export function escapeContent(content: string): string {
  return content.replace(
    /[[\p{Cc}--[\t\n]][\p{Default_Ignorable_Code_Point}--[\u200C\u200D\uFE0E\uFE0F]]\u2028\u2029\uFFF9-\uFFFB\p{Cs}]/gv,
    (ch) => {
      const cp = ch.codePointAt(0)!;
      if (cp === 0x0d) return "\\r";
      const hex = cp.toString(16).toUpperCase();
      return cp <= 0xff ? `\\x${hex.padStart(2, "0")}` : `\\u{${hex.padStart(4, "0")}}`;
    },
  );
}

/** Total characters of `segments`. */
export function length(segments: readonly Segment[]): number {
  let n = 0;
  for (const s of segments) n += s.text.length;
  return n;
}

/** The text of the prefix, then the body. */
export function joined(prefix: readonly Segment[], body: readonly Segment[]): string {
  let text = "";
  for (const s of prefix) text += s.text;
  for (const s of body) text += s.text;
  return text;
}

/** Characters of the previous text that start the next one, compared segment by segment. */
export function reused(before: readonly Segment[], after: readonly Segment[]): number {
  let n = 0;
  for (let i = 0; i < before.length && i < after.length; i++) {
    const a = before[i]!.text;
    const b = after[i]!.text;
    if (a !== b) {
      let j = 0;
      while (j < a.length && j < b.length && a.charCodeAt(j) === b.charCodeAt(j)) j++;
      return n + j;
    }
    n += a.length;
  }
  return n;
}
