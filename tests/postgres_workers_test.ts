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

pgTest(
  `fault: 3 workers × ${AGENTS} scripted agents, one worker SIGKILLed mid-run — every process finishes, no action runs twice, the audit verifies, takeover within the lease TTL + 1 s`,
  async () => {
    const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-workers-" }));
    const workspace = join(root, "ws");
    const state = join(root, "state");
    const temp = join(root, "tmp");
    for (const dir of [workspace, state, temp]) Deno.mkdirSync(dir);
    Deno.writeTextFileSync(join(workspace, "README"), "hello\n");
    const script = join(root, "script.jsonl");
    // Each agent: two effectful writes (a new directory, then a file in it), then its answer.
    Deno.writeTextFileSync(
      script,
      [
        call("write_text_file", { path: "out/a.txt", content: "a\n" }),
        call("write_text_file", { path: "out/b.txt", content: "b\n", overwrite: true }),
        final("done"),
      ].join("\n") + "\n",
    );
    const db = freshSchema("workers");
    try {
      {
        await using runtime = await createRuntime({
          db: db.url,
          workspace,
          env: { get: (name: string) => (name === "XDG_STATE_HOME" ? state : undefined) },
          create: true,
        });
        for (let i = 0; i < AGENTS; i++) {
          runtime.processes.spawn({ goal: `agent ${i}`, image: "coding-agent:v0" });
        }
      }
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
        // Every process finished.
        const all = watch.listProcesses({ limit: 10_000 });
        assert.equal(all.length, AGENTS);
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
          actions.filter((a) => a.status === "done").length >= AGENTS,
          "the agents' writes ran",
        );
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
