/**
 * Pieces of the filesystem primitive that are not its operations: limits, small facts about
 * paths, UTF-8 cutting, and the signal an operation raises when a human must decide.
 *
 * @module
 */
import type { JsonValue } from "../base/canonical_json.ts";
import type { Decision } from "../authority/decide.ts";
import type { PathFacts } from "../providers/filesystem.ts";
import type { WorkspacePath } from "../providers/workspace_path.ts";

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

/** The type of a directory entry or path. */
export type EntryType = "file" | "directory" | "symlink" | "other";

/** The entry type of a set of facts. */
export function typeOf(f: Pick<PathFacts, "isFile" | "isDirectory" | "isSymlink">): EntryType {
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

/** Whether two sets of facts describe the same file (device and inode). */
export function sameFile(a: PathFacts, b: PathFacts): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** The stricter of two decisions (deny > ask > allow); the first wins a tie. */
export function stricter(a: Decision, b: Decision): Decision {
  const rank = { allow: 0, ask: 1, deny: 2 } as const;
  return rank[b.effect] > rank[a.effect] ? b : a;
}

/** What the human is told about an operation's target and content (the process is not). */
export interface AskFacts {
  readonly target?: PathFacts | undefined;
  readonly willCreate?: boolean;
  readonly willOverwrite?: boolean;
  readonly bytes?: number;
  readonly sha256?: string;
  readonly preview?: string;
  readonly diff?: string;
  /** Every path a recursive delete would remove, in walk order (bound into the approval). */
  readonly entries?: readonly string[];
  /**
   * What a read is about to return (bound into the approval, so a later different content asks
   * again): the sha256 of the bytes read, and the content rule of the secret they carry, if any
   * — a secret asks whatever the path's decision says.
   */
  readonly content?: { readonly sha256: string; readonly secret: string | undefined };
}

/**
 * What an approval of a file action is bound to about its target: the file itself (device,
 * inode, type, size, mtime, links) or its absence — so an approval of "create" never covers an
 * overwrite, and an approval of one file never covers another that took its name.
 */
export function targetFingerprint(target: PathFacts | undefined): JsonValue {
  if (!target) return null;
  return [typeOf(target), target.dev, target.ino, target.size, target.mtime, target.nlink];
}

/**
 * Raised inside an operation (under the workspace lock) when a human must decide; the operation
 * catches it after the lock is released and escalates, so nobody waits on a human holding it.
 * `digest` is what an approval is bound to: the primitive, the path as written and where it
 * resolved, the content and flags, the target's fingerprint and (for recursive deletes) the
 * entries; `ceiling` a mode or protected-path ask that no capability lifts.
 */
export class AskNeeded extends Error {
  /** Builds the signal with the reason that asked, the facts for the human and the binding. */
  constructor(
    readonly reason: string,
    readonly path: WorkspacePath,
    readonly facts: AskFacts,
    readonly digest: string,
    readonly ceiling: string | null,
  ) {
    super(`ask: ${reason}`);
  }
}
