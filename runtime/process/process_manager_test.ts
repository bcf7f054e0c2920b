import assert from "node:assert/strict";
import { join } from "node:path";
import { FakeClock } from "../base/clock.ts";
import {
  BudgetExhaustedError,
  IllegalTransitionError,
  NotFoundError,
  OutsideWorkspaceError,
  ValidationError,
} from "../base/errors.ts";
import { seededIds } from "../base/ids.ts";
import type { AgentProcess, ProcessStatus, Signal } from "./process.ts";
import type { ProcessManager } from "./process_manager.ts";
import { createRuntime, type Runtime } from "../runtime.ts";

interface Fixture extends AsyncDisposable {
  readonly runtime: Runtime;
  readonly pm: ProcessManager;
  readonly clock: FakeClock;
  readonly workspace: string;
}

async function fixture(budgets?: Partial<AgentProcess["budgets"]>): Promise<Fixture> {
  const workspace = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-pm-" }));
  const clock = new FakeClock();
  const runtime = await createRuntime({
    workspace,
    db: ":memory:",
    clock,
    ids: seededIds(11),
    ...(budgets
      ? {
        defaultBudgets: {
          maxToolCalls: 10,
          maxLiveChildren: 2,
          maxWallTimeMs: 60_000,
          maxModelTokens: 1000,
          ...budgets,
        },
      }
      : {}),
  });
  return {
    runtime,
    pm: runtime.processes,
    clock,
    workspace,
    async [Symbol.asyncDispose]() {
      await runtime.close();
      Deno.removeSync(workspace, { recursive: true });
    },
  };
}

/** Brings a fresh process into `status` through real operations and returns its pid. */
function reach(pm: ProcessManager, status: ProcessStatus, clock: FakeClock): string {
  const spawn = (start = true) => pm.spawn({ goal: "g", image: "base-agent:v0", start }).pid;
  const running = () => {
    const pid = spawn();
    pm.beginQuantum(pid);
    return pid;
  };
  const end = (pid: string, result: Parameters<ProcessManager["endQuantum"]>[1]) => {
    const p = pm.get(pid);
    pm.endQuantum(pid, result, { interrupts: p.interrupts, wake: p.wake });
    return pid;
  };
  switch (status) {
    case "created":
      return spawn(false);
    case "runnable":
      return spawn();
    case "running":
      return running();
    case "sleeping":
      return end(running(), { type: "sleep", until: clock.now() + 10_000 });
    case "waiting_human":
      return end(running(), { type: "wait_human", request: "hreq_1" });
    case "waiting_child": {
      const parent = running();
      pm.fork(parent);
      return end(parent, { type: "wait_child", pid: null });
    }
    case "paused": {
      const pid = spawn();
      pm.signal(pid, "pause");
      return pid;
    }
    case "exited": {
      const pid = spawn();
      pm.exit(pid, { result: "obj_result" });
      return pid;
    }
    case "failed": {
      const pid = spawn();
      pm.fail(pid, "it broke");
      return pid;
    }
    case "killed": {
      const pid = spawn();
      pm.signal(pid, "terminate");
      return pid;
    }
  }
}

type Op = Signal | "start" | "exit" | "fail";
const ILLEGAL = "illegal";
const OPS: readonly Op[] = [
  "start",
  "pause",
  "resume",
  "cancel",
  "interrupt",
  "terminate",
  "exit",
  "fail",
];
const BLOCKED_ROW = {
  start: ILLEGAL,
  pause: "paused",
  resume: ILLEGAL,
  cancel: "runnable",
  interrupt: "runnable",
  terminate: "killed",
  exit: "exited",
  fail: "failed",
};
const FINAL_ROW = Object.fromEntries(OPS.map((op) => [op, ILLEGAL]));
/** Status → operation → resulting status (or illegal), as an operator sees it. */
const EXPECTED: Record<ProcessStatus, Record<Op, string>> = {
  created: {
    start: "runnable",
    pause: "paused",
    resume: ILLEGAL,
    cancel: ILLEGAL,
    interrupt: "created",
    terminate: "killed",
    exit: "exited",
    fail: "failed",
  },
  runnable: {
    start: ILLEGAL,
    pause: "paused",
    resume: ILLEGAL,
    cancel: ILLEGAL,
    interrupt: "runnable",
    terminate: "killed",
    exit: "exited",
    fail: "failed",
  },
  // Signals to a running process wait for the end of its quantum.
  running: {
    start: ILLEGAL,
    pause: "running",
    resume: ILLEGAL,
    cancel: "running",
    interrupt: "running",
    terminate: "running",
    exit: "exited",
    fail: "failed",
  },
  sleeping: BLOCKED_ROW,
  waiting_child: BLOCKED_ROW,
  waiting_human: BLOCKED_ROW,
  paused: {
    start: ILLEGAL,
    pause: ILLEGAL,
    resume: "runnable",
    cancel: ILLEGAL,
    interrupt: "paused",
    terminate: "killed",
    exit: "exited",
    fail: "failed",
  },
  exited: FINAL_ROW as Record<Op, string>,
  failed: FINAL_ROW as Record<Op, string>,
  killed: FINAL_ROW as Record<Op, string>,
};

function apply(pm: ProcessManager, pid: string, op: Op): AgentProcess {
  switch (op) {
    case "start":
      return pm.start(pid);
    case "exit":
      return pm.exit(pid, { result: "obj_new" });
    case "fail":
      return pm.fail(pid, "operator failed it");
    default:
      return pm.signal(pid, op);
  }
}

Deno.test("ProcessManager applies every operator operation to every status as specified; an illegal one changes nothing", async () => {
  for (const status of Object.keys(EXPECTED) as ProcessStatus[]) {
    for (const op of OPS) {
      await using f = await fixture();
      const pid = reach(f.pm, status, f.clock);
      assert.equal(f.pm.get(pid).status, status, `reached ${status}`);
      f.runtime.store.flush();
      const before = f.runtime.store.getProcess(pid);
      const auditBefore = f.runtime.store.lastAuditSeq();
      const expected = EXPECTED[status][op];
      if (expected === ILLEGAL) {
        assert.throws(() => apply(f.pm, pid, op), IllegalTransitionError, `${op} on ${status}`);
        assert.deepEqual(
          f.runtime.store.getProcess(pid),
          before,
          `${op} on ${status} changed the row`,
        );
        assert.equal(
          f.runtime.store.lastAuditSeq(),
          auditBefore,
          `${op} on ${status} was audited as if it happened`,
        );
      } else {
        assert.equal(apply(f.pm, pid, op).status, expected, `${op} on ${status}`);
        assert.equal(f.pm.get(pid).status, expected);
        assert.ok(f.runtime.store.lastAuditSeq() > auditBefore, `${op} on ${status} is audited`);
      }
    }
  }
});

Deno.test("ProcessManager.signal(resume) returns a paused process to where it was, or to runnable when its wait ended", async () => {
  await using f = await fixture();
  for (const status of ["sleeping", "waiting_child", "waiting_human", "created"] as const) {
    const pid = reach(f.pm, status, f.clock);
    f.pm.signal(pid, "pause");
    assert.equal(f.pm.get(pid).resumeTo, status);
    assert.equal(f.pm.signal(pid, "resume").status, status);
  }
  const sleeper = reach(f.pm, "sleeping", f.clock);
  f.pm.signal(sleeper, "pause");
  f.clock.advance(20_000);
  const resumed = f.pm.signal(sleeper, "resume");
  assert.equal(resumed.status, "runnable", "the sleep ended while paused");
});

Deno.test("ProcessManager: no signal destroys a finished process's result link (attack: resume or signal an exited child)", async () => {
  await using f = await fixture();
  const parent = f.pm.spawn({ goal: "p", image: "base-agent:v0" }).pid;
  const child = f.pm.fork(parent).pid;
  f.pm.exit(child, { result: "obj_42", message: "done" });
  for (const signal of ["pause", "resume", "cancel", "interrupt", "terminate"] as const) {
    assert.throws(() => f.pm.signal(child, signal), IllegalTransitionError);
    assert.throws(
      () => f.pm.signal(child, signal, { kind: "process", pid: parent }),
      IllegalTransitionError,
    );
  }
  const after = f.pm.get(child);
  assert.equal(after.status, "exited");
  assert.equal(after.result, "obj_42");
  assert.equal(after.message, "done");
});

Deno.test("ProcessManager.signal() from a process to a process that is not its child is refused and changes nothing", async () => {
  await using f = await fixture();
  const a = f.pm.spawn({ goal: "a", image: "base-agent:v0" }).pid;
  const b = f.pm.spawn({ goal: "b", image: "base-agent:v0" }).pid;
  const grandchild = f.pm.fork(f.pm.fork(a).pid).pid;
  for (const [from, to] of [[a, b], [b, a], [a, grandchild], [a, a]]) {
    const before = f.runtime.store.getProcess(to!);
    assert.throws(
      () => f.pm.signal(to!, "terminate", { kind: "process", pid: from! }),
      (e: unknown) => e instanceof IllegalTransitionError && e.code === "not_a_child",
    );
    assert.deepEqual(f.runtime.store.getProcess(to!), before);
  }
});

Deno.test("ProcessManager.fork() copies image, tools and cwd and carves the child's budget out of the parent's", async () => {
  await using f = await fixture({ maxToolCalls: 10, maxModelTokens: 1000 });
  Deno.mkdirSync(join(f.workspace, "pkg"));
  const parent = f.pm.spawn({
    goal: "p",
    image: "coding-agent:v0",
    tools: ["read_text_file", "echo"],
    cwd: "pkg",
  }).pid;
  f.pm.chargeToolCall(parent, 2);
  const child = f.pm.fork(parent, { budgets: { maxToolCalls: 100 } });
  assert.equal(child.parent, parent);
  assert.equal(child.image, "coding-agent:v0");
  assert.deepEqual(child.tools, ["read_text_file", "echo"]);
  assert.equal(child.cwd, "pkg");
  assert.equal(child.goal, "p");
  assert.equal(
    child.budgets.maxToolCalls,
    7,
    "capped at the parent's remainder, less the one call the parent keeps",
  );
  assert.equal(child.budgets.maxModelTokens, 500, "unasked: half the parent's remainder");
  const p = f.pm.get(parent);
  assert.equal(p.usage.delegatedToolCalls, 7);
  // The parent can still make one call (to collect its child), and then no more.
  f.pm.chargeToolCall(parent);
  assert.throws(
    () => f.pm.chargeToolCall(parent),
    BudgetExhaustedError,
    "the parent lent the rest of its tool calls",
  );
});

Deno.test("ProcessManager: a finished child returns its unused budget to the parent and keeps what it used", async () => {
  await using f = await fixture({ maxToolCalls: 10 });
  const parent = f.pm.spawn({ goal: "p", image: "base-agent:v0" }).pid;
  const child = f.pm.fork(parent, { budgets: { maxToolCalls: 6 } }).pid;
  f.pm.chargeToolCall(child, 4);
  f.pm.exit(child);
  const p = f.pm.get(parent);
  assert.equal(p.usage.delegatedToolCalls, 0);
  assert.equal(p.usage.toolCalls, 4);
});

Deno.test("ProcessManager refuses a child beyond maxLiveChildren and creates nothing", async () => {
  await using f = await fixture({ maxLiveChildren: 1 });
  const parent = f.pm.spawn({ goal: "p", image: "base-agent:v0" }).pid;
  const first = f.pm.fork(parent).pid;
  const count = f.runtime.store.listProcesses({ limit: 100 }).length;
  assert.throws(
    () => f.pm.spawnChild(parent, { goal: "second", image: "base-agent:v0" }),
    (e: unknown) => e instanceof BudgetExhaustedError && e.kind === "live_children",
  );
  assert.equal(f.runtime.store.listProcesses({ limit: 100 }).length, count);
  assert.equal(f.pm.get(parent).status, "runnable", "refusing a child does not fail the parent");
  f.pm.exit(first);
  assert.equal(f.pm.fork(parent).parent, parent, "a finished child frees its slot");
});

Deno.test("ProcessManager.spawnChild() starts a fresh child with its own goal, image and tool table", async () => {
  await using f = await fixture();
  const parent =
    f.pm.spawn({ goal: "parent goal", image: "coding-agent:v0", tools: ["write_text_file"] }).pid;
  const child = f.pm.spawnChild(parent, {
    goal: "parse the log",
    image: "coding-agent:v0",
    tools: ["parse_pytest_log"],
  });
  assert.deepEqual([child.goal, child.image, child.tools], ["parse the log", "coding-agent:v0", [
    "parse_pytest_log",
  ]]);
  assert.equal(child.status, "runnable");
});

Deno.test("ProcessManager.exec() swaps image and tool table under the same pid, and is refused once finished", async () => {
  await using f = await fixture();
  const p = f.pm.spawn({ goal: "g", image: "base-agent:v0", tools: ["echo"] });
  const after = f.pm.exec(p.pid, { image: "coding-agent:v0", tools: ["read_text_file", "grep"] });
  assert.equal(after.pid, p.pid);
  assert.equal(after.image, "coding-agent:v0");
  assert.deepEqual(after.tools, ["read_text_file", "grep"]);
  assert.deepEqual(after.budgets, p.budgets, "exec does not touch budgets");
  assert.equal(f.runtime.events.read({ kinds: ["process.exec"] }).length, 1);
  assert.throws(
    () => f.pm.exec(p.pid, { image: "x:v0", tools: ["echo", "echo"] }),
    ValidationError,
  );
  f.pm.exit(p.pid);
  assert.throws(
    () => f.pm.exec(p.pid, { image: "base-agent:v0", tools: [] }),
    IllegalTransitionError,
  );
  assert.equal(f.pm.get(p.pid).image, "coding-agent:v0");
});

Deno.test("ProcessManager wait/wake: a waiting parent is woken by its child's exit and sees the child's result", async () => {
  await using f = await fixture();
  const parent = f.pm.spawn({ goal: "p", image: "base-agent:v0" }).pid;
  const child = f.pm.fork(parent).pid;
  const woken: string[] = [];
  f.pm.listen({ runnable: (pid) => woken.push(pid) });
  f.pm.beginQuantum(parent);
  f.pm.endQuantum(parent, { type: "wait_child", pid: child }, { interrupts: 0, wake: null });
  assert.equal(f.pm.get(parent).status, "waiting_child");
  f.pm.exit(child, { result: "obj_answer" });
  const p = f.pm.get(parent);
  assert.equal(p.status, "runnable");
  assert.deepEqual(p.wake, {
    kind: "child_finished",
    pid: child,
    status: "exited",
    result: "obj_answer",
  });
  assert.ok(woken.includes(parent), "the wake-up is announced, not polled for");
  assert.equal(f.runtime.audit.query({ action: "process.wait_wake" }).length, 1);
  assert.equal(f.pm.get(child).reaped, true);
});

Deno.test("ProcessManager wait on a child that already finished does not block", async () => {
  await using f = await fixture();
  const parent = f.pm.spawn({ goal: "p", image: "base-agent:v0" }).pid;
  const child = f.pm.fork(parent).pid;
  f.pm.exit(child, { result: "obj_early" });
  f.pm.beginQuantum(parent);
  f.pm.endQuantum(parent, { type: "wait_child", pid: null }, { interrupts: 0, wake: null });
  const p = f.pm.get(parent);
  assert.equal(p.status, "runnable");
  assert.equal(p.wake?.kind === "child_finished" && p.wake.result, "obj_early");
  assert.equal(
    f.pm.collectChild(parent, child)?.pid,
    child,
    "a named child can be collected again",
  );
});

Deno.test("ProcessManager refuses to wait on a non-child or with no children, changing nothing", async () => {
  await using f = await fixture();
  const a = f.pm.spawn({ goal: "a", image: "base-agent:v0" }).pid;
  const b = f.pm.spawn({ goal: "b", image: "base-agent:v0" }).pid;
  assert.throws(
    () => f.pm.collectChild(a, b),
    (e: unknown) => e instanceof IllegalTransitionError && e.code === "not_a_child",
  );
  assert.throws(
    () => f.pm.collectChild(a, null),
    (e: unknown) => e instanceof IllegalTransitionError && e.code === "no_children",
  );
  f.pm.beginQuantum(a);
  const before = f.runtime.store.getProcess(a);
  assert.throws(
    () => f.pm.endQuantum(a, { type: "wait_child", pid: b }, { interrupts: 0, wake: null }),
    IllegalTransitionError,
  );
  assert.deepEqual(f.runtime.store.getProcess(a), before);
  assert.throws(
    () => f.pm.collectChild(b, null, { kind: "process", pid: a }),
    /may only wait as itself/,
  );
});

Deno.test("ProcessManager: finishing a parent terminates its live descendants", async () => {
  await using f = await fixture();
  const root = f.pm.spawn({ goal: "r", image: "base-agent:v0" }).pid;
  const child = f.pm.fork(root).pid;
  const grandchild = f.pm.fork(child).pid;
  const done = f.pm.fork(root).pid;
  f.pm.exit(done, { result: "kept" });
  f.pm.exit(root);
  assert.equal(f.pm.get(child).status, "killed");
  assert.equal(f.pm.get(grandchild).status, "killed");
  assert.match(f.pm.get(child).message ?? "", /parent .* exited/);
  assert.equal(f.pm.get(done).result, "kept");
});

Deno.test("ProcessManager.chdir() stays inside the workspace (attacks: .., absolute path, symlink out)", async () => {
  await using f = await fixture();
  const outside = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-outside-" }));
  try {
    Deno.mkdirSync(join(f.workspace, "src", "lib"), { recursive: true });
    Deno.writeTextFileSync(join(f.workspace, "file.txt"), "x");
    Deno.symlinkSync(outside, join(f.workspace, "escape"));
    Deno.symlinkSync(join(f.workspace, "src"), join(f.workspace, "alias"));
    const pid = f.pm.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    assert.equal(f.pm.chdir(pid, "src").cwd, "src");
    assert.equal(f.pm.chdir(pid, "lib").cwd, "src/lib", "relative to the current cwd");
    assert.equal(f.pm.chdir(pid, "../..").cwd, ".");
    assert.equal(f.pm.chdir(pid, "alias/lib").cwd, "src/lib", "stored canonical");
    const attacks: [string, new (...args: never[]) => Error][] = [
      ["../..", OutsideWorkspaceError],
      ["../../../../..", OutsideWorkspaceError],
      [outside, OutsideWorkspaceError],
      ["/etc", OutsideWorkspaceError],
      [join(f.workspace, "..", "x"), OutsideWorkspaceError],
      ["/../../escape", OutsideWorkspaceError],
      ["escape", OutsideWorkspaceError],
      ["missing", NotFoundError],
      ["file.txt", ValidationError],
      ["a\0b", ValidationError],
      ["", ValidationError],
    ];
    assert.equal(
      f.pm.chdir(pid, f.workspace).cwd,
      ".",
      "an absolute path inside the workspace is fine",
    );
    for (const [path, type] of attacks) {
      assert.throws(() => f.pm.chdir(pid, path), type, JSON.stringify(path));
      assert.equal(f.pm.get(pid).cwd, ".", `${JSON.stringify(path)} moved the cwd`);
    }
    const child = f.pm.fork(f.pm.chdir(pid, "src").pid);
    assert.equal(child.cwd, "src", "children inherit the cwd");
    assert.throws(
      () => f.pm.spawn({ goal: "g", image: "base-agent:v0", cwd: "escape" }),
      OutsideWorkspaceError,
    );
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("ProcessManager budgets: exhausting tool calls or model tokens fails the process with a typed reason", async () => {
  for (
    const [kind, charge] of [
      ["tool_calls", (pm: ProcessManager, pid: string) => pm.chargeToolCall(pid)],
      ["model_tokens", (pm: ProcessManager, pid: string) => pm.chargeTokens(pid, 400)],
    ] as const
  ) {
    await using f = await fixture({ maxToolCalls: 2, maxModelTokens: 1000 });
    const pid = f.pm.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    charge(f.pm, pid);
    charge(f.pm, pid);
    assert.throws(
      () => charge(f.pm, pid),
      (e: unknown) =>
        e instanceof BudgetExhaustedError && e.kind === kind && e.code === "budget_exhausted",
    );
    const p = f.pm.get(pid);
    assert.equal(p.status, "failed");
    assert.match(p.message ?? "", new RegExp(`^budget_exhausted:${kind}`));
    assert.equal(f.runtime.audit.query({ action: "budget.exhausted", decision: "deny" }).length, 1);
    assert.throws(
      () => charge(f.pm, pid),
      IllegalTransitionError,
      "a failed process cannot be charged",
    );
  }
});

Deno.test("ProcessManager budgets: a process past its wall time is failed instead of scheduled", async () => {
  await using f = await fixture({ maxWallTimeMs: 1000 });
  const pid = f.pm.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  f.clock.advance(1000);
  assert.equal(f.pm.beginQuantum(pid), undefined);
  const p = f.pm.get(pid);
  assert.equal(p.status, "failed");
  assert.match(p.message ?? "", /^budget_exhausted:wall_time/);
});

Deno.test("ProcessManager refuses malformed spawns with typed errors and stores nothing", async () => {
  await using f = await fixture();
  const bad: [string, () => unknown][] = [
    ["bad image", () => f.pm.spawn({ goal: "g", image: "../../etc" })],
    ["bad tool name", () => f.pm.spawn({ goal: "g", image: "a:v0", tools: ["rm -rf"] })],
    ["duplicate tool", () => f.pm.spawn({ goal: "g", image: "a:v0", tools: ["echo", "echo"] })],
    [
      "negative budget",
      () => f.pm.spawn({ goal: "g", image: "a:v0", budgets: { maxToolCalls: -1 } }),
    ],
    ["huge goal", () => f.pm.spawn({ goal: "x".repeat(100_001), image: "a:v0" })],
  ];
  for (const [name, call] of bad) assert.throws(call, ValidationError, name);
  assert.equal(f.runtime.store.listProcesses({ limit: 10 }).length, 0);
  assert.throws(() => f.pm.get("pid_000000000000"), NotFoundError);
});

Deno.test("ProcessManager records lifecycle operations in the audit log and the event stream", async () => {
  await using f = await fixture();
  const pid = f.pm.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  f.pm.signal(pid, "pause");
  f.pm.signal(pid, "resume");
  f.pm.exit(pid, { result: "obj_1" });
  assert.deepEqual(
    f.runtime.audit.query({ pid }).map((r) => r.action).filter((a) => !a.startsWith("capability.")),
    [
      "process.spawn",
      "process.signal",
      "process.signal",
      "process.exit",
    ],
  );
  assert.deepEqual(
    f.runtime.events.read({ kinds: ["process.spawned", "process.status"] }).map((e) =>
      e.kind === "process.status" ? `${e.payload.from}->${e.payload.to}` : e.kind
    ),
    ["process.spawned", "runnable->paused", "paused->runnable", "runnable->exited"],
  );
});

Deno.test("ProcessManager: a process's cwd, status and result survive closing and reopening the database", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-persist-" }));
  try {
    const workspace = join(root, "ws");
    Deno.mkdirSync(join(workspace, "pkg"), { recursive: true });
    const options = {
      workspace,
      db: join(root, "state.db"),
      env: { get: (n: string) => (n === "XDG_STATE_HOME" ? join(root, "xdg") : undefined) },
    };
    let pid = "";
    let child = "";
    {
      await using runtime = await createRuntime(options);
      pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
      runtime.processes.chdir(pid, "pkg");
      child = runtime.processes.fork(pid).pid;
      runtime.processes.exit(child, { result: "obj_7" });
    }
    await using again = await createRuntime(options);
    assert.equal(again.processes.get(pid).cwd, "pkg");
    assert.equal(again.processes.get(child).status, "exited");
    assert.equal(again.processes.get(child).result, "obj_7");
    assert.deepEqual(again.processes.list({ parent: pid }).map((p) => p.pid), [child]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
