/**
 * The shield a walled shell run may get (the launcher's `--yes` runs get it): what DESIGN §2 and
 * §3 guard in the workspace, enforced by the OS wall itself rather than by reading a command's
 * argv, which cannot see `grep -r .`, a symlink, or a test the model wrote. Every secret-bearing
 * file (`.env*`, keys, …) — and every other name for the same file (a hard link) — is covered by
 * an empty read-only file, and every protected path (`.git`, `.gitmodules`) is bound read-only:
 * a command reads nothing secret and plants no hook or git configuration, whoever approved it.
 *
 * @module
 */
import { join, relative } from "node:path";
import { globSet, PROTECTED_GLOBS, SECRET_GLOBS } from "../path_glob.ts";
import type { FilesystemProvider } from "../providers/filesystem.ts";

/** How many directories the shield's walk visits at most. */
export const SHIELD_SCAN_BUDGET = 20_000;

/** What a shielded run mounts over the workspace. */
export interface ShieldMounts {
  /** Files covered by an empty read-only file (their content is unreachable). */
  readonly masked: readonly string[];
  /** Paths bound read-only over the writable workspace. */
  readonly readOnly: readonly string[];
  /** The walk stopped at its budget: some of the workspace was not looked at. */
  readonly partial: boolean;
}

/**
 * Walks the workspace (not following symlinks; at most `budget` directories) for the files and
 * directories the shield covers.
 */
export function shieldMounts(
  fs: FilesystemProvider,
  workspace: string,
  budget = SHIELD_SCAN_BUDGET,
): ShieldMounts {
  const secret = globSet(SECRET_GLOBS);
  const guarded = globSet(PROTECTED_GLOBS);
  const masked: string[] = [];
  const readOnly: string[] = [];
  // Regular files seen, by identity: a hard link to a secret is masked with it.
  const files: { path: string; key: string; nlink: number }[] = [];
  const secretKeys = new Set<string>();
  const queue = [workspace];
  let partial = false;
  for (let head = 0; head < queue.length; head++) {
    if (head >= budget) {
      partial = true;
      break;
    }
    const dir = queue[head]!;
    let entries;
    try {
      entries = [...fs.readDir(dir)];
    } catch {
      continue;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      const rel = relative(workspace, path);
      if (!entry.isSymlink && guarded.match(rel)) {
        // `.git` as a whole (its contents come with it), `.gitmodules`.
        readOnly.push(path);
        continue;
      }
      if (entry.isSymlink) continue; // reading through it reaches a masked file, or one outside
      if (entry.isDirectory) {
        queue.push(path);
        continue;
      }
      let facts;
      try {
        facts = fs.lstat(path);
      } catch {
        continue;
      }
      if (!facts.isFile) continue;
      const key = `${facts.dev}:${facts.ino}`;
      if (secret.match(rel)) {
        masked.push(path);
        secretKeys.add(key);
      } else if (facts.nlink > 1) {
        files.push({ path, key, nlink: facts.nlink });
      }
    }
  }
  for (const f of files) if (secretKeys.has(f.key)) masked.push(f.path);
  return { masked, readOnly, partial };
}
