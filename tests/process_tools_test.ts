/**
 * The process tools through the broker and the scheduler (issue 12): wait_child_process returns a
 * finished child at once, or ends the quantum so the process sleeps until the child finishes;
 * process_exit ends the process through the scheduler (never mid-quantum); fork and spawn hand a
 * child only what the parent holds; signal, merge and wait refuse a non-child.
 */
import assert from "node:assert/strict";
import type { Runtime } from "../runtime/runtime.ts";
import { testRuntime } from "../testing.ts";
import type { ProcessDriver } from "../runtime/kernel/scheduler.ts";
import { assertTraceInvariants } from "./trace_invariants.ts";

const PROCESS_TOOLS = [
  "fork_child_process",
  "spawn_child_process",
  "wait_child_process",
  "list_child_processes",
  "signal_child_process",
  "merge_child_memory",
  "process_exit",
  "get_working_directory",
  "set_working_directory",
  "create_memory_object",
];

async function fixture() {
  const t = await testRuntime({
    prefix: "libos-proctools-",
    dirs: ["src"],
    mode: "workspace-write",
  });
  return { ...t, pid: t.spawn({ goal: "lead", tools: PROCESS_TOOLS }) };
}

const NEVER = new AbortController().signal;

function call(runtime: Runtime, pid: string, name: string, args: Record<string, unknown> = {}) {
  return runtime.tools.invoke(pid, { name, arguments: args }, NEVER);
}

Deno.test("wait_child_process ends the quantum until the child finishes; the parent wakes with it and exits through process_exit", async () => {
  await using f = await fixture();
  const { runtime, pid } = f;
  let child = "";
  const wakes: unknown[] = [];
  const driver: ProcessDriver = {
    async runQuantum(ctx) {
      const me = ctx.process.pid;
      if (me === pid) {
        if (ctx.process.wake) {
          wakes.push(ctx.process.wake);
          const collected = await call(runtime, pid, "wait_child_process", { pid: child });
          assert.ok(collected.ok, collected.forModel);
          await call(runtime, pid, "process_exit", { message: "all done" });
          throw new Error("process_exit returned instead of ending the quantum");
        }
        const forked = await call(runtime, pid, "fork_child_process", { goal: "half" });
        assert.ok(forked.ok, forked.forModel);
        child = (forked.value as { pid: string }).pid;
        // Not finished yet: the tool ends the quantum (the broker lets the request through).
        await call(runtime, pid, "wait_child_process", { pid: child });
        throw new Error("wait_child_process returned for a live child");
      }
      // The child: creates its result and exits naming it.
      const made = await call(runtime, me, "create_memory_object", {
        type: "finding",
        payload: 42,
      });
      assert.ok(made.ok, made.forModel);
      await call(runtime, me, "process_exit", { result: (made.value as { oid: string }).oid });
      return { type: "yield" };
    },
  };
  using scheduler = runtime.scheduler(driver);
  await scheduler.runUntilIdle();
  const parent = runtime.processes.get(pid);
  assert.equal(parent.status, "exited");
  assert.equal(parent.message, "all done");
  assert.equal(runtime.processes.get(child).status, "exited");
  assert.deepEqual(wakes.map((w) => (w as { kind: string }).kind), ["child_finished"]);
  assert.equal(runtime.processes.get(child).reaped, true, "collected by the second wait");
});

Deno.test("fork_child_process attack: a child is handed only scopes the parent holds; a refused fork leaves no child", async () => {
  await using f = await fixture();
  const refused = await call(f.runtime, f.pid, "fork_child_process", {
    goal: "wider",
    inherit: [{ resource: { type: "net", key: "*", scope: "any" }, rights: ["connect"] }],
  });
  assert.equal(refused.ok, false);
  assert.deepEqual(f.runtime.processes.list({ parent: f.pid }), []);
  const granted = await call(f.runtime, f.pid, "fork_child_process", {
    goal: "src only",
    inherit: [{ resource: { type: "fs", path: "src", scope: "subtree" }, rights: ["write"] }],
  });
  assert.ok(granted.ok, granted.forModel);
  const child = (granted.value as { pid: string }).pid;
  const decide = (path: string) =>
    f.runtime.authority.decide(child, { resource: { type: "fs", path }, right: "write" }).effect;
  assert.equal(decide("src/a.ts"), "allow", "control: the scope handed over");
  assert.notEqual(decide("README.md"), "allow", "and nothing else");
  assertTraceInvariants(f.runtime, f.pid);
});

Deno.test("signal_child_process, merge_child_memory and wait_child_process attack: another process's pid is refused and untouched", async () => {
  await using f = await fixture();
  const stranger = f.runtime.processes.spawn({ goal: "victim", image: "base-agent:v0" }).pid;
  for (
    const [tool, args] of [
      ["signal_child_process", { pid: stranger, signal: "terminate" }],
      ["merge_child_memory", { pid: stranger }],
      ["wait_child_process", { pid: stranger }],
    ] as const
  ) {
    const result = await call(f.runtime, f.pid, tool, args);
    assert.equal(result.ok, false, tool);
  }
  assert.equal(f.runtime.processes.get(stranger).status, "runnable");
});

Deno.test("get_working_directory and set_working_directory move within the workspace only", async () => {
  await using f = await fixture();
  const moved = await call(f.runtime, f.pid, "set_working_directory", { path: "src" });
  assert.ok(moved.ok, moved.forModel);
  assert.deepEqual((await call(f.runtime, f.pid, "get_working_directory")).ok, true);
  assert.equal(f.runtime.processes.get(f.pid).cwd, "src");
  const outside = await call(f.runtime, f.pid, "set_working_directory", { path: "../.." });
  assert.equal(outside.ok, false);
  assert.equal(f.runtime.processes.get(f.pid).cwd, "src");
});
