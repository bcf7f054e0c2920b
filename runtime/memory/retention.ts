/**
 * Retention (issue 23): what finished processes left for review — their own namespace's objects
 * (tool results, turns, checkpoints), retained at exit (see `object_sharing.ts`) — and the
 * collection that removes it by policy (`libos gc`): older than an age, then oldest first until
 * what is left fits a size. Collection never touches a live process: a process whose parent is
 * still alive is kept (its parent may merge its result), and so is one whose tree another runner
 * holds (the caller says which, `busy`). The audit log is never cut: a collection writes one
 * record per process it removed (objects, bytes) and one summary record (counts and bytes). A dry
 * run writes nothing and says what would go.
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";
import { isFinal } from "../process/process.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import type { RetainedRow } from "../store/store.ts";

/** The default age after which retained data is collected: 30 days. */
export const DEFAULT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** What a collection removes. */
export interface RetentionPolicy {
  /** Remove what was retained at least this long ago (ms). */
  readonly olderThanMs: number;
  /** Then remove the oldest until what is retained takes at most this many bytes. */
  readonly keepBytes?: number;
  /** Say what would go; change nothing. */
  readonly dryRun: boolean;
  /** Who collects (audited as the actor). */
  readonly by?: string;
  /** Whether another runner holds `pid`'s tree right now (then it is left alone). */
  readonly busy?: (pid: string) => boolean;
}

/** One process's retained data, as a collection saw it. */
export interface RetainedEntry {
  readonly pid: string;
  /** When it became retained (the process finished). */
  readonly since: number;
  readonly objects: number;
  readonly bytes: number;
}

/** Why a process's retained data was removed (`age`, `size`) or left (`parent_live`, `busy`). */
export type RetentionReason = "age" | "size" | "live" | "parent_live" | "busy";

/** What a collection did (or, in a dry run, would do). */
export interface RetentionReport {
  readonly dryRun: boolean;
  /** Retained before this time counts as old. */
  readonly cutoff: number;
  readonly keepBytes: number | null;
  readonly removed: readonly (RetainedEntry & { readonly reason: "age" | "size" })[];
  /** Old enough (or over the size) but left alone, and why. */
  readonly skipped:
    readonly (RetainedEntry & { readonly reason: "live" | "parent_live" | "busy" })[];
  /** What stays retained afterwards. */
  readonly kept: { readonly processes: number; readonly objects: number; readonly bytes: number };
  readonly totals: { readonly processes: number; readonly objects: number; readonly bytes: number };
  /** The summary audit record's seq (null in a dry run, or when nothing went). */
  readonly auditSeq: number | null;
}

const PAGE = 500;

/** Every process whose data is retained now, oldest first, with what it holds now. */
export function retainedEntries(core: RuntimeCore): RetainedEntry[] {
  const rows: RetainedRow[] = [];
  let after: { since: number; pid: string } | undefined;
  for (;;) {
    const page = core.store.listRetained({
      removed: false,
      limit: PAGE,
      ...(after === undefined ? {} : { after }),
    });
    rows.push(...page);
    if (page.length < PAGE) break;
    const last = page[page.length - 1]!;
    after = { since: last.since, pid: last.pid };
  }
  // What it holds now: the operator may have removed objects since.
  return rows.map((r) => ({
    pid: r.pid,
    since: r.since,
    ...core.store.namespaceUsage(r.namespace),
  }));
}

/**
 * Collects retained data by `policy` (see the module doc) and returns what went.
 * @throws {ValidationError} for a negative age or size.
 */
export function collectRetained(
  core: RuntimeCore,
  processes: ProcessManager,
  policy: RetentionPolicy,
): RetentionReport {
  if (!(policy.olderThanMs >= 0) || (policy.keepBytes !== undefined && !(policy.keepBytes >= 0))) {
    throw new ValidationError("A retention age and size must be zero or more");
  }
  const now = Math.trunc(core.clock.now());
  const cutoff = now - policy.olderThanMs;
  const entries = retainedEntries(core);
  const blocked = new Map<string, "live" | "parent_live" | "busy">();
  const blockedWhy = (pid: string): "live" | "parent_live" | "busy" | null => {
    if (blocked.has(pid)) return blocked.get(pid)!;
    const p = processes.find(pid);
    const parent = p?.parent ? processes.find(p.parent) : undefined;
    // A live process has no retained data (it is retained at its finish); refused all the same.
    const why = p !== undefined && !isFinal(p.status)
      ? "live"
      : parent !== undefined && !isFinal(parent.status)
      ? "parent_live"
      : policy.busy?.(pid)
      ? "busy"
      : null;
    if (why) blocked.set(pid, why);
    return why;
  };
  const removed: (RetainedEntry & { reason: "age" | "size" })[] = [];
  const skipped: (RetainedEntry & { reason: "live" | "parent_live" | "busy" })[] = [];
  const chosen = new Set<string>();
  for (const e of entries) {
    if (e.since > cutoff) continue;
    const why = blockedWhy(e.pid);
    if (why) skipped.push({ ...e, reason: why });
    else {
      removed.push({ ...e, reason: "age" });
      chosen.add(e.pid);
    }
  }
  if (policy.keepBytes !== undefined) {
    let left = entries.reduce((n, e) => n + (chosen.has(e.pid) ? 0 : e.bytes), 0);
    for (const e of entries) {
      if (left <= policy.keepBytes) break;
      if (chosen.has(e.pid)) continue;
      const why = blockedWhy(e.pid);
      if (why) {
        if (!skipped.some((s) => s.pid === e.pid)) skipped.push({ ...e, reason: why });
        continue;
      }
      removed.push({ ...e, reason: "size" });
      chosen.add(e.pid);
      left -= e.bytes;
    }
  }
  const sum = (list: readonly RetainedEntry[]) => ({
    processes: list.length,
    objects: list.reduce((n, e) => n + e.objects, 0),
    bytes: list.reduce((n, e) => n + e.bytes, 0),
  });
  const totals = sum(removed);
  const kept = sum(entries.filter((e) => !chosen.has(e.pid)));
  const report = {
    dryRun: policy.dryRun,
    cutoff,
    keepBytes: policy.keepBytes ?? null,
    removed,
    skipped,
    kept,
    totals,
  };
  if (policy.dryRun || removed.length === 0) return { ...report, auditSeq: null };
  const by = policy.by ?? "operator";
  const auditSeq = core.store.step(() => {
    for (const e of removed) {
      const namespace = `process:${e.pid}`;
      const now = removeNamespace(core, namespace);
      core.store.putRetained({
        pid: e.pid,
        namespace,
        since: e.since,
        objects: now.objects,
        bytes: now.bytes,
        removed: Math.trunc(core.clock.now()),
      });
      core.audit.append({
        actor: by,
        pid: e.pid,
        action: "retention.remove",
        resource: `namespace:${namespace}`,
        decision: "allow",
        authority: by,
        detail: { objects: now.objects, bytes: now.bytes, since: e.since, reason: e.reason },
      });
    }
    return core.audit.append({
      actor: by,
      action: "retention.gc",
      resource: "store:retained",
      decision: "allow",
      authority: by,
      detail: {
        processes: totals.processes,
        objects: totals.objects,
        bytes: totals.bytes,
        olderThanMs: policy.olderThanMs,
        keepBytes: policy.keepBytes ?? null,
        skipped: skipped.length,
      },
    }).seq;
  });
  core.store.flush();
  return { ...report, auditSeq };
}

/** Deletes every object of a namespace (and its links); returns how many and their bytes. */
function removeNamespace(
  core: RuntimeCore,
  namespace: string,
): { objects: number; bytes: number } {
  const usage = core.store.namespaceUsage(namespace);
  for (;;) {
    const rows = core.store.listObjects({ namespaces: [namespace], limit: PAGE });
    for (const row of rows) core.store.deleteObject(row.oid);
    if (rows.length < PAGE) break;
  }
  return usage;
}

const DURATION = /^(\d{1,9})(ms|s|m|h|d|w)$/;
const DURATION_MS: Readonly<Record<string, number>> = Object.freeze({
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
});

/**
 * Parses a duration: a whole number and a unit, `ms`, `s`, `m`, `h`, `d` or `w` (`7d`, `12h`,
 * `0s`).
 * @throws {ValidationError} for anything else.
 */
export function parseDuration(text: string): number {
  const m = DURATION.exec(text.trim());
  if (!m) {
    throw new ValidationError(
      `${
        JSON.stringify(text)
      } is not a duration: write a whole number and a unit (ms, s, m, h, d, w), e.g. 7d or 12h`,
    );
  }
  return Number(m[1]) * DURATION_MS[m[2]!]!;
}

const SIZE = /^(\d{1,12}(?:\.\d{1,3})?)\s*(b|kb|mb|gb|tb)?$/i;
const SIZE_BYTES: Readonly<Record<string, number>> = Object.freeze({
  b: 1,
  kb: 1024,
  mb: 1024 ** 2,
  gb: 1024 ** 3,
  tb: 1024 ** 4,
});

/**
 * Parses a size: a number and an optional unit, `B`, `KB`, `MB`, `GB` or `TB` (powers of 1024,
 * any case), e.g. `500MB`.
 * @throws {ValidationError} for anything else.
 */
export function parseSize(text: string): number {
  const m = SIZE.exec(text.trim());
  if (!m) {
    throw new ValidationError(
      `${
        JSON.stringify(text)
      } is not a size: write a number and a unit (B, KB, MB, GB, TB; powers of 1024), e.g. 500MB`,
    );
  }
  return Math.floor(Number(m[1]) * SIZE_BYTES[(m[2] ?? "b").toLowerCase()]!);
}
