import assert from "node:assert/strict";
import { join } from "node:path";
import { BudgetExhaustedError, NotFoundError } from "../runtime/base/errors.ts";
import { JitSandbox, SandboxError, type SyscallHandler } from "./sandbox.ts";
import { VETTED_IMPORTS } from "./validator.ts";
import {
  failure as failed,
  processesWith as pidsWith,
  spawnTestChild,
} from "../tests/shell_fixture.ts";

const echo: SyscallHandler = (name, args) => Promise.resolve({ name, args });

/** The sandbox error a call fails with. */
const failure = (promise: Promise<unknown>) => failed(promise, SandboxError);

/** Host processes whose command line mentions `marker`, as `ps` lines. */
const processesWith = (marker: string) => pidsWith(marker).map(String);

Deno.test("JitSandbox.call() runs a tool, answers its syscalls and returns its result and logs", async () => {
  await using sandbox = new JitSandbox();
  const seen: string[] = [];
  const result = await sandbox.call(
    `export async function run(args, libos) {
      console.log("start", args.n);
      const a = await libos.call("clock.now", { zone: "UTC" });
      let failed = "";
      try { await libos.call("fs.read", {}); } catch (e) { failed = e.name + ":" + e.code; }
      return { twice: args.n * 2, a, failed };
    }`,
    { n: 21 },
    (name, args) => {
      seen.push(name);
      if (name === "fs.read") return Promise.reject(new NotFoundError("no such file"));
      return Promise.resolve({ at: 7, args });
    },
  );
  assert.deepEqual(result.value, {
    twice: 42,
    a: { at: 7, args: { zone: "UTC" } },
    failed: "SyscallError:not_found",
  });
  assert.deepEqual(seen, ["clock.now", "fs.read"]);
  assert.deepEqual(result.logs, [{ level: "log", text: "start 21" }]);
  assert.equal(result.syscalls, 2);
});

Deno.test("JitSandbox.call() answers syscalls a tool awaits together (Promise.all over libos.call), each with its own reply", async () => {
  await using sandbox = new JitSandbox({ limits: { wallMs: 5_000 } });
  const seen: number[] = [];
  const result = await sandbox.call(
    `export const run = async (args, libos) => {
      const all = await Promise.all(args.ns.map((n) => libos.call("echo", { n })));
      const failed = await Promise.allSettled([libos.call("fail", {}), libos.call("echo", { n: 99 })]);
      return { all, failed: failed.map((s) => s.status) };
    };`,
    { ns: Array.from({ length: 40 }, (_, i) => i) },
    (name, args) => {
      seen.push(Number(args.n));
      if (name === "fail") return Promise.reject(new NotFoundError("no"));
      // Replies come back at uneven speeds, some at once (so several reach the tool's stdin in
      // one read); each still reaches its own caller.
      const n = Number(args.n);
      if (n % 3 === 0) return Promise.resolve(n * 2);
      return new Promise((resolve) => setTimeout(() => resolve(n * 2), n % 3));
    },
  );
  assert.deepEqual(result.value, {
    all: Array.from({ length: 40 }, (_, i) => i * 2),
    failed: ["rejected", "fulfilled"],
  });
  assert.equal(result.syscalls, 42);
  assert.deepEqual(
    seen.slice(0, 40),
    Array.from({ length: 40 }, (_, i) => i),
    "served in call order",
  );
});

Deno.test("JitSandbox.call() does not count time the host spends serving a syscall against the tool", async () => {
  await using sandbox = new JitSandbox({ limits: { wallMs: 800 } });
  // The host takes 1.5 s to answer (a human approving, a child finishing): no timeout.
  const result = await sandbox.call(
    `export async function run(args, libos) { return await libos.call("human.ask", {}); }`,
    {},
    () => new Promise((resolve) => setTimeout(() => resolve("approved"), 1500)),
  );
  assert.equal(result.value, "approved");
});

Deno.test("JitSandbox.call() attack: host files, environment, network, processes and Deno's ops are out of reach with no validator", async () => {
  const secretDir = Deno.makeTempDirSync({ prefix: "libos-jit-secret-" });
  const secret = join(secretDir, "secret.txt");
  Deno.writeTextFileSync(secret, "TOP-SECRET-9f1c");
  const marker = join(secretDir, "written.txt");
  let hits = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    hits++;
    return new Response("reached");
  });
  try {
    await using sandbox = new JitSandbox();
    const attempts: [string, string][] = [
      ["Deno global", `return Deno.readTextFileSync(${JSON.stringify(secret)});`],
      [
        "Deno via globalThis",
        `return globalThis["De" + "no"].readTextFileSync(${JSON.stringify(secret)});`,
      ],
      ["internal ops", `return Object.keys(globalThis.Deno[globalThis.Deno.internal].core.ops);`],
      [
        "static import of a file",
        `return (await import(${JSON.stringify(`file://${secret}`)})).default;`,
      ],
      [
        "fetch of a file",
        `return await (await fetch(${JSON.stringify(`file://${secret}`)})).text();`,
      ],
      [
        "network to a live local server",
        `return await (await fetch("http://127.0.0.1:${server.addr.port}/")).text();`,
      ],
      ["process.env", `return JSON.stringify(globalThis.process?.env ?? {});`],
      [
        "node:fs",
        `const fs = await import("node:fs"); return fs.readFileSync(${
          JSON.stringify(secret)
        }, "utf8");`,
      ],
      [
        "node:child_process",
        `const cp = await import("node:child_process"); return cp.execSync("id").toString();`,
      ],
      [
        "write a file",
        `const fs = await import("node:fs"); fs.writeFileSync(${
          JSON.stringify(marker)
        }, "x"); return "wrote";`,
      ],
      ["eval", `return eval("1 + 1");`],
      ["Function via constructor", `return (() => {}).constructor("return 1")();`],
      ["Worker", `return typeof new Worker("data:,");`],
      ["WebAssembly compile from bytes", `return typeof WebAssembly.compile;`],
    ];
    for (const [name, body] of attempts) {
      const source = `export async function run(args, libos) { ${body} }`;
      const outcome = await sandbox.call(source, {}, echo).then(
        (r) => JSON.stringify(r.value),
        (e: unknown) => e instanceof SandboxError ? `refused: ${e.code}` : `threw: ${e}`,
      );
      assert.ok(!outcome.includes("TOP-SECRET"), `${name} read the secret: ${outcome}`);
      assert.ok(!outcome.includes("uid="), `${name} ran a process: ${outcome}`);
      assert.ok(!outcome.includes("op_"), `${name} listed Deno's ops: ${outcome}`);
      if (name !== "WebAssembly compile from bytes") {
        assert.match(outcome, /^refused: tool_error|^"\{\}"$/, `${name}: ${outcome}`);
      }
    }
    assert.throws(() => Deno.statSync(marker), Deno.errors.NotFound, "nothing was written");
    assert.equal(hits, 0, "no request reached the server");
  } finally {
    await server.shutdown();
    Deno.removeSync(secretDir, { recursive: true });
  }
});

Deno.test("JitSandbox.call() attack: nothing persists from one call to the next (localStorage, Cache API)", async () => {
  await using sandbox = new JitSandbox();
  const store = `export async function run() {
    const out = [];
    try { globalThis.localStorage?.setItem("k", "leak"); out.push("ls"); } catch {}
    try { const c = await globalThis.caches?.open("c"); await c?.put("https://x/", new Response("leak")); out.push("cache"); } catch {}
    return out;
  }`;
  const read = `export async function run() {
    const out = [];
    try { out.push(globalThis.localStorage?.getItem("k") ?? null); } catch { out.push(null); }
    try { const c = await globalThis.caches?.open("c"); out.push(await (await c?.match("https://x/"))?.text() ?? null); } catch { out.push(null); }
    return out;
  }`;
  await sandbox.call(store, {}, echo);
  const second = await sandbox.call(read, {}, echo);
  assert.deepEqual(second.value, [null, null]);
});

Deno.test("JitSandbox.call() kills and reports each limit breach, and serves the next call", async () => {
  await using sandbox = new JitSandbox({
    limits: {
      wallMs: 2_000,
      cpuSeconds: 10,
      memoryMiB: 64,
      maxSyscalls: 5,
      maxOutputBytes: 64 * 1024,
    },
  });
  const cases: [string, string, string][] = [
    ["infinite loop", "while (true) {}", "timeout"],
    [
      "ArrayBuffer bomb",
      "const a = []; for (;;) a.push(new ArrayBuffer(16 * 1024 * 1024));",
      "memory_limit",
    ],
    [
      "heap bomb",
      "const a = []; for (;;) a.push({ x: Math.random(), y: [1, 2, 3] });",
      "memory_limit",
    ],
    [
      "Wasm memory bomb",
      "const m = new WebAssembly.Memory({ initial: 1 }); for (;;) m.grow(256);",
      "memory_limit",
    ],
    ["log flood", `for (;;) console.log("x".repeat(4096));`, "output_limit"],
    ["syscall flood", `for (;;) await libos.call("clock.now", {});`, "syscall_limit"],
    ["never answers", "await new Promise(() => {});", "protocol_error"],
  ];
  for (const [name, body, code] of cases) {
    const error = await failure(
      sandbox.call(`export async function run(args, libos) { ${body} }`, {}, echo),
    );
    assert.equal(error.code, code, `${name}: ${error.message}`);
  }
  const after = await sandbox.call("export function run() { return 'still serving'; }", {}, echo);
  assert.equal(after.value, "still serving");
});

Deno.test("JitSandbox.call() attack: a frame flood, a malformed frame and a frame without the call's nonce kill the tool (fake Deno)", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "libos-jit-fake-" });
  try {
    const garbage = join(dir, "garbage");
    Deno.writeTextFileSync(garbage, '#!/bin/sh\nread line\necho \'{"type":"result","extra":1}\'\n');
    Deno.chmodSync(garbage, 0o755);
    // A well-formed result frame without the call's nonce: what a tool writing fd 1 by some
    // route other than the harness would produce.
    const forger = join(dir, "forger");
    Deno.writeTextFileSync(
      forger,
      `#!/bin/sh\nread line\necho '{"type":"result","value":"FORGED","n":"not-the-nonce"}'\n`,
    );
    Deno.chmodSync(forger, 0o755);
    const huge = join(dir, "huge");
    Deno.writeTextFileSync(
      huge,
      "#!/bin/sh\nread line\nhead -c 5000000 /dev/zero | tr '\\\\0' 'x'\n",
    );
    Deno.chmodSync(huge, 0o755);
    {
      await using talker = new JitSandbox({ tools: { deno: garbage } });
      const malformed = await failure(talker.call("export function run() {}", {}, echo));
      assert.equal(malformed.code, "protocol_error");
    }
    {
      await using impostor = new JitSandbox({ tools: { deno: forger } });
      const forged = await failure(impostor.call("export function run() {}", {}, echo));
      assert.equal(forged.code, "protocol_error");
    }
    {
      await using flooder = new JitSandbox({
        tools: { deno: huge },
        limits: { maxFrameBytes: 1024 },
      });
      const flood = await failure(flooder.call("export function run() {}", {}, echo));
      assert.equal(flood.code, "output_limit");
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("JitSandbox leaves no process and no temporary directory behind (a timeout, a pool)", async () => {
  // Its sandboxes live under a TMPDIR of their own: others' (tests running in parallel on this
  // machine) are neither counted nor waited for.
  const temp = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-jit-leak-" }));
  const saved = Deno.env.get("TMPDIR");
  Deno.env.set("TMPDIR", temp);
  try {
    {
      await using sandbox = new JitSandbox({ limits: { wallMs: 500 }, poolSize: 2 });
      sandbox.warm();
      const error = await failure(sandbox.call("export function run() { for (;;) {} }", {}, echo));
      assert.equal(error.code, "timeout");
      assert.ok(processesWith(temp).length >= 1, "control: the pooled processes run under it");
    }
    assert.deepEqual(processesWith(temp), []);
    assert.deepEqual([...Deno.readDirSync(temp)].map((e) => e.name), []);
  } finally {
    if (saved === undefined) Deno.env.delete("TMPDIR");
    else Deno.env.set("TMPDIR", saved);
    Deno.removeSync(temp, { recursive: true });
  }
});

Deno.test("JitSandbox with a warm pool answers from pre-started processes, one call each", async () => {
  await using sandbox = new JitSandbox({ poolSize: 2 });
  sandbox.warm();
  await new Promise((resolve) => setTimeout(resolve, 500));
  // Each call gets a fresh process: a global set by one is not seen by the next.
  const first = await sandbox.call(
    "export function run() { const before = globalThis.mark; globalThis.mark = 1; return before ?? null; }",
    {},
    echo,
  );
  const second = await sandbox.call(
    "export function run() { return globalThis.mark ?? null; }",
    {},
    echo,
  );
  assert.deepEqual([first.value, second.value], [null, null]);
  assert.ok(first.durationMs < 2_000);
});

Deno.test("JitSandbox.call() loads every allowlisted import-map key offline, and nothing else", async () => {
  await using sandbox = new JitSandbox();
  for (const key of VETTED_IMPORTS) {
    const result = await sandbox.call(
      `import { words, version } from ${JSON.stringify(key)};
       export function run() { return [words("one  two"), version]; }`,
      {},
      echo,
    );
    assert.deepEqual(result.value, [["one", "two"], "0.1.0"], key);
  }
  // (A node: built-in loads, powerless: every operation of it is permission-checked.)
  for (
    const other of ["jsr:@libos/std@0.2.0", "jsr:@std/path", "npm:zod", "https://deno.land/x/a.ts"]
  ) {
    const error = await failure(
      sandbox.call(
        `import * as m from ${JSON.stringify(other)}; export function run() { return 1; }`,
        {},
        echo,
      ),
    );
    assert.equal(error.code, "tool_error", other);
  }
});

Deno.test("JitSandbox attack: no sandbox process outlives a SIGKILLed host (a running call and a warm pool)", async () => {
  const temp = Deno.makeTempDirSync({ prefix: "libos-jit-host-" });
  try {
    // Its sandboxes live under this TMPDIR: their command lines carry it.
    const child = spawnTestChild("_jit_orphan_child.ts", [], {
      env: { TMPDIR: temp },
      stdout: "piped",
    });
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const first = await reader.read();
    assert.match(first.value ?? "", /ready/);
    await reader.cancel();
    assert.ok(processesWith(temp).length >= 2, "control: the call and the pooled process run");
    child.kill("SIGKILL");
    await child.status;
    let left = processesWith(temp);
    for (let i = 0; i < 50 && left.length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      left = processesWith(temp);
    }
    assert.deepEqual(left, [], "every sandbox process died with its host");
  } finally {
    Deno.removeSync(temp, { recursive: true });
  }
});

Deno.test("JitSandbox.call() with language javascript imports the source as JavaScript (TypeScript syntax fails there)", async () => {
  await using sandbox = new JitSandbox({ limits: { wallMs: 5_000 } });
  const js = "export function run(args) { return args.n * 2; }";
  assert.equal(
    (await sandbox.call(js, { n: 21 }, echo, undefined, { language: "javascript" })).value,
    42,
  );
  const typed = "export function run(args: { n: number }) { return args.n * 2; }";
  assert.equal(
    (await sandbox.call(typed, { n: 2 }, echo)).value,
    4,
    "control: TypeScript by default",
  );
  const error = await failure(
    sandbox.call(typed, { n: 2 }, echo, undefined, { language: "javascript" }),
  );
  assert.equal(error.code, "tool_error");
});

// ---------------------------------------------------------------- host-side bounds (issue 20)

/** Heap the host holds now, after a collection when the runtime lets one be asked for. */
function heapUsed(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return Deno.memoryUsage().heapUsed;
}

Deno.test("JitSandbox.call() attack: millions of empty console.log() lines stop at the frame cap, and the host keeps no more than the cap (control: 100 lines are all kept)", async () => {
  await using sandbox = new JitSandbox({ limits: { wallMs: 20_000 } });
  const before = heapUsed();
  const flood = await failure(
    sandbox.call(
      `export function run() { for (let i = 0; i < 5_000_000; i++) console.log(); return "done"; }`,
      {},
      echo,
    ),
  );
  assert.equal(flood.code, "frame_limit", flood.message);
  assert.match(flood.message, /more than 10000 frames/);
  // Before the cap, five million kept log entries took the host to about half a gigabyte.
  const grown = heapUsed() - before;
  assert.ok(grown < 64 * 1024 * 1024, `the host's heap grew by ${grown} bytes`);
  const control = await sandbox.call(
    `export function run() { for (let i = 0; i < 100; i++) console.log(); return "done"; }`,
    {},
    echo,
  );
  assert.equal(control.value, "done");
  assert.equal(control.logs.length, 100);
});

Deno.test("JitSandbox.call() attack: each log frame costs its size on the wire, so empty lines and escaped characters cannot slip past the output cap", async () => {
  // The frame cap is out of the way: only the output bytes decide here.
  await using sandbox = new JitSandbox({
    limits: { wallMs: 20_000, maxFrames: 10_000_000, maxOutputBytes: 256 * 1024 },
  });
  const cases: [string, string][] = [
    // An empty line's frame is about 90 bytes: 100,000 of them are ~9 MB, counted as 0 before.
    ["empty lines", `for (let i = 0; i < 100_000; i++) console.log();`],
    // 16,384 control characters are a 16 KB text but a ~98 KB frame (each is sent as \\u0001);
    // 10 of them counted as 160 KB before, under the 256 KB cap.
    ["escaped characters", `for (let i = 0; i < 10; i++) console.log("\\u0001".repeat(16384));`],
  ];
  for (const [name, body] of cases) {
    const error = await failure(
      sandbox.call(`export function run() { ${body} return "done"; }`, {}, echo),
    );
    assert.equal(error.code, "output_limit", `${name}: ${error.message}`);
  }
  // Control: ten 16 KB lines of plain text fit (about 164 KB on the wire).
  const plain = await sandbox.call(
    `export function run() { for (let i = 0; i < 10; i++) console.log("x".repeat(16384)); return 1; }`,
    {},
    echo,
  );
  assert.equal(plain.logs.length, 10);
});

Deno.test("JitSandbox.call() attack: syscall frames just under the frame cap, repeated, or not awaited, stop at the syscall cap; one byte over the cap stops at once", async () => {
  await using sandbox = new JitSandbox({
    limits: { wallMs: 20_000, maxFrameBytes: 64 * 1024, maxSyscalls: 20 },
  });
  let served = 0;
  const count: SyscallHandler = () => {
    served++;
    return Promise.resolve(null);
  };
  // The frame's other fields and its nonce take about 120 bytes.
  const under = `"x".repeat(64 * 1024 - 200)`;
  const cases: [string, string, string, number][] = [
    [
      "just under the cap, repeated",
      `for (;;) await libos.call("fs.write_text", { path: "a", content: ${under} });`,
      "syscall_limit",
      20,
    ],
    [
      "tiny frames, not awaited",
      `for (let i = 0; i < 1_000_000; i++) libos.call("clock.now", {}); await new Promise(() => {});`,
      "syscall_limit",
      20,
    ],
    [
      "one frame over the cap",
      `await libos.call("fs.write_text", { path: "a", content: "x".repeat(64 * 1024) });`,
      "output_limit",
      0,
    ],
  ];
  for (const [name, body, code, syscalls] of cases) {
    served = 0;
    const error = await failure(
      sandbox.call(`export async function run(args, libos) { ${body} }`, {}, count),
    );
    assert.equal(error.code, code, `${name}: ${error.message}`);
    assert.equal(served, syscalls, `${name}: syscalls the host served`);
  }
  // Control: a few frames just under the cap are served.
  served = 0;
  const ok = await sandbox.call(
    `export async function run(args, libos) {
      for (let i = 0; i < 3; i++) await libos.call("fs.write_text", { path: "a", content: ${under} });
      return "written";
    }`,
    {},
    count,
  );
  assert.equal(ok.value, "written");
  assert.equal(served, 3);
});

Deno.test("JitSandbox.call() attack: host time spent serving syscalls is bounded per call (serving_limit), and time the process waits on its human is not counted (control)", async () => {
  await using sandbox = new JitSandbox({ limits: { wallMs: 5_000, maxServingMs: 500 } });
  const TOOL = `export async function run(args, libos) {
    for (let i = 0; i < 2; i++) await libos.call("slow", {});
    return "served";
  }`;
  let calls = 0;
  let aborted = false;
  // Each syscall takes a second of host time (a command, a child's wait) unless cut off.
  const slow: SyscallHandler = (_name, _args, signal) => {
    calls++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve(null), 1_000);
      signal.addEventListener("abort", () => {
        aborted = true;
        clearTimeout(timer);
        reject(signal.reason);
      }, { once: true });
    });
  };
  const error = await failure(sandbox.call(TOOL, {}, slow));
  assert.equal(error.code, "serving_limit", error.message);
  assert.equal(calls, 1, "the second syscall was never served");
  assert.ok(aborted, "the syscall being served was cut off");
  // The same two seconds spent waiting on a human count for nothing.
  calls = 0;
  const human = await sandbox.call(TOOL, {}, slow, undefined, { waitingOnHuman: () => true });
  assert.equal(human.value, "served");
  assert.equal(calls, 2);
});

Deno.test("JitSandbox.call() attack: a syscall error the handler says ends the call (an exhausted budget) kills the tool, which cannot catch it and go on", async () => {
  await using sandbox = new JitSandbox({ limits: { wallMs: 5_000 } });
  const seen: string[] = [];
  const exhausted = new BudgetExhaustedError(
    "tool_calls",
    "Process pid_x failed: its budget is exhausted",
  );
  const handler: SyscallHandler = (name) => {
    seen.push(name);
    return name === "fs.write_text" ? Promise.reject(exhausted) : Promise.resolve(null);
  };
  const error = await sandbox.call(
    `export async function run(args, libos) {
      try { await libos.call("fs.write_text", { path: "a", content: "x" }); } catch {}
      await libos.call("after", {});
      return "went on";
    }`,
    {},
    handler,
    undefined,
    { endsCall: (e) => e instanceof BudgetExhaustedError },
  ).then(() => assert.fail("the call succeeded"), (e: unknown) => e);
  assert.equal(error, exhausted, "the call fails with the handler's very error");
  assert.deepEqual(seen, ["fs.write_text"], "nothing was served after it");
  // Control: without endsCall the same error only fails the syscall, and the tool goes on.
  seen.length = 0;
  const goes = await sandbox.call(
    `export async function run(args, libos) {
      try { await libos.call("fs.write_text", { path: "a", content: "x" }); } catch (e) { return e.code; }
    }`,
    {},
    handler,
  );
  assert.equal(goes.value, "budget_exhausted");
});

Deno.test("JitSandbox.call() attack: WebGPU (no permission needed) is out of reach, with the wall and without it", async () => {
  const source = `export async function run() {
    const seen = [];
    try { seen.push(String(await navigator.gpu.requestAdapter())); } catch (e) { seen.push(e.name); }
    try { delete navigator.gpu; } catch { /* non-configurable */ }
    try { Object.defineProperty(navigator, "gpu", { value: 1 }); } catch { /* fixed */ }
    try { seen.push(typeof navigator.gpu.requestAdapter); } catch (e) { seen.push(e.name); }
    return seen;
  }`;
  for (const wall of [true, false]) {
    await using sandbox = new JitSandbox({ wall });
    const r = await sandbox.call(source, {}, echo);
    assert.deepEqual(r.value, ["ReferenceError", "ReferenceError"], `wall ${wall}`);
  }
  // Control: the harness still runs ordinary code that uses navigator.
  await using sandbox = new JitSandbox();
  const ok = await sandbox.call(
    "export function run() { return typeof navigator.hardwareConcurrency; }",
    {},
    echo,
  );
  assert.equal(ok.value, "number");
});
