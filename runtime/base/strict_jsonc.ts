/**
 * Strict JSONC for configuration (DESIGN §8: `npm:jsonc-parser`, a depth limit, null-prototype
 * objects, zod after parsing): policy files and the user's `config.jsonc`. A size cap counted
 * before parsing, a linear depth pre-scan (the parser never recurses deeply on hostile input),
 * duplicate keys refused, then the caller's zod schema; every problem is a
 * {@link ValidationError} naming the file, line and column — a file is never half-applied.
 *
 * Wraps `npm:jsonc-parser` (pinned in `deno.json`) for the parse itself; the size cap, the depth
 * pre-scan and the duplicate-key check are hand-written because the parser has none of them.
 *
 * @module
 */
import { type Node, parseTree, printParseErrorCode } from "jsonc-parser";
import type { z } from "zod";
import { ValidationError } from "./errors.ts";

/** Bounds and wording of one kind of file. */
export interface StrictJsoncOptions {
  readonly maxBytes: number;
  readonly maxDepth: number;
  /** What the file should look like, for the message about an empty one. */
  readonly what: string;
}

function position(text: string, offset: number): string {
  let line = 1;
  let column = 1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === "\n") {
      line++;
      column = 1;
    } else column++;
  }
  return `${line}:${column}`;
}

/** A parsed JSONC tree as plain data: null-prototype objects, duplicate keys refused. */
function toValue(node: Node, text: string, source: string, depth: number, max: number): unknown {
  if (depth > max) {
    throw new ValidationError(
      `${source}:${position(text, node.offset)}: nested deeper than ${max}; this file is flat`,
    );
  }
  switch (node.type) {
    case "object": {
      const out: Record<string, unknown> = Object.create(null);
      for (const property of node.children ?? []) {
        const [keyNode, valueNode] = property.children ?? [];
        if (!keyNode || !valueNode) continue;
        const key = String(keyNode.value);
        if (Object.hasOwn(out, key)) {
          throw new ValidationError(
            `${source}:${position(text, keyNode.offset)}: the key ${
              JSON.stringify(key)
            } appears twice; remove one`,
          );
        }
        out[key] = toValue(valueNode, text, source, depth + 1, max);
      }
      return out;
    }
    case "array":
      return (node.children ?? []).map((child) => toValue(child, text, source, depth + 1, max));
    default:
      return node.value;
  }
}

/** The offset of the node at a zod issue path, for a line and column. */
function offsetOf(root: Node, path: readonly PropertyKey[]): number {
  let node: Node | undefined = root;
  for (const key of path) {
    if (!node) break;
    if (node.type === "object") {
      const property: Node | undefined = node.children?.find((p) => p.children?.[0]?.value === key);
      node = property?.children?.[1];
    } else if (node.type === "array" && typeof key === "number") {
      node = node.children?.[key];
    } else break;
  }
  return node?.offset ?? root.offset;
}

/**
 * Parses `text` (from `source`, for messages) as strict JSONC and validates it with `schema`.
 * @throws {ValidationError} naming the file, line and column, for anything wrong.
 */
export function parseStrictJsonc<T extends z.ZodType>(
  text: string,
  source: string,
  schema: T,
  options: StrictJsoncOptions,
): z.output<T> {
  if (typeof text !== "string") throw new TypeError(`${source} must be text`);
  const bytes = new TextEncoder().encode(text).length;
  if (bytes > options.maxBytes) {
    throw new ValidationError(
      `${source} is ${bytes} bytes; this file may be at most ${options.maxBytes}`,
    );
  }
  if (text.trim() === "") throw new ValidationError(`${source} is empty; ${options.what}`);
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") {
      if (++depth > options.maxDepth + 2) {
        throw new ValidationError(
          `${source}:${
            position(text, i)
          }: nested deeper than ${options.maxDepth}; this file is flat`,
        );
      }
    } else if (c === "}" || c === "]") depth--;
  }
  const errors: { error: number; offset: number; length: number }[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length || !root) {
    const first = errors[0];
    throw new ValidationError(
      first
        ? `${source}:${position(text, first.offset)}: ${
          printParseErrorCode(first.error)
        }; fix the JSONC there`
        : `${source} is empty; ${options.what}`,
    );
  }
  const parsed = schema.safeParse(toValue(root, text, source, 0, options.maxDepth));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ValidationError(
      `${source}:${position(text, offsetOf(root, issue.path))}: ${
        issue.path.length ? `${issue.path.map(String).join(".")}: ` : ""
      }${issue.message}`,
    );
  }
  return parsed.data;
}
