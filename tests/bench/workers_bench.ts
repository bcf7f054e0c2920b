/**
 * Several workers on one database (issue 26), each case on a private PostgreSQL cluster
 * (`_pg_cluster.ts`) beside the same work on one SQLite file:
 *
 * - **leases**: lease claims per second by 1, 2 and 4 claimer processes racing for 20,000 trees
 *   (50 per claim, `FOR UPDATE SKIP LOCKED`), beside one claimer on SQLite. Target ≥ 2,000/s.
 * - **approve→resume**: two workers run agents that each ask a human once; this process, a third
 *   one on the same database, approves one request at a time; latency is from the approval's
 *   commit to the owning worker's action row (the woken worker claimed, resumed and began the
 *   approved effect).
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
    // INIT_CWD names the workspace for the launcher; `deno task bench` sets it to the repository.
    env: {
      DENO_NO_UPDATE_CHECK: "1",
      NO_COLOR: "1",
      XDG_STATE_HOME: state,
      HOME: state,
      INIT_CWD: cwd,
    },
    stdout: "piped",
    stderr: Deno.env.get("LIBOS_BENCH_DEBUG") ? "inherit" : "piped",
  });
}

/** `libos worker` on `db` with the scripted model, until nothing is left to run. */
function workerArgs(db: string, script: string, name: string): string[] {
  return [
    "worker",
    "--db",
    db,
    "--model",
    `replay-each:${script}`,
    "--until-idle",
    "--name",
    name,
  ];
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
          [...workerArgs(db, script, `w${i}`), "--max-trees", "64", "--json"],
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

const ASKERS = 40;

function approveResumeCase(): BenchCase {
  return {
    group: "workers: approve→resume",
    name: "PostgreSQL, 2 workers, approval from a third process",
    async run() {
      using dir = benchDir();
      const workspace = join(dir.path, "ws");
      const state = join(dir.path, "state");
      Deno.mkdirSync(workspace);
      const script = join(dir.path, "script.jsonl");
      // Each agent asks for a standing permission, then answers: the process waits for a human.
      const ask = {
        name: "request_permission",
        arguments: {
          resource: { type: "net", key: "example.com", scope: "exact" },
          rights: ["connect"],
          reason: "the bench",
        },
      };
      Deno.writeTextFileSync(
        script,
        [{ type: "model_turn", tool_calls: [ask] }, { type: "model_turn", content: "done" }]
          .map((t) => JSON.stringify(t)).join("\n") + "\n",
      );
      await using cluster = await startCluster();
      const db = `${cluster.url}?schema=approve_${Date.now()}`;
      await using runtime = await createRuntime({
        db,
        workspace,
        env: { get: (n) => (n === "XDG_STATE_HOME" ? state : undefined) },
      });
      for (let i = 0; i < ASKERS; i++) {
        runtime.processes.spawn({ goal: `asker ${i}`, image: "coding-agent:v0" });
      }
      using reader = PostgresStore.open({ url: db, readOnly: true });
      const workers = [0, 1].map((i) =>
        launcher(
          workerArgs(db, script, `w${i}`),
          workspace,
          state,
        ).spawn()
      );
      const deadline = Date.now() + 120_000;
      const waitFor = async <T>(what: string, probe: () => T | undefined): Promise<T> => {
        for (;;) {
          const found = probe();
          if (found !== undefined) return found;
          if (Date.now() > deadline) {
            for (const worker of workers) worker.kill("SIGKILL");
            throw new Error(`approve→resume: timed out waiting for ${what}`);
          }
          await new Promise((r) => setTimeout(r, 1));
        }
      };
      const latencies: number[] = [];
      const startedAll = performance.now();
      for (let done = 0; done < ASKERS; done++) {
        const request = await waitFor(
          "a pending request",
          () => reader.listHumanRequests({ statuses: ["pending"], limit: 1 })[0],
        );
        runtime.human.approve(request.id, { by: "human:bench" });
        const approved = Date.now();
        // The owning worker wakes on the notification, claims the tree, resumes the process and
        // hands it the permission: its `tool.result` event is stamped then (one clock, one host).
        const resumed = await waitFor(
          "the worker to resume the process",
          () =>
            reader.readEvents({ after: 0, kinds: ["tool.result"], limit: 10_000 }).find((e) =>
              (JSON.parse(e.payload) as { pid?: string }).pid === request.pid
            ),
        );
        latencies.push(Math.max(0, resumed.time - approved));
      }
      const seconds = (performance.now() - startedAll) / 1000;
      for (const worker of workers) {
        const out = await worker.output();
        if (!out.success) {
          throw new Error(
            new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
          );
        }
      }
      return {
        ops: latencies.length,
        seconds,
        latenciesMs: latencies,
        note:
          `${ASKERS} agents asking once, approved one at a time by another process; latency = approval committed → the owning worker handed the process its answer (tool.result)`,
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
  approveResumeCase(),
];
