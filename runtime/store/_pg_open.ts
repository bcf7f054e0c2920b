/**
 * Opening a PostgreSQL store: the connection string (and its `schema` parameter), the location
 * shown to people (never with a password), the migration under an advisory lock, and the mapping
 * of server failures to {@link StoreError}s whose messages say what to do.
 *
 * @module
 */
import { NotFoundError, StoreError, type StoreErrorCode } from "../base/errors.ts";
import { PgFailure, type PgLink } from "./_pg_link.ts";
import { PG_MIGRATIONS, type PgMigration } from "./_pg_schema.ts";

/** A connection string taken apart. */
export interface PgTarget {
  /** What the driver connects with (the `schema` parameter removed); may hold a password. */
  readonly url: string;
  /** The schema libos's tables live in. */
  readonly schema: string;
  /** The string shown in messages, `--json` and audit records: no password, ever. */
  readonly location: string;
}

/** Whether a `--db` value names a PostgreSQL database rather than a file. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db.trim());
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Parses `postgres://user[:password]@host[:port]/database[?schema=name&sslmode=…]`.
 * @throws {StoreError} `store_io` for a string that is not such a URL (the message never repeats
 *   it: it may hold a password).
 */
export function parsePgTarget(text: string): PgTarget {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new StoreError(
      "store_io",
      `The PostgreSQL connection string is not a valid URL; write it as postgres://USER@HOST:PORT/DATABASE (put the password in ~/.pgpass or PGPASSWORD, not in the URL)`,
    );
  }
  if (!/^postgres(ql)?:$/i.test(url.protocol)) {
    throw new StoreError(
      "store_io",
      `The connection string must start with postgres:// or postgresql://`,
    );
  }
  const schema = url.searchParams.get("schema") ?? "public";
  if (!SCHEMA_NAME.test(schema)) {
    throw new StoreError(
      "store_io",
      `The schema "${
        schema.slice(0, 80)
      }" is not a plain lower-case identifier; use letters, digits and _ (at most 63), e.g. ?schema=libos_team`,
    );
  }
  url.searchParams.delete("schema");
  const shown = new URL(url.href);
  shown.password = "";
  if (schema !== "public") shown.searchParams.set("schema", schema);
  return { url: url.href, schema, location: shown.href };
}

/** A driver failure as a {@link StoreError} naming the (password-free) location. */
export function pgStoreFailure(error: unknown, location: string): StoreError | NotFoundError {
  if (error instanceof StoreError || error instanceof NotFoundError) return error;
  const failure = error instanceof PgFailure
    ? error
    : new PgFailure("LIBOS_UNKNOWN", error instanceof Error ? error.message : String(error), 0);
  const make = (code: StoreErrorCode, message: string) =>
    new StoreError(code, message, { cause: failure });
  const why = failure.message;
  const c = failure.code;
  if (c === "23505" || c === "23P01" || c.startsWith("23")) {
    return make("store_conflict", `A write to "${location}" conflicted with stored data (${why})`);
  }
  if (c === "25006") {
    return make(
      "store_readonly",
      `"${location}" is read-only here (${why}); this command cannot change it`,
    );
  }
  if (c === "40001" || c === "40P01" || c === "55P03") {
    return make("store_locked", `"${location}" is busy (${why}); retry in a moment`);
  }
  if (c === "28P01" || c === "28000") {
    return make(
      "store_io",
      `PostgreSQL refused the login to "${location}" (${why}); check the user and the password in ~/.pgpass or PGPASSWORD`,
    );
  }
  if (c === "3D000") {
    return make(
      "store_io",
      `"${location}": the database does not exist (${why}); create it with createdb, then run "libos init --db ..."`,
    );
  }
  if (c === "LIBOS_TIMEOUT") {
    return make(
      "store_io",
      `"${location}" did not answer in time (${why}); check the server and the network, then retry`,
    );
  }
  if (c === "LIBOS_SESSION_LOST" || c === "25P03") {
    return make(
      "store_io",
      // Only a transaction's statements meet this (a new one may use a new session): the
      // store's failure around it says that the batch is lost and to restart.
      `The session with PostgreSQL at "${location}" ended (${why})`,
    );
  }
  if (/^(E[A-Z]+|08...|57P0.|LIBOS_CLOSED)$/.test(c)) {
    return make(
      "store_io",
      `Cannot reach PostgreSQL at "${location}" (${c}: ${why}); check that the server runs and accepts connections from here`,
    );
  }
  return make("store_io", `"${location}" could not be used (${c}: ${why})`);
}

/** Reads the schema version; undefined when the schema holds no libos tables. */
function currentVersion(link: PgLink, target: PgTarget): number | undefined {
  const [found] = link.run([{
    sql: `SELECT to_regclass($1) IS NOT NULL AS known,
       (SELECT count(*) FROM pg_tables WHERE schemaname = $2) AS tables`,
    params: [`"${target.schema}".libos_schema`, target.schema],
  }]);
  const row = found?.rows[0];
  if (row?.known !== true) {
    if (Number(row?.tables ?? 0) > 0) {
      throw new StoreError(
        "store_foreign",
        `Schema "${target.schema}" of "${target.location}" holds tables that are not libos's; it was not modified. Pass another database, or ?schema=NAME for a schema of libos's own`,
      );
    }
    return undefined;
  }
  const [version] = link.run([{ sql: "SELECT max(version) AS v FROM libos_schema", params: [] }]);
  return Number(version?.rows[0]?.v ?? 0);
}

/**
 * Brings the schema up to date under an advisory lock (several workers may start at once) and
 * returns its version. A read-only open migrates nothing and refuses an outdated schema.
 */
export function migrate(
  link: PgLink,
  target: PgTarget,
  options: {
    readonly readOnly: boolean;
    readonly create: boolean;
    readonly migrations?: readonly PgMigration[];
  },
): number {
  const migrations = options.migrations ?? PG_MIGRATIONS;
  const readOnly = options.readOnly;
  const latest = migrations.length;
  const newer = (version: number) =>
    new StoreError(
      "store_newer_schema",
      `"${target.location}" is at schema version ${version}, newer than this libos (${latest}); upgrade libos`,
    );
  const missing = () =>
    new NotFoundError(
      `No libos database at "${target.location}"; run "libos init --db URL" first, or pass the right --db`,
    );
  if (readOnly || !options.create) {
    const version = currentVersion(link, target);
    if (version === undefined) throw missing();
  }
  if (readOnly) {
    const version = currentVersion(link, target)!;
    if (version > latest) throw newer(version);
    if (version < latest) {
      throw new StoreError(
        "store_outdated",
        `"${target.location}" is at schema version ${version}; run any writing libos command once to upgrade it to ${latest}`,
      );
    }
    return version;
  }
  link.run([
    { sql: `CREATE SCHEMA IF NOT EXISTS "${target.schema}"`, params: [] },
    { sql: "BEGIN", params: [] },
    { sql: "SELECT pg_advisory_xact_lock(hashtext($1))", params: [`libos:${target.schema}`] },
  ]);
  try {
    const version = currentVersion(link, target) ?? 0;
    if (version > latest) throw newer(version);
    const steps: { sql: string; params: [] }[] = [];
    if (version === 0) {
      steps.push({ sql: "CREATE TABLE libos_schema (version integer NOT NULL)", params: [] });
    }
    for (const migration of migrations.slice(version)) {
      for (const sql of migration.statements) steps.push({ sql, params: [] });
      steps.push({
        sql: `INSERT INTO libos_schema (version) VALUES (${migration.version})`,
        params: [],
      });
    }
    link.run([...steps, { sql: "COMMIT", params: [] }]);
    return Math.max(version, latest);
  } catch (error) {
    try {
      link.run([{ sql: "ROLLBACK", params: [] }]);
    } catch { /* the error below is what matters */ }
    throw error;
  }
}
