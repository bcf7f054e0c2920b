/**
 * The filesystem primitive: read_text, write_text, list_dir, make_dir, delete_file, delete_dir,
 * stat — the only way any tool or syscall touches workspace files (DESIGN §2).
 *
 * Every call follows the same order (see {@link FilesystemPrimitive.#operate}):
 * 1. resolve the path lexically against the process cwd (`..` or an absolute path that leaves the
 *    workspace is refused; encoded forms are literal names);
 * 2. `decide()` on that path, with the action's digest — before the filesystem is asked
 *    anything, so a caller without authority gets the same answer whether the target exists or
 *    not (no existence oracle); a deny is audited and thrown;
 * 3. under the workspace lock (shared), canonicalise through the provider and decide again if a
 *    symlink led elsewhere (an alias cannot reach what its name could not; a symlink out of the
 *    workspace is refused);
 * 4. refuse a symlink as the final component; a file with more than one hard link, or an `ask`
 *    decision, needs a human's approval of exactly this action — bound to the path as written and
 *    as resolved, the content and flags, the target's fingerprint and every entry of a recursive
 *    delete. Without one it goes to the human channel (after the lock is released) with the facts
 *    and the diff the human needs: interactive approval retries the call, queue mode parks the
 *    process. Every one-shot capability behind the action (an approval included) is used up
 *    here, compare-and-set, before the effect (the ask/park/retry loop is `approval_gate.ts`);
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
import { basename, dirname, join, relative } from "node:path";
import type { ActionLedger } from "../process/action_ledger.ts";
import { type Authority, explained } from "../authority/authority.ts";
import { digestOf, type JsonValue, sha256Hex } from "../base/canonical_json.ts";
import type { Right } from "../authority/capability.ts";
import type { Decision } from "../authority/decide.ts";
import {
  ApprovalRequiredError,
  IllegalTransitionError,
  LibosError,
  NotFoundError,
  OutsideWorkspaceError,
  UnsafePathError,
  ValidationError,
} from "../base/errors.ts";
import { z } from "zod";
import { type ActionOperation, ActionRegistry, defineAction } from "../human/action_registry.ts";
import type { HumanChannel } from "../human/human_channel.ts";
import type { ApprovalDetails, PendingAction } from "../human/human_request.ts";
import { isFinal } from "../process/process.ts";
import { ApprovalGate, type Attempt } from "./approval_gate.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { FilesystemProvider, PathFacts } from "../providers/filesystem.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import { globFiles, type GlobResult } from "./_fs_search.ts";
import { type GrepArgs, grepFiles, type GrepResult } from "./_fs_grep.ts";
import { applyPatch, type PatchKit, type PatchResult } from "./_fs_patch.ts";
import { type Redactor, redactor } from "../base/redaction.ts";
import { SECRET_SCAN_LOOKAHEAD, SecretScanner } from "../base/secret_scan.ts";
import { globSet, SECRET_GLOBS } from "../base/path_glob.ts";
import { unifiedDiff } from "../base/unified_diff.ts";
import type { WorkspaceLock } from "../base/workspace_lock.ts";
import { canonicalPath, lexicalPath, type WorkspacePath } from "../providers/workspace_path.ts";
import {
  type AskFacts,
  AskNeeded,
  cutUtf8,
  DEFAULT_FILESYSTEM_LIMITS,
  type EntryType,
  type FilesystemLimits,
  sameFile,
  stricter,
  targetFingerprint,
  typeOf,
} from "./_fs_support.ts";
import {
  applyEdits,
  type BinaryKind,
  binaryKind,
  capLines,
  checkEdits,
  type LineRange,
  lineRange,
  type ReadResult,
  splitLines,
  type TextEdit,
} from "./_fs_text.ts";

export type { BinaryKind, ReadResult, TextEdit } from "./_fs_text.ts";
export { DEFAULT_FILESYSTEM_LIMITS, type EntryType, type FilesystemLimits } from "./_fs_support.ts";
export type { PatchResult } from "./_fs_patch.ts";

/** What the primitive needs. */
export interface FilesystemPrimitiveOptions {
  readonly core: RuntimeCore;
  readonly authority: Authority;
  readonly processes: ProcessManager;
  readonly ledger: ActionLedger;
  readonly human: HumanChannel;
  readonly provider: FilesystemProvider;
  /** The workspace's real path. */
  readonly workspace: string;
  readonly lock: WorkspaceLock;
  readonly limits?: Partial<FilesystemLimits>;
  /**
   * Known secret values: a read returns them as `[redacted]` (before it is cut, so a cut cannot
   * leave part of one), a search matches the redacted text, and an edit refuses a file holding one.
   */
  readonly secrets?: readonly string[];
  /**
   * Told of every file a process wrote or deleted, after the change (what a host shows its user:
   * `libos agent` prints each edit's diff, approved or not). What it throws is ignored.
   */
  readonly onChange?: (change: FileChange) => void;
}

/** A file a process changed, as a host is told of it. */
export interface FileChange {
  readonly pid: string;
  /** Workspace-relative. */
  readonly path: string;
  readonly op: "create" | "write" | "delete";
  /**
   * A unified diff of the change (raw: a host escapes it); null when it is not shown — a secret
   * (by its name or its content), or a file too large or not text.
   */
  readonly diff: string | null;
  readonly bytes: number | null;
}

/** What an operation's body works with. */
interface OpContext {
  readonly path: WorkspacePath & { readonly exists: boolean };
  /** The path as the caller wrote it (workspace-relative), before symlinks were resolved. */
  readonly written: string;
  readonly decision: Decision;
  readonly digest: string;
  /**
   * Goes to the human when the decision asks, the target is hard-linked or the content read
   * carries a secret; returns otherwise.
   */
  gate(facts: AskFacts): void;
  /** Decides on another path of the same action (an entry inside a directory being deleted). */
  decideAlso(relative: string, right: Right, what: string): Decision;
}

/** The largest current file a diff is computed against (bigger ones show a preview only). */
const DIFF_SOURCE_MAX = 1024 * 1024;

/** Entries a listing reads at most before it sorts and cuts (larger directories are truncated). */
const LIST_SCAN_MAX = 100_000;

/** The filesystem primitive of one runtime. */
export class FilesystemPrimitive {
  readonly #core: RuntimeCore;
  readonly #authority: Authority;
  readonly #processes: ProcessManager;
  readonly #ledger: ActionLedger;
  readonly #gate: ApprovalGate;
  readonly #fs: FilesystemProvider;
  readonly #workspace: string;
  readonly #lock: WorkspaceLock;
  /** Records written so far (to tell whether a failed operation left its decision's record). */
  #records = 0;
  readonly #redactor: Redactor;
  /** The longest secret, in bytes: how far past its cut a read looks to redact a whole secret. */
  readonly #secretBytes: number;
  /** Finds a secret (a private key, a token) in what a read is about to return. */
  readonly #scanner = new SecretScanner();
  /** Secret-bearing files by path, whose current content a write's diff must not show. */
  readonly #secretPaths = globSet(SECRET_GLOBS);
  readonly limits: FilesystemLimits;
  readonly #onChange: ((change: FileChange) => void) | undefined;

  /** Binds the primitive to a runtime. */
  constructor(options: FilesystemPrimitiveOptions) {
    this.#core = options.core;
    this.#authority = options.authority;
    this.#processes = options.processes;
    this.#ledger = options.ledger;
    this.#gate = new ApprovalGate({ authority: options.authority, human: options.human });
    this.#fs = options.provider;
    this.#workspace = options.workspace;
    this.#lock = options.lock;
    this.#onChange = options.onChange;
    this.limits = { ...DEFAULT_FILESYSTEM_LIMITS, ...options.limits };
    this.#redactor = redactor(options.secrets ?? []);
    this.#secretBytes = Math.max(
      0,
      ...(options.secrets ?? []).map((secret) => new TextEncoder().encode(secret).length),
    );
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
    this.#records++;
    this.#core.audit.append({
      actor: pid,
      pid,
      action: op,
      resource: `fs:${path}`,
      decision,
      authority,
      ...extra,
      ...explained(this.#authority.explanation(authority), extra.detail),
    });
  }

  /** Decides; a deny is audited (in a step of its own, so the record survives) and thrown. */
  #decide(
    pid: string,
    op: string,
    path: string,
    right: Right,
    digest: string,
    what: string,
  ): Decision {
    const action = { resource: { type: "fs" as const, path }, right, digest };
    const decision = this.#authority.decide(pid, action);
    if (decision.effect === "deny") {
      this.#record(pid, op, path, "deny", decision.reason, { inputDigest: digest });
      throw this.#authority.refusal(pid, action, decision, what);
    }
    return decision;
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

  #canonical(
    pid: string,
    op: string,
    lexical: WorkspacePath,
    linkItself: boolean,
  ): WorkspacePath & { exists: boolean } {
    try {
      return canonicalPath(this.#fs, this.#workspace, lexical, { linkItself });
    } catch (error) {
      if (error instanceof OutsideWorkspaceError) {
        this.#record(pid, op, lexical.relative, "deny", "containment");
      }
      throw error;
    }
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

  #lstat(absolute: string): PathFacts | undefined {
    try {
      return this.#fs.lstat(absolute);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return undefined;
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

  /** The approval request a human sees for an operation that asked. */
  #details(op: string, right: Right, ask: AskNeeded): Omit<ApprovalDetails, "action"> {
    const f = ask.facts;
    return {
      primitive: "filesystem",
      operation: op,
      path: ask.path.relative,
      absolutePath: ask.path.absolute,
      resource: `fs:${ask.path.relative}`,
      right,
      reason: ask.reason,
      grantScope: "this exact action, once (bound to its digest)",
      willCreate: f.willCreate ?? null,
      willOverwrite: f.willOverwrite ?? null,
      target: f.target === undefined
        ? { exists: false, type: null, size: null, mtime: null, links: null }
        : {
          exists: true,
          type: typeOf(f.target),
          size: f.target.size,
          mtime: f.target.mtime,
          links: f.target.nlink,
        },
      bytes: f.bytes ?? null,
      sha256: f.sha256 ?? null,
      preview: f.preview ?? null,
      diff: f.diff ?? null,
      executable: null,
      argv: null,
      cwd: null,
      envHash: null,
      digest: ask.digest,
      ceiling: ask.ceiling,
    };
  }

  /**
   * The shape every operation shares (see the module documentation). `args` are the call's
   * arguments as given — they are what an approval re-dispatches; `digestFields` are what the
   * action digest binds besides the primitive and the path.
   */
  async #operate<T>(
    pid: string,
    op: string,
    args: Record<string, JsonValue>,
    right: Right,
    verb: (relative: string) => string,
    digestFields: Record<string, JsonValue>,
    body: (ctx: OpContext) => T,
    before?: (relative: string) => void,
    asks = true,
    linkItself = false,
  ): Promise<T> {
    return await this.#gate.pass(pid, {
      operation: op,
      args,
      // The exact file the human was shown; the workspace when the action names none.
      grant: ({ details }) =>
        details.path === null
          ? { type: "fs", path: ".", scope: "subtree" }
          : { type: "fs", path: details.path, scope: "exact" },
      attempt: async (): Promise<Attempt<T>> => {
        const lexical = this.#lexical(pid, op, String(args.path ?? "."));
        before?.(lexical.relative);
        const digest = digestOf({ primitive: op, path: lexical.relative, ...digestFields });
        const what = verb(lexical.relative);
        const first = this.#decide(pid, op, lexical.relative, right, digest, what);
        const recordsBefore = this.#records;
        try {
          const value = await this.#lock.shared(() => {
            const path = this.#canonical(pid, op, lexical, linkItself);
            // Every decision this operation takes: the path as written, where it leads, entries.
            const taken = [first];
            if (path.relative !== lexical.relative) {
              taken.push(this.#decide(pid, op, path.relative, right, digest, what));
            }
            let decision = taken.reduce(stricter);
            const ctx: OpContext = {
              path,
              written: lexical.relative,
              digest,
              get decision() {
                return decision;
              },
              gate: (facts) => {
                const linked = facts.target?.isFile === true && facts.target.nlink > 1;
                const secret = facts.content?.secret;
                if (decision.effect === "ask" || linked || secret !== undefined) {
                  // Only a human's approval of exactly this — the path as written and as resolved,
                  // the content, the target as it is now, every entry — lets it through.
                  const binding = digestOf({
                    primitive: op,
                    path: lexical.relative,
                    resolved: path.relative,
                    ...digestFields,
                    target: targetFingerprint(facts.target),
                    ...(facts.entries ? { entries: [...facts.entries] } : {}),
                    ...(facts.content ? { content: facts.content.sha256 } : {}),
                  });
                  const approved = this.#gate.approval(
                    pid,
                    { type: "fs", path: path.relative },
                    right,
                    binding,
                  );
                  if (!approved) {
                    // A secret in the content is named unless a protected path already asks
                    // (either way the reason is `protected:…`, which `--yes` never approves).
                    const reason = decision.effect === "ask" &&
                        (secret === undefined || decision.reason.startsWith("protected:"))
                      ? decision.reason
                      : secret !== undefined
                      ? `protected:content:${secret}`
                      : "protected:hardlink";
                    throw new AskNeeded(
                      reason,
                      path,
                      facts,
                      binding,
                      taken.find((d) => d.ceiling !== undefined)?.ceiling ??
                        taken.find((d) =>
                          d.effect === "ask" && (d.layer === "mode" || d.layer === "protected")
                        )?.reason ?? null,
                    );
                  }
                  decision = {
                    effect: "allow",
                    reason: `cap:${approved.id}`,
                    layer: "cap",
                    capability: approved.id,
                    approval: true,
                  };
                  taken.push(decision);
                }
                // Use up every one-shot capability behind this action before its effect
                // (compare-and-set: one used meanwhile refuses), so none outlives its one use.
                this.#gate.spend(taken);
              },
              decideAlso: (relative, r, w) => {
                const also = this.#decide(pid, op, relative, r, digest, w);
                taken.push(also);
                decision = stricter(decision, also);
                return decision;
              },
            };
            return body(ctx);
          });
          return { type: "done", value };
        } catch (error) {
          if (error instanceof UnsafePathError) {
            this.#record(pid, op, lexical.relative, "deny", "unsafe_path", { inputDigest: digest });
          }
          if (!(error instanceof AskNeeded)) {
            // One record per decision (audit_log.ts): an allowed operation that failed a
            // precondition (not found, already exists) keeps its allow, with what failed.
            if (this.#records === recordsBefore && first.effect === "allow") {
              this.#record(pid, op, lexical.relative, "allow", first.reason, {
                inputDigest: digest,
                detail: { failed: error instanceof LibosError ? error.code : "failed" },
              });
            }
            throw error;
          }
          this.#record(pid, op, error.path.relative, "ask", error.reason, {
            inputDigest: error.digest,
          });
          return {
            type: "ask",
            ask: { details: this.#details(op, right, error), subject: lexical.relative },
          };
        }
      },
      unasked: (ask) =>
        asks ? undefined : new ApprovalRequiredError(
          // The caller (a search) skips what needs a human rather than bother one.
          `"${ask.details.path}" needs a human's approval (${ask.details.reason}); it was skipped, no human was asked`,
          { reason: ask.details.reason, digest: ask.details.digest },
        ),
      exhausted: (ask, n) =>
        new ValidationError(
          `"${ask.subject}" still needs approval after ${
            n - 1
          } approvals; it keeps changing — try again`,
        ),
    });
  }

  // ---------------------------------------------------------------- operations

  /**
   * Reads a UTF-8 text file: its first `maxBytes` (cut on a code point boundary), or — with
   * `offset` (1-based line) and/or `limit` (lines) — that range of its lines, still at most
   * `maxBytes` (cut at a line boundary when a line fits). The content is raw (no line numbers);
   * `lines` says which lines it holds. A binary file (a known magic number, NUL bytes, bytes that
   * are not UTF-8) is answered with its type and size and no content.
   * @throws {CapabilityDeniedError} without read; {@link HumanPendingError} /
   *   {@link HumanDecisionError} for a secret-bearing or hard-linked file in queue / none mode;
   *   {@link UnsafePathError} for a symlink or a file that changed while opening; {@link NotFoundError};
   *   {@link ValidationError} for an offset past the last line (naming how many there are).
   */
  readText(
    pid: string,
    args: {
      readonly path: string;
      readonly maxBytes?: number;
      readonly offset?: number;
      readonly limit?: number;
      /** False: a file that needs a human (secret-bearing, hard-linked) is refused unasked. */
      readonly ask?: boolean;
    },
  ): Promise<ReadResult> {
    return this.#readText(pid, args, true);
  }

  /** readText, with known secrets redacted (`redact`) or not (an edit's own read, which refuses). */
  async #readText(
    pid: string,
    args: {
      readonly path: string;
      readonly maxBytes?: number;
      readonly offset?: number;
      readonly limit?: number;
      readonly ask?: boolean;
    },
    redact: boolean,
  ): Promise<ReadResult> {
    const maxBytes = args.maxBytes ?? this.limits.readBytes;
    if (!Number.isInteger(maxBytes) || maxBytes < 1 || maxBytes > this.limits.readBytesMax) {
      throw new ValidationError(
        `maxBytes must be an integer from 1 to ${this.limits.readBytesMax}, got ${maxBytes}`,
      );
    }
    for (const [name, value] of [["offset", args.offset], ["limit", args.limit]] as const) {
      if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) {
        throw new ValidationError(`${name} must be a whole number of lines from 1, got ${value}`);
      }
    }
    // Line mode: lines are counted from the start, over at most readBytesMax bytes.
    const lined = args.offset !== undefined || args.limit !== undefined;
    const offset = args.offset ?? 1;
    const range = lined
      ? { offset, ...(args.limit === undefined ? {} : { limit: args.limit }) }
      : {};
    const op = "fs.read";
    return await this.#operate(
      pid,
      op,
      { path: args.path, maxBytes, ...range },
      "read",
      (rel) => `read "${rel}"`,
      { maxBytes, ...range },
      (ctx) => {
        const { path } = ctx;
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
        using handle = this.#fs.open(path.absolute);
        if (!sameFile(handle.facts(), before)) {
          throw new UnsafePathError(
            `Cannot read "${path.relative}": it changed while it was being opened; nothing was read`,
          );
        }
        this.#parentStill(dirname(path.absolute), path.relative);
        // Read past the cut — a known secret's length (redacted, then cut) and the longest
        // content rule (scanned) — so a cut never leaves the start of a secret in view.
        // (Line mode reads no more than the file holds: a small file does not cost a large buffer;
        // one that grew since is read as far as it was, and its total is then unknown.)
        const scan = lined ? Math.min(this.limits.readBytesMax, before.size) : maxBytes;
        const redactAhead = redact ? this.#secretBytes : 0;
        const ahead = Math.max(redactAhead, SECRET_SCAN_LOOKAHEAD);
        const raw = handle.read(scan + 1 + ahead);
        const size = handle.facts().size;
        const done = (
          content: string,
          lines: ReadResult["lines"],
          truncated: boolean,
          binary: BinaryKind | null = null,
        ): ReadResult => {
          const bytes = new TextEncoder().encode(content).length;
          this.#record(pid, op, path.relative, "allow", ctx.decision.reason, {
            inputDigest: ctx.digest,
            detail: { bytes, truncated, ...(binary ? { binary: binary.type } : {}) },
          });
          return { path: path.relative, content, bytes, size, truncated, lines, binary };
        };
        // Nothing of a binary file is returned, so nothing in it needs a human beyond the path.
        const binary = binaryKind(raw, raw.length === scan + 1 + ahead);
        if (binary) {
          ctx.gate({ target: before });
          return done("", null, false, binary);
        }
        const full = redactAhead === 0
          ? new TextDecoder().decode(raw)
          : this.#redactor.text(new TextDecoder().decode(raw));
        if (!lined) {
          // The content is known only now (decide() cannot see it): a secret in it asks like a
          // secret-named file, bound to exactly these bytes. Nothing has been returned yet.
          ctx.gate({
            target: before,
            content: { sha256: sha256Hex(raw), secret: this.#scanner.scan(full)?.rule },
          });
          const kept = redactAhead === 0
            ? cutUtf8(raw, maxBytes)
            : cutUtf8(new TextEncoder().encode(full), maxBytes);
          const truncated = raw.length > maxBytes;
          const content = new TextDecoder().decode(kept);
          const count = splitLines(content).length;
          return done(
            content,
            { first: 1, last: count, total: truncated ? null : count },
            truncated,
          );
        }
        const complete = raw.length <= scan;
        const scanned = complete
          ? full
          : new TextDecoder().decode(cutUtf8(new TextEncoder().encode(full), scan));
        let chosen: LineRange;
        try {
          chosen = lineRange(scanned, complete, path.relative, offset, args.limit);
        } catch (error) {
          // Told only once the read itself is allowed (or approved): a line count is content.
          ctx.gate({ target: before });
          throw error;
        }
        const { content, last, capped } = capLines(chosen, maxBytes);
        // What is returned, and the longest secret rule either side of it, is scanned.
        const window = full.slice(
          Math.max(0, chosen.start - SECRET_SCAN_LOOKAHEAD),
          chosen.start + content.length + SECRET_SCAN_LOOKAHEAD,
        );
        ctx.gate({
          target: before,
          content: {
            sha256: sha256Hex(new TextEncoder().encode(window)),
            secret: this.#scanner.scan(window)?.rule,
          },
        });
        const truncated = capped || chosen.total === null || last < chosen.total;
        return done(content, { first: chosen.first, last, total: chosen.total }, truncated);
      },
      undefined,
      args.ask ?? true,
    );
  }

  /** Tells the host of a change; a host's display never changes what the primitive did. */
  #changed(change: FileChange): void {
    try {
      this.#onChange?.(change);
    } catch {
      // Ignored: the change is done and audited either way.
    }
  }

  /** The current content of a file for a diff, when it is small and readable. */
  #current(absolute: string, facts: PathFacts): string | undefined {
    if (!facts.isFile || facts.size > DIFF_SOURCE_MAX) return undefined;
    try {
      using handle = this.#fs.open(absolute);
      if (!sameFile(handle.facts(), facts)) return undefined;
      return new TextDecoder().decode(handle.read(DIFF_SOURCE_MAX));
    } catch {
      return undefined;
    }
  }

  /** The sha256 (hex) of a file's whole content as it is now, or undefined when it is not one. */
  #sha256Of(absolute: string, facts: PathFacts | undefined): string | undefined {
    if (!facts?.isFile) return undefined;
    using handle = this.#fs.open(absolute);
    if (!sameFile(handle.facts(), facts)) return undefined;
    return sha256Hex(handle.read(facts.size + 1));
  }

  /**
   * Writes a UTF-8 text file atomically (temporary file, sync, rename).
   * @throws {CapabilityDeniedError} without write; {@link HumanPendingError} for a protected path
   *   (`.git`, …) or a hard-linked file in queue mode; {@link UnsafePathError};
   *   {@link ValidationError} for a missing parent directory or `overwrite: false` on an existing file.
   */
  async writeText(
    pid: string,
    args: {
      readonly path: string;
      readonly content: string;
      readonly overwrite?: boolean;
      /**
       * Create missing parent directories first (default false): each one is decided and
       * audited as a write of its own, all before any is created.
       */
      readonly parents?: boolean;
      /**
       * Write only over exactly this content (the sha256, hex, of the file as it was read): an
       * edit made from a read refuses a file that changed since.
       */
      readonly ifSha256?: string;
    },
  ): Promise<
    { path: string; bytes: number; sha256: string; created: boolean; directories?: string[] }
  > {
    if (typeof args.content !== "string") throw new ValidationError("content must be text");
    const data = new TextEncoder().encode(args.content);
    if (data.length > this.limits.writeBytesMax) {
      throw new ValidationError(
        `Cannot write ${data.length} bytes: the limit is ${this.limits.writeBytesMax}`,
      );
    }
    const overwrite = args.overwrite ?? true;
    const parents = args.parents ?? false;
    const op = "fs.write";
    const sha256 = sha256Hex(data);
    const callArgs = {
      path: args.path,
      content: args.content,
      overwrite,
      ...(parents ? { parents } : {}),
      ...(args.ifSha256 === undefined ? {} : { ifSha256: args.ifSha256 }),
    };
    return await this.#operate(pid, op, callArgs, "write", (rel) => `write "${rel}"`, {
      sha256,
      overwrite,
      ...(parents ? { parents } : {}),
      // An edit's approval is bound to the content it was computed from, too.
      ...(args.ifSha256 === undefined ? {} : { ifSha256: args.ifSha256 }),
    }, (ctx) => {
      const { path } = ctx;
      if (path.relative === ".") {
        throw new UnsafePathError(`Cannot write to the workspace root itself`);
      }
      const dir = dirname(path.absolute);
      // The missing directories, outermost first, found on the canonical path (a symlinked
      // directory leading out of the workspace was refused when the path was canonicalised).
      const missing: string[] = [];
      for (let at = dir; at !== this.#workspace && !this.#lstat(at); at = dirname(at)) {
        missing.unshift(relative(this.#workspace, at));
      }
      if (missing.length > 0 && !parents) {
        throw this.#precondition(
          pid,
          dirname(path.relative),
          "its directory does not exist; create it with write_directory first, or write with parents",
        );
      }
      const deepest = missing.length > 0 ? dirname(join(this.#workspace, missing[0]!)) : dir;
      if (!this.#lstat(deepest)?.isDirectory) {
        throw this.#precondition(
          pid,
          relative(this.#workspace, deepest) || ".",
          "it is not a directory, so nothing can be created inside it",
        );
      }
      // Every directory is a write of its own: decided (a deny refuses the whole write, an ask
      // asks for all of it) before anything is created.
      for (const rel of missing) ctx.decideAlso(rel, "write", `create directory "${rel}"`);
      const existing = missing.length > 0 ? undefined : this.#lstat(path.absolute);
      if (existing?.isSymlink) {
        throw new UnsafePathError(
          `Cannot write "${path.relative}": it is a symbolic link, and libos does not follow one as the final component`,
        );
      }
      if (existing && !existing.isFile) {
        throw this.#precondition(pid, path.relative, `it is a ${typeOf(existing)}`);
      }
      if (existing && !overwrite) {
        throw this.#precondition(
          pid,
          path.relative,
          "it already exists and overwrite is false; change it with edit_file, or pass overwrite: true to replace it",
        );
      }
      if (
        args.ifSha256 !== undefined && this.#sha256Of(path.absolute, existing) !== args.ifSha256
      ) {
        throw this.#precondition(
          pid,
          path.relative,
          "it changed since it was read (its sha256 differs); read it again",
        );
      }
      const readable = existing &&
          (ctx.decision.effect === "ask" || existing.nlink > 1 || this.#onChange !== undefined)
        ? this.#current(path.absolute, existing)
        : undefined;
      // A diff shows the human — and stores with the request, in the database — what the file
      // holds now: never for a secret (by its name, as written or resolved, or by its content).
      const secret = this.#secretPaths.match(ctx.written) ||
        this.#secretPaths.match(path.relative);
      const current = readable !== undefined && !secret &&
          this.#scanner.scan(readable) === undefined
        ? readable
        : undefined;
      ctx.gate({
        target: existing,
        willCreate: !existing,
        willOverwrite: existing !== undefined,
        ...(missing.length > 0 ? { entries: missing } : {}),
        bytes: data.length,
        sha256,
        preview: args.content.slice(0, 4000),
        ...(current !== undefined
          ? {
            diff: unifiedDiff(current, args.content, {
              fromLabel: `a/${path.relative}`,
              toLabel: `b/${path.relative}`,
            }).text,
          }
          : {}),
      });
      this.#effect(pid, op, { path: path.relative, sha256, bytes: data.length }, () => {
        for (const rel of missing) {
          const absolute = join(this.#workspace, rel);
          this.#parentStill(dirname(absolute), rel);
          this.#fs.mkdir(absolute);
        }
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
      for (const rel of missing) {
        this.#record(pid, op, rel, "allow", ctx.decision.reason, {
          inputDigest: ctx.digest,
          detail: { directory: true, created: true },
        });
      }
      this.#record(pid, op, path.relative, "allow", ctx.decision.reason, {
        inputDigest: ctx.digest,
        detail: { bytes: data.length, created: !existing },
      });
      if (this.#onChange) {
        const shown = !secret && (existing ? current !== undefined : true) &&
          this.#scanner.scan(args.content) === undefined;
        this.#changed({
          pid,
          path: path.relative,
          op: existing ? "write" : "create",
          diff: shown
            ? unifiedDiff(current ?? "", args.content, {
              fromLabel: existing ? `a/${path.relative}` : "/dev/null",
              toLabel: `b/${path.relative}`,
            }).text
            : null,
          bytes: data.length,
        });
      }
      return {
        path: path.relative,
        bytes: data.length,
        sha256,
        created: !existing,
        ...(missing.length > 0 ? { directories: missing } : {}),
      };
    });
  }

  /**
   * Workspace-relative paths of the files under `path` matching a glob, newest first, walking
   * with this primitive's own listing and stat (every directory and file decided and audited;
   * links not followed; bounded).
   */
  glob(
    pid: string,
    args: { readonly glob: string; readonly path?: string; readonly limit?: number },
  ): Promise<GlobResult> {
    return globFiles(this, pid, args);
  }

  /**
   * Lines matching a regular expression (linear-time engine) or a literal text in the files under
   * `path`: every file read through this primitive (decided, audited, secrets redacted), a file
   * that needs a human skipped unasked — its lines never returned. See `_fs_grep.ts`.
   */
  grep(pid: string, args: GrepArgs): Promise<GrepResult> {
    return grepFiles(this, pid, args);
  }

  /**
   * Edits a text file by exact string replacement: reads it, applies `edits` in order (or the one
   * edit `oldString` → `newString`) to the evolving content — each `oldString` must occur exactly
   * once, or at least once with `replaceAll` — and writes the result back once, only over the
   * content it read (a file changed meanwhile is refused). All or nothing: one edit that cannot
   * apply refuses the call and nothing is written. A file whose line endings are all CRLF is
   * edited through LF text and keeps its CRLF. Read and write are each decided and audited as
   * usual; an edit that needs approval shows the human the one combined diff.
   * @throws {ValidationError} naming the edit that is empty, a no-op, missing (with a hint when it
   *   matches after trimming trailing whitespace) or ambiguous, or a file that is truncated or
   *   not text; whatever reading or writing throws.
   */
  async editText(
    pid: string,
    args: {
      readonly path: string;
      readonly oldString?: string;
      readonly newString?: string;
      readonly replaceAll?: boolean;
      /** Several edits, applied in order; exclusive with `oldString`/`newString`. */
      readonly edits?: readonly TextEdit[];
    },
  ): Promise<
    { path: string; edits: number; replacements: number; bytes: number; sha256: string }
  > {
    const single = args.oldString !== undefined || args.newString !== undefined;
    if (single === (args.edits !== undefined)) {
      throw new ValidationError(
        `Cannot edit "${args.path}": it was given ${
          single ? "both old_string/new_string and edits" : "neither old_string nor edits"
        }; pass old_string and new_string for one edit, or edits: [{old_string, new_string}] for several`,
      );
    }
    if (single && (typeof args.oldString !== "string" || typeof args.newString !== "string")) {
      throw new ValidationError(
        `Cannot edit "${args.path}": old_string and new_string go together; give both`,
      );
    }
    const edits: readonly TextEdit[] = single
      ? [{
        oldString: args.oldString!,
        newString: args.newString!,
        ...(args.replaceAll === undefined ? {} : { replaceAll: args.replaceAll }),
      }]
      : args.edits!;
    // Refused before the file is read: a malformed edit needs no decision.
    checkEdits(args.path, edits);
    const read = await this.#readText(pid, {
      path: args.path,
      maxBytes: this.limits.writeBytesMax,
    }, false);
    if (read.binary) {
      throw new ValidationError(
        `Cannot edit "${read.path}": it is a binary file (${read.binary.type}), not text`,
      );
    }
    if (this.#redactor.text(read.content) !== read.content) {
      // Its matches and refusals would tell a model what the secret is.
      throw new ValidationError(
        `Cannot edit "${read.path}": it holds a secret value libos keeps from the model; edit it yourself`,
      );
    }
    if (read.truncated) {
      throw new ValidationError(
        `Cannot edit "${read.path}": it is larger than ${this.limits.writeBytesMax} bytes`,
      );
    }
    const original = new TextEncoder().encode(read.content);
    const { content, replacements } = applyEdits(read.path, read.content, edits);
    const written = await this.writeText(pid, {
      path: args.path,
      content,
      overwrite: true,
      ifSha256: sha256Hex(original),
    });
    return {
      path: written.path,
      edits: edits.length,
      replacements,
      bytes: written.bytes,
      sha256: written.sha256,
    };
  }

  /**
   * Lists a directory (entries are not followed), at most `limit` entries in name order.
   * @throws {CapabilityDeniedError} without read on the directory.
   */
  async listDir(
    pid: string,
    args: {
      readonly path?: string;
      readonly limit?: number;
      /** False: a directory that needs a human is refused unasked (a search skips it). */
      readonly ask?: boolean;
    } = {},
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
      { path: args.path ?? ".", limit },
      "read",
      (rel) => `list "${rel}"`,
      { limit },
      (ctx) => {
        const { path } = ctx;
        const facts = this.#lstat(path.absolute);
        if (!facts) throw new NotFoundError(`Cannot list "${path.relative}": it does not exist`);
        if (!facts.isDirectory) {
          throw new ValidationError(
            `Cannot list "${path.relative}": it is a ${typeOf(facts)}, not a directory`,
          );
        }
        ctx.gate({ target: facts });
        // The first `limit` entries by name: read them all (up to a scan bound), sort, then cut
        // — cutting in the host's directory order would return arbitrary entries.
        const all: { name: string; type: EntryType }[] = [];
        let truncated = false;
        for (const entry of this.#fs.readDir(path.absolute)) {
          if (all.length >= LIST_SCAN_MAX) {
            truncated = true;
            break;
          }
          all.push({ name: entry.name, type: typeOf(entry) });
        }
        this.#parentStill(path.absolute, path.relative);
        all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        if (all.length > limit) truncated = true;
        const entries = all.slice(0, limit);
        this.#record(pid, op, path.relative, "allow", ctx.decision.reason, {
          inputDigest: ctx.digest,
          detail: { entries: entries.length, truncated },
        });
        return { path: path.relative, entries, truncated };
      },
      undefined,
      args.ask ?? true,
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
    const parents = args.parents ?? false;
    return await this.#operate(
      pid,
      op,
      { path: args.path, parents },
      "write",
      (rel) => `create directory "${rel}"`,
      { parents },
      (ctx) => {
        const { path } = ctx;
        if (path.exists) {
          const facts = this.#lstat(path.absolute);
          if (facts?.isDirectory && parents) return { path: path.relative, created: [] };
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
        if (missing.length > 1 && !parents) {
          throw this.#precondition(
            pid,
            dirname(path.relative),
            "its parent directory does not exist; pass parents: true",
          );
        }
        for (const rel of missing) {
          if (rel !== path.relative) {
            ctx.decideAlso(rel, "write", `create directory "${rel}"`);
          }
        }
        ctx.gate({ willCreate: true });
        this.#effect(pid, op, { path: path.relative, parents }, () => {
          for (const rel of missing) {
            this.#parentStill(dirname(join(this.#workspace, rel)), rel);
            this.#fs.mkdir(join(this.#workspace, rel));
          }
        });
        for (const rel of missing) {
          this.#record(pid, op, rel, "allow", ctx.decision.reason, {
            inputDigest: ctx.digest,
          });
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
    const missingOk = args.missingOk ?? false;
    return await this.#operate(
      pid,
      op,
      { path: args.path, missingOk },
      "delete",
      (rel) => `delete "${rel}"`,
      { missingOk },
      (ctx) => {
        const { path } = ctx;
        const facts = this.#lstat(path.absolute);
        if (!facts) {
          if (!missingOk) throw this.#precondition(pid, path.relative, "it does not exist");
          ctx.gate({});
          this.#record(pid, op, path.relative, "allow", ctx.decision.reason, {
            inputDigest: ctx.digest,
            detail: { deleted: false },
          });
          return { path: path.relative, deleted: false };
        }
        if (facts.isDirectory) {
          throw this.#precondition(
            pid,
            path.relative,
            "it is a directory; use delete_directory",
          );
        }
        ctx.gate({ target: facts });
        this.#effect(pid, op, { path: path.relative }, () => {
          this.#parentStill(dirname(path.absolute), path.relative);
          this.#fs.remove(path.absolute);
        });
        this.#record(pid, op, path.relative, "allow", ctx.decision.reason, {
          inputDigest: ctx.digest,
          detail: { deleted: true },
        });
        this.#changed({ pid, path: path.relative, op: "delete", diff: null, bytes: facts.size });
        return { path: path.relative, deleted: true };
      },
      undefined,
      true,
      // A symlink is removed itself, decided on its own path: where it points is not touched.
      true,
    );
  }

  /**
   * Deletes a directory; with `recursive`, everything in it — but only after deciding on every
   * entry inside (a deny anywhere in the tree refuses the whole delete, an ask asks for all of
   * it; nothing is removed before). The workspace root is never deleted.
   */
  async deleteDir(
    pid: string,
    args: { readonly path: string; readonly recursive?: boolean },
  ): Promise<{ path: string; deleted: number }> {
    const op = "fs.rmdir";
    const recursive = args.recursive ?? false;
    const refuseRoot = (rel: string) => {
      if (rel !== ".") return;
      this.#record(pid, op, ".", "deny", "containment");
      throw new UnsafePathError(
        "Cannot delete the workspace root; delete what is inside it instead",
      );
    };
    return await this.#operate(
      pid,
      op,
      { path: args.path, recursive },
      "delete",
      (rel) => `delete directory "${rel}"`,
      { recursive },
      (ctx) => {
        const { path } = ctx;
        refuseRoot(path.relative);
        const facts = this.#lstat(path.absolute);
        if (!facts) throw this.#precondition(pid, path.relative, "it does not exist");
        if (!facts.isDirectory) {
          throw this.#precondition(
            pid,
            path.relative,
            `it is a ${typeOf(facts)}; use delete_file`,
          );
        }
        // Walk without following anything, deciding on every entry before removing any.
        const entries: string[] = [];
        const walk = (rel: string) => {
          for (const entry of this.#fs.readDir(join(this.#workspace, rel))) {
            const child = `${rel}/${entry.name}`;
            if (!recursive) {
              throw this.#precondition(
                pid,
                path.relative,
                "it is not empty; pass recursive: true",
              );
            }
            if (entries.length >= this.limits.deleteEntriesMax) {
              throw new ValidationError(
                `Cannot delete "${path.relative}": it holds more than ${this.limits.deleteEntriesMax} entries`,
              );
            }
            ctx.decideAlso(child, "delete", `delete "${child}" inside "${path.relative}"`);
            if (entry.isDirectory && !entry.isSymlink) walk(child);
            entries.push(child);
          }
        };
        walk(path.relative);
        ctx.gate({
          target: facts,
          entries,
          preview: entries.slice(0, 200).join("\n") +
            (entries.length > 200 ? `\n… and ${entries.length - 200} more` : ""),
        });
        this.#effect(pid, op, { path: path.relative, entries: entries.length }, () => {
          this.#parentStill(dirname(path.absolute), path.relative);
          for (const rel of entries) this.#fs.remove(join(this.#workspace, rel));
          this.#fs.remove(path.absolute);
        });
        this.#record(pid, op, path.relative, "allow", ctx.decision.reason, {
          inputDigest: ctx.digest,
          detail: { entries: entries.length },
        });
        this.#changed({ pid, path: `${path.relative}/`, op: "delete", diff: null, bytes: null });
        return { path: path.relative, deleted: entries.length + 1 };
      },
      refuseRoot,
    );
  }

  /**
   * Facts about a path. Without stat (or read) the answer is a denial, the same whether the path
   * exists or not.
   */
  async stat(
    pid: string,
    args: {
      readonly path: string;
      /** False: a path that needs a human (a hard-linked file) is refused unasked. */
      readonly ask?: boolean;
    },
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
      { path: args.path },
      "stat",
      (rel) => `stat "${rel}"`,
      {},
      (ctx) => {
        const { path } = ctx;
        const facts = this.#lstat(path.absolute);
        ctx.gate({ target: facts });
        this.#record(pid, op, path.relative, "allow", ctx.decision.reason, {
          inputDigest: ctx.digest,
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
      undefined,
      args.ask ?? true,
    );
  }

  /**
   * Applies a multi-file patch (the Codex `apply_patch` envelope or a unified diff) as one
   * action: every path decided before anything changes, one approval for the whole patch when
   * anything asks, all files written or none (see `_fs_patch.ts`).
   * @throws {PatchError} for a malformed patch, a hunk that does not match, or a write that
   *   failed midway (undone); whatever deciding or the human channel throws — nothing changed.
   */
  applyPatch(pid: string, args: { readonly patch: string }): Promise<PatchResult> {
    return applyPatch(this.#patchKit(), pid, args);
  }

  /** This primitive's own steps, bound, for `applyPatch`. */
  #patchKit(): PatchKit {
    return {
      fs: this.#fs,
      workspace: this.#workspace,
      lock: this.#lock,
      gate: this.#gate,
      limits: this.limits,
      lexical: (pid, op, path) => this.#lexical(pid, op, path),
      canonical: (pid, op, lexical) => this.#canonical(pid, op, lexical, false),
      decide: (pid, op, path, right, digest, what) =>
        this.#decide(pid, op, path, right, digest, what),
      record: (pid, op, path, decision, authority, extra) =>
        this.#record(pid, op, path, decision, authority, extra),
      records: () => this.#records,
      effect: (pid, kind, request, run) => this.#effect(pid, kind, request, run),
      lstat: (absolute) => this.#lstat(absolute),
      parentStill: (dir, path) => this.#parentStill(dir, path),
      mayKnow: (pid, path) => this.#mayKnow(pid, path),
      secretPath: (relative) => this.#secretPaths.match(relative) !== undefined,
      secretIn: (text) => this.#scanner.scan(text)?.rule,
      holdsKnownSecret: (text) => this.#redactor.text(text) !== text,
      changed: (change) => this.#changed(change),
    };
  }

  /**
   * Runs a stored pending action again (an approved one): the same operation with the same
   * arguments, decided afresh — the one-shot approval bound to its digest now allows it.
   * @throws {ValidationError} for an operation this primitive does not have, or bad arguments.
   */
  async dispatch(pid: string, action: PendingAction): Promise<JsonValue> {
    const registry = new ActionRegistry();
    registry.register(...filesystemActions(this));
    return await registry.dispatch(pid, action, new AbortController().signal);
  }
}

/** A stored action's path. */
const StoredPath = z.object({ path: z.string() });

/**
 * The filesystem's resumable operations (see `action_registry.ts`): each re-runs the operation
 * with the stored arguments, decided afresh — the one-shot approval bound to its digest now
 * allows exactly that action.
 */
export function filesystemActions(fs: FilesystemPrimitive): ActionOperation[] {
  return [
    defineAction(
      "fs.read",
      StoredPath.extend({
        maxBytes: z.number().optional(),
        offset: z.number().optional(),
        limit: z.number().optional(),
      }),
      (pid, a) =>
        fs.readText(pid, {
          path: a.path,
          ...(a.maxBytes === undefined ? {} : { maxBytes: a.maxBytes }),
          ...(a.offset === undefined ? {} : { offset: a.offset }),
          ...(a.limit === undefined ? {} : { limit: a.limit }),
        }),
    ),
    defineAction(
      "fs.write",
      StoredPath.extend({
        content: z.string(),
        overwrite: z.boolean().optional(),
        parents: z.boolean().optional(),
        ifSha256: z.string().optional(),
      }),
      (pid, a) =>
        fs.writeText(pid, {
          path: a.path,
          content: a.content,
          overwrite: a.overwrite !== false,
          parents: a.parents === true,
          // An approved edit still writes only over the content it was computed from.
          ...(a.ifSha256 === undefined ? {} : { ifSha256: a.ifSha256 }),
        }),
    ),
    defineAction(
      "fs.list",
      StoredPath.extend({ limit: z.number().optional() }),
      (pid, a) =>
        fs.listDir(pid, { path: a.path, ...(a.limit === undefined ? {} : { limit: a.limit }) }),
    ),
    defineAction(
      "fs.mkdir",
      StoredPath.extend({ parents: z.boolean().optional() }),
      (pid, a) => fs.makeDir(pid, { path: a.path, parents: a.parents === true }),
    ),
    defineAction(
      "fs.delete",
      StoredPath.extend({ missingOk: z.boolean().optional() }),
      (pid, a) => fs.deleteFile(pid, { path: a.path, missingOk: a.missingOk === true }),
    ),
    defineAction(
      "fs.rmdir",
      StoredPath.extend({ recursive: z.boolean().optional() }),
      (pid, a) => fs.deleteDir(pid, { path: a.path, recursive: a.recursive === true }),
    ),
    defineAction("fs.stat", StoredPath, (pid, a) => fs.stat(pid, { path: a.path })),
    defineAction(
      "fs.patch",
      z.object({ patch: z.string() }),
      (pid, a) => fs.applyPatch(pid, { patch: a.patch }) as unknown as Promise<JsonValue>,
    ),
  ];
}
