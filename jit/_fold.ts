/**
 * Constant folding of strings for the JIT validator: what a string-building expression spells
 * when every part of it is written in the source — `"con" + "structor"`,
 * `["con", "structor"].join("")`, `` `con${"structor"}` ``, `"rotcurtsnoc".split("").reverse()
 * .join("")`, `String.fromCharCode(99, 111, …)`, and names bound by `const` to such values
 * (object properties of a `const` object literal included). Names are followed regardless of
 * scope (a parameter shadowing a `const` is taken for it: a refusal too many, on the safe side).
 * A value that arrives at run time (an argument, a file, a `let` built up in a loop) cannot be
 * folded: that is the sandbox's to stop (code generation from strings disabled, `Deno` gone).
 *
 * @module
 */

import { type AstNode, child, identifierName, isNode } from "./_ast.ts";

/** A folded value. */
type Value = string | number | readonly Value[];

/** How deep folding follows names and calls. */
const DEPTH_MAX = 16;
/** The longest string folding builds (longer cannot be a name that matters). */
const LENGTH_MAX = 256;

/** The `const` bindings of a program whose initialiser may fold, by name (`o.k` for members). */
export class Constants {
  readonly #bindings = new Map<string, AstNode>();
  readonly #ambiguous = new Set<string>();

  /** Records a `const` declarator (a second binding of the same name makes it unknown). */
  declare(declarator: AstNode): void {
    const name = identifierName(declarator.id);
    const init = child(declarator, "init");
    if (name === undefined || init === undefined) return;
    this.#bind(name, init);
    if (init.type === "ObjectExpression") {
      for (const property of Array.isArray(init.properties) ? init.properties : []) {
        if (!isNode(property) || property.type !== "KeyValueProperty") continue;
        const key = identifierName(property.key) ??
          (isNode(property.key) && property.key.type === "StringLiteral"
            ? String(property.key.value)
            : undefined);
        const value = child(property, "value");
        if (key !== undefined && value) this.#bind(`${name}.${key}`, value);
      }
    }
  }

  #bind(name: string, init: AstNode): void {
    if (this.#bindings.has(name)) this.#ambiguous.add(name);
    this.#bindings.set(name, init);
  }

  /** The initialiser bound to a name, when there is exactly one. */
  lookup(name: string): AstNode | undefined {
    return this.#ambiguous.has(name) ? undefined : this.#bindings.get(name);
  }
}

/** What a string-building expression spells, when the source spells all of it. */
export function foldString(expr: AstNode, constants: Constants): string | undefined {
  const value = fold(expr, constants, 0);
  return typeof value === "string" ? value : undefined;
}

function fold(expr: AstNode, constants: Constants, depth: number): Value | undefined {
  if (depth > DEPTH_MAX) return undefined;
  const next = (n: AstNode | undefined) => n ? fold(n, constants, depth + 1) : undefined;
  switch (expr.type) {
    case "StringLiteral":
      return typeof expr.value === "string" ? expr.value : undefined;
    case "NumericLiteral":
      return typeof expr.value === "number" ? expr.value : undefined;
    case "ParenthesisExpression":
    case "TsAsExpression":
    case "TsConstAssertion":
    case "TsNonNullExpression":
    case "TsSatisfiesExpression":
      return next(child(expr, "expression"));
    case "Identifier": {
      const bound = identifierName(expr) ? constants.lookup(identifierName(expr)!) : undefined;
      return next(bound);
    }
    case "MemberExpression": {
      const object = identifierName(expr.object);
      const property = identifierName(expr.property);
      if (object !== undefined && property !== undefined) {
        return next(constants.lookup(`${object}.${property}`));
      }
      return undefined;
    }
    case "TemplateLiteral": {
      const quasis = Array.isArray(expr.quasis) ? expr.quasis : [];
      const expressions = Array.isArray(expr.expressions) ? expr.expressions : [];
      let out = "";
      for (const [i, quasi] of quasis.entries()) {
        const cooked = isNode(quasi) ? quasi.cooked ?? quasi.raw : undefined;
        if (typeof cooked !== "string") return undefined;
        out += cooked;
        if (i < expressions.length) {
          const part = isNode(expressions[i]) ? next(expressions[i] as AstNode) : undefined;
          if (typeof part !== "string" && typeof part !== "number") return undefined;
          out += String(part);
        }
      }
      return short(out);
    }
    case "BinaryExpression": {
      if (expr.operator !== "+") return undefined;
      const left = next(child(expr, "left"));
      const right = next(child(expr, "right"));
      if (
        left === undefined || right === undefined || Array.isArray(left) || Array.isArray(right)
      ) {
        return undefined;
      }
      return typeof left === "number" && typeof right === "number"
        ? left + right
        : short(`${left}${right}`);
    }
    case "ArrayExpression": {
      const out: Value[] = [];
      for (const element of Array.isArray(expr.elements) ? expr.elements : []) {
        // Elements are `{ spread, expression }` wrappers without a type (null for a hole).
        const wrapper = element as { spread?: unknown; expression?: unknown } | null;
        const inner = isNode(wrapper?.expression) ? wrapper.expression : undefined;
        const value = wrapper?.spread ? undefined : next(inner);
        if (value === undefined) return undefined;
        out.push(value);
      }
      return out.length <= LENGTH_MAX ? out : undefined;
    }
    case "CallExpression":
      return call(expr, constants, depth);
    default:
      return undefined;
  }
}

function args(expr: AstNode, constants: Constants, depth: number): Value[] | undefined {
  const out: Value[] = [];
  for (const arg of Array.isArray(expr.arguments) ? expr.arguments : []) {
    const inner = arg as { spread?: unknown; expression?: unknown } | null;
    if (!inner || inner.spread || !isNode(inner.expression)) return undefined;
    const value = fold(inner.expression, constants, depth + 1);
    if (value === undefined) return undefined;
    out.push(value);
  }
  return out;
}

/** `String.fromCharCode`, and the string and array methods that rearrange what is written. */
function call(expr: AstNode, constants: Constants, depth: number): Value | undefined {
  const callee = child(expr, "callee");
  if (callee?.type !== "MemberExpression") return undefined;
  const method = identifierName(callee.property);
  const values = args(expr, constants, depth);
  if (method === undefined || values === undefined) return undefined;
  if (identifierName(callee.object) === "String" && method === "fromCharCode") {
    if (!values.every((v) => typeof v === "number")) return undefined;
    return short(String.fromCharCode(...(values as number[])));
  }
  const target = isNode(callee.object) ? fold(callee.object, constants, depth + 1) : undefined;
  if (target === undefined) return undefined;
  const [first, second] = values;
  if (Array.isArray(target)) {
    switch (method) {
      case "join":
        return short(target.map(String).join(typeof first === "string" ? first : ","));
      case "reverse":
        return [...target].reverse();
      case "concat":
        return [...target, ...values.flatMap((v) => Array.isArray(v) ? v : [v])];
      default:
        return undefined;
    }
  }
  if (typeof target !== "string") return undefined;
  switch (method) {
    case "concat":
      return short(target + values.map(String).join(""));
    case "split":
      return typeof first === "string" ? target.split(first).slice(0, LENGTH_MAX) : undefined;
    case "toLowerCase":
      return target.toLowerCase();
    case "toUpperCase":
      return target.toUpperCase();
    case "trim":
      return target.trim();
    case "slice":
    case "substring":
      return typeof first === "number" && (second === undefined || typeof second === "number")
        ? target[method](first, second)
        : undefined;
    case "replace":
    case "replaceAll":
      return typeof first === "string" && typeof second === "string"
        ? target[method](first, second)
        : undefined;
    default:
      return undefined;
  }
}

function short(text: string): string | undefined {
  return text.length <= LENGTH_MAX ? text : undefined;
}
