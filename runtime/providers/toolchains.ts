/**
 * Toolchain directories: where an operator's own programs live outside the system directories
 * (pyenv, nvm, rustup, `~/.local`, `/opt/…`). The OS wall is an allowlist, so a command sees such
 * a directory only when the operator adds it (`libos agent --toolchain DIR`, or `toolchains` in
 * the user's `config.jsonc`); each is bound read-only into the wall and its `bin` (or, without
 * one, the directory itself) is searched for programs before the system directories.
 *
 * What may not be a toolchain: the root, a whole home (the user's `HOME`, `/root`, `/home/*`), a
 * directory holding — or inside — libos's own configuration or state (the database, the audit
 * head, the model's API key), the workspace or anything inside it (workspace files would pose as
 * programs), the host's own configuration and kernel trees (`/etc`, `/proc`, `/sys`, `/dev`), and
 * the whole of a shared tree (`/tmp`, `/run`, `/var`: a directory inside one is fine).
 *
 * @module
 */
import { basename, dirname, isAbsolute, join } from "node:path";
import { ValidationError } from "../base/errors.ts";
import type { FilesystemProvider } from "./filesystem.ts";
import { insideWorkspace } from "./workspace_path.ts";

/** Host trees a toolchain may neither be, contain, nor lie inside. */
const HOST_TREES: readonly string[] = Object.freeze(["/etc", "/proc", "/sys", "/dev"]);
/** Host trees a toolchain may lie inside but neither be nor contain. */
const SHARED_TREES: readonly string[] = Object.freeze(["/tmp", "/run", "/var"]);

/** What a toolchain is checked against. */
export interface ToolchainFacts {
  readonly workspace: string;
  /** The user's home, when known. */
  readonly home?: string;
  /** libos's own places: state and configuration directories, the database, an env file. */
  readonly own: readonly string[];
}

/** One toolchain, checked. */
export interface Toolchain {
  /** The directory bound into the wall (its real path). */
  readonly root: string;
  /** Where programs are looked up: `root/bin` when it exists, else `root`. */
  readonly bin: string;
}

/** Whether `a` and `b` are the same path or one contains the other. */
function overlaps(a: string, b: string): boolean {
  return insideWorkspace(a, b) || insideWorkspace(b, a);
}

/**
 * Checks the operator's toolchain directories and resolves each to its real path; with
 * `bin: false`, programs are looked up in each directory itself (a search path entry).
 * @throws {ValidationError} naming the directory and why it cannot be one.
 */
export function checkToolchains(
  fs: FilesystemProvider,
  dirs: readonly string[],
  facts: ToolchainFacts,
  options: { readonly bin?: boolean } = {},
): Toolchain[] {
  const out: Toolchain[] = [];
  for (const dir of dirs) {
    const refuse = (why: string): never => {
      throw new ValidationError(
        `Cannot add the toolchain ${JSON.stringify(dir)}: ${why}`,
      );
    };
    if (typeof dir !== "string" || !isAbsolute(dir) || dir.includes("\0")) {
      refuse(
        "a toolchain is an absolute directory path (e.g. /opt/node or ~/.pyenv/versions/3.12.4)",
      );
    }
    let root: string;
    try {
      root = fs.realPath(dir);
      if (!fs.stat(root).isDirectory) refuse("it is not a directory");
    } catch (error) {
      if (error instanceof ValidationError) throw error;
      refuse(
        error instanceof Deno.errors.NotFound
          ? "it does not exist"
          : `it cannot be looked at (${error instanceof Error ? error.message : String(error)})`,
      );
    }
    root = root!;
    if (root === "/") {
      refuse("the whole host is not a toolchain; name the directory that holds the programs");
    }
    const homes = [facts.home, "/root"].filter((h): h is string => h !== undefined && h !== "");
    if (homes.includes(root) || dirname(root) === "/home") {
      refuse(
        "it is a whole home; name the toolchain inside it (e.g. ~/.local or ~/.pyenv/versions/3.12.4)",
      );
    }
    for (const own of facts.own) {
      if (overlaps(root, own)) {
        refuse(`it overlaps libos's own ${own} (state, configuration or credentials)`);
      }
    }
    if (overlaps(root, facts.workspace)) {
      refuse("it overlaps the workspace (workspace files must not pose as programs)");
    }
    for (const tree of HOST_TREES) {
      if (overlaps(root, tree)) refuse(`it overlaps ${tree}, which the wall shows only as it must`);
    }
    for (const tree of SHARED_TREES) {
      if (insideWorkspace(root, tree)) {
        refuse(`it holds all of ${tree}; name a directory inside it`);
      }
    }
    let bin = root;
    try {
      if (options.bin !== false && fs.stat(join(root, "bin")).isDirectory) bin = join(root, "bin");
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) {
        refuse(`its bin directory cannot be looked at (${(error as Error).message})`);
      }
    }
    if (!out.some((t) => t.root === root)) out.push({ root, bin });
  }
  return out;
}

/**
 * The toolchain to suggest for a program the user's own `PATH` finds at `found` (a real path):
 * the prefix above a `bin` directory, else the directory itself.
 */
export function suggestedToolchain(found: string): string {
  const dir = dirname(found);
  return basename(dir) === "bin" ? dirname(dir) : dir;
}
