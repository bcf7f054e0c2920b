/**
 * The trace invariant checker: reads a stored run — the audit chain, the action ledger, the
 * capability table, the human requests and the process tree — and reports every place where the
 * run broke one of the invariants below. Read-only: it opens nothing for writing and appends no
 * record. `libos audit check PID` prints its report; `tests/trace_invariants.ts` asserts it.
 *
 * ## What a run records (the sequences the invariants are written against)
 *
 * - An effect goes through the action ledger: `action.intent` (committed before the effect
 *   starts, `correlation` = the action id, `inputDigest` = the ledger digest), then
 *   `action.done` / `action.failed`, or `action.outcome_unknown` after a restart. The primitive's
 *   decision record for it (`fs.write`, `fs.mkdir`, `fs.delete`, `fs.rmdir`, `shell.run`,
 *   `net.fetch`, `jit.call`) is appended *with the outcome*, after `action.done` (audit_log.ts:
 *   an allow of an external effect is recorded with its outcome; the intent stands for it).
 * - An approved action: `<op>` ask → `human.approval` (the request, `correlation` = its id) →
 *   `capability.grant` of a one-shot capability (issuer `human:<request>`) → `human.approve`
 *   (`detail.capabilities`) → `action.intent` → `action.done` → `<op>` allow by `cap:<one-shot>`.
 *   The one-shot is used up (`usedAt`) before the effect; the request becomes `dispatched`.
 * - A fork or spawn: `process.fork` / `process.spawn_child`, then the child's lineage grants and
 *   its delegated capabilities (`tier: inherited`, `derivedFrom` = the parent capability).
 *
 * ## The invariants
 *
 * **`chain`** — the audit chain verifies (`AuditLog.verify`: every hash and link, and the head
 * file unless `head: false`).
 *
 * **`decision_before_effect`** — for every ledger action of a checked process that started
 * (any status but `cancelled`):
 * 1. its `action.intent` record exists, for the same process and with the action's digest;
 * 2. its *decision record* — the first record after the intent, not claimed by an earlier
 *    action (actions are taken in intent order), of the same process whose action is the ledger
 *    kind and whose resource (`fs:<path>`, `tool:<name>`, `net:<host>`) or input digest
 *    (`shell.run`: the digest the run was decided on) is the action's — is an `allow` when the
 *    action is `done` (an action that failed before it took effect may carry the primitive's
 *    `deny`, e.g. `wall_incomplete`); it is never an `ask`. A failed action may lack one; an
 *    action cut off by a restart (`executing`, `outcome_unknown`) has none (it is not looked for);
 * 3. when that allow names a capability (`cap:<id>`), the capability was granted to the same
 *    process (its `capability.grant` record) before the intent and not revoked before it;
 * 4. no effect follows a deny or an unanswered ask: the last `ask` or `deny` record of the same
 *    process, action and resource before the intent, if it is later than the last `allow` of
 *    that key, is answered: when the decision record's allow names a capability, that
 *    capability was granted after the refusal; otherwise a `human.approve`, a `capability.grant`
 *    to the process, or a new launch (`agent.start`, re-deciding under new governance) lies
 *    between the refusal and the intent;
 * 5. conversely, every `shell.run` and `fs.write` allow record of an effect (no `detail.failed`)
 *    has an `action.intent` of its process and kind before it that no other record claimed.
 *
 * **`approval_at_most_once`** — every one-shot capability of a checked process is named by at
 * most one operation's allow records (not counting those with `detail.failed`; records one
 * operation appends back to back with the same action and digest, such as a mkdir's one per
 * directory, are one use), is marked used (`usedAt`) if one names it, and was not used
 * before it was granted; every human request is approved or rejected at most once, and one that
 * is `dispatched` was approved (its `human.approve` record exists).
 *
 * **`child_within_parent`** — for every checked process with a parent, every capability it
 * holds that was delegated (`derivedFrom` set, or `tier: inherited`) names a parent capability
 * that: exists and is held by its parent process; covers the child's resource (a subtree or
 * prefix that contains it, compared case-insensitively for deny and ask as matching does); has
 * every right the child's has and the same effect; was live when the child's was made (created
 * before it, not revoked or expired by then); does not outlive it (the child's expires no later);
 * and is not a one-shot allow (approvals of one action are never handed on). A child's mode
 * ceiling is not wider than its parent's (read-only < plan < workspace-write < full-access; a
 * parent with a ceiling gives a child one). Grants in the child's own name (lineage, a human's
 * answer to the child, the operator) are not delegations and are not checked here.
 *
 * @module
 */
import type { AuditLog, AuditRecord } from "./audit_log.ts";
import {
  capabilitiesOf,
  covers,
  decisionMatcher,
  MODES,
  PAGE,
  parsed,
  processTree,
  recordsOf,
  StoredCapability,
  StoredProcess,
  StoredRequest,
  subjectOf,
} from "./_trace_rows.ts";
import { NotFoundError } from "../base/errors.ts";
import type { Store } from "../store/store.ts";

/** What the checker reads: a runtime, or a store opened read-only with its audit log. */
export interface TraceSource {
  readonly store: Store;
  readonly audit: AuditLog;
}

/** The invariants the checker knows. */
export type TraceInvariant =
  | "chain"
  | "decision_before_effect"
  | "approval_at_most_once"
  | "child_within_parent";

/** One place a run broke an invariant. */
export interface TraceViolation {
  readonly invariant: TraceInvariant;
  /** The audit record it is about, when there is one. */
  readonly seq?: number;
  /** The process it is about. */
  readonly pid?: string;
  readonly message: string;
}

/** What {@link checkTrace} looked at. */
export interface TraceCounts {
  readonly processes: number;
  readonly records: number;
  readonly effects: number;
  readonly approvals: number;
  readonly oneShots: number;
  readonly delegated: number;
}

/** The outcome of {@link checkTrace}. */
export interface TraceReport {
  readonly ok: boolean;
  /** The processes checked: the pid, and with `tree` its descendants. */
  readonly pids: readonly string[];
  readonly checked: TraceCounts;
  readonly violations: readonly TraceViolation[];
}

/** Options of {@link checkTrace}. */
export interface TraceCheckOptions {
  /** Also check every descendant of the process. */
  readonly tree?: boolean;
  /** Compare the chain with the head file (default: when the log has one). */
  readonly head?: boolean;
}

const CAP = /^cap:(cap_[0-9a-f]{12})$/;

/** The effect ops whose allow record stands for an effect that went through the ledger. */
const LEDGERED: readonly string[] = ["shell.run", "fs.write"];

interface Checking {
  readonly store: Store;
  readonly audit: AuditLog;
  readonly violations: TraceViolation[];
  effects: number;
  approvals: number;
  oneShots: number;
  delegated: number;
  records: number;
}

function checkEffects(c: Checking, pid: string, records: readonly AuditRecord[]): void {
  const v = (seq: number | undefined, message: string) =>
    c.violations.push({
      invariant: "decision_before_effect",
      pid,
      ...(seq === undefined ? {} : { seq }),
      message,
    });
  const intents = new Map<string, AuditRecord>();
  const grants = new Map<string, AuditRecord>();
  const revokes = new Map<string, AuditRecord>();
  /** The records of each action, in order: what a ledger action's decision is looked up in. */
  const byAction = new Map<string, AuditRecord[]>();
  for (const r of records) {
    const list = byAction.get(r.action);
    if (list === undefined) byAction.set(r.action, [r]);
    else list.push(r);
    if (r.action === "action.intent" && r.correlation !== null) intents.set(r.correlation, r);
    if (r.action === "capability.grant" && r.correlation !== null) grants.set(r.correlation, r);
    if (r.action === "capability.revoke" && r.correlation !== null && !revokes.has(r.correlation)) {
      revokes.set(r.correlation, r);
    }
  }
  const claimed = new Set<number>();
  const ledgered = new Set<string>();
  // In the order their intents were recorded, so each claims the first decision record after it.
  const rows = c.store.listActions({ pid, limit: PAGE }).sort((a, b) =>
    (intents.get(a.id)?.seq ?? 0) - (intents.get(b.id)?.seq ?? 0)
  );
  for (const row of rows) {
    if (row.status === "cancelled") continue;
    c.effects++;
    ledgered.add(row.id);
    let request: unknown;
    try {
      request = JSON.parse(row.request);
    } catch {
      request = null;
    }
    const what = `action ${row.id} (${row.kind}${subjectOf(request)}, ${row.status})`;
    const intent = intents.get(row.id);
    if (intent === undefined) {
      v(undefined, `${what} has no action.intent record: an effect the audit log does not show`);
      continue;
    }
    claimed.add(intent.seq);
    if (intent.inputDigest !== row.digest) {
      v(
        intent.seq,
        `${what}: its action.intent records digest ${intent.inputDigest}, not ${row.digest}`,
      );
    }
    const matches = decisionMatcher(row.kind, request);
    const same = (r: AuditRecord) =>
      r.action === row.kind && r.decision !== "none" && (matches === undefined || matches(r));
    // An action cut off by a restart never had its decision recorded with an outcome.
    const decision = row.status === "executing" || row.status === "outcome_unknown"
      ? undefined
      : byAction.get(row.kind)?.find((r) => r.seq > intent.seq && same(r) && !claimed.has(r.seq));
    if (decision !== undefined) claimed.add(decision.seq);
    if (decision === undefined) {
      if (row.status === "done") {
        v(intent.seq, `${what} took effect but no ${row.kind} decision record stands for it`);
      }
    } else if (decision.decision === "ask") {
      v(decision.seq, `${what} ran under an ask (${decision.authority}), not an allow`);
    } else if (decision.decision === "deny" && row.status === "done") {
      v(
        decision.seq,
        `${what} took effect although its decision is a deny (${decision.authority})`,
      );
    } else if (decision.decision === "allow") {
      const cap = CAP.exec(decision.authority)?.[1];
      if (cap !== undefined) {
        const grant = grants.get(cap);
        if (grant === undefined || grant.seq > intent.seq) {
          v(
            decision.seq,
            `${what} was allowed by ${cap}, which was not granted to ${pid} before the effect`,
          );
        }
        const revoke = revokes.get(cap);
        if (revoke !== undefined && revoke.seq < intent.seq) {
          v(
            decision.seq,
            `${what} was allowed by ${cap}, revoked before the effect (seq ${revoke.seq})`,
          );
        }
      }
    }
    // No effect after a deny or an unanswered ask of the same action and resource.
    const resource = decision?.resource;
    const key = (r: AuditRecord) =>
      r.action === row.kind && (resource === undefined ? same(r) : r.resource === resource);
    let lastAllow = 0;
    let lastRefusal: AuditRecord | undefined;
    for (const r of byAction.get(row.kind) ?? []) {
      if (r.seq >= intent.seq) break;
      if (!key(r)) continue;
      if (r.decision === "allow") lastAllow = r.seq;
      if (r.decision === "ask" || r.decision === "deny") lastRefusal = r;
    }
    if (lastRefusal !== undefined && lastRefusal.seq > lastAllow) {
      // Allowed by a capability: that capability was granted after the refusal. Otherwise a
      // human's approval, a grant or a new launch came between.
      const cap = decision === undefined ? undefined : CAP.exec(decision.authority)?.[1];
      const answered = cap !== undefined
        ? (grants.get(cap)?.seq ?? 0) > lastRefusal.seq
        : records.some((r) =>
          r.seq > lastRefusal!.seq && r.seq < intent.seq &&
          ((r.action === "human.approve" && r.decision === "allow") ||
            r.action === "capability.grant" || r.action === "agent.start")
        );
      if (!answered) {
        v(
          intent.seq,
          `${what} follows ${
            lastRefusal.decision === "ask" ? "an unanswered ask" : "a deny"
          } of the same action (seq ${lastRefusal.seq}, ${lastRefusal.authority})`,
        );
      }
    }
  }
  // Intents the ledger does not know, and effect records no intent stands for.
  for (const [id, intent] of intents) {
    if (!ledgered.has(id) && c.store.getAction(id) === undefined) {
      v(intent.seq, `action.intent ${id} names no action in the ledger`);
    }
  }
  for (const r of records) {
    if (!LEDGERED.includes(r.action) || r.decision !== "allow" || claimed.has(r.seq)) continue;
    if (r.detail !== null && "failed" in r.detail) continue;
    v(r.seq, `${r.action} on ${r.resource} is recorded as allowed with no action.intent before it`);
  }
}

function checkApprovals(
  c: Checking,
  pid: string,
  records: readonly AuditRecord[],
  caps: readonly StoredCapability[],
): void {
  const v = (seq: number | undefined, message: string) =>
    c.violations.push({
      invariant: "approval_at_most_once",
      pid,
      ...(seq === undefined ? {} : { seq }),
      message,
    });
  // The allows each capability decided, as uses: one operation's records appended back to back
  // (a mkdir's one per directory it made) are one use.
  const usesOf = new Map<string, AuditRecord[]>();
  records.forEach((r, i) => {
    if (r.decision !== "allow" || !r.authority.startsWith("cap:")) return;
    if (r.action.startsWith("capability.") || (r.detail !== null && "failed" in r.detail)) return;
    const before = records[i - 1];
    if (
      before !== undefined && before.seq === r.seq - 1 && before.authority === r.authority &&
      before.action === r.action && before.inputDigest === r.inputDigest
    ) return;
    const id = r.authority.slice(4);
    usesOf.set(id, [...(usesOf.get(id) ?? []), r]);
  });
  for (const cap of caps) {
    if (!cap.oneShot) continue;
    c.oneShots++;
    const uses = usesOf.get(cap.id) ?? [];
    if (uses.length > 1) {
      v(
        uses[1]!.seq,
        `one-shot capability ${cap.id} allowed ${uses.length} effects (seq ${
          uses.map((u) => u.seq).join(", ")
        }); it allows one action, once`,
      );
    }
    if (uses.length > 0 && cap.usedAt === null) {
      v(uses[0]!.seq, `one-shot capability ${cap.id} allowed an effect but is not marked used`);
    }
    if (cap.usedAt !== null && cap.usedAt < cap.createdAt) {
      v(undefined, `one-shot capability ${cap.id} is marked used before it was granted`);
    }
  }
  const answers = new Map<string, AuditRecord[]>();
  for (const r of records) {
    if ((r.action === "human.approve" || r.action === "human.reject") && r.correlation !== null) {
      answers.set(r.correlation, [...(answers.get(r.correlation) ?? []), r]);
    }
  }
  for (const row of c.store.listHumanRequests({ pid, limit: PAGE })) {
    const request = parsed(StoredRequest, row.data, `human request ${row.id}`);
    c.approvals++;
    const given = answers.get(request.id) ?? [];
    if (given.length > 1) {
      v(
        given[1]!.seq,
        `human request ${request.id} was answered ${given.length} times (seq ${
          given.map((g) => g.seq).join(", ")
        }); a request is decided once`,
      );
    }
    if (request.status === "dispatched" && !given.some((g) => g.action === "human.approve")) {
      v(undefined, `human request ${request.id} was dispatched but never approved`);
    }
  }
}

function checkChild(
  c: Checking,
  pid: string,
  caps: readonly StoredCapability[],
  parentOf: (pid: string) => { parent: string | null; ceiling: string | null } | undefined,
): void {
  const v = (message: string) =>
    c.violations.push({ invariant: "child_within_parent", pid, message });
  const me = parentOf(pid);
  if (me === undefined || me.parent === null) return;
  const parent = parentOf(me.parent);
  if (parent !== undefined && parent.ceiling !== null) {
    const mine = me.ceiling === null ? Infinity : MODES.indexOf(me.ceiling);
    if (mine > MODES.indexOf(parent.ceiling)) {
      v(`its mode ceiling ${
        me.ceiling ?? "(none)"
      } is wider than its parent ${me.parent}'s ${parent.ceiling}`);
    }
  }
  for (const cap of caps) {
    if (cap.derivedFrom === null && cap.tier === "own") continue;
    c.delegated++;
    const what = `capability ${cap.id} (${cap.effect} ${cap.rights.join(",")} on ${
      JSON.stringify(cap.resource)
    })`;
    if (cap.derivedFrom === null) {
      v(`${what} is inherited but names no parent capability`);
      continue;
    }
    const row = c.store.getCapability(cap.derivedFrom);
    if (row === undefined) {
      v(`${what} derives from ${cap.derivedFrom}, which does not exist`);
      continue;
    }
    const from = parsed(StoredCapability, row.data, `capability ${row.id}`);
    if (from.subject !== me.parent) {
      v(`${what} derives from ${from.id}, held by ${from.subject}, not by its parent ${me.parent}`);
      continue;
    }
    if (!covers(from.resource, cap.resource, cap.effect !== "allow")) {
      v(`${what} is wider than its parent's ${from.id} (${JSON.stringify(from.resource)})`);
    }
    const extra = cap.rights.filter((r) => !from.rights.includes(r));
    if (extra.length > 0) {
      v(`${what} has rights its parent's ${from.id} lacks: ${extra.join(", ")}`);
    }
    if (cap.effect !== from.effect) {
      v(`${what} is ${cap.effect} where its parent's ${from.id} is ${from.effect}`);
    }
    if (from.effect === "allow" && (from.oneShot || from.actionDigest !== null)) {
      v(`${what} was handed on from ${from.id}, a one-shot approval of one action`);
    }
    if (
      from.createdAt > cap.createdAt ||
      (from.revokedAt !== null && from.revokedAt < cap.createdAt) ||
      (from.expiresAt !== null && from.expiresAt <= cap.createdAt)
    ) {
      v(`${what} was delegated from ${from.id} when that was not live`);
    }
    if (from.expiresAt !== null && (cap.expiresAt === null || cap.expiresAt > from.expiresAt)) {
      v(`${what} outlives its parent's ${from.id}, which expires at ${from.expiresAt}`);
    }
  }
}

/**
 * Checks the invariants of the module documentation over the stored run of `pid` (and, with
 * `tree`, of its descendants). Reads only.
 * @throws {NotFoundError} when the database holds no such process.
 * @throws {StoreError} `store_corrupt` when a stored row cannot be read.
 * @example
 * ```ts
 * const report = checkTrace(runtime, pid, { tree: true });
 * if (!report.ok) for (const v of report.violations) console.log(v.invariant, v.message);
 * ```
 */
export function checkTrace(
  source: TraceSource,
  pid: string,
  options: TraceCheckOptions = {},
): TraceReport {
  const c: Checking = {
    store: source.store,
    audit: source.audit,
    violations: [],
    effects: 0,
    approvals: 0,
    oneShots: 0,
    delegated: 0,
    records: 0,
  };
  const verified = source.audit.verify({ head: options.head ?? source.audit.hasHead });
  if (!verified.ok) {
    c.violations.push({
      invariant: "chain",
      ...(verified.problem.seq === null ? {} : { seq: verified.problem.seq }),
      message: verified.problem.message,
    });
  }
  const processes = new Map<
    string,
    { parent: string | null; ceiling: string | null } | undefined
  >();
  const processOf = (p: string) => {
    if (!processes.has(p)) {
      const row = source.store.getProcess(p);
      processes.set(
        p,
        row === undefined ? undefined : parsed(StoredProcess, row.data, `process ${p}`),
      );
    }
    return processes.get(p);
  };
  if (processOf(pid) === undefined) {
    throw new NotFoundError(
      `No process ${JSON.stringify(pid)} in this database; list its processes with "libos ps"`,
    );
  }
  const pids = processTree(source.store, pid, options.tree ?? false);
  for (const p of pids) {
    const records = recordsOf(source.audit, p);
    c.records += records.length;
    const caps = capabilitiesOf(source.store, p);
    checkEffects(c, p, records);
    checkApprovals(c, p, records, caps);
    checkChild(c, p, caps, processOf);
  }
  return {
    ok: c.violations.length === 0,
    pids,
    checked: {
      processes: pids.length,
      records: c.records,
      effects: c.effects,
      approvals: c.approvals,
      oneShots: c.oneShots,
      delegated: c.delegated,
    },
    violations: c.violations,
  };
}
