import assert from "node:assert/strict";
import {
  loadMcpConfigs,
  MCP_MAX_SERVERS,
  McpConfigError,
  mergeMcpConfigs,
  parseMcpConfig,
} from "./_mcp_config.ts";

Deno.test("parseMcpConfig() reads the common mcpServers shape: stdio servers with args and env, HTTP servers with a url", () => {
  const entries = parseMcpConfig(
    `{
  // a comment, as JSONC allows
  "mcpServers": {
    "files": {"command": "npx", "args": ["-y", "server"], "env": {"TOKEN": "t"}},
    "remote": {"url": "https://mcp.example.com/mcp"}
  }
}`,
    "/home/u/.config/libos/mcp.json",
  );
  assert.deepEqual(entries.map((e) => e.name), ["files", "remote"]);
  assert.deepEqual(entries[0]!.config, {
    command: "npx",
    args: ["-y", "server"],
    env: { TOKEN: "t" },
  });
  assert.equal(entries[1]!.source, "/home/u/.config/libos/mcp.json");
});

const BROKEN: [string, string, RegExp][] = [
  [
    "a syntax error names the file, line and column",
    `{"mcpServers": {\n  "a": {"command": }\n}}`,
    /mcp\.json:2:\d+/,
  ],
  [
    "a server name that is not a safe identifier",
    `{"mcpServers": {"Bad Name": {"command": "x"}}}`,
    /server name/,
  ],
  ["a server name with a path", `{"mcpServers": {"../x": {"command": "x"}}}`, /server name/],
  [
    "an unknown key in a server",
    `{"mcpServers": {"a": {"command": "x", "shell": true}}}`,
    /mcp\.json/,
  ],
  [
    "a duplicate key",
    `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`,
    /appears twice/,
  ],
  [
    "an env name that is not one",
    `{"mcpServers": {"a": {"command": "x", "env": {"A=B": "1"}}}}`,
    /mcp\.json/,
  ],
  [
    "a url that is not http(s)",
    `{"mcpServers": {"a": {"url": "file:///etc/passwd"}}}`,
    /mcp\.json/,
  ],
  ["a NUL in an argument", `{"mcpServers": {"a": {"command": "x", "args": ["\\u0000"]}}}`, /NUL/],
  ["an unknown top-level key", `{"mcpServers": {}, "servers": {}}`, /mcp\.json/],
  [
    "too many servers",
    JSON.stringify({
      mcpServers: Object.fromEntries(
        Array.from({ length: MCP_MAX_SERVERS + 1 }, (_, i) => [`s${i}`, { command: "x" }]),
      ),
    }),
    /at most 16/,
  ],
];

for (const [name, text, message] of BROKEN) {
  Deno.test(`parseMcpConfig() refuses ${name} with a typed error (mcp_config_invalid)`, () => {
    assert.throws(() => parseMcpConfig(text, "/cfg/mcp.json"), (error: unknown) => {
      assert.ok(error instanceof McpConfigError);
      assert.equal(error.code, "mcp_config_invalid");
      assert.match(error.message, message);
      return true;
    });
  });
}

Deno.test("mergeMcpConfigs() refuses a server named in two files (a later file never silently replaces one)", () => {
  const a = parseMcpConfig(`{"mcpServers": {"x": {"command": "a"}}}`, "/one.json");
  const b = parseMcpConfig(`{"mcpServers": {"x": {"command": "b"}}}`, "/two.json");
  assert.throws(() => mergeMcpConfigs([a, b]), /configured in both \/one\.json and \/two\.json/);
});

Deno.test("loadMcpConfigs(): a missing optional file is no servers; a missing --mcp-config file is an error", () => {
  const missing = (path: string): string => {
    throw new Deno.errors.NotFound(path);
  };
  assert.deepEqual(loadMcpConfigs([{ path: "/nope.json", optional: true }], missing), []);
  assert.throws(
    () => loadMcpConfigs([{ path: "/nope.json", optional: false }], missing),
    (error: unknown) => error instanceof McpConfigError && /Cannot read/.test(error.message),
  );
});
