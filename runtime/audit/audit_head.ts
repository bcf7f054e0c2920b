/**
 * The audit head file: the hash of each chain's last record, written outside the database after
 * every commit (DESIGN §6). A tamperer who can rewrite the database can recompute the whole hash
 * chain or cut records off its end; neither survives a comparison with a head kept elsewhere.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { z } from "zod";
import { AuditError } from "../base/errors.ts";

const Hash = z.string().regex(/^[0-9a-f]{64}$/);

/** The anchored tail of one chain. */
export const ChainHead = z.object({
  chainSeq: z.number().int().nonnegative(),
  seq: z.number().int().nonnegative(),
  hash: Hash,
}).strict();
/** The anchored tail of one chain. */
export type ChainHead = z.infer<typeof ChainHead>;

/** The head file's contents. */
export const HeadFile = z.object({
  version: z.literal(1),
  database: z.string().min(1),
  time: z.number().int(),
  chains: z.record(z.string().min(1).max(64), ChainHead),
}).strict();
/** The head file's contents. */
export type HeadFile = z.infer<typeof HeadFile>;

const MAX_HEAD_BYTES = 1 << 20;

/**
 * Reads a head file; `undefined` when it does not exist.
 * @throws {AuditError} `audit_head_invalid` when it exists but cannot be read or parsed.
 */
export function readHeadFile(path: string): HeadFile | undefined {
  let text: string;
  try {
    const info = Deno.statSync(path);
    if (!info.isFile || info.size > MAX_HEAD_BYTES) {
      throw new AuditError(
        "audit_head_invalid",
        `Audit head file "${path}" is not a small regular file; move it aside and run "libos init --reanchor"`,
      );
    }
    text = Deno.readTextFileSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    if (error instanceof AuditError) throw error;
    throw new AuditError(
      "audit_head_invalid",
      `Cannot read audit head file "${path}": ${String(error)}`,
      { cause: error },
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new AuditError(
      "audit_head_invalid",
      `Audit head file "${path}" is not JSON; move it aside and run "libos init --reanchor" after "libos audit verify --no-head" passes`,
      { cause: error },
    );
  }
  const result = HeadFile.safeParse(parsed);
  if (!result.success) {
    throw new AuditError(
      "audit_head_invalid",
      `Audit head file "${path}" has an unexpected shape (${
        result.error.issues[0]?.message ?? "invalid"
      }); move it aside and run "libos init --reanchor" after "libos audit verify --no-head" passes`,
      { cause: result.error },
    );
  }
  return result.data;
}

/** Head files are written padded to a multiple of this (one page, for the common case). */
const HEAD_BLOCK = 4096;

/**
 * The bytes of a head file, padded with spaces (before the final newline) to a multiple of
 * {@link HEAD_BLOCK} and to at least `atLeast`: rewritten in place over an older head, such a
 * text covers every byte the older one had, so no truncation (a moment with an empty or cut
 * file) is ever needed, and the file's size changes only when the head outgrows a block.
 */
export function headBytes(head: HeadFile, atLeast = 0): Uint8Array {
  const text = JSON.stringify(head);
  const size = Math.max(Math.ceil((text.length + 1) / HEAD_BLOCK) * HEAD_BLOCK, atLeast);
  return new TextEncoder().encode(text + " ".repeat(size - text.length - 1) + "\n");
}

/**
 * Rewrites the head file open as `file` in place: one write of whole blocks at offset 0 (see
 * {@link headBytes}), which a process's death cannot cut in two, and no rename — which on ext4
 * forces the new file's data to disk first and costs about a millisecond per commit.
 */
export function overwriteHeadFile(file: Deno.FsFile, head: HeadFile, size: number): void {
  const bytes = headBytes(head, size);
  file.seekSync(0, Deno.SeekMode.Start);
  let at = 0;
  while (at < bytes.length) at += file.writeSync(bytes.subarray(at));
}

/**
 * Writes a head file atomically (temporary file in the same folder, then rename), mode 0600;
 * `ensureDir: false` skips creating the folder (a caller that wrote there before).
 */
export function writeHeadFile(
  path: string,
  head: HeadFile,
  options: { readonly ensureDir?: boolean } = {},
): void {
  const dir = dirname(path);
  if (options.ensureDir !== false) Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.${crypto.randomUUID()}.tmp`);
  try {
    Deno.writeFileSync(temp, headBytes(head), { mode: 0o600, createNew: true });
    Deno.renameSync(temp, path);
  } catch (error) {
    try {
      Deno.removeSync(temp);
    } catch { /* it may not exist; the write error is what matters */ }
    throw error;
  }
}
