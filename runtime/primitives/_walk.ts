/**
 * A bounded breadth-first walk of a directory tree through the filesystem provider, never
 * following symbolic links: what the repository scan and the shield share.
 *
 * @module
 */
import { join } from "node:path";
import type { DirEntry, FilesystemProvider } from "../providers/filesystem.ts";

/**
 * Visits every entry below `start`, directory by directory, at most `budget` directories; enters
 * a directory (not a symlink to one) when `visit` returns true for it. An unreadable directory is
 * skipped, or — with `unreadable` — reported there. Returns whether the budget cut the walk short.
 */
export function boundedWalk(
  fs: FilesystemProvider,
  start: string,
  budget: number,
  visit: (path: string, entry: DirEntry) => boolean,
  unreadable?: (dir: string) => void,
): { readonly partial: boolean } {
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    if (head >= budget) return { partial: true };
    const dir = queue[head]!;
    let entries: DirEntry[];
    try {
      entries = [...fs.readDir(dir)];
    } catch {
      unreadable?.(dir);
      continue;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (visit(path, entry) && entry.isDirectory && !entry.isSymlink) queue.push(path);
    }
  }
  return { partial: false };
}
