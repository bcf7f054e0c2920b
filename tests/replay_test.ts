/**
 * `libos replay` (issue 24): recorded runs — the end-to-end fix run through the real launcher,
 * the demo's — re-decided offline under a stricter and a looser governance, with the exact
 * changes expected; under their own governance nothing changes. The replay opens the database
 * read-only, runs nothing and writes nothing.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sha256Hex } from "../runtime/base/canonical_json.ts";
import { permissionFlags } from "../cli/bootstrap.ts";
import { runCli } from "../cli/mod.ts";
import { type Run, type Sandbox, sandbox, task } from "./_cli_sandbox.ts";
import { call, FIXED, fixture, SCRIPT, yesRun } from "./agent_fixture.ts";
import { assertTraceInvariants } from "./trace_invariants.ts";

/** What a replay prints of one change, without its seq (the audit order is checked apart). */
interface Change {
  readonly turn: number | null;
  readonly pid: string;
  readonly action: string;
  readonly resource: string;
  readonly before: string | null;
  readonly approved: boolean;
  readonly after: string;
  readonly reason: string;
}

interface ReplayDoc {
  readonly actions: number;
  readonly turns: number;
  readonly changed: number;
  readonly changes: Record<string, number>;
  readonly decisions: (Change & { readonly seq: number; readonly explanation: string })[];
}

function changesOf(run: Run): { doc: ReplayDoc; changes: Change[] } {
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const doc = JSON.parse(run.stdout) as ReplayDoc;
  return {
    doc,
    changes: doc.decisions.map(({ seq: _s, explanation: _e, ...change }) => change),
  };
}

/**
 * The database's files, hashed: a replay must leave them exactly as they were. (SQLite opening a
 * WAL database, even read-only, may leave an empty `-wal` file: empty, it holds no write.)
 */
function dbState(db: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const suffix of ["", "-wal"]) {
    try {
      const bytes = Deno.readFileSync(db + suffix);
      if (suffix !== "" && bytes.length === 0) continue;
      out[suffix] = sha256Hex(bytes);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  return out;
}

/** The fix run, made once through the real launcher with --yes; returns its pid. */
async function fixRun(s: Sandbox): Promise<string> {
  const { pid } = await yesRun(s, { launcher: true });
  assert.equal(Deno.readTextFileSync(join(s.workspace, "src", "mathlib.py")), FIXED);
  return pid;
}

const PYTHON = 'shell:["python3","tests/test_mathlib.py"]';

Deno.test("libos replay of the end-to-end fix run: its own governance changes nothing; read-only denies the edit; a deny on python3 denies both test runs; an allow rule for the test allows both; the database is untouched and nothing runs", async () => {
  using s = sandbox();
  const pid = await fixRun(s);
  const db = s.dbPath();
  // The run left the test's bytecode cache; gone now, it would come back if a replay ran python.
  Deno.removeSync(join(s.workspace, "src", "__pycache__"), { recursive: true });
  const before = dbState(db);
  const policy = join(s.state, "allow-test.jsonc");
  Deno.writeTextFileSync(
    policy,
    JSON.stringify({
      version: 1,
      rules: [{ effect: "allow", shell: ["python3", "tests/test_mathlib.py"], exact: true }],
    }),
  );
  const replay = (...flags: string[]) => s.cli("replay", pid, "--json", ...flags);

  // The control: the run's own governance (workspace-write, --yes shield inside the wall).
  const same = changesOf(await replay());
  assert.equal(same.doc.actions, 5); // read, run (approved once), read + write (the edit), run
  assert.equal(same.doc.turns, 5);
  assert.deepEqual(same.changes, []);
  // Full access changes nothing here: python still runs workspace code (asked at every mode).
  assert.deepEqual(changesOf(await replay("--mode", "full-access")).changes, []);

  // Stricter: read-only denies the write; the test runs were asked and still are (inside the
  // wall, read-only lets commands be decided by the level).
  const readOnly = changesOf(await replay("--mode", "read-only"));
  assert.deepEqual(readOnly.changes, [{
    turn: 3,
    pid,
    action: "fs.write",
    resource: "fs:src/mathlib.py",
    before: "allow",
    approved: false,
    after: "deny",
    reason: "mode:read-only",
  }]);
  assert.deepEqual(readOnly.doc.changes, { "allow→deny": 1 });
  assert.equal(readOnly.doc.decisions[0]!.explanation, "mode read-only");

  // Stricter: a run deny on python3. A human approved each run once; that approval is not
  // standing authority, and a deny stands whatever anybody approved.
  const denied = changesOf(await replay("--deny", "shell:python3 *"));
  const deniedRun = (turn: number): Change => ({
    turn,
    pid,
    action: "shell.run",
    resource: PYTHON,
    before: "ask",
    approved: true,
    after: "deny",
    reason: "run:1",
  });
  assert.deepEqual(denied.changes, [deniedRun(3), deniedRun(5)]);
  assert.deepEqual(denied.doc.changes, { "ask→deny": 2 });
  assert.equal(denied.doc.decisions[0]!.explanation, "run deny #1 shell:python3 *");

  // Looser: an allow rule for exactly the test command (inside the wall) lets both runs through.
  const allowed = changesOf(await replay("--policy", policy));
  const allowedRun = (turn: number): Change => ({
    ...deniedRun(turn),
    after: "allow",
    reason: `rule:${policy}#1`,
  });
  assert.deepEqual(allowed.changes, [allowedRun(3), allowedRun(5)]);
  assert.match(
    allowed.doc.decisions[0]!.explanation,
    /^rule .*allow-test\.jsonc:1 \{"effect":"allow","shell":\["python3","tests\/test_mathlib\.py"\],"exact":true\}$/,
  );
  // Outside the wall the same rule cannot vouch for workspace code: nothing changes.
  assert.deepEqual(changesOf(await replay("--policy", policy, "--wall", "off")).changes, []);

  // The text output: each change on its line, escaped, then the summary.
  const text = await s.cli("replay", pid, "--deny", "shell:python3 *");
  assert.equal(text.status, 0, text.stderr);
  const lines = text.stdout.trimEnd().split("\n");
  assert.equal(lines.length, 3);
  assert.match(
    lines[0]!,
    /^#\d+ \(turn 3\) {2}shell\.run shell:\["python3","tests\/test_mathlib\.py"\]: ask \(approved once\) → deny {2}run deny #1 shell:python3 \*$/,
  );
  assert.equal(lines[2], "5 actions re-decided, 2 changed: ask→deny 2");

  // Through the real launcher (granted read only): the same answer.
  const launched = await task(
    s.workspace,
    s.state,
    "libos",
    "replay",
    pid,
    "--shell-policy",
    "always_allow",
    "--json",
  );
  const loose = changesOf(launched);
  assert.deepEqual(
    loose.changes.map((c) => [c.turn, c.after, c.reason]),
    [[3, "allow", "shell-policy:always_allow"], [5, "allow", "shell-policy:always_allow"]],
  );
  // No effect: the database is byte for byte as it was, the test never ran again.
  assert.deepEqual(dbState(db), before);
  assert.throws(() => Deno.statSync(join(s.workspace, "src", "__pycache__")), Deno.errors.NotFound);
  assert.equal(Deno.readTextFileSync(join(s.workspace, "src", "mathlib.py")), FIXED);
});

Deno.test("libos replay of the demo's run (libos demo --seed 7 --db PATH): its own governance changes nothing; read-only denies the approved edit; an allow policy allows it and the worker's refused write", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-replay-demo-" }));
  try {
    const db = join(root, "demo.db");
    const cwd = join(root, "ws");
    Deno.mkdirSync(cwd);
    const cli = async (...args: string[]): Promise<Run> => {
      let stdout = "";
      let stderr = "";
      const status = await runCli(args, {
        stdout: (t) => stdout += t,
        stderr: (t) => stderr += t,
        env: { get: (n) => (n === "XDG_STATE_HOME" ? join(root, "state") : undefined) },
        cwd,
      });
      return { status, stdout, stderr };
    };
    // libos demo --json --seed 7 --db PATH keeps the demo's database.
    const demo = await cli("demo", "--json", "--seed", "7", "--db", db);
    assert.equal(demo.status, 0, demo.stdout + demo.stderr);
    const { agent, worker } = (JSON.parse(demo.stdout) as {
      pids: { agent: string; worker: string };
    }).pids;
    assertTraceInvariants(db, agent); // the demo run (a fork, delegation, an approval) is clean
    const replay = async (...flags: string[]) =>
      changesOf(await cli("replay", agent, "--db", db, "--json", ...flags));
    const before = dbState(db);
    const same = await replay();
    // The agent's and its worker's: pytest.log read twice, the worker's refused write, the edit
    // (its read, and its write a human approved once).
    assert.equal(same.doc.actions, 5);
    assert.deepEqual(same.changes, []);
    const edit: Change = {
      turn: null,
      pid: agent,
      action: "fs.write",
      resource: "fs:src/mathlib.py",
      before: "ask",
      approved: true,
      after: "deny",
      reason: "mode:read-only",
    };
    assert.deepEqual((await replay("--mode", "read-only")).changes, [edit]);
    // Full access: the operator's ask on src/ still asks; the worker holds no mode grant.
    assert.deepEqual((await replay("--mode", "full-access")).changes, []);
    const policy = join(root, "loose.jsonc");
    Deno.writeTextFileSync(
      policy,
      JSON.stringify({
        version: 1,
        rules: [
          { effect: "allow", path: "src/**", rights: ["write"] },
          { effect: "allow", path: "notes.txt" },
        ],
      }),
    );
    const loose = await replay("--policy", policy);
    assert.deepEqual(loose.changes, [
      {
        turn: null,
        pid: worker,
        action: "fs.write",
        resource: "fs:notes.txt",
        before: "deny",
        approved: false,
        after: "allow",
        reason: `rule:${policy}#2`,
      },
      { ...edit, after: "allow", reason: `rule:${policy}#1` },
    ]);
    assert.deepEqual(loose.doc.changes, { "ask→allow": 1, "deny→allow": 1 });
    assert.deepEqual(dbState(db), before);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("libos replay --session decides a recorded session's tool calls under the flags, and performs none of them (attack: a write the replay allows is never made)", async () => {
  using s = sandbox();
  const script = fixture(s.workspace);
  const session = join(s.workspace, "..", "session.jsonl");
  Deno.writeTextFileSync(
    session,
    SCRIPT + call("write_text_file", { path: "pwned.txt", content: "x" }) + "\n" +
      call("fetch_url", { url: "https://example.com/x" }) + "\n",
  );
  const run = await s.json("replay", "--session", session, "--wall", "on");
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const decisions = (run.doc.decisions as Change[]).map((d) => [
    d.turn,
    d.action,
    d.resource,
    d.after,
    d.reason,
  ]);
  assert.deepEqual(decisions, [
    [1, "fs.read", "fs:tests/test_mathlib.py", "allow", "cap:mode:workspace-write#1"],
    [
      2,
      "shell.run",
      PYTHON,
      "ask",
      "workspace_code: python runs the program file tests/test_mathlib.py",
    ],
    [3, "fs.read", "fs:src/mathlib.py", "allow", "cap:mode:workspace-write#1"],
    [3, "fs.write", "fs:src/mathlib.py", "allow", "cap:mode:workspace-write#1"],
    [
      4,
      "shell.run",
      PYTHON,
      "ask",
      "workspace_code: python runs the program file tests/test_mathlib.py",
    ],
    [6, "fs.write", "fs:pwned.txt", "allow", "cap:mode:workspace-write#1"],
    // No capability names the host: denied (the mode would only have asked).
    [7, "net.fetch", "net:example.com", "deny", "default"],
  ]);
  assert.equal(run.doc.turns, 7);
  const strict = await s.json("replay", "--session", session, "--mode", "read-only");
  assert.deepEqual(
    (strict.doc.decisions as Change[]).map((d) => d.after),
    ["allow", "deny", "allow", "deny", "deny", "deny", "deny"],
  );
  // --against: only what read-only decides differently from the defaults (the same wall).
  const against = await s.json(
    "replay",
    "--session",
    session,
    "--wall",
    "on",
    "--mode",
    "read-only",
    "--against",
  );
  assert.equal(against.status, 0, against.stdout + against.stderr);
  assert.deepEqual(
    (against.doc.decisions as Change[]).map((d) => [d.turn, d.resource, d.before, d.after]),
    [[3, "fs:src/mathlib.py", "allow", "deny"], [6, "fs:pwned.txt", "allow", "deny"]],
  );
  assert.deepEqual(against.doc.changes, { "allow→deny": 2 });
  // Nothing was performed: no file written, the code unfixed, no database made.
  assert.throws(() => Deno.statSync(join(s.workspace, "pwned.txt")), Deno.errors.NotFound);
  assert.notEqual(Deno.readTextFileSync(join(s.workspace, "src", "mathlib.py")), FIXED);
  assert.throws(() => Deno.statSync(s.dbPath()), Deno.errors.NotFound);
  assert.ok(script.endsWith("script.jsonl"));
});

Deno.test("libos replay: usage errors exit 2 and say what to give", async () => {
  using s = sandbox();
  const cases: [string[], RegExp][] = [
    [["replay"], /needs either one PID or --session FILE\.jsonl/],
    [["replay", "pid_000000000001", "--session", "x.jsonl"], /either one PID or --session/],
    [["replay", "--session", "missing.jsonl"], /Cannot read the session log "missing\.jsonl"/],
    [["replay", "--session", "x", "--wall", "maybe"], /Cannot read|--wall must be on or off/],
    [["replay", "pid_000000000001", "--against"], /--against applies to --session/],
  ];
  for (const [args, message] of cases) {
    const run = await s.json(...args);
    assert.equal(run.status, 2, `${args.join(" ")}: ${run.stdout}`);
    assert.match((run.doc.error as { message: string }).message, message, args.join(" "));
  }
});

Deno.test("bootstrap permissionFlags(): libos replay may read its --session and --policy files, may write nothing, run no program and reach no network", () => {
  const flags = permissionFlags({
    args: ["replay", "--session", "s.jsonl", "--policy", "/p/loose.jsonc", "--mode", "full"],
    cwd: "/home/u",
    env: { get: (n) => ({ HOME: "/home/u", TMPDIR: "/tmp" } as Record<string, string>)[n] },
    realPath: (p) => p,
  });
  const value = (name: string) =>
    flags.find((f) => f.startsWith(`--allow-${name}=`))?.split("=")[1]?.split(",") ?? [];
  for (const file of ["/home/u/s.jsonl", "/p/loose.jsonc"]) {
    assert.ok(value("read").includes(file), file);
    assert.ok(!value("write").includes(file), file);
  }
  // Nothing is writable at all: not the workspace, the state directory, the temp dir or a --db.
  assert.ok(
    !flags.some((f) =>
      f.startsWith("--allow-run") || f.startsWith("--allow-net") || f.startsWith("--allow-write")
    ),
  );
});

Deno.test("libos replay prints a hostile argv escaped (attack: terminal control and bidi characters in a recorded command)", async () => {
  using s = sandbox();
  const session = join(s.workspace, "..", "hostile.jsonl");
  Deno.writeTextFileSync(
    session,
    call("run_shell_command", { argv: ["echo", "\u001b[2J\u001b[HAPPROVED\u202e"] }) + "\n",
  );
  const run = await s.cli("replay", "--session", session);
  assert.equal(run.status, 0, run.stderr);
  assert.ok(!run.stdout.includes("\u001b") && !run.stdout.includes("\u202e"), run.stdout);
  // The argv is shown as JSON (token boundaries visible), then escaped for the terminal.
  assert.match(run.stdout, /\["echo","\\\\u001b\[2J\\\\u001b\[HAPPROVED\\u\{202E\}"\]/);
});
