/**
 * A fake MCP server for tests that need no process: an in-memory {@link McpLauncher} whose
 * "server" answers the MCP handshake, lists one tool (`echo`) and echoes calls, logging each call
 * it receives. The real launcher (inside the OS wall) is tested in tests/mcp_client_test.ts.
 */
import type { McpLauncher } from "../runtime/primitives/mcp.ts";

/** An in-memory launcher; `calls` collects each `tools/call` the fake server received. */
export function fakeMcpLauncher(calls: string[]): () => McpLauncher {
  return () => ({
    start() {
      const toServer = new TransformStream<Uint8Array, Uint8Array>();
      const fromServer = new TransformStream<Uint8Array, Uint8Array>();
      const writer = fromServer.writable.getWriter();
      const send = (message: unknown) =>
        writer.write(new TextEncoder().encode(`${JSON.stringify(message)}\n`));
      let killed = false;
      const exited = (async () => {
        const decoder = new TextDecoder();
        let buffer = "";
        for await (const chunk of toServer.readable) {
          buffer += decoder.decode(chunk, { stream: true });
          for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
            const message = JSON.parse(buffer.slice(0, i));
            buffer = buffer.slice(i + 1);
            if (message.method === "initialize") {
              await send({
                jsonrpc: "2.0",
                id: message.id,
                result: {
                  protocolVersion: message.params.protocolVersion,
                  capabilities: { tools: {} },
                  serverInfo: { name: "fake", version: "1" },
                },
              });
            } else if (message.method === "tools/list") {
              await send({
                jsonrpc: "2.0",
                id: message.id,
                result: {
                  tools: [{
                    name: "echo",
                    description: "Echoes text.",
                    inputSchema: { type: "object", properties: { text: { type: "string" } } },
                  }],
                },
              });
            } else if (message.method === "tools/call") {
              calls.push(`${message.params.name} ${message.params.arguments?.text ?? ""}`);
              await send({
                jsonrpc: "2.0",
                id: message.id,
                result: {
                  content: [{ type: "text", text: String(message.params.arguments?.text) }],
                },
              });
            }
          }
        }
      })().finally(() => writer.close().catch(() => {}));
      return Promise.resolve({
        stdout: fromServer.readable,
        stdin: toServer.writable,
        exited,
        kill() {
          if (killed) return;
          killed = true;
          writer.close().catch(() => {});
        },
      });
    },
    [Symbol.asyncDispose]: () => Promise.resolve(),
  });
}
