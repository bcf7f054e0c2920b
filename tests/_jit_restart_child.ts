/**
 * The child runtime of the JIT restart test. It spawns one process in `queue` human mode whose
 * quantum calls a JIT tool that deletes a file; `workspace-write` asks a human before a delete,
 * so the tool blocks inside its syscall on the approval — and the parent test SIGKILLs this
 * runtime there.
 *
 * Usage: deno run ... _jit_restart_child.ts <workspace> <db> <state dir>
 */
import { callJitTool } from "../jit/jit_call.ts";
import { JitSandbox } from "../jit/sandbox.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { runtimeTargets } from "../jit/syscall_session.ts";
import { allow } from "./authority_fixture.ts";

if (import.meta.main) {
  const [workspace, db, state] = Deno.args;
  if (!workspace || !db || !state) {
    throw new Error("usage: _jit_restart_child.ts <workspace> <db> <state>");
  }
  const runtime = await createRuntime({
    workspace,
    db,
    mode: "workspace-write",
    human: "queue",
    env: { get: (n) => (n === "XDG_STATE_HOME" ? state : undefined) },
  });
  const pid = runtime.processes.spawn({ goal: "cleaner", image: "base-agent:v0" }).pid;
  allow(runtime, pid, { type: "fs", path: ".", scope: "subtree" }, ["delete"]);
  const sandbox = new JitSandbox({ limits: { wallMs: 5_000 } });
  const host = { core: runtime, targets: runtimeTargets(runtime), sandbox, ledger: runtime.ledger };
  const scheduler = runtime.scheduler({
    async runQuantum(ctx) {
      await callJitTool(host, {
        pid: ctx.process.pid,
        tool: "cleaner",
        source: `export async function run(args, libos) {
          return await libos.call("fs.delete_file", { path: "victim.txt" });
        }`,
        args: {},
        signal: ctx.signal,
      });
      return { type: "exit" };
    },
  });
  await scheduler.runUntilIdle();
}
