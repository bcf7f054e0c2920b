/**
 * One `libos mcp serve` client session (see `mcp_serve_command.ts`): its process, its tool calls
 * through the broker one at a time, and a call that waits on a human — bounded, withdrawn when
 * it times out or is cut off, and run exactly once when approved.
 *
 * @module
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { ToolEffect } from "../runtime/broker/tool.ts";
import type { ToolResult } from "../runtime/broker/tool_broker.ts";
import type { JsonValue } from "../runtime/base/canonical_json.ts";
import { errorInfo, HumanPendingError } from "../runtime/base/errors.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { isFinal } from "../runtime/process/process.ts";
import type { CliIo } from "./_options.ts";
import { field } from "./_output.ts";

/** How often a waiting call tells the client it is still waiting (ms). */
const PROGRESS_EVERY_MS = 5_000;
/** How often a waiting call looks for a decision made in another process (ms). */
const DECISION_POLL_MS = 100;

/** Effects that change nothing: a tool with only these is hinted read-only to the client. */
const READ_ONLY_EFFECTS: readonly ToolEffect[] = Object.freeze(["fs.read", "clock", "memory.read"]);

/** How a session's calls meet a human. */
export interface SessionHuman {
  /** Milliseconds a call waits for a decision (0: it returns at once with the request). */
  readonly waitMs: number;
}

/** A broker result as an MCP tool result: the typed result a model would be handed. */
function mcpResult(result: ToolResult): CallToolResult {
  return {
    content: [{ type: "text", text: result.forModel }],
    ...(result.ok ? {} : { isError: true }),
  };
}

/** A refusal made here (a wait cut off, a budget spent) as an MCP error result. */
function mcpError(code: string, message: string): CallToolResult {
  return {
    content: [{ type: "text", text: JSON.stringify({ ok: false, error: { code, message } }) }],
    isError: true,
  };
}

/** What a call needs to tell its client it still waits. */
export interface Progress {
  readonly token: string | number | undefined;
  readonly send: (params: { progress: number; message: string }) => Promise<void>;
}

/** One client session: its process, and its tool calls one at a time. */
export class McpSession {
  readonly #runtime: Runtime;
  readonly #pid: string;
  readonly #flags: SessionHuman;
  readonly #io: CliIo;
  /** Ends every wait when the client is gone. */
  readonly #closed = new AbortController();
  /** The calls of the session, in order: one process has one action in flight. */
  #queue: Promise<unknown> = Promise.resolve();

  /** A session of process `pid`, which the caller spawned for it. */
  constructor(runtime: Runtime, pid: string, flags: SessionHuman, io: CliIo) {
    this.#runtime = runtime;
    this.#pid = pid;
    this.#flags = flags;
    this.#io = io;
  }

  /** The session's process. */
  get pid(): string {
    return this.#pid;
  }

  /** The session's tools as MCP lists them: the process's visible tools, with their schemas. */
  tools(): Tool[] {
    this.#runtime.tools.restoreJit(this.#pid);
    return this.#runtime.tools.visible(this.#pid).map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: { ...t.parameters, type: "object" } as Tool["inputSchema"],
      // Hints for the client's own prompts, from what the tool may do; libos decides regardless.
      annotations: {
        readOnlyHint: t.effects.every((e) => READ_ONLY_EFFECTS.includes(e)),
        openWorldHint: t.effects.includes("net"),
      },
    }));
  }

  /** Runs one `tools/call` after the session's earlier calls. */
  call(
    name: string,
    args: unknown,
    options: { readonly id: string; readonly signal: AbortSignal; readonly progress: Progress },
  ): Promise<CallToolResult> {
    const run = this.#queue.then(() => this.#call(name, args, options));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #call(
    name: string,
    args: unknown,
    options: { readonly id: string; readonly signal: AbortSignal; readonly progress: Progress },
  ): Promise<CallToolResult> {
    const signal = AbortSignal.any([options.signal, this.#closed.signal]);
    const call = { id: options.id, name };
    try {
      const result = await this.#runtime.tools.invoke(
        this.#pid,
        { ...call, arguments: args ?? {} },
        signal,
      );
      return mcpResult(result);
    } catch (error) {
      if (error instanceof HumanPendingError) {
        return await this.#awaitHuman(call, error, signal, options.progress);
      }
      // What ends a quantum (a spent budget, a process that is over): a typed refusal.
      const info = errorInfo(error);
      return mcpError(info.code, info.message);
    } finally {
      this.#runtime.store.flush();
    }
  }

  /**
   * A call parked on a human: waits (bounded) for the decision, from wherever it is made, then
   * hands back what resuming gives — the approved action's outcome (run once), or the rejection.
   */
  async #awaitHuman(
    call: { readonly id: string; readonly name: string },
    pending: HumanPendingError,
    signal: AbortSignal,
    progress: Progress,
  ): Promise<CallToolResult> {
    const human = this.#runtime.human;
    let request = pending.request;
    // Durable before anyone is told of it: another process decides it from the database.
    this.#runtime.store.flush();
    this.#io.stderr(
      `libos mcp serve: ${call.name} (${this.#pid}) waits for a human: request ${
        field(request, 64)
      } — "libos human show ${request}", then "libos human approve ${request}" or "reject"\n`,
    );
    if (this.#flags.waitMs === 0) {
      return mcpError(
        "approval_required",
        `${pending.message}. Approve it with "libos human approve ${request}", then call ${call.name} again with the same arguments (the approval is for that exact action, once)`,
      );
    }
    const timeout = AbortSignal.timeout(this.#flags.waitMs);
    const waiting = AbortSignal.any([signal, timeout]);
    const started = Date.now();
    const ticker = progress.token === undefined ? undefined : setInterval(() => {
      const seconds = Math.round((Date.now() - started) / 1000);
      progress.send({
        progress: seconds,
        message:
          `waiting for a human to decide request ${request} (libos human approve ${request})`,
      }).catch(() => undefined);
    }, PROGRESS_EVERY_MS);
    try {
      for (;;) {
        const resolution = await human.awaitResolution(
          this.#pid,
          request,
          waiting,
          DECISION_POLL_MS,
        );
        if (resolution.type === "pending") {
          // The approved action asked again (a second, different approval): wait on it too.
          request = resolution.request;
          this.#runtime.store.flush();
          continue;
        }
        const outcome = resolution.outcome;
        const kept = this.#runtime.tools.keepResumed(
          this.#pid,
          call,
          outcome.ok
            ? { ok: true, value: outcome.value as JsonValue }
            : { ok: false, error: { code: outcome.error.code, message: outcome.error.message } },
        );
        return mcpResult(kept);
      }
    } catch (error) {
      if (timeout.aborted && !signal.aborted) {
        return mcpError(
          "approval_timeout",
          `${call.name} waited ${
            Math.round(this.#flags.waitMs / 1000)
          } s for a human to decide request ${request}; nobody did, so the request was withdrawn and nothing was done. Call again to ask again, and decide it with "libos human approve ID" while the call waits (or serve with a longer --approval-wait)`,
        );
      }
      if (signal.aborted) {
        return mcpError(
          "cancelled",
          `The call to ${call.name} was cancelled while it waited for request ${request}; the request was withdrawn and nothing was done`,
        );
      }
      const info = errorInfo(error);
      return mcpError(info.code, info.message);
    } finally {
      if (ticker !== undefined) clearInterval(ticker);
    }
  }

  /** Ends the session: waits end, the process exits (audited), unless it is already over. */
  close(why: string): void {
    this.#closed.abort(new Error(why));
    const p = this.#runtime.processes.find(this.#pid);
    if (p && !isFinal(p.status)) {
      this.#runtime.processes.exit(this.#pid, { message: why });
    }
  }
}
