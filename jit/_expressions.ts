/**
 * What an expression of a tool's program may compute, as the validator's rules need to know it
 * (`_rules.ts`): whether a lookup key names a route out (a global, `Function`, a prototype),
 * whether an expression may build a string at run time, whether a computed key is unknown, and
 * whether a member chain goes through a prototype. Pure functions over swc's AST.
 *
 * @module
 */
import { type AstNode as Node, child, text, unwrap } from "./_ast.ts";
import { DANGEROUS_STRINGS, NUMERIC_OPERATORS, ROUTE_KEYS } from "./_rule_names.ts";

/** Whether a string, as the key of a lookup, names a route out (a global, Function, prototypes). */
export function isKeyName(value: string): boolean {
  return DANGEROUS_STRINGS.includes(value) || ROUTE_KEYS.includes(value);
}

/** Whether an expression holds a string literal or a template (it may build a string). */
export function buildsString(node: Node): boolean {
  const stack: Node[] = [node];
  while (stack.length > 0) {
    const current = unwrap(stack.pop()!);
    if (current.type === "StringLiteral" || current.type === "TemplateLiteral") return true;
    if (current.type === "BinaryExpression" || current.type === "ConditionalExpression") {
      for (const key of ["left", "right", "consequent", "alternate"]) {
        const next = child(current, key);
        if (next) stack.push(next);
      }
    }
  }
  return false;
}

/** Whether an expression is or goes through a `.prototype` (or `__proto__`) member. */
export function reachesPrototype(target: Node): boolean {
  let current: Node | undefined = unwrap(target);
  while (
    current && (current.type === "MemberExpression" || current.type === "SuperPropExpression")
  ) {
    const property = child(current, "property");
    const name = property?.type === "Computed"
      ? text(child(property, "expression"), "value")
      : text(property, "value");
    if (name === "prototype" || name === "__proto__") return true;
    const object: Node | undefined = child(current, "object");
    current = object ? unwrap(object) : undefined;
  }
  return false;
}

/**
 * What is wrong with a computed property key: `"built"` when it may build a string at run time,
 * the name when it is a literal naming a route out, undefined when it is harmless.
 */
export function computedKeyProblem(key: Node): string | undefined {
  const node = unwrap(key);
  switch (node.type) {
    case "StringLiteral": {
      const value = text(node, "value") ?? "";
      return isKeyName(value) ? value : undefined;
    }
    case "TemplateLiteral": {
      const expressions = Array.isArray(node.expressions) ? node.expressions : [];
      if (expressions.length > 0) return "built";
      const quasis = Array.isArray(node.quasis) ? node.quasis : [];
      const value = text(quasis[0], "cooked") ?? "";
      return isKeyName(value) ? value : undefined;
    }
    case "NumericLiteral":
    case "BigIntLiteral":
    case "Identifier":
    case "MemberExpression":
    case "UpdateExpression":
    case "PrivateName":
      return undefined;
    case "UnaryExpression":
      return ["-", "+", "~", "!", "void"].includes(String(node.operator)) ? undefined : "built";
    case "BinaryExpression": {
      const operator = String(node.operator);
      if (NUMERIC_OPERATORS.includes(operator)) return undefined;
      // `i + 1` indexes; `a + b` may join two strings into any name.
      const numeric = (side: string) => {
        const operand = child(node, side);
        return operand !== undefined && unwrap(operand).type === "NumericLiteral";
      };
      if (operator === "+" && !buildsString(node) && (numeric("left") || numeric("right"))) {
        return undefined;
      }
      return "built";
    }
    case "ConditionalExpression": {
      for (const branch of ["consequent", "alternate"]) {
        const next = child(node, branch);
        const problem = next ? computedKeyProblem(next) : undefined;
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    default:
      return "built";
  }
}

/** Whether a computed key's value is unknown to the validator: a variable or a member. */
export function isOpaque(key: Node): boolean {
  const node = unwrap(key);
  if (node.type === "Identifier" || node.type === "MemberExpression") return true;
  if (node.type !== "ConditionalExpression") return false;
  return ["consequent", "alternate"].some((branch) => {
    const next = child(node, branch);
    return next !== undefined && isOpaque(next);
  });
}
