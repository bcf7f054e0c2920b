/**
 * Containment of paths in the workspace. A path is first resolved lexically (against the process
 * cwd; `..` and absolute paths are refused when they leave the workspace; percent-encodings and
 * other "encoded forms" are literal names), so authority can be settled before the filesystem is
 * asked anything. Only then is it canonicalised through the filesystem provider — the real path
 * of its deepest existing ancestor plus the rest — and checked again, so a symlink cannot lead
 * out of the workspace either.
 *
 * @module
 */
import { isAbsolute, join, relative, resolve } from "node:path";
import { NotFoundError, OutsideWorkspaceError, ValidationError } from "../base/errors.ts";
import type { FilesystemProvider } from "./filesystem.ts";

const MAX_PATH = 4096;

/** Whether absolute `path` is the workspace or inside it. */
export function insideWorkspace(workspace: string, path: string): boolean {
  const rel = relative(workspace, path);
  // `..` as a whole segment leaves; a name that merely starts with dots (`..%2fx`) does not.
  return rel === "" || (rel !== ".." && !rel.startsWith("../") && !isAbsolute(rel));
}

/** A path resolved inside the workspace. */
export interface WorkspacePath {
  /** Workspace-relative, `.` for the root. */
  readonly relative: string;
  readonly absolute: string;
}

/**
 * Resolves `path` from workspace-relative `cwd` without touching the filesystem.
 * @throws {ValidationError} for an empty, over-long or NUL-bearing path.
 * @throws {OutsideWorkspaceError} when it leaves the workspace.
 */
export function lexicalPath(workspace: string, cwd: string, path: string): WorkspacePath {
  if (
    typeof path !== "string" || path.length === 0 || path.length > MAX_PATH ||
    path.includes("\0") || !path.isWellFormed()
  ) {
    throw new ValidationError(
      `A path must be 1-${MAX_PATH} characters of well-formed text without NUL bytes, got ${
        JSON.stringify(path.slice(0, 200))
      }`,
    );
  }
  const absolute = resolve(workspace, cwd, path);
  if (!insideWorkspace(workspace, absolute)) {
    throw new OutsideWorkspaceError(
      `Cannot use ${JSON.stringify(path)}: it is outside the workspace ${
        JSON.stringify(workspace)
      }; use a path inside it, relative (like "src/app.ts") or absolute under ${
        JSON.stringify(workspace)
      }`,
    );
  }
  return { relative: relative(workspace, absolute) || ".", absolute };
}

/**
 * The canonical form of a lexical workspace path: the real path of the deepest existing ancestor
 * of its *directory*, the missing rest appended, and its final component kept as written — a
 * symlink as the final component is not followed here (the primitive refuses it after an
 * `lstat`), so deleting a symlink deletes the link and reading one is refused. With
 * `followFinal` the final component is resolved too (a working directory is stored fully
 * resolved). A final symlink leading outside is refused unless `linkItself` (a delete of the
 * link). `exists` says whether the final component exists (as a link or otherwise).
 * @throws {OutsideWorkspaceError} when a symlink leads outside the workspace.
 */
export function canonicalPath(
  fs: FilesystemProvider,
  workspace: string,
  path: WorkspacePath,
  options: {
    readonly followFinal?: boolean;
    /**
     * The operation acts on a final symlink itself (a delete removes the link): where it points
     * is not held against it, since nothing there is touched.
     */
    readonly linkItself?: boolean;
  } = {},
): WorkspacePath & { readonly exists: boolean } {
  const resolveExisting = (target: string): { real: string; rest: string[] } => {
    let existing = target;
    const rest: string[] = [];
    for (;;) {
      try {
        return { real: fs.realPath(existing), rest };
      } catch (error) {
        if (error instanceof Deno.errors.NotADirectory) {
          throw new ValidationError(
            `Cannot use ${
              JSON.stringify(path.relative)
            }: part of it is a file, not a directory; check the path (read_directory shows what exists)`,
            { cause: error },
          );
        }
        if (
          !(error instanceof Deno.errors.NotFound) || existing === workspace || existing === "/"
        ) throw error;
        const slash = existing.lastIndexOf("/");
        rest.unshift(existing.slice(slash + 1));
        existing = existing.slice(0, slash) || "/";
      }
    }
  };
  let absolute: string;
  if (path.relative === "." || options.followFinal) {
    const { real, rest } = resolveExisting(path.absolute);
    absolute = rest.length ? join(real, ...rest) : real;
  } else {
    const slash = path.absolute.lastIndexOf("/");
    const { real, rest } = resolveExisting(path.absolute.slice(0, slash) || "/");
    absolute = join(real, ...rest, path.absolute.slice(slash + 1));
  }
  if (!insideWorkspace(workspace, absolute)) {
    throw new OutsideWorkspaceError(
      `Cannot use ${JSON.stringify(path.relative)}: a symlink leads outside the workspace`,
    );
  }
  let exists = true;
  try {
    if (fs.lstat(absolute).isSymlink && !options.linkItself) {
      // Not followed for the operation, but a link that leads out is named for what it is.
      let target: string | undefined;
      let unresolvable = false;
      try {
        target = fs.realPath(absolute);
      } catch (error) {
        // Dangling: refused later as a symlink. Anything else (no permission to follow it, a
        // loop) cannot be shown to stay inside, so it is taken to lead out.
        unresolvable = !(error instanceof Deno.errors.NotFound);
      }
      if (unresolvable || (target !== undefined && !insideWorkspace(workspace, target))) {
        throw new OutsideWorkspaceError(
          `Cannot use ${JSON.stringify(path.relative)}: a symlink leads outside the workspace`,
        );
      }
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    exists = false;
  }
  return { relative: relative(workspace, absolute) || ".", absolute, exists };
}

/**
 * The workspace-relative canonical form (`.` for the root) of directory `path`, resolved from
 * workspace-relative `cwd`. `authorize` runs first on the path as written — before the
 * filesystem is touched, so a caller without authority learns nothing about what exists — and
 * again on where a symlink really leads.
 * @throws {OutsideWorkspaceError} when it leads outside the workspace.
 * @throws {NotFoundError} when it does not exist.
 * @throws {ValidationError} when it is malformed or not a directory.
 */
export function containedDirectory(
  fs: FilesystemProvider,
  workspace: string,
  cwd: string,
  path: string,
  authorize: (relative: string) => void = () => {},
): string {
  const lexical = lexicalPath(workspace, cwd, path);
  authorize(lexical.relative);
  const canonical = canonicalPath(fs, workspace, lexical, { followFinal: true });
  if (canonical.relative !== lexical.relative) authorize(canonical.relative);
  if (!canonical.exists) {
    throw new NotFoundError(`Cannot use directory ${JSON.stringify(path)}: it does not exist`);
  }
  if (!fs.stat(canonical.absolute).isDirectory) {
    throw new ValidationError(`Cannot use ${JSON.stringify(path)} as a directory: it is not one`);
  }
  return canonical.relative;
}
