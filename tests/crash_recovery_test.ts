/**
 * Crash recovery with a real runtime process killed by SIGKILL between an effect's intent and
 * its outcome (DESIGN §6): the database reopens consistent, the interrupted action becomes
 * `outcome_unknown` and is reported to its process as a typed result, the effect is not run
 * again, and the other processes carry on.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import type { ActionRecord } from "../runtime/process/action_ledger.ts";
import { createRuntime } from "../runtime/runtime.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));

async function waitFor(predicate: () => boolean, what: string, ms = 30_000): Promise<void> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test("Crash recovery: a runtime SIGKILLed mid-effect reopens consistent; the action is outcome_unknown, never re-run, and the rest of the run continues", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-crash-" }));
  try {
    const workspace = join(root, "ws");
    const state = join(root, "state");
    Deno.mkdirSync(workspace);
    Deno.mkdirSync(state);
    const db = join(root, "crash.db");
    const marker = join(root, "marker.txt");
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--no-prompt",
        `--config=${join(REPO, "deno.json")}`,
        `--allow-read=${root}`,
        `--allow-write=${root}`,
        join(REPO, "tests", "_crash_child.ts"),
        workspace,
        db,
        state,
        marker,
      ],
      env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const exists = (path: string) => {
      try {
        Deno.statSync(path);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor(() => exists(marker), "the effect to start");
    child.kill("SIGKILL");
    const status = await child.status;
    await child.stderr.cancel();
    assert.equal(status.signal, "SIGKILL", "the child was killed, not finished");

    // Before recovery the database holds the intent, committed before the effect began.
    const raw = new DatabaseSync(db, { readOnly: true });
    const left = raw.prepare("SELECT id, pid, status FROM actions").all();
    const integrity = raw.prepare("PRAGMA integrity_check").get();
    raw.close();
    assert.equal(integrity?.integrity_check, "ok");
    assert.equal(left.length, 1);
    assert.equal(left[0]?.status, "executing");
    const actionId = String(left[0]?.id);
    const effectful = String(left[0]?.pid);

    await using runtime = await createRuntime({
      workspace,
      db,
      env: { get: (n) => (n === "XDG_STATE_HOME" ? state : undefined) },
    });
    assert.ok(
      runtime.audit.verify({ head: true }).ok,
      "the audit chain and its head survived the kill",
    );
    const seen: ActionRecord[] = [];
    const ran: string[] = [];
    using scheduler = runtime.scheduler({
      runQuantum(ctx) {
        ran.push(ctx.process.goal);
        if (ctx.process.pid === effectful) {
          seen.push(...ctx.recovered);
          return Promise.resolve({ type: "exit", message: "saw the unknown outcome" });
        }
        return Promise.resolve({ type: "exit" });
      },
    });
    const recovery = scheduler.recover();
    assert.deepEqual(recovery.outcomeUnknown.map((a) => a.id), [actionId]);
    const report = await scheduler.runUntilIdle();
    assert.equal(report.idle, true);

    assert.deepEqual(seen.map((a) => [a.id, a.status, !a.outcome?.ok && a.outcome?.error.code]), [[
      actionId,
      "outcome_unknown",
      "outcome_unknown",
    ]]);
    assert.equal(Deno.readTextFileSync(marker), "effect ran\n", "the effect ran exactly once");
    for (const p of runtime.processes.list()) {
      assert.equal(p.status, "exited", `${p.goal} finished after the restart`);
    }
    assert.deepEqual(ran.sort(), ["effectful", "steady-1", "steady-2"]);
    assert.equal(runtime.audit.query({ action: "action.outcome_unknown" }).length, 1);
    assert.equal(runtime.ledger.unreported(effectful).length, 0, "reported once, then not again");
    runtime.store.flush();
    assert.ok(runtime.audit.verify({ head: true }).ok);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
