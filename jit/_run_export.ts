/**
 * The entry point of a tool, as the validator and the harness (`_harness.js`) both read it: the
 * module's export named `run` when there is one, otherwise its default export. The forms models
 * write are accepted — `export function run`, `export async function run`,
 * `export const run = async (args, libos) => …`, `export const run = function …`,
 * `export default async function run`, `export default (args, libos) => …`, `export { run }` and
 * `export { handler as run }` of a local function or `const` — and the entry must be a function
 * written in the source (not a generator, at most two parameters). Anything else is refused
 * with what to write instead: a class, a `let` (it may hold anything when called), an import
 * or re-export (the function is another module's), a value computed by a call.
 *
 * @module
 */
import { type AstNode as Node, child, identifierName, isNode, text, unwrap } from "./_ast.ts";

/** What a top-level name is bound to. */
type Binding =
  | { readonly kind: "function"; readonly node: Node }
  | { readonly kind: "const"; readonly init: Node }
  | { readonly kind: "mutable" | "class" | "import" | "other" };

/** What an export names: a node, a local name to look up, or a reason it is refused. */
type Value =
  | { readonly kind: "node"; readonly node: Node }
  | { readonly kind: "local"; readonly name: string }
  | { readonly kind: "refuse"; readonly why: string };

/** The entry point as the module exports it. */
interface Entry {
  /** `run` or `default`. */
  readonly name: string;
  /** Where it is exported (for the finding's position). */
  readonly at: Node;
  readonly value: Value;
}

/** Reports a finding of the `run_export` rule. */
export type RunReport = (message: string, node?: Node) => void;

/** How to write an entry point: the sentence every refusal ends with. */
const RUN_ADVICE =
  "write `export async function run(args, libos) { … }` (or `export const run = async (args, libos) => …`)";

/** Why an entry that is another module's is refused. */
const FOREIGN = "comes from another module; define it in the tool's own source";

function items(node: Node, key: string): Node[] {
  const value = node[key];
  return Array.isArray(value) ? value.filter(isNode) : [];
}

/** A function node that exists at run time (not an overload signature or a `declare`). */
function hasBody(node: Node): boolean {
  return node.declare !== true && isNode(node.body);
}

/** The module's top-level bindings (exported declarations included). */
function bindingsOf(body: readonly Node[]): Map<string, Binding> {
  const bindings = new Map<string, Binding>();
  const bind = (name: string | undefined, binding: Binding) => {
    if (name !== undefined) bindings.set(name, binding);
  };
  for (const item of body) {
    const node = item.type === "ExportDeclaration" ? child(item, "declaration") : item;
    if (!node) continue;
    switch (node.type) {
      case "FunctionDeclaration":
        if (hasBody(node)) {
          bind(text(child(node, "identifier"), "value"), { kind: "function", node });
        }
        break;
      case "VariableDeclaration":
        if (node.declare === true) break;
        for (const declarator of items(node, "declarations")) {
          const init = child(declarator, "init");
          bind(
            identifierName(declarator.id),
            node.kind === "const" && init ? { kind: "const", init } : { kind: "mutable" },
          );
        }
        break;
      case "ClassDeclaration":
        bind(text(child(node, "identifier"), "value"), { kind: "class" });
        break;
      case "ImportDeclaration":
        for (const specifier of items(node, "specifiers")) {
          bind(text(child(specifier, "local"), "value"), { kind: "import" });
        }
        break;
      case "TsEnumDeclaration":
      case "TsModuleDeclaration":
        bind(text(child(node, "id"), "value"), { kind: "other" });
        break;
    }
  }
  return bindings;
}

/** The exported name of a specifier (`exported`, else `orig`). */
function exportedName(specifier: Node): string | undefined {
  const node = child(specifier, "exported") ?? child(specifier, "orig");
  return text(node, "value");
}

/** The module's `run` export, else its default export. */
function entryOf(body: readonly Node[]): Entry | undefined {
  let fallback: Entry | undefined;
  for (const item of body) {
    switch (item.type) {
      case "ExportDeclaration": {
        const declaration = child(item, "declaration");
        if (!declaration) break;
        if (declaration.type === "FunctionDeclaration" || declaration.type === "ClassDeclaration") {
          if (text(child(declaration, "identifier"), "value") !== "run") break;
          // `export declare function run` and a lone overload signature exist only as types.
          if (declaration.type === "FunctionDeclaration" && !hasBody(declaration)) break;
          return { name: "run", at: declaration, value: { kind: "node", node: declaration } };
        }
        // An enum or a namespace is a value too (an interface or a type alias is not).
        if (
          (declaration.type === "TsEnumDeclaration" ||
            declaration.type === "TsModuleDeclaration") &&
          declaration.declare !== true && text(child(declaration, "id"), "value") === "run"
        ) {
          return {
            name: "run",
            at: declaration,
            value: { kind: "refuse", why: "is not a function" },
          };
        }
        if (declaration.type === "VariableDeclaration" && declaration.declare !== true) {
          for (const declarator of items(declaration, "declarations")) {
            if (identifierName(declarator.id) === "run") {
              return { name: "run", at: declarator, value: { kind: "local", name: "run" } };
            }
          }
        }
        break;
      }
      case "ExportNamedDeclaration": {
        if (item.typeOnly === true) break;
        for (const specifier of items(item, "specifiers")) {
          if (specifier.isTypeOnly === true) continue;
          const name = exportedName(specifier);
          if (name !== "run" && name !== "default") continue;
          const local = specifier.type === "ExportSpecifier" && !child(item, "source")
            ? text(child(specifier, "orig"), "value")
            : undefined;
          const entry: Entry = {
            name,
            at: specifier,
            value: local === undefined
              ? { kind: "refuse", why: FOREIGN }
              : { kind: "local", name: local },
          };
          if (name === "run") return entry;
          fallback ??= entry;
        }
        break;
      }
      case "TsImportEqualsDeclaration":
        if (
          item.isExport === true && item.isTypeOnly !== true &&
          text(child(item, "id"), "value") === "run"
        ) {
          return { name: "run", at: item, value: { kind: "refuse", why: FOREIGN } };
        }
        break;
      case "ExportDefaultDeclaration": {
        const decl = child(item, "decl");
        if (decl && decl.type !== "TsInterfaceDeclaration") {
          fallback ??= { name: "default", at: item, value: { kind: "node", node: decl } };
        }
        break;
      }
      case "ExportDefaultExpression": {
        const expression = child(item, "expression");
        if (expression) {
          fallback ??= { name: "default", at: item, value: { kind: "node", node: expression } };
        }
        break;
      }
    }
  }
  return fallback;
}

/**
 * The function an entry evaluates to, or why it is none. Names are followed through `const`
 * bindings a few steps (`const run = handler`).
 */
function functionOf(value: Value, bindings: ReadonlyMap<string, Binding>): Node | string {
  let current = value;
  for (let step = 0; step < 8; step++) {
    if (current.kind === "refuse") return current.why;
    if (current.kind === "local") {
      const binding = bindings.get(current.name);
      switch (binding?.kind) {
        case "function":
          return binding.node;
        case "const":
          current = { kind: "node", node: binding.init };
          continue;
        case "mutable":
          return "is declared with `let` or `var`, so it may hold anything when called; declare it with `const` or as a function";
        case "class":
          return "is a class, which cannot be called; export a function";
        case "import":
          return "is imported from another module; define it in the tool's own source";
        default:
          return "is not a function declared in the tool's source";
      }
    }
    const node = unwrap(current.node);
    switch (node.type) {
      case "FunctionExpression":
      case "ArrowFunctionExpression":
      case "FunctionDeclaration":
        return node;
      case "Identifier":
        current = { kind: "local", name: text(node, "value") ?? "" };
        continue;
      case "ClassExpression":
      case "ClassDeclaration":
        return "is a class, which cannot be called; export a function";
      default:
        return "is computed by an expression, not written as a function";
    }
  }
  return "is a chain of names too long to follow; export the function itself";
}

/**
 * Checks that the program exports an entry point the harness can call (see the module's
 * summary), reporting each problem with what to write instead.
 */
export function checkRunExport(program: Node, report: RunReport): void {
  const body = items(program, "body");
  const entry = entryOf(body);
  if (!entry) {
    report(`a tool must export a function named \`run\` taking (args, libos); ${RUN_ADVICE}`);
    return;
  }
  const what = entry.name === "run" ? "`run`" : "the default export";
  const fn = functionOf(entry.value, bindingsOf(body));
  if (typeof fn === "string") {
    report(`${what} ${fn}; ${RUN_ADVICE}`, entry.at);
    return;
  }
  const params = Array.isArray(fn.params) ? fn.params : [];
  if (fn.generator === true) {
    report(`${what} must be a function, not a generator; ${RUN_ADVICE}`, fn);
  } else if (params.length > 2) {
    report(`${what} takes at most two parameters: (args, libos); ${RUN_ADVICE}`, fn);
  }
}
