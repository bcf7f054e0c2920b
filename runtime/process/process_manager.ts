/**
 * The process manager: every lifecycle operation on agent processes — spawn, fork, spawn_child,
 * exec, wait, signal, exit, chdir — and, as thin doors to `_process_quanta.ts`, budget charges
 * and the quantum edges the scheduler uses (begin, end, wakes, recovery). Each operation is one
 * store step: it validates against the transition table and the lineage first, so an illegal
 * request changes nothing, then writes rows, audit and events together (see
 * `_process_engine.ts`).
 *
 * A process actor's operation leaves one decision record (see `audit_log.ts`): a refusal by a
 * capability (`Authority.gate`), by lineage (`lineage:not_a_child`), by a delegation the parent
 * cannot make or by a budget is recorded when it is made — one made inside the operation's step
 * after that step rolled back —, and the allow inside the step, with the rows it wrote (the
 * checks and records: `_process_records.ts`).
 *
 * Finishing a process (exit, fail, kill) settles its budget with its parent, wakes a parent that
 * waits for it, and terminates its live descendants: a finished agent leaves no orphans spending
 * a budget nobody owns. The result link (`result`) is written only by exit and never touched
 * again; signals write `message`.
 *
 * @module
 */
import {
  type Actor,
  OPERATOR,
  ProcessEngine,
  type ProcessListener,
  refuseFinished,
} from "./_process_engine.ts";
import { OperationRecords } from "./_process_records.ts";
import {
  beginQuantum,
  chargeBudget,
  endQuantum,
  getProcess,
  type QuantumResult,
  recoverRunning,
  wakeHuman,
  wakeIfDue,
  wallTimeOver,
} from "./_process_quanta.ts";
import { containedDirectory } from "../providers/workspace_path.ts";
import { BudgetExhaustedError, NotFoundError, ValidationError } from "../base/errors.ts";
import {
  type AgentProcess,
  Budgets,
  DEFAULT_BUDGETS,
  type ProcessStatus,
  type Signal,
} from "./process.ts";
import { childBudgets, reserve } from "./process_budget.ts";
import type { Authority, ImageRequirements } from "../authority/authority.ts";
import { type ModeName, narrower } from "../authority/modes.ts";
import type { InheritScope } from "../authority/delegation.ts";
import type { FilesystemProvider } from "../providers/filesystem.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";

export { type Actor, OPERATOR, type ProcessListener, RUNTIME } from "./_process_engine.ts";
export type { QuantumResult } from "./_process_quanta.ts";
export type { InheritScope } from "../authority/delegation.ts";

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
  /** Scopes of the parent's authority to hand over (never more than the parent holds). */
  readonly inherit?: readonly InheritScope[];
}

/** How to create a fresh child with its own image. */
export interface SpawnChildOptions extends ChildOptions {
  readonly goal: string;
  readonly image: string;
  readonly tools?: readonly string[];
}

/** What the process manager needs. */
export interface ProcessManagerOptions extends RuntimeCore {
  readonly filesystem: FilesystemProvider;
  /** The workspace's real path; every cwd is contained in it. */
  readonly workspace: string;
  readonly defaultBudgets?: Budgets;
  /** Decides what process actors may do, and mints their starting authority. */
  readonly authority: Authority;
  /** Resolves image ids (default tools, requirements); without it any well-formed id is taken. */
  readonly images?: ImageResolver;
}

/** What the process manager needs of an image. */
export interface ResolvedImage {
  readonly defaultTools: readonly string[];
  readonly safety: { readonly maxMode: ModeName };
  readonly requiredCapabilities: ImageRequirements["requiredCapabilities"];
}

/** Finds images by id. */
export interface ImageResolver {
  resolve(id: string): ResolvedImage | undefined;
}

const MAX_GOAL = 100_000;
const FINAL: readonly ProcessStatus[] = Object.freeze(["exited", "failed", "killed"]);

/** The narrower of two ceilings (null: no ceiling of its own). */
function narrowest(a: ModeName | null, b: ModeName | null): ModeName | null {
  if (a === null) return b;
  if (b === null) return a;
  return narrower(a, b);
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
  readonly #engine: ProcessEngine;
  readonly #fs: FilesystemProvider;
  readonly #workspace: string;
  readonly #defaults: Budgets;
  readonly #authority: Authority;
  readonly #images: ImageResolver | undefined;
  readonly #records: OperationRecords;
  readonly #execHooks = new Set<(p: AgentProcess) => void>();
  readonly #forkHooks = new Set<(child: AgentProcess, parent: AgentProcess) => void>();

  /** Binds the manager to a runtime's store, logs and providers. */
  constructor(options: ProcessManagerOptions) {
    this.#engine = new ProcessEngine(options);
    this.#fs = options.filesystem;
    this.#workspace = options.workspace;
    this.#defaults = Budgets.parse(options.defaultBudgets ?? DEFAULT_BUDGETS);
    this.#authority = options.authority;
    this.#images = options.images;
    this.#records = new OperationRecords(this.#engine, this.#authority);
  }

  /**
   * Registers a hook run inside the step that finishes a process (its scratch memory is released
   * there); returns the function that removes it.
   */
  onFinished(hook: (p: AgentProcess) => void): () => void {
    return this.#engine.onFinished(hook);
  }

  /**
   * Registers a hook run inside the step of every exec (the tool broker drops the process's JIT
   * tools there: exec replaces the whole tool table); returns the function that removes it.
   */
  onExec(hook: (p: AgentProcess) => void): () => void {
    this.#execHooks.add(hook);
    return () => this.#execHooks.delete(hook);
  }

  /**
   * Registers a hook run inside the step of every fork, after the child's authority was
   * delegated (the JIT tool lifecycle passes on the tools the child was granted there); a hook
   * that throws undoes the fork. Returns the function that removes it.
   */
  onFork(hook: (child: AgentProcess, parent: AgentProcess) => void): () => void {
    this.#forkHooks.add(hook);
    return () => this.#forkHooks.delete(hook);
  }

  /** A number that moves when another connection commits (to notice its decisions and signals). */
  dataVersion(): number {
    return this.#engine.store.dataVersion();
  }

  /** Registers a listener; returns the function that removes it. */
  listen(listener: ProcessListener): () => void {
    return this.#engine.listen(listener);
  }

  /** The process, or `undefined` when there is none with that pid. */
  find(pid: string): AgentProcess | undefined {
    return this.#engine.find(pid);
  }

  /**
   * The process with this pid.
   * @throws {NotFoundError} when there is none.
   */
  get(pid: string): AgentProcess {
    return getProcess(this.#engine, pid);
  }

  /** Processes in pid order, optionally only some statuses or one parent's children. */
  list(query: {
    readonly statuses?: readonly ProcessStatus[];
    readonly parent?: string;
    readonly limit?: number;
    readonly afterPid?: string;
  } = {}): AgentProcess[] {
    return this.#engine.store.listProcesses({
      limit: query.limit ?? 1000,
      ...(query.statuses === undefined ? {} : { statuses: query.statuses }),
      ...(query.parent === undefined ? {} : { parent: query.parent }),
      ...(query.afterPid === undefined ? {} : { afterPid: query.afterPid }),
    }).map((row) => this.get(row.pid));
  }

  #fresh(
    fields: Pick<
      AgentProcess,
      "parent" | "image" | "goal" | "cwd" | "budgets" | "tools" | "status" | "ceiling"
    >,
  ): AgentProcess {
    const now = this.#engine.clock.now();
    return {
      pid: this.#engine.newPid(),
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

  /**
   * The image `id` names (checked), or a NotFoundError when a registry is wired and knows no such
   * image. A process actor must hold image read first — checked before the lookup, so a missing
   * image and a forbidden one look the same to it.
   */
  #image(
    id: string,
    actor: Actor,
    op: string,
    what: string,
  ): { readonly id: string; readonly image: ResolvedImage | undefined } {
    const checked = checkImage(id);
    this.#records.authorize(
      actor,
      op,
      { type: "image", key: checked },
      "read",
      `${what} image ${checked}`,
    );
    const image = this.#images?.resolve(checked);
    if (this.#images && !image) {
      throw new NotFoundError(
        `No image ${
          JSON.stringify(checked)
        }; list them with "libos images list" or load one with "libos images load FILE"`,
      );
    }
    return { id: checked, image };
  }

  /**
   * Creates a top-level process (runnable unless `start: false`): its tools default to its
   * image's, and it receives the mode's default grants intersected with what the image requires
   * (the only path by which an image's requirements are ever granted).
   */
  spawn(options: SpawnOptions, actor: Actor = OPERATOR): AgentProcess {
    if (actor.kind === "process") {
      // A top-level process receives the mode's defaults: a process creating one would escape
      // attenuation. Processes create children (spawnChild, fork), which get only what they pass.
      throw this.#records.notAChild(
        actor,
        "process.spawn",
        "process:*",
        `Process ${actor.pid} cannot spawn a top-level process; spawn a child instead`,
      );
    }
    // Everything the caller wrote is validated before anything is looked up.
    const goal = checkGoal(options.goal);
    const explicit = options.tools === undefined ? undefined : checkTools(options.tools);
    const budgets = this.#mergeBudgets(options.budgets);
    const resolved = this.#image(options.image, actor, "process.spawn", "spawn");
    const fields = {
      parent: null,
      image: resolved.id,
      ceiling: resolved.image?.safety.maxMode ?? null,
      goal,
      tools: explicit ?? checkTools(resolved.image?.defaultTools ?? []),
      budgets,
      cwd: options.cwd === undefined
        ? "."
        : containedDirectory(this.#fs, this.#workspace, ".", options.cwd),
      status: (options.start === false ? "created" : "runnable") as ProcessStatus,
    };
    const engine = this.#engine;
    return engine.op(() => {
      const p = this.#fresh(fields);
      engine.save(p);
      engine.record(actor, p, "process.spawn", { image: p.image, status: p.status });
      this.#authority.grantDefaults(
        p.pid,
        resolved.image
          ? {
            maxMode: resolved.image.safety.maxMode,
            requiredCapabilities: resolved.image.requiredCapabilities,
          }
          : undefined,
      );
      engine.events.emit({
        kind: "process.spawned",
        payload: { pid: p.pid, parent: null, image: p.image, how: "spawn" },
      });
      if (p.status === "runnable") engine.notify((l) => l.runnable?.(p.pid));
      return p;
    });
  }

  /** Makes a `created` process runnable. */
  start(pid: string, actor: Actor = OPERATOR): AgentProcess {
    return this.#engine.op(() => this.#engine.move(this.get(pid), "start", actor));
  }

  #child(
    parentPid: string,
    actor: Actor,
    how: "fork" | "spawn_child",
    make: (parent: AgentProcess) => Pick<AgentProcess, "image" | "goal" | "tools" | "ceiling">,
    requested: Partial<Budgets> | undefined,
    inherit: readonly InheritScope[],
  ): AgentProcess {
    const engine = this.#engine;
    const op = `process.${how}`;
    this.#records.requireSelf(actor, op, parentPid, how === "fork" ? "fork" : "spawn a child of");
    const authority = this.#records.authorize(
      actor,
      op,
      { type: "process", key: parentPid },
      "spawn",
      `${how.replace("_", " ")} from ${parentPid}`,
    );
    // A delegation the parent cannot make, or a budget, refuses inside the step: recorded after.
    return this.#records.step(actor, op, `process:${parentPid}`, authority, () => {
      const parent = this.get(parentPid);
      refuseFinished(parent, how.replace("_", " ") + " from");
      const live = engine.store.countLiveChildren(parentPid, FINAL);
      if (live >= parent.budgets.maxLiveChildren) {
        throw new BudgetExhaustedError(
          "live_children",
          `Process ${parentPid} already has ${live} live children, its limit (maxLiveChildren ${parent.budgets.maxLiveChildren}); wait for one to finish first`,
        );
      }
      const now = engine.clock.now();
      const budgets = childBudgets(parent, requested ?? {}, now);
      const child = this.#fresh({
        parent: parentPid,
        cwd: parent.cwd,
        budgets,
        status: "runnable",
        ...make(parent),
      });
      engine.save(child);
      engine.save({ ...parent, usage: reserve(parent.usage, budgets), updatedAt: now });
      engine.record(actor, child, op, {
        parent: parentPid,
        image: child.image,
        maxToolCalls: budgets.maxToolCalls,
        maxModelTokens: budgets.maxModelTokens,
      }, authority);
      this.#authority.grantLineage(parentPid, child.pid);
      // A scope the parent does not hold throws here, and the whole step — child included — is undone.
      this.#authority.delegate(parentPid, child.pid, inherit);
      if (how === "fork") { for (const hook of this.#forkHooks) hook(child, parent); }
      engine.events.emit({
        kind: "process.spawned",
        payload: { pid: child.pid, parent: parentPid, image: child.image, how },
      });
      engine.notify((l) => l.runnable?.(child.pid));
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
      (parent) => ({
        image: parent.image,
        goal: goal ?? parent.goal,
        tools: [...parent.tools],
        ceiling: parent.ceiling,
      }),
      options.budgets,
      options.inherit ?? [],
    );
  }

  /**
   * Spawns a fresh child with its own image, goal and tool table (no parent memory). Its image's
   * requirements are never granted: a child holds only what its parent delegates.
   */
  spawnChild(parentPid: string, options: SpawnChildOptions, actor: Actor = OPERATOR): AgentProcess {
    const goal = checkGoal(options.goal);
    const explicit = options.tools === undefined ? undefined : checkTools(options.tools);
    const op = "process.spawn_child";
    const resolved = this.#image(options.image, actor, op, "spawn a child with");
    this.#records.widerTools(actor, op, explicit, resolved, "spawn a child with");
    const fields = {
      image: resolved.id,
      goal,
      tools: explicit ?? checkTools(resolved.image?.defaultTools ?? []),
    };
    return this.#child(
      parentPid,
      actor,
      "spawn_child",
      (parent) => ({
        ...fields,
        ceiling: narrowest(parent.ceiling, resolved.image?.safety.maxMode ?? null),
      }),
      options.budgets,
      options.inherit ?? [],
    );
  }

  /**
   * Replaces a live process's image and tool table (default: the image's), keeping its pid —
   * and its capabilities exactly: exec never grants the new image's requirements, and a process
   * needs image read on the new image.
   */
  exec(
    pid: string,
    options: { readonly image: string; readonly tools?: readonly string[]; readonly goal?: string },
    actor: Actor = OPERATOR,
  ): AgentProcess {
    const explicit = options.tools === undefined ? undefined : checkTools(options.tools);
    const goal = options.goal === undefined ? undefined : checkGoal(options.goal);
    const op = "process.exec";
    this.#records.requireSelf(actor, op, pid, "exec");
    const resolved = this.#image(options.image, actor, op, "exec");
    const image = resolved.id;
    const defaults = resolved.image?.defaultTools ?? [];
    this.#records.widerTools(actor, op, explicit, resolved, "exec with");
    const tools = explicit ?? checkTools(defaults);
    const engine = this.#engine;
    const authority = this.#records.authorize(
      actor,
      op,
      { type: "process", key: pid },
      "exec",
      `exec ${image}`,
    );
    return this.#records.step(actor, op, `process:${pid}`, authority, () => {
      const p = this.get(pid);
      refuseFinished(p, "exec");
      const next: AgentProcess = {
        ...p,
        image,
        tools,
        // exec may narrow what a process may ever do, never widen it.
        ceiling: narrowest(p.ceiling, resolved.image?.safety.maxMode ?? null),
        goal: goal ?? p.goal,
        updatedAt: engine.clock.now(),
      };
      engine.save(next);
      for (const hook of this.#execHooks) hook(next);
      engine.record(
        actor,
        next,
        "process.exec",
        { from: p.image, to: image, tools: tools.length },
        authority,
      );
      engine.events.emit({
        kind: "process.exec",
        payload: { pid, from: p.image, to: image, tools: tools.length },
      });
      return next;
    });
  }

  /**
   * Puts back a process's image, tool table, working directory and goal as a checkpoint kept
   * them (the operator's restore). Its ceiling stays as it is: a restore never widens what a
   * process may ever do, and its capabilities are the checkpoint module's business.
   * @throws {IllegalTransitionError} for a finished process.
   */
  restoreShape(
    pid: string,
    shape: {
      readonly image: string;
      readonly tools: readonly string[];
      readonly cwd: string;
      readonly goal: string;
    },
  ): AgentProcess {
    const engine = this.#engine;
    return engine.op(() => {
      const p = this.get(pid);
      refuseFinished(p, "restore");
      const next: AgentProcess = {
        ...p,
        image: checkImage(shape.image),
        tools: checkTools(shape.tools),
        cwd: shape.cwd,
        goal: checkGoal(shape.goal),
        updatedAt: engine.clock.now(),
      };
      engine.save(next);
      engine.record(OPERATOR, next, "process.restore", {
        image: next.image,
        tools: next.tools.length,
        cwd: next.cwd,
      });
      return next;
    });
  }

  /**
   * Changes a process's working directory, contained to the workspace. A process needs `stat`
   * on the target, checked before the filesystem is touched: without it the answer is the same
   * whether the directory exists or not (no existence oracle).
   */
  chdir(pid: string, path: string, actor: Actor = OPERATOR): AgentProcess {
    const engine = this.#engine;
    const op = "process.chdir";
    this.#records.requireSelf(actor, op, pid, "chdir");
    const current = this.get(pid);
    refuseFinished(current, "chdir");
    let authority: string | undefined;
    const cwd = containedDirectory(this.#fs, this.#workspace, current.cwd, path, (relative) => {
      authority = this.#records.authorize(
        actor,
        op,
        { type: "fs", path: relative },
        "stat",
        `chdir to "${path}"`,
      ) ?? authority;
    });
    return this.#records.step(actor, op, `process:${pid}`, authority, () => {
      const p = this.get(pid);
      refuseFinished(p, "chdir");
      const next = { ...p, cwd, updatedAt: engine.clock.now() };
      engine.save(next);
      engine.record(actor, next, "process.chdir", { from: p.cwd, to: cwd }, authority);
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
    const engine = this.#engine;
    const op = "process.wait";
    this.#records.requireSelf(actor, op, parentPid, "wait as");
    // Waiting for any child needs no capability: only children it may wait for are considered.
    const authority = childPid === null ? "lineage:parent" : this.#records.authorize(
      actor,
      op,
      { type: "process", key: childPid },
      "wait",
      `wait for ${childPid}`,
    );
    return this.#records.step(actor, op, `process:${parentPid}`, authority, () => {
      const parent = this.get(parentPid);
      const child = engine.finishedChild(parent, childPid, this.#mayWait(actor));
      if (child) engine.save({ ...child, reaped: true });
      if (actor.kind === "process") {
        engine.record(actor, parent, op, { child: child?.pid ?? null }, authority);
      }
      return child;
    });
  }

  /**
   * Sends a signal. A process may signal only its own children; the operator any process.
   * Signals to a running process take effect when its quantum ends (terminate also aborts it).
   * @throws {IllegalTransitionError} for a finished process, a non-child, or a signal the
   *   status does not accept; nothing is changed.
   */
  signal(pid: string, signal: Signal, actor: Actor = OPERATOR): AgentProcess {
    // A process asking about an unknown pid gets the non-child's answer (no existence oracle).
    const target = actor.kind === "process" ? this.find(pid) : this.get(pid);
    const op = "process.signal";
    if (actor.kind === "process" && target?.parent !== actor.pid) {
      throw this.#records.notAChild(
        actor,
        op,
        `process:${pid}`,
        `Process ${actor.pid} cannot signal ${pid}: it is not its child; nothing was changed`,
      );
    }
    const authority = this.#records.authorize(
      actor,
      op,
      { type: "process", key: pid },
      "signal",
      `${signal} ${pid}`,
    );
    return this.#records.step(
      actor,
      op,
      `process:${pid}`,
      authority,
      () =>
        this.#engine.move(
          this.get(pid),
          signal,
          actor,
          authority === undefined ? {} : { authority },
        ),
    );
  }

  /** For a process actor, whether it may collect a given child (wait right); anyone else may. */
  #mayWait(actor: Actor): ((child: AgentProcess) => boolean) | undefined {
    if (actor.kind !== "process") return undefined;
    return (child) =>
      this.#authority.decide(actor.pid, {
        resource: { type: "process", key: child.pid },
        right: "wait",
      }).effect === "allow";
  }

  /** Ends a process with an optional result link; it never changes again. */
  exit(
    pid: string,
    options: { readonly result?: string; readonly message?: string } = {},
    actor: Actor = OPERATOR,
  ): AgentProcess {
    this.#records.requireSelf(actor, "process.exit", pid, "exit");
    return this.#records.step(
      actor,
      "process.exit",
      `process:${pid}`,
      "self",
      () =>
        this.#engine.move(this.get(pid), "exit", actor, {
          result: options.result ?? null,
          message: options.message ?? null,
        }),
    );
  }

  /** Fails a process with a reason. */
  fail(pid: string, reason: string, actor: Actor = OPERATOR): AgentProcess {
    return this.#engine.op(() =>
      this.#engine.move(this.get(pid), "fail", actor, { message: reason })
    );
  }

  /**
   * Charges tool calls; when the budget is exhausted the process fails and the call is refused.
   * @throws {BudgetExhaustedError} `tool_calls`.
   */
  chargeToolCall(pid: string, count = 1): AgentProcess {
    return chargeBudget(this.#engine, { pid, kind: "tool_calls" }, count);
  }

  /**
   * Charges model tokens (provider `usage` when present); exhaustion fails the process.
   * @throws {BudgetExhaustedError} `model_tokens`.
   */
  chargeTokens(pid: string, tokens: number): AgentProcess {
    return chargeBudget(this.#engine, { pid, kind: "model_tokens" }, tokens);
  }

  /** Fails the process if its wall-time deadline has passed; true when it did. */
  enforceWallTime(pid: string): boolean {
    return this.#engine.op(() => wallTimeOver(this.#engine, this.get(pid)));
  }

  /**
   * Starts a quantum: a runnable process becomes running. Returns `undefined` (and changes
   * nothing) when the process is not runnable any more, or fails it when its deadline passed.
   */
  beginQuantum(pid: string): AgentProcess | undefined {
    return beginQuantum(this.#engine, pid);
  }

  /**
   * Ends a quantum: applies its result to a process still running, clears what the driver saw
   * (its wake reason and interrupts), then applies signals that arrived meanwhile, in order.
   */
  endQuantum(
    pid: string,
    result: QuantumResult,
    seen: Pick<AgentProcess, "interrupts" | "wake">,
  ): AgentProcess | undefined {
    return endQuantum(this.#engine, { pid, result }, {
      seen,
      mayWait: (actor) => this.#mayWait(actor),
    });
  }

  /**
   * Wakes a process waiting on human request `request` (decided, answered or expired), or
   * arranges for a paused one to wake when resumed. False when it does not wait on that request.
   */
  wakeHuman(pid: string, request: string): boolean {
    return wakeHuman(this.#engine, pid, request);
  }

  /** Wakes a sleeper whose time has come (its timer fired); false when it was not due or not asleep. */
  wakeIfDue(pid: string): boolean {
    return wakeIfDue(this.#engine, pid);
  }

  /**
   * After a restart: processes left `running` by a stopped runtime become runnable again.
   * Returns the pids it recovered; `accept` limits it to some processes.
   */
  recoverRunning(accept: (pid: string) => boolean = () => true): string[] {
    return recoverRunning(this.#engine, accept);
  }

  /** Sets or clears the action a process has in flight (the action ledger calls it inside its step). */
  setPending(pid: string, action: string | null): void {
    const p = this.get(pid);
    this.#engine.save({ ...p, pending: action, updatedAt: this.#engine.clock.now() });
  }
}
