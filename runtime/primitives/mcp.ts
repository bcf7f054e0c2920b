/**
 * The MCP primitive: a process calls a tool of a configured MCP server (`mcp:<server>/<tool>`,
 * right `invoke`) through the same `decide()`, approval gate, ledger and audit as every other
 * effect (DESIGN §2: one choke point).
 *
 * **Starting a server** (`_mcp_servers.ts`). A stdio server starts on its first use in the run (one per run, shared by
 * the run's processes), inside the OS wall ({@link walledLauncher}), decided as a command is:
 * `decide()` on its argv (`shell:<argv>`, right `execute`) — a hardline, run, mode or rule deny
 * refuses it; a rule's ask goes to a human (the card shows the resolved program and argv); with
 * nothing said, the operator's configuration file is the allow (`config:<file>`), audited. A
 * server that exits is started again on the next call, after a backoff, at most
 * {@link McpLimits.maxRestarts} times per run. Every server dies with the runtime.
 *
 * **Calling a tool.** The server's tools are listed afresh before each call (a tool renamed or
 * removed since it was shown is `mcp_tool_unknown`, and nothing is called); the call is decided
 * on `mcp:<server>/<tool>`: a deny refuses; with nothing said — no rule, no capability — it
 * asks (in every mode that lets it through its ceiling; read-only and plan deny); a server's
 * `destructiveHint` turns an allow from anything but a rule, a human or a human's standing grant
 * into an ask; `readOnlyHint` lifts nothing. An approved call is parked as `mcp.call` and runs
 * once on resume. Each call is ledgered (intent committed before it is sent); a server that exits
 * or times out mid-call leaves its action `outcome_unknown` — never retried. Results are
 * untrusted: redacted, cut at {@link MCP_RESULT_MAX_BYTES} with a marker.
 *
 * Streamable HTTP servers are reached through the network primitive (`_mcp_http.ts`); starting one
 * needs a `net:` grant of its host (`--allow-host`), decided once (`_mcp_servers.ts`).
 *
 * @module
 */
import type { McpNet } from "./_mcp_http.ts";
import { z } from "zod";
import type { ActionLedger } from "../process/action_ledger.ts";
import { type Authority, explained } from "../authority/authority.ts";
import { type ActionResource, mcpToolName } from "../authority/capability.ts";
import type { Decision } from "../authority/decide.ts";
import { digestOf, type JsonValue, sha256Hex } from "../base/canonical_json.ts";
import { CapabilityDeniedError, IllegalTransitionError, LibosError } from "../base/errors.ts";
import { redactor } from "../base/redaction.ts";
import { type ActionOperation, defineAction } from "../human/action_registry.ts";
import type { HumanChannel } from "../human/human_channel.ts";
import { actionApproval, type ApprovalDetails } from "../human/human_request.ts";
import { isFinal } from "../process/process.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import type { ResolvedProgram } from "../providers/shell.ts";
import { ApprovalGate, type Attempt } from "./approval_gate.ts";
import {
  capText,
  checkToolName,
  checkToolSchema,
  MCP_MAX_TOOLS,
  MCP_RESULT_MAX_BYTES,
  McpError,
  safeDescription,
} from "./_mcp_bounds.ts";
import { type McpLauncher, message } from "./_mcp_client.ts";
import { DEFAULT_MCP_LIMITS, type McpCall, type McpLimits, McpServers } from "./_mcp_servers.ts";
import type { McpServerEntry } from "./_mcp_config.ts";

export { McpError, type McpErrorCode } from "./_mcp_bounds.ts";
export {
  loadMcpConfigs,
  McpConfigError,
  type McpServerEntry,
  parseMcpConfig,
} from "./_mcp_config.ts";
export { type McpLauncher, walledLauncher } from "./_mcp_client.ts";
export { DEFAULT_MCP_LIMITS, type McpCall, type McpLimits } from "./_mcp_servers.ts";

/** A server's tool, checked: what the broker shows the model. */
export interface McpTool {
  readonly server: string;
  readonly name: string;
  /** `mcp__<server>__<tool>`. */
  readonly brokerName: string;
  /** Escaped, capped, labelled as the server's words. */
  readonly description: string;
  /** Checked as data (size, depth), never compiled. */
  readonly inputSchema: JsonValue;
  readonly readOnlyHint: boolean;
  readonly destructiveHint: boolean;
}

/** A tool the server listed that libos refused to show (and why). */
export interface McpRefusedTool {
  readonly server: string;
  readonly name: string;
  readonly code: string;
  readonly message: string;
}

/** What a call gave: untrusted text, redacted and capped. */
export interface McpCallResult {
  readonly server: string;
  readonly tool: string;
  readonly text: string;
  readonly truncated: boolean;
  readonly provenance: { readonly source: "mcp"; readonly label: string; readonly ref: string };
  [key: string]: JsonValue;
}

/** What the primitive needs. */
export interface McpPrimitiveOptions {
  readonly core: RuntimeCore;
  readonly authority: Authority;
  readonly ledger: ActionLedger;
  readonly processes?: ProcessManager;
  readonly human?: Pick<HumanChannel, "escalate"> | undefined;
  readonly servers: readonly McpServerEntry[];
  /** Starts stdio servers (made on first use). */
  readonly launcher: () => McpLauncher;
  /** Finds a server's program as the shell finds a command's. */
  readonly resolveProgram: (token: string, cwd: string) => ResolvedProgram | undefined;
  readonly workspace: string;
  readonly secrets?: readonly string[];
  readonly limits?: Partial<McpLimits>;
  /** The network primitive, through which Streamable HTTP servers are reached. */
  readonly net?: McpNet;
}

/** A broker tool name (as `runtime/broker/tool.ts` ToolName). */
const BROKER_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** The stored arguments of a parked call. */
const StoredCall = z.object({
  server: z.string(),
  tool: z.string(),
  arguments: z.record(z.string(), z.json()),
}).strict();

/** MCP tool calls behind `decide()`. */
export class McpPrimitive implements AsyncDisposable {
  readonly #core: RuntimeCore;
  readonly #authority: Authority;
  readonly #ledger: ActionLedger;
  readonly #processes: ProcessManager | undefined;
  readonly #gate: ApprovalGate;
  readonly #servers: McpServers;
  readonly #redact: (text: string) => string;
  readonly limits: McpLimits;

  /** Binds the primitive to a runtime and the run's configured servers. */
  constructor(options: McpPrimitiveOptions) {
    this.#core = options.core;
    this.#authority = options.authority;
    this.#ledger = options.ledger;
    this.#processes = options.processes;
    this.#gate = new ApprovalGate({ authority: options.authority, human: options.human });
    const secrets = options.secrets?.length ? redactor(options.secrets) : undefined;
    this.#redact = secrets ? (t) => secrets.text(t) : (t) => t;
    this.limits = { ...DEFAULT_MCP_LIMITS, ...options.limits };
    this.#servers = new McpServers({
      authority: options.authority,
      gate: this.#gate,
      record: (...args) => this.#record(...args),
      servers: options.servers,
      launcher: options.launcher,
      resolveProgram: options.resolveProgram,
      workspace: options.workspace,
      limits: this.limits,
      net: options.net,
    });
  }

  /** The configured servers' names. */
  servers(): string[] {
    return this.#servers.names();
  }

  /**
   * Whether process `pid` is shown a server's tool: not when the run's ceiling — its mode,
   * narrowed by its image's `maxMode`, or a run deny — refuses every call of it (a read-only
   * reviewer never sees MCP tools). Visibility grants nothing: each call is decided.
   */
  shownTo(pid: string, server: string, tool: string): boolean {
    const decision = this.#authority.decide(pid, {
      resource: { type: "mcp", key: `${server}/${tool}` },
      right: "invoke",
    });
    return !(decision.effect === "deny" &&
      (decision.layer === "mode" || decision.layer === "run" || decision.layer === "hardline"));
  }

  #record(
    pid: string,
    action: string,
    resource: string,
    decision: "allow" | "ask" | "deny",
    authority: string,
    extra: { inputDigest?: string; detail?: Record<string, string | number | boolean | null> } = {},
  ): void {
    this.#core.audit.append({
      actor: pid,
      pid,
      action,
      resource,
      decision,
      authority,
      ...extra,
      ...explained(this.#authority.explanation(authority), extra.detail),
    });
  }

  #alive(pid: string): void {
    if (!this.#processes) return;
    const p = this.#processes.get(pid);
    if (isFinal(p.status)) {
      throw new IllegalTransitionError(
        "illegal_transition",
        `Process ${pid} is ${p.status} and can call no MCP tool`,
      );
    }
  }

  /**
   * The server's tools, checked: a tool whose name, schema or description breaks a bound is left
   * out (audited) and listed in `refused`. Starts the server when it is not running (decided).
   */
  async tools(
    pid: string,
    server: string,
  ): Promise<{ tools: McpTool[]; refused: McpRefusedTool[] }> {
    this.#alive(pid);
    // Listing never asks: nobody could tell what approving a start for a listing resumes.
    const session = await this.#servers.session(
      pid,
      server,
      { server, tool: "", arguments: {} },
      false,
    );
    return this.#check(pid, server, await this.#servers.list(server, session));
  }

  #check(pid: string, server: string, listed: readonly unknown[]): {
    tools: McpTool[];
    refused: McpRefusedTool[];
  } {
    const tools: McpTool[] = [];
    const refused: McpRefusedTool[] = [];
    for (const raw of listed.slice(0, MCP_MAX_TOOLS)) {
      const item = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
      try {
        const name = checkToolName(server, item.name);
        const inputSchema = checkToolSchema(server, name, item.inputSchema ?? { type: "object" });
        const annotations = (typeof item.annotations === "object" && item.annotations !== null
          ? item.annotations
          : {}) as Record<string, unknown>;
        const brokerName = mcpToolName(`${server}/${name}`);
        if (!BROKER_NAME.test(brokerName)) {
          throw new McpError(
            "mcp_tool_rejected",
            `Refused MCP tool ${server}/${name}: its libos name ${brokerName} is over 64 characters`,
          );
        }
        tools.push({
          server,
          name,
          brokerName,
          description: safeDescription(server, item.description),
          inputSchema,
          readOnlyHint: annotations.readOnlyHint === true,
          // Absent means "may be destructive" in MCP; libos asks by default anyway, so only an
          // explicit claim adds caution here.
          destructiveHint: annotations.destructiveHint === true,
        });
      } catch (error) {
        if (!(error instanceof McpError)) throw error;
        const name = typeof item.name === "string" ? item.name.slice(0, 64) : "?";
        refused.push({ server, name, code: error.code, message: error.message });
        this.#record(
          pid,
          "mcp.list",
          `mcp:${server}/${JSON.stringify(name).slice(1, -1)}`,
          "deny",
          error.code,
        );
      }
    }
    if (listed.length > MCP_MAX_TOOLS) {
      refused.push({
        server,
        name: "*",
        code: "mcp_tool_rejected",
        message:
          `MCP server ${server} listed ${listed.length} tools; only the first ${MCP_MAX_TOOLS} are kept`,
      });
    }
    return { tools, refused };
  }

  /**
   * Calls a tool of a configured server for process `pid`, decided (see the module
   * documentation).
   * @throws {CapabilityDeniedError} when denied; {@link McpError} for what the server did or
   *   lacks; `HumanPendingError`/`HumanDecisionError` from the human channel.
   */
  async call(
    pid: string,
    call: McpCall,
    options: { signal?: AbortSignal } = {},
  ): Promise<McpCallResult> {
    this.#alive(pid);
    const { server, tool } = call;
    const resource: ActionResource = { type: "mcp", key: `${server}/${tool}` };
    const shown = `mcp:${JSON.stringify(`${server}/${tool}`.slice(0, 200)).slice(1, -1)}`;
    const argsText = JSON.stringify(call.arguments);
    if (new TextEncoder().encode(argsText).length > this.limits.maxArgBytes) {
      this.#record(pid, "mcp.call", shown, "deny", "arguments_too_large");
      throw new McpError(
        "mcp_tool_rejected",
        `Cannot call ${server}/${tool}: its arguments are over ${this.limits.maxArgBytes} bytes`,
      );
    }
    // Refused by the run's ceiling whatever the server says: decided before anything starts.
    if (!this.shownTo(pid, server, tool)) {
      const decision = this.#authority.decide(pid, { resource, right: "invoke" });
      this.#record(pid, "mcp.call", shown, "deny", decision.reason);
      throw new CapabilityDeniedError(
        "capability_denied",
        `Cannot call MCP tool ${server}/${tool}: it is denied (${decision.reason})`,
        { reason: decision.reason },
      );
    }
    const session = await this.#servers.session(pid, server, call);
    // Listed afresh: the tool decided and shown is the tool the server has now.
    const { tools } = this.#check(pid, server, await this.#servers.list(server, session));
    const listed = tools.find((t) => t.name === tool);
    if (!listed) {
      this.#record(pid, "mcp.call", shown, "deny", "mcp_tool_unknown");
      throw new McpError(
        "mcp_tool_unknown",
        `MCP server ${server} no longer has a tool ${
          JSON.stringify(tool.slice(0, 64))
        } (it was renamed or removed since it was listed); nothing was called — list its tools again`,
      );
    }
    const digest = digestOf({
      primitive: "mcp.call",
      server,
      tool,
      arguments: call.arguments,
      schema: listed.inputSchema,
      destructive: listed.destructiveHint,
    });
    const what = `call MCP tool ${server}/${tool}`;
    const decision = await this.#gate.pass(pid, {
      operation: "mcp.call",
      args: call as unknown as Record<string, JsonValue>,
      grant: () => ({ type: "mcp", key: `${server}/${tool}`, scope: "exact" }),
      attempt: (): Promise<Attempt<Decision>> => {
        const decision = this.#decide(pid, resource, digest, listed);
        if (decision.effect === "deny") {
          this.#record(pid, "mcp.call", shown, "deny", decision.reason, { inputDigest: digest });
          throw new CapabilityDeniedError(
            "capability_denied",
            `Cannot ${what}: it is denied (${decision.reason})`,
            { reason: decision.reason },
          );
        }
        if (decision.effect === "allow") return Promise.resolve({ type: "done", value: decision });
        this.#record(pid, "mcp.call", shown, "ask", decision.reason, { inputDigest: digest });
        return Promise.resolve({
          type: "ask",
          ask: { details: this.#details(listed, call, argsText, decision, digest), subject: what },
        });
      },
      exhausted: (ask, n) =>
        new McpError(
          "mcp_server_refused",
          `Cannot ${what}: it still needs approval after ${
            n - 1
          } approvals (${ask.details.reason})`,
        ),
    });
    this.#gate.spend([decision]);
    const { id } = this.#ledger.begin(pid, {
      kind: "mcp.call",
      request: { server, tool, digest },
    });
    // After the intent (as every ledgered primitive records it): the allow that stands for it.
    this.#record(pid, "mcp.call", shown, "allow", decision.reason, { inputDigest: digest });
    let raw: unknown;
    try {
      raw = await session.callTool(tool, call.arguments, {
        timeoutMs: this.limits.callTimeoutMs,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (error) {
      // Sent, and no answer: whether the server did it is unknown. Recorded so, never retried.
      // Only a JSON-RPC error the server itself answered with says it did not act.
      const rpc = rpcCode(error);
      const answered = rpc !== undefined && rpc !== RPC_CONNECTION_CLOSED &&
        rpc !== RPC_REQUEST_TIMEOUT && !session.closed && session.failure === undefined;
      const failure = answered
        ? undefined
        : session.failure ?? (rpc === RPC_REQUEST_TIMEOUT
          ? new McpError(
            "mcp_timeout",
            `MCP tool ${server}/${tool} did not answer within ${this.limits.callTimeoutMs} ms; the server was stopped, and whether it acted is unknown`,
            { cause: error },
          )
          : new McpError(
            "mcp_outcome_unknown",
            `The call to MCP tool ${server}/${tool} ended without an answer (${
              capText(message(error), 300).text
            }); whether it acted is unknown, and libos does not call it again by itself`,
            { cause: error },
          ));
      if (failure === undefined) {
        // An error the server answered with: it says it did not do it.
        const refused = new McpError(
          "mcp_tool_error",
          `MCP tool ${server}/${tool} failed: ${capText(this.#redact(message(error)), 4000).text}`,
          { cause: error },
        );
        this.#ledger.finish(id, {
          ok: false,
          error: { code: refused.code, message: refused.message },
        });
        throw refused;
      }
      await this.#servers.lost(server, session);
      this.#ledger.finish(id, {
        ok: false,
        error: { code: "outcome_unknown", message: failure.message },
      });
      throw failure;
    }
    const result = this.#result(server, tool, raw);
    if (result.isError === true) {
      const failed = new McpError(
        "mcp_tool_error",
        `MCP tool ${server}/${tool} reported an error: ${result.text.slice(0, 4000)}`,
      );
      this.#ledger.finish(id, { ok: false, error: { code: failed.code, message: failed.message } });
      throw failed;
    }
    this.#ledger.finish(id, {
      ok: true,
      value: { bytes: result.text.length, truncated: result.truncated },
    });
    return result;
  }

  /** The decision on one call, with the MCP default and the annotations' extra caution. */
  #decide(pid: string, resource: ActionResource, digest: string, tool: McpTool): Decision {
    let decision = this.#authority.decide(pid, { resource, right: "invoke", digest });
    if (decision.effect === "deny" && decision.layer === "default") {
      // Nothing said yes or no: a call of an MCP tool asks (the server's effects are its own).
      decision = { effect: "ask", reason: "mcp:default", layer: "default" };
    } else if (decision.effect === "allow" && tool.destructiveHint && !this.#vouched(decision)) {
      decision = { effect: "ask", reason: "mcp:destructiveHint", layer: "default" };
    }
    if (decision.effect === "ask") {
      const approved = this.#gate.approval(pid, resource, "invoke", digest);
      if (approved) {
        return {
          effect: "allow",
          reason: `cap:${approved.id}`,
          layer: "cap",
          capability: approved.id,
          approval: true,
        };
      }
    }
    return decision;
  }

  /** Whether an allow came from a rule, a human, or a grant someone made (not a mode's default). */
  #vouched(decision: Decision): boolean {
    if (decision.layer === "rule" || decision.approval) return true;
    if (decision.capability === undefined) return false;
    return !this.#authority.capabilities.get(decision.capability).issuer.startsWith("mode:");
  }

  #details(
    tool: McpTool,
    call: McpCall,
    argsText: string,
    decision: Decision,
    digest: string,
  ): Omit<ApprovalDetails, "action"> {
    const pretty = JSON.stringify(call.arguments, null, 2);
    const hints = [
      tool.readOnlyHint ? "readOnlyHint" : "",
      tool.destructiveHint ? "destructiveHint" : "",
    ]
      .filter(Boolean).join(", ");
    return actionApproval({
      primitive: "mcp",
      operation: "mcp.call",
      resource: `mcp:${tool.server}/${tool.name}`,
      right: "invoke",
      reason: decision.reason,
      grantScope: "this exact call, once (bound to its digest)",
      bytes: argsText.length,
      sha256: `sha256:${sha256Hex(argsText)}`,
      // Raw: the card escapes every line (DESIGN §5).
      preview: `server: ${tool.server}\ntool: ${tool.name}\nserver's claims: ${
        hints || "(none)"
      }\narguments:\n${
        pretty.length > 4000
          ? `${pretty.slice(0, 4000)}…[truncated ${pretty.length - 4000} chars]`
          : pretty
      }`,
      digest,
      ceiling: decision.ceiling ?? null,
    });
  }

  #result(server: string, tool: string, raw: unknown): McpCallResult {
    const value = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
    const parts: string[] = [];
    const content = Array.isArray(value.content) ? value.content : [];
    for (const item of content.slice(0, 1000)) {
      const c = (typeof item === "object" && item !== null ? item : {}) as Record<string, unknown>;
      if (c.type === "text" && typeof c.text === "string") parts.push(c.text);
      else {
        parts.push(
          `[${String(c.type).slice(0, 32)} content${
            typeof c.mimeType === "string" ? ` ${c.mimeType.slice(0, 64)}` : ""
          } not shown]`,
        );
      }
    }
    if (parts.length === 0 && value.structuredContent !== undefined) {
      parts.push(JSON.stringify(value.structuredContent) ?? "");
    }
    const capped = capText(this.#redact(parts.join("\n")), MCP_RESULT_MAX_BYTES);
    return {
      server,
      tool,
      text: capped.text,
      truncated: capped.truncated,
      ...(value.isError === true ? { isError: true } : {}),
      provenance: { source: "mcp", label: server, ref: tool },
    };
  }

  /** Stops every server this run started. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.#servers[Symbol.asyncDispose]();
  }
}

/** The MCP primitive's resumable operation: the call again, decided afresh (runs once). */
export function mcpActions(mcp: McpPrimitive): ActionOperation[] {
  return [defineAction("mcp.call", StoredCall, (pid, a) => mcp.call(pid, a))];
}

/** The SDK's JSON-RPC codes for "the connection closed" and "the request timed out". */
const RPC_CONNECTION_CLOSED = -32000;
const RPC_REQUEST_TIMEOUT = -32001;

/** The JSON-RPC error code of an SDK error (a server's answer, or the SDK's own), if any. */
function rpcCode(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  const code = (error as { code: unknown }).code;
  return typeof code === "number" && Number.isInteger(code) ? code : undefined;
}

/** Whether an error is one of the MCP primitive's own. */
export function isMcpError(error: unknown): error is McpError {
  return error instanceof LibosError && error.code.startsWith("mcp_");
}
