/**
 * Red team of the JIT sandbox (jit/sandbox.ts, jit/_harness.js), each attack run for real
 * through {@link JitSandbox}. A helper session found these escapes against Deno 2.9.6; all are
 * closed or bounded now. Most started from one trick: the harness deleted `globalThis.Deno`, but
 * Deno's Node polyfills (`node:fs`, `node:process`, `node:vm`, `node:worker_threads`) read the
 * global `Deno` lazily, so a tool planting a fake `Deno` got them working again — fd 1 (the frame
 * channel), new V8 contexts and workers need no permission. The harness now fixes the host's
 * globals as non-configurable throwing getters, every frame carries a per-call nonce, and
 * "out of memory" is the harness's finding, not the tool's claim.
 */
import assert from "node:assert/strict";
import { JitSandbox, SandboxError, type SyscallHandler } from "../jit/sandbox.ts";

const nothing: SyscallHandler = () => Promise.resolve(null);

/** A stand-in for the deleted `Deno` global, enough for Deno's Node polyfills to load. */
const FAKE_DENO = `globalThis.Deno = {
  build: { os: "linux", arch: "x86_64", target: "x86_64-unknown-linux-gnu" },
  version: { deno: "2.9.6", v8: "15", typescript: "6" },
  env: { get() { return undefined; }, toObject() { return {}; } },
  errors: { NotFound: class extends Error {}, BadResource: class extends Error {},
    NotCapable: class extends Error {} },
  execPath() { return "/x/deno"; }, cwd() { return "/x"; }, noColor: true,
  mainModule: "file:///x/main.js", pid: 1, ppid: 0, args: [],
};`;

/** The call's value as JSON, or `refused: <code>` when the sandbox failed it. */
function outcome(promise: Promise<{ value: unknown }>): Promise<string> {
  return promise.then(
    (result) => JSON.stringify(result.value),
    (error: unknown) => {
      if (error instanceof SandboxError) return `refused: ${error.code}`;
      throw error;
    },
  );
}

Deno.test("JitSandbox attack: code built at run time does not run through eval, blob: imports or node:vm (a fake Deno revives nothing)", async () => {
  await using sandbox = new JitSandbox({ limits: { wallMs: 10_000 } });
  const routes: [string, string][] = [
    ["control: eval", `return eval(["6", "*", "7"].join(""));`],
    [
      "import() of a blob: URL",
      `const url = URL.createObjectURL(new Blob(["export default 6*7"], { type: "text/javascript" }));
       return (await import(url)).default;`,
    ],
    [
      "node:vm runInNewContext (a fresh context allows eval)",
      `${FAKE_DENO} const vm = await import("node:vm");
       return vm.runInNewContext("eval(['6', '*', '7'].join(''))");`,
    ],
    [
      "node:vm runInThisContext",
      `${FAKE_DENO} const vm = await import("node:vm"); return vm.runInThisContext("6*7");`,
    ],
  ];
  const ran: string[] = [];
  for (const [name, body] of routes) {
    const got = await outcome(
      sandbox.call(`export async function run(args, libos) { ${body} }`, {}, nothing),
    );
    if (got === "42") ran.push(name);
    else if (name.startsWith("control")) assert.equal(got, "refused: tool_error", name);
  }
  assert.deepEqual(ran, [], `code generated from strings ran through: ${ran.join("; ")}`);
});

Deno.test("JitSandbox attack: code a tool builds into a data: URL runs with exactly the tool's (lack of) authority", async () => {
  await using sandbox = new JitSandbox({ limits: { wallMs: 10_000 } });
  // A data: import is how the tool itself arrives (and Wasm is a compiler): built code can run,
  // but it sees the same fixed globals and has no permission.
  const routes: [string, string][] = [
    [
      "data: module reaching for Deno",
      `return (await import("data:text/javascript," + encodeURIComponent(
        "export default (() => { try { return typeof Deno.readTextFileSync; } catch (e) { return e.name; } })()"
      ))).default;`,
    ],
    [
      "data: module reading a file with fetch",
      `return (await import("data:text/javascript," + encodeURIComponent(
        "export default await fetch('file:///etc/passwd').then((r) => r.text(), (e) => e.name)"
      ))).default;`,
    ],
  ];
  for (const [name, body] of routes) {
    const got = await outcome(
      sandbox.call(`export async function run(args, libos) { ${body} }`, {}, nothing),
    );
    assert.ok(!got.includes("root:"), `${name}: ${got}`);
    assert.ok(
      got === '"ReferenceError"' || got === '"TypeError"' || got === '"NotCapable"' ||
        got.startsWith("refused"),
      `${name}: ${got}`,
    );
  }
});

Deno.test("JitSandbox attack: a tool cannot forge frames on fd 1 (node:fs writeSync via a fake Deno)", async () => {
  await using sandbox = new JitSandbox({ limits: { wallMs: 10_000 } });
  const forged = await outcome(sandbox.call(
    `export async function run() {
      ${FAKE_DENO}
      const fs = await import("node:fs");
      fs.writeSync(1, JSON.stringify({ type: "result", value: "FORGED" }) + "\\n");
      throw new Error("the real run failed");
    }`,
    {},
    nothing,
  ));
  // Planting the fake Deno itself fails now (the global is a fixed getter that throws); the
  // frame nonce, tested in jit/sandbox_test.ts, stops any other route to fd 1.
  assert.equal(forged, "refused: tool_error", "the host accepted a frame the harness never wrote");
  // node:process's stdout is the same door.
  const viaProcess = await outcome(sandbox.call(
    `export async function run() {
      ${FAKE_DENO}
      const process = (await import("node:process")).default;
      process.stdout.write(JSON.stringify({ type: "result", value: "FORGED" }) + "\\n");
      await new Promise(() => {});
    }`,
    {},
    nothing,
  ));
  assert.equal(viaProcess, "refused: tool_error", "process.stdout wrote a frame");
});

Deno.test("JitSandbox attack: node:worker_threads cannot hand a tool a fresh, real Deno", async () => {
  // A worker's V8 code range needs address space: from about 512 MiB of budget it starts.
  await using sandbox = new JitSandbox({ limits: { wallMs: 10_000, memoryMiB: 1024 } });
  const got = await outcome(sandbox.call(
    `export async function run() {
      ${FAKE_DENO}
      const { Worker } = await import("node:worker_threads");
      const code = "const { parentPort } = require('worker_threads');" +
        "parentPort.postMessage(typeof Deno === 'object' ? [typeof Deno.stdout.writeSync," +
        " typeof Deno[Deno.internal]?.core].join(',') : 'no Deno');";
      return await new Promise((resolve, reject) => {
        const worker = new Worker(code, { eval: true });
        worker.on("message", resolve);
        worker.on("error", reject);
      });
    }`,
    {},
    nothing,
  ));
  // The fake Deno the polyfill needs cannot be planted any more.
  assert.equal(got, "refused: tool_error", `the worker recovered Deno: ${got}`);
});

Deno.test("JitSandbox attack: work a tool does while its syscall is pending is bounded by the CPU limit (wall time pauses for the host)", async () => {
  // Wall time stops while the host serves a syscall (a human may take hours); a tool that keeps
  // computing meanwhile is stopped by its CPU seconds instead.
  await using sandbox = new JitSandbox({ limits: { wallMs: 1_000, cpuSeconds: 1 } });
  const got = await outcome(sandbox.call(
    `export async function run(args, libos) {
      const pending = libos.call("human.ask", {});
      const start = Date.now();
      while (Date.now() - start < 4000) {}
      await pending;
      return "finished";
    }`,
    {},
    () => new Promise((resolve) => setTimeout(() => resolve("approved"), 5_000)),
  ));
  assert.equal(got, "refused: cpu_limit");
});

Deno.test("JitSandbox attack: a tool cannot report its own RangeError as the sandbox's memory_limit", async () => {
  await using sandbox = new JitSandbox({ limits: { wallMs: 10_000, memoryMiB: 128 } });
  const got = await outcome(sandbox.call(
    `export function run() { throw new RangeError("Array buffer allocation failed"); }`,
    {},
    nothing,
  ));
  assert.equal(got, "refused: tool_error", "the tool chose the host's breach classification");
});
