/**
 * A Streamable HTTP MCP server through the real launcher (`deno task libos agent`, the bootstrap's
 * exact permissions): the SDK's own `McpServer` on 127.0.0.1 in this test process, named by
 * `--mcp-config`; a scripted model calls its tool under a `--policy` rule that allows it. Without
 * `--allow-host` the server receives nothing; with `--allow-host 127.0.0.1:PORT` the call runs once.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sandbox, task } from "./_cli_sandbox.ts";
import { call, final } from "./agent_fixture.ts";
import { serveMcpHttp } from "./mcp_http_fixture.ts";

Deno.test("libos agent --mcp-config with a Streamable HTTP server (launcher): without --allow-host nothing reaches it; with --allow-host 127.0.0.1:PORT a rule-allowed call runs once", async () => {
  await using server = await serveMcpHttp();
  using s = sandbox();
  const root = join(s.workspace, "..");
  const config = join(root, "mcp.json");
  Deno.writeTextFileSync(
    config,
    JSON.stringify({ mcpServers: { web: { url: `http://127.0.0.1:${server.port}/mcp` } } }),
  );
  const script = join(root, "script.jsonl");
  Deno.writeTextFileSync(script, [call("mcp__web__echo", {}), final("done")].join("\n") + "\n");
  const policy = join(root, "policy.jsonc");
  Deno.writeTextFileSync(
    policy,
    `{"version": 1, "rules": [{"effect": "allow", "tool": "mcp__web__echo"}]}`,
  );
  const agent = (...more: string[]) =>
    task(
      s.workspace,
      s.state,
      "libos",
      "agent",
      "--goal",
      "echo through MCP over HTTP",
      "--model",
      `replay:${script}`,
      "--mcp-config",
      config,
      "--policy",
      policy,
      "--human",
      "none",
      "--json",
      ...more,
    );
  const without = await agent();
  assert.match(
    without.stdout + without.stderr,
    new RegExp(`--allow-host 127\\.0\\.0\\.1:${server.port}`),
  );
  assert.deepEqual(server.requests, [], "nothing reached the server without a grant");
  assert.deepEqual(server.calls, []);
  const granted = await agent("--allow-host", `127.0.0.1:${server.port}`);
  assert.equal(granted.status, 0, granted.stdout + granted.stderr);
  assert.deepEqual(server.calls, ["echo"], "run exactly once");
  assert.ok(server.requests.every((m) => m === "POST"), server.requests.join());
});
