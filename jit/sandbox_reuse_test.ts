import assert from "node:assert/strict";
import { join } from "node:path";
import { JitSandbox, SandboxError, type SyscallHandler } from "./sandbox.ts";
import { failure as failed, processesWith } from "../tests/shell_fixture.ts";

const echo: SyscallHandler = (name, args) => Promise.resolve({ name, args });

/** The sandbox error a call fails with. */
const failure = (promise: Promise<unknown>) => failed(promise, SandboxError);

/**
 * A tool that first reports what it finds of an earlier call's doings, then does them all: a
 * global, a module variable, a prototype, `Error.prepareStackTrace`, a timer left running that
 * logs and sets a global, a message listener.
 */
const POLLUTER = `let calls = 0;
export async function run(args, libos) {
  calls++;
  let trace = "";
  try { throw new Error("x"); } catch (e) { trace = typeof e.stack === "string" ? "string" : String(e.stack); }
  const seen = {
    calls,
    leak: globalThis.leak ?? null,
    fromTimer: globalThis.fromTimer ?? null,
    proto: ({}).polluted ?? null,
    map: [1].map((x) => x + 1)[0],
    prepare: typeof Error.prepareStackTrace,
    trace,
  };
  globalThis.leak = "LEAKED-" + args.who;
  Object.prototype.polluted = "POLLUTED";
  Error.prepareStackTrace = () => "HIJACKED-TRACE";
  setInterval(() => { globalThis.fromTimer = "TIMER"; console.log("TIMER-" + args.who); }, 1);
  addEventListener("message", () => { globalThis.leak = "LISTENER"; });
  await new Promise((resolve) => setTimeout(resolve, 20));
  Array.prototype.map = function () { return ["HIJACKED"]; };
  return seen;
}`;

const FRESH = {
  calls: 1,
  leak: null,
  fromTimer: null,
  proto: null,
  map: 2,
  prepare: "undefined",
  trace: "string",
};

Deno.test("JitSandbox reuse attack: an agent process's next call sees nothing its last call left (global, module variable, prototype, Error.prepareStackTrace, timers), in the same walled process", async () => {
  await using sandbox = new JitSandbox({ reuse: true, limits: { wallMs: 10_000 } });
  const first = await sandbox.call(POLLUTER, { who: "a1" }, echo, undefined, { reuseFor: "pid_a" });
  const [bound] = sandbox.residents();
  assert.deepEqual(first.value, FRESH);
  const second = await sandbox.call(POLLUTER, { who: "a2" }, echo, undefined, {
    reuseFor: "pid_a",
  });
  assert.deepEqual(second.value, FRESH, "the second call starts from a fresh realm");
  assert.ok(
    second.logs.every((log) => log.text !== "TIMER-a1"),
    `no timer of the first call ran into the second: ${JSON.stringify(second.logs)}`,
  );
  assert.ok(first.logs.some((log) => log.text === "TIMER-a1"), "control: the timer did run");
  assert.ok(second.logs.some((log) => log.text === "TIMER-a2"), "control: its own timer ran");
  // Control: both calls were served by one process, bound to pid_a.
  assert.deepEqual(sandbox.residents(), [{ owner: "pid_a", pid: bound!.pid, calls: 2 }]);
});

Deno.test("JitSandbox reuse attack: another agent process never gets the same OS process, nor sees what a call left", async () => {
  await using sandbox = new JitSandbox({ reuse: true, limits: { wallMs: 10_000 } });
  await sandbox.call(POLLUTER, { who: "a" }, echo, undefined, { reuseFor: "pid_a" });
  const other = await sandbox.call(POLLUTER, { who: "b" }, echo, undefined, { reuseFor: "pid_b" });
  assert.deepEqual(other.value, FRESH);
  await sandbox.call(POLLUTER, { who: "a" }, echo, undefined, { reuseFor: "pid_a" });
  const bound = sandbox.residents();
  assert.deepEqual(bound.map((r) => r.owner).sort(), ["pid_a", "pid_b"]);
  const [a, b] = [bound.find((r) => r.owner === "pid_a")!, bound.find((r) => r.owner === "pid_b")!];
  assert.notEqual(a.pid, b.pid, "each agent process has a process of its own");
  assert.equal(a.calls, 2);
  assert.equal(b.calls, 1);
  // A call without an owner never lands in either.
  await sandbox.call(POLLUTER, { who: "c" }, echo);
  assert.deepEqual(sandbox.residents().map((r) => r.pid).sort(), [a.pid, b.pid].sort());
  // Nor does the same owner's call of another source.
  await sandbox.call("export function run() { return 1; }", {}, echo, undefined, {
    reuseFor: "pid_a",
  });
  const after = sandbox.residents().filter((r) => r.owner === "pid_a");
  assert.equal(after.length, 2);
  assert.notEqual(after[1]!.pid, a.pid);
});

Deno.test("JitSandbox reuse attack: host files, Deno, workers and the Worker's own doors (postMessage, close, onmessage) are out of reach in a resident's Worker", async () => {
  const secretDir = Deno.makeTempDirSync({ prefix: "libos-jit-secret-" });
  const secret = join(secretDir, "secret.txt");
  Deno.writeTextFileSync(secret, "TOP-SECRET-7d2e");
  try {
    await using sandbox = new JitSandbox({ reuse: true, limits: { wallMs: 10_000 } });
    const attempts: [string, string][] = [
      ["Deno global", `return Deno.readTextFileSync(${JSON.stringify(secret)});`],
      ["internal ops", `return Object.keys(globalThis.Deno[globalThis.Deno.internal].core.ops);`],
      ["import of a file", `return (await import(${JSON.stringify(`file://${secret}`)})).default;`],
      [
        "fetch of a file",
        `return await (await fetch(${JSON.stringify(`file://${secret}`)})).text();`,
      ],
      [
        "node:fs",
        `return (await import("node:fs")).readFileSync(${JSON.stringify(secret)}, "utf8");`,
      ],
      ["eval", `return eval("1 + 1");`],
      ["Worker", `return typeof new Worker("data:,");`],
      ["forged result message", `postMessage({ t: "result", value: "FORGED" }); return "posted";`],
      ["forged via self", `self.postMessage({ t: "result", value: "FORGED" }); return "posted";`],
      ["close the Worker", `close(); return "closed";`],
      ["take the run messages", `onmessage = () => {}; return "took";`],
    ];
    for (const [name, body] of attempts) {
      const source = `export async function run(args, libos) { ${body} }`;
      const outcome = await sandbox.call(source, {}, echo, undefined, { reuseFor: "pid_x" }).then(
        (r) => JSON.stringify(r.value),
        (e: unknown) => e instanceof SandboxError ? `refused: ${e.code}` : `threw: ${e}`,
      );
      assert.ok(!outcome.includes("TOP-SECRET"), `${name} read the secret: ${outcome}`);
      assert.ok(!outcome.includes("FORGED"), `${name} forged a result: ${outcome}`);
      assert.ok(!outcome.includes("op_"), `${name} listed Deno's ops: ${outcome}`);
      assert.equal(outcome, "refused: tool_error", name);
    }
    // Control: the process served every one of them (a tool that throws does not retire it).
    assert.equal(sandbox.residents().length, attempts.length);
  } finally {
    Deno.removeSync(secretDir, { recursive: true });
  }
});

Deno.test("JitSandbox reuse: each limit breach fails its call and retires the process; the next call gets a new one", async () => {
  const limits = { wallMs: 8_000, memoryMiB: 64, maxSyscalls: 5, maxOutputBytes: 64 * 1024 };
  await using sandbox = new JitSandbox({ reuse: true, limits: { ...limits, cpuSeconds: 1 } });
  // The Wasm bomb gets CPU to spare: growing its memory page by page is slow enough that, on a
  // busy machine, the CPU limit could come first. (The ArrayBuffer bombs keep the tight budget:
  // given longer, one never touched can reach the process's data limit, where Deno aborts
  // instead of throwing a RangeError.)
  await using roomy = new JitSandbox({ reuse: true, limits: { ...limits, cpuSeconds: 5 } });
  const cases: [string, string, string][] = [
    ["infinite loop past its CPU budget", "while (true) {}", "cpu_limit"],
    [
      "ArrayBuffer bomb",
      "const a = []; for (;;) a.push(new Uint8Array(16 * 1024 * 1024).fill(1));",
      "memory_limit",
    ],
    [
      "ArrayBuffer bomb, never touched",
      "const a = []; for (;;) a.push(new ArrayBuffer(16 * 1024 * 1024));",
      "memory_limit",
    ],
    [
      "Wasm memory bomb",
      "const m = new WebAssembly.Memory({ initial: 1 }); for (;;) m.grow(256);",
      "memory_limit",
    ],
    [
      "heap bomb",
      "const a = []; for (;;) a.push({ x: Math.random(), y: [1, 2, 3] });",
      "memory_limit",
    ],
    ["log flood", `for (;;) console.log("x".repeat(4096));`, "output_limit"],
    ["syscall flood", `for (;;) await libos.call("clock.now", {});`, "syscall_limit"],
    ["never answers", "await new Promise(() => {});", "timeout"],
  ];
  for (const [name, body, code] of cases) {
    const source = `export async function run(args, libos) { ${body} }`;
    const owner = `pid_${code}`;
    const box = name === "Wasm memory bomb" ? roomy : sandbox;
    const error = await failure(box.call(source, {}, echo, undefined, { reuseFor: owner }));
    assert.equal(error.code, code, `${name}: ${error.message}`);
    assert.deepEqual(box.residents().filter((r) => r.owner === owner), [], `${name} retired`);
  }
  const after = await sandbox.call(
    "export function run() { return 'still serving'; }",
    {},
    echo,
    undefined,
    {
      reuseFor: "pid_after",
    },
  );
  assert.equal(after.value, "still serving");
});

Deno.test("JitSandbox reuse: a call of an agent process whose process is busy gets a process of its own", async () => {
  await using sandbox = new JitSandbox({ reuse: true, limits: { wallMs: 10_000 } });
  const slow = `export async function run(args) {
    await new Promise((resolve) => setTimeout(resolve, args.ms));
    return args.ms;
  }`;
  const options = { reuseFor: "pid_a" };
  const [a, b] = await Promise.all([
    sandbox.call(slow, { ms: 300 }, echo, undefined, options),
    sandbox.call(slow, { ms: 1 }, echo, undefined, options),
  ]);
  assert.equal(a.value, 300);
  assert.equal(b.value, 1);
  assert.deepEqual(sandbox.residents().map((r) => r.calls), [1]);
});

Deno.test("JitSandbox reuse leaves no process and no temporary directory behind (resident processes, a retired one)", async () => {
  // Its sandboxes live under a TMPDIR of their own: others' are neither counted nor waited for.
  const temp = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-jit-leak-" }));
  const saved = Deno.env.get("TMPDIR");
  Deno.env.set("TMPDIR", temp);
  try {
    {
      await using sandbox = new JitSandbox({ reuse: true, limits: { wallMs: 2_000 } });
      const ok = "export function run() { return 1; }";
      await sandbox.call(ok, {}, echo, undefined, { reuseFor: "pid_a" });
      await sandbox.call(ok, {}, echo, undefined, { reuseFor: "pid_b" });
      const error = await failure(
        sandbox.call("export function run() { for (;;) {} }", {}, echo, undefined, {
          reuseFor: "pid_a",
        }),
      );
      assert.equal(error.code, "timeout");
      assert.equal(sandbox.residents().length, 2, "control: two resident processes are up");
      assert.ok(processesWith(temp).length >= 2, "control: they run under it");
    }
    assert.deepEqual(processesWith(temp), []);
    assert.deepEqual([...Deno.readDirSync(temp)].map((e) => e.name), []);
  } finally {
    if (saved === undefined) Deno.env.delete("TMPDIR");
    else Deno.env.set("TMPDIR", saved);
    Deno.removeSync(temp, { recursive: true });
  }
});

/** A tool that counts its calls in its module and in a global, and leaves behind what it is told. */
const COUNTER = `let calls = 0;
export async function run(args, libos) {
  calls++;
  globalThis.seen = (globalThis.seen ?? 0) + 1;
  if (args.leave === "timer") setTimeout(() => {}, 60_000);
  if (args.leave === "interval") setInterval(() => console.log("LEFT BEHIND"), 5);
  if (args.leave === "string timer") clearTimeout(setTimeout("1", 1));
  if (args.leave === "channel") {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => { globalThis.seen = 100; };
    channel.port2.postMessage(1);
  }
  if (args.leave === "unanswered syscall") libos.call("slow", {}).catch(() => {});
  if (args.leave === "error") throw new Error("failed on purpose");
  return { calls, seen: globalThis.seen };
}`;

const slowEcho: SyscallHandler = (name, args) =>
  name === "slow"
    ? new Promise((resolve) => setTimeout(() => resolve(null), 100))
    : echo(name, args, new AbortController().signal);

Deno.test("JitSandbox reuse \"worker\": an agent process's calls of its tool share the module's state in one kept Worker; another agent process's calls never see it", async () => {
  await using sandbox = new JitSandbox({ reuse: "worker", limits: { wallMs: 10_000 } });
  const call = (owner: string) =>
    sandbox.call(COUNTER, {}, echo, undefined, { reuseFor: owner }).then((r) => r.value);
  assert.deepEqual(await call("pid_a"), { calls: 1, seen: 1 });
  assert.deepEqual(await call("pid_a"), { calls: 2, seen: 2 }, "the same agent's Worker was kept");
  assert.deepEqual(await call("pid_b"), { calls: 1, seen: 1 }, "another agent starts fresh");
  assert.deepEqual(await call("pid_a"), { calls: 3, seen: 3 });
  const owners = sandbox.residents();
  assert.equal(new Set(owners.map((r) => r.pid)).size, 2, "one process per agent process");
  // A call without an owner never lands in a kept Worker.
  assert.deepEqual(
    (await sandbox.call(COUNTER, {}, echo)).value,
    { calls: 1, seen: 1 },
  );
});

Deno.test('JitSandbox reuse "worker" attack: a call that leaves work behind or fails does not pass its Worker on; the next call starts fresh', async () => {
  await using sandbox = new JitSandbox({ reuse: "worker", limits: { wallMs: 10_000 } });
  for (
    const leave of ["timer", "interval", "string timer", "channel", "unanswered syscall", "error"]
  ) {
    const owner = `pid_${leave.replaceAll(" ", "_")}`;
    const call = (args: Record<string, unknown>) =>
      sandbox.call(COUNTER, args, slowEcho, undefined, { reuseFor: owner });
    if (leave === "error") {
      assert.equal((await failure(call({ leave }))).code, "tool_error");
    } else assert.deepEqual((await call({ leave })).value, { calls: 1, seen: 1 }, leave);
    const next = await call({});
    assert.deepEqual(next.value, { calls: 1, seen: 1 }, `${leave}: the next call got a new Worker`);
    assert.ok(
      next.logs.every((log) => log.text !== "LEFT BEHIND"),
      `${leave}: nothing ran into it`,
    );
    // Control: a clean call's Worker is kept.
    assert.deepEqual((await call({})).value, { calls: 2, seen: 2 }, `${leave}: control`);
  }
});

Deno.test('JitSandbox reuse "worker" attack: a libos handle an earlier call kept refuses in a later call, and the host hears nothing', async () => {
  await using sandbox = new JitSandbox({ reuse: "worker", limits: { wallMs: 10_000 } });
  const source = `let kept;
export async function run(args, libos) {
  if (args.first) { kept = libos; return "kept"; }
  try { await kept.call("fs.write", { path: "x", content: "y" }); return "ANSWERED"; }
  catch (error) { return error.code; }
}`;
  const heard: string[] = [];
  const record: SyscallHandler = (name) => {
    heard.push(name);
    return Promise.resolve(null);
  };
  const options = { reuseFor: "pid_a" };
  assert.equal(
    (await sandbox.call(source, { first: true }, record, undefined, options)).value,
    "kept",
  );
  const second = await sandbox.call(source, {}, record, undefined, options);
  assert.equal(second.value, "call_ended");
  assert.equal(second.syscalls, 0);
  assert.deepEqual(heard, []);
  assert.equal(sandbox.residents()[0]?.calls, 2, "control: one process served both");
});
