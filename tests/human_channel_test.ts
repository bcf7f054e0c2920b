/**
 * The human channel end to end (DESIGN §4, §5): a process parks on an approval, a human decides
 * with `libos human …` — from another OS process, after a restart or while the runtime runs —
 * and the stored action runs exactly once, or never when rejected or expired.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { ActionOutcome } from "../runtime/process/action_ledger.ts";
import { FakeClock } from "../runtime/base/clock.ts";
import {
  HumanDecisionError,
  HumanPendingError,
  IllegalTransitionError,
} from "../runtime/base/errors.ts";
import type { HumanRequest } from "../runtime/human/human_request.ts";
import { createRuntime, type Runtime, type RuntimeOptions } from "../runtime/runtime.ts";
import type { ProcessDriver } from "../runtime/kernel/scheduler.ts";
import { type Sandbox, sandbox, task } from "./_cli_sandbox.ts";

const TARGET = ".gitmodules";
const CONTENT =
  '[submodule "vendor/lib"]\n\tpath = vendor/lib\n\turl = https://example.org/lib.git\n';

function open(s: Sandbox, options: RuntimeOptions = {}): Promise<Runtime> {
  return createRuntime({
    workspace: s.workspace,
    // The workspace's default database, where `libos` run in the workspace finds it.
    env: { get: (name) => name === "XDG_STATE_HOME" ? s.state : undefined },
    cwd: s.workspace,
    mode: "workspace-write",
    human: "queue",
    ...options,
  });
}

/**
 * A driver whose process writes `content` to the protected `.gitmodules` (an ask under every mode), and
 * when a decision wakes it, records what it was handed back and exits.
 */
function writer(runtime: Runtime, seen: ActionOutcome[], content = CONTENT): ProcessDriver {
  return {
    async runQuantum(ctx) {
      if (ctx.resumed) {
        seen.push(ctx.resumed.outcome);
        return { type: "exit", message: ctx.resumed.outcome.ok ? "written" : "refused" };
      }
      await runtime.primitives.fs.writeText(ctx.process.pid, { path: TARGET, content });
      return { type: "exit", message: "written without asking" };
    },
  };
}

function fileText(s: Sandbox): string | null {
  try {
    return Deno.readTextFileSync(join(s.workspace, TARGET));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/** Effects of fs.write on the target that the audit log records as done. */
function writesDone(runtime: Runtime, pid: string): number {
  return runtime.audit.query({ pid, action: "fs.write", limit: 1000 })
    .filter((r) => r.decision === "allow" && r.resource === `fs:${TARGET}`).length;
}

/** Spawns a process and runs it until it parks on a human; returns its pid and the request. */
async function park(runtime: Runtime, seen: ActionOutcome[]): Promise<[string, HumanRequest]> {
  const pid = runtime.processes.spawn({ goal: "configure the deploy", image: "base-agent:v0" }).pid;
  using scheduler = runtime.scheduler(writer(runtime, seen));
  const report = await scheduler.runUntilIdle();
  assert.equal(report.idle, true);
  assert.equal(runtime.processes.get(pid).status, "waiting_human");
  const [request, ...more] = runtime.human.list({ pid });
  assert.ok(request, "a pending request was stored");
  assert.deepEqual(more, []);
  return [pid, request];
}

Deno.test("HumanChannel (queue): an ask parks the process in waiting_human with the exact pending action stored", async () => {
  using s = sandbox();
  await using runtime = await open(s);
  const [pid, request] = await park(runtime, []);
  assert.equal(request.kind, "approval");
  assert.equal(request.status, "pending");
  assert.equal(runtime.processes.get(pid).wait?.kind, "human");
  const a = request.approval!;
  assert.deepEqual(a.action, {
    primitive: "fs.write",
    args: { path: TARGET, content: CONTENT, overwrite: true },
  });
  assert.equal(a.reason, "protected:**/.gitmodules");
  assert.equal(a.path, TARGET);
  assert.equal(a.absolutePath, join(s.workspace, TARGET));
  assert.equal(a.willCreate, true);
  assert.equal(a.willOverwrite, false);
  assert.equal(a.bytes, new TextEncoder().encode(CONTENT).length);
  assert.match(a.sha256 ?? "", /^[0-9a-f]{64}$/);
  assert.match(a.digest, /^sha256:[0-9a-f]{64}$/);
  assert.equal(fileText(s), null, "nothing is written while the request waits");
  assert.equal(writesDone(runtime, pid), 0);
  // The write's one decision record is its ask; storing the request decides nothing more.
  const asked = runtime.audit.query({ pid, decision: "ask", limit: 10 });
  assert.deepEqual(asked.map((r) => [r.action, r.authority]), [[
    "fs.write",
    request.approval!.reason,
  ]]);
  const stored = runtime.audit.query({ pid, action: "human.approval", limit: 10 });
  assert.equal(stored.length, 1);
  assert.equal(stored[0]!.decision, "none");
  assert.equal(stored[0]!.correlation, request.id);
});

Deno.test("HumanChannel (none): an ask is denied at once, audited, and nothing is stored or written", async () => {
  using s = sandbox();
  await using runtime = await open(s, { human: "none" });
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  await assert.rejects(
    runtime.primitives.fs.writeText(pid, { path: TARGET, content: CONTENT }),
    (e: unknown) =>
      e instanceof HumanDecisionError && e.code === "human_unavailable" &&
      e.reason === "protected:**/.gitmodules" && e.request === null &&
      /--human queue/.test(e.message),
  );
  assert.deepEqual(runtime.human.list({ statuses: ["pending", "rejected"] }), []);
  assert.equal(fileText(s), null);
  const denied = runtime.audit.query({ pid, action: "human.approval", limit: 10 });
  assert.deepEqual(denied.map((r) => [r.decision, r.authority]), [["deny", "human:none"]]);
});

Deno.test("HumanChannel: an approval made by `libos human approve` in another OS process survives a restart; the action runs exactly once", async () => {
  using s = sandbox();
  const first: ActionOutcome[] = [];
  let pid: string;
  let id: string;
  {
    await using runtime1 = await open(s);
    [pid, { id }] = await park(runtime1, first);
  } // runtime 1 stops with the process parked
  const listed = await task(s.workspace, s.state, "libos", "human", "list", "--json");
  assert.equal(listed.status, 0, listed.stderr);
  assert.deepEqual(
    (JSON.parse(listed.stdout).requests as HumanRequest[]).map((r) => r.id),
    [id],
  );
  const approved = await task(s.workspace, s.state, "libos", "human", "approve", id);
  assert.equal(approved.status, 0, approved.stderr);
  assert.match(approved.stdout, new RegExp(`${id}: approved`));
  assert.equal(fileText(s), null, "approving runs nothing by itself");

  const seen: ActionOutcome[] = [];
  {
    await using runtime2 = await open(s);
    using scheduler = runtime2.scheduler(writer(runtime2, seen));
    const report = await scheduler.runUntilIdle();
    assert.equal(report.quanta, 1, "one quantum: the re-dispatch needs no second model turn");
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.ok, true, JSON.stringify(seen[0]));
    assert.equal(runtime2.processes.get(pid).status, "exited");
    assert.equal(runtime2.processes.get(pid).message, "written");
    assert.equal(runtime2.human.get(id).status, "dispatched");
    assert.equal(writesDone(runtime2, pid), 1);
  }
  assert.equal(fileText(s), CONTENT);
  // A third start runs nothing again.
  {
    await using runtime3 = await open(s);
    using scheduler = runtime3.scheduler(writer(runtime3, seen));
    assert.equal((await scheduler.runUntilIdle()).quanta, 0);
    assert.equal(writesDone(runtime3, pid), 1);
  }
  assert.equal(seen.length, 1);
  assert.deepEqual(first, [], "runtime 1 never saw an outcome");
});

Deno.test("HumanChannel: a rejected or expired request resumes the process with a failed result and never runs the action", async () => {
  using s = sandbox();
  // Now, so that the CLI (on the real clock) decides before the requests expire.
  const clock = new FakeClock(Date.now());
  let rejected: HumanRequest;
  let expired: HumanRequest;
  {
    await using runtime = await open(s, { clock, humanTtlMs: 60_000 });
    [, rejected] = await park(runtime, []);
    [, expired] = await park(runtime, []);
  }
  const no = await s.cli("human", "reject", rejected.id, "--reason", "not on a Friday");
  assert.equal(no.status, 0, no.stderr);
  clock.advance(60_001);
  const seen: ActionOutcome[] = [];
  await using runtime = await open(s, { clock });
  using scheduler = runtime.scheduler(writer(runtime, seen));
  await scheduler.runUntilIdle();
  const codes = seen.map((o) => o.ok ? "ok" : o.error.code).sort();
  assert.deepEqual(codes, ["approval_expired", "approval_rejected"]);
  assert.ok(
    seen.some((o) => !o.ok && /not on a Friday/.test(o.error.message)),
    "the human's reason reaches the process",
  );
  assert.equal(runtime.human.get(rejected.id).status, "rejected");
  assert.equal(runtime.human.get(expired.id).status, "expired");
  assert.equal(fileText(s), null);
  for (const r of [rejected, expired]) {
    assert.equal(writesDone(runtime, r.pid), 0);
    assert.equal(runtime.processes.get(r.pid).message, "refused");
  }
  const expiry = runtime.audit.query({ action: "human.expire", limit: 10 });
  assert.deepEqual(expiry.map((r) => [r.correlation, r.decision]), [[expired.id, "deny"]]);
  // A decision after expiry is refused and changes nothing.
  runtime.store.flush(); // the CLI runs in this OS process: commit the runtime's open batch first
  const late = await s.json("human", "approve", expired.id);
  assert.equal(late.status, 1);
  assert.equal((late.doc.error as { code: string }).code, "illegal_transition");
});

Deno.test("HumanChannel: an approval is bound to the action's digest — approving content A never lets content B through (attack: bait and switch)", async () => {
  using s = sandbox();
  await using runtime = await open(s);
  const [pid, a] = await park(runtime, []);
  runtime.human.approve(a.id, { by: "human:test" });
  // The process now tries different content under the approval it obtained for A.
  const evil = '[submodule "x"]\n\tpath = x\n\turl = https://attacker.example/x.git\n';
  const second = await runtime.primitives.fs.writeText(pid, { path: TARGET, content: evil }).then(
    () => assert.fail("content B was written under the approval of content A"),
    (e: unknown) => e,
  );
  assert.ok(second instanceof HumanPendingError, String(second));
  assert.notEqual(second.request, a.id, "B needs a request of its own");
  assert.equal(runtime.human.get(second.request).approval?.action.args.content, evil);
  assert.equal(fileText(s), null, "B was not written");
  // Nor the same content at another path.
  Deno.mkdirSync(join(s.workspace, "other"));
  await assert.rejects(
    runtime.primitives.fs.writeText(pid, { path: "other/.gitmodules", content: CONTENT }),
    HumanPendingError,
  );
  assert.equal(writesDone(runtime, pid), 0);
  // A itself still runs, once, when the process resumes on its request.
  const resumed = await runtime.human.resume(pid, a.id, new AbortController().signal);
  assert.equal(resumed.type === "outcome" && resumed.outcome.ok, true, JSON.stringify(resumed));
  assert.equal(fileText(s), CONTENT);
  // The one-shot grant is spent: A again asks again.
  await assert.rejects(
    runtime.primitives.fs.writeText(pid, { path: TARGET, content: CONTENT }),
    HumanPendingError,
  );
  assert.equal(writesDone(runtime, pid), 1);
});

Deno.test("HumanChannel: a runtime that keeps running notices an approval made from another OS process and resumes without a restart", async () => {
  using s = sandbox();
  await using runtime = await open(s);
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const seen: ActionOutcome[] = [];
  using scheduler = runtime.scheduler(writer(runtime, seen));
  const timeout = AbortSignal.timeout(60_000);
  const running = scheduler.runUntilIdle({ waitForHumans: true, humanPollMs: 25, signal: timeout });
  let request: HumanRequest | undefined;
  while (!(request = runtime.human.list({ pid })[0])) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const approved = await task(s.workspace, s.state, "libos", "human", "approve", request.id);
  assert.equal(approved.status, 0, approved.stderr);
  const report = await running;
  assert.equal(timeout.aborted, false, "the runtime noticed the decision");
  assert.equal(report.idle, true);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.ok, true);
  assert.equal(runtime.processes.get(pid).status, "exited");
  assert.equal(fileText(s), CONTENT);
  assert.equal(writesDone(runtime, pid), 1);
});

Deno.test("HumanChannel.resume() hands an approved action back at most once: a second resume is outcome_unknown and runs nothing", async () => {
  using s = sandbox();
  await using runtime = await open(s);
  const [pid, request] = await park(runtime, []);
  runtime.human.approve(request.id, { by: "human:test" });
  const signal = new AbortController().signal;
  const once = await runtime.human.resume(pid, request.id, signal);
  assert.equal(once.type === "outcome" && once.outcome.ok, true);
  Deno.removeSync(join(s.workspace, TARGET));
  const twice = await runtime.human.resume(pid, request.id, signal);
  assert.equal(twice.type, "outcome");
  assert.equal(
    twice.type === "outcome" && !twice.outcome.ok && twice.outcome.error.code,
    "outcome_unknown",
  );
  assert.equal(fileText(s), null, "the second resume wrote nothing");
  assert.equal(writesDone(runtime, pid), 1);
});

Deno.test("HumanChannel: allow always mints a standing capability of the chosen scope, described before it exists, and only where it would work", async () => {
  using s = sandbox();
  await using runtime = await open(s);
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const fs = runtime.primitives.fs;
  // The CLI runs in this OS process here: commit the runtime's open batch before it connects.
  const cli = (...args: string[]) => {
    runtime.store.flush();
    return s.cli(...args);
  };
  const json = (...args: string[]) => {
    runtime.store.flush();
    return s.json(...args);
  };
  // The operator wants each deploy change asked about: an ask capability over deploy/**.
  const ask = await json(
    "grant",
    pid,
    "--resource",
    "fs:deploy/**",
    "--right",
    "write",
    "--effect",
    "ask",
  );
  assert.equal(ask.status, 0, ask.stdout);
  const pending = (path: string, content: string) =>
    fs.writeText(pid, { path, content }).then(
      () => assert.fail(`${path} was written without asking`),
      (e: unknown) => {
        assert.ok(e instanceof HumanPendingError, String(e));
        return runtime.human.get(e.request);
      },
    );
  Deno.mkdirSync(join(s.workspace, "deploy", "prod"), { recursive: true });
  const request = await pending("deploy/prod/app.yml", "replicas: 3\n");
  assert.match(request.approval!.reason, /^cap:/);
  const shown = await cli("human", "show", request.id);
  assert.equal(shown.status, 0, shown.stderr);
  assert.match(
    shown.stdout,
    /--always path\s+allow write on fs:deploy\/prod\/app\.yml from now on, in this run/,
  );
  assert.match(
    shown.stdout,
    /--always subtree\s+allow write on fs:deploy\/prod\/\*\* from now on, in this run/,
  );
  const bad = await json("human", "approve", request.id, "--always", "everything");
  assert.equal(bad.status, 2, "an unknown scope is a usage error");
  const approved = await json("human", "approve", request.id, "--always", "path");
  assert.equal(approved.status, 0, approved.stdout);
  const minted = (approved.doc.request as HumanRequest).response?.capabilities ?? [];
  assert.equal(minted.length, 2, "the one-shot grant and the standing one");
  const standing = runtime.authority.capabilities.get(minted[1]!);
  assert.deepEqual(standing.resource, { type: "fs", path: "deploy/prod/app.yml", scope: "exact" });
  assert.deepEqual(standing.rights, ["write"]);
  assert.equal(standing.oneShot, false);
  // From now on that path is written without asking, whatever the content...
  await fs.writeText(pid, { path: "deploy/prod/app.yml", content: "replicas: 5\n" });
  assert.equal(Deno.readTextFileSync(join(s.workspace, "deploy/prod/app.yml")), "replicas: 5\n");
  // ...but its sibling still asks.
  await pending("deploy/prod/db.yml", "x");
  // A protected-path ask offers no allow-always scope at all: no capability overrides it.
  const env = await pending(TARGET, CONTENT);
  assert.deepEqual(runtime.human.alwaysOptions(env), []);
  const refused = await json("human", "approve", env.id, "--always", "path");
  assert.equal(refused.status, 1);
  assert.match((refused.doc.error as { message: string }).message, /offers no allow-always scope/);
  assert.equal(runtime.human.get(env.id).status, "pending", "nothing was approved");
});

Deno.test("HumanChannel: a decision made before the process finished parking still wakes it (race: approve between the ask and the park)", async () => {
  using s = sandbox();
  await using runtime = await open(s);
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const seen: ActionOutcome[] = [];
  const inner = writer(runtime, seen);
  using scheduler = runtime.scheduler({
    async runQuantum(ctx) {
      try {
        return await inner.runQuantum(ctx);
      } catch (error) {
        if (!(error instanceof HumanPendingError)) throw error;
        // A fast human decides while the quantum is still running: nobody waits on it yet.
        runtime.human.approve(error.request, { by: "human:fast" });
        return { type: "wait_human", request: error.request };
      }
    },
  });
  const report = await scheduler.runUntilIdle();
  assert.equal(report.quanta, 2);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.ok, true);
  assert.equal(runtime.processes.get(pid).status, "exited");
  assert.equal(writesDone(runtime, pid), 1);
});

Deno.test("HumanChannel: a process cancelled or killed while it waits withdraws its request; approving it later grants nothing", async () => {
  using s = sandbox();
  await using runtime = await open(s);
  const [cancelled, first] = await park(runtime, []);
  runtime.processes.signal(cancelled, "cancel");
  using scheduler = runtime.scheduler({ runQuantum: () => Promise.resolve({ type: "exit" }) });
  await scheduler.runUntilIdle();
  assert.equal(runtime.human.get(first.id).status, "cancelled");
  assert.equal(runtime.processes.get(cancelled).status, "exited");

  const [killed, second] = await park(runtime, []);
  runtime.processes.signal(killed, "terminate");
  const capsBefore = runtime.authority.capabilities.list(killed).length;
  assert.throws(
    () => runtime.human.approve(second.id, { by: "human:late" }),
    (e: unknown) => e instanceof IllegalTransitionError && /cancelled/.test(e.message),
  );
  assert.equal(runtime.human.get(second.id).status, "cancelled");
  assert.equal(runtime.authority.capabilities.list(killed).length, capsBefore, "nothing minted");
  assert.equal(fileText(s), null);
  const audited = runtime.audit.query({ action: "human.cancel", limit: 10 });
  assert.deepEqual(audited.map((r) => r.correlation), [first.id, second.id]);
});

Deno.test("HumanChannel (interactive): the request is on disk before the human sees it, so a runtime killed at the prompt leaves it pending and decidable elsewhere", async () => {
  using s = sandbox();
  const onDisk: (string | undefined)[] = [];
  await using runtime = await open(s, {
    human: "interactive",
    prompt: {
      decide(request) {
        // What another OS process (libos human list) would read right now.
        const raw = new DatabaseSync(s.dbPath(), { readOnly: true });
        try {
          const row = raw.prepare("SELECT status FROM human_requests WHERE id = ?").get(
            request.id,
          );
          onDisk.push(row ? String(row.status) : undefined);
        } finally {
          raw.close();
        }
        return Promise.resolve({ type: "reject", reason: "not now" });
      },
    },
  });
  const pid = runtime.processes.spawn({ goal: "write", image: "base-agent:v0" }).pid;
  await assert.rejects(
    () => runtime.primitives.fs.writeText(pid, { path: TARGET, content: CONTENT }),
    HumanDecisionError,
  );
  assert.deepEqual(onDisk, ["pending"]);
});
