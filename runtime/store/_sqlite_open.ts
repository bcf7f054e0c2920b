/**
 * Opening a SQLite database without ever modifying a file it will refuse: the header is read as
 * plain bytes, the file is inspected through a read-only connection, and only a libos database at
 * a known schema version (or an empty file) is opened for writing and migrated. Also maps SQLite
 * failures to {@link StoreError}s whose messages say what to do.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { APPLICATION_ID, type Migration } from "./_schema.ts";
import { StoreError, type StoreErrorCode } from "../base/errors.ts";
import { MEMORY_DB } from "../base/state_paths.ts";

/** What {@link openConnection} needs. */
export interface ConnectionOptions {
  readonly path: string;
  readonly busyTimeoutMs: number;
  readonly synchronous: "NORMAL" | "FULL";
  readonly migrations: readonly Migration[];
  /** Open an existing, up-to-date database without writing anything (no WAL switch, no migration). */
  readonly readOnly?: boolean;
}

/** An open, migrated writer connection. */
export interface Connection {
  readonly db: DatabaseSync;
  readonly version: number;
}

const SQLITE_MAGIC = "SQLite format 3\0";

interface SqliteFailure {
  readonly errcode?: unknown;
  readonly errstr?: unknown;
  readonly message?: unknown;
}

/** SQLite's own messages, for errors `node:sqlite` raises without an `errcode` (from `exec`). */
const MESSAGE_CODES: readonly [RegExp, number][] = [
  [/database (table )?is locked|database is busy/i, 5],
  [/database disk image is malformed|corrupt/i, 11],
  [/file is not a database/i, 26],
  [/database or disk is full/i, 13],
  [/constraint failed/i, 19],
];

/** The primary SQLite result code of a `node:sqlite` error, or undefined for other errors. */
export function sqliteCode(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const { errcode, code, message } = error as SqliteFailure & { code?: unknown };
  if (typeof errcode === "number") return errcode & 0xff;
  if (code !== "ERR_SQLITE_ERROR" || typeof message !== "string") return undefined;
  return MESSAGE_CODES.find(([pattern]) => pattern.test(message))?.[1] ?? 1;
}

/** The most specific text a failure carries. */
export function describe(error: unknown): string {
  if (typeof error === "object" && error !== null) {
    const { errstr, message } = error as SqliteFailure;
    if (typeof message === "string" && message) return message;
    if (typeof errstr === "string") return errstr;
  }
  return String(error);
}

/** Turns a SQLite failure into a {@link StoreError} whose message says what to do. */
export function storeFailure(error: unknown, path: string, busyTimeoutMs: number): StoreError {
  if (error instanceof StoreError) return error;
  const code = sqliteCode(error);
  const why = describe(error);
  const make = (c: StoreErrorCode, message: string) => new StoreError(c, message, { cause: error });
  switch (code) {
    case 5: // SQLITE_BUSY
    case 6: // SQLITE_LOCKED
      return make(
        "store_locked",
        `Database "${path}" is locked by another connection (waited ${busyTimeoutMs} ms); close the other libos or sqlite3 session using it, then retry`,
      );
    case 11: // SQLITE_CORRUPT
      return make(
        "store_corrupt",
        `Database "${path}" is corrupt (${why}); it was not modified. Move it aside and run "libos init", or restore it from a backup`,
      );
    case 26: // SQLITE_NOTADB
      return make(
        "store_foreign",
        `File "${path}" is not a libos database (${why}); it was not modified. Pass another --db`,
      );
    case 13: // SQLITE_FULL
      return make(
        "store_io",
        `Database "${path}" could not be written: the disk is full (${why}); free some space, then retry`,
      );
    case 19: // SQLITE_CONSTRAINT
      return make(
        "store_conflict",
        `A write to database "${path}" conflicted with stored data (${why})`,
      );
    default:
      return make(
        "store_io",
        `Database "${path}" could not be used (${why}); check the disk and the file's permissions`,
      );
  }
}

interface HeaderFacts {
  readonly empty: boolean;
}

/** Reads a file's SQLite header as plain bytes, refusing anything that is not SQLite. */
function readHeader(path: string): HeaderFacts {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch (error) {
    throw new StoreError("store_io", `Cannot read database "${path}": ${describe(error)}`, {
      cause: error,
    });
  }
  if (!info.isFile) {
    throw new StoreError(
      "store_foreign",
      `"${path}" is not a regular file; it was not modified. Pass another --db`,
    );
  }
  if (info.size === 0) return { empty: true };
  const header = new Uint8Array(100);
  let read = 0;
  const file = Deno.openSync(path, { read: true });
  try {
    while (read < header.length) {
      const n = file.readSync(header.subarray(read));
      if (n === null) break;
      read += n;
    }
  } finally {
    file.close();
  }
  const magic = new TextDecoder().decode(header.subarray(0, 16));
  if (read < 100 || magic !== SQLITE_MAGIC) {
    throw new StoreError(
      "store_foreign",
      `File "${path}" is not a libos database (it is not a SQLite file); it was not modified. Pass another --db`,
    );
  }
  return { empty: false };
}

/** The schema objects (type, name, table, SQL) of a database, in a stable order. */
function schemaOf(db: DatabaseSync): string[] {
  return db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name").all()
    .map((r) => JSON.stringify([r.type, r.name, r.tbl_name, r.sql]));
}

/** The schema a database at `version` must have: the migrations up to it, applied to a scratch database. */
function expectedSchema(migrations: readonly Migration[], version: number): string[] {
  const scratch = new DatabaseSync(":memory:");
  try {
    for (const migration of migrations) {
      if (migration.version <= version) scratch.exec(migration.sql);
    }
    return schemaOf(scratch);
  } finally {
    scratch.close();
  }
}

/**
 * Refuses a database whose schema is not exactly what libos's migrations create at its version:
 * a planted trigger (one that silently drops audit records, say), a view, a dropped or altered
 * table. `sqlite_schema` keeps each object's SQL text, so the comparison is exact.
 */
function checkSchema(
  db: DatabaseSync,
  path: string,
  migrations: readonly Migration[],
  version: number,
): void {
  const actual = schemaOf(db);
  const expected = expectedSchema(migrations, version);
  const extra = actual.filter((o) => !expected.includes(o)).map((o) => JSON.parse(o) as string[]);
  const missing = expected.filter((o) => !actual.includes(o)).map((o) => JSON.parse(o) as string[]);
  if (extra.length === 0 && missing.length === 0) return;
  const name = (o: string[]) => `${o[0]} ${o[1]}`;
  throw new StoreError(
    "store_corrupt",
    `Database "${path}" does not have the schema libos ${
      version === 0 ? "expects of an empty database" : `v${version} creates`
    } (${
      [
        ...extra.map((o) => `unexpected or altered ${name(o)}`),
        ...missing.map((o) => `missing ${name(o)}`),
      ].slice(0, 3).join("; ")
    }); it was not modified. Move it aside and run "libos init", or restore it from a backup`,
  );
}

/** What the read-only inspection found. */
interface Inspection {
  readonly version: number;
}

/**
 * Looks at an existing database through a read-only connection and refuses what it cannot use:
 * another application's database, a newer schema, or a schema that is not exactly libos's own.
 */
function inspect(
  path: string,
  busyTimeoutMs: number,
  migrations: readonly Migration[],
): Inspection {
  const latest = migrations.length;
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(path, { readOnly: true, timeout: busyTimeoutMs });
    // The constructor's timeout is not applied to read-only connections here; the pragma is.
    db.exec(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}`);
    const appId = Number(db.prepare("PRAGMA application_id").get()?.application_id ?? 0);
    const version = Number(db.prepare("PRAGMA user_version").get()?.user_version ?? 0);
    const objects = Number(db.prepare("SELECT count(*) AS n FROM sqlite_schema").get()?.n ?? 0);
    if (appId === APPLICATION_ID) {
      if (version > latest) {
        throw new StoreError(
          "store_newer_schema",
          `Database "${path}" has schema version ${version}, newer than this libos understands (${latest}); it was not modified. Upgrade libos or pass another --db`,
        );
      }
      checkSchema(db, path, migrations, version);
      return { version };
    }
    if (appId === 0 && version === 0 && objects === 0) return { version: 0 };
    throw new StoreError(
      "store_foreign",
      `File "${path}" is a SQLite database of another application (application_id ${appId}, ${objects} schema objects); it was not modified. Pass another --db`,
    );
  } catch (error) {
    throw storeFailure(error, path, busyTimeoutMs);
  } finally {
    db?.close();
  }
}

/** Opens an up-to-date database read-only: nothing is switched, migrated or written. */
function openReadOnly(options: ConnectionOptions): Connection {
  const { path, busyTimeoutMs, migrations } = options;
  if (path === MEMORY_DB) {
    throw new TypeError("A read-only store needs a database file, not :memory:");
  }
  if (readHeader(path).empty) {
    throw new StoreError("store_outdated", `Database "${path}" is empty; run "libos init" first`);
  }
  const { version } = inspect(path, busyTimeoutMs, migrations);
  if (version < migrations.length) {
    throw new StoreError(
      "store_outdated",
      `Database "${path}" has schema version ${version}, older than this libos's ${migrations.length}; run "libos init" to upgrade it (read-only commands do not write)`,
    );
  }
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(path, { readOnly: true, timeout: busyTimeoutMs });
    db.exec(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}`);
    return { db, version };
  } catch (error) {
    db?.close();
    throw storeFailure(error, path, busyTimeoutMs);
  }
}

/**
 * Opens (creating with mode 0600 when missing) and migrates a database.
 * @throws {StoreError} `store_corrupt`, `store_locked`, `store_newer_schema`, `store_foreign` or
 *   `store_io`; in each case the file is left as it was.
 */
export function openConnection(options: ConnectionOptions): Connection {
  if (options.readOnly) return openReadOnly(options);
  const busyTimeoutMs = options.busyTimeoutMs;
  const migrations = options.migrations;
  const path = options.path;
  const memory = path === MEMORY_DB;
  if (!memory) {
    let exists = true;
    try {
      Deno.lstatSync(path);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) {
        throw storeFailure(error, path, busyTimeoutMs);
      }
      exists = false;
    }
    if (!exists) {
      try {
        Deno.openSync(path, { write: true, createNew: true, mode: 0o600 }).close();
      } catch (error) {
        throw new StoreError("store_io", `Cannot create database "${path}": ${describe(error)}`, {
          cause: error,
        });
      }
    } else if (!readHeader(path).empty) {
      inspect(path, busyTimeoutMs, migrations);
    }
  }
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(path, { timeout: busyTimeoutMs });
    db.exec(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}`);
    if (!memory) {
      const mode = db.prepare("PRAGMA journal_mode = WAL").get()?.journal_mode;
      if (mode !== "wal") {
        throw new StoreError(
          "store_io",
          `Database "${path}" cannot use WAL mode (got ${
            String(mode)
          }); put it on a local filesystem`,
        );
      }
    }
    db.exec(`PRAGMA synchronous = ${options.synchronous}`);
    db.exec("PRAGMA foreign_keys = ON");
    // Defensive mode stops this connection from editing the schema behind SQLite's back.
    (db as unknown as { enableDefensive?: (on: boolean) => void }).enableDefensive?.(true);
    return { db, version: migrate(db, path, migrations) };
  } catch (error) {
    db?.close();
    throw storeFailure(error, path, busyTimeoutMs);
  }
}

function migrate(db: DatabaseSync, path: string, migrations: readonly Migration[]): number {
  const latest = migrations.length;
  db.exec("BEGIN IMMEDIATE");
  try {
    const appId = Number(db.prepare("PRAGMA application_id").get()?.application_id ?? 0);
    const current = Number(db.prepare("PRAGMA user_version").get()?.user_version ?? 0);
    if (appId !== APPLICATION_ID && (appId !== 0 || current !== 0)) {
      throw new StoreError(
        "store_foreign",
        `File "${path}" is not a libos database (application_id ${appId}); it was not modified. Pass another --db`,
      );
    }
    if (current > latest) {
      throw new StoreError(
        "store_newer_schema",
        `Database "${path}" has schema version ${current}, newer than this libos understands (${latest}); it was not modified. Upgrade libos or pass another --db`,
      );
    }
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      db.exec(migration.sql);
      db.exec(`PRAGMA user_version = ${migration.version}`);
    }
    if (appId !== APPLICATION_ID) db.exec(`PRAGMA application_id = ${APPLICATION_ID}`);
    checkSchema(db, path, migrations, latest);
    db.exec("COMMIT");
    return latest;
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}
