import assert from "node:assert/strict";
import { JitSandbox } from "./sandbox.ts";
import { JitValidator } from "./validator.ts";

/** The export forms models write; each tool returns `[args.n, <a syscall's answer>]`. */
const ACCEPTED: readonly (readonly [string, string])[] = [
  [
    "export function",
    `export function run(args, libos) { return libos.call("clock.now", {}).then((t) => [args.n, t]); }`,
  ],
  [
    "export async function",
    `export async function run(args, libos) { return [args.n, await libos.call("clock.now", {})]; }`,
  ],
  [
    "export const async arrow",
    `export const run = async (args, libos) => [args.n, await libos.call("clock.now", {})];`,
  ],
  [
    "export const arrow with types and a typed binding",
    `type Tool = (args: { n: number }, libos: { call(n: string, a: object): Promise<unknown> }) => Promise<unknown>;
export const run: Tool = async (args, libos) => [args.n, await libos.call("clock.now", {})];`,
  ],
  [
    "export const function expression",
    `export const run = async function (args, libos) { return [args.n, await libos.call("clock.now", {})]; };`,
  ],
  [
    "export const arrow with satisfies",
    `export const run = (async (args, libos) => [args.n, await libos.call("clock.now", {})]) satisfies Function;`,
  ],
  [
    "export default async function run",
    `export default async function run(args, libos) { return [args.n, await libos.call("clock.now", {})]; }`,
  ],
  [
    "export default anonymous function",
    `export default function (args, libos) { return libos.call("clock.now", {}).then((t) => [args.n, t]); }`,
  ],
  [
    "export default async arrow",
    `export default async (args, libos) => [args.n, await libos.call("clock.now", {})];`,
  ],
  [
    "export default of a local function",
    `async function handler(args, libos) { return [args.n, await libos.call("clock.now", {})]; }
export default handler;`,
  ],
  [
    "export { run } of a local function",
    `async function run(args, libos) { return [args.n, await libos.call("clock.now", {})]; }
export { run };`,
  ],
  [
    "export { handler as run }",
    `async function handler(args, libos) { return [args.n, await libos.call("clock.now", {})]; }
export { handler as run };`,
  ],
  [
    "const run, then export { run }",
    `const run = async (args, libos) => [args.n, await libos.call("clock.now", {})];
export { run };`,
  ],
  [
    "export { handler as default }",
    `const handler = async (args, libos) => [args.n, await libos.call("clock.now", {})];
export { handler as default };`,
  ],
  [
    "a const bound to another const",
    `const impl = async (args, libos) => [args.n, await libos.call("clock.now", {})];
const handler = impl;
export const run = handler;`,
  ],
  [
    "run wins over a default export that is not a function",
    `export default { name: "clock" };
export async function run(args, libos) { return [args.n, await libos.call("clock.now", {})]; }`,
  ],
  [
    "a default function beside a type-only run",
    `export type { Run as run };
type Run = number;
export default async (args, libos) => [args.n, await libos.call("clock.now", {})];`,
  ],
  [
    "overload signatures before the implementation",
    `export function run(args: { n: number }): Promise<unknown>;
export function run(args: { n: number }, libos?: { call(n: string, a: object): Promise<unknown> }): Promise<unknown>;
export async function run(args: { n: number }, libos?: { call(n: string, a: object): Promise<unknown> }) {
  return [args.n, await libos!.call("clock.now", {})];
}`,
  ],
];

/** Forms refused, each with words of the advice it must give. */
const REFUSED: readonly (readonly [string, string, RegExp])[] = [
  [
    "no run at all",
    `export function main(args, libos) { return 1; }`,
    /must export a function named `run`/,
  ],
  [
    "run not exported",
    `function run(args, libos) { return 1; }`,
    /must export a function named `run`/,
  ],
  ["the empty source", ``, /must export a function named `run`/],
  ["run is a number", `export const run = 42;`, /`run` is computed by an expression/],
  ["run is a string", `export const run = "go";`, /`run` is computed by an expression/],
  ["run is an object", `export const run = { go() {} };`, /`run` is computed by an expression/],
  ["run is a class", `export class run {}`, /`run` is a class/],
  ["run is a class expression", `export const run = class {};`, /`run` is a class/],
  ["run is an exported class", `class Tool {}\nexport { Tool as run };`, /`run` is a class/],
  ["run is let", `export let run = (args, libos) => 1;`, /declared with `let` or `var`/],
  ["run is var", `var run = (args, libos) => 1;\nexport { run };`, /declared with `let` or `var`/],
  [
    "run built by a call",
    `const wrap = (f) => f;\nexport const run = wrap((a) => a);`,
    /computed by an expression/,
  ],
  ["run is an enum", `export enum run { A }`, /`run` is not a function/],
  ["run is a namespace", `export namespace run { export const a = 1; }`, /`run` is not a function/],
  [
    "run re-exported from the vetted module",
    `export { words as run } from "jsr:@libos/std";`,
    /comes from another module/,
  ],
  [
    "run imported, then exported",
    `import { words } from "jsr:@libos/std";\nexport { words as run };`,
    /is imported from another module/,
  ],
  ["run is a generator", `export function* run(args, libos) { yield 1; }`, /not a generator/],
  [
    "run is an async generator",
    `export const run = async function* (a) { yield 1; };`,
    /not a generator/,
  ],
  ["run takes three parameters", `export const run = (a, b, c) => c;`, /at most two parameters/],
  [
    "run is only declared",
    `export declare function run(args, libos): unknown;`,
    /must export a function named `run`/,
  ],
  ["default is a number", `export default 42;`, /the default export is computed by an expression/],
  ["default is a class", `export default class {}`, /the default export is a class/],
  [
    "default is an undeclared name",
    `export default handler;`,
    /the default export is not a function declared/,
  ],
];

Deno.test("JitValidator.validate() accepts the export forms models write, and each one runs in the real sandbox as TypeScript and as the JavaScript a registered tool runs", async () => {
  await using validator = new JitValidator();
  await using sandbox = new JitSandbox();
  const failures: string[] = [];
  for (const [name, source] of ACCEPTED) {
    const report = await validator.validate(source);
    if (!report.ok) {
      failures.push(`${name}: refused ${JSON.stringify(report.violations)}`);
      continue;
    }
    const compiled = await validator.transpile(source);
    assert.ok(compiled !== undefined, name);
    for (const [language, code] of [["typescript", source], ["javascript", compiled]] as const) {
      const seen: string[] = [];
      const result = await sandbox.call(
        code,
        { n: 7 },
        (syscall) => {
          seen.push(syscall);
          return Promise.resolve("noon");
        },
        undefined,
        { language },
      );
      if (JSON.stringify(result.value) !== '[7,"noon"]' || seen.join() !== "clock.now") {
        failures.push(`${name} (${language}): ran to ${JSON.stringify(result.value)}`);
      }
    }
  }
  assert.deepEqual(failures, []);
});

Deno.test("JitValidator.validate() refuses a tool without a callable run with one run_export finding that says what to write, and the sandbox would not have run it either", async () => {
  await using validator = new JitValidator();
  const failures: string[] = [];
  for (const [name, source, advice] of REFUSED) {
    const report = await validator.validate(source);
    const found = report.violations.filter((v) => v.rule === "run_export");
    if (found.length !== 1 || !advice.test(found[0]!.message)) {
      failures.push(`${name}: ${JSON.stringify(report.violations)}`);
    } else if (!/write `export async function run\(args, libos\)/.test(found[0]!.message)) {
      failures.push(`${name}: no advice in ${found[0]!.message}`);
    }
  }
  assert.deepEqual(failures, []);
  // The harness agrees: a module whose run is not a function is an error, and nothing runs.
  await using sandbox = new JitSandbox();
  let calls = 0;
  const ran = sandbox.call(`export const run = 42;\nexport default () => "ran";`, {}, () => {
    calls++;
    return Promise.resolve(null);
  });
  await assert.rejects(ran, /exports no run function/);
  assert.equal(calls, 0);
});
