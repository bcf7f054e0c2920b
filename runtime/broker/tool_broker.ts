/**
 * The tool broker (DESIGN §1): the second of three separate questions.
 *
 * 1. **Visibility** — may the process see the tool? Its tool table (from its image, or given at
 *    spawn). The model is shown only those tools' schemas.
 * 2. **Invocation** — may it submit this call? The broker: the tool must be in the caller's table
 *    (a call to any other tool is refused at once, audited, and never goes to a human), the
 *    process must be live and within its tool-call budget, and the arguments must pass the tool's
 *    schema (anything else fails closed).
 * 3. **Authority** — may this operation touch this resource? The primitive the tool calls, through
 *    `decide()`, on the process's capabilities. A visible tool grants nothing.
 *
 * Results are typed (`{ok: true, value}` or `{ok: false, error: {code, message}}`) and stored as a
 * `tool.result` object in the process's namespace; what the model is handed is capped, with the
 * object's handle for the rest.
 *
 * @module
 */
import { z } from "zod";
import { canonicalJson, type JsonValue } from "../base/canonical_json.ts";
import {
  type ErrorInfo,
  errorInfo,
  HumanPendingError,
  LibosError,
  QuantumEnd,
  StoreError,
  ValidationError,
} from "../base/errors.ts";
import type { HumanChannel } from "../human/human_channel.ts";
import { PermissionRequest } from "../human/human_request.ts";
import { processNamespace } from "../memory/memory_object.ts";
import { type ObjectMemory, RUNTIME_ACTOR } from "../memory/object_memory.ts";
import type { PolicyRules } from "../policy/policy_rules.ts";
import type { FilesystemPrimitive } from "../primitives/filesystem.ts";
import type { ClockPrimitive } from "../primitives/clock.ts";
import type { NetPrimitive } from "../primitives/net.ts";
import type { ShellPrimitive } from "../primitives/shell.ts";
import type { McpPrimitive } from "../primitives/mcp.ts";
import type { Checkpoints } from "../memory/checkpoints.ts";
import type { InheritScope } from "../authority/delegation.ts";
import { explained } from "../authority/authority.ts";
import { recordedExplanation } from "../authority/explain.ts";
import type { ImageRegistry } from "./image_registry.ts";
import { aliasOf, parameterNames, parameterSchema, resolveAliases } from "./_arg_aliases.ts";
import { type Budgets, isFinal, processSummary } from "../process/process.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import { type Redactor, redactor } from "../base/redaction.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import {
  type ChildRequest,
  type JitHooks,
  present,
  type ToolContext,
  type ToolDefinition,
  type ToolEffect,
  ToolName,
  undeclared,
} from "./tool.ts";

/** One call the model asked for. */
export interface ToolCall {
  /** The model's id for the call, when it gave one. */
  readonly id?: string;
  readonly name: string;
  /** The arguments as the model sent them: validated here, never trusted. */
  readonly arguments: unknown;
}

/** What a call gave: typed, stored, and capped for the model. */
export type ToolResult =
  & {
    /** The `tool.result` object holding the whole result (null when it could not be stored). */
    readonly object: string | null;
    /** What the model is handed: the result as JSON, cut to the cap with the object's handle. */
    readonly forModel: string;
    readonly truncated: boolean;
  }
  & (
    | { readonly ok: true; readonly value: JsonValue }
    | { readonly ok: false; readonly error: ErrorInfo }
  );

/** A tool as the model is shown it. */
export interface ToolSchema {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** What the broker needs. */
export interface ToolBrokerOptions {
  /** Policy rules over tool names (a deny or an ask refuses the call at the broker). */
  readonly rules?: PolicyRules;
  readonly processes: ProcessManager;
  readonly memory: ObjectMemory;
  readonly fs: FilesystemPrimitive;
  readonly clock: ClockPrimitive;
  readonly human: HumanChannel;
  readonly shell: Pick<ShellPrimitive, "run">;
  readonly net: Pick<NetPrimitive, "fetch">;
  readonly images: Pick<ImageRegistry, "loadYaml">;
  /** The run's MCP servers (their tools are shown once {@link ToolBroker.loadMcp} listed them). */
  readonly mcp?: Pick<McpPrimitive, "servers" | "tools" | "call" | "shownTo">;
  readonly checkpoints?: Pick<Checkpoints, "create">;
  /** Characters of a result handed to the model before it is cut (default 8,000). */
  readonly modelChars?: number;
  /**
   * Known secret values (the model key, the runtime's own secret variables): removed from every
   * tool result before it is stored or shown to the model.
   */
  readonly secrets?: readonly string[];
}

/**
 * Whether a thrown value ends the quantum rather than the call: the human channel's "park on this
 * request", or a tool's wait/exit (never reading a hostile value's getters).
 */
function isPending(error: unknown): error is HumanPendingError | QuantumEnd {
  try {
    return error instanceof HumanPendingError || error instanceof QuantumEnd;
  } catch {
    return false;
  }
}

/** A justified tool's arguments without the model's stated reason, and the reason. */
function withoutJustification(
  tool: ToolDefinition,
  data: unknown,
): { args: unknown; stated: string | undefined } {
  if (!tool.justified || typeof data !== "object" || data === null || Array.isArray(data)) {
    return { args: data, stated: undefined };
  }
  const { justification, ...args } = data as { justification?: unknown };
  return { args, stated: typeof justification === "string" ? justification : undefined };
}

/** errorInfo() that survives a hostile thrown value (throwing getters, proxy traps). */
function safeErrorInfo(error: unknown): ErrorInfo {
  try {
    const info = errorInfo(error);
    return { code: String(info.code).slice(0, 64), message: String(info.message).slice(0, 4000) };
  } catch {
    return { code: "tool_failed", message: "The tool threw something that could not be read" };
  }
}

/** A child request as the process manager takes it (absent members left out). */
function childOptions(options: ChildRequest): {
  goal?: string;
  budgets?: Partial<Budgets>;
  inherit?: readonly InheritScope[];
} {
  return {
    ...(options.goal === undefined ? {} : { goal: options.goal }),
    ...(options.budgets === undefined ? {} : { budgets: present(options.budgets) }),
    // Rights are checked by the delegation itself: one the parent lacks is refused there.
    ...(options.inherit === undefined ? {} : { inherit: options.inherit as InheritScope[] }),
  };
}

/** An MCP tool's arguments as libos checks them: a JSON object (the server checks the rest). */
const McpArguments = z.record(z.string(), z.json());

/** Per-process tool tables, the registry of tools, and invocation. */
export class ToolBroker {
  readonly #core: RuntimeCore;
  readonly #o: ToolBrokerOptions;
  readonly #builtins = new Map<string, ToolDefinition>();
  /** JIT tools a process registered for itself (the JIT issue persists and sandboxes them). */
  readonly #jit = new Map<string, Map<string, ToolDefinition>>();
  readonly #modelChars: number;
  readonly #redactor: Redactor;
  /** The JIT tool lifecycle, when one is attached (`lifecycleFor`). */
  #jitHooks: JitHooks | undefined;
  /** Processes whose registered JIT tools were restored by this broker. */
  readonly #restored = new Set<string>();
  /** The run's MCP tools, by broker name (the run's configuration says which servers exist). */
  readonly #mcp = new Map<string, ToolDefinition>();
  /** Each MCP tool's server and tool name, by broker name. */
  readonly #mcpOf = new Map<string, { readonly server: string; readonly tool: string }>();

  /** Binds the broker to a runtime. */
  constructor(core: RuntimeCore, options: ToolBrokerOptions) {
    this.#core = core;
    this.#o = options;
    this.#modelChars = options.modelChars ?? 8000;
    this.#redactor = redactor(options.secrets ?? []);
  }

  /**
   * Registers a built-in tool.
   * @throws {ValidationError} for a name already registered.
   */
  registerBuiltin(tool: ToolDefinition): void {
    if (tool.origin !== "builtin") {
      throw new ValidationError(
        `${tool.name} is not a built-in tool; register it with registerJit`,
      );
    }
    if (this.#builtins.has(tool.name)) {
      throw new ValidationError(`A built-in tool named ${tool.name} is already registered`);
    }
    this.#builtins.set(tool.name, tool);
  }

  /**
   * Registers a JIT tool in process `pid`'s own table. A JIT tool can never take a built-in's
   * name (it would shadow what an image means by that name), nor a name already in the table.
   * `authority` is what allowed it (the JIT lifecycle's decision on `tool:<name>` register, or
   * `registration` when a stored registration is put back); the record names it.
   * @throws {ValidationError} for a taken name.
   */
  registerJit(pid: string, tool: ToolDefinition, authority = "registration"): void {
    const p = this.#o.processes.get(pid);
    if (isFinal(p.status)) throw new ValidationError(`Process ${pid} is ${p.status}`);
    if (tool.origin !== "jit") throw new ValidationError(`${tool.name} is not a JIT tool`);
    const own = this.#jit.get(pid) ?? new Map<string, ToolDefinition>();
    if (this.#builtins.has(tool.name) || own.has(tool.name)) {
      this.#audit(pid, "tool.register", tool.name, "deny", "name_taken");
      throw new ValidationError(
        `The tool name ${tool.name} is taken${
          this.#builtins.has(tool.name)
            ? " by a built-in tool, which a JIT tool may never shadow"
            : ""
        }; choose another name`,
      );
    }
    own.set(tool.name, tool);
    this.#jit.set(pid, own);
    this.#audit(pid, "tool.register", tool.name, "allow", authority);
  }

  /** Attaches the JIT tool lifecycle the `propose/validate/register_jit_tool` tools use. */
  attachJit(hooks: JitHooks): void {
    this.#jitHooks = hooks;
  }

  /**
   * Makes sure process `pid`'s registered JIT tools are in its table: restored once per broker
   * (after a restart they are stored, not loaded). Without an attached lifecycle, nothing.
   */
  restoreJit(pid: string): void {
    if (!this.#jitHooks || this.#jit.has(pid) || this.#restored.has(pid)) return;
    this.#restored.add(pid);
    this.#jitHooks.restore(pid);
  }

  /**
   * Lists every configured MCP server's tools — starting each server, decided for `pid` — and
   * shows them to the run's processes as `mcp__<server>__<tool>` (a registration path beside the
   * JIT tools', not a second door: calls go through {@link invoke} and the MCP primitive). A server
   * that cannot start, and a tool refused by a bound, are returned as problems, not shown.
   */
  async loadMcp(pid: string): Promise<{ code: string; message: string }[]> {
    const mcp = this.#o.mcp;
    const problems: { code: string; message: string }[] = [];
    if (!mcp) return problems;
    for (const server of mcp.servers()) {
      let listed: Awaited<ReturnType<McpPrimitive["tools"]>>;
      try {
        listed = await mcp.tools(pid, server);
      } catch (error) {
        if (isPending(error)) throw error;
        problems.push(safeErrorInfo(error));
        continue;
      }
      problems.push(...listed.refused.map((r) => ({ code: r.code, message: r.message })));
      for (const t of listed.tools) {
        const before = this.#mcpOf.get(t.brokerName);
        const again = before?.server === t.server && before.tool === t.name;
        if (this.#builtins.has(t.brokerName) || (this.#mcp.has(t.brokerName) && !again)) {
          problems.push({ code: "mcp_tool_rejected", message: `${t.brokerName} is taken` });
          continue;
        }
        this.#mcpOf.set(t.brokerName, { server: t.server, tool: t.name });
        this.#mcp.set(t.brokerName, {
          name: t.brokerName,
          description: t.description,
          // Checked by the server: libos checks only that they are a JSON object.
          args: McpArguments,
          parameters: t.inputSchema as Record<string, unknown>,
          effects: ["mcp"],
          origin: "mcp",
          run: (args, ctx) =>
            mcp.call(ctx.pid, {
              server: t.server,
              tool: t.name,
              arguments: args as Record<string, JsonValue>,
            }, { signal: ctx.signal }),
        });
      }
    }
    return problems;
  }

  /** Forgets a process's JIT tools (its exec replaced its tool table, or it finished). */
  dropJit(pid: string): void {
    this.#jit.delete(pid);
  }

  /** The built-in tools, by name. */
  builtins(): ToolDefinition[] {
    return [...this.#builtins.values()].sort((a, b) => a.name < b.name ? -1 : 1);
  }

  /** The tools process `pid` may see: its table's built-ins, then its own JIT tools. */
  visible(pid: string): ToolDefinition[] {
    const p = this.#o.processes.get(pid);
    const out: ToolDefinition[] = [];
    for (const name of p.tools) {
      const tool = this.#builtins.get(name);
      if (tool) out.push(tool);
    }
    for (const tool of this.#jit.get(pid)?.values() ?? []) out.push(tool);
    // The run's MCP tools, but none a process's ceiling refuses outright (its image's maxMode).
    for (const [tool, of] of this.#mcpOf) {
      if (this.#o.mcp?.shownTo(pid, of.server, of.tool)) out.push(this.#mcp.get(tool)!);
    }
    return out;
  }

  /** The schemas the model is shown for process `pid`: its visible tools only. */
  schemas(pid: string): ToolSchema[] {
    return this.visible(pid).map((t) => ({
      name: t.name,
      description: t.description,
      parameters: t.parameters,
    }));
  }

  #audit(
    pid: string,
    action: string,
    tool: string,
    decision: "allow" | "deny",
    authority: string,
    detail?: Record<string, string | number | boolean | null>,
  ): void {
    // A rule's file, line and text are kept with the record (libos why), as every primitive does.
    const rules = this.#o.rules;
    const explanation = authority.startsWith("rule:")
      ? recordedExplanation(authority, { rule: (r) => rules?.source(r), denies: [] })
      : undefined;
    this.#core.audit.append({
      actor: pid,
      pid,
      action,
      // Escaped: a model-chosen name may hold NUL or a lone surrogate, which the log refuses.
      resource: `tool:${JSON.stringify(tool.slice(0, 128)).slice(1, -1)}`,
      decision,
      authority,
      ...(detail ? { detail } : {}),
      ...explained(explanation, detail),
    });
  }

  /**
   * Invokes a tool for process `pid`. Never throws for the call itself: a refusal or a failure is
   * a typed `{ok: false}` result — except what ends the quantum, rethrown for the scheduler:
   * {@link HumanPendingError} (the process parks on a human request), {@link QuantumEnd} (a tool
   * waits for a child or exits), and `BudgetExhaustedError` when this very call exhausts the
   * tool-call budget (the process has failed).
   */
  async invoke(pid: string, call: ToolCall, signal: AbortSignal): Promise<ToolResult> {
    const name = typeof call.name === "string" ? call.name : "";
    const callId = typeof call.id === "string" ? call.id.slice(0, 128) : undefined;
    // 1. Visibility and invocation: refused here, at once, with no human in the loop.
    const tool = ToolName.safeParse(name).success
      ? this.visible(pid).find((t) => t.name === name)
      : undefined;
    if (!tool) {
      this.#audit(pid, "tool.invoke", name || "?", "deny", "not_in_tool_table");
      return this.#failed({
        code: "tool_not_visible",
        message: `No tool named ${
          JSON.stringify(name.slice(0, 64))
        } is in this process's tool table; call one of the tools you were shown`,
      });
    }
    // Rules over tool names: a deny refuses; an ask needs a human (no human route for tool
    // calls yet, so it refuses too, saying so).
    // An MCP tool's rules are decided by the MCP primitive (where an ask can reach a human).
    const rule = tool.origin === "mcp" ? undefined : this.#o.rules?.strictest({
      resource: { type: "tool", key: name },
      right: "invoke",
    });
    if (rule && rule.rule.effect !== "allow") {
      this.#audit(pid, "tool.invoke", name, "deny", rule.reason);
      return this.#failed(
        rule.rule.effect === "deny"
          ? {
            code: "tool_denied",
            message: `A policy rule (${rule.reason}) denies the tool ${name}`,
          }
          : {
            code: "approval_required",
            message: `A policy rule (${rule.reason}) asks a human before ${name} runs`,
          },
      );
    }
    const p = this.#o.processes.get(pid);
    if (isFinal(p.status)) {
      return this.#failed({
        code: "illegal_transition",
        message: `Process ${pid} is ${p.status}`,
      });
    }
    this.#o.processes.chargeToolCall(pid);
    // The names models send for ours (file_path, oldString, …) become ours before validation.
    const aliased = resolveAliases(tool.args, call.arguments);
    if (!aliased.ok) {
      this.#audit(pid, "tool.invoke", name, "deny", "invalid_arguments");
      return this.#failed({
        code: "invalid_arguments",
        message: `Invalid arguments for ${name}: ${aliased.message}`,
      });
    }
    const parsed = tool.args.safeParse(aliased.args);
    if (!parsed.success) {
      this.#audit(pid, "tool.invoke", name, "deny", "invalid_arguments");
      return this.#failed({
        code: "invalid_arguments",
        message: argumentsRefusal(
          name,
          tool.args,
          // A stranger explains more than what is missing because of it.
          parsed.error.issues.find((i) => i.code === "unrecognized_keys") ??
            parsed.error.issues[0],
          aliased.args,
        ),
      });
    }
    // 2. Authority: whatever the tool does goes through the primitives in its context.
    if (signal.aborted) {
      return this.#failed({ code: "cancelled", message: `The call to ${name} was cancelled` });
    }
    this.#audit(pid, "tool.invoke", name, "allow", "tool_table", {
      origin: tool.origin,
      ...(callId ? { call: callId } : {}),
      ...(aliased.renamed.length > 0 ? { renamed: aliased.renamed.join(", ") } : {}),
    });
    const live = { settled: false };
    const { args, stated } = withoutJustification(tool, parsed.data);
    try {
      const value = await this.#o.human.stating(
        pid,
        stated,
        () =>
          this.#untilAborted(
            Promise.resolve().then(() => tool.run(args, this.#context(pid, tool, signal, live))),
            signal,
          ),
      );
      return this.#stored(pid, name, callId, { ok: true, value: this.#json(name, value) });
    } catch (error) {
      if (isPending(error)) throw error;
      return this.#stored(pid, name, callId, { ok: false, error: safeErrorInfo(error) });
    } finally {
      // A context kept past its call is dead: it can do nothing after the call settled.
      live.settled = true;
    }
  }

  /** The tool's promise, or a cancellation as soon as the call's signal aborts. */
  #untilAborted<T>(run: Promise<T>, signal: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const onAbort = () =>
        reject(new LibosError("cancelled", "caller", "The call was cancelled before it finished"));
      signal.addEventListener("abort", onAbort, { once: true });
      run.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  }

  /** A tool's value as JSON (a tool that returns something else fails). */
  #json(name: string, value: unknown): JsonValue {
    try {
      canonicalJson(value as JsonValue);
      return value as JsonValue;
    } catch (error) {
      throw new ValidationError(`Tool ${name} returned something that is not JSON`, {
        cause: error,
      });
    }
  }

  /** A call refused before it ran: typed, nothing stored. */
  #failed(error: ErrorInfo): ToolResult {
    return {
      ok: false,
      error,
      object: null,
      forModel: JSON.stringify({ ok: false, error }),
      truncated: false,
    };
  }

  /**
   * Keeps the outcome of a call that waited on a human (an approved command run on resume) as
   * the call's `tool.result`, as a call that ran at once keeps its result: what `libos log` shows.
   */
  keepResumed(
    pid: string,
    call: { readonly name: string; readonly id?: string },
    outcome: { ok: true; value: JsonValue } | { ok: false; error: ErrorInfo },
  ): ToolResult {
    return this.#stored(pid, call.name, call.id, outcome);
  }

  /** Stores the result as an immutable `tool.result` object and caps what the model sees. */
  #stored(
    pid: string,
    name: string,
    callId: string | undefined,
    result: { ok: true; value: JsonValue } | { ok: false; error: ErrorInfo },
  ): ToolResult {
    // Known secrets never reach the stored result or the model.
    result = this.#redactor.json(result as unknown as JsonValue) as unknown as typeof result;
    const whole = JSON.stringify(result);
    let object: string | null = null;
    try {
      object = this.#o.memory.create(RUNTIME_ACTOR, {
        namespace: processNamespace(pid),
        type: "tool.result",
        payload: whole.length <= this.#o.memory.limits.payloadBytesMax / 4
          ? (result as unknown as JsonValue)
          : whole.slice(0, this.#o.memory.limits.payloadBytesMax / 4),
        tags: [result.ok ? "ok" : "error"],
        provenance: { source: "tool", label: name, ref: callId ?? null },
        // The process can read its results, never rewrite them.
        immutable: true,
      }).oid;
    } catch (error) {
      // A process that has just finished has no namespace left; the result still goes back.
      // The store failing is not that, and is not hidden as it.
      if (error instanceof StoreError) throw error;
    }
    const truncated = whole.length > this.#modelChars;
    const forModel = truncated
      ? `${
        whole.slice(0, this.#modelChars)
      }… [result cut at ${this.#modelChars} of ${whole.length} characters${
        object ? `; the whole result is object ${object} (read it with its handle)` : ""
      }]`
      : whole;
    return { ...result, object, forModel, truncated };
  }

  /**
   * The context of one call: primitives bound to the caller, limited to the tool's effects, and
   * dead once the call has settled.
   */
  #context(
    pid: string,
    tool: ToolDefinition,
    signal: AbortSignal,
    live: { readonly settled: boolean },
  ): ToolContext {
    const need = (effect: ToolEffect) => {
      if (live.settled) {
        throw new LibosError(
          "tool_call_settled",
          "caller",
          `Tool ${tool.name} used its context after its call had ended; a context lives for one call`,
        );
      }
      if (!tool.effects.includes(effect)) throw undeclared(tool.name, effect);
    };
    const { fs, clock, memory, human, shell, net, processes, images, checkpoints } = this.#o;
    const json = (v: unknown) => v as JsonValue;
    const self = { kind: "process", pid } as const;
    const jitHooks = () => {
      if (!this.#jitHooks) {
        throw new ValidationError(
          "JIT tools are not enabled in this runtime (no tool lifecycle is attached)",
        );
      }
      return this.#jitHooks;
    };
    return {
      pid,
      signal,
      fs: {
        async readText(path, options = {}) {
          need("fs.read");
          return json(await fs.readText(pid, { path, ...options }));
        },
        async glob(pattern, options = {}) {
          need("fs.read");
          return json(await fs.glob(pid, { glob: pattern, ...options }));
        },
        async grep(pattern, options = {}) {
          need("fs.read");
          return json(await fs.grep(pid, { pattern, ...options }));
        },
        async editText(path, edit) {
          need("fs.write");
          return json(await fs.editText(pid, { path, ...edit }));
        },
        async writeText(path, content, options = {}) {
          need("fs.write");
          return json(await fs.writeText(pid, { path, content, ...options }));
        },
        async applyPatch(patch) {
          // A patch may delete and move files as well as write them.
          need("fs.write");
          need("fs.delete");
          return json(await fs.applyPatch(pid, { patch }));
        },
        async listDir(path, options = {}) {
          need("fs.read");
          return json(await fs.listDir(pid, { path, ...options }));
        },
        async makeDir(path, options = {}) {
          need("fs.write");
          return json(await fs.makeDir(pid, { path, parents: options.parents ?? false }));
        },
        async deleteFile(path, options = {}) {
          need("fs.delete");
          return json(await fs.deleteFile(pid, { path, ...options }));
        },
        async deleteDir(path, options = {}) {
          need("fs.delete");
          return json(await fs.deleteDir(pid, { path, ...options }));
        },
        async stat(path) {
          need("fs.read");
          return json(await fs.stat(pid, { path }));
        },
      },
      clock: {
        now(options = {}) {
          need("clock");
          return clock.now(pid, options);
        },
        async sleep(ms) {
          need("clock");
          await clock.wait(pid, ms, signal);
        },
      },
      memory: {
        create(input) {
          need("memory.write");
          return memory.create(pid, input);
        },
        read(oid) {
          need("memory.read");
          return memory.read(pid, oid);
        },
        readByName(namespace, name) {
          need("memory.read");
          return memory.readByName(pid, namespace, name);
        },
        list(namespace) {
          need("memory.read");
          return memory.list(pid, namespace);
        },
        update(oid, change) {
          need("memory.write");
          return memory.update(pid, oid, change);
        },
        createNamespace(key) {
          need("memory.write");
          memory.createNamespace(pid, key);
        },
      },
      human: {
        ask(question) {
          need("human");
          return human.ask(pid, question);
        },
        output(text) {
          need("human");
          human.output(pid, text);
        },
        requestPermission(permission) {
          need("human");
          // Checked here: a malformed request must never be stored for a human to read.
          const parsed = PermissionRequest.safeParse({
            resource: permission.resource,
            rights: [...permission.rights],
            reason: permission.reason,
          });
          if (!parsed.success) {
            const issue = parsed.error.issues[0];
            throw new ValidationError(
              `Invalid permission request: ${issue?.path.join(".") || "request"} ${
                issue?.message ?? "is invalid"
              }`,
            );
          }
          return human.requestPermission(pid, parsed.data);
        },
      },
      process: {
        cwd() {
          need("process");
          const p = processes.find(pid);
          if (!p) throw new ValidationError(`Process ${pid} no longer exists`);
          return p.cwd;
        },
        chdir(path) {
          need("process");
          return processes.chdir(pid, path, self).cwd;
        },
        children() {
          need("process");
          return processes.list({ parent: pid, limit: 1000 }).map(processSummary);
        },
        fork(options) {
          need("process");
          return processSummary(processes.fork(pid, childOptions(options), self));
        },
        spawnChild(options) {
          need("process");
          return processSummary(processes.spawnChild(pid, {
            ...childOptions(options),
            image: options.image,
            goal: options.goal,
            ...(options.tools === undefined ? {} : { tools: options.tools }),
          }, self));
        },
        collect(child) {
          need("process");
          const found = processes.collectChild(pid, child, self);
          return found ? processSummary(found) : null;
        },
        signal(child, signal) {
          need("process");
          return processSummary(processes.signal(child, signal, self));
        },
        merge(child) {
          need("process");
          return json(memory.merge(pid, child));
        },
        exec(options) {
          need("process");
          return processSummary(processes.exec(pid, options, self));
        },
        wait(child) {
          need("process");
          throw new QuantumEnd(`Process ${pid} waits for ${child ?? "a child"}`, {
            type: "wait_child",
            pid: child,
          });
        },
        checkpoint(label) {
          need("process");
          if (!checkpoints) {
            throw new ValidationError("Checkpoints are not enabled in this runtime");
          }
          const cp = checkpoints.create(pid, label, pid);
          return { id: cp.id, at: cp.at, objects: cp.objects.length };
        },
        exit(options) {
          need("process");
          throw new QuantumEnd(`Process ${pid} exits`, { type: "exit", ...options });
        },
      },
      images: {
        loadYaml(yaml, options = {}) {
          need("image");
          const image = images.loadYaml(pid, yaml, { ...options, source: "the model's YAML" });
          return { id: image.id, default_tools: [...image.defaultTools] };
        },
      },
      jit: {
        propose(candidate) {
          need("jit");
          return jitHooks().propose(pid, candidate);
        },
        async validate(oid) {
          need("jit");
          return json(await jitHooks().validate(pid, oid));
        },
        register(oid) {
          need("jit");
          return jitHooks().register(pid, oid);
        },
      },
      shell: {
        async run(args) {
          need("shell");
          // The call's signal: a cancelled call stops its command too.
          return json(await shell.run(pid, args, { signal }));
        },
      },
      net: {
        async fetch(request) {
          need("net");
          return json(await net.fetch(pid, request, { signal }));
        },
      },
    };
  }
}

/**
 * A refusal of a call's arguments that says what to send instead: an unknown parameter is named
 * with the ones the tool takes, a missing one by name.
 */
function argumentsRefusal(
  name: string,
  schema: z.ZodType,
  issue: z.core.$ZodIssue | undefined,
  args: unknown,
): string {
  const at = issue?.path.length ? ` at ${issue.path.map(String).join(".")}` : "";
  const takes = parameterNames(schema);
  if (issue?.code === "unrecognized_keys") {
    // A known alias with another shape (a command line for argv) says what the parameter is.
    const misshaped = issue.path.length === 0
      ? issue.keys.flatMap((k) => {
        const canonical = aliasOf(schema, k);
        return canonical === undefined ? [] : [`${canonical} is ${shapeOf(schema, canonical)}`];
      })
      : [];
    const keys = issue.keys.map((k) => JSON.stringify(k)).join(", ") +
      (misshaped.length > 0 ? ` (${misshaped.join("; ")}, not that)` : "");
    return `Invalid arguments for ${name}${at}: it takes no ${keys}${
      issue.path.length === 0 && takes.length > 0 ? `; its parameters are ${takes.join(", ")}` : ""
    }; call it again with those names`;
  }
  if (
    issue?.code === "invalid_type" && issue.path.length > 0 &&
    valueAt(args, issue.path) === undefined
  ) {
    return `Invalid arguments for ${name}${at}: required and not given${
      takes.length > 0 ? ` (its parameters are ${takes.join(", ")})` : ""
    }; call it again with it`;
  }
  return `Invalid arguments for ${name}${at}: ${
    issue?.message ?? "invalid"
  }; see the tool's parameters`;
}

/** The value at `path` in a call's arguments (undefined where there is none). */
function valueAt(args: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = args;
  for (const key of path) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/** A parameter's shape in words, for a refusal ("a list of strings"). */
function shapeOf(schema: z.ZodType, key: string): string {
  const current = parameterSchema(schema, key);
  if (current instanceof z.ZodArray) {
    return current.element instanceof z.ZodString ? "a list of strings" : "a list";
  }
  if (current instanceof z.ZodString) return "a string";
  if (current instanceof z.ZodNumber) return "a number";
  if (current instanceof z.ZodBoolean) return "true or false";
  return "of another shape";
}
