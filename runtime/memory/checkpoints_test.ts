import assert from "node:assert/strict";
import { join } from "node:path";
import { allow } from "../../tests/authority_fixture.ts";
import { IllegalTransitionError } from "../base/errors.ts";
import { testRuntime } from "../../testing.ts";

async function fixture() {
  const t = await testRuntime({ prefix: "libos-cp-", dirs: ["src"], mode: "workspace-write" });
  return { ...t, pid: t.spawn({ goal: "work", image: "coding-agent:v0" }) };
}

Deno.test("Checkpoints.restore() puts back the process's shape, objects and capabilities, and lists the external effects it cannot undo", async () => {
  await using f = await fixture();
  const { runtime, pid } = f;
  const memory = runtime.memory;
  const kept = memory.create(pid, {
    type: "plan",
    payload: ["step 1"],
    provenance: { source: "model", label: "m", ref: null },
  });
  const doomed = memory.create(pid, {
    type: "note",
    payload: "keep me",
    provenance: { source: "model", label: "m", ref: null },
  });
  const cp = runtime.checkpoints.create(pid, "before the change");
  // After the checkpoint: objects changed, added and deleted, a capability, a chdir, a write.
  memory.update(pid, kept.oid, { payload: ["step 1", "step 2"] });
  const added = memory.create(pid, {
    type: "note",
    payload: "later",
    provenance: { source: "model", label: "m", ref: null },
  });
  memory.delete(pid, doomed.oid);
  const cap = allow(runtime, pid, { type: "net", key: "example.com", scope: "exact" }, ["connect"]);
  runtime.processes.chdir(pid, "src");
  await runtime.primitives.fs.writeText(pid, { path: "out.txt", content: "written" });
  const diff = runtime.checkpoints.diff(pid, cp.id);
  assert.deepEqual(diff.objects.changed, [kept.oid]);
  assert.ok(diff.objects.added.includes(added.oid));
  assert.deepEqual(diff.objects.removed, [doomed.oid]);
  assert.deepEqual(diff.capabilities.granted, [cap]);
  assert.deepEqual(diff.process.cwd, { then: ".", now: "src" });
  assert.deepEqual(diff.irreversible.map((e) => e.action), ["fs.write"]);

  const restored = runtime.checkpoints.restore(pid, cp.id);
  assert.deepEqual(restored.irreversible.map((e) => e.action), ["fs.write"], "listed, not undone");
  assert.equal(
    Deno.readTextFileSync(join(f.workspace, "src", "out.txt")),
    "written",
    "the file stays",
  );
  assert.deepEqual(memory.read(pid, kept.oid).payload, ["step 1"]);
  assert.throws(() => memory.read(pid, added.oid));
  const notes = memory.list(pid).filter((o) => o.type === "note").map((o) =>
    memory.read(pid, o.oid).payload
  );
  assert.deepEqual(notes, ["keep me"], "the deleted note is back (under a new id)");
  assert.equal(runtime.processes.get(pid).cwd, ".");
  assert.equal(
    runtime.authority.decide(pid, {
      resource: { type: "net", key: "example.com" },
      right: "connect",
    }).effect === "allow",
    false,
    "the capability granted since is revoked",
  );
  assert.equal(runtime.audit.query({ pid, action: "checkpoint.restore" }).length, 1);
  // Control: a second diff against the same checkpoint now shows no object or capability drift.
  const again = runtime.checkpoints.diff(pid, cp.id);
  assert.deepEqual(again.objects.changed, []);
  assert.deepEqual(again.capabilities.granted, []);
});

Deno.test("Checkpoints attack: a process cannot forge or alter a checkpoint, and a restore refuses a running or finished process", async () => {
  await using f = await fixture();
  const { runtime, pid } = f;
  assert.throws(() =>
    runtime.memory.create(pid, {
      type: "checkpoint",
      payload: { pid },
      provenance: { source: "model", label: "m", ref: null },
    })
  );
  const cp = runtime.checkpoints.create(pid);
  assert.throws(() => runtime.memory.update(pid, cp.id, { payload: { pid, objects: [] } }));
  assert.deepEqual(runtime.checkpoints.list(pid).map((c) => c.id), [cp.id]);
  runtime.processes.exit(pid, { message: "done" });
  assert.throws(() => runtime.checkpoints.restore(pid, cp.id), IllegalTransitionError);
  assert.throws(() => runtime.checkpoints.create(pid), IllegalTransitionError);
});

Deno.test("checkpoint_create through the broker takes a checkpoint the operator can list", async () => {
  await using f = await fixture();
  const result = await f.runtime.tools.invoke(f.pid, {
    name: "checkpoint_create",
    arguments: { label: "before refactoring" },
  }, new AbortController().signal);
  assert.ok(result.ok, result.forModel);
  const [cp] = f.runtime.checkpoints.list(f.pid);
  assert.equal(cp?.label, "before refactoring");
  assert.equal((result.value as { checkpoint: { id: string } }).checkpoint.id, cp?.id);
});

Deno.test("Checkpoints.restore() with more objects than a page deletes only what was added since", async () => {
  await using f = await fixture();
  const { runtime, pid } = f;
  const provenance = { source: "model", label: "m", ref: null } as const;
  for (let i = 0; i < 1_100; i++) {
    runtime.memory.create(pid, { type: "note", payload: i, provenance });
  }
  const cp = runtime.checkpoints.create(pid);
  assert.equal(cp.objects.length, 1_100, "every page was kept");
  const added = runtime.memory.create(pid, { type: "note", payload: "late", provenance });
  const diff = runtime.checkpoints.restore(pid, cp.id);
  assert.deepEqual(diff.objects.added, [added.oid]);
  const count = (after?: string): number => {
    const page = runtime.memory.list("operator", `process:${pid}`, {
      limit: 1000,
      ...(after ? { after } : {}),
    });
    const notes = page.filter((o) => o.type === "note").length;
    return notes + (page.length === 1000 ? count(page.at(-1)!.oid) : 0);
  };
  assert.equal(count(), 1_100);
});
