/**
 * A JIT call blocked on a human approval when its runtime is SIGKILLed (DESIGN §6, §7): the next
 * runtime reports `interrupted_by_restart` to the process, cancels the approval (approving it
 * later does nothing), never re-runs the call, and no sandbox process outlives the host.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { ActionRecord } from "../runtime/process/action_ledger.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { exists, processesWith, spawnTestChild } from "./shell_fixture.ts";

/** Polls (real time) until `find` returns something. */
async function eventually<T>(find: () => T | undefined, what: string, ms = 60_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A pending request's id, read through a separate read-only connection. */
function pendingRequest(db: string): string | undefined {
  try {
    const raw = new DatabaseSync(db, { readOnly: true });
    try {
      const row = raw.prepare("SELECT id FROM human_requests WHERE status = 'pending'").get();
      return row ? String(row.id) : undefined;
    } finally {
      raw.close();
    }
  } catch {
    return undefined; // not created yet
  }
}

Deno.test("JIT restart: a call blocked on an approval when the host is SIGKILLed is interrupted_by_restart, its approval cancelled, nothing run, no orphan", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-jitrestart-" }));
  try {
    const workspace = join(root, "ws");
    const state = join(root, "state");
    const temp = join(root, "tmp");
    for (const dir of [workspace, state, temp]) Deno.mkdirSync(dir);
    Deno.writeTextFileSync(join(workspace, "victim.txt"), "keep me");
    const db = join(root, "jit.db");
    // Its sandboxes live under this TMPDIR: their command lines carry it.
    const child = spawnTestChild("_jit_restart_child.ts", [workspace, db, state], {
      env: { TMPDIR: temp },
      stderr: "piped",
    });
    const request = await eventually(() => pendingRequest(db), "the tool's approval request");
    assert.ok(processesWith(temp).length >= 1, "control: the tool's sandbox is alive, blocked");
    child.kill("SIGKILL");
    assert.equal((await child.status).signal, "SIGKILL");
    await child.stderr.cancel();
    await eventually(() => processesWith(temp).length === 0 ? true : undefined, "no orphan", 5_000);

    await using runtime = await createRuntime({
      workspace,
      db,
      mode: "workspace-write",
      human: "queue",
      env: { get: (n) => (n === "XDG_STATE_HOME" ? state : undefined) },
    });
    const [p] = runtime.processes.list();
    assert.ok(p);
    assert.equal(
      runtime.ledger.list(p.pid).find((a) => a.kind === "jit.call")?.status,
      "executing",
    );
    const seen: ActionRecord[] = [];
    using scheduler = runtime.scheduler({
      runQuantum(ctx) {
        seen.push(...ctx.recovered);
        return Promise.resolve({ type: "exit" });
      },
    });
    const recovery = scheduler.recover();
    assert.deepEqual(recovery.outcomeUnknown.map((a) => a.kind), ["jit.call"]);
    await scheduler.runUntilIdle();
    assert.deepEqual(
      seen.map((a) => [a.kind, !a.outcome?.ok && a.outcome?.error.code]),
      [["jit.call", "interrupted_by_restart"]],
      "the process is told its call was interrupted",
    );
    assert.equal(runtime.human.get(request).status, "cancelled", "the approval is withdrawn");
    assert.throws(() => runtime.human.approve(request, { by: "human:late" }));
    assert.ok(exists(join(workspace, "victim.txt")), "the delete never ran");
    assert.equal(Deno.readTextFileSync(join(workspace, "victim.txt")), "keep me");
    assert.equal(runtime.audit.query({ action: "human.cancel" }).length, 1);
    runtime.store.flush();
    assert.ok(runtime.audit.verify({ head: true }).ok, "the audit chain survived the kill");
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
