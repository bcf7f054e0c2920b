/**
 * JIT calls back to back (issue 22): one agent process calling one registered tool (JavaScript
 * transpiled once on the host, one syscall per call) as fast as it can, through three designs
 * of the sandbox — a new walled process per call (the prototype's way), the warm pool (processes
 * started ahead, one call each: it cannot refill faster than processes start), and resident
 * processes (`reuse`: one walled process bound to the agent process and the tool, each call in a
 * fresh Worker inside it, the next Worker started while the call runs). Target for the resident
 * row: ≥ 5× the new-process row's calls/s. The same designs at one call every 100 ms show each
 * call's own latency when the work ahead of it (a process, a Worker) has time to be done.
 *
 * @module
 */
import { JitSandbox, type SyscallHandler } from "../../jit/mod.ts";
import type { BenchCase, BenchResult } from "./_bench.ts";

const TOOL = `export async function run(args, libos) {
  const now = await libos.call("process.cwd", {});
  return { n: args.n + 1, now };
}`;

const answer: SyscallHandler = () => Promise.resolve("/ws");

const CALLS = 60;

async function backToBack(
  design: "process" | "pool" | "resident" | "kept",
  gapMs = 0,
): Promise<BenchResult> {
  await using sandbox = new JitSandbox({
    poolSize: design === "pool" ? 2 : 0,
    reuse: design === "kept" ? "worker" : design === "resident",
  });
  const walled = await sandbox.wall();
  const options = {
    language: "javascript" as const,
    ...(design === "resident" || design === "kept" ? { reuseFor: "pid_bench" } : {}),
  };
  // Started ahead and unmeasured: the pool's processes, or the resident process.
  sandbox.warm();
  await sandbox.call(TOOL, { n: 0 }, answer, undefined, options);
  await new Promise((resolve) => setTimeout(resolve, 600));
  const latencies: number[] = [];
  const start = performance.now();
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    await sandbox.call(TOOL, { n: i }, answer, undefined, options);
    latencies.push(performance.now() - t);
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  return {
    ops: CALLS,
    seconds: (performance.now() - start) / 1000,
    latenciesMs: latencies,
    note: `${
      gapMs > 0 ? `one call every ${gapMs} ms` : "back to back"
    }, one agent process, a registered tool${walled ? ", inside the OS wall" : ", no OS wall"}`,
  };
}

/** The back-to-back rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "jit calls back to back: designs",
    name: "new walled process per call",
    run: () => backToBack("process"),
  },
  {
    group: "jit calls back to back: designs",
    name: "warm pool of 2 (one call per process)",
    run: () => backToBack("pool"),
  },
  {
    group: "jit calls back to back: designs",
    name: "resident process per agent process and tool, a fresh Worker per call",
    run: () => backToBack("resident"),
  },
  {
    group: "jit calls back to back: designs",
    name: "resident process per agent process and tool, its Worker kept across the agent's calls",
    target: { minRatio: 5 },
    run: () => backToBack("kept"),
  },
  {
    group: "jit calls one every 100 ms: designs",
    name: "new walled process per call, paced",
    run: () => backToBack("process", 100),
  },
  {
    group: "jit calls one every 100 ms: designs",
    name: "warm pool of 2, paced",
    run: () => backToBack("pool", 100),
  },
  {
    group: "jit calls one every 100 ms: designs",
    name: "resident process, a fresh Worker per call, paced",
    run: () => backToBack("resident", 100),
  },
];
