/**
 * The child of the JIT orphan test: it starts a tool call that never ends (a busy loop under a
 * long wall-time limit) and a warm pool, prints `ready`, and waits to be SIGKILLed.
 *
 * Usage: deno run ... _jit_orphan_child.ts
 */
import { JitSandbox } from "../jit/sandbox.ts";

if (import.meta.main) {
  const sandbox = new JitSandbox({ poolSize: 2, limits: { wallMs: 600_000, cpuSeconds: 600 } });
  sandbox.warm();
  sandbox.call("export function run() { for (;;) {} }", {}, () => Promise.resolve(null))
    .catch(() => {});
  // Give the call's process time to start its loop.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await Deno.stdout.write(new TextEncoder().encode("ready\n"));
  await new Promise<never>(() => {});
}
