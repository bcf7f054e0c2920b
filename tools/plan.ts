/**
 * `update_plan`: the process's own plan — a checklist of steps, each pending, in progress or
 * completed, replaced whole on each call (the shape of Codex's `update_plan` and Claude Code's
 * `TodoWrite`). It is an object of the process (`plan` in its own namespace, `process:<pid>`):
 * written through object memory, so decided and audited like any own-namespace write (allowed
 * in every mode that lets a process write its own scratch objects, plan mode included), kept
 * across a restart and a resume, pinned into the process's context (the model sees its plan every
 * turn), and shown in the run's display and its transcript as a checklist.
 *
 * @module
 */
import { z } from "zod";
import type { ToolSpec } from "../runtime/broker/tool.ts";

/** The name of the plan object in the process's own namespace. */
export const PLAN_OBJECT = "plan";

/** The most steps a plan holds. */
const PLAN_STEPS_MAX = 100;

const Status = z.enum(["pending", "in_progress", "completed"]);

const Step = z.object({
  step: z.string().min(1).max(500).optional().describe("The step, in a few words"),
  content: z.string().min(1).max(500).optional().describe("Same as step (TodoWrite's name)"),
  status: Status,
  activeForm: z.string().max(500).optional().describe("Ignored: accepted for TodoWrite callers"),
  id: z.string().max(100).optional().describe("Ignored: accepted for TodoWrite callers"),
}).strict().refine(
  (s) => (s.step === undefined) !== (s.content === undefined),
  "give each item its text as step (or content), not both",
);

const PlanArgs = z.object({
  plan: z.array(Step).max(PLAN_STEPS_MAX).optional().describe(
    "The whole plan, in order; it replaces the previous one",
  ),
  todos: z.array(Step).max(PLAN_STEPS_MAX).optional().describe("Same as plan (TodoWrite's name)"),
  explanation: z.string().max(2000).optional().describe(
    "Optional: one sentence on what changed in the plan and why",
  ),
}).strict().refine(
  (a) => (a.plan === undefined) !== (a.todos === undefined),
  "give the list as plan (or todos), not both",
).refine(
  (a) => (a.plan ?? a.todos ?? []).filter((s) => s.status === "in_progress").length <= 1,
  "at most one step may be in_progress: mark the others pending or completed",
);

/** A plan as it is stored (and returned). */
interface StoredPlan {
  [key: string]: string | number | null | { content: string; status: string }[];
  steps: { content: string; status: string }[];
  explanation: string | null;
}

const DESCRIPTION =
  `Replace your plan: an ordered checklist of steps, each pending, in_progress or completed.

Use it for work of three or more steps: write the plan before you start, mark a step in_progress when you begin it (at most one at a time) and completed as soon as it is done, and add or drop steps as you learn. Send the whole list each time; it replaces the previous one. Skip it for a single quick change.

Your human sees the checklist as the run goes; it is kept as the object "plan" in your own namespace (read_memory_object with namespace "process:<your pid>" and name "plan"), so it survives a restart. It grants nothing and is not a substitute for telling your human the result.

Example: {"plan": [{"step": "Reproduce the failing test", "status": "completed"}, {"step": "Fix the parser", "status": "in_progress"}, {"step": "Run the whole test suite", "status": "pending"}]}`;

/** The error code of a missing object (tools see errors by their code, not their class). */
function notFound(error: unknown): boolean {
  return typeof error === "object" && error !== null && "code" in error &&
    (error as { code: unknown }).code === "not_found";
}

/** `update_plan`: replaces the process's plan object (created on first use). */
export const updatePlan: ToolSpec<typeof PlanArgs> = {
  name: "update_plan",
  description: DESCRIPTION,
  args: PlanArgs,
  effects: ["memory.read", "memory.write"],
  run: (args, ctx) => {
    const payload: StoredPlan = {
      steps: (args.plan ?? args.todos ?? []).map((s) => ({
        content: (s.step ?? s.content)!,
        status: s.status,
      })),
      explanation: args.explanation ?? null,
    };
    const namespace = `process:${ctx.pid}`;
    let existing: { oid: string; version: number } | undefined;
    try {
      existing = ctx.memory.readByName(namespace, PLAN_OBJECT).info;
    } catch (error) {
      if (!notFound(error)) throw error;
    }
    const info = existing
      ? ctx.memory.update(existing.oid, { payload, ifVersion: existing.version })
      : ctx.memory.create({
        namespace,
        name: PLAN_OBJECT,
        type: "plan",
        payload,
        // Pinned: the plan stays in the stable prefix of the process's context, every turn.
        tags: ["pinned"],
        provenance: { source: "model", label: "update_plan", ref: null },
      });
    const done = payload.steps.filter((s) => s.status === "completed").length;
    return {
      oid: info.oid,
      version: info.version,
      steps: payload.steps,
      summary: `${done} of ${payload.steps.length} steps completed`,
    };
  },
};
