/**
 * The `interactive` human mode on a real pseudo-terminal: `script(1)` runs a runtime whose
 * process asks for approval, and the test types the answer into the terminal.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "./_cli_sandbox.ts";

const GUTTER = "  │ ";
const HOSTILE = '[submodule "x"]\n\x1b[2J\x1b[HAPPROVED by security\n';

function quote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Runs the child on a terminal, types `typed`, and returns the terminal's text and the result. */
async function onTerminal(
  typed: string,
): Promise<{ screen: string; result: Record<string, unknown>; file: string | null }> {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-tty-" }));
  try {
    const workspace = join(root, "ws");
    Deno.mkdirSync(workspace);
    const command = [
      Deno.execPath(),
      "run",
      "--quiet",
      "--no-prompt",
      `--config=${join(REPO, "deno.json")}`,
      `--allow-read=${root}`,
      `--allow-write=${root}`,
      join(REPO, "tests", "_interactive_child.ts"),
      workspace,
    ].map(quote).join(" ");
    const child = new Deno.Command("script", {
      args: ["--quiet", "--return", "--command", command, "/dev/null"],
      env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", TERM: "dumb" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(typed));
    const output = await child.output();
    await writer.close().catch(() => {});
    const screen = new TextDecoder().decode(output.stdout).replaceAll("\r\n", "\n");
    assert.equal(output.code, 0, screen + new TextDecoder().decode(output.stderr));
    // The typed answer was echoed before the prompt, so the result follows "> " on its line.
    const line = /RESULT (\{.*\})$/m.exec(screen);
    assert.ok(line, `no RESULT line on the terminal:\n${screen}`);
    let file: string | null = null;
    try {
      file = Deno.readTextFileSync(join(workspace, ".gitmodules"));
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    return { screen, result: JSON.parse(line[1]!), file };
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
}

/** The compact card: what, who asked, the content's first lines in the gutter, the choices. */
function assertShownSafely(screen: string): void {
  assert.match(screen, /⚑ Approve\? · process pid_[0-9a-f]{12} · request hreq_[0-9a-f]{12}\n/);
  assert.match(screen, /\n {2}fs\.write \.gitmodules \(new file, \d+ bytes\)\n/);
  assert.match(screen, /\n {2}asked by: a protected path \(\*\*\/\.gitmodules\)\n/);
  assert.match(screen, /\n {2}y yes, once · n \[reason\] no · d details\n/);
  assert.ok(!screen.includes("\x1b[2J") && !screen.includes("\x1b[H"), "no raw escape sequence");
  assert.ok(screen.includes(String.raw`\x1B[2J\x1B[HAPPROVED by security`), "shown, escaped");
  for (const l of screen.split("\n").filter((l) => l.includes("APPROVED by security"))) {
    assert.ok(l.startsWith(GUTTER), `agent text outside the gutter: ${JSON.stringify(l)}`);
  }
  const card = screen.slice(screen.indexOf("⚑"), screen.indexOf("\n> "));
  assert.ok(card.split("\n").length <= 8, `the card is at most eight lines:\n${card}`);
}

Deno.test("terminalPrompt() on a real terminal: the human sees the escaped request and approves with y; the write happens once", async () => {
  const { screen, result, file } = await onTerminal("y\n");
  assertShownSafely(screen);
  assert.ok(!screen.includes("why it asks:"), "the details stay one key away");
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.deepEqual(result.statuses, ["approved"]);
  assert.equal(file, HOSTILE, "the exact content shown was written");
});

Deno.test("terminalPrompt() on a real terminal: n with a reason rejects, and nothing is written", async () => {
  const { screen, result, file } = await onTerminal("n not on a Friday\n");
  assertShownSafely(screen);
  assert.equal(result.ok, false);
  assert.equal(result.code, "approval_rejected");
  assert.match(String(result.message), /not on a Friday/);
  assert.deepEqual(result.statuses, ["rejected"]);
  assert.equal(file, null);
});

Deno.test("terminalPrompt() on a real terminal: unclear answers are asked again, and three of them reject", async () => {
  const { screen, result, file } = await onTerminal("maybe\nyes please\n42\n");
  assert.equal(screen.split("Please answer y, n or d (details).").length - 1, 3);
  assert.equal(result.ok, false);
  assert.equal(result.code, "approval_rejected");
  assert.equal(file, null);
});

Deno.test("terminalPrompt() on a real terminal: d shows the whole request (escaped, in the gutter) and asks again; then y approves", async () => {
  const { screen, result, file } = await onTerminal("d\ny\n");
  assertShownSafely(screen);
  assert.match(screen, /Approval request hreq_[0-9a-f]{12} \(pending\)/);
  assert.match(screen, /\nwhy it asks: protected:\*\*\/\.gitmodules\n/);
  assert.match(screen, /\nwill create: yes\n/);
  assert.equal(screen.split("\n> ").length - 1, 2, "asked twice: d is not an answer");
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.equal(file, HOSTILE);
});
