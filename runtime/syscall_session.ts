/**
 * The syscall session of one JIT tool call (DESIGN §7): bound to the calling process, it answers
 * the sandbox's syscall frames by calling exactly one primitive method each — so a tool has the
 * caller's capabilities, no more — and audits every syscall (`syscall.<name>`). Arguments are
 * zod-validated here (a tool is untrusted code); a refusal is a typed error the tool sees.
 *
 * Syscalls: `fs.read_text`, `fs.write_text`, `fs.list`, `fs.make_dir`, `fs.delete_file`,
 * `fs.delete_dir`, `fs.stat`; `clock.now`, `clock.sleep`; `memory.create`, `memory.read`,
 * `memory.read_by_name`, `memory.list`, `memory.update`; `human.output`, `human.ask`,
 * `human.request_permission`; `shell.run`; `net.fetch`; `process.cwd`; `image.list`. (Process
 * control — fork, spawn_child, wait, signal, exit, exec — comes with the next increment of the
 * sandbox issue: it must apply after the call's result frame.)
 *
 * @module
 */
import { z } from "zod";
import type { JsonValue } from "./canonical_json.ts";
import { CapabilityResource } from "./capability.ts";
import { LibosError, ValidationError } from "./errors.ts";
import type { RuntimeCore } from "./runtime_core.ts";

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
  };
  readonly human: {
    output(pid: string, text: string): unknown;
    ask(pid: string, question: string): Promise<string>;
    requestPermission(pid: string, permission: {
      resource: z.infer<typeof CapabilityResource>;
      rights: string[];
      reason: string;
    }): Promise<string[]>;
  };
  readonly shell: {
    run(
      pid: string,
      args: { argv: string[]; cwd?: string; timeoutMs?: number; stdin?: string },
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
  readonly processes: { find(pid: string): { readonly cwd: string } | undefined };
  readonly images: { list(actor: string): readonly { readonly id: string }[] };
}

const Path = z.string().min(1).max(4096);
const Json: z.ZodType<JsonValue> = z.json();

/** Each syscall: its argument schema and the one primitive method it calls. */
function table(t: SyscallTargets, tool: string) {
  const entry = <S extends z.ZodType>(
    args: S,
    call: (pid: string, a: z.output<S>, signal: AbortSignal) => unknown,
  ) => ({ args, call });
  return {
    "fs.read_text": entry(
      z.object({ path: Path, max_bytes: z.number().int().positive().optional() }).strict(),
      (pid, a) =>
        t.fs.readText(pid, { path: a.path, ...(a.max_bytes ? { maxBytes: a.max_bytes } : {}) }),
    ),
    "fs.write_text": entry(
      z.object({ path: Path, content: z.string(), overwrite: z.boolean().optional() }).strict(),
      (pid, a) =>
        t.fs.writeText(pid, {
          path: a.path,
          content: a.content,
          ...(a.overwrite === undefined ? {} : { overwrite: a.overwrite }),
        }),
    ),
    "fs.list": entry(
      z.object({ path: Path.default("."), limit: z.number().int().positive().optional() })
        .strict(),
      (pid, a) => t.fs.listDir(pid, { path: a.path, ...(a.limit ? { limit: a.limit } : {}) }),
    ),
    "fs.make_dir": entry(
      z.object({ path: Path, parents: z.boolean().default(false) }).strict(),
      (pid, a) => t.fs.makeDir(pid, { path: a.path, parents: a.parents }),
    ),
    "fs.delete_file": entry(
      z.object({ path: Path, missing_ok: z.boolean().optional() }).strict(),
      (pid, a) =>
        t.fs.deleteFile(pid, {
          path: a.path,
          ...(a.missing_ok === undefined ? {} : { missingOk: a.missing_ok }),
        }),
    ),
    "fs.delete_dir": entry(
      z.object({ path: Path, recursive: z.boolean().optional() }).strict(),
      (pid, a) =>
        t.fs.deleteDir(pid, {
          path: a.path,
          ...(a.recursive === undefined ? {} : { recursive: a.recursive }),
        }),
    ),
    "fs.stat": entry(
      z.object({ path: Path }).strict(),
      (pid, a) => t.fs.stat(pid, { path: a.path }),
    ),
    "clock.now": entry(
      z.object({ time_zone: z.string().max(64).optional() }).strict(),
      (pid, a) => t.clock.now(pid, a.time_zone ? { timeZone: a.time_zone } : {}),
    ),
    "clock.sleep": entry(
      z.object({ ms: z.number().int().min(0).max(60_000) }).strict(),
      async (pid, a, signal) => {
        await t.clock.wait(pid, a.ms, signal);
        return null;
      },
    ),
    "memory.create": entry(
      z.object({
        namespace: z.string().max(512).optional(),
        name: z.string().max(512).nullable().optional(),
        type: z.string().min(1).max(128),
        payload: Json,
        tags: z.array(z.string().max(128)).max(64).optional(),
      }).strict(),
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
    "memory.read": entry(
      z.object({ oid: z.string().min(1).max(128) }).strict(),
      (pid, a) => t.memory.read(pid, a.oid),
    ),
    "memory.read_by_name": entry(
      z.object({ namespace: z.string().min(1).max(512), name: z.string().min(1).max(512) })
        .strict(),
      (pid, a) => t.memory.readByName(pid, a.namespace, a.name),
    ),
    "memory.list": entry(
      z.object({ namespace: z.string().max(512).optional() }).strict(),
      (pid, a) => t.memory.list(pid, a.namespace),
    ),
    "memory.update": entry(
      z.object({ oid: z.string().min(1).max(128), payload: Json }).strict(),
      (pid, a) => t.memory.update(pid, a.oid, { payload: a.payload }),
    ),
    "human.output": entry(
      z.object({ text: z.string().min(1).max(100_000) }).strict(),
      (pid, a) => {
        t.human.output(pid, a.text);
        return null;
      },
    ),
    "human.ask": entry(
      z.object({ question: z.string().min(1).max(10_000) }).strict(),
      (pid, a) => t.human.ask(pid, a.question),
    ),
    "human.request_permission": entry(
      z.object({
        resource: CapabilityResource,
        rights: z.array(z.string().min(1).max(32)).min(1).max(16),
        reason: z.string().max(4096),
      }).strict(),
      (pid, a) => t.human.requestPermission(pid, a),
    ),
    "shell.run": entry(
      z.object({
        argv: z.array(z.string()).min(1).max(4096),
        cwd: Path.optional(),
        timeout_ms: z.number().int().positive().optional(),
        stdin: z.string().optional(),
      }).strict(),
      (pid, a) =>
        t.shell.run(pid, {
          argv: a.argv,
          ...(a.cwd === undefined ? {} : { cwd: a.cwd }),
          ...(a.timeout_ms === undefined ? {} : { timeoutMs: a.timeout_ms }),
          ...(a.stdin === undefined ? {} : { stdin: a.stdin }),
        }),
    ),
    "net.fetch": entry(
      z.object({
        url: z.string().min(1).max(8192),
        method: z.enum(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]).optional(),
        headers: z.record(z.string(), z.string()).optional(),
        body: z.string().optional(),
        max_bytes: z.number().int().positive().optional(),
        timeout_ms: z.number().int().positive().optional(),
      }).strict(),
      (pid, a, signal) =>
        t.net.fetch(pid, {
          url: a.url,
          ...(a.method === undefined ? {} : { method: a.method }),
          ...(a.headers === undefined ? {} : { headers: a.headers }),
          ...(a.body === undefined ? {} : { body: a.body }),
          ...(a.max_bytes === undefined ? {} : { maxBytes: a.max_bytes }),
          ...(a.timeout_ms === undefined ? {} : { timeoutMs: a.timeout_ms }),
        }, { signal }),
    ),
    "process.cwd": entry(
      z.object({}).strict(),
      (pid) => t.processes.find(pid)?.cwd ?? null,
    ),
    "image.list": entry(
      z.object({}).strict(),
      (pid) => t.images.list(pid).map((image) => image.id),
    ),
  } as const;
}

/** The syscall names a session answers. */
export type SyscallName = keyof ReturnType<typeof table>;

/** One tool call's syscalls, bound to the calling process. */
export class LibOSSyscallSession {
  readonly pid: string;
  readonly tool: string;
  readonly #core: RuntimeCore;
  readonly #table: ReturnType<typeof table>;
  #count = 0;

  constructor(core: RuntimeCore, targets: SyscallTargets, pid: string, tool: string) {
    this.#core = core;
    this.pid = pid;
    this.tool = tool;
    this.#table = table(targets, tool);
  }

  /** How many syscalls this session answered (refused ones included). */
  get count(): number {
    return this.#count;
  }

  /**
   * Answers one syscall: validates its arguments, calls its primitive method, audits it.
   * @throws {ValidationError} for an unknown syscall or bad arguments; whatever the primitive
   *   throws (a capability denial, an approval pending, …).
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
      call: (pid: string, a: unknown, signal: AbortSignal) => unknown;
    };
    const parsed = entry.args.safeParse(args);
    if (!parsed.success) {
      this.#audit(name, "deny", "validation");
      const issue = parsed.error.issues[0];
      throw new ValidationError(
        `Syscall ${name}: ${issue?.path.join(".") || "arguments"} ${issue?.message ?? "invalid"}`,
      );
    }
    try {
      const value = await entry.call(this.pid, parsed.data, signal);
      this.#audit(name, "allow", `tool:${this.tool}`);
      return value ?? null;
    } catch (error) {
      this.#audit(name, "deny", error instanceof LibosError ? error.code : "failed");
      throw error;
    }
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
