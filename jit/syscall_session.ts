/**
 * The syscall session of one JIT tool call (DESIGN §7): bound to the calling process, it answers
 * the sandbox's syscall frames by calling exactly one primitive method each — so a tool has the
 * caller's capabilities, no more. Arguments are zod-validated here (a tool is untrusted code); a
 * refusal is a typed error the tool sees.
 *
 * The syscalls are not declared here: each is a field of the built-in tool declaration it mirrors
 * (`tools/*.ts`, collected by `syscallTable()` in `tools/mod.ts`) — its argument schema (the
 * tool's own schema object, or one built from the same fields and caps) and its primitive call,
 * made through a {@link SyscallPort} this session binds to the caller. A syscall without a
 * declaration cannot be written.
 *
 * Audit: one record per syscall. A syscall whose primitive records its decision leaves that
 * record only, with `detail.syscall` and `detail.tool` naming the syscall and the JIT tool (the
 * audit log's scoped context, `AuditLog.within`); a syscall refused before any primitive
 * (unknown, bad arguments, no budget left) or whose primitive records nothing leaves the
 * session's own `syscall.<name>` record.
 *
 * Syscalls: `fs.read_text`, `fs.write_text`, `fs.list`, `fs.make_dir`, `fs.delete_file`,
 * `fs.delete_dir`, `fs.stat`, `fs.edit`, `fs.apply_patch`, `fs.glob`, `fs.grep`; `clock.now`,
 * `clock.sleep`; `memory.create`, `memory.read`, `memory.read_by_name`, `memory.list`,
 * `memory.update`, `memory.create_namespace`; `human.output`, `human.ask`,
 * `human.request_permission`; `shell.run`; `net.fetch`; `mcp.call`; `process.cwd`, `process.list`,
 * `process.fork`, `process.spawn_child`, `process.wait`, `process.signal`, `process.merge`,
 * `process.exit`, `process.exec`; `image.list`.
 *
 * Blocking: a syscall that needs a human (an approval, a question, a permission) in `queue` mode
 * blocks until the human decides — from this runtime or another terminal — and then resumes as a
 * parked process would (an approved action runs once); `process.wait` blocks until the child
 * finishes. The sandbox's wall clock does not run meanwhile. `process.exit` and `process.exec`
 * only record what to do: the caller applies it after the tool's result frame
 * ({@link LibOSSyscallSession.applyDeferred}), so a tool never ends or replaces its own process
 * while it is still running.
 *
 * Caps: every argument is bounded; a syscall's schema is its tool's (or built from the same
 * field schemas), so a syscall never accepts what its tool refuses.
 *
 * Budgets: each known syscall is charged one tool call to the calling process, as the built-in
 * tool it mirrors is charged by the broker (before its arguments are checked; an unknown syscall
 * costs nothing, as an unknown tool does). The syscall that finds the budget exhausted is refused
 * with `BudgetExhaustedError` and the process has failed.
 *
 * @module
 */
import type { JsonValue } from "../runtime/base/canonical_json.ts";
import type { CapabilityResource } from "../runtime/authority/capability.ts";
import { pauseFor } from "../runtime/base/clock.ts";
import type { InheritScope } from "../runtime/authority/delegation.ts";
import {
  CapabilityDeniedError,
  HumanPendingError,
  LibosError,
  ValidationError,
} from "../runtime/base/errors.ts";
import type { HumanResolution } from "../runtime/human/human_channel.ts";
import {
  type AgentProcess,
  type Budgets,
  processSummary,
  type Signal,
} from "../runtime/process/process.ts";
import type { AuditScope } from "../runtime/audit/audit_log.ts";
import type { RuntimeCore } from "../runtime/audit/runtime_core.ts";
import {
  type ChildRequest,
  type FileEdits,
  type GrepOptions,
  present,
  type SyscallPort,
  type SyscallSpec,
} from "../runtime/broker/tool.ts";
import { type SyscallEntry, type SyscallName, syscallTable } from "../tools/mod.ts";

export type { SyscallName };

/** Who acts in a process-control syscall: always the calling process itself. */
type ProcessActor = { readonly kind: "process"; readonly pid: string };

/** What a tool is told about a process. */
type ProcessView = Pick<
  AgentProcess,
  "pid" | "parent" | "image" | "status" | "goal" | "cwd" | "result" | "message"
>;

/** The primitive methods a session calls (the runtime's; a spy in tests). */
export interface SyscallTargets {
  readonly fs: {
    readText(
      pid: string,
      a: { path: string; maxBytes?: number; offset?: number; limit?: number },
    ): Promise<unknown>;
    writeText(
      pid: string,
      a: { path: string; content: string; overwrite?: boolean; parents?: boolean },
    ): Promise<unknown>;
    listDir(pid: string, a: { path: string; limit?: number }): Promise<unknown>;
    makeDir(pid: string, a: { path: string; parents: boolean }): Promise<unknown>;
    deleteFile(pid: string, a: { path: string; missingOk?: boolean }): Promise<unknown>;
    deleteDir(pid: string, a: { path: string; recursive?: boolean }): Promise<unknown>;
    stat(pid: string, a: { path: string }): Promise<unknown>;
    editText(pid: string, a: { path: string } & FileEdits): Promise<unknown>;
    glob(pid: string, a: { glob: string; path?: string; limit?: number }): Promise<unknown>;
    applyPatch(pid: string, a: { patch: string }): Promise<unknown>;
    grep(pid: string, a: GrepOptions & { pattern?: string; text?: string }): Promise<unknown>;
  };
  readonly clock: {
    now(pid: string, options: { timeZone?: string }): unknown;
    wait(pid: string, ms: number, signal?: AbortSignal): Promise<void>;
  };
  readonly memory: {
    create(pid: string, input: {
      namespace?: string;
      name?: string | null;
      type: string;
      payload: JsonValue;
      tags?: readonly string[];
      provenance: { source: "tool"; label: string; ref: string | null };
    }): unknown;
    read(pid: string, oid: string): unknown;
    readByName(pid: string, namespace: string, name: string): unknown;
    list(pid: string, namespace?: string): unknown;
    update(pid: string, oid: string, change: { payload: JsonValue }): unknown;
    merge(parent: string, child: string): unknown;
    createNamespace(pid: string, key: string): unknown;
  };
  readonly human: {
    output(pid: string, text: string): unknown;
    ask(pid: string, question: string): Promise<string>;
    requestPermission(pid: string, permission: {
      resource: CapabilityResource;
      rights: string[];
      reason: string;
    }): Promise<string[]>;
    /** Blocks until a request is decided, then resolves it as for a parked process. */
    awaitResolution(pid: string, id: string, signal: AbortSignal): Promise<HumanResolution>;
  };
  readonly shell: {
    run(
      pid: string,
      args: { argv: string[]; cwd?: string; timeoutMs?: number; stdin?: string },
      options?: { signal?: AbortSignal },
    ): Promise<unknown>;
  };
  readonly net: {
    fetch(
      pid: string,
      request: {
        url: string;
        method?: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";
        headers?: Record<string, string>;
        body?: string;
        maxBytes?: number;
        timeoutMs?: number;
        readable?: boolean;
        maxChars?: number;
      },
      options?: { signal?: AbortSignal },
    ): Promise<unknown>;
  };
  readonly mcp: {
    call(
      pid: string,
      call: { server: string; tool: string; arguments: Record<string, JsonValue> },
      options?: { signal?: AbortSignal },
    ): Promise<unknown>;
  };
  readonly processes: {
    find(pid: string): ProcessView | undefined;
    list(query: { readonly parent: string; readonly limit: number }): readonly ProcessView[];
    fork(parent: string, options: {
      goal?: string;
      budgets?: Partial<Budgets>;
      inherit?: readonly InheritScope[];
    }, actor: ProcessActor): ProcessView;
    spawnChild(parent: string, options: {
      image: string;
      goal: string;
      tools?: readonly string[];
      budgets?: Partial<Budgets>;
      inherit?: readonly InheritScope[];
    }, actor: ProcessActor): ProcessView;
    collectChild(
      parent: string,
      child: string | null,
      actor: ProcessActor,
    ): ProcessView | undefined;
    signal(pid: string, signal: Signal, actor: ProcessActor): ProcessView;
    exit(pid: string, options: { result?: string; message?: string }, actor: ProcessActor): unknown;
    exec(
      pid: string,
      options: { image: string; tools?: readonly string[]; goal?: string },
      actor: ProcessActor,
    ): unknown;
    /** Calls `hook` when any process finishes; returns how to stop. */
    onFinished(hook: (p: ProcessView) => void): () => void;
    /**
     * Charges one tool call to the process's budget, as the broker does for a built-in tool.
     * @throws {BudgetExhaustedError} when none is left (the process has failed).
     */
    chargeToolCall(pid: string): unknown;
  };
  readonly images: { list(actor: string): readonly { readonly id: string }[] };
}

/** An exit or exec a tool asked for, applied after its result frame. */
export type DeferredOp =
  | { readonly kind: "exit"; readonly result?: string; readonly message?: string }
  | {
    readonly kind: "exec";
    readonly image: string;
    readonly tools?: readonly string[];
    readonly goal?: string;
  };

const view = processSummary;

/** How often a blocked `process.wait` re-reads the store (a child finishing in another runtime). */
const CHILD_POLL_MS = 250;

/** A child's wait: resolves when a child may have finished, the wait's time is up, or it is aborted. */
async function untilChildFinished(
  onFinished: SyscallTargets["processes"]["onFinished"],
  ms: number,
  signal: AbortSignal,
): Promise<void> {
  const stop = new AbortController();
  const abort = () => stop.abort();
  signal.addEventListener("abort", abort, { once: true });
  const unlisten = onFinished(abort);
  try {
    await pauseFor(ms, stop.signal);
  } finally {
    unlisten();
    signal.removeEventListener("abort", abort);
  }
}

/** A child's goal, budgets and inherited scopes as the process manager takes them. */
function childOptions(a: ChildRequest) {
  return present({
    goal: a.goal,
    // zod leaves absent members out, so this is a Partial<Budgets> as the manager means it.
    budgets: a.budgets === undefined ? undefined : present(a.budgets) as Partial<Budgets>,
    // Rights are checked by the delegation itself: a right the parent lacks is refused there.
    inherit: a.inherit as InheritScope[] | undefined,
  });
}

/**
 * The port a syscall declaration calls through: each member one primitive method of `t`, bound
 * to the caller `pid` (and, for what writes, to the calling tool's name as provenance).
 */
function port(
  t: SyscallTargets,
  pid: string,
  tool: string,
  defer: (op: DeferredOp) => void,
): SyscallPort {
  const self: ProcessActor = { kind: "process", pid };
  return {
    fs: {
      readText: (a) => t.fs.readText(pid, a),
      writeText: (a) => t.fs.writeText(pid, a),
      listDir: (a) => t.fs.listDir(pid, a),
      makeDir: (a) => t.fs.makeDir(pid, a),
      deleteFile: (a) => t.fs.deleteFile(pid, a),
      deleteDir: (a) => t.fs.deleteDir(pid, a),
      stat: (a) => t.fs.stat(pid, a),
      editText: (a) => t.fs.editText(pid, a),
      glob: (a) => t.fs.glob(pid, a),
      applyPatch: (a) => t.fs.applyPatch(pid, a),
      grep: (a) => t.fs.grep(pid, a),
    },
    clock: {
      now: (options) => t.clock.now(pid, options),
      wait: (ms, signal) => t.clock.wait(pid, ms, signal),
    },
    memory: {
      // What a tool writes is tool output, whatever it says about itself.
      create: (input) =>
        t.memory.create(pid, { ...input, provenance: { source: "tool", label: tool, ref: null } }),
      read: (oid) => t.memory.read(pid, oid),
      readByName: (namespace, name) => t.memory.readByName(pid, namespace, name),
      list: (namespace) => t.memory.list(pid, namespace),
      update: (oid, change) => t.memory.update(pid, oid, change),
      merge: (child) => t.memory.merge(pid, child),
      createNamespace: (key) => t.memory.createNamespace(pid, key),
    },
    human: {
      output: (text) => t.human.output(pid, text),
      ask: (question) => t.human.ask(pid, question),
      requestPermission: (permission) => t.human.requestPermission(pid, permission),
    },
    // The call's serving signal: a tool killed for a breach stops its command too.
    shell: { run: (args, signal) => t.shell.run(pid, args, { signal }) },
    net: { fetch: (request, signal) => t.net.fetch(pid, request, { signal }) },
    mcp: { call: (call, signal) => t.mcp.call(pid, call, { signal }) },
    process: {
      cwd: () => t.processes.find(pid)?.cwd ?? null,
      children: () => t.processes.list({ parent: pid, limit: 1000 }).map(view),
      fork: (options) => view(t.processes.fork(pid, childOptions(options), self)),
      spawnChild: (options) =>
        view(t.processes.spawnChild(pid, {
          ...childOptions(options),
          ...present({ tools: options.tools }),
          image: options.image,
          goal: options.goal,
        }, self)),
      // Blocks until the child (or any child) has finished; null when the time is up first.
      wait: async (child, timeoutMs, signal) => {
        const deadline = performance.now() + timeoutMs;
        for (;;) {
          // Refuses a non-child, a missing wait right, or nothing to wait for, at once.
          const found = t.processes.collectChild(pid, child, self);
          if (found) return view(found);
          const left = deadline - performance.now();
          if (left <= 0) return null;
          if (signal.aborted) throw signal.reason;
          await untilChildFinished(
            (hook) => t.processes.onFinished(hook),
            Math.min(left, CHILD_POLL_MS),
            signal,
          );
        }
      },
      signal: (child, signal) => view(t.processes.signal(child, signal, self)),
      exit: (options) => {
        defer({ kind: "exit", ...present(options) });
        return { deferred: "exit" };
      },
      exec: (options) => {
        defer({ kind: "exec", ...present(options), image: options.image });
        return { deferred: "exec" };
      },
    },
    images: { list: () => t.images.list(pid).map((image) => image.id) },
  };
}

/**
 * What a refused syscall's record names: the decision's reason (the capability, rule or mode) for
 * a denial, else the error's code.
 */
function refusalAuthority(error: unknown): string {
  if (error instanceof CapabilityDeniedError) return error.reason;
  return error instanceof LibosError ? error.code : "failed";
}

/** One tool call's syscalls, bound to the calling process. */
export class LibOSSyscallSession {
  readonly pid: string;
  readonly tool: string;
  readonly #core: RuntimeCore;
  readonly #targets: SyscallTargets;
  readonly #table: ReadonlyMap<SyscallName, SyscallEntry>;
  readonly #port: SyscallPort;
  #count = 0;
  #deferred: DeferredOp | undefined;

  constructor(core: RuntimeCore, targets: SyscallTargets, pid: string, tool: string) {
    this.#core = core;
    this.#targets = targets;
    this.pid = pid;
    this.tool = tool;
    this.#table = syscallTable();
    this.#port = port(targets, pid, tool, (op) => {
      if (this.#deferred) {
        throw new ValidationError(
          `The tool already asked for process.${this.#deferred.kind}; a call may end or replace its process once`,
        );
      }
      this.#deferred = op;
    });
  }

  /** How many syscalls this session answered (refused ones included). */
  get count(): number {
    return this.#count;
  }

  /** The exit or exec the tool asked for, if any (applied after its result frame). */
  get deferred(): DeferredOp | undefined {
    return this.#deferred;
  }

  /**
   * Answers one syscall: validates its arguments, calls its primitive method, audits it (one
   * record: the primitive's, carrying the syscall, or else the session's). A call that waits on a
   * human blocks until the human decides (see the module doc).
   * Each known syscall is charged one tool call to the process, as its built-in tool would be.
   * @throws {ValidationError} for an unknown syscall or bad arguments;
   *   `BudgetExhaustedError` when the process has no tool call left (it has failed);
   *   whatever the primitive throws (a capability denial, a rejection, …).
   */
  async call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    this.#count++;
    const entry = this.#table.get(name as SyscallName);
    if (entry === undefined) {
      this.#audit(name, "deny", "unknown");
      throw new ValidationError(
        `Unknown syscall ${JSON.stringify(name.slice(0, 64))}; a tool has ${
          [...this.#table.keys()].join(", ")
        }`,
      );
    }
    const spec: SyscallSpec = entry.spec;
    // Charged like the built-in tool it mirrors: once known, before its arguments are checked
    // (as the broker does), so a flood of refused syscalls costs what refused tool calls cost.
    try {
      this.#targets.processes.chargeToolCall(this.pid);
    } catch (error) {
      this.#audit(name, "deny", refusalAuthority(error));
      throw error;
    }
    const parsed = spec.args.safeParse(args);
    if (!parsed.success) {
      this.#audit(name, "deny", "validation");
      const issue = parsed.error.issues[0];
      throw new ValidationError(
        `Syscall ${name}: ${issue?.path.join(".") || "arguments"} ${issue?.message ?? "invalid"}`,
      );
    }
    // Every record the primitive appends during the call carries the syscall and the tool; one
    // that records its decision is the syscall's record (the session adds none of its own).
    const scope: AuditScope = { detail: { syscall: name, tool: this.tool }, decisions: [] };
    try {
      const value = await this.#core.audit.within(scope, async () => {
        try {
          return await spec.call(parsed.data, this.#port, signal);
        } catch (error) {
          if (!(error instanceof HumanPendingError)) throw error;
          return await this.#blockOnHuman(name, error.request, signal);
        }
      });
      if (!this.#core.audit.holdsDecisionOf(scope)) this.#audit(name, "allow", `tool:${this.tool}`);
      return value ?? null;
    } catch (error) {
      if (!this.#core.audit.holdsDecisionOf(scope)) {
        this.#audit(name, "deny", refusalAuthority(error));
      }
      throw error;
    }
  }

  /**
   * Whether the calling process waits on its human right now (an approval, a question or a
   * permission request of it is pending): the sandbox does not count that time as host time
   * spent serving the tool, whether the wait is a terminal prompt or the queue.
   */
  waitingOnHuman(): boolean {
    return this.#core.store.listHumanRequests({ pid: this.pid, statuses: ["pending"], limit: 1 })
      .length > 0;
  }

  /**
   * A queue-mode ask inside a syscall: the tool cannot park, so the syscall blocks until the
   * human decides, then gets what a parked process would (the approved action's value, the
   * answer, the minted capabilities) or the rejection as a typed error.
   */
  async #blockOnHuman(name: string, first: string, signal: AbortSignal): Promise<unknown> {
    let request = first;
    for (;;) {
      const resolution = await this.#targets.human.awaitResolution(this.pid, request, signal);
      // The approved action asked again (a second, different approval): wait on that one too.
      if (resolution.type === "pending") {
        request = resolution.request;
        continue;
      }
      const outcome = resolution.outcome;
      if (!outcome.ok) throw new LibosError(outcome.error.code, "caller", outcome.error.message);
      const value = outcome.value as { answer?: unknown; capabilities?: unknown } | null;
      if (name === "human.ask") return value?.answer ?? "";
      if (name === "human.request_permission") return value?.capabilities ?? [];
      return outcome.value;
    }
  }

  /**
   * Applies the exit or exec the tool asked for, after its result frame; audited like any
   * syscall (one record). Returns what was applied.
   * @throws whatever the process manager refuses (the exec's image unreadable, …).
   */
  applyDeferred(): DeferredOp | undefined {
    const op = this.#deferred;
    if (!op) return undefined;
    this.#deferred = undefined;
    const actor: ProcessActor = { kind: "process", pid: this.pid };
    const name = `process.${op.kind}`;
    // As in call(): the process manager's record of the exit or exec is the syscall's one
    // record when it keeps one; otherwise the session's.
    const scope: AuditScope = { detail: { syscall: name, tool: this.tool }, decisions: [] };
    try {
      this.#core.audit.within(scope, () => {
        if (op.kind === "exit") {
          this.#targets.processes.exit(this.pid, {
            ...(op.result === undefined ? {} : { result: op.result }),
            ...(op.message === undefined ? {} : { message: op.message }),
          }, actor);
        } else {
          this.#targets.processes.exec(this.pid, {
            image: op.image,
            ...(op.tools === undefined ? {} : { tools: op.tools }),
            ...(op.goal === undefined ? {} : { goal: op.goal }),
          }, actor);
        }
      });
    } catch (error) {
      if (!this.#core.audit.holdsDecisionOf(scope)) {
        this.#audit(name, "deny", refusalAuthority(error));
      }
      throw error;
    }
    if (!this.#core.audit.holdsDecisionOf(scope)) this.#audit(name, "allow", `tool:${this.tool}`);
    return op;
  }

  #audit(name: string, decision: "allow" | "deny", authority: string): void {
    this.#core.audit.append({
      actor: this.pid,
      pid: this.pid,
      action: `syscall.${name.slice(0, 64)}`,
      resource: `tool:${this.tool}`,
      decision,
      authority,
    });
  }
}

/** The targets of a runtime: its primitives, memory, human channel, processes and images. */
export function runtimeTargets(runtime: {
  readonly primitives: {
    readonly fs: SyscallTargets["fs"];
    readonly clock: SyscallTargets["clock"];
    readonly shell: SyscallTargets["shell"];
    readonly net: SyscallTargets["net"];
    readonly mcp: SyscallTargets["mcp"];
  };
  readonly memory: SyscallTargets["memory"];
  readonly human: SyscallTargets["human"];
  readonly processes: SyscallTargets["processes"];
  readonly images: SyscallTargets["images"];
}): SyscallTargets {
  return {
    fs: runtime.primitives.fs,
    clock: runtime.primitives.clock,
    shell: runtime.primitives.shell,
    net: runtime.primitives.net,
    mcp: runtime.primitives.mcp,
    memory: runtime.memory,
    human: runtime.human,
    processes: runtime.processes,
    images: runtime.images,
  };
}
