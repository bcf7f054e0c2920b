/**
 * What `libos agent` shows while it runs (issue 23, "see the run"), captured from a real
 * pseudo-terminal through `deno task libos` and the bootstrap: the model's text, each tool call
 * with its key argument, an edit that needed no approval with its diff, a command refused by the
 * hardline floor with its reason, an approval card with the model's stated reason, a failing test
 * command with its exit code and the tail of its output, and the tokens of each turn — every one
 * of them visible, and everything the model or the workspace wrote shown escaped.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sandbox, task } from "./_cli_sandbox.ts";
import type { TerminalIo } from "../runtime/human/tty_prompt.ts";
import {
  call,
  cli,
  final,
  FIX_EDIT,
  fixRepository,
  onTerminal,
  RUN_TESTS,
  turn,
} from "./agent_fixture.ts";

const ESC = "\x1b";

Deno.test("libos agent on a real terminal: the screen shows the model's text, an unasked edit's diff, a refused command, the card with the model's reason, a failing test's exit and output, and tokens — all escaped", async () => {
  using s = sandbox();
  fixRepository(s.workspace);
  const script = join(s.workspace, "..", "screen.jsonl");
  Deno.writeTextFileSync(
    script,
    [
      // Model text that tries to clear the screen, and an edit that needs no approval in
      // workspace-write whose content tries to retitle the terminal.
      turn({
        content: `Plan first ${ESC}[2J${ESC}[H— then the fix`,
        tool_calls: [{
          name: "write_text_file",
          arguments: { path: "PLAN.md", content: `step 1\n${ESC}]0;pwned${ESC}\\ step 2\n` },
        }],
      }),
      // The hardline floor refuses this, whatever the human would say.
      call("run_shell_command", { argv: ["rm", "-rf", "/"] }),
      // Asks (the default shell policy): the card carries the model's stated reason.
      call("run_shell_command", {
        argv: ["python3", "tests/test_mathlib.py"],
        justification: `see the failure ${ESC}[31mAPPROVED${ESC}[0m`,
      }),
      final("The test fails in add(); stopping here."),
    ].join("\n") + "\n",
  );
  const launcher = await onTerminal(s, script);
  let screen = launcher.screen;
  try {
    const { rest, code } = await launcher.type("y\n");
    screen += rest;
    assert.equal(code, 0, screen);
  } finally {
    await launcher.close();
  }
  screen = screen.replaceAll("\r\n", "\n");
  const pid = /started (pid_[0-9a-f]{12})/.exec(screen)?.[1];
  assert.ok(pid, screen);
  // The model's text, escaped, under its gutter.
  assert.ok(screen.includes(`● ${pid} says:`), screen);
  assert.ok(screen.includes(String.raw`│ Plan first \x1B[2J\x1B[H— then the fix`), screen);
  // Each tool call on one line, with its key argument.
  assert.match(screen, new RegExp(`→ ${pid} · turn 1 · write_text_file PLAN\\.md\\n`));
  assert.match(screen, new RegExp(`→ ${pid} · turn 2 · run_shell_command \\$ rm -rf /\\n`));
  // The unasked edit and its diff; the hostile bytes only as visible escapes.
  assert.match(screen, new RegExp(`✎ ${pid} · PLAN\\.md created \\(\\+2\\)\\n`));
  assert.ok(screen.includes("│ +step 1\n"), screen);
  assert.ok(screen.includes(String.raw`│ +\x1B]0;pwned\x1B\\ step 2`), screen);
  // The refusal, with the layer that refused.
  assert.match(
    screen,
    new RegExp(`✗ ${pid} · turn 2 · run_shell_command: capability_denied — .*hardline`),
  );
  // The card: compact, with who asked and the model's words marked and escaped.
  const card = screen.slice(screen.indexOf("⚑ Approve?"), screen.indexOf("\n> "));
  assert.ok(card.length > 0, screen);
  assert.ok(card.split("\n").length <= 8, card);
  assert.match(card, /\$ python3 tests\/test_mathlib\.py\n/);
  assert.match(card, /asked by: the shell policy/);
  assert.ok(
    card.includes(String.raw`the model says: «see the failure \x1B[31mAPPROVED\x1B[0m»`),
    card,
  );
  // The failing test: its exit code and the tail of its output.
  assert.match(screen, new RegExp(`✗ ${pid} · turn 3 · run_shell_command: exit 1\\n`));
  assert.match(screen, /│ FAILED \(failures=1\)\n/);
  // Tokens per turn and the run's total.
  assert.match(
    screen,
    new RegExp(`· ${pid} · turn 1 · tokens ~[\\d,]+ estimated · run total [\\d,]+`),
  );
  // The final answer.
  assert.match(screen, /The test fails in add\(\); stopping here\./);
  // No escape sequence but the status line's own clear-line reached the terminal.
  const sequences = screen.split(ESC).slice(1).map((rest) => rest.slice(0, 3));
  assert.deepEqual([...new Set(sequences)], sequences.length ? ["[2K"] : [], "only libos's own");
  assert.ok(!screen.includes("pwned\x07"));
});

Deno.test("before/after: a scripted survey-and-fix run through the real launcher asks only for what runs workspace code — 2 asks where every command used to ask (8)", async () => {
  using s = sandbox();
  fixRepository(s.workspace);
  Deno.writeTextFileSync(join(s.workspace, "README.md"), "# mathlib\n");
  const git = (...args: string[]) =>
    new Deno.Command("git", {
      args: ["-c", "user.email=t@example.invalid", "-c", "user.name=t", ...args],
      cwd: s.workspace,
      stdout: "null",
      stderr: "null",
    }).outputSync();
  git("init", "-q");
  git("add", "-A");
  git("commit", "-qm", "init");
  const sh = (...argv: string[]) => call("run_shell_command", { argv });
  const script = join(s.workspace, "..", "survey_fix.jsonl");
  Deno.writeTextFileSync(
    script,
    [
      sh("ls", "-la"),
      sh("cat", "README.md"),
      sh("git", "status", "--short"),
      sh("git", "log", "--oneline", "-5"),
      sh("grep", "-rn", "def add", "src"),
      call("read_text_file", { path: "tests/test_mathlib.py" }),
      turn({ tool_calls: [RUN_TESTS] }),
      turn({ tool_calls: [FIX_EDIT] }),
      turn({ tool_calls: [RUN_TESTS] }),
      sh("git", "diff", "--stat"),
      final("Fixed add()."),
    ].join("\n") + "\n",
  );
  const run = await task(
    s.workspace,
    s.state,
    "libos",
    "agent",
    "--goal",
    "Survey, then fix the failing test",
    "--model",
    `replay:${script}`,
    "--yes",
    "--json",
  );
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const doc = JSON.parse(run.stdout) as {
    audit_summary: { asked: number; tool_calls: number; human_decisions: number };
  };
  assert.equal(doc.audit_summary.tool_calls, 10);
  // The two test runs (python runs workspace code); ls, cat, git status/log/diff and grep run
  // read-only, confined, without a person.
  assert.equal(doc.audit_summary.asked, 2, run.stderr);
  assert.equal(
    run.stderr.match(/--yes approved shell\.run shell:python3 tests\/test_mathlib\.py/g)?.length,
    2,
  );
  assert.equal(
    Deno.readTextFileSync(join(s.workspace, "src", "mathlib.py")),
    "def add(a, b):\n    return a + b\n",
  );
});

Deno.test("silent spot: a card decided from another terminal is withdrawn at once and says so; the run goes on with that decision (in process, two launchers' worth of libos)", async () => {
  using s = sandbox();
  fixRepository(s.workspace);
  const script = join(s.workspace, "..", "elsewhere.jsonl");
  Deno.writeTextFileSync(
    script,
    [call("run_shell_command", { argv: ["python3", "tests/test_mathlib.py"] }), final("Ran it.")]
      .join("\n") + "\n",
  );
  // A terminal whose human never types: the card waits until another terminal decides.
  let screen = "";
  let shown: (id: string) => void = () => {};
  const onCard = new Promise<string>((resolve) => shown = resolve);
  const reads: Promise<number | null>[] = [];
  const terminal: TerminalIo = {
    read: () => {
      const never = new Promise<number | null>(() => {});
      reads.push(never);
      return never;
    },
    isTerminal: () => true,
    write(text) {
      screen += text;
      const card = /request (hreq_[0-9a-f]{12})/.exec(screen);
      if (card) shown(card[1]!);
    },
  };
  const run = cli(
    s,
    { terminal, env: { NO_COLOR: "1" } },
    "agent",
    "--goal",
    "Run the test",
    "--model",
    `replay:${script}`,
  );
  const id = await onCard;
  const approved = await cli(s, {}, "human", "approve", id);
  assert.equal(approved.status, 0, approved.stderr);
  const { status, stdout, stderr } = await run;
  assert.equal(status, 0, stdout + stderr + screen);
  assert.match(
    stderr,
    new RegExp(
      `libos: request ${id} was approved by human:cli in another place; the question here is withdrawn`,
    ),
  );
  // The command ran once, on the other terminal's approval; the prompt read only once.
  assert.match(stderr, /✗ pid_\w+ · turn 1 · run_shell_command: exit 1/);
  assert.equal(reads.length, 1);
  assert.match(stdout, /exited — Ran it\./);
});
