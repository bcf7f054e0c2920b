/**
 * The SQLite {@link Store} on `node:sqlite` (DESIGN §6): one writer connection, WAL,
 * `synchronous=NORMAL` (survives `kill -9`, not power loss), forward-only migrations in
 * `PRAGMA user_version`, prepared statements, and group commit with one savepoint per step.
 *
 * Opening never modifies a file it will refuse: the header is read as plain bytes, then the file
 * is inspected through a read-only connection, and only a libos database at a known schema
 * version (or an empty file) is opened for writing.
 *
 * @module
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { type Migration, MIGRATIONS } from "./_schema.ts";
import { openConnection, sqliteCode, storeFailure } from "./_sqlite_open.ts";
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
  SQLITE_DIALECT,
} from "./_store_queries.ts";
import { StoreError } from "../base/errors.ts";
import { MEMORY_DB } from "../base/state_paths.ts";
import {
  CommitFence,
  CommitListeners,
  newMemo,
  refuseAsyncStep,
  type TransactionMemo,
} from "./_store_common.ts";
import {
  type ActionQuery,
  type ActionRow,
  type AuditQuery,
  type AuditRow,
  type AuditTail,
  type CapabilityQuery,
  type CapabilityRow,
  type EventRead,
  type EventRow,
  type HumanRequestQuery,
  type HumanRequestRow,
  type ImageRow,
  leaseLostError,
  type LeaseRow,
  type LinkRow,
  type NamespaceRow,
  type NamespaceUsage,
  type ObjectQuery,
  type ObjectRow,
  type ProcessQuery,
  type ProcessRow,
  type RetainedQuery,
  type RetainedRow,
  type Store,
} from "./store.ts";

export { type Migration, MIGRATIONS, SCHEMA_VERSION } from "./_schema.ts";

/** How to open a {@link SqliteStore}. */
export interface SqliteStoreOptions {
  /** An absolute path, or `:memory:`. A missing file is created with mode 0600. */
  readonly path: string;
  /** How long to wait for another connection's lock, in milliseconds (default 5000). */
  readonly busyTimeoutMs?: number;
  /** Commit after this many finished steps (default 256). */
  readonly batchSteps?: number;
  /** Commit this many milliseconds after the first step of a batch (default 5). */
  readonly batchMs?: number;
  /** `NORMAL` (the default; DESIGN §6) or `FULL` (fsync on every commit). */
  readonly synchronous?: "NORMAL" | "FULL";
  /** The migrations to apply; tests pass their own list, everyone else uses the default. */
  readonly migrations?: readonly Migration[];
  /**
   * Open an existing, up-to-date database without writing anything (for `audit verify`,
   * `audit query`, `ps`): every write is refused with `store_readonly`.
   */
  readonly readOnly?: boolean;
  /** Caps the database at this many pages (4 KiB each); writes past it fail as "disk full". */
  readonly maxPages?: number;
}

const DATA_VERSION = "PRAGMA data_version";

/** The SQLite store. Open it with {@link SqliteStore.open}. */
export class SqliteStore implements Store {
  readonly location: string;
  readonly schemaVersion: number;
  readonly #db: DatabaseSync;
  readonly #busyTimeoutMs: number;
  readonly #batchSteps: number;
  readonly #batchMs: number;
  readonly #readOnly: boolean;
  readonly #statements = new Map<string, StatementSync>();
  readonly #listeners = new CommitListeners();
  #inBatch = false;
  #pendingSteps = 0;
  #depth = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #failure: StoreError | undefined;
  #deferred: unknown;
  /** The fence of every commit ({@link Store.fenceCommits}). */
  readonly #fence = new CommitFence();
  #closed = false;
  /**
   * What this connection's own open write transaction has read or left: the audit tails, the
   * last audit seq, process row versions and `data_version`. No other connection can commit
   * while it holds the write lock, so within it these need no second query. Forgotten at every
   * begin, commit and rollback (a rollback to a savepoint starts it over).
   */
  #memo: TransactionMemo | undefined;

  private constructor(
    db: DatabaseSync,
    location: string,
    schemaVersion: number,
    options: SqliteStoreOptions,
  ) {
    this.#db = db;
    this.location = location;
    this.schemaVersion = schemaVersion;
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.#batchSteps = options.batchSteps ?? 256;
    this.#batchMs = options.batchMs ?? 5;
    this.#readOnly = options.readOnly ?? false;
  }

  /**
   * Opens (creating with mode 0600 when missing) a database and brings its schema up to date.
   * @throws {StoreError} `store_corrupt`, `store_locked`, `store_newer_schema`, `store_foreign`
   *   or `store_io`; in each case the file is left as it was.
   */
  static open(options: SqliteStoreOptions): SqliteStore {
    const { db, version } = openConnection({
      path: options.path,
      busyTimeoutMs: options.busyTimeoutMs ?? 5000,
      synchronous: options.synchronous ?? "NORMAL",
      migrations: options.migrations ?? MIGRATIONS,
      readOnly: options.readOnly ?? false,
    });
    if (options.maxPages !== undefined) {
      if (!Number.isInteger(options.maxPages) || options.maxPages < 1) {
        db.close();
        throw new RangeError(`maxPages must be a positive integer, got ${options.maxPages}`);
      }
      db.exec(`PRAGMA max_page_count = ${options.maxPages}`);
    }
    return new SqliteStore(
      db,
      options.path === MEMORY_DB ? MEMORY_DB : options.path,
      version,
      options,
    );
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

  #stmt(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #fail(error: unknown): StoreError {
    return storeFailure(error, this.location, this.#busyTimeoutMs);
  }

  /**
   * SQLite rolled the whole batch back on its own (disk full, I/O error): the steps since the
   * last commit are gone, so the store stops rather than carry on as if they were saved.
   */
  #lost(error: unknown): StoreError {
    this.#memo = undefined;
    const cause = this.#fail(error);
    this.#inBatch = false;
    this.#depth = 0;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#failure = new StoreError(
      "store_failed",
      `Database "${this.location}" lost the steps since its last commit (${cause.message}); restart the runtime: it recovers from the last commit`,
      { cause },
    );
    return this.#failure;
  }

  #begin(): void {
    if (this.#readOnly) {
      throw new StoreError(
        "store_readonly",
        `Database "${this.location}" was opened read-only; this command cannot change it`,
      );
    }
    try {
      this.#stmt("BEGIN IMMEDIATE").run();
    } catch (error) {
      throw this.#fail(error);
    }
    this.#inBatch = true;
    this.#memo = newMemo();
    this.#timer = setTimeout(() => this.#timedFlush(), this.#batchMs);
  }

  #timedFlush(): void {
    this.#timer = undefined;
    if (this.#closed || this.#failure || this.#depth > 0) return;
    try {
      this.flush();
    } catch (error) {
      // Nobody is on the stack to receive it: the next call into the store throws it.
      if (!this.#failure) this.#deferred = error;
    }
  }

  step<T>(fn: () => T): T {
    this.#usable();
    if (!this.#inBatch) this.#begin();
    const savepoint = `step_${this.#depth}`;
    try {
      this.#stmt(`SAVEPOINT ${savepoint}`).run();
    } catch (error) {
      throw this.#fail(error);
    }
    this.#depth++;
    let result: T;
    try {
      result = fn();
      refuseAsyncStep(result);
    } catch (error) {
      this.#depth--;
      if (!this.#db.isTransaction) throw this.#lost(error);
      try {
        // What the step appended is undone: the memo starts over (the transaction goes on).
        this.#memo = newMemo();
        this.#stmt(`ROLLBACK TO ${savepoint}`).run();
        this.#stmt(`RELEASE ${savepoint}`).run();
      } catch (rollbackError) {
        throw this.#lost(rollbackError);
      }
      throw sqliteCode(error) === undefined ? error : this.#fail(error);
    }
    this.#depth--;
    try {
      this.#stmt(`RELEASE ${savepoint}`).run();
    } catch (error) {
      throw this.#lost(error);
    }
    if (this.#depth === 0 && ++this.#pendingSteps >= this.#batchSteps) this.flush();
    return result;
  }

  flush(): void {
    this.#usable();
    if (this.#depth > 0) {
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
    // Inside the write transaction no other connection can change a lease before the commit.
    const missing = fence === undefined ? undefined : this.#stmt(
      `SELECT value AS root FROM json_each(?)
           WHERE value NOT IN (SELECT root FROM leases WHERE owner = ?) LIMIT 1`,
    ).get(JSON.stringify(fence.roots), fence.owner)?.root;
    if (missing !== undefined) {
      try {
        this.#db.exec("ROLLBACK");
      } catch { /* the lost lease below is what matters */ }
      this.#inBatch = false;
      this.#failure = leaseLostError(this.location, fence!.owner, String(missing));
      throw this.#failure;
    }
    this.#memo = undefined;
    try {
      this.#stmt("COMMIT").run();
    } catch (error) {
      if (this.#db.isTransaction) {
        try {
          this.#db.exec("ROLLBACK");
        } catch { /* the commit error below is what matters */ }
      }
      this.#inBatch = false;
      const cause = this.#fail(error);
      this.#failure = new StoreError(
        "store_failed",
        `A commit to database "${this.location}" failed (${cause.message}); the steps since the last commit were not saved. Restart the runtime: it recovers from the last commit`,
        { cause },
      );
      throw this.#failure;
    }
    this.#inBatch = false;
    this.#pendingSteps = 0;
    this.#listeners.committed(this.location);
  }

  onCommit(listener: () => void): () => void {
    return this.#listeners.add(listener);
  }

  dataVersion(): number {
    this.#usable();
    const memo = this.#inBatch ? this.#memo : undefined;
    if (memo?.dataVersion !== undefined) return memo.dataVersion;
    let statement = this.#statements.get(DATA_VERSION);
    if (!statement) {
      // Arrays, not row objects: this runs before every capability check.
      statement = this.#db.prepare(DATA_VERSION);
      (statement as unknown as { setReturnArrays(on: boolean): void }).setReturnArrays(true);
      this.#statements.set(DATA_VERSION, statement);
    }
    const row = statement.get() as unknown as readonly number[] | undefined;
    const version = Number(row?.[0] ?? 0);
    if (memo !== undefined) memo.dataVersion = version;
    return version;
  }

  close(): void {
    if (this.#closed) return;
    if (this.#depth > 0) throw new TypeError("Store.close() was called inside a step");
    try {
      if (!this.#failure) this.flush();
    } finally {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#closed = true;
      this.#listeners.clear();
      this.#statements.clear();
      this.#db.close();
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /**
   * Runs one write: inside the caller's step as is (a single statement is atomic by itself), or
   * as its own step when none is open.
   */
  #write(sql: string, params: readonly SQLInputValue[]): number {
    if (this.#depth === 0) return this.step(() => this.#write(sql, params));
    this.#usable();
    try {
      return Number(this.#stmt(sql).run(...params).changes);
    } catch (error) {
      throw this.#fail(error);
    }
  }

  /** `#write`, for a statement built in `_store_queries.ts`. */
  #put(statement: Sql): number {
    return this.#write(statement.sql, statement.params);
  }

  /** Runs a built SELECT; no statement means no row can match. */
  #rows(statement: Sql | undefined): Row[] {
    return statement === undefined ? [] : this.#stmt(statement.sql).all(...statement.params);
  }

  getMeta(key: string): string | undefined {
    this.#usable();
    const row = this.#stmt("SELECT value FROM meta WHERE key = ?").get(key);
    return row === undefined ? undefined : String(row.value);
  }

  setMeta(key: string, value: string): void {
    this.#put(setMetaSql(key, value));
  }

  auditTail(chain: string): AuditTail | undefined {
    this.#usable();
    const memo = this.#inBatch ? this.#memo : undefined;
    if (memo?.tails.has(chain)) return memo.tails.get(chain);
    const row = this.#stmt(
      "SELECT seq, chain_seq, hash FROM audit WHERE chain = ? ORDER BY chain_seq DESC LIMIT 1",
    ).get(chain);
    const tail = row === undefined
      ? undefined
      : { seq: Number(row.seq), chainSeq: Number(row.chain_seq), hash: String(row.hash) };
    memo?.tails.set(chain, tail);
    return tail;
  }

  insertAudit(row: AuditRow): void {
    const changes = this.#put(insertAuditSql(row));
    const memo = this.#inBatch ? this.#memo : undefined;
    if (memo !== undefined) {
      memo.tails.set(row.chain, { seq: row.seq, chainSeq: row.chainSeq, hash: row.hash });
      memo.lastSeq = Math.max(memo.lastSeq ?? 0, row.seq);
    }
    if (changes !== 1) {
      this.#memo = undefined;
      // Only something planted in the database (a trigger ending in RAISE(IGNORE)) does this.
      throw new StoreError(
        "store_corrupt",
        `Database "${this.location}" silently dropped audit record ${row.seq}; it was edited outside libos. Stop using it and investigate`,
      );
    }
  }

  queryAudit(query: AuditQuery): AuditRow[] {
    this.#usable();
    return this.#rows(queryAuditSql(SQLITE_DIALECT, query)).map(auditRow);
  }

  scanAudit(chain: string, afterChainSeq: number, limit: number): AuditRow[] {
    this.#usable();
    return this.#stmt(
      "SELECT * FROM audit WHERE chain = ? AND chain_seq > ? ORDER BY chain_seq LIMIT ?",
    )
      .all(chain, afterChainSeq, clampLimit(limit))
      .map(auditRow);
  }

  auditChains(): string[] {
    this.#usable();
    return this.#stmt("SELECT DISTINCT chain FROM audit ORDER BY chain").all().map((r) =>
      String(r.chain)
    );
  }

  putCapability(row: CapabilityRow): void {
    this.#put(putCapabilitySql(row));
  }

  getCapability(id: string): CapabilityRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM capabilities WHERE id = ?").get(id);
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
    this.#usable();
    const row = this.#stmt("SELECT * FROM human_requests WHERE id = ?").get(id);
    return row === undefined ? undefined : humanRequestRow(row);
  }

  listHumanRequests(query: HumanRequestQuery): HumanRequestRow[] {
    this.#usable();
    return this.#rows(listHumanRequestsSql(SQLITE_DIALECT, query)).map(humanRequestRow);
  }

  putObject(row: ObjectRow): void {
    this.#put(putObjectSql(row));
  }

  getObject(oid: string): ObjectRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM objects WHERE oid = ?").get(oid);
    return row === undefined ? undefined : objectRow(row);
  }

  getObjectByName(namespace: string, name: string): ObjectRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM objects WHERE namespace = ? AND name = ?").get(
      namespace,
      name,
    );
    return row === undefined ? undefined : objectRow(row);
  }

  listObjects(query: ObjectQuery): ObjectRow[] {
    this.#usable();
    return this.#rows(listObjectsSql(SQLITE_DIALECT, query)).map(objectRow);
  }

  deleteObject(oid: string): boolean {
    return this.step(() => {
      this.#write("DELETE FROM object_links WHERE src = ? OR dst = ?", [oid, oid]);
      return this.#write("DELETE FROM objects WHERE oid = ?", [oid]) > 0;
    });
  }

  putLink(row: LinkRow): void {
    this.#put(putLinkSql(row));
  }

  deleteLink(from: string, to: string, rel: string): boolean {
    return this.#write("DELETE FROM object_links WHERE src = ? AND dst = ? AND rel = ?", [
      from,
      to,
      rel,
    ]) > 0;
  }

  listLinks(oid: string, limit: number): LinkRow[] {
    this.#usable();
    return this.#stmt(
      "SELECT * FROM object_links WHERE src = ? OR dst = ? ORDER BY created, src, dst, rel LIMIT ?",
    ).all(oid, oid, clampLimit(limit)).map(linkRow);
  }

  putNamespace(row: NamespaceRow): void {
    this.#put(putNamespaceSql(row));
  }

  listNamespaces(afterKey: string | undefined, limit: number): NamespaceRow[] {
    this.#usable();
    return this.#stmt("SELECT * FROM namespaces WHERE key > ? ORDER BY key LIMIT ?")
      .all(afterKey ?? "", clampLimit(limit))
      .map(namespaceRow);
  }

  namespaceUsage(namespace: string): NamespaceUsage {
    this.#usable();
    // Bytes as stored: length() of a BLOB counts bytes (of TEXT it would count characters).
    const row = this.#stmt(
      `SELECT count(*) AS objects,
         coalesce(sum(length(CAST(data AS BLOB)) + coalesce(length(CAST(payload AS BLOB)), 0)), 0)
           AS bytes
       FROM objects WHERE namespace = ?`,
    ).get(namespace);
    return { objects: Number(row?.objects ?? 0), bytes: Number(row?.bytes ?? 0) };
  }

  putRetained(row: RetainedRow): void {
    this.#put(putRetainedSql(row));
  }

  getRetained(pid: string): RetainedRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM retained WHERE pid = ?").get(pid);
    return row === undefined ? undefined : retainedRow(row);
  }

  listRetained(query: RetainedQuery): RetainedRow[] {
    this.#usable();
    return this.#rows(listRetainedSql(query)).map(retainedRow);
  }

  putImage(row: ImageRow): void {
    this.#put(putImageSql(row));
  }

  getImage(id: string): ImageRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM images WHERE id = ?").get(id);
    return row === undefined ? undefined : imageRow(row);
  }

  listImages(afterId: string | undefined, limit: number): ImageRow[] {
    this.#usable();
    return this.#stmt("SELECT * FROM images WHERE id > ? ORDER BY id LIMIT ?")
      .all(afterId ?? "", clampLimit(limit))
      .map(imageRow);
  }

  getNamespace(key: string): NamespaceRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM namespaces WHERE key = ?").get(key);
    return row === undefined ? undefined : namespaceRow(row);
  }

  countAudit(): number {
    this.#usable();
    return Number(this.#stmt("SELECT count(*) AS n FROM audit").get()?.n ?? 0);
  }

  lastAuditSeq(): number {
    this.#usable();
    const memo = this.#inBatch ? this.#memo : undefined;
    if (memo?.lastSeq !== undefined) return memo.lastSeq;
    const seq = Number(this.#stmt("SELECT coalesce(max(seq), 0) AS n FROM audit").get()?.n ?? 0);
    if (memo !== undefined) memo.lastSeq = seq;
    return seq;
  }

  nextAuditSeq(): number {
    return this.lastAuditSeq() + 1;
  }

  insertEvent(row: Omit<EventRow, "seq">): number {
    if (this.#depth === 0) return this.step(() => this.insertEvent(row));
    this.#usable();
    try {
      const result = this.#stmt(
        "INSERT INTO events (version, session, turn, time, kind, payload) VALUES (?, ?, ?, ?, ?, ?)",
      ).run(row.version, row.session, row.turn, row.time, row.kind, row.payload);
      return Number(result.lastInsertRowid);
    } catch (error) {
      throw this.#fail(error);
    }
  }

  readEvents(read: EventRead): EventRow[] {
    this.#usable();
    return this.#rows(readEventsSql(read)).map(eventRow);
  }

  lastEventSeq(): number {
    this.#usable();
    return Number(this.#stmt("SELECT coalesce(max(seq), 0) AS n FROM events").get()?.n ?? 0);
  }
  putProcess(row: Omit<ProcessRow, "version">): number {
    if (this.#depth === 0) return this.step(() => this.putProcess(row));
    this.#usable();
    try {
      const { sql, params } = putProcessSql(row);
      const written = this.#stmt(sql).get(...params);
      const version = Number(written?.version);
      if (this.#inBatch) this.#memo?.versions.set(row.pid, version);
      return version;
    } catch (error) {
      throw this.#fail(error);
    }
  }

  getProcess(pid: string): ProcessRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM processes WHERE pid = ?").get(pid);
    return row === undefined ? undefined : processRow(row);
  }

  getProcessVersion(pid: string): number | undefined {
    this.#usable();
    const memo = this.#inBatch ? this.#memo : undefined;
    if (memo?.versions.has(pid)) return memo.versions.get(pid);
    const row = this.#stmt("SELECT version FROM processes WHERE pid = ?").get(pid);
    const version = row === undefined ? undefined : Number(row.version);
    memo?.versions.set(pid, version);
    return version;
  }

  listProcesses(query: ProcessQuery): ProcessRow[] {
    this.#usable();
    return this.#rows(listProcessesSql(query)).map(processRow);
  }

  countLiveChildren(parent: string, finished: readonly string[]): number {
    this.#usable();
    const { sql, params } = countLiveChildrenSql(parent, finished);
    return Number(this.#stmt(sql).get(...params)?.n ?? 0);
  }

  putAction(row: ActionRow): void {
    this.#put(putActionSql(row));
  }

  getAction(id: string): ActionRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM actions WHERE id = ?").get(id);
    return row === undefined ? undefined : actionRow(row);
  }

  listActions(query: ActionQuery): ActionRow[] {
    this.#usable();
    return this.#rows(listActionsSql(SQLITE_DIALECT, query)).map(actionRow);
  }
  claimTrees(
    owner: string,
    now: number,
    ttlMs: number,
    limit: number,
    finished: readonly string[],
    options: { readonly lapsedOnly?: boolean } = {},
  ): string[] {
    // One writer at a time: the read and the writes of this step see no other claim between.
    const claimed = this.step(() => {
      const rows = this.#stmt(
        `SELECT pid FROM processes
         WHERE parent IS NULL${andNotIn("status", finished)}
           AND pid NOT IN (SELECT root FROM leases WHERE expires > ? OR owner = ?)${
          options.lapsedOnly ? " AND pid IN (SELECT root FROM leases)" : ""
        }
         ORDER BY updated, pid LIMIT ?`,
      ).all(...finished, now, owner, clampLimit(limit));
      const roots = rows.map((r) => String(r.pid));
      for (const root of roots) {
        this.#write(
          `INSERT INTO leases (root, owner, expires, claimed, generation) VALUES (?, ?, ?, ?, 1)
           ON CONFLICT (root) DO UPDATE SET owner = excluded.owner, expires = excluded.expires,
             claimed = excluded.claimed, generation = leases.generation + 1`,
          [root, owner, now + ttlMs, now],
        );
      }
      return roots;
    });
    this.flush();
    return claimed;
  }

  renewLeases(owner: string, now: number, ttlMs: number): string[] {
    const roots = this.step(() =>
      this.#stmt("UPDATE leases SET expires = ? WHERE owner = ? RETURNING root")
        .all(now + ttlMs, owner)
        .map((r) => String(r.root))
        .sort()
    );
    this.flush();
    return roots;
  }

  releaseLease(owner: string, root: string): boolean {
    const released =
      this.#write("DELETE FROM leases WHERE root = ? AND owner = ?", [root, owner]) > 0;
    this.flush();
    return released;
  }

  fenceCommits(owner: string, roots: () => readonly string[]): () => void {
    this.#usable();
    return this.#fence.set(owner, roots);
  }

  listLeases(limit: number): LeaseRow[] {
    this.#usable();
    return this.#stmt("SELECT * FROM leases ORDER BY root LIMIT ?").all(clampLimit(limit)).map(
      leaseRow,
    );
  }
}
