/**
 * File tools: read, write and list workspace files through the filesystem primitive. The
 * primitive decides on the calling process's capabilities; these tools only shape arguments.
 *
 * @module
 */
import { z } from "zod";
import type { ToolSpec } from "../runtime/tool.ts";

const Path = z.string().min(1).max(4096).describe("A workspace-relative path");

const ReadArgs = z.object({
  path: Path,
  max_bytes: z.number().int().min(1).max(8 * 1024 * 1024).optional().describe(
    "Read at most this many bytes (default 256 KiB)",
  ),
}).strict();

/** `read_text_file`: a UTF-8 file's content (cut at a code point boundary). */
export const readTextFile: ToolSpec<typeof ReadArgs> = {
  name: "read_text_file",
  description: "Read a UTF-8 text file of the workspace.",
  args: ReadArgs,
  effects: ["fs.read"],
  run: (args, ctx) =>
    ctx.fs.readText(args.path, args.max_bytes === undefined ? {} : { maxBytes: args.max_bytes }),
};

const WriteArgs = z.object({
  path: Path,
  content: z.string().max(8 * 1024 * 1024),
  overwrite: z.boolean().optional().describe("Replace an existing file (default true)"),
}).strict();

/** `write_text_file`: writes a file atomically. */
export const writeTextFile: ToolSpec<typeof WriteArgs> = {
  name: "write_text_file",
  description: "Write a UTF-8 text file of the workspace (atomically).",
  args: WriteArgs,
  effects: ["fs.write"],
  run: (args, ctx) =>
    ctx.fs.writeText(
      args.path,
      args.content,
      args.overwrite === undefined ? {} : { overwrite: args.overwrite },
    ),
};

const ListArgs = z.object({
  path: Path.default("."),
  limit: z.number().int().min(1).max(10_000).optional(),
}).strict();

/** `list_directory`: a directory's entries (not followed). */
export const listDirectory: ToolSpec<typeof ListArgs> = {
  name: "list_directory",
  description: "List a workspace directory's entries, in name order.",
  args: ListArgs,
  effects: ["fs.read"],
  run: (args, ctx) =>
    ctx.fs.listDir(args.path, args.limit === undefined ? {} : { limit: args.limit }),
};
