/**
 * MCP server benchmark (issue 25): what one tool call costs through `libos mcp serve` — the
 * broker, `decide()`, the audit log (and for a read the filesystem primitive and its ledger
 * row) — against the same call to an ungoverned SDK server, in the same run.
 *
 * - `direct`: the SDK's client calling an in-process SDK server over the SDK's in-memory
 *   transport (no process boundary, no checks): the competitor the brief names.
 * - `stdio plain`: the same trivial server in a subprocess over stdio, so the pipe and the JSON
 *   framing are counted as libos's are, and the gate's share can be read as a ratio to this row.
 * - `libos get_current_time` / `libos read_text_file`: `deno task libos mcp serve` started as
 *   users start it (through the launcher), one session, calls back to back.
 *
 * Arrival pattern: back-to-back calls from one client after a warm-up; start-up is not counted.
 * No target: the rows say what governance costs per call.
 *
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { type BenchCase, benchDir, type BenchResult, measure } from "./_bench.ts";
import { plainServer } from "./_mcp_plain_server.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const HERE = fileURLToPath(new URL(".", import.meta.url));
const CALLS = 300;

/**
 * Measures `CALLS` calls of `name` on a connected client, then closes it. With a server
 * subprocess (`server`), the row's memory is its process tree's (PSS, read by `_tree_rss.ts`
 * after the calls, while it is still up: polling during them would slow what is measured).
 */
async function calls(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  note: string,
  server?: StdioClientTransport,
): Promise<BenchResult> {
  let poller: Promise<Deno.CommandOutput> | undefined;
  try {
    const result = await measure(
      CALLS,
      async () => {
        const result = await client.callTool({ name, arguments: args });
        if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
      },
      note,
      20,
    );
    const pid = server?.pid;
    if (pid === null || pid === undefined) return result;
    poller = new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "-A", join(HERE, "_tree_rss.ts"), String(pid)],
      stdout: "piped",
      stderr: "null",
    }).output();
    // A few samples of the tree before it is told to go.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await client.close();
    const peak = Number(new TextDecoder().decode((await poller).stdout).trim());
    return { ...result, ...(peak > 0 ? { peakRssKiB: peak } : {}) };
  } finally {
    await client.close();
    await poller;
  }
}

/** A client of `libos mcp serve` in a fresh workspace, started through the launcher. */
async function libosClient(dir: string): Promise<[Client, StdioClientTransport]> {
  const ws = join(dir, "ws");
  const temp = join(dir, "tmp");
  Deno.mkdirSync(ws);
  Deno.mkdirSync(temp);
  Deno.writeTextFileSync(join(ws, "notes.txt"), "a small file\n".repeat(20));
  const client = new Client({ name: "bench", version: "1.0.0" });
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [
      "task",
      "--quiet",
      `--config=${join(REPO, "deno.json")}`,
      "libos",
      "mcp",
      "serve",
      "--no-user-config",
    ],
    cwd: ws,
    env: {
      XDG_STATE_HOME: join(dir, "state"),
      XDG_CONFIG_HOME: join(dir, "config"),
      TMPDIR: temp,
      DENO_NO_UPDATE_CHECK: "1",
      NO_COLOR: "1",
    },
    stderr: "ignore",
  });
  await client.connect(transport);
  return [client, transport];
}

export const CASES: readonly BenchCase[] = [
  {
    group: "mcp serve",
    name: "direct: SDK client → in-process SDK server, trivial tool",
    async run() {
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await plainServer().connect(serverSide);
      const client = new Client({ name: "bench", version: "1.0.0" });
      await client.connect(clientSide);
      return await calls(
        client,
        "now",
        {},
        "in-memory transport, no checks; RSS: client and server",
      );
    },
  },
  {
    group: "mcp serve",
    name: "stdio plain: SDK server subprocess, trivial tool",
    async run() {
      const client = new Client({ name: "bench", version: "1.0.0" });
      const transport = new StdioClientTransport({
        command: Deno.execPath(),
        args: [
          "run",
          "--quiet",
          `--config=${join(REPO, "deno.json")}`,
          join(HERE, "_mcp_plain_server.ts"),
        ],
        env: { DENO_NO_UPDATE_CHECK: "1" },
        stderr: "ignore",
      });
      await client.connect(transport);
      return await calls(client, "now", {}, "stdio, no checks; RSS: the server's", transport);
    },
  },
  {
    group: "mcp serve",
    name: "libos mcp serve: get_current_time through the gate",
    async run() {
      using dir = benchDir();
      const [client, transport] = await libosClient(dir.path);
      return await calls(
        client,
        "get_current_time",
        {},
        "stdio via the launcher; broker + decide + audit; RSS: the server tree's",
        transport,
      );
    },
  },
  {
    group: "mcp serve",
    name: "libos mcp serve: read_text_file through the gate",
    async run() {
      using dir = benchDir();
      const [client, transport] = await libosClient(dir.path);
      return await calls(
        client,
        "read_text_file",
        { path: "notes.txt" },
        "stdio via the launcher; + fs primitive, secret scan; RSS: the server tree's",
        transport,
      );
    },
  },
];
