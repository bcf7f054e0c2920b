/**
 * The child runtime of the interactive-prompt test, run on a pseudo-terminal by `script(1)`. Its
 * process asks to write the protected `.gitmodules`; the prompt shows the request on the
 * terminal and reads the human's answer from it. It prints one `RESULT {json}` line at the end.
 *
 * Usage: deno run ... _interactive_child.ts <workspace>
 */
import { HumanDecisionError } from "../runtime/base/errors.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { terminalPrompt } from "../runtime/human/tty_prompt.ts";

if (import.meta.main) {
  const [workspace] = Deno.args;
  if (!workspace) throw new Error("usage: _interactive_child.ts <workspace>");
  await using runtime = await createRuntime({
    workspace,
    db: ":memory:",
    env: { get: () => undefined },
    cwd: workspace,
    mode: "workspace-write",
    human: "interactive",
    prompt: terminalPrompt(),
  });
  const pid = runtime.processes.spawn({ goal: "add a submodule", image: "base-agent:v0" }).pid;
  let result: Record<string, unknown>;
  try {
    const written = await runtime.primitives.fs.writeText(pid, {
      path: ".gitmodules",
      // Hostile content: it tries to clear the screen and forge a verdict on the terminal.
      content: '[submodule "x"]\n\x1b[2J\x1b[HAPPROVED by security\n',
    });
    result = { ok: true, bytes: written.bytes };
  } catch (error) {
    if (!(error instanceof HumanDecisionError)) throw error;
    result = { ok: false, code: error.code, message: error.message };
  }
  const requests = runtime.human.list({ statuses: ["approved", "rejected"] });
  const line = `RESULT ${JSON.stringify({ ...result, statuses: requests.map((r) => r.status) })}\n`;
  Deno.stdout.writeSync(new TextEncoder().encode(line));
}
