import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { FakeClock } from "../base/clock.ts";
import { IllegalTransitionError, ValidationError } from "../base/errors.ts";
import { seededIds } from "../base/ids.ts";
import { createRuntime, type Runtime } from "../runtime.ts";

async function withRuntime(
  fn: (runtime: Runtime, dir: string) => Promise<void>,
  seed = 5,
): Promise<void> {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-ledger-" }));
  try {
    Deno.mkdirSync(join(dir, "ws"));
    const runtime = await createRuntime({
      workspace: join(dir, "ws"),
      db: join(dir, "state.db"),
      clock: new FakeClock(),
      ids: seededIds(seed),
      env: { get: (n) => (n === "XDG_STATE_HOME" ? join(dir, "xdg") : undefined) },
    });
    try {
      await fn(runtime, dir);
    } finally {
      await runtime.close();
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

Deno.test("ActionLedger.perform() commits the executing intent before the effect starts", async () => {
  await withRuntime(async (runtime, dir) => {
    const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    let seenByOtherConnection: unknown;
    const outcome = await runtime.ledger.perform(pid, {
      kind: "fs.write",
      request: { path: "a.txt", sha256: "x" },
    }, () => {
      // Another connection (a second terminal, or the database after a crash) sees the intent.
      const other = new DatabaseSync(join(dir, "state.db"), { readOnly: true });
      try {
        seenByOtherConnection = other.prepare("SELECT status, kind FROM actions").get();
      } finally {
        other.close();
      }
      assert.equal(runtime.processes.get(pid).pending !== null, true);
      return Promise.resolve({ written: 12 });
    });
    assert.deepEqual({ ...seenByOtherConnection as object }, {
      status: "executing",
      kind: "fs.write",
    });
    assert.deepEqual(outcome, { ok: true, value: { written: 12 } });
    const [action] = runtime.ledger.list(pid);
    assert.equal(action?.status, "done");
    assert.equal(runtime.processes.get(pid).pending, null);
    assert.deepEqual(
      runtime.audit.query({ pid }).map((r) => r.action).filter((a) => !a.startsWith("capability.")),
      [
        "process.spawn",
        "action.intent",
        "action.done",
      ],
    );
    assert.equal(runtime.audit.query({ action: "action.intent" })[0]?.inputDigest, action?.digest);
  });
});

Deno.test("ActionLedger.guard(): a guard refusing at the intent records nothing and runs nothing; refusing at the effect leaves the intent executing (outcome unknown to a recovery) and runs nothing; lifted, it is asked no more", async () => {
  await withRuntime(async (runtime) => {
    const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    const asked: string[] = [];
    let refuse: "intent" | "effect" | undefined = "intent";
    const lift = runtime.ledger.guard((p, phase) => {
      asked.push(`${p === pid ? "pid" : p}:${phase}`);
      if (phase === refuse) throw new Error(`lease lost (${phase})`);
    });
    let ran = 0;
    const effect = () => {
      ran++;
      return Promise.resolve(null);
    };
    await assert.rejects(
      runtime.ledger.perform(pid, { kind: "fs.write", request: { path: "a" } }, effect),
      /lease lost \(intent\)/,
    );
    assert.deepEqual(runtime.ledger.list(pid), [], "no intent recorded");
    refuse = "effect";
    await assert.rejects(
      runtime.ledger.perform(pid, { kind: "fs.write", request: { path: "b" } }, effect),
      /lease lost \(effect\)/,
    );
    assert.deepEqual(runtime.ledger.list(pid).map((a) => a.status), ["executing"]);
    assert.equal(ran, 0, "no effect ran");
    assert.deepEqual(asked, ["pid:intent", "pid:intent", "pid:effect"]);
    lift();
    refuse = "intent";
    const outcome = await runtime.ledger.perform(
      pid,
      { kind: "fs.write", request: { path: "c" } },
      effect,
    );
    assert.equal(outcome.ok, true);
    assert.equal(ran, 1);
    assert.equal(asked.length, 3, "a lifted guard is not asked");
  });
});

Deno.test("ActionLedger.perform() turns a thrown error into a typed failed outcome, recorded once", async () => {
  await withRuntime(async (runtime) => {
    const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    const outcome = await runtime.ledger.perform(pid, {
      kind: "shell.run",
      request: { argv: ["false"] },
    }, () => {
      throw new ValidationError("the effect refused its input");
    });
    assert.deepEqual(outcome, {
      ok: false,
      error: { code: "validation_failed", message: "the effect refused its input" },
    });
    const [action] = runtime.ledger.list(pid);
    assert.equal(action?.status, "failed");
    assert.throws(
      () => runtime.ledger.finish(action!.id, { ok: true, value: null }),
      IllegalTransitionError,
      "an outcome is recorded once",
    );
  });
});

Deno.test("ActionLedger.begin() refuses a finished process and malformed kinds, recording nothing", async () => {
  await withRuntime(async (runtime) => {
    const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    assert.throws(
      () => runtime.ledger.begin(pid, { kind: "Not A Kind", request: null }),
      ValidationError,
    );
    runtime.processes.exit(pid);
    assert.throws(
      () => runtime.ledger.begin(pid, { kind: "fs.write", request: null }),
      IllegalTransitionError,
    );
    assert.equal(runtime.ledger.list(pid).length, 0);
    await Promise.resolve();
  });
});

Deno.test("ActionLedger.recover() marks actions left executing as outcome_unknown, audits them, and never re-runs them", async () => {
  await withRuntime(async (runtime) => {
    const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    const { id } = runtime.ledger.begin(pid, { kind: "fs.write", request: { path: "b.txt" } });
    const found = runtime.ledger.recover();
    assert.deepEqual(found.map((a) => [a.id, a.status]), [[id, "outcome_unknown"]]);
    assert.equal(found[0]?.outcome?.ok, false);
    assert.equal(!found[0]!.outcome!.ok && found[0]!.outcome!.error.code, "outcome_unknown");
    assert.equal(runtime.audit.query({ action: "action.outcome_unknown" }).length, 1);
    assert.equal(runtime.events.read({ kinds: ["action.outcome_unknown"] }).length, 1);
    assert.deepEqual(runtime.ledger.unreported(pid).map((a) => a.id), [id]);
    runtime.ledger.markReported([id]);
    assert.deepEqual(runtime.ledger.unreported(pid), []);
    assert.deepEqual(runtime.ledger.recover(), [], "recovery is idempotent");
    assert.throws(
      () => runtime.ledger.finish(id, { ok: true, value: null }),
      IllegalTransitionError,
      "a late outcome cannot overwrite the unknown",
    );
    await Promise.resolve();
  });
});
