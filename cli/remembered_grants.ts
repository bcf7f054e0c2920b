/**
 * Remembered grants: the "allow always … for this project" answers, kept in the user's
 * configuration directory (`$XDG_CONFIG_HOME/libos/grants.jsonc`, else
 * `~/.config/libos/grants.jsonc`) keyed by the workspace's real path — never in the workspace,
 * which an agent can write. Every later `libos agent` run in that workspace starts with them as
 * capabilities of its top-level process (issuer `user-config:<id>`), below the hardline, the mode
 * ceiling and the rules like any capability. `libos grants list` shows them and `libos grants
 * revoke ID` removes one.
 *
 * ```jsonc
 * {
 *   "version": 1,
 *   "workspaces": {
 *     "/home/me/project": [
 *       {
 *         "id": "grant_0123456789ab",
 *         "resource": { "type": "shell", "argv": ["npm", "test"], "scope": "exact" },
 *         "rights": ["execute"],
 *         "scope": "exact",
 *         "request": "hreq_0123456789ab", "by": "human:cli", "at": "2026-12-02T10:00:00.000Z"
 *       }
 *     ]
 *   }
 * }
 * ```
 *
 * The file is read strictly (a broken one refuses the run, naming file, line and column, and is
 * never rewritten), written atomically (a temporary file, then a rename) with mode 0600, and a
 * configuration directory inside the workspace is neither read nor written.
 *
 * @module
 */
import { dirname, isAbsolute, join, relative } from "node:path";
import { z } from "zod";
import { CapabilityResource, isRight, resourceString } from "../runtime/authority/capability.ts";
import { LibosError } from "../runtime/base/errors.ts";
import { configDirectory, type EnvReader } from "../runtime/base/state_paths.ts";
import { parseStrictJsonc } from "../runtime/base/strict_jsonc.ts";
import type { RememberedApproval, Rememberer } from "../runtime/human/human_channel.ts";
import { GrantScope } from "../runtime/human/human_request.ts";

/** The largest grants file read. */
export const GRANTS_MAX_BYTES = 256 * 1024;
/** The file's name in the configuration directory. */
export const GRANTS_FILE = "grants.jsonc";
/** A write lock (the temporary file) older than this is left over from a crash. */
const STALE_LOCK_MS = 10_000;

/** A grants file that cannot be read, parsed or written: the run or command is refused. */
export class GrantsFileError extends LibosError {
  /** Builds a `grants_file_invalid` (read or parse) or `grants_file_unwritable` error. */
  constructor(
    code: "grants_file_invalid" | "grants_file_unwritable",
    message: string,
    options: { readonly cause?: unknown } = {},
  ) {
    super(code, "operator", message, options);
  }
}

/** One remembered grant. */
export const RememberedGrant = z.object({
  id: z.string().regex(/^grant_[0-9a-f]{12}$/),
  resource: CapabilityResource,
  rights: z.array(z.string().min(1).max(32)).min(1).max(16),
  /** The "allow always" scope it was approved with. */
  scope: GrantScope,
  description: z.string().max(1000).optional(),
  /** The request approved, who approved it and when (ISO 8601). */
  request: z.string().max(64).optional(),
  by: z.string().max(64).optional(),
  at: z.string().max(40).optional(),
}).strict().superRefine((g, ctx) => {
  for (const right of g.rights) {
    if (!isRight(g.resource.type, right)) {
      ctx.addIssue({
        code: "custom",
        path: ["rights"],
        message: `${JSON.stringify(right)} is not a right on a ${g.resource.type} resource`,
      });
    }
  }
});
/** One remembered grant. */
export type RememberedGrant = z.infer<typeof RememberedGrant>;

/** The grants file. */
export const GrantsFile = z.object({
  version: z.literal(1),
  workspaces: z.record(z.string().min(1).max(4096), z.array(RememberedGrant).max(256)),
}).strict().superRefine((file, ctx) => {
  for (const workspace of Object.keys(file.workspaces)) {
    if (!isAbsolute(workspace)) {
      ctx.addIssue({
        code: "custom",
        path: ["workspaces", workspace],
        message: `${
          JSON.stringify(workspace)
        } is not a workspace: the keys are absolute real paths`,
      });
    }
  }
});
/** The grants file. */
export type GrantsFile = z.infer<typeof GrantsFile>;

/** The grants file's path, or undefined when no home is known. */
export function grantsPath(env: EnvReader): string | undefined {
  const dir = configDirectory(env);
  return dir === undefined ? undefined : join(dir, GRANTS_FILE);
}

/** The real path of `path`, or of its deepest existing ancestor plus the rest. */
function realish(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(realish(parent), path.slice(parent.length + 1));
  }
}

/** Whether `path` lies inside (or is) the workspace `workspace` (a real path). */
export function insideWorkspace(path: string, workspace: string): boolean {
  const relation = relative(workspace, realish(path));
  return !(relation === ".." || relation.startsWith("../") || isAbsolute(relation));
}

/** The grants of one workspace as the file holds them, and where the file is. */
export interface WorkspaceGrants {
  /** The file, or null when no home is known. */
  readonly path: string | null;
  /** Set when the configuration directory lies inside the workspace: the file was not read. */
  readonly ignored: string | null;
  readonly grants: readonly RememberedGrant[];
}

/** The whole file (none: empty). */
function readFile(path: string): { readonly data: GrantsFile; readonly exists: boolean } {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return { data: { version: 1, workspaces: {} }, exists: false };
    }
    throw new GrantsFileError(
      "grants_file_invalid",
      `Cannot read the grants file ${path}: ${
        error instanceof Error ? error.message : String(error)
      }; make it readable by you, or move it away (its grants then no longer apply)`,
      { cause: error },
    );
  }
  try {
    return {
      data: parseStrictJsonc(text, path, GrantsFile, {
        maxBytes: GRANTS_MAX_BYTES,
        maxDepth: 8,
        what: 'the file is {"version": 1, "workspaces": {"/real/path": [grant, ...]}}',
      }),
      exists: true,
    };
  } catch (error) {
    throw new GrantsFileError(
      "grants_file_invalid",
      `${
        error instanceof Error ? error.message : String(error)
      } — the grants file is broken, so libos applies none of it and will not rewrite it; fix that line (or move the file away to forget every remembered grant)`,
      { cause: error },
    );
  }
}

/**
 * The remembered grants of `workspace` (its real path).
 * @throws {GrantsFileError} `grants_file_invalid` for a file that cannot be read or parsed.
 */
export function loadRememberedGrants(env: EnvReader, workspace: string): WorkspaceGrants {
  const path = grantsPath(env);
  if (path === undefined) return { path: null, ignored: null, grants: [] };
  if (insideWorkspace(path, workspace)) return { path, ignored: path, grants: [] };
  const { data } = readFile(path);
  return {
    path,
    ignored: null,
    grants: Object.hasOwn(data.workspaces, workspace) ? data.workspaces[workspace]! : [],
  };
}

/** Every workspace's remembered grants. */
export function loadAllRememberedGrants(
  env: EnvReader,
): { readonly path: string | null; readonly workspaces: GrantsFile["workspaces"] } {
  const path = grantsPath(env);
  if (path === undefined) return { path: null, workspaces: {} };
  return { path, workspaces: readFile(path).data.workspaces };
}

/**
 * The file to write for `workspace`: refused without a home, or inside the workspace.
 * @throws {GrantsFileError} `grants_file_unwritable`.
 */
function writablePath(env: EnvReader, workspace: string): string {
  const path = grantsPath(env);
  if (path === undefined) {
    throw new GrantsFileError(
      "grants_file_unwritable",
      "Cannot remember a grant for the project: no configuration directory is known (neither XDG_CONFIG_HOME nor HOME is an absolute path); set one, or approve for this run only",
    );
  }
  if (insideWorkspace(path, workspace)) {
    throw new GrantsFileError(
      "grants_file_unwritable",
      `Cannot remember a grant in ${path}: it is inside the workspace ${workspace}, where an agent that can write files could grant itself anything; set XDG_CONFIG_HOME to a directory outside the workspace, or approve for this run only`,
    );
  }
  return path;
}

/**
 * Changes the file under a write lock (its temporary file, created exclusively): reads it (a
 * broken file is never rewritten), applies `change`, writes the temporary file (mode 0600) and
 * renames it over the file.
 * @throws {GrantsFileError} for a broken file, a concurrent writer, or a failed write.
 */
function update<T>(path: string, change: (data: GrantsFile) => T): T {
  const tmp = `${path}.tmp`;
  try {
    // Made only when missing: libos may write the file, not (under its launcher) the directory.
    if (!exists(dirname(path))) Deno.mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new GrantsFileError(
      "grants_file_unwritable",
      `Cannot create the configuration directory ${dirname(path)}: ${
        error instanceof Error ? error.message : String(error)
      }; create it (mkdir -p) and try again`,
      { cause: error },
    );
  }
  let lock: Deno.FsFile | undefined;
  for (let attempt = 0; lock === undefined; attempt++) {
    try {
      lock = Deno.openSync(tmp, { write: true, createNew: true, mode: 0o600 });
    } catch (error) {
      const stale = error instanceof Deno.errors.AlreadyExists && attempt === 0 &&
        Date.now() - (Deno.statSync(tmp).mtime?.getTime() ?? 0) > STALE_LOCK_MS;
      if (stale) {
        Deno.removeSync(tmp);
        continue;
      }
      throw new GrantsFileError(
        "grants_file_unwritable",
        error instanceof Deno.errors.AlreadyExists
          ? `Cannot write ${path}: another libos is writing it (${tmp} exists); try again in a moment`
          : `Cannot write ${path}: ${
            error instanceof Error ? error.message : String(error)
          }; nothing was changed`,
        { cause: error },
      );
    }
  }
  let renamed = false;
  try {
    const { data } = readFile(path);
    const result = change(data);
    const text = [
      `// Grants libos remembers for your workspaces ("allow always … for this project"), keyed`,
      `// by the workspace's real path. List them with "libos grants list"; remove one with`,
      `// "libos grants revoke ID". A file that does not parse refuses every "libos agent" run.`,
      JSON.stringify(data, null, 2),
      "",
    ].join("\n");
    lock.writeSync(new TextEncoder().encode(text));
    lock.syncSync();
    Deno.chmodSync(tmp, 0o600);
    lock.close();
    lock = undefined;
    Deno.renameSync(tmp, path);
    renamed = true;
    return result;
  } catch (error) {
    if (error instanceof GrantsFileError) throw error;
    throw new GrantsFileError(
      "grants_file_unwritable",
      `Cannot write ${path}: ${
        error instanceof Error ? error.message : String(error)
      }; nothing was changed`,
      { cause: error },
    );
  } finally {
    lock?.close();
    if (!renamed) {
      try {
        Deno.removeSync(tmp);
      } catch { /* gone already: nothing to clean up */ }
    }
  }
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return `grant_${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Adds a grant for `workspace` (its real path); returns its id.
 * @throws {GrantsFileError} when the file cannot be written (nothing changed).
 */
export function rememberGrant(
  env: EnvReader,
  workspace: string,
  grant: Omit<RememberedGrant, "id">,
): string {
  const path = writablePath(env, workspace);
  return update(path, (data) => {
    const list = Object.hasOwn(data.workspaces, workspace) ? data.workspaces[workspace]! : [];
    if (list.length >= 256) {
      throw new GrantsFileError(
        "grants_file_unwritable",
        `${path} already holds 256 grants for ${workspace}; revoke some with "libos grants revoke ID" first`,
      );
    }
    const id = newId();
    data.workspaces[workspace] = [...list, { id, ...grant }];
    return id;
  });
}

/**
 * Removes grant `id` of `workspace`; returns it, or undefined when the workspace has none such.
 * @throws {GrantsFileError} when the file cannot be read or written (nothing changed).
 */
export function forgetGrant(
  env: EnvReader,
  workspace: string,
  id: string,
): RememberedGrant | undefined {
  const path = writablePath(env, workspace);
  if (!Object.hasOwn(loadAllRememberedGrants(env).workspaces, workspace)) return undefined;
  return update(path, (data) => {
    const list = data.workspaces[workspace] ?? [];
    const found = list.find((g) => g.id === id);
    if (!found) return undefined;
    const rest = list.filter((g) => g.id !== id);
    if (rest.length === 0) delete data.workspaces[workspace];
    else data.workspaces[workspace] = rest;
    return found;
  });
}

/** What a grant allows, in words: `execute on shell:npm test`. */
export function grantText(grant: RememberedGrant): string {
  return `${grant.rights.join(", ")} on ${resourceString(grant.resource)}`;
}

/**
 * The {@link Rememberer} a runtime of `workspace` (its real path) keeps project answers with:
 * the user's grants file.
 */
export function fileRememberer(env: EnvReader, workspace: string): Rememberer {
  return {
    check() {
      writablePath(env, workspace);
      loadRememberedGrants(env, workspace);
    },
    remember(grant: RememberedApproval): string {
      return rememberGrant(env, workspace, {
        resource: grant.resource,
        rights: [...grant.rights],
        scope: grant.scope,
        request: grant.request,
        by: grant.by.slice(0, 64),
        at: new Date(grant.at).toISOString(),
      });
    },
  };
}
