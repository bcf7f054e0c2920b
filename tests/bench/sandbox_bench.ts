/**
 * JIT sandbox benchmark (issue 11): what a tool call costs. Each process runs inside the OS
 * wall (issue 20) where bubblewrap works; two rows without it show what the wall adds. A new Deno process per call (the
 * paper prototype's way) against the warm pool (processes started ahead, one call each), at one
 * call every 100 ms (target: warm p50 ≤ 5 ms) and back to back (sustained calls/s); and syscall
 * round trips per second from one tool through a real runtime's syscall session (target
 * ≥ 6,000/s, issue 22; capability check and audit included — one audit record per syscall), beside
 * the same syscall answered by the session alone, without a sandbox, to tell the host's share of
 * a round trip from the frames'.
 *
 * @module
 */
import { join } from "node:path";
import { callJitTool, JitSandbox, JitValidator, type SyscallHandler } from "../../jit/mod.ts";
import { createRuntime } from "../../runtime/runtime.ts";
import { LibOSSyscallSession, runtimeTargets } from "../../jit/syscall_session.ts";
import { type BenchCase, benchDir, type BenchResult } from "./_bench.ts";

const TOOL = `export async function run(args, libos) {
  const now = await libos.call("process.cwd", {});
  return { n: args.n + 1, now };
}`;

const answer: SyscallHandler = () => Promise.resolve(1);

/**
 * `calls` calls, `gapMs` apart. `transpiled`: the tool runs as a registered tool does — its
 * TypeScript transpiled once on the host — instead of being transpiled by Deno in each call.
 */
async function paced(
  poolSize: number,
  calls: number,
  gapMs: number,
  transpiled = false,
  wall: boolean | "auto" = "auto",
): Promise<BenchResult> {
  await using validator = new JitValidator();
  const js = transpiled ? await validator.transpile(TOOL) : undefined;
  if (transpiled && js === undefined) throw new Error("the bench tool did not transpile");
  await using sandbox = new JitSandbox({ poolSize, wall });
  const walled = await sandbox.wall();
  sandbox.warm();
  await new Promise((resolve) => setTimeout(resolve, 600));
  const latencies: number[] = [];
  const start = performance.now();
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await sandbox.call(
      js ?? TOOL,
      { n: i },
      answer,
      undefined,
      js === undefined ? {} : { language: "javascript" },
    );
    latencies.push(performance.now() - t);
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  return {
    ops: calls,
    seconds: (performance.now() - start) / 1000,
    latenciesMs: latencies,
    note: `${gapMs > 0 ? `one call every ${gapMs} ms` : "back to back"}${
      transpiled ? ", transpiled on the host" : ", TypeScript"
    }${walled ? ", inside the OS wall" : ", no OS wall"}`,
  };
}

/**
 * Syscall round trips from one tool through a real runtime's session; `inFlight` > 1: the tool
 * issues that many at once (`Promise.all`), so frames queue while the host serves.
 */
async function roundTrips(call: string, inFlight = 1): Promise<BenchResult> {
  const count = 4_992;
  using dir = benchDir();
  const workspace = join(dir.path, "ws");
  Deno.mkdirSync(workspace);
  Deno.writeTextFileSync(join(workspace, "a.txt"), "x");
  await using runtime = await createRuntime({
    workspace,
    db: join(dir.path, "b.db"),
    env: { get: (n) => (n === "XDG_STATE_HOME" ? join(dir.path, "state") : undefined) },
  });
  // Each syscall costs a tool call, as its built-in tool would: the budget holds them all.
  const pid = runtime.processes.spawn({
    goal: "bench",
    image: "base-agent:v0",
    budgets: { maxToolCalls: count },
  }).pid;
  await using sandbox = new JitSandbox({ limits: { maxSyscalls: count, wallMs: 60_000 } });
  const started = performance.now();
  const result = await callJitTool(
    { core: runtime, targets: runtimeTargets(runtime), sandbox, ledger: runtime.ledger },
    {
      pid,
      tool: "bench",
      source: `export async function run(args, libos) {
        for (let i = 0; i < ${count}; i += ${inFlight}) {
          await Promise.all(Array.from({ length: ${inFlight} }, () => libos.call(${call})));
        }
        return 1;
      }`,
      args: {},
    },
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    ops: result.syscalls,
    seconds,
    latenciesMs: [seconds * 1000 / result.syscalls],
    note: `one tool, ${count} syscalls${
      inFlight > 1 ? `, ${inFlight} in flight` : ", one at a time"
    }, file database`,
  };
}

/**
 * The floor under any round trip to another process on this machine: one Deno process sends a
 * line to another, which answers it (JSON both ways, no work), back to back.
 */
async function barePipe(): Promise<BenchResult> {
  const count = 5_000;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `const r = Deno.stdin.readable.getReader(); const d = new TextDecoder(); const e = new TextEncoder();
       let b = "";
       for (;;) {
         const n = b.indexOf("\\n");
         if (n >= 0) {
           const m = JSON.parse(b.slice(0, n)); b = b.slice(n + 1);
           Deno.stdout.writeSync(e.encode(JSON.stringify({ id: m.id, ok: true }) + "\\n"));
           continue;
         }
         const { value, done } = await r.read(); if (done) break; b += d.decode(value, { stream: true });
       }`,
    ],
    env: { DENO_NO_UPDATE_CHECK: "1" },
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  const reader = child.stdout.getReader();
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await writer.write(encoder.encode(JSON.stringify({ id: i, name: "process.cwd" }) + "\n"));
    let line = "";
    while (!line.endsWith("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the echo process ended");
      line += decoder.decode(value, { stream: true });
    }
    latencies.push(performance.now() - t);
  }
  const seconds = (performance.now() - started) / 1000;
  await writer.close();
  reader.releaseLock();
  await child.stdout.cancel();
  await child.status;
  return {
    ops: count,
    seconds,
    latenciesMs: latencies,
    note: "two Deno processes, a JSON line each way, no work: the floor of any round trip",
  };
}

/** The same syscall answered by a real runtime's session directly: no sandbox, no frames. */
async function sessionOnly(name: string, args: Record<string, unknown>): Promise<BenchResult> {
  const count = 5_000;
  using dir = benchDir();
  const workspace = join(dir.path, "ws");
  Deno.mkdirSync(workspace);
  Deno.writeTextFileSync(join(workspace, "a.txt"), "x");
  await using runtime = await createRuntime({
    workspace,
    db: join(dir.path, "b.db"),
    env: { get: (n) => (n === "XDG_STATE_HOME" ? join(dir.path, "state") : undefined) },
  });
  const pid = runtime.processes.spawn({
    goal: "bench",
    image: "base-agent:v0",
    budgets: { maxToolCalls: count },
  }).pid;
  const session = new LibOSSyscallSession(runtime, runtimeTargets(runtime), pid, "bench");
  const signal = new AbortController().signal;
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await session.call(name, args, signal);
    latencies.push(performance.now() - t);
  }
  return {
    ops: count,
    seconds: (performance.now() - started) / 1000,
    latenciesMs: latencies,
    note: "5,000 syscalls, no sandbox, file database",
  };
}

/** The sandbox rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "jit sandbox: one call every 100 ms",
    name: "new Deno process per call (competitor, the prototype's way)",
    run: () => paced(0, 30, 100),
  },
  {
    group: "jit sandbox: one call every 100 ms",
    name: "warm pool of 2, paced, TypeScript transpiled in the sandbox",
    run: () => paced(2, 30, 100),
  },
  {
    group: "jit sandbox: one call every 100 ms",
    name: "warm pool of 2, paced, a registered tool (transpiled once on the host)",
    target: { maxP50Ms: 5 },
    run: () => paced(2, 30, 100, true),
  },
  {
    group: "jit sandbox: one call every 100 ms",
    name: "warm pool of 2, paced, a registered tool, without the OS wall (as before it)",
    run: () => paced(2, 30, 100, true, false),
  },
  {
    group: "jit sandbox: one call every 100 ms",
    name: "new Deno process per call, without the OS wall (as before it)",
    run: () => paced(0, 30, 100, false, false),
  },
  {
    group: "jit sandbox: back to back",
    name: "new Deno process per call, back to back (competitor)",
    run: () => paced(0, 40, 0),
  },
  {
    group: "jit sandbox: back to back",
    name: "warm pool of 2, back to back, a registered tool",
    run: () => paced(2, 40, 0, true),
  },
  {
    group: "jit sandbox: syscalls",
    name: "fs.stat round trips (session + filesystem primitive: capability check, audit)",
    target: { minOpsPerSecond: 6_000 },
    run: () => roundTrips(`"fs.stat", { path: "a.txt" }`),
  },
  {
    group: "jit sandbox: syscalls",
    name: "fs.stat syscalls, 16 in flight from one tool (Promise.all)",
    target: { minOpsPerSecond: 6_000 },
    run: () => roundTrips(`"fs.stat", { path: "a.txt" }`, 16),
  },
  {
    group: "jit sandbox: syscalls",
    name: "fs.stat answered by the session alone (no sandbox: the host's share of a round trip)",
    run: () => sessionOnly("fs.stat", { path: "a.txt" }),
  },
  {
    group: "jit sandbox: syscalls",
    name: "process.cwd round trips (session validation and audit only)",
    run: () => roundTrips(`"process.cwd", {}`),
  },
  {
    group: "jit sandbox: syscalls",
    name: "bare pipe round trip between two Deno processes (the floor, no libos)",
    run: () => barePipe(),
  },
];
