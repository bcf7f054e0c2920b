/**
 * `libos log PID` (issue 23) through the real launcher: a scripted run that reads a hostile file,
 * edits, runs commands a human (`--yes`) approves, checkpoints and answers with hostile text —
 * then its whole transcript, escaped, with `--json` and the "files changed" summary; after exit
 * the turns and the checkpoint are still there; a running (parked) process works too; an unknown
 * pid is `not_found` saying how to list processes.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { sandbox, task } from "./_cli_sandbox.ts";
import { call, final, fixRepository, RUN_TESTS, turn, yesRun } from "./agent_fixture.ts";
import { pagerArgv } from "../cli/log_command.ts";

/** Hostile bytes a file and the model plant: clear the screen, retitle it, return the carriage. */
const HOSTILE = "\x1b[2J\x1b]0;pwned\x07\rHIDDEN";

function script(dir: string, lines: readonly string[]): string {
  const file = join(dir, "..", "script.jsonl");
  Deno.writeTextFileSync(file, lines.join("\n") + "\n");
  return file;
}

const RUN = [
  call("read_text_file", { path: "notes.txt" }),
  turn({ content: `running the tests ${HOSTILE}`, tool_calls: [RUN_TESTS] }),
  call("edit_file", {
    path: "src/mathlib.py",
    old_string: "return a + b + 1",
    new_string: "return a + b",
  }),
  call("checkpoint_create", { label: "after the fix" }),
  final(`Fixed. ${HOSTILE}`),
];

interface Entry {
  readonly type: string;
  readonly [key: string]: unknown;
}

Deno.test("libos log through the launcher: the whole transcript of a finished run — model text, tool calls, results, the edit's diff, decisions with who decided, a checkpoint, files changed — every hostile byte escaped; --json parses", async () => {
  using s = sandbox();
  fixRepository(s.workspace);
  Deno.writeTextFileSync(join(s.workspace, "notes.txt"), `notes ${HOSTILE}\n`);
  const file = script(s.workspace, RUN);
  const { pid } = await yesRun(s, { script: file, launcher: true });

  const log = await task(s.workspace, s.state, "libos", "log", pid);
  assert.equal(log.status, 0, log.stderr);
  const text = log.stdout;
  // Nothing hostile reaches the terminal as it was written.
  for (const raw of ["\x1b", "\x07", "\r"]) {
    assert.ok(!text.includes(raw), `no raw ${JSON.stringify(raw)} reaches the terminal`);
  }
  assert.match(text, /│ Fixed\. \\x1B\[2J\\x1B\]0;pwned\\x07\\rHIDDEN/, "model text, escaped");
  assert.match(
    text,
    /"content":" {5}1\\\\tnotes \\\\u001b\[2J/,
    "the file the tool read (numbered), escaped",
  );
  assert.match(text, new RegExp(`process ${pid}: exited`));
  assert.match(text, /running the tests \\x1B\[2J/, "the model's text, escaped");
  assert.match(
    text,
    /call read_text_file \{"path":"notes.txt"\}/,
    "a tool call with its arguments",
  );
  assert.match(text, /result of read_text_file: ok/);
  assert.match(text, /result of run_shell_command: exit 1/, "the first test run failed");
  assert.ok(!text.includes("its output was not stored"), "an approved command's output is kept");
  assert.match(text, /AssertionError|FAILED|Error/, "the failing run's output is in the log");
  assert.match(text, /diff of src\/mathlib.py/);
  assert.match(text, /│ -return a \+ b \+ 1/);
  assert.match(text, /│ \+return a \+ b/);
  assert.match(
    text,
    /decision: allow shell\.run shell:python3 tests\/test_mathlib\.py \(exit 1\) by cap:cap_[0-9a-f]{12} — decided by human:yes, request hreq_[0-9a-f]{12}/,
    "a decision names the capability, the human request and who answered it",
  );
  assert.match(text, /checkpoint obj_[0-9a-f]{12} after the fix/);
  assert.match(
    text,
    /files changed: 1\n {2}edited {2}src\/mathlib\.py\n {2}and 1 command\(s\) ran/,
  );
  assert.match(text, /total: 1 process\(es\), 5 turn\(s\), 4 tool call\(s\), \d+ tokens/);

  const json = await task(s.workspace, s.state, "libos", "log", pid, "--json");
  assert.equal(json.status, 0, json.stderr);
  const doc = JSON.parse(json.stdout) as { pid: string; entries: Entry[] };
  assert.equal(doc.pid, pid);
  const types = new Set(doc.entries.map((e) => e.type));
  for (const t of ["process", "turn", "tool_call", "tool_result", "diff", "decision"]) {
    assert.ok(types.has(t), `an entry of type ${t}`);
  }
  const files = doc.entries.find((e) => e.type === "files_changed") as
    | { files: { path: string; change: string }[]; commands: number }
    | undefined;
  assert.deepEqual(files?.files.map((f) => [f.path, f.change]), [["src/mathlib.py", "edited"]]);
  const turns = doc.entries.filter((e) => e.type === "turn");
  assert.equal(turns.at(-1)?.content, `Fixed. ${HOSTILE}`, "JSON keeps the text as it was");

  // After exit the turns, the tool results and the checkpoint are retained, marked with when.
  const db = new DatabaseSync(s.dbPath(), { readOnly: true });
  try {
    const kinds = db.prepare(
      "SELECT type, count(*) AS n FROM objects WHERE namespace = ? GROUP BY type ORDER BY type",
    ).all(`process:${pid}`).map((r) => `${r.type}:${r.n}`);
    // Every call's result, the one that waited on the human (--yes) included.
    assert.deepEqual(kinds, ["checkpoint:1", "model.final:1", "model.turn:5", "tool.result:4"]);
    const retained = db.prepare("SELECT since, removed FROM retained WHERE pid = ?").get(pid);
    assert.equal(typeof retained?.since, "number");
    assert.equal(retained?.removed, null);
  } finally {
    db.close();
  }
});

Deno.test("libos log works on a process that is still alive (parked on a human) and on its tree; an unknown pid is not_found and says to run libos ps", async () => {
  using s = sandbox();
  fixRepository(s.workspace);
  const file = script(s.workspace, [
    turn({ content: "first I run the tests", tool_calls: [RUN_TESTS] }),
    final("done"),
  ]);
  const run = await s.json(
    "agent",
    "--goal",
    "Make the test pass",
    "--model",
    `replay:${file}`,
    "--human",
    "queue",
  );
  assert.equal(run.status, 3, run.stdout + run.stderr);
  const pid = run.doc.pid as string;
  const log = await s.cli("log", pid, "--tree");
  assert.equal(log.status, 0, log.stderr);
  assert.match(log.stdout, new RegExp(`process ${pid}: waiting_human`));
  assert.match(log.stdout, /first I run the tests/);
  assert.match(log.stdout, /call run_shell_command/);
  assert.match(log.stdout, /decision: ask shell\.run shell:python3 tests\/test_mathlib\.py/);
  assert.match(log.stdout, /files changed: 0/);
  const missing = await s.json("log", "pid_0123456789ab");
  assert.equal(missing.status, 1);
  const error = missing.doc.error as { code: string; message: string };
  assert.equal(error.code, "not_found");
  assert.match(error.message, /libos ps/);
  const usage = await s.cli("log");
  assert.equal(usage.status, 2);
});

Deno.test("pagerArgv: $PAGER split into words, else less -R; cat or an empty PAGER prints plainly; an unreadable PAGER falls back to less", () => {
  const env = (value: string | undefined) => ({ get: () => value });
  assert.deepEqual(pagerArgv(env(undefined)), ["less", "-R"]);
  assert.deepEqual(pagerArgv(env("more")), ["more"]);
  assert.deepEqual(pagerArgv(env("less -FRX")), ["less", "-FRX"]);
  assert.equal(pagerArgv(env("cat")), null);
  assert.equal(pagerArgv(env("  ")), null);
  const denied = {
    get(): string | undefined {
      throw new Deno.errors.NotCapable('Requires env access to "PAGER"');
    },
  };
  assert.deepEqual(pagerArgv(denied), ["less", "-R"]);
});
