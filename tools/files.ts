/**
 * File tools: read, write, list, create and delete workspace files and directories, edit a file
 * by exact replacement, and search (glob, grep) — all through the filesystem primitive, which
 * decides every call on the calling process's capabilities. These tools only shape arguments.
 *
 * @module
 */
import { z } from "zod";
import { GREP_MATCHES_MAX, LIST_LIMIT_MAX, READ_BYTES_MAX, WRITE_CHARS_MAX } from "./caps.ts";
import {
  present as given,
  syscall,
  type SyscallOnlySpec,
  type ToolSpec,
} from "../runtime/broker/tool.ts";

const Path = z.string().min(1).max(4096).describe("A path, relative to your working directory");

const ReadArgs = z.object({
  path: Path,
  max_bytes: z.number().int().min(1).max(READ_BYTES_MAX).optional().describe(
    "Read at most this many bytes (default 256 KiB)",
  ),
}).strict();

/** `read_text_file`: a UTF-8 file's content (cut at a code point boundary). */
export const readTextFile: ToolSpec<typeof ReadArgs, "fs.read_text"> = {
  name: "read_text_file",
  description: "Read a UTF-8 text file of the workspace.",
  args: ReadArgs,
  effects: ["fs.read"],
  run: (args, ctx) => ctx.fs.readText(args.path, given({ maxBytes: args.max_bytes })),
  syscalls: {
    "fs.read_text": syscall(
      ReadArgs,
      (a, sys) => sys.fs.readText({ path: a.path, ...given({ maxBytes: a.max_bytes }) }),
    ),
  },
};

const WriteArgs = z.object({
  path: Path,
  content: z.string().max(WRITE_CHARS_MAX),
  overwrite: z.boolean().optional().describe("Replace an existing file (default true)"),
}).strict();

/** `write_text_file`: writes a file atomically. */
export const writeTextFile: ToolSpec<typeof WriteArgs, "fs.write_text"> = {
  name: "write_text_file",
  description: "Write a UTF-8 text file of the workspace (atomically).",
  args: WriteArgs,
  effects: ["fs.write"],
  run: (args, ctx) =>
    ctx.fs.writeText(args.path, args.content, given({ overwrite: args.overwrite })),
  syscalls: {
    "fs.write_text": syscall(
      WriteArgs,
      (a, sys) =>
        sys.fs.writeText({
          path: a.path,
          content: a.content,
          ...given({ overwrite: a.overwrite }),
        }),
    ),
  },
};

const ListArgs = z.object({
  path: Path.default("."),
  limit: z.number().int().min(1).max(LIST_LIMIT_MAX).optional(),
}).strict();

/** `read_directory`: a directory's entries (not followed). */
export const readDirectory: ToolSpec<typeof ListArgs, "fs.list"> = {
  name: "read_directory",
  description: "List a workspace directory's entries (name and type), in name order.",
  args: ListArgs,
  effects: ["fs.read"],
  run: (args, ctx) => ctx.fs.listDir(args.path, given({ limit: args.limit })),
  syscalls: {
    "fs.list": syscall(
      ListArgs,
      (a, sys) => sys.fs.listDir({ path: a.path, ...given({ limit: a.limit }) }),
    ),
  },
};

const MakeDirArgs = z.object({
  path: Path,
  parents: z.boolean().optional().describe("Create missing parent directories too"),
}).strict();

/** `write_directory`: creates a directory. */
export const writeDirectory: ToolSpec<typeof MakeDirArgs, "fs.make_dir"> = {
  name: "write_directory",
  description: "Create a directory in the workspace.",
  args: MakeDirArgs,
  effects: ["fs.write"],
  run: (args, ctx) => ctx.fs.makeDir(args.path, given({ parents: args.parents })),
  syscalls: {
    "fs.make_dir": syscall(
      MakeDirArgs,
      (a, sys) => sys.fs.makeDir({ path: a.path, parents: a.parents ?? false }),
    ),
  },
};

const DeleteFileArgs = z.object({
  path: Path,
  missing_ok: z.boolean().optional().describe("Succeed when the file does not exist"),
}).strict();

/** `delete_file`: deletes one file (never a directory). */
export const deleteFile: ToolSpec<typeof DeleteFileArgs, "fs.delete_file"> = {
  name: "delete_file",
  description: "Delete one file of the workspace.",
  args: DeleteFileArgs,
  effects: ["fs.delete"],
  run: (args, ctx) => ctx.fs.deleteFile(args.path, given({ missingOk: args.missing_ok })),
  syscalls: {
    "fs.delete_file": syscall(
      DeleteFileArgs,
      (a, sys) => sys.fs.deleteFile({ path: a.path, ...given({ missingOk: a.missing_ok }) }),
    ),
  },
};

const DeleteDirArgs = z.object({
  path: Path,
  recursive: z.boolean().optional().describe("Delete everything inside too (default false)"),
}).strict();

/** `delete_directory`: deletes a directory (empty unless recursive). */
export const deleteDirectory: ToolSpec<typeof DeleteDirArgs, "fs.delete_dir"> = {
  name: "delete_directory",
  description: "Delete a directory of the workspace (it must be empty unless recursive).",
  args: DeleteDirArgs,
  effects: ["fs.delete"],
  run: (args, ctx) => ctx.fs.deleteDir(args.path, given({ recursive: args.recursive })),
  syscalls: {
    "fs.delete_dir": syscall(
      DeleteDirArgs,
      (a, sys) => sys.fs.deleteDir({ path: a.path, ...given({ recursive: a.recursive }) }),
    ),
  },
};

const EditArgs = z.object({
  path: Path,
  old_string: z.string().min(1).max(1024 * 1024).describe(
    "The exact text to replace, copied from the file (unique unless replace_all)",
  ),
  new_string: z.string().max(1024 * 1024).describe("The text to put in its place"),
  replace_all: z.boolean().optional().describe("Replace every occurrence (default false)"),
}).strict();

/** `edit_file`: exact string replacement, refused when the file changed since it was read. */
export const editFile: ToolSpec<typeof EditArgs, "fs.edit"> = {
  name: "edit_file",
  description:
    "Edit a text file by replacing an exact piece of text (unique in the file unless replace_all). An edit that needs approval shows your human its diff.",
  args: EditArgs,
  effects: ["fs.write"],
  run: (args, ctx) =>
    ctx.fs.editText(
      args.path,
      args.old_string,
      args.new_string,
      given({ replaceAll: args.replace_all }),
    ),
  syscalls: {
    "fs.edit": syscall(
      EditArgs,
      (a, sys) =>
        sys.fs.editText({
          path: a.path,
          oldString: a.old_string,
          newString: a.new_string,
          ...given({ replaceAll: a.replace_all }),
        }),
    ),
  },
};

const GlobArgs = z.object({
  pattern: z.string().min(1).max(1024).describe(
    "A glob over workspace paths: * within a name, ** across directories, ? one character (e.g. src/**/*.ts)",
  ),
  path: Path.optional().describe("Where to start (default: your working directory)"),
  limit: z.number().int().min(1).max(LIST_LIMIT_MAX).optional(),
}).strict();

/** `glob`: files matching a pattern, among those the process may list. */
export const globFiles: ToolSpec<typeof GlobArgs, "fs.glob"> = {
  name: "glob",
  description:
    "Find files whose workspace path matches a glob. Directories you may not read are not entered.",
  args: GlobArgs,
  effects: ["fs.read"],
  run: (args, ctx) => ctx.fs.glob(args.pattern, given({ path: args.path, limit: args.limit })),
  syscalls: {
    "fs.glob": syscall(
      GlobArgs,
      (a, sys) => sys.fs.glob({ glob: a.pattern, ...given({ path: a.path, limit: a.limit }) }),
    ),
  },
};

const GrepArgs = z.object({
  text: z.string().min(1).max(1000).describe("The text to look for (literally, not a regex)"),
  path: Path.optional().describe("Where to start (default: your working directory)"),
  glob: z.string().min(1).max(1024).optional().describe("Only files matching this glob"),
  ignore_case: z.boolean().optional(),
  max_matches: z.number().int().min(1).max(GREP_MATCHES_MAX).optional().describe("Default 200"),
}).strict();

/** `grep`: lines containing a text; files the process may not read, or secrets, are skipped. */
export const grepFiles: ToolSpec<typeof GrepArgs, "fs.grep"> = {
  name: "grep",
  description:
    "Find the lines of workspace files that contain a text. Files you may not read, and secret-bearing files, are skipped without asking anyone.",
  args: GrepArgs,
  effects: ["fs.read"],
  run: (args, ctx) =>
    ctx.fs.grep(
      args.text,
      given({
        path: args.path,
        glob: args.glob,
        ignoreCase: args.ignore_case,
        maxMatches: args.max_matches,
      }),
    ),
  syscalls: {
    "fs.grep": syscall(
      GrepArgs,
      (a, sys) =>
        sys.fs.grep({
          text: a.text,
          ...given({
            path: a.path,
            glob: a.glob,
            ignoreCase: a.ignore_case,
            maxMatches: a.max_matches,
          }),
        }),
    ),
  },
};

const StatArgs = z.object({ path: Path }).strict();

/** File syscalls no model-facing tool mirrors. */
export const fileSyscalls: SyscallOnlySpec<"fs.stat"> = {
  syscalls: { "fs.stat": syscall(StatArgs, (a, sys) => sys.fs.stat({ path: a.path })) },
  noTool: {
    "fs.stat": "the model reads a file's facts through read_directory and read_text_file",
  },
};
