/**
 * The mvdan-sh facade (step 2 of `shell_script.ts`): the few members of the library's `syntax`
 * namespace the analyser uses, typed accessors for the fields of its GopherJS nodes, the
 * operator numbers of this build learned from the library itself, and its lazy import with an
 * empty `process.env` in view. Parsing only: what a parsed script does is `_script_walker.ts`.
 *
 * @module
 */

/** The members of mvdan-sh's `syntax` namespace this module uses. */
export interface SyntaxApi {
  readonly NodeType: (node: object) => string;
  readonly Walk: (node: object, visit: (node: unknown) => boolean) => void;
  readonly parser: { readonly Parse: (source: string, name: string) => unknown };
}

/** Operator numbers of this mvdan-sh build, learned at load time from the library itself. */
export interface Operators {
  readonly redirect: ReadonlyMap<number, string>;
  readonly arithmeticTest: readonly number[];
  readonly variableTest: readonly number[];
}

/** Redirection operators, in the order of the calibration script in {@link calibrate}. */
const REDIRECT_OPERATORS: readonly string[] = Object.freeze([
  ">",
  ">>",
  "<",
  "<>",
  "<&",
  ">&",
  ">|",
  "<<<",
  "&>",
  "&>>",
  "<<",
  "<<-",
]);
const ARITHMETIC_TESTS: readonly string[] = Object.freeze([
  "-eq",
  "-ne",
  "-lt",
  "-le",
  "-gt",
  "-ge",
]);
/** Unary `[[ ]]` tests whose operand names a variable. */
export const VARIABLE_TESTS: readonly string[] = Object.freeze(["-v", "-R"]);

/** A node's field, whatever it holds. */
function field(node: object, key: string): unknown {
  return Reflect.get(node, key);
}

/** A node's child node, or null; throws when the field holds something else. */
export function child(node: object, key: string): object | null {
  const value = field(node, key);
  if (value === null || value === undefined) return null;
  if (typeof value !== "object") throw new TypeError(`mvdan-sh: field ${key} is not a node`);
  return value;
}

/** A node's list of child nodes (empty when absent); throws on a non-node. */
export function children(node: object, key: string): readonly object[] {
  const value = field(node, key);
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) throw new TypeError(`mvdan-sh: field ${key} is not a list`);
  return value.map((item: unknown) => {
    if (item === null || typeof item !== "object") {
      throw new TypeError(`mvdan-sh: ${key} holds a non-node`);
    }
    return item;
  });
}

/** A node's string field; throws on anything else. */
export function text(node: object, key: string): string {
  const value = field(node, key);
  if (typeof value !== "string") throw new TypeError(`mvdan-sh: field ${key} is not a string`);
  return value;
}

/** A node's boolean field (false unless exactly true). */
export function flag(node: object, key: string): boolean {
  return field(node, key) === true;
}

/** A node's operator number (`Op`). */
export function operator(node: object): number {
  const value = field(node, "Op");
  if (typeof value !== "number") throw new TypeError("mvdan-sh: field Op is not a number");
  return value;
}

/** Calls a zero-argument method of a GopherJS object, or returns undefined. */
export function call(target: unknown, method: string): unknown {
  if (target === null || typeof target !== "object") return undefined;
  const fn: unknown = Reflect.get(target, method);
  return typeof fn === "function" ? Reflect.apply(fn, target, []) : undefined;
}

/** `line:column` of a node, for reasons. */
export function where(node: object): string {
  try {
    const pos = call(node, "Pos");
    return `${String(call(pos, "Line"))}:${String(call(pos, "Col"))}`;
  } catch {
    return "?";
  }
}

/** A parse error's own message (`1:6: reached EOF without closing quote '`). */
export function describeParseError(error: unknown): string {
  if (error instanceof RangeError) return `nested too deeply for the parser (${error.message})`;
  try {
    const message = call(error, "Error");
    if (typeof message === "string") return message;
  } catch {
    // fall through to the generic description
  }
  return error instanceof Error ? error.message : String(error);
}

/** Quotes untrusted text for a reason, shortened. */
export function quote(value: string): string {
  const points = [...value];
  return JSON.stringify(points.length > 40 ? `${points.slice(0, 40).join("")}…` : value);
}

/** Narrows the imported module to the `syntax` namespace, or throws saying what is missing. */
export function syntaxOf(module: unknown): Record<string, unknown> {
  const root = Reflect.get(Object(module), "default") ?? module;
  const syntax: unknown = Reflect.get(Object(root), "syntax");
  if (syntax === null || typeof syntax !== "object") {
    throw new TypeError("the module has no `syntax` namespace");
  }
  for (const name of ["NodeType", "NewParser", "Walk", "Variant"]) {
    if (typeof Reflect.get(syntax, name) !== "function") {
      throw new TypeError(`syntax.${name} is not a function`);
    }
  }
  return syntax as Record<string, unknown>;
}

/** The typed {@link SyntaxApi} over the `syntax` namespace, with a Bash-grammar parser. */
export function facade(syntax: Record<string, unknown>): SyntaxApi {
  const invoke = (name: string, ...args: unknown[]): unknown => {
    const fn = syntax[name];
    if (typeof fn !== "function") throw new TypeError(`syntax.${name} is not a function`);
    return Reflect.apply(fn, syntax, args);
  };
  const parser: unknown = invoke("NewParser", invoke("Variant", syntax.LangBash));
  const parse: unknown = Reflect.get(Object(parser), "Parse");
  if (typeof parse !== "function") throw new TypeError("Parser.Parse is not a function");
  const nodeType = (node: object): string => {
    const kind = invoke("NodeType", node);
    if (typeof kind !== "string") throw new TypeError("syntax.NodeType returned a non-string");
    return kind;
  };
  return {
    NodeType: nodeType,
    Walk: (node, visit) => void invoke("Walk", node, visit),
    parser: { Parse: (source, name) => Reflect.apply(parse, parser, [source, name]) },
  };
}

/** Learns the operator numbers of this build by parsing scripts whose operators are known. */
export function calibrate(api: SyntaxApi): Operators {
  const file = (source: string) => api.parser.Parse(source, "") as object;
  const firstStmt = (source: string) => children(file(source), "Stmts")[0]!;
  const redirs = children(
    firstStmt(": >a >>a <a <>a <&0 >&1 >|a <<<a &>a &>>a <<E <<-F\nE\nF\n"),
    "Redirs",
  );
  const redirect = new Map<number, string>();
  redirs.forEach((node, index) => redirect.set(operator(node), REDIRECT_OPERATORS[index]!));
  const testOp = (op: string, unary: boolean) =>
    operator(child(child(firstStmt(unary ? `[[ ${op} a ]]` : `[[ 1 ${op} 1 ]]`), "Cmd")!, "X")!);
  const ops = {
    redirect,
    arithmeticTest: ARITHMETIC_TESTS.map((op) => testOp(op, false)),
    variableTest: VARIABLE_TESTS.map((op) => testOp(op, true)),
  };
  const distinct = new Set([...ops.arithmeticTest, ...ops.variableTest]).size;
  if (redirect.size !== REDIRECT_OPERATORS.length || distinct !== 8) {
    throw new TypeError("operator numbers are not distinct");
  }
  return ops;
}

/** Imports mvdan-sh with an empty `process.env` in view, restoring `process` afterwards. */
export async function importWithoutEnv(): Promise<unknown> {
  const saved = Object.getOwnPropertyDescriptor(globalThis, "process");
  const real: unknown = Reflect.get(globalThis, "process");
  const masking = real !== null && typeof real === "object";
  if (masking) {
    Object.defineProperty(globalThis, "process", {
      value: Object.create(real, { env: { value: {}, enumerable: true } }),
      configurable: true,
      writable: true,
      enumerable: saved?.enumerable ?? false,
    });
  }
  try {
    return await import("mvdan-sh");
  } finally {
    if (masking) {
      if (saved === undefined) Reflect.deleteProperty(globalThis, "process");
      else Object.defineProperty(globalThis, "process", saved);
    }
  }
}
