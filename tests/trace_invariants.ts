/**
 * A test helper any suite can end a run with: `assertTraceInvariants(runtimeOrDbPath, pid)`
 * checks the stored run of `pid` and its descendants with the trace invariant checker
 * (runtime/audit/trace_check.ts) — the chain verifies, every effect has its decision, every
 * approval is used at most once, every child's authority is within its parent's — and fails
 * with every violation listed.
 */
import assert from "node:assert/strict";
import { AuditLog } from "../runtime/audit/audit_log.ts";
import { checkTrace, type TraceReport, type TraceSource } from "../runtime/audit/trace_check.ts";
import { systemClock } from "../runtime/base/clock.ts";
import { SqliteStore } from "../runtime/store/sqlite_store.ts";

/**
 * The trace report of `pid` (and its descendants) in a runtime, or in the database at a path
 * (opened read-only; its head file is not compared, which `libos audit check` does).
 */
export function traceReport(target: TraceSource | string, pid: string): TraceReport {
  if (typeof target !== "string") return checkTrace(target, pid, { tree: true });
  const store = SqliteStore.open({ path: target, readOnly: true });
  try {
    using audit = new AuditLog(store, { clock: systemClock(), headPath: null, database: target });
    return checkTrace({ store, audit }, pid, { tree: true, head: false });
  } finally {
    store.close();
  }
}

/** Asserts that the stored run of `pid` (and its descendants) keeps every trace invariant. */
export function assertTraceInvariants(target: TraceSource | string, pid: string): TraceReport {
  const report = traceReport(target, pid);
  assert.deepEqual(
    report.violations.map((v) =>
      `${v.invariant}${v.seq === undefined ? "" : ` @${v.seq}`}: ${v.message}`
    ),
    [],
    `the run of ${pid} broke trace invariants`,
  );
  assert.ok(report.ok);
  return report;
}
