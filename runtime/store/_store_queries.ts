/**
 * The statements both stores run, built once: each function turns a Store call's arguments into
 * SQL text with `?` placeholders and its parameters. The SQLite store prepares the text as is;
 * the PostgreSQL store numbers the placeholders (`$1, $2, …`) before sending it.
 *
 * Where the two dialects really differ, a {@link StoreDialect} says how: the column that keeps
 * insertion order, and how a prefix is matched. Everything else is the same text for both.
 *
 * @module
 */
import { clampLimit } from "./_store_rows.ts";
import type {
  ActionQuery,
  ActionRow,
  AuditQuery,
  AuditRow,
  CapabilityQuery,
  CapabilityRow,
  EventRead,
  HumanRequestQuery,
  HumanRequestRow,
  ImageRow,
  LinkRow,
  NamespaceRow,
  ObjectQuery,
  ObjectRow,
  ProcessQuery,
  ProcessRow,
  RetainedQuery,
  RetainedRow,
} from "./store.ts";

/** A value bound to a `?` placeholder. */
export type SqlParam = string | number | null;

/** SQL text with `?` placeholders (a whole statement or one condition) and their values, in order. */
export interface Sql {
  readonly sql: string;
  readonly params: readonly SqlParam[];
}

/** What the SQLite and PostgreSQL statements differ in. */
export interface StoreDialect {
  /** The column that orders rows made in the same millisecond as they were inserted. */
  readonly insertionOrder: string;
  /** `column` starts with `prefix`, compared exactly: no wildcards, no case folding. */
  startsWith(column: string, prefix: string): Sql;
  /** The same test, written so that an index on `column` serves it. */
  indexedStartsWith(column: string, prefix: string): Sql;
}

/** SQLite: `rowid`, and prefixes matched without LIKE. */
export const SQLITE_DIALECT: StoreDialect = Object.freeze({
  insertionOrder: "rowid",
  startsWith: (column: string, prefix: string): Sql => ({
    // substr() compares exactly (LIKE would treat % and _ as wildcards, and fold case).
    sql: `substr(${column}, 1, ?) = ?`,
    params: [prefix.length, prefix],
  }),
  indexedStartsWith: (column: string, prefix: string): Sql => ({
    // A range on the indexed column instead of LIKE, which would also treat % and _ specially.
    sql: `${column} >= ? AND ${column} < ?`,
    params: [prefix, prefix + "\u{10FFFF}"],
  }),
});

/** PostgreSQL: the `ord` column (it has no rowid), and `starts_with()`. */
export const POSTGRES_DIALECT: StoreDialect = Object.freeze({
  insertionOrder: "ord",
  startsWith: (column: string, prefix: string): Sql => ({
    sql: `starts_with(${column}, ?)`,
    params: [prefix],
  }),
  indexedStartsWith: (column: string, prefix: string): Sql => ({
    sql: `starts_with(${column}, ?)`,
    params: [prefix],
  }),
});

/** `?, ?, …`: one placeholder for each value. */
export function placeholders(values: readonly unknown[]): string {
  return values.map(() => "?").join(", ");
}

/** ` AND column NOT IN (?, …)`, or nothing for no values (NOT IN () is not SQL). */
export function andNotIn(column: string, values: readonly unknown[]): string {
  return values.length ? ` AND ${column} NOT IN (${placeholders(values)})` : "";
}

/** The conditions of one SELECT and their parameters, gathered in order. */
class Filter {
  readonly #clauses: string[] = [];
  readonly #params: SqlParam[] = [];

  /** Adds a condition with the values of its placeholders. */
  add(clause: string, ...params: readonly SqlParam[]): void {
    this.#clauses.push(clause);
    this.#params.push(...params);
  }

  /** Adds a condition with one placeholder, when its value is given. */
  given(clause: string, value: SqlParam | undefined): void {
    if (value !== undefined) this.add(clause, value);
  }

  /** Adds `column IN (…)`; false when `values` is empty, so no row can match. */
  in(column: string, values: readonly string[]): boolean {
    if (values.length === 0) return false;
    this.add(`${column} IN (${placeholders(values)})`, ...values);
    return true;
  }

  /** Adds a dialect's condition. */
  fragment(condition: Sql): void {
    this.add(condition.sql, ...condition.params);
  }

  /** `SELECT * FROM table [WHERE …] ORDER BY order LIMIT ?`, the limit clamped. */
  select(table: string, order: string, limit: number): Sql {
    const where = this.#clauses.length ? ` WHERE ${this.#clauses.join(" AND ")}` : "";
    return {
      sql: `SELECT * FROM ${table}${where} ORDER BY ${order} LIMIT ?`,
      params: [...this.#params, clampLimit(limit)],
    };
  }
}

/** For `Store.queryAudit()`: the filtered audit records, by `seq` either way. */
export function queryAuditSql(dialect: StoreDialect, query: AuditQuery): Sql {
  const filter = new Filter();
  const prefix = (column: string, value: string | undefined) => {
    if (value === undefined || value === "") return;
    filter.fragment(dialect.indexedStartsWith(column, value));
  };
  filter.given("pid = ?", query.pid);
  filter.given("actor = ?", query.actor);
  filter.given("action = ?", query.action);
  prefix("action", query.actionPrefix);
  filter.given("resource = ?", query.resource);
  prefix("resource", query.resourcePrefix);
  filter.given("decision = ?", query.decision);
  filter.given("correlation = ?", query.correlation);
  filter.given("time >= ?", query.since);
  filter.given("time < ?", query.until);
  filter.given("seq > ?", query.afterSeq);
  filter.given("seq < ?", query.beforeSeq);
  return filter.select("audit", `seq ${query.order === "desc" ? "DESC" : "ASC"}`, query.limit);
}

/** For `Store.readEvents()`, or undefined when no event can match (no kinds). */
export function readEventsSql(read: EventRead): Sql | undefined {
  const filter = new Filter();
  filter.add("seq > ?", read.after);
  filter.given("seq <= ?", read.upTo);
  filter.given("session = ?", read.session);
  if (read.kinds !== undefined && !filter.in("kind", read.kinds)) return undefined;
  return filter.select("events", "seq", read.limit);
}

/** For `Store.listProcesses()`, or undefined when no process can match (no statuses). */
export function listProcessesSql(query: ProcessQuery): Sql | undefined {
  const filter = new Filter();
  if (query.statuses !== undefined && !filter.in("status", query.statuses)) return undefined;
  filter.given("parent = ?", query.parent);
  filter.given("pid > ?", query.afterPid);
  return filter.select("processes", "pid", query.limit);
}

/** For `Store.countLiveChildren()`: a count as `n`. */
export function countLiveChildrenSql(parent: string, finished: readonly string[]): Sql {
  return {
    sql: `SELECT count(*) AS n FROM processes WHERE parent = ?${andNotIn("status", finished)}`,
    params: [parent, ...finished],
  };
}

/** For `Store.listActions()`, oldest first. */
export function listActionsSql(dialect: StoreDialect, query: ActionQuery): Sql {
  const filter = new Filter();
  filter.given("status = ?", query.status);
  filter.given("pid = ?", query.pid);
  if (query.unreported) filter.add("reported = 0");
  return filter.select("actions", `created, ${dialect.insertionOrder}`, query.limit);
}

/**
 * For `Store.listCapabilities()`.
 * @throws {TypeError} without a subject or derivedFrom filter (it would list the whole table).
 */
export function listCapabilitiesSql(query: CapabilityQuery): Sql {
  if (query.subject === undefined && query.derivedFrom === undefined) {
    throw new TypeError("listCapabilities() needs a subject or a derivedFrom filter");
  }
  const filter = new Filter();
  filter.given("subject = ?", query.subject);
  filter.given("derived_from = ?", query.derivedFrom);
  filter.given("id > ?", query.afterId);
  return filter.select("capabilities", "id", query.limit);
}

/** For `Store.listHumanRequests()`, oldest first; undefined when none can match (no statuses). */
export function listHumanRequestsSql(
  dialect: StoreDialect,
  query: HumanRequestQuery,
): Sql | undefined {
  const filter = new Filter();
  if (query.statuses !== undefined && !filter.in("status", query.statuses)) return undefined;
  filter.given("pid = ?", query.pid);
  filter.given("expires IS NOT NULL AND expires < ?", query.expiringBefore);
  return filter.select("human_requests", `created, ${dialect.insertionOrder}`, query.limit);
}

/** For `Store.listObjects()`, by oid; undefined when none can match (no namespaces). */
export function listObjectsSql(dialect: StoreDialect, query: ObjectQuery): Sql | undefined {
  const filter = new Filter();
  if (query.namespaces !== undefined && !filter.in("namespace", query.namespaces)) {
    return undefined;
  }
  filter.given("type = ?", query.type);
  filter.given("creator = ?", query.creator);
  if (query.namePrefix !== undefined) {
    filter.fragment(dialect.startsWith("name", query.namePrefix));
  }
  filter.given("oid > ?", query.afterOid);
  return filter.select("objects", "oid", query.limit);
}

/** For `Store.listRetained()`, by `since` then pid. */
export function listRetainedSql(query: RetainedQuery): Sql {
  const filter = new Filter();
  if (query.removed !== undefined) {
    filter.add(query.removed ? "removed IS NOT NULL" : "removed IS NULL");
  }
  filter.given("since < ?", query.before);
  if (query.after !== undefined) {
    filter.add(
      "(since > ? OR (since = ? AND pid > ?))",
      query.after.since,
      query.after.since,
      query.after.pid,
    );
  }
  return filter.select("retained", "since, pid", query.limit);
}

/** For `Store.setMeta()`. */
export function setMetaSql(key: string, value: string): Sql {
  return {
    sql:
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    params: [key, value],
  };
}

/** For `Store.insertAudit()`: a plain INSERT, so a second record at one chain position fails. */
export function insertAuditSql(row: AuditRow): Sql {
  return {
    sql:
      `INSERT INTO audit (seq, chain, chain_seq, time, actor, pid, action, resource, decision, authority,
         input_digest, correlation, parent, detail, prev, hash)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    params: [
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
  };
}

/** For `Store.putProcess()`: returns the row's new `version` (1, or one more than before). */
export function putProcessSql(row: Omit<ProcessRow, "version">): Sql {
  return {
    sql: `INSERT INTO processes (pid, parent, status, data, created, updated, version)
       VALUES (?, ?, ?, ?, ?, ?, 1)
       ON CONFLICT (pid) DO UPDATE SET parent = excluded.parent, status = excluded.status,
         data = excluded.data, updated = excluded.updated, version = processes.version + 1
       RETURNING version`,
    params: [row.pid, row.parent, row.status, row.data, row.created, row.updated],
  };
}

/** For `Store.putAction()`: a replaced action keeps its pid, kind, digest and request. */
export function putActionSql(row: ActionRow): Sql {
  return {
    sql:
      `INSERT INTO actions (id, pid, kind, digest, status, request, outcome, reported, created, updated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, outcome = excluded.outcome,
         reported = excluded.reported, updated = excluded.updated`,
    params: [
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
  };
}

/** For `Store.putCapability()`: a replaced capability changes only `revoked` and `data`. */
export function putCapabilitySql(row: CapabilityRow): Sql {
  return {
    sql:
      `INSERT INTO capabilities (id, subject, derived_from, revoked, data, created) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET revoked = excluded.revoked, data = excluded.data`,
    params: [row.id, row.subject, row.derivedFrom, row.revoked, row.data, row.created],
  };
}

/** For `Store.putHumanRequest()`: a replaced request changes `status`, `data` and `expires`. */
export function putHumanRequestSql(row: HumanRequestRow): Sql {
  return {
    sql:
      `INSERT INTO human_requests (id, pid, kind, status, data, created, expires) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data, expires = excluded.expires`,
    params: [row.id, row.pid, row.kind, row.status, row.data, row.created, row.expires],
  };
}

/** For `Store.putObject()`: a replaced object keeps its creator and `created`. */
export function putObjectSql(row: ObjectRow): Sql {
  return {
    sql:
      `INSERT INTO objects (oid, namespace, name, type, creator, data, payload, volatile, created, updated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (oid) DO UPDATE SET namespace = excluded.namespace, name = excluded.name,
         type = excluded.type, data = excluded.data, payload = excluded.payload,
         volatile = excluded.volatile, updated = excluded.updated`,
    params: [
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
  };
}

/** For `Store.putLink()`: an existing link stays as it was. */
export function putLinkSql(row: LinkRow): Sql {
  return {
    sql: `INSERT INTO object_links (src, dst, rel, creator, created) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (src, dst, rel) DO NOTHING`,
    params: [row.from, row.to, row.rel, row.creator, row.created],
  };
}

/** For `Store.putNamespace()`: an existing namespace stays as it was. */
export function putNamespaceSql(row: NamespaceRow): Sql {
  return {
    sql:
      "INSERT INTO namespaces (key, creator, created) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
    params: [row.key, row.creator, row.created],
  };
}

/** For `Store.putRetained()`. */
export function putRetainedSql(row: RetainedRow): Sql {
  return {
    sql:
      `INSERT INTO retained (pid, namespace, since, objects, bytes, removed) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (pid) DO UPDATE SET namespace = excluded.namespace, since = excluded.since,
         objects = excluded.objects, bytes = excluded.bytes, removed = excluded.removed`,
    params: [row.pid, row.namespace, row.since, row.objects, row.bytes, row.removed],
  };
}

/** For `Store.putImage()`: a replaced image keeps its `created`. */
export function putImageSql(row: ImageRow): Sql {
  return {
    sql: `INSERT INTO images (id, data, loader, created, updated) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET data = excluded.data, loader = excluded.loader,
         updated = excluded.updated`,
    params: [row.id, row.data, row.loader, row.created, row.updated],
  };
}
