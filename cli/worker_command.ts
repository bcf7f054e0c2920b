/**
 * `libos worker` (issue 26): one of several runtimes sharing a database (PostgreSQL, or one
 * SQLite file on one machine), each running the process trees it holds a lease on.
 *
 * A round: claim trees no one holds (up to `--max-trees`), recover them as a restart would
 * (actions a dead worker left `executing` become `outcome_unknown`, reported and never re-run),
 * run them until idle, release the trees that finished. Between rounds the worker sleeps until
 * another connection commits (LISTEN/NOTIFY on PostgreSQL; SQLite is looked at every 250 ms), a
 * lease of another worker is due to lapse, or it is told to stop. A heartbeat renews the leases
 * every third of their lifetime; a worker that finds a lease gone stops its quanta at once (the
 * tree has a new owner) and exits.
 *
 * @module
 */
import { LibosError, UsageError } from "../runtime/base/errors.ts";
import { executorFor } from "../runtime/model/executor.ts";
import { isFinal, ProcessStatus } from "../runtime/process/process.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { MAX_PAGE } from "../runtime/store/store.ts";
import { type Command, flagOption, integerOption, stringOption } from "./_options.ts";
import { EXIT_OK, say } from "./_output.ts";
import { openRuntime } from "./_workspace.ts";
import { chooseModel } from "./_model_choice.ts";
import { rootFinder } from "./_run_lock.ts";

const FINISHED = ProcessStatus.options.filter((s) => isFinal(s));
const LIVE = ProcessStatus.options.filter((s) => !isFinal(s));

/** What a worker did, for its report. */
interface WorkerReport {
  readonly owner: string;
  rounds: number;
  quanta: number;
  claimed: number;
  finished: number;
  lost: string[];
}

/** Resolves after `ms`, or at once when `signal` aborts; the timer never outlives it. */
function pause(
  ms: number,
  signal: AbortSignal,
  wake: { poke: (() => void) | undefined },
): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      wake.poke = undefined;
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal.addEventListener("abort", done, { once: true });
    wake.poke = done;
  });
}

async function worker(parsed: Parameters<Command["run"]>[0], io: Parameters<Command["run"]>[1]) {
  const chosen = chooseModel(parsed, io, "configured");
  if (!chosen) {
    throw new UsageError(
      `"libos worker" runs model turns: pass --model openai:MODEL (or set OPENAI_MODEL), or --model replay-each:FILE.jsonl for a scripted model`,
    );
  }
  const ttl = integerOption(parsed, "lease-ttl", 1_000, 3_600_000) ?? 10_000;
  const maxTrees = integerOption(parsed, "max-trees", 1, MAX_PAGE) ?? 64;
  const concurrency = integerOption(parsed, "concurrency", 1, 256) ?? 4;
  const untilIdle = flagOption(parsed, "until-idle");
  const owner = stringOption(parsed, "name") ??
    `worker-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  if (!/^[\w.:@-]{1,128}$/.test(owner)) {
    throw new UsageError(`--name must be 1 to 128 letters, digits or . : @ _ -`);
  }
  // Asks wait in the database for a human anywhere (`libos human approve ID`); the worker wakes
  // when the decision commits.
  await using runtime = await openRuntime(parsed, io, "write", {
    secrets: chosen.secrets,
    human: "queue",
  });
  const report: WorkerReport = {
    owner,
    rounds: 0,
    quanta: 0,
    claimed: 0,
    finished: 0,
    lost: [],
  };
  const stop = new AbortController();
  const onStop = () => stop.abort();
  const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
  for (const s of signals) Deno.addSignalListener(s, onStop);
  try {
    await runRounds(runtime, {
      owner,
      ttl,
      maxTrees,
      concurrency,
      untilIdle,
      model: chosen.model,
      stop: stop.signal,
      report,
    });
  } finally {
    for (const s of signals) Deno.removeSignalListener(s, onStop);
  }
  const lines = [
    `Worker ${owner}: ${report.rounds} round(s), ${report.quanta} quanta, ${report.claimed} tree(s) claimed, ${report.finished} finished.`,
    ...(report.lost.length
      ? [
        `Lost the lease on ${
          report.lost.join(", ")
        }: it could not be renewed in time and another worker took the tree over.`,
      ]
      : []),
  ];
  say(io, parsed, runtime.location.path, { ...report }, lines.join("\n"));
  return EXIT_OK;
}

interface RoundOptions {
  readonly owner: string;
  readonly ttl: number;
  readonly maxTrees: number;
  readonly concurrency: number;
  readonly untilIdle: boolean;
  readonly model: Parameters<typeof executorFor>[1];
  readonly stop: AbortSignal;
  readonly report: WorkerReport;
}

async function runRounds(runtime: Runtime, o: RoundOptions): Promise<void> {
  const { store, clock } = runtime;
  /** Every tree this worker holds a lease on, and whether a round is running it now. */
  const held = new Map<string, boolean>();
  const rootOf = rootFinder(runtime);
  /** When the claiming loop is due to look again (another worker's lease lapses). */
  const nextLapse = { at: Number.POSITIVE_INFINITY };
  const rounds = new Set<Promise<void>>();
  const lost = new AbortController();
  const wake: { poke: (() => void) | undefined } = { poke: undefined };
  /** `flag`: something to look at; `external`: another connection committed since. */
  const poked = { flag: false, external: false };
  const poke = () => {
    poked.flag = true;
    wake.poke?.();
  };
  const committed = () => {
    poked.external = true;
    poke();
  };
  // Wake-ups: another connection committed (a human's decision, a new process, a released tree).
  const unlisten = store.onExternalCommit?.(committed);
  let seenVersion = store.dataVersion();
  const poll = unlisten === undefined
    ? setInterval(() => {
      const version = store.dataVersion();
      if (version !== seenVersion) {
        seenVersion = version;
        committed();
      }
    }, 250)
    : undefined;
  /** When every held lease was last extended (a claim extends only its own). */
  let renewedAt = clock.now();
  const renew = () => {
    if (held.size === 0 || lost.signal.aborted) return;
    try {
      const at = clock.now();
      const still = new Set(store.renewLeases(o.owner, at, o.ttl));
      renewedAt = at;
      const gone = [...held.keys()].filter((root) => !still.has(root));
      if (gone.length > 0) {
        // The fenced commit above refuses this already; a store without fencing stops here.
        o.report.lost.push(...gone);
        throw new LibosError(
          "lease_lost",
          "runtime",
          `Worker ${o.owner} lost its lease on ${gone.join(", ")}: another worker runs it now`,
        );
      }
    } catch (error) {
      // A lease that cannot be renewed cannot be trusted: stop rather than run unowned trees.
      lost.abort(error);
      poke();
    }
  };
  const heartbeat = setInterval(renew, Math.max(100, Math.floor(o.ttl / 3)));
  /**
   * Before each quantum: is the lease surely still ours? A busy event loop may starve the
   * heartbeat, so a lease older than a third of its life is renewed here first; a lost one
   * admits nothing (the worker is stopping).
   */
  const admit = (pid: string) => {
    if (!lost.signal.aborted && clock.now() - renewedAt > o.ttl / 3) renew();
    // Busy rounds may starve timers too: a lapse due now wakes the claiming loop from here.
    if (clock.now() >= nextLapse.at) wake.poke?.();
    const root = rootOf(pid);
    return !lost.signal.aborted && root !== null && held.has(root) &&
      clock.now() - renewedAt < (2 * o.ttl) / 3;
  };
  /**
   * Fencing. Every commit of this worker goes through only while it still holds every lease it
   * believes it holds (checked in the committing transaction): a worker paused past its lease
   * (SIGSTOP, a starved event loop, a cut network) commits nothing more — its batch may hold
   * writes for the tree it lost — and stops with `store_lease_lost`; its other trees lapse and
   * are taken over. And no effect starts unless the lease is surely held: before an intent is
   * recorded and again just before the effect starts, an old renewal is renewed first.
   */
  const unfence = store.fenceCommits(o.owner, () => [...held.keys()]);
  // Paused inside a transaction, this worker's row locks would keep the others from taking its
  // trees over: the server ends such a session well within the lease.
  store.limitIdleTransactions?.(o.ttl / 2);
  const unguard = runtime.ledger.guard((pid) => {
    const root = rootOf(pid);
    if (!lost.signal.aborted && clock.now() - renewedAt > o.ttl / 3) renew();
    if (
      lost.signal.aborted || root === null || !held.has(root) ||
      clock.now() - renewedAt >= (2 * o.ttl) / 3
    ) {
      throw new LibosError(
        "lease_lost",
        "runtime",
        `Worker ${o.owner} does not hold the lease on the tree of ${pid} any more (another worker runs it, or this one is stopping); the effect was not started`,
      );
    }
  });
  const executor = executorFor(runtime, o.model);

  /**
   * One round over `roots`: recovered as a restart would recover them (nothing of theirs is in
   * flight here), run until idle, the finished ones released. Rounds over disjoint trees run
   * side by side, so a tree taken over from a dead worker starts at once.
   */
  const startRound = (roots: readonly string[]) => {
    for (const root of roots) {
      held.set(root, true);
    }
    const mine = new Set(roots);
    const round = (async () => {
      using scheduler = runtime.scheduler(executor, {
        concurrency: o.concurrency,
        admit,
        scope: (pid) => {
          const root = rootOf(pid);
          return root !== null && mine.has(root);
        },
      });
      scheduler.recover();
      const ran = await scheduler.runUntilIdle({ signal: lost.signal, drain: o.stop });
      o.report.quanta += ran.quanta;
      o.report.rounds++;
      for (const root of mine) {
        if (lost.signal.aborted) break;
        if (!held.has(root)) continue; // lost to another worker
        if (isFinal(runtime.processes.get(root).status)) {
          // Out of the fence first: the release's own commit deletes the lease.
          held.delete(root);
          store.releaseLease(o.owner, root);
          o.report.finished++;
        } else held.set(root, false);
      }
    })();
    rounds.add(round);
    round.catch((error) => {
      // A round that failed leaves its trees to lapse; the worker stops with the error.
      if (!lost.signal.aborted) lost.abort(error);
    }).finally(() => {
      rounds.delete(round);
      poke();
    });
  };

  try {
    while (!o.stop.aborted && !lost.signal.aborted) {
      poked.flag = false;
      // A dead worker's trees first, even when this one is busy (up to twice --max-trees):
      // they may have been mid-quantum, and their humans wait; then new work, up to capacity.
      // Holding nothing, every lease claimed now is as fresh as now.
      if (held.size === 0) renewedAt = clock.now();
      for (const lapsedOnly of [true, false]) {
        const room = (lapsedOnly ? 2 * o.maxTrees : o.maxTrees) - held.size;
        if (room <= 0) continue;
        const claimed = store.claimTrees(o.owner, clock.now(), o.ttl, room, FINISHED, {
          lapsedOnly,
        });
        o.report.claimed += claimed.length;
        if (claimed.length > 0) startRound(claimed);
      }
      // Trees no round runs (waiting on a human, say) get one when something was committed.
      const idle = [...held].filter(([, running]) => !running).map(([root]) => root);
      if (idle.length > 0 && poked.external) startRound(idle);
      poked.external = false;
      if (o.untilIdle && held.size === 0 && rounds.size === 0 && !anyLive(runtime)) break;
      if (poked.flag) continue;
      const sleep = untilNextLapse(runtime, o.owner, o.ttl);
      nextLapse.at = clock.now() + sleep;
      await pause(sleep, o.stop, wake);
    }
  } finally {
    unguard();
    clearInterval(heartbeat);
    if (poll !== undefined) clearInterval(poll);
    unlisten?.();
    if (o.stop.aborted || lost.signal.aborted) {
      // Rounds in flight end: gently on a stop (quanta finish), at once on a lost lease.
      await Promise.allSettled([...rounds]);
    }
    unfence();
    // A worker that stops cleanly hands its unfinished trees back at once.
    if (!lost.signal.aborted) {
      for (const root of held.keys()) {
        try {
          store.releaseLease(o.owner, root);
        } catch { /* they lapse on their own */ }
      }
    }
  }
  if (lost.signal.aborted) throw lost.signal.reason;
}

/** Whether any process is still live. */
function anyLive(runtime: Runtime): boolean {
  return runtime.processes.list({ statuses: LIVE, limit: 1 }).length > 0;
}

/** How long to sleep: until another worker's lease lapses (then its trees may be ours), at most a TTL. */
function untilNextLapse(runtime: Runtime, owner: string, ttl: number): number {
  const now = runtime.clock.now();
  let next = now + ttl;
  for (const lease of runtime.store.listLeases(MAX_PAGE)) {
    if (lease.owner !== owner && lease.expires < next) next = lease.expires;
  }
  return Math.max(5, next - now + 5);
}

/** The `worker` command. */
export const workerCommand: Command = {
  name: "worker",
  summary: "run leased process trees of a shared database, beside other workers",
  usage:
    `Usage: libos worker --db postgres://USER@HOST:PORT/DB --model MODEL [--name NAME] [--lease-ttl MS]
       [--max-trees N] [--concurrency N] [--until-idle] [--json]

Runs the process trees it holds a lease on, beside other workers on the same database (each tree
is run by one worker at a time). It claims trees no one holds, recovers them as a restart would
(actions left executing by a dead worker become outcome_unknown and are never re-run), runs them
until idle, and releases the ones that finished. Idle, it sleeps until another connection
commits (LISTEN/NOTIFY), or another worker's lease lapses. Leases last --lease-ttl ms (default
10000) and are renewed every third of that; a worker that dies loses its trees to another within
the TTL, and one that could not renew in time drops the trees another took (their quanta stop at
once) and goes on with the rest. --until-idle exits once no live process remains; SIGINT or SIGTERM stop it gently (the
trees it held are released at once). MODEL: openai:MODEL, or replay-each:FILE.jsonl (each process
follows the script by its own turn count). Asks wait for a human (--human queue, the default):
"libos human list" and "libos human approve ID" from any machine on the same database decide
them, and the worker holding the tree resumes it when the decision commits.`,
  options: [
    "model",
    "env-file",
    "name",
    "lease-ttl",
    "max-trees",
    "concurrency",
    "until-idle",
    "human",
    "mode",
  ],
  run: worker,
};
