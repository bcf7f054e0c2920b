/**
 * The state machine engine under the process manager: loading and saving process rows (with a
 * parse cache keyed by the stored text, so a row changed by another connection is re-validated),
 * running operations as store steps whose notifications fire only after they commit to the
 * batch, and applying lifecycle events with everything that follows from them — audit, events,
 * budget settlement, waking a waiting parent, ending descendants.
 *
 * @module
 */
import type { AuditLog } from "../audit/audit_log.ts";
import type { Clock } from "../base/clock.ts";
import type { EventLog } from "../audit/event_log.ts";
import { BudgetExhaustedError, IllegalTransitionError, StoreError } from "../base/errors.ts";
import type { IdSource } from "../base/ids.ts";
import {
  AgentProcess,
  type BudgetKind,
  isFinal,
  type ProcessStatus,
  type Signal,
  type WakeReason,
} from "./process.ts";
import { settle } from "./process_budget.ts";
import { type ProcessEvent, transition } from "./process_transitions.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import type { Store } from "../store/store.ts";

/**
 * Who asks for an operation: the operator (CLI, host), the runtime itself (budgets, recovery),
 * or a process acting for itself or on its children.
 */
export type Actor =
  | { readonly kind: "operator" }
  | { readonly kind: "runtime" }
  | { readonly kind: "process"; readonly pid: string };

/** The operator actor. */
export const OPERATOR: Actor = Object.freeze({ kind: "operator" });

/** The runtime acting on its own authority (budget enforcement, recovery). */
export const RUNTIME: Actor = Object.freeze({ kind: "runtime" });

/** Callbacks the scheduler registers to hear about processes it must (re)consider. */
export interface ProcessListener {
  /** The process became runnable. */
  runnable?(pid: string): void;
  /** The process went to sleep until `until` (ms since the epoch). */
  sleeping?(pid: string, until: number): void;
  /** A running process was terminated: abort its quantum. */
  terminated?(pid: string): void;
}

/** Extra facts a move carries: the exit result, a message, a wake reason. */
export interface MoveExtra {
  readonly result?: string | null;
  readonly message?: string | null;
  readonly wake?: WakeReason;
  /** What allowed it, for the audit record (a capability, `operator`, ...). */
  readonly authority?: string;
}

const CACHE_LIMIT = 20_000;

/** Refuses an operation on a finished process; nothing was changed. */
export function refuseFinished(p: AgentProcess, what: string): void {
  if (isFinal(p.status)) {
    throw new IllegalTransitionError(
      "illegal_transition",
      `Cannot ${what} process ${p.pid}: it is ${p.status}; nothing was changed`,
    );
  }
}

/** The name an actor is recorded under. */
export function actorName(actor: Actor): string {
  return actor.kind === "process" ? actor.pid : actor.kind;
}

/** The audit action a lifecycle event is recorded as (quantum-boundary events are not). */
function auditAction(event: ProcessEvent): string | undefined {
  switch (event) {
    case "exit":
    case "fail":
    case "start":
      return `process.${event}`;
    case "pause":
    case "resume":
    case "cancel":
    case "interrupt":
    case "terminate":
    case "kill":
      return "process.signal";
    default:
      return undefined;
  }
}

/** Loads, saves and moves processes. One per process manager. */
export class ProcessEngine {
  readonly store: Store;
  readonly audit: AuditLog;
  readonly events: EventLog;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly #listeners = new Set<ProcessListener>();
  readonly #finishHooks = new Set<(p: AgentProcess) => void>();
  readonly #cache = new Map<string, { readonly version: number; readonly process: AgentProcess }>();
  #notes: (() => void)[] = [];
  #depth = 0;

  /** Binds the engine to a runtime's store and logs. */
  constructor(options: RuntimeCore) {
    this.store = options.store;
    this.audit = options.audit;
    this.events = options.events;
    this.clock = options.clock;
    this.ids = options.ids;
  }

  /** Registers a listener; returns the function that removes it. */
  listen(listener: ProcessListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Registers a hook run inside the step that finishes a process (exit, fail, kill), so what it
   * writes commits or rolls back with the finish itself; returns the function that removes it.
   */
  onFinished(hook: (p: AgentProcess) => void): () => void {
    this.#finishHooks.add(hook);
    return () => this.#finishHooks.delete(hook);
  }

  /**
   * Runs `fn` as one store step; the notifications it queued reach listeners only after the
   * outermost operation succeeded, so a rolled-back change never wakes anybody.
   */
  op<T>(fn: () => T): T {
    this.#depth++;
    try {
      const result = this.store.step(fn);
      if (this.#depth === 1) {
        const notes = this.#notes;
        this.#notes = [];
        for (const note of notes) note();
      }
      return result;
    } catch (error) {
      if (this.#depth === 1) this.#notes = [];
      throw error;
    } finally {
      this.#depth--;
    }
  }

  /** Queues a notification for after the current operation. */
  notify(fn: (listener: ProcessListener) => void): void {
    this.#notes.push(() => {
      for (const listener of this.#listeners) fn(listener);
    });
  }

  /**
   * The process, or `undefined`. The row is parsed and validated once per stored version; a row
   * another connection changed has a new version and is validated again. A row that does not
   * parse is `store_corrupt`.
   */
  find(pid: string): AgentProcess | undefined {
    const cached = this.#cache.get(pid);
    if (cached && this.store.getProcessVersion(pid) === cached.version) return cached.process;
    const row = this.store.getProcess(pid);
    if (row === undefined) return undefined;
    let data: unknown;
    try {
      data = JSON.parse(row.data);
    } catch (error) {
      throw new StoreError(
        "store_corrupt",
        `Process ${pid} is stored as invalid JSON; the database was edited outside libos`,
        { cause: error },
      );
    }
    const parsed = AgentProcess.safeParse(data);
    if (!parsed.success || parsed.data.status !== row.status || parsed.data.parent !== row.parent) {
      throw new StoreError(
        "store_corrupt",
        `Process ${pid} is stored in a shape this libos does not understand (${
          parsed.error?.issues[0]?.message ?? "its columns disagree with its document"
        }); the database was edited outside libos`,
        ...(parsed.error ? [{ cause: parsed.error }] : []),
      );
    }
    this.#remember(pid, row.version, parsed.data);
    return parsed.data;
  }

  #remember(pid: string, version: number, process: AgentProcess): void {
    this.#cache.delete(pid);
    this.#cache.set(pid, { version, process });
    if (this.#cache.size > CACHE_LIMIT) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
  }

  /** The process; `undefined` is the caller's bug here, so it throws. */
  must(pid: string): AgentProcess {
    const p = this.find(pid);
    if (!p) {
      throw new StoreError(
        "store_corrupt",
        `Process ${pid} vanished from the database during an operation`,
      );
    }
    return p;
  }

  /** A process's children, in pid order. */
  children(pid: string): AgentProcess[] {
    return this.store.listProcesses({ parent: pid, limit: 10_000 }).map((row) =>
      this.must(row.pid)
    );
  }

  /** Writes a process row. */
  save(p: AgentProcess): void {
    const version = this.store.putProcess({
      pid: p.pid,
      parent: p.parent,
      status: p.status,
      data: JSON.stringify(p),
      created: p.createdAt,
      updated: p.updatedAt,
    });
    this.#remember(p.pid, version, p);
  }

  /** Appends an audit record about a process. */
  record(
    actor: Actor,
    p: AgentProcess,
    action: string,
    detail: Record<string, string | number | boolean | null>,
    authority?: string,
  ): void {
    this.audit.append({
      actor: actorName(actor),
      pid: p.pid,
      action,
      resource: `process:${p.pid}`,
      decision: "allow",
      authority: authority ??
        (actor.kind !== "process" ? actor.kind : actor.pid === p.pid ? "self" : "lineage:parent"),
      detail,
    });
  }

  #statusEvent(p: AgentProcess, from: ProcessStatus, cause: string): void {
    this.events.emit({
      kind: "process.status",
      payload: { pid: p.pid, from, to: p.status, cause, message: p.message },
    });
  }

  #announce(next: AgentProcess): void {
    if (next.status === "runnable") this.notify((l) => l.runnable?.(next.pid));
    if (next.status === "sleeping" && next.wait?.kind === "sleep") {
      const until = next.wait.until;
      this.notify((l) => l.sleeping?.(next.pid, until));
    }
  }

  /** A pid no stored process has. */
  newPid(): string {
    for (let i = 0; i < 8; i++) {
      const pid = this.ids.next("pid");
      if (this.store.getProcess(pid) === undefined) return pid;
    }
    throw new StoreError(
      "store_conflict",
      "Could not find an unused pid after 8 tries; the id source repeats itself",
    );
  }

  /**
   * Applies one lifecycle event to a process and everything that follows from it.
   * @throws {IllegalTransitionError} before writing anything when the table does not allow it.
   */
  move(p: AgentProcess, event: ProcessEvent, actor: Actor, extra: MoveExtra = {}): AgentProcess {
    const target = transition(p.pid, p.status, event);
    const now = this.clock.now();
    if (target === "deferred") {
      const next = {
        ...p,
        deferred: [...p.deferred.filter((s) => s !== event), event as Signal].slice(-16),
        updatedAt: now,
      };
      this.save(next);
      this.record(actor, next, "process.signal", { signal: event, deferred: true });
      if (event === "terminate") this.notify((l) => l.terminated?.(p.pid));
      return next;
    }
    let next: AgentProcess = { ...p, updatedAt: now };
    switch (event) {
      case "pause":
        next = {
          ...next,
          status: "paused",
          resumeTo: p.status,
          ...(extra.message === undefined ? {} : { message: extra.message }),
        };
        break;
      case "resume": {
        let to = p.resumeTo ?? "runnable";
        if (to === "sleeping" && p.wait?.kind === "sleep" && p.wait.until <= now) to = "runnable";
        next = {
          ...next,
          status: to,
          resumeTo: null,
          ...(to === "runnable" ? { wake: p.wake ?? { kind: "resumed" }, wait: null } : {}),
        };
        break;
      }
      case "cancel":
        next = {
          ...next,
          status: "runnable",
          wait: null,
          pending: null,
          wake: {
            kind: "cancelled",
            waited: p.wait?.kind ?? "sleep",
            ...(p.wait?.kind === "human" ? { request: p.wait.request } : {}),
          },
        };
        break;
      case "interrupt":
        next = {
          ...next,
          interrupts: p.interrupts + 1,
          ...(target === "runnable"
            ? {
              status: "runnable" as const,
              wait: null,
              wake: {
                kind: "interrupted" as const,
                ...(p.wait?.kind === "human" ? { request: p.wait.request } : {}),
              },
            }
            : {}),
        };
        break;
      case "wake":
        next = { ...next, status: "runnable", wait: null, wake: extra.wake ?? { kind: "timer" } };
        break;
      case "exit":
      case "fail":
      case "terminate":
      case "kill":
        next = {
          ...next,
          status: target as ProcessStatus,
          resumeTo: null,
          wait: null,
          deferred: [],
          finishedAt: now,
          ...(event === "exit" ? { result: extra.result ?? null } : {}),
          message: extra.message ??
            (event === "exit" || event === "fail"
              ? p.message
              : `terminated by ${actorName(actor)}`),
        };
        break;
      default:
        if (target !== "same" && target !== "resume_to") next = { ...next, status: target };
    }
    this.save(next);
    const action = auditAction(event);
    if (action) {
      this.record(actor, next, action, {
        ...(action === "process.signal" ? { signal: event === "kill" ? "terminate" : event } : {}),
        from: p.status,
        to: next.status,
        ...(event === "exit" ? { result: next.result } : {}),
        ...(event === "fail" ? { reason: next.message } : {}),
      }, extra.authority);
    }
    this.#statusEvent(next, p.status, event);
    this.#announce(next);
    if (isFinal(next.status)) this.#finished(next, actor);
    return next;
  }

  /** A quantum-boundary move (yield, sleep, wait): not audited; evented only when it blocks. */
  quantumMove(p: AgentProcess, event: ProcessEvent, patch: Partial<AgentProcess>): AgentProcess {
    const target = transition(p.pid, p.status, event);
    const next: AgentProcess = {
      ...p,
      ...patch,
      status: target as ProcessStatus,
      updatedAt: this.clock.now(),
    };
    this.save(next);
    if (event !== "yield") this.#statusEvent(next, p.status, event);
    this.#announce(next);
    return next;
  }

  /**
   * A finished, uncollected child matching a wait, after checking the wait is legal.
   * @throws {IllegalTransitionError} `not_a_child` or `no_children`.
   */
  finishedChild(
    parent: AgentProcess,
    childPid: string | null,
    mayWait: (child: AgentProcess) => boolean = () => true,
  ): AgentProcess | undefined {
    if (childPid !== null) {
      const child = this.find(childPid);
      if (!child || child.parent !== parent.pid) {
        throw new IllegalTransitionError(
          "not_a_child",
          `Process ${parent.pid} cannot wait for ${childPid}: it is not its child`,
        );
      }
      return isFinal(child.status) ? child : undefined;
    }
    const children = this.children(parent.pid).filter(mayWait);
    const done = children.find((c) => isFinal(c.status) && !c.reaped);
    if (done) return done;
    if (!children.some((c) => !isFinal(c.status))) {
      throw new IllegalTransitionError(
        "no_children",
        `Process ${parent.pid} has no child to wait for: none it may wait for is alive, and every finished one was collected`,
      );
    }
    return undefined;
  }

  /** Settles a finished process with its parent, wakes the parent, and ends its descendants. */
  #finished(p: AgentProcess, actor: Actor): void {
    for (const hook of this.#finishHooks) hook(p);
    for (const child of this.children(p.pid)) {
      if (!isFinal(child.status)) {
        this.move(child, "terminate", actor, { message: `parent ${p.pid} ${p.status}` });
      }
    }
    if (p.parent === null) return;
    const parent = this.find(p.parent);
    if (!parent) return;
    let next: AgentProcess = {
      ...parent,
      usage: settle(parent.usage, p),
      updatedAt: this.clock.now(),
    };
    const waits = (w: AgentProcess["wait"]) =>
      w?.kind === "child" && (w.pid === null || w.pid === p.pid);
    const wake: WakeReason = {
      kind: "child_finished",
      pid: p.pid,
      status: p.status,
      result: p.result,
    };
    if (parent.status === "waiting_child" && waits(parent.wait)) {
      this.save(next);
      this.save({ ...this.must(p.pid), reaped: true });
      this.move(next, "wake", { kind: "process", pid: p.pid }, { wake });
      this.audit.append({
        actor: p.pid,
        pid: parent.pid,
        action: "process.wait_wake",
        resource: `process:${parent.pid}`,
        decision: "none",
        authority: "lineage:child",
        detail: { child: p.pid, status: p.status },
      });
      return;
    }
    if (parent.status === "paused" && parent.resumeTo === "waiting_child" && waits(parent.wait)) {
      next = { ...next, resumeTo: "runnable", wait: null, wake };
      this.save({ ...this.must(p.pid), reaped: true });
    }
    this.save(next);
  }

  /** Fails a process because a budget ran out, and returns the typed error describing it. */
  exhaust(p: AgentProcess, kind: BudgetKind, detail: string): BudgetExhaustedError {
    this.audit.append({
      actor: "runtime",
      pid: p.pid,
      action: "budget.exhausted",
      resource: `process:${p.pid}`,
      decision: "deny",
      authority: `budget:${kind}`,
      detail: { kind },
    });
    this.move(p, "fail", { kind: "runtime" }, {
      message: `budget_exhausted:${kind}: process ${p.pid} ${detail}`,
    });
    return new BudgetExhaustedError(
      kind,
      `Process ${p.pid} failed: its ${kind.replace("_", " ")} budget is exhausted (${detail})`,
    );
  }
}
