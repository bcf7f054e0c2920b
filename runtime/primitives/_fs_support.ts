/**
 * Pieces of the filesystem primitive that are not its operations: limits, small facts about
 * paths, UTF-8 cutting, and the signal an operation raises when a human must decide.
 *
 * @module
 */
import type { Decision } from "../decide.ts";
import type { PathFacts } from "../providers/filesystem.ts";
import type { WorkspacePath } from "../workspace_path.ts";

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
}

/**
 * Raised inside an operation (under the workspace lock) when a human must decide; the operation
 * catches it after the lock is released and escalates, so nobody waits on a human holding it.
 */
export class AskNeeded extends Error {
  /** Builds the signal with the reason that asked and the facts for the human. */
  constructor(readonly reason: string, readonly path: WorkspacePath, readonly facts: AskFacts) {
    super(`ask: ${reason}`);
  }
}
