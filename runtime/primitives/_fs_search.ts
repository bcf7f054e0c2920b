/**
 * Search over the workspace for the filesystem primitive: `glob` (paths matching a pattern) and
 * `grep` (lines containing a text). Both walk with the primitive's own `listDir` and `readText`,
 * so every directory listed and every file read is decided on the caller's capabilities and
 * audited like any other call: a directory the process may not list is not entered, a file it
 * may not read is not searched, and a file that needs a human (secret-bearing, hard-linked) is
 * skipped without asking anyone — its lines never appear. Symbolic links are not followed. Both
 * are bounded (directories visited, files read, bytes per file, matches) and say when a bound
 * cut them short.
 *
 * The text is searched literally (optionally ignoring case): a regular expression from a model
 * would run on the host, where a catastrophic pattern could stall the runtime.
 *
 * @module
 */
import { compileGlob, type PathGlob } from "../base/path_glob.ts";
import { ValidationError } from "../base/errors.ts";
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
  ): Promise<{ path: string; content: string; truncated: boolean }>;
}

/** The bounds of one search. */
export interface SearchLimits {
  /** Directories listed at most. */
  readonly directories: number;
  /** Entries per directory at most. */
  readonly entriesPerDirectory: number;
  /** Files read at most (grep). */
  readonly files: number;
  /** Bytes read per file at most (grep). */
  readonly bytesPerFile: number;
}

/** The default bounds. */
export const DEFAULT_SEARCH_LIMITS: SearchLimits = Object.freeze({
  directories: 2_000,
  entriesPerDirectory: 5_000,
  files: 2_000,
  bytesPerFile: 1024 * 1024,
});

/** One file the walk found: as the caller names it (from its cwd) and workspace-relative. */
interface Found {
  readonly call: string;
  readonly path: string;
}

/** What a walk saw besides its files. */
interface Walk {
  readonly files: Found[];
  /** Directories not entered (refused, vanished) or cut by a bound. */
  skipped: number;
  truncated: boolean;
}

function join(dir: string, name: string): string {
  return dir === "." ? name : `${dir}/${name}`;
}

/** Every file under `start`, breadth first, in name order per directory, within the bounds. */
async function walk(
  host: SearchHost,
  pid: string,
  start: string,
  limits: SearchLimits,
  keep: (path: string) => boolean,
  maxFiles: number,
): Promise<Walk> {
  const out: Walk = { files: [], skipped: 0, truncated: false };
  const queue: string[] = [start];
  let listed = 0;
  while (queue.length > 0) {
    if (listed >= limits.directories) {
      out.truncated = true;
      break;
    }
    const dir = queue.shift()!;
    listed++;
    let listing: Awaited<ReturnType<SearchHost["listDir"]>>;
    try {
      listing = await host.listDir(pid, {
        path: dir,
        limit: limits.entriesPerDirectory,
        // A directory that needs a human is skipped: a search never asks anyone.
        ask: false,
      });
    } catch {
      // Refused or gone: not entered (the refusal is audited by the primitive).
      out.skipped++;
      continue;
    }
    if (listing.truncated) out.truncated = true;
    for (const entry of listing.entries) {
      const call = join(dir, entry.name);
      const path = join(listing.path, entry.name);
      if (entry.type === "directory") queue.push(call);
      else if (entry.type === "file" && keep(path)) {
        if (out.files.length >= maxFiles) {
          out.truncated = true;
          return out;
        }
        out.files.push({ call, path });
      }
    }
  }
  return out;
}

function pattern(source: string): PathGlob {
  try {
    return compileGlob(source);
  } catch (error) {
    throw new ValidationError(`Invalid glob ${JSON.stringify(source.slice(0, 100))}: ${error}`);
  }
}

/**
 * Workspace-relative paths of the files under `path` matching `glob` (`*` within a segment,
 * `**` across segments, `?` one character; matched against the path from the workspace root,
 * case-insensitively), at most `limit`.
 */
export async function globFiles(
  host: SearchHost,
  pid: string,
  args: { readonly glob: string; readonly path?: string; readonly limit?: number },
  limits: SearchLimits = DEFAULT_SEARCH_LIMITS,
): Promise<{ matches: string[]; truncated: boolean; skipped: number }> {
  const glob = pattern(args.glob);
  const limit = bounded(args.limit ?? 1_000, 10_000, "limit");
  const found = await walk(host, pid, args.path ?? ".", limits, (p) => glob.test(p), limit);
  return {
    matches: found.files.map((f) => f.path),
    truncated: found.truncated,
    skipped: found.skipped,
  };
}

/** What grep takes. */
export interface GrepArgs {
  readonly text: string;
  readonly path?: string;
  readonly glob?: string;
  readonly ignoreCase?: boolean;
  readonly maxMatches?: number;
}

/** What grep found. */
export interface GrepResult {
  matches: GrepMatch[];
  files: number;
  skipped: number;
  truncated: boolean;
}

/** One matching line. */
export interface GrepMatch {
  readonly path: string;
  /** 1-based. */
  readonly line: number;
  /** The line, cut at 500 characters. */
  readonly text: string;
}

/**
 * Lines containing `text` (literally; `ignoreCase` folds case) in the files under `path` (those
 * matching `glob` when given), at most `maxMatches`. Files the caller may not read, or that need
 * a human, are skipped unread and counted in `skipped`.
 */
export async function grepFiles(
  host: SearchHost,
  pid: string,
  args: GrepArgs,
  limits: SearchLimits = DEFAULT_SEARCH_LIMITS,
): Promise<GrepResult> {
  if (typeof args.text !== "string" || args.text.length === 0 || args.text.length > 1000) {
    throw new ValidationError("The text to search for must be 1-1000 characters");
  }
  const glob = args.glob === undefined ? undefined : pattern(args.glob);
  const maxMatches = bounded(args.maxMatches ?? 200, 2_000, "max_matches");
  const needle = args.ignoreCase ? args.text.toLowerCase() : args.text;
  const found = await walk(
    host,
    pid,
    args.path ?? ".",
    limits,
    (p) => glob === undefined || glob.test(p),
    limits.files,
  );
  const matches: GrepMatch[] = [];
  let skipped = found.skipped;
  let truncated = found.truncated;
  let files = 0;
  for (const file of found.files) {
    let content: string;
    try {
      const read = await host.readText(pid, {
        path: file.call,
        maxBytes: limits.bytesPerFile,
        ask: false,
      });
      content = read.content;
      if (read.truncated) truncated = true;
    } catch {
      // Refused, secret-bearing, hard-linked, vanished: never searched.
      skipped++;
      continue;
    }
    files++;
    const lines = content.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (!(args.ignoreCase ? line.toLowerCase() : line).includes(needle)) continue;
      if (matches.length >= maxMatches) return { matches, files, skipped, truncated: true };
      matches.push({ path: file.path, line: i + 1, text: line.slice(0, 500) });
    }
  }
  return { matches, files, skipped, truncated };
}

function bounded(value: number, max: number, what: string): number {
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new ValidationError(`${what} must be an integer from 1 to ${max}, got ${value}`);
  }
  return value;
}
