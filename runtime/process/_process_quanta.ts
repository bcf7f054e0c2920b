/**
 * The quantum edges of the process manager (`process_manager.ts`): what happens between the
 * scheduler and a process rather than between processes — the start of a quantum, its end (the
 * result applied, signals that arrived meanwhile applied after it), wakes of waiters (a human's
 * answer, a timer), recovery of quanta a stopped runtime left running, and budget settlement
 * (charges of tool calls and model tokens, the wall-time deadline). Each is one store step of the
 * engine (`_process_engine.ts`); the lifecycle operations (spawn, fork, exec, wait, signal,
 * exit, chdir) stay in the manager.
 *
 * @module
 */
import { type Actor, OPERATOR, type ProcessEngine, refuseFinished } from "./_process_engine.ts";
import {
  type BudgetExhaustedError,
  IllegalTransitionError,
  NotFoundError,
} from "../base/errors.ts";
import { type AgentProcess, isFinal } from "./process.ts";
import { deadline, remaining } from "./process_budget.ts";

/** What a quantum ended with; the scheduler applies it. */
export type QuantumResult =
  | { readonly type: "yield" }
  | { readonly type: "sleep"; readonly until: number }
  | { readonly type: "wait_child"; readonly pid: string | null }
  | { readonly type: "wait_human"; readonly request: string }
  | { readonly type: "exit"; readonly result?: string; readonly message?: string }
  | { readonly type: "fail"; readonly reason: string }
  /**
   * The process cannot go on for now for a reason outside it (its model endpoint keeps failing):
   * it is paused, with `reason` as its message, and continues when resumed.
   */
  | { readonly type: "park"; readonly reason: string };

/**
 * The process with this pid.
 * @throws {NotFoundError} when there is none.
 */
export function getProcess(engine: ProcessEngine, pid: string): AgentProcess {
  const p = engine.find(pid);
  if (!p) {
    throw new NotFoundError(`No process ${JSON.stringify(pid)}; list processes with "libos ps"`);
  }
  return p;
}

/**
 * Charges `amount` tool calls or model tokens; when the budget is exhausted the process fails
 * (committed to the batch) and the charge is refused.
 * @throws {BudgetExhaustedError} `tool_calls` or `model_tokens`; {RangeError} for a bad amount.
 */
export function chargeBudget(
  engine: ProcessEngine,
  charge: { readonly pid: string; readonly kind: "tool_calls" | "model_tokens" },
  amount: number,
): AgentProcess {
  const { pid, kind } = charge;
  if (!Number.isInteger(amount) || amount < 0) {
    throw new RangeError(`A budget charge must be a non-negative integer, got ${amount}`);
  }
  let exhausted: BudgetExhaustedError | undefined;
  const result = engine.op(() => {
    const p = getProcess(engine, pid);
    refuseFinished(p, "charge");
    const left = remaining(p, engine.clock.now());
    const tools = kind === "tool_calls";
    if (amount > (tools ? left.toolCalls : left.modelTokens)) {
      exhausted = engine.exhaust(
        p,
        kind,
        tools
          ? `used ${p.usage.toolCalls} of ${p.budgets.maxToolCalls} tool calls (${p.usage.delegatedToolCalls} lent to children)`
          : `used ${p.usage.modelTokens} of ${p.budgets.maxModelTokens} model tokens (${p.usage.delegatedModelTokens} lent to children); this turn needed ${amount}`,
      );
      return getProcess(engine, pid);
    }
    const usage = tools
      ? { ...p.usage, toolCalls: p.usage.toolCalls + amount }
      : { ...p.usage, modelTokens: p.usage.modelTokens + amount };
    const next = { ...p, usage, updatedAt: engine.clock.now() };
    engine.save(next);
    return next;
  });
  // The failure is committed to the batch before the caller hears about it.
  if (exhausted) throw exhausted;
  return result;
}

/** Fails `p` when its wall-time deadline has passed (inside a step); true when it did. */
export function wallTimeOver(engine: ProcessEngine, p: AgentProcess): boolean {
  const now = engine.clock.now();
  if (isFinal(p.status) || now < deadline(p)) return false;
  engine.exhaust(
    p,
    "wall_time",
    `ran ${now - p.createdAt} ms of its ${p.budgets.maxWallTimeMs} ms`,
  );
  return true;
}

/**
 * Starts a quantum: a runnable process becomes running. Returns `undefined` (and changes
 * nothing) when the process is not runnable any more, or fails it when its deadline passed.
 */
export function beginQuantum(engine: ProcessEngine, pid: string): AgentProcess | undefined {
  return engine.op(() => {
    const p = engine.find(pid);
    if (!p || p.status !== "runnable" || wallTimeOver(engine, p)) return undefined;
    const next: AgentProcess = { ...p, status: "running", updatedAt: engine.clock.now() };
    engine.save(next);
    return next;
  });
}

/** What {@link endQuantum} needs beside the pid and the result. */
export interface QuantumEnd {
  /** What the driver saw (its wake reason and interrupts), cleared now. */
  readonly seen: Pick<AgentProcess, "interrupts" | "wake">;
  /** For a process actor, whether it may collect a given child (wait right). */
  readonly mayWait: (actor: Actor) => ((child: AgentProcess) => boolean) | undefined;
}

/**
 * Ends a quantum: applies its result to a process still running, clears what the driver saw
 * (its wake reason and interrupts), then applies signals that arrived meanwhile, in order.
 */
export function endQuantum(
  engine: ProcessEngine,
  quantum: { readonly pid: string; readonly result: QuantumResult },
  options: QuantumEnd,
): AgentProcess | undefined {
  const { pid, result } = quantum;
  const { seen, mayWait } = options;
  return engine.op(() => {
    const stored = engine.find(pid);
    if (!stored) return undefined;
    const consumed = {
      interrupts: Math.max(0, stored.interrupts - seen.interrupts),
      wake: seen.wake === null ? stored.wake : null,
    };
    let p: AgentProcess = { ...stored, ...consumed };
    if (stored.status !== "running") {
      if (!isFinal(stored.status)) engine.save(p);
      return p;
    }
    if (p.deferred.includes("terminate")) {
      // A terminate that arrived mid-quantum wins over whatever the quantum decided.
      return engine.move(p, "kill", OPERATOR, { message: "terminated while running" });
    }
    const self: Actor = { kind: "process", pid };
    switch (result.type) {
      case "yield":
        p = engine.quantumMove(p, "yield", {});
        break;
      case "sleep":
        p = engine.quantumMove(p, "sleep", { wait: { kind: "sleep", until: result.until } });
        break;
      case "wait_human":
        p = engine.quantumMove(p, "wait_human", {
          wait: { kind: "human", request: result.request },
          pending: result.request,
        });
        break;
      case "wait_child": {
        const child = engine.finishedChild(p, result.pid, mayWait(self));
        if (child) {
          engine.save({ ...child, reaped: true });
          const wake = {
            kind: "child_finished",
            pid: child.pid,
            status: child.status,
            result: child.result,
          } as const;
          p = engine.quantumMove(p, "yield", { wake });
        } else {
          p = engine.quantumMove(p, "wait_child", { wait: { kind: "child", pid: result.pid } });
        }
        break;
      }
      case "exit":
        p = engine.move(p, "exit", self, {
          result: result.result ?? null,
          message: result.message ?? null,
        });
        break;
      case "fail":
        p = engine.move(p, "fail", self, { message: result.reason });
        break;
      case "park":
        p = engine.quantumMove(p, "yield", {});
        p = engine.move(p, "pause", self, { message: result.reason });
        break;
    }
    for (const signal of p.deferred) {
      if (isFinal(p.status)) break;
      try {
        p = engine.move({ ...p, deferred: [] }, signal, OPERATOR);
      } catch (error) {
        // A deferred signal the new status does not accept (cancel after a yield) is dropped.
        if (!(error instanceof IllegalTransitionError)) throw error;
        p = { ...p, deferred: [] };
        engine.save(p);
      }
    }
    return p;
  });
}

/**
 * Wakes a process waiting on human request `request` (decided, answered or expired), or
 * arranges for a paused one to wake when resumed. False when it does not wait on that request.
 */
export function wakeHuman(engine: ProcessEngine, pid: string, request: string): boolean {
  return engine.op(() => {
    const p = engine.find(pid);
    if (!p || p.wait?.kind !== "human" || p.wait.request !== request) return false;
    const wake = { kind: "human", request } as const;
    if (p.status === "waiting_human") {
      engine.move(p, "wake", { kind: "runtime" }, { wake });
      return true;
    }
    if (p.status === "paused" && p.resumeTo === "waiting_human") {
      engine.save({
        ...p,
        resumeTo: "runnable",
        wait: null,
        wake,
        updatedAt: engine.clock.now(),
      });
      return true;
    }
    return false;
  });
}

/** Wakes a sleeper whose time has come (its timer fired); false when it was not due or not asleep. */
export function wakeIfDue(engine: ProcessEngine, pid: string): boolean {
  return engine.op(() => {
    const p = engine.find(pid);
    if (
      !p || p.status !== "sleeping" || p.wait?.kind !== "sleep" ||
      p.wait.until > engine.clock.now()
    ) return false;
    engine.move(p, "wake", { kind: "process", pid }, { wake: { kind: "timer" } });
    return true;
  });
}

/**
 * After a restart: processes left `running` by a stopped runtime become runnable again.
 * Returns the pids it recovered; `accept` limits it to some processes.
 */
export function recoverRunning(
  engine: ProcessEngine,
  accept: (pid: string) => boolean,
): string[] {
  return engine.op(() => {
    const recovered: string[] = [];
    for (const row of engine.store.listProcesses({ statuses: ["running"], limit: 10_000 })) {
      if (!accept(row.pid)) continue;
      const p = engine.must(row.pid);
      engine.save({
        ...p,
        status: "runnable",
        message: "recovered after the runtime stopped mid-quantum",
        updatedAt: engine.clock.now(),
      });
      engine.audit.append({
        actor: "runtime",
        pid: p.pid,
        action: "process.recover",
        resource: `process:${p.pid}`,
        decision: "none",
        authority: "runtime",
        detail: { from: "running", to: "runnable" },
      });
      engine.notify((l) => l.runnable?.(p.pid));
      recovered.push(p.pid);
    }
    return recovered;
  });
}
