/**
 * One runner per process tree. A launcher (`libos agent`) holds its run's lock while it runs the
 * run's processes, and `libos run`/`step` take the lock of every tree they run, so neither
 * recovers — and so steals — a quantum another runner still has in flight. The lock is an
 * advisory `flock` on a file in the state directory's `locks/` folder, which the kernel drops
 * however its holder ends; a `:memory:` database needs none (nothing else can open it).
 *
 * @module
 */
import { dirname } from "node:path";
import { LibosError } from "../runtime/base/errors.ts";
import type { Runtime } from "../runtime/runtime.ts";

function lockFile(runtime: Runtime, root: string): string | null {
  const base = runtime.location.lockPath;
  return base === null ? null : `${base.replace(/\.lock$/, "")}.${root}.agent.lock`;
}

function unsafeLock(path: string): LibosError {
  return new LibosError(
    "lock_unsafe",
    "operator",
    `The run lock ${path} is not a plain file (a symlink or something else was put there); remove it and run the command again`,
  );
}

/**
 * The lock file's identity when it is a plain file, undefined when there is none.
 * @throws {LibosError} `lock_unsafe` for a symlink or anything else.
 */
function plainFileOrNothing(path: string): Deno.FileInfo | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
  if (!info.isFile) throw unsafeLock(path);
  return info;
}

/**
 * The run lock of the tree rooted at `root`, or null when another runner holds it.
 * @throws {LibosError} `lock_unsafe` when the lock file is a symlink or not a file.
 */
export function tryRunLock(runtime: Runtime, root: string): Disposable | null {
  const path = lockFile(runtime, root);
  if (path === null) return { [Symbol.dispose]() {} };
  Deno.mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const before = plainFileOrNothing(path);
  const file = Deno.openSync(path, { read: true, write: true, create: true, mode: 0o600 });
  try {
    // What was opened is what was checked (or a file this call made): not a swapped-in link.
    const opened = file.statSync();
    const after = plainFileOrNothing(path);
    const same = (info: Deno.FileInfo | undefined) =>
      info !== undefined && info.ino === opened.ino && info.dev === opened.dev;
    if (!opened.isFile || !same(after) || (before !== undefined && !same(before))) {
      throw unsafeLock(path);
    }
  } catch (error) {
    file.close();
    throw error;
  }
  if (!file.tryLockSync(true)) {
    file.close();
    return null;
  }
  return {
    [Symbol.dispose]() {
      file.close();
    },
  };
}

/**
 * The run lock of the tree rooted at `root`.
 * @throws {LibosError} `run_busy` when another runner holds it.
 */
export function runLock(runtime: Runtime, root: string): Disposable {
  const held = tryRunLock(runtime, root);
  if (held) return held;
  throw new LibosError(
    "run_busy",
    "operator",
    `Process ${root} is being run by another libos agent right now (lock ${
      lockFile(runtime, root)
    }); wait for it to finish, or stop it and run "libos agent --resume ${root}" again`,
  );
}

/** The top-level process of `pid`'s tree (cached: a parent never changes), or null if unknown. */
export function rootFinder(runtime: Runtime): (pid: string) => string | null {
  const known = new Map<string, string | null>();
  const rootOf = (pid: string): string | null => {
    if (known.has(pid)) return known.get(pid)!;
    let answer: string | null;
    try {
      const parent = runtime.processes.get(pid).parent;
      answer = parent === null ? pid : rootOf(parent);
    } catch {
      answer = null;
    }
    known.set(pid, answer);
    return answer;
  };
  return rootOf;
}

/** Whether `pid` belongs to the tree rooted at `root`. */
export function treeOf(runtime: Runtime, root: string): (pid: string) => boolean {
  const rootOf = rootFinder(runtime);
  return (pid) => rootOf(pid) === root;
}

/**
 * A scheduler scope for `libos run`/`step`: every tree whose lock it can take (holding each lock
 * it took until `dispose`), none that another runner holds.
 */
export function unlockedTrees(
  runtime: Runtime,
): { readonly scope: (pid: string) => boolean; readonly busy: ReadonlySet<string> } & Disposable {
  const rootOf = rootFinder(runtime);
  const held = new DisposableStack();
  const taken = new Map<string, boolean>();
  const busy = new Set<string>();
  return {
    busy,
    scope(pid) {
      const root = rootOf(pid);
      if (root === null) return false;
      let ours = taken.get(root);
      if (ours === undefined) {
        const lock = tryRunLock(runtime, root);
        ours = lock !== null;
        if (lock) held.use(lock);
        else busy.add(root);
        taken.set(root, ours);
      }
      return ours;
    },
    [Symbol.dispose]() {
      held.dispose();
    },
  };
}
