import assert from "node:assert/strict";
import { FakeClock } from "../base/clock.ts";
import { seededIds } from "../base/ids.ts";
import type { QuantumResult } from "../process/process_manager.ts";
import { type TestRuntime, testRuntime } from "../../testing.ts";
import type { ProcessDriver, QuantumContext } from "./scheduler.ts";

interface Fixture extends TestRuntime {
  readonly clock: FakeClock;
}

async function fixture(budgets: { maxWallTimeMs?: number } = {}): Promise<Fixture> {
  const clock = new FakeClock();
  const t = await testRuntime({
    prefix: "libos-sched-",
    clock,
    ids: seededIds(3),
    defaultBudgets: {
      maxToolCalls: 100,
      maxLiveChildren: 8,
      maxWallTimeMs: budgets.maxWallTimeMs ?? 3_600_000,
      maxModelTokens: 1000,
    },
  });
  return { ...t, clock };
}

/** A driver whose behaviour per process is a script of results, recording every quantum. */
function scripted(scripts: Record<string, QuantumResult[]>, log: string[]): ProcessDriver {
  return {
    runQuantum(ctx: QuantumContext) {
      log.push(ctx.process.pid);
      const next = scripts[ctx.process.pid]?.shift() ?? { type: "exit" };
      return Promise.resolve(next);
    },
  };
}

Deno.test("Scheduler.runUntilIdle() runs runnable processes round-robin until every one finished", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const [a, b, c] = ["a", "b", "c"].map((g) => {
    f.clock.advance(1);
    return pm.spawn({ goal: g, image: "base-agent:v0" }).pid;
  });
  const log: string[] = [];
  const yields = (n: number): QuantumResult[] =>
    Array.from({ length: n }, () => ({ type: "yield" }));
  using scheduler = f.runtime.scheduler(
    scripted({ [a!]: yields(2), [b!]: yields(1), [c!]: yields(2) }, log),
    { concurrency: 1 },
  );
  const report = await scheduler.runUntilIdle();
  assert.deepEqual(report, { quanta: 8, idle: true });
  assert.deepEqual(log, [a, b, c, a, b, c, a, c]);
  for (const pid of [a, b, c]) assert.equal(pm.get(pid!).status, "exited");
});

Deno.test("Scheduler: a sleeping process blocks nobody and is woken by its timer, not by polling", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const sleeper = pm.spawn({ goal: "sleeper", image: "base-agent:v0" }).pid;
  f.clock.advance(1);
  const worker = pm.spawn({ goal: "worker", image: "base-agent:v0" }).pid;
  const log: string[] = [];
  const until = f.clock.now() + 5_000;
  using scheduler = f.runtime.scheduler(
    scripted({
      [sleeper]: [{ type: "sleep", until }],
      [worker]: [{ type: "yield" }, { type: "yield" }],
    }, log),
  );
  const run = scheduler.runUntilIdle();
  // Let the worker finish while the sleeper sleeps.
  for (let i = 0; i < 20 && pm.get(worker).status !== "exited"; i++) {
    await new Promise((r) => setTimeout(r, 1));
  }
  assert.equal(pm.get(worker).status, "exited");
  assert.equal(pm.get(sleeper).status, "sleeping");
  assert.deepEqual(log, [sleeper, worker, worker, worker]);
  f.clock.advance(4_999);
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(pm.get(sleeper).status, "sleeping", "not before its time");
  f.clock.advance(1);
  assert.deepEqual(await run, { quanta: 5, idle: true });
  assert.equal(pm.get(sleeper).status, "exited");
  assert.equal(
    pm.get(sleeper).wake,
    null,
    "the wake reason was consumed by the quantum that saw it",
  );
});

Deno.test("Scheduler: a parent waiting on a child resumes when the child exits, with the child's result", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const parent = pm.spawn({ goal: "parent", image: "base-agent:v0" }).pid;
  const seen: unknown[] = [];
  let child = "";
  const driver: ProcessDriver = {
    runQuantum(ctx) {
      if (ctx.process.pid === parent) {
        if (ctx.process.wake) {
          seen.push(ctx.process.wake);
          return Promise.resolve({ type: "exit", result: "parent-done" });
        }
        child = pm.fork(parent, {}, { kind: "process", pid: parent }).pid;
        return Promise.resolve({ type: "wait_child", pid: child });
      }
      return Promise.resolve({ type: "exit", result: "obj_42" });
    },
  };
  using scheduler = f.runtime.scheduler(driver);
  assert.deepEqual(await scheduler.runUntilIdle(), { quanta: 3, idle: true });
  assert.deepEqual(seen, [{
    kind: "child_finished",
    pid: child,
    status: "exited",
    result: "obj_42",
  }]);
  assert.equal(pm.get(parent).result, "parent-done");
});

Deno.test("Scheduler never runs more quanta at once than its concurrency limit", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  for (let i = 0; i < 6; i++) pm.spawn({ goal: `p${i}`, image: "base-agent:v0" });
  let running = 0;
  let peak = 0;
  const driver: ProcessDriver = {
    async runQuantum() {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 2));
      running--;
      return { type: "exit" };
    },
  };
  using scheduler = f.runtime.scheduler(driver, { concurrency: 2 });
  assert.deepEqual(await scheduler.runUntilIdle(), { quanta: 6, idle: true });
  assert.equal(peak, 2);
});

Deno.test("Scheduler.runUntilIdle() stops when its AbortSignal aborts, aborting the quanta in flight", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const pid = pm.spawn({ goal: "long", image: "base-agent:v0" }).pid;
  const controller = new AbortController();
  let sawAbort = false;
  const driver: ProcessDriver = {
    runQuantum(ctx) {
      return new Promise((resolve) => {
        ctx.signal.addEventListener("abort", () => {
          sawAbort = true;
          resolve({ type: "yield" });
        });
        queueMicrotask(() => controller.abort(new Error("operator pressed ctrl-c")));
      });
    },
  };
  using scheduler = f.runtime.scheduler(driver);
  const report = await scheduler.runUntilIdle({ signal: controller.signal });
  assert.equal(report.idle, false);
  assert.ok(sawAbort);
  assert.equal(
    pm.get(pid).status,
    "runnable",
    "a cancelled run leaves the process ready for the next one",
  );
});

Deno.test("Scheduler: terminate aborts a running quantum and the process ends killed, whatever the quantum returned", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const pid = pm.spawn({ goal: "victim", image: "base-agent:v0" }).pid;
  const driver: ProcessDriver = {
    runQuantum(ctx) {
      return new Promise((resolve) => {
        ctx.signal.addEventListener(
          "abort",
          () => resolve({ type: "exit", result: "pretend success" }),
        );
        queueMicrotask(() => pm.signal(pid, "terminate"));
      });
    },
  };
  using scheduler = f.runtime.scheduler(driver);
  await scheduler.runUntilIdle();
  const p = pm.get(pid);
  assert.equal(p.status, "killed");
  assert.equal(p.result, null);
});

Deno.test("Scheduler: signals that arrive during a quantum are applied at its end (pause, interrupt)", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const pid = pm.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  let quanta = 0;
  const driver: ProcessDriver = {
    runQuantum() {
      quanta++;
      pm.signal(pid, "interrupt");
      pm.signal(pid, "pause");
      assert.equal(pm.get(pid).status, "running");
      return Promise.resolve({ type: "yield" });
    },
  };
  using scheduler = f.runtime.scheduler(driver);
  assert.deepEqual(await scheduler.runUntilIdle(), { quanta: 1, idle: true });
  const p = pm.get(pid);
  assert.equal(p.status, "paused");
  assert.equal(p.interrupts, 1);
  assert.equal(quanta, 1);
});

Deno.test("Scheduler: wall time runs out in the middle of a quantum — the quantum is aborted and the process fails", async () => {
  await using f = await fixture({ maxWallTimeMs: 1_000 });
  const pm = f.runtime.processes;
  const pid = pm.spawn({ goal: "slow", image: "base-agent:v0" }).pid;
  const driver: ProcessDriver = {
    runQuantum(ctx) {
      return new Promise((resolve) => {
        ctx.signal.addEventListener("abort", () => resolve({ type: "yield" }));
        queueMicrotask(() => f.clock.advance(1_000));
      });
    },
  };
  using scheduler = f.runtime.scheduler(driver);
  await scheduler.runUntilIdle();
  const p = pm.get(pid);
  assert.equal(p.status, "failed");
  assert.match(p.message ?? "", /^budget_exhausted:wall_time/);
});

Deno.test("Scheduler: a driver that throws fails only its own process, with a typed reason", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const bad = pm.spawn({ goal: "bad", image: "base-agent:v0" }).pid;
  const good = pm.spawn({ goal: "good", image: "base-agent:v0" }).pid;
  const driver: ProcessDriver = {
    runQuantum(ctx) {
      if (ctx.process.pid === bad) throw new TypeError("driver bug");
      return Promise.resolve({ type: "exit" });
    },
  };
  using scheduler = f.runtime.scheduler(driver);
  await scheduler.runUntilIdle();
  assert.equal(pm.get(bad).status, "failed");
  assert.match(pm.get(bad).message ?? "", /^driver_error:internal: TypeError: driver bug/);
  assert.equal(pm.get(good).status, "exited");
});

Deno.test("Scheduler.step() runs exactly one quantum and reports it; nothing runnable gives undefined", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const pid = pm.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const log: string[] = [];
  using scheduler = f.runtime.scheduler(scripted({ [pid]: [{ type: "yield" }] }, log));
  assert.deepEqual(await scheduler.step(), { pid, result: { type: "yield" }, status: "runnable" });
  assert.deepEqual(await scheduler.step(), { pid, result: { type: "exit" }, status: "exited" });
  assert.equal(await scheduler.step(), undefined);
  assert.equal(log.length, 2);
});

Deno.test("Scheduler: effects go through the ledger, and a process not runnable any more is skipped, not run", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const a = pm.spawn({ goal: "a", image: "base-agent:v0" }).pid;
  const b = pm.spawn({ goal: "b", image: "base-agent:v0" }).pid;
  pm.signal(b, "pause");
  const effects: string[] = [];
  const driver: ProcessDriver = {
    async runQuantum(ctx) {
      const outcome = await ctx.perform({ kind: "test.effect", request: { n: 1 } }, () => {
        effects.push(ctx.process.pid);
        return Promise.resolve("ok");
      });
      assert.deepEqual(outcome, { ok: true, value: "ok" });
      return { type: "exit" };
    },
  };
  using scheduler = f.runtime.scheduler(driver);
  assert.deepEqual(await scheduler.runUntilIdle(), { quanta: 1, idle: true });
  assert.deepEqual(effects, [a]);
  assert.equal(f.runtime.ledger.list(a)[0]?.status, "done");
  assert.equal(pm.get(b).status, "paused");
});

Deno.test("Scheduler with a scope runs, recovers and wakes only the processes in it (a launcher's own tree); another runner's are left as they are", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const a = pm.spawn({ goal: "mine", image: "base-agent:v0" }).pid;
  const b = pm.spawn({ goal: "another runner's, mid-quantum", image: "base-agent:v0" }).pid;
  const c = pm.spawn({ goal: "another run's, waiting its turn", image: "base-agent:v0" }).pid;
  assert.ok(pm.beginQuantum(b), "b is running in another runner");
  let child: string | undefined;
  const log: string[] = [];
  const driver: ProcessDriver = {
    runQuantum(ctx) {
      log.push(ctx.process.pid);
      if (ctx.process.pid === a && child === undefined) {
        child = pm.fork(a, { goal: "my child" }).pid;
        return Promise.resolve({ type: "yield" });
      }
      return Promise.resolve({ type: "exit" });
    },
  };
  const scope = (pid: string) => pid === a || pm.get(pid).parent === a;
  using scheduler = f.runtime.scheduler(driver, { concurrency: 1, scope });
  const recovery = scheduler.recover();
  assert.deepEqual(recovery.recovered, [], "b's quantum is not this scheduler's to recover");
  await scheduler.runUntilIdle();
  assert.ok(child);
  assert.deepEqual(new Set(log), new Set([a, child]));
  assert.equal(pm.get(a).status, "exited");
  assert.equal(pm.get(child).status, "exited");
  assert.equal(pm.get(b).status, "running");
  assert.equal(pm.get(c).status, "runnable");
  // refresh() picks up what became runnable elsewhere, still within the scope only.
  scheduler.refresh();
  assert.deepEqual(scheduler.ready, []);
});

Deno.test("Scheduler.runUntilIdle({drain}): once drained, no quantum starts; the one in flight finishes as it would and the run returns, not idle", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const a = pm.spawn({ goal: "a", image: "base-agent:v0" }).pid;
  f.clock.advance(1);
  const b = pm.spawn({ goal: "b", image: "base-agent:v0" }).pid;
  const drain = new AbortController();
  const log: string[] = [];
  const driver: ProcessDriver = {
    async runQuantum(ctx) {
      log.push(ctx.process.pid);
      drain.abort();
      await new Promise((r) => setTimeout(r, 5));
      assert.equal(ctx.signal.aborted, false, "a drain never aborts the quantum in flight");
      return { type: "yield" };
    },
  };
  using scheduler = f.runtime.scheduler(driver, { concurrency: 1 });
  const report = await scheduler.runUntilIdle({ drain: drain.signal });
  assert.deepEqual(log, [a]);
  assert.deepEqual(report, { quanta: 1, idle: false });
  assert.equal(pm.get(a).status, "runnable");
  assert.equal(pm.get(b).status, "runnable");
});
