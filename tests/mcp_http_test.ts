/**
 * Streamable HTTP MCP servers (issue 25) through the network primitive: a local server made of
 * the official SDK's `McpServer` and its web-standard Streamable HTTP transport on 127.0.0.1
 * (stateful: its `mcp-session-id` must come back), reached only with a `net:` grant of its exact
 * endpoint — the one way a loopback address is reachable (see runtime/primitives/net.ts). Each
 * test counts the requests the server received.
 */
import assert from "node:assert/strict";
import { testRuntime } from "../testing.ts";
import { parsePolicy, PolicyRules } from "../runtime/policy/policy_rules.ts";
import { parseMcpConfig } from "../runtime/primitives/mcp.ts";
import { type McpHttpFixture, serveMcpHttp } from "./mcp_http_fixture.ts";

type Mode = "normal" | "big" | "redirect";

/** The fixture server, answering as `mode` says: normally, with a redirect, or a 100 MB body. */
function serve(mode: Mode): Promise<McpHttpFixture> {
  return serveMcpHttp({
    // Requests as `METHOD authorization-header`.
    log: (request) => `${request.method} ${request.headers.get("authorization") ?? "-"}`,
    intercept: () => {
      if (mode === "redirect") {
        return new Response(null, {
          status: 307,
          headers: { location: "http://other.example/mcp" },
        });
      }
      if (mode === "big") {
        // 100 MB, streamed: the client must stop reading long before the end.
        const chunk = new TextEncoder().encode("x".repeat(1024 * 1024));
        let sent = 0;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent++ >= 100) controller.close();
            else controller.enqueue(chunk);
          },
        });
        return new Response(body, { headers: { "content-type": "application/json" } });
      }
      return undefined;
    },
  });
}

const ALLOW = new PolicyRules(
  parsePolicy(`{"version": 1, "rules": [{"effect": "allow", "tool": "mcp__web__*"}]}`, "/p.jsonc"),
);

async function runtimeFor(port: number, options: { host?: string; type?: string } = {}) {
  const host = options.host ?? "127.0.0.1";
  const t = await testRuntime({
    prefix: "libos-mcp-http-",
    human: "none",
    rules: ALLOW,
    mcpServers: parseMcpConfig(
      JSON.stringify({
        mcpServers: {
          web: {
            ...(options.type ? { type: options.type } : {}),
            url: `http://${host}:${port}/mcp`,
            headers: { Authorization: "Bearer s3cret-token-value" },
          },
        },
      }),
      "/mcp.json",
    ),
    mcpLimits: { callTimeoutMs: 5000, startTimeoutMs: 5000 },
  });
  const pid = t.spawn();
  const grant = () =>
    t.runtime.authority.capabilities.grant({
      subject: pid,
      resource: { type: "net", key: `${host}:${port}`, scope: "exact" },
      rights: ["connect"],
      effect: "allow",
      issuer: "operator",
    }).id;
  const deny = (key: string) =>
    t.runtime.authority.capabilities.grant({
      subject: pid,
      resource: { type: "net", key, scope: "exact" },
      rights: ["connect"],
      effect: "deny",
      issuer: "operator",
    }).id;
  return { ...t, pid, grant, deny };
}

Deno.test("MCP HTTP: without a net: grant the start is refused (naming --allow-host) and the server receives nothing", async () => {
  await using s = await serve("normal");
  await using t = await runtimeFor(s.port);
  const problems = await t.runtime.tools.loadMcp(t.pid);
  assert.deepEqual(problems.map((p) => p.code), ["capability_denied"]);
  const refused = await t.runtime.primitives.mcp.call(t.pid, {
    server: "web",
    tool: "echo",
    arguments: {},
  }).then(() => undefined, (e: unknown) => e);
  assert.ok(refused instanceof Error && "code" in refused);
  assert.equal(refused.code, "capability_denied");
  assert.match(refused.message, new RegExp(`--allow-host 127\\.0\\.0\\.1:${s.port}`));
  assert.deepEqual(s.requests, [], "nothing reached the server");
  assert.ok(
    t.runtime.audit.query({}).some((r) =>
      r.action === "mcp.start" && r.decision === "deny" &&
      r.resource === `net:127.0.0.1:${s.port}`
    ),
  );
  assert.equal(t.runtime.ledger.list(t.pid).length, 0);
});

Deno.test("MCP HTTP: with a grant of the endpoint, a call a rule allows runs once, is ledgered and audited; the config's header is sent and never recorded", async () => {
  await using s = await serve("normal");
  await using t = await runtimeFor(s.port);
  t.grant();
  const problems = await t.runtime.tools.loadMcp(t.pid);
  assert.deepEqual(problems, []);
  assert.ok(t.runtime.tools.visible(t.pid).some((x) => x.name === "mcp__web__echo"));
  const result = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__web__echo", arguments: {} },
    new AbortController().signal,
  );
  assert.ok(result.ok, JSON.stringify(result));
  assert.match(JSON.stringify(result.value), /pong/);
  assert.deepEqual(s.calls, ["echo"], "executed exactly once");
  assert.ok(s.requests.length > 0);
  assert.ok(s.requests.every((r) => r === "POST Bearer s3cret-token-value"), s.requests.join());
  const calls = t.runtime.ledger.list(t.pid).filter((a) => a.kind === "mcp.call");
  assert.equal(calls.length, 1);
  assert.equal(calls[0]!.status, "done");
  const audit = t.runtime.audit.query({});
  assert.ok(audit.some((r) => r.action === "mcp.start" && r.decision === "allow"));
  assert.ok(audit.some((r) => r.action === "mcp.call" && r.decision === "allow"));
  assert.ok(audit.some((r) => r.action === "net.fetch" && r.decision === "allow"));
  const records = JSON.stringify([audit, t.runtime.ledger.list(t.pid)]);
  assert.ok(!records.includes("s3cret-token-value"), "a header value is never recorded");
});

Deno.test("MCP HTTP: a grant revoked after the start refuses the live session's next use; nothing more is sent", async () => {
  await using s = await serve("normal");
  await using t = await runtimeFor(s.port);
  const id = t.grant();
  assert.deepEqual(await t.runtime.tools.loadMcp(t.pid), []);
  const before = s.requests.length;
  t.runtime.authority.capabilities.revoke(id);
  const result = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__web__echo", arguments: {} },
    new AbortController().signal,
  );
  assert.ok(!result.ok);
  assert.equal(result.error.code, "capability_denied", JSON.stringify(result.error));
  assert.match(result.error.message, /--allow-host 127\.0\.0\.1:/);
  assert.equal(s.requests.length, before, "nothing was sent after the revocation");
  assert.deepEqual(s.calls, []);
});

Deno.test("MCP HTTP: a server that answers a 100 MB body is bounded (mcp_result_too_large)", async () => {
  await using s = await serve("big");
  await using t = await runtimeFor(s.port);
  t.grant();
  const problems = await t.runtime.tools.loadMcp(t.pid);
  assert.deepEqual(problems.map((p) => p.code), ["mcp_result_too_large"]);
  assert.equal(s.requests.length, 1, "the handshake's first request, and no retry");
});

Deno.test("MCP HTTP: a redirect to another host is refused and not followed", async () => {
  await using s = await serve("redirect");
  await using t = await runtimeFor(s.port);
  t.grant();
  const problems = await t.runtime.tools.loadMcp(t.pid);
  assert.deepEqual(problems.map((p) => p.code), ["mcp_server_refused"]);
  assert.match(problems[0]!.message, /redirect/);
  assert.equal(s.requests.length, 1);
  assert.ok(
    !t.runtime.audit.query({}).some((r) => r.resource === "net:other.example"),
    "the redirect's host was never decided or resolved",
  );
});

Deno.test("MCP HTTP: a server named by host name (localhost) is reached with a grant of that endpoint, pinned to its checked address", async () => {
  await using s = await serve("normal");
  await using t = await runtimeFor(s.port, { host: "localhost" });
  t.grant();
  assert.deepEqual(await t.runtime.tools.loadMcp(t.pid), []);
  const result = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__web__echo", arguments: {} },
    new AbortController().signal,
  );
  assert.ok(result.ok, JSON.stringify(result));
  assert.deepEqual(s.calls, ["echo"]);
});

Deno.test("MCP HTTP: a deny on the host holds however the endpoint is granted; the server receives nothing", async () => {
  await using s = await serve("normal");
  await using t = await runtimeFor(s.port);
  t.grant();
  t.deny("127.0.0.1");
  const problems = await t.runtime.tools.loadMcp(t.pid);
  assert.deepEqual(problems.map((p) => p.code), ["capability_denied"]);
  assert.deepEqual(s.requests, []);
});

Deno.test("MCP HTTP: a server configured as legacy SSE is a typed mcp_transport_unsupported and is never contacted", async () => {
  await using s = await serve("normal");
  await using t = await runtimeFor(s.port, { type: "sse" });
  t.grant();
  const problems = await t.runtime.tools.loadMcp(t.pid);
  assert.deepEqual(problems.map((p) => p.code), ["mcp_transport_unsupported"]);
  assert.deepEqual(s.requests, []);
});

Deno.test("MCP HTTP: a session another process started is not reused by a process without its own net: grant", async () => {
  await using s = await serve("normal");
  await using t = await runtimeFor(s.port);
  t.grant();
  assert.deepEqual(await t.runtime.tools.loadMcp(t.pid), []);
  const other = t.spawn();
  const before = s.requests.length;
  await assert.rejects(
    () => t.runtime.primitives.mcp.call(other, { server: "web", tool: "echo", arguments: {} }),
    (e: unknown) => e instanceof Error && "code" in e && e.code === "capability_denied",
  );
  assert.equal(s.requests.length, before, "nothing was sent for it");
  assert.deepEqual(s.calls, []);
  assert.equal(t.runtime.ledger.list(other).length, 0);
});
