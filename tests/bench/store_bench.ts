/**
 * Store and audit benchmarks (DESIGN §6, §10): hash-chained audit appends with group commit
 * against a commit per record, store commit latency with synchronous=NORMAL against FULL, and
 * chain verification speed. Arrival pattern for every row: closed loop, one caller, back to back.
 *
 * @module
 */
import { join } from "node:path";
import { type AuditEntry, AuditLog } from "../../runtime/audit/audit_log.ts";
import { systemClock } from "../../runtime/base/clock.ts";
import { SqliteStore } from "../../runtime/store/sqlite_store.ts";
import { type BenchCase, benchDir, type BenchResult } from "./_bench.ts";

const BATCH_STEPS = 256;
const BATCH_MS = 5;

function entry(i: number): AuditEntry {
  return {
    actor: "pid_3f2a9c01b7e4",
    pid: "pid_3f2a9c01b7e4",
    action: i % 3 === 0 ? "fs.read" : "fs.write",
    resource: `filesystem:workspace:src/module_${i % 500}.ts`,
    decision: i % 17 === 0 ? "deny" : "allow",
    authority: i % 17 === 0 ? "default" : "cap:cap_81c2d0a4f11e",
    inputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    correlation: `call_${i}`,
    detail: { bytes: i % 4096 },
  };
}

function appendRun(
  options: { path: string; n: number; flushEach: boolean; synchronous?: "NORMAL" | "FULL" },
): BenchResult {
  const store = SqliteStore.open({
    path: options.path,
    batchSteps: BATCH_STEPS,
    batchMs: BATCH_MS,
    synchronous: options.synchronous ?? "NORMAL",
  });
  const audit = new AuditLog(store, {
    clock: systemClock(),
    headPath: null,
    database: options.path,
  });
  const latencies: number[] = [];
  const start = performance.now();
  for (let i = 0; i < options.n; i++) {
    const t = performance.now();
    audit.append(entry(i));
    if (options.flushEach) store.flush();
    latencies.push(performance.now() - t);
  }
  store.flush();
  const seconds = (performance.now() - start) / 1000;
  audit[Symbol.dispose]();
  store.close();
  return { ops: options.n, seconds, latenciesMs: latencies };
}

function commitLatency(path: string, n: number, synchronous: "NORMAL" | "FULL"): BenchResult {
  const store = SqliteStore.open({ path, synchronous });
  const audit = new AuditLog(store, { clock: systemClock(), headPath: null, database: path });
  const latencies: number[] = [];
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    audit.append(entry(i));
    const t = performance.now();
    store.flush();
    latencies.push(performance.now() - t);
  }
  const seconds = (performance.now() - start) / 1000;
  audit[Symbol.dispose]();
  store.close();
  return {
    ops: n,
    seconds,
    latenciesMs: latencies,
    note: "latency of flush() after one appended record",
  };
}

/** The store and audit rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "audit append",
    name: `group commit (${BATCH_STEPS} steps / ${BATCH_MS} ms), file, NORMAL`,
    target: { minOpsPerSecond: 20_000 },
    run() {
      using dir = benchDir();
      return {
        ...appendRun({ path: join(dir.path, "a.db"), n: 50_000, flushEach: false }),
        note: `one record per step; batch ${BATCH_STEPS}`,
      };
    },
  },
  {
    group: "audit append",
    name: "commit per record, file, NORMAL (competitor)",
    run() {
      using dir = benchDir();
      return {
        ...appendRun({ path: join(dir.path, "a.db"), n: 5_000, flushEach: true }),
        note: "flush() after every record",
      };
    },
  },
  {
    group: "audit append",
    name: "commit per record, file, FULL (competitor)",
    run() {
      using dir = benchDir();
      return {
        ...appendRun({
          path: join(dir.path, "a.db"),
          n: 2_000,
          flushEach: true,
          synchronous: "FULL",
        }),
        note: "fsync on every commit",
      };
    },
  },
  {
    group: "audit append",
    name: "group commit, :memory: (no I/O floor)",
    run() {
      return appendRun({ path: ":memory:", n: 50_000, flushEach: false });
    },
  },
  {
    group: "store commit",
    name: "flush() latency, WAL, synchronous=NORMAL",
    run() {
      using dir = benchDir();
      return commitLatency(join(dir.path, "c.db"), 3_000, "NORMAL");
    },
  },
  {
    group: "store commit",
    name: "flush() latency, WAL, synchronous=FULL (competitor)",
    run() {
      using dir = benchDir();
      return commitLatency(join(dir.path, "c.db"), 1_000, "FULL");
    },
  },
  {
    group: "audit verify",
    name: "verify 100,000-record chain",
    run() {
      using dir = benchDir();
      const path = join(dir.path, "v.db");
      appendRun({ path, n: 100_000, flushEach: false });
      const store = SqliteStore.open({ path });
      const audit = new AuditLog(store, { clock: systemClock(), headPath: null, database: path });
      const start = performance.now();
      const result = audit.verify({ head: false });
      const ms = performance.now() - start;
      if (!result.ok) throw new Error(`verify failed: ${result.problem.message}`);
      audit[Symbol.dispose]();
      store.close();
      return {
        ops: result.records,
        seconds: ms / 1000,
        latenciesMs: [ms],
        note: "one full walk; latency = whole walk",
      };
    },
  },
];
