/**
 * The agent process: identity, lineage, lifecycle status, goal, workspace-relative cwd, budgets
 * and their usage, tool table, pending action, wake condition and result link. Schemas here are
 * the single source of truth for the stored row.
 *
 * @module
 */
import { z } from "zod";

/** Every lifecycle status. `exited`, `failed` and `killed` are final. */
export const ProcessStatus = z.enum([
  "created",
  "runnable",
  "running",
  "waiting_human",
  "waiting_child",
  "sleeping",
  "paused",
  "exited",
  "failed",
  "killed",
]);
/** A lifecycle status. */
export type ProcessStatus = z.infer<typeof ProcessStatus>;

/** Whether a status is final: `exited`, `failed` and `killed` are never left. */
export function isFinal(status: ProcessStatus): boolean {
  return status === "exited" || status === "failed" || status === "killed";
}

/** Limits a process runs under; every one is enforced. */
export const Budgets = z.object({
  /** Tool calls over the process's life. */
  maxToolCalls: z.number().int().nonnegative().max(1_000_000_000),
  /** Children alive (not finished) at the same time. */
  maxLiveChildren: z.number().int().nonnegative().max(100_000),
  /** Milliseconds from spawn. */
  maxWallTimeMs: z.number().int().positive().max(366 * 24 * 3600 * 1000),
  /** Model tokens (prompt + completion) over the process's life. */
  maxModelTokens: z.number().int().nonnegative().max(1_000_000_000_000),
}).strict();
/** Limits a process runs under. */
export type Budgets = z.infer<typeof Budgets>;

/** The budgets of a top-level process when nothing else is said. */
export const DEFAULT_BUDGETS: Budgets = Object.freeze({
  maxToolCalls: 200,
  maxLiveChildren: 4,
  maxWallTimeMs: 60 * 60 * 1000,
  maxModelTokens: 2_000_000,
});

/**
 * What a process has used of its budgets. `delegated*` is what it handed to live children: a
 * child's allowance is reserved from its parent's remaining budget at fork or spawn and the
 * unused part comes back when the child finishes, so forking never multiplies a budget.
 */
export const Usage = z.object({
  toolCalls: z.number().int().nonnegative(),
  modelTokens: z.number().int().nonnegative(),
  delegatedToolCalls: z.number().int().nonnegative(),
  delegatedModelTokens: z.number().int().nonnegative(),
}).strict();
/** What a process has used of its budgets. */
export type Usage = z.infer<typeof Usage>;

/** Which budget ran out. */
export const BudgetKind = z.enum(["tool_calls", "live_children", "wall_time", "model_tokens"]);
/** Which budget ran out. */
export type BudgetKind = z.infer<typeof BudgetKind>;

/** What a blocked process waits for, and what woke it. */
export const WakeCondition = z.discriminatedUnion("kind", [
  /** Sleeping until a time (ms since the epoch). */
  z.object({ kind: z.literal("sleep"), until: z.number().int() }).strict(),
  /** Waiting for a child to finish: a given one, or any. */
  z.object({ kind: z.literal("child"), pid: z.string().nullable() }).strict(),
  /** Waiting for a human request (the human channel issue). */
  z.object({ kind: z.literal("human"), request: z.string() }).strict(),
]);
/** What a blocked process waits for. */
export type WakeCondition = z.infer<typeof WakeCondition>;

/** Why a process became runnable again; its driver reads this on the next quantum. */
export const WakeReason = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("timer") }).strict(),
  z.object({
    kind: z.literal("child_finished"),
    pid: z.string(),
    status: ProcessStatus,
    result: z.string().nullable(),
  }).strict(),
  z.object({ kind: z.literal("resumed") }).strict(),
  z.object({
    kind: z.literal("cancelled"),
    waited: z.enum(["sleep", "child", "human"]),
    /** The human request it waited on, now withdrawn. */
    request: z.string().optional(),
  }).strict(),
  z.object({
    kind: z.literal("interrupted"),
    /** The human request it waited on, now withdrawn. */
    request: z.string().optional(),
  }).strict(),
  z.object({ kind: z.literal("human"), request: z.string() }).strict(),
]);
/** Why a process became runnable again. */
export type WakeReason = z.infer<typeof WakeReason>;

/** Signals an operator or a parent can send. */
export const Signal = z.enum(["pause", "resume", "cancel", "interrupt", "terminate"]);
/** A signal. */
export type Signal = z.infer<typeof Signal>;

const Pid = z.string().regex(/^pid_[0-9a-f]{12}$/);

/** A stored agent process. */
export const AgentProcess = z.object({
  pid: Pid,
  parent: Pid.nullable(),
  /** The image id it runs (resolved by the image registry). */
  image: z.string().min(1).max(200),
  /**
   * The widest mode this process may ever act under: its images' `maxMode`s, narrowed at every
   * exec and inherited by its children (null: the run's mode only). Stored rows from before it
   * existed read as null.
   */
  ceiling: z.enum(["read-only", "plan", "workspace-write", "full-access"]).nullable().default(null),
  status: ProcessStatus,
  /** The status a paused process returns to on resume. */
  resumeTo: ProcessStatus.nullable(),
  goal: z.string().max(100_000),
  /** Workspace-relative working directory, `.` for the workspace root. */
  cwd: z.string().min(1).max(4096),
  budgets: Budgets,
  usage: Usage,
  /** The tool table: names of the tools the process may see. */
  tools: z.array(z.string().min(1).max(128)).max(1000),
  /** The id of the action this process has in flight or waits on, if any. */
  pending: z.string().nullable(),
  wait: WakeCondition.nullable(),
  wake: WakeReason.nullable(),
  /** Signals received while a quantum was running, applied when it ends. */
  deferred: z.array(Signal).max(16),
  /** Whether a parent's wait has already collected this finished child. */
  reaped: z.boolean(),
  /** Interrupts delivered and not yet seen by the process's driver. */
  interrupts: z.number().int().nonnegative(),
  /** Link to the result of a finished process (an object id once object memory exists). */
  result: z.string().max(4096).nullable(),
  /** Human-readable status: why it failed, what a signal did. Never holds the result link. */
  message: z.string().max(4096).nullable(),
  createdAt: z.number().int(),
  updatedAt: z.number().int(),
  finishedAt: z.number().int().nullable(),
}).strict();
/** A stored agent process. */
export type AgentProcess = z.infer<typeof AgentProcess>;

/**
 * What a tool (built-in or JIT) is told about a process: never its budgets, capabilities or
 * pending work.
 */
export function processSummary(
  p: Pick<
    AgentProcess,
    "pid" | "parent" | "image" | "status" | "goal" | "cwd" | "result" | "message"
  >,
): {
  pid: string;
  parent: string | null;
  image: string;
  status: string;
  goal: string;
  cwd: string;
  result: string | null;
  message: string | null;
} {
  return {
    pid: p.pid,
    parent: p.parent,
    image: p.image,
    status: p.status,
    goal: p.goal.slice(0, 2000),
    cwd: p.cwd,
    result: p.result,
    message: p.message,
  };
}
