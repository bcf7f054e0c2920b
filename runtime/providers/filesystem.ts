/**
 * The filesystem provider: the host backend primitives use to touch files. Primitives decide;
 * providers only do. Everything here is synchronous and follows no policy of its own, so the
 * primitive's check-then-verify sequence runs without an `await` in the middle.
 *
 * Measured on Deno 2.9.6: `node:fs` accepts `O_NOFOLLOW` but ignores it (a symlink is opened
 * and followed), and `/proc/self/fd` is readable only with `--allow-all`. So the provider offers
 * `lstat` before opening and the identity (`dev`, `ino`) of what was opened after, and the
 * primitive compares them (see `runtime/primitives/filesystem.ts`).
 *
 * @module
 */

/** What a provider says about a path or an open file. */
export interface PathFacts {
  readonly isFile: boolean;
  readonly isDirectory: boolean;
  readonly isSymlink: boolean;
  readonly size: number;
  readonly nlink: number;
  readonly dev: number;
  readonly ino: number;
  /** Milliseconds since the epoch, when known. */
  readonly mtime: number | null;
}

/** An open file. */
export interface FileHandle extends Disposable {
  /** Facts about the open file itself (not whatever its path names now). */
  facts(): PathFacts;
  /** Reads from the start, at most `max` bytes. */
  read(max: number): Uint8Array;
  /** Writes all of `data` at the current position. */
  write(data: Uint8Array): void;
  /** Flushes to the disk. */
  sync(): void;
  close(): void;
}

/** One directory entry (not followed). */
export interface DirEntry {
  readonly name: string;
  readonly isFile: boolean;
  readonly isDirectory: boolean;
  readonly isSymlink: boolean;
}

/** Host filesystem operations the runtime needs. Missing paths throw `Deno.errors.NotFound`. */
export interface FilesystemProvider {
  /** The canonical path with every symlink resolved. */
  realPath(path: string): string;
  /** Facts about a path, following symlinks. */
  stat(path: string): PathFacts;
  /** Facts about a path itself, not following a final symlink. */
  lstat(path: string): PathFacts;
  /** Opens an existing file for reading. */
  open(path: string): FileHandle;
  /** Creates a new file for writing; fails if anything (even a dangling symlink) is at the path. */
  create(path: string, mode: number): FileHandle;
  /** The entries of a directory, without following them. */
  readDir(path: string): Iterable<DirEntry>;
  /** Creates one directory (its parent must exist). */
  mkdir(path: string): void;
  /** Renames within a filesystem, replacing `to` (a symlink at `to` is replaced, not followed). */
  rename(from: string, to: string): void;
  /** Removes a file, a symlink (not its target) or an empty directory. */
  remove(path: string): void;
}

function facts(info: Deno.FileInfo): PathFacts {
  return {
    isFile: info.isFile,
    isDirectory: info.isDirectory,
    isSymlink: info.isSymlink,
    size: info.size,
    nlink: info.nlink ?? 1,
    dev: info.dev,
    ino: info.ino ?? 0,
    mtime: info.mtime?.getTime() ?? null,
  };
}

/** The first buffer a read fills (doubled while the file goes on, up to the read's bound). */
const READ_CHUNK = 64 * 1024;

function handle(file: Deno.FsFile): FileHandle {
  return {
    facts: () => facts(file.statSync()),
    read(max) {
      // Grown as the file turns out longer, not allocated at `max` up front: a search reads
      // thousands of small files with a 1 MiB bound each, and zeroing 1 MiB per file was most
      // of its time.
      let out = new Uint8Array(Math.min(max, READ_CHUNK));
      let filled = 0;
      while (filled < max) {
        if (filled === out.length) {
          const grown = new Uint8Array(Math.min(max, out.length * 2));
          grown.set(out);
          out = grown;
        }
        const n = file.readSync(out.subarray(filled));
        if (n === null || n === 0) break;
        filled += n;
      }
      return out.subarray(0, filled);
    },
    write(data) {
      let done = 0;
      while (done < data.length) done += file.writeSync(data.subarray(done));
    },
    sync: () => file.syncSync(),
    close: () => file.close(),
    [Symbol.dispose]: () => {
      try {
        file.close();
      } catch { /* already closed */ }
    },
  };
}

/** The provider backed by the real host filesystem through `Deno`. */
export function hostFilesystem(): FilesystemProvider {
  return {
    realPath: (path) => Deno.realPathSync(path),
    stat: (path) => facts(Deno.statSync(path)),
    lstat: (path) => facts(Deno.lstatSync(path)),
    open: (path) => handle(Deno.openSync(path, { read: true })),
    create: (path, mode) => handle(Deno.openSync(path, { write: true, createNew: true, mode })),
    readDir: (path) => Deno.readDirSync(path),
    mkdir: (path) => Deno.mkdirSync(path),
    rename: (from, to) => Deno.renameSync(from, to),
    remove: (path) => Deno.removeSync(path),
  };
}

/** One call a {@link recordingFilesystem} saw. */
export interface RecordedCall {
  readonly op: keyof FilesystemProvider;
  readonly path: string;
}

/**
 * A fake for tests: forwards to `inner` and records every call, and lets a test run a hook just
 * before an operation (to swap a directory for a symlink at the worst moment, say).
 */
export function recordingFilesystem(
  inner: FilesystemProvider,
  calls: RecordedCall[],
  before?: (call: RecordedCall) => void,
): FilesystemProvider {
  const wrap = <K extends keyof FilesystemProvider>(op: K): FilesystemProvider[K] =>
    ((path: string, ...rest: unknown[]) => {
      const call = { op, path };
      before?.(call);
      calls.push(call);
      return (inner[op] as (path: string, ...rest: unknown[]) => unknown)(path, ...rest);
    }) as FilesystemProvider[K];
  return {
    realPath: wrap("realPath"),
    stat: wrap("stat"),
    lstat: wrap("lstat"),
    open: wrap("open"),
    create: wrap("create"),
    readDir: wrap("readDir"),
    mkdir: wrap("mkdir"),
    rename: wrap("rename"),
    remove: wrap("remove"),
  };
}
