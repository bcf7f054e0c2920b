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
import { type BenchCase, benchDir, measure } from "./_bench.ts";
import { plainServer } from "./_mcp_plain_server.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const CALLS = 300;

/** Measures `CALLS` calls of `name` on a connected client, then closes it. */
async function calls(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  note: string,
) {
  try {
    return await measure(
      CALLS,
      async () => {
        const result = await client.callTool({ name, arguments: args });
        if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
      },
      note,
      20,
    );
  } finally {
    await client.close();
  }
}

/** A client of `libos mcp serve` in a fresh workspace, started through the launcher. */
async function libosClient(dir: string): Promise<Client> {
  const ws = join(dir, "ws");
  const temp = join(dir, "tmp");
  Deno.mkdirSync(ws);
  Deno.mkdirSync(temp);
  Deno.writeTextFileSync(join(ws, "notes.txt"), "a small file\n".repeat(20));
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
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
    }),
  );
  return client;
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
      return await calls(client, "now", {}, "in-memory transport, no checks");
    },
  },
  {
    group: "mcp serve",
    name: "stdio plain: SDK server subprocess, trivial tool",
    async run() {
      const client = new Client({ name: "bench", version: "1.0.0" });
      await client.connect(
        new StdioClientTransport({
          command: Deno.execPath(),
          args: [
            "run",
            "--quiet",
            `--config=${join(REPO, "deno.json")}`,
            fileURLToPath(new URL("./_mcp_plain_server.ts", import.meta.url)),
          ],
          env: { DENO_NO_UPDATE_CHECK: "1" },
          stderr: "ignore",
        }),
      );
      return await calls(client, "now", {}, "stdio, no checks");
    },
  },
  {
    group: "mcp serve",
    name: "libos mcp serve: get_current_time through the gate",
    async run() {
      using dir = benchDir();
      return await calls(
        await libosClient(dir.path),
        "get_current_time",
        {},
        "stdio via the launcher; broker + decide + audit",
      );
    },
  },
  {
    group: "mcp serve",
    name: "libos mcp serve: read_text_file through the gate",
    async run() {
      using dir = benchDir();
      return await calls(
        await libosClient(dir.path),
        "read_text_file",
        { path: "notes.txt" },
        "stdio via the launcher; + fs primitive, secret scan",
      );
    },
  },
];
