/**
 * The filesystem primitive: read_text, write_text, list_dir, make_dir, delete_file, delete_dir,
 * stat — the only way any tool or syscall touches workspace files (DESIGN §2).
 *
 * Every call follows the same order:
 * 1. resolve the path lexically against the process cwd (`..` or an absolute path that leaves the
 *    workspace is refused; encoded forms are literal names);
 * 2. `decide()` on that path — before the filesystem is asked anything, so a caller without
 *    authority gets the same answer whether the target exists or not (no existence oracle);
 * 3. under the workspace lock (shared), canonicalise through the provider and decide again if a
 *    symlink led elsewhere (an alias cannot reach what its name could not; a symlink out of the
 *    workspace is refused);
 * 4. refuse a symlink as the final component; ask when a file has more than one hard link;
 * 5. open, then verify that what was opened is what was checked (same `dev`/`ino`, parent
 *    directory still at its canonical path): a directory swapped for a symlink between the check
 *    and the open is caught here. (`O_NOFOLLOW` through `node:fs` is ignored by Deno 2.9.6 and
 *    `/proc/self/fd` needs `--allow-all`, so identity is compared instead.)
 * 6. mutations run through the action ledger (intent committed first) and writes are atomic
 *    (a temporary file in the same directory, synced, then renamed over the target).
 *
 * Preconditions (exists, is a directory, would overwrite) are told only to a caller that may
 * stat or read the path; anyone else gets a generic "precondition not met".
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import type { ActionLedger } from "../action_ledger.ts";
import type { Authority } from "../authority.ts";
import { digestOf, sha256Hex } from "../canonical_json.ts";
import type { Right } from "../capability.ts";
import type { Action, Decision } from "../decide.ts";
import {
  ApprovalRequiredError,
  CapabilityDeniedError,
  IllegalTransitionError,
  NotFoundError,
  OutsideWorkspaceError,
  UnsafePathError,
  ValidationError,
} from "../errors.ts";
import { isFinal } from "../process.ts";
import type { ProcessManager } from "../process_manager.ts";
import type { PathFacts } from "../providers/filesystem.ts";
import type { FilesystemProvider } from "../providers/filesystem.ts";
import type { RuntimeCore } from "../runtime_core.ts";
import type { WorkspaceLock } from "../workspace_lock.ts";
import { canonicalPath, lexicalPath, type WorkspacePath } from "../workspace_path.ts";

/** Bounds enforced inside the primitive, whatever a tool's schema says. */
export interface FilesystemLimits {
  /** Default and largest `maxBytes` of a read. */
  readonly readBytes: number;
  readonly readBytesMax: number;
  /** Largest write. */
  readonly writeBytesMax: number;
  /** Default and largest number of directory entries listed. */
  readonly listEntries: number;
  readonly listEntriesMax: number;
  /** Largest number of entries a recursive delete may remove. */
  readonly deleteEntriesMax: number;
}

/** The limits when nothing else is configured. */
export const DEFAULT_FILESYSTEM_LIMITS: FilesystemLimits = Object.freeze({
  readBytes: 256 * 1024,
  readBytesMax: 8 * 1024 * 1024,
  writeBytesMax: 8 * 1024 * 1024,
  listEntries: 1000,
  listEntriesMax: 10_000,
  deleteEntriesMax: 10_000,
});

/** What the primitive needs. */
export interface FilesystemPrimitiveOptions {
  readonly core: RuntimeCore;
  readonly authority: Authority;
  readonly processes: ProcessManager;
  readonly ledger: ActionLedger;
  readonly provider: FilesystemProvider;
  /** The workspace's real path. */
  readonly workspace: string;
  readonly lock: WorkspaceLock;
  readonly limits?: Partial<FilesystemLimits>;
}

/** The type of a directory entry or path. */
export type EntryType = "file" | "directory" | "symlink" | "other";

function typeOf(f: Pick<PathFacts, "isFile" | "isDirectory" | "isSymlink">): EntryType {
  return f.isSymlink ? "symlink" : f.isDirectory ? "directory" : f.isFile ? "file" : "other";
}

/** Cuts UTF-8 bytes at the last whole code point at or before `max`. */
export function cutUtf8(bytes: Uint8Array, max: number): Uint8Array {
  if (bytes.length <= max) return bytes;
  let end = max;
  // Step back over continuation bytes (10xxxxxx) to the lead byte, then keep it only if whole.
  let lead = end;
  while (lead > 0 && lead > end - 4 && (bytes[lead - 1]! & 0xc0) === 0x80) lead--;
  if (lead > 0) {
    const b = bytes[lead - 1]!;
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    if (end - (lead - 1) < need) end = lead - 1;
  }
  return bytes.subarray(0, end);
}

function sameFile(a: PathFacts, b: PathFacts): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

function notFound(error: unknown): boolean {
  return error instanceof Deno.errors.NotFound;
}

/** The filesystem primitive of one runtime. */
export class FilesystemPrimitive {
  readonly #core: RuntimeCore;
  readonly #authority: Authority;
  readonly #processes: ProcessManager;
  readonly #ledger: ActionLedger;
  readonly #fs: FilesystemProvider;
  readonly #workspace: string;
  readonly #lock: WorkspaceLock;
  readonly limits: FilesystemLimits;

  /** Binds the primitive to a runtime. */
  constructor(options: FilesystemPrimitiveOptions) {
    this.#core = options.core;
    this.#authority = options.authority;
    this.#processes = options.processes;
    this.#ledger = options.ledger;
    this.#fs = options.provider;
    this.#workspace = options.workspace;
    this.#lock = options.lock;
    this.limits = { ...DEFAULT_FILESYSTEM_LIMITS, ...options.limits };
  }

  // ---------------------------------------------------------------- checks

  #record(
    pid: string,
    op: string,
    path: string,
    decision: "allow" | "ask" | "deny",
    authority: string,
    extra: { inputDigest?: string; detail?: Record<string, string | number | boolean | null> } = {},
  ): void {
    this.#core.audit.append({
      actor: pid,
      pid,
      action: op,
      resource: `fs:${path}`,
      decision,
      authority,
      ...extra,
    });
  }

  /** Decides, auditing a refusal in a step of its own so the record survives the throw. */
  #check(
    pid: string,
    op: string,
    action: Action & { resource: { type: "fs"; path: string } },
    what: string,
  ): Decision {
    try {
      return this.#authority.check(pid, action, what);
    } catch (error) {
      if (error instanceof CapabilityDeniedError) {
        this.#record(pid, op, action.resource.path, "deny", error.reason);
      }
      if (error instanceof ApprovalRequiredError) {
        this.#record(pid, op, action.resource.path, "ask", error.reason);
      }
      throw error;
    }
  }

  /** The calling process's cwd, refusing a finished or unknown process. */
  #cwd(pid: string): string {
    const p = this.#processes.get(pid);
    if (isFinal(p.status)) {
      throw new IllegalTransitionError(
        "illegal_transition",
        `Process ${pid} is ${p.status} and can touch no file`,
      );
    }
    return p.cwd;
  }

  #lexical(pid: string, op: string, path: string): WorkspacePath {
    try {
      return lexicalPath(this.#workspace, this.#cwd(pid), path);
    } catch (error) {
      if (error instanceof OutsideWorkspaceError) {
        this.#record(pid, op, String(path).slice(0, 4096), "deny", "containment");
      }
      throw error;
    }
  }

  /**
   * Settles authority on the path as written, then (under the lock) on where it really leads.
   * Returns the canonical path and the decision that allowed it.
   */
  #resolve(
    pid: string,
    op: string,
    lexical: WorkspacePath,
    right: Right,
    what: string,
    digest?: string,
  ): { path: WorkspacePath & { exists: boolean }; decision: Decision } {
    const action = (path: string) => ({
      resource: { type: "fs" as const, path },
      right,
      ...(digest ? { digest } : {}),
    });
    let decision = this.#check(pid, op, action(lexical.relative), what);
    let canonical: WorkspacePath & { exists: boolean };
    try {
      canonical = canonicalPath(this.#fs, this.#workspace, lexical);
    } catch (error) {
      if (error instanceof OutsideWorkspaceError) {
        this.#record(pid, op, lexical.relative, "deny", "containment");
      }
      throw error;
    }
    if (canonical.relative !== lexical.relative) {
      decision = this.#check(pid, op, action(canonical.relative), what);
    }
    return { path: canonical, decision };
  }

  /** Whether the caller may learn facts about a path (it may stat or read it). */
  #mayKnow(pid: string, path: string): boolean {
    return (["stat", "read"] as const).some((right) =>
      this.#authority.decide(pid, { resource: { type: "fs", path }, right }).effect === "allow"
    );
  }

  /** A precondition failure, worded by what the caller may know. */
  #precondition(pid: string, path: string, known: string): ValidationError {
    return new ValidationError(
      this.#mayKnow(pid, path)
        ? `Cannot use "${path}": ${known}`
        : `Cannot use "${path}": the operation's precondition was not met`,
    );
  }

  /** Asks when a file has more than one hard link: a link can reach a file outside the workspace. */
  #hardLinks(
    pid: string,
    op: string,
    path: string,
    facts: PathFacts,
    digest: string | undefined,
  ): void {
    if (facts.isFile && facts.nlink > 1) {
      this.#record(pid, op, path, "ask", "protected:hardlink");
      throw new ApprovalRequiredError(
        `Cannot use "${path}" without a human's approval: it has ${facts.nlink} hard links, and another of them may be outside the workspace`,
        { reason: "protected:hardlink", digest: digest ?? digestOf({ primitive: op, path }) },
      );
    }
  }

  #lstat(absolute: string): PathFacts | undefined {
    try {
      return this.#fs.lstat(absolute);
    } catch (error) {
      if (notFound(error)) return undefined;
      throw error;
    }
  }

  /** Refuses when the parent directory no longer resolves to itself (swapped for a symlink). */
  #parentStill(dir: string, path: string): void {
    let real: string;
    try {
      real = this.#fs.realPath(dir);
    } catch (error) {
      throw new UnsafePathError(
        `"${path}" changed while it was being used (its directory vanished); nothing was done`,
        { cause: error },
      );
    }
    if (real !== dir) {
      throw new UnsafePathError(
        `"${path}" changed while it was being used (its directory now leads elsewhere); nothing was done`,
      );
    }
  }

  /** Runs a mutation through the action ledger: intent committed first, outcome after. */
  #effect<T>(
    pid: string,
    kind: string,
    request: Record<string, string | number | boolean>,
    run: () => T,
  ): T {
    const { id } = this.#ledger.begin(pid, { kind, request });
    try {
      const value = run();
      this.#ledger.finish(id, { ok: true, value: request });
      return value;
    } catch (error) {
      this.#ledger.finish(id, {
        ok: false,
        error: {
          code: error instanceof Error && "code" in error ? String(error.code) : "failed",
          message: error instanceof Error ? error.message : String(error),
        },
      });
      throw error;
    }
  }

  /**
   * The shape every operation shares: resolve the path as written, decide on it before touching
   * the filesystem, then under the shared workspace lock canonicalise, decide again where it
   * really leads, and run `body`. An unsafe-path refusal (a symlink as the final component, a
   * file or directory that changed under the check) is audited as a denial.
   */
  async #operate<T>(
    pid: string,
    op: string,
    pathArg: string,
    right: Right,
    verb: (relative: string) => string,
    body: (
      path: WorkspacePath & { exists: boolean },
      decision: Decision,
      digest: string | undefined,
    ) => T,
    options: {
      readonly digest?: (relative: string) => string;
      readonly before?: (relative: string) => void;
    } = {},
  ): Promise<T> {
    const lexical = this.#lexical(pid, op, pathArg);
    options.before?.(lexical.relative);
    const digest = options.digest?.(lexical.relative);
    const what = verb(lexical.relative);
    this.#check(pid, op, {
      resource: { type: "fs", path: lexical.relative },
      right,
      ...(digest ? { digest } : {}),
    }, what);
    try {
      return await this.#lock.shared(() => {
        const { path, decision } = this.#resolve(pid, op, lexical, right, what, digest);
        return body(path, decision, digest);
      });
    } catch (error) {
      if (error instanceof UnsafePathError) {
        this.#record(pid, op, lexical.relative, "deny", "unsafe_path");
      }
      throw error;
    }
  }

  // ---------------------------------------------------------------- operations

  /**
   * Reads a UTF-8 text file, at most `maxBytes` (cut on a code point boundary).
   * @throws {CapabilityDeniedError} without read; {@link ApprovalRequiredError} for a
   *   secret-bearing or hard-linked file; {@link UnsafePathError} for a symlink or a file
   *   that changed while opening; {@link NotFoundError}.
   */
  async readText(
    pid: string,
    args: { readonly path: string; readonly maxBytes?: number },
  ): Promise<{ path: string; content: string; bytes: number; size: number; truncated: boolean }> {
    const maxBytes = args.maxBytes ?? this.limits.readBytes;
    if (!Number.isInteger(maxBytes) || maxBytes < 1 || maxBytes > this.limits.readBytesMax) {
      throw new ValidationError(
        `maxBytes must be an integer from 1 to ${this.limits.readBytesMax}, got ${maxBytes}`,
      );
    }
    const op = "fs.read";
    return await this.#operate(
      pid,
      op,
      args.path,
      "read",
      (rel) => `read "${rel}"`,
      (path, decision) => {
        const before = this.#lstat(path.absolute);
        if (!before) throw new NotFoundError(`Cannot read "${path.relative}": it does not exist`);
        if (before.isSymlink) {
          throw new UnsafePathError(
            `Cannot read "${path.relative}": it is a symbolic link, and libos does not follow one as the final component`,
          );
        }
        if (!before.isFile) {
          throw new ValidationError(
            `Cannot read "${path.relative}": it is a ${typeOf(before)}, not a file`,
          );
        }
        this.#hardLinks(pid, op, path.relative, before, undefined);
        using handle = this.#fs.open(path.absolute);
        if (!sameFile(handle.facts(), before)) {
          throw new UnsafePathError(
            `Cannot read "${path.relative}": it changed while it was being opened; nothing was read`,
          );
        }
        this.#parentStill(dirname(path.absolute), path.relative);
        const raw = handle.read(maxBytes + 1);
        const truncated = raw.length > maxBytes;
        const kept = cutUtf8(raw, maxBytes);
        const content = new TextDecoder().decode(kept);
        this.#authority.consume(decision);
        this.#record(pid, op, path.relative, "allow", decision.reason, {
          detail: { bytes: kept.length, truncated },
        });
        return {
          path: path.relative,
          content,
          bytes: kept.length,
          size: handle.facts().size,
          truncated,
        };
      },
    );
  }

  /**
   * Writes a UTF-8 text file atomically (temporary file, sync, rename).
   * @throws {CapabilityDeniedError} without write; {@link ApprovalRequiredError} for a protected
   *   path (`.git`, …) or a hard-linked file; {@link UnsafePathError}; {@link ValidationError}
   *   for a missing parent directory or `overwrite: false` on an existing file.
   */
  async writeText(
    pid: string,
    args: { readonly path: string; readonly content: string; readonly overwrite?: boolean },
  ): Promise<{ path: string; bytes: number; sha256: string; created: boolean }> {
    if (typeof args.content !== "string") throw new ValidationError("content must be text");
    const data = new TextEncoder().encode(args.content);
    if (data.length > this.limits.writeBytesMax) {
      throw new ValidationError(
        `Cannot write ${data.length} bytes: the limit is ${this.limits.writeBytesMax}`,
      );
    }
    const overwrite = args.overwrite ?? true;
    const op = "fs.write";
    const sha256 = sha256Hex(data);
    return await this.#operate(
      pid,
      op,
      args.path,
      "write",
      (rel) => `write "${rel}"`,
      (path, decision, digest) => {
        if (path.relative === ".") {
          throw new UnsafePathError(`Cannot write to the workspace root itself`);
        }
        const dir = dirname(path.absolute);
        const parent = this.#lstat(dir);
        if (!parent?.isDirectory) {
          throw this.#precondition(
            pid,
            dirname(path.relative),
            "its directory does not exist; create it with make_dir first",
          );
        }
        const existing = this.#lstat(path.absolute);
        if (existing?.isSymlink) {
          throw new UnsafePathError(
            `Cannot write "${path.relative}": it is a symbolic link, and libos does not follow one as the final component`,
          );
        }
        if (existing && !existing.isFile) {
          throw this.#precondition(pid, path.relative, `it is a ${typeOf(existing)}`);
        }
        if (existing && !overwrite) {
          throw this.#precondition(pid, path.relative, "it already exists and overwrite is false");
        }
        if (existing) this.#hardLinks(pid, op, path.relative, existing, digest);
        this.#authority.consume(decision);
        this.#effect(pid, op, { path: path.relative, sha256, bytes: data.length }, () => {
          const temp = join(dir, `.${basename(path.absolute)}.libos-${crypto.randomUUID()}.tmp`);
          let tempFacts: PathFacts;
          {
            using handle = this.#fs.create(temp, 0o644);
            handle.write(data);
            handle.sync();
            tempFacts = handle.facts();
          }
          try {
            this.#parentStill(dir, path.relative);
            const check = this.#lstat(temp);
            if (!check || !sameFile(check, tempFacts)) {
              throw new UnsafePathError(
                `"${path.relative}" changed while it was being written; nothing was written`,
              );
            }
            this.#fs.rename(temp, path.absolute);
          } catch (error) {
            try {
              this.#fs.remove(temp);
            } catch { /* it may already be gone */ }
            throw error;
          }
        });
        this.#record(pid, op, path.relative, "allow", decision.reason, {
          ...(digest ? { inputDigest: digest } : {}),
          detail: { bytes: data.length, created: !existing },
        });
        return { path: path.relative, bytes: data.length, sha256, created: !existing };
      },
      { digest: (rel) => digestOf({ primitive: op, path: rel, sha256, overwrite }) },
    );
  }

  /**
   * Lists a directory (entries are not followed), at most `limit` entries in name order.
   * @throws {CapabilityDeniedError} without read on the directory.
   */
  async listDir(
    pid: string,
    args: { readonly path?: string; readonly limit?: number } = {},
  ): Promise<{ path: string; entries: { name: string; type: EntryType }[]; truncated: boolean }> {
    const limit = args.limit ?? this.limits.listEntries;
    if (!Number.isInteger(limit) || limit < 1 || limit > this.limits.listEntriesMax) {
      throw new ValidationError(
        `limit must be an integer from 1 to ${this.limits.listEntriesMax}, got ${limit}`,
      );
    }
    const op = "fs.list";
    return await this.#operate(
      pid,
      op,
      args.path ?? ".",
      "read",
      (rel) => `list "${rel}"`,
      (path, decision) => {
        const facts = this.#lstat(path.absolute);
        if (!facts) throw new NotFoundError(`Cannot list "${path.relative}": it does not exist`);
        if (!facts.isDirectory) {
          throw new ValidationError(
            `Cannot list "${path.relative}": it is a ${typeOf(facts)}, not a directory`,
          );
        }
        const entries: { name: string; type: EntryType }[] = [];
        let truncated = false;
        for (const entry of this.#fs.readDir(path.absolute)) {
          if (entries.length >= limit) {
            truncated = true;
            break;
          }
          entries.push({ name: entry.name, type: typeOf(entry) });
        }
        this.#parentStill(path.absolute, path.relative);
        entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        this.#authority.consume(decision);
        this.#record(pid, op, path.relative, "allow", decision.reason, {
          detail: { entries: entries.length, truncated },
        });
        return { path: path.relative, entries, truncated };
      },
    );
  }

  /**
   * Creates a directory; with `parents`, every missing ancestor too (each one decided on).
   * @throws {CapabilityDeniedError} without write on each directory created.
   */
  async makeDir(
    pid: string,
    args: { readonly path: string; readonly parents?: boolean },
  ): Promise<{ path: string; created: string[] }> {
    const op = "fs.mkdir";
    return await this.#operate(
      pid,
      op,
      args.path,
      "write",
      (rel) => `create directory "${rel}"`,
      (path, decision) => {
        if (path.exists) {
          const facts = this.#lstat(path.absolute);
          if (facts?.isDirectory && args.parents) return { path: path.relative, created: [] };
          throw this.#precondition(pid, path.relative, "it already exists");
        }
        // The missing components, outermost first; each must be allowed on its own.
        const missing: string[] = [];
        for (
          let rel = path.relative;
          rel !== ".";
          rel = dirname(rel) === "." ? "." : dirname(rel)
        ) {
          if (this.#lstat(join(this.#workspace, rel))) break;
          missing.unshift(rel);
        }
        if (missing.length > 1 && !args.parents) {
          throw this.#precondition(
            pid,
            dirname(path.relative),
            "its parent directory does not exist; pass parents: true",
          );
        }
        const decisions = missing.map((rel) =>
          rel === path.relative ? decision : this.#check(
            pid,
            op,
            { resource: { type: "fs", path: rel }, right: "write" },
            `create directory "${rel}"`,
          )
        );
        for (const d of decisions) this.#authority.consume(d);
        this.#effect(pid, op, { path: path.relative, parents: args.parents ?? false }, () => {
          for (const rel of missing) {
            this.#parentStill(dirname(join(this.#workspace, rel)), rel);
            this.#fs.mkdir(join(this.#workspace, rel));
          }
        });
        for (const [i, rel] of missing.entries()) {
          this.#record(pid, op, rel, "allow", decisions[i]!.reason);
        }
        return { path: path.relative, created: missing };
      },
    );
  }

  /**
   * Deletes a file (or a symlink itself, never its target).
   * @throws {CapabilityDeniedError} without delete — also when the file does not exist.
   */
  async deleteFile(
    pid: string,
    args: { readonly path: string; readonly missingOk?: boolean },
  ): Promise<{ path: string; deleted: boolean }> {
    const op = "fs.delete";
    return await this.#operate(
      pid,
      op,
      args.path,
      "delete",
      (rel) => `delete "${rel}"`,
      (path, decision) => {
        const facts = this.#lstat(path.absolute);
        if (!facts) {
          if (!args.missingOk) throw this.#precondition(pid, path.relative, "it does not exist");
          // A no-op delete still uses up a one-shot approval: the approved action happened.
          this.#authority.consume(decision);
          this.#record(pid, op, path.relative, "allow", decision.reason, {
            detail: { deleted: false },
          });
          return { path: path.relative, deleted: false };
        }
        if (facts.isDirectory) {
          throw this.#precondition(pid, path.relative, "it is a directory; use delete_dir");
        }
        this.#hardLinks(pid, op, path.relative, facts, undefined);
        this.#authority.consume(decision);
        this.#effect(pid, op, { path: path.relative }, () => {
          this.#parentStill(dirname(path.absolute), path.relative);
          this.#fs.remove(path.absolute);
        });
        this.#record(pid, op, path.relative, "allow", decision.reason, {
          detail: { deleted: true },
        });
        return { path: path.relative, deleted: true };
      },
    );
  }

  /**
   * Deletes a directory; with `recursive`, everything in it — but only after deciding on every
   * entry inside (a deny or ask anywhere in the tree refuses the whole delete, nothing removed).
   * The workspace root is never deleted.
   */
  async deleteDir(
    pid: string,
    args: { readonly path: string; readonly recursive?: boolean },
  ): Promise<{ path: string; deleted: number }> {
    const op = "fs.rmdir";
    return await this.#operate(
      pid,
      op,
      args.path,
      "delete",
      (rel) => `delete directory "${rel}"`,
      (path, decision) => {
        if (path.relative === ".") {
          throw new UnsafePathError(
            "Cannot delete the workspace root; delete what is inside it instead",
          );
        }
        const facts = this.#lstat(path.absolute);
        if (!facts) throw this.#precondition(pid, path.relative, "it does not exist");
        if (!facts.isDirectory) {
          throw this.#precondition(pid, path.relative, `it is a ${typeOf(facts)}; use delete_file`);
        }
        // Walk without following anything, deciding on every entry before removing any.
        const entries: { rel: string; dir: boolean }[] = [];
        const walk = (rel: string) => {
          for (const entry of this.#fs.readDir(join(this.#workspace, rel))) {
            const child = `${rel}/${entry.name}`;
            if (entries.length >= this.limits.deleteEntriesMax) {
              throw new ValidationError(
                `Cannot delete "${path.relative}": it holds more than ${this.limits.deleteEntriesMax} entries`,
              );
            }
            if (!args.recursive) {
              throw this.#precondition(pid, path.relative, "it is not empty; pass recursive: true");
            }
            this.#check(
              pid,
              op,
              { resource: { type: "fs", path: child }, right: "delete" },
              `delete "${child}" inside "${path.relative}"`,
            );
            if (entry.isDirectory && !entry.isSymlink) walk(child);
            entries.push({ rel: child, dir: entry.isDirectory && !entry.isSymlink });
          }
        };
        walk(path.relative);
        this.#authority.consume(decision);
        this.#effect(pid, op, { path: path.relative, entries: entries.length }, () => {
          this.#parentStill(dirname(path.absolute), path.relative);
          for (const entry of entries) this.#fs.remove(join(this.#workspace, entry.rel));
          this.#fs.remove(path.absolute);
        });
        this.#record(pid, op, path.relative, "allow", decision.reason, {
          detail: { entries: entries.length },
        });
        return { path: path.relative, deleted: entries.length + 1 };
      },
      {
        // The workspace root is refused before any decision: no answer makes deleting it fine.
        before: (rel) => {
          if (rel !== ".") return;
          this.#record(pid, op, ".", "deny", "containment");
          throw new UnsafePathError(
            "Cannot delete the workspace root; delete what is inside it instead",
          );
        },
      },
    );
  }

  /**
   * Facts about a path. Without stat (or read) the answer is a denial, the same whether the path
   * exists or not.
   */
  async stat(
    pid: string,
    args: { readonly path: string },
  ): Promise<
    {
      path: string;
      exists: boolean;
      type: EntryType | null;
      size: number | null;
      mtime: number | null;
    }
  > {
    const op = "fs.stat";
    return await this.#operate(
      pid,
      op,
      args.path,
      "stat",
      (rel) => `stat "${rel}"`,
      (path, decision) => {
        const facts = this.#lstat(path.absolute);
        this.#authority.consume(decision);
        this.#record(pid, op, path.relative, "allow", decision.reason, {
          detail: { exists: facts !== undefined },
        });
        return {
          path: path.relative,
          exists: facts !== undefined,
          type: facts ? typeOf(facts) : null,
          size: facts ? facts.size : null,
          mtime: facts ? facts.mtime : null,
        };
      },
    );
  }
}
