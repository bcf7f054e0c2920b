/**
 * The child runtime of the shell orphan test. It runs two commands that outlive their welcome,
 * then waits to be SIGKILLed:
 *
 * - `./bg.sh` starts `sleep <background marker>` in the background with its output detached,
 *   so the call returns at once while the sleep goes on (a child left past its call);
 * - `sleep <foreground marker>` is started and never awaited (a child still inside its call).
 *
 * It prints `ready` on stdout once both sleeps exist. The parent then kills this runtime with
 * SIGKILL — no `finally`, no dispose runs — and checks that both sleeps die anyway.
 *
 * Usage: deno run ... _shell_orphan_child.ts <workspace> <background marker> <foreground marker>
 */
import { createRuntime } from "../runtime/runtime.ts";

if (import.meta.main) {
  const [workspace, background, foreground] = Deno.args;
  if (!workspace || !background || !foreground) {
    throw new Error("usage: _shell_orphan_child.ts <workspace> <background> <foreground>");
  }
  const runtime = await createRuntime({
    workspace,
    db: ":memory:",
    wall: false,
    shellPolicy: "always_allow",
  });
  const pid = runtime.processes.spawn({ goal: "orphans", image: "base-agent:v0" }).pid;
  const shell = runtime.primitives.shell;
  const started = await shell.run(pid, { argv: ["./bg.sh"], timeoutMs: 600_000 });
  if (started.exitCode !== 0) throw new Error(`bg.sh failed: ${started.stderr}`);
  // Never awaited: the runtime dies while this call is in flight.
  shell.run(pid, { argv: ["sleep", foreground], timeoutMs: 600_000 }).catch(() => {});
  await Deno.stdout.write(new TextEncoder().encode(`ready ${started.stdout.trim()}\n`));
  await new Promise<never>(() => {});
}
