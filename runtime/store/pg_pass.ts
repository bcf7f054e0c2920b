/**
 * The PostgreSQL password file (`~/.pgpass`, or the file `PGPASSFILE` names), read the way libpq
 * reads it, because postgres.js does not: lines `host:port:database:user:password`, `*` matching
 * anything in the first four fields, `\:` and `\\` escaping, `#` comments, the first matching line
 * winning. Like libpq, a file that others can read is not used — here it is refused with what to
 * do, since a silently ignored password file only shows up later as a failed login.
 *
 * @module
 */
import { join } from "node:path";
import { StoreError } from "../base/errors.ts";

/** What a password is looked up for. */
export interface PgPassKey {
  readonly host: string;
  readonly port: string;
  readonly database: string;
  /** Empty when unknown: then only lines whose user is `*` match. */
  readonly user: string;
}

/** The password file to read: `PGPASSFILE`, else `$HOME/.pgpass`; undefined without either. */
export function pgPassPath(env: { get(name: string): string | undefined }): string | undefined {
  const named = env.get("PGPASSFILE")?.trim();
  if (named) return named;
  const home = env.get("HOME")?.trim();
  return home ? join(home, ".pgpass") : undefined;
}

/** One line's fields with `\:` and `\\` resolved; undefined for a line that is not one. */
function fields(line: string): string[] | undefined {
  const out: string[] = [];
  let current = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "\\" && i + 1 < line.length) {
      current += line[++i];
    } else if (c === ":" && out.length < 4) {
      out.push(current);
      current = "";
    } else {
      current += c;
    }
  }
  out.push(current);
  return out.length === 5 ? out : undefined;
}

/** The password of the first line of `text` that matches `key`, if any. */
export function pgPassLookup(text: string, key: PgPassKey): string | undefined {
  const want = [key.host, key.port, key.database, key.user];
  for (const raw of text.split(/\r?\n/)) {
    if (raw.trim() === "" || raw.startsWith("#")) continue;
    const f = fields(raw);
    if (f === undefined) continue;
    const matches = want.every((value, i) => f[i] === "*" || (value !== "" && f[i] === value));
    if (matches) return f[4];
  }
  return undefined;
}

/** A password file that cannot be read, and what to do. */
function unreadable(path: string, error: unknown): StoreError {
  return new StoreError(
    "store_io",
    `Cannot read the PostgreSQL password file "${path}" (${
      error instanceof Error ? error.message : String(error)
    }); fix its permissions, point PGPASSFILE elsewhere, or set PGPASSWORD`,
    { cause: error },
  );
}

/**
 * Reads `path` and looks `key` up in it. A missing file is no password; a file that group or
 * others may read, or that cannot be read, is refused.
 * @throws {StoreError} `store_io` saying what to do.
 */
export function readPgPass(path: string, key: PgPassKey): string | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw unreadable(path, error);
  }
  if (!info.isFile) {
    throw new StoreError(
      "store_io",
      `The PostgreSQL password file "${path}" is not a plain file; point PGPASSFILE at one`,
    );
  }
  if (info.mode !== null && (info.mode & 0o077) !== 0) {
    throw new StoreError(
      "store_io",
      `The PostgreSQL password file "${path}" can be read by others (mode ${
        (info.mode & 0o777).toString(8)
      }); run "chmod 600 ${path}" (libpq ignores such a file too)`,
    );
  }
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (error) {
    throw unreadable(path, error);
  }
  return pgPassLookup(text, key);
}
