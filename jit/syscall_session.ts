/**
 * The syscall session of one JIT tool call (DESIGN §7): bound to the calling process, it answers
 * the sandbox's syscall frames by calling exactly one primitive method each — so a tool has the
 * caller's capabilities, no more — and audits every syscall (`syscall.<name>`). Arguments are
 * zod-validated here (a tool is untrusted code); a refusal is a typed error the tool sees.
 *
 * Syscalls: `fs.read_text`, `fs.write_text`, `fs.list`, `fs.make_dir`, `fs.delete_file`,
 * `fs.delete_dir`, `fs.stat`, `fs.edit`, `fs.glob`, `fs.grep`; `clock.now`, `clock.sleep`;
 * `memory.create`, `memory.read`, `memory.read_by_name`, `memory.list`, `memory.update`,
 * `memory.create_namespace`; `human.output`, `human.ask`,
 * `human.request_permission`; `shell.run`; `net.fetch`; `process.cwd`, `process.list`,
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
 * Caps: every argument is bounded ({@link SYSCALL_ARGS}); a bound its built-in tool also has —
 * how long a call may wait on the host, how much it may carry — comes from `tools/caps.ts`, so a
 * syscall never accepts what its tool refuses.
 *
 * Budgets: each known syscall is charged one tool call to the calling process, as the built-in
 * tool it mirrors is charged by the broker (before its arguments are checked; an unknown syscall
 * costs nothing, as an unknown tool does). The syscall that finds the budget exhausted is refused
 * with `BudgetExhaustedError` and the process has failed.
 *
 * @module
 */
import { z } from "zod";
import type { JsonValue } from "../runtime/base/canonical_json.ts";
import { CapabilityResource } from "../runtime/authority/capability.ts";
import { pauseFor } from "../runtime/base/clock.ts";
import type { InheritScope } from "../runtime/authority/delegation.ts";
import {
  CapabilityDeniedError,
  HumanPendingError,
  LibosError,
  ValidationError,
} from "../runtime/base/errors.ts";
import type { HumanResolution } from "../runtime/human/human_channel.ts";
import { type AgentProcess, Budgets, processSummary, Signal } from "../runtime/process/process.ts";
import type { RuntimeCore } from "../runtime/audit/runtime_core.ts";
import { present } from "../runtime/broker/tool.ts";
import {
  CHILD_WAIT_MS_MAX,
  FETCH_BODY_CHARS_MAX,
  FETCH_BYTES_MAX,
  FETCH_HEADER_NAME_CHARS_MAX,
  FETCH_HEADER_VALUE_CHARS_MAX,
  FETCH_TIMEOUT_MS_MAX,
  GREP_MATCHES_MAX,
  HUMAN_OUTPUT_CHARS_MAX,
  HUMAN_QUESTION_CHARS_MAX,
  LIST_LIMIT_MAX,
  READ_BYTES_MAX,
  SHELL_ARG_CHARS_MAX,
  SHELL_ARGS_MAX,
  SHELL_STDIN_CHARS_MAX,
  SHELL_TIMEOUT_MS_MAX,
  SLEEP_MS_MAX,
  WRITE_CHARS_MAX,
} from "../tools/caps.ts";

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
    readText(pid: string, a: { path: string; maxBytes?: number }): Promise<unknown>;
    writeText(
      pid: string,
      a: { path: string; content: string; overwrite?: boolean },
    ): Promise<unknown>;
    listDir(pid: string, a: { path: string; limit?: number }): Promise<unknown>;
    makeDir(pid: string, a: { path: string; parents: boolean }): Promise<unknown>;
    deleteFile(pid: string, a: { path: string; missingOk?: boolean }): Promise<unknown>;
    deleteDir(pid: string, a: { path: string; recursive?: boolean }): Promise<unknown>;
    stat(pid: string, a: { path: string }): Promise<unknown>;
    editText(
      pid: string,
      a: { path: string; oldString: string; newString: string; replaceAll?: boolean },
    ): Promise<unknown>;
    glob(pid: string, a: { glob: string; path?: string; limit?: number }): Promise<unknown>;
    grep(pid: string, a: {
      text: string;
      path?: string;
      glob?: string;
      ignoreCase?: boolean;
      maxMatches?: number;
    }): Promise<unknown>;
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
      resource: z.infer<typeof CapabilityResource>;
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
      },
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

/** What a syscall may do beyond calling its primitive. */
interface SyscallContext {
  readonly signal: AbortSignal;
  /** Records an exit or exec to apply after the result frame. */
  defer(op: DeferredOp): void;
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

/** How long `process.wait` blocks when the tool names no `timeout_ms`. */
const WAIT_DEFAULT_MS = 60_000;

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

const Inherit = z.array(
  z.object({
    resource: CapabilityResource,
    rights: z.array(z.string().min(1).max(32)).min(1).max(16),
  }).strict(),
).max(64);
const ChildBudgets = Budgets.partial().strict();
const ToolNames = z.array(z.string().min(1).max(128)).max(1000);

/** A child's goal, budgets and inherited scopes as the process manager takes them. */
function childOptions(a: {
  goal?: string | undefined;
  budgets?: z.output<typeof ChildBudgets> | undefined;
  inherit?: z.output<typeof Inherit> | undefined;
}) {
  return {
    goal: a.goal,
    // zod leaves absent members out, so this is a Partial<Budgets> as the manager means it.
    budgets: a.budgets === undefined ? undefined : present(a.budgets) as Partial<Budgets>,
    // Rights are checked by the delegation itself: a right the parent lacks is refused there.
    inherit: a.inherit as InheritScope[] | undefined,
  };
}

const Path = z.string().min(1).max(4096);
const Json: z.ZodType<JsonValue> = z.json();
const Namespace = z.string().min(1).max(512);
const Name = z.string().min(1).max(512);

/**
 * Each syscall's arguments. A bound a built-in tool also has comes from `tools/caps.ts`, so the
 * two surfaces cannot drift (`tests/tool_syscall_parity_test.ts` compares every pair); every
 * string, array and number here is bounded.
 */
export const SYSCALL_ARGS = Object.freeze(
  {
    "fs.read_text": z.object({
      path: Path,
      max_bytes: z.number().int().min(1).max(READ_BYTES_MAX).optional(),
    }).strict(),
    "fs.write_text": z.object({
      path: Path,
      content: z.string().max(WRITE_CHARS_MAX),
      overwrite: z.boolean().optional(),
    }).strict(),
    "fs.list": z.object({
      path: Path.default("."),
      limit: z.number().int().min(1).max(LIST_LIMIT_MAX).optional(),
    }).strict(),
    "fs.make_dir": z.object({ path: Path, parents: z.boolean().default(false) }).strict(),
    "fs.delete_file": z.object({ path: Path, missing_ok: z.boolean().optional() }).strict(),
    "fs.delete_dir": z.object({ path: Path, recursive: z.boolean().optional() }).strict(),
    "fs.stat": z.object({ path: Path }).strict(),
    "fs.edit": z.object({
      path: Path,
      old_string: z.string().min(1).max(1024 * 1024),
      new_string: z.string().max(1024 * 1024),
      replace_all: z.boolean().optional(),
    }).strict(),
    "fs.glob": z.object({
      pattern: z.string().min(1).max(1024),
      path: Path.optional(),
      limit: z.number().int().min(1).max(LIST_LIMIT_MAX).optional(),
    }).strict(),
    "fs.grep": z.object({
      text: z.string().min(1).max(1000),
      path: Path.optional(),
      glob: z.string().min(1).max(1024).optional(),
      ignore_case: z.boolean().optional(),
      max_matches: z.number().int().min(1).max(GREP_MATCHES_MAX).optional(),
    }).strict(),
    "clock.now": z.object({ time_zone: z.string().min(1).max(64).optional() }).strict(),
    "clock.sleep": z.object({ ms: z.number().int().min(0).max(SLEEP_MS_MAX) }).strict(),
    "memory.create": z.object({
      namespace: Namespace.optional(),
      name: Name.nullable().optional(),
      type: z.string().min(1).max(128),
      payload: Json,
      tags: z.array(z.string().min(1).max(128)).max(64).optional(),
    }).strict(),
    "memory.read": z.object({ oid: z.string().min(1).max(128) }).strict(),
    "memory.read_by_name": z.object({ namespace: Namespace, name: Name }).strict(),
    "memory.list": z.object({ namespace: Namespace.optional() }).strict(),
    "memory.update": z.object({ oid: z.string().min(1).max(128), payload: Json }).strict(),
    "memory.create_namespace": z.object({ namespace: Namespace }).strict(),
    "human.output": z.object({ text: z.string().min(1).max(HUMAN_OUTPUT_CHARS_MAX) }).strict(),
    "human.ask": z.object({ question: z.string().min(1).max(HUMAN_QUESTION_CHARS_MAX) }).strict(),
    "human.request_permission": z.object({
      resource: CapabilityResource,
      rights: z.array(z.string().min(1).max(32)).min(1).max(16),
      reason: z.string().min(1).max(HUMAN_QUESTION_CHARS_MAX),
    }).strict(),
    "shell.run": z.object({
      argv: z.array(z.string().max(SHELL_ARG_CHARS_MAX)).min(1).max(SHELL_ARGS_MAX),
      cwd: Path.optional(),
      timeout_ms: z.number().int().min(1).max(SHELL_TIMEOUT_MS_MAX).optional(),
      stdin: z.string().max(SHELL_STDIN_CHARS_MAX).optional(),
    }).strict(),
    "net.fetch": z.object({
      url: z.string().min(1).max(8192),
      method: z.enum(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]).optional(),
      headers: z.record(
        z.string().max(FETCH_HEADER_NAME_CHARS_MAX),
        z.string().max(FETCH_HEADER_VALUE_CHARS_MAX),
      ).optional(),
      body: z.string().max(FETCH_BODY_CHARS_MAX).optional(),
      max_bytes: z.number().int().min(1).max(FETCH_BYTES_MAX).optional(),
      timeout_ms: z.number().int().min(1).max(FETCH_TIMEOUT_MS_MAX).optional(),
    }).strict(),
    "process.cwd": z.object({}).strict(),
    "process.list": z.object({}).strict(),
    "process.fork": z.object({
      goal: z.string().min(1).max(100_000).optional(),
      budgets: ChildBudgets.optional(),
      inherit: Inherit.optional(),
    }).strict(),
    "process.spawn_child": z.object({
      image: z.string().min(1).max(200),
      goal: z.string().min(1).max(100_000),
      tools: ToolNames.optional(),
      budgets: ChildBudgets.optional(),
      inherit: Inherit.optional(),
    }).strict(),
    "process.wait": z.object({
      pid: z.string().min(1).max(64).nullable().default(null),
      timeout_ms: z.number().int().min(0).max(CHILD_WAIT_MS_MAX).default(WAIT_DEFAULT_MS),
    }).strict(),
    "process.signal": z.object({ pid: z.string().min(1).max(64), signal: Signal }).strict(),
    "process.merge": z.object({ pid: z.string().min(1).max(64) }).strict(),
    "process.exit": z.object({
      result: z.string().min(1).max(128).optional(),
      message: z.string().max(4096).optional(),
    }).strict(),
    "process.exec": z.object({
      image: z.string().min(1).max(200),
      tools: ToolNames.optional(),
      goal: z.string().min(1).max(100_000).optional(),
    }).strict(),
    "image.list": z.object({}).strict(),
  } as const,
);

/** Each syscall: its argument schema and the one primitive method it calls. */
function table(t: SyscallTargets, tool: string) {
  const entry = <N extends keyof typeof SYSCALL_ARGS>(
    name: N,
    call: (pid: string, a: z.output<(typeof SYSCALL_ARGS)[N]>, ctx: SyscallContext) => unknown,
  ) => ({ args: SYSCALL_ARGS[name], call });
  const self = (pid: string): ProcessActor => ({ kind: "process", pid });
  return {
    "fs.read_text": entry(
      "fs.read_text",
      (pid, a) =>
        t.fs.readText(pid, { path: a.path, ...(a.max_bytes ? { maxBytes: a.max_bytes } : {}) }),
    ),
    "fs.write_text": entry(
      "fs.write_text",
      (pid, a) =>
        t.fs.writeText(pid, {
          path: a.path,
          content: a.content,
          ...(a.overwrite === undefined ? {} : { overwrite: a.overwrite }),
        }),
    ),
    "fs.list": entry(
      "fs.list",
      (pid, a) => t.fs.listDir(pid, { path: a.path, ...(a.limit ? { limit: a.limit } : {}) }),
    ),
    "fs.make_dir": entry(
      "fs.make_dir",
      (pid, a) => t.fs.makeDir(pid, { path: a.path, parents: a.parents }),
    ),
    "fs.delete_file": entry(
      "fs.delete_file",
      (pid, a) =>
        t.fs.deleteFile(pid, {
          path: a.path,
          ...(a.missing_ok === undefined ? {} : { missingOk: a.missing_ok }),
        }),
    ),
    "fs.delete_dir": entry(
      "fs.delete_dir",
      (pid, a) =>
        t.fs.deleteDir(pid, {
          path: a.path,
          ...(a.recursive === undefined ? {} : { recursive: a.recursive }),
        }),
    ),
    "fs.stat": entry("fs.stat", (pid, a) => t.fs.stat(pid, { path: a.path })),
    "fs.edit": entry(
      "fs.edit",
      (pid, a) =>
        t.fs.editText(pid, {
          path: a.path,
          oldString: a.old_string,
          newString: a.new_string,
          ...present({ replaceAll: a.replace_all }),
        }),
    ),
    "fs.glob": entry(
      "fs.glob",
      (pid, a) => t.fs.glob(pid, { glob: a.pattern, ...present({ path: a.path, limit: a.limit }) }),
    ),
    "fs.grep": entry(
      "fs.grep",
      (pid, a) =>
        t.fs.grep(pid, {
          text: a.text,
          ...present({
            path: a.path,
            glob: a.glob,
            ignoreCase: a.ignore_case,
            maxMatches: a.max_matches,
          }),
        }),
    ),
    "clock.now": entry(
      "clock.now",
      (pid, a) => t.clock.now(pid, a.time_zone ? { timeZone: a.time_zone } : {}),
    ),
    "clock.sleep": entry(
      "clock.sleep",
      async (pid, a, { signal }) => {
        await t.clock.wait(pid, a.ms, signal);
        return null;
      },
    ),
    "memory.create": entry(
      "memory.create",
      (pid, a) =>
        t.memory.create(pid, {
          type: a.type,
          payload: a.payload,
          ...(a.namespace === undefined ? {} : { namespace: a.namespace }),
          ...(a.name === undefined ? {} : { name: a.name }),
          ...(a.tags === undefined ? {} : { tags: a.tags }),
          // What a tool writes is tool output, whatever it says about itself.
          provenance: { source: "tool", label: tool, ref: null },
        }),
    ),
    "memory.read": entry("memory.read", (pid, a) => t.memory.read(pid, a.oid)),
    "memory.read_by_name": entry(
      "memory.read_by_name",
      (pid, a) => t.memory.readByName(pid, a.namespace, a.name),
    ),
    "memory.list": entry("memory.list", (pid, a) => t.memory.list(pid, a.namespace)),
    "memory.update": entry(
      "memory.update",
      (pid, a) => t.memory.update(pid, a.oid, { payload: a.payload }),
    ),
    "memory.create_namespace": entry(
      "memory.create_namespace",
      (pid, a) => {
        t.memory.createNamespace(pid, a.namespace);
        return { namespace: a.namespace, created: true };
      },
    ),
    "human.output": entry(
      "human.output",
      (pid, a) => {
        t.human.output(pid, a.text);
        return null;
      },
    ),
    "human.ask": entry("human.ask", (pid, a) => t.human.ask(pid, a.question)),
    "human.request_permission": entry(
      "human.request_permission",
      (pid, a) => t.human.requestPermission(pid, a),
    ),
    "shell.run": entry(
      "shell.run",
      // The call's serving signal: a tool killed for a breach stops its command too.
      (pid, a, { signal }) =>
        t.shell.run(pid, {
          argv: a.argv,
          ...(a.cwd === undefined ? {} : { cwd: a.cwd }),
          ...(a.timeout_ms === undefined ? {} : { timeoutMs: a.timeout_ms }),
          ...(a.stdin === undefined ? {} : { stdin: a.stdin }),
        }, { signal }),
    ),
    "net.fetch": entry(
      "net.fetch",
      (pid, a, { signal }) =>
        t.net.fetch(pid, {
          url: a.url,
          ...(a.method === undefined ? {} : { method: a.method }),
          ...(a.headers === undefined ? {} : { headers: a.headers }),
          ...(a.body === undefined ? {} : { body: a.body }),
          ...(a.max_bytes === undefined ? {} : { maxBytes: a.max_bytes }),
          ...(a.timeout_ms === undefined ? {} : { timeoutMs: a.timeout_ms }),
        }, { signal }),
    ),
    "process.cwd": entry("process.cwd", (pid) => t.processes.find(pid)?.cwd ?? null),
    "process.list": entry(
      "process.list",
      (pid) => t.processes.list({ parent: pid, limit: 1000 }).map(view),
    ),
    "process.fork": entry(
      "process.fork",
      (pid, a) => view(t.processes.fork(pid, present(childOptions(a)), self(pid))),
    ),
    "process.spawn_child": entry(
      "process.spawn_child",
      (pid, a) =>
        view(t.processes.spawnChild(
          pid,
          { ...present({ ...childOptions(a), tools: a.tools }), image: a.image, goal: a.goal },
          self(pid),
        )),
    ),
    "process.wait": entry(
      "process.wait",
      // Blocks until the child (or any child) has finished; null when the time is up first.
      async (pid, a, { signal }) => {
        const deadline = performance.now() + a.timeout_ms;
        for (;;) {
          // Refuses a non-child, a missing wait right, or nothing to wait for, at once.
          const child = t.processes.collectChild(pid, a.pid, self(pid));
          if (child) return view(child);
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
    ),
    "process.signal": entry(
      "process.signal",
      (pid, a) => view(t.processes.signal(a.pid, a.signal, self(pid))),
    ),
    "process.merge": entry("process.merge", (pid, a) => t.memory.merge(pid, a.pid)),
    "process.exit": entry(
      "process.exit",
      (_pid, a, ctx) => {
        ctx.defer({ kind: "exit", ...present(a) });
        return { deferred: "exit" };
      },
    ),
    "process.exec": entry(
      "process.exec",
      (_pid, a, ctx) => {
        ctx.defer({ kind: "exec", ...present(a), image: a.image });
        return { deferred: "exec" };
      },
    ),
    "image.list": entry("image.list", (pid) => t.images.list(pid).map((image) => image.id)),
  } as const satisfies Record<keyof typeof SYSCALL_ARGS, unknown>;
}

/** The syscall names a session answers. */
export type SyscallName = keyof ReturnType<typeof table>;

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
  readonly #table: ReturnType<typeof table>;
  #count = 0;
  #deferred: DeferredOp | undefined;

  constructor(core: RuntimeCore, targets: SyscallTargets, pid: string, tool: string) {
    this.#core = core;
    this.#targets = targets;
    this.pid = pid;
    this.tool = tool;
    this.#table = table(targets, tool);
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
   * Answers one syscall: validates its arguments, calls its primitive method, audits it. A call
   * that waits on a human blocks until the human decides (see the module doc).
   * Each known syscall is charged one tool call to the process, as its built-in tool would be.
   * @throws {ValidationError} for an unknown syscall or bad arguments;
   *   `BudgetExhaustedError` when the process has no tool call left (it has failed);
   *   whatever the primitive throws (a capability denial, a rejection, …).
   */
  async call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    this.#count++;
    if (!Object.hasOwn(this.#table, name)) {
      this.#audit(name, "deny", "unknown");
      throw new ValidationError(
        `Unknown syscall ${JSON.stringify(name.slice(0, 64))}; a tool has ${
          Object.keys(this.#table).join(", ")
        }`,
      );
    }
    const entry = this.#table[name as SyscallName] as {
      args: z.ZodType;
      call: (pid: string, a: unknown, ctx: SyscallContext) => unknown;
    };
    // Charged like the built-in tool it mirrors: once known, before its arguments are checked
    // (as the broker does), so a flood of refused syscalls costs what refused tool calls cost.
    try {
      this.#targets.processes.chargeToolCall(this.pid);
    } catch (error) {
      this.#audit(name, "deny", refusalAuthority(error));
      throw error;
    }
    const parsed = entry.args.safeParse(args);
    if (!parsed.success) {
      this.#audit(name, "deny", "validation");
      const issue = parsed.error.issues[0];
      throw new ValidationError(
        `Syscall ${name}: ${issue?.path.join(".") || "arguments"} ${issue?.message ?? "invalid"}`,
      );
    }
    const ctx: SyscallContext = {
      signal,
      defer: (op) => {
        if (this.#deferred) {
          throw new ValidationError(
            `The tool already asked for process.${this.#deferred.kind}; a call may end or replace its process once`,
          );
        }
        this.#deferred = op;
      },
    };
    try {
      let value: unknown;
      try {
        value = await entry.call(this.pid, parsed.data, ctx);
      } catch (error) {
        if (!(error instanceof HumanPendingError)) throw error;
        value = await this.#blockOnHuman(name, error.request, signal);
      }
      this.#audit(name, "allow", `tool:${this.tool}`);
      return value ?? null;
    } catch (error) {
      this.#audit(name, "deny", refusalAuthority(error));
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
   * syscall. Returns what was applied.
   * @throws whatever the process manager refuses (the exec's image unreadable, …).
   */
  applyDeferred(): DeferredOp | undefined {
    const op = this.#deferred;
    if (!op) return undefined;
    this.#deferred = undefined;
    const actor: ProcessActor = { kind: "process", pid: this.pid };
    const name = `process.${op.kind}`;
    try {
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
    } catch (error) {
      this.#audit(name, "deny", refusalAuthority(error));
      throw error;
    }
    this.#audit(name, "allow", `tool:${this.tool}`);
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
    memory: runtime.memory,
    human: runtime.human,
    processes: runtime.processes,
    images: runtime.images,
  };
}
