/**
 * The process manager: every lifecycle operation on agent processes — spawn, fork, spawn_child,
 * exec, wait, signal, exit, chdir — and budget accounting. Each operation is one store step: it
 * validates against the transition table and the lineage first, so an illegal request changes
 * nothing, then writes the rows, the audit record and the event together.
 *
 * Finishing a process (exit, fail, kill) settles its budget with its parent, wakes a parent that
 * waits for it, and terminates its live descendants: a finished agent leaves no orphans spending
 * a budget nobody owns. The result link (`result`) is written only by exit and never touched again;
 * signals write `message`.
 *
 * @module
 */
import type { AuditLog } from "./audit_log.ts";
import type { Clock } from "./clock.ts";
import type { EventLog } from "./event_log.ts";
import {
  BudgetExhaustedError,
  IllegalTransitionError,
  NotFoundError,
  StoreError,
  ValidationError,
} from "./errors.ts";
import type { IdSource } from "./ids.ts";
import {
  AgentProcess,
  type BudgetKind,
  Budgets,
  DEFAULT_BUDGETS,
  isFinal,
  type ProcessStatus,
  type Signal,
  type WakeReason,
} from "./process.ts";
import { childBudgets, deadline, remaining, reserve, settle } from "./process_budget.ts";
import { type ProcessEvent, transition } from "./process_transitions.ts";
import { containedDirectory } from "./_workspace_path.ts";
import type { FilesystemProvider } from "./providers/filesystem.ts";
import type { Store } from "./store.ts";

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

/** How to start a top-level process. */
export interface SpawnOptions {
  readonly goal: string;
  readonly image: string;
  readonly tools?: readonly string[];
  readonly budgets?: Partial<Budgets>;
  /** Workspace-relative working directory (default: the workspace root). */
  readonly cwd?: string;
  /** Make it runnable at once (default true); otherwise it stays `created` until started. */
  readonly start?: boolean;
}

/** How to create a child. */
export interface ChildOptions {
  readonly goal?: string;
  readonly budgets?: Partial<Budgets>;
}

/** How to create a fresh child with its own image. */
export interface SpawnChildOptions extends ChildOptions {
  readonly goal: string;
  readonly image: string;
  readonly tools?: readonly string[];
}

/** What a quantum ended with; the scheduler applies it. */
export type QuantumResult =
  | { readonly type: "yield" }
  | { readonly type: "sleep"; readonly until: number }
  | { readonly type: "wait_child"; readonly pid: string | null }
  | { readonly type: "wait_human"; readonly request: string }
  | { readonly type: "exit"; readonly result?: string; readonly message?: string }
  | { readonly type: "fail"; readonly reason: string };

/** What the process manager needs. */
export interface ProcessManagerOptions {
  readonly store: Store;
  readonly audit: AuditLog;
  readonly events: EventLog;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly filesystem: FilesystemProvider;
  /** The workspace's real path; every cwd is contained in it. */
  readonly workspace: string;
  readonly defaultBudgets?: Budgets;
}

const MAX_GOAL = 100_000;
const FINAL: readonly ProcessStatus[] = Object.freeze(["exited", "failed", "killed"]);

function actorName(actor: Actor): string {
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

function checkTools(tools: readonly string[]): string[] {
  const seen = new Set<string>();
  for (const tool of tools) {
    if (typeof tool !== "string" || !/^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/.test(tool)) {
      throw new ValidationError(
        `Tool name ${JSON.stringify(tool)} is invalid: use letters, digits, "_", "." or "-"`,
      );
    }
    if (seen.has(tool)) {
      throw new ValidationError(`Tool ${JSON.stringify(tool)} appears twice in the tool table`);
    }
    seen.add(tool);
  }
  return [...tools];
}

function checkGoal(goal: string): string {
  if (typeof goal !== "string" || goal.length > MAX_GOAL) {
    throw new ValidationError(`A goal must be text of at most ${MAX_GOAL} characters`);
  }
  return goal;
}

function checkImage(image: string): string {
  if (typeof image !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,199}$/.test(image)) {
    throw new ValidationError(
      `Image id ${
        JSON.stringify(image)
      } is invalid: use letters, digits and "_.:/-", e.g. coding-agent:v0`,
    );
  }
  return image;
}

/** Owns every process row. Build one per runtime. */
export class ProcessManager {
  readonly #store: Store;
  readonly #audit: AuditLog;
  readonly #events: EventLog;
  readonly #clock: Clock;
  readonly #ids: IdSource;
  readonly #fs: FilesystemProvider;
  readonly #workspace: string;
  readonly #defaults: Budgets;
  readonly #listeners = new Set<ProcessListener>();
  #notes: (() => void)[] = [];
  #depth = 0;

  /** Binds the manager to a runtime's store, logs and providers. */
  constructor(options: ProcessManagerOptions) {
    this.#store = options.store;
    this.#audit = options.audit;
    this.#events = options.events;
    this.#clock = options.clock;
    this.#ids = options.ids;
    this.#fs = options.filesystem;
    this.#workspace = options.workspace;
    this.#defaults = Budgets.parse(options.defaultBudgets ?? DEFAULT_BUDGETS);
  }

  /** Registers a listener; returns the function that removes it. */
  listen(listener: ProcessListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Runs `fn` as one store step; the notifications it queued reach listeners only after the
   * outermost operation succeeded, so a rolled-back change never wakes anybody.
   */
  #op<T>(fn: () => T): T {
    this.#depth++;
    try {
      const result = this.#store.step(fn);
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

  #notify(fn: (listener: ProcessListener) => void): void {
    this.#notes.push(() => {
      for (const listener of this.#listeners) fn(listener);
    });
  }

  /** The process, or `undefined` when there is none with that pid. */
  find(pid: string): AgentProcess | undefined {
    const row = this.#store.getProcess(pid);
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
    if (!parsed.success) {
      throw new StoreError(
        "store_corrupt",
        `Process ${pid} is stored in a shape this libos does not understand (${
          parsed.error.issues[0]?.message ?? "invalid"
        })`,
        { cause: parsed.error },
      );
    }
    return parsed.data;
  }

  /**
   * The process with this pid.
   * @throws {NotFoundError} when there is none.
   */
  get(pid: string): AgentProcess {
    const p = this.find(pid);
    if (!p) {
      throw new NotFoundError(`No process ${JSON.stringify(pid)}; list processes with "libos ps"`);
    }
    return p;
  }

  /** Processes in pid order, optionally only some statuses or one parent's children. */
  list(
    query: {
      readonly statuses?: readonly ProcessStatus[];
      readonly parent?: string;
      readonly limit?: number;
      readonly afterPid?: string;
    } = {},
  ): AgentProcess[] {
    return this.#store.listProcesses({
      limit: query.limit ?? 1000,
      ...(query.statuses === undefined ? {} : { statuses: query.statuses }),
      ...(query.parent === undefined ? {} : { parent: query.parent }),
      ...(query.afterPid === undefined ? {} : { afterPid: query.afterPid }),
    }).map((row) => this.get(row.pid));
  }

  #save(p: AgentProcess): void {
    this.#store.putProcess({
      pid: p.pid,
      parent: p.parent,
      status: p.status,
      data: JSON.stringify(p),
      created: p.createdAt,
      updated: p.updatedAt,
    });
  }

  #record(
    actor: Actor,
    p: AgentProcess,
    action: string,
    detail: Record<string, string | number | boolean | null>,
    authority?: string,
  ): void {
    this.#audit.append({
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
    this.#events.emit({
      kind: "process.status",
      payload: { pid: p.pid, from, to: p.status, cause, message: p.message },
    });
  }

  /** Requires that `actor` is the process itself (or the operator). */
  #requireSelf(actor: Actor, pid: string, what: string): void {
    if (actor.kind === "process" && actor.pid !== pid) {
      throw new IllegalTransitionError(
        "not_a_child",
        `Process ${actor.pid} cannot ${what} process ${pid}: a process may only ${what} itself`,
      );
    }
  }

  #newPid(): string {
    for (let i = 0; i < 8; i++) {
      const pid = this.#ids.next("pid");
      if (this.#store.getProcess(pid) === undefined) return pid;
    }
    throw new StoreError(
      "store_conflict",
      "Could not find an unused pid after 8 tries; the id source repeats itself",
    );
  }

  #fresh(
    fields: Pick<
      AgentProcess,
      "parent" | "image" | "goal" | "cwd" | "budgets" | "tools" | "status"
    >,
  ): AgentProcess {
    const now = this.#clock.now();
    return {
      pid: this.#newPid(),
      resumeTo: null,
      usage: { toolCalls: 0, modelTokens: 0, delegatedToolCalls: 0, delegatedModelTokens: 0 },
      pending: null,
      wait: null,
      wake: null,
      deferred: [],
      reaped: false,
      interrupts: 0,
      result: null,
      message: null,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
      ...fields,
    };
  }

  #mergeBudgets(requested: Partial<Budgets> | undefined): Budgets {
    const result = Budgets.safeParse({ ...this.#defaults, ...(requested ?? {}) });
    if (!result.success) {
      const issue = result.error.issues[0];
      throw new ValidationError(
        `Invalid budget ${issue?.path.join(".") ?? ""}: ${issue?.message ?? "invalid"}`,
        { cause: result.error },
      );
    }
    return result.data;
  }

  /** Creates a top-level process (runnable unless `start: false`). */
  spawn(options: SpawnOptions, actor: Actor = OPERATOR): AgentProcess {
    const fields = {
      parent: null,
      image: checkImage(options.image),
      goal: checkGoal(options.goal),
      tools: checkTools(options.tools ?? []),
      budgets: this.#mergeBudgets(options.budgets),
      cwd: options.cwd === undefined
        ? "."
        : containedDirectory(this.#fs, this.#workspace, ".", options.cwd),
      status: (options.start === false ? "created" : "runnable") as ProcessStatus,
    };
    return this.#op(() => {
      const p = this.#fresh(fields);
      this.#save(p);
      this.#record(actor, p, "process.spawn", { image: p.image, status: p.status });
      this.#events.emit({
        kind: "process.spawned",
        payload: { pid: p.pid, parent: null, image: p.image, how: "spawn" },
      });
      if (p.status === "runnable") this.#notify((l) => l.runnable?.(p.pid));
      return p;
    });
  }

  /** Makes a `created` process runnable. */
  start(pid: string, actor: Actor = OPERATOR): AgentProcess {
    return this.#op(() => this.#move(this.get(pid), "start", actor, {}));
  }

  #child(
    parentPid: string,
    actor: Actor,
    how: "fork" | "spawn_child",
    make: (parent: AgentProcess) => Pick<AgentProcess, "image" | "goal" | "tools">,
    requested: Partial<Budgets> | undefined,
  ): AgentProcess {
    return this.#op(() => {
      const parent = this.get(parentPid);
      this.#requireSelf(actor, parentPid, how === "fork" ? "fork" : "spawn a child of");
      if (isFinal(parent.status)) {
        throw new IllegalTransitionError(
          "illegal_transition",
          `Cannot ${how.replace("_", " ")} from process ${parentPid}: it is ${parent.status}`,
        );
      }
      const live = this.#store.countLiveChildren(parentPid, FINAL);
      if (live >= parent.budgets.maxLiveChildren) {
        throw new BudgetExhaustedError(
          "live_children",
          `Process ${parentPid} already has ${live} live children, its limit (maxLiveChildren ${parent.budgets.maxLiveChildren}); wait for one to finish first`,
        );
      }
      const now = this.#clock.now();
      const budgets = childBudgets(parent, requested ?? {}, now);
      const child = this.#fresh({
        parent: parentPid,
        cwd: parent.cwd,
        budgets,
        status: "runnable",
        ...make(parent),
      });
      this.#save(child);
      this.#save({ ...parent, usage: reserve(parent.usage, budgets), updatedAt: now });
      this.#record(actor, child, `process.${how}`, {
        parent: parentPid,
        image: child.image,
        maxToolCalls: budgets.maxToolCalls,
        maxModelTokens: budgets.maxModelTokens,
      });
      this.#events.emit({
        kind: "process.spawned",
        payload: { pid: child.pid, parent: parentPid, image: child.image, how },
      });
      this.#notify((l) => l.runnable?.(child.pid));
      return child;
    });
  }

  /**
   * Forks a child that runs the parent's image, tools and cwd, with budgets carved out of the
   * parent's remainder.
   * @throws {BudgetExhaustedError} `live_children` when the parent is at its limit.
   */
  fork(parentPid: string, options: ChildOptions = {}, actor: Actor = OPERATOR): AgentProcess {
    const goal = options.goal === undefined ? undefined : checkGoal(options.goal);
    return this.#child(
      parentPid,
      actor,
      "fork",
      (parent) => ({ image: parent.image, goal: goal ?? parent.goal, tools: [...parent.tools] }),
      options.budgets,
    );
  }

  /** Spawns a fresh child with its own image, goal and tool table (no parent memory). */
  spawnChild(parentPid: string, options: SpawnChildOptions, actor: Actor = OPERATOR): AgentProcess {
    const fields = {
      image: checkImage(options.image),
      goal: checkGoal(options.goal),
      tools: checkTools(options.tools ?? []),
    };
    return this.#child(parentPid, actor, "spawn_child", () => fields, options.budgets);
  }

  /** Replaces a live process's image and tool table, keeping its pid (and never its authority). */
  exec(
    pid: string,
    options: { readonly image: string; readonly tools: readonly string[]; readonly goal?: string },
    actor: Actor = OPERATOR,
  ): AgentProcess {
    const image = checkImage(options.image);
    const tools = checkTools(options.tools);
    const goal = options.goal === undefined ? undefined : checkGoal(options.goal);
    return this.#op(() => {
      const p = this.get(pid);
      this.#requireSelf(actor, pid, "exec");
      if (isFinal(p.status)) {
        throw new IllegalTransitionError(
          "illegal_transition",
          `Cannot exec process ${pid}: it is ${p.status}; nothing was changed`,
        );
      }
      const next: AgentProcess = {
        ...p,
        image,
        tools,
        goal: goal ?? p.goal,
        updatedAt: this.#clock.now(),
      };
      this.#save(next);
      this.#record(actor, next, "process.exec", { from: p.image, to: image, tools: tools.length });
      this.#events.emit({
        kind: "process.exec",
        payload: { pid, from: p.image, to: image, tools: tools.length },
      });
      return next;
    });
  }

  /** Changes a process's working directory, contained to the workspace. */
  chdir(pid: string, path: string, actor: Actor = OPERATOR): AgentProcess {
    return this.#op(() => {
      const p = this.get(pid);
      this.#requireSelf(actor, pid, "chdir");
      if (isFinal(p.status)) {
        throw new IllegalTransitionError(
          "illegal_transition",
          `Cannot chdir process ${pid}: it is ${p.status}; nothing was changed`,
        );
      }
      const cwd = containedDirectory(this.#fs, this.#workspace, p.cwd, path);
      const next = { ...p, cwd, updatedAt: this.#clock.now() };
      this.#save(next);
      this.#record(actor, next, "process.chdir", { from: p.cwd, to: cwd });
      return next;
    });
  }

  /**
   * Collects a finished child without blocking: the given child (which must be a child of
   * `parentPid`) or any finished child not collected yet.
   * @throws {IllegalTransitionError} `not_a_child`, or `no_children` when there is nothing to wait for.
   */
  collectChild(
    parentPid: string,
    childPid: string | null,
    actor: Actor = OPERATOR,
  ): AgentProcess | undefined {
    return this.#op(() => {
      this.#requireSelf(actor, parentPid, "wait as");
      const parent = this.get(parentPid);
      const child = this.#finishedChild(parent, childPid);
      if (child) this.#save({ ...child, reaped: true });
      return child;
    });
  }

  /** A finished, uncollected child matching the wait, after checking the wait is legal. */
  #finishedChild(parent: AgentProcess, childPid: string | null): AgentProcess | undefined {
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
    const children = this.#store.listProcesses({ parent: parent.pid, limit: 10_000 }).map((r) =>
      this.get(r.pid)
    );
    const done = children.find((c) => isFinal(c.status) && !c.reaped);
    if (done) return done;
    if (!children.some((c) => !isFinal(c.status))) {
      throw new IllegalTransitionError(
        "no_children",
        `Process ${parent.pid} has no child to wait for: none is alive and every finished one was collected`,
      );
    }
    return undefined;
  }

  /**
   * Sends a signal. A process may signal only its own children; the operator any process.
   * Signals to a running process take effect when its quantum ends (terminate also aborts it).
   * @throws {IllegalTransitionError} for a finished process, a non-child, or a signal the
   *   status does not accept; nothing is changed.
   */
  signal(pid: string, signal: Signal, actor: Actor = OPERATOR): AgentProcess {
    return this.#op(() => {
      const p = this.get(pid);
      if (actor.kind === "process" && p.parent !== actor.pid) {
        throw new IllegalTransitionError(
          "not_a_child",
          `Process ${actor.pid} cannot signal ${pid}: it is not its child; nothing was changed`,
        );
      }
      return this.#move(p, signal, actor, {});
    });
  }

  /** Ends a process with an optional result link; it never changes again. */
  exit(
    pid: string,
    options: { readonly result?: string; readonly message?: string } = {},
    actor: Actor = OPERATOR,
  ): AgentProcess {
    return this.#op(() => {
      const p = this.get(pid);
      this.#requireSelf(actor, pid, "exit");
      return this.#move(p, "exit", actor, {
        result: options.result ?? null,
        message: options.message ?? null,
      });
    });
  }

  /** Fails a process with a reason. */
  fail(pid: string, reason: string, actor: Actor = OPERATOR): AgentProcess {
    return this.#op(() => this.#move(this.get(pid), "fail", actor, { message: reason }));
  }

  /**
   * Applies one lifecycle event to a process and everything that follows from it.
   * `extra` carries the exit result and message.
   */
  #move(
    p: AgentProcess,
    event: ProcessEvent,
    actor: Actor,
    extra: { result?: string | null; message?: string | null; wake?: WakeReason },
  ): AgentProcess {
    const target = transition(p.pid, p.status, event);
    const now = this.#clock.now();
    if (target === "deferred") {
      const next = {
        ...p,
        deferred: [...p.deferred.filter((s) => s !== event), event as Signal].slice(-16),
        updatedAt: now,
      };
      this.#save(next);
      this.#record(actor, next, "process.signal", { signal: event, deferred: true });
      if (event === "terminate") this.#notify((l) => l.terminated?.(p.pid));
      return next;
    }
    let next: AgentProcess = { ...p, updatedAt: now };
    switch (event) {
      case "pause":
        next = { ...next, status: "paused", resumeTo: p.status };
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
      case "cancel": {
        const waited = p.wait?.kind ?? "sleep";
        next = {
          ...next,
          status: "runnable",
          wait: null,
          pending: null,
          wake: { kind: "cancelled", waited },
        };
        break;
      }
      case "interrupt":
        next = {
          ...next,
          interrupts: p.interrupts + 1,
          ...(target === "runnable"
            ? { status: "runnable", wait: null, wake: { kind: "interrupted" } }
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
            (event === "terminate" ? `terminated by ${actorName(actor)}` : p.message),
        };
        break;
      default:
        if (target !== "same" && target !== "resume_to") next = { ...next, status: target };
    }
    this.#save(next);
    const action = auditAction(event);
    if (action) {
      this.#record(actor, next, action, {
        ...(action === "process.signal" ? { signal: event === "kill" ? "terminate" : event } : {}),
        from: p.status,
        to: next.status,
        ...(event === "exit" ? { result: next.result } : {}),
        ...(event === "fail" ? { reason: next.message } : {}),
      });
    }
    this.#statusEvent(next, p.status, event);
    if (next.status === "runnable") this.#notify((l) => l.runnable?.(p.pid));
    if (next.status === "sleeping" && next.wait?.kind === "sleep") {
      const until = next.wait.until;
      this.#notify((l) => l.sleeping?.(p.pid, until));
    }
    if (isFinal(next.status)) this.#finished(next, actor);
    return next;
  }

  /** Settles a finished process with its parent, wakes the parent, and ends its descendants. */
  #finished(p: AgentProcess, actor: Actor): void {
    for (const row of this.#store.listProcesses({ parent: p.pid, limit: 10_000 })) {
      const child = this.get(row.pid);
      if (!isFinal(child.status)) {
        this.#move(child, "terminate", actor, { message: `parent ${p.pid} ${p.status}` });
      }
    }
    if (p.parent === null) return;
    const parent = this.find(p.parent);
    if (!parent) return;
    const now = this.#clock.now();
    let next: AgentProcess = { ...parent, usage: settle(parent.usage, p), updatedAt: now };
    const waits = (w: AgentProcess["wait"]) =>
      w?.kind === "child" && (w.pid === null || w.pid === p.pid);
    const wake: WakeReason = {
      kind: "child_finished",
      pid: p.pid,
      status: p.status,
      result: p.result,
    };
    if (parent.status === "waiting_child" && waits(parent.wait)) {
      this.#save(next);
      this.#save({ ...this.get(p.pid), reaped: true });
      this.#move(this.get(parent.pid), "wake", { kind: "process", pid: p.pid }, { wake });
      this.#audit.append({
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
      this.#save({ ...this.get(p.pid), reaped: true });
    }
    this.#save(next);
  }

  /**
   * Charges tool calls; when the budget is exhausted the process fails and the call is refused.
   * @throws {BudgetExhaustedError} `tool_calls`.
   */
  chargeToolCall(pid: string, count = 1): AgentProcess {
    return this.#charge(pid, "tool_calls", count);
  }

  /**
   * Charges model tokens (provider `usage` when present); exhaustion fails the process.
   * @throws {BudgetExhaustedError} `model_tokens`.
   */
  chargeTokens(pid: string, tokens: number): AgentProcess {
    return this.#charge(pid, "model_tokens", tokens);
  }

  #charge(pid: string, kind: "tool_calls" | "model_tokens", amount: number): AgentProcess {
    if (!Number.isInteger(amount) || amount < 0) {
      throw new RangeError(`A budget charge must be a non-negative integer, got ${amount}`);
    }
    let exhausted: BudgetExhaustedError | undefined;
    const result = this.#op(() => {
      const p = this.get(pid);
      if (isFinal(p.status)) {
        throw new IllegalTransitionError(
          "illegal_transition",
          `Cannot charge process ${pid}: it is ${p.status}`,
        );
      }
      const left = remaining(p, this.#clock.now());
      const available = kind === "tool_calls" ? left.toolCalls : left.modelTokens;
      if (amount > available) {
        exhausted = this.#exhaust(
          p,
          kind,
          kind === "tool_calls"
            ? `used ${p.usage.toolCalls} of ${p.budgets.maxToolCalls} tool calls (${p.usage.delegatedToolCalls} lent to children)`
            : `used ${p.usage.modelTokens} of ${p.budgets.maxModelTokens} model tokens (${p.usage.delegatedModelTokens} lent to children); this turn needed ${amount}`,
        );
        return this.get(pid);
      }
      const usage = kind === "tool_calls"
        ? { ...p.usage, toolCalls: p.usage.toolCalls + amount }
        : { ...p.usage, modelTokens: p.usage.modelTokens + amount };
      const next = { ...p, usage, updatedAt: this.#clock.now() };
      this.#save(next);
      return next;
    });
    if (exhausted) throw exhausted;
    return result;
  }

  /** Fails a process because a budget ran out, and returns the typed error describing it. */
  #exhaust(p: AgentProcess, kind: BudgetKind, detail: string): BudgetExhaustedError {
    const message = `budget_exhausted:${kind}: process ${p.pid} ${detail}`;
    this.#audit.append({
      actor: "runtime",
      pid: p.pid,
      action: "budget.exhausted",
      resource: `process:${p.pid}`,
      decision: "deny",
      authority: `budget:${kind}`,
      detail: { kind },
    });
    this.#move(p, "fail", RUNTIME, { message });
    return new BudgetExhaustedError(
      kind,
      `Process ${p.pid} failed: its ${kind.replace("_", " ")} budget is exhausted (${detail})`,
    );
  }

  /**
   * Fails the process if its wall-time deadline has passed.
   * @returns the typed error when it did.
   */
  enforceWallTime(pid: string): BudgetExhaustedError | undefined {
    return this.#op(() => {
      const p = this.get(pid);
      const now = this.#clock.now();
      if (isFinal(p.status) || now < deadline(p)) return undefined;
      return this.#exhaust(
        p,
        "wall_time",
        `ran ${now - p.createdAt} ms of its ${p.budgets.maxWallTimeMs} ms`,
      );
    });
  }

  /**
   * Starts a quantum: a runnable process becomes running. Returns `undefined` (and changes
   * nothing) when the process is not runnable any more, or fails it when its deadline passed.
   */
  beginQuantum(pid: string): AgentProcess | undefined {
    return this.#op(() => {
      const p = this.find(pid);
      if (!p || p.status !== "runnable") return undefined;
      if (this.enforceWallTime(pid)) return undefined;
      transition(pid, p.status, "schedule");
      const next: AgentProcess = { ...p, status: "running", updatedAt: this.#clock.now() };
      this.#save(next);
      return next;
    });
  }

  /**
   * Ends a quantum: applies its result to a process still running, clears what the driver saw,
   * then applies signals that arrived meanwhile, in order.
   */
  endQuantum(
    pid: string,
    result: QuantumResult,
    seen: Pick<AgentProcess, "interrupts" | "wake">,
  ): AgentProcess | undefined {
    return this.#op(() => {
      let p = this.find(pid);
      if (!p) return undefined;
      const consumed = {
        interrupts: Math.max(0, p.interrupts - seen.interrupts),
        wake: seen.wake === null ? p.wake : null,
      };
      if (p.status !== "running") {
        if (!isFinal(p.status)) this.#save({ ...p, ...consumed });
        return this.get(pid);
      }
      p = { ...p, ...consumed };
      const self: Actor = { kind: "process", pid };
      if (p.deferred.includes("terminate")) {
        // A terminate that arrived mid-quantum wins over whatever the quantum decided.
        this.#save(p);
        return this.#move({ ...p, status: "runnable" }, "terminate", OPERATOR, {
          message: p.message ?? "terminated while running",
        });
      }
      switch (result.type) {
        case "yield":
          p = this.#quantumMove(p, "yield", {});
          break;
        case "sleep":
          p = this.#quantumMove(p, "sleep", { wait: { kind: "sleep", until: result.until } });
          break;
        case "wait_human":
          p = this.#quantumMove(p, "wait_human", {
            wait: { kind: "human", request: result.request },
            pending: result.request,
          });
          break;
        case "wait_child": {
          const child = this.#finishedChild(p, result.pid);
          if (child) {
            this.#save({ ...child, reaped: true });
            p = this.#quantumMove(p, "yield", {
              wake: {
                kind: "child_finished",
                pid: child.pid,
                status: child.status,
                result: child.result,
              },
            });
          } else {
            p = this.#quantumMove(p, "wait_child", { wait: { kind: "child", pid: result.pid } });
          }
          break;
        }
        case "exit":
          this.#save(p);
          p = this.#move(p, "exit", self, {
            result: result.result ?? null,
            message: result.message ?? null,
          });
          break;
        case "fail":
          this.#save(p);
          p = this.#move(p, "fail", self, { message: result.reason });
          break;
      }
      for (const signal of p.deferred) {
        const current = this.get(pid);
        if (isFinal(current.status)) break;
        this.#save({ ...current, deferred: [] });
        try {
          p = this.#move({ ...current, deferred: [] }, signal, OPERATOR, {});
        } catch (error) {
          if (!(error instanceof IllegalTransitionError)) throw error;
          // A deferred signal the new status does not accept (cancel after an exit) is dropped.
        }
      }
      return this.get(pid);
    });
  }

  /** A quantum-boundary move (schedule, yield, sleep, wait): not audited, evented only when blocking. */
  #quantumMove(p: AgentProcess, event: ProcessEvent, patch: Partial<AgentProcess>): AgentProcess {
    const target = transition(p.pid, p.status, event);
    const next: AgentProcess = {
      ...p,
      ...patch,
      status: target as ProcessStatus,
      updatedAt: this.#clock.now(),
    };
    this.#save(next);
    if (event !== "yield") this.#statusEvent(next, p.status, event);
    if (next.status === "runnable") this.#notify((l) => l.runnable?.(p.pid));
    if (next.status === "sleeping" && next.wait?.kind === "sleep") {
      const until = next.wait.until;
      this.#notify((l) => l.sleeping?.(p.pid, until));
    }
    return next;
  }

  /** Wakes a sleeper whose time has come (a timer fired); false when it was not due or not asleep. */
  wakeIfDue(pid: string): boolean {
    return this.#op(() => {
      const p = this.find(pid);
      if (
        !p || p.status !== "sleeping" || p.wait?.kind !== "sleep" ||
        p.wait.until > this.#clock.now()
      ) return false;
      this.#move(p, "wake", { kind: "process", pid }, { wake: { kind: "timer" } });
      return true;
    });
  }

  /**
   * After a restart: processes left `running` by a stopped runtime become runnable again.
   * Returns the pids it recovered.
   */
  recoverRunning(): string[] {
    return this.#op(() => {
      const recovered: string[] = [];
      for (const row of this.#store.listProcesses({ statuses: ["running"], limit: 10_000 })) {
        const p = this.get(row.pid);
        const next: AgentProcess = {
          ...p,
          status: "runnable",
          message: "recovered after the runtime stopped mid-quantum",
          updatedAt: this.#clock.now(),
        };
        this.#save(next);
        this.#audit.append({
          actor: "runtime",
          pid: p.pid,
          action: "process.recover",
          resource: `process:${p.pid}`,
          decision: "none",
          authority: "runtime",
          detail: { from: "running", to: "runnable" },
        });
        this.#notify((l) => l.runnable?.(p.pid));
        recovered.push(p.pid);
      }
      return recovered;
    });
  }

  /** Sets or clears the action a process has in flight (used by the action ledger, inside its step). */
  setPending(pid: string, action: string | null): void {
    const p = this.get(pid);
    this.#save({ ...p, pending: action, updatedAt: this.#clock.now() });
  }
}
