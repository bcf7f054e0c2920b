/**
 * Several workers on one PostgreSQL database, as users run them (`libos worker` through the real
 * launcher): 3 workers × 1,000 scripted agents, each with effectful tool calls; one worker is
 * SIGKILLed mid-run. Every process finishes, no action is executed twice, nothing is left
 * executing, the audit verifies (every segment and its head), and the dead worker's trees are
 * taken over within the lease TTL + 1 s.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { call, final } from "./agent_fixture.ts";
import { REPO, task } from "./_cli_sandbox.ts";
import { freshSchema, pgTest } from "./pg_fixture.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { PostgresStore } from "../runtime/store/postgres_store.ts";
import { isFinal, ProcessStatus } from "../runtime/process/process.ts";

const LIVE = ProcessStatus.options.filter((s) => !isFinal(s));
const AGENTS = Number(Deno.env.get("LIBOS_FAULT_AGENTS") ?? 1_000);
const TTL_MS = 2_000;

/** A worker started through the launcher in a session of its own (so its whole tree can be killed). */
function startWorker(
  name: string,
  url: string,
  script: string,
  workspace: string,
  state: string,
  temp: string,
): Deno.ChildProcess {
  return new Deno.Command("setsid", {
    args: [
      Deno.execPath(),
      "task",
      "--quiet",
      `--config=${join(REPO, "deno.json")}`,
      "libos",
      "worker",
      "--db",
      url,
      "--model",
      `replay-each:${script}`,
      "--name",
      name,
      "--lease-ttl",
      String(TTL_MS),
      "--max-trees",
      "20",
      "--until-idle",
      "--json",
    ],
    cwd: workspace,
    clearEnv: true,
    env: {
      ...Object.fromEntries(Object.entries(Deno.env.toObject()).filter(([k]) => k !== "INIT_CWD")),
      XDG_STATE_HOME: state,
      TMPDIR: temp,
      DENO_NO_UPDATE_CHECK: "1",
      NO_COLOR: "1",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

async function drain(child: Deno.ChildProcess): Promise<{ code: number; out: string }> {
  const output = await child.output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    out: decoder.decode(output.stdout) + decoder.decode(output.stderr),
  };
}

/**
 * Every one of `agents` processes finished, and the ledger and the audit show each action begun
 * once and ended at most once, none left executing, none that a dead or stale worker left
 * `outcome_unknown` finished later by anyone.
 */
function finishedOnce(watch: PostgresStore, agents: number): void {
  // Every process finished.
  const all = watch.listProcesses({ limit: 10_000 });
  assert.equal(all.length, agents);
  const notDone = all.filter((p) => p.status !== "exited");
  assert.deepEqual(notDone.map((p) => `${p.pid}:${p.status}`), []);
  // No action ran twice; none is left executing.
  const actions = [];
  for (const status of ["done", "failed", "executing", "outcome_unknown", "cancelled"]) {
    actions.push(...watch.listActions({ status, limit: 10_000 }).map((a) => ({ ...a })));
  }
  assert.equal(actions.filter((a) => a.status === "executing").length, 0);
  // At most once, read from the audit: every action began once (one intent) and ended at
  // most once (one completion), and none left executing by the dead worker was finished
  // later by anyone (an outcome_unknown action has no completion).
  const intents = new Map<string, number>();
  const ends = new Map<string, number>();
  for (let after = 0;;) {
    const page = watch.queryAudit({
      actionPrefix: "action.",
      afterSeq: after,
      limit: 10_000,
      order: "asc",
    });
    if (page.length === 0) break;
    for (const r of page) {
      const id = r.correlation ?? "";
      if (r.action === "action.intent") intents.set(id, (intents.get(id) ?? 0) + 1);
      else if (r.action !== "action.outcome_unknown") ends.set(id, (ends.get(id) ?? 0) + 1);
    }
    after = page[page.length - 1]!.seq;
  }
  for (const a of actions) {
    assert.equal(intents.get(a.id), 1, `${a.id} began ${intents.get(a.id)} times`);
    const ended = ends.get(a.id) ?? 0;
    assert.ok(ended <= 1, `${a.id} ended ${ended} times: it ran twice`);
    if (a.status === "outcome_unknown") {
      assert.equal(ended, 0, `${a.id} is outcome_unknown but a completion was recorded`);
    }
  }
  assert.ok(
    actions.filter((a) => a.status === "done").length >= agents,
    "the agents' writes ran",
  );
}

/** A workspace, state and temporary directory, the agents' script and `agents` spawned agents. */
interface Writers {
  readonly root: string;
  readonly workspace: string;
  readonly state: string;
  readonly temp: string;
  readonly script: string;
  readonly db: { readonly url: string; drop(): void };
}

/**
 * Scratch directories, a fresh schema and `agents` spawned agents, each scripted to write two
 * files (a new directory, then a file in it) and answer. The caller drops the schema and
 * removes `root`.
 */
async function writers(prefix: string, agents: number): Promise<Writers> {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: `libos-${prefix}-` }));
  const workspace = join(root, "ws");
  const state = join(root, "state");
  const temp = join(root, "tmp");
  for (const dir of [workspace, state, temp]) Deno.mkdirSync(dir);
  Deno.writeTextFileSync(join(workspace, "README"), "hello\n");
  const script = join(root, "script.jsonl");
  Deno.writeTextFileSync(
    script,
    [
      call("write_text_file", { path: "out/a.txt", content: "a\n" }),
      call("write_text_file", { path: "out/b.txt", content: "b\n", overwrite: true }),
      final("done"),
    ].join("\n") + "\n",
  );
  const db = freshSchema(prefix.replaceAll("-", "_"));
  try {
    await using runtime = await createRuntime({
      db: db.url,
      workspace,
      env: { get: (name: string) => (name === "XDG_STATE_HOME" ? state : undefined) },
      create: true,
    });
    for (let i = 0; i < agents; i++) {
      runtime.processes.spawn({ goal: `agent ${i}`, image: "coding-agent:v0" });
    }
  } catch (error) {
    db.drop();
    Deno.removeSync(root, { recursive: true });
    throw error;
  }
  return { root, workspace, state, temp, script, db };
}

pgTest(
  `fault: 3 workers × ${AGENTS} scripted agents, one worker SIGKILLed mid-run — every process finishes, no action runs twice, the audit verifies, takeover within the lease TTL + 1 s`,
  async () => {
    const { root, workspace, state, temp, script, db } = await writers("workers", AGENTS);
    try {
      const workers = ["w1", "w2", "w3"].map((name) =>
        startWorker(name, db.url, script, workspace, state, temp)
      );
      const watch = PostgresStore.open({ url: db.url, readOnly: true });
      let killedAt = 0;
      let heldByVictim: string[] = [];
      try {
        // Kill w2 once it holds trees and some agents have finished.
        const started = Date.now();
        for (;;) {
          const leases = watch.listLeases(10_000).filter((l) => l.owner === "w2");
          const done = watch.listProcesses({ statuses: ["exited"], limit: 10_000 }).length;
          if (leases.length > 0 && done >= AGENTS / 10) {
            heldByVictim = leases.map((l) => l.root);
            Deno.kill(-workers[1]!.pid, "SIGKILL");
            killedAt = Date.now();
            break;
          }
          assert.ok(Date.now() - started < 240_000, "the workers made no progress in 240 s");
          await new Promise((r) => setTimeout(r, 50));
        }
        // Takeover: every tree w2 held is claimed by another worker (or finished) soon after
        // its lease lapsed.
        let takenAt = 0;
        for (;;) {
          // A tree w2 finished keeps its lease row (w2 never released it): only live ones count.
          const live = new Set(
            watch.listProcesses({ statuses: LIVE, limit: 10_000 }).map((p) => p.pid),
          );
          const still = watch.listLeases(10_000).filter((l) =>
            l.owner === "w2" && heldByVictim.includes(l.root) && live.has(l.root)
          );
          if (still.length === 0) {
            takenAt = Date.now();
            break;
          }
          if (Date.now() - killedAt > 60_000) {
            for (const w of [workers[0]!, workers[2]!]) {
              try {
                Deno.kill(-w.pid, "SIGKILL");
              } catch { /* it already ended */ }
            }
            const outs = await Promise.all([drain(workers[0]!), drain(workers[2]!)]);
            assert.fail(`no worker took w2's trees over:\n${outs.map((o) => o.out).join("\n")}`);
          }
          await new Promise((r) => setTimeout(r, 20));
        }
        const takeover = takenAt - killedAt;
        assert.ok(
          takeover <= TTL_MS + 1_000,
          `takeover took ${takeover} ms, more than the lease TTL (${TTL_MS} ms) + 1 s`,
        );
        const results = await Promise.all([drain(workers[0]!), drain(workers[2]!)]);
        await drain(workers[1]!);
        for (const r of results) assert.equal(r.code, 0, r.out);
        finishedOnce(watch, AGENTS);
      } finally {
        watch.close();
        for (const w of workers) {
          try {
            Deno.kill(-w.pid, "SIGKILL");
          } catch { /* already gone */ }
        }
      }
      const verify = await task(workspace, state, "libos", "audit", "verify", "--db", db.url);
      assert.equal(verify.status, 0, verify.stdout + verify.stderr);
      assert.match(verify.stdout, /segment heads match/);
    } finally {
      db.drop();
      Deno.removeSync(root, { recursive: true });
    }
  },
);

pgTest(
  "humans from anywhere: a worker's process asks, `libos human approve` in another process decides, the worker wakes on the notification and resumes",
  async () => {
    const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-workers-human-" }));
    const workspace = join(root, "ws");
    const state = join(root, "state");
    const temp = join(root, "tmp");
    for (const dir of [workspace, state, temp]) Deno.mkdirSync(dir);
    Deno.writeTextFileSync(join(workspace, "doomed.txt"), "bye\n");
    const script = join(root, "script.jsonl");
    // A delete asks in workspace-write mode: the process waits for a human.
    Deno.writeTextFileSync(
      script,
      [call("delete_file", { path: "doomed.txt" }), final("deleted")].join("\n") + "\n",
    );
    const db = freshSchema("human");
    let worker: Deno.ChildProcess | undefined;
    try {
      const spawn = await task(
        workspace,
        state,
        "libos",
        "spawn",
        "--goal",
        "delete doomed.txt",
        "--image",
        "coding-agent:v0",
        "--db",
        db.url,
        "--json",
      );
      assert.equal(spawn.status, 0, spawn.stdout + spawn.stderr);
      const pid = (JSON.parse(spawn.stdout) as { process: { pid: string } }).process.pid;
      worker = startWorker("wh", db.url, script, workspace, state, temp);
      // The request appears in the database, decided by nobody yet.
      let id: string | undefined;
      const started = Date.now();
      while (id === undefined) {
        assert.ok(Date.now() - started < 60_000, "no request reached the database");
        const list = await task(
          workspace,
          state,
          "libos",
          "human",
          "list",
          "--db",
          db.url,
          "--json",
        );
        assert.equal(list.status, 0, list.stdout + list.stderr);
        id = (JSON.parse(list.stdout) as { requests: { id: string }[] }).requests[0]?.id;
        if (id === undefined) await new Promise((r) => setTimeout(r, 200));
      }
      assert.ok(Deno.statSync(join(workspace, "doomed.txt")).isFile, "nothing ran before approval");
      const approve = await task(workspace, state, "libos", "human", "approve", id, "--db", db.url);
      assert.equal(approve.status, 0, approve.stdout + approve.stderr);
      const { code, out } = await drain(worker);
      worker = undefined;
      assert.equal(code, 0, out);
      using store = PostgresStore.open({ url: db.url, readOnly: true });
      assert.equal(store.getProcess(pid)?.status, "exited");
      assert.throws(() => Deno.statSync(join(workspace, "doomed.txt")), Deno.errors.NotFound);
    } finally {
      if (worker !== undefined) {
        try {
          Deno.kill(-worker.pid, "SIGKILL");
        } catch { /* it ended */ }
        await drain(worker);
      }
      db.drop();
      Deno.removeSync(root, { recursive: true });
    }
  },
);

pgTest(
  "attack: a worker paused past its lease (SIGSTOP) and resumed after another took its trees commits nothing more and starts no effect: it stops (lease lost, or its session ended), the other finishes every process, no action runs twice",
  async () => {
    const agents = 150;
    const { root, workspace, state, temp, script, db } = await writers("paused", agents);
    const workers: Deno.ChildProcess[] = [];
    try {
      workers.push(startWorker("stale", db.url, script, workspace, state, temp));
      using watch = PostgresStore.open({ url: db.url, readOnly: true });
      // Pause "stale" once it has finished some agents and holds live trees.
      const started = Date.now();
      let paused: string[] = [];
      for (;;) {
        const live = new Set(
          watch.listProcesses({ statuses: LIVE, limit: 10_000 }).map((p) => p.pid),
        );
        const done = watch.listProcesses({ statuses: ["exited"], limit: 10_000 }).length;
        paused = watch.listLeases(10_000).filter((l) => l.owner === "stale" && live.has(l.root))
          .map((l) => l.root);
        if (paused.length > 0 && done >= 10) break;
        assert.ok(Date.now() - started < 120_000, "the worker made no progress in 120 s");
        await new Promise((r) => setTimeout(r, 20));
      }
      Deno.kill(-workers[0]!.pid, "SIGSTOP");
      const stoppedAt = Date.now();
      workers.push(startWorker("fresh", db.url, script, workspace, state, temp));
      // "fresh" takes every live tree "stale" held once its leases lapse.
      for (;;) {
        const live = new Set(
          watch.listProcesses({ statuses: LIVE, limit: 10_000 }).map((p) => p.pid),
        );
        const still = watch.listLeases(10_000).filter((l) =>
          l.owner === "stale" && live.has(l.root)
        );
        if (still.length === 0) break;
        assert.ok(Date.now() - stoppedAt < 60_000, "no worker took the paused worker's trees");
        await new Promise((r) => setTimeout(r, 20));
      }
      // Its trees were taken over (not merely finished before the pause).
      assert.ok(
        watch.listLeases(10_000).some((l) => l.owner === "fresh" && paused.includes(l.root)) ||
          paused.some((pid) => watch.getProcess(pid)?.status === "exited"),
      );
      // What every chain segment holds before the paused worker resumes.
      const perChain = (records: readonly { chain: string }[]) => {
        const counts = new Map<string, number>();
        for (const r of records) counts.set(r.chain, (counts.get(r.chain) ?? 0) + 1);
        return counts;
      };
      const before = perChain(watch.queryAudit({ afterSeq: 0, limit: 100_000, order: "asc" }));
      const resumedAt = Date.now();
      Deno.kill(-workers[0]!.pid, "SIGCONT");
      const [stale, fresh] = await Promise.all(workers.map(drain));
      workers.length = 0;
      // The paused worker found out at its next commit (or effect) and stopped: its commit was
      // fenced, or — paused inside a transaction — the server had ended its session.
      assert.notEqual(stale!.code, 0, stale!.out);
      assert.match(stale!.out, /lease_lost|session with PostgreSQL .* ended/, stale!.out);
      assert.equal(fresh!.code, 0, fresh!.out);
      finishedOnce(watch, agents);
      // Nothing the paused worker did after it resumed was committed: every record stamped
      // after the resumption is in "fresh"'s chain segment (the one that wrote while "stale"
      // was stopped).
      const records = watch.queryAudit({ afterSeq: 0, limit: 100_000, order: "asc" });
      const freshChains = new Set(
        records.filter((r) => r.time > stoppedAt + 100 && r.time < resumedAt).map((r) => r.chain),
      );
      assert.equal(freshChains.size, 1, `one writer while paused: ${[...freshChains]}`);
      // Nothing more in any other segment: not even what the paused worker had pending.
      const after = perChain(records);
      for (const [chain, count] of after) {
        if (freshChains.has(chain)) continue;
        assert.equal(
          count,
          before.get(chain) ?? 0,
          `segment ${chain} grew after its worker resumed: the paused worker committed`,
        );
      }
      const verify = await task(workspace, state, "libos", "audit", "verify", "--db", db.url);
      assert.equal(verify.status, 0, verify.stdout + verify.stderr);
    } finally {
      for (const w of workers) {
        try {
          Deno.kill(-w.pid, "SIGKILL");
        } catch { /* it ended */ }
        await drain(w);
      }
      db.drop();
      Deno.removeSync(root, { recursive: true });
    }
  },
);
