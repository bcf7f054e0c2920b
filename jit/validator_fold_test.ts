import assert from "node:assert/strict";
import { JitValidator } from "./validator.ts";

const RUN = "\nexport function run(args, libos) { return args; }\n";

Deno.test("JitValidator.validate() folds strings the source spells piecewise, and not what arrives at run time", async () => {
  await using v = new JitValidator();
  const spelled: [string, string][] = [
    ["concatenation", `const k = "con" + "struc" + "tor";`],
    ["template", "const k = `con${'struc'}tor`;"],
    ["join", `const k = ["con", "structor"].join("");`],
    ["reverse", `const k = "rotcurtsnoc".split("").reverse().join("");`],
    ["char codes", "const k = String.fromCharCode(68, 101, 110, 111);"],
    ["through names", `const a = "con"; const b = a + "struc"; const k = b.concat("tor");`],
    ["through an object", `const o = { p: "De" }; const k = o.p + "no";`],
    ["case change", `const k = "EVAL".toLowerCase();`],
    ["replace", `const k = "glXbalThis".replace("X", "o");`],
    // Names are followed regardless of scope: a parameter shadowing a const is taken for the
    // const — one refusal too many, on the safe side.
    ["a shadowed name", `const a = "con"; function f(a) { return a + "structor"; }`],
  ];
  // Where the name reaches a lookup: the key of a computed access.
  const lookup = "\nexport const probe = (o) => o[k];";
  for (const [name, code] of spelled) {
    const report = await v.validate(code + lookup + RUN);
    assert.ok(report.violations.some((x) => x.rule === "dangerous_string"), name);
    // Spelled but never looked up, the name reaches nothing.
    assert.deepEqual((await v.validate(code + RUN)).violations, [], `${name} as a value`);
  }
  const harmless: [string, string][] = [
    ["a message", `const k = "con" + "nection lost";`],
    ["numbers", "const k = 1 + 2;"],
    ["from arguments", `const k = String(Date.now()) + "x";`],
  ];
  for (const [name, code] of harmless) {
    const report = await v.validate(code + lookup + RUN);
    assert.equal(report.violations.some((x) => x.rule === "dangerous_string"), false, name);
  }
});
