/**
 * Red team of the host-side bounds of a JIT tool call (issue 20): what a tool sends (frames,
 * logs), how long the host serves it, and what its syscalls cost the process's budget. Each
 * attack is a real hostile tool, proposed, validated and registered through the lifecycle, that
 * passes its own test and misbehaves when called with `attack` — invoked through the runtime's
 * tool broker as a model would call it (and once through the real CLI launcher), with a benign
 * call of the same tool as the control. Every breach is a typed error and leaves an audit record.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { JitSandbox, type SandboxLimits } from "../jit/sandbox.ts";
import { lifecycleFor } from "../jit/tool_lifecycle.ts";
import { JitValidator } from "../jit/validator.ts";
import { BudgetExhaustedError } from "../runtime/base/errors.ts";
import type { AuditRecord } from "../runtime/audit/audit_log.ts";
import type { HumanMode } from "../runtime/human/human_channel.ts";
import type { Budgets } from "../runtime/process/process.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { testRuntime } from "../testing.ts";
import type { ToolResult } from "../runtime/broker/tool_broker.ts";
import { sandbox as cliSandbox, task } from "./_cli_sandbox.ts";
import { allow } from "./authority_fixture.ts";
import { echoCandidate } from "./sample_fixture.ts";
import { exists } from "./shell_fixture.ts";

/** The built-in tools the attacks are compared with. */
const COMPARED = ["write_text_file", "run_shell_command"];

/** Files directly in `dir` whose name starts with `prefix`. */
function filesNamed(dir: string, prefix: string): number {
  return [...Deno.readDirSync(dir)].filter((e) => e.isFile && e.name.startsWith(prefix)).length;
}

interface Setup extends AsyncDisposable {
  readonly root: string;
  readonly runtime: Runtime;
  /** A process of its own, with these budgets, holding the tool `name` running `attack`. */
  processWith(name: string, attack: string, budgets?: Partial<Budgets>): Promise<string>;
  /** A process with the built-in tools the comparisons call. */
  builtinProcess(budgets?: Partial<Budgets>): string;
  /** Calls a tool as a model would. */
  invoke(pid: string, name: string, args?: Record<string, unknown>): Promise<ToolResult>;
}

async function setup(
  options: {
    readonly human?: HumanMode;
    readonly mode?: string;
    readonly limits?: Partial<SandboxLimits>;
  } = {},
): Promise<Setup> {
  const t = await testRuntime({
    prefix: "libos-redteam-bounds-",
    mode: options.mode ?? "workspace-write",
    human: options.human ?? "none",
    wall: false,
  });
  const { runtime, root } = t;
  const sandbox = new JitSandbox({ limits: { wallMs: 20_000, ...options.limits } });
  const validator = new JitValidator();
  const lifecycle = lifecycleFor(runtime, { sandbox, validator });
  const spawn = (budgets?: Partial<Budgets>) =>
    t.spawn({ tools: COMPARED, ...(budgets ? { budgets } : {}) });
  return {
    builtinProcess: spawn,
    root,
    runtime,
    async processWith(name, attack, budgets) {
      const pid = spawn(budgets);
      allow(runtime, pid, { type: "tool", key: name, scope: "exact" }, ["register"]);
      // It passes its test (called without `attack`, it returns "benign").
      const source = `export async function run(args, libos) {
        if (!args.attack) return "benign";
        ${attack}
      }`;
      const oid = lifecycle.propose(pid, echoCandidate(source, name));
      const validation = await lifecycle.validate(pid, oid);
      assert.equal(validation.ok, true, JSON.stringify(validation));
      await lifecycle.register(pid, oid);
      return pid;
    },
    invoke: (pid, name, args = {}) =>
      runtime.tools.invoke(pid, { name, arguments: args }, new AbortController().signal),
    async [Symbol.asyncDispose]() {
      assert.equal(runtime.audit.verify({ head: false }).ok, true, "the audit chain verifies");
      await validator[Symbol.asyncDispose]();
      await sandbox[Symbol.asyncDispose]();
      await t[Symbol.asyncDispose]();
    },
  };
}

/** The `jit.call` audit records of a tool: [decision, authority]. */
function jitCalls(runtime: Runtime, pid: string, tool: string): [string, string][] {
  return runtime.audit.query({ pid, action: "jit.call", resource: `tool:${tool}` })
    .map((r) => [r.decision, r.authority]);
}

/** The error code of a failed result (the call must have failed). */
/**
 * A syscall's decision records, oldest first: one per syscall — its primitive's, carrying the
 * syscall in its detail, or the session's `syscall.<name>` when no primitive decided.
 */
function syscallRecords(runtime: Runtime, pid: string, syscall: string): AuditRecord[] {
  return runtime.audit.query({ pid, limit: 10_000 }).filter((r) =>
    r.decision !== "none" && (r.action === `syscall.${syscall}` || r.detail?.syscall === syscall)
  );
}

function codeOf(result: ToolResult): string {
  assert.equal(result.ok, false, `expected a failure, got ${result.forModel}`);
  return result.ok ? "" : result.error.code;
}

function heapUsed(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return Deno.memoryUsage().heapUsed;
}

Deno.test("A registered JIT tool attack: five million empty log lines fail the call with frame_limit, audited, and the host keeps none of them; its benign call works (control)", async () => {
  await using s = await setup();
  const pid = await s.processWith(
    "chatty",
    `for (let i = 0; i < 5_000_000; i++) console.log(); return "flooded";`,
  );
  const before = heapUsed();
  const flood = await s.invoke(pid, "chatty", { attack: true });
  assert.equal(codeOf(flood), "frame_limit");
  const grown = heapUsed() - before;
  assert.ok(grown < 64 * 1024 * 1024, `the host's heap grew by ${grown} bytes`);
  const control = await s.invoke(pid, "chatty");
  assert.ok(control.ok && control.value === "benign", control.forModel);
  assert.deepEqual(jitCalls(s.runtime, pid, "chatty"), [
    ["deny", "frame_limit"],
    ["allow", "syscalls:0"],
  ]);
});

Deno.test("A registered JIT tool attack: a thousand fs.write_text syscalls cost what a thousand write_text_file calls cost", async () => {
  await using s = await setup();
  const budgets = { maxToolCalls: 5_000 };
  const jit = await s.processWith(
    "bulk_writer",
    `for (let i = 0; i < 1000; i++) {
      await libos.call("fs.write_text", { path: "jit-" + i + ".txt", content: "x" });
    }
    return "wrote";`,
    budgets,
  );
  const builtin = s.builtinProcess(budgets);
  const before = s.runtime.processes.get(jit).usage.toolCalls;
  const result = await s.invoke(jit, "bulk_writer", { attack: true });
  assert.ok(result.ok, result.forModel);
  for (let i = 0; i < 1000; i++) {
    const wrote = await s.invoke(builtin, "write_text_file", {
      path: `builtin-${i}.txt`,
      content: "x",
    });
    assert.ok(wrote.ok, wrote.forModel);
  }
  const jitUsed = s.runtime.processes.get(jit).usage.toolCalls - before;
  const builtinUsed = s.runtime.processes.get(builtin).usage.toolCalls;
  assert.equal(builtinUsed, 1000);
  assert.equal(jitUsed, 1000 + 1, "the writes, and the call of the JIT tool itself");
  assert.equal(filesNamed(s.root, "jit-"), 1000);
  assert.equal(filesNamed(s.root, "builtin-"), 1000);
});

Deno.test("A registered JIT tool attack: writing past the process's tool-call budget stops the call at the budget with budget_exhausted — exactly where write_text_file calls stop — and the process fails", async () => {
  await using s = await setup();
  const budgets = { maxToolCalls: 30 };
  const jit = await s.processWith(
    "greedy_writer",
    `for (let i = 0; i < 1000; i++) {
      // A tool that swallows the refusal gets no further: the call ends with it.
      try { await libos.call("fs.write_text", { path: "jit-" + i + ".txt", content: "x" }); }
      catch {}
    }
    return "wrote them all";`,
    budgets,
  );
  const control = await s.invoke(jit, "greedy_writer");
  assert.ok(control.ok && control.value === "benign", "control: the benign call works");
  const result = await s.invoke(jit, "greedy_writer", { attack: true });
  assert.equal(codeOf(result), "budget_exhausted");
  // The same budget spent through the built-in tool, one call at a time.
  const builtin = s.builtinProcess(budgets);
  let builtinWrites = 0;
  for (let i = 0; i < 1000; i++) {
    try {
      const wrote = await s.invoke(builtin, "write_text_file", {
        path: `builtin-${i}.txt`,
        content: "x",
      });
      assert.ok(wrote.ok, wrote.forModel);
      builtinWrites++;
    } catch (error) {
      assert.ok(error instanceof BudgetExhaustedError, String(error));
      break;
    }
  }
  const jitWrites = filesNamed(s.root, "jit-");
  // Two calls of the JIT tool took one tool call each; every write took one more.
  assert.equal(builtinWrites, 30);
  assert.equal(jitWrites, 30 - 2);
  for (const pid of [jit, builtin]) {
    const p = s.runtime.processes.get(pid);
    assert.equal(p.status, "failed");
    assert.equal(p.usage.toolCalls, 30);
  }
  assert.deepEqual(jitCalls(s.runtime, jit, "greedy_writer"), [
    ["allow", "syscalls:0"],
    ["deny", "budget_exhausted"],
  ]);
  // One record per syscall: the filesystem primitive's allow for each write (naming the
  // syscall), the session's refusal for the one past the budget.
  const writes = syscallRecords(s.runtime, jit, "fs.write_text");
  assert.deepEqual(
    [writes.at(-1)?.action, writes.at(-1)?.authority],
    ["syscall.fs.write_text", "budget_exhausted"],
  );
  assert.equal(
    writes.filter((r) => r.action === "fs.write" && r.decision === "allow").length,
    jitWrites,
  );
  assert.equal(writes.length, jitWrites + 1);
  assert.equal(s.runtime.audit.query({ pid: jit, action: "budget.exhausted" }).length, 1);
});

Deno.test("A registered JIT tool attack: shell.run with an hour-long timeout is refused as run_shell_command refuses it, before anything runs; ten minutes runs (control)", async () => {
  await using s = await setup({ mode: "full-access" });
  const pid = await s.processWith(
    "patient_shell",
    `try {
      await libos.call("shell.run", { argv: ["touch", args.marker], timeout_ms: args.timeout });
      return "ran";
    } catch (e) { return e.code; }`,
  );
  // Its process may run touch: only the cap decides below.
  allow(s.runtime, pid, { type: "shell", argv: ["touch"], scope: "prefix" }, ["execute"]);
  const hour = await s.invoke(pid, "patient_shell", {
    attack: true,
    marker: "hour.txt",
    timeout: 3_600_000,
  });
  assert.ok(hour.ok && hour.value === "validation_failed", hour.forModel);
  assert.ok(!exists(join(s.root, "hour.txt")), "nothing ran");
  const builtin = await s.invoke(pid, "run_shell_command", {
    argv: ["touch", "hour-builtin.txt"],
    timeout_ms: 3_600_000,
  });
  assert.equal(codeOf(builtin), "invalid_arguments", "the built-in tool refuses the same");
  assert.ok(!exists(join(s.root, "hour-builtin.txt")));
  const tenMinutes = await s.invoke(pid, "patient_shell", {
    attack: true,
    marker: "minutes.txt",
    timeout: 600_000,
  });
  assert.ok(tenMinutes.ok && tenMinutes.value === "ran", tenMinutes.forModel);
  assert.ok(exists(join(s.root, "minutes.txt")), "control: ten minutes is the cap, and runs");
  // One record per syscall: the session's refusal of the hour (before any primitive), the shell
  // primitive's allow of ten minutes (naming the syscall).
  assert.deepEqual(
    syscallRecords(s.runtime, pid, "shell.run").map((r) => [r.action, r.decision]),
    [["syscall.shell.run", "deny"], ["shell.run", "allow"]],
  );
});

Deno.test("A registered JIT tool attack: keeping the host serving past the call's bound (sleep after sleep) fails with serving_limit and does nothing after; time its process waits on the human is not counted (control)", async () => {
  await using s = await setup({ human: "queue", limits: { maxServingMs: 1_500 } });
  const pid = await s.processWith(
    "sleeper",
    `if (args.ask) await libos.call("human.ask", { question: "go on?" });
    for (let i = 0; i < args.sleeps; i++) await libos.call("clock.sleep", { ms: 600 });
    await libos.call("fs.write_text", { path: args.marker, content: "done" });
    return "slept";`,
  );
  const attack = await s.invoke(pid, "sleeper", { attack: true, sleeps: 3, marker: "late.txt" });
  assert.equal(codeOf(attack), "serving_limit");
  assert.ok(!exists(join(s.root, "late.txt")), "nothing ran after the breach");
  assert.deepEqual(syscallRecords(s.runtime, pid, "fs.write_text"), []);
  // Control: a human takes two seconds to answer, then one sleep: well within the bound.
  const asked = s.invoke(pid, "sleeper", { attack: true, ask: true, sleeps: 1, marker: "ok.txt" });
  let request: string | undefined;
  for (let i = 0; i < 300 && !request; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    request = s.runtime.human.list()[0]?.id;
  }
  assert.ok(request, "the tool's question reached the queue");
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  s.runtime.human.answer(request, { by: "human:test", text: "yes" });
  const answered = await asked;
  assert.ok(answered.ok && answered.value === "slept", answered.forModel);
  assert.ok(exists(join(s.root, "ok.txt")));
  assert.deepEqual(jitCalls(s.runtime, pid, "sleeper"), [
    ["deny", "serving_limit"],
    ["allow", "syscalls:3"],
  ]);
});

Deno.test("deno task libos jit run attack: a registered tool flooding empty log lines fails with frame_limit through the real launcher, audited; its benign call works (control)", async () => {
  using s = cliSandbox();
  const spawned = await s.json("spawn", "--goal", "flood");
  assert.equal(spawned.status, 0, spawned.stderr);
  const pid = (spawned.doc.process as { pid: string }).pid;
  Deno.writeTextFileSync(
    join(s.workspace, "flooder.json"),
    JSON.stringify(echoCandidate(
      `export function run(args) {
        if (!args.attack) return "benign";
        for (let i = 0; i < 5_000_000; i++) console.log();
        return "flooded";
      }`,
      "flooder",
    )),
  );
  const oid = (await s.json("jit", "propose", pid, "flooder.json")).doc.oid as string;
  assert.equal((await s.json("jit", "validate", pid, oid)).doc.ok, true);
  const granted = await s.cli("grant", pid, "--resource", "tool:flooder", "--right", "register");
  assert.equal(granted.status, 0, granted.stderr);
  assert.equal((await s.cli("jit", "register", pid, oid)).status, 0);
  const flood = await task(
    s.workspace,
    s.state,
    "libos",
    "jit",
    "run",
    pid,
    "flooder",
    "--args",
    '{"attack":true}',
    "--json",
  );
  assert.equal(flood.status, 1, flood.stderr);
  assert.equal(JSON.parse(flood.stdout).error.code, "frame_limit", flood.stdout);
  const control = await task(s.workspace, s.state, "libos", "jit", "run", pid, "flooder", "--json");
  assert.equal(control.status, 0, control.stderr);
  assert.equal(JSON.parse(control.stdout).value, "benign");
  const audit = await s.json("audit", "query", "--pid", pid, "--action", "jit.call");
  const records = audit.doc.records as { decision: string; authority: string }[];
  assert.deepEqual(records.map((r) => [r.decision, r.authority]), [
    ["deny", "frame_limit"],
    ["allow", "syscalls:0"],
  ]);
});
