/**
 * Where the runtime keeps its state: the per-workspace database and the audit head files live in
 * the user's state directory (`$XDG_STATE_HOME/libos`, else `~/.local/state/libos`), never inside
 * the workspace, so an agent with workspace write cannot touch its own capability rows or audit.
 *
 * Hand-written over `node:path`: the XDG lookup is a few lines, and what matters here — the state
 * directory never inside the workspace — is a check of this runtime's own, which packages such as
 * `env-paths` do not make.
 *
 * @module
 */
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { sha256Hex } from "./canonical_json.ts";
import { ValidationError } from "./errors.ts";

/** Reads environment variables; `Deno.env` satisfies it, tests pass a map. */
export interface EnvReader {
  get(name: string): string | undefined;
}

/** The special `--db` value for a database that lives only in this process. */
export const MEMORY_DB = ":memory:";

/** The state directory: `$XDG_STATE_HOME/libos` when that is absolute, else `$HOME/.local/state/libos`. */
export function stateDirectory(env: EnvReader): string {
  const xdg = env.get("XDG_STATE_HOME");
  if (xdg && isAbsolute(xdg)) return join(xdg, "libos");
  const home = env.get("HOME");
  if (home && isAbsolute(home)) return join(home, ".local", "state", "libos");
  throw new ValidationError(
    "Cannot find a state directory: neither XDG_STATE_HOME nor HOME is an absolute path; set one of them or pass --db PATH",
  );
}

/**
 * The user's libos configuration directory (`$XDG_CONFIG_HOME/libos`, else `~/.config/libos`:
 * the model's env file, policy files, `config.jsonc`), or undefined when no home is known.
 */
export function configDirectory(env: EnvReader): string | undefined {
  const xdg = env.get("XDG_CONFIG_HOME");
  if (xdg && isAbsolute(xdg)) return join(xdg, "libos");
  const home = env.get("HOME");
  if (home && isAbsolute(home)) return join(home, ".config", "libos");
  return undefined;
}

/** The user's `config.jsonc` (in {@link configDirectory}), or undefined when no home is known. */
export function userConfigPath(env: EnvReader): string | undefined {
  const dir = configDirectory(env);
  return dir === undefined ? undefined : join(dir, "config.jsonc");
}

/** The default database of a workspace: `<state>/<sha256 of the workspace's real path>.db`. */
export function defaultDatabasePath(stateDir: string, workspaceRealPath: string): string {
  return join(stateDir, `${sha256Hex(workspaceRealPath)}.db`);
}

/** The audit head file of a database, keyed by the database's real path. */
export function headFilePath(stateDir: string, databaseRealPath: string): string {
  return join(stateDir, "heads", `${sha256Hex(databaseRealPath)}.head`);
}

/** The canonical real path of a workspace directory; it must exist and be a directory. */
export function resolveWorkspace(dir: string, cwd: string): string {
  const absolute = resolve(cwd, dir);
  let real: string;
  try {
    real = Deno.realPathSync(absolute);
  } catch (error) {
    throw new ValidationError(
      `Cannot use workspace ${JSON.stringify(dir)}: ${
        error instanceof Error ? error.message : String(error)
      }; pass an existing directory with --workspace`,
      { cause: error },
    );
  }
  if (!Deno.statSync(real).isDirectory) {
    throw new ValidationError(
      `Cannot use workspace ${
        JSON.stringify(dir)
      }: it is not a directory; pass a directory with --workspace`,
    );
  }
  return real;
}

/**
 * The real path a database file has or will have: the real path of its directory plus its name.
 * The directory must exist (the caller creates the state directory first).
 */
export function databaseRealPath(path: string, cwd: string): string {
  const absolute = resolve(cwd, path);
  try {
    return Deno.realPathSync(absolute);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  let dir: string;
  try {
    dir = Deno.realPathSync(dirname(absolute));
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    throw new ValidationError(
      `Cannot use database ${
        JSON.stringify(path)
      }: its directory does not exist; create it or pass another --db`,
      { cause: error },
    );
  }
  return join(dir, basename(absolute));
}

/** Creates the state directory (mode 0700) and its `heads/` folder when missing. */
export function ensureStateDirectory(stateDir: string): void {
  Deno.mkdirSync(join(stateDir, "heads"), { recursive: true, mode: 0o700 });
  Deno.mkdirSync(join(stateDir, "locks"), { recursive: true, mode: 0o700 });
}
