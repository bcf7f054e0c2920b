/**
 * A child for `jit_wall_test.ts`: runs one JIT call that sleeps past its wall time, under
 * permissions like the CLI bootstrap's (`--allow-run=/usr/bin/setsid` only, so `Deno.kill` on a
 * process group is refused), and prints the outcome's code and how long it took.
 */
import { JitSandbox, SandboxError } from "../jit/mod.ts";

const started = performance.now();
await using sandbox = new JitSandbox({ limits: { wallMs: 1_000 } });
let code = "returned";
try {
  await sandbox.call(
    "export async function run() { await new Promise((r) => setTimeout(r, 120_000)); }",
    {},
    () => Promise.resolve(null),
  );
} catch (error) {
  code = error instanceof SandboxError ? error.code : String(error);
}
await Deno.stdout.write(
  new TextEncoder().encode(
    JSON.stringify({ code, ms: Math.round(performance.now() - started) }) + "\n",
  ),
);
