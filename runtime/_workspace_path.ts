/**
 * Containment of process working directories: a path is resolved against the process cwd,
 * checked lexically, then canonicalised through the filesystem provider and checked again, so
 * neither `..` nor a symlink leads out of the workspace. The stored cwd is the canonical
 * workspace-relative path, so a later symlink swap cannot move it.
 *
 * @module
 */
import { isAbsolute, relative, resolve } from "node:path";
import { NotFoundError, OutsideWorkspaceError, ValidationError } from "./errors.ts";
import type { FilesystemProvider } from "./providers/filesystem.ts";

const MAX_PATH = 4096;

function inside(workspace: string, path: string): boolean {
  const rel = relative(workspace, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * The workspace-relative canonical form (`.` for the root) of directory `path`, resolved from
 * workspace-relative `cwd`.
 * @throws {OutsideWorkspaceError} when it leads outside the workspace.
 * @throws {NotFoundError} when it does not exist.
 * @throws {ValidationError} when it is malformed or not a directory.
 */
export function containedDirectory(
  fs: FilesystemProvider,
  workspace: string,
  cwd: string,
  path: string,
): string {
  if (
    typeof path !== "string" || path.length === 0 || path.length > MAX_PATH || path.includes("\0")
  ) {
    throw new ValidationError(
      `A directory must be a non-empty path of at most ${MAX_PATH} characters without NUL bytes`,
    );
  }
  const target = resolve(workspace, cwd, path);
  if (!inside(workspace, target)) {
    throw new OutsideWorkspaceError(
      `Cannot use directory ${
        JSON.stringify(path)
      }: it is outside the workspace; use a path inside it`,
    );
  }
  let real: string;
  try {
    real = fs.realPath(target);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new NotFoundError(`Cannot use directory ${JSON.stringify(path)}: it does not exist`, {
        cause: error,
      });
    }
    throw error;
  }
  if (!inside(workspace, real)) {
    throw new OutsideWorkspaceError(
      `Cannot use directory ${JSON.stringify(path)}: a symlink leads outside the workspace`,
    );
  }
  if (!fs.stat(real).isDirectory) {
    throw new ValidationError(`Cannot use ${JSON.stringify(path)} as a directory: it is not one`);
  }
  return relative(workspace, real) || ".";
}
