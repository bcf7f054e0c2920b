/**
 * The sandbox holds alone (DESIGN §7): every hostile source of the validator's table runs with
 * validation switched off, and none reads a host file or the host's environment; the benign tools
 * run and return. (A live server and a marker file are aimed at directly in jit/sandbox_test.ts:
 * these rows do not know their addresses.)
 */
import assert from "node:assert/strict";
import { JitSandbox, SandboxError } from "../jit/sandbox.ts";

interface Row {
  readonly name: string;
  readonly source: string;
}

function table(file: string): Row[] {
  const text = Deno.readTextFileSync(new URL(`./fixtures/jit/${file}`, import.meta.url));
  return text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
}

const ARGS = { path: "a.txt", word: "x", text: "hello", items: [1, 2, 3], n: 3 };

Deno.test("JitSandbox.call() attack: no hostile source reads a host file or the host's environment, with validation off (the network and writes: jit/sandbox_test.ts)", async () => {
  // hostile_runtime.jsonl: sources only the sandbox can stop (a key that arrives at run time).
  const rows = [...table("hostile.jsonl"), ...table("hostile_runtime.jsonl")];
  const passwd = Deno.readTextFileSync("/etc/passwd").split("\n")[0]!;
  // The host environment holds a canary the sandbox must never see.
  const canary = `canary-${crypto.randomUUID()}`;
  Deno.env.set("LIBOS_JIT_CANARY", canary);
  await using sandbox = new JitSandbox({ limits: { wallMs: 3_000, memoryMiB: 64 } });
  const leaks: string[] = [];
  try {
    for (const row of rows) {
      const outcome = await sandbox.call(row.source, ARGS, () => Promise.resolve(null)).then(
        (r) => JSON.stringify([r.value, r.logs]),
        (e: unknown) => e instanceof SandboxError ? e.message : `unexpected: ${e}`,
      );
      if (outcome.startsWith("unexpected")) leaks.push(`${row.name}: ${outcome}`);
      for (const secret of [passwd, canary]) {
        if (secret && outcome.includes(secret)) leaks.push(`${row.name} leaked ${secret}`);
      }
    }
  } finally {
    Deno.env.delete("LIBOS_JIT_CANARY");
  }
  assert.deepEqual(leaks, []);
});

Deno.test("JitSandbox.call() runs the benign tools to their result", async () => {
  await using sandbox = new JitSandbox({ limits: { wallMs: 3_000, memoryMiB: 64 } });
  const failed: string[] = [];
  for (const row of table("benign.jsonl")) {
    await sandbox.call(
      row.source,
      ARGS,
      (name, args) => Promise.resolve({ text: "hello world", name, args }),
    ).catch((e: unknown) => failed.push(`${row.name}: ${e}`));
  }
  assert.deepEqual(failed, []);
});
