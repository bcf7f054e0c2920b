/**
 * The demo's cost (issue 22): `deno task demo --json --seed 7` end to end — the `deno task`
 * process, the launcher (`cli/bootstrap.ts`), libos itself and the sandbox processes — its wall
 * time per run and its peak memory, beside a bare `deno run` of an empty script in the same run
 * (what any Deno program pays to start), and the design before this issue (commit `e6f4ad9`,
 * from a temporary `git worktree`) when git can make one. Target: p50 ≤ 600 ms.
 *
 * Peak RSS is reported two ways: the table's column is the largest single process of the tree
 * (`/usr/bin/time`'s `%M`: getrusage's maxrss over every waited-for descendant — libos itself,
 * in practice), and the note adds the largest sum of PSS over the tree's processes alive at once
 * (polled from `/proc` every 5 ms in two unmeasured runs, so it can miss a shorter spike).
 *
 * @module
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BenchCase, type BenchResult, percentile } from "./_bench.ts";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..");
const RUNS = 10;
/** Runs whose tree memory is polled (and whose time is not kept). */
const TREE_RUNS = 2;
const BEFORE = "e6f4ad9";

/**
 * One run of `argv` in `cwd`: its wall time and largest process; with `tree`, also the largest
 * sum over the tree (polled by a process of its own, so only in runs whose time is not kept).
 */
async function once(
  argv: readonly string[],
  cwd: string,
  tree = false,
): Promise<{ ms: number; maxKiB: number; treeKiB: number }> {
  const timeFile = await Deno.makeTempFile({ prefix: "libos-bench-time-" });
  try {
    const started = performance.now();
    const child = new Deno.Command("/usr/bin/time", {
      args: ["-f", "%M", "-o", timeFile, ...argv],
      cwd,
      env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
      stdout: "null",
      stderr: "null",
    }).spawn();
    const poller = tree
      ? new Deno.Command(Deno.execPath(), {
        args: ["run", "--quiet", "-A", join(HERE, "_tree_rss.ts"), String(child.pid)],
        stdout: "piped",
        stderr: "null",
      }).output()
      : undefined;
    const exited = await child.status;
    const ms = performance.now() - started;
    if (!exited.success) throw new Error(`${argv.join(" ")} failed in ${cwd} (${exited.code})`);
    const maxKiB = Number((await Deno.readTextFile(timeFile)).trim().split("\n").at(-1));
    const treeKiB = poller ? Number(new TextDecoder().decode((await poller).stdout).trim()) : 0;
    return { ms, maxKiB, treeKiB };
  } finally {
    await Deno.remove(timeFile);
  }
}

/** `RUNS` runs after one unmeasured run (Deno's caches warm). */
async function runs(argv: readonly string[], cwd: string, what: string): Promise<BenchResult> {
  let treeKiB = 0;
  // Unmeasured runs first: Deno's caches warm, and the tree's memory is polled.
  for (let i = 0; i < TREE_RUNS; i++) {
    treeKiB = Math.max(treeKiB, (await once(argv, cwd, true)).treeKiB);
  }
  const latencies: number[] = [];
  let maxKiB = 0;
  const started = performance.now();
  for (let i = 0; i < RUNS; i++) {
    const run = await once(argv, cwd);
    latencies.push(run.ms);
    maxKiB = Math.max(maxKiB, run.maxKiB);
  }
  return {
    ops: RUNS,
    seconds: (performance.now() - started) / 1000,
    latenciesMs: latencies,
    peakRssKiB: maxKiB,
    note: `${what}; peak RSS of the largest process ${(maxKiB / 1024).toFixed(1)} MiB, of the ` +
      `whole tree at once (PSS) ${(treeKiB / 1024).toFixed(1)} MiB (p95 ${
        percentile(latencies, 95).toFixed(0)
      } ms)`,
  };
}

const DEMO = ["deno", "task", "demo", "--json", "--seed", "7"];

/** The demo at commit {@link BEFORE}, from a temporary worktree; skipped where git cannot. */
async function before(): Promise<BenchResult> {
  const dir = await Deno.makeTempDir({ prefix: "libos-bench-before-" });
  const tree = join(dir, "tree");
  const git = (...args: string[]) =>
    new Deno.Command("git", { args, cwd: ROOT, stdout: "null", stderr: "null" }).output();
  try {
    const added = await git("worktree", "add", "--detach", tree, BEFORE);
    if (!added.success) {
      return { ops: 0, seconds: 0, latenciesMs: [], note: `skipped: no commit ${BEFORE} here` };
    }
    return await runs(DEMO, tree, `the design before (commit ${BEFORE})`);
  } finally {
    await git("worktree", "remove", "--force", tree);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** The demo rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "demo: deno task demo --json --seed 7",
    name: "bare deno run of an empty script (what starting Deno costs)",
    run: async () => {
      const empty = await Deno.makeTempFile({ prefix: "libos-bench-empty-", suffix: ".ts" });
      try {
        return await runs(["deno", "run", "--quiet", empty], ROOT, "deno run of an empty file");
      } finally {
        await Deno.remove(empty);
      }
    },
  },
  {
    group: "demo: deno task demo --json --seed 7",
    name: "the demo, this tree",
    target: { maxP50Ms: 600 },
    run: () => runs(DEMO, ROOT, "launcher, libos, sandbox processes"),
  },
  {
    group: "demo: deno task demo --json --seed 7",
    name: `the demo, the design before (commit ${BEFORE})`,
    run: before,
  },
];
