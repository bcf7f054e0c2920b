/**
 * A plain MCP server over stdio with one trivial tool (`now`: the time as text), built with the
 * SDK and nothing else: the stdio row of `mcp_serve_bench.ts` compares libos's governed server
 * against it, so the transport's cost and the gate's are told apart.
 *
 * @module
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

/** An SDK server whose one tool answers the time, ungoverned. */
export function plainServer(): Server {
  const server = new Server({ name: "plain", version: "1.0.0" }, {
    capabilities: { tools: {} },
  });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [{
      name: "now",
      description: "The current time",
      inputSchema: { type: "object", properties: {} },
    }],
  }));
  server.setRequestHandler(CallToolRequestSchema, () => ({
    content: [{ type: "text", text: JSON.stringify({ ok: true, value: { now: Date.now() } }) }],
  }));
  return server;
}

if (import.meta.main) {
  await plainServer().connect(new StdioServerTransport());
}
