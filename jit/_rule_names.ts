/**
 * The name tables of the JIT validator's rules (`_rules.ts`): globals, host APIs, route-out
 * strings, reflection functions, and where in swc's AST a name is not a reference.
 *
 * @module
 */

/** Names that reach the global object. */
export const GLOBAL_OBJECTS: readonly string[] = Object.freeze([
  "globalThis",
  "self",
  "window",
  "global",
  "frames",
  "parent",
  "top",
  "opener",
  // Methods and handlers of the global object: the target of an event they see is globalThis.
  "addEventListener",
  "removeEventListener",
  "dispatchEvent",
  "reportError",
  "onerror",
  "onunhandledrejection",
  "onrejectionhandled",
  "onload",
  "onunload",
  "onbeforeunload",
  // Unbound EventTarget methods fall back to the global object.
  "EventTarget",
  "Window",
]);

/** `Object.<name>` functions that enumerate or reach prototypes (and from them constructors). */
export const REFLECTION: readonly string[] = Object.freeze([
  "getOwnPropertyNames",
  "getOwnPropertyDescriptor",
  "getOwnPropertyDescriptors",
  "getOwnPropertySymbols",
  "getPrototypeOf",
  "setPrototypeOf",
]);

/** Legacy accessors that rewire or read prototypes. */
export const PROTO_NAMES: readonly string[] = Object.freeze([
  "__proto__",
  "__defineGetter__",
  "__defineSetter__",
  "__lookupGetter__",
  "__lookupSetter__",
]);

/** Host APIs a tool reaches only through syscalls (and names of other runtimes). */
export const FORBIDDEN_GLOBALS: readonly string[] = Object.freeze([
  "Deno",
  "WebAssembly",
  "Worker",
  "SharedWorker",
  "SharedArrayBuffer",
  "Atomics",
  "Reflect",
  "process",
  "require",
  "module",
  "exports",
  "Bun",
  "importScripts",
  "fetch",
  "WebSocket",
  "WebSocketStream",
  "XMLHttpRequest",
  "EventSource",
  "BroadcastChannel",
  "caches",
  "localStorage",
  "sessionStorage",
  "indexedDB",
  "navigator",
  "prompt",
  "alert",
  "confirm",
  "close",
  "postMessage",
  "onmessage",
]);

/**
 * Strings that name a route out when used as a property or a global's name: refused as the key
 * of a lookup (`o["eval"]`). Elsewhere only {@link ROUTE_KEYS} matter (see `_rules.ts`): a
 * global's name as a value (`name === "Deno"`, `console.log("eval")`) reaches nothing, since the
 * only object it names a route on is the global object, which a tool cannot name.
 */
export const DANGEROUS_STRINGS: readonly string[] = Object.freeze([
  "constructor",
  "__proto__",
  "eval",
  "Function",
  "Deno",
  "globalThis",
  "WebAssembly",
  "Reflect",
  "SharedArrayBuffer",
  "Atomics",
  "Worker",
  "importScripts",
  "require",
]);

/**
 * Property names that lead from any object to `Function` or to prototypes: a string holding one
 * is refused wherever it may flow into a computed lookup (see `_rules.ts`).
 */
export const ROUTE_KEYS: readonly string[] = Object.freeze([
  "constructor",
  ...PROTO_NAMES,
  ...REFLECTION,
]);

/** Comparison operators: their operands are compared, never kept or passed on. */
export const COMPARISONS: readonly string[] = Object.freeze([
  "===",
  "!==",
  "==",
  "!=",
  "<",
  "<=",
  ">",
  ">=",
]);

/**
 * Where a name written in the source becomes a string at run time: an object literal's or a
 * class field's key (`Object.keys`, `for … in`), an enum member (its reverse mapping), the name
 * of a function, class or variable (`.name`).
 */
export const NAMES_AS_DATA: readonly string[] = Object.freeze([
  "KeyValueProperty.key",
  "MethodProperty.key",
  "GetterProperty.key",
  "SetterProperty.key",
  "ClassProperty.key",
  "ClassMethod.key",
  "TsEnumMember.id",
  "VariableDeclarator.id",
  "FunctionDeclaration.identifier",
  "FunctionExpression.identifier",
  "ClassDeclaration.identifier",
  "ClassExpression.identifier",
]);

/** Keys holding only types (erased before anything runs). */
export const TYPE_KEYS: readonly string[] = Object.freeze([
  "typeAnnotation",
  "typeParameters",
  "typeParams",
  "typeArguments",
  "returnType",
  "superTypeParams",
  "implements",
]);

/** Node types holding only types. */
export const TYPE_NODES: readonly string[] = Object.freeze([
  "TsInterfaceDeclaration",
  "TsTypeAliasDeclaration",
  "TsTypeAnnotation",
]);

/** Where an Identifier is a name, not a reference: `<parent type>.<key>`. */
export const NAME_POSITIONS: readonly string[] = Object.freeze([
  "MemberExpression.property",
  "SuperPropExpression.property",
  "KeyValueProperty.key",
  "MethodProperty.key",
  "GetterProperty.key",
  "SetterProperty.key",
  "ClassProperty.key",
  "ClassMethod.key",
  "ClassAccessorProperty.key",
  "Constructor.key",
  "ImportSpecifier.imported",
  "ExportSpecifier.exported",
  "ExportNamespaceSpecifier.name",
  "ExportDefaultSpecifier.exported",
  "LabeledStatement.label",
  "BreakStatement.label",
  "ContinueStatement.label",
  "TsEnumMember.id",
  "KeyValuePatternProperty.key",
  "TsQualifiedName.right",
]);

/** Functions that define or assign properties: with a prototype as their target, pollution. */
export const DEFINERS: readonly string[] = Object.freeze([
  "defineProperty",
  "defineProperties",
  "assign",
  "setPrototypeOf",
  "__defineGetter__",
  "__defineSetter__",
]);

/** Wrappers that do not change what an expression evaluates to. */
export const TRANSPARENT: readonly string[] = Object.freeze([
  "ParenthesisExpression",
  "TsAsExpression",
  "TsNonNullExpression",
  "TsSatisfiesExpression",
  "TsTypeAssertion",
  "TsConstAssertion",
]);

/** Binary operators whose result is a number or a boolean, never a new string. */
export const NUMERIC_OPERATORS: readonly string[] = Object.freeze([
  "-",
  "*",
  "/",
  "%",
  "**",
  "|",
  "&",
  "^",
  "<<",
  ">>",
  ">>>",
  "==",
  "!=",
  "===",
  "!==",
  "<",
  "<=",
  ">",
  ">=",
]);
