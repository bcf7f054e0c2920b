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

/**
 * A node's children, with the key they sit under. Objects without a type (`{ spread, expression }`
 * of call arguments, the `function: { params, body }` of class methods and setters) and arrays
 * are looked through at any depth: a child missed here is code never checked.
 */
export function childrenOf(node: AstNode): [string, AstNode][] {
  const out: [string, AstNode][] = [];
  const pending: [string, unknown][] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key !== "span") pending.push([key, value]);
  }
  while (pending.length > 0) {
    const [key, value] = pending.pop()!;
    if (Array.isArray(value)) {
      for (const item of value) pending.push([key, item]);
    } else if (isNode(value)) out.push([key, value]);
    else if (typeof value === "object" && value !== null) {
      for (const [inner, item] of Object.entries(value)) {
        // The wrapper's own keys name where its content sits (`function.params`).
        if (inner !== "span") pending.push([inner === "expression" ? key : inner, item]);
      }
    }
  }
  return out;
}
