/**
 * The process commands of the `libos` command line: spawn, ps, signal, cd, exit, run, step.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { AgentProcess } from "../runtime/process/process.ts";
import { sandbox, task } from "./_cli_sandbox.ts";

Deno.test("libos spawn creates a runnable process that ps lists, and every change is audited", async () => {
  using s = sandbox();
  const spawned = await s.json(
    "spawn",
    "--goal",
    "fix the failing test",
    "--image",
    "coding-agent:v0",
    "--tool",
    "read_text_file",
    "--tool",
    "echo",
  );
  assert.equal(spawned.status, 0, spawned.stdout);
  const p = spawned.doc.process as AgentProcess;
  assert.match(p.pid, /^pid_[0-9a-f]{12}$/);
  assert.equal(p.status, "runnable");
  assert.deepEqual(p.tools, ["read_text_file", "echo"]);
  const ps = await s.json("ps");
  assert.deepEqual((ps.doc.processes as AgentProcess[]).map((x) => x.pid), [p.pid]);
  const human = await s.cli("ps");
  assert.match(human.stdout, new RegExp(`${p.pid}\\s+-\\s+runnable`));
  const audit = await s.json("audit", "query", "--pid", p.pid);
  assert.deepEqual(
    (audit.doc.records as { action: string; actor: string; authority: string }[]).map((
      r,
    ) => [r.action, r.actor, r.authority]),
    [
      ["process.spawn", "operator", "operator"],
      // The mode's defaults as far as the image requires them: workspace, human, images.
      ["capability.grant", "runtime", "mode:workspace-write"],
      ["capability.grant", "runtime", "mode:workspace-write"],
      ["capability.grant", "runtime", "mode:workspace-write"],
      // Its rights over itself: spawn/exec, its namespace, its objects.
      ["capability.grant", "runtime", "lineage"],
      ["capability.grant", "runtime", "lineage"],
      ["capability.grant", "runtime", "lineage"],
    ],
  );
});

Deno.test("libos signal pauses and resumes; a finished process refuses every signal and keeps its result", async () => {
  using s = sandbox();
  const pid = ((await s.json("spawn", "--goal", "g")).doc.process as AgentProcess).pid;
  assert.match((await s.cli("signal", pid, "pause")).stdout, /runnable -> paused/);
  assert.match((await s.cli("signal", pid, "resume")).stdout, /paused -> runnable/);
  const exited = await s.json("exit", pid, "--result", "obj_final", "--message", "done by hand");
  assert.equal((exited.doc.process as AgentProcess).status, "exited");
  for (const signal of ["resume", "pause", "terminate", "cancel", "interrupt"]) {
    const refused = await s.json("signal", pid, signal);
    assert.equal(refused.status, 1, signal);
    assert.equal((refused.doc.error as { code: string }).code, "illegal_transition");
  }
  const after = (await s.json("ps", "--all")).doc.processes as AgentProcess[];
  assert.equal(after[0]?.result, "obj_final");
  assert.equal(after[0]?.message, "done by hand");
  assert.equal(
    (await s.json("ps")).doc.processes instanceof Array &&
      ((await s.json("ps")).doc.processes as unknown[]).length,
    0,
    "ps hides finished processes by default",
  );
});

Deno.test("libos cd keeps a process inside the workspace (attack: symlink out of the workspace)", async () => {
  using s = sandbox();
  Deno.mkdirSync(join(s.workspace, "pkg"));
  Deno.symlinkSync("/etc", join(s.workspace, "out"));
  const pid = ((await s.json("spawn", "--goal", "g")).doc.process as AgentProcess).pid;
  assert.match((await s.cli("cd", pid, "pkg")).stdout, /cwd pkg/);
  for (const path of ["../..", "/etc", "../out", "/"]) {
    const refused = await s.json("cd", pid, path);
    assert.equal(refused.status, 1, path);
    assert.equal((refused.doc.error as { code: string }).code, "outside_workspace", path);
  }
  const ps = (await s.json("ps")).doc.processes as AgentProcess[];
  assert.equal(ps[0]?.cwd, "pkg");
});

Deno.test("libos process commands refuse bad input with usage errors and unknown pids with not_found", async () => {
  using s = sandbox();
  await s.cli("init");
  const cases: [string[], number, string][] = [
    [["spawn"], 2, "usage"],
    [["signal", "pid_000000000000"], 2, "usage"],
    [["signal", "pid_000000000000", "explode"], 2, "usage"],
    [["signal", "pid_000000000000", "pause"], 1, "not_found"],
    [["cd", "pid_000000000000", "x"], 1, "not_found"],
    [["exit", "pid_000000000000", "extra"], 2, "usage"],
    [["ps", "--status", "sleepy"], 2, "usage"],
    [["spawn", "--goal", "g", "--image", "../../etc/passwd"], 1, "validation_failed"],
    [["spawn", "--goal", "g", "--db", ":memory:"], 2, "usage"],
  ];
  for (const [args, status, code] of cases) {
    const run = await s.json(...args);
    assert.equal(run.status, status, args.join(" "));
    assert.equal((run.doc.error as { code: string }).code, code, args.join(" "));
  }
});

Deno.test("libos run recovers, then says plainly that runnable processes need a model it does not have", async () => {
  using s = sandbox();
  const nothing = await s.json("run");
  assert.equal(nothing.status, 1, "no database yet");
  await s.cli("init");
  const idle = await s.json("run");
  assert.equal(idle.status, 0);
  assert.deepEqual(idle.doc.runnable, []);
  const pid = ((await s.json("spawn", "--goal", "g")).doc.process as AgentProcess).pid;
  for (const command of ["run", "step"]) {
    const run = await s.json(command);
    assert.equal(run.status, 1, command);
    assert.deepEqual(run.doc.runnable, [pid]);
    assert.equal((run.doc.error as { code: string }).code, "no_model");
    assert.equal(run.doc.ran, 0);
  }
  const ps = (await s.json("ps")).doc.processes as AgentProcess[];
  assert.equal(ps[0]?.status, "runnable", "nothing was run and nothing was failed");
});

Deno.test("deno task libos run --model replay:FILE runs a process on the scripted model through the bootstrap, and --record writes a chained log that replays the same", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.workspace, "README.md"), "# Demo\n");
  Deno.writeTextFileSync(
    join(s.workspace, "script.jsonl"),
    [
      '{"type":"model_turn","tool_calls":[{"name":"read_text_file","arguments":{"path":"README.md"}}]}',
      '{"type":"model_turn","tool_calls":[{"name":"write_text_file","arguments":{"path":"out.txt","content":"seen"}}]}',
      '{"type":"model_turn","content":"all done"}',
    ].join("\n") + "\n",
  );
  const spawned = await task(
    s.workspace,
    s.state,
    "libos",
    "spawn",
    "--goal",
    "demo",
    "--image",
    "coding-agent:v0",
    "--json",
  );
  assert.equal(spawned.status, 0, spawned.stderr);
  const pid = JSON.parse(spawned.stdout).process.pid as string;
  const ran = await task(
    s.workspace,
    s.state,
    "libos",
    "run",
    "--model",
    "replay:script.jsonl",
    "--record",
    "session.jsonl",
    "--json",
  );
  assert.equal(ran.status, 0, ran.stderr);
  const doc = JSON.parse(ran.stdout);
  assert.equal(doc.ran, 3);
  assert.deepEqual(doc.processes, [{ pid, status: "exited", message: "all done" }]);
  assert.equal(Deno.readTextFileSync(join(s.workspace, "out.txt")), "seen");
  const log = Deno.readTextFileSync(join(s.workspace, "session.jsonl")).trimEnd().split("\n");
  assert.equal(log.length, 3);
  assert.equal(JSON.parse(log[1]!).prev.length, 64, "a chained log");
  // A script that runs out fails its process with replay_exhausted (exit 1).
  const second = await task(s.workspace, s.state, "libos", "spawn", "--goal", "again", "--json");
  const again = JSON.parse(second.stdout).process.pid as string;
  Deno.writeTextFileSync(join(s.workspace, "short.jsonl"), "");
  const short = await task(
    s.workspace,
    s.state,
    "libos",
    "run",
    "--model",
    "replay:short.jsonl",
    "--json",
  );
  assert.equal(short.status, 1);
  const failed =
    (JSON.parse(short.stdout).processes as { pid: string; status: string; message: string }[])
      .find((p) => p.pid === again)!;
  assert.equal(failed.status, "failed");
  assert.match(failed.message, /replay_exhausted/);
});

Deno.test("deno task libos run --model openai:MODEL talks to the configured endpoint only, with the key from the environment", async () => {
  using s = sandbox();
  const bodies: Record<string, unknown>[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    bodies.push(await req.json());
    return Response.json({
      id: "c",
      object: "chat.completion",
      created: 1,
      model: "local-model",
      choices: [{
        index: 0,
        finish_reason: "stop",
        message: { role: "assistant", content: "hello from the endpoint" },
      }],
      usage: { prompt_tokens: 40, completion_tokens: 5, total_tokens: 45 },
    });
  });
  try {
    const spawned = await task(s.workspace, s.state, "libos", "spawn", "--goal", "greet", "--json");
    const pid = JSON.parse(spawned.stdout).process.pid as string;
    Deno.env.set("OPENAI_API_KEY", "sk-local-test-key-123456");
    Deno.env.set("OPENAI_BASE_URL", `http://127.0.0.1:${server.addr.port}/v1`);
    const ran = await task(
      s.workspace,
      s.state,
      "libos",
      "run",
      "--model",
      "openai:local-model",
      "--json",
    );
    assert.equal(ran.status, 0, ran.stderr);
    assert.deepEqual(JSON.parse(ran.stdout).processes, [{
      pid,
      status: "exited",
      message: "hello from the endpoint",
    }]);
    assert.equal(bodies.length, 1);
    assert.equal(bodies[0]!.model, "local-model");
    // An env file inside the workspace is refused before anything runs.
    Deno.writeTextFileSync(join(s.workspace, ".env"), "OPENAI_API_KEY=sk-from-the-workspace\n");
    const refused = await task(
      s.workspace,
      s.state,
      "libos",
      "run",
      "--model",
      "openai:local-model",
      "--env-file",
      ".env",
    );
    assert.equal(refused.status, 2, refused.stderr);
    assert.match(refused.stderr, /inside the workspace/);
  } finally {
    Deno.env.delete("OPENAI_API_KEY");
    Deno.env.delete("OPENAI_BASE_URL");
    await server.shutdown();
  }
});

Deno.test("libos checkpoint create, list, diff and restore a process from the command line", async () => {
  using s = sandbox();
  const pid = ((await s.json("spawn", "--goal", "g")).doc.process as AgentProcess).pid;
  Deno.mkdirSync(join(s.workspace, "src"));
  const created = await s.json("checkpoint", "create", pid, "--label", "start");
  assert.equal(created.status, 0, created.stderr);
  const id = (created.doc.checkpoint as { id: string }).id;
  const listed = await s.json("checkpoint", "list", pid);
  assert.deepEqual(
    (listed.doc.checkpoints as { id: string; label: string }[]).map((c) => [c.id, c.label]),
    [[id, "start"]],
  );
  assert.equal((await s.cli("cd", pid, "src")).status, 0);
  const diff = await s.json("checkpoint", "diff", pid, id);
  assert.deepEqual((diff.doc.diff as { process: Record<string, unknown> }).process.cwd, {
    then: ".",
    now: "src",
  });
  const restored = await s.cli("checkpoint", "restore", pid, id);
  assert.equal(restored.status, 0, restored.stderr);
  assert.match(restored.stdout, /irreversible effects since: 0/);
  const ps = (await s.json("ps")).doc.processes as AgentProcess[];
  assert.equal(ps.find((p) => p.pid === pid)?.cwd, ".");
  const unknown = await s.json("checkpoint", "diff", pid, "obj_000000000000");
  assert.equal(unknown.status, 1);
  assert.equal((unknown.doc.error as { code: string }).code, "not_found");
});
