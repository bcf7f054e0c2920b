/**
 * A Streamable HTTP MCP server on 127.0.0.1 for tests: the SDK's own `McpServer` with one tool,
 * `echo` (answers "pong"), served by its web-standard transport. `intercept` may answer a request
 * itself (a redirect, a huge body) instead of the server; every request is logged.
 */

/** A running fixture server. */
export interface McpHttpFixture extends AsyncDisposable {
  readonly port: number;
  /** Requests received, as `log` wrote them (default: the method). */
  readonly requests: string[];
  /** Tool executions. */
  readonly calls: string[];
}

/** Starts the fixture server (stopped when disposed). */
export async function serveMcpHttp(
  options: {
    readonly log?: (request: Request) => string;
    readonly intercept?: (request: Request) => Response | undefined;
  } = {},
): Promise<McpHttpFixture> {
  const { McpServer } = await import("@modelcontextprotocol/sdk/server/mcp.js");
  const { WebStandardStreamableHTTPServerTransport } = await import(
    "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
  );
  const requests: string[] = [];
  const calls: string[] = [];
  const mcp = new McpServer({ name: "web-fixture", version: "1.0.0" });
  mcp.registerTool("echo", { description: "Answers pong." }, () => {
    calls.push("echo");
    return { content: [{ type: "text", text: "pong" }] };
  });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => crypto.randomUUID(),
    enableJsonResponse: true,
  });
  await mcp.connect(transport);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    requests.push(options.log?.(request) ?? request.method);
    return options.intercept?.(request) ?? transport.handleRequest(request);
  });
  return {
    port: server.addr.port,
    requests,
    calls,
    async [Symbol.asyncDispose]() {
      await mcp.close().catch(() => {});
      await server.shutdown();
    },
  };
}
