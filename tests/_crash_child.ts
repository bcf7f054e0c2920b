/**
 * The child runtime of the crash test. It spawns three processes and runs them; process
 * "effectful" starts an effect that appends a line to a marker file and then never finishes, so
 * the parent test can SIGKILL this runtime between the effect's intent and its outcome.
 *
 * Usage: deno run ... _crash_child.ts <workspace> <db> <state dir> <marker file>
 */
import { createRuntime } from "../runtime/runtime.ts";

if (import.meta.main) {
  const [workspace, db, state, marker] = Deno.args;
  if (!workspace || !db || !state || !marker) {
    throw new Error("usage: _crash_child.ts <workspace> <db> <state> <marker>");
  }
  const runtime = await createRuntime({
    workspace,
    db,
    env: { get: (n) => (n === "XDG_STATE_HOME" ? state : undefined) },
  });
  const effectful = runtime.processes.spawn({ goal: "effectful", image: "base-agent:v0" }).pid;
  runtime.processes.spawn({ goal: "steady-1", image: "base-agent:v0" });
  runtime.processes.spawn({ goal: "steady-2", image: "base-agent:v0" });
  const scheduler = runtime.scheduler({
    async runQuantum(ctx) {
      if (ctx.process.pid !== effectful) return { type: "yield" };
      await ctx.perform({ kind: "test.append_marker", request: { file: marker } }, async () => {
        await Deno.writeTextFile(marker, "effect ran\n", { append: true });
        // Never finishes: the runtime is killed while this effect is in flight.
        return await new Promise<never>(() => {});
      });
      return { type: "exit" };
    },
  }, { concurrency: 2 });
  await scheduler.runUntilIdle();
}
