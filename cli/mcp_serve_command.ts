/**
 * `libos mcp serve`: libos as a governed MCP server (issue 25). Another agent or an editor — any
 * MCP client — speaks the Model Context Protocol over this command's standard input and output
 * and is handed libos's governed tools: files (read, write, edit, list, glob, grep), shell
 * commands, `fetch_url`, the clock, and the JIT tools the session registers.
 *
 * One client session is one libos process, spawned when the client has said who it is (goal
 * "MCP session from <client>", image `coding-agent:v0` with a tool table of exactly the exposed
 * tools), under the mode, shell policy, run denies and policy files of the command line. Every
 * `tools/call` goes through `runtime.tools.invoke` — the broker, then the primitive's `decide()`,
 * the action ledger and the audit log, as for a model's call: there is no second door.
 *
 * An action the policy asks about is parked as a durable human request (the `queue` human, the
 * default), answered where requests always are: `libos human approve|reject ID` from another
 * terminal. The call waits for that decision (up to `--approval-wait` seconds, default 55, under
 * the SDK client's 60-second request timeout; MCP progress notifications are sent meanwhile when
 * the client asked for them), then runs the approved action exactly once (`awaitResolution`,
 * which marks it dispatched before it runs). A wait that times out, or a call the client
 * cancels, withdraws the request: nothing runs, and calling again asks again. With
 * `--approval-wait 0` the call returns at once with the request's id, left pending: approving it
 * mints a one-shot grant for that exact action, which the same call made again consumes. With
 * `--human none` an ask is refused at once. Calls of a session run one at a time, in order.
 *
 * A refused or failed call is an MCP tool result with `isError: true` whose text is the typed
 * result libos gives a model (`{"ok":false,"error":{"code","message"}}`). The session's process
 * exits when the client disconnects (standard input closes); start and stop are audited
 * (`mcp.start`, `mcp.stop`). Standard output carries only the protocol; diagnostics go to
 * standard error. The SDK is loaded only by this command.
 *
 * @module
 */
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type {
  CallToolRequest,
  ServerNotification,
  ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import process from "node:process";
import { JitSandbox, JitValidator, lifecycleFor } from "../jit/mod.ts";
import { type ModeName, parseMode } from "../runtime/authority/modes.ts";
import { sha256Hex } from "../runtime/base/canonical_json.ts";
import { errorInfo, UsageError } from "../runtime/base/errors.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { McpSession } from "./_mcp_session.ts";
import { keepPolicyText } from "./_governance_store.ts";
import {
  type CliIo,
  type Command,
  integerOption,
  listOption,
  type ParsedArgs,
  stringOption,
} from "./_options.ts";
import { EXIT_OK, field } from "./_output.ts";
import { runLock } from "./_run_lock.ts";
import { DEFAULT_MODE, DEFAULT_SHELL_POLICY } from "./_run_governance.ts";
import { loadedPolicyOf, shellPolicyOf, toolchainsOf } from "./_run_options.ts";
import type { PolicyText } from "../runtime/policy/policy_files.ts";
import type { PolicyRules } from "../runtime/policy/policy_rules.ts";
import type { ShellPolicyLevel } from "../runtime/policy/shell_policy.ts";
import { LIBOS_VERSION } from "./version.ts";

/** The tools a session's process is given: the governed primitives a client may use. */
export const MCP_SESSION_TOOLS: readonly string[] = Object.freeze([
  "read_text_file",
  "write_text_file",
  "edit_file",
  "read_directory",
  "write_directory",
  "glob",
  "grep",
  "run_shell_command",
  "fetch_url",
  "get_current_time",
  "propose_jit_tool",
  "validate_jit_tool",
  "register_jit_tool",
]);

/** The image a session's process runs under (its tool table is {@link MCP_SESSION_TOOLS}). */
const SESSION_IMAGE = "coding-agent:v0";
/** How long a call waits for a human's decision when `--approval-wait` is not given (s). */
const DEFAULT_APPROVAL_WAIT_S = 55;
/** A session's wall time and tool calls: a client session may be a long one. */
const SESSION_BUDGETS = { maxWallTimeMs: 24 * 60 * 60 * 1000, maxToolCalls: 1_000_000 };
/** The longest client name kept in the process's goal. */
const CLIENT_NAME_MAX = 128;

/** What the command line says. */
interface ServeFlags {
  readonly mode: ModeName;
  readonly human: "queue" | "none";
  /** Milliseconds a call waits for a human (0: it returns at once with the request). */
  readonly waitMs: number;
}

/**
 * The serve command line.
 * @throws {UsageError} for a mode or human it does not take.
 */
function serveFlags(parsed: ParsedArgs): ServeFlags {
  const modeText = stringOption(parsed, "mode");
  let mode: ModeName = DEFAULT_MODE;
  if (modeText !== undefined) {
    try {
      mode = parseMode(modeText);
    } catch (error) {
      throw new UsageError(`--mode: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
  }
  const human = stringOption(parsed, "human") ?? "queue";
  if (human !== "queue" && human !== "none") {
    throw new UsageError(
      `--human must be queue (a call waits for "libos human approve") or none (asks are refused), not ${
        JSON.stringify(human)
      }: an MCP server has no terminal to prompt on`,
    );
  }
  const wait = integerOption(parsed, "approval-wait", 0, 24 * 60 * 60) ?? DEFAULT_APPROVAL_WAIT_S;
  return { mode, human, waitMs: wait * 1000 };
}

/** A client's name, bounded and single-line, for the process's goal. */
function clientLabel(info: { name?: unknown; version?: unknown } | undefined): string {
  const name = typeof info?.name === "string" && info.name.trim() !== ""
    ? info.name
    : "an unnamed client";
  const version = typeof info?.version === "string" ? ` ${info.version}` : "";
  // deno-lint-ignore no-control-regex -- control characters are what is being removed
  return `${name}${version}`.replace(/[\u0000-\u001f\u007f-\u009f]/g, " ").slice(
    0,
    CLIENT_NAME_MAX,
  );
}

/** What the session runs under, read before the database is opened. */
interface SessionSetup {
  readonly rules: PolicyRules;
  readonly shellPolicy: ShellPolicyLevel;
  readonly denies: readonly string[];
  readonly policies: readonly PolicyText[];
  readonly toolchains: readonly string[];
}

/**
 * The session's governance from the flags (the user's policy file and toolchains too, unless
 * `--no-user-config`).
 * @throws {ValidationError} / {UsageError} for a bad policy file, level or toolchain.
 */
function sessionSetup(parsed: ParsedArgs, io: CliIo): SessionSetup {
  const loaded = loadedPolicyOf(parsed, io);
  return {
    rules: loaded.rules,
    shellPolicy: shellPolicyOf(parsed) ?? DEFAULT_SHELL_POLICY,
    denies: [...new Set(listOption(parsed, "deny"))],
    policies: loaded.texts,
    toolchains: toolchainsOf(parsed, io),
  };
}

async function serve(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const flags = serveFlags(parsed);
  // Everything that can be refused is refused before the database is written.
  const setup = sessionSetup(parsed, io);
  const workspace = stringOption(parsed, "workspace");
  const db = stringOption(parsed, "db");
  await using runtime = await createRuntime({
    ...(workspace === undefined ? {} : { workspace }),
    ...(db === undefined ? {} : { db }),
    env: io.env,
    cwd: io.cwd,
    mode: flags.mode,
    ...(setup.denies.length === 0 ? {} : { denies: setup.denies }),
    rules: setup.rules,
    shellPolicy: setup.shellPolicy,
    // Asks park durably; the call waits for a decision made with `libos human`.
    human: flags.human,
    ...(setup.toolchains.length === 0 ? {} : { toolchains: setup.toolchains }),
  });
  await using sandbox = new JitSandbox();
  await using validator = new JitValidator();
  lifecycleFor(runtime, { sandbox, validator });
  const sdk = await loadSdk();
  const server = new sdk.Server(
    { name: "libos", version: LIBOS_VERSION },
    {
      capabilities: { tools: { listChanged: true } },
      instructions:
        "Agent libOS governs every call: a refusal is an answer (read its code and message); an action that needs a human waits for one (libos human approve).",
    },
  );
  using held = new DisposableStack();
  let session: McpSession | undefined;
  const ended = Promise.withResolvers<string>();
  const open = (): McpSession => {
    if (session) return session;
    const client = clientLabel(server.getClientVersion());
    const root = runtime.processes.spawn({
      goal: `MCP session from ${client}`,
      image: SESSION_IMAGE,
      tools: [...MCP_SESSION_TOOLS],
      budgets: SESSION_BUDGETS,
      // Never runnable: no scheduler (libos run, another launcher) may drive it with a model.
      start: false,
    });
    held.use(runLock(runtime, root.pid));
    runtime.audit.append({
      actor: "operator",
      pid: root.pid,
      action: "mcp.start",
      resource: `process:${root.pid}`,
      decision: "none",
      authority: "operator",
      detail: {
        client,
        image: root.image,
        mode: flags.mode,
        human: flags.human,
        approval_wait_ms: flags.waitMs,
        workspace: runtime.location.workspace,
        shell_policy: setup.shellPolicy,
        denies: [...setup.denies],
        // Each policy file's path and digest, its text kept as an object (as a launch keeps it).
        policies: setup.policies.map((p) => {
          const sha256 = sha256Hex(p.text);
          const copy = keepPolicyText(runtime, { path: p.path, text: p.text, sha256, copy: null });
          return { path: p.path, sha256, copy };
        }),
        toolchains: [...setup.toolchains],
      },
    });
    runtime.store.flush();
    session = new McpSession(runtime, root.pid, flags, io);
    io.stderr(
      `libos mcp serve: session ${root.pid} for ${
        field(client)
      } (mode ${flags.mode}, shell ${setup.shellPolicy}, human ${flags.human}); database ${
        field(runtime.location.path, 4096)
      }\n`,
    );
    return session;
  };
  server.oninitialized = () => {
    try {
      open();
    } catch (error) {
      io.stderr(`libos mcp serve: cannot start the session: ${field(errorInfo(error).message)}\n`);
      ended.resolve("the session could not start");
    }
  };
  server.setRequestHandler(sdk.ListToolsRequestSchema, () => ({ tools: open().tools() }));
  server.setRequestHandler(sdk.CallToolRequestSchema, async (
    request: CallToolRequest,
    extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  ) => {
    const s = open();
    const token = request.params._meta?.progressToken;
    const result = await s.call(request.params.name, request.params.arguments, {
      id: `mcp:${String(extra.requestId).slice(0, 100)}`,
      signal: extra.signal,
      progress: {
        token,
        send: (params) =>
          token === undefined ? Promise.resolve() : extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, ...params },
          }),
      },
    });
    // A tool registered in this call is in the table now: the client lists again.
    if (request.params.name === "register_jit_tool" && !result.isError) {
      await server.sendToolListChanged().catch(() => undefined);
    }
    return result;
  });
  const transport = new sdk.StdioServerTransport();
  transport.onclose = () => ended.resolve("the client disconnected");
  server.onerror = (error: Error) => io.stderr(`libos mcp serve: ${field(error.message, 1000)}\n`);
  // The client closing its end of the pipe is the end of the session.
  const onEnd = () => void transport.close().catch(() => undefined);
  process.stdin.once("end", onEnd);
  process.stdin.once("close", onEnd);
  // Ctrl-C where the server was started by hand: the session ends as a disconnect does.
  using _interrupts = io.onInterrupt?.(() => {
    ended.resolve("interrupted (Ctrl-C)");
    return "handled";
  }) ?? { [Symbol.dispose]() {} };
  await server.connect(transport);
  const why = await ended.promise;
  process.stdin.off("end", onEnd);
  process.stdin.off("close", onEnd);
  if (session) {
    const pid = session.pid;
    session.close(`MCP session ended: ${why}`);
    runtime.audit.append({
      actor: "operator",
      pid,
      action: "mcp.stop",
      resource: `process:${pid}`,
      decision: "none",
      authority: "operator",
      detail: { reason: why },
    });
    runtime.store.flush();
    io.stderr(`libos mcp serve: session ${pid} ended (${why})\n`);
  }
  await server.close().catch(() => undefined);
  return EXIT_OK;
}

/** The MCP SDK's server half, loaded only when a server is started. */
async function loadSdk() {
  const [{ Server }, { StdioServerTransport }, types] = await Promise.all([
    import("@modelcontextprotocol/sdk/server/index.js"),
    import("@modelcontextprotocol/sdk/server/stdio.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]);
  return {
    Server,
    StdioServerTransport,
    ListToolsRequestSchema: types.ListToolsRequestSchema,
    CallToolRequestSchema: types.CallToolRequestSchema,
  };
}

/** The `mcp serve` command. */
export const mcpServeCommand: Command = {
  name: "mcp serve",
  summary: "serve libos's governed tools to an MCP client over stdio (one session, audited)",
  usage: `Usage: libos mcp serve [--workspace DIR] [--db FILE]
         [--mode read-only|plan|workspace-write|full-access] [--shell-policy LEVEL]
         [--policy FILE]... [--trust-workspace-policy] [--no-user-config] [--deny RULE]...
         [--toolchain DIR]... [--human queue|none] [--approval-wait SECONDS]

Speaks the Model Context Protocol on standard input and output (nothing else is written there;
diagnostics go to standard error), for an MCP client — another agent, an editor — that starts it:

  {"mcpServers": {"libos": {"command": "libos",
                            "args": ["mcp", "serve", "--mode", "workspace-write"]}}}

The client's session is one libos process (goal "MCP session from <client>"), spawned in the
workspace under the mode (default workspace-write), shell policy, --deny rules and policy files
given here. Its tools are ${MCP_SESSION_TOOLS.join(", ")},
and the JIT tools it registers. Each call is decided, ledgered and audited as a model's call is.

An action the policy asks about waits for a human (--human queue, the default): decide it from
another terminal with "libos human show ID" and "libos human approve ID" (or reject). The call
waits up to --approval-wait seconds (default ${DEFAULT_APPROVAL_WAIT_S}; MCP progress
notifications meanwhile), then runs the approved action exactly once; a wait that times out or is
cancelled withdraws the request, and nothing runs. --approval-wait 0 returns at once with the
request's id: approve it, then make the same call again. --human none refuses every ask.

A refused call is an error result ({"ok":false,"error":{"code","message"}}). The process exits
when the client disconnects; the session's start and end are audited (mcp.start, mcp.stop).`,
  options: [
    "mode",
    "shell-policy",
    "policy",
    "no-user-config",
    "trust-workspace-policy",
    "deny",
    "toolchain",
    "human",
    "approval-wait",
  ],
  run: serve,
};
