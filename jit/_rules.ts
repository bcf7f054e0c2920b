/**
 * The rules of the JIT validator over swc's AST (DESIGN §7). Each finds a construct the sandbox
 * would otherwise have to stop alone; anything the rules cannot prove harmless is refused. The
 * AST is walked with an explicit stack (a deeply nested program must not overflow ours). The
 * names the rules look for are tables in `_rule_names.ts`; what an expression may compute (a
 * string built at run time, a route name, a prototype) is `_expressions.ts`.
 *
 * @module
 */
import type { SourceMap } from "./_source_map.ts";
import { type AstNode as Node, child, childrenOf, isNode, text, unwrap } from "./_ast.ts";
import { computedKeyProblem, isKeyName, isOpaque, reachesPrototype } from "./_expressions.ts";
import { Constants, foldString } from "./_fold.ts";
import { checkRunExport } from "./_run_export.ts";
import {
  COMPARISONS,
  DEFINERS,
  FORBIDDEN_GLOBALS,
  GLOBAL_OBJECTS,
  NAME_POSITIONS,
  NAMES_AS_DATA,
  PROTO_NAMES,
  REFLECTION,
  ROUTE_KEYS,
  TYPE_KEYS,
  TYPE_NODES,
} from "./_rule_names.ts";

/** The stable rule ids. */
export const JIT_RULES = [
  "parse_error",
  "too_large",
  "io_error",
  "import_forbidden",
  "import_attributes",
  "dynamic_import",
  "import_meta",
  "eval",
  "function_constructor",
  "constructor_access",
  "proto_access",
  "global_object",
  "forbidden_global",
  "computed_name",
  "dangerous_string",
  "reflection",
  "unicode_escape",
  "with_statement",
  "pragma",
  "run_export",
  "invisible_character",
] as const;
/** A rule id. */
export type JitRule = typeof JIT_RULES[number];

/** One finding: a rule, what it means, and where (1-based, UTF-16 columns). */
export interface JitViolation {
  readonly rule: JitRule;
  readonly message: string;
  readonly line: number;
  readonly column: number;
}

/** The checks of one program. */
export class RuleChecker {
  readonly #map: SourceMap;
  readonly #base: number;
  readonly #allowImports: ReadonlySet<string>;
  readonly #constants = new Constants();
  /** Expressions whose value is only compared (`key === "constructor"`): it goes nowhere. */
  readonly #compared = new WeakSet<Node>();
  /** Route-key strings kept as values: refused at the end if a computed lookup could take one. */
  readonly #routeValues: { readonly name: string; readonly node: Node }[] = [];
  /** The first lookup whose key the validator cannot know (`o[k]`, `o[a.b]`). */
  #opaqueKey: Node | undefined;
  readonly violations: JitViolation[] = [];

  constructor(map: SourceMap, base: number, allowImports: ReadonlySet<string>) {
    this.#map = map;
    this.#base = base;
    this.#allowImports = allowImports;
  }

  /** Reports a violation at a node's start (or the source's start). */
  report(rule: JitRule, message: string, node?: Node): void {
    const span = node?.span as { start?: unknown } | undefined;
    const start = typeof span?.start === "number" ? span.start - this.#base : 0;
    this.violations.push({ rule, message, ...this.#map.position(start) });
  }

  /** Walks the program. */
  check(program: Node): void {
    this.#collectConstants(program);
    const stack: { node: Node; at: string; inType: boolean }[] = [
      { node: program, at: "", inType: false },
    ];
    while (stack.length > 0) {
      const { node, at, inType } = stack.pop()!;
      // Types are erased before anything runs; only an `import("…")` type is looked at there.
      const typeOnly = inType || TYPE_NODES.includes(node.type) || node.declare === true;
      if (typeOnly) {
        if (node.type === "TsImportType") this.#typeImport(node);
      } else this.#visit(node, at);
      for (const [key, item] of childrenOf(node)) {
        stack.push({
          node: item,
          at: `${node.type}.${key}`,
          inType: typeOnly || TYPE_KEYS.includes(key),
        });
      }
    }
    this.#reportRouteValues();
  }

  /**
   * Names only where they can reach a lookup. A string is looked up by name only as the key of a
   * computed access (`o[k]`, `const { [k]: v } = o`): eval, `Function`, `Reflect`, `with`, the
   * reflection functions and `import()` — the other ways — are refused. So a string that equals
   * a route key (`"constructor"`, `"__proto__"`, …) is refused only when the program also has a
   * computed access whose key the validator cannot know (the string may flow into it through a
   * `let`, an array, an argument), and never where it is only compared (`k === "constructor"`,
   * `case "constructor":`). A global's name (`"Deno"`, `"eval"`) routes out only as a key of the
   * global object, which a tool cannot name; it is refused only as a key itself (`o["eval"]`).
   * What a tool builds at run time out of text the source does not spell as a value (a slice of
   * `f.toString()`, a comment's words) is the sandbox's to stop, as before: code generation from
   * strings is disabled there and `Deno` is gone.
   */
  #reportRouteValues(): void {
    const opaque = this.#opaqueKey;
    if (!opaque) return;
    const span = opaque.span as { start?: unknown } | undefined;
    const at = this.#map.position(typeof span?.start === "number" ? span.start - this.#base : 0);
    for (const { name, node } of this.#routeValues) {
      const leads = name === "constructor" ? "Function" : "prototypes";
      this.report(
        "dangerous_string",
        `the string ${
          JSON.stringify(name)
        } can reach a property lookup: this program looks a property up by a name known only at run time (line ${at.line}, column ${at.column}), and ${
          JSON.stringify(name)
        } there leads to ${leads}; compare against it directly (x === ${
          JSON.stringify(name)
        }) instead of keeping it as a value`,
        node,
      );
    }
  }

  /** Keeps a route-key string that is not only compared, for {@link #reportRouteValues}. */
  #routeValue(name: string, node: Node): void {
    if (ROUTE_KEYS.includes(name) && !this.#compared.has(node)) {
      this.#routeValues.push({ name, node });
    }
  }

  /** Records every `const` binding, so string-building can be folded through names. */
  #collectConstants(program: Node): void {
    const stack: Node[] = [program];
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (node.type === "VariableDeclaration" && node.kind === "const") {
        for (const d of Array.isArray(node.declarations) ? node.declarations : []) {
          if (isNode(d)) this.#constants.declare(d);
        }
      }
      for (const [, item] of childrenOf(node)) stack.push(item);
    }
  }

  #typeImport(node: Node): void {
    const specifier = text(child(node, "argument"), "value") ??
      text(child(child(node, "argument") ?? node, "value"), "value") ?? "";
    if (!this.#allowImports.has(specifier)) {
      this.report("import_forbidden", importAdvice(specifier, this.#allowImports), node);
    }
  }

  /** Keeps a string-building expression that spells a route key (see {@link #routeValue}). */
  #folded(node: Node): void {
    const value = foldString(node, this.#constants);
    if (value !== undefined) this.#routeValue(value, node);
  }

  #visit(node: Node, at: string): void {
    switch (node.type) {
      case "ImportDeclaration":
      case "ExportAllDeclaration":
      case "ExportNamedDeclaration":
        this.#importFrom(node);
        return;
      case "TsImportEqualsDeclaration":
        if (child(node, "moduleRef")?.type === "TsExternalModuleReference") {
          this.report(
            "import_forbidden",
            "`import … = require(…)` loads a module; tools import only allowlisted modules",
            node,
          );
        }
        return;
      case "CallExpression":
        this.#call(node);
        this.#folded(node);
        return;
      case "BinaryExpression":
        if (COMPARISONS.includes(String(node.operator))) {
          for (const side of ["left", "right"]) {
            const operand = child(node, side);
            if (operand) this.#compared.add(unwrap(operand));
          }
        }
        if (node.operator === "+") this.#folded(node);
        return;
      case "SwitchCase": {
        const test = child(node, "test");
        if (test) this.#compared.add(unwrap(test));
        return;
      }
      case "AssignmentExpression":
      case "UpdateExpression":
      case "UnaryExpression": {
        const target = node.type === "AssignmentExpression"
          ? child(node, "left")
          : node.type === "UpdateExpression" || node.operator === "delete"
          ? child(node, "argument")
          : undefined;
        if (target && reachesPrototype(target)) {
          this.report(
            "proto_access",
            "writing to a prototype changes every object built on it",
            node,
          );
        }
        return;
      }
      case "TaggedTemplateExpression": {
        const tag = child(node, "tag");
        const name = tag ? text(unwrap(tag), "value") : undefined;
        if (name === "setTimeout" || name === "setInterval") {
          this.report("eval", `\`${name}\` with a template runs a string`, node);
        }
        return;
      }
      case "KeyValueProperty": {
        const key = child(node, "key");
        if (key?.type !== "Computed" && PROTO_NAMES.includes(text(key, "value") ?? "")) {
          this.report("proto_access", "an object literal's `__proto__` sets its prototype", node);
        }
        return;
      }
      case "MetaProperty":
        if (node.kind === "import.meta") {
          this.report("import_meta", "`import.meta` reveals and reaches the tool's module", node);
        }
        return;
      case "WithStatement":
        this.report("with_statement", "`with` makes every name a computed lookup", node);
        return;
      case "Identifier":
        this.#identifier(node, at);
        return;
      case "MemberExpression":
      case "SuperPropExpression":
        this.#member(node);
        return;
      case "StringLiteral":
        this.#string(text(node, "value") ?? "", node, at);
        return;
      case "TemplateLiteral":
        if (this.#compared.has(node)) return;
        for (const quasi of Array.isArray(node.quasis) ? node.quasis : []) {
          const cooked = text(quasi, "cooked") ?? text(quasi, "raw");
          if (cooked !== undefined && isNode(quasi)) this.#string(cooked, quasi, at);
        }
        if (Array.isArray(node.expressions) && node.expressions.length > 0) this.#folded(node);
        return;
      case "KeyValuePatternProperty":
      case "AssignmentPatternProperty": {
        const key = child(node, "key");
        if (key?.type === "Computed") {
          const inner = child(key, "expression");
          if (inner) this.#computedKey(inner);
          return;
        }
        const name = text(key, "value");
        if (name !== undefined && REFLECTION.includes(name)) {
          this.#propertyName(name, node);
          return;
        }
        if (name === "constructor" || name === "__proto__") {
          this.report(
            name === "constructor" ? "constructor_access" : "proto_access",
            `destructuring \`${name}\` reaches an object's ${
              name === "constructor" ? "constructor (and from it Function)" : "prototype"
            }`,
            node,
          );
        }
        return;
      }
      default:
        return;
    }
  }

  #importFrom(node: Node): void {
    const source = child(node, "source");
    if (!source) return;
    const specifier = text(source, "value") ?? "";
    if (node.phase !== undefined && node.phase !== "evaluation") {
      this.report(
        "import_forbidden",
        `a \`${String(node.phase)}\` phase import of ${JSON.stringify(specifier)} is not allowed`,
        node,
      );
    }
    if (node.with !== null && node.with !== undefined) {
      this.report(
        "import_attributes",
        `import attributes (\`with { … }\`) load other kinds of modules (JSON, text); not allowed on ${
          JSON.stringify(specifier)
        }`,
        node,
      );
    }
    if (!this.#allowImports.has(specifier)) {
      this.report("import_forbidden", importAdvice(specifier, this.#allowImports), source);
    }
  }

  #call(node: Node): void {
    const callee = child(node, "callee");
    const method = callee?.type === "MemberExpression"
      ? text(child(callee, "property"), "value")
      : undefined;
    if (method !== undefined && DEFINERS.includes(method)) {
      const args = Array.isArray(node.arguments) ? node.arguments : [];
      const first = (args[0] as { expression?: unknown } | undefined)?.expression;
      if (isNode(first) && reachesPrototype(first)) {
        this.report(
          "proto_access",
          `\`${method}\` on a prototype changes every object built on it`,
          node,
        );
      }
    }
    if (callee?.type === "Import") {
      this.report("dynamic_import", "dynamic `import()` loads code at run time", node);
      return;
    }
    const bare = callee ? unwrap(callee) : undefined;
    const name = bare?.type === "Identifier" ? text(bare, "value") : undefined;
    if (name === "setTimeout" || name === "setInterval") {
      const args = Array.isArray(node.arguments) ? node.arguments : [];
      const first = (args[0] as { expression?: unknown } | undefined)?.expression;
      const kind = isNode(first) ? unwrap(first).type : "none";
      const callable = ["ArrowFunctionExpression", "FunctionExpression", "Identifier"];
      if (!callable.includes(kind) && kind !== "MemberExpression") {
        this.report("eval", `\`${name}\` with a non-function first argument runs a string`, node);
      }
    }
  }

  #identifier(node: Node, at: string): void {
    const name = text(node, "value") ?? "";
    const span = node.span as { start?: unknown; end?: unknown } | undefined;
    if (typeof span?.start === "number" && typeof span.end === "number") {
      const raw = this.#map.slice(span.start - this.#base, span.end - this.#base);
      if (raw.includes("\\")) {
        this.report(
          "unicode_escape",
          `the name ${JSON.stringify(name)} is spelled with escapes (${JSON.stringify(raw)})`,
          node,
        );
      }
    }
    // A name that becomes a string at run time (`Object.keys`, `.name`) is a value too.
    if (NAMES_AS_DATA.includes(at)) this.#routeValue(name, node);
    if (NAME_POSITIONS.includes(at)) {
      if (
        at === "MemberExpression.property" || at === "SuperPropExpression.property" ||
        at === "TsQualifiedName.right"
      ) {
        this.#propertyName(name, node);
      }
      return;
    }
    // A bare `constructor` (a namespace merged with a function rewrites it to `f.constructor`).
    if (name === "constructor" || PROTO_NAMES.includes(name)) {
      this.#propertyName(name, node);
      return;
    }
    if (name === "eval") this.report("eval", "`eval` runs a string as code", node);
    else if (name === "Function") {
      this.report("function_constructor", "`Function` builds code from a string", node);
    } else if (GLOBAL_OBJECTS.includes(name)) {
      this.report(
        "global_object",
        `\`${name}\` is the global object, from which every host API is reachable`,
        node,
      );
    } else if (FORBIDDEN_GLOBALS.includes(name)) {
      this.report(
        "forbidden_global",
        `\`${name}\` is a host API; a tool reaches the world only through libos syscalls`,
        node,
      );
    }
  }

  #propertyName(name: string, node: Node): void {
    if (name === "constructor") {
      this.report(
        "constructor_access",
        "`.constructor` leads from any function to `Function`, which builds code from a string",
        node,
      );
    } else if (PROTO_NAMES.includes(name)) {
      this.report("proto_access", `\`${name}\` reads or rewires prototypes`, node);
    } else if (REFLECTION.includes(name)) {
      this.report(
        "reflection",
        `\`${name}\` enumerates or reaches prototypes, and through them constructors`,
        node,
      );
    }
  }

  #member(node: Node): void {
    const property = child(node, "property");
    if (property?.type !== "Computed") return;
    const key = child(property, "expression");
    if (key) this.#computedKey(key);
  }

  /**
   * Checks a computed property key (of an access or a destructuring pattern): a name routing out
   * is refused, a key built at run time is refused, and a key the validator cannot know (a
   * variable, a member) is remembered (see {@link #reportRouteValues}).
   */
  #computedKey(key: Node): void {
    const folded = foldString(key, this.#constants);
    if (folded !== undefined && isKeyName(folded)) {
      this.#keyName(folded, key);
      const bare = unwrap(key);
      if (bare.type !== "StringLiteral" && bare.type !== "TemplateLiteral") {
        this.report(
          "dangerous_string",
          `this key is built from strings the source spells: it is ${JSON.stringify(folded)}`,
          key,
        );
      }
      return;
    }
    const problem = computedKeyProblem(key);
    if (problem === "built") {
      this.report(
        "computed_name",
        "a property name computed from strings or calls can spell any name; use a plain name or a literal",
        key,
      );
    } else if (problem !== undefined) this.#keyName(problem, key);
    // Even when a name folds to a harmless constant: folding ignores scope, and a parameter or a
    // `let` of the same name may hold anything (`const k = "x"; (o, k) => o[k]`).
    else if (isOpaque(key)) this.#opaqueKey ??= key;
  }

  /** Reports a lookup by a name routing out. */
  #keyName(name: string, key: Node): void {
    this.#propertyName(name, key);
    if (!ROUTE_KEYS.includes(name)) {
      this.report("dangerous_string", `the property name ${JSON.stringify(name)}`, key);
    }
  }

  #string(value: string, node: Node, at: string): void {
    // A module specifier is checked by the import rules.
    if (at.endsWith(".source") || at === "TsExternalModuleReference.expression") return;
    this.#routeValue(value, node);
  }
}

/** Why an import specifier is refused, and what would be allowed. */
function importAdvice(specifier: string, allowed: ReadonlySet<string>): string {
  const kind = specifier.startsWith("npm:")
    ? "an npm package"
    : specifier.startsWith("node:")
    ? "a Node built-in"
    : specifier.startsWith("jsr:")
    ? "a JSR package"
    : specifier.toLowerCase().startsWith("http:") || specifier.toLowerCase().startsWith("https:")
    ? "a remote module"
    : specifier.startsWith("file:") || specifier.startsWith("/")
    ? "a file"
    : specifier.startsWith("data:") || specifier.startsWith("blob:")
    ? "inline code"
    : specifier.startsWith(".")
    ? "a relative path"
    : "a module not on the allowlist";
  const list = [...allowed].map((s) => JSON.stringify(s)).join(", ") || "nothing";
  return `import of ${
    JSON.stringify(specifier)
  } (${kind}) is not allowed; tools may import exactly: ${list} (an operator adds one with --allow-import SPEC)`;
}

/** Markers of compiler pragmas that make Deno load or type other modules. */
const PRAGMAS: readonly string[] = Object.freeze([
  "@jsx",
  "@deno-types",
  "@ts-types",
  "<reference",
  "@ts-self-types",
]);

/**
 * Every violation in one parsed program: the rules over the AST, the `run` export, and the
 * pragma markers anywhere in the text (a comment is not in the AST).
 */
export function checkProgram(
  program: unknown,
  map: SourceMap,
  base: number,
  allowImports: ReadonlySet<string>,
): JitViolation[] {
  const checker = new RuleChecker(map, base, allowImports);
  if (!isNode(program)) {
    checker.report("parse_error", "the parser returned no program");
    return checker.violations;
  }
  checker.check(program);
  checkRunExport(program, (message, node) => checker.report("run_export", message, node));
  // Deno reads pragmas case-insensitively (ASCII only, so indices stay those of the source).
  const source = asciiLower(map.source);
  for (const marker of PRAGMAS) {
    for (let at = source.indexOf(marker); at >= 0; at = source.indexOf(marker, at + 1)) {
      checker.violations.push({
        rule: "pragma",
        message: `\`${marker}\` is a compiler pragma that can make Deno load another module`,
        ...map.positionOfIndex(at),
      });
    }
  }
  return checker.violations;
}

/** The text with ASCII letters lower-cased and everything else, lengths included, unchanged. */
function asciiLower(text: string): string {
  const units = new Array<string>(text.length);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    units[i] = unit >= 0x41 && unit <= 0x5a ? String.fromCharCode(unit + 32) : text[i]!;
  }
  return units.join("");
}
