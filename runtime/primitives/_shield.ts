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
import { dirname, join, relative, resolve } from "node:path";
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
  /** Why some of the workspace could not be looked at (then nothing runs), or null. */
  readonly incomplete: string | null;
}

/**
 * Walks the workspace (not following symlinks; at most `budget` directories) for the files and
 * directories the shield covers. It fails closed: whatever it cannot look at — a directory it
 * cannot read, a name the host cannot spell back (not UTF-8), a git directory it cannot find —
 * makes the walk incomplete, and the primitive then runs nothing.
 */
export function shieldMounts(
  fs: FilesystemProvider,
  workspace: string,
  budget = SHIELD_SCAN_BUDGET,
): ShieldMounts {
  const secret = globSet(SECRET_GLOBS);
  const guarded = globSet(PROTECTED_GLOBS);
  const masked: string[] = [];
  const readOnly = new Set<string>();
  // Regular files seen, by identity: a hard link to a secret is masked with it.
  const files: { path: string; key: string }[] = [];
  const secretKeys = new Set<string>();
  let incomplete: string | null = null;
  const fail = (why: string) => {
    incomplete ??= why;
  };
  /** A protected path's real place (a symlink's, a `gitdir:` file's), when inside the workspace. */
  const protectTarget = (target: string) => {
    let real: string;
    try {
      real = fs.realPath(target);
    } catch {
      // Dangling: what a command would create there is a protected path created where none
      // existed (documented); a target outside the workspace is read-only host already.
      return;
    }
    if (real === workspace || real.startsWith(workspace + "/")) readOnly.add(real);
  };
  /**
   * A repository's `core.hooksPath` (husky's `.husky`, …): hooks kept in ordinary workspace files
   * run on the user's next commit, so that directory is read-only too.
   */
  const hooksPath = (gitDir: string, worktree: string) => {
    const config = readSmall(fs, join(gitDir, "config"), 64 * 1024);
    const value = config === undefined
      ? undefined
      : /^\s*hookspath\s*=\s*"?(.+?)"?\s*$/im.exec(config)?.[1];
    if (value !== undefined) protectTarget(resolve(worktree, value));
  };
  const { partial } = boundedWalk(fs, workspace, budget, (path, entry) => {
    if (entry.name.includes("\uFFFD")) {
      fail(`${path} has a name that is not UTF-8`);
      return false;
    }
    const rel = relative(workspace, path);
    if (guarded.match(rel)) {
      if (entry.isSymlink) {
        protectTarget(path);
        return false;
      }
      // `.git` as a whole, `.gitmodules`, `.libos` (once: what is inside comes with it) — and
      // still walked: a secret moved in, or a hard link to one, is masked inside it too.
      if (![...readOnly].some((dir) => path.startsWith(dir + "/"))) readOnly.add(path);
      if (entry.isFile && entry.name.toLowerCase() === ".git") {
        // A `gitdir:` file (worktrees, --separate-git-dir): the real git directory too.
        const text = readSmall(fs, path);
        const gitdir = text === undefined ? undefined : /^gitdir:\s*(.+?)\s*$/m.exec(text)?.[1];
        if (gitdir === undefined) fail(`cannot read the git directory ${path} names`);
        else {
          const real = resolve(dirname(path), gitdir);
          protectTarget(real);
          hooksPath(real, dirname(path));
        }
      } else if (entry.isDirectory && entry.name.toLowerCase() === ".git") {
        hooksPath(path, dirname(path));
      }
    }
    // A symlink is not followed: reading through it reaches a masked file, or one outside.
    if (entry.isSymlink) return false;
    if (entry.isDirectory) return true;
    let facts;
    try {
      facts = fs.lstat(path);
    } catch {
      fail(`cannot look at ${path}`);
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
  }, (dir) => fail(`cannot read the directory ${dir}`));
  if (partial) fail(`the workspace has more than ${budget} directories`);
  for (const f of files) if (secretKeys.has(f.key)) masked.push(f.path);
  return { masked, readOnly: [...readOnly], incomplete };
}

/** Up to `max` bytes of a small file, as text; undefined when it cannot be read. */
function readSmall(fs: FilesystemProvider, path: string, max = 4096): string | undefined {
  try {
    using file = fs.open(path);
    return new TextDecoder().decode(file.read(max));
  } catch {
    return undefined;
  }
}
