/**
 * The filesystem provider: the host backend that primitives use to touch files. Primitives
 * decide; providers only do. The authority issue extends this interface with reads and writes;
 * today the process manager uses it to canonicalise a `chdir` target.
 *
 * @module
 */

/** What a provider says about a path. */
export interface PathFacts {
  readonly isDirectory: boolean;
  readonly isFile: boolean;
}

/** Host filesystem operations the runtime needs. */
export interface FilesystemProvider {
  /** The canonical path with every symlink resolved; throws `Deno.errors.NotFound` when missing. */
  realPath(path: string): string;
  /** Facts about a path (following symlinks); throws `Deno.errors.NotFound` when missing. */
  stat(path: string): PathFacts;
}

/** The provider backed by the real host filesystem through `Deno`. */
export function hostFilesystem(): FilesystemProvider {
  return {
    realPath: (path) => Deno.realPathSync(path),
    stat: (path) => {
      const info = Deno.statSync(path);
      return { isDirectory: info.isDirectory, isFile: info.isFile };
    },
  };
}
