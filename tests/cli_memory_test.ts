/**
 * The object memory commands of the `libos` command line: memory namespace, ls, show.
 */
import assert from "node:assert/strict";
import { createRuntime } from "../runtime/runtime.ts";
import { OPERATOR_ACTOR } from "../runtime/memory/object_memory.ts";
import { sandbox } from "./_cli_sandbox.ts";

Deno.test("libos memory namespace, ls and show work on the workspace database as the operator, escaping payloads", async () => {
  using s = sandbox();
  assert.equal((await s.cli("init")).status, 0);
  const made = await s.json("memory", "namespace", "project");
  assert.equal(made.status, 0, made.stdout);
  assert.equal((await s.json("memory", "namespace", "project")).status, 1, "exists already");
  assert.equal((await s.json("memory", "namespace", "Bad Key")).status, 1);
  let oid: string;
  {
    await using runtime = await createRuntime({
      workspace: s.workspace,
      env: { get: (n) => (n === "XDG_STATE_HOME" ? s.state : undefined) },
      cwd: s.workspace,
    });
    oid = runtime.memory.create(OPERATOR_ACTOR, {
      namespace: "project",
      name: "plan",
      type: "note",
      payload: "step 1\n\x1b[2Jstep 2",
      tags: ["plan"],
      provenance: { source: "user", label: "operator", ref: null },
    }).oid;
  }
  const listed = await s.cli("memory", "ls", "--namespace", "project");
  assert.equal(listed.status, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(`${oid}\\s+project\\s+plan\\s+note\\s+v1`));
  const shown = await s.cli("memory", "show", oid);
  assert.equal(shown.status, 0, shown.stderr);
  assert.ok(!shown.stdout.includes("\x1b"), "the payload is escaped");
  assert.match(shown.stdout, /│ step 1\n {2}│ \\x1B\[2Jstep 2/);
  const json = await s.json("memory", "show", oid);
  assert.equal(json.doc.payload as string, "step 1\n\x1b[2Jstep 2");
  const missing = await s.json("memory", "show", "obj_000000000000");
  assert.equal(missing.status, 1);
  assert.equal((missing.doc.error as { code: string }).code, "not_found");
  const usage = await s.cli("memory", "ls");
  assert.equal(usage.status, 2);
});
