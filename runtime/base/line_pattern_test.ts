import assert from "node:assert/strict";
import { InvalidPatternError } from "./errors.ts";
import { compileLinePattern } from "./line_pattern.ts";

/** Patterns models send, with a line each must match and one it must not. */
const SYNTAX: readonly [string, string, string][] = [
  ["TODO|FIXME", "// FIXME later", "// todo later"],
  ["\\bfoo\\b", "a foo b", "afoob"],
  ["\\d{3}-\\d{4}", "call 555-1234", "call 55-1234"],
  ["^\\s*export\\s+(async\\s+)?function", "  export async function f()", "// export function"],
  ["[[:upper:]]{2,}_[A-Z]+", "MAX_SIZE", "max_size"],
  ["\\p{Greek}+", "λόγος", "logos"],
  ["(?i)readme", "README.md", "READ_ME"],
  ["log\\.(info|warn)\\(", "log.warn(x)", "log.error(x)"],
  ["(?<name>ab)+c", "ababc", "abac"],
  ["\\u0041BC", "xABC", "xabc"],
  ["\\/api\\/v\\d", "/api/v2/x", "/api/vx"],
  ["end$", "the end", "the end."],
  ["\\Afoo", "foo bar", "bar foo"],
];

Deno.test("compileLinePattern() understands the regular expressions models write (RE2 syntax, JavaScript's \\uXXXX)", () => {
  for (const [source, yes, no] of SYNTAX) {
    const pattern = compileLinePattern(source);
    assert.equal(pattern.test(yes), true, `${source} matches ${yes}`);
    assert.equal(pattern.test(no), false, `${source} does not match ${no}`);
    assert.equal(pattern.mayMatch(`x\n${yes}\ny`), true, `${source}: the whole-file pass agrees`);
  }
});

Deno.test("compileLinePattern() literal mode takes metacharacters as text, with or without case", () => {
  assert.equal(compileLinePattern("a(b)*c", { literal: true }).test("x a(b)*c y"), true);
  assert.equal(compileLinePattern("a(b)*c", { literal: true }).test("abbc"), false);
  const folded = compileLinePattern("A(B).", { literal: true, ignoreCase: true });
  assert.equal(folded.test("xa(b).y"), true);
  assert.equal(folded.test("xa(b)zy"), false);
});

Deno.test("compileLinePattern() refuses what the linear engine cannot run, saying what to write instead", () => {
  const cases: [string, RegExp][] = [
    ["a(b", /missing closing \).*fixed_strings: true/],
    ["foo(?=bar)", /lookahead and lookbehind/],
    ["(?<!x)y", /lookahead and lookbehind/],
    ["(a)\\1", /backreferences/],
    ["a++", /possessive/],
    ["x{1001}", /invalid repeat count/],
    ["a\\nb", /matches a line break/],
    ["", /empty/],
    ["x".repeat(1001), /at most 1000/],
  ];
  for (const [source, message] of cases) {
    assert.throws(() => compileLinePattern(source), (error: unknown) => {
      assert.ok(error instanceof InvalidPatternError, source);
      assert.equal(error.code, "invalid_pattern");
      assert.equal(error.pattern, source);
      assert.match(error.message, message, source);
      return true;
    });
  }
});
