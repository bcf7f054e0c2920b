import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { FakeClock } from "../base/clock.ts";
import {
  CapabilityDeniedError,
  HumanDecisionError,
  HumanPendingError,
  IllegalTransitionError,
  NotFoundError,
  StoreError,
  ValidationError,
} from "../base/errors.ts";
import type { HumanDecision, HumanPrompt } from "./human_channel.ts";
import { seededIds } from "../base/ids.ts";
import { createRuntime, type Runtime, type RuntimeOptions } from "../runtime.ts";

interface Fixture extends AsyncDisposable {
  readonly runtime: Runtime;
  readonly workspace: string;
  readonly clock: FakeClock;
  readonly pid: string;
}

async function fixture(options: RuntimeOptions = {}): Promise<Fixture> {
  const workspace = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-human-" }));
  const clock = new FakeClock(Date.UTC(2026, 10, 29, 12));
  const runtime = await createRuntime({
    workspace,
    db: ":memory:",
    mode: "workspace-write",
    human: "queue",
    clock,
    ids: seededIds(5),
    ...options,
  });
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  return {
    runtime,
    workspace,
    clock,
    pid,
    async [Symbol.asyncDispose]() {
      await runtime.close();
      Deno.removeSync(workspace, { recursive: true });
    },
  };
}

/** A prompt that answers from a script and records what it was shown. */
function scripted(answers: HumanDecision[], shown: string[] = []): HumanPrompt {
  return {
    decide(_request, rendered) {
      shown.push(rendered);
      const next = answers.shift();
      if (!next) throw new Error("the script ran out of answers");
      return Promise.resolve(next);
    },
  };
}

const NEVER = new AbortController().signal;

Deno.test("HumanChannel.ask() in queue mode parks on a durable question; the answer comes back on resume", async () => {
  await using f = await fixture();
  const human = f.runtime.human;
  const pending = await human.ask(f.pid, "Which branch should I deploy?").then(
    () => assert.fail("a queued question cannot be answered at once"),
    (e: unknown) => e,
  );
  assert.ok(pending instanceof HumanPendingError);
  assert.equal(pending.code, "human_pending");
  const request = human.get(pending.request);
  assert.equal(request.kind, "question");
  assert.equal(request.text, "Which branch should I deploy?");
  assert.deepEqual(await human.resume(f.pid, request.id, NEVER), {
    type: "pending",
    request: request.id,
  });
  human.answer(request.id, { by: "human:test", text: "release/2026-11" });
  const resumed = await human.resume(f.pid, request.id, NEVER);
  assert.equal(resumed.type, "outcome");
  assert.deepEqual(resumed.type === "outcome" && resumed.outcome, {
    ok: true,
    value: { answer: "release/2026-11" },
  });
  assert.throws(
    () => human.answer(request.id, { by: "human:test", text: "again" }),
    IllegalTransitionError,
  );
  const audited = f.runtime.audit.query({ action: "human.answer", limit: 10 });
  assert.deepEqual(audited.map((r) => [r.actor, r.correlation]), [["human:test", request.id]]);
});

Deno.test("HumanChannel.ask() in interactive mode returns the typed answer at once", async () => {
  const shown: string[] = [];
  await using f = await fixture({
    human: "interactive",
    prompt: scripted([{ type: "answer", text: "main" }], shown),
  });
  assert.equal(await f.runtime.human.ask(f.pid, "Branch?\x1b[2J"), "main");
  assert.match(shown[0]!, /^Question request hreq_/);
  assert.ok(shown[0]!.includes(String.raw`Branch?\x1B[2J`), "the question is shown escaped");
  assert.deepEqual(f.runtime.human.list({ statuses: ["answered"] }).map((r) => r.text), [
    "Branch?\x1b[2J",
  ]);
});

Deno.test("HumanChannel.requestPermission() mints the requested capability only when a human approves", async () => {
  await using f = await fixture({ mode: "full-access" });
  const human = f.runtime.human;
  const action = {
    resource: { type: "net", key: "registry.npmjs.org" },
    right: "connect",
  } as const;
  assert.equal(f.runtime.authority.decide(f.pid, action).effect, "deny");
  const pending = await human.requestPermission(f.pid, {
    resource: { type: "net", key: "registry.npmjs.org", scope: "exact" },
    rights: ["connect"],
    reason: "install dependencies",
  }).catch((e: unknown) => e);
  assert.ok(pending instanceof HumanPendingError);
  assert.equal(
    f.runtime.authority.capabilities.list(f.pid).filter((c) => c.resource.type === "net").length,
    0,
  );
  const approved = human.approve(pending.request, { by: "human:test" });
  const minted = approved.response?.capabilities ?? [];
  assert.equal(minted.length, 1);
  const cap = f.runtime.authority.capabilities.get(minted[0]!);
  assert.deepEqual(cap.resource, { type: "net", key: "registry.npmjs.org", scope: "exact" });
  assert.equal(cap.issuer, `human:${pending.request}`);
  assert.equal(f.runtime.authority.decide(f.pid, action).effect, "allow");
  const resumed = await human.resume(f.pid, pending.request, NEVER);
  assert.deepEqual(resumed.type === "outcome" && resumed.outcome, {
    ok: true,
    value: { capabilities: minted },
  });
});

Deno.test("HumanChannel.output() needs human:owner write: a process whose grant was revoked cannot reach the human (attack: spam the operator)", async () => {
  await using f = await fixture();
  const human = f.runtime.human;
  const sent = human.output(f.pid, "Tests pass; opening a PR.");
  assert.equal(sent.status, "delivered");
  const grant = f.runtime.authority.capabilities.list(f.pid).find((c) =>
    c.resource.type === "human"
  );
  assert.ok(grant, "every mode grants human:owner write");
  f.runtime.authority.capabilities.revoke(grant.id);
  const before = human.list({ statuses: ["delivered", "pending"] }).length;
  assert.throws(() => human.output(f.pid, "URGENT: run rm -rf"), CapabilityDeniedError);
  await assert.rejects(human.ask(f.pid, "May I?"), CapabilityDeniedError);
  assert.equal(human.list({ statuses: ["delivered", "pending"] }).length, before, "nothing stored");
});

Deno.test("HumanChannel.interrupt() stores the human's message and interrupts the process", async () => {
  await using f = await fixture();
  const sent = f.runtime.human.interrupt(f.pid, "stop and summarise", "human:test");
  assert.equal(sent.kind, "interrupt");
  assert.equal(f.runtime.processes.get(f.pid).interrupts, 1);
  assert.equal(
    f.runtime.audit.query({ action: "human.interrupt", limit: 5 })[0]?.correlation,
    sent.id,
  );
  assert.throws(() => f.runtime.human.interrupt("pid_000000000000", "x", "human:test"));
});

Deno.test("HumanChannel.expireDue() turns an overdue request into an audited rejection and wakes its process", async () => {
  await using f = await fixture({ humanTtlMs: 1000 });
  const pending = await f.runtime.human.ask(f.pid, "still there?").catch((e: unknown) => e);
  assert.ok(pending instanceof HumanPendingError);
  f.runtime.processes.beginQuantum(f.pid);
  f.runtime.processes.endQuantum(f.pid, { type: "wait_human", request: pending.request }, {
    interrupts: 0,
    wake: null,
  });
  assert.equal(f.runtime.processes.get(f.pid).status, "waiting_human");
  assert.deepEqual(f.runtime.human.expireDue(), []);
  f.clock.advance(1000);
  assert.deepEqual(f.runtime.human.expireDue().map((r) => r.status), ["expired"]);
  assert.equal(f.runtime.processes.get(f.pid).status, "runnable");
  assert.deepEqual(f.runtime.processes.get(f.pid).wake, {
    kind: "human",
    request: pending.request,
  });
  const resumed = await f.runtime.human.resume(f.pid, pending.request, NEVER);
  assert.equal(
    resumed.type === "outcome" && !resumed.outcome.ok && resumed.outcome.error.code,
    "approval_expired",
  );
  assert.throws(
    () => f.runtime.human.answer(pending.request, { by: "human:late", text: "yes" }),
    IllegalTransitionError,
  );
});

Deno.test("HumanChannel refuses bad decisions with typed errors and changes nothing", async () => {
  await using f = await fixture();
  const human = f.runtime.human;
  const q = await human.ask(f.pid, "q?").catch((e: unknown) => e);
  assert.ok(q instanceof HumanPendingError);
  assert.throws(() => human.get("hreq_000000000000"), NotFoundError);
  assert.throws(() => human.approve(q.request, { by: "human:test" }), IllegalTransitionError);
  assert.throws(
    () => human.answer(q.request, { by: "human:test", text: "x".repeat(100_001) }),
    ValidationError,
  );
  assert.throws(
    () => human.reject(q.request, { by: "human:test", reason: "r".repeat(4097) }),
    ValidationError,
  );
  await assert.rejects(human.resume("pid_000000000000", q.request, NEVER), IllegalTransitionError);
  assert.equal(human.get(q.request).status, "pending");
});

Deno.test("HumanChannel in mode none refuses questions and permission requests at once", async () => {
  await using f = await fixture({ human: "none" });
  await assert.rejects(
    f.runtime.human.ask(f.pid, "q?"),
    (e: unknown) => e instanceof HumanDecisionError && e.code === "human_unavailable",
  );
  await assert.rejects(
    f.runtime.human.requestPermission(f.pid, {
      resource: { type: "net", key: "example.org", scope: "exact" },
      rights: ["connect"],
      reason: "r",
    }),
    (e: unknown) => e instanceof HumanDecisionError && e.code === "human_unavailable",
  );
  assert.deepEqual(f.runtime.human.list({ statuses: ["pending"] }), []);
});

Deno.test("createRuntime() refuses an unknown human mode, and interactive without a prompt, before opening anything", async () => {
  const workspace = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-human-" }));
  try {
    const db = join(workspace, "..", `${crypto.randomUUID()}.db`);
    await assert.rejects(
      createRuntime({ workspace, db, human: "sometimes" as "queue" }),
      ValidationError,
    );
    await assert.rejects(createRuntime({ workspace, db, human: "interactive" }), ValidationError);
    assert.throws(() => Deno.statSync(db), Deno.errors.NotFound, "no database was created");
  } finally {
    Deno.removeSync(workspace, { recursive: true });
  }
});

Deno.test("HumanChannel.get() reports a request edited outside libos as store_corrupt", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-human-" }));
  try {
    const db = join(root, "h.db");
    const workspace = join(root, "ws");
    Deno.mkdirSync(workspace);
    let id: string;
    {
      await using runtime = await createRuntime({ workspace, db, human: "queue" });
      const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
      const e = await runtime.human.ask(pid, "q?").catch((e: unknown) => e);
      assert.ok(e instanceof HumanPendingError);
      id = e.request;
    }
    const raw = new DatabaseSync(db);
    raw.prepare("UPDATE human_requests SET data = ? WHERE id = ?").run('{"id":1}', id);
    raw.close();
    await using runtime = await createRuntime({ workspace, db, human: "queue" });
    assert.throws(
      () => runtime.human.get(id),
      (e: unknown) => e instanceof StoreError && e.code === "store_corrupt",
    );
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
