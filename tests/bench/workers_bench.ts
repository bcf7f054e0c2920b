/**
 * Several workers on one database (issue 26), each case on a private PostgreSQL cluster
 * (`_pg_cluster.ts`) beside the same work on one SQLite file:
 *
 * - **leases**: lease claims per second by 1, 2 and 4 claimer processes racing for 20,000 trees
 *   (50 per claim, `FOR UPDATE SKIP LOCKED`), beside one claimer on SQLite. Target ≥ 2,000/s.
 * - **workers**: quanta per second of 1, 2 and 4 `libos worker` processes (through the launcher)
 *   running 300 scripted agents of 3 turns (two file writes, an answer), beside one worker on
 *   SQLite; wall time from start to the last worker's exit, launcher start included.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRuntime } from "../../runtime/runtime.ts";
import { PostgresStore } from "../../runtime/store/postgres_store.ts";
import { SqliteStore } from "../../runtime/store/sqlite_store.ts";
import type { Store } from "../../runtime/store/store.ts";
import { type BenchCase, benchDir, type BenchResult } from "./_bench.ts";
import { startCluster } from "./_pg_cluster.ts";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, "..", "..");

/** Inserts `n` runnable top-level processes directly (the bench measures claims, not spawns). */
function seed(store: Store, n: number): void {
  for (let i = 0; i < n; i += 500) {
    store.step(() => {
      for (let j = i; j < Math.min(n, i + 500); j++) {
        const pid = `pid_${j.toString(16).padStart(12, "0")}`;
        store.putProcess({
          pid,
          parent: null,
          status: "runnable",
          data: "{}",
          created: j,
          updated: j,
        });
      }
    });
  }
  store.flush();
}

async function claimers(db: string, k: number): Promise<BenchResult> {
  const runs = await Promise.all(
    Array.from({ length: k }, (_, i) =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--quiet",
          "-A",
          `--config=${join(REPO, "deno.json")}`,
          join(HERE, "_pg_claimer.ts"),
          db,
          `c${i}`,
        ],
        env: { DENO_NO_UPDATE_CHECK: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output()),
  );
  let claimed = 0;
  let seconds = 0;
  const latencies: number[] = [];
  for (const out of runs) {
    if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
    const r = JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!) as {
      claimed: number;
      seconds: number;
      latenciesMs: number[];
    };
    claimed += r.claimed;
    seconds = Math.max(seconds, r.seconds);
    latencies.push(...r.latenciesMs);
  }
  return {
    ops: claimed,
    seconds,
    latenciesMs: latencies,
    note: `${k} claimer(s), 50 per claim; latency is per claim call`,
  };
}

const TREES = 20_000;

function leaseCase(k: number, engine: "postgres" | "sqlite"): BenchCase {
  return {
    group: "workers: lease claims",
    name: `${engine === "postgres" ? `PostgreSQL, ${k} claimer(s)` : "SQLite file, 1 claimer"}`,
    ...(engine === "postgres" ? { target: { minOpsPerSecond: 2_000 } } : {}),
    async run() {
      if (engine === "sqlite") {
        using dir = benchDir();
        const path = join(dir.path, "leases.db");
        const store = SqliteStore.open({ path });
        seed(store, TREES);
        store.close();
        return await claimers(path, 1);
      }
      await using cluster = await startCluster();
      const url = `${cluster.url}?schema=leases_${k}_${Date.now()}`;
      const store = PostgresStore.open({ url });
      seed(store, TREES);
      store.close();
      return await claimers(url, k);
    },
  };
}

const SCRIPT = [
  {
    type: "model_turn",
    tool_calls: [{
      name: "write_text_file",
      arguments: { path: "out/a.txt", content: "a\n", overwrite: true },
    }],
  },
  {
    type: "model_turn",
    tool_calls: [{
      name: "write_text_file",
      arguments: { path: "out/b.txt", content: "b\n", overwrite: true },
    }],
  },
  { type: "model_turn", content: "done" },
].map((t) => JSON.stringify(t)).join("\n") + "\n";

function launcher(args: readonly string[], cwd: string, state: string): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", `--config=${join(REPO, "deno.json")}`, "libos", ...args],
    cwd,
    env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", XDG_STATE_HOME: state, HOME: state },
    stdout: "piped",
    stderr: Deno.env.get("LIBOS_BENCH_DEBUG") ? "inherit" : "piped",
  });
}

const AGENTS = 300;

function workersCase(k: number, engine: "postgres" | "sqlite"): BenchCase {
  return {
    group: "workers: quanta",
    name: engine === "postgres" ? `PostgreSQL, ${k} worker(s)` : "SQLite file, 1 worker",
    async run() {
      using dir = benchDir();
      const workspace = join(dir.path, "ws");
      const state = join(dir.path, "state");
      Deno.mkdirSync(workspace);
      const script = join(dir.path, "script.jsonl");
      Deno.writeTextFileSync(script, SCRIPT);
      await using cluster = engine === "postgres" ? await startCluster() : undefined;
      const db = cluster ? `${cluster.url}?schema=workers_${k}` : join(dir.path, "w.db");
      {
        await using runtime = await createRuntime({
          db,
          workspace,
          env: { get: (n) => (n === "XDG_STATE_HOME" ? state : undefined) },
        });
        for (let i = 0; i < AGENTS; i++) {
          runtime.processes.spawn({ goal: `agent ${i}`, image: "coding-agent:v0" });
        }
      }
      const start = performance.now();
      const outs = await Promise.all(Array.from({ length: k }, (_, i) =>
        launcher(
          [
            "worker",
            "--db",
            db,
            "--model",
            `replay-each:${script}`,
            "--until-idle",
            "--max-trees",
            "64",
            "--name",
            `w${i}`,
            "--json",
          ],
          workspace,
          state,
        ).output()));
      const seconds = (performance.now() - start) / 1000;
      let quanta = 0;
      for (const out of outs) {
        if (!out.success) {
          throw new Error(
            new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
          );
        }
        quanta += (JSON.parse(new TextDecoder().decode(out.stdout)) as { quanta: number }).quanta;
      }
      return {
        ops: quanta,
        seconds,
        latenciesMs: [(seconds * 1000 * k) / Math.max(1, quanta)],
        note:
          `${AGENTS} scripted agents × 3 turns; wall time incl. launcher start; p50 = worker-ms per quantum`,
      };
    },
  };
}

/** The cases of this file. */
export const CASES: readonly BenchCase[] = [
  leaseCase(1, "sqlite"),
  leaseCase(1, "postgres"),
  leaseCase(2, "postgres"),
  leaseCase(4, "postgres"),
  workersCase(1, "sqlite"),
  workersCase(1, "postgres"),
  workersCase(2, "postgres"),
  workersCase(4, "postgres"),
];
