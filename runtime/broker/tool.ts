/**
 * Tools (DESIGN §1, §2): `defineTool()` and the context a tool runs with.
 *
 * A tool is a name, a description, a zod schema of its arguments (the model sees the JSON Schema
 * derived from it), the kinds of effect it may exercise, and `run(args, ctx)`. `ctx` exposes only
 * primitives, already bound to the calling process: a tool cannot name another process, reach
 * `Deno`, the network or a provider, and every effect is still decided by the primitive on the
 * process's capabilities. Declaring effects narrows further: a tool that declared only `fs.read`
 * gets an error if it tries to write, whatever the process may do.
 *
 * A tool's declaration ({@link ToolSpec}) is also where the JIT syscalls that mirror it are
 * declared (`syscalls`, built with {@link syscall}): same schema, same caps, and the primitive
 * call made through a {@link SyscallPort}. `jit/syscall_session.ts` serves exactly those.
 *
 * @module
 */
import { z } from "zod";
import type { JsonValue } from "../base/canonical_json.ts";
import { CapabilityDeniedError, ValidationError } from "../base/errors.ts";
import type { CapabilityResource } from "../authority/capability.ts";
export { CapabilityResource as CapabilityResourceSchema } from "../authority/capability.ts";
export { Budgets as BudgetsSchema, Signal as SignalSchema } from "../process/process.ts";
import type { ClockReading } from "../primitives/clock.ts";
import type { CreateObject, MemoryRecord } from "../memory/object_memory.ts";
import type { ObjectInfo } from "../memory/memory_object.ts";

/** The kinds of effect a tool may exercise through its context. */
export const ToolEffect = z.enum([
  "fs.read",
  "fs.write",
  "fs.delete",
  "clock",
  "memory.read",
  "memory.write",
  "human",
  "shell",
  "net",
  "process",
  "image",
  "jit",
  "mcp",
]);
/** A kind of effect a tool may exercise. */
export type ToolEffect = z.infer<typeof ToolEffect>;

/**
 * An object without its undefined members: the optional arguments a model (or a tool) did not
 * give, left out rather than passed as `undefined`.
 */
export function present<T extends object>(o: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>;
  };
}

/** A tool name: lowercase snake case, as models expect function names. */
export const ToolName = z.string().regex(
  /^[a-z][a-z0-9_]{0,63}$/,
  "must be 1-64 lowercase letters, digits and _ (starting with a letter)",
);

/** The primitives a tool may use, bound to the calling process. */
export interface ToolContext {
  /** The calling process. */
  readonly pid: string;
  /** Aborted when the call is cancelled (the process is terminated or its time runs out). */
  readonly signal: AbortSignal;
  readonly fs: {
    /** `ask: false`: a file that needs a human (secret-bearing, hard-linked) is refused unasked. */
    readText(
      path: string,
      options?: {
        readonly maxBytes?: number;
        readonly offset?: number;
        readonly limit?: number;
        readonly ask?: boolean;
      },
    ): Promise<JsonValue>;
    /**
     * Files under `path` matching a glob, newest first (`fs.read`: each directory listed and
     * file dated is decided).
     */
    glob(
      pattern: string,
      options?: { readonly path?: string; readonly limit?: number },
    ): Promise<JsonValue>;
    /**
     * Lines matching `pattern` — a regular expression (RE2 syntax, linear-time engine), or
     * literal text with `literal` (`fs.read`: files needing a human are skipped unasked).
     */
    grep(pattern: string, options?: GrepOptions): Promise<JsonValue>;
    /**
     * Exact string replacements (one edit, or `edits` applied in order, all or none), written
     * only over the content read (`fs.write`).
     */
    editText(path: string, edit: FileEdits): Promise<JsonValue>;
    writeText(
      path: string,
      content: string,
      options?: { readonly overwrite?: boolean; readonly parents?: boolean },
    ): Promise<JsonValue>;
    /** A multi-file patch, all files or none (`fs.write`; its deletes are decided too). */
    applyPatch(patch: string): Promise<JsonValue>;
    listDir(path: string, options?: { readonly limit?: number }): Promise<JsonValue>;
    makeDir(path: string, options?: { readonly parents?: boolean }): Promise<JsonValue>;
    deleteFile(path: string, options?: { readonly missingOk?: boolean }): Promise<JsonValue>;
    deleteDir(path: string, options?: { readonly recursive?: boolean }): Promise<JsonValue>;
    stat(path: string): Promise<JsonValue>;
  };
  readonly clock: {
    now(options?: { readonly timeZone?: string }): ClockReading;
    /** Waits `ms` (bounded by the clock primitive), or until the call is cancelled. */
    sleep(ms: number): Promise<void>;
  };
  readonly memory: {
    create(input: CreateObject): ObjectInfo;
    read(oid: string): MemoryRecord;
    readByName(namespace: string, name: string): MemoryRecord;
    list(namespace?: string): ObjectInfo[];
    update(
      oid: string,
      change: { readonly payload: JsonValue; readonly ifVersion?: number },
    ): ObjectInfo;
    createNamespace(key: string): void;
  };
  readonly human: {
    /** Asks the human; in queue mode the process parks and the answer comes back on resume. */
    ask(question: string): Promise<string>;
    /** Sends the human a message. */
    output(text: string): void;
    /** Asks the human for a standing permission; approval mints it (returns the capability ids). */
    requestPermission(permission: {
      readonly resource: CapabilityResource;
      readonly rights: readonly string[];
      readonly reason: string;
    }): Promise<string[]>;
  };
  readonly shell: {
    /** Runs one command under the shell policy, the OS wall and the process's capabilities. */
    run(args: {
      readonly argv: readonly string[];
      readonly cwd?: string;
      readonly timeoutMs?: number;
      readonly stdin?: string;
    }): Promise<JsonValue>;
  };
  readonly process: {
    /** The working directory, workspace-relative. */
    cwd(): string;
    /** Changes the working directory (contained to the workspace; needs stat on it). */
    chdir(path: string): JsonValue;
    /** The process's children. */
    children(): JsonValue;
    fork(options: ChildRequest): JsonValue;
    spawnChild(
      options: ChildRequest & {
        readonly image: string;
        readonly goal: string;
        readonly tools?: readonly string[];
      },
    ): JsonValue;
    /** A finished child not collected yet (this one, or any), without waiting; null if none. */
    collect(child: string | null): JsonValue;
    /** Signals one of the process's own children. */
    signal(
      child: string,
      signal: "pause" | "resume" | "cancel" | "interrupt" | "terminate",
    ): JsonValue;
    /** Gives the process read on the result of a finished child it made. */
    merge(child: string): JsonValue;
    /** Replaces the process's image and tool table (never its capabilities). */
    exec(
      options: {
        readonly image: string;
        readonly tools?: readonly string[];
        readonly goal?: string;
      },
    ): JsonValue;
    /** Ends the quantum waiting for a child (or any): throws a `QuantumEnd`. */
    wait(child: string | null): never;
    /** Takes a checkpoint of the process (its state, objects and capabilities). */
    checkpoint(label: string): JsonValue;
    /** Ends the process (after this call): throws a `QuantumEnd`. */
    exit(options: { readonly result?: string; readonly message?: string }): never;
  };
  readonly images: {
    /** Loads an image from strict YAML (needs `image:<id>` write). */
    loadYaml(yaml: string, options?: { readonly replace?: boolean }): JsonValue;
  };
  readonly jit: {
    /** Stores a candidate tool; returns its oid. */
    propose(candidate: JsonValue): string;
    validate(oid: string): Promise<JsonValue>;
    /** Registers a validated candidate (the register right, or a human's approval). */
    register(oid: string): Promise<string>;
  };
  readonly net: {
    /** One HTTP(S) request under the process's `net` capabilities (untrusted web content). */
    fetch(request: {
      readonly url: string;
      readonly method?: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";
      readonly headers?: Readonly<Record<string, string>>;
      readonly body?: string;
      readonly maxBytes?: number;
      readonly timeoutMs?: number;
      /** The body made readable: HTML as Markdown, binary content described. */
      readonly readable?: boolean;
      readonly maxChars?: number;
    }): Promise<JsonValue>;
  };
}

/** One exact-text edit, as the filesystem primitive takes it. */
export interface FileEdit {
  readonly oldString: string;
  readonly newString: string;
  readonly replaceAll?: boolean;
}

/** What an edit call carries: one edit, or a list (the primitive refuses both or neither). */
export interface FileEdits {
  readonly oldString?: string;
  readonly newString?: string;
  readonly replaceAll?: boolean;
  readonly edits?: readonly FileEdit[];
}

/** How a grep searches and what it returns (see `runtime/primitives/_fs_grep.ts`). */
export interface GrepOptions {
  /** Match the pattern as literal text, not as a regular expression. */
  readonly literal?: boolean;
  readonly path?: string;
  /** Only files matching this glob (`*.ts` by name at any depth; `{a,b}` alternatives). */
  readonly glob?: string;
  /** Only files of this type (`ts`, `py`, `rust`, …). */
  readonly type?: string;
  readonly ignoreCase?: boolean;
  /** Context lines before and after each match (content mode). */
  readonly before?: number;
  readonly after?: number;
  /** Default `content`. */
  readonly mode?: "content" | "files_with_matches" | "count";
  /** At most this many results (lines, files or counts). */
  readonly maxMatches?: number;
  /** Skip this many results first. */
  readonly offset?: number;
  /** Matching across lines (refused, with the reason). */
  readonly multiline?: boolean;
}

/** A child's goal, budgets and the scopes of the parent's authority it is handed. */
export interface ChildRequest {
  readonly goal?: string;
  /** Absent members (or undefined ones, as zod leaves them) keep the parent's remainder. */
  readonly budgets?: {
    readonly maxToolCalls?: number | undefined;
    readonly maxLiveChildren?: number | undefined;
    readonly maxWallTimeMs?: number | undefined;
    readonly maxModelTokens?: number | undefined;
  };
  readonly inherit?: readonly {
    readonly resource: CapabilityResource;
    readonly rights: readonly string[];
  }[];
}

/** The JIT tool lifecycle as the broker offers it (attached by `lifecycleFor`). */
export interface JitHooks {
  propose(pid: string, candidate: unknown): string;
  validate(pid: string, oid: string): Promise<unknown>;
  register(pid: string, oid: string): Promise<string>;
  /** Puts back the tools `pid` registered before (after a restart); returns their names. */
  restore(pid: string): string[];
}

/** What a tool's `run` returns: JSON, handed to the model (capped) and stored as an object. */
export type ToolValue = JsonValue;

/** A tool definition, as the broker holds it. */
export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  /** Validates the model's arguments (the call fails closed on anything else). */
  readonly args: z.ZodType;
  /** The JSON Schema the model is shown, derived from `args`. */
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly effects: readonly ToolEffect[];
  /**
   * Built-in tools ship with libos; JIT tools are registered by processes; MCP tools are the
   * run's configured MCP servers' (`mcp__<server>__<tool>`, decided by the MCP primitive).
   */
  readonly origin: "builtin" | "jit" | "mcp";
  /**
   * Whether the tool takes the optional `justification` argument (a built-in tool with an
   * effect a human may be asked about): the broker hands it to the human channel, never to
   * {@link run}.
   */
  readonly justified?: boolean;
  run(args: unknown, ctx: ToolContext): Promise<ToolValue> | ToolValue;
}

/** The effects whose calls may reach a human for approval: their tools take a justification. */
const ASKING_EFFECTS: readonly ToolEffect[] = Object.freeze([
  "fs.write",
  "fs.delete",
  "shell",
  "net",
  "jit",
]);

/** The optional argument an effectful built-in tool takes: the model's reason, for its human. */
export const Justification = z.string().max(2000).describe(
  "Optional: one short sentence for your human saying why this call is needed; shown on the approval card as your words when the call needs approval",
);

/**
 * The primitives a JIT tool's syscall reaches, bound to the calling process by its syscall
 * session (`jit/syscall_session.ts`): what a syscall declaration's `call` may use. Each member is
 * one primitive method (or one process-manager operation) with the caller's pid already given.
 */
export interface SyscallPort {
  readonly fs: {
    readText(
      a: { path: string; maxBytes?: number; offset?: number; limit?: number },
    ): Promise<unknown>;
    writeText(
      a: { path: string; content: string; overwrite?: boolean; parents?: boolean },
    ): Promise<unknown>;
    listDir(a: { path: string; limit?: number }): Promise<unknown>;
    makeDir(a: { path: string; parents: boolean }): Promise<unknown>;
    deleteFile(a: { path: string; missingOk?: boolean }): Promise<unknown>;
    deleteDir(a: { path: string; recursive?: boolean }): Promise<unknown>;
    stat(a: { path: string }): Promise<unknown>;
    editText(a: { path: string } & FileEdits): Promise<unknown>;
    glob(a: { glob: string; path?: string; limit?: number }): Promise<unknown>;
    applyPatch(a: { patch: string }): Promise<unknown>;
    /** `pattern` is a regular expression (unless `literal`); `text` is literal text. */
    grep(a: GrepOptions & { pattern?: string; text?: string }): Promise<unknown>;
  };
  readonly clock: {
    now(options: { timeZone?: string }): unknown;
    wait(ms: number, signal: AbortSignal): Promise<void>;
  };
  readonly memory: {
    /** Creates an object; its provenance is the calling tool's, whatever the tool says. */
    create(input: {
      namespace?: string;
      name?: string | null;
      type: string;
      payload: JsonValue;
      tags?: readonly string[];
    }): unknown;
    read(oid: string): unknown;
    readByName(namespace: string, name: string): unknown;
    list(namespace?: string): unknown;
    update(oid: string, change: { payload: JsonValue }): unknown;
    /** Gives the caller read on a finished child's result object. */
    merge(child: string): unknown;
    createNamespace(key: string): unknown;
  };
  readonly human: {
    output(text: string): unknown;
    ask(question: string): Promise<string>;
    requestPermission(permission: {
      resource: CapabilityResource;
      rights: string[];
      reason: string;
    }): Promise<string[]>;
  };
  readonly shell: {
    run(
      args: { argv: string[]; cwd?: string; timeoutMs?: number; stdin?: string },
      signal: AbortSignal,
    ): Promise<unknown>;
  };
  readonly net: {
    fetch(
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
      signal: AbortSignal,
    ): Promise<unknown>;
  };
  readonly mcp: {
    /** One call of a configured MCP server's tool, decided like the model's own call of it. */
    call(
      call: { server: string; tool: string; arguments: Record<string, JsonValue> },
      signal: AbortSignal,
    ): Promise<unknown>;
  };
  readonly process: {
    /** The caller's working directory, null if it no longer exists. */
    cwd(): string | null;
    /** The caller's children, summarised. */
    children(): unknown;
    fork(options: ChildRequest): unknown;
    spawnChild(
      options: ChildRequest & {
        readonly image: string;
        readonly goal: string;
        readonly tools?: readonly string[];
      },
    ): unknown;
    /** Blocks until the child (or any child) has finished; null when `timeoutMs` passes first. */
    wait(child: string | null, timeoutMs: number, signal: AbortSignal): Promise<unknown>;
    signal(
      child: string,
      signal: "pause" | "resume" | "cancel" | "interrupt" | "terminate",
    ): unknown;
    /** Records an exit to apply after the tool's result frame. */
    exit(options: { readonly result?: string; readonly message?: string }): unknown;
    /** Records an exec to apply after the tool's result frame. */
    exec(
      options: {
        readonly image: string;
        readonly tools?: readonly string[];
        readonly goal?: string;
      },
    ): unknown;
  };
  readonly images: {
    /** The ids of the images the caller may read. */
    list(): string[];
  };
}

/**
 * One JIT syscall, declared with the tool it mirrors: its argument schema — the tool's own schema
 * object, or one built from the same field schemas and caps where the syscall's shape must differ
 * — and the primitive call it makes through the caller's {@link SyscallPort}.
 */
export interface SyscallSpec<S extends z.ZodType = z.ZodType> {
  readonly args: S;
  call(args: z.output<S>, sys: SyscallPort, signal: AbortSignal): unknown;
}

/** Declares a syscall (typing its call by its schema). */
export function syscall<S extends z.ZodType>(
  args: S,
  call: (args: z.output<S>, sys: SyscallPort, signal: AbortSignal) => unknown,
): SyscallSpec<S> {
  return { args, call };
}

/** The syscalls named `N`, each declared once: exactly these names, no more, no fewer. */
export type SyscallSpecs<N extends string = string> = {
  readonly [
    // Each entry keeps its own schema type; `call` is a method, so it is checked by syscall().
    K in N
  ]: SyscallSpec;
};

/**
 * What {@link defineTool} takes: one declaration of a tool — name, description, arguments,
 * effects and what it runs — and, as its field `syscalls`, the JIT syscalls `N` that mirror it
 * (none by default). A syscall exists only as part of a declaration, so it cannot be written
 * without one (`tools/mod.ts` collects them; `jit/syscall_session.ts` serves them).
 */
export type ToolSpec<S extends z.ZodType, N extends string = never> =
  & {
    readonly name: string;
    readonly description: string;
    readonly args: S;
    readonly effects: readonly ToolEffect[];
    run(args: z.output<S>, ctx: ToolContext): Promise<ToolValue> | ToolValue;
  }
  & ([N] extends [never] ? { readonly syscalls?: undefined }
    : { readonly syscalls: SyscallSpecs<N> });

/**
 * Syscalls no model-facing tool mirrors, declared with the same {@link SyscallSpecs} and each
 * with the reason it has no tool.
 */
export interface SyscallOnlySpec<N extends string> {
  readonly syscalls: SyscallSpecs<N>;
  readonly noTool: { readonly [K in N]: string };
}

/**
 * Defines a built-in tool.
 * @throws {ValidationError} for a bad name, description or effect, or an argument schema that is
 *   not a JSON object schema.
 */
export function defineTool<S extends z.ZodType, N extends string = never>(
  spec: ToolSpec<S, N>,
  origin: ToolDefinition["origin"] = "builtin",
): ToolDefinition {
  const name = ToolName.safeParse(spec.name);
  if (!name.success) {
    throw new ValidationError(
      `Tool name ${JSON.stringify(spec.name)} ${name.error.issues[0]?.message ?? "is invalid"}`,
    );
  }
  if (
    typeof spec.description !== "string" || spec.description.length < 1 ||
    spec.description.length > 2000
  ) {
    throw new ValidationError(`Tool ${spec.name} needs a description of 1-2000 characters`);
  }
  const effects = z.array(ToolEffect).max(16).safeParse(spec.effects);
  if (!effects.success) {
    throw new ValidationError(
      `Tool ${spec.name} declares an unknown effect; use ${ToolEffect.options.join(", ")}`,
    );
  }
  // A built-in tool that may ask a human takes the model's reason for the call; run() never
  // sees it (the broker takes it out).
  const justified = origin === "builtin" && spec.args instanceof z.ZodObject &&
    effects.data.some((e) => ASKING_EFFECTS.includes(e)) && !("justification" in spec.args.shape);
  const args: z.ZodType = justified && spec.args instanceof z.ZodObject
    ? spec.args.extend({ justification: Justification.optional() })
    : spec.args;
  const convert = (): Readonly<Record<string, unknown>> => {
    let converted: Record<string, unknown>;
    try {
      converted = z.toJSONSchema(args, { io: "input" }) as Record<string, unknown>;
    } catch (error) {
      throw new ValidationError(
        `Tool ${spec.name}'s argument schema cannot be shown to a model as JSON Schema`,
        { cause: error },
      );
    }
    if (converted.type !== "object") {
      throw new ValidationError(
        `Tool ${spec.name}'s arguments must be an object schema (z.object)`,
      );
    }
    return Object.freeze(converted);
  };
  // A built-in tool's plain object schema is converted when a model is first shown it (every
  // built-in's conversion is tested): a runtime that never calls a model (a CLI command, the
  // demo) does not pay for forty conversions. Anything else is converted, and refused, now.
  let parameters = origin === "builtin" && spec.args instanceof z.ZodObject ? undefined : convert();
  return Object.freeze({
    name: name.data,
    description: spec.description,
    args,
    get parameters() {
      return parameters ??= convert();
    },
    effects: Object.freeze([...effects.data]),
    origin,
    ...(justified ? { justified: true } : {}),
    run: (args: unknown, ctx: ToolContext) => spec.run(args as z.output<S>, ctx),
  });
}

/** The refusal when a tool uses an effect it did not declare. */
export function undeclared(tool: string, effect: ToolEffect): CapabilityDeniedError {
  return new CapabilityDeniedError(
    "capability_denied",
    `Tool ${tool} used ${effect}, which it does not declare; a tool may only use the effects it declares`,
    { reason: `tool:${tool}` },
  );
}
