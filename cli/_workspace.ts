/**
 * The database and audit log a command works on, from `--workspace` and `--db`.
 *
 * @module
 */
import { AuditLog } from "../runtime/audit/audit_log.ts";
import { systemClock } from "../runtime/base/clock.ts";
import { type DatabaseLocation, locateDatabase, openDatabase } from "../runtime/store/database.ts";
import { UsageError } from "../runtime/base/errors.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import { MEMORY_DB } from "../runtime/base/state_paths.ts";
import type { Store } from "../runtime/store/store.ts";
import { type CliIo, listOption, type ParsedArgs, stringOption } from "./_options.ts";

/** Resolves the command's database location; `createStateDirectory` for commands that write. */
export function locateFrom(
  parsed: ParsedArgs,
  io: CliIo,
  createStateDirectory = false,
): DatabaseLocation {
  const workspace = stringOption(parsed, "workspace");
  const db = stringOption(parsed, "db");
  return locateDatabase({
    ...(workspace === undefined ? {} : { workspace }),
    ...(db === undefined ? {} : { db }),
    createStateDirectory,
    env: io.env,
    cwd: io.cwd,
  });
}

/** An open store with its audit log, closed together. */
export interface OpenedAudit extends Disposable {
  readonly store: Store;
  readonly audit: AuditLog;
}

/** How a command uses its database. */
export type Access = "create" | "write" | "read";

/**
 * Opens a located database and its audit log: `create` makes it when missing, `write` needs it
 * to exist, `read` opens it read-only (nothing is migrated or written).
 */
export function openAudit(location: DatabaseLocation, access: Access): OpenedAudit {
  const store = openDatabase(location, {
    create: access === "create",
    readOnly: access === "read",
  });
  const audit = new AuditLog(store, {
    clock: systemClock(),
    headPath: location.headPath,
    database: location.path,
  });
  return {
    store,
    audit,
    [Symbol.dispose]() {
      audit[Symbol.dispose]();
      store.close();
    },
  };
}

/**
 * Builds a runtime for a command from `--workspace` and `--db`.
 * @throws {UsageError} for `--db :memory:`, which would lose everything when the command ends.
 */
export function openRuntime(
  parsed: ParsedArgs,
  io: CliIo,
  access: Access,
  extra: { readonly secrets?: readonly string[]; readonly human?: "queue" | "none" } = {},
): Promise<Runtime> {
  const workspace = stringOption(parsed, "workspace");
  const db = stringOption(parsed, "db");
  if (db === MEMORY_DB) {
    throw new UsageError(
      `--db :memory: is only accepted where one invocation does everything (demo, agent, tests); pass a file path or omit --db`,
    );
  }
  const mode = stringOption(parsed, "mode");
  const denies = listOption(parsed, "deny");
  const human = stringOption(parsed, "human") ?? extra.human;
  if (human !== undefined && human !== "queue" && human !== "none") {
    throw new UsageError(`--human must be queue or none, not ${JSON.stringify(human)}`);
  }
  return createRuntime({
    ...(human === undefined ? {} : { human }),
    ...(workspace === undefined ? {} : { workspace }),
    ...(db === undefined ? {} : { db }),
    ...(mode === undefined ? {} : { mode }),
    ...(denies.length === 0 ? {} : { denies }),
    env: io.env,
    cwd: io.cwd,
    create: access === "create",
    readOnly: access === "read",
    ...(extra.secrets === undefined ? {} : { secrets: extra.secrets }),
  });
}
