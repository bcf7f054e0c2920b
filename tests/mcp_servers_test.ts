/**
 * The governed MCP client against real servers from the npm registry (issue 25): the reference
 * `server-filesystem` and `server-everything`, pinned and fetched by `.ci/run` into
 * `$LIBOS_MCP_SERVERS` (default `~/.cache/libos-ci/mcp-servers`), run with the host's node over
 * stdio inside the OS wall (the package directory bound read-only as a toolchain). They never
 * skip: outside `.ci/run` the pinned packages are fetched with npm into the same cache first.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { testRuntime } from "../testing.ts";
import { parsePolicy, PolicyRules } from "../runtime/policy/policy_rules.ts";
import { parseMcpConfig } from "../runtime/primitives/mcp.ts";

/** The pinned packages (`.ci/run` step 3b installs the same list). */
const PINNED = [
  "@modelcontextprotocol/server-everything@2026.8.31",
  "@modelcontextprotocol/server-filesystem@2026.8.31",
];

function installed(dir: string): boolean {
  try {
    for (const name of ["server-everything", "server-filesystem"]) {
      Deno.statSync(join(dir, "node_modules", "@modelcontextprotocol", name, "dist", "index.js"));
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * Where the pinned servers are. Under `.ci/run` (which sets `LIBOS_MCP_SERVERS` after fetching
 * them) they must be there; elsewhere — `deno task test` on a fresh machine — they are fetched
 * once into the same cache with npm, as step 3b does, and a failure to fetch fails the test.
 */
async function serversDir(): Promise<string> {
  const given = Deno.env.get("LIBOS_MCP_SERVERS");
  const cache = Deno.env.get("XDG_CACHE_HOME") ?? join(Deno.env.get("HOME") ?? "/", ".cache");
  const dir = given && given !== "" ? given : join(cache, "libos-ci", "mcp-servers");
  if (!installed(dir) && !given) {
    Deno.mkdirSync(dir, { recursive: true });
    const npm = await new Deno.Command("npm", {
      args: ["install", "--no-audit", "--no-fund", "--no-save", "--prefix", dir, ...PINNED],
      stdout: "null",
      stderr: "piped",
    }).output().catch((error) => {
      throw new Error(`npm could not be run to fetch the pinned MCP servers: ${error}`);
    });
    if (!npm.success) {
      throw new Error(
        `npm could not fetch the pinned MCP servers into ${dir}: ${
          new TextDecoder().decode(npm.stderr).slice(-500)
        }`,
      );
    }
  }
  if (!installed(dir)) {
    throw new Error(
      `The pinned MCP servers are not in ${dir}: run .ci/run (step 3b) or npm install --prefix ${dir} ${
        PINNED.join(" ")
      }`,
    );
  }
  return Deno.realPathSync(dir);
}

const SECRET = "sk-libos-test-0123456789abcdef";

async function fixture() {
  const dir = await serversDir();
  const pkg = (name: string) =>
    join(dir, "node_modules", "@modelcontextprotocol", name, "dist", "index.js");
  const t = await testRuntime({
    prefix: "libos-mcp-real-",
    workspaceDir: "ws",
    dirs: ["ws"],
    human: "none",
    wall: true,
    toolchains: [dir],
    secrets: [SECRET],
    rules: new PolicyRules(parsePolicy(
      `{"version": 1, "rules": [
        {"effect": "allow", "tool": "mcp__fs__read_text_file"},
        {"effect": "allow", "tool": "mcp__fs__write_file"},
        {"effect": "allow", "tool": "mcp__everything__echo"},
        {"effect": "allow", "tool": "mcp__everything__get_env"}
      ]}`,
      "/policy.jsonc",
    )),
    fromRoot: (root: string) => ({
      mcpServers: parseMcpConfig(
        JSON.stringify({
          mcpServers: {
            fs: { command: "node", args: [pkg("server-filesystem"), join(root, "ws")] },
            everything: {
              command: "node",
              args: [pkg("server-everything"), "stdio"],
              env: { NAMED_TOKEN: SECRET, PLAIN: "visible" },
            },
          },
        }),
        "/mcp.json",
      ),
    }),
  });
  return { ...t, ws: join(t.root, "ws"), pid: t.spawn() };
}

Deno.test("MCP server-filesystem (npm, stdio, inside the wall): its tools are listed; an allowed write and read run once each, ledgered done; a write outside the workspace is refused by the server and nothing is written", async () => {
  await using t = await fixture();
  const problems = await t.runtime.tools.loadMcp(t.pid);
  const names = t.runtime.tools.visible(t.pid).map((x) => x.name);
  assert.ok(names.includes("mcp__fs__read_text_file"), JSON.stringify(problems));
  assert.ok(names.includes("mcp__everything__echo"));
  const signal = new AbortController().signal;
  const wrote = await t.runtime.tools.invoke(t.pid, {
    name: "mcp__fs__write_file",
    arguments: { path: join(t.ws, "note.txt"), content: "from mcp" },
  }, signal);
  assert.equal(wrote.ok, true, JSON.stringify(wrote));
  assert.equal(Deno.readTextFileSync(join(t.ws, "note.txt")), "from mcp");
  const read = await t.runtime.tools.invoke(t.pid, {
    name: "mcp__fs__read_text_file",
    arguments: { path: join(t.ws, "note.txt") },
  }, signal);
  assert.equal(read.ok, true);
  assert.match(JSON.stringify(read.ok && read.value), /from mcp/);
  // Outside the workspace: not visible inside the wall, and outside the server's own root.
  const outside = join(t.root, "outside.txt");
  const refused = await t.runtime.tools.invoke(t.pid, {
    name: "mcp__fs__write_file",
    arguments: { path: outside, content: "escape" },
  }, signal);
  assert.equal(refused.ok, false);
  assert.equal(await Deno.stat(outside).then(() => true, () => false), false);
  const done = t.runtime.ledger.list(t.pid).filter((a) => a.kind === "mcp.call");
  assert.deepEqual(done.map((a) => a.status), ["done", "done", "failed"]);
});

Deno.test("MCP server-everything (npm, stdio, inside the wall): echo runs; the server sees only the fixed environment plus the variables its config names, and a known secret in its output is redacted", async () => {
  await using t = await fixture();
  await t.runtime.tools.loadMcp(t.pid);
  const signal = new AbortController().signal;
  const echo = await t.runtime.tools.invoke(t.pid, {
    name: "mcp__everything__echo",
    arguments: { message: "hello" },
  }, signal);
  assert.equal(echo.ok, true, JSON.stringify(echo));
  assert.match(JSON.stringify(echo.ok && echo.value), /Echo: hello/);
  const env = await t.runtime.tools.invoke(t.pid, {
    name: "mcp__everything__get_env",
    arguments: {},
  }, signal);
  assert.equal(env.ok, true, JSON.stringify(env));
  const text = JSON.stringify(env.ok && env.value);
  assert.match(text, /PLAIN/);
  assert.match(text, /NAMED_TOKEN/);
  assert.ok(!text.includes(SECRET), "the secret is redacted from the result");
  // Nothing of the test process's own environment reaches the server.
  const own = Deno.env.get("HOME");
  if (own) assert.ok(!text.includes(`"HOME":"${own}"`) && !text.includes(`HOME\\":\\"${own}`));
  assert.ok(!/DENO_NO_UPDATE_CHECK|LIBOS_REQUIRE_WALL/.test(text));
  // A tool no rule allows asks, and without a human nothing runs.
  const sum = await t.runtime.tools.invoke(t.pid, {
    name: "mcp__everything__get_sum",
    arguments: { a: 1, b: 2 },
  }, signal);
  assert.equal(!sum.ok && sum.error.code, "human_unavailable");
});

Deno.test("MCP server-filesystem cannot read a secret-bearing file (attack: read_text_file on .env): the wall covers it with an empty file, and .git is read-only to the server", async () => {
  await using t = await fixture();
  Deno.writeTextFileSync(join(t.ws, ".env"), `OPENAI_API_KEY=${SECRET}-in-env\n`);
  Deno.mkdirSync(join(t.ws, ".git"));
  Deno.writeTextFileSync(join(t.ws, ".git", "config"), "[core]\n");
  await t.runtime.tools.loadMcp(t.pid);
  const signal = new AbortController().signal;
  const read = await t.runtime.tools.invoke(t.pid, {
    name: "mcp__fs__read_text_file",
    arguments: { path: join(t.ws, ".env") },
  }, signal);
  assert.ok(!JSON.stringify(read).includes("in-env"), JSON.stringify(read));
  const hook = await t.runtime.tools.invoke(t.pid, {
    name: "mcp__fs__write_file",
    arguments: { path: join(t.ws, ".git", "config"), content: "[core]\nhooksPath=/tmp\n" },
  }, signal);
  assert.equal(hook.ok, false);
  assert.equal(Deno.readTextFileSync(join(t.ws, ".git", "config")), "[core]\n");
  assert.equal(Deno.readTextFileSync(join(t.ws, ".env")), `OPENAI_API_KEY=${SECRET}-in-env\n`);
});
