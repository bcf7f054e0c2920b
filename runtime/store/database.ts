/**
 * Finding and opening a workspace's database: `--workspace`, `--db` and the state directory
 * (DESIGN §6) resolved to one {@link DatabaseLocation}, then opened as a {@link SqliteStore}, or a
 * {@link PostgresStore} for a `postgres://` URL.
 *
 * @module
 */
import { isAbsolute, join, relative, resolve } from "node:path";
import { sha256Hex } from "../base/canonical_json.ts";
import { NotFoundError, UsageError, ValidationError } from "../base/errors.ts";
import { SqliteStore } from "./sqlite_store.ts";
import { PostgresStore } from "./postgres_store.ts";
import { isPostgresUrl, parsePgTarget } from "./_pg_open.ts";
import { type PgPassKey, pgPassPath, readPgPass } from "./pg_pass.ts";
import type { Store } from "./store.ts";
import {
  databaseRealPath,
  defaultDatabasePath,
  ensureStateDirectory,
  type EnvReader,
  headFilePath,
  MEMORY_DB,
  resolveWorkspace,
  stateDirectory,
} from "../base/state_paths.ts";

/** Where a workspace's state lives. */
export interface DatabaseLocation {
  /** The workspace's canonical real path. */
  readonly workspace: string;
  /** The database's real path, or `:memory:`. */
  readonly path: string;
  /** The audit head file, or `null` for `:memory:` and PostgreSQL (its heads are rows). */
  readonly headPath: string | null;
  /** The cross-process workspace lock file, or `null` (an in-process lock only). */
  readonly lockPath: string | null;
  /** Whether the path came from the default (state directory) rather than `--db`. */
  readonly isDefault: boolean;
  /**
   * `postgres` when `--db` (or `LIBOS_DB`) is a `postgres://` URL: then `path` is that URL
   * without its password, which only {@link DatabaseLocation.connect} returns.
   */
  readonly engine?: "sqlite" | "postgres";
  /** The full connection string, password included (a function, so it is never printed). */
  readonly connect?: () => string;
}

/** The environment variable that names the database when `--db` is not given. */
export const DB_ENV = "LIBOS_DB";

/** What {@link locateDatabase} needs. */
export interface LocateOptions {
  /** `--workspace`; default: `cwd`. */
  readonly workspace?: string;
  /** `--db`: a path or `:memory:`; default: the workspace's database in the state directory. */
  readonly db?: string;
  /** Whether `:memory:` is acceptable (only where one invocation does everything). */
  readonly allowMemory?: boolean;
  /** Whether to create the state directory (commands that write). */
  readonly createStateDirectory?: boolean;
  readonly env: EnvReader;
  readonly cwd: string;
}

/**
 * Resolves workspace, database and head file paths.
 * @throws {UsageError} for `--db :memory:` where it is not allowed, or an empty `--db`.
 */
export function locateDatabase(options: LocateOptions): DatabaseLocation {
  const workspace = resolveWorkspace(options.workspace ?? options.cwd, options.cwd);
  const fromEnv = options.db === undefined
    ? options.env.get(DB_ENV)?.trim() || undefined
    : undefined;
  const db = options.db ?? fromEnv;
  if (db !== undefined && isPostgresUrl(db)) {
    return locatePostgres(workspace, db, fromEnv !== undefined, options);
  }
  if (fromEnv !== undefined) return locateDatabase({ ...options, db: fromEnv });
  if (options.db === MEMORY_DB) {
    if (!options.allowMemory) {
      throw new UsageError(
        `--db :memory: is only accepted where one invocation does everything (demo, agent, tests); pass a file path or omit --db`,
      );
    }
    return { workspace, path: MEMORY_DB, headPath: null, lockPath: null, isDefault: false };
  }
  if (options.db !== undefined && options.db.trim() === "") {
    throw new UsageError(`--db needs a file path or :memory:`);
  }
  const stateDir = stateDirectory(options.env);
  const requested = options.db === undefined
    ? defaultDatabasePath(stateDir, workspace)
    : isAbsolute(options.db)
    ? options.db
    : resolve(options.cwd, options.db);
  refuseInsideWorkspace(workspace, requested, options.db === undefined);
  if (options.createStateDirectory) ensureStateDirectory(stateDir);
  let path: string;
  try {
    path = databaseRealPath(requested, options.cwd);
  } catch (error) {
    // A default database whose state directory does not exist yet simply does not exist;
    // openDatabase() then says to run "libos init". An explicit --db in a missing folder is an
    // error, and so is any other failure (a path that cannot be resolved is not checked).
    const missing = error instanceof ValidationError &&
      error.cause instanceof Deno.errors.NotFound;
    if (options.db !== undefined || !missing) throw error;
    path = requested;
  }
  refuseInsideWorkspace(workspace, path, options.db === undefined);
  return {
    workspace,
    path,
    headPath: headFilePath(stateDir, path),
    lockPath: join(stateDir, "locks", `${sha256Hex(workspace)}.lock`),
    isDefault: options.db === undefined,
  };
}

/**
 * A PostgreSQL location. A password written in `--db` is refused: every user of the machine sees
 * a command line (ps); it belongs in `LIBOS_DB` or `PGPASSWORD`.
 */
function locatePostgres(
  workspace: string,
  db: string,
  fromEnv: boolean,
  options: LocateOptions,
): DatabaseLocation {
  let target;
  try {
    target = parsePgTarget(db);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const password = new URL(db.trim()).password;
  if (!fromEnv && password !== "") {
    throw new UsageError(
      `--db holds a password, which every user of this machine can read in the process list; pass the URL without it and set PGPASSWORD, or put the whole URL in ${DB_ENV}`,
    );
  }
  const stateDir = stateDirectory(options.env);
  if (options.createStateDirectory) ensureStateDirectory(stateDir);
  const given = password === "" ? options.env.get("PGPASSWORD") ?? "" : "";
  const passFile = password === "" && given === "" ? pgPassPath(options.env) : undefined;
  // What PostgresStore.open parses again: the string as given (its ?schema= included).
  const url = db.trim();
  return {
    workspace,
    path: target.location,
    // The heads of a shared database's chain segments live in it (audit_heads, written outside
    // the appending transactions); no host's file could follow every worker's commits.
    headPath: null,
    lockPath: join(stateDir, "locks", `${sha256Hex(workspace)}.lock`),
    isDefault: false,
    engine: "postgres",
    connect: () => {
      // The password file is read when connecting, not when locating (a command that never
      // connects never reads it).
      const secret = given !== "" || passFile === undefined
        ? given
        : readPgPass(passFile, pgPassKey(url, options.env)) ?? "";
      if (secret === "") return url;
      const withPassword = new URL(url);
      withPassword.password = encodeURIComponent(secret);
      return withPassword.href;
    },
  };
}

/** What a connection string is looked up by in the password file (libpq's defaults). */
function pgPassKey(text: string, env: LocateOptions["env"]): PgPassKey {
  const url = new URL(text);
  const user = decodeURIComponent(url.username) || env.get("PGUSER") || env.get("USER") || "";
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, "$1") || env.get("PGHOST") || "localhost",
    port: url.port || env.get("PGPORT") || "5432",
    database: decodeURIComponent(url.pathname.replace(/^\//, "")) || env.get("PGDATABASE") ||
      user,
    user,
  };
}

/**
 * An agent with write access to its workspace must never reach the database that holds its own
 * capabilities and audit (the reference prototype kept it there).
 */
function refuseInsideWorkspace(workspace: string, path: string, isDefault: boolean): void {
  const relation = relative(workspace, path);
  if (relation === ".." || relation.startsWith("../") || isAbsolute(relation)) return;
  const message =
    `The database "${path}" would be inside the workspace "${workspace}", where an agent that can write files could rewrite its own capabilities and audit; ${
      isDefault
        ? "set XDG_STATE_HOME to a directory outside the workspace"
        : "pass a --db outside the workspace"
    }`;
  throw isDefault ? new ValidationError(message) : new UsageError(message);
}

/** Whether a database file already exists at the location. */
export function databaseExists(location: DatabaseLocation): boolean {
  if (location.path === MEMORY_DB) return false;
  if (location.engine === "postgres") {
    try {
      PostgresStore.open({
        url: location.connect?.() ?? location.path,
        readOnly: true,
        create: false,
      }).close();
      return true;
    } catch (error) {
      if (error instanceof NotFoundError) return false;
      throw error;
    }
  }
  try {
    Deno.lstatSync(location.path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** How to open a located database. */
export interface OpenDatabaseOptions {
  /** Create the database when missing (`libos init`, runs); otherwise a missing file is an error. */
  readonly create: boolean;
  /** Open an existing, up-to-date database without writing anything. */
  readonly readOnly?: boolean;
  readonly busyTimeoutMs?: number;
}

/**
 * Opens the database at a location.
 * @throws {NotFoundError} when it does not exist and `create` is false.
 * @throws {StoreError} when it cannot be opened (the file is left as it was).
 */
export function openDatabase(
  location: DatabaseLocation,
  options: OpenDatabaseOptions,
): Store {
  if (location.engine === "postgres") {
    return PostgresStore.open({
      url: location.connect?.() ?? location.path,
      readOnly: options.readOnly ?? false,
      create: options.create,
    });
  }
  if (!options.create && location.path !== MEMORY_DB && !databaseExists(location)) {
    throw new NotFoundError(
      `No database at "${location.path}" for workspace "${location.workspace}"; run "libos init" there first, or pass the right --db`,
    );
  }
  return SqliteStore.open({
    path: location.path,
    readOnly: options.readOnly ?? false,
    ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
  });
}
