/**
 * The commit of a patch (`_fs_patch.ts`): every change staged, then put in place; on a failure
 * midway, what was done is undone from the contents held in memory — all files or none.
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import { PatchError, UnsafePathError } from "../base/errors.ts";
import type { FilesystemProvider, PathFacts } from "../providers/filesystem.ts";
import type { WorkspacePath } from "../providers/workspace_path.ts";
import { sameFile } from "./_fs_support.ts";

/** What committing needs of the filesystem primitive. */
export interface CommitKit {
  readonly fs: FilesystemProvider;
  readonly workspace: string;
  lstat(absolute: string): PathFacts | undefined;
  parentStill(dir: string, path: string): void;
}

/** One file a patch changes: where, what was there (facts, bytes) and what it leaves (null: deleted). */
export interface FileToCommit {
  readonly written: string;
  readonly path: WorkspacePath;
  readonly facts: PathFacts | undefined;
  readonly before: Uint8Array | undefined;
  readonly after: Uint8Array | null | undefined;
}

/**
 * Applies the changes: directories, then every new content staged beside its target and synced,
 * then renames and removals. On a failure, what was done is undone from the contents held.
 */
export function commit(
  kit: CommitKit,
  changes: readonly FileToCommit[],
  dirs: readonly string[],
): void {
  const made: string[] = [];
  const staged = new Map<FileToCommit, string>();
  const done: FileToCommit[] = [];
  try {
    for (const rel of dirs) {
      kit.parentStill(dirname(join(kit.workspace, rel)), rel);
      kit.fs.mkdir(join(kit.workspace, rel));
      made.push(rel);
    }
    for (const f of changes) {
      if (!f.after) continue;
      staged.set(f, stage(kit, f.path.absolute, f.after));
    }
    for (const f of changes) {
      const dir = dirname(f.path.absolute);
      kit.parentStill(dir, f.written);
      const now = kit.lstat(f.path.absolute);
      if (
        (now === undefined) !== (f.facts === undefined) ||
        (now && f.facts && !sameFile(now, f.facts))
      ) {
        throw new UnsafePathError(`"${f.written}" changed while the patch was being applied`);
      }
      if (f.after === null) kit.fs.remove(f.path.absolute);
      else kit.fs.rename(staged.get(f)!, f.path.absolute);
      staged.delete(f);
      done.push(f);
    }
  } catch (error) {
    const left = undo(kit, done, made, staged);
    const what = error instanceof Error ? error.message : String(error);
    if (left.length > 0) {
      throw new PatchError(
        "patch_partial",
        `The patch failed midway (${what}) and could not be fully undone: ${
          left.join("; ")
        }; check these files (a checkpoint or git restores them)`,
        { cause: error },
      );
    }
    throw new PatchError(
      "patch_rolled_back",
      `The patch failed while being written (${what}); every file was put back as it was, nothing was changed; try again`,
      { cause: error },
    );
  }
}

/** Writes `data` to a new temporary file beside `target`, synced; returns its path. */
function stage(kit: CommitKit, target: string, data: Uint8Array): string {
  const temp = join(dirname(target), `.${basename(target)}.libos-${crypto.randomUUID()}.tmp`);
  try {
    using handle = kit.fs.create(temp, 0o644);
    handle.write(data);
    handle.sync();
  } catch (error) {
    try {
      kit.fs.remove(temp);
    } catch { /* never created */ }
    throw error;
  }
  return temp;
}

/** Puts back what a failed commit changed; returns what could not be put back. */
function undo(
  kit: CommitKit,
  done: readonly FileToCommit[],
  made: readonly string[],
  staged: Map<FileToCommit, string>,
): string[] {
  const left: string[] = [];
  for (const temp of staged.values()) {
    try {
      kit.fs.remove(temp);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) left.push(`temporary file ${temp} remains`);
    }
  }
  for (const f of [...done].reverse()) {
    try {
      if (f.before === undefined) kit.fs.remove(f.path.absolute);
      else kit.fs.rename(stage(kit, f.path.absolute, f.before), f.path.absolute);
    } catch (error) {
      left.push(`"${f.written}" (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  for (const rel of [...made].reverse()) {
    try {
      kit.fs.remove(join(kit.workspace, rel));
    } catch (error) {
      left.push(`directory "${rel}" (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  return left;
}
