/**
 * Reading swc's AST, which arrives as plain JSON: what a node is, and its typed children and
 * string fields, without trusting the shape.
 *
 * @module
 */

import { TRANSPARENT } from "./_rule_names.ts";

/** An AST node as swc hands it over. */
export type AstNode = { readonly type: string; readonly [key: string]: unknown };

/** Whether a value is a node (an object with a string `type`). */
export function isNode(value: unknown): value is AstNode {
  return typeof value === "object" && value !== null && !Array.isArray(value) &&
    typeof (value as { type?: unknown }).type === "string";
}

/** A node's child under `key`, when it is a node. */
export function child(node: unknown, key: string): AstNode | undefined {
  const value = isNode(node) ? node[key] : undefined;
  return isNode(value) ? value : undefined;
}

/** A node's string field under `key`. */
export function text(node: unknown, key: string): string | undefined {
  const value = isNode(node) ? node[key] : undefined;
  return typeof value === "string" ? value : undefined;
}

/** The name of an Identifier node. */
export function identifierName(node: unknown): string | undefined {
  return isNode(node) && node.type === "Identifier" ? text(node, "value") : undefined;
}

/**
 * The expression inside the wrappers that do not change a value (`TRANSPARENT`: parentheses,
 * `as`, `satisfies`, non-null and type assertions).
 */
export function unwrap(node: AstNode): AstNode {
  let current = node;
  while (TRANSPARENT.includes(current.type)) {
    const inner = child(current, "expression");
    if (!inner) break;
    current = inner;
  }
  return current;
}
