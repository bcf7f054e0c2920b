/**
 * The PostgreSQL {@link Store} (DESIGN §6, issue 26): the same contract as the SQLite store, for
 * several runtime workers sharing one database.
 *
 * - **Synchronous over a connection thread.** The driver (postgres.js) runs in a Worker
 *   (`_pg_worker.ts`); each call posts a batch of statements and blocks until the answer is in a
 *   shared buffer. No transaction spans an `await` of the store's thread, by construction.
 * - **One round trip per step.** A step's writes are queued and sent pipelined when the step
 *   ends (or with the step's next read, which must see them), inside a savepoint; a failure rolls
 *   back exactly that step.
 * - **Group commit.** A transaction stays open across steps for a few milliseconds or a batch of
 *   steps; `flush()` commits now, and callers flush before any external effect starts (the
 *   at-most-once ledger's `executing` row is durable before the effect).
 * - **`dataVersion()`** counts commits of other connections, delivered by LISTEN/NOTIFY after
 *   they committed, synchronised by a round trip on the listening connection.
 * - Row locks are held for one batch at most; READ COMMITTED.
 *
 * @module
 */
import { type NotFoundError, StoreError } from "../base/errors.ts";
import { PgFailure, PgLink, type PgResult, type PgStatement } from "./_pg_link.ts";
import { migrate, parsePgTarget, pgStoreFailure } from "./_pg_open.ts";
import type { PgMigration } from "./_pg_schema.ts";
import {
  actionRow,
  auditRow,
  capabilityRow,
  clampLimit,
  eventRow,
  humanRequestRow,
  imageRow,
  leaseRow,
  linkRow,
  namespaceRow,
  objectRow,
  processRow,
  retainedRow,
  type Row,
} from "./_store_rows.ts";
import {
  andNotIn,
  countLiveChildrenSql,
  insertAuditSql,
  listActionsSql,
  listCapabilitiesSql,
  listHumanRequestsSql,
  listObjectsSql,
  listProcessesSql,
  listRetainedSql,
  POSTGRES_DIALECT,
  putActionSql,
  putCapabilitySql,
  putHumanRequestSql,
  putImageSql,
  putLinkSql,
  putNamespaceSql,
  putObjectSql,
  putProcessSql,
  putRetainedSql,
  queryAuditSql,
  readEventsSql,
  setMetaSql,
  type Sql,
  type SqlParam,
} from "./_store_queries.ts";
import type {
  ActionQuery,
  ActionRow,
  AuditQuery,
  AuditRow,
  AuditTail,
  CapabilityQuery,
  CapabilityRow,
  EventRead,
  EventRow,
  HumanRequestQuery,
  HumanRequestRow,
  ImageRow,
  LeaseRow,
  LinkRow,
  NamespaceRow,
  NamespaceUsage,
  ObjectQuery,
  ObjectRow,
  ProcessQuery,
  ProcessRow,
  RetainedQuery,
  RetainedRow,
  Store,
} from "./store.ts";
import { leaseLostError } from "./store.ts";
import {
  CommitFence,
  CommitListeners,
  newMemo,
  refuseAsyncStep,
  type TransactionMemo,
} from "./_store_common.ts";

/** How to open a {@link PostgresStore}. */
export interface PostgresStoreOptions {
  /** `postgres://USER@HOST:PORT/DATABASE[?schema=NAME]`; a password in it is never shown (`location` drops it). */
  readonly url: string;
  /** Commit after this many finished steps (default 256). */
  readonly batchSteps?: number;
  /** Commit this many milliseconds after the first step of a batch (default 5). */
  readonly batchMs?: number;
  /** Refuse every write with `store_readonly` and migrate nothing. */
  readonly readOnly?: boolean;
  /** The longest one statement may run (default 30 s). */
  readonly statementTimeoutMs?: number;
  /** Create libos's tables when the schema has none (default true); else a missing one is not found. */
  readonly create?: boolean;
  /** Tests pass their own migrations. */
  readonly migrations?: readonly PgMigration[];
}

/** A step's savepoint: still queued, or sent (and so established unless its batch failed first). */
interface Frame {
  readonly name: string;
  /** Index of its SAVEPOINT in the queue, or -1 once sent. */
  queued: number;
  established: boolean;
}

/** Statements that only mark the transaction (they change no row and cannot conflict). */
const MARKER = /^(BEGIN|SAVEPOINT |RELEASE )/;

/** Rewrites `?` placeholders as `$1, $2, …` (no libos statement has a `?` in a literal). */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/** The PostgreSQL store. Open it with {@link PostgresStore.open}. */
export class PostgresStore implements Store {
  readonly location: string;
  readonly schemaVersion: number;
  readonly #link: PgLink;
  readonly #batchSteps: number;
  readonly #batchMs: number;
  readonly #readOnly: boolean;
  readonly #listeners = new CommitListeners();
  readonly #sql = new Map<string, string>();
  /** Statements not sent yet, with a check to run on each one's result. */
  #queue: PgStatement[] = [];
  #checks: (((result: PgResult) => void) | undefined)[] = [];
  readonly #frames: Frame[] = [];
  #inBatch = false;
  #pendingSteps = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #failure: StoreError | undefined;
  #deferred: unknown;
  /** The fence of every commit ({@link Store.fenceCommits}). */
  readonly #fence = new CommitFence();
  #closed = false;
  /**
   * What this transaction has read or left: audit tails, the last audit seq, process versions
   * and `dataVersion`. A chain and a process are written by one worker at a time (its lease),
   * so within the transaction these need no second query. Forgotten at every begin, commit and
   * rollback.
   */
  #memo: TransactionMemo | undefined;
  /** The tail each chain reached in the open transaction: its head row, once it commits. */
  readonly #touched = new Map<string, AuditTail & { readonly time: number }>();
  /** Event numbers taken from the sequence and not used yet. */
  #eventSeqs: number[] = [];

  private constructor(
    link: PgLink,
    location: string,
    schemaVersion: number,
    options: PostgresStoreOptions,
  ) {
    this.#link = link;
    this.location = location;
    this.schemaVersion = schemaVersion;
    this.#batchSteps = options.batchSteps ?? 256;
    this.#batchMs = options.batchMs ?? 5;
    this.#readOnly = options.readOnly ?? false;
  }

  /**
   * Connects, and (unless read-only) creates or migrates the schema.
   * @throws {StoreError} `store_io` (unreachable, refused login, bad URL), `store_foreign`,
   *   `store_newer_schema` or `store_outdated`; messages never hold the password.
   */
  static open(options: PostgresStoreOptions): PostgresStore {
    const target = parsePgTarget(options.url);
    const readOnly = options.readOnly ?? false;
    let link: PgLink;
    try {
      link = PgLink.open({
        url: target.url,
        schema: target.schema,
        listen: true,
        statementTimeoutMs: options.statementTimeoutMs ?? 30_000,
        applicationName: "libos",
      });
    } catch (error) {
      throw pgStoreFailure(error, target.location);
    }
    try {
      const version = migrate(link, target, {
        readOnly,
        create: options.create ?? true,
        ...(options.migrations === undefined ? {} : { migrations: options.migrations }),
      });
      if (readOnly) {
        link.run([{ sql: "SET default_transaction_read_only = on", params: [] }], {
          continuing: false,
          session: true,
        });
      }
      return new PostgresStore(link, target.location, version, options);
    } catch (error) {
      link.close();
      throw pgStoreFailure(error, target.location);
    }
  }

  #usable(): void {
    if (this.#closed) {
      throw new StoreError(
        "store_closed",
        `Database "${this.location}" is closed; open a new runtime to keep working`,
      );
    }
    if (this.#failure) throw this.#failure;
    if (this.#deferred !== undefined) {
      const error = this.#deferred;
      this.#deferred = undefined;
      throw error;
    }
  }

  #statement(sql: string, params: readonly SqlParam[]): PgStatement {
    let text = this.#sql.get(sql);
    if (text === undefined) {
      text = numbered(sql);
      this.#sql.set(sql, text);
    }
    return { sql: text, params };
  }

  #enqueue(statement: PgStatement, check?: (result: PgResult) => void): number {
    this.#queue.push(statement);
    this.#checks.push(check);
    return this.#queue.length - 1;
  }

  /**
   * Sends the queue and then `extra` in one round trip; returns `extra`'s results. On a failure
   * the frames whose savepoints ran before it are marked established (a step may roll back to
   * them); the others never existed.
   */
  #send(extra: readonly PgStatement[] = []): PgResult[] {
    const queue = this.#queue;
    const checks = this.#checks;
    this.#queue = [];
    this.#checks = [];
    const queued = this.#frames.filter((f) => f.queued >= 0);
    const batch = [...queue, ...extra];
    if (batch.length === 0) return [];
    let results: PgResult[];
    try {
      // A batch that begins its transaction, or a read outside any, may go to a new session.
      const continuing = this.#inBatch && batch[0]?.sql !== "BEGIN";
      results = this.#link.run(batch, { continuing });
    } catch (error) {
      const at = error instanceof PgFailure ? error.index : 0;
      for (const frame of queued) {
        frame.established = frame.queued < at;
        frame.queued = -1;
      }
      throw pgStoreFailure(error, this.location);
    }
    if (results.length !== batch.length) {
      throw this.#lost(
        new StoreError(
          "store_failed",
          `PostgreSQL answered ${results.length} of ${batch.length} statements`,
        ),
      );
    }
    for (const frame of queued) {
      frame.established = true;
      frame.queued = -1;
    }
    checks.forEach((check, i) => check?.(results[i]!));
    return results.slice(queue.length);
  }

  #begin(): void {
    if (this.#readOnly) {
      throw new StoreError(
        "store_readonly",
        `Database "${this.location}" was opened read-only; this command cannot change it`,
      );
    }
    this.#enqueue({ sql: "BEGIN", params: [] });
    this.#inBatch = true;
    this.#memo = newMemo();
    this.#timer = setTimeout(() => this.#timedFlush(), this.#batchMs);
  }

  #timedFlush(): void {
    this.#timer = undefined;
    if (this.#closed || this.#failure || this.#frames.length > 0) return;
    try {
      this.flush();
    } catch (error) {
      if (!this.#failure) this.#deferred = error;
    }
  }

  /** The transaction is beyond saving: the steps since the last commit are gone. */
  #lost(error: unknown): StoreError {
    this.#memo = undefined;
    this.#touched.clear();
    this.#queue = [];
    this.#checks = [];
    this.#frames.length = 0;
    this.#inBatch = false;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    try {
      this.#link.run([{ sql: "ROLLBACK", params: [] }]);
    } catch { /* the connection may be gone; the failure below says what to do */ }
    const cause = pgStoreFailure(error, this.location);
    this.#failure = new StoreError(
      "store_failed",
      `Database "${this.location}" lost the steps since its last commit (${cause.message}); restart the runtime: it recovers from the last commit`,
      { cause },
    );
    return this.#failure;
  }

  step<T>(fn: () => T): T {
    this.#usable();
    if (!this.#inBatch) this.#begin();
    const frame: Frame = { name: `step_${this.#frames.length}`, queued: -1, established: false };
    frame.queued = this.#enqueue({ sql: `SAVEPOINT ${frame.name}`, params: [] });
    this.#frames.push(frame);
    let result: T;
    try {
      result = fn();
      refuseAsyncStep(result);
      if (frame.queued >= 0 && frame.queued === this.#queue.length - 1) {
        // Nothing happened in the step: its savepoint is dropped unsent.
        this.#queue.length = frame.queued;
        this.#checks.length = frame.queued;
        frame.queued = -1;
        frame.established = true;
      } else {
        this.#enqueue({ sql: `RELEASE ${frame.name}`, params: [] });
        // The step's writes reach the server now, so their failure is this step's. A queue of
        // savepoint bookkeeping only cannot fail: it waits for the next round trip.
        if (this.#checks.some((_, i) => !MARKER.test(this.#queue[i]!.sql))) this.#send();
      }
    } catch (error) {
      this.#frames.pop();
      this.#memo = newMemo();
      if (frame.queued >= 0) {
        // Nothing of this step was sent: forget it.
        this.#queue.length = frame.queued;
        this.#checks.length = frame.queued;
      } else if (frame.established) {
        try {
          this.#link.run([
            { sql: `ROLLBACK TO ${frame.name}`, params: [] },
            { sql: `RELEASE ${frame.name}`, params: [] },
          ]);
        } catch (rollbackError) {
          throw this.#lost(rollbackError);
        }
      } else if (this.#frames.length === 0) {
        // The batch failed before this step's savepoint: no step of it can be kept.
        throw this.#lost(error);
      }
      // Otherwise the failure happened before this step's savepoint: an enclosing step rolls
      // back to its own.
      throw error;
    }
    this.#frames.pop();
    if (this.#frames.length === 0 && ++this.#pendingSteps >= this.#batchSteps) this.flush();
    return result;
  }

  flush(): void {
    this.#usable();
    if (this.#frames.length > 0) {
      throw new TypeError(
        "Store.flush() was called inside a step; commit between steps, before the external effect starts",
      );
    }
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (!this.#inBatch) return;
    const fence = this.#fence.now();
    const fenced = fence === undefined ? [] : [
      this.#statement("SELECT libos_fence(?, ?) AS n", [fence.owner, JSON.stringify(fence.roots)]),
    ];
    this.#memo = undefined;
    try {
      this.#send([...fenced, { sql: "COMMIT", params: [] }]);
    } catch (error) {
      this.#inBatch = false;
      this.#touched.clear();
      const cause = fence === undefined
        ? pgStoreFailure(error, this.location)
        : this.#fenceFailure(error, fence.owner);
      try {
        this.#link.run([{ sql: "ROLLBACK", params: [] }]);
      } catch { /* the commit error below is what matters */ }
      if (cause instanceof StoreError && cause.code === "store_lease_lost") {
        this.#failure = cause;
        throw cause;
      }
      this.#failure = new StoreError(
        "store_failed",
        `A commit to database "${this.location}" failed (${cause.message}); the steps since the last commit were not saved. Restart the runtime: it recovers from the last commit`,
        { cause },
      );
      throw this.#failure;
    }
    this.#inBatch = false;
    this.#pendingSteps = 0;
    this.#writeHeads();
    this.#listeners.committed(this.location);
  }

  /**
   * After a commit, outside its transaction: each chain it appended to gets its head row, read
   * from what was committed (a step rolled back appended nothing). A head only moves forward.
   */
  #writeHeads(): void {
    if (this.#touched.size === 0) return;
    const chains = [...this.#touched.entries()];
    this.#touched.clear();
    try {
      this.#link.run(
        chains.map(([chain, tail]) =>
          this.#statement(
            `INSERT INTO audit_heads (chain, chain_seq, seq, hash, time)
           SELECT chain, chain_seq, seq, hash, ? FROM audit WHERE chain = ?
             ORDER BY chain_seq DESC LIMIT 1
           ON CONFLICT (chain) DO UPDATE SET chain_seq = excluded.chain_seq, seq = excluded.seq,
             hash = excluded.hash, time = excluded.time
             WHERE audit_heads.chain_seq < excluded.chain_seq`,
            [tail.time, chain],
          )
        ),
        { continuing: false },
      );
    } catch (error) {
      // The records are committed; only their anchor lags. The next commit moves it on, and
      // "libos audit verify" reports a chain whose head lags behind as unanchored.
      this.#deferred = pgStoreFailure(error, this.location);
    }
  }

  onCommit(listener: () => void): () => void {
    return this.#listeners.add(listener);
  }

  dataVersion(): number {
    this.#usable();
    const memo = this.#inBatch ? this.#memo : undefined;
    if (memo?.dataVersion !== undefined) return memo.dataVersion;
    if (this.#link.listenerLost()) {
      throw new StoreError(
        "store_io",
        `The connection that hears other workers' commits to "${this.location}" closed; restart the runtime so revocations and decisions are seen again`,
      );
    }
    let version: number;
    try {
      version = this.#link.syncedVersion();
    } catch (error) {
      throw pgStoreFailure(error, this.location);
    }
    if (memo !== undefined) memo.dataVersion = version;
    return version;
  }

  onExternalCommit(listener: () => void): () => void {
    return this.#link.onCommit(listener);
  }

  close(): void {
    if (this.#closed) return;
    if (this.#frames.length > 0) throw new TypeError("Store.close() was called inside a step");
    try {
      if (!this.#failure) this.flush();
    } finally {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#closed = true;
      this.#listeners.clear();
      this.#link.close();
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /** Queues one write inside the caller's step, or runs it as its own step. */
  #write(sql: string, params: readonly SqlParam[], check?: (result: PgResult) => void): void {
    if (this.#frames.length === 0) return this.step(() => this.#write(sql, params, check));
    this.#usable();
    this.#enqueue(this.#statement(sql, params), check);
  }

  /** Runs a write whose answer is needed now (it changed rows, or returns a value). */
  #writeNow(sql: string, params: readonly SqlParam[]): PgResult {
    if (this.#frames.length === 0) return this.step(() => this.#writeNow(sql, params));
    this.#usable();
    return this.#send([this.#statement(sql, params)])[0]!;
  }

  /** A read: inside the open transaction (after the writes it must see), or on its own. */
  #all(sql: string, params: readonly SqlParam[]): Row[] {
    this.#usable();
    return this.#send([this.#statement(sql, params)])[0]!.rows as Row[];
  }

  #get(sql: string, params: readonly SqlParam[]): Row | undefined {
    return this.#all(sql, params)[0];
  }

  /** `#write`, for a statement built in `_store_queries.ts`. */
  #put(statement: Sql, check?: (result: PgResult) => void): void {
    this.#write(statement.sql, statement.params, check);
  }

  /** Runs a built SELECT; no statement means no row can match. */
  #rows(statement: Sql | undefined): Row[] {
    return statement === undefined ? [] : this.#all(statement.sql, statement.params);
  }

  getMeta(key: string): string | undefined {
    const row = this.#get("SELECT value FROM meta WHERE key = ?", [key]);
    return row === undefined ? undefined : String(row.value);
  }

  setMeta(key: string, value: string): void {
    this.#put(setMetaSql(key, value));
  }

  auditTail(chain: string): AuditTail | undefined {
    this.#usable();
    const memo = this.#inBatch ? this.#memo : undefined;
    if (memo?.tails.has(chain)) return memo.tails.get(chain);
    const row = this.#get(
      "SELECT seq, chain_seq, hash FROM audit WHERE chain = ? ORDER BY chain_seq DESC LIMIT 1",
      [chain],
    );
    const tail = row === undefined
      ? undefined
      : { seq: Number(row.seq), chainSeq: Number(row.chain_seq), hash: String(row.hash) };
    memo?.tails.set(chain, tail);
    return tail;
  }

  insertAudit(row: AuditRow): void {
    const location = this.location;
    this.#put(insertAuditSql(row), (result) => {
      if (result.count !== 1) {
        // Only something planted in the database (a trigger returning NULL) does this.
        throw new StoreError(
          "store_corrupt",
          `Database "${location}" silently dropped audit record ${row.seq}; it was edited outside libos. Stop using it and investigate`,
        );
      }
    });
    const memo = this.#inBatch ? this.#memo : undefined;
    if (memo !== undefined) {
      memo.tails.set(row.chain, { seq: row.seq, chainSeq: row.chainSeq, hash: row.hash });
      memo.lastSeq = Math.max(memo.lastSeq ?? 0, row.seq);
    }
    this.#touched.set(row.chain, {
      seq: row.seq,
      chainSeq: row.chainSeq,
      hash: row.hash,
      time: row.time,
    });
  }

  queryAudit(query: AuditQuery): AuditRow[] {
    return this.#rows(queryAuditSql(POSTGRES_DIALECT, query)).map(auditRow);
  }

  scanAudit(chain: string, afterChainSeq: number, limit: number): AuditRow[] {
    return this.#all(
      "SELECT * FROM audit WHERE chain = ? AND chain_seq > ? ORDER BY chain_seq LIMIT ?",
      [chain, afterChainSeq, clampLimit(limit)],
    ).map(auditRow);
  }

  auditChains(): string[] {
    return this.#all("SELECT DISTINCT chain FROM audit ORDER BY chain", []).map((r) =>
      String(r.chain)
    );
  }

  lastAuditSeq(): number {
    this.#usable();
    const memo = this.#inBatch ? this.#memo : undefined;
    if (memo?.lastSeq !== undefined) return memo.lastSeq;
    const seq = Number(this.#get("SELECT coalesce(max(seq), 0) AS n FROM audit", [])?.n ?? 0);
    if (memo !== undefined) memo.lastSeq = seq;
    return seq;
  }

  nextAuditSeq(): number {
    // Not memoised: another worker may append between two of this one's records.
    return Number(this.#get("SELECT nextval('audit_seq') AS n", [])?.n);
  }

  auditHeads(): Record<string, AuditTail> {
    const heads: Record<string, AuditTail> = {};
    for (const r of this.#all("SELECT chain, chain_seq, seq, hash FROM audit_heads", [])) {
      heads[String(r.chain)] = {
        chainSeq: Number(r.chain_seq),
        seq: Number(r.seq),
        hash: String(r.hash),
      };
    }
    return heads;
  }

  countAudit(): number {
    return Number(this.#get("SELECT count(*) AS n FROM audit", [])?.n ?? 0);
  }

  insertEvent(row: Omit<EventRow, "seq">): number {
    if (this.#frames.length === 0) return this.step(() => this.insertEvent(row));
    this.#usable();
    // Event numbers come from the table's sequence in blocks, so an event is one queued write,
    // not a round trip: increasing for this store, with gaps where a block is left unused.
    if (this.#eventSeqs.length === 0) {
      const rows = this.#send([{
        sql:
          "SELECT nextval(pg_get_serial_sequence('events', 'seq')) AS n FROM generate_series(1, 64)",
        params: [],
      }])[0]!.rows;
      this.#eventSeqs = rows.map((r) => Number(r.n)).sort((a, b) => a - b);
    }
    const seq = this.#eventSeqs.shift()!;
    this.#write(
      "INSERT INTO events (seq, version, session, turn, time, kind, payload) VALUES (?, ?, ?, ?, ?, ?, ?)",
      [seq, row.version, row.session, row.turn, row.time, row.kind, row.payload],
    );
    return seq;
  }

  readEvents(read: EventRead): EventRow[] {
    return this.#rows(readEventsSql(read)).map(eventRow);
  }

  lastEventSeq(): number {
    return Number(this.#get("SELECT coalesce(max(seq), 0) AS n FROM events", [])?.n ?? 0);
  }

  putProcess(row: Omit<ProcessRow, "version">): number {
    const { sql, params } = putProcessSql(row);
    const result = this.#writeNow(sql, params);
    const version = Number(result.rows[0]?.version);
    if (this.#inBatch) this.#memo?.versions.set(row.pid, version);
    return version;
  }

  getProcess(pid: string): ProcessRow | undefined {
    const row = this.#get("SELECT * FROM processes WHERE pid = ?", [pid]);
    return row === undefined ? undefined : processRow(row);
  }

  getProcessVersion(pid: string): number | undefined {
    this.#usable();
    const memo = this.#inBatch ? this.#memo : undefined;
    if (memo?.versions.has(pid)) return memo.versions.get(pid);
    const row = this.#get("SELECT version FROM processes WHERE pid = ?", [pid]);
    const version = row === undefined ? undefined : Number(row.version);
    memo?.versions.set(pid, version);
    return version;
  }

  listProcesses(query: ProcessQuery): ProcessRow[] {
    return this.#rows(listProcessesSql(query)).map(processRow);
  }

  countLiveChildren(parent: string, finished: readonly string[]): number {
    const { sql, params } = countLiveChildrenSql(parent, finished);
    return Number(this.#get(sql, params)?.n ?? 0);
  }

  putAction(row: ActionRow): void {
    this.#put(putActionSql(row));
  }

  getAction(id: string): ActionRow | undefined {
    const row = this.#get("SELECT * FROM actions WHERE id = ?", [id]);
    return row === undefined ? undefined : actionRow(row);
  }

  listActions(query: ActionQuery): ActionRow[] {
    return this.#rows(listActionsSql(POSTGRES_DIALECT, query)).map(actionRow);
  }

  putCapability(row: CapabilityRow): void {
    this.#put(putCapabilitySql(row));
  }

  getCapability(id: string): CapabilityRow | undefined {
    const row = this.#get("SELECT * FROM capabilities WHERE id = ?", [id]);
    return row === undefined ? undefined : capabilityRow(row);
  }

  listCapabilities(query: CapabilityQuery): CapabilityRow[] {
    this.#usable();
    return this.#rows(listCapabilitiesSql(query)).map(capabilityRow);
  }

  putHumanRequest(row: HumanRequestRow): void {
    this.#put(putHumanRequestSql(row));
  }

  getHumanRequest(id: string): HumanRequestRow | undefined {
    const row = this.#get("SELECT * FROM human_requests WHERE id = ?", [id]);
    return row === undefined ? undefined : humanRequestRow(row);
  }

  listHumanRequests(query: HumanRequestQuery): HumanRequestRow[] {
    return this.#rows(listHumanRequestsSql(POSTGRES_DIALECT, query)).map(humanRequestRow);
  }

  putObject(row: ObjectRow): void {
    this.#put(putObjectSql(row));
  }

  getObject(oid: string): ObjectRow | undefined {
    const row = this.#get("SELECT * FROM objects WHERE oid = ?", [oid]);
    return row === undefined ? undefined : objectRow(row);
  }

  getObjectByName(namespace: string, name: string): ObjectRow | undefined {
    const row = this.#get("SELECT * FROM objects WHERE namespace = ? AND name = ?", [
      namespace,
      name,
    ]);
    return row === undefined ? undefined : objectRow(row);
  }

  listObjects(query: ObjectQuery): ObjectRow[] {
    return this.#rows(listObjectsSql(POSTGRES_DIALECT, query)).map(objectRow);
  }

  deleteObject(oid: string): boolean {
    return this.step(() => {
      this.#write("DELETE FROM object_links WHERE src = ? OR dst = ?", [oid, oid]);
      return this.#writeNow("DELETE FROM objects WHERE oid = ?", [oid]).count > 0;
    });
  }

  putLink(row: LinkRow): void {
    this.#put(putLinkSql(row));
  }

  deleteLink(from: string, to: string, rel: string): boolean {
    return this.#writeNow(
      "DELETE FROM object_links WHERE src = ? AND dst = ? AND rel = ?",
      [from, to, rel],
    ).count > 0;
  }

  listLinks(oid: string, limit: number): LinkRow[] {
    return this.#all(
      "SELECT * FROM object_links WHERE src = ? OR dst = ? ORDER BY created, src, dst, rel LIMIT ?",
      [oid, oid, clampLimit(limit)],
    ).map(linkRow);
  }

  putNamespace(row: NamespaceRow): void {
    this.#put(putNamespaceSql(row));
  }

  getNamespace(key: string): NamespaceRow | undefined {
    const row = this.#get("SELECT * FROM namespaces WHERE key = ?", [key]);
    return row === undefined ? undefined : namespaceRow(row);
  }

  listNamespaces(afterKey: string | undefined, limit: number): NamespaceRow[] {
    return this.#all("SELECT * FROM namespaces WHERE key > ? ORDER BY key LIMIT ?", [
      afterKey ?? "",
      clampLimit(limit),
    ]).map(namespaceRow);
  }

  namespaceUsage(namespace: string): NamespaceUsage {
    const row = this.#get(
      `SELECT count(*) AS objects,
         coalesce(sum(octet_length(data) + coalesce(octet_length(payload), 0)), 0) AS bytes
       FROM objects WHERE namespace = ?`,
      [namespace],
    );
    return { objects: Number(row?.objects ?? 0), bytes: Number(row?.bytes ?? 0) };
  }

  putRetained(row: RetainedRow): void {
    this.#put(putRetainedSql(row));
  }

  getRetained(pid: string): RetainedRow | undefined {
    const row = this.#get("SELECT * FROM retained WHERE pid = ?", [pid]);
    return row === undefined ? undefined : retainedRow(row);
  }

  listRetained(query: RetainedQuery): RetainedRow[] {
    return this.#rows(listRetainedSql(query)).map(retainedRow);
  }

  putImage(row: ImageRow): void {
    this.#put(putImageSql(row));
  }

  getImage(id: string): ImageRow | undefined {
    const row = this.#get("SELECT * FROM images WHERE id = ?", [id]);
    return row === undefined ? undefined : imageRow(row);
  }

  listImages(afterId: string | undefined, limit: number): ImageRow[] {
    return this.#all("SELECT * FROM images WHERE id > ? ORDER BY id LIMIT ?", [
      afterId ?? "",
      clampLimit(limit),
    ]).map(imageRow);
  }
  claimTrees(
    owner: string,
    now: number,
    ttlMs: number,
    limit: number,
    finished: readonly string[],
    options: { readonly lapsedOnly?: boolean } = {},
  ): string[] {
    // Candidate roots are locked FOR UPDATE SKIP LOCKED (a root another worker is claiming or
    // writing right now is skipped, not waited for), and the upsert re-checks, on the latest
    // committed lease, that it lapsed: two workers never both take one tree.
    const result = this.#writeNow(
      `WITH picked AS (
         SELECT p.pid FROM processes p
         WHERE p.parent IS NULL${andNotIn("p.status", finished)}
           AND NOT EXISTS (
             SELECT 1 FROM leases l WHERE l.root = p.pid AND (l.expires > ? OR l.owner = ?))${
        options.lapsedOnly ? " AND EXISTS (SELECT 1 FROM leases l WHERE l.root = p.pid)" : ""
      }
         ORDER BY p.updated, p.pid LIMIT ?
         FOR UPDATE OF p SKIP LOCKED)
       INSERT INTO leases (root, owner, expires, claimed, generation)
         SELECT pid, ?, ?, ?, 1 FROM picked
       ON CONFLICT (root) DO UPDATE SET owner = excluded.owner, expires = excluded.expires,
         claimed = excluded.claimed, generation = leases.generation + 1
         WHERE leases.expires <= ? AND leases.owner <> excluded.owner
       RETURNING root`,
      [...finished, now, owner, clampLimit(limit), owner, now + ttlMs, now, now],
    );
    this.flush();
    return result.rows.map((r) => String(r.root)).sort();
  }

  renewLeases(owner: string, now: number, ttlMs: number): string[] {
    const result = this.#writeNow(
      "UPDATE leases SET expires = ? WHERE owner = ? RETURNING root",
      [now + ttlMs, owner],
    );
    this.flush();
    return result.rows.map((r) => String(r.root)).sort();
  }

  releaseLease(owner: string, root: string): boolean {
    const released = this.#writeNow("DELETE FROM leases WHERE root = ? AND owner = ?", [
      root,
      owner,
    ]).count > 0;
    this.flush();
    return released;
  }

  limitIdleTransactions(ms: number): void {
    this.flush();
    const bound = Math.max(100, Math.floor(ms));
    try {
      // Outside any transaction: for the session.
      this.#link.run([{ sql: `SET idle_in_transaction_session_timeout = ${bound}`, params: [] }], {
        continuing: false,
        session: true,
      });
    } catch (error) {
      throw pgStoreFailure(error, this.location);
    }
  }

  fenceCommits(owner: string, roots: () => readonly string[]): () => void {
    this.#usable();
    return this.#fence.set(owner, roots);
  }

  /** A failure of a fenced commit: the lease that is gone, or what else failed. */
  #fenceFailure(error: unknown, owner: string): StoreError | NotFoundError {
    // From the link as it is, or already mapped by #send (the driver's failure its cause).
    const failure = error instanceof StoreError ? error.cause : error;
    if (failure instanceof PgFailure && failure.code === "LB001") {
      return leaseLostError(this.location, owner, failure.message);
    }
    return pgStoreFailure(error, this.location);
  }

  listLeases(limit: number): LeaseRow[] {
    return this.#all("SELECT * FROM leases ORDER BY root LIMIT ?", [clampLimit(limit)]).map(
      leaseRow,
    );
  }
}

/**
 * Drops libos's schema named by `url` (`?schema=NAME`; never `public`) with everything in it:
 * for tests and for an operator retiring a workspace's database on purpose. The audit
 * log goes with it.
 * @throws {StoreError} for `public` (drop the database instead) or a failure.
 */
export function dropPostgresSchema(url: string): void {
  const target = parsePgTarget(url);
  if (target.schema === "public") {
    throw new StoreError(
      "store_io",
      `Refusing to drop schema "public" of "${target.location}"; drop the database itself if that is what you mean`,
    );
  }
  runPostgresStatements(url, [`DROP SCHEMA IF EXISTS "${target.schema}" CASCADE`]);
}

/**
 * Runs SQL statements (no parameters) on a connection of their own, as the login `url` names,
 * with the schema `url` names first on the search path; returns each statement's rows. For
 * operators' maintenance and tests — not a way into a store, whose transactions it never sees.
 * @throws {StoreError} for a failure (the message never holds the password).
 */
export function runPostgresStatements(
  url: string,
  statements: readonly string[],
): Record<string, unknown>[][] {
  const target = parsePgTarget(url);
  let link: PgLink | undefined;
  try {
    link = PgLink.open({
      url: target.url,
      schema: target.schema,
      listen: false,
      statementTimeoutMs: 30_000,
      applicationName: "libos-admin",
    });
    return link.run(statements.map((sql) => ({ sql, params: [] })), { continuing: false })
      .map((r) => r.rows);
  } catch (error) {
    throw pgStoreFailure(error, target.location);
  } finally {
    link?.close();
  }
}
