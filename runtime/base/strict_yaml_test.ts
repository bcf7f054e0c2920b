import assert from "node:assert/strict";
import { ValidationError } from "./errors.ts";
import { parseStrictYaml, STRICT_YAML_LIMITS, type StrictYamlOptions } from "./strict_yaml.ts";

/** The expected value with every plain object given a null prototype, as the parser returns them. */
function data(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(data);
  if (value !== null && typeof value === "object") {
    const result: Record<string, unknown> = Object.create(null);
    for (const [key, item] of Object.entries(value)) result[key] = data(item);
    return result;
  }
  return value;
}

/** `levels` anchored lists, each holding `width` aliases to the one before: width^levels leaves. */
function aliasBomb(levels: number, width: number): string {
  const lines = ["a0: &a0 [lol]"];
  for (let level = 1; level <= levels; level++) {
    const aliases = Array.from({ length: width }, () => `*a${level - 1}`).join(", ");
    lines.push(`a${level}: &a${level} [${aliases}]`);
  }
  return `${lines.join("\n")}\n`;
}

/** A mapping nested `depth` levels by indentation: `k:` at column 1, 2, 3, … */
function indentedNesting(depth: number): string {
  return Array.from({ length: depth }, (_, level) => `${" ".repeat(level)}k:\n`).join("");
}

function nestedArrays(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let level = 0; level < depth; level++) value = [value];
  return value;
}

const CAP = STRICT_YAML_LIMITS.maxBytes;

interface Refused {
  readonly name: string;
  readonly text: string;
  readonly options?: StrictYamlOptions;
  /** Matched against the message; includes `at line:column` wherever the place is known. */
  readonly refused: RegExp;
}

const HOSTILE: readonly Refused[] = [
  // Aliases
  {
    name: "an alias bomb of 9 levels × 9 aliases at its very first alias",
    text: aliasBomb(9, 9),
    refused: /at 2:10: the alias "\*a0" is not allowed \(maxAliases is 0\); write the value out/,
  },
  {
    name: "an alias bomb after maxAliases expansions when a few aliases are allowed",
    text: aliasBomb(9, 9),
    options: { maxAliases: 100 },
    refused: /: more than 100 alias expansions \(nested ones included\); .*raise maxAliases/,
  },
  {
    name: "an alias to a huge string",
    text: `big: &big "${"x".repeat(200_000)}"\ncopies: [*big, *big]\n`,
    refused: /at 2:10: the alias "\*big" is not allowed/,
  },
  {
    name: "an alias to a huge string that would expand past maxBytes characters",
    text: `big: &big "${"x".repeat(200_000)}"\ncopies: [*big, *big]\n`,
    options: { maxAliases: 8 },
    refused: /at 2:10: the strings of the document add up to more than 262144 characters once/,
  },
  {
    name: "an alias that nests past maxDepth once expanded",
    text: `deep: &deep ${"[".repeat(20)}1${"]".repeat(20)}\nuse: ${"[".repeat(20)}*deep${
      "]".repeat(20)
    }\n`,
    options: { maxAliases: 8 },
    refused: /at 2:26: the nesting is deeper than 32 levels once aliases are expanded/,
  },
  {
    name: "an alias cycle",
    text: "a: &loop [1, *loop]\n",
    options: { maxAliases: 8 },
    refused: /at 1:14: the alias "\*loop" refers to a collection that contains it/,
  },
  {
    name: "an alias to an anchor that is not defined before it",
    text: "a: *later\nb: &later 1\n",
    options: { maxAliases: 8 },
    refused: /at 1:4: the alias "\*later" has no anchor "&later" before it/,
  },
  {
    name: "a merge key with an alias",
    text: "base: &base {x: 1}\nchild:\n  <<: *base\n  y: 2\n",
    options: { maxAliases: 8 },
    refused: /at 3:3: the merge key "<<" is not supported; write the merged keys out/,
  },
  {
    name: "a merge key with an inline mapping",
    text: "child:\n  <<: {x: 1}\n",
    refused: /at 2:3: the merge key "<<" is not supported/,
  },
  // Duplicate keys
  {
    name: "duplicate keys at depth",
    text: "a:\n  b:\n    key: 1\n    other: 2\n    key: 3\n",
    refused:
      /at 5:5: the key "key" appears twice in one mapping \(first at 3:5\); remove or rename/,
  },
  {
    name: "a quoted key that duplicates a plain one",
    text: 'name: a\n"name": b\n',
    refused: /at 2:1: the key "name" appears twice in one mapping \(first at 1:1\)/,
  },
  {
    name: "a single-quoted key that duplicates a !!str-tagged one",
    text: "'k': 1\n!!str k: 2\n",
    refused: /at 2:7: the key "k" appears twice/,
  },
  {
    name: "a duplicate key in a flow mapping",
    text: "{a: 1, a: 2}\n",
    refused: /at 1:8: the key "a" appears twice/,
  },
  // Tags
  ...([
    ["a local tag", "a: !foo bar\n", "!foo"],
    ["a JavaScript function tag", "a: !!js/function 'function () { return 1 }'\n", "!!js/function"],
    [
      "a Python object tag",
      "a: !!python/object/apply:os.system ['id']\n",
      "!!python/object/apply:os.system",
    ],
    ["a verbatim tag", "a: !<tag:example.com,2000:app/foo> x\n", "tag:example.com,2000:app/foo"],
    ["!!binary", "a: !!binary aGVsbG8=\n", "!!binary"],
    ["!!set", "a: !!set {x, y}\n", "!!set"],
    ["!!omap", "a: !!omap [x: 1, y: 2]\n", "!!omap"],
    ["!!pairs", "a: !!pairs [x: 1]\n", "!!pairs"],
    ["an explicit !!timestamp", "a: !!timestamp 2001-12-14t21:59:43.10-05:00\n", "!!timestamp"],
    ["the non-specific tag !", "a: ! 12\n", "!"],
  ] as const).map(([what, text, tag]): Refused => ({
    name: `a custom or non-core tag: ${what}`,
    text,
    refused: new RegExp(
      `at 1:\\d+: the tag "${
        tag.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")
      }" is not allowed; only the core tags !!str, !!int, !!float, !!bool, !!null, !!map and !!seq are; remove the tag`,
    ),
  })),
  {
    name: "a core tag on a value of another kind (!!int 1.5)",
    text: "a: !!int 1.5\n",
    refused: /at 1:10: the value "1.5" does not match its tag !!int, which needs an integer/,
  },
  {
    name: "!!str on a sequence",
    text: "a: !!str [x]\n",
    refused: /at 1:10: a sequence does not match its tag !!str, which needs a string/,
  },
  {
    name: "!!seq on a mapping",
    text: "a: !!seq {b: 1}\n",
    refused: /at 1:10: a mapping does not match its tag !!seq, which needs a sequence/,
  },
  {
    name: "a %TAG directive that redefines !!",
    text: "%TAG !! tag:evil.example,2000:\n---\na: !!str x\n",
    refused: /at 1:1: the directive "%TAG !! tag:evil.example,2000:" is not supported/,
  },
  {
    name: "a %YAML 1.1 directive (which would turn on merge keys and yes/no booleans)",
    text: "%YAML 1.1\n---\na: yes\n",
    refused: /at 1:1: the directive "%YAML 1.1" is not supported; .*YAML 1.2 with the core schema/,
  },
  // Numbers that are not JSON
  ...([[".inf", "a: .inf\n"], ["-.inf", "a: -.Inf\n"], [".nan", "a: .NaN\n"], [
    "1e400",
    "a: 1e400\n",
  ]] as const).map(([what, text]): Refused => ({
    name: `the non-finite number ${what}`,
    text,
    refused: /at 1:4: the number ".+" is not finite, and JSON has no such number/,
  })),
  {
    name: "an integer beyond 2^53 that would lose precision",
    text: "id: 12345678901234567890\n",
    refused: /at 1:5: the integer "12345678901234567890" is outside ±9007199254740991 .*quote it/,
  },
  // Depth and size
  {
    name: "10,000-deep flow nesting, at level 33",
    text: `${"[".repeat(10_000)}${"]".repeat(10_000)}`,
    refused: /at 1:33: the nesting is deeper than 32 levels; flatten the structure/,
  },
  {
    name: "1,000-deep compact block nesting (- - - …), at level 33",
    text: `${"- ".repeat(1_000)}x\n`,
    refused: /at 1:65: the nesting is deeper than 32 levels/,
  },
  {
    name: "1,000-deep indented block nesting, at level 33",
    text: indentedNesting(1_000),
    options: { maxBytes: 2 ** 20 },
    refused: /at 33:33: the nesting is deeper than 32 levels/,
  },
  {
    name: "a file one byte over the size cap",
    text: `a: ${"x".repeat(CAP - 2)}`,
    refused: /: the input is larger than the limit of 262144 bytes \(256 KiB\); .*raise maxBytes/,
  },
  {
    name: "a file over the cap in UTF-8 bytes though not in UTF-16 units",
    text: `a: ${"é".repeat(CAP / 2)}`,
    refused: /: the input is larger than the limit of 262144 bytes/,
  },
  {
    name: "a flat sequence of 10,000 items (10,001 nodes)",
    text: `[${Array.from({ length: 10_000 }, () => "1").join(",")}]`,
    refused: /: the document has more than 10000 nodes .*raise maxNodes/,
  },
  {
    name: "a block sequence of 10,000 items (10,001 nodes)",
    text: "- 1\n".repeat(10_000),
    refused: /: the document has more than 10000 nodes/,
  },
  {
    name: "a 256 KiB run of commas, before composing it",
    text: `[${",".repeat(CAP - 2)}]`,
    refused: /at 1:10002: the document has more than 10000 nodes/,
  },
  // Documents
  {
    name: "a multi-document stream",
    text: "a: 1\n---\nb: 2\n",
    refused: /at 2:1: a second document starts here, but only one document is allowed/,
  },
  {
    name: "a stream whose second document is empty",
    text: "a: 1\n...\n---\n",
    refused: /at 3:1: a second document starts here/,
  },
  ...([
    ["an empty input", ""],
    ["only whitespace", "  \n\n"],
    ["only comments", "# nothing here\n# still nothing\n"],
    ["only a document start marker", "---\n"],
    ["only a document end marker", "...\n"],
  ] as const).map(([what, text]): Refused => ({
    name: `an empty document: ${what}`,
    text,
    refused: /^Cannot parse YAML: the document is empty; write its content \(or "null"/,
  })),
  // Keys
  {
    name: "a sequence as a key",
    text: "? [a]\n: b\n",
    refused: /at 1:3: a sequence as a key \(a complex key\) is not allowed; keys must be strings/,
  },
  {
    name: "a mapping as a key",
    text: "? {a: 1}\n: b\n",
    refused: /at 1:3: a mapping as a key \(a complex key\) is not allowed/,
  },
  {
    name: "a flow sequence as a key in a flow mapping",
    text: "{[a]: b}\n",
    refused: /at 1:2: a sequence as a key/,
  },
  {
    name: "an alias as a key",
    text: "a: &k name\n*k : b\n",
    options: { maxAliases: 8 },
    refused: /at 2:1: the alias "\*k" as a key is not allowed/,
  },
  ...([
    ["an integer key", "1: a\n", "1", "an integer"],
    ["a hexadecimal key", "0x1F: a\n", "0x1F", "an integer"],
    ["a float key", "1.5: a\n", "1.5", "a floating-point number"],
    ["a boolean key", "true: a\n", "true", "a boolean"],
    ["a null key", "~: a\n", "~", "null"],
  ] as const).map(([what, text, key, kind]): Refused => ({
    name: `a key that is not a string: ${what}`,
    text,
    refused: new RegExp(
      `at 1:1: the key ${key.replace(".", "\\.")} is ${kind}, not a string; quote it: "`,
    ),
  })),
  {
    name: "an empty key",
    text: ": a\n",
    refused: /at 1:1: a key is missing; write the key before the colon/,
  },
  // Syntax errors from the library, with the place it reports
  {
    name: "tabs for indentation",
    text: "a:\n\tb: 1\n",
    refused: /at 2:1: Tabs are not allowed as indentation; indent with spaces instead/,
  },
  {
    name: "an unclosed double quote",
    text: 'a: "abc\nb: 1\n',
    refused: /at 3:1: Missing closing "quote; add the missing closing quote/,
  },
  {
    name: "an unclosed single quote",
    text: "a: 'abc\n",
    refused: /at 2:1: Missing closing 'quote/,
  },
  {
    name: "bad indentation",
    text: "a:\n  b: 1\n c: 2\n",
    refused: /at 3:1: All mapping items must start at the same column; indent with spaces/,
  },
  {
    name: "an unclosed flow sequence",
    text: "a: [x, y\n",
    refused: /at 2:1: Flow sequence in block collection must be sufficiently indented and end/,
  },
  {
    name: "a stray closing bracket",
    text: "]\n",
    refused: /at 1:1: Unexpected flow-seq-end token in YAML document: "\]"/,
  },
  {
    name: "an invalid escape in a double-quoted string",
    text: 'a: "x\\qy"\n',
    refused: /at 1:6: Invalid escape sequence \\q; use a valid escape/,
  },
  {
    name: "a compact nested mapping",
    text: "a: b: c\n",
    refused: /at 1:4: Nested mappings are not allowed in compact mappings/,
  },
  // Characters YAML does not allow in a stream
  ...([
    ["NUL", "\u0000", "0000"],
    ["ESC (terminal escape injection)", "\u001b[31m", "001B"],
    ["DEL", "\u007f", "007F"],
    ["the C1 control CSI", "\u009b", "009B"],
    ["a lone surrogate", "\ud800", "D800"],
  ] as const).map(([what, char, code]): Refused => ({
    name: `a forbidden character: ${what}`,
    text: `ok: 1\nbad: x${char}y\n`,
    refused: new RegExp(`at 2:7: the character U\\+${code} is not allowed in a YAML document`),
  })),
];

for (const hostile of HOSTILE) {
  Deno.test(`parseStrictYaml() refuses ${hostile.name}`, () => {
    assert.throws(
      () => parseStrictYaml(hostile.text, hostile.options),
      (error: unknown) => {
        assert.ok(error instanceof ValidationError, `not a ValidationError: ${String(error)}`);
        assert.equal(error.code, "validation_failed");
        assert.equal(error.fault, "caller");
        assert.match(error.message, /^Cannot parse YAML/);
        assert.match(error.message, hostile.refused);
        return true;
      },
    );
  });
}

interface Parsed {
  readonly name: string;
  readonly text: string;
  readonly options?: StrictYamlOptions;
  readonly value: unknown;
}

const BENIGN: readonly Parsed[] = [
  {
    name: "CRLF line endings",
    text: "a: 1\r\nlist:\r\n  - x\r\n  - y\r\ntext: |\r\n  one\r\n  two\r\n",
    value: { a: 1, list: ["x", "y"], text: "one\ntwo\n" },
  },
  {
    name: "a byte-order mark at the start",
    text: "\uFEFFname: bom\n",
    value: { name: "bom" },
  },
  {
    name: "unicode escapes and raw unicode",
    text: 'a: "caf\\u00e9 \\U0001F600 \\x41\\t\\"q\\""\nb: naïve ✓ 日本\n',
    value: { a: 'café 😀 A\t"q"', b: "naïve ✓ 日本" },
  },
  {
    name: "block scalars with every chomping indicator",
    text: "clip: |\n  a\n\nstrip: |-\n  a\n\nkeep: |+\n  a\n\nfold: >\n  a\n  b\n\n  c\n",
    value: { clip: "a\n", strip: "a", keep: "a\n\n", fold: "a b\nc\n" },
  },
  { name: "an explicit null document (~)", text: "~\n", value: null },
  { name: "an explicit null document (null)", text: "null", value: null },
  { name: "an explicit !!null document", text: "--- !!null\n", value: null },
  { name: "a scalar document", text: "hello\n", value: "hello" },
  {
    name: "YAML 1.1 booleans as strings (the Norway problem)",
    text: "a: yes\nb: no\nc: on\nd: off\ncountry: NO\ny: y\n",
    value: { a: "yes", b: "no", c: "on", d: "off", country: "NO", y: "y" },
  },
  {
    name: "dates as strings (the core schema has no timestamps)",
    text: "day: 2024-01-01\nat: 2001-12-14t21:59:43.10-05:00\n",
    value: { day: "2024-01-01", at: "2001-12-14t21:59:43.10-05:00" },
  },
  {
    name: "core tags on values of their own kind",
    text: "s: !!str 123\ni: !!int 0x10\nf: !!float 1.5\nb: !!bool true\nn: !!null ~\n" +
      "m: !!map {k: v}\nq: !!seq [1]\n",
    value: { s: "123", i: 16, f: 1.5, b: true, n: null, m: { k: "v" }, q: [1] },
  },
  {
    name: "integers and floats in the core notations",
    text: "dec: 012\noct: 0o17\nhex: 0x1F\nneg: -7\nplus: +12\nzero: -0\nf: 6.02e23\n" +
      "max: 9007199254740991\nunderscore: 1_000\n",
    value: {
      dec: 12,
      oct: 15,
      hex: 31,
      neg: -7,
      plus: 12,
      zero: 0,
      f: 6.02e23,
      max: Number.MAX_SAFE_INTEGER,
      underscore: "1_000",
    },
  },
  { name: 'a quoted "<<" key as ordinary data', text: '"<<": x\n', value: { "<<": "x" } },
  { name: "an anchor without an alias (inert)", text: "a: &x 1\nb: 2\n", value: { a: 1, b: 2 } },
  {
    name: "explicit start and end markers around one document",
    text: "---\na: 1\n...\n# trailing comment\n",
    value: { a: 1 },
  },
  { name: "set-like explicit keys", text: "? a\n? b\n", value: { a: null, b: null } },
  { name: "a trailing comma in a flow sequence", text: "[a, b,]\n", value: ["a", "b"] },
  {
    name: "the deepest nesting allowed (32 levels)",
    text: `${"[".repeat(32)}1${"]".repeat(32)}`,
    value: nestedArrays(32, 1),
  },
  {
    name: "a sequence of 9,999 items (10,000 nodes in all)",
    text: `[${Array.from({ length: 9_999 }, () => "1").join(",")}]`,
    value: Array.from({ length: 9_999 }, () => 1),
  },
  {
    name: "a file exactly at the size cap",
    text: `a: ${"x".repeat(CAP - 4)}\n`,
    value: { a: "x".repeat(CAP - 4) },
  },
  {
    name: "an alias when a few are allowed",
    text: "base: &base {x: 1, tags: [a]}\nchild: *base\n",
    options: { maxAliases: 1 },
    value: { base: { x: 1, tags: ["a"] }, child: { x: 1, tags: ["a"] } },
  },
];

for (const benign of BENIGN) {
  Deno.test(`parseStrictYaml() parses ${benign.name} exactly`, () => {
    assert.deepStrictEqual(parseStrictYaml(benign.text, benign.options), data(benign.value));
  });
}

const IMAGE = `# Agent image: a code reviewer
name: reviewer
version: 3
description: >
  Reads a change and writes a review.
  Never edits files.

model:
  provider: openai
  name: gpt-4.1-mini
  temperature: 0.2
  max_tokens: 4096
  stream: true
system_prompt: |
  You are a careful reviewer.
    - Quote the line you comment on.
  Be brief: "no fluff".
tools:
  - name: read_text_file
    allow: ["src/**", 'tests/**']
  - name: run_command
    argv: [deno, test, --quiet]
    timeout_ms: 120000
    env: {}
limits: {tool_calls: 40, wall_time_s: 600, live_children: 0}
labels:
  team: "platform"
  cost-centre: '1234'
  on: yes # YAML 1.1 would read a boolean here
notes: ~
skills: []
greeting: "caf\\u00e9 ✓"
`;

Deno.test("parseStrictYaml() parses a realistic agent image exactly", () => {
  assert.deepStrictEqual(
    parseStrictYaml(IMAGE, { source: "images/reviewer.yaml" }),
    data({
      name: "reviewer",
      version: 3,
      description: "Reads a change and writes a review. Never edits files.\n",
      model: {
        provider: "openai",
        name: "gpt-4.1-mini",
        temperature: 0.2,
        max_tokens: 4096,
        stream: true,
      },
      system_prompt:
        'You are a careful reviewer.\n  - Quote the line you comment on.\nBe brief: "no fluff".\n',
      tools: [
        { name: "read_text_file", allow: ["src/**", "tests/**"] },
        { name: "run_command", argv: ["deno", "test", "--quiet"], timeout_ms: 120000, env: {} },
      ],
      limits: { tool_calls: 40, wall_time_s: 600, live_children: 0 },
      labels: { team: "platform", "cost-centre": "1234", on: "yes" },
      notes: null,
      skills: [],
      greeting: "café ✓",
    }),
  );
});

Deno.test("parseStrictYaml() keeps __proto__, constructor and prototype keys as inert data (prototype pollution)", () => {
  const text = [
    "__proto__: {polluted: true}",
    "constructor: {prototype: {polluted: true}}",
    'list: [{"__proto__": {polluted: true}}]',
    "prototype: {toString: not a function}",
  ].join("\n");
  const parsed = parseStrictYaml(text);
  assert.deepStrictEqual(
    parsed,
    data({
      ["__proto__"]: { polluted: true },
      constructor: { prototype: { polluted: true } },
      list: [{ ["__proto__"]: { polluted: true } }],
      prototype: { toString: "not a function" },
    }),
  );
  assert.equal(({} as Record<string, unknown>)["polluted"], undefined);
  assert.equal(Object.hasOwn(Object.prototype, "polluted"), false);
  assert.equal(Object.getPrototypeOf(parsed), null);
  const record = parsed as Record<string, unknown>;
  assert.ok(Object.hasOwn(record, "__proto__"));
  assert.equal(Object.getPrototypeOf(record["__proto__"]), null);
  assert.equal(Object.getPrototypeOf(record["constructor"]), null);
  const [item] = record["list"] as unknown[];
  assert.equal(Object.getPrototypeOf(item), null);
  assert.ok(Object.hasOwn(item as object, "__proto__"));
});

Deno.test("parseStrictYaml() gives each expanded alias its own copy, not a shared reference", () => {
  const parsed = parseStrictYaml("a: &x {n: 1}\nb: *x\n", { maxAliases: 1 }) as Record<
    string,
    Record<string, unknown>
  >;
  assert.deepStrictEqual(parsed["a"], parsed["b"]);
  assert.notEqual(parsed["a"], parsed["b"]);
});

Deno.test("parseStrictYaml() names the source in messages and keeps the library's error as cause", () => {
  assert.throws(
    () => parseStrictYaml("a:\n\tb: 1\n", { source: "images/reviewer.yaml" }),
    (error: unknown) => {
      assert.ok(error instanceof ValidationError);
      assert.match(error.message, /^Cannot parse YAML images\/reviewer\.yaml:2:1: Tabs are not/);
      assert.ok(error.cause instanceof Error);
      assert.equal((error.cause as Error & { code?: unknown }).code, "TAB_AS_INDENT");
      return true;
    },
  );
  assert.throws(
    () => parseStrictYaml("x".repeat(17), { maxBytes: 16, source: "big.yaml" }),
    /^ValidationError: Cannot parse YAML big\.yaml: the input is larger than the limit of 16 bytes \(16 B\)/,
  );
});

Deno.test("parseStrictYaml() cuts long offending values short in messages", () => {
  assert.throws(
    () => parseStrictYaml(`a: !${"x".repeat(500)} v\n`),
    (error: unknown) => {
      assert.ok(error instanceof ValidationError);
      assert.match(error.message, /the tag "!x{56}\.\.\." is not allowed/);
      assert.ok(error.message.length < 400);
      return true;
    },
  );
});

Deno.test("parseStrictYaml() applies the limits given as options", () => {
  assert.deepStrictEqual(parseStrictYaml("[[1]]", { maxDepth: 2 }), [[1]]);
  assert.throws(() => parseStrictYaml("[[[1]]]", { maxDepth: 2 }), /deeper than 2 levels/);
  assert.deepStrictEqual(parseStrictYaml("[1, 2]", { maxNodes: 3 }), [1, 2]);
  assert.throws(() => parseStrictYaml("[1, 2, 3]", { maxNodes: 3 }), /more than 3 nodes/);
  assert.deepStrictEqual(parseStrictYaml("a: 1", { maxBytes: 4 }), data({ a: 1 }));
  assert.throws(() => parseStrictYaml("a: é", { maxBytes: 4 }), /larger than the limit of 4/);
  assert.deepStrictEqual(
    parseStrictYaml("a: &x 1\nb: [*x, *x]\n", { maxAliases: 2 }),
    data({ a: 1, b: [1, 1] }),
  );
  assert.throws(
    () => parseStrictYaml("a: &x 1\nb: [*x, *x, *x]\n", { maxAliases: 2 }),
    /at 2:13: more than 2 alias expansions/,
  );
});

Deno.test("parseStrictYaml() throws TypeError for input that is not a string", () => {
  for (const input of [42, null, undefined, new Uint8Array([97, 58, 32, 49]), { a: 1 }]) {
    assert.throws(
      () => parseStrictYaml(input as unknown as string),
      (error: unknown) =>
        error instanceof TypeError && /expects the YAML text as a string/.test(error.message),
    );
  }
});

Deno.test("parseStrictYaml() throws RangeError for limits out of range", () => {
  const bad: StrictYamlOptions[] = [
    { maxBytes: 0 },
    { maxBytes: Number.NaN },
    { maxDepth: 0 },
    { maxDepth: 10_000 },
    { maxAliases: -1 },
    { maxAliases: 1.5 },
    { maxNodes: 0 },
  ];
  for (const options of bad) {
    assert.throws(() => parseStrictYaml("a: 1", options), RangeError, JSON.stringify(options));
  }
  assert.throws(
    () => parseStrictYaml("a: 1", { source: 7 as unknown as string }),
    TypeError,
  );
});
