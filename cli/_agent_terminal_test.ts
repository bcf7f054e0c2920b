import assert from "node:assert/strict";
import { keyArgument, progress, type Verbosity } from "./_agent_terminal.ts";
import type { CliIo } from "./_options.ts";

/** An io whose stderr is recorded (not a terminal: no status line, no colour). */
function recorder(): { io: CliIo; err: () => string } {
  let err = "";
  const io = {
    stdout: () => {},
    stderr: (t: string) => err += t,
    env: { get: () => undefined },
    cwd: "/",
  } as CliIo;
  return { io, err: () => err };
}

const TAIL = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join("\n");

function run(verbosity: Verbosity): string {
  const { io, err } = recorder();
  using shown = progress(io, { quiet: false, verbosity });
  shown.step({
    kind: "reply",
    pid: "p1",
    seq: 1,
    content: "Running the tests now.",
    tokens: 57,
    usage: { promptTokens: 50, completionTokens: 7, cost: 0.00042 },
  });
  shown.step({
    kind: "tool",
    pid: "p1",
    seq: 1,
    name: "run_shell_command",
    args: { argv: ["npm", "test"] },
  });
  shown.step({
    kind: "result",
    pid: "p1",
    seq: 1,
    name: "run_shell_command",
    exitCode: 1,
    tail: TAIL,
  });
  shown.change({
    pid: "p1",
    path: "a.ts",
    op: "write",
    diff: "--- a/a.ts\n+++ b/a.ts\n@@ -1 +1 @@\n-x\n+y\n",
    bytes: 2,
  });
  shown.step({ kind: "reply", pid: "p1", seq: 2, content: null, tokens: 100 });
  assert.deepEqual(shown.spent, { tokens: 157, cost: 0.00042 });
  return err();
}

Deno.test("progress(): tokens per turn with the cost the endpoint reported, and the run's total", () => {
  const out = run("normal");
  assert.match(
    out,
    /· p1 · turn 1 · tokens 50 in, 7 out, \$0\.0004 · run total 57 \(\$0\.0004\)\n/,
  );
  assert.match(out, /· p1 · turn 2 · tokens ~100 estimated · run total 157 \(\$0\.0004\)\n/);
  assert.match(out, /● p1 says:\n {6}│ Running the tests now\.\n/);
  assert.match(out, /→ p1 · turn 1 · run_shell_command \$ npm test\n/);
  assert.match(out, /✗ p1 · turn 1 · run_shell_command: exit 1\n/);
  assert.match(out, /✎ p1 · a\.ts edited \+1 −1\n {6}│ @@ -1 \+1 @@\n {6}│ -x\n {6}│ \+y\n/);
});

Deno.test("progress(): -q shows a failure but not the model's text, the calls or diffs; -v shows the whole output tail", () => {
  const quiet = run("quiet");
  assert.match(quiet, /✗ p1 · turn 1 · run_shell_command: exit 1\n/);
  for (const hidden of ["says:", "→ p1", "✎ p1", "tokens", "line 30"]) {
    assert.ok(!quiet.includes(hidden), `quiet hides ${hidden}`);
  }
  const normal = run("normal");
  assert.ok(
    normal.includes("│ line 30") && !normal.includes("│ line 25\n"),
    "normal: the last lines",
  );
  assert.match(normal, /… 25 more lines above/);
  const verbose = run("verbose");
  assert.ok(verbose.includes("│ line 1\n") && verbose.includes("│ line 30"), "verbose: all of it");
});

Deno.test("keyArgument(): the argument that says what a call does, escaped", () => {
  assert.equal(keyArgument({ argv: ["git", "commit", "-m", "a b"] }), "$ git commit -m 'a b'");
  assert.equal(keyArgument({ path: "src/\x1b[2Jx.ts", content: "…" }), String.raw`src/\x1B[2Jx.ts`);
  assert.equal(keyArgument({ url: "https://example.com" }), "https://example.com");
  assert.equal(keyArgument({ n: 1 }), "");
  assert.equal(keyArgument("not an object"), "");
});

Deno.test("progress(): an update_plan call is shown as its checklist under the call, each step escaped", () => {
  const { io, err } = recorder();
  using shown = progress(io, { quiet: false });
  shown.step({
    kind: "tool",
    pid: "p1",
    seq: 2,
    name: "update_plan",
    args: {
      plan: [
        { step: "Reproduce", status: "completed" },
        { step: "Fix \x1b[2J", status: "in_progress" },
        { step: "Verify", status: "pending" },
      ],
    },
  });
  const lines = err().split("\n");
  const at = lines.findIndex((l) => l.includes("update_plan"));
  assert.ok(at >= 0, err());
  assert.match(lines[at + 1]!, /│ ✔ Reproduce$/);
  assert.match(lines[at + 2]!, /│ ▸ Fix \\x1B\[2J$/);
  assert.match(lines[at + 3]!, /│ □ Verify$/);
  assert.ok(!err().includes("\x1b[2J"), "the escape never reaches the terminal");
});
