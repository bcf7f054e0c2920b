/**
 * MCP client benchmark (issue 25): what one MCP tool call costs through libos — the broker-facing
 * primitive's fresh tool listing, `decide()`, the ledger's committed intent, the audit records,
 * the capped line transport and the OS wall around the server — against the SDK's own client
 * calling the same server directly, in the same run.
 *
 * - `direct`: the SDK's `Client` over its `StdioClientTransport`, the fixture server
 *   (tests/fixtures/mcp/mcp_server.ts) started by the SDK itself, no wall, no checks.
 * - `libos`: `runtime.primitives.mcp.call` on the same server started inside the OS wall, the
 *   call allowed by a policy rule (so nobody is asked).
 *
 * Arrival pattern: back-to-back calls of the same tool from one process after a warm-up; the
 * server's start is not counted. No target: the rows say what governance costs per call.
 *
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { type BenchCase, benchDir, measure } from "./_bench.ts";
import { testRuntime } from "../../testing.ts";
import { parsePolicy, PolicyRules } from "../../runtime/policy/policy_rules.ts";
import { parseMcpConfig } from "../../runtime/primitives/mcp.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/mcp/mcp_server.ts", import.meta.url));
const CALLS = 300;
const SERVER_ARGS = [
  "run",
  "--quiet",
  "--no-prompt",
  "--allow-read=.",
  "--allow-write=.",
  "server.ts",
];

export const CASES: readonly BenchCase[] = [
  {
    group: "mcp client",
    name: "direct: SDK client → stdio fixture server, echo",
    async run() {
      using dir = benchDir();
      Deno.copyFileSync(FIXTURE, join(dir.path, "server.ts"));
      const client = new Client({ name: "bench", version: "1.0.0" });
      await client.connect(
        new StdioClientTransport({
          command: Deno.execPath(),
          args: SERVER_ARGS,
          cwd: dir.path,
          env: { DENO_NO_UPDATE_CHECK: "1" },
          stderr: "ignore",
        }),
      );
      try {
        return await measure(
          CALLS,
          () => client.callTool({ name: "echo", arguments: { text: "hi" } }),
          "the SDK spawns the server; no wall, no decision, no ledger",
          20,
        );
      } finally {
        await client.close();
      }
    },
  },
  {
    group: "mcp client",
    name: "libos: McpPrimitive.call (rule allow, walled server), echo",
    async run() {
      await using t = await testRuntime({
        prefix: "libos-bench-mcp-",
        human: "none",
        wall: true,
        rules: new PolicyRules(
          parsePolicy(
            `{"version": 1, "rules": [{"effect": "allow", "tool": "mcp__fx__echo"}]}`,
            "/bench-policy.jsonc",
          ),
        ),
        fromRoot: (root: string) => {
          Deno.copyFileSync(FIXTURE, join(root, "server.ts"));
          return {
            mcpServers: parseMcpConfig(
              JSON.stringify({
                mcpServers: {
                  fx: { command: "deno", args: SERVER_ARGS, env: { DENO_NO_UPDATE_CHECK: "1" } },
                },
              }),
              "/bench-mcp.json",
            ),
          };
        },
      });
      const pid = t.spawn({ budgets: { maxToolCalls: 100_000 } });
      return await measure(
        CALLS,
        () =>
          t.runtime.primitives.mcp.call(pid, {
            server: "fx",
            tool: "echo",
            arguments: { text: "hi" },
          }),
        "fresh listing, decide(), ledger intent committed, audit, OS wall around the server",
        20,
      );
    },
  },
];
