import assert from "node:assert/strict";
import { type Action, compileProtection, type DecisionContext } from "../authority/decide.ts";
import { HardlineLayer } from "./policy_layers.ts";
import { ShellParser } from "./shell_script.ts";

const CONTEXT: DecisionContext = {
  mode: "full-access",
  denies: [],
  wall: true,
  protection: compileProtection(),
};
const shell = (argv: string[]): Action => ({ resource: { type: "shell", argv }, right: "execute" });

Deno.test("HardlineLayer fails closed on a script body it cannot look into (attack: rm -rf / hidden in sh -c while the parser is not loaded)", async () => {
  const hidden = shell(["sh", "-c", "echo hi; rm -rf /"]);
  const blind = new HardlineLayer(() => null);
  assert.deepEqual(blind.decide({ pid: "p" }, hidden, CONTEXT), {
    effect: "deny",
    reason: "hardline:unparsed-script",
    layer: "hardline",
  });
  // Control: a plain argv needs no parser, and passes the floor.
  assert.equal(blind.decide({ pid: "p" }, shell(["ls", "-la"]), CONTEXT), undefined);
  // With the parser loaded the floor sees the command itself.
  const parser = new ShellParser();
  await parser.load();
  const seeing = new HardlineLayer(() => parser);
  const decision = seeing.decide({ pid: "p" }, hidden, CONTEXT);
  assert.equal(decision?.effect, "deny");
  assert.match(decision?.reason ?? "", /^hardline:/);
  assert.notEqual(decision?.reason, "hardline:unparsed-script");
  assert.equal(seeing.decide({ pid: "p" }, shell(["sh", "-c", "echo hi"]), CONTEXT), undefined);
});
