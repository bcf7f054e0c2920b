/**
 * The demo as a behaviour fixture: `deno task demo --json --seed 7` through the real launcher must
 * print exactly the document recorded in `tests/fixtures/demo/seed7.json` (recorded before the
 * layer restructure of issue 22). A refactor that changes what the demo's agents do — a decision,
 * an audit count, an id, a step — changes this document. A deliberate change re-records it:
 * `deno task demo --json --seed 7 > tests/fixtures/demo/seed7.json`, reviewed in the diff.
 */
import assert from "node:assert/strict";
import { sandbox, task } from "./_cli_sandbox.ts";

Deno.test("deno task demo --json --seed 7 prints exactly the recorded document (no behaviour change across refactors)", async () => {
  using s = sandbox();
  const run = await task(s.workspace, s.state, "demo", "--json", "--seed", "7");
  assert.equal(run.status, 0, run.stderr);
  const golden = Deno.readTextFileSync(new URL("./fixtures/demo/seed7.json", import.meta.url));
  assert.equal(run.stdout, golden);
});
