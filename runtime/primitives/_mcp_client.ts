/**
 * The MCP client side: one connection per configured server, through the official SDK's
 * `Client` (loaded lazily, on first use) over a small line transport of our own. The transport
 * reads JSON-RPC lines from the server's stdout with a cap on a line's length, so a 100 MB result
 * ends the connection (`mcp_result_too_large`) instead of filling memory. The SDK never compiles
 * a server's schema: its validator is replaced by one that checks nothing (schemas are data;
 * results are bounded and handed on as untrusted text).
 *
 * A stdio server starts through {@link McpLauncher}: the real one ({@link walledLauncher}) starts
 * it as the shell provider starts a walled command — `setsid`, `setpriv`, `prlimit`, bubblewrap
 * with the seccomp filter — with no network, a private home, a fixed environment plus exactly the
 * variables the configuration names. It never starts one without the wall.
 *
 * @module
 */
import { join } from "node:path";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SYSTEM_PATH } from "../base/system_path.ts";
import {
  DEFAULT_RUN_LIMITS,
  DEFAULT_TOOLS,
  type HostTools,
  launchArgv,
  type RunLimits,
} from "../providers/shell.ts";
import { seccompFilter, type WallFiles } from "../providers/wall.ts";
import type { FilesystemProvider } from "../providers/filesystem.ts";
import { shieldMounts } from "./_shield.ts";
import { MCP_RESULT_MAX_BYTES, McpError } from "./_mcp_bounds.ts";

/** The longest JSON-RPC line read from a server (a result is cut far below this anyway). */
export const MCP_LINE_MAX_BYTES = 4 * MCP_RESULT_MAX_BYTES + 1024 * 1024;

/** A started server's pipes. */
export interface McpPipes {
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stdin: WritableStream<Uint8Array>;
  /** Settles when the process has exited. */
  readonly exited: Promise<unknown>;
  kill(): void;
}

/** What a stdio server is started with. */
export interface McpStart {
  readonly name: string;
  /** The resolved executable and its arguments. */
  readonly executable: string;
  readonly args: readonly string[];
  /** Absolute. */
  readonly cwd: string;
  /** Exactly the variables the configuration names (the launcher adds its fixed ones). */
  readonly env: Readonly<Record<string, string>>;
}

/** Starts stdio servers. */
export interface McpLauncher extends AsyncDisposable {
  start(spec: McpStart): Promise<McpPipes>;
}

/** The SDK's client module, loaded on first use (so `libos` startup does not pay for it). */
async function loadClient(): Promise<typeof import("@modelcontextprotocol/sdk/client/index.js")> {
  return await import("@modelcontextprotocol/sdk/client/index.js");
}

/**
 * A JSON-RPC line transport over a server's pipes, with a line cap. Written here rather than the
 * SDK's `StdioClientTransport` because that one spawns the program itself (outside the wall) and
 * buffers a line of any length.
 */
export class LineTransport implements Transport {
  readonly #pipes: McpPipes;
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #closed = false;
  /** Why the connection ended, when libos ended it. */
  failure: McpError | undefined;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;

  /** Wraps a started server's pipes. */
  constructor(pipes: McpPipes) {
    this.#pipes = pipes;
  }

  /** Starts reading the server's lines. */
  start(): Promise<void> {
    this.#writer = this.#pipes.stdin.getWriter();
    this.#read().catch((error: unknown) => this.#fail(error));
    return Promise.resolve();
  }

  async #read(): Promise<void> {
    const decoder = new TextDecoder();
    let pending: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of this.#pipes.stdout) {
      let start = 0;
      for (let i = 0; i < chunk.length; i++) {
        if (chunk[i] !== 0x0a) continue;
        pending.push(chunk.subarray(start, i));
        size += i - start;
        if (size <= MCP_LINE_MAX_BYTES) this.#line(decoder.decode(join_(pending, size)));
        pending = [];
        size = 0;
        start = i + 1;
      }
      if (start < chunk.length) {
        pending.push(chunk.slice(start));
        size += chunk.length - start;
      }
      if (size > MCP_LINE_MAX_BYTES) {
        this.failure = new McpError(
          "mcp_result_too_large",
          `The MCP server sent a message longer than ${MCP_LINE_MAX_BYTES} bytes; libos stopped reading it and ended the connection`,
        );
        await this.close();
        return;
      }
    }
    await this.close();
  }

  #line(text: string): void {
    if (text.trim() === "") return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch (error) {
      this.onerror?.(
        new McpError("mcp_protocol_error", "The MCP server sent a line that is not JSON", {
          cause: error,
        }),
      );
      return;
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      this.onerror?.(
        new McpError("mcp_protocol_error", "The MCP server sent a message that is not an object"),
      );
      return;
    }
    this.onmessage?.(message as JSONRPCMessage);
  }

  #fail(error: unknown): void {
    this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    this.close().catch(() => {/* closing after a failure: already reported */});
  }

  /** Sends one message as one line. */
  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed || !this.#writer) {
      throw new McpError("mcp_server_failed", "The MCP server's connection is closed");
    }
    await this.#writer.write(new TextEncoder().encode(`${JSON.stringify(message)}\n`));
  }

  /** Ends the connection and the process. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#writer?.close().catch(() => {/* the process may be gone */});
    } finally {
      this.#pipes.kill();
      this.onclose?.();
    }
  }
}

function join_(parts: readonly Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A tool as the server listed it (unchecked: the primitive checks it). */
export interface ListedTool {
  readonly name: unknown;
  readonly description?: unknown;
  readonly inputSchema?: unknown;
  readonly annotations?: unknown;
}

/** One live connection to a server. */
export interface McpSession {
  listTools(timeoutMs: number): Promise<ListedTool[]>;
  callTool(
    name: string,
    args: Record<string, unknown>,
    options: { readonly timeoutMs: number; readonly signal?: AbortSignal },
  ): Promise<unknown>;
  /** Whether the connection ended (the server exited, or libos ended it). */
  readonly closed: boolean;
  /** Why libos ended it, when it did. */
  readonly failure: McpError | undefined;
  close(): Promise<void>;
}

/** Connects an SDK client over `pipes`: the MCP handshake, bounded by `timeoutMs`. */
export async function connectSession(pipes: McpPipes, timeoutMs: number): Promise<McpSession> {
  return await connectTransport(new LineTransport(pipes), timeoutMs);
}

/** A transport that says why libos ended it, when it did. */
export interface FailingTransport extends Transport {
  readonly failure: McpError | undefined;
  close(): Promise<void>;
}

/** Connects an SDK client over any transport: the MCP handshake, bounded by `timeoutMs`. */
export async function connectTransport(
  transport: FailingTransport,
  timeoutMs: number,
): Promise<McpSession> {
  const { Client } = await loadClient();
  let closed = false;
  const client: Client = new Client(
    { name: "libos", version: "0.1.0" },
    {
      // Schemas are data: nothing the server sends is compiled.
      jsonSchemaValidator: {
        getValidator: () => (input: unknown) => ({
          valid: true,
          data: input,
          errorMessage: undefined,
        }),
      },
    } as ConstructorParameters<typeof Client>[1],
  );
  client.onclose = () => closed = true;
  // A server's malformed line is its problem; the pending request times out or fails.
  client.onerror = () => {};
  try {
    await client.connect(transport, { timeout: timeoutMs });
  } catch (error) {
    await transport.close();
    throw transport.failure ??
      new McpError(
        "mcp_server_failed",
        `The MCP server did not complete the handshake: ${message(error)}`,
        { cause: error },
      );
  }
  return {
    get closed() {
      return closed;
    },
    get failure() {
      return transport.failure;
    },
    async listTools(timeout) {
      const tools: ListedTool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 8; page++) {
        const listed = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout });
        tools.push(...(listed.tools as ListedTool[]));
        cursor = typeof listed.nextCursor === "string" ? listed.nextCursor : undefined;
        if (cursor === undefined) break;
      }
      return tools;
    },
    async callTool(name, args, options) {
      return await client.callTool({ name, arguments: args }, undefined, {
        timeout: options.timeoutMs,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    },
    async close() {
      await client.close().catch(() => {/* already closed */});
      await transport.close();
    },
  };
}

/** The message of anything thrown. */
export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What the walled launcher needs. */
export interface WalledLauncherOptions {
  readonly workspace: string;
  /** Whether the workspace is writable inside the wall (not in read-only and plan). */
  readonly writable: boolean;
  /** Whether the OS wall works here (the shell provider's probe). */
  readonly wallAvailable: () => Promise<boolean>;
  /** libos's own paths inside the workspace, covered (the shell wall's own list). */
  readonly hidden?: readonly string[];
  /** Where the shield looks for secret-bearing files and protected paths. */
  readonly filesystem: FilesystemProvider;
  /** The operator's toolchain directories (`--toolchain`), bound read-only as for commands. */
  readonly toolchains?: readonly string[];
  readonly tools?: HostTools;
  readonly limits?: RunLimits;
}

/**
 * Starts stdio servers inside the OS wall, as the shell provider starts a walled command.
 * @throws {McpError} `mcp_wall_unavailable` when the wall does not work here (nothing starts).
 */
export function walledLauncher(options: WalledLauncherOptions): McpLauncher {
  const tools = options.tools ?? DEFAULT_TOOLS;
  // A server is often a JavaScript runtime (node, deno), whose engine reserves a large virtual
  // cage at start: the address-space limit of a shell command would stop it from starting.
  const limits = options.limits ?? { ...DEFAULT_RUN_LIMITS, addressSpace: 2 ** 42 };
  const made: string[] = [];
  const children = new Set<Deno.ChildProcess>();
  let files: WallFiles | undefined;
  const wallFiles = (): WallFiles => {
    if (files) return files;
    const filter = seccompFilter();
    if (filter === undefined) {
      throw new McpError(
        "mcp_wall_unavailable",
        "The OS wall has no seccomp filter for this CPU; no MCP server can start",
      );
    }
    const dir = Deno.makeTempDirSync({ prefix: "libos-mcp-wall-" });
    made.push(dir);
    Deno.writeFileSync(join(dir, "seccomp.bpf"), filter, { mode: 0o600 });
    Deno.writeFileSync(join(dir, "empty"), new Uint8Array(), { mode: 0o444 });
    files = { seccomp: join(dir, "seccomp.bpf"), empty: join(dir, "empty") };
    return files;
  };
  return {
    async start(spec) {
      if (!(await options.wallAvailable())) {
        throw new McpError(
          "mcp_wall_unavailable",
          `Cannot start MCP server ${spec.name}: the OS wall (bubblewrap) does not work here, and a server never runs outside it`,
        );
      }
      // Always shielded: a long-lived server reads whatever it likes, whoever approved a call, so
      // every secret-bearing file is covered and .git is read-only (as under libos agent --yes).
      // The shield is found at start: a secret file made later is not covered.
      const shield = shieldMounts(options.filesystem, options.workspace);
      if (shield.incomplete !== null) {
        throw new McpError(
          "mcp_server_refused",
          `Cannot start MCP server ${spec.name}: the shield that covers the workspace's secret-bearing files cannot be made (${shield.incomplete})`,
        );
      }
      const hidden: string[] = [];
      const masked: string[] = [...shield.masked];
      for (const path of options.hidden ?? []) {
        try {
          (options.filesystem.stat(path).isDirectory ? hidden : masked).push(path);
        } catch (error) {
          if (!(error instanceof Deno.errors.NotFound)) {
            throw new McpError(
              "mcp_server_refused",
              `Cannot start MCP server ${spec.name}: libos's own ${path} inside the workspace cannot be looked at to be covered`,
              { cause: error },
            );
          }
        }
      }
      const home = Deno.makeTempDirSync({ prefix: `libos-mcp-${spec.name}-` });
      made.push(home);
      const env = {
        PATH: SYSTEM_PATH.join(":"),
        HOME: home,
        LANG: "C.UTF-8",
        TMPDIR: "/tmp",
        ...spec.env,
      };
      const argv = launchArgv(
        {
          executable: spec.executable,
          args: spec.args,
          cwd: spec.cwd,
          env,
          // The CPU limit of a long-lived server: a day of CPU.
          timeoutMs: 24 * 60 * 60 * 1000,
          maxOutputBytes: 0,
          wall: {
            workspace: options.workspace,
            writable: options.writable,
            home,
            network: false,
            ...(options.toolchains?.length ? { toolchains: options.toolchains } : {}),
            ...(hidden.length ? { hidden } : {}),
            ...(masked.length ? { masked } : {}),
            ...(shield.readOnly.length ? { readOnly: shield.readOnly } : {}),
          },
        },
        tools,
        limits,
        false,
        wallFiles(),
      );
      const child = new Deno.Command(tools.setsid, {
        args: argv,
        cwd: spec.cwd,
        clearEnv: true,
        env,
        stdin: "piped",
        stdout: "piped",
        stderr: "null",
      }).spawn();
      children.add(child);
      let exited = false;
      const status = child.status.finally(() => {
        exited = true;
        children.delete(child);
      });
      return {
        stdout: child.stdout,
        stdin: child.stdin,
        exited: status,
        kill() {
          // bwrap leads the wall's PID namespace: its death ends everything inside.
          if (exited) return;
          try {
            child.kill("SIGKILL");
          } catch (error) {
            if (!(error instanceof TypeError)) throw error;
          }
        },
      };
    },
    async [Symbol.asyncDispose]() {
      for (const child of children) {
        try {
          child.kill("SIGKILL");
        } catch (error) {
          if (!(error instanceof TypeError)) throw error;
        }
        await child.status.catch(() => {});
      }
      for (const dir of made.splice(0)) await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
