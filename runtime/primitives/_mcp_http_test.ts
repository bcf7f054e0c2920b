// The HTTP MCP transport's per-request grant check (the runtime-level tests are in
// tests/mcp_http_test.ts): a session whose grant stops holding sends nothing more.
import assert from "node:assert/strict";
import { testRuntime } from "../../testing.ts";
import { connectHttpSession } from "./_mcp_http.ts";
import { serveMcpHttp } from "../../tests/mcp_http_fixture.ts";

Deno.test("MCP HTTP transport: each request re-checks the session's grant; once it fails the session ends and nothing more is sent", async () => {
  await using server = await serveMcpHttp();
  const { requests, calls } = server;
  const port = server.port;
  await using t = await testRuntime({ prefix: "libos-mcp-http-unit-", human: "none" });
  const pid = t.spawn();
  t.runtime.authority.capabilities.grant({
    subject: pid,
    resource: { type: "net", key: `127.0.0.1:${port}`, scope: "exact" },
    rights: ["connect"],
    effect: "allow",
    issuer: "operator",
  });
  let held = true;
  const session = await connectHttpSession({
    server: "web",
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    headers: {},
    pid,
    net: t.runtime.primitives.net,
    permitted: () => {
      if (!held) throw new Error("revoked");
      return "test";
    },
    startTimeoutMs: 5000,
    requestTimeoutMs: 5000,
  });
  try {
    assert.equal((await session.listTools(5000)).length, 1);
    const before = requests.length;
    held = false;
    await assert.rejects(() => session.callTool("echo", {}, { timeoutMs: 5000 }));
    assert.equal(session.failure?.code, "mcp_server_refused");
    assert.equal(requests.length, before, "nothing was sent once the grant failed");
    assert.deepEqual(calls, []);
  } finally {
    await session.close();
  }
});
