import assert from "node:assert/strict";
import { JIT_SOURCE_MAX, JitValidator, VETTED_IMPORTS } from "./validator.ts";

const RUN = "export function run(args, libos) { return args; }\n";

Deno.test("JitValidator.validate() accepts a plain tool and names nothing", async () => {
  await using v = new JitValidator();
  assert.deepEqual(await v.validate(RUN), { ok: true, violations: [] });
  assert.deepEqual(
    await v.validate("export async function run(a: { x: number }, l: unknown) { return a.x; }"),
    { ok: true, violations: [] },
  );
});

Deno.test("JitValidator.validate() reports lines and columns in UTF-16 code units, 1-based", async () => {
  await using v = new JitValidator();
  // An astral character is two UTF-16 units (four UTF-8 bytes); é is one unit (two bytes).
  const source = `const s = "😀é"; eval("1");\r\nconst t = 1;\n  Deno.exit();\n${RUN}`;
  const report = await v.validate(source);
  assert.equal(report.ok, false);
  assert.deepEqual(
    report.violations.map((x) => [x.rule, x.line, x.column]),
    [["eval", 1, 18], ["forbidden_global", 3, 3]],
  );
  assert.equal(source.split(/\r?\n/)[0]!.indexOf("eval") + 1, 18);
});

Deno.test("JitValidator.validate() rejects a parse failure with its line and column", async () => {
  await using v = new JitValidator();
  const report = await v.validate(`const a = 1;\nconst b = (;\n${RUN}`);
  assert.equal(report.ok, false);
  assert.equal(report.violations.length, 1);
  const [violation] = report.violations;
  assert.equal(violation!.rule, "parse_error");
  assert.equal(violation!.line, 2);
  assert.equal(violation!.column, 12);
  assert.match(violation!.message, /does not parse/);
});

Deno.test("JitValidator.validate() allows exactly the vetted imports and the operator's additions", async () => {
  await using plain = new JitValidator();
  await using extended = new JitValidator({ allowImports: ["@acme/util"] });
  const vetted = `import { x } from "${VETTED_IMPORTS[0]}";\n${RUN}`;
  const extra = `import { y } from "@acme/util";\n${RUN}`;
  assert.equal((await plain.validate(vetted)).ok, true);
  assert.equal((await plain.validate(extra)).violations[0]?.rule, "import_forbidden");
  assert.equal((await extended.validate(extra)).ok, true);
  // Exact strings only: a subpath or a lookalike is another module.
  for (const spec of ["@acme/util/x", "@acme/util/", " @acme/util", "@ACME/util"]) {
    const report = await extended.validate(`import "${spec}";\n${RUN}`);
    assert.equal(report.violations[0]?.rule, "import_forbidden", spec);
  }
  assert.deepEqual(extended.allowedImports, [...VETTED_IMPORTS, "@acme/util"]);
});

Deno.test("JitValidator.validate() refuses an oversized source without parsing it, and a non-string", async () => {
  await using v = new JitValidator();
  const report = await v.validate(" ".repeat(JIT_SOURCE_MAX + 1));
  assert.deepEqual(report.violations.map((x) => x.rule), ["too_large"]);
  await assert.rejects(v.validate(42 as unknown as string), TypeError);
});

Deno.test("JitValidator.validate() keeps positions right across recycled parser workers", async () => {
  await using v = new JitValidator({ parser: { recycleAfter: 3 } });
  for (let i = 0; i < 10; i++) {
    // Sources of different lengths (and a failing one) shift swc's position counter each time.
    const pad = "/* pad */ ".repeat(i);
    const bad = await v.validate(`${pad}(((`);
    assert.equal(bad.violations[0]?.rule, "parse_error");
    const report = await v.validate(`${pad}eval("x");\n${RUN}`);
    assert.deepEqual(
      report.violations.map((x) => [x.rule, x.line, x.column]),
      [["eval", 1, pad.length + 1]],
      `round ${i}`,
    );
  }
});

Deno.test("JitValidator.validate() survives a source nested past the parser's stack and still answers", async () => {
  await using v = new JitValidator();
  const deep = `${"(".repeat(100_000)}1${")".repeat(100_000)};\n${RUN}`;
  const report = await v.validate(deep);
  assert.equal(report.ok, false);
  assert.equal(report.violations[0]?.rule, "parse_error");
  // The next source is validated by a working parser.
  assert.deepEqual(await v.validate(RUN), { ok: true, violations: [] });
});

Deno.test("JitValidator.validate() requires an exported run function (every form: validator_exports_test.ts)", async () => {
  await using v = new JitValidator();
  const cases: [string, string][] = [
    ["no run", "export function go() {}"],
    ["run not exported", "function run(args, libos) {}"],
    ["run as a let", "export let run = (args, libos) => args;"],
    ["generator", "export function* run(args, libos) {}"],
    ["three parameters", "export function run(a, b, c) {}"],
  ];
  for (const [name, source] of cases) {
    const report = await v.validate(source);
    assert.deepEqual(report.violations.map((x) => x.rule), ["run_export"], name);
  }
  for (
    const ok of [
      "export function run() {}",
      "export async function run(args) {}",
      "export const run = (args, libos) => args;",
      "export default function run(args, libos) {}",
    ]
  ) {
    assert.equal((await v.validate(ok)).ok, true, ok);
  }
});

Deno.test("JitValidator.validate() checks code in every position the AST can hide it", async () => {
  await using v = new JitValidator();
  // One forbidden name per line, each in a different syntactic home.
  const homes = [
    "class A { m(x = Deno) {} }",
    "class B { #p(x = Deno) {} }",
    "class C { static s(x = Deno) {} }",
    "class D { set v(x = Deno) {} }",
    "class E { get g() { return Deno; } }",
    "class F { f = Deno; static { Deno; } }",
    "class G { [Deno.x]() {} }",
    "const o = { set v(x = Deno) {}, m(y = Deno) {} };",
    "const f = (a = Deno) => a;",
    "const { a = Deno } = {};",
    "function g([b = Deno] = []) {}",
    "const t = `${Deno}`;",
    "label: for (const k of [Deno]) break label;",
    "enum En { A = Deno.pid }",
    "namespace Ns { export const x = Deno; }",
    "const c = new (class extends (Deno as any) {})();",
  ];
  const source = `${homes.join("\n")}\n${RUN}`;
  const report = await v.validate(source);
  const lines = new Set(
    report.violations.filter((x) => x.rule === "forbidden_global").map((x) => x.line),
  );
  const missed = homes.filter((_, i) => !lines.has(i + 1));
  assert.deepEqual(missed, [], "every home's Deno is found");
});

Deno.test("JitValidator.transpile() strips types and nothing else; a transpile leaves later positions right", async () => {
  await using v = new JitValidator();
  const typed = `interface In { n: number }
export function run(args: In, libos: unknown): number { return (args.n as number) + 1; }
`;
  const js = await v.transpile(typed);
  assert.ok(js !== undefined);
  assert.doesNotMatch(js, /interface|: number|as number/);
  assert.match(js, /export function run\(args, libos\)/);
  assert.equal(await v.transpile("const = ;"), undefined, "a syntax error transpiles to nothing");
  // swc numbered the transpiled sources' positions too: the next check must not drift.
  const report = await v.validate(`const a = 1;\n  eval("x");\n${RUN}`);
  assert.deepEqual(report.violations.map((x) => [x.rule, x.line, x.column]), [["eval", 2, 3]]);
});
