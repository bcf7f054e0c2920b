import assert from "node:assert/strict";
import { canonicalJson, digestOf, type JsonValue, sha256Hex } from "./canonical_json.ts";

Deno.test("canonicalJson() sorts keys at every depth and writes no whitespace", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }),
    '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
  );
});

Deno.test("canonicalJson() gives the same text for the same value whatever the key insertion order", () => {
  assert.equal(canonicalJson({ x: 1, y: "é" }), canonicalJson({ y: "é", x: 1 }));
  assert.equal(digestOf({ x: 1, y: 2 }), digestOf({ y: 2, x: 1 }));
});

Deno.test("canonicalJson() writes -0 as 0 and escapes strings exactly like JSON", () => {
  assert.equal(canonicalJson([-0, 1.5, 'a\u0000\n"\\']), '[0,1.5,"a\\u0000\\n\\"\\\\"]');
});

Deno.test("canonicalJson() refuses values that are not plain JSON", () => {
  const cases: [string, unknown][] = [
    ["NaN", Number.NaN],
    ["Infinity", Infinity],
    ["undefined property", { a: undefined }],
    ["a Date", new Date(0)],
    ["a Map", new Map()],
    ["a function", () => 1],
    ["a bigint", 1n],
  ];
  for (const [name, value] of cases) {
    assert.throws(() => canonicalJson(value as JsonValue), TypeError, name);
  }
});

Deno.test("canonicalJson() refuses nesting deeper than 64 levels instead of overflowing the stack", () => {
  let deep: JsonValue = 1;
  for (let i = 0; i < 70; i++) deep = [deep];
  assert.throws(() => canonicalJson(deep), /deeper than 64/);
});

Deno.test("sha256Hex() matches the published digest of a known string", () => {
  assert.equal(
    sha256Hex("abc"),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assert.equal(digestOf("abc"), `sha256:${sha256Hex('"abc"')}`);
});

Deno.test("canonicalJson() refuses array holes and undefined items instead of writing invalid JSON", () => {
  // deno-lint-ignore no-sparse-arrays
  const holes = [, , "x"] as unknown as JsonValue;
  assert.throws(
    () => canonicalJson(holes),
    (e: unknown) => e instanceof TypeError && /\[0\]/.test(e.message),
  );
  assert.throws(() => canonicalJson([1, undefined] as unknown as JsonValue), TypeError);
  assert.equal(canonicalJson([1, null, "x"]), '[1,null,"x"]');
});
