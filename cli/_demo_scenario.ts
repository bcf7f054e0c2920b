/**
 * The demo scenario of `libos demo` (the Agent libOS paper's): in a fresh temporary workspace with
 * a temporary database, a coding agent turns a failing pytest log into an error-trace object,
 * forks a worker that parses it and exits with the result, waits for it and merges the result,
 * proposes, validates, registers and calls a JIT tool, takes a checkpoint, is refused a write it
 * has no authority for (its worker's), makes an edit a policy sends to a human — the demo plays
 * the human, and says so — sees the approved write on disk, and exits with a report. Every tool
 * call goes through the broker and is decided by the primitives exactly as in a real run; the
 * demo only plays the model's part (which calls to make) and the human's.
 *
 * @module
 */
import { join } from "node:path";
import { z } from "zod";
import { JitSandbox, JitValidator, lifecycleFor } from "../jit/mod.ts";
import { FakeClock } from "../runtime/base/clock.ts";
import { HumanPendingError, QuantumEnd } from "../runtime/base/errors.ts";
import { randomIds, seededIds } from "../runtime/base/ids.ts";
import { createRuntime } from "../runtime/runtime.ts";

/** One tool call the demo made, and what the runtime decided. */
const Step = z.object({
  n: z.number().int(),
  actor: z.enum(["agent", "worker", "operator", "human"]),
  what: z.string(),
  tool: z.string().nullable(),
  ok: z.boolean(),
  code: z.string().nullable(),
  detail: z.string(),
});

/** The `--json` document (versioned). */
export const DemoReport = z.object({
  version: z.literal(1),
  seed: z.number().int().nullable(),
  pids: z.object({ agent: z.string(), worker: z.string() }),
  steps: z.array(Step),
  trace: z.string(),
  workerResult: z.string().nullable(),
  failedTests: z.array(z.string()),
  checkpoint: z.string(),
  denial: z.object({ tool: z.string(), code: z.string(), message: z.string() }),
  approval: z.object({ request: z.string(), by: z.string(), path: z.string() }),
  write: z.object({ path: z.string(), verified: z.boolean() }),
  report: z.string(),
  status: z.string(),
  audit: z.object({ records: z.number().int(), denials: z.number().int(), verified: z.boolean() }),
}).strict();
/** The `--json` document. */
export type DemoReport = z.infer<typeof DemoReport>;

const PYTEST_LOG = `============================= test session starts ==============================
collected 3 items

tests/test_mathlib.py .FF                                                  [100%]

=================================== FAILURES ===================================
___________________________________ test_add ___________________________________
    def test_add():
>       assert add(2, 2) == 4
E       assert 5 == 4
=========================== short test summary info ============================
FAILED tests/test_mathlib.py::test_add - assert 5 == 4
FAILED tests/test_mathlib.py::test_add_negative - assert -3 == -4
========================= 2 failed, 1 passed in 0.05s ==========================
`;

const JIT_SOURCE = `export async function run(args, libos) {
  const record = await libos.call("memory.read", { oid: args.oid });
  const text = typeof record.payload === "string" ? record.payload : record.payload.content;
  return text.split("\\n").filter((l) => l.startsWith("FAILED ")).map((l) => l.slice(7).split(" - ")[0]);
}`;

/**
 * Runs the scenario; `say` gets each step as it happens. `db` keeps the run's database at that
 * path (for `libos replay` and its tests); by default it goes with the temporary workspace.
 */
export async function runDemo(
  options: {
    readonly seed?: number;
    readonly say?: (line: string) => void;
    readonly db?: string;
  } = {},
): Promise<DemoReport> {
  const root = Deno.makeTempDirSync({ prefix: "libos-demo-" });
  try {
    return await scenario(root, options);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
}

async function scenario(
  root: string,
  options: { readonly seed?: number; readonly say?: (line: string) => void; readonly db?: string },
): Promise<DemoReport> {
  const workspace = join(root, "ws");
  Deno.mkdirSync(join(workspace, "src"), { recursive: true });
  Deno.mkdirSync(join(workspace, "tests"));
  Deno.writeTextFileSync(
    join(workspace, "src", "mathlib.py"),
    "def add(a, b):\n    return a + b + 1\n",
  );
  Deno.writeTextFileSync(
    join(workspace, "tests", "test_mathlib.py"),
    "from src.mathlib import add\n\ndef test_add():\n    assert add(2, 2) == 4\n",
  );
  Deno.writeTextFileSync(join(workspace, "pytest.log"), PYTEST_LOG);
  // Sized to the work: the parser and the sandbox process of the candidate's test start now, on
  // the other core, while the runtime opens; the call's process starts once that test has run.
  await using sandbox = new JitSandbox({ limits: { wallMs: 10_000 } });
  await using validator = new JitValidator();
  validator.warm();
  sandbox.warm(1);
  await using runtime = await createRuntime({
    workspace,
    db: options.db ?? join(root, "demo.db"),
    env: { get: (n) => (n === "XDG_STATE_HOME" ? join(root, "state") : undefined) },
    mode: "workspace-write",
    human: "queue",
    ids: options.seed === undefined ? randomIds() : seededIds(options.seed),
    ...(options.seed === undefined ? {} : { clock: new FakeClock(Date.UTC(2026, 0, 1)) }),
    wall: false,
  });
  lifecycleFor(runtime, { sandbox, validator });
  const steps: DemoReport["steps"] = [];
  const note = (
    actor: DemoReport["steps"][number]["actor"],
    what: string,
    tool: string | null,
    ok: boolean,
    code: string | null,
    detail: string,
  ) => {
    steps.push({ n: steps.length + 1, actor, what, tool, ok, code, detail });
    options.say?.(
      `${String(steps.length).padStart(2)}. [${actor}] ${what}${tool ? ` (${tool})` : ""}: ${
        ok ? "ok" : `refused ${code}`
      }${detail ? ` — ${detail}` : ""}`,
    );
  };
  const signal = new AbortController().signal;
  const call = async (
    actor: "agent" | "worker",
    pid: string,
    what: string,
    name: string,
    args: Record<string, unknown>,
  ) => {
    const result = await runtime.tools.invoke(pid, { name, arguments: args }, signal);
    note(
      actor,
      what,
      name,
      result.ok,
      result.ok ? null : result.error.code,
      result.ok ? result.forModel.slice(0, 140) : result.error.message.slice(0, 200),
    );
    return result;
  };
  const value = <T>(r: Awaited<ReturnType<typeof call>>): T => {
    if (!r.ok) throw new Error(`demo step failed: ${r.error.code}: ${r.error.message}`);
    return r.value as T;
  };

  // 1. The coding agent.
  const agent = runtime.processes.spawn({
    goal: "Fix the failing test in tests/test_mathlib.py",
    image: "coding-agent:v0",
    tools: [
      ...runtime.images.get("operator", "coding-agent:v0").defaultTools,
      "create_object_from_file",
      "fork_child_process",
      "wait_child_process",
      "merge_child_memory",
      "propose_jit_tool",
      "validate_jit_tool",
      "register_jit_tool",
    ],
  }).pid;
  note("operator", "spawn the coding agent (workspace-write)", null, true, null, agent);

  // 2. The failing log becomes an error-trace object (its content never enters the result).
  const trace = value<{ oid: string }>(
    await call(
      "agent",
      agent,
      "turn the pytest log into an error-trace object",
      "create_object_from_file",
      {
        path: "pytest.log",
        type: "error_trace",
      },
    ),
  ).oid;

  // 3. A forked worker, handed read on the log only, parses it and exits with the result.
  const worker = value<{ pid: string }>(
    await call("agent", agent, "fork a worker that may read pytest.log", "fork_child_process", {
      goal: "Parse pytest.log and report the failing tests",
      inherit: [{ resource: { type: "fs", path: "pytest.log", scope: "exact" }, rights: ["read"] }],
    }),
  ).pid;
  const log = value<{ content: string }>(
    await call("worker", worker, "read the log", "read_text_file", { path: "pytest.log" }),
  ).content;
  const parsed = value<Record<string, unknown>>(
    await call("worker", worker, "parse it", "parse_pytest_log", { log }),
  );
  // The worker has no write authority: refused, nothing written.
  const denied = await call(
    "worker",
    worker,
    "try to write a note into the workspace",
    "write_text_file",
    {
      path: "notes.txt",
      content: "worker was here",
    },
  );
  const denial = {
    tool: "write_text_file",
    code: denied.ok ? "none" : denied.error.code,
    message: denied.ok ? "" : denied.error.message,
  };
  const result = value<{ oid: string }>(
    await call("worker", worker, "store the parsed result", "create_memory_object", {
      type: "test_summary",
      payload: parsed as never,
    }),
  ).oid;
  try {
    await runtime.tools.invoke(worker, { name: "process_exit", arguments: { result } }, signal);
  } catch (error) {
    // The scheduler would apply it at the end of the quantum; here the demo does.
    if (!(error instanceof QuantumEnd) || error.outcome.type !== "exit") throw error;
    runtime.processes.exit(worker, { result, message: "parsed" }, { kind: "process", pid: worker });
    note("worker", "exit with its result", "process_exit", true, null, result);
  }
  const waited = value<{ child: { status: string; result: string | null } }>(
    await call("agent", agent, "wait for the worker", "wait_child_process", { pid: worker }),
  );
  await call("agent", agent, "merge the worker's result", "merge_child_memory", { pid: worker });

  // 4. A JIT tool: proposed, validated in the sandbox, registered (the operator grants the
  //    register right, and says so), called.
  const proposed = value<{ oid: string }>(
    await call("agent", agent, "propose a JIT tool", "propose_jit_tool", {
      name: "extract_failed_tests",
      description: "List the failing test ids of an error-trace object.",
      input_schema: { type: "object", properties: { oid: { type: "string" } }, required: ["oid"] },
      output_schema: { type: "array", items: { type: "string" } },
      source: JIT_SOURCE,
      tests: [{
        name: "two failures",
        args: { oid: "obj_1" },
        syscalls: [{
          name: "memory.read",
          args: { oid: "obj_1" },
          result: { payload: { content: "FAILED a::b - x\nok\nFAILED c::d - y" } },
        }],
        expect: ["a::b", "c::d"],
      }],
    }),
  ).oid;
  // The call's process starts while the tool is validated, which mostly waits (on the parser,
  // then on the test's process): by the call it is up.
  sandbox.warm(2);
  await call(
    "agent",
    agent,
    "validate it (static checks, then its test in the sandbox)",
    "validate_jit_tool",
    {
      oid: proposed,
    },
  );
  runtime.authority.capabilities.grant({
    subject: agent,
    resource: { type: "tool", key: "extract_failed_tests", scope: "exact" },
    rights: ["register"],
    effect: "allow",
    issuer: "operator",
  }, "operator");
  note("operator", "grant the register right on tool:extract_failed_tests", null, true, null, "");
  await call("agent", agent, "register it", "register_jit_tool", { oid: proposed });
  const failedTests = value<string[]>(
    await call("agent", agent, "call it on the error trace", "extract_failed_tests", {
      oid: trace,
    }),
  );

  // 5. A checkpoint before the fix.
  const checkpoint = value<{ checkpoint: { id: string } }>(
    await call("agent", agent, "checkpoint before the fix", "checkpoint_create", {
      label: "before the fix",
    }),
  ).checkpoint.id;

  // 6. The fix: a policy asks a human before writes under src/ (an ask capability); the demo
  //    plays the human and approves the exact edit it is shown.
  runtime.authority.capabilities.grant({
    subject: agent,
    resource: { type: "fs", path: "src", scope: "subtree" },
    rights: ["write"],
    effect: "ask",
    issuer: "operator",
  }, "operator");
  note("operator", "policy: writes under src/ ask a human", null, true, null, "");
  let requestId = "";
  try {
    await call("agent", agent, "fix add()", "edit_file", {
      path: "src/mathlib.py",
      old_string: "return a + b + 1",
      new_string: "return a + b",
    });
  } catch (error) {
    if (!(error instanceof HumanPendingError)) throw error;
    requestId = error.request;
    note("agent", "the edit waits for a human", "edit_file", false, "human_pending", requestId);
  }
  runtime.human.approve(requestId, { by: "human:demo" });
  note("human", "approve the edit (the demo plays the human)", null, true, null, requestId);
  const resumed = await runtime.human.resume(agent, requestId, signal);
  const applied = resumed.type === "outcome" && resumed.outcome.ok;
  note(
    "agent",
    "the approved edit runs, once",
    "edit_file",
    applied,
    applied ? null : "failed",
    "",
  );
  const verified = Deno.readTextFileSync(join(workspace, "src", "mathlib.py")).includes(
    "return a + b\n",
  );

  // 7. The report, and exit.
  const report = value<{ oid: string }>(
    await call("agent", agent, "write the report", "create_memory_object", {
      type: "report",
      payload: {
        failing: failedTests,
        fix: "src/mathlib.py: add() returned a + b + 1",
        worker: waited.child.result,
        checkpoint,
      },
    }),
  ).oid;
  try {
    await runtime.tools.invoke(
      agent,
      { name: "process_exit", arguments: { result: report } },
      signal,
    );
  } catch (error) {
    if (!(error instanceof QuantumEnd) || error.outcome.type !== "exit") throw error;
    runtime.processes.exit(agent, { result: report, message: "fixed" }, {
      kind: "process",
      pid: agent,
    });
    note("agent", "exit with the report", "process_exit", true, null, report);
  }
  runtime.store.flush();
  const records = runtime.audit.query({ limit: 10_000 });
  return DemoReport.parse({
    version: 1,
    seed: options.seed ?? null,
    pids: { agent, worker },
    steps,
    trace,
    workerResult: waited.child.result,
    failedTests,
    checkpoint,
    denial,
    approval: { request: requestId, by: "human:demo", path: "src/mathlib.py" },
    write: { path: "src/mathlib.py", verified },
    report,
    status: runtime.processes.get(agent).status,
    audit: {
      records: records.length,
      denials: records.filter((r) => r.decision === "deny").length,
      verified: runtime.audit.verify({ head: true }).ok,
    },
  });
}
