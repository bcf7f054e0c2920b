/**
 * Streamable HTTP MCP servers: the official SDK's `StreamableHTTPClientTransport` (loaded lazily)
 * whose every HTTP request goes through the network primitive (`net.fetch`): URL checks, the
 * `net:` decision, one DNS resolution with every address checked (loopback, private and metadata
 * addresses refused unless the exact endpoint is granted), a connection pinned to the checked
 * address, the audit record. On top of that, this file:
 *
 * - re-checks before each request that the process still holds the grant the session started
 *   with ({@link HttpSessionOptions.permitted}); a revoked grant ends the session, and no human is
 *   ever asked per request;
 * - refuses every redirect (`maxRedirects: 0`): an MCP endpoint has one address;
 * - reads at most {@link MCP_LINE_MAX_BYTES} of a response: a longer one ends the session with
 *   `mcp_result_too_large`;
 * - answers the transport's standing `GET` (server-initiated messages) with 405 without sending
 *   it: libos holds no open stream to a server, so a server's own notifications are not received.
 *
 * The configured `headers` are sent with every request; their values never reach a record (the
 * network primitive records the URL, method, address and status, never header values).
 *
 * @module
 */
import type { NetFetchRequest, NetResponse } from "./net.ts";
import type { NetMethod } from "../providers/net.ts";
import { LibosError } from "../base/errors.ts";
import { MCP_RESULT_MAX_BYTES, McpError } from "./_mcp_bounds.ts";
import {
  connectTransport,
  type FailingTransport,
  MCP_LINE_MAX_BYTES,
  type McpSession,
  message,
} from "./_mcp_client.ts";

/** The network primitive's `fetch`, as the HTTP transport uses it. */
export interface McpNet {
  fetch(
    pid: string,
    request: NetFetchRequest,
    options?: { readonly signal?: AbortSignal; readonly standing?: string },
  ): Promise<NetResponse>;
}

/** What an HTTP session needs. */
export interface HttpSessionOptions {
  readonly server: string;
  readonly url: URL;
  /** The configured headers (sent on every request, never recorded). */
  readonly headers: Readonly<Record<string, string>>;
  /** The process whose `net:` grant the requests use. */
  readonly pid: string;
  readonly net: McpNet;
  /**
   * Throws when the grant the session started with no longer holds (checked per request);
   * returns the reason that allows (the request's standing decision in the network primitive).
   */
  readonly permitted: () => string;
  /** The handshake's bound. */
  readonly startTimeoutMs: number;
  /** One HTTP request's bound (the SDK's own per-request timeouts usually fire first). */
  readonly requestTimeoutMs: number;
}

/** The SDK's HTTP transport module, loaded on first use. */
async function loadHttp(): Promise<
  typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js")
> {
  return await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
}

/** Headers of a fetch call as a plain lower-case record. */
function headerRecord(init: HeadersInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(init).forEach((value, name) => out[name.toLowerCase()] = value);
  return out;
}

/** Connects to a Streamable HTTP server through the network primitive (see the module). */
export async function connectHttpSession(options: HttpSessionOptions): Promise<McpSession> {
  const { StreamableHTTPClientTransport } = await loadHttp();
  let failure: McpError | undefined;
  const fail = (error: McpError): McpError => {
    failure ??= error;
    return error;
  };
  const where = `MCP server ${options.server}`;
  const fetchFn = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (failure) throw failure;
    const url = input instanceof Request ? input.url : String(input);
    const method = (init?.method ?? "GET").toUpperCase();
    if (method === "GET") {
      // The standing stream of server-initiated messages: not opened (see the module).
      return new Response(null, { status: 405 });
    }
    if (method !== "POST" && method !== "DELETE") {
      throw fail(new McpError("mcp_protocol_error", `${where}: libos does not send ${method}`));
    }
    let standing: string;
    try {
      standing = options.permitted();
    } catch (error) {
      throw fail(
        error instanceof McpError ? error : new McpError(
          "mcp_server_refused",
          `${where}: its network grant no longer holds (${message(error)}); the session ended`,
          { cause: error },
        ),
      );
    }
    const body = init?.body;
    if (body !== undefined && body !== null && typeof body !== "string") {
      throw fail(new McpError("mcp_protocol_error", `${where}: a request body that is not text`));
    }
    let response: NetResponse;
    try {
      response = await options.net.fetch(options.pid, {
        url,
        method: method as NetMethod,
        headers: headerRecord(init?.headers),
        ...(typeof body === "string" ? { body } : {}),
        maxBytes: MCP_LINE_MAX_BYTES,
        maxRedirects: 0,
        timeoutMs: options.requestTimeoutMs,
      }, { standing, ...(init?.signal ? { signal: init.signal } : {}) });
    } catch (error) {
      if (error instanceof LibosError && error.code === "redirect_limit") {
        throw fail(
          new McpError(
            "mcp_server_refused",
            `${where} answered with a redirect; libos follows no redirect of an MCP server (configure the final URL)`,
            { cause: error },
          ),
        );
      }
      if (error instanceof LibosError && error.code !== "aborted" && error.code !== "timeout") {
        throw fail(
          new McpError("mcp_server_refused", `${where}: ${error.message}`, { cause: error }),
        );
      }
      throw error;
    }
    if (response.truncated) {
      throw fail(
        new McpError(
          "mcp_result_too_large",
          `${where} sent a response longer than ${MCP_LINE_MAX_BYTES} bytes (results are cut at ${MCP_RESULT_MAX_BYTES}); libos stopped reading it and ended the session`,
        ),
      );
    }
    const empty = response.status === 204 || response.status === 205 || response.status === 304;
    return new Response(empty ? null : response.body, {
      status: response.status,
      headers: response.headers,
    });
  };
  const sdk = new StreamableHTTPClientTransport(options.url, {
    fetch: fetchFn,
    requestInit: { headers: { ...options.headers } },
    // A failed request is not retried by the transport (a call is never silently repeated).
    reconnectionOptions: {
      maxReconnectionDelay: 1000,
      initialReconnectionDelay: 1000,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 0,
    },
  });
  Object.defineProperty(sdk, "failure", { get: () => failure });
  const transport = sdk as typeof sdk & FailingTransport;
  return await connectTransport(transport, options.startTimeoutMs);
}
