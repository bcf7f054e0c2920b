/**
 * Scheduler benchmark (issue 3): 10,000 processes × 10 no-op quanta on a file database with
 * group commit. Target: ≥ 15,000 quanta/s and ≤ 250 MB peak RSS on the 2-core machine.
 * Arrival pattern: all processes runnable at the start, closed loop, concurrency 4.
 *
 * @module
 */
import { join } from "node:path";
import type { QuantumResult } from "../../runtime/process/process_manager.ts";
import { createRuntime } from "../../runtime/runtime.ts";
import type { ProcessDriver } from "../../runtime/kernel/scheduler.ts";
import { type BenchCase, benchDir, type BenchResult } from "./_bench.ts";

async function run(
  processes: number,
  quantaEach: number,
  concurrency: number,
): Promise<BenchResult> {
  using dir = benchDir();
  const workspace = join(dir.path, "ws");
  Deno.mkdirSync(workspace);
  const runtime = await createRuntime({
    workspace,
    db: join(dir.path, "bench.db"),
    env: { get: (n) => (n === "XDG_STATE_HOME" ? join(dir.path, "state") : undefined) },
  });
  try {
    for (let i = 0; i < processes; i++) {
      runtime.processes.spawn({ goal: `p${i}`, image: "base-agent:v0" });
    }
    runtime.store.flush();
    const counts = new Map<string, number>();
    const latencies: number[] = [];
    const driver: ProcessDriver = {
      runQuantum(ctx) {
        const n = (counts.get(ctx.process.pid) ?? 0) + 1;
        counts.set(ctx.process.pid, n);
        const result: QuantumResult = n >= quantaEach ? { type: "exit" } : { type: "yield" };
        return Promise.resolve(result);
      },
    };
    using scheduler = runtime.scheduler(driver, { concurrency });
    const start = performance.now();
    let last = start;
    let quanta = 0;
    // Sample per-quantum cost from the completion rate: one latency per 100 quanta, averaged.
    const sampler = runtime.processes.listen({
      runnable: () => {
        quanta++;
        if (quanta % 100 === 0) {
          const now = performance.now();
          latencies.push((now - last) / 100);
          last = now;
        }
      },
    });
    const report = await scheduler.runUntilIdle();
    sampler();
    const seconds = (performance.now() - start) / 1000;
    if (report.quanta !== processes * quantaEach) {
      throw new Error(`ran ${report.quanta} quanta, expected ${processes * quantaEach}`);
    }
    return {
      ops: report.quanta,
      seconds,
      latenciesMs: latencies,
      note:
        `${processes} processes x ${quantaEach} quanta, concurrency ${concurrency}; latency = mean per quantum over windows of 100`,
    };
  } finally {
    await runtime.close();
  }
}

/** The scheduler rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "scheduler",
    name: "10,000 processes x 10 no-op quanta, file db, group commit",
    target: { minOpsPerSecond: 15_000 },
    run: () => run(10_000, 10, 4),
  },
  {
    group: "scheduler",
    name: "same, concurrency 1 (one quantum at a time)",
    run: () => run(10_000, 10, 1),
  },
];
