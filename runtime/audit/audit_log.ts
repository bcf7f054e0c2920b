/**
 * The audit log (DESIGN §6): append-only records, each linked to the one before it by a sha256
 * hash computed synchronously at append time, and anchored by a head file outside the database.
 * `verify()` names the first bad record and detects in-place edits, deletions and (with the head
 * file) truncation of the tail.
 *
 * A record's hash is `sha256(prev + "\n" + canonicalJson(body))`, where the body holds every
 * stored field except `prev` and `hash` (the detail as its stored canonical text).
 *
 * ## One record per decision (DESIGN §2: every decision is audited, allowed or not)
 *
 * Every operation a process asks of an authority-bearing component — the primitives (fs, shell,
 * net, clock), the object memory, the image registry, the process manager, the human channel,
 * the tool broker and the JIT tool lifecycle — leaves exactly one decision record: `allow`, `ask`
 * or `deny`, whose `authority` names what decided it: the decision's reason (`cap:<id>`,
 * `rule:<file>#<n>`, `mode:<name>`, `run:<n>`, `protected:<glob>`, `hardline:<rule>`, `default`)
 * or a named rule of the runtime (`containment`, `lineage:not_a_child`, `budget:<kind>`,
 * `human:none`, `runtime` for the clock, which needs no capability).
 *
 * - A **refusal** (a deny, or an ask that goes no further) is recorded when it is made, in a step
 *   of its own, before the error is thrown: it survives the rollback of the refused operation.
 * - An **allow** is recorded with the operation's effect: in the same store step when the effect
 *   is a store write (objects, processes, capabilities, images), so both commit or neither; just
 *   after the decision when the operation only reads; and after an external effect (a file
 *   write, a shell run, a fetch) with its outcome — the action ledger's `action.intent`, with the
 *   same input digest and committed before the effect starts (§6), stands for it should the
 *   runtime die mid-effect.
 * - An operation allowed and then failed before its effect (a precondition, a conflict) still
 *   leaves its allow record, with `detail.failed` naming the error code. (Not yet in the
 *   filesystem and shell primitives, which record an allow only with a completed effect.)
 * - An operation that takes several checks (a link needs link on one object and read on the
 *   other) leaves one record naming its primary check, the others' reasons in `detail.also`; an
 *   operation made of other operations (an edit is a read and a write; a search lists and reads;
 *   a fetch decides each hop) leaves theirs.
 * - A human's answer is a decision of its own (`human.approve`, `human.reject`, `human.answer`,
 *   `human.expire`; `human.approval` deny when no human is reachable); storing the request is not
 *   (`none`: the asking operation recorded the ask).
 * - Not decisions: checks that only shape an answer (whether an error may say a file exists,
 *   which objects a listing shows) and reads by the operator or the runtime, which act on their
 *   own authority (their writes are audited, authority `operator` / `runtime`). Records of what
 *   merely happened (`action.*`, `process.recover`, `object.retain`) carry `none`.
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { z } from "zod";
import {
  type ChainHead,
  type HeadFile,
  overwriteHeadFile,
  readHeadFile,
  writeHeadFile,
} from "./audit_head.ts";
import { canonicalJson, type JsonValue, sha256Hex } from "../base/canonical_json.ts";
import type { Clock } from "../base/clock.ts";
import { AuditError, ValidationError } from "../base/errors.ts";
import { type AuditQuery, type AuditRow, MAX_PAGE, type Store } from "../store/store.ts";

/** The hash a chain's first record links to. */
export const GENESIS_HASH = "0".repeat(64);

/** The chain this runtime appends to. Several workers will each keep their own segment later. */
export const MAIN_CHAIN = "main";

/** What a record says about a decision; `none` for records that are not decisions. */
export const AuditDecision = z.enum(["allow", "ask", "deny", "none"]);
/** What a record says about a decision. */
export type AuditDecision = z.infer<typeof AuditDecision>;

const MAX_DETAIL_CHARS = 16_384;

/**
 * Text SQLite stores exactly as hashed: no NUL (`node:sqlite` cuts the string there) and no
 * unpaired surrogate (it would be stored as U+FFFD), either of which would make an honest record
 * fail verification forever.
 */
function text(min: number, max: number) {
  return z.string().min(min).max(max).refine(
    (s) => !s.includes("\0") && s.isWellFormed(),
    "must not contain NUL or unpaired surrogate characters",
  );
}

/** What a caller supplies to {@link AuditLog.append}. */
export const AuditEntry = z.object({
  /** Who acted: a pid, `operator`, `human:<id>`, `runtime`. */
  actor: text(1, 200),
  /** The process on whose behalf the action happened, when there is one. */
  pid: text(1, 200).optional(),
  /** What happened, as `area.verb`: `fs.write`, `process.spawn`, `store.init`. */
  action: z.string().regex(/^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/, "action must look like area.verb")
    .max(100),
  /** The resource acted on, e.g. `filesystem:workspace:src/app.ts`; empty when none. */
  resource: text(0, 4096),
  decision: AuditDecision,
  /** What allowed or denied it: `cap:<id>`, `rule:<file>#<n>`, `human:<request>`, `default`. */
  authority: text(1, 500),
  inputDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/).optional(),
  correlation: text(1, 200).optional(),
  /** The `seq` of the record this one follows from (an earlier record). */
  parent: z.number().int().positive().optional(),
  detail: z.record(z.string(), z.json()).optional(),
}).strict();
/** What a caller supplies to {@link AuditLog.append}. */
export type AuditEntry = z.input<typeof AuditEntry>;

/** The record of one decision (see the module documentation): allow, ask or deny, never `none`. */
export type DecisionEntry = AuditEntry & { readonly decision: "allow" | "ask" | "deny" };

/** A stored audit record as callers see it (the detail parsed back into JSON). */
export interface AuditRecord extends Omit<AuditRow, "detail"> {
  readonly detail: { readonly [key: string]: JsonValue } | null;
}

/** Why verification failed, with the first bad record when there is one. */
export interface AuditProblem {
  readonly kind:
    | "hash_mismatch"
    | "broken_link"
    | "missing_record"
    | "bad_order"
    | "truncated"
    | "head_mismatch"
    | "head_missing"
    | "head_invalid"
    | "unanchored_chain"
    | "unchained_records";
  readonly chain: string | null;
  /** Global `seq` of the first bad record, when it still exists. */
  readonly seq: number | null;
  /** Position in its chain of the first bad (or first missing) record. */
  readonly chainSeq: number | null;
  readonly message: string;
}

/** The tail of one verified chain. */
export interface VerifiedChain {
  readonly chain: string;
  readonly records: number;
  readonly tailSeq: number;
  readonly tailHash: string;
}

/** The outcome of {@link AuditLog.verify}. */
export type AuditVerification =
  | {
    readonly ok: true;
    readonly records: number;
    readonly chains: readonly VerifiedChain[];
    /** `verified` when the head file was compared, `skipped` with `--no-head`. */
    readonly head: "verified" | "skipped";
  }
  | { readonly ok: false; readonly records: number; readonly problem: AuditProblem };

/**
 * The context of a caller that acts through others (a JIT syscall reaching a primitive), folded
 * into every record appended while it runs ({@link AuditLog.within}).
 */
export interface AuditScope {
  /** Merged into each record's detail (these keys win over the record's own). */
  readonly detail: Readonly<Record<string, JsonValue>>;
  /**
   * The decision records (allow, ask or deny) appended inside the scope, as the log wrote them:
   * {@link AuditLog.holdsDecisionOf} tells whether one is still there (a step that failed after
   * appending rolls its records back).
   */
  readonly decisions: { readonly seq: number; readonly hash: string }[];
}

/** Options of {@link AuditLog}. */
export interface AuditLogOptions {
  readonly clock: Clock;
  /** Where the head file lives; `null` for a database that has none (`:memory:`). */
  readonly headPath: string | null;
  /** The database's real path, recorded in the head file. */
  readonly database: string;
  readonly chain?: string;
  /**
   * Told of each decision record (allow, ask, deny) inside the step that appends it, so what it
   * writes (the `decision` event) commits or rolls back with the record.
   */
  readonly onDecision?: (record: DecisionRecord) => void;
}

/** What {@link AuditLogOptions.onDecision} is told of a decision record. */
export type DecisionRecord =
  & Pick<
    AuditRow,
    "seq" | "pid" | "actor" | "action" | "resource" | "authority"
  >
  & { readonly decision: "allow" | "ask" | "deny" };

/** Filters of {@link AuditLog.query}; `limit` defaults to 100 and `order` to ascending. */
export type AuditFilter = Omit<AuditQuery, "limit" | "order"> & {
  readonly limit?: number;
  readonly order?: "asc" | "desc";
};

/**
 * The canonical JSON of the hashed body. Every value is a string, an integer or null, and the
 * keys are written in sorted order, so `JSON.stringify` of this literal is exactly
 * `canonicalJson(body)` (a test pins that) at a fraction of the cost on the append path.
 */
function hashBody(row: Omit<AuditRow, "prev" | "hash">): string {
  return JSON.stringify({
    action: row.action,
    actor: row.actor,
    authority: row.authority,
    chain: row.chain,
    chainSeq: row.chainSeq,
    correlation: row.correlation,
    decision: row.decision,
    detail: row.detail,
    inputDigest: row.inputDigest,
    parent: row.parent,
    pid: row.pid,
    resource: row.resource,
    seq: row.seq,
    time: row.time,
  });
}

/** The hash of a record given the hash it links to. */
export function auditHash(prev: string, row: Omit<AuditRow, "prev" | "hash">): string {
  return sha256Hex(`${prev}\n${hashBody(row)}`);
}

function toRecord(row: AuditRow): AuditRecord {
  return { ...row, detail: row.detail === null ? null : JSON.parse(row.detail) };
}

/** Appends, queries and verifies the hash-chained audit log of one store. */
export class AuditLog implements Disposable {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #headPath: string | null;
  /** What this log last wrote to the head file, and that file's identity then. */
  #written:
    | {
      readonly head: HeadFile;
      readonly ino: number | null;
      readonly size: number;
      readonly mtime: number | null;
    }
    | undefined;
  /** The head file, held open to be rewritten in place, and its inode. */
  #open: { readonly file: Deno.FsFile; readonly ino: number } | undefined;
  readonly #database: string;
  readonly #chain: string;
  readonly #onDecision: ((record: DecisionRecord) => void) | undefined;
  readonly #unsubscribe: () => void;
  /**
   * Whether commits advance the head file: `fresh` (no head yet and an empty chain: the first
   * commit creates it), `active` (the head matched the database), `off` (no head file possible,
   * or it is missing, unreadable or contradicted by the database — evidence that only an
   * explicit re-anchor may clear, never a routine commit).
   */
  #anchor: "fresh" | "active" | "off";
  #dirty = false;
  #headError: unknown;
  /** The scope of the operation appending now, if any: this log's own, never shared. */
  readonly #scope = new AsyncLocalStorage<{ readonly scope: AuditScope; open: boolean }>();

  /** Binds the log to a store; the head file is rewritten after every commit that added records. */
  constructor(store: Store, options: AuditLogOptions) {
    this.#store = store;
    this.#clock = options.clock;
    this.#headPath = options.headPath;
    this.#database = options.database;
    this.#chain = options.chain ?? MAIN_CHAIN;
    this.#onDecision = options.onDecision;
    this.#anchor = "off";
    if (this.#headPath !== null) {
      try {
        const head = readHeadFile(this.#headPath);
        if (head === undefined) {
          // A head that vanished while records exist is evidence; recreating it would launder a
          // truncation. Only an empty database starts a head of its own.
          if (store.countAudit() === 0) this.#anchor = "fresh";
          else {this.#headError = new AuditError(
              "audit_head_missing",
              `The audit head file "${this.#headPath}" is missing although the database holds records`,
            );}
        } else {
          const problem = this.#contradiction(head);
          if (problem) this.#headError = new AuditError("audit_tampered", problem.message);
          else this.#anchor = "active";
        }
      } catch (error) {
        this.#headError = error;
      }
    }
    this.#unsubscribe = store.onCommit(() => this.#anchorAfterCommit());
  }

  /** Whether truncation can be checked: a head file, or head rows in the database. */
  get hasHead(): boolean {
    return this.#headPath !== null || this.#store.auditHeads !== undefined;
  }

  /** The chain this log appends to. */
  get chain(): string {
    return this.#chain;
  }

  /** The head file path, or `null` when the database has none. */
  get headPath(): string | null {
    return this.#headPath;
  }

  /** Why the head file is not being kept up to date, when it is not. */
  get headError(): unknown {
    return this.#headError;
  }

  /** Whether commits keep the head file up to date. */
  get anchoring(): boolean {
    return this.#anchor !== "off";
  }

  /**
   * Runs `fn` with `scope` in force: every record appended during it — in `fn`'s own async
   * continuations, not a concurrent caller's — gets `scope.detail` merged into its detail, and
   * each decision record is listed in `scope.decisions`, until `fn` (or the promise it returns)
   * has settled. Scopes do not nest: an inner one replaces the outer while it runs.
   */
  within<T>(scope: AuditScope, fn: () => T): T {
    // Closed once `fn` has settled: a timer or listener it left behind keeps the async context,
    // but what it records later is not the scope's (a child's budget record is not the fork's).
    const held = { scope, open: true };
    const close = () => {
      held.open = false;
    };
    let result: T;
    try {
      result = this.#scope.run(held, fn);
    } catch (error) {
      close();
      throw error;
    }
    if (result instanceof Promise) return result.finally(close) as T;
    close();
    return result;
  }

  /**
   * Whether a decision record appended inside `scope` is in the log: written, and not rolled
   * back with a step that failed after appending it.
   */
  holdsDecisionOf(scope: AuditScope): boolean {
    const last = scope.decisions.at(-1);
    if (last === undefined) return false;
    // The usual case, answered from the chain's tail alone: the scope's last record is the tail.
    const tail = this.#store.auditTail(this.#chain);
    if (tail !== undefined && tail.seq === last.seq && tail.hash === last.hash) return true;
    for (let i = scope.decisions.length - 1; i >= 0; i--) {
      const { seq, hash } = scope.decisions[i]!;
      const [row] = this.#store.queryAudit({
        afterSeq: seq - 1,
        beforeSeq: seq + 1,
        limit: 1,
        order: "asc",
      });
      if (row?.hash === hash) return true;
    }
    return false;
  }

  /**
   * Appends one record in its own step (or inside the caller's step) and returns it. Inside
   * {@link AuditLog.within}, the scope's detail is merged into the record's.
   * @throws {ValidationError} when the entry is malformed or names a parent that does not exist.
   */
  append(entry: AuditEntry): AuditRecord {
    const parsed = AuditEntry.safeParse(entry);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ValidationError(
        `Cannot append audit record: ${issue?.path.join(".") || "entry"} ${
          issue?.message ?? "is invalid"
        }`,
        { cause: parsed.error },
      );
    }
    const e = parsed.data;
    const held = this.#scope.getStore();
    const scope = held?.open ? held.scope : undefined;
    const merged = scope === undefined ? e.detail : { ...e.detail, ...scope.detail };
    const detail = merged === undefined ? null : canonicalJson(merged as JsonValue);
    if (detail !== null && detail.length > MAX_DETAIL_CHARS) {
      throw new ValidationError(
        `Cannot append audit record: detail is ${detail.length} characters, over the ${MAX_DETAIL_CHARS} limit; store large data as an object and reference its digest`,
      );
    }
    return this.#store.step(() => {
      const tail = this.#store.auditTail(this.#chain);
      const seq = this.#store.nextAuditSeq();
      if (e.parent !== undefined && e.parent >= seq) {
        throw new ValidationError(
          `Cannot append audit record: parent ${e.parent} is not an earlier record (next is ${seq})`,
        );
      }
      const body = {
        seq,
        chain: this.#chain,
        chainSeq: (tail?.chainSeq ?? 0) + 1,
        time: Math.trunc(this.#clock.now()),
        actor: e.actor,
        pid: e.pid ?? null,
        action: e.action,
        resource: e.resource,
        decision: e.decision,
        authority: e.authority,
        inputDigest: e.inputDigest ?? null,
        correlation: e.correlation ?? null,
        parent: e.parent ?? null,
        detail,
      };
      const prev = tail?.hash ?? GENESIS_HASH;
      const row: AuditRow = { ...body, prev, hash: auditHash(prev, body) };
      this.#store.insertAudit(row);
      this.#dirty = true;
      if (scope !== undefined && e.decision !== "none") {
        scope.decisions.push({ seq, hash: row.hash });
      }
      if (this.#onDecision !== undefined && e.decision !== "none") {
        const { pid, actor, action, resource, authority } = row;
        this.#onDecision({ seq, pid, actor, action, resource, authority, decision: e.decision });
      }
      return toRecord(row);
    });
  }

  /** Records matching the filter, oldest first unless `order: "desc"`; at most 10,000. */
  query(filter: AuditFilter = {}): AuditRecord[] {
    const limit = filter.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw new RangeError(
        `Audit query limit must be an integer from 1 to ${MAX_PAGE}, got ${limit}`,
      );
    }
    return this.#store.queryAudit({ ...filter, limit, order: filter.order ?? "asc" }).map(toRecord);
  }

  /**
   * Walks every chain from its first record, recomputing each hash and link, then (unless
   * `head: false`) compares each chain's tail with the head file. Stops at the first problem.
   */
  verify(options: { readonly head: boolean }): AuditVerification {
    let records = 0;
    const chains: VerifiedChain[] = [];
    for (const chain of this.#store.auditChains()) {
      let prev = GENESIS_HASH;
      let expected = 1;
      let lastSeq = 0;
      for (;;) {
        const page = this.#store.scanAudit(chain, expected - 1, 1000);
        if (page.length === 0) break;
        for (const row of page) {
          const problem = checkRow(row, chain, expected, prev, lastSeq);
          if (problem) return { ok: false, records, problem };
          records++;
          prev = row.hash;
          lastSeq = row.seq;
          expected++;
        }
      }
      chains.push({ chain, records: expected - 1, tailSeq: lastSeq, tailHash: prev });
    }
    const stored = this.#store.countAudit();
    if (stored !== records) {
      return {
        ok: false,
        records,
        problem: {
          kind: "unchained_records",
          chain: null,
          seq: null,
          chainSeq: null,
          message:
            `The audit table holds ${stored} records but its chains account for ${records}: ${
              stored - records
            } record(s) were inserted outside any chain position`,
        },
      };
    }
    if (!options.head) return { ok: true, records, chains, head: "skipped" };
    const problem = this.#checkHead();
    return problem
      ? { ok: false, records, problem }
      : { ok: true, records, chains, head: "verified" };
  }

  #checkHead(): AuditProblem | undefined {
    const whole = (kind: "head_missing" | "head_invalid", message: string): AuditProblem => ({
      kind,
      chain: null,
      seq: null,
      chainSeq: null,
      message,
    });
    const heads = this.#headPath === null ? this.#store.auditHeads?.() : undefined;
    if (heads !== undefined) {
      // A shared database (PostgreSQL): each segment's head row, kept outside the transactions
      // that appended to it, stands where a head file would.
      return this.#contradiction({
        version: 1,
        database: this.#database,
        time: 0,
        chains: heads,
      }) ??
        this.#unanchored(heads);
    }
    if (this.#headPath === null) {
      return whole(
        "head_missing",
        `Cannot detect truncation: database "${this.#database}" has no head file (it lives in memory); verify with --no-head`,
      );
    }
    let head: HeadFile | undefined;
    try {
      head = readHeadFile(this.#headPath);
    } catch (error) {
      return whole("head_invalid", error instanceof Error ? error.message : String(error));
    }
    if (head === undefined) {
      return whole(
        "head_missing",
        `Cannot detect truncation: the audit head file "${this.#headPath}" is missing. Run "libos audit verify --no-head"; if the chain verifies and no records are known to be missing, re-anchor with "libos init --reanchor"`,
      );
    }
    return this.#contradiction(head) ?? this.#unanchored(head.chains);
  }

  /** The first chain no head anchors. */
  #unanchored(
    heads: Readonly<Record<string, { readonly chainSeq: number }>>,
  ): AuditProblem | undefined {
    for (const chain of this.#store.auditChains()) {
      if ((heads[chain]?.chainSeq ?? 0) < 1) {
        return {
          kind: "unanchored_chain",
          chain,
          seq: null,
          chainSeq: 1,
          message:
            `Audit chain "${chain}" is not anchored by the head file: its records were added without the runtime's knowledge, or before a crash; re-anchor with "libos init --reanchor" only if you know where they came from`,
        };
      }
    }
    return undefined;
  }

  /**
   * Where the database contradicts a head file: another database's head, a chain cut below its
   * anchored record, or an anchored record whose hash changed.
   */
  #contradiction(head: HeadFile): AuditProblem | undefined {
    if (head.database !== this.#database) {
      return {
        kind: "head_invalid",
        chain: null,
        seq: null,
        chainSeq: null,
        message:
          `The audit head file "${this.#headPath}" belongs to database "${head.database}", not "${this.#database}"`,
      };
    }
    for (const [chain, anchored] of Object.entries(head.chains)) {
      if (anchored.chainSeq < 1) continue;
      const row = this.#store.scanAudit(chain, anchored.chainSeq - 1, 1)[0];
      if (!row || row.chainSeq !== anchored.chainSeq) {
        const kept = this.#store.auditTail(chain)?.chainSeq ?? 0;
        return {
          kind: "truncated",
          chain,
          seq: null,
          chainSeq: kept + 1,
          message:
            `Audit chain "${chain}" was truncated: the head file anchors record #${anchored.chainSeq} (seq ${anchored.seq}) but the database ends at #${kept}; records #${
              kept + 1
            }..#${anchored.chainSeq} were removed`,
        };
      }
      if (row.hash !== anchored.hash || row.seq !== anchored.seq) {
        return {
          kind: "head_mismatch",
          chain,
          seq: row.seq,
          chainSeq: anchored.chainSeq,
          message:
            `Audit chain "${chain}" was rewritten: record #${anchored.chainSeq} does not have the hash the head file anchored (${
              anchored.hash.slice(0, 16)
            }…); if this database was replaced on purpose (deleted and created anew at the same path), anchor it with "libos init --reanchor"`,
        };
      }
    }
    return undefined;
  }

  /** Writes the current end of the chains to the head file now, replacing what it held. */
  reanchor(): void {
    if (this.#headPath === null) {
      throw new AuditError(
        "audit_head_missing",
        `Database "${this.#database}" lives in memory and has no head file to anchor`,
      );
    }
    const chains: Record<string, ChainHead> = {};
    for (const chain of this.#store.auditChains()) {
      const tail = this.#store.auditTail(chain);
      if (tail) chains[chain] = { chainSeq: tail.chainSeq, seq: tail.seq, hash: tail.hash };
    }
    this.#write(chains);
    this.#anchor = "active";
    this.#headError = undefined;
  }

  #write(chains: Record<string, ChainHead>): void {
    const path = this.#headPath!;
    const head: HeadFile = {
      version: 1,
      database: this.#database,
      time: Math.trunc(this.#clock.now()),
      chains,
    };
    // In place when the file at the path is still the one this log holds open (the usual case:
    // every commit after the first); a new file, renamed over, otherwise.
    let onPath: Deno.FileInfo | undefined;
    try {
      onPath = Deno.statSync(path);
    } catch {
      onPath = undefined;
    }
    const open = this.#open;
    if (open !== undefined && onPath?.isFile && onPath.ino !== null && onPath.ino === open.ino) {
      overwriteHeadFile(open.file, head, onPath.size);
    } else {
      this.#closeHead();
      writeHeadFile(path, head, { ensureDir: this.#written === undefined });
      try {
        const file = Deno.openSync(path, { read: true, write: true });
        const ino = file.statSync().ino;
        if (ino === null) file.close();
        else this.#open = { file, ino };
      } catch {
        // Not kept open: the next commit renames a new file over it again.
      }
    }
    this.#dirty = false;
    try {
      const info = Deno.statSync(path);
      this.#written = {
        head,
        ino: info.ino,
        size: info.size,
        mtime: info.mtime?.getTime() ?? null,
      };
    } catch {
      this.#written = undefined;
    }
  }

  /** Closes the head file this log holds open, if any. */
  #closeHead(): void {
    try {
      this.#open?.file.close();
    } catch { /* already closed */ }
    this.#open = undefined;
  }

  /**
   * The head file as it is now: the one this log last wrote when the file is still that file
   * (same inode, size and modification time: nobody replaced or rewrote it since), read and
   * parsed otherwise. Saves reading back, after every commit, what was written at the last one.
   */
  #currentHead(): HeadFile | undefined {
    const written = this.#written;
    if (written !== undefined && written.ino !== null && written.mtime !== null) {
      try {
        const info = Deno.statSync(this.#headPath!);
        if (
          info.isFile && info.ino === written.ino && info.size === written.size &&
          info.mtime?.getTime() === written.mtime
        ) return written.head;
      } catch {
        // Gone or unreadable: the full read below says which.
      }
    }
    return readHeadFile(this.#headPath!);
  }

  /**
   * After a commit: advance the head to the chain's new end — but only over a head the database
   * still agrees with. A head that vanished, or that the database now contradicts (records cut
   * or rewritten since it was written), stops anchoring for good: advancing past it would turn
   * tampering into a valid-looking chain.
   */
  #anchorAfterCommit(): void {
    if (!this.#dirty || this.#anchor === "off") return;
    try {
      const previous = this.#currentHead();
      if (previous === undefined && this.#anchor === "active") {
        throw new AuditError(
          "audit_head_missing",
          `The audit head file "${this.#headPath}" disappeared while the runtime was using it`,
        );
      }
      if (previous !== undefined) {
        const problem = this.#contradiction(previous);
        if (problem) throw new AuditError("audit_tampered", problem.message);
      }
      const chains: Record<string, ChainHead> = { ...(previous?.chains ?? {}) };
      for (const chain of [...Object.keys(chains), this.#chain]) {
        const tail = this.#store.auditTail(chain);
        if (tail) chains[chain] = { chainSeq: tail.chainSeq, seq: tail.seq, hash: tail.hash };
      }
      this.#write(chains);
      this.#anchor = "active";
    } catch (error) {
      // The commit itself succeeded; the head stays where it was, as evidence.
      this.#anchor = "off";
      this.#headError = error;
    }
  }

  /** Stops following commits. */
  [Symbol.dispose](): void {
    this.#unsubscribe();
    this.#closeHead();
  }
}

function checkRow(
  row: AuditRow,
  chain: string,
  expected: number,
  prev: string,
  lastSeq: number,
): AuditProblem | undefined {
  const at = { chain, seq: row.seq, chainSeq: row.chainSeq };
  if (row.chainSeq !== expected) {
    return {
      kind: "missing_record",
      chain,
      seq: row.seq,
      chainSeq: expected,
      message: `Audit chain "${chain}" is missing record #${expected}${
        row.chainSeq > expected + 1 ? `..#${row.chainSeq - 1}` : ""
      }: the next stored record is #${row.chainSeq} (seq ${row.seq}); records were deleted`,
    };
  }
  if (row.seq <= lastSeq) {
    return {
      kind: "bad_order",
      ...at,
      message:
        `Audit record seq ${row.seq} (#${row.chainSeq} of "${chain}") is out of order after seq ${lastSeq}`,
    };
  }
  const body: Omit<AuditRow, "prev" | "hash"> = row;
  if (auditHash(row.prev, body) !== row.hash) {
    return {
      kind: "hash_mismatch",
      ...at,
      message:
        `Audit record seq ${row.seq} (#${row.chainSeq} of "${chain}") was edited: its contents do not match its hash`,
    };
  }
  if (row.prev !== prev) {
    return {
      kind: "broken_link",
      ...at,
      message:
        `Audit record seq ${row.seq} (#${row.chainSeq} of "${chain}") does not link to the record before it: it or an earlier record was rewritten`,
    };
  }
  return undefined;
}
