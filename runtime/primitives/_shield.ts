/**
 * The shield a walled shell run may get (the launcher's `--yes` runs get it): what DESIGN §2 and
 * §3 guard in the workspace, enforced by the OS wall itself rather than by reading a command's
 * argv, which cannot see `grep -r .`, a symlink, or a test the model wrote. Every secret-bearing
 * file (`secret_files.ts`: `.env*`, keys, every file under a `secrets/` folder, cloud
 * credentials, …) — with every other name for the same file (a hard link) and what a symlink
 * named like a secret leads to — is covered by an empty read-only file, and every protected path
 * (`.git`, `.gitmodules`) is bound read-only: a command reads nothing secret and plants no hook
 * or git configuration, whoever approved it.
 *
 * Content is not looked at: a secret in an innocently named file (a key pasted into notes.txt)
 * is not masked. Reading every file before every command would cost the whole workspace's bytes
 * per command; the file tools ask for such a file instead (`secret_scan.ts`).
 *
 * @module
 */
import { basename, dirname, join, relative, resolve } from "node:path";
import { globSet, PROTECTED_GLOBS, SECRET_GLOBS } from "../base/path_glob.ts";
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
  const secretDirs = secretDirectoryNames(SECRET_GLOBS);
  const masked = new Set<string>();
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
    } catch (error) {
      // Dangling: what a command would create there is a protected path created where none
      // existed (documented); a target outside the workspace is not in the wall at all. Any
      // other failure leaves the target's place unknown.
      if (!(error instanceof Deno.errors.NotFound)) fail(`cannot resolve ${target}`);
      return;
    }
    if (real === workspace || real.startsWith(workspace + "/")) readOnly.add(real);
  };
  /**
   * A repository's `core.hooksPath` (husky's `.husky`, …): hooks kept in ordinary workspace files
   * run on the user's next commit, so that directory is read-only too.
   */
  const hooksPath = (gitDir: string, worktree: string) => {
    const file = join(gitDir, "config");
    let config: { text: string; cut: boolean } | undefined;
    try {
      config = readSmall(fs, file, GIT_CONFIG_MAX);
    } catch {
      fail(`cannot read ${file} to find core.hooksPath`);
      return;
    }
    if (config === undefined) return;
    // A setting past the part read, or in a file the configuration includes, is not seen.
    if (config.cut) return fail(`${file} is over ${GIT_CONFIG_MAX} bytes`);
    if (/^\s*\[\s*include(if)?\b/im.test(config.text)) {
      return fail(`${file} includes other files, where core.hooksPath could be set`);
    }
    const value = /^\s*hookspath\s*=\s*"?(.+?)"?\s*$/im.exec(config.text)?.[1];
    if (value !== undefined) protectTarget(resolve(worktree, value));
  };
  const mask = (path: string, key: string) => {
    masked.add(path);
    secretKeys.add(key);
  };
  /** Real directories already walked through a link (a link to an ancestor ends there). */
  const walkedThrough = new Set<string>();
  /**
   * A symlink named like a secret (`.env` → `config/dev`, `secrets` → `vault/`, `.aws` →
   * `creds/`) leads a command, through the wall, to a file whose own name is innocent: what it
   * leads to inside the workspace is masked too, file by file, named by the path through the
   * link. (A target outside the workspace is not in the wall at all.)
   */
  const throughLink = (logical: string, link: string) => {
    let real: string;
    try {
      real = fs.realPath(link);
    } catch (error) {
      // Dangling: nothing to read through it. Anything else: where it leads is unknown.
      if (!(error instanceof Deno.errors.NotFound)) fail(`cannot resolve ${link}`);
      return;
    }
    if (real !== workspace && !real.startsWith(workspace + "/")) return;
    let facts;
    try {
      facts = fs.lstat(real);
    } catch {
      fail(`cannot look at ${real}, where ${link} leads`);
      return;
    }
    if (facts.isFile) {
      if (secret.match(logical)) mask(real, `${facts.dev}:${facts.ino}`);
      return;
    }
    const below = secret.match(logical) || secret.match(`${logical}/x`) ||
      secretDirs.has(basename(logical).toLowerCase());
    if (!facts.isDirectory || !below || walkedThrough.has(real)) return;
    walkedThrough.add(real);
    const walk = boundedWalk(fs, real, budget, (path, entry) => {
      const through = `${logical}/${relative(real, path)}`;
      if (entry.isSymlink) {
        throughLink(through, path);
        return false;
      }
      if (entry.isDirectory) return true;
      if (!secret.match(through)) return false;
      try {
        const file = fs.lstat(path);
        if (file.isFile) mask(path, `${file.dev}:${file.ino}`);
      } catch {
        fail(`cannot look at ${path}`);
      }
      return false;
    }, (dir) => fail(`cannot read the directory ${dir}`));
    if (walk.partial) fail(`${link} leads to more than ${budget} directories`);
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
        let text: string | undefined;
        try {
          text = readSmall(fs, path)?.text;
        } catch {
          text = undefined;
        }
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
    // A symlink is not walked into: reading through it reaches a masked file, one outside the
    // wall — or, named like a secret, what it leads to, masked here.
    if (entry.isSymlink) {
      throughLink(rel, path);
      return false;
    }
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
    if (secret.match(rel)) mask(path, key);
    else if (facts.nlink > 1) files.push({ path, key });
    return false;
  }, (dir) => fail(`cannot read the directory ${dir}`));
  if (partial) fail(`the workspace has more than ${budget} directories`);
  for (const f of files) if (secretKeys.has(f.key)) masked.add(f.path);
  return { masked: [...masked], readOnly: [...readOnly], incomplete };
}

/**
 * The literal directory names the secret globs look for (`secrets`, `.aws`, `.config`, `gh`, …):
 * a symlink to a directory under one of these names makes what it leads to secret-bearing.
 */
function secretDirectoryNames(globs: readonly string[]): Set<string> {
  const names = new Set<string>();
  for (const glob of globs) {
    for (const segment of glob.split("/").slice(0, -1)) {
      if (!/[*?]/.test(segment)) names.add(segment.toLowerCase());
    }
  }
  return names;
}

/** The most of a repository's `config` the shield reads to find `core.hooksPath`. */
const GIT_CONFIG_MAX = 64 * 1024;

/**
 * Up to `max` bytes of a small file, as text, and whether there was more; undefined when it does
 * not exist.
 * @throws the provider's error when it exists and cannot be read.
 */
function readSmall(
  fs: FilesystemProvider,
  path: string,
  max = 4096,
): { text: string; cut: boolean } | undefined {
  let file;
  try {
    file = fs.open(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
  using handle = file;
  const bytes = handle.read(max + 1);
  return { text: new TextDecoder().decode(bytes.subarray(0, max)), cut: bytes.length > max };
}
