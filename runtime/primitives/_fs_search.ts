/**
 * Search over the workspace for the filesystem primitive: the walk both searches share, and
 * `glob` (paths matching a pattern, newest first). `grep` is in `_fs_grep.ts`. Both walk with
 * the primitive's own `listDir`, `stat` and `readText`, so every directory listed, file dated
 * and file read is decided on the caller's capabilities and audited like any other call: a
 * directory the process may not list is not entered, a file it may not read is not searched,
 * and a file that needs a human (secret-bearing, hard-linked) is skipped without asking anyone —
 * its lines never appear. Symbolic links are not followed. Both are bounded (directories
 * visited, files read, bytes per file, results) and say when a bound cut them short.
 *
 * Globs keep the semantics of `runtime/base/path_glob.ts` (`*` within a segment, `**` across
 * segments, `?` one character, case-insensitive, no regular expression), plus `{a,b}`
 * alternatives expanded here (at most {@link BRACE_EXPANSIONS_MAX}). A glob is tested against the
 * path from the search's start and against the workspace-relative path; either matching keeps
 * the file (both name files the walk may already list, so neither reveals anything).
 *
 * @module
 */
import { compileGlob, type PathGlob } from "../base/path_glob.ts";
import { NotFoundError, OutsideWorkspaceError, ValidationError } from "../base/errors.ts";
import type { EntryType } from "./_fs_support.ts";

/** What the search needs of the primitive (bound to nothing: it passes the caller's pid). */
export interface SearchHost {
  listDir(
    pid: string,
    args: { readonly path: string; readonly limit?: number; readonly ask?: boolean },
  ): Promise<{
    path: string;
    entries: { name: string; type: EntryType }[];
    truncated: boolean;
  }>;
  readText(
    pid: string,
    args: { readonly path: string; readonly maxBytes?: number; readonly ask?: boolean },
  ): Promise<{ path: string; content: string; truncated: boolean; binary?: unknown }>;
  stat(
    pid: string,
    args: { readonly path: string; readonly ask?: boolean },
  ): Promise<{ path: string; exists: boolean; type: EntryType | null; mtime: number | null }>;
}

/** The bounds of one search. */
export interface SearchLimits {
  /** Directories listed at most. */
  readonly directories: number;
  /** Entries per directory at most. */
  readonly entriesPerDirectory: number;
  /** Files read at most (grep), or dated and sorted at most (glob). */
  readonly files: number;
  /** Bytes read per file at most (grep). */
  readonly bytesPerFile: number;
}

/** The default bounds. */
export const DEFAULT_SEARCH_LIMITS: SearchLimits = Object.freeze({
  directories: 2_000,
  entriesPerDirectory: 5_000,
  files: 5_000,
  bytesPerFile: 1024 * 1024,
});

/**
 * Directories a search does not enter unless asked to (its start is inside one, or its pattern
 * names one): a repository's object store and installed packages, where ripgrep-trained models
 * do not expect matches and which would use up the search's bounds.
 */
export const UNSEARCHED_DIRECTORIES: readonly string[] = Object.freeze([
  ".git",
  ".hg",
  ".svn",
  "node_modules",
]);

/** Whether a walk for `patterns` enters a directory named `name`. */
export function enters(patterns: readonly (string | undefined)[]): (name: string) => boolean {
  const named = UNSEARCHED_DIRECTORIES.filter((d) => patterns.some((p) => p?.includes(d)));
  return (name) => !UNSEARCHED_DIRECTORIES.includes(name) || named.includes(name);
}

/** Most globs one pattern's `{a,b}` alternatives expand to. */
export const BRACE_EXPANSIONS_MAX = 64;

/** One file the walk found. */
export interface Found {
  /** As the caller names it (from its working directory, or absolute as given). */
  readonly call: string;
  /** Workspace-relative. */
  readonly path: string;
  /** Relative to the search's start (its name, when the start is the file itself). */
  readonly rel: string;
}

/** What a walk saw besides its files. */
export interface Walk {
  readonly files: Found[];
  /** Directories not entered (refused, vanished) or cut by a bound. */
  skipped: number;
  /** Directories not entered because of their name ({@link UNSEARCHED_DIRECTORIES}). */
  ignored: number;
  /** Whether a bound cut the walk short (more files may exist). */
  truncated: boolean;
}

function join(dir: string, name: string): string {
  return dir === "." ? name : `${dir}/${name}`;
}

/**
 * Every file under `start`, breadth first, in name order per directory, within the bounds; `keep`
 * filters them, `enter` says which directories below the start are entered. A start that is a file is that file alone (if `keep` keeps it).
 */
export async function walk(
  host: SearchHost,
  pid: string,
  start: string,
  limits: SearchLimits,
  keep: (file: Found) => boolean,
  maxFiles: number,
  enter: (name: string) => boolean = () => true,
): Promise<Walk> {
  const out: Walk = { files: [], skipped: 0, ignored: 0, truncated: false };
  if (start !== ".") {
    // A start that is a file is searched by itself. Refused (or needing a human): the walk
    // below is refused the same way, counted as skipped, never shown.
    const facts = await host.stat(pid, { path: start, ask: false }).catch(() => undefined);
    if (facts?.exists === true && facts.type === "file") {
      const file = { call: start, path: facts.path, rel: facts.path.split("/").at(-1)! };
      if (keep(file)) out.files.push(file);
      return out;
    }
  }
  const queue: { call: string; rel: string }[] = [{ call: start, rel: "." }];
  let listed = 0;
  for (let head = 0; head < queue.length; head++) {
    if (listed >= limits.directories) {
      out.truncated = true;
      break;
    }
    const dir = queue[head]!;
    listed++;
    let listing: Awaited<ReturnType<SearchHost["listDir"]>>;
    try {
      listing = await host.listDir(pid, {
        path: dir.call,
        limit: limits.entriesPerDirectory,
        // A directory that needs a human is skipped: a search never asks anyone.
        ask: false,
      });
    } catch (error) {
      // The start itself outside the workspace, or missing: the caller's mistake, said as such.
      if (
        head === 0 && (error instanceof OutsideWorkspaceError || error instanceof NotFoundError)
      ) {
        throw error;
      }
      // Refused or gone: not entered (the refusal is audited by the primitive).
      out.skipped++;
      continue;
    }
    if (listing.truncated) out.truncated = true;
    for (const entry of listing.entries) {
      const found = {
        call: join(dir.call, entry.name),
        path: join(listing.path, entry.name),
        rel: join(dir.rel, entry.name),
      };
      if (entry.type === "directory") {
        if (enter(entry.name)) queue.push(found);
        else out.ignored++;
      } else if (entry.type === "file" && keep(found)) {
        if (out.files.length >= maxFiles) {
          out.truncated = true;
          return out;
        }
        out.files.push(found);
      }
    }
  }
  return out;
}

/**
 * A glob's `{a,b}` alternatives, expanded (nested ones too): `**\/*.{ts,tsx}` →
 * `**\/*.ts`, `**\/*.tsx`. A brace without a comma, or unbalanced, is literal.
 * @throws {ValidationError} past {@link BRACE_EXPANSIONS_MAX} globs.
 */
export function expandBraces(source: string): string[] {
  let out = [source];
  for (let round = 0; round < 16; round++) {
    const next: string[] = [];
    let changed = false;
    for (const glob of out) {
      const group = firstGroup(glob);
      if (group === undefined) {
        next.push(glob);
        continue;
      }
      changed = true;
      for (const option of group.options) {
        next.push(glob.slice(0, group.start) + option + glob.slice(group.end + 1));
      }
      if (next.length > BRACE_EXPANSIONS_MAX) {
        throw new ValidationError(
          `The glob ${
            JSON.stringify(source.slice(0, 100))
          } has more than ${BRACE_EXPANSIONS_MAX} {a,b} alternatives; use fewer, or a wider glob`,
        );
      }
    }
    out = next;
    if (!changed) break;
  }
  return out;
}

/** The first innermost `{...}` with a top-level comma. */
function firstGroup(
  glob: string,
): { start: number; end: number; options: string[] } | undefined {
  const opens: number[] = [];
  for (let i = 0; i < glob.length; i++) {
    if (glob[i] === "{") opens.push(i);
    else if (glob[i] === "}" && opens.length > 0) {
      const start = opens.pop()!;
      const inner = glob.slice(start + 1, i);
      if (inner.includes(",")) return { start, end: i, options: inner.split(",") };
    }
  }
  return undefined;
}

/** A compiled file filter: one glob, its `{a,b}` alternatives expanded. */
export interface FileGlob {
  readonly source: string;
  test(file: Found): boolean;
}

/**
 * Compiles a glob filter. `basename`: a glob without `/` matches a file's name at any depth (what
 * ripgrep's `--glob` does: `*.ts` is every TypeScript file).
 * @throws {ValidationError} for an invalid glob.
 */
export function fileGlob(source: string, options: { readonly basename?: boolean } = {}): FileGlob {
  let globs: PathGlob[];
  try {
    globs = expandBraces(source).map((g) => compileGlob(g.startsWith("./") ? g.slice(2) : g));
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    throw new ValidationError(
      `Invalid glob ${JSON.stringify(source.slice(0, 100))}: ${
        error instanceof Error ? error.message : String(error)
      }`,
      { cause: error },
    );
  }
  const byName = options.basename === true && !source.includes("/");
  return {
    source,
    test: (file) =>
      globs.some((g) =>
        byName ? g.test(file.path.slice(file.path.lastIndexOf("/") + 1)) : (
          g.test(file.rel) || g.test(file.path)
        )
      ),
  };
}

/** What glob returns. */
export interface GlobResult {
  /** Workspace-relative paths, newest first (then in walk order). */
  matches: string[];
  truncated: boolean;
  skipped: number;
  /** Set when cut short: what was cut and how to see the rest. */
  note?: string;
}

/**
 * Workspace-relative paths of the files under `path` matching `glob` (see the module
 * documentation), newest modification first, at most `limit`. Each match is dated through the
 * primitive's `stat` (decided, audited, never asking anyone); one it may not date sorts last.
 * @throws {ValidationError} for an invalid glob or limit.
 */
export async function globFiles(
  host: SearchHost,
  pid: string,
  args: { readonly glob: string; readonly path?: string; readonly limit?: number },
  limits: SearchLimits = DEFAULT_SEARCH_LIMITS,
): Promise<GlobResult> {
  const glob = fileGlob(args.glob);
  const limit = bounded(args.limit ?? 1_000, 10_000, "limit");
  const found = await walk(
    host,
    pid,
    args.path ?? ".",
    limits,
    (f) => glob.test(f),
    Math.max(limit, limits.files),
    enters([args.glob]),
  );
  const dated: { path: string; mtime: number; order: number }[] = [];
  for (const [order, file] of found.files.entries()) {
    const facts = await host.stat(pid, { path: file.call, ask: false }).catch(() => undefined);
    dated.push({ path: file.path, mtime: facts?.mtime ?? Number.NEGATIVE_INFINITY, order });
  }
  dated.sort((a, b) => b.mtime - a.mtime || a.order - b.order);
  const cut = dated.length > limit;
  const result: GlobResult = {
    matches: dated.slice(0, limit).map((d) => d.path),
    truncated: found.truncated || cut,
    skipped: found.skipped,
  };
  if (found.truncated) {
    result.note =
      `A search bound was reached after ${found.files.length} matching files: these are the newest of those found, more may exist; narrow the pattern or path`;
  } else if (cut) {
    result.note =
      `Showing the ${limit} newest of ${dated.length} matching files; narrow the pattern or path, or raise limit`;
  }
  return result;
}

/** `value` when it is an integer from `min` to `max`. */
export function bounded(value: number, max: number, what: string, min = 1): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`${what} must be an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}
