/**
 * The shape of a benchmark case and the statistics every row reports. Each `*_bench.ts` file
 * exports `CASES`; `main.ts` runs every case in its own subprocess so that its peak RSS is its own.
 *
 * @module
 */

/** What one case measured. */
export interface BenchResult {
  /** Operations performed. */
  readonly ops: number;
  /** Wall time of the whole run, in seconds. */
  readonly seconds: number;
  /** Per-operation latencies in milliseconds (may be a sample). */
  readonly latenciesMs: readonly number[];
  /** Free text: batch size, arrival pattern, target. */
  readonly note?: string;
  /**
   * Peak RSS of what the case measured when that is not its own process (a process tree it
   * runs), in KiB; otherwise the case process's own peak is reported.
   */
  readonly peakRssKiB?: number;
}

/** One benchmark row. */
export interface BenchCase {
  /** Rows with the same group are compared with each other (ratio to the group's first row). */
  readonly group: string;
  readonly name: string;
  /** What the row is held to, e.g. `>= 20000 ops/s`. */
  readonly target?: {
    readonly minOpsPerSecond?: number;
    readonly maxP50Ms?: number;
    readonly maxP95Ms?: number;
    readonly maxP99Ms?: number;
    /** Throughput at least this many times the group's first row's, measured in the same run. */
    readonly minRatio?: number;
  };
  run(): Promise<BenchResult> | BenchResult;
}

/** The p-th percentile (0..100) of a list of numbers, by nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** A fresh temporary directory, removed by the returned disposer. */
export function benchDir(): { readonly path: string } & Disposable {
  const path = Deno.makeTempDirSync({ prefix: "libos-bench-" });
  return { path, [Symbol.dispose]: () => Deno.removeSync(path, { recursive: true }) };
}

/**
 * Runs `op` `count` times back to back after `warmup` unmeasured runs, recording each latency
 * (for operations that await: a process spawn, a worker round trip, a request).
 */
export async function measure(
  count: number,
  op: () => Promise<unknown> | unknown,
  note: string,
  warmup = 5,
): Promise<BenchResult> {
  for (let i = 0; i < Math.min(warmup, count); i++) await op();
  const latencies: number[] = [];
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await op();
    latencies.push(performance.now() - t);
  }
  return { ops: count, seconds: (performance.now() - start) / 1000, latenciesMs: latencies, note };
}
