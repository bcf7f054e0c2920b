import assert from "node:assert/strict";
import { JitValidator } from "./validator.ts";

const RUN = "\nexport function run(args, libos) { return args; }\n";

Deno.test("JitValidator.validate() accepts a name that only equals a global's or a route key's, where it cannot reach a lookup", async () => {
  await using v = new JitValidator();
  const accepted: [string, string][] = [
    [
      "compared to a global's name",
      `export const f = (name) => name === "Deno" ? "runtime" : name;`,
    ],
    ["a label naming a global", `const label = "process";\nconst engine = "Deno";`],
    ["printed", `console.log("eval");\nconsole.log(\`Function\`);`],
    [
      "sent to the host",
      `export const g = (libos) => libos.call("human.output", { text: "Reflect" });`,
    ],
    [
      "in a list of words",
      `const banned = ["eval", "Function", "Deno"];\nexport const h = (w) => banned.includes(w);`,
    ],
    ["an object literal's key", `const o = { Deno: 1, "eval": 2, globalThis: 3 };`],
    // A route key is fine while the program looks nothing up by a run-time key.
    [
      "a route key as a value, no run-time lookup",
      `const reserved = ["constructor", "__proto__"];`,
    ],
    // Compared, a route key goes nowhere, whatever else the program looks up.
    [
      "a pollution guard comparing keys",
      `export function merge(t, s) {
  for (const key of Object.keys(s)) {
    if (key === "__proto__" || key === "constructor") continue;
    t[key] = s[key];
  }
  return t;
}`,
    ],
    [
      "a switch on keys",
      `export const pick = (o, k) => { switch (k) { case "constructor": case "__proto__": return undefined; default: return o[k]; } };`,
    ],
    ["a spelled name never looked up", `const k = "con" + "structor";`],
  ];
  for (const [name, code] of accepted) {
    assert.deepEqual((await v.validate(code + RUN)).violations, [], name);
  }
});

Deno.test("JitValidator.validate() attack: a route key kept as a value in a program that looks properties up by run-time keys is refused, and so is every lookup by a name that routes out", async () => {
  await using v = new JitValidator();
  const refused: [string, string, string][] = [
    ["a global's name as a key", `export const f = (o) => o["Deno"];`, "dangerous_string"],
    [
      "a global's name built as a key",
      `export const f = (o) => o["ev" + "al"];`,
      "dangerous_string",
    ],
    ["constructor as a key", `export const f = (o) => o["constructor"];`, "constructor_access"],
    [
      "a const spelling constructor as a key",
      `const k = "con" + "structor";\nexport const f = (o) => o[k];`,
      "constructor_access",
    ],
    [
      "a reflection name as a key",
      `export const f = (x) => Object["getPrototypeOf"](x);`,
      "reflection",
    ],
    [
      "a legacy accessor as a key",
      `export const f = () => ({})["__lookupGetter__"];`,
      "proto_access",
    ],
    [
      "constructor through a let into a lookup",
      `let k = "constructor";\nexport const f = (o) => o[k];`,
      "dangerous_string",
    ],
    [
      "constructor through an argument into a lookup",
      `const get = (o, k) => o[k];\nexport const f = () => get(f, "constructor");`,
      "dangerous_string",
    ],
    [
      "an object literal's key enumerated into a lookup",
      `export const f = (x) => Object.keys({ constructor: 0 }).map((k) => x[k]);`,
      "dangerous_string",
    ],
    [
      "constructor into a parameter that shadows a harmless const of the same name",
      `const k = "name";\nconst get = (o, k) => o[k];\nexport const f = () => get(f, "constructor");`,
      "dangerous_string",
    ],
    [
      "a function's name into a lookup",
      `const getPrototypeOf = () => 0;\nexport const f = (x) => Object[getPrototypeOf.name](x);`,
      "dangerous_string",
    ],
    [
      "a reflection name through a let",
      `let k = "getOwnPropertyNames";\nexport const f = (x) => Object[k](x);`,
      "dangerous_string",
    ],
  ];
  for (const [name, code, rule] of refused) {
    const report = await v.validate(code + RUN);
    assert.equal(report.ok, false, name);
    assert.ok(report.violations.some((x) => x.rule === rule), `${name}: ${JSON.stringify(report)}`);
  }
  // The finding names the lookup the string could reach.
  const report = await v.validate(`let k = "constructor";\nexport const f = (o) => o[k];${RUN}`);
  const finding = report.violations.find((x) => x.rule === "dangerous_string");
  assert.equal(finding?.line, 1);
  assert.match(finding!.message, /line 2, column 27/);
  assert.match(finding!.message, /compare against it directly/);
});
