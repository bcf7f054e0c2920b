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
import { relative } from "node:path";
import { globSet, PROTECTED_GLOBS, SECRET_GLOBS } from "../path_glob.ts";
import type { FilesystemProvider } from "../providers/filesystem.ts";
import { boundedWalk } from "./_walk.ts";

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
  const files: { path: string; key: string }[] = [];
  const secretKeys = new Set<string>();
  const { partial } = boundedWalk(fs, workspace, budget, (path, entry) => {
    const rel = relative(workspace, path);
    if (!entry.isSymlink && guarded.match(rel)) {
      // `.git` as a whole (its contents come with it), `.gitmodules`, `.libos`.
      readOnly.push(path);
      return false;
    }
    // A symlink is not followed: reading through it reaches a masked file, or one outside.
    if (entry.isSymlink) return false;
    if (entry.isDirectory) return true;
    let facts;
    try {
      facts = fs.lstat(path);
    } catch {
      return false;
    }
    if (!facts.isFile) return false;
    const key = `${facts.dev}:${facts.ino}`;
    if (secret.match(rel)) {
      masked.push(path);
      secretKeys.add(key);
    } else if (facts.nlink > 1) {
      files.push({ path, key });
    }
    return false;
  });
  for (const f of files) if (secretKeys.has(f.key)) masked.push(f.path);
  return { masked, readOnly, partial };
}
