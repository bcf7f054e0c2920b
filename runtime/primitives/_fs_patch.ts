/**
 * `FilesystemPrimitive.applyPatch`: a multi-file patch (see `_apply_patch.ts` for the formats)
 * decided, approved and applied as one action — all files or none.
 *
 * The order, as for every file operation (`filesystem.ts`), widened to several paths:
 * 1. parse the patch (a malformed patch touches nothing and asks nobody);
 * 2. resolve every path lexically and `decide()` each before the filesystem is asked anything —
 *    add: write; update: read and write; delete: delete; move: read and delete the source, write
 *    the destination. Any deny (or a path outside the workspace) refuses the whole patch;
 * 3. under the workspace lock, canonicalise each path (a symlink out is refused; one that leads
 *    elsewhere inside is decided again), refuse a symlink as the final component, read what is
 *    there, and compute every file's new content in memory — a hunk that does not match refuses
 *    the whole patch; a missing parent directory is decided (write) and created later;
 * 4. when anything asks (a rule, the mode, a protected path, a hard-linked target, a secret in
 *    what was read), one human approval covers the whole patch: it shows every file and the
 *    combined diff, and is bound to the patch and to every target as it is now. When reading a
 *    file needs a human, nothing its content decides (a hunk that does not match, a directory
 *    refused) is told before that approval — the patch asks first, as sent — so a hunk is never
 *    an oracle on a secret file;
 * 5. apply through the action ledger: stage every new content in a temporary file beside its
 *    target (synced), then rename each into place and remove what the patch deletes. A failure
 *    midway undoes what was done (the old contents are held in memory) and says so; an undo that
 *    fails too is a `patch_partial` error naming each file left changed;
 * 6. audit one allow per file touched, and tell the host of each change (with its diff).
 *
 * @module
 */
import { dirname, join } from "node:path";
import type { Decision } from "../authority/decide.ts";
import type { Right } from "../authority/capability.ts";
import { digestOf, type JsonValue, sha256Hex } from "../base/canonical_json.ts";
import {
  LibosError,
  OutsideWorkspaceError,
  UnsafePathError,
  ValidationError,
} from "../base/errors.ts";
import { unifiedDiff } from "../base/unified_diff.ts";
import type { WorkspaceLock } from "../base/workspace_lock.ts";
import type { ApprovalDetails } from "../human/human_request.ts";
import type { FilesystemProvider, PathFacts } from "../providers/filesystem.ts";
import type { WorkspacePath } from "../providers/workspace_path.ts";
import { applyHunks, type ParsedPatch, parsePatch } from "./_apply_patch.ts";
import type { ApprovalGate, Attempt } from "./approval_gate.ts";
import { commit } from "./_fs_patch_commit.ts";
import {
  type FilesystemLimits,
  sameFile,
  stricter,
  targetFingerprint,
  typeOf,
} from "./_fs_support.ts";

/** A file change as the host is told of it (the primitive's `FileChange`). */
export interface PatchChange {
  readonly pid: string;
  readonly path: string;
  readonly op: "create" | "write" | "delete";
  readonly diff: string | null;
  readonly bytes: number | null;
}

/** What applying a patch needs of the filesystem primitive (its own private steps, bound). */
export interface PatchKit {
  readonly fs: FilesystemProvider;
  readonly workspace: string;
  readonly lock: WorkspaceLock;
  readonly gate: ApprovalGate;
  readonly limits: FilesystemLimits;
  lexical(pid: string, op: string, path: string): WorkspacePath;
  canonical(pid: string, op: string, lexical: WorkspacePath): WorkspacePath & { exists: boolean };
  /** Decides; a deny is audited and thrown. */
  decide(
    pid: string,
    op: string,
    path: string,
    right: Right,
    digest: string,
    what: string,
  ): Decision;
  record(
    pid: string,
    op: string,
    path: string,
    decision: "allow" | "ask" | "deny",
    authority: string,
    extra?: { inputDigest?: string; detail?: Record<string, string | number | boolean | null> },
  ): void;
  /** How many audit records the primitive wrote so far. */
  records(): number;
  effect<T>(
    pid: string,
    kind: string,
    request: Record<string, string | number | boolean>,
    run: () => T,
  ): T;
  lstat(absolute: string): PathFacts | undefined;
  parentStill(dir: string, path: string): void;
  /** Whether the caller may learn facts about a path. */
  mayKnow(pid: string, path: string): boolean;
  /** Whether a path names a secret-bearing file. */
  secretPath(relative: string): boolean;
  /** The content rule of a secret in a text, if any. */
  secretIn(text: string): string | undefined;
  /** Whether a text holds a known secret value (redaction would change it). */
  holdsKnownSecret(text: string): boolean;
  changed(change: PatchChange): void;
}

/** What a model is told a patch did. */
export interface PatchResult {
  readonly format: "codex" | "unified";
  /** Each file changed: A added, M modified, D deleted (a move is D of the source, A/M of the destination). */
  readonly files: {
    readonly path: string;
    readonly status: "A" | "M" | "D";
    readonly bytes: number | null;
  }[];
  /** Files the patch named whose content came out the same. */
  readonly unchanged: readonly string[];
  readonly directoriesCreated: readonly string[];
}

const OP = "fs.patch";

/** One path the patch touches: as written, as resolved, and what is there. */
interface Touched {
  readonly written: string;
  path: WorkspacePath;
  rights: Set<Right>;
  facts: PathFacts | undefined;
  /** The bytes there now (files the patch reads, deletes or replaces). */
  before: Uint8Array | undefined;
  /** What the patch leaves: undefined = as before, null = deleted, bytes = new content. */
  after: Uint8Array | null | undefined;
}

/**
 * Applies a patch for `pid` (see the module documentation).
 * @throws {PatchError} `patch_invalid` (malformed), `patch_mismatch` (a hunk), `patch_rolled_back`
 *   (a write failed; nothing changed), `patch_partial`; {@link CapabilityDeniedError} /
 *   {@link OutsideWorkspaceError} / {@link UnsafePathError} for a path it may not touch (nothing
 *   changed); the human channel's errors when it asks.
 */
export async function applyPatch(
  kit: PatchKit,
  pid: string,
  args: { readonly patch: string },
): Promise<PatchResult> {
  if (typeof args.patch !== "string") throw new ValidationError("patch must be text");
  if (new TextEncoder().encode(args.patch).length > kit.limits.writeBytesMax) {
    throw new ValidationError(
      `Cannot apply a patch over ${kit.limits.writeBytesMax} bytes; split it into several patches`,
    );
  }
  const parsed = parsePatch(args.patch);
  return await kit.gate.pass(pid, {
    operation: OP,
    args: { patch: args.patch },
    // Bound to the digest of the whole patch and every target: the wide resource widens nothing.
    grant: () => ({ type: "fs", path: ".", scope: "subtree" }),
    attempt: (): Promise<Attempt<PatchResult>> => attempt(kit, pid, parsed, args.patch),
    exhausted: (_ask, n) =>
      new ValidationError(
        `The patch still needs approval after ${
          n - 1
        } approvals; its files keep changing — read them again and make a new patch`,
      ),
  });
}

async function attempt(
  kit: PatchKit,
  pid: string,
  parsed: ParsedPatch,
  text: string,
): Promise<Attempt<PatchResult>> {
  const patchSha = sha256Hex(new TextEncoder().encode(text));
  const digest = digestOf({ primitive: OP, patch: patchSha });
  // 2. Every path as written, with the rights the patch needs on it, decided before anything.
  const touched = new Map<string, { path: WorkspacePath; rights: Set<Right> }>();
  const need = (raw: string, ...rights: Right[]) => {
    const path = kit.lexical(pid, OP, raw);
    if (path.relative === ".") {
      kit.record(pid, OP, ".", "deny", "containment");
      throw new UnsafePathError(`Cannot patch the workspace root itself ("${raw}"); name a file`);
    }
    const entry = touched.get(path.relative) ?? { path, rights: new Set<Right>() };
    for (const r of rights) entry.rights.add(r);
    touched.set(path.relative, entry);
    return path.relative;
  };
  const steps = parsed.operations.map((op) => {
    switch (op.type) {
      case "add":
        return { op, path: need(op.path, "write"), dest: null };
      case "delete":
        return { op, path: need(op.path, "delete"), dest: null };
      case "update":
        return op.moveTo === null
          ? { op, path: need(op.path, "read", "write"), dest: null }
          : { op, path: need(op.path, "read", "delete"), dest: need(op.moveTo, "write") };
    }
  });
  const taken: Decision[] = [];
  /** The decisions on reading: one that asks keeps what the content decides from the model. */
  const reads: Decision[] = [];
  const decideOn = (rel: string, right: Right, what: string) => {
    const decision = kit.decide(pid, OP, rel, right, digest, what);
    taken.push(decision);
    if (right === "read") reads.push(decision);
  };
  for (const [rel, entry] of touched) {
    for (const right of entry.rights) decideOn(rel, right, `${right} "${rel}" (apply_patch)`);
  }
  const recordsBefore = kit.records();
  const firstPath = [...touched.keys()][0]!;
  try {
    return await kit.lock.shared(() =>
      body(kit, pid, { parsed, text, sha: patchSha }, touched, steps, { taken, reads, decideOn })
    );
  } catch (error) {
    if (error instanceof UnsafePathError) {
      kit.record(pid, OP, firstPath, "deny", "unsafe_path", { inputDigest: digest });
    } else if (kit.records() === recordsBefore && taken.every((d) => d.effect === "allow")) {
      // One record of the allowed patch that failed (a hunk, a missing file), with what failed.
      kit.record(pid, OP, firstPath, "allow", taken[0]!.reason, {
        inputDigest: digest,
        detail: { failed: error instanceof LibosError ? error.code : "failed" },
      });
    }
    throw error;
  }
}

type Step = {
  readonly op: ParsedPatch["operations"][number];
  readonly path: string;
  readonly dest: string | null;
};

function body(
  kit: PatchKit,
  pid: string,
  patch: { readonly parsed: ParsedPatch; readonly text: string; readonly sha: string },
  written: ReadonlyMap<string, { path: WorkspacePath; rights: Set<Right> }>,
  steps: readonly Step[],
  decided: {
    readonly taken: Decision[];
    readonly reads: readonly Decision[];
    decideOn(rel: string, right: Right, what: string): void;
  },
): Attempt<PatchResult> {
  const { parsed, sha: patchSha } = patch;
  const { taken } = decided;
  // 3. Where each path really leads; the same file under two names is one entry.
  const files = new Map<string, Touched>();
  const byWritten = new Map<string, Touched>();
  for (const [rel, entry] of written) {
    let path: WorkspacePath & { exists: boolean };
    try {
      path = kit.canonical(pid, OP, entry.path);
    } catch (error) {
      if (error instanceof Deno.errors.NotADirectory) {
        throw precondition(
          kit,
          pid,
          rel,
          "a directory on its way is a file; choose another path, or delete that file first",
        );
      }
      if (!(error instanceof OutsideWorkspaceError)) throw error;
      // Audited by the primitive; the model is told what to do instead.
      throw new OutsideWorkspaceError(
        `${error.message}; the whole patch was refused and nothing changed — leave that path out, and patch only files inside the workspace`,
        { cause: error },
      );
    }
    if (path.relative !== rel) {
      for (const right of entry.rights) {
        decided.decideOn(path.relative, right, `${right} "${path.relative}" (apply_patch)`);
      }
    }
    let file = files.get(path.relative);
    if (!file) {
      const facts = kit.lstat(path.absolute);
      if (facts?.isSymlink) {
        throw new UnsafePathError(
          `Cannot patch "${rel}": it is a symbolic link, and libos does not follow one as the final component; patch the file it points to`,
        );
      }
      if (facts && !facts.isFile) {
        throw precondition(kit, pid, rel, `it is a ${typeOf(facts)}, not a file`);
      }
      if (facts && facts.size > kit.limits.writeBytesMax) {
        throw precondition(kit, pid, rel, `it is larger than ${kit.limits.writeBytesMax} bytes`);
      }
      file = { written: rel, path, rights: new Set(), facts, before: undefined, after: undefined };
      if (facts) {
        using handle = kit.fs.open(path.absolute);
        if (!sameFile(handle.facts(), facts)) {
          throw new UnsafePathError(
            `"${rel}" changed while it was being read; nothing was changed`,
          );
        }
        file.before = handle.read(facts.size + 1);
        kit.parentStill(dirname(path.absolute), rel);
      }
      files.set(path.relative, file);
    }
    for (const right of entry.rights) file.rights.add(right);
    byWritten.set(rel, file);
  }
  // What reading needs: a human, when the decision on reading a file asks or what it holds is a
  // secret. Then nothing its content decides (a hunk that does not match, a file that is not
  // text) reaches the model before a human approved: the patch asks first and reports after.
  const secretRead = [...files.values()].map((f) =>
    f.before && f.rights.has("read") ? kit.secretIn(new TextDecoder().decode(f.before)) : undefined
  ).find((s) => s !== undefined);
  const readNeedsHuman = secretRead !== undefined || decided.reads.some((d) => d.effect === "ask");
  // Bound to the patch and every file as it is now (the new contents follow from those).
  const binding = digestOf({
    primitive: OP,
    patch: patchSha,
    files: [...files.values()].map((f) => ({
      written: f.written,
      resolved: f.path.relative,
      target: targetFingerprint(f.facts),
      before: f.before ? sha256Hex(f.before) : null,
    })) as JsonValue,
  });
  const approval = () => kit.gate.approval(pid, { type: "fs", path: "." }, "write", binding);
  // What the request is about, in the patch's own terms: the model reads it back in a refusal,
  // so it says nothing the files' content or existence decided.
  const named = new Map<string, string>();
  for (const step of steps) {
    const mark = step.op.type === "add" ? "A" : step.op.type === "delete" || step.dest ? "D" : "M";
    named.delete(step.path);
    named.set(step.path, mark);
    if (step.dest) {
      named.delete(step.dest);
      named.set(step.dest, "A");
    }
  }
  const subject = `fs:{${[...named].map(([path, mark]) => `${mark} ${path}`).join(", ")}}`;
  const why = () => {
    const asks = taken.filter((d) => d.effect === "ask");
    return {
      reason: asks.find((d) => d.reason.startsWith("protected:"))?.reason ??
        (secretRead !== undefined ? `protected:content:${secretRead}` : undefined) ??
        asks.find((d) => d.layer === "mode")?.reason ?? asks[0]?.reason ?? "protected:hardlink",
      ceiling: taken.find((d) => d.ceiling !== undefined)?.ceiling ??
        asks.find((d) => d.layer === "mode" || d.layer === "protected")?.reason ?? null,
    };
  };
  let changes: Touched[];
  try {
    changes = simulate(kit, pid, steps, files, byWritten);
  } catch (error) {
    if (!readNeedsHuman) throw error;
    const approved = approval();
    if (approved) {
      // The human let the model learn this outcome: the approval is used up, and audited.
      kit.gate.spend([approved]);
      kit.record(pid, OP, [...files.keys()][0]!, "allow", `cap:${approved.id}`, {
        inputDigest: binding,
        detail: { failed: error instanceof LibosError ? error.code : "failed" },
      });
      throw error;
    }
    const { reason, ceiling } = why();
    for (const f of files.values()) {
      kit.record(pid, OP, f.path.relative, "ask", reason, { inputDigest: binding });
    }
    return {
      type: "ask",
      ask: {
        details: details(kit, patch, subject, [], [], { reason, ceiling, binding }),
        subject: "the patch",
      },
    };
  }
  // Missing directories of new files, outermost first, each decided (write) like make_dir's.
  const dirs: string[] = [];
  let blocked: { rel: string; facts: PathFacts } | undefined;
  for (const f of changes) {
    if (f.after === null || f.before !== undefined) continue;
    const missing: string[] = [];
    for (let rel = dirname(f.path.relative); rel !== "."; rel = dirname(rel)) {
      const facts = kit.lstat(join(kit.workspace, rel));
      if (facts?.isDirectory) break;
      if (facts) blocked ??= { rel, facts };
      missing.unshift(rel);
    }
    for (const rel of missing) if (!dirs.includes(rel)) dirs.push(rel);
  }
  dirs.sort((a, b) => a.split("/").length - b.split("/").length);
  const ask = (shown: readonly Touched[]): Attempt<PatchResult> => {
    const { reason, ceiling } = why();
    for (const f of shown) {
      kit.record(pid, OP, f.path.relative, "ask", reason, { inputDigest: binding });
    }
    return {
      type: "ask",
      ask: {
        details: details(kit, patch, subject, shown, dirs, { reason, ceiling, binding }),
        subject: "the patch",
      },
    };
  };
  // Before anything else the content decided can show (a directory's refusal would tell that
  // the hunks matched), a patch whose reading needs a human asks.
  if (readNeedsHuman && !approval()) return ask(changes);
  if (blocked) {
    throw precondition(kit, pid, blocked.rel, `it is a ${typeOf(blocked.facts)}, not a directory`);
  }
  for (const rel of dirs) decided.decideOn(rel, "write", `create directory "${rel}" (apply_patch)`);

  // 4. One approval for the whole patch, when anything asks.
  const decision = taken.reduce(stricter);
  const linked = changes.find((f) => (f.facts?.nlink ?? 1) > 1);
  if (decision.effect === "ask" || linked || secretRead !== undefined) {
    const approved = approval();
    if (!approved) return ask(changes);
    taken.push({
      effect: "allow",
      reason: `cap:${approved.id}`,
      layer: "cap",
      capability: approved.id,
      approval: true,
    });
  }
  const allowed = taken.find((d) => d.approval)?.reason ?? decision.reason;
  kit.gate.spend(taken);

  // 5. Stage, then commit; undo on failure.
  kit.effect(
    pid,
    OP,
    { patch: patchSha, files: changes.length, dirs: dirs.length },
    () => commit(kit, changes, dirs),
  );

  // 6. Audit and tell the host.
  for (const f of changes) {
    kit.record(pid, OP, f.path.relative, "allow", allowed, {
      inputDigest: binding,
      detail: {
        op: f.after === null ? "delete" : f.before === undefined ? "create" : "write",
        bytes: f.after?.length ?? null,
      },
    });
  }
  for (const rel of dirs) {
    kit.record(pid, OP, rel, "allow", allowed, { inputDigest: binding, detail: { op: "mkdir" } });
  }
  for (const f of changes) {
    const op = f.after === null ? "delete" : f.before === undefined ? "create" : "write";
    kit.changed({
      pid,
      path: f.path.relative,
      op,
      diff: diffOf(kit, f),
      bytes: f.after?.length ?? f.facts?.size ?? null,
    });
  }
  const resolved = new Set([...named.keys()].map((w) => byWritten.get(w)!.path.relative));
  return {
    type: "done",
    value: {
      format: parsed.format,
      files: changes.map((f) => ({
        path: f.path.relative,
        status: f.after === null
          ? "D" as const
          : f.before === undefined
          ? "A" as const
          : "M" as const,
        bytes: f.after?.length ?? null,
      })),
      unchanged: [...resolved].filter((rel) => !changes.some((f) => f.path.relative === rel)),
      directoriesCreated: dirs,
    },
  };
}

/**
 * The patch applied, in order, to what is there (held in memory): the files whose content it
 * changes, each with its new content (or null: deleted).
 * @throws {PatchError} for a hunk that does not match; {@link ValidationError} for a file missing,
 *   not text, too large or holding a known secret.
 */
function simulate(
  kit: PatchKit,
  pid: string,
  steps: readonly Step[],
  files: ReadonlyMap<string, Touched>,
  byWritten: ReadonlyMap<string, Touched>,
): Touched[] {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const state = (f: Touched) => (f.after === undefined ? f.before ?? null : f.after);
  const textOf = (f: Touched, rel: string): string => {
    const bytes = state(f);
    if (bytes === null) {
      throw precondition(kit, pid, rel, 'it does not exist; use "*** Add File:" to create it');
    }
    if (f.after === undefined && kit.holdsKnownSecret(new TextDecoder().decode(bytes))) {
      throw new ValidationError(
        `Cannot patch "${rel}": it holds a secret value libos keeps from the model; edit it yourself; nothing was changed`,
      );
    }
    try {
      return decoder.decode(bytes);
    } catch (error) {
      throw new ValidationError(
        `Cannot patch "${rel}": it is not UTF-8 text; nothing was changed`,
        { cause: error },
      );
    }
  };
  for (const step of steps) {
    const file = byWritten.get(step.path)!;
    const op = step.op;
    if (op.type === "add") {
      file.after = new TextEncoder().encode(op.content);
    } else if (op.type === "delete") {
      if (state(file) === null) {
        throw precondition(
          kit,
          pid,
          step.path,
          'it does not exist, so it cannot be deleted; drop its "*** Delete File:" section',
        );
      }
      file.after = null;
    } else {
      const content = applyHunks(step.path, textOf(file, step.path), op.hunks);
      const bytes = new TextEncoder().encode(content);
      if (step.dest === null) file.after = bytes;
      else {
        file.after = null;
        byWritten.get(step.dest)!.after = bytes;
      }
    }
  }
  const changes = [...files.values()].filter((f) =>
    f.after !== undefined && !same(f.before, f.after)
  );
  for (const f of changes) {
    if (f.after && f.after.length > kit.limits.writeBytesMax) {
      throw new ValidationError(
        `Cannot write ${f.after.length} bytes to "${f.written}": the limit is ${kit.limits.writeBytesMax}`,
      );
    }
  }
  return changes;
}

/** Whether a file's content comes out as it was (`after`: undefined untouched, null deleted). */
function same(before: Uint8Array | undefined, after: Uint8Array | null | undefined): boolean {
  if (after === undefined) return true;
  if (after === null || before === undefined) return after === null && before === undefined;
  return before.length === after.length && before.every((x, i) => x === after[i]);
}

/** A precondition failure, worded by what the caller may know. */
function precondition(kit: PatchKit, pid: string, path: string, known: string): ValidationError {
  return new ValidationError(
    kit.mayKnow(pid, path)
      ? `Cannot patch "${path}": ${known}; nothing was changed`
      : `Cannot patch "${path}": the operation's precondition was not met; nothing was changed`,
  );
}

/** A file's diff for a human or the host; null for a secret (by name or content) or binary. */
function diffOf(kit: PatchKit, f: Touched): string | null {
  if (kit.secretPath(f.written) || kit.secretPath(f.path.relative)) return null;
  const decode = (b: Uint8Array | null | undefined) => {
    if (!b) return "";
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(b);
    } catch {
      return undefined;
    }
  };
  const before = decode(f.before);
  const after = decode(f.after);
  if (before === undefined || after === undefined) return null;
  if (kit.secretIn(before) !== undefined || kit.secretIn(after) !== undefined) return null;
  return unifiedDiff(before, after, {
    fromLabel: f.before === undefined ? "/dev/null" : `a/${f.path.relative}`,
    toLabel: f.after === null ? "/dev/null" : `b/${f.path.relative}`,
  }).text;
}

/**
 * The approval request for a whole patch: every file and the combined diff of `changes`, or — when
 * the patch cannot be shown applied before a human lets its files be read (no `changes`) — the
 * patch itself.
 */
function details(
  kit: PatchKit,
  patch: { readonly parsed: ParsedPatch; readonly text: string },
  subject: string,
  changes: readonly Touched[],
  dirs: readonly string[],
  ask: { readonly reason: string; readonly ceiling: string | null; readonly binding: string },
): Omit<ApprovalDetails, "action"> {
  const { reason, ceiling, binding } = ask;
  const computed = changes.length > 0;
  const status = (f: Touched) => (f.after === null ? "D" : f.before === undefined ? "A" : "M");
  const diff = changes.map((f) =>
    diffOf(kit, f) ??
      `--- ${f.written}\n+++ ${f.written}\n(diff not shown: a secret-bearing or non-text file)\n`
  ).join("");
  const bytes = changes.reduce((n, f) => n + (f.after?.length ?? 0), 0);
  return {
    primitive: "filesystem",
    operation: OP,
    path: null,
    absolutePath: null,
    // The card's subject: every file the patch names with what it does to it (A add, M update,
    // D delete; a move is D of its source and A of its destination).
    resource: subject,
    right: "write",
    reason,
    grantScope: "this exact patch, once (bound to its digest and every file as it is now)",
    // Per file, in the resource's A/M/D marks (a card would read one flag as the whole patch's).
    willCreate: null,
    willOverwrite: null,
    target: null,
    bytes: computed ? bytes : null,
    sha256: null,
    preview: computed
      ? [
        `${patch.parsed.format} patch of ${changes.length} file(s):`,
        ...changes.map((f) =>
          `${status(f)} ${f.path.relative}${
            (f.facts?.nlink ?? 1) > 1 ? ` (${f.facts!.nlink} hard links)` : ""
          }`
        ),
        ...dirs.map((d) => `+dir ${d}/`),
      ].join("\n")
      // Not applied yet (its files must be read first): the patch as the model sent it.
      : patch.text.slice(0, 4000),
    diff: computed && diff !== "" ? diff : null,
    executable: null,
    argv: null,
    cwd: null,
    envHash: null,
    digest: binding,
    ceiling,
  };
}
