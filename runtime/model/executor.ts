/**
 * The model executor (DESIGN §1, §9): the process driver that makes a process think. One quantum
 * is one model turn:
 *
 * 1. the request — the image's system prompt; a user message with the goal, the working
 *    directory, what woke the process (a child finished, a human's answer or approved action,
 *    an outcome a restart cut off) and its materialized memory (the object memory issue's budget,
 *    tool results included); then the previous turn's tool calls and their results, so the model
 *    sees its last actions verbatim; the tools its table shows;
 * 2. the model's reply, its tokens charged to the process (the provider's usage, else an
 *    estimate of 4 characters per token);
 * 3. the outcome, typed: `tool_calls` (each through the broker, one result per call, in order; a
 *    human approval or a child wait ends the quantum there, and the outcome comes back on wake),
 *    `final` (no tool calls: the answer is stored and the process exits naming it),
 *    `length_truncated` (no tool call runs; the next turn is told), `refused`, `error`.
 *
 * An invalid tool name gets one repair turn that lists the valid names; a second one in a row
 * fails the process. Each turn is kept as a `model.turn` record (a type only the runtime creates)
 * in the process's namespace, so a restarted runtime resumes the conversation.
 *
 * @module
 */
import type { JsonValue } from "../base/canonical_json.ts";
import { errorInfo, StoreError } from "../base/errors.ts";
import { IMAGE_OPERATOR, type ImageRegistry } from "../broker/image_registry.ts";
import { processNamespace } from "../memory/memory_object.ts";
import {
  type ChatMessage,
  type ModelClient,
  ModelError,
  type ModelReply,
  type ModelToolCall,
  type TokenUsage,
} from "./model_client.ts";
import { type ObjectMemory, RUNTIME_ACTOR } from "../memory/object_memory.ts";
import type { MaterializerState } from "../memory/materializer.ts";
import { processContext } from "../memory/process_context.ts";
import type { ProcessManager, QuantumResult } from "../process/process_manager.ts";
import type { ProcessDriver, QuantumContext } from "../kernel/scheduler.ts";
import type { ToolBroker, ToolResult } from "../broker/tool_broker.ts";
import type { EventLog } from "../audit/event_log.ts";

/** How a turn ended. */
export type TurnOutcome = "tool_calls" | "final" | "length_truncated" | "refused" | "error";

/** One turn as the executor keeps it (the payload of a `model.turn` record). */
export interface TurnRecord {
  readonly pid: string;
  readonly seq: number;
  readonly outcome: TurnOutcome;
  readonly content: string | null;
  readonly toolCalls: readonly ModelToolCall[];
  /** The result the model is shown for each call that ran, by call id. */
  readonly results: Readonly<Record<string, string>>;
  /** Calls with invalid names in this turn (a second such turn in a row fails the process). */
  readonly invalidNames: number;
  /** Consecutive turns the model could not be reached. */
  readonly unavailable: number;
  /** The tokens the turn was charged (absent in turns kept before libos recorded them). */
  readonly tokens?: number;
}

/** What the executor needs. */
export interface ExecutorOptions {
  readonly processes: ProcessManager;
  readonly tools: ToolBroker;
  readonly memory: ObjectMemory;
  readonly images: ImageRegistry;
  readonly model: ModelClient;
  /** The runtime's clock (when to retry an unreachable model). */
  readonly clock: { now(): number };
  /** The most tokens one reply may use (default 4,096). */
  readonly maxReplyTokens?: number;
  /**
   * Turns in a row the model may be unreachable (each after the client's own retries, which honour
   * `Retry-After`) before the process parks: it is paused with a message saying why, and a resume
   * (`libos agent --resume`) starts the count afresh (default 3).
   */
  readonly unavailableLimit?: number;
  /** Told what a turn is doing as it happens (a launcher's status line); never changes it. */
  readonly observer?: ExecutorObserver;
  /** Where turn and tool events go (`turn.*`, `tool.*`: see `runtime/audit/events.ts`). */
  readonly events?: Pick<EventLog, "emit">;
}

/** What an action was, in a few words: a command's argv, a file's path, else its JSON. */
function describeRequest(request: JsonValue): string {
  if (typeof request === "object" && request !== null && !Array.isArray(request)) {
    const r = request as { readonly [key: string]: JsonValue };
    if (Array.isArray(r.argv)) return r.argv.map(String).join(" ");
    if (typeof r.path === "string") return r.path;
    if (typeof r.tool === "string") return `tool ${r.tool}`;
  }
  return JSON.stringify(request).slice(0, 200);
}

/** A command's exit code in a tool's value (`{exitCode}`), for the observer. */
/** How many of a command's last output lines an event carries (a host shows fewer). */
const TAIL_LINES = 40;

function exitCodeOf(
  value: JsonValue,
): { readonly exitCode?: number | null; readonly tail?: string } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return {};
  const v = value as { readonly [key: string]: JsonValue };
  const code = v.exitCode;
  if (typeof code !== "number" && code !== null) return {};
  const output = [v.stdout, v.stderr].filter((t): t is string => typeof t === "string")
    .map((t) => t.replace(/\s+$/, "")).filter((t) => t !== "").join("\n");
  const tail = output.split("\n").slice(-TAIL_LINES).join("\n").slice(-8_000);
  return { exitCode: code, ...(tail === "" ? {} : { tail }) };
}

/**
 * The start of the message of a process the executor parked (paused because its model endpoint
 * kept failing): `libos agent --resume` resumes such a process, and only such a one.
 */
export const PARKED_PREFIX = "parked: ";

/** What a turn is doing, for a host to show (the status line of `libos agent`). */
export type ExecutorEvent =
  | { readonly kind: "model"; readonly pid: string; readonly seq: number }
  /**
   * The model answered: its text (untrusted: a host escapes it), and the tokens the turn was
   * charged — the provider's figures when it gave plausible ones (`usage`), else an estimate.
   */
  | {
    readonly kind: "reply";
    readonly pid: string;
    readonly seq: number;
    readonly content: string | null;
    readonly tokens: number;
    readonly usage?: TokenUsage;
  }
  /** A tool is called, with the arguments the model gave (untrusted: a host escapes them). */
  | {
    readonly kind: "tool";
    readonly pid: string;
    readonly seq: number;
    readonly name: string;
    readonly args?: unknown;
  }
  /**
   * A tool call's outcome: `error` when it was refused or failed; `exitCode` for a command that
   * ran (whatever its exit status).
   */
  /**
   * An effect the runtime stopped in the middle of (a crash, a kill): whether it happened is
   * unknown, and it was not run again. Told once, when its process next runs.
   */
  | {
    readonly kind: "cut_off";
    readonly pid: string;
    readonly action: string;
    readonly id: string;
    readonly code: string;
    readonly what: string;
  }
  | {
    readonly kind: "result";
    readonly pid: string;
    readonly seq: number;
    readonly name: string;
    readonly error?: { readonly code: string; readonly message: string };
    readonly exitCode?: number | null;
    /** A command's last lines of output (stdout, then stderr; redacted as the result is). */
    readonly tail?: string;
  };

/** Receives {@link ExecutorEvent}s; what it throws is ignored. */
export type ExecutorObserver = (event: ExecutorEvent) => void;

const TURN_TYPE = "model.turn";
/** The runtime's bookkeeping, kept out of the model's context. */
const BOOKKEEPING = Object.freeze([
  "model.turn",
  "jit.validation",
  "jit.registration",
  "checkpoint",
]);

/** A context budget when the image names none (the materializer's default). */
const DEFAULT_BUDGET = 32_000;
/** What the last turn's calls and results may take of the budget, in tokens. */
const EXCHANGE_TOKENS = 4_000;
/** Memory's share never drops below this (a huge system prompt is the image's problem). */
const MIN_MEMORY_TOKENS = 2_000;

function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** Drives processes with a model. */
export class ModelExecutor implements ProcessDriver {
  readonly #o: ExecutorOptions;
  /** Each process's materializer state: in memory only (a process must never write it). */
  readonly #states = new Map<string, MaterializerState>();

  constructor(options: ExecutorOptions) {
    this.#o = options;
  }

  /** The turns of process `pid`, oldest first. */
  turns(pid: string): TurnRecord[] {
    return this.#o.memory.records(processNamespace(pid), TURN_TYPE)
      .map((r) => r.payload as unknown as TurnRecord)
      .filter((t) => t.pid === pid)
      .sort((a, b) => a.seq - b.seq);
  }

  async runQuantum(ctx: QuantumContext): Promise<QuantumResult> {
    const p = ctx.process;
    const { memory, tools, processes, model } = this.#o;
    const image = this.#o.images.get(IMAGE_OPERATOR, p.image);
    const last = this.turns(p.pid).at(-1);
    for (const action of ctx.recovered) {
      if (action.outcome && !action.outcome.ok) {
        this.#tell({
          kind: "cut_off",
          pid: p.pid,
          action: action.kind,
          id: action.id,
          code: action.outcome.error.code,
          what: describeRequest(action.request),
        });
      }
    }
    if (ctx.resumed) {
      // The call the last quantum ended on (an approval) has its outcome now.
      const call = last?.toolCalls.find((c) => !Object.hasOwn(last.results, c.id));
      const outcome = ctx.resumed.outcome;
      if (call) {
        // Kept like any call's result (the human-approved command's output is reviewable).
        const kept = tools.keepResumed(
          p.pid,
          { name: call.name, ...(call.id === undefined ? {} : { id: call.id }) },
          outcome.ok
            ? { ok: true, value: outcome.value }
            : { ok: false, error: { code: outcome.error.code, message: outcome.error.message } },
        );
        this.#toolResult(p.pid, last?.seq ?? 0, call, kept);
      }
      this.#tell({
        kind: "result",
        pid: p.pid,
        seq: last?.seq ?? 0,
        name: call?.name ?? ctx.resumed.request.kind,
        ...(outcome.ok ? exitCodeOf(outcome.value) : { error: outcome.error }),
      });
    }
    // A process's registered JIT tools are back in its table before it thinks (after a restart).
    tools.restoreJit(p.pid);
    const schemas = tools.schemas(p.pid);
    // The whole prompt fits the image's budget: memory gets what the system prompt, the tools and
    // an allowance for the last exchange leave of it.
    const budget = image.contextPolicy?.budgetTokens ?? DEFAULT_BUDGET;
    const fixed = estimateTokens(image.systemPrompt.length + JSON.stringify(schemas).length);
    const context = processContext(memory, p.pid, {
      policy: {
        ...image.contextPolicy,
        budgetTokens: Math.max(MIN_MEMORY_TOKENS, budget - fixed - EXCHANGE_TOKENS),
      },
      previous: this.#states.get(p.pid),
      skipTypes: BOOKKEEPING,
    });
    if (!context.holdsVolatile) this.#states.set(p.pid, context.state);
    else this.#states.delete(p.pid);
    const messages = this.#messages(ctx, last, context.text);
    const request = {
      system: image.systemPrompt,
      messages,
      tools: schemas,
      maxTokens: this.#o.maxReplyTokens ?? 4_096,
      turn: (last?.seq ?? 0) + 1,
    };
    let reply: ModelReply;
    this.#tell({ kind: "model", pid: p.pid, seq: (last?.seq ?? 0) + 1 });
    this.#o.events?.emit(
      { kind: "turn.started", payload: { pid: p.pid, seq: (last?.seq ?? 0) + 1 } },
      { turn: (last?.seq ?? 0) + 1 },
    );
    try {
      reply = checkedReply(await model.complete(request, ctx.signal));
    } catch (error) {
      return this.#modelFailed(p.pid, last, error);
    }
    const promptChars = request.system.length + JSON.stringify(schemas).length +
      messages.reduce((n, m) => n + JSON.stringify(m).length, 0);
    // What the reply itself holds is charged at least: a provider's figures are trusted only
    // when they are plausible and no smaller than that.
    const replyTokens = estimateTokens(
      (reply.content?.length ?? 0) + JSON.stringify(reply.toolCalls).length,
    );
    const usage = plausible(reply.usage);
    const tokens = usage
      ? Math.max(usage.promptTokens + usage.completionTokens, replyTokens)
      : estimateTokens(promptChars) + replyTokens;
    processes.chargeTokens(p.pid, tokens);
    const seq = (last?.seq ?? 0) + 1;
    this.#tell({
      kind: "reply",
      pid: p.pid,
      seq,
      content: reply.content,
      tokens,
      ...(usage ? { usage } : {}),
    });
    const keep = (turn: Omit<TurnRecord, "pid" | "seq" | "unavailable">) =>
      this.#keep({ ...turn, pid: p.pid, seq, unavailable: 0, tokens });
    if (reply.finishReason === "length") {
      // A cut reply's tool calls may be cut too: none runs.
      keep({
        outcome: "length_truncated",
        content: reply.content,
        toolCalls: [],
        results: {},
        invalidNames: 0,
      });
      return { type: "yield" };
    }
    if (reply.finishReason === "content_filter") {
      keep({
        outcome: "refused",
        content: reply.content,
        toolCalls: [],
        results: {},
        invalidNames: 0,
      });
      return { type: "fail", reason: "model_refused: the provider filtered the reply" };
    }
    if (reply.toolCalls.length === 0) {
      keep({
        outcome: "final",
        content: reply.content,
        toolCalls: [],
        results: {},
        invalidNames: 0,
      });
      const message = (reply.content ?? "").slice(0, 200);
      try {
        const answer = memory.create(p.pid, {
          type: "model.final",
          payload: reply.content ?? "",
          provenance: { source: "model", label: model.name.slice(0, 200), ref: null },
        });
        return { type: "exit", result: answer.oid, message };
      } catch (error) {
        // A process that may not write its own memory (read-only, a quota) ends with the
        // message only; the store failing is not a refusal and is not hidden as one.
        if (error instanceof StoreError) throw error;
        return { type: "exit", message };
      }
    }
    return await this.#runCalls(ctx, reply, seq, last, tokens);
  }

  /** Runs a reply's tool calls in order; what ends the quantum ends it after the turn is kept. */
  async #runCalls(
    ctx: QuantumContext,
    reply: ModelReply,
    seq: number,
    last: TurnRecord | undefined,
    tokens: number,
  ): Promise<QuantumResult> {
    const pid = ctx.process.pid;
    const visible = new Set(this.#o.tools.schemas(pid).map((t) => t.name));
    const invalid = reply.toolCalls.filter((c) => !visible.has(c.name)).length;
    if (invalid > 0 && (last?.invalidNames ?? 0) > 0) {
      this.#keep({
        pid,
        seq,
        outcome: "error",
        content: reply.content,
        toolCalls: reply.toolCalls,
        results: {},
        invalidNames: invalid,
        unavailable: 0,
        tokens,
      });
      return {
        type: "fail",
        reason: `invalid_tool_name: the model called tools it does not have twice in a row (${
          reply.toolCalls.filter((c) => !visible.has(c.name)).map((c) => c.name.slice(0, 64))
            .join(", ")
        })`,
      };
    }
    const results: Record<string, string> = Object.create(null);
    const keep = () =>
      this.#keep({
        pid,
        seq,
        outcome: "tool_calls",
        content: reply.content,
        toolCalls: reply.toolCalls,
        results,
        invalidNames: invalid,
        unavailable: 0,
        tokens,
      });
    for (const call of reply.toolCalls) {
      if (!visible.has(call.name)) {
        // The repair: the model is told which names exist (and the host sees the miss).
        const error = {
          code: "tool_not_visible",
          message: `There is no tool named ${
            JSON.stringify(call.name.slice(0, 64))
          }. Your tools are: ${[...visible].join(", ")}`,
        };
        results[call.id] = JSON.stringify({ ok: false, error });
        this.#tell({ kind: "result", pid, seq, name: call.name.slice(0, 64), error });
        this.#toolResult(pid, seq, call, {
          ok: false,
          error,
          object: null,
          forModel: results[call.id]!,
          truncated: false,
        });
        continue;
      }
      const args = typeof call.arguments === "string"
        ? parseArguments(call.arguments)
        : call.arguments;
      this.#tell({ kind: "tool", pid, seq, name: call.name, args });
      this.#o.events?.emit({
        kind: "tool.call",
        payload: { pid, seq, callId: callIdOf(call), tool: call.name.slice(0, 64) },
      }, { turn: seq });
      try {
        const result = await this.#o.tools.invoke(pid, {
          id: call.id,
          name: call.name,
          arguments: args,
        }, ctx.signal);
        results[call.id] = result.forModel;
        this.#toolResult(pid, seq, call, result);
        this.#tell({
          kind: "result",
          pid,
          seq,
          name: call.name,
          ...(result.ok ? exitCodeOf(result.value) : { error: result.error }),
        });
      } catch (error) {
        // A human approval, a child wait or an exit ends the quantum here; the turn is kept so
        // the next one shows the model what it asked.
        keep();
        throw error;
      }
    }
    keep();
    return { type: "yield" };
  }

  #modelFailed(pid: string, last: TurnRecord | undefined, error: unknown): QuantumResult {
    const info = errorInfo(error);
    const transient = error instanceof ModelError &&
      (error.code === "model_unavailable" || error.code === "model_timeout");
    if (!transient) return { type: "fail", reason: `${info.code}: ${info.message}`.slice(0, 1000) };
    const unavailable = (last?.unavailable ?? 0) + 1;
    const limit = this.#o.unavailableLimit ?? 3;
    // Kept either way: the next turn retries the same conversation. A park starts the count
    // afresh, so a resumed process gets every retry again.
    this.#keep({
      pid,
      seq: (last?.seq ?? 0) + 1,
      outcome: "error",
      content: null,
      toolCalls: [],
      results: {},
      invalidNames: last?.invalidNames ?? 0,
      unavailable: unavailable < limit ? unavailable : 0,
    });
    if (unavailable < limit) {
      // Try again a little later.
      return { type: "sleep", until: this.#o.clock.now() + 2_000 * unavailable };
    }
    return {
      type: "park",
      reason: `${PARKED_PREFIX}${info.code} after ${unavailable} tries: ${info.message}`.slice(
        0,
        1000,
      ),
    };
  }

  #tell(event: ExecutorEvent): void {
    try {
      this.#o.observer?.(event);
    } catch {
      // A host's display must not change what the process does.
    }
  }

  /** The `tool.result` event of a call: its outcome and size, never its content. */
  #toolResult(
    pid: string,
    seq: number,
    call: { readonly id?: string; readonly name: string },
    result: ToolResult,
  ): void {
    this.#o.events?.emit({
      kind: "tool.result",
      payload: {
        pid,
        seq,
        callId: callIdOf(call),
        tool: call.name.slice(0, 64),
        ok: result.ok,
        errorCode: result.ok ? null : eventCode(result.error.code),
        exitCode: result.ok ? exitCodeOf(result.value).exitCode ?? null : null,
        object: result.object,
        chars: result.forModel.length,
        truncated: result.truncated,
      },
    }, { turn: seq });
  }

  #keep(turn: TurnRecord): void {
    this.#o.events?.emit({
      kind: "turn.ended",
      payload: {
        pid: turn.pid,
        seq: turn.seq,
        outcome: turn.outcome,
        tokens: turn.tokens ?? null,
        toolCalls: turn.toolCalls.length,
      },
    }, { turn: turn.seq });
    this.#o.memory.create(RUNTIME_ACTOR, {
      namespace: processNamespace(turn.pid),
      type: TURN_TYPE,
      payload: turn as unknown as JsonValue,
      provenance: { source: "model", label: this.#o.model.name.slice(0, 200), ref: null },
      immutable: true,
    });
  }

  /** The conversation of this turn. */
  #messages(ctx: QuantumContext, last: TurnRecord | undefined, memoryText: string): ChatMessage[] {
    const p = ctx.process;
    const notes: string[] = [];
    const wake = p.wake;
    if (wake?.kind === "child_finished") {
      notes.push(
        `Your child ${wake.pid} finished: ${wake.status}${
          wake.result ? `, result ${wake.result}` : ""
        }.`,
      );
    } else if (wake?.kind === "interrupted") {
      notes.push("Your human interrupted you; read their latest message in your memory.");
    } else if (wake?.kind === "cancelled") {
      notes.push(`What you waited for (${wake.waited}) was cancelled.`);
    }
    for (const action of ctx.recovered) {
      const outcome = action.outcome;
      if (outcome && !outcome.ok) {
        notes.push(`${action.kind} ${action.id}: ${outcome.error.code}: ${outcome.error.message}`);
      }
    }
    if (last?.outcome === "length_truncated") {
      notes.push(
        "Your last reply was cut off at its token limit and none of its tool calls ran; be shorter.",
      );
    }
    const header = [
      `Goal: ${p.goal}`,
      `Working directory: ${p.cwd}`,
      ...(notes.length ? ["", ...notes] : []),
      "",
      "Your memory:",
      memoryText,
    ].join("\n");
    const messages: ChatMessage[] = [{ role: "user", content: header }];
    if (last && last.outcome === "tool_calls" && last.toolCalls.length > 0) {
      messages.push({ role: "assistant", content: last.content, toolCalls: last.toolCalls });
      for (const call of last.toolCalls) {
        messages.push({
          role: "tool",
          toolCallId: call.id,
          content: Object.hasOwn(last.results, call.id)
            ? String(last.results[call.id])
            : this.#pendingResult(ctx, call),
        });
      }
      messages.push({ role: "user", content: "Continue." });
    }
    return messages;
  }

  /** The result of a call that ended the last quantum (an approval, a wait), or why it has none. */
  #pendingResult(ctx: QuantumContext, _call: ModelToolCall): string {
    if (ctx.resumed) return JSON.stringify(ctx.resumed.outcome);
    const wake = ctx.process.wake;
    if (wake?.kind === "child_finished") {
      return JSON.stringify({
        ok: true,
        value: { child: wake.pid, status: wake.status, result: wake.result },
      });
    }
    return JSON.stringify({
      ok: false,
      error: {
        code: "not_run",
        message: "This call did not run (an earlier call of the turn ended it)",
      },
    });
  }
}

/** Usage figures that are whole, non-negative and finite; anything else counts as absent. */
function plausible(usage: ModelReply["usage"]): ModelReply["usage"] {
  const ok = (n: unknown) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0;
  return usage && ok(usage.promptTokens) && ok(usage.completionTokens) ? usage : undefined;
}

/**
 * A reply checked before anything of it runs: tool names are text (else the turn is a bad
 * reply), and call ids are unique within the turn (a repeated id gets a suffix, so each call
 * keeps its own result).
 * @throws {ModelError} `model_bad_reply`.
 */
function checkedReply(reply: ModelReply): ModelReply {
  const seen = new Set<string>();
  const toolCalls = (Array.isArray(reply.toolCalls) ? reply.toolCalls : []).map((call, i) => {
    if (typeof call?.name !== "string") {
      throw new ModelError("model_bad_reply", `Tool call ${i + 1} of the reply has no name`);
    }
    let id = typeof call.id === "string" && call.id !== ""
      ? call.id.slice(0, 256)
      : `call_${i + 1}`;
    while (seen.has(id)) id = `${id}#${i + 1}`;
    seen.add(id);
    return { ...call, id };
  });
  if (reply.content !== null && typeof reply.content !== "string") {
    throw new ModelError("model_bad_reply", "The reply's content is not text");
  }
  return { ...reply, toolCalls };
}

/** A call's id as an event carries it (cut to 128 characters), or null. */
function callIdOf(call: { readonly id?: string }): string | null {
  return typeof call.id === "string" && call.id !== "" ? call.id.slice(0, 128) : null;
}

/** An error code as an event carries it: a code that is not a plain identifier is `error`. */
function eventCode(code: string): string {
  return /^[a-z][a-z0-9_]{0,63}$/.test(code) ? code : "error";
}

/** Arguments a model sent as JSON text; text that is not JSON is passed on for the broker to refuse. */
function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** An executor over a runtime's processes, tools, memory, images and clock. */
export function executorFor(
  runtime: {
    readonly processes: ProcessManager;
    readonly tools: ToolBroker;
    readonly memory: ObjectMemory;
    readonly images: ImageRegistry;
    readonly clock: { now(): number };
    readonly events?: Pick<EventLog, "emit">;
  },
  model: ModelClient,
  options: Pick<ExecutorOptions, "maxReplyTokens" | "unavailableLimit" | "observer"> = {},
): ModelExecutor {
  return new ModelExecutor({
    processes: runtime.processes,
    tools: runtime.tools,
    memory: runtime.memory,
    images: runtime.images,
    clock: runtime.clock,
    ...(runtime.events === undefined ? {} : { events: runtime.events }),
    model,
    ...options,
  });
}
