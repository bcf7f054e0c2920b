/**
 * The run's MCP servers (see `mcp.ts`): one session per configured server, started on first use
 * inside the OS wall and decided as a command (`decide()` on its argv through the approval gate;
 * with nothing said, the operator's configuration file is the allow), started again after a
 * backoff when it exits (a bounded number of times per run), and stopped with the runtime. A
 * Streamable HTTP server's session is decided instead as a connection to its host: the process
 * must hold a `net:` grant (see `#permitHttp`); its requests go through the network primitive
 * (`_mcp_http.ts`).
 *
 * @module
 */
import { isAbsolute, join, normalize } from "node:path";
import type { Authority } from "../authority/authority.ts";
import type { ActionResource } from "../authority/capability.ts";
import { digestOf, type JsonValue, sha256Hex } from "../base/canonical_json.ts";
import { CapabilityDeniedError } from "../base/errors.ts";
import { SYSTEM_PATH } from "../base/system_path.ts";
import { actionApproval } from "../human/human_request.ts";
import type { ResolvedProgram } from "../providers/shell.ts";
import type { ApprovalGate, Attempt } from "./approval_gate.ts";
import { McpError } from "./_mcp_bounds.ts";
import { connectSession, type McpLauncher, type McpSession, message } from "./_mcp_client.ts";
import type { McpHttpServer, McpServerEntry } from "./_mcp_config.ts";
import { connectHttpSession, type McpNet } from "./_mcp_http.ts";

/** Bounds of MCP calls. */
export interface McpLimits {
  /** Starting a server and its handshake. */
  readonly startTimeoutMs: number;
  /** Listing a server's tools. */
  readonly listTimeoutMs: number;
  /** One call. */
  readonly callTimeoutMs: number;
  /** Starts after the first, per server per run. */
  readonly maxRestarts: number;
  /** The first restart's delay; each next one doubles it. */
  readonly backoffMs: number;
  /** The largest arguments of a call (serialised). */
  readonly maxArgBytes: number;
}

/** The bounds when nothing else is configured. */
export const DEFAULT_MCP_LIMITS: McpLimits = Object.freeze({
  startTimeoutMs: 30_000,
  listTimeoutMs: 15_000,
  callTimeoutMs: 120_000,
  maxRestarts: 3,
  backoffMs: 250,
  maxArgBytes: 256 * 1024,
});

/** One call. */
export interface McpCall {
  readonly server: string;
  readonly tool: string;
  readonly arguments: Record<string, JsonValue>;
}

/** Writes one decision record (the primitive's own `#record`). */
export type McpRecord = (
  pid: string,
  action: string,
  resource: string,
  decision: "allow" | "ask" | "deny",
  authority: string,
  extra?: { inputDigest?: string; detail?: Record<string, string | number | boolean | null> },
) => void;

/** What the servers need. */
export interface McpServersOptions {
  readonly authority: Authority;
  readonly gate: ApprovalGate;
  readonly record: McpRecord;
  readonly servers: readonly McpServerEntry[];
  readonly launcher: () => McpLauncher;
  readonly resolveProgram: (token: string, cwd: string) => ResolvedProgram | undefined;
  readonly workspace: string;
  readonly limits: McpLimits;
  /** The network primitive: Streamable HTTP servers are reached through it only. */
  readonly net?: McpNet | undefined;
}

interface ServerState {
  session: McpSession | undefined;
  starting: Promise<McpSession> | undefined;
  starts: number;
}

/** The run's configured MCP servers and their live sessions. */
export class McpServers implements AsyncDisposable {
  readonly #authority: Authority;
  readonly #gate: ApprovalGate;
  readonly #record: McpRecord;
  readonly #servers: ReadonlyMap<string, McpServerEntry>;
  readonly #state = new Map<string, ServerState>();
  readonly #makeLauncher: () => McpLauncher;
  #launcher: McpLauncher | undefined;
  readonly #resolve: McpServersOptions["resolveProgram"];
  readonly #workspace: string;
  readonly #net: McpNet | undefined;
  #disposed = false;
  readonly limits: McpLimits;

  /** Holds the run's servers (none starts until it is used). */
  constructor(options: McpServersOptions) {
    this.#authority = options.authority;
    this.#gate = options.gate;
    this.#record = options.record;
    this.#servers = new Map(options.servers.map((s) => [s.name, s]));
    this.#makeLauncher = options.launcher;
    this.#resolve = options.resolveProgram;
    this.#workspace = options.workspace;
    this.#net = options.net;
    this.limits = options.limits;
  }

  /** The configured servers' names. */
  names(): string[] {
    return [...this.#servers.keys()].sort();
  }

  entry(server: string): McpServerEntry {
    const entry = this.#servers.get(server);
    if (!entry) {
      throw new McpError(
        "mcp_tool_unknown",
        `No MCP server named ${JSON.stringify(server.slice(0, 64))} is configured for this run`,
      );
    }
    return entry;
  }

  async list(server: string, session: McpSession): Promise<unknown[]> {
    try {
      return await session.listTools(this.limits.listTimeoutMs);
    } catch (error) {
      await this.lost(server, session);
      throw session.failure ??
        new McpError(
          "mcp_server_failed",
          `Cannot list the tools of MCP server ${server}: ${message(error)}`,
          { cause: error },
        );
    }
  }

  /** The live session of `server`, started (decided) when there is none. */
  async session(
    pid: string,
    server: string,
    call: McpCall,
    ask = true,
  ): Promise<McpSession> {
    const entry = this.entry(server);
    const state = this.#state.get(server) ?? { session: undefined, starting: undefined, starts: 0 };
    this.#state.set(server, state);
    if (state.session && !state.session.closed) {
      // An HTTP session is shared by the run's processes: each one needs its own net: grant.
      if (!("command" in entry.config)) this.#permitHttp(pid, entry, entry.config, true);
      return state.session;
    }
    state.session = undefined;
    if (state.starting) return await state.starting;
    if (this.#disposed) throw new McpError("mcp_server_failed", "The runtime is closing");
    if (state.starts > this.limits.maxRestarts) {
      throw new McpError(
        "mcp_server_failed",
        `MCP server ${server} stopped ${state.starts} times in this run; libos does not start it again (check the server, then start a new run)`,
      );
    }
    state.starting = (async () => {
      const config = entry.config;
      if (!("command" in config)) {
        if (config.type === "sse") {
          throw new McpError(
            "mcp_transport_unsupported",
            `MCP server ${server} (${entry.source}) is configured as a legacy SSE server; libos speaks Streamable HTTP only (drop "type": "sse" if the server also serves Streamable HTTP at that URL)`,
          );
        }
        const permitted = this.#permitHttp(pid, entry, config);
        state.starts++;
        return await connectHttpSession({
          server,
          url: new URL(config.url),
          headers: config.headers ?? {},
          pid,
          net: this.#net!,
          permitted,
          startTimeoutMs: this.limits.startTimeoutMs,
          // One HTTP request carries a whole call: it may last as long as the longest bound
          // (the network primitive's own cap, 120 s by default, still holds).
          requestTimeoutMs: Math.min(
            120_000,
            Math.max(
              this.limits.startTimeoutMs,
              this.limits.listTimeoutMs,
              this.limits.callTimeoutMs,
            ),
          ),
        });
      }
      const cwd = this.#cwd(server, config.cwd);
      const argv = [config.command, ...(config.args ?? [])];
      const program = this.#resolve(config.command, cwd);
      if (!program) {
        throw new McpError(
          "mcp_server_refused",
          `Cannot start MCP server ${server}: no program ${JSON.stringify(config.command)} in ${
            SYSTEM_PATH.join(":")
          } (configured in ${entry.source})`,
        );
      }
      await this.#permitStart(pid, entry, argv, program, cwd, call, ask);
      if (state.starts > 0) {
        // Backoff before a restart: a crashing server is not spun.
        const delay = this.limits.backoffMs * 2 ** (state.starts - 1);
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
      state.starts++;
      this.#launcher ??= this.#makeLauncher();
      const pipes = await this.#launcher.start({
        name: server,
        executable: program.executable,
        args: argv.slice(1),
        cwd,
        env: config.env ?? {},
      });
      try {
        return await connectSession(pipes, this.limits.startTimeoutMs);
      } catch (error) {
        pipes.kill();
        throw error;
      }
    })();
    try {
      state.session = await state.starting;
      return state.session;
    } finally {
      state.starting = undefined;
    }
  }

  #cwd(server: string, cwd: string | undefined): string {
    if (cwd === undefined) return this.#workspace;
    const path = normalize(isAbsolute(cwd) ? cwd : join(this.#workspace, cwd));
    if (path !== this.#workspace && !path.startsWith(`${this.#workspace}/`)) {
      throw new McpError(
        "mcp_server_refused",
        `MCP server ${server}'s cwd ${JSON.stringify(cwd)} is outside the workspace`,
      );
    }
    return path;
  }

  /**
   * Decides an HTTP server's start as a connection to its host: the process must hold a `net:`
   * grant (`--allow-host`, a rule) on the host or its `<host>:<port>`; nothing else (no ask, and
   * the operator's configuration is no allow). Audited as `mcp.start` on `net:<host>:<port>`.
   * Returns the check each request of the session runs again (a revoked grant ends it); it
   * returns the reason that still allows.
   * @throws {CapabilityDeniedError} without the grant (the message names `--allow-host`).
   */
  #permitHttp(
    pid: string,
    entry: McpServerEntry,
    config: McpHttpServer,
    reuse = false,
  ): () => string {
    const url = new URL(config.url);
    const host = url.hostname.toLowerCase().replace(/\.$/, "");
    const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
    const endpoint = `${host}:${port}`;
    const detail = {
      server: entry.name,
      host,
      port,
      headerNames: Object.keys(config.headers ?? {}).sort().join(" "),
    };
    // An explicit deny or a rule's ask on the host or the endpoint refuses; then a capability
    // (`--allow-host`, inherited from the run's top process) or a rule's allow permits. The mode's
    // ask is what the grant answers: the session was decided once, so no request asks a human.
    const check = (): { allowed: boolean; reason: string } => {
      let allow: string | undefined;
      for (const key of [endpoint, host]) {
        const resource = { type: "net", key } as const;
        const d = this.#authority.decide(pid, { resource, right: "connect" });
        if (d.effect === "deny" && d.layer !== "default") {
          return { allowed: false, reason: d.reason };
        }
        if (d.effect === "ask" && d.layer !== "mode") return { allowed: false, reason: d.reason };
        if (d.effect === "allow") allow ??= d.reason;
        const match = this.#authority.capabilities.match(pid, resource, "connect", undefined);
        if (match?.effect === "deny") {
          return { allowed: false, reason: `cap:${match.capability?.id}` };
        }
        if (match?.effect === "allow" && match.capability) allow ??= `cap:${match.capability.id}`;
      }
      return allow === undefined
        ? { allowed: false, reason: "no net: grant" }
        : { allowed: true, reason: allow };
    };
    const refusal = (reason: string, later: boolean) =>
      new CapabilityDeniedError(
        "capability_denied",
        `Cannot ${
          later ? "go on talking to" : reuse ? "use" : "start"
        } MCP server ${entry.name} at ${
          JSON.stringify(url.origin)
        } (${entry.source}): process ${pid} may not connect to ${endpoint} (${reason}); a network server needs a net: grant of its host — run with --allow-host ${endpoint} (or a rule or capability allowing connect on net:${endpoint})`,
        { reason },
      );
    if (!this.#net) {
      throw new McpError(
        "mcp_server_refused",
        `Cannot start MCP server ${entry.name}: this runtime has no network primitive`,
      );
    }
    const first = check();
    // A process reusing a live session is audited only when it is refused.
    if (!(reuse && first.allowed)) {
      this.#record(
        pid,
        "mcp.start",
        `net:${endpoint}`,
        first.allowed ? "allow" : "deny",
        first.reason,
        {
          detail,
        },
      );
    }
    if (!first.allowed) throw refusal(first.reason, false);
    return () => {
      const now = check();
      if (now.allowed) return now.reason;
      this.#record(pid, "mcp.start", `net:${endpoint}`, "deny", now.reason, { detail });
      throw refusal(now.reason, true);
    };
  }

  /** Decides a server's start as a command (see the module documentation). */
  async #permitStart(
    pid: string,
    entry: McpServerEntry,
    argv: string[],
    program: ResolvedProgram,
    cwd: string,
    call: McpCall,
    ask: boolean,
  ): Promise<void> {
    const resource: ActionResource = { type: "shell", argv };
    const envNames = Object.keys(("command" in entry.config && entry.config.env) || {}).sort();
    const digest = digestOf({
      primitive: "mcp.start",
      server: entry.name,
      executable: program.executable,
      real: program.real,
      argv,
      cwd,
      env: sha256Hex(JSON.stringify(("command" in entry.config && entry.config.env) || {})),
    });
    const what = `start MCP server ${entry.name}`;
    await this.#gate.pass(pid, {
      operation: "mcp.call",
      args: call as unknown as Record<string, JsonValue>,
      grant: () => ({ type: "shell", argv, scope: "exact" }),
      attempt: (): Promise<Attempt<undefined>> => {
        let decision = this.#authority.decide(pid, { resource, right: "execute", digest });
        if (decision.effect === "deny" && decision.layer === "default") {
          // Nothing said no: the operator configured this server (their file is the allow).
          decision = { effect: "allow", reason: `config:${entry.source}`, layer: "default" };
        }
        if (decision.effect === "ask") {
          const approved = this.#gate.approval(pid, resource, "execute", digest);
          if (approved) {
            decision = {
              effect: "allow",
              reason: `cap:${approved.id}`,
              layer: "cap",
              capability: approved.id,
              approval: true,
            };
          }
        }
        const detail = {
          server: entry.name,
          executable: program.executable,
          envNames: envNames.join(" "),
        };
        const shown = `shell:${argv.join(" ").slice(0, 1000)}`;
        if (decision.effect === "deny") {
          this.#record(pid, "mcp.start", shown, "deny", decision.reason, {
            inputDigest: digest,
            detail,
          });
          throw new CapabilityDeniedError(
            "capability_denied",
            `Cannot ${what}: its command is denied (${decision.reason})`,
            { reason: decision.reason },
          );
        }
        if (decision.effect === "ask") {
          this.#record(pid, "mcp.start", shown, "ask", decision.reason, {
            inputDigest: digest,
            detail,
          });
          const details = actionApproval({
            primitive: "mcp",
            operation: "mcp.start",
            resource: shown,
            right: "execute",
            reason: decision.reason,
            grantScope: "starting this exact server once (bound to its digest)",
            bytes: null,
            sha256: null,
            preview:
              `MCP server: ${entry.name}\nconfigured in: ${entry.source}\nenvironment given: ${
                envNames.join(", ") || "(none)"
              }`,
            executable: program.executable,
            argv,
            cwd,
            envHash: null,
            digest,
            ceiling: decision.ceiling ?? null,
          });
          return Promise.resolve({ type: "ask", ask: { details, subject: what } });
        }
        this.#gate.spend([decision]);
        this.#record(pid, "mcp.start", shown, "allow", decision.reason, {
          inputDigest: digest,
          detail,
        });
        return Promise.resolve({ type: "done", value: undefined });
      },
      unasked: (asked) =>
        ask ? undefined : new McpError(
          "mcp_server_refused",
          `Cannot ${what} to list its tools: starting it needs a human's approval (${asked.details.reason}); allow its command with a shell rule, or call one of its tools to be asked`,
        ),
      exhausted: (ask, n) =>
        new McpError(
          "mcp_server_refused",
          `Cannot ${what}: it still needs approval after ${
            n - 1
          } approvals (${ask.details.reason})`,
        ),
    });
  }

  /** A session that failed: closed, so the next use starts the server again. */
  async lost(server: string, session: McpSession): Promise<void> {
    const state = this.#state.get(server);
    if (state?.session === session) state.session = undefined;
    await session.close().catch(() => {/* already gone */});
  }

  /** Stops every server this run started. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#disposed = true;
    for (const state of this.#state.values()) {
      await state.session?.close().catch(() => {/* already gone */});
    }
    await this.#launcher?.[Symbol.asyncDispose]();
  }
}
