/**
 * Strict YAML for agent images (DESIGN §8): one YAML 1.2 document, core schema only, turned into
 * plain JSON data that the caller then validates with zod. Anything that is not plain data, or
 * that could make parsing cost more than the size of the input, is refused with a
 * {@link ValidationError} that names the place (`line:column`) and the fix.
 *
 * How it runs, each step bounded before the next one starts:
 *
 * 1. The UTF-8 size is counted before any parsing (early exit past `maxBytes`), and characters
 *    YAML forbids in a stream (C0/C1 controls except tab, LF, CR and NEL; DEL; lone surrogates;
 *    U+FFFE/U+FFFF) are refused; the `yaml` package accepts them silently.
 * 2. The `yaml` Lexer and Parser build the CST one lexeme at a time while this module watches the
 *    parser's stack: nesting deeper than `maxDepth` is refused there, before the recursive
 *    composer ever sees it (the library's own guard catches the stack overflow itself and
 *    reports "Maximum call stack size exceeded" after 800-1,000 levels, however big the engine's
 *    stack happens to be). The lexemes also bound the node count from below, so a document with
 *    too many nodes is refused before it is composed. Directives (`%YAML`, `%TAG`), a second
 *    document and a stray token outside any node are refused at this step too.
 * 3. The `yaml` Composer builds the node tree with the core schema, merge keys off, the YAML 1.1
 *    tags (`!!binary`, `!!set`, `!!omap`, `!!pairs`, `!!timestamp`) unknown, integers as BigInt
 *    (so precision loss is visible) and its own key-uniqueness check off: that check compares
 *    each key with every earlier key, which takes seconds on a 256 KiB map. Every parse error it
 *    reports is refused.
 * 4. This module walks the tree and builds the value itself (never `toJS()`), checking each node:
 *    tags, keys, duplicates, numbers, aliases, node count, depth and total string length.
 *
 * Decisions:
 *
 * - Aliases: `maxAliases` defaults to 0, so any `*alias` is refused and no expansion code runs on
 *   untrusted input. Images are small, hand-written files where anchors save little typing, yet
 *   aliases are the one YAML feature whose output can be exponentially larger than its input
 *   ("billion laughs"), and they create shared references nothing else in the runtime expects.
 *   A caller may allow a few; each expansion, nested ones included, then counts against
 *   `maxAliases`, every expanded node against `maxNodes`, the expanded nesting against
 *   `maxDepth`, and the total length of all strings against `maxBytes`, so the output can never
 *   be much larger than the largest accepted input. An anchor without an alias is inert.
 * - Merge keys: a plain `<<` key is refused (YAML 1.1 tools would merge, YAML 1.2 would not:
 *   the same file would mean two things). A quoted `"<<"` is an ordinary key in every version.
 * - Tags: only `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!map` and `!!seq`, and only on a
 *   value of their own kind (`!!int 1.5` is refused, so is `!!float 1`, which the library cannot
 *   resolve). Everything else, the non-specific `!` included, is refused: the library only warns
 *   about an unknown tag and keeps the value as a string.
 * - Keys must be strings: `1:`, `true:`, `~:`, an empty key, an alias or a collection as key are
 *   refused with the advice to quote, instead of being silently turned into strings. Duplicates
 *   are compared after resolution, so `a` and `"a"` are the same key.
 * - Objects have a null prototype, so `__proto__`, `constructor` and `prototype` are inert data.
 * - Numbers: integers outside ±(2^53 − 1) would lose precision and are refused (quote them);
 *   `.inf`, `.nan` and overflowing floats such as `1e400` are not JSON and are refused.
 * - Timestamps: YAML 1.2's core schema has none, so `2024-01-01` is the string "2024-01-01";
 *   an explicit `!!timestamp` tag is refused with the other non-core tags.
 * - An empty document (nothing, or only comments and `---`) is refused: it is almost always a
 *   truncated write or the wrong file, and `null` would only fail later in the caller's schema
 *   with a vaguer message. An explicit `~` or `null` document parses to `null`.
 * - A BOM at the start and CRLF line endings are accepted.
 *
 * Wraps `npm:yaml` (pinned in `deno.json`): its Lexer, Parser and Composer do the YAML; what is
 * hand-written is only the guard around them (the byte and character checks, the depth watch on
 * the parser's stack, and the walk that builds the value), because the library bounds nesting
 * only by catching its own stack overflow and checks key uniqueness in quadratic time (steps 2
 * and 3 above).
 *
 * @module
 */
import {
  type Alias,
  Composer,
  CST,
  type ErrorCode,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  Lexer,
  type Node as YamlNode,
  type ParsedNode,
  Parser,
  type Scalar,
  type YAMLMap,
  type YAMLSeq,
} from "yaml";
import { ValidationError } from "./errors.ts";

/** Limits and labelling for {@link parseStrictYaml}; every limit has a default in {@link STRICT_YAML_LIMITS}. */
export interface StrictYamlOptions {
  /** Largest accepted input, in UTF-8 bytes; also caps the total length of all parsed strings. */
  readonly maxBytes?: number;
  /** Deepest accepted nesting of sequences and mappings (the top-level collection is depth 1). */
  readonly maxDepth?: number;
  /** How many alias expansions are allowed, nested ones included; 0 refuses every alias. */
  readonly maxAliases?: number;
  /** Most scalars, sequences and mappings (keys included, expanded aliases included). */
  readonly maxNodes?: number;
  /** A name for the input, usually its file path, used in error messages. */
  readonly source?: string;
}

/** The default limits of {@link parseStrictYaml}. */
export const STRICT_YAML_LIMITS: Readonly<Required<Omit<StrictYamlOptions, "source">>> = Object
  .freeze({
    maxBytes: 256 * 1024,
    maxDepth: 32,
    maxAliases: 0,
    maxNodes: 10_000,
  });

/** Deeper nesting would let the library's recursive composer, and this walker, reach the call stack limit. */
const DEPTH_CEILING = 256;

type Kind = "string" | "integer" | "float" | "boolean" | "null" | "map" | "seq";

/** The core tags accepted, each with the only kind of value it may carry. */
const CORE_TAGS: Readonly<Record<string, Kind>> = Object.freeze({
  "tag:yaml.org,2002:str": "string",
  "tag:yaml.org,2002:int": "integer",
  "tag:yaml.org,2002:float": "float",
  "tag:yaml.org,2002:bool": "boolean",
  "tag:yaml.org,2002:null": "null",
  "tag:yaml.org,2002:map": "map",
  "tag:yaml.org,2002:seq": "seq",
});

/** How to fix the library's parse errors, by its error code. */
const FIXES: Readonly<Partial<Record<ErrorCode, string>>> = Object.freeze({
  TAB_AS_INDENT: "indent with spaces instead",
  BAD_INDENT:
    "indent with spaces so that the items of one collection start at the same column, and close any open bracket",
  MISSING_CHAR: "add the missing closing quote, bracket or indicator",
  MULTILINE_IMPLICIT_KEY: "keep an implicit key on one line, or quote it",
  BLOCK_AS_IMPLICIT_KEY: "put a nested mapping on its own indented lines, or quote the value",
  UNEXPECTED_TOKEN: "remove or quote the unexpected character",
  BAD_SCALAR_START: "quote the value; it starts with a reserved character",
  BAD_DQ_ESCAPE: 'use a valid escape such as \\n, \\t, \\\\, \\" or \\u00e9',
});

/** Where an error happened: the input text and the label used in messages. */
interface Place {
  readonly text: string;
  readonly source: string | undefined;
}

interface Limits {
  readonly maxBytes: number;
  readonly maxDepth: number;
  readonly maxAliases: number;
  readonly maxNodes: number;
}

/**
 * Parses one strict YAML 1.2 document into plain JSON data: strings, finite numbers, booleans,
 * `null`, arrays, and objects with a null prototype. Validate the result with a zod schema.
 *
 * @throws {TypeError} if `text` is not a string.
 * @throws {RangeError} if an option is out of range.
 * @throws {ValidationError} for every problem with the document itself; the message names the
 *   place as `line:column` where there is one.
 *
 * @example
 * ```ts
 * const data = parseStrictYaml("name: coder\ntools: [read_text_file]\n", { source: "coder.yaml" });
 * // data is { name: "coder", tools: ["read_text_file"] } with a null prototype
 * ```
 */
export function parseStrictYaml(text: string, options: StrictYamlOptions = {}): unknown {
  if (typeof text !== "string") {
    throw new TypeError(`parseStrictYaml() expects the YAML text as a string, got ${typeOf(text)}`);
  }
  const limits = resolveLimits(options);
  const place: Place = { text, source: options.source };
  checkCharacters(place, limits.maxBytes);
  try {
    const tokens = buildSyntaxTree(place, limits);
    const root = compose(place, tokens);
    return new JsonBuilder(place, limits).value(root, 0, undefined);
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    // Not expected from a bounded input, but a caller must only ever see a ValidationError.
    throw refuse(
      place,
      undefined,
      `the YAML library failed (${errorMessage(error)})`,
      "simplify the document",
      error,
    );
  }
}

function resolveLimits(options: StrictYamlOptions): Limits {
  if (options.source !== undefined && typeof options.source !== "string") {
    throw new TypeError(
      `parseStrictYaml() option source must be a string, got ${typeOf(options.source)}`,
    );
  }
  return {
    maxBytes: limit("maxBytes", options.maxBytes, 1, Number.MAX_SAFE_INTEGER),
    maxDepth: limit("maxDepth", options.maxDepth, 1, DEPTH_CEILING),
    maxAliases: limit("maxAliases", options.maxAliases, 0, Number.MAX_SAFE_INTEGER),
    maxNodes: limit("maxNodes", options.maxNodes, 1, Number.MAX_SAFE_INTEGER),
  };
}

function limit(name: keyof Limits, value: number | undefined, min: number, max: number): number {
  if (value === undefined) return STRICT_YAML_LIMITS[name];
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(
      `parseStrictYaml() option ${name} must be an integer from ${min} to ${max}, got ${
        String(value)
      }`,
    );
  }
  return value;
}

/** Step 1: the size cap on UTF-8 bytes, then the characters YAML forbids in a stream. */
function checkCharacters(place: Place, maxBytes: number): void {
  const { text } = place;
  const tooLarge = () =>
    refuse(
      place,
      undefined,
      `the input is larger than the limit of ${maxBytes} bytes (${describeBytes(maxBytes)})`,
      "shrink or split the file, or raise maxBytes",
    );
  // Every UTF-16 code unit takes at least one UTF-8 byte: no need to count a string this long.
  if (text.length > maxBytes) throw tooLarge();
  let bytes = 0;
  let forbidden = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    let ok = true;
    if (c < 0x80) {
      bytes += 1;
      ok = c >= 0x20 ? c !== 0x7f : c === 0x09 || c === 0x0a || c === 0x0d;
    } else if (c < 0x800) {
      bytes += 2;
      ok = c >= 0xa0 || c === 0x85;
    } else if (c >= 0xd800 && c <= 0xdbff && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else {
      bytes += 3;
      ok = !(c >= 0xd800 && c <= 0xdfff) && c !== 0xfffe && c !== 0xffff;
    }
    if (bytes > maxBytes) throw tooLarge();
    if (!ok && forbidden < 0) forbidden = i;
  }
  if (forbidden >= 0) {
    const code = text.charCodeAt(forbidden).toString(16).toUpperCase().padStart(4, "0");
    throw refuse(
      place,
      forbidden,
      `the character U+${code} is not allowed in a YAML document`,
      `remove it, or write it as the escape "\\u${code}" inside a double-quoted string`,
    );
  }
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/**
 * Step 2: the CST, with the nesting depth watched on the parser's own stack as it grows, and the
 * node count bounded from below by the lexemes: see {@link lexemeClass}.
 */
function buildSyntaxTree(place: Place, limits: Limits): CST.Token[] {
  const parser = new Parser();
  const tokens: CST.Token[] = [];
  let documents = 0;
  const take = (produced: Iterable<CST.Token>): void => {
    for (const token of produced) {
      if (token.type === "directive") {
        throw refuse(
          place,
          token.offset,
          `the directive ${quote(token.source.trim())} is not supported`,
          "remove the line; documents are always read as YAML 1.2 with the core schema",
        );
      }
      if (token.type === "document" && ++documents > 1) {
        throw refuse(
          place,
          token.offset,
          "a second document starts here, but only one document is allowed",
          'remove the "---" separator and everything after it, or split the file',
        );
      }
      // Refused at the first one: a stream of them costs the composer seconds to report.
      if (token.type === "error") {
        throw refuse(
          place,
          token.offset,
          `${token.message}: ${quote(token.source)}`,
          "remove or quote the unexpected character",
        );
      }
      tokens.push(token);
    }
  };
  const counts = [0, 0, 0, 0, 0];
  let atScalarText = false;
  for (const lexeme of new Lexer().lex(place.text)) {
    const offset = parser.offset;
    const kind = atScalarText ? -1 : lexemeClass(lexeme);
    atScalarText = lexeme === CST.SCALAR;
    if (kind >= 0) {
      const count = (counts[kind] ?? 0) + 1;
      if (count > limits.maxNodes) throw tooManyNodes(place, offset, limits.maxNodes);
      counts[kind] = count;
    }
    take(parser.next(lexeme));
    // The stack holds the document, the open collections and at most one pending scalar.
    if (parser.stack.length > limits.maxDepth + 1) {
      checkDepth(place, parser.stack, limits.maxDepth);
    }
  }
  take(parser.end());
  return tokens;
}

/**
 * Sorts a lexeme into a class whose members each belong to a different node of a valid document
 * (-1: no class): 0 scalars, flow collections and aliases; 1 `-` (one item each); 2 `?` (one key
 * each); 3 `:` (one pair each, so one key); 4 `,` (one item or pair before each). No class can
 * outnumber the nodes, so a class past `maxNodes` refuses the document before it is composed:
 * a 256 KiB run of commas would otherwise cost seconds of error reporting.
 */
function lexemeClass(lexeme: string): number {
  switch (lexeme) {
    case CST.SCALAR:
    case "[":
    case "{":
      return 0;
    case "-":
      return 1;
    case "?":
      return 2;
    case ":":
      return 3;
    case ",":
      return 4;
    default: {
      const first = lexeme[0];
      return first === '"' || first === "'" || first === "*" ? 0 : -1;
    }
  }
}

function checkDepth(place: Place, stack: readonly CST.Token[], maxDepth: number): void {
  let depth = 0;
  for (const token of stack) {
    if (
      token.type !== "block-map" && token.type !== "block-seq" && token.type !== "flow-collection"
    ) {
      continue;
    }
    if (++depth > maxDepth) {
      throw refuse(
        place,
        token.offset,
        `the nesting is deeper than ${maxDepth} levels`,
        "flatten the structure, or raise maxDepth",
      );
    }
  }
}

/** Step 3: the node tree, with every error of the library refused. */
function compose(place: Place, tokens: readonly CST.Token[]): ParsedNode {
  const composer = new Composer({
    version: "1.2",
    schema: "core",
    customTags: null,
    merge: false,
    resolveKnownTags: false,
    intAsBigInt: true,
    uniqueKeys: false, // quadratic in the library; JsonBuilder checks in linear time
    strict: true,
  });
  const [document] = Array.from(composer.compose(tokens, true, place.text.length));
  if (document === undefined) {
    throw refuse(place, undefined, "the document is empty", "write its content");
  }
  // Tag warnings are left to JsonBuilder, which says which tags are allowed; others are refused.
  const problems = [
    ...document.errors,
    ...document.warnings.filter((warning) =>
      warning.code !== "TAG_RESOLVE_FAILED" && warning.code !== "BAD_COLLECTION_TYPE"
    ),
  ];
  const [problem] = problems;
  if (problem !== undefined) {
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more problems)` : "";
    throw refuse(
      place,
      problem.pos[0] >= 0 ? problem.pos[0] : undefined,
      `${problem.message}${more}`,
      FIXES[problem.code] ?? "fix the YAML syntax at this place",
      problem,
    );
  }
  const root = document.contents;
  if (
    root === null ||
    (isScalar(root) && root.value === null && root.source === "" && root.tag === undefined)
  ) {
    throw refuse(
      place,
      undefined,
      "the document is empty",
      'write its content (or "null" if null is really meant)',
    );
  }
  return root;
}

/** Step 4: plain JSON data from the node tree, one check per node; one instance per parse. */
class JsonBuilder {
  readonly #place: Place;
  readonly #limits: Limits;
  #nodes = 0;
  #aliases = 0;
  #chars = 0;
  /** The node each anchor name points to at the current place in document order. */
  readonly #anchors = new Map<string, ParsedNode>();
  /** What each alias pointed to where it appears, kept for expansions replayed later. */
  readonly #targets = new Map<Alias, ParsedNode>();
  /** The collections being built, to refuse an alias to its own ancestor. */
  readonly #open = new Set<ParsedNode>();

  constructor(place: Place, limits: Limits) {
    this.#place = place;
    this.#limits = limits;
  }

  /**
   * Converts one node at `depth` enclosing collections. `via` is the offset of the alias being
   * expanded, or undefined while walking the source itself.
   */
  value(node: ParsedNode | null, depth: number, via: number | undefined): unknown {
    if (node === null) return null;
    if (isAlias(node)) return this.#alias(node, depth, via);
    this.#count(node, via);
    if (isScalar(node)) return this.#scalar(node, via);
    if (isMap(node)) return this.#map(node, depth, via);
    if (isSeq(node)) return this.#seq(node, depth, via);
    throw this.#refuse(offsetOf(node), "a node of an unknown kind", "use plain YAML data");
  }

  #count(node: ParsedNode, via: number | undefined): void {
    if (++this.#nodes > this.#limits.maxNodes) {
      throw tooManyNodes(this.#place, via ?? offsetOf(node), this.#limits.maxNodes);
    }
    // Anchors are bound where they appear, before their children, as YAML defines it.
    if (via === undefined && node.anchor !== undefined) this.#anchors.set(node.anchor, node);
  }

  #alias(alias: Alias, depth: number, via: number | undefined): unknown {
    const offset = offsetOf(alias);
    const name = quote(`*${alias.source}`);
    if (this.#limits.maxAliases === 0) {
      throw this.#refuse(
        offset,
        `the alias ${name} is not allowed (maxAliases is 0)`,
        "write the value out in full instead of using an anchor and an alias",
      );
    }
    const target = via === undefined ? this.#anchors.get(alias.source) : this.#targets.get(alias);
    if (target === undefined) {
      throw this.#refuse(
        offset,
        `the alias ${name} has no anchor ${quote(`&${alias.source}`)} before it`,
        "define the anchor before the alias, or write the value out",
      );
    }
    if (via === undefined) this.#targets.set(alias, target);
    if (this.#open.has(target)) {
      throw this.#refuse(
        offset,
        `the alias ${name} refers to a collection that contains it`,
        "remove the alias; a cycle has no JSON form",
      );
    }
    if (++this.#aliases > this.#limits.maxAliases) {
      throw this.#refuse(
        via ?? offset,
        `more than ${this.#limits.maxAliases} alias expansions (nested ones included)`,
        "write the values out, or raise maxAliases",
      );
    }
    return this.value(target, depth, via ?? offset);
  }

  #scalar(node: Scalar, via: number | undefined): unknown {
    const value = node.value;
    this.#checkTag(node, kindOfScalar(value));
    switch (typeof value) {
      case "string":
        this.#addChars(value.length, node, via);
        return value;
      case "boolean":
        return value;
      case "bigint":
        if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < -BigInt(Number.MAX_SAFE_INTEGER)) {
          throw this.#refuse(
            offsetOf(node),
            `the integer ${
              sourceOf(node)
            } is outside ±${Number.MAX_SAFE_INTEGER} and would lose precision`,
            "quote it to keep it as a string",
          );
        }
        return Number(value);
      case "number":
        if (!Number.isFinite(value)) {
          throw this.#refuse(
            offsetOf(node),
            `the number ${sourceOf(node)} is not finite, and JSON has no such number`,
            "use a finite number, or quote it if it is meant as text",
          );
        }
        return value;
      default:
        if (value === null) return null;
        throw this.#refuse(
          offsetOf(node),
          `the value ${sourceOf(node)} is not plain data (${typeOf(value)})`,
          "use a string, number, boolean or null",
        );
    }
  }

  #map(node: YAMLMap.Parsed, depth: number, via: number | undefined): Record<string, unknown> {
    this.#checkTag(node, "map");
    this.#enter(node, depth, via);
    // A null prototype: "__proto__", "constructor" and "prototype" stay plain data.
    const result: Record<string, unknown> = Object.create(null);
    for (const pair of node.items) {
      const key = this.#key(pair.key, node, via);
      if (Object.hasOwn(result, key)) this.#duplicate(node, pair.key, key);
      result[key] = this.value(pair.value, depth + 1, via);
    }
    this.#open.delete(node);
    return result;
  }

  #seq(node: YAMLSeq.Parsed, depth: number, via: number | undefined): unknown[] {
    this.#checkTag(node, "seq");
    this.#enter(node, depth, via);
    const result: unknown[] = [];
    for (const item of node.items) result.push(this.value(item, depth + 1, via));
    this.#open.delete(node);
    return result;
  }

  #enter(node: ParsedNode, depth: number, via: number | undefined): void {
    // The CST step already bounds the source; only expanded aliases can nest deeper here.
    if (depth + 1 > this.#limits.maxDepth) {
      throw this.#refuse(
        via ?? offsetOf(node),
        `the nesting is deeper than ${this.#limits.maxDepth} levels once aliases are expanded`,
        "flatten the structure, or raise maxDepth",
      );
    }
    this.#open.add(node);
  }

  #key(key: ParsedNode | null, map: YAMLMap.Parsed, via: number | undefined): string {
    if (key === null || isAlias(key) || !isScalar(key)) {
      const what = key === null
        ? "a missing key"
        : isAlias(key)
        ? `the alias ${quote(`*${key.source}`)} as a key`
        : `a ${isMap(key) ? "mapping" : "sequence"} as a key (a complex key)`;
      throw this.#refuse(
        key === null ? offsetOf(map) : offsetOf(key),
        `${what} is not allowed`,
        "keys must be strings: use a plain string key",
      );
    }
    this.#count(key, via);
    const value = key.value;
    this.#checkTag(key, kindOfScalar(value));
    if (typeof value !== "string") {
      const written = key.source ?? "";
      throw this.#refuse(
        offsetOf(key),
        written === ""
          ? "a key is missing"
          : `the key ${clip(written)} is ${describeKind(kindOfScalar(value))}, not a string`,
        written === "" ? "write the key before the colon" : `quote it: ${quote(written)}`,
      );
    }
    if (value === "<<" && key.type === "PLAIN") {
      throw this.#refuse(
        offsetOf(key),
        'the merge key "<<" is not supported',
        'write the merged keys out in full (quote it as "<<" if it is a literal key)',
      );
    }
    this.#addChars(value.length, key, via);
    return value;
  }

  #duplicate(map: YAMLMap.Parsed, node: ParsedNode | null, key: string): never {
    const first = map.items.find((pair) => isScalar(pair.key) && pair.key.value === key);
    const firstOffset = first?.key ? offsetOf(first.key) : undefined;
    const firstAt = firstOffset === undefined
      ? ""
      : ` (first at ${position(this.#place.text, firstOffset)})`;
    throw this.#refuse(
      node === null ? offsetOf(map) : offsetOf(node),
      `the key ${quote(key)} appears twice in one mapping${firstAt}`,
      "remove or rename one of them",
    );
  }

  #checkTag(node: YamlNode, kind: Kind): void {
    const tag = node.tag;
    if (tag === undefined) return;
    const expected = Object.hasOwn(CORE_TAGS, tag) ? CORE_TAGS[tag] : undefined;
    if (expected === undefined) {
      throw this.#refuse(
        offsetOf(node),
        `the tag ${
          quote(shortTag(tag))
        } is not allowed; only the core tags !!str, !!int, !!float, !!bool, !!null, !!map and !!seq are`,
        "remove the tag (and quote the value if it is meant as a string)",
      );
    }
    if (expected !== kind) {
      const shown = isScalar(node) ? `the value ${sourceOf(node)}` : describeKind(kind);
      throw this.#refuse(
        offsetOf(node),
        `${shown} does not match its tag ${shortTag(tag)}, which needs ${describeKind(expected)}`,
        "remove the tag, or write a value of that kind",
      );
    }
  }

  #addChars(count: number, node: YamlNode, via: number | undefined): void {
    this.#chars += count;
    // Without aliases the strings can never be longer than the input; with them, they could.
    if (this.#chars > this.#limits.maxBytes) {
      throw this.#refuse(
        via ?? offsetOf(node),
        `the strings of the document add up to more than ${this.#limits.maxBytes} characters once aliases are expanded`,
        "write the values out, or raise maxBytes",
      );
    }
  }

  #refuse(offset: number | undefined, problem: string, fix: string): ValidationError {
    return refuse(this.#place, offset, problem, fix);
  }
}

function tooManyNodes(place: Place, offset: number | undefined, maxNodes: number) {
  return refuse(
    place,
    offset,
    `the document has more than ${maxNodes} nodes (scalars, sequences and mappings, keys and expanded aliases included)`,
    "shrink or split it, or raise maxNodes",
  );
}

function refuse(
  place: Place,
  offset: number | undefined,
  problem: string,
  fix: string,
  cause?: unknown,
): ValidationError {
  const at = offset === undefined ? "" : position(place.text, offset);
  const where = place.source === undefined
    ? (at === "" ? "" : ` at ${at}`)
    : ` ${place.source}${at === "" ? "" : `:${at}`}`;
  return new ValidationError(
    `Cannot parse YAML${where}: ${problem}; ${fix}`,
    cause === undefined ? {} : { cause },
  );
}

/** `line:column`, both from 1, of an offset in the text. */
function position(text: string, offset: number): string {
  const end = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < end; i = text.indexOf("\n", i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return `${line}:${end - lineStart + 1}`;
}

function offsetOf(node: YamlNode): number | undefined {
  return node.range?.[0];
}

function kindOfScalar(value: unknown): Kind {
  switch (typeof value) {
    case "string":
      return "string";
    case "bigint":
      return "integer";
    case "number":
      return "float";
    case "boolean":
      return "boolean";
    default:
      // Anything else is refused by #scalar; "null" only matters for the tag check.
      return "null";
  }
}

function describeKind(kind: Kind): string {
  switch (kind) {
    case "string":
      return "a string";
    case "integer":
      return "an integer";
    case "float":
      return "a floating-point number";
    case "boolean":
      return "a boolean";
    case "null":
      return "null";
    case "map":
      return "a mapping";
    case "seq":
      return "a sequence";
  }
}

function shortTag(tag: string): string {
  return tag.startsWith("tag:yaml.org,2002:") ? `!!${tag.slice("tag:yaml.org,2002:".length)}` : tag;
}

function sourceOf(node: Scalar): string {
  return quote(node.source ?? String(node.value));
}

/** A value quoted for a message, cut short so a hostile document cannot flood the log. */
function quote(text: string): string {
  return JSON.stringify(clip(text));
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function describeBytes(bytes: number): string {
  return bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} B`;
}

function typeOf(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
