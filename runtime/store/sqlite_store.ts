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
} from "./_store_rows.ts";
import { StoreError } from "../base/errors.ts";
import { MEMORY_DB } from "../base/state_paths.ts";
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

function isThenable(value: unknown): boolean {
  return (typeof value === "object" || typeof value === "function") && value !== null &&
    typeof (value as { then?: unknown }).then === "function";
}

/** See {@link SqliteStore}'s `#memo`. */
interface TransactionMemo {
  readonly tails: Map<string, AuditTail | undefined>;
  lastSeq?: number;
  dataVersion?: number;
  readonly versions: Map<string, number | undefined>;
}

function newMemo(): TransactionMemo {
  return { tails: new Map(), versions: new Map() };
}

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
  readonly #listeners = new Set<() => void>();
  #inBatch = false;
  #pendingSteps = 0;
  #depth = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #failure: StoreError | undefined;
  #deferred: unknown;
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
      if (isThenable(result)) {
        Promise.resolve(result).catch(() => {});
        throw new TypeError(
          "Store.step() callbacks must be synchronous: a step may not span an await (DESIGN §6); load and record in the step, do the I/O outside it",
        );
      }
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
    let listenerError: unknown;
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch (error) {
        listenerError ??= error;
      }
    }
    if (listenerError !== undefined) {
      throw new StoreError(
        "store_listener_failed",
        `The commit to "${this.location}" succeeded, but a commit listener failed (${
          listenerError instanceof Error ? listenerError.message : String(listenerError)
        }); the steps are saved, do not repeat them`,
        { cause: listenerError },
      );
    }
  }

  onCommit(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
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

  getMeta(key: string): string | undefined {
    this.#usable();
    const row = this.#stmt("SELECT value FROM meta WHERE key = ?").get(key);
    return row === undefined ? undefined : String(row.value);
  }

  setMeta(key: string, value: string): void {
    this.#write(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      [key, value],
    );
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
    const changes = this.#write(
      `INSERT INTO audit (seq, chain, chain_seq, time, actor, pid, action, resource, decision, authority,
         input_digest, correlation, parent, detail, prev, hash)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        row.seq,
        row.chain,
        row.chainSeq,
        row.time,
        row.actor,
        row.pid,
        row.action,
        row.resource,
        row.decision,
        row.authority,
        row.inputDigest,
        row.correlation,
        row.parent,
        row.detail,
        row.prev,
        row.hash,
      ],
    );
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
    const where: string[] = [];
    const params: SQLInputValue[] = [];
    const equal = (column: string, value: string | undefined) => {
      if (value === undefined) return;
      where.push(`${column} = ?`);
      params.push(value);
    };
    const prefix = (column: string, value: string | undefined) => {
      if (value === undefined || value === "") return;
      // A range on the indexed column instead of LIKE, which would also treat % and _ specially.
      where.push(`${column} >= ? AND ${column} < ?`);
      params.push(value, value + "\u{10FFFF}");
    };
    equal("pid", query.pid);
    equal("actor", query.actor);
    equal("action", query.action);
    prefix("action", query.actionPrefix);
    equal("resource", query.resource);
    prefix("resource", query.resourcePrefix);
    equal("decision", query.decision);
    equal("correlation", query.correlation);
    if (query.since !== undefined) {
      where.push("time >= ?");
      params.push(query.since);
    }
    if (query.until !== undefined) {
      where.push("time < ?");
      params.push(query.until);
    }
    if (query.afterSeq !== undefined) {
      where.push("seq > ?");
      params.push(query.afterSeq);
    }
    if (query.beforeSeq !== undefined) {
      where.push("seq < ?");
      params.push(query.beforeSeq);
    }
    const limit = clampLimit(query.limit);
    const sql = `SELECT * FROM audit ${
      where.length ? `WHERE ${where.join(" AND ")}` : ""
    } ORDER BY seq ${query.order === "desc" ? "DESC" : "ASC"} LIMIT ?`;
    return this.#stmt(sql).all(...params, limit).map(auditRow);
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
    this.#write(
      `INSERT INTO capabilities (id, subject, derived_from, revoked, data, created) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET revoked = excluded.revoked, data = excluded.data`,
      [row.id, row.subject, row.derivedFrom, row.revoked, row.data, row.created],
    );
  }

  getCapability(id: string): CapabilityRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM capabilities WHERE id = ?").get(id);
    return row === undefined ? undefined : capabilityRow(row);
  }

  listCapabilities(query: CapabilityQuery): CapabilityRow[] {
    this.#usable();
    if (query.subject === undefined && query.derivedFrom === undefined) {
      throw new TypeError("listCapabilities() needs a subject or a derivedFrom filter");
    }
    const where: string[] = [];
    const params: SQLInputValue[] = [];
    if (query.subject !== undefined) {
      where.push("subject = ?");
      params.push(query.subject);
    }
    if (query.derivedFrom !== undefined) {
      where.push("derived_from = ?");
      params.push(query.derivedFrom);
    }
    if (query.afterId !== undefined) {
      where.push("id > ?");
      params.push(query.afterId);
    }
    return this.#stmt(`SELECT * FROM capabilities WHERE ${where.join(" AND ")} ORDER BY id LIMIT ?`)
      .all(...params, clampLimit(query.limit))
      .map(capabilityRow);
  }

  putHumanRequest(row: HumanRequestRow): void {
    this.#write(
      `INSERT INTO human_requests (id, pid, kind, status, data, created, expires) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data, expires = excluded.expires`,
      [row.id, row.pid, row.kind, row.status, row.data, row.created, row.expires],
    );
  }

  getHumanRequest(id: string): HumanRequestRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM human_requests WHERE id = ?").get(id);
    return row === undefined ? undefined : humanRequestRow(row);
  }

  listHumanRequests(query: HumanRequestQuery): HumanRequestRow[] {
    this.#usable();
    const where: string[] = [];
    const params: SQLInputValue[] = [];
    if (query.statuses !== undefined) {
      if (query.statuses.length === 0) return [];
      where.push(`status IN (${query.statuses.map(() => "?").join(", ")})`);
      params.push(...query.statuses);
    }
    if (query.pid !== undefined) {
      where.push("pid = ?");
      params.push(query.pid);
    }
    if (query.expiringBefore !== undefined) {
      where.push("expires IS NOT NULL AND expires < ?");
      params.push(query.expiringBefore);
    }
    const sql = `SELECT * FROM human_requests ${
      where.length ? `WHERE ${where.join(" AND ")}` : ""
    } ORDER BY created, rowid LIMIT ?`;
    return this.#stmt(sql).all(...params, clampLimit(query.limit)).map(humanRequestRow);
  }

  putObject(row: ObjectRow): void {
    this.#write(
      `INSERT INTO objects (oid, namespace, name, type, creator, data, payload, volatile, created, updated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (oid) DO UPDATE SET namespace = excluded.namespace, name = excluded.name,
         type = excluded.type, data = excluded.data, payload = excluded.payload,
         volatile = excluded.volatile, updated = excluded.updated`,
      [
        row.oid,
        row.namespace,
        row.name,
        row.type,
        row.creator,
        row.data,
        row.payload,
        row.volatile ? 1 : 0,
        row.created,
        row.updated,
      ],
    );
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
    const where: string[] = [];
    const params: SQLInputValue[] = [];
    if (query.namespaces !== undefined) {
      if (query.namespaces.length === 0) return [];
      where.push(`namespace IN (${query.namespaces.map(() => "?").join(", ")})`);
      params.push(...query.namespaces);
    }
    for (const [column, value] of [["type", query.type], ["creator", query.creator]] as const) {
      if (value === undefined) continue;
      where.push(`${column} = ?`);
      params.push(value);
    }
    if (query.namePrefix !== undefined) {
      // substr() compares exactly (LIKE would treat % and _ as wildcards, and fold case).
      where.push("substr(name, 1, ?) = ?");
      params.push(query.namePrefix.length, query.namePrefix);
    }
    if (query.afterOid !== undefined) {
      where.push("oid > ?");
      params.push(query.afterOid);
    }
    const sql = `SELECT * FROM objects ${
      where.length ? `WHERE ${where.join(" AND ")}` : ""
    } ORDER BY oid LIMIT ?`;
    return this.#stmt(sql).all(...params, clampLimit(query.limit)).map(objectRow);
  }

  deleteObject(oid: string): boolean {
    return this.step(() => {
      this.#write("DELETE FROM object_links WHERE src = ? OR dst = ?", [oid, oid]);
      return this.#write("DELETE FROM objects WHERE oid = ?", [oid]) > 0;
    });
  }

  putLink(row: LinkRow): void {
    this.#write(
      `INSERT INTO object_links (src, dst, rel, creator, created) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (src, dst, rel) DO NOTHING`,
      [row.from, row.to, row.rel, row.creator, row.created],
    );
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
    this.#write(
      "INSERT INTO namespaces (key, creator, created) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
      [row.key, row.creator, row.created],
    );
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
    this.#write(
      `INSERT INTO retained (pid, namespace, since, objects, bytes, removed) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (pid) DO UPDATE SET namespace = excluded.namespace, since = excluded.since,
         objects = excluded.objects, bytes = excluded.bytes, removed = excluded.removed`,
      [row.pid, row.namespace, row.since, row.objects, row.bytes, row.removed],
    );
  }

  getRetained(pid: string): RetainedRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM retained WHERE pid = ?").get(pid);
    return row === undefined ? undefined : retainedRow(row);
  }

  listRetained(query: RetainedQuery): RetainedRow[] {
    this.#usable();
    const where: string[] = [];
    const params: SQLInputValue[] = [];
    if (query.removed !== undefined) {
      where.push(query.removed ? "removed IS NOT NULL" : "removed IS NULL");
    }
    if (query.before !== undefined) {
      where.push("since < ?");
      params.push(query.before);
    }
    if (query.after !== undefined) {
      where.push("(since > ? OR (since = ? AND pid > ?))");
      params.push(query.after.since, query.after.since, query.after.pid);
    }
    const sql = `SELECT * FROM retained ${
      where.length ? `WHERE ${where.join(" AND ")}` : ""
    } ORDER BY since, pid LIMIT ?`;
    return this.#stmt(sql).all(...params, clampLimit(query.limit)).map(retainedRow);
  }

  putImage(row: ImageRow): void {
    this.#write(
      `INSERT INTO images (id, data, loader, created, updated) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET data = excluded.data, loader = excluded.loader,
         updated = excluded.updated`,
      [row.id, row.data, row.loader, row.created, row.updated],
    );
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
    const where = ["seq > ?"];
    const params: SQLInputValue[] = [read.after];
    if (read.upTo !== undefined) {
      where.push("seq <= ?");
      params.push(read.upTo);
    }
    if (read.session !== undefined) {
      where.push("session = ?");
      params.push(read.session);
    }
    if (read.kinds !== undefined) {
      if (read.kinds.length === 0) return [];
      where.push(`kind IN (${read.kinds.map(() => "?").join(", ")})`);
      params.push(...read.kinds);
    }
    const limit = clampLimit(read.limit);
    return this.#stmt(`SELECT * FROM events WHERE ${where.join(" AND ")} ORDER BY seq LIMIT ?`)
      .all(...params, limit)
      .map(eventRow);
  }

  lastEventSeq(): number {
    this.#usable();
    return Number(this.#stmt("SELECT coalesce(max(seq), 0) AS n FROM events").get()?.n ?? 0);
  }
  putProcess(row: Omit<ProcessRow, "version">): number {
    if (this.#depth === 0) return this.step(() => this.putProcess(row));
    this.#usable();
    try {
      const written = this.#stmt(
        `INSERT INTO processes (pid, parent, status, data, created, updated, version)
         VALUES (?, ?, ?, ?, ?, ?, 1)
         ON CONFLICT (pid) DO UPDATE SET parent = excluded.parent, status = excluded.status,
           data = excluded.data, updated = excluded.updated, version = processes.version + 1
         RETURNING version`,
      ).get(row.pid, row.parent, row.status, row.data, row.created, row.updated);
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
    const where: string[] = [];
    const params: SQLInputValue[] = [];
    if (query.statuses !== undefined) {
      if (query.statuses.length === 0) return [];
      where.push(`status IN (${query.statuses.map(() => "?").join(", ")})`);
      params.push(...query.statuses);
    }
    if (query.parent !== undefined) {
      where.push("parent = ?");
      params.push(query.parent);
    }
    if (query.afterPid !== undefined) {
      where.push("pid > ?");
      params.push(query.afterPid);
    }
    const sql = `SELECT * FROM processes ${
      where.length ? `WHERE ${where.join(" AND ")}` : ""
    } ORDER BY pid LIMIT ?`;
    return this.#stmt(sql).all(...params, clampLimit(query.limit)).map(processRow);
  }

  countLiveChildren(parent: string, finished: readonly string[]): number {
    this.#usable();
    const sql = `SELECT count(*) AS n FROM processes WHERE parent = ?${
      finished.length ? ` AND status NOT IN (${finished.map(() => "?").join(", ")})` : ""
    }`;
    return Number(this.#stmt(sql).get(parent, ...finished)?.n ?? 0);
  }

  putAction(row: ActionRow): void {
    this.#write(
      `INSERT INTO actions (id, pid, kind, digest, status, request, outcome, reported, created, updated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, outcome = excluded.outcome,
         reported = excluded.reported, updated = excluded.updated`,
      [
        row.id,
        row.pid,
        row.kind,
        row.digest,
        row.status,
        row.request,
        row.outcome,
        row.reported ? 1 : 0,
        row.created,
        row.updated,
      ],
    );
  }

  getAction(id: string): ActionRow | undefined {
    this.#usable();
    const row = this.#stmt("SELECT * FROM actions WHERE id = ?").get(id);
    return row === undefined ? undefined : actionRow(row);
  }

  listActions(query: ActionQuery): ActionRow[] {
    this.#usable();
    const where: string[] = [];
    const params: SQLInputValue[] = [];
    if (query.status !== undefined) {
      where.push("status = ?");
      params.push(query.status);
    }
    if (query.pid !== undefined) {
      where.push("pid = ?");
      params.push(query.pid);
    }
    if (query.unreported) where.push("reported = 0");
    const sql = `SELECT * FROM actions ${
      where.length ? `WHERE ${where.join(" AND ")}` : ""
    } ORDER BY created, rowid LIMIT ?`;
    return this.#stmt(sql).all(...params, clampLimit(query.limit)).map(actionRow);
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
         WHERE parent IS NULL${
          finished.length ? ` AND status NOT IN (${finished.map(() => "?").join(", ")})` : ""
        }
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

  listLeases(limit: number): LeaseRow[] {
    this.#usable();
    return this.#stmt("SELECT * FROM leases ORDER BY root LIMIT ?").all(clampLimit(limit)).map(
      leaseRow,
    );
  }
}
