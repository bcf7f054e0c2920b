/**
 * `libos mcp serve` as users run it: the MCP SDK's own client (`Client` over
 * `StdioClientTransport`) starts `deno task libos mcp serve` through the real launcher (the
 * bootstrap's exact permissions), lists the governed tools, and calls them — a read that is
 * allowed, a hardline command refused with no effect, a write the policy asks about that waits
 * while `libos human approve` decides it from another process and then runs exactly once — and
 * disconnects, which ends the session's process. The audit chain verifies afterwards.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { permissionFlags } from "../cli/bootstrap.ts";
import { SYSTEM_PATH } from "../runtime/base/system_path.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { REPO, type Sandbox, sandbox, task } from "./_cli_sandbox.ts";
import { wordCounter } from "./sample_fixture.ts";

/** The text of a tool result's first content block. */
function textOf(result: Awaited<ReturnType<Client["callTool"]>>): string {
  const content = result.content as { type: string; text?: string }[];
  assert.equal(content[0]?.type, "text");
  return content[0]!.text ?? "";
}

/** A client connected to `libos mcp serve` in the sandbox's workspace, through the launcher. */
async function serve(
  s: Sandbox,
  temp: string,
  ...flags: string[]
): Promise<{ client: Client; stderr: () => string }> {
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
      ...flags,
    ],
    cwd: s.workspace,
    // A clean environment (the SDK adds HOME, PATH, USER, SHELL, TERM, LOGNAME); no INIT_CWD.
    env: {
      XDG_STATE_HOME: s.state,
      TMPDIR: temp,
      DENO_NO_UPDATE_CHECK: "1",
      NO_COLOR: "1",
      ...(Deno.env.get("LIBOS_REQUIRE_WALL") ? { LIBOS_REQUIRE_WALL: "1" } : {}),
      ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
    },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array | string) => {
    stderr += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
  });
  const client = new Client({ name: "mcp-serve-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

/** Waits until `check` gives a value (polling every 200 ms), or fails after `ms`. */
async function untilAsync<T>(
  what: string,
  check: () => Promise<T | undefined>,
  stderr: () => string,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; stderr: ${stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A policy file (outside the workspace) that asks before any write under `approved/`. */
function askPolicy(dir: string): string {
  const policy = join(dir, "policy.jsonc");
  Deno.writeTextFileSync(
    policy,
    `{"version": 1, "rules": [{"effect": "ask", "path": "approved/**", "rights": ["write"]}]}`,
  );
  return policy;
}

/** The typed error of an MCP error result. */
function refusalOf(
  result: Awaited<ReturnType<Client["callTool"]>>,
): { code: string; message: string } {
  assert.equal(result.isError, true, textOf(result));
  const parsed = JSON.parse(textOf(result)) as {
    ok: boolean;
    error: { code: string; message: string };
  };
  assert.equal(parsed.ok, false);
  return parsed.error;
}

/** The session's records and state, read from the database without writing to it. */
async function stored(s: Sandbox) {
  await using runtime = await createRuntime({
    workspace: s.workspace,
    env: { get: (name) => (name === "XDG_STATE_HOME" ? s.state : undefined) },
    cwd: s.workspace,
    create: false,
    readOnly: true,
  });
  const sessions = runtime.processes.list({ limit: 100 })
    .filter((p) => p.goal.startsWith("MCP session from "));
  const audit = runtime.audit.query({ limit: 10_000 });
  const pending = runtime.human.list({ statuses: ["pending"], limit: 100 });
  return { sessions, audit, pending };
}

/** A temporary directory for the launcher and one for policy files, removed when disposed. */
function scratchDirs(): { readonly temp: string; readonly policyDir: string } & Disposable {
  const temp = Deno.makeTempDirSync({ prefix: "libos-mcp-tmp-" });
  const policyDir = Deno.makeTempDirSync({ prefix: "libos-mcp-policy-" });
  return {
    temp,
    policyDir,
    [Symbol.dispose]() {
      Deno.removeSync(temp, { recursive: true });
      Deno.removeSync(policyDir, { recursive: true });
    },
  };
}

Deno.test("libos mcp serve: an SDK client gets the governed tools; allowed, refused and human-approved calls, each once, all audited", async () => {
  using s = sandbox();
  using dirs = scratchDirs();
  const { temp, policyDir } = dirs;
  Deno.writeTextFileSync(join(s.workspace, "notes.txt"), "hello from the workspace\n");
  Deno.mkdirSync(join(s.workspace, "approved"));
  const policy = askPolicy(policyDir);
  const { client, stderr } = await serve(
    s,
    temp,
    "--mode",
    "workspace-write",
    "--policy",
    policy,
    "--approval-wait",
    "60",
  );
  try {
    // 1. The governed tools, with their JSON Schemas.
    const { tools } = await client.listTools();
    const names = tools.map((t: { name: string }) => t.name);
    for (
      const name of [
        "read_text_file",
        "write_text_file",
        "edit_file",
        "glob",
        "grep",
        "read_directory",
        "run_shell_command",
        "fetch_url",
      ]
    ) assert.ok(names.includes(name), `${name} is listed (${names.join(", ")})`);
    for (const name of ["process_exit", "spawn_child_process", "delete_file", "ask_human"]) {
      assert.ok(!names.includes(name), `${name} is not exposed`);
    }
    const read = tools.find((t: { name: string }) => t.name === "read_text_file")!;
    assert.equal(read.inputSchema.type, "object");
    assert.ok(Object.hasOwn(read.inputSchema.properties ?? {}, "path"));
    // Hints from each tool's effects (libos decides every call regardless).
    const hint = (name: string) =>
      tools.find((t: { name: string }) => t.name === name)?.annotations?.readOnlyHint;
    assert.equal(hint("read_text_file"), true);
    assert.equal(hint("grep"), true);
    assert.equal(hint("write_text_file"), false);
    assert.equal(hint("run_shell_command"), false);

    // 2. Allowed: a read in the workspace.
    const allowed = await client.callTool({
      name: "read_text_file",
      arguments: { path: "notes.txt" },
    });
    assert.ok(!allowed.isError, textOf(allowed));
    assert.match(textOf(allowed), /hello from the workspace/);

    // 3. Refused: a hardline command, an error result with its typed code; nothing ran.
    const refused = await client.callTool({
      name: "run_shell_command",
      arguments: { argv: ["rm", "-rf", "/"] },
    });
    assert.equal(refused.isError, true);
    const refusal = JSON.parse(textOf(refused)) as { ok: boolean; error: { code: string } };
    assert.equal(refusal.ok, false);
    assert.equal(refusal.error.code, "capability_denied");
    assert.match(textOf(refused), /hardline:rm-rf-root/);
    assert.ok(Deno.statSync(join(s.workspace, "notes.txt")).isFile, "nothing was removed");

    // An unknown tool: refused at the broker, never a second door.
    const unknown = await client.callTool({ name: "process_exit", arguments: {} });
    assert.equal(unknown.isError, true);
    assert.match(textOf(unknown), /tool_not_visible/);

    // 4. Asks: the call waits; another process approves with `libos human approve`.
    const asking = client.callTool(
      { name: "write_text_file", arguments: { path: "approved/out.txt", content: "once\n" } },
      undefined,
      { timeout: 120_000 },
    );
    const id = await untilAsync("the write's approval request", async () => {
      const { pending } = await stored(s);
      return pending[0]?.id;
    }, stderr);
    assert.throws(() => Deno.statSync(join(s.workspace, "approved", "out.txt")), "not before");
    const approved = await task(s.workspace, s.state, "libos", "human", "approve", id);
    assert.equal(approved.status, 0, approved.stderr);
    const written = await asking;
    assert.ok(!written.isError, textOf(written));
    assert.equal(Deno.readTextFileSync(join(s.workspace, "approved", "out.txt")), "once\n");
  } finally {
    await client.close();
  }
  // 5. The client is gone: the session's process ended, and everything is on record.
  const { sessions, audit } = await untilAsync("the session's process to end", async () => {
    const now = await stored(s);
    return now.sessions.every((p) => p.status === "exited") ? now : undefined;
  }, stderr);
  assert.equal(sessions.length, 1);
  const session = sessions[0]!;
  assert.match(session.goal, /^MCP session from mcp-serve-test/);
  assert.equal(session.status, "exited", stderr());
  const mine = audit.filter((r) => r.pid === session.pid);
  const count = (action: string, resource: string, decision?: string) =>
    mine.filter((r) =>
      r.action === action && r.resource === resource &&
      (decision === undefined || r.decision === decision)
    ).length;
  // Asked once, approved once by the other process, written once, ledgered once.
  assert.equal(count("fs.write", "fs:approved/out.txt", "ask"), 1);
  assert.equal(count("human.approve", "fs:approved/out.txt"), 1);
  assert.equal(count("fs.write", "fs:approved/out.txt", "allow"), 1);
  const intents = mine.filter((r) => r.action === "action.intent");
  assert.equal(intents.length, 1, "one effect went through the ledger: the approved write");
  assert.equal(count("action.done", intents[0]!.resource), 1);
  // The refusal is on record, with nothing run for it.
  assert.equal(count("shell.run", "shell:rm -rf /", "deny"), 1);
  assert.ok(!mine.some((r) => r.action === "shell.run" && r.decision === "allow"));
  assert.deepEqual(
    mine.filter((r) => r.action.startsWith("mcp.")).map((r) => r.action),
    ["mcp.start", "mcp.stop"],
  );
  assert.equal(count("process.exit", `process:${session.pid}`, "allow"), 1);
  const verify = await s.cli("audit", "verify");
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  // The trace invariants hold too: each effect decided, ledgered and matched to its approval.
  const checked = await s.cli("audit", "check", session.pid);
  assert.equal(checked.status, 0, checked.stdout + checked.stderr);
  assert.match(checked.stdout, /keeps every invariant .*1 effects, 1 human requests/);
});

Deno.test("libos mcp serve --approval-wait 0: an ask returns at once with its request; approved from another process, the same call made again runs once, and a third asks again", async () => {
  using s = sandbox();
  using dirs = scratchDirs();
  const { temp, policyDir } = dirs;
  Deno.mkdirSync(join(s.workspace, "approved"));
  const { client, stderr } = await serve(
    s,
    temp,
    "--policy",
    askPolicy(policyDir),
    "--approval-wait",
    "0",
    "--deny",
    "shell:touch *",
  );
  const out = join(s.workspace, "approved", "out.txt");
  const write = {
    name: "write_text_file",
    arguments: { path: "approved/out.txt", content: "x" },
  };
  try {
    // A run deny refuses the command; nothing is made.
    const denied = refusalOf(
      await client.callTool({
        name: "run_shell_command",
        arguments: { argv: ["touch", "made"] },
      }),
    );
    assert.equal(denied.code, "capability_denied");
    assert.match(denied.message, /\(run:1\)/);
    assert.throws(() => Deno.statSync(join(s.workspace, "made")));

    const first = refusalOf(await client.callTool(write));
    assert.equal(first.code, "approval_required", first.message);
    const id = /hreq_[0-9a-f]+/.exec(first.message)?.[0];
    assert.ok(id, first.message);
    assert.throws(() => Deno.statSync(out), "nothing is written before the approval");
    const approved = await task(s.workspace, s.state, "libos", "human", "approve", id);
    assert.equal(approved.status, 0, approved.stderr);

    const second = await client.callTool(write);
    assert.ok(!second.isError, textOf(second));
    assert.equal(Deno.readTextFileSync(out), "x");
    Deno.removeSync(out);

    // The approval was for one use: the same call asks again, and writes nothing.
    const third = refusalOf(await client.callTool(write));
    assert.equal(third.code, "approval_required");
    assert.notEqual(/hreq_[0-9a-f]+/.exec(third.message)?.[0], id);
    assert.throws(() => Deno.statSync(out));
  } finally {
    await client.close();
  }
  const { sessions, audit } = await untilAsync("the session's process to end", async () => {
    const now = await stored(s);
    return now.sessions.every((p) => p.status === "exited") ? now : undefined;
  }, stderr);
  assert.equal(sessions.length, 1);
  const mine = audit.filter((r) => r.pid === sessions[0]!.pid);
  assert.equal(mine.filter((r) => r.action === "action.done").length, 1);
  assert.equal(
    mine.filter((r) => r.action === "fs.write" && r.decision === "allow").length,
    1,
  );
  assert.ok(!mine.some((r) => r.action === "shell.run" && r.decision === "allow"));
});

Deno.test("libos mcp serve: a client that disconnects while its call waits on a human withdraws the request; nothing runs, even when approved later", async () => {
  using s = sandbox();
  using dirs = scratchDirs();
  const { temp, policyDir } = dirs;
  Deno.mkdirSync(join(s.workspace, "approved"));
  const { client, stderr } = await serve(s, temp, "--policy", askPolicy(policyDir));
  const waiting = client.callTool({
    name: "write_text_file",
    arguments: { path: "approved/out.txt", content: "never" },
  }).then(() => "answered", () => "cut off");
  const id = await untilAsync("the write's approval request", async () => {
    const { pending } = await stored(s);
    return pending[0]?.id;
  }, stderr);
  await client.close();
  assert.equal(await waiting, "cut off");
  const { sessions } = await untilAsync("the session's process to end", async () => {
    const now = await stored(s);
    return now.sessions.every((p) => p.status === "exited") ? now : undefined;
  }, stderr);
  assert.equal(sessions.length, 1);
  const approved = await task(s.workspace, s.state, "libos", "human", "approve", id);
  assert.notEqual(approved.status, 0, "a withdrawn request cannot be approved");
  assert.throws(() => Deno.statSync(join(s.workspace, "approved", "out.txt")));
  const { audit } = await stored(s);
  assert.ok(!audit.some((r) => r.action === "fs.write" && r.decision === "allow"));
});

Deno.test("libos mcp serve --human none: an action that needs a human is refused at once, with nothing written", async () => {
  using s = sandbox();
  using dirs = scratchDirs();
  const { temp, policyDir } = dirs;
  Deno.mkdirSync(join(s.workspace, "approved"));
  const { client } = await serve(s, temp, "--policy", askPolicy(policyDir), "--human", "none");
  try {
    const refused = refusalOf(
      await client.callTool({
        name: "write_text_file",
        arguments: { path: "approved/out.txt", content: "no" },
      }),
    );
    assert.equal(refused.code, "human_unavailable", refused.message);
    assert.throws(() => Deno.statSync(join(s.workspace, "approved", "out.txt")));
  } finally {
    await client.close();
  }
  assert.deepEqual((await stored(s)).pending, []);
});

Deno.test("bootstrap permissionFlags() for libos mcp serve: what agent gets for its primitives (system directories, toolchains, setsid for the wall and JIT sandbox) and no model endpoint: no network, no OPENAI_* variables, nothing more writable", () => {
  const facts = {
    cwd: "/home/u/projects/app",
    env: {
      get: (n: string) =>
        ({
          HOME: "/home/u",
          PATH: "/opt/tool/bin:/usr/bin",
          TMPDIR: "/tmp",
          OPENAI_BASE_URL: "https://models.example/v1",
        } as Record<string, string>)[n],
    },
    realPath: (p: string) => p,
    execPath: "/usr/bin/deno",
  };
  const flag = (flags: string[], name: string) =>
    (flags.find((f) => f.startsWith(`--allow-${name}=`)) ?? "").split("=")[1]?.split(",") ?? [];
  const serve = permissionFlags({ ...facts, args: ["mcp", "serve", "--toolchain", "/opt/tc"] });
  const agent = permissionFlags({
    ...facts,
    args: ["agent", "--goal", "g", "--toolchain", "/opt/tc"],
  });
  const read = flag(serve, "read");
  for (const dir of SYSTEM_PATH) assert.ok(read.includes(dir), `read ${dir}`);
  for (const path of ["/opt/tc", "/home/u/projects/.git", "/usr/bin/deno", "/opt/tool/bin"]) {
    assert.ok(read.includes(path), `read ${path}`);
  }
  // agent's reads, less the grants file its terminal prompt may write (no prompt here).
  assert.deepEqual(
    read.sort(),
    flag(agent, "read").filter((p) => !p.includes("grants.jsonc")).sort(),
  );
  assert.deepEqual(flag(serve, "run"), ["/usr/bin/setsid"]);
  assert.deepEqual(
    flag(serve, "write"),
    flag(permissionFlags({ ...facts, args: ["init"] }), "write"),
  );
  assert.ok(!serve.some((f) => f.startsWith("--allow-net")), serve.join(" "));
  assert.ok(flag(agent, "net").length > 0, "agent reaches its endpoint; serve does not");
  assert.ok(!flag(serve, "env").some((v) => v.startsWith("OPENAI_")), flag(serve, "env").join(","));
  // Another mcp word is not serve: no program, no system directories.
  const other = permissionFlags({ ...facts, args: ["mcp", "list"] });
  assert.deepEqual(flag(other, "run"), []);
});

Deno.test("libos mcp is a command group: mcp --help names serve; serve refuses a human it cannot reach or a bad wait before anything is written", async () => {
  using s = sandbox();
  const group = await s.cli("mcp", "--help");
  assert.equal(group.status, 0, group.stderr);
  assert.match(group.stdout, /^Usage: libos mcp <command>/);
  assert.match(group.stdout, /mcp serve/);
  const own = await s.cli("mcp", "serve", "--help");
  assert.match(own.stdout, /"mcpServers"/);
  for (
    const [flags, pattern] of [
      [["--human", "interactive"], /--human must be queue .* or none/],
      [["--approval-wait", "soon"], /--approval-wait must be an integer/],
      [["--mode", "root"], /--mode/],
      [["--goal", "x"], /does not take --goal/],
    ] as const
  ) {
    const refused = await s.cli("mcp", "serve", "--no-user-config", ...flags);
    assert.equal(refused.status, 2, `${flags.join(" ")}: ${refused.stderr}`);
    assert.match(refused.stderr, pattern);
    assert.equal(refused.stdout, "", "nothing on the protocol's stream");
  }
  assert.throws(() => Deno.statSync(s.dbPath()), "no database was made");
});

Deno.test("libos mcp serve: a JIT tool the session proposes, validates and registers (its exact source approved from another process) is listed to the client, announced with tools/list_changed, and called through the gate", async () => {
  using s = sandbox();
  using dirs = scratchDirs();
  const { temp } = dirs;
  Deno.writeTextFileSync(join(s.workspace, "words.txt"), "one two three four\n");
  const { client, stderr } = await serve(s, temp, "--approval-wait", "60");
  let changed = 0;
  client.setNotificationHandler(
    ToolListChangedNotificationSchema,
    () => {
      changed++;
    },
  );
  try {
    const before = (await client.listTools()).tools.map((t: { name: string }) => t.name);
    assert.ok(!before.includes("count_words"));
    const proposed = await client.callTool({
      name: "propose_jit_tool",
      arguments: { ...wordCounter() },
    });
    assert.ok(!proposed.isError, textOf(proposed));
    const oid = (JSON.parse(textOf(proposed)) as { value: { oid: string } }).value.oid;
    const validated = await client.callTool({ name: "validate_jit_tool", arguments: { oid } });
    assert.ok(!validated.isError, textOf(validated));
    const registering = client.callTool(
      { name: "register_jit_tool", arguments: { oid } },
      undefined,
      { timeout: 120_000 },
    );
    const id = await untilAsync("the registration's approval request", async () => {
      const { pending } = await stored(s);
      return pending[0]?.id;
    }, stderr);
    const approved = await task(s.workspace, s.state, "libos", "human", "approve", id);
    assert.equal(approved.status, 0, approved.stderr);
    const registered = await registering;
    assert.ok(!registered.isError, textOf(registered));
    await untilAsync(
      "tools/list_changed",
      () => Promise.resolve(changed > 0 || undefined),
      stderr,
    );
    const { tools } = await client.listTools();
    const tool = tools.find((t: { name: string }) => t.name === "count_words");
    assert.ok(tool, "the registered tool is listed");
    assert.equal(tool.inputSchema.type, "object");
    const counted = await client.callTool({
      name: "count_words",
      arguments: { path: "words.txt" },
    });
    assert.ok(!counted.isError, textOf(counted));
    assert.deepEqual((JSON.parse(textOf(counted)) as { value: unknown }).value, { words: 4 });
  } finally {
    await client.close();
  }
});

Deno.test("libos mcp serve: standard output carries only the protocol (every line a JSON-RPC message), and the server ends by itself when its input closes", async () => {
  using s = sandbox();
  using dirs = scratchDirs();
  const { temp } = dirs;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "task",
      "--quiet",
      `--config=${join(REPO, "deno.json")}`,
      "libos",
      "mcp",
      "serve",
      "--no-user-config",
    ],
    cwd: s.workspace,
    clearEnv: true,
    env: {
      HOME: Deno.env.get("HOME") ?? "/nonexistent",
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      XDG_STATE_HOME: s.state,
      TMPDIR: temp,
      DENO_NO_UPDATE_CHECK: "1",
      NO_COLOR: "1",
    },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const messages = [
    {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "raw\u001b[31m-client", version: "0" },
      },
    },
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", id: 2, method: "tools/list" },
    {
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "get_current_time", arguments: {} },
    },
  ];
  const writer = child.stdin.getWriter();
  await writer.write(
    new TextEncoder().encode(messages.map((m) => JSON.stringify(m)).join("\n") + "\n"),
  );
  // Closing the input only once the call has been answered: read until id 3 arrives.
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!/"id":3\b/.test(out)) {
    const { value, done } = await reader.read();
    if (done) break;
    out += value;
  }
  await writer.close();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    out += value;
  }
  const status = await child.status;
  const stderr = new TextDecoder().decode(
    await new Response(child.stderr).arrayBuffer(),
  );
  assert.equal(status.code, 0, stderr);
  const lines = out.split("\n").filter((l) => l !== "");
  assert.equal(lines.length, 3, out);
  for (const line of lines) {
    const message = JSON.parse(line) as { jsonrpc: string };
    assert.equal(message.jsonrpc, "2.0");
  }
  const call = JSON.parse(lines[2]!) as { id: number; result: { isError?: boolean } };
  assert.equal(call.id, 3);
  assert.ok(!call.result.isError, lines[2]);
  assert.match(stderr, /session pid_[0-9a-f]+ ended \(the client disconnected\)/);
  assert.ok(!stderr.includes("\u001b"), "the client's name is shown escaped");
  const { sessions } = await stored(s);
  assert.equal(sessions.length, 1);
  assert.equal(sessions[0]!.status, "exited");
  assert.ok(!sessions[0]!.goal.includes("\u001b"), sessions[0]!.goal);
});

Deno.test("libos mcp serve --approval-wait 1: a call nobody decides in time is answered approval_timeout and its request withdrawn; approving it afterwards is refused and nothing is written", async () => {
  using s = sandbox();
  using dirs = scratchDirs();
  const { temp, policyDir } = dirs;
  Deno.mkdirSync(join(s.workspace, "approved"));
  const { client } = await serve(
    s,
    temp,
    "--policy",
    askPolicy(policyDir),
    "--approval-wait",
    "1",
  );
  let id: string | undefined;
  try {
    const late = refusalOf(
      await client.callTool({
        name: "write_text_file",
        arguments: { path: "approved/out.txt", content: "late" },
      }),
    );
    assert.equal(late.code, "approval_timeout", late.message);
    id = /hreq_[0-9a-f]+/.exec(late.message)?.[0];
    assert.ok(id, late.message);
    assert.deepEqual((await stored(s)).pending, [], "the request is no longer pending");
  } finally {
    await client.close();
  }
  const approved = await task(s.workspace, s.state, "libos", "human", "approve", id);
  assert.notEqual(approved.status, 0, "a withdrawn request cannot be approved");
  assert.throws(() => Deno.statSync(join(s.workspace, "approved", "out.txt")));
  assert.ok(
    !(await stored(s)).audit.some((r) => r.action === "fs.write" && r.decision === "allow"),
  );
});
