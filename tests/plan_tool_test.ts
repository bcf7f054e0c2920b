/**
 * `update_plan` called as models call it (issue 27): the Codex `update_plan` shape and the
 * Claude Code `TodoWrite` shape, each replacing the whole plan; the mistakes models make (two
 * steps in progress, an unknown status, both list names) refused naming what to fix, with no
 * plan written. The plan is an object of the process — decided and audited like any write to its
 * own namespace, allowed in plan mode, pinned into its context — and it survives a restart of the
 * runtime: written, closed, reopened from the same database, read back and replaced. The
 * transcript shows it as a checklist, every step escaped (the run display's test is in
 * `cli/_agent_terminal_test.ts`).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Runtime } from "../runtime/runtime.ts";
import type { ToolResult } from "../runtime/broker/tool_broker.ts";
import { processContext } from "../runtime/memory/process_context.ts";
import { PLAN_TOOL, planChecklist } from "../runtime/model/plan_checklist.ts";
import { updatePlan } from "../tools/plan.ts";
import { renderTranscript } from "../runtime/model/transcript_render.ts";
import { testRuntime } from "../testing.ts";

const NEVER = new AbortController().signal;
const TOOLS = ["update_plan", "read_memory_object"];

function invoke(runtime: Runtime, pid: string, name: string, args: unknown): Promise<ToolResult> {
  return runtime.tools.invoke(pid, { id: "call_1", name, arguments: args }, NEVER);
}

/** The stored plan's payload, read as the operator (not a decision of the process). */
function storedPlan(runtime: Runtime, pid: string): unknown {
  const info = runtime.memory.list("operator", `process:${pid}`).find((o) => o.name === "plan");
  return info ? runtime.memory.read("operator", info.oid).payload : undefined;
}

interface Row {
  readonly name: string;
  readonly args: unknown;
  /** The stored steps, or the refusal's code and words. */
  readonly steps?: readonly { content: string; status: string }[];
  readonly refused?: { readonly code: string; readonly says: string };
}

const ROWS: readonly Row[] = [
  {
    name: "Codex's update_plan shape (plan of {step, status}, with an explanation)",
    args: {
      explanation: "Starting on the parser",
      plan: [
        { step: "Reproduce the failing test", status: "completed" },
        { step: "Fix the parser", status: "in_progress" },
        { step: "Run the whole suite", status: "pending" },
      ],
    },
    steps: [
      { content: "Reproduce the failing test", status: "completed" },
      { content: "Fix the parser", status: "in_progress" },
      { content: "Run the whole suite", status: "pending" },
    ],
  },
  {
    name: "Claude Code's TodoWrite shape (todos of {content, status, activeForm})",
    args: {
      todos: [
        { content: "Read the config loader", status: "in_progress", activeForm: "Reading" },
        { content: "Add the missing default", status: "pending", activeForm: "Adding" },
      ],
    },
    steps: [
      { content: "Read the config loader", status: "in_progress" },
      { content: "Add the missing default", status: "pending" },
    ],
  },
  { name: "an empty list clears the plan", args: { plan: [] }, steps: [] },
  {
    name: "two steps in progress are refused, saying at most one",
    args: {
      plan: [{ step: "a", status: "in_progress" }, { step: "b", status: "in_progress" }],
    },
    refused: { code: "invalid_arguments", says: "at most one step may be in_progress" },
  },
  {
    name: "an unknown status is refused, naming the statuses",
    args: { plan: [{ step: "a", status: "done" }] },
    refused: { code: "invalid_arguments", says: '"pending"|"in_progress"|"completed"' },
  },
  {
    name: "plan and todos together are refused",
    args: { plan: [{ step: "a", status: "pending" }], todos: [] },
    refused: { code: "invalid_arguments", says: "give the list as plan (or todos), not both" },
  },
  {
    name: "an item with both step and content is refused",
    args: { plan: [{ step: "a", content: "a", status: "pending" }] },
    refused: { code: "invalid_arguments", says: "step (or content), not both" },
  },
  {
    name: "an item without text is refused",
    args: { plan: [{ status: "pending" }] },
    refused: { code: "invalid_arguments", says: "step (or content)" },
  },
];

for (const row of ROWS) {
  Deno.test(`update_plan as a model calls it: ${row.name}`, async () => {
    await using t = await testRuntime({ prefix: "libos-plan-", wall: false });
    const pid = t.spawn({ tools: TOOLS });
    const result = await invoke(t.runtime, pid, "update_plan", row.args);
    if (row.steps) {
      if (!result.ok) assert.fail(`${result.error.code}: ${result.error.message}`);
      assert.deepEqual((result.value as { steps: unknown }).steps, row.steps);
      assert.deepEqual((storedPlan(t.runtime, pid) as { steps: unknown }).steps, row.steps);
    } else {
      if (result.ok) assert.fail(`expected ${row.refused!.code}: ${result.forModel}`);
      assert.equal(result.error.code, row.refused!.code);
      assert.ok(result.error.message.includes(row.refused!.says), result.error.message);
      assert.equal(storedPlan(t.runtime, pid), undefined, "no plan was written");
    }
  });
}

Deno.test("update_plan: the plan survives a restart of the runtime — read back, still in the context, replaced whole", async () => {
  await using t = await testRuntime({
    prefix: "libos-plan-resume-",
    workspaceDir: "ws",
    wall: false,
    fromRoot: (root) => ({
      db: join(root, "state.db"),
      env: { get: (n: string) => (n === "XDG_STATE_HOME" ? join(root, "state") : undefined) },
    }),
  });
  const first = [
    { step: "Reproduce", status: "completed" },
    { step: "Fix", status: "in_progress" },
  ];
  const pid = t.spawn({ tools: TOOLS });
  const written = await invoke(t.runtime, pid, "update_plan", { plan: first });
  assert.equal(written.ok, true);
  await t.runtime.close();
  // Reopened from the same database (closed before the fixture removes the directory).
  await using runtime = await t.reopen();
  // Read back by the process itself, as a model would after a resume.
  const read = await invoke(runtime, pid, "read_memory_object", {
    namespace: `process:${pid}`,
    name: "plan",
  });
  if (!read.ok) assert.fail(`${read.error.code}: ${read.error.message}`);
  assert.deepEqual((read.value as { payload: unknown }).payload, {
    steps: [
      { content: "Reproduce", status: "completed" },
      { content: "Fix", status: "in_progress" },
    ],
    explanation: null,
  });
  // Pinned: the model sees it in its context on the next turn.
  const context = processContext(runtime.memory, pid);
  assert.ok(context.text.includes("Reproduce") && context.text.includes("in_progress"));
  // The next call replaces the whole list (the same object, its next version).
  const replaced = await invoke(runtime, pid, "update_plan", {
    plan: [{ step: "Fix", status: "completed" }, { step: "Verify", status: "in_progress" }],
  });
  if (!replaced.ok) assert.fail(`${replaced.error.code}: ${replaced.error.message}`);
  assert.equal((replaced.value as { version: number }).version, 2);
  assert.deepEqual(storedPlan(runtime, pid), {
    steps: [{ content: "Fix", status: "completed" }, {
      content: "Verify",
      status: "in_progress",
    }],
    explanation: null,
  });
  assert.equal(
    runtime.memory.list("operator", `process:${pid}`).filter((o) => o.name === "plan").length,
    1,
    "one plan object, replaced in place",
  );
});

Deno.test("update_plan: each write is decided and audited as a write to the process's own namespace, and plan mode allows it", async () => {
  await using t = await testRuntime({ prefix: "libos-plan-mode-", mode: "plan", wall: false });
  const { runtime } = t;
  const pid = t.spawn({ tools: TOOLS });
  for (const status of ["in_progress", "completed"]) {
    const result = await invoke(runtime, pid, "update_plan", { plan: [{ step: "a", status }] });
    if (!result.ok) assert.fail(`${result.error.code}: ${result.error.message}`);
  }
  const records = runtime.audit.query({ pid, limit: 100 })
    .filter((r) => r.action === "object.create" || r.action === "object.write");
  assert.deepEqual(records.map((r) => [r.action, r.decision]), [
    ["object.create", "allow"],
    ["object.write", "allow"],
  ]);
  assert.ok(records.every((r) => r.resource.startsWith(`object:process:${pid}/`)));
});

Deno.test("update_plan: each process has its own plan — one process's call never replaces another's", async () => {
  await using t = await testRuntime({ prefix: "libos-plan-other-", wall: false });
  const { runtime } = t;
  const a = t.spawn({ goal: "a", tools: TOOLS });
  const b = t.spawn({ goal: "b", tools: TOOLS });
  await invoke(runtime, a, "update_plan", { plan: [{ step: "mine", status: "pending" }] });
  await invoke(runtime, b, "update_plan", { plan: [{ step: "theirs", status: "pending" }] });
  assert.deepEqual((storedPlan(runtime, a) as { steps: unknown }).steps, [
    { content: "mine", status: "pending" },
  ]);
  assert.deepEqual((storedPlan(runtime, b) as { steps: unknown }).steps, [
    { content: "theirs", status: "pending" },
  ]);
});

Deno.test("planChecklist: one line per step with its mark, hostile text escaped (no terminal escape survives)", () => {
  const lines = planChecklist({
    plan: [
      { step: "done", status: "completed" },
      { step: "now \x1b[2J\x1b]0;pwned\x07", status: "in_progress" },
      { step: "later\nforged line", status: "pending" },
    ],
  });
  assert.equal(lines.length, 3);
  assert.equal(lines[0], "✔ done");
  assert.ok(lines[1]!.startsWith("▸ now "));
  assert.ok(lines[2]!.startsWith("□ later"));
  const control = (l: string) => [...l].some((c) => c.charCodeAt(0) < 0x20 || c === "\x7f");
  assert.ok(!lines.some(control), JSON.stringify(lines));
  assert.deepEqual(planChecklist({ path: "x" }), [], "no plan, no checklist");
});

Deno.test("The transcript shows an update_plan call as its checklist under the call", () => {
  const args = {
    plan: [{ step: "Reproduce", status: "completed" }, { step: "Fix", status: "in_progress" }],
  };
  const transcript = renderTranscript([
    { type: "tool_call", pid: "pid_1", seq: 2, id: "call_1", name: "update_plan", arguments: args },
  ]);
  assert.match(transcript, /call update_plan/);
  assert.match(transcript, /│ ✔ Reproduce\n.*│ ▸ Fix/);
});

Deno.test("The display's plan tool name is the tool's own (the two cannot drift apart)", () => {
  assert.equal(PLAN_TOOL, updatePlan.name);
});
