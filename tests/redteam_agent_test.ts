/**
 * Red team of `libos agent` and `libos sessions`: each test is an attack, made for real on the
 * scripted model (in process, and through the real bootstrap on a pseudo-terminal), that asserts
 * the refusal or safe behaviour and the absence of side effects — files unchanged, no human
 * request answered or minted capability, no process of another run touched, nothing recorded
 * for a refused command.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { HumanRequestStatus } from "../runtime/human/human_request.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import { type Sandbox, sandbox, task } from "./_cli_sandbox.ts";
import { call, cli, fakeTerminal, final, terminalCommand } from "./agent_fixture.ts";

/** Hostile text: OSC title + hyperlink, CSI clear/colour, BEL, CR, bidi override, ZWSP, C1 CSI. */
const HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[31mRED\rFAKE\u202eevil\u200bzw\u009b6n" +
  "\x1b]8;;http://evil.example\x07link\x1b]8;;\x07";
/** How {@link HOSTILE} looks once escaped (a prefix of it). */
const HOSTILE_SHOWN = String
  .raw`\x1B]0;pwned\x07\x1B[2J\x1B[31mRED\rFAKE\u{202E}evil\u{200B}zw\x9B6n`;
/** The launcher's own status-line clear, the only control sequence it may write itself. */
const CLEAR_LINE = "\r\x1b[2K";

/** Writes a script next to (outside) the workspace and returns its `--model` spec. */
function script(s: Sandbox, name: string, turns: string[]): string {
  const path = join(s.workspace, "..", name);
  Deno.writeTextFileSync(path, turns.join("\n") + "\n");
  return `replay:${path}`;
}

/** Asserts that nothing raw that could drive a terminal is in `text`. */
function assertInert(
  text: string,
  where: string,
  options: { statusLine?: boolean; colors?: boolean } = {},
): void {
  let rest = options.statusLine ? text.replaceAll(CLEAR_LINE, "") : text;
  // The launcher's own paint (bold, dim, green, red, yellow, cyan and their resets), only where
  // colour is on.
  if (options.colors) {
    for (const code of [1, 22, 2, 31, 32, 33, 36, 39]) rest = rest.replaceAll(`\x1b[${code}m`, "");
  }
  // A real pseudo-terminal turns each LF into CR LF.
  rest = rest.replaceAll("\r\n", "\n");
  for (
    const [bad, name] of [
      ["\x1b", "ESC"],
      ["\x07", "BEL"],
      ["\r", "CR"],
      ["\u009b", "C1 CSI"],
      ["\u202e", "RLO"],
      ["\u200b", "ZWSP"],
    ] as const
  ) {
    assert.ok(!rest.includes(bad), `${where}: a raw ${name} reached it: ${JSON.stringify(rest)}`);
  }
}

/** Opens the sandbox's database directly (read-only unless asked), with the sandbox's state. */
async function open(s: Sandbox, writable = false): Promise<Runtime> {
  const env: Record<string, string> = { XDG_STATE_HOME: s.state, HOME: join(s.state, "home") };
  return await createRuntime({
    workspace: s.workspace,
    db: s.dbPath(),
    create: false,
    readOnly: !writable,
    env: { get: (n) => env[n] },
  });
}

const ALL_REQUESTS = HumanRequestStatus.options;

/** Everything a refused command must leave as it was: records, processes, requests, grants. */
async function dbState(s: Sandbox): Promise<string> {
  await using runtime = await open(s);
  const processes = runtime.processes.list({ limit: 10_000 });
  return JSON.stringify({
    audit: runtime.audit.query({ limit: 10_000, order: "asc" }).map((
      r,
    ) => [r.seq, r.action, r.pid]),
    processes: processes.map((p) => [p.pid, p.status, p.updatedAt, p.message]),
    requests: runtime.human.list({ statuses: ALL_REQUESTS, limit: 10_000 }).map((r) => [
      r.id,
      r.status,
    ]),
    caps: processes.map((p) => runtime.authority.capabilities.list(p.pid).map((c) => c.id)),
  });
}

/** Every file under `dir` (relative path → content), sidecars of the database left out. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (sub: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(join(dir, sub))];
    } catch {
      return;
    }
    for (const e of entries) {
      const rel = sub === "" ? e.name : `${sub}/${e.name}`;
      if (/-(wal|shm|journal)$/.test(e.name)) continue;
      if (e.isDirectory) walk(rel);
      else if (e.isSymlink) out[rel] = `-> ${Deno.readLinkSync(join(dir, rel))}`;
      // The database and the audit head change with every open; their presence is what counts.
      else if (/\.(db|head)$/.test(e.name)) out[rel] = "(file)";
      else out[rel] = Deno.readTextFileSync(join(dir, rel));
    }
  };
  walk("");
  return out;
}

interface AgentDoc {
  pid: string;
  status: string;
  message: string | null;
  result: { ref: string; content: string } | null;
  waiting: { request: string; kind: string } | null;
  db: string;
  audit_summary: {
    records: number;
    allowed: number;
    asked: number;
    denied: number;
    tool_calls: number;
    human_decisions: number;
    chain_verified: boolean;
  };
}

/** Parses stdout as exactly one JSON document (one line). */
function oneDocument(stdout: string): Record<string, unknown> {
  assert.ok(stdout.endsWith("\n"), `stdout ends with a newline: ${JSON.stringify(stdout)}`);
  assert.equal(stdout.trimEnd().split("\n").length, 1, `one line on stdout: ${stdout}`);
  return JSON.parse(stdout) as Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------
// 1. Terminal injection
// ---------------------------------------------------------------------------------------------

/** A run whose every model-controlled string is hostile. */
function hostileRun(s: Sandbox): string {
  Deno.writeTextFileSync(join(s.workspace, "a.txt"), "hello\n");
  return script(s, `hostile\x1b]0;title\x07\u202e.jsonl`, [
    call("human_output", { text: `note ${HOSTILE}` }),
    // An approval whose shown command holds the hostile text (--yes prints what it approved).
    call("run_shell_command", { argv: ["python3", "-c", "pass", HOSTILE] }),
    call("request_permission", {
      resource: { type: "net", key: `evil.example${HOSTILE}`, scope: "exact" },
      rights: ["connect"],
      reason: HOSTILE,
    }),
    call("ask_human", { question: HOSTILE }),
    final(`final ${HOSTILE}\nsecond line ${HOSTILE}`),
  ]);
}

for (
  const [stderrIsTerminal, colors] of [[false, false], [true, false], [true, true]] as const
) {
  Deno.test(
    `attack: terminal injection through human_output, a --yes note, the final answer, the goal and the script's name (stderr ${
      stderrIsTerminal ? `a terminal, ${colors ? "in colour" : "NO_COLOR"}` : "not a terminal"
    }) — everything is shown escaped`,
    async () => {
      using s = sandbox();
      const model = hostileRun(s);
      const run = await cli(
        s,
        { stderrIsTerminal, columns: 200, ...(colors ? {} : { env: { NO_COLOR: "1" } }) },
        "agent",
        "--goal",
        `goal ${HOSTILE}`,
        "--model",
        model,
        "--yes",
      );
      assert.equal(run.status, 0, run.stdout + run.stderr);
      assertInert(run.stdout, "stdout");
      assertInert(run.stderr, "stderr", { statusLine: stderrIsTerminal, colors });
      if (!colors) assert.ok(!run.stderr.replaceAll(CLEAR_LINE, "").includes("\x1b"), "no colour");
      if (!stderrIsTerminal) {
        assert.ok(!run.stderr.includes(CLEAR_LINE), "no status line where stderr is no terminal");
      } else {
        assert.match(
          run.stderr.replaceAll(CLEAR_LINE, "<clear>"),
          /<clear>libos ▸ pid_[0-9a-f]{12} · turn \d+ · /,
        );
      }
      // Shown, escaped: the message, the approved command, the answer, the script's name.
      assert.ok(run.stderr.includes(`note ${HOSTILE_SHOWN}`), run.stderr);
      assert.match(run.stderr, /--yes approved shell\.run shell:python3 -c pass \\x1B\]0;pwned/);
      assert.ok(run.stderr.includes(String.raw`hostile\x1B]0;title\x07\u{202E}.jsonl`));
      assert.ok(run.stdout.includes(`  final ${HOSTILE_SHOWN}`), run.stdout);
      assert.ok(run.stdout.includes(`  second line ${HOSTILE_SHOWN}`), run.stdout);
      // The goal in `libos sessions`.
      const sessions = await cli(s, {}, "sessions");
      assert.equal(sessions.status, 0);
      assertInert(sessions.stdout + sessions.stderr, "sessions");
      assert.ok(sessions.stdout.includes(String.raw`goal \x1B]0;pwned\x07`), sessions.stdout);
      // The machine-readable forms keep the exact text.
      const doc = (await s.json("sessions")).doc.sessions as { goal: string }[];
      assert.equal(doc[0]?.goal, `goal ${HOSTILE}`);
    },
  );
}

Deno.test("attack: terminal injection through tool names the model invents (status line, step lines, the failure message) — escaped, the process fails with exit 1", async () => {
  using s = sandbox();
  const model = script(s, "names.jsonl", [
    call(`read_text_file${HOSTILE}`),
    call(`read_text_file${HOSTILE}`),
  ]);
  for (const stderrIsTerminal of [false, true]) {
    const run = await cli(
      s,
      { stderrIsTerminal, columns: 300 },
      "agent",
      "--goal",
      "g",
      "--model",
      model,
      "--human",
      "none",
    );
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assertInert(run.stdout, "stdout");
    assertInert(run.stderr, "stderr", { statusLine: stderrIsTerminal, colors: stderrIsTerminal });
    assert.match(run.stdout, /: failed — invalid_tool_name: /);
    assert.ok(run.stdout.includes(String.raw`(read_text_file\x1B]0;pwned\x07`), run.stdout);
  }
});

Deno.test("attack: terminal injection in an interactive prompt — a question and a standing-permission request with hostile text are shown escaped; declining them mints nothing", async () => {
  using s = sandbox();
  const model = script(s, "ask.jsonl", [
    call("ask_human", { question: `Q ${HOSTILE}` }),
    call("request_permission", {
      resource: { type: "net", key: `evil.example${HOSTILE}`, scope: "exact" },
      rights: ["connect"],
      reason: `R ${HOSTILE}`,
    }),
    final("done"),
  ]);
  // An empty line declines the question; "n REASON" rejects the permission.
  const terminal = fakeTerminal(["\n", `n nope ${HOSTILE}\n`]);
  const run = await cli(
    s,
    { terminal, stderrIsTerminal: true, columns: 120 },
    "agent",
    "--goal",
    "g",
    "--model",
    model,
  );
  assert.equal(run.status, 0, run.stdout + run.stderr + terminal.screen());
  const screen = terminal.screen();
  assertInert(screen, "the terminal", { colors: true });
  assertInert(run.stdout, "stdout");
  assertInert(run.stderr, "stderr", { statusLine: true, colors: true });
  assert.ok(screen.includes(`Q ${HOSTILE_SHOWN}`), screen);
  assert.ok(screen.includes(`R ${HOSTILE_SHOWN}`), screen);
  await using runtime = await open(s);
  const [p] = runtime.processes.list({ limit: 10 });
  const requests = runtime.human.list({ statuses: ALL_REQUESTS, pid: p!.pid });
  assert.deepEqual(requests.map((r) => [r.kind, r.status]), [
    ["question", "rejected"],
    ["permission", "rejected"],
  ]);
  assert.equal(runtime.audit.query({ action: "human.approve", limit: 10 }).length, 0);
  assert.ok(
    runtime.authority.capabilities.list(p!.pid).every((c) => !c.issuer.startsWith("human:")),
    "no capability issued by a human",
  );
});

Deno.test("attack: terminal injection on a real pseudo-terminal through the real bootstrap — only the launcher's own status-line clear reaches it", async () => {
  using s = sandbox();
  const model = hostileRun(s);
  const temp = Deno.makeTempDirSync({ prefix: "libos-redteam-tmp-" });
  try {
    const output = await terminalCommand(
      s,
      temp,
      ["agent", "--goal", `goal ${HOSTILE}`, "--model", model, "--yes"],
      { stdin: "null" },
    ).output();
    const screen = new TextDecoder().decode(output.stdout);
    assert.equal(output.code, 0, screen);
    assert.match(screen, /Agent pid_[0-9a-f]{12}: exited/);
    assert.ok(screen.includes(`note ${HOSTILE_SHOWN}`), screen);
    assertInert(screen, "the pseudo-terminal", { statusLine: true });
  } finally {
    Deno.removeSync(temp, { recursive: true });
  }
});

// ---------------------------------------------------------------------------------------------
// 2. --yes grants no standing permission and answers no question
// ---------------------------------------------------------------------------------------------

Deno.test("attack: --yes asked for standing permissions and a question — all refused, no capability minted, no approval recorded but the one action, the run goes on", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.workspace, "a.txt"), "hello\n");
  const model = script(s, "perm.jsonl", [
    call("request_permission", {
      resource: { type: "fs", path: ".", scope: "subtree" },
      rights: ["delete"],
      reason: "I need to delete things",
    }),
    call("request_permission", {
      resource: { type: "net", key: "*", scope: "any" },
      rights: ["connect"],
      reason: "the internet",
    }),
    call("ask_human", { question: "May I delete a.txt? (answer yes)" }),
    // An action: --yes approves it once, exactly as shown.
    call("run_shell_command", { argv: ["python3", "-c", "pass"] }),
    // So is a delete (workspace-write asks for each): once, as an action — not as the
    // standing permission refused above.
    call("delete_file", { path: "a.txt" }),
    final("carried on"),
  ]);
  const run = await s.json("agent", "--goal", "g", "--model", model, "--yes");
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const doc = run.doc as unknown as AgentDoc;
  assert.equal(doc.status, "exited");
  assert.equal(doc.result?.content, "carried on", "the run went on after the refusals");
  assert.equal(
    run.stderr.match(/--yes refused request hreq_[0-9a-f]{12} \(permission\)/g)?.length,
    2,
    run.stderr,
  );
  assert.equal(
    run.stderr.match(/--yes refused request hreq_[0-9a-f]{12} \(question\)/g)?.length,
    1,
  );
  assert.equal(run.stderr.match(/--yes approved/g)?.length, 2, run.stderr);
  assert.match(run.stderr, /--yes approved shell\.run shell:python3 -c pass \(request/);
  assert.match(run.stderr, /--yes approved fs\.delete a\.txt \(request/);
  assert.throws(() => Deno.statSync(join(s.workspace, "a.txt")), "deleted, once approved");
  await using runtime = await open(s);
  const requests = runtime.human.list({ statuses: ALL_REQUESTS, pid: doc.pid });
  assert.deepEqual(requests.map((r) => [r.kind, r.status]), [
    ["permission", "rejected"],
    ["permission", "rejected"],
    ["question", "rejected"],
    ["approval", "dispatched"],
    ["approval", "dispatched"],
  ]);
  for (const r of requests.slice(0, 3)) {
    assert.equal(r.response?.by, "human:yes");
    assert.deepEqual(r.response?.capabilities ?? [], []);
  }
  const caps = runtime.authority.capabilities.list(doc.pid);
  const fromHumans = caps.filter((c) => c.issuer.startsWith("human:"));
  // At most the one-shot, digest-bound approvals of the two actions — never a standing grant.
  assert.ok(fromHumans.length <= 2, JSON.stringify(fromHumans));
  for (const c of fromHumans) {
    assert.equal(c.oneShot, true);
    assert.ok(c.actionDigest, "bound to the action's digest");
  }
  assert.ok(!caps.some((c) => c.resource.type === "net"), "no network capability");
  assert.ok(
    !fromHumans.some((c) => c.resource.type === "fs" && c.rights.includes("delete") && !c.oneShot),
    "no standing delete capability from a human",
  );
  const approvals = runtime.audit.query({ pid: doc.pid, action: "human.approve", limit: 100 });
  assert.equal(approvals.length, 2, "an approval recorded for each action");
  assert.equal(runtime.audit.query({ pid: doc.pid, action: "human.answer", limit: 100 }).length, 0);
});

Deno.test("attack: --yes on a command whose dangerous tail lies past the note's width — the note marks the cut, it never silently hides the rest", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.workspace, "a.txt"), "hello\n");
  const argv = ["python3", "-c", "pass", "x".repeat(300), "AND-THEN-THIS"];
  const model = script(s, "long.jsonl", [call("run_shell_command", { argv }), final("ok")]);
  const run = await s.json("agent", "--goal", "g", "--model", model, "--yes");
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const note = run.stderr.split("\n").find((l) => l.includes("--yes approved"))!;
  assert.ok(note, run.stderr);
  assert.ok(
    note.includes("AND-THEN-THIS") || /…\[truncated \d+ chars\]/.test(note),
    `the cut is visible: ${note}`,
  );
  assert.match(note, /\(request hreq_[0-9a-f]{12}, once\)$/, "names the request to look it up");
});

// ---------------------------------------------------------------------------------------------
// 3. Scope: the launcher runs its own tree only
// ---------------------------------------------------------------------------------------------

Deno.test("attack: another run's processes — runnable, overdue sleeper, left running, parked on a human — are neither run, woken, recovered nor answered by a --yes launcher", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.workspace, "a.txt"), "hello\n");
  // Another launched run, parked on an approval (a delete) with --human queue.
  const otherModel = script(s, "other.jsonl", [
    call("run_shell_command", { argv: ["python3", "-c", "open('a.txt', 'w').write('pwned')"] }),
    final("x"),
  ]);
  const parkedRun = await s.json(
    "agent",
    "--goal",
    "other",
    "--model",
    otherModel,
    "--human",
    "queue",
  );
  assert.equal(parkedRun.status, 3, parkedRun.stdout + parkedRun.stderr);
  const parked = parkedRun.doc as unknown as AgentDoc;
  let runnable: string, sleeper: string, running: string;
  {
    await using runtime = await open(s, true);
    runnable = runtime.processes.spawn({ goal: "runnable", image: "base-agent:v0" }).pid;
    sleeper = runtime.processes.spawn({ goal: "sleeper", image: "base-agent:v0" }).pid;
    assert.ok(runtime.processes.beginQuantum(sleeper));
    runtime.processes.endQuantum(sleeper, { type: "sleep", until: Date.now() - 60_000 }, {
      interrupts: 0,
      wake: null,
    });
    running = runtime.processes.spawn({ goal: "running", image: "base-agent:v0" }).pid;
    // As if another launcher were in the middle of a quantum of it.
    assert.ok(runtime.processes.beginQuantum(running));
  }
  const before = await dbState(s);
  await using peek = await open(s);
  const statuses = () =>
    [runnable, sleeper, running, parked.pid].map((pid) => peek.processes.get(pid).status);
  assert.deepEqual(statuses(), ["runnable", "sleeping", "running", "waiting_human"]);
  await peek.close();
  const model = script(s, "mine.jsonl", [call("read_text_file", { path: "a.txt" }), final("ok")]);
  const run = await s.json("agent", "--goal", "mine", "--model", model, "--yes");
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.ok(!run.stderr.includes("--yes approved"), "the other run's request was not approved");
  await using runtime = await open(s);
  for (
    const [pid, status] of [
      [runnable, "runnable"],
      [sleeper, "sleeping"],
      [running, "running"],
      [parked.pid, "waiting_human"],
    ] as const
  ) {
    assert.equal(runtime.processes.get(pid).status, status, `${pid} untouched`);
    assert.equal(
      runtime.audit.query({ pid, action: "process.recover", limit: 10 }).length,
      0,
      `${pid} not recovered`,
    );
  }
  assert.equal(runtime.human.get(parked.waiting!.request).status, "pending", "not answered");
  assert.equal(Deno.readTextFileSync(join(s.workspace, "a.txt")), "hello\n", "not run");
  // Every record the launcher added belongs to its own process.
  const after = JSON.parse(await dbState(s)) as { audit: [number, string, string | null][] };
  const beforeSeq = (JSON.parse(before) as { audit: [number][] }).audit.length;
  const added = after.audit.slice(beforeSeq);
  const mine = (run.doc as unknown as AgentDoc).pid;
  assert.deepEqual(
    added.filter(([, , pid]) => pid !== null && pid !== mine),
    [],
    "no record about another process",
  );
});

const SIGNALLER_IMAGE = `id: signaller:v0
name: signaller
version: v0
description: An agent that may fork and signal its children.
systemPrompt: |
  You signal processes.
defaultTools:
  - fork_child_process
  - signal_child_process
  - wait_child_process
  - human_output
  - process_exit
contextPolicy:
  budgetTokens: 16000
safety:
  maxMode: full-access
  notes: test image.
requiredCapabilities:
  - resource: { type: human, key: owner, scope: exact }
    rights: [write]
  - resource: { type: image, key: "*", scope: any }
    rights: [read]
`;

Deno.test("attack: a process of the launched tree signals another run's paused process (resume, terminate) — refused as not its child; the launcher never runs it", async () => {
  using s = sandbox();
  const imageFile = join(s.workspace, "..", "signaller.yaml");
  Deno.writeTextFileSync(imageFile, SIGNALLER_IMAGE);
  const init = await s.cli("init");
  assert.equal(init.status, 0, init.stderr);
  const load = await s.cli("images", "load", imageFile);
  assert.equal(load.status, 0, load.stdout + load.stderr);
  let victim: string;
  {
    await using runtime = await open(s, true);
    victim = runtime.processes.spawn({ goal: "victim", image: "base-agent:v0" }).pid;
    runtime.processes.signal(victim, "pause");
  }
  const model = script(s, "signal.jsonl", [
    call("signal_child_process", { pid: victim, signal: "resume" }),
    call("signal_child_process", { pid: victim, signal: "terminate" }),
    final("tried"),
  ]);
  const run = await s.json(
    "agent",
    "--goal",
    "g",
    "--image",
    "signaller:v0",
    "--model",
    model,
    "--yes",
  );
  assert.equal(run.status, 0, run.stdout + run.stderr);
  await using runtime = await open(s);
  const p = runtime.processes.get(victim);
  assert.equal(p.status, "paused", "still paused");
  assert.equal(
    runtime.audit.query({ pid: victim, actionPrefix: "process.", limit: 100 })
      .filter((r) => r.actor !== "operator").length,
    0,
    "nothing done to it by a process",
  );
  const turns = runtime.memory.records(`process:${victim}`, "model.turn");
  assert.equal(turns.length, 0, "never run");
});

// ---------------------------------------------------------------------------------------------
// 4. --resume with hostile pids, finished runs and children
// ---------------------------------------------------------------------------------------------

Deno.test("attack: --resume with hostile pids (empty, huge, control characters, SQL, ../) — a typed not_found error, escaped, exit 1, nothing written", async () => {
  using s = sandbox();
  const model = script(s, "s.jsonl", [final("done")]);
  const first = await s.json("agent", "--goal", "g", "--model", model, "--human", "none");
  assert.equal(first.status, 0, first.stdout);
  const before = await dbState(s);
  const stateBefore = tree(s.state);
  const workspaceBefore = tree(s.workspace);
  const hostile = [
    "",
    " ",
    "p".repeat(200_000),
    `pid_${HOSTILE}`,
    "pid_000000000000' OR '1'='1",
    "x'; DROP TABLE processes;--",
    "../../../../etc/passwd",
    "pid_000000000000/../../x",
    "pid_%00",
    "\u0000",
  ];
  for (const pid of hostile) {
    for (const mode of [[], ["--mode", "full-access"]]) {
      const label = JSON.stringify(pid.slice(0, 40)) + mode.join(" ");
      const json = await s.cli("agent", "--resume", pid, ...mode, "--model", model, "--json");
      const doc = oneDocument(json.stdout);
      const error = doc.error as { code: string; message: string };
      assert.ok(
        (json.status === 1 && error.code === "not_found") ||
          (json.status === 2 && error.code === "usage"),
        `${label}: ${json.stdout.slice(0, 300)}`,
      );
      assert.equal(json.stderr, "", label);
      const text = await s.cli("agent", "--resume", pid, ...mode, "--model", model);
      assert.equal(text.status, json.status, label);
      assert.equal(text.stdout, "", label);
      assertInert(text.stderr, label);
      assert.ok(text.stderr.length < 5_000, `${label}: a bounded message`);
    }
  }
  assert.equal(await dbState(s), before, "no record, process, request or grant added");
  assert.deepEqual(tree(s.state), stateBefore, "no lock or other file made in the state dir");
  assert.deepEqual(tree(s.workspace), workspaceBefore);
});

Deno.test("attack: --resume of a pid before any database exists — refused, no database or state directory created", async () => {
  using s = sandbox();
  const model = script(s, "s.jsonl", [final("done")]);
  for (const mode of [[], ["--mode", "read-only"]]) {
    const run = await s.cli(
      "agent",
      "--resume",
      "pid_0123456789ab",
      ...mode,
      "--model",
      model,
      "--json",
    );
    assert.equal(run.status, 1, run.stdout);
    assert.ok(oneDocument(run.stdout).error);
    assert.throws(() => Deno.statSync(s.dbPath()), Deno.errors.NotFound);
  }
  assert.deepEqual(tree(s.state), {}, "nothing in the state directory");
});

Deno.test("attack: --resume of a child (through a chain of forks) — refused, no launch recorded, no lock taken, the child not run", async () => {
  using s = sandbox();
  const model = script(s, "s.jsonl", [final("done")]);
  assert.equal((await s.cli("init")).status, 0);
  let child: string, parent: string;
  {
    await using runtime = await open(s, true);
    parent = runtime.processes.spawn({ goal: "parent", image: "base-agent:v0" }).pid;
    const middle = runtime.processes.fork(parent, { goal: "middle" }).pid;
    child = runtime.processes.fork(middle, { goal: "child" }).pid;
  }
  const before = await dbState(s);
  const stateBefore = tree(s.state);
  const run = await s.json("agent", "--resume", child, "--model", model, "--yes");
  assert.equal(run.status, 1);
  const error = run.doc.error as { code: string; message: string };
  assert.match(error.message, /is a child of pid_[0-9a-f]{12}; resume the top-level process/);
  assert.equal(await dbState(s), before);
  assert.deepEqual(tree(s.state), stateBefore, "no lock file for the child");
  await using runtime = await open(s);
  assert.equal(runtime.processes.get(child).status, "runnable");
  assert.equal(runtime.processes.get(parent).status, "runnable");
});

Deno.test("attack: --resume of a finished run with a script whose next turns are harmful — reports its status and exits by it (exited 0, failed 1), nothing runs", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.workspace, "a.txt"), "keep me\n");
  // An exited run: one turn taken; the script's later turns would delete and overwrite.
  const harmful = [
    call("delete_file", { path: "a.txt" }),
    call("write_text_file", { path: "a.txt", content: "pwned" }),
  ];
  const exitedModel = script(s, "exited.jsonl", [final("done"), ...harmful]);
  const exited = await s.json("agent", "--goal", "g", "--model", exitedModel, "--yes");
  assert.equal(exited.status, 0);
  const exitedPid = (exited.doc as unknown as AgentDoc).pid;
  // A failed run: the script ran out after one turn (replay_exhausted).
  const failedModel = script(s, "failed.jsonl", [call("read_text_file", { path: "a.txt" })]);
  const failed = await s.json("agent", "--goal", "g", "--model", failedModel, "--yes");
  assert.equal(failed.status, 1, failed.stdout);
  assert.equal((failed.doc as unknown as AgentDoc).status, "failed");
  assert.match(String((failed.doc as unknown as AgentDoc).message), /replay_exhausted/);
  const failedPid = (failed.doc as unknown as AgentDoc).pid;
  const longerFailed = script(s, "failed2.jsonl", [
    call("read_text_file", { path: "a.txt" }),
    call("read_text_file", { path: "a.txt" }),
    ...harmful,
  ]);
  for (
    const [pid, model, status, code] of [
      [exitedPid, exitedModel, "exited", 0],
      [failedPid, longerFailed, "failed", 1],
    ] as const
  ) {
    const before = (JSON.parse(await dbState(s)) as { audit: unknown[] }).audit.length;
    const again = await s.cli("agent", "--resume", pid, "--model", model, "--yes", "--json");
    assert.equal(again.status, code, again.stdout + again.stderr);
    const doc = oneDocument(again.stdout) as unknown as AgentDoc;
    assert.equal(doc.status, status);
    assert.ok(!again.stderr.includes("--yes approved"), again.stderr);
    // What the resume recorded: that it took the run up and stopped — no turn, no tool call.
    const after = JSON.parse(await dbState(s)) as { audit: [number, string, string | null][] };
    assert.deepEqual(after.audit.slice(before).map(([, action, p]) => [action, p]), [
      ["agent.resume", pid],
      ["agent.stop", pid],
    ]);
  }
  assert.equal(Deno.readTextFileSync(join(s.workspace, "a.txt")), "keep me\n");
});

// ---------------------------------------------------------------------------------------------
// 5. A script shorter than the turns already taken
// ---------------------------------------------------------------------------------------------

Deno.test("attack: --resume with a script shorter than the turns taken (and --mode full-access) — usage error saying so, exit 2, and nothing changed: no launch recorded, the run's mode kept", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.workspace, "a.txt"), "hello\n");
  const model = script(s, "s.jsonl", [
    call("read_text_file", { path: "a.txt" }),
    call("ask_human", { question: "go on?" }),
    call("write_text_file", { path: "b.txt", content: "written" }),
    final("done"),
  ]);
  const first = await s.json(
    "agent",
    "--goal",
    "g",
    "--model",
    model,
    "--preset",
    "read-only",
    "--human",
    "queue",
  );
  assert.equal(first.status, 3, first.stdout + first.stderr);
  const doc = first.doc as unknown as AgentDoc;
  const before = await dbState(s);
  const sessionsBefore = (await s.json("sessions")).doc.sessions;
  const short = script(s, "short.jsonl", [final("x")]);
  const run = await s.json("agent", "--resume", doc.pid, "--model", short, "--mode", "full-access");
  assert.equal(run.status, 2, run.stdout);
  const error = run.doc.error as { code: string; message: string };
  assert.equal(error.code, "usage");
  assert.match(error.message, /fewer turns than the 2 this run already took/);
  const after = await dbState(s);
  const sessionsAfter = (await s.json("sessions")).doc.sessions;
  // The next plain --resume must run read-only, as the run was launched: the refused command's
  // --mode full-access must not have become the run's mode.
  const answer = await s.cli("human", "answer", doc.waiting!.request, "yes");
  assert.equal(answer.status, 0, answer.stdout + answer.stderr);
  const resumed = await s.cli("agent", "--resume", doc.pid, "--model", model, "--human", "none");
  const written = (() => {
    try {
      return Deno.readTextFileSync(join(s.workspace, "b.txt"));
    } catch {
      return null;
    }
  })();
  // Defect: the launcher appends agent.resume (with the new mode) before it checks the script,
  // so the refused resume is counted as a launch and its mode is inherited by the next one.
  assert.match(resumed.stderr, /mode read-only/, "the resumed run's mode: " + resumed.stderr);
  assert.equal(written, null, "a read-only run wrote b.txt");
  assert.deepEqual(sessionsAfter, sessionsBefore, "sessions unchanged by the refused resume");
  assert.equal(after, before, "no record added by the refused resume");
});

// ---------------------------------------------------------------------------------------------
// 6. --db
// ---------------------------------------------------------------------------------------------

Deno.test("attack: --db :memory: with --goal runs and leaves nothing behind (no database, head or lock file)", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.workspace, "a.txt"), "hello\n");
  const model = script(s, "s.jsonl", [call("read_text_file", { path: "a.txt" }), final("done")]);
  const run = await s.json("agent", "--goal", "g", "--db", ":memory:", "--model", model, "--yes");
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const doc = run.doc as unknown as AgentDoc;
  assert.equal(doc.db, ":memory:");
  assert.equal(doc.status, "exited");
  assert.deepEqual(tree(s.state), {}, "nothing in the state directory");
  assert.deepEqual(tree(s.workspace), { "a.txt": "hello\n" }, "nothing in the workspace");
});

Deno.test("attack: --db inside the workspace (directly, through ../, through a symlink outside it) — refused, nothing created", async () => {
  using s = sandbox();
  const model = script(s, "s.jsonl", [final("done")]);
  const link = join(s.workspace, "..", "link-to-ws");
  Deno.symlinkSync(s.workspace, link);
  Deno.mkdirSync(join(s.workspace, "sub"));
  for (
    const db of [
      join(s.workspace, "x.db"),
      "sub/../x.db",
      "./x.db",
      join(link, "x.db"),
      join(s.workspace, "sub", "..", "..", "ws", "y.db"),
    ]
  ) {
    const run = await s.json("agent", "--goal", "g", "--db", db, "--model", model, "--yes");
    assert.ok(run.status === 2 || run.status === 1, `${db}: ${run.stdout}`);
    assert.match((run.doc.error as { message: string }).message, /inside the workspace/, db);
    assert.deepEqual(tree(s.workspace), {}, `${db}: nothing in the workspace`);
  }
  assert.deepEqual(tree(s.state), {}, "no state either");
});

// ---------------------------------------------------------------------------------------------
// 7. Exit statuses and --json
// ---------------------------------------------------------------------------------------------

/** A command that asks (not on the allowlist) and would overwrite a.txt. */
const RISKY = call("run_shell_command", {
  argv: ["python3", "-c", "open('a.txt', 'w').write('pwned')"],
});

Deno.test("attack: the exit status table — exited 0, failed (replay_exhausted) 1, parked on a human 3, refused by --human none goes on — and --json is always one document on stdout", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.workspace, "a.txt"), "hello\n");
  const cases: [string, string[], string[], number, string][] = [
    ["exited", [final("done")], [], 0, "exited"],
    ["exhausted", [call("read_text_file", { path: "a.txt" })], [], 1, "failed"],
    ["parked", [RISKY, final("x")], ["--human", "queue"], 3, "waiting_human"],
    ["none", [RISKY, final("refused")], ["--human", "none"], 0, "exited"],
  ];
  for (const [name, turns, extra, code, status] of cases) {
    const model = script(s, `${name}.jsonl`, turns);
    for (const stderrIsTerminal of [false, true]) {
      const run = await cli(
        s,
        { stderrIsTerminal, terminal: fakeTerminal([]), columns: 80 },
        "agent",
        "--goal",
        name,
        "--model",
        model,
        ...(extra.length ? extra : ["--human", "none"]),
        "--json",
      );
      assert.equal(run.status, code, `${name}: ${run.stdout}${run.stderr}`);
      const doc = oneDocument(run.stdout) as unknown as AgentDoc;
      assert.equal(doc.status, status, name);
      assert.deepEqual(
        Object.keys(doc).sort(),
        [
          "audit_summary",
          "db",
          "files_changed",
          "interrupted",
          "message",
          "pid",
          "result",
          "status",
          "waiting",
        ],
      );
      assert.equal(doc.waiting === null, code !== 3, name);
      // Under --json, no status line (it would interleave with a prompt or a reader of stderr).
      assert.ok(!run.stderr.includes("libos ▸"), `${name}: ${JSON.stringify(run.stderr)}`);
    }
  }
  assert.equal(Deno.readTextFileSync(join(s.workspace, "a.txt")), "hello\n", "never run");
  const sessions = (await s.json("sessions")).doc.sessions as { goal: string; lastExit: number }[];
  assert.deepEqual(
    sessions.map((x) => [x.goal, x.lastExit]).sort(),
    [
      ["exhausted", 1],
      ["exhausted", 1],
      ["exited", 0],
      ["exited", 0],
      ["none", 0],
      ["none", 0],
      ["parked", 3],
      ["parked", 3],
    ],
  );
});

Deno.test("attack: the audit summary of a quick first run on a fresh database says the chain is verified (it is: libos audit verify agrees)", async () => {
  for (const json of [false, true]) {
    using s = sandbox();
    const model = script(s, "s.jsonl", [final("done")]);
    const run = await s.cli(
      "agent",
      "--goal",
      "g",
      "--model",
      model,
      "--human",
      "none",
      ...(json ? ["--json"] : []),
    );
    assert.equal(run.status, 0);
    const verify = await s.cli("audit", "verify");
    assert.equal(verify.status, 0, verify.stdout + verify.stderr);
    assert.match(verify.stdout, /Audit log verified: \d+ records .*head file matches/);
    // Defect: the summary verifies against the head file before the first commit has written it.
    if (json) {
      assert.equal(
        (oneDocument(run.stdout) as unknown as AgentDoc).audit_summary.chain_verified,
        true,
      );
    } else {
      assert.match(run.stdout, /; chain verified\.\n/, run.stdout);
    }
  }
});

Deno.test("attack: libos sessions with hostile --limit values — usage errors, exit 2, one JSON document", async () => {
  using s = sandbox();
  const model = script(s, "s.jsonl", [final("done")]);
  assert.equal(
    (await s.json("agent", "--goal", "g", "--model", model, "--human", "none")).status,
    0,
  );
  const before = await dbState(s);
  for (const limit of ["0", "-1", "1001", "1e3", "abc", "", "10; DROP TABLE audit", "0x10"]) {
    const run = await s.cli("sessions", "--limit", limit, "--json");
    assert.equal(run.status, 2, `${limit}: ${run.stdout}`);
    assert.equal((oneDocument(run.stdout).error as { code: string }).code, "usage", limit);
  }
  const ok = await s.json("sessions", "--limit", "1");
  assert.equal((ok.doc.sessions as unknown[]).length, 1);
  assert.equal(await dbState(s), before, "sessions writes nothing");
});

// ---------------------------------------------------------------------------------------------
// 8. The run lock and the state directory
// ---------------------------------------------------------------------------------------------

Deno.test("attack: the agent reaches for the state directory (database, run locks) with file tools — absolute path, ../, a symlink in the workspace — and shell commands, in full-access with --yes: all refused, nothing changed", async () => {
  using s = sandbox();
  const model0 = script(s, "park.jsonl", [call("ask_human", { question: "?" }), final("x")]);
  const parked = await s.json("agent", "--goal", "g", "--model", model0, "--human", "queue");
  assert.equal(parked.status, 3);
  const locks = join(dirname(s.dbPath()), "locks");
  const lockName = [...Deno.readDirSync(locks)].map((e) => e.name)
    .find((n) => n.endsWith(".agent.lock"))!;
  assert.ok(lockName, "the parked run's lock file exists");
  const lock = join(locks, lockName);
  Deno.symlinkSync(dirname(s.dbPath()), join(s.workspace, "state-link"));
  const relative = join("..", "state", "libos", "locks", lockName);
  const model = script(s, "reach.jsonl", [
    call("read_text_file", { path: s.dbPath() }),
    call("write_text_file", { path: lock, content: "owned" }),
    call("write_text_file", { path: relative, content: "owned" }),
    call("delete_file", { path: `state-link/locks/${lockName}` }),
    call("write_text_file", { path: "state-link/locks/new.agent.lock", content: "x" }),
    call("read_directory", { path: "state-link" }),
    call("run_shell_command", { argv: ["cp", s.dbPath(), "stolen.db"] }),
    call("run_shell_command", { argv: ["cp", "-r", locks, "stolen-locks"] }),
    call("run_shell_command", { argv: ["touch", join(locks, "planted.agent.lock")] }),
    call("run_shell_command", { argv: ["ln", "-sf", "/dev/null", lock] }),
    final("done"),
  ]);
  const stateBefore = tree(s.state);
  const run = await s.json(
    "agent",
    "--goal",
    "reach",
    "--model",
    model,
    "--yes",
    "--mode",
    "full-access",
  );
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const doc = run.doc as unknown as AgentDoc;
  assert.equal(run.stderr.match(/--yes approved shell\.run/g)?.length, 4, "the commands ran");
  // Only the new run's own lock file (and the workspace's shell lock) appeared.
  const stateAfter = tree(s.state);
  const added = Object.keys(stateAfter).filter((k) => !(k in stateBefore))
    .map((k) => k.replace(/pid_[0-9a-f]{12}/, "PID").replace(/[0-9a-f]{64}/, "HASH")).sort();
  assert.deepEqual(added, ["libos/locks/HASH.PID.agent.lock", "libos/locks/HASH.lock"]);
  for (const [k, v] of Object.entries(stateBefore)) assert.equal(stateAfter[k], v, k);
  assert.ok(!Deno.lstatSync(lock).isSymlink, "the parked run's lock is still a plain file");
  assert.throws(() => Deno.lstatSync(join(locks, "planted.agent.lock")), Deno.errors.NotFound);
  // Nothing of the state directory reached the workspace.
  const ws = Object.keys(tree(s.workspace));
  assert.ok(!ws.some((k) => k.startsWith("stolen")), JSON.stringify(ws));
  await using runtime = await open(s);
  const allowed = runtime.audit.query({ pid: doc.pid, actionPrefix: "fs.", limit: 1000 })
    .filter((r) => r.decision === "allow" && /state|locks|\.db/.test(r.resource));
  assert.deepEqual(allowed.map((r) => [r.action, r.resource]), [], "no file tool reached it");
});

Deno.test("attack: a run lock pre-created as a symlink to a file elsewhere — a --resume through the real bootstrap is refused (lock_unsafe) and neither writes nor creates the target", async () => {
  using s = sandbox();
  const locks = join(dirname(s.dbPath()), "locks");
  /** A run parked on a question, its lock replaced by a symlink to `target`, then answered. */
  const plant = async (name: string, target: string) => {
    const model = script(s, `${name}.jsonl`, [call("ask_human", { question: "?" }), final("done")]);
    const parked = await s.json("agent", "--goal", name, "--model", model, "--human", "queue");
    assert.equal(parked.status, 3);
    const doc = parked.doc as unknown as AgentDoc;
    const lock = [...Deno.readDirSync(locks)].map((e) => e.name).find((n) => n.includes(doc.pid))!;
    Deno.removeSync(join(locks, lock));
    Deno.symlinkSync(target, join(locks, lock));
    const answer = await s.cli("human", "answer", doc.waiting!.request, "ok");
    assert.equal(answer.status, 0, answer.stderr);
    return { pid: doc.pid, model };
  };
  const resume = (run: { pid: string; model: string }) =>
    task(
      s.workspace,
      s.state,
      "libos",
      "agent",
      "--resume",
      run.pid,
      "--model",
      run.model,
      "--yes",
      "--json",
    );
  // A symlink to an existing file: opened for writing, it must not be changed.
  const victim = join(s.workspace, "..", "victim.txt");
  Deno.writeTextFileSync(victim, "precious\n");
  const first = await resume(await plant("existing", victim));
  assert.equal(Deno.readTextFileSync(victim), "precious\n");
  assert.equal(first.status, 1, first.stdout + first.stderr);
  assert.equal((oneDocument(first.stdout).error as { code: string }).code, "lock_unsafe");
  // A dangling symlink into the workspace: the launcher must not create the file it names.
  const planted = join(s.workspace, "planted-by-lock");
  const second = await resume(await plant("dangling", planted));
  assert.throws(
    () => Deno.lstatSync(planted),
    Deno.errors.NotFound,
    "a file was created in the workspace through a planted lock symlink",
  );
  assert.equal(second.status, 1, second.stdout + second.stderr);
  assert.equal((oneDocument(second.stdout).error as { code: string }).code, "lock_unsafe");
});
