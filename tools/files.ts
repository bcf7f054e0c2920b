/**
 * File tools: read, write, list, create and delete workspace files and directories, edit a file
 * by exact replacement, and search (glob, newest first; grep, by regular expression run in linear
 * time) — all through the filesystem primitive, which
 * decides every call on the calling process's capabilities. These tools only shape arguments.
 *
 * @module
 */
import { z } from "zod";
import {
  EDITS_MAX,
  GREP_CONTEXT_MAX,
  GREP_MATCHES_MAX,
  LIST_LIMIT_MAX,
  READ_BYTES_MAX,
  READ_LINE_MAX,
  WRITE_CHARS_MAX,
} from "./caps.ts";
import { numberedView, type ReadAnswer } from "./_file_view.ts";
import {
  type FileEdits,
  present as given,
  syscall,
  type SyscallOnlySpec,
  type ToolSpec,
} from "../runtime/broker/tool.ts";

const Path = z.string().min(1).max(4096).describe(
  "A path inside the workspace: relative to your working directory (src/app.ts) or absolute under the workspace",
);

const ReadArgs = z.object({
  path: Path,
  offset: z.number().int().min(1).max(READ_LINE_MAX).optional().describe(
    "The 1-based line to start at (default 1); the note of a cut read says which offset reads on",
  ),
  limit: z.number().int().min(1).max(READ_LINE_MAX).optional().describe(
    "How many lines to return at most (default: as many as fit)",
  ),
  max_bytes: z.number().int().min(1).max(READ_BYTES_MAX).optional().describe(
    "Return at most this many bytes of content (default 256 KiB)",
  ),
}).strict();

/**
 * `read_text_file`: a text file as numbered lines (`cat -n`), a range of them with
 * offset/limit; its syscall `fs.read_text` returns the raw content and the line range.
 */
export const readTextFile: ToolSpec<typeof ReadArgs, "fs.read_text"> = {
  name: "read_text_file",
  description: [
    "Read a text file of the workspace. Lines come numbered like `cat -n` (number, tab, line);",
    "the numbers are not part of the file, so never copy them into edit_file's old_string.",
    "Use offset (1-based line) and limit (lines) to read part of a long file: a read shows about",
    "6,500 characters at most, and when it is cut its note says which lines were shown and the",
    "offset to read on. Lines longer than 2,000 characters are cut with a marker. Images and",
    "other binary files are answered with their type and size, not content.",
    'Example: {"path": "src/app.ts", "offset": 120, "limit": 60}',
  ].join(" "),
  args: ReadArgs,
  effects: ["fs.read"],
  run: async (args, ctx) =>
    numberedView(
      await ctx.fs.readText(
        args.path,
        given({ maxBytes: args.max_bytes, offset: args.offset, limit: args.limit }),
      ) as unknown as ReadAnswer,
    ),
  syscalls: {
    "fs.read_text": syscall(
      ReadArgs,
      (a, sys) =>
        sys.fs.readText({
          path: a.path,
          ...given({ maxBytes: a.max_bytes, offset: a.offset, limit: a.limit }),
        }),
    ),
  },
};

const WriteArgs = z.object({
  path: Path,
  content: z.string().max(WRITE_CHARS_MAX).describe("The whole new content of the file"),
  overwrite: z.boolean().optional().describe(
    "Replace an existing file (default true); false refuses to touch one that exists",
  ),
}).strict();

/** `write_text_file`: writes a file atomically, creating missing parent directories. */
export const writeTextFile: ToolSpec<typeof WriteArgs, "fs.write_text"> = {
  name: "write_text_file",
  description: [
    "Create a text file of the workspace, or replace one's whole content (atomically).",
    "Missing parent directories are created (each is checked like any write). To change part of",
    "an existing file, prefer edit_file. Protected paths (.git, .env…) need your human's approval.",
    'Example: {"path": "build/output.txt", "content": "done\\n"}',
  ].join(" "),
  args: WriteArgs,
  effects: ["fs.write"],
  run: (args, ctx) =>
    ctx.fs.writeText(
      args.path,
      args.content,
      given({ overwrite: args.overwrite, parents: true }),
    ),
  syscalls: {
    "fs.write_text": syscall(
      WriteArgs,
      (a, sys) =>
        sys.fs.writeText({
          path: a.path,
          content: a.content,
          parents: true,
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
  description: [
    "List one workspace directory's entries (name and type: file, directory, symlink), in name",
    "order, not recursive; a symlink is listed, not followed. To find files by name across",
    "directories use glob; to search contents use grep. limit caps the entries (a cut says so).",
    'Example: {"path": "src"}',
  ].join(" "),
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
  description: [
    "Create a directory in the workspace; parents: true creates missing parents too (each",
    "decided like a write). Not needed before write_text_file, which creates the directories a",
    "new file needs.",
    'Example: {"path": "src/components", "parents": true}',
  ].join(" "),
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

/** `delete_file`: deletes one file, or a symlink itself (never a directory). */
export const deleteFile: ToolSpec<typeof DeleteFileArgs, "fs.delete_file"> = {
  name: "delete_file",
  description: [
    "Delete one file of the workspace. A symbolic link is removed itself, never what it points",
    "to. Not for directories: use delete_directory.",
    'Example: {"path": "tmp/old.log", "missing_ok": true}',
  ].join(" "),
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
  description: [
    "Delete a directory of the workspace: refused when it is not empty, unless recursive: true",
    "(everything inside goes, each entry decided: a protected or secret file inside asks or",
    "stops it). A symlink to a directory is not followed: use delete_file to remove the link.",
    'Example: {"path": "build", "recursive": true}',
  ].join(" "),
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

const EDIT_CHARS_MAX = 1024 * 1024;
const OldString = z.string().max(EDIT_CHARS_MAX).describe(
  "The exact text to replace, copied from the file without read_text_file's line numbers (unique in the file unless replace_all)",
);
const NewString = z.string().max(EDIT_CHARS_MAX).describe("The text to put in its place");
const ReplaceAll = z.boolean().optional().describe("Replace every occurrence (default false)");

const EditArgs = z.object({
  path: Path,
  old_string: OldString.optional(),
  new_string: NewString.optional(),
  replace_all: ReplaceAll,
  edits: z.array(
    z.object({ old_string: OldString, new_string: NewString, replace_all: ReplaceAll }).strict(),
  ).min(1).max(EDITS_MAX).optional().describe(
    "Several edits of the same file, applied in order, each to the result of the ones before; all or none (instead of old_string/new_string)",
  ),
}).strict();

/** The primitive's edits from a model's arguments (one edit, or a list). */
function editsOf(args: z.output<typeof EditArgs>): FileEdits {
  // Everything given goes on: the primitive refuses both forms, or neither, saying which.
  return given({
    oldString: args.old_string,
    newString: args.new_string,
    replaceAll: args.replace_all,
    edits: args.edits?.map((e) => ({
      oldString: e.old_string,
      newString: e.new_string,
      ...given({ replaceAll: e.replace_all }),
    })),
  });
}

/** `edit_file`: exact string replacements, refused when the file changed since it was read. */
export const editFile: ToolSpec<typeof EditArgs, "fs.edit"> = {
  name: "edit_file",
  description: [
    "Change part of a text file by replacing exact text: old_string must match the file exactly",
    "(whitespace and indentation included, without read_text_file's line numbers) and occur once,",
    "unless replace_all. For several changes to one file pass edits: a list applied in order, all",
    "or none. A file with CRLF line endings can be edited with LF text and keeps its endings. A",
    "refusal says why (not found, found N times) and what to do. Read the file first. To create a",
    "file or replace all of it, use write_text_file.",
    'Example: {"path": "src/app.ts", "old_string": "const port = 80;", "new_string": "const port = 8080;"};',
    'several: {"path": "src/app.ts", "edits": [{"old_string": "port = 80", "new_string": "port = 8080"},',
    '{"old_string": "http:", "new_string": "https:", "replace_all": true}]}',
  ].join(" "),
  args: EditArgs,
  effects: ["fs.write"],
  run: (args, ctx) => ctx.fs.editText(args.path, editsOf(args)),
  syscalls: {
    "fs.edit": syscall(
      EditArgs,
      (a, sys) => sys.fs.editText({ path: a.path, ...editsOf(a) }),
    ),
  },
};

const GlobArgs = z.object({
  pattern: z.string().min(1).max(1024).describe(
    "A glob: * within a name, ** across directories, ? one character, {a,b} alternatives (e.g. src/**/*.{ts,tsx})",
  ),
  path: Path.optional().describe("The directory to search (default: your working directory)"),
  limit: z.number().int().min(1).max(LIST_LIMIT_MAX).optional().describe(
    "At most this many paths, the newest first (default 1000)",
  ),
}).strict();

/** `glob`: files matching a pattern, newest first, among those the process may list. */
export const globFiles: ToolSpec<typeof GlobArgs, "fs.glob"> = {
  name: "glob",
  description: [
    "Find files by path pattern, newest (most recently modified) first.",
    "Use it to locate files by name or extension; use grep to search what they contain.",
    "* matches within one name, ** across directories, ? one character, {a,b} either; matching is case-insensitive, against the path from `path` (default: your working directory) or from the workspace root.",
    "Limits: at most `limit` paths (default 1000); when cut, truncated is true and note says how to narrow. .git, .hg, .svn and node_modules are not entered unless path or pattern names one; directories you may not read are not entered, and links are not followed.",
    'Example: {"pattern": "src/**/*.{ts,tsx}"}',
  ].join(" "),
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

const Flag = z.boolean().optional();
const Lines = z.number().int().min(0).max(GREP_CONTEXT_MAX);
const Limit = z.number().int().min(0).max(GREP_MATCHES_MAX);

const GrepArgs = z.object({
  pattern: z.string().min(1).max(1000).optional().describe(
    "The regular expression to look for, RE2 syntax: \\d \\w \\s \\b, [a-z], a|b, x{2,5}, (?i); no lookaround or backreferences. Escape ( ) [ ] { } . * + ? | ^ $ \\ to match them, or set fixed_strings",
  ),
  text: z.string().min(1).max(1000).optional().describe(
    "Literal text to look for, instead of pattern (the same as pattern with fixed_strings)",
  ),
  fixed_strings: Flag.describe("Match pattern as literal text, not as a regular expression"),
  literal: Flag.describe("The same as fixed_strings"),
  path: Path.optional().describe(
    "A file or directory to search (default: your working directory)",
  ),
  glob: z.string().min(1).max(1024).optional().describe(
    'Only files matching this glob: "*.ts" (by name, at any depth), "src/**/*.{ts,tsx}"',
  ),
  type: z.string().min(1).max(32).optional().describe(
    "Only files of this type: ts, js, py, rust, go, java, c, cpp, md, json, yaml, sh, html, css, …",
  ),
  "-i": Flag.describe("Ignore case"),
  case_insensitive: Flag.describe("Ignore case (the same as -i)"),
  ignore_case: Flag.describe("Ignore case (the same as -i)"),
  "-n": Flag.describe("Show line numbers (content mode always does)"),
  "-A": Lines.optional().describe("Lines of context after each match (content mode)"),
  "-B": Lines.optional().describe("Lines of context before each match (content mode)"),
  "-C": Lines.optional().describe("Lines of context before and after each match"),
  context: Lines.optional().describe("The same as -C"),
  before: Lines.optional().describe("The same as -B"),
  after: Lines.optional().describe("The same as -A"),
  output_mode: z.enum(["content", "files_with_matches", "count"]).optional().describe(
    '"content": matching lines with their path and line number (default); "files_with_matches": the paths only; "count": matching lines per file',
  ),
  head_limit: Limit.optional().describe(
    "At most this many results — lines, files or counts (default 200; 0: the largest, 2000)",
  ),
  limit: Limit.optional().describe("The same as head_limit"),
  max_matches: Limit.optional().describe("The same as head_limit"),
  offset: z.number().int().min(0).max(1_000_000).optional().describe(
    "Skip this many results first (the next page after a cut)",
  ),
  multiline: Flag.describe(
    "Not supported: grep matches one line at a time (a call with true is refused)",
  ),
}).strict().refine((a) => (a.pattern === undefined) !== (a.text === undefined), {
  message: "give pattern (a regular expression) or text (literal text), exactly one of them",
  path: ["pattern"],
});

type GrepCall = z.output<typeof GrepArgs>;

/** The primitive's grep arguments from a model's call (its aliases resolved, first wins). */
function grepRequest(a: GrepCall) {
  const limit = a.head_limit ?? a.limit ?? a.max_matches;
  return {
    ...given({ pattern: a.pattern, text: a.text }),
    ...given({
      literal: a.fixed_strings ?? a.literal,
      path: a.path,
      glob: a.glob,
      type: a.type,
      ignoreCase: a["-i"] ?? a.case_insensitive ?? a.ignore_case,
      before: a["-B"] ?? a.before ?? a["-C"] ?? a.context,
      after: a["-A"] ?? a.after ?? a["-C"] ?? a.context,
      mode: a.output_mode,
      maxMatches: limit === 0 ? GREP_MATCHES_MAX : limit,
      offset: a.offset,
      multiline: a.multiline,
    }),
  };
}

/** `grep`: lines matching a regex (linear-time engine); unreadable files and secrets skipped. */
export const grepFiles: ToolSpec<typeof GrepArgs, "fs.grep"> = {
  name: "grep",
  description: [
    "Search file contents with a regular expression, like ripgrep.",
    "Use it to find where something is defined or used before reading files.",
    "pattern is RE2 syntax (\\d \\w \\s \\b, [abc], a|b, x{2,}, (?i)), matched one line at a time; lookaround, backreferences and multiline are not supported. To find text with ( . [ * and the like in it, set fixed_strings: true.",
    'Filter files with glob ("*.ts", "**/*.{ts,tsx}") or type ("py", "rust").',
    'output_mode: "content" (default: path, line number and line; -A/-B/-C add context lines), "files_with_matches" (paths only), "count" (matching lines per file).',
    "Limits: head_limit results (default 200); when cut, truncated is true and note says how to see more (offset pages on). Lines are cut at 500 characters; files larger than 1 MiB are searched in their first 1 MiB; binary files are skipped; .git, .hg, .svn and node_modules are not entered unless path or glob names one. Files you may not read and secret-bearing files (.env, keys) are skipped without asking anyone.",
    'Example: {"pattern": "function\\s+load\\w*", "glob": "*.ts", "-C": 2}',
  ].join(" "),
  args: GrepArgs,
  effects: ["fs.read"],
  run: (args, ctx) => {
    const { pattern, text, ...options } = grepRequest(args);
    // `text` is the original literal argument; `pattern` is a regex unless literal.
    return pattern === undefined
      ? ctx.fs.grep(text ?? "", { ...options, literal: true })
      : ctx.fs.grep(pattern, options);
  },
  syscalls: {
    "fs.grep": syscall(GrepArgs, (a, sys) => sys.fs.grep(grepRequest(a))),
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
