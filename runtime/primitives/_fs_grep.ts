/**
 * `grep` for the filesystem primitive: the lines of workspace files that match a regular
 * expression (RE2 syntax, run by a linear-time engine: `runtime/base/line_pattern.ts`) or a
 * literal text, in the shapes coding agents use — ripgrep-style file filters (`glob`, `type`),
 * case folding, context lines, and three output modes (`content`, `files_with_matches`,
 * `count`) with a head limit and an offset. The walk, and what it never reveals, is
 * `_fs_search.ts`'s: every file is read through the primitive's `readText` (decided, audited,
 * known secrets redacted before matching), and a file that needs a human is skipped unasked.
 *
 * @module
 */
import { compileLinePattern, type LinePattern } from "../base/line_pattern.ts";
import { InvalidPatternError, ValidationError } from "../base/errors.ts";
import {
  bounded,
  DEFAULT_SEARCH_LIMITS,
  enters,
  fileGlob,
  type Found,
  type SearchHost,
  type SearchLimits,
  walk,
} from "./_fs_search.ts";

/** What grep returns: matching lines, the files that match, or a count per file. */
export type GrepMode = "content" | "files_with_matches" | "count";

/** What grep takes. */
export interface GrepArgs {
  /** A regular expression (RE2 syntax), or literal text with `literal`. */
  readonly pattern?: string;
  /** Literal text (the original argument): the same as `pattern` with `literal`. */
  readonly text?: string;
  readonly literal?: boolean;
  readonly path?: string;
  /** Only files matching this glob (`*.ts`: by name at any depth; `src/**\/*.{ts,tsx}`). */
  readonly glob?: string;
  /** Only files of this type (`ts`, `py`, `rust`, …: {@link FILE_TYPES}). */
  readonly type?: string;
  readonly ignoreCase?: boolean;
  /** Lines of context shown before and after each match (content mode). */
  readonly before?: number;
  readonly after?: number;
  /** Default `content`. */
  readonly mode?: GrepMode;
  /** At most this many results (lines, files or counts); default 200. */
  readonly maxMatches?: number;
  /** Skip this many results first (to page past a head limit). */
  readonly offset?: number;
  /** Matching across lines: refused (see {@link grepFiles}). */
  readonly multiline?: boolean;
}

/** One matching line. */
export interface GrepMatch {
  readonly path: string;
  /** 1-based. */
  readonly line: number;
  /** The line, cut at {@link LINE_CHARS_MAX} characters. */
  readonly text: string;
  /** The lines just before it (not already shown), when context was asked for. */
  readonly before?: string[];
  /** The lines just after it (up to the next match), when context was asked for. */
  after?: string[];
}

/** What every grep result says about the search itself. */
interface GrepStats {
  /** Files searched. */
  files: number;
  /** Directories and files not searched: refused, needing a human, vanished. */
  skipped: number;
  /** Whether a bound or the head limit cut the result short. */
  truncated: boolean;
  /** Files not searched because they are binary (a NUL byte near the start); when any. */
  binary?: number;
  /** Set when cut short: what was cut and how to see the rest. */
  note?: string;
}

/** What grep found, by mode. */
export type GrepResult =
  & GrepStats
  & (
    | { matches: GrepMatch[] }
    | { mode: "files_with_matches"; paths: string[] }
    | {
      mode: "count";
      counts: { path: string; count: number }[];
      /** The sum of `counts`. */
      total: number;
    }
  );

/** Longest line (and context line) returned, in characters. */
export const LINE_CHARS_MAX = 500;
/** Most context lines on either side of a match. */
export const CONTEXT_LINES_MAX = 50;
/** Most results one grep returns. */
export const GREP_RESULTS_MAX = 2_000;

/** File types for `type`, by name (ripgrep's names), as file extensions. */
export const FILE_TYPES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  c: ["c", "h"],
  cpp: ["cpp", "cc", "cxx", "c++", "hpp", "hh", "hxx", "h", "inl"],
  cs: ["cs"],
  css: ["css", "scss", "sass", "less"],
  go: ["go"],
  html: ["html", "htm", "xhtml"],
  java: ["java"],
  js: ["js", "jsx", "mjs", "cjs"],
  json: ["json", "jsonc", "json5"],
  kotlin: ["kt", "kts"],
  lua: ["lua"],
  md: ["md", "markdown", "mdx"],
  php: ["php"],
  py: ["py", "pyi"],
  rb: ["rb", "rake", "gemspec"],
  rust: ["rs"],
  scala: ["scala", "sc"],
  sh: ["sh", "bash", "zsh", "fish"],
  sql: ["sql"],
  swift: ["swift"],
  toml: ["toml"],
  ts: ["ts", "tsx", "mts", "cts"],
  txt: ["txt"],
  vue: ["vue"],
  xml: ["xml", "xsd", "xsl", "svg"],
  yaml: ["yaml", "yml"],
});

/** Other names models use for the same types. */
const TYPE_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  javascript: "js",
  typescript: "ts",
  python: "py",
  rs: "rust",
  ruby: "rb",
  markdown: "md",
  yml: "yaml",
  shell: "sh",
  bash: "sh",
  "c++": "cpp",
  csharp: "cs",
  kt: "kotlin",
  golang: "go",
  tsx: "ts",
  jsx: "js",
});

function typeFilter(name: string): (file: Found) => boolean {
  const key = name.toLowerCase();
  const extensions = FILE_TYPES[TYPE_ALIASES[key] ?? key];
  if (extensions === undefined) {
    throw new ValidationError(
      `Unknown file type ${JSON.stringify(name.slice(0, 50))}; use one of ${
        Object.keys(FILE_TYPES).join(", ")
      }, or a glob such as "*.ext"`,
    );
  }
  const wanted = new Set(extensions);
  return (file) => {
    const dot = file.path.lastIndexOf(".");
    return dot > file.path.lastIndexOf("/") && wanted.has(file.path.slice(dot + 1).toLowerCase());
  };
}

/** The pattern of a grep call: `pattern` (a regex unless `literal`) or `text` (literal). */
function linePattern(args: GrepArgs): LinePattern {
  if (args.multiline === true) {
    throw new InvalidPatternError(
      args.pattern ?? args.text ?? "",
      "multiline is not supported: grep matches one line at a time, so that every search stays linear in the size of the files; search for one line of what you want, then read the file around it",
    );
  }
  if (args.pattern !== undefined && args.text !== undefined) {
    throw new ValidationError("Give either pattern (a regular expression) or text, not both");
  }
  const source = args.pattern ?? args.text;
  if (source === undefined) {
    throw new ValidationError("Give pattern: the regular expression (or literal text) to look for");
  }
  return compileLinePattern(source, {
    literal: args.literal === true || args.pattern === undefined,
    ignoreCase: args.ignoreCase === true,
  });
}

/** Whether text looks binary: a NUL among its first 8,000 characters (as git and ripgrep tell). */
function binary(content: string): boolean {
  return content.slice(0, 8_000).includes("\0");
}

/**
 * Lines matching the pattern in the files under `path` (or the file `path`), filtered by `glob`
 * and `type`: in `content` mode each matching line with its number (and context), in
 * `files_with_matches` mode the paths, in `count` mode the matching lines per file. At most
 * `maxMatches` results after `offset`; files the caller may not read, or that need a human, are
 * skipped unread and counted in `skipped`; binary files are not searched. Matching across lines
 * (`multiline`) is refused: it needs a search whose repeated use on one file is not linear.
 * @throws {InvalidPatternError} for a pattern the engine cannot run (the message says why and
 *   what to write instead); {@link ValidationError} for other bad arguments.
 */
export async function grepFiles(
  host: SearchHost,
  pid: string,
  args: GrepArgs,
  limits: SearchLimits = DEFAULT_SEARCH_LIMITS,
): Promise<GrepResult> {
  const pattern = linePattern(args);
  const mode: GrepMode = args.mode ?? "content";
  if (!["content", "files_with_matches", "count"].includes(mode)) {
    throw new ValidationError(
      `output_mode must be "content", "files_with_matches" or "count", got ${
        JSON.stringify(String(mode).slice(0, 50))
      }`,
    );
  }
  const limit = bounded(args.maxMatches ?? 200, GREP_RESULTS_MAX, "head_limit");
  const offset = bounded(args.offset ?? 0, 1_000_000, "offset", 0);
  const before = bounded(args.before ?? 0, CONTEXT_LINES_MAX, "before (-B)", 0);
  const after = bounded(args.after ?? 0, CONTEXT_LINES_MAX, "after (-A)", 0);
  const glob = args.glob === undefined ? undefined : fileGlob(args.glob, { basename: true });
  const type = args.type === undefined ? undefined : typeFilter(args.type);
  const start = args.path ?? ".";
  const found = await walk(
    host,
    pid,
    start,
    limits,
    // A file named as the start is searched whatever the filters say (as ripgrep does).
    (f) => f.call === start || ((glob?.test(f) ?? true) && (type?.(f) ?? true)),
    limits.files,
    enters([args.glob]),
  );
  const stats: GrepStats = { files: 0, skipped: found.skipped, truncated: found.truncated };
  let binaries = 0;
  let cutFile: string | undefined;
  /** Results seen so far (offset included); past offset + limit the search stops. */
  let seen = 0;
  const full = () => seen >= offset + limit;
  const take = () => seen++ >= offset;
  const matches: GrepMatch[] = [];
  const paths: string[] = [];
  const counts: { path: string; count: number }[] = [];
  let total = 0;
  let more = false;
  for (const file of found.files) {
    let content: string;
    let isBinary = false;
    try {
      const read = await host.readText(pid, {
        path: file.call,
        maxBytes: limits.bytesPerFile,
        ask: false,
      });
      content = read.content;
      // The primitive answers a binary file by its kind, with no content.
      isBinary = read.binary !== undefined && read.binary !== null;
      if (read.truncated) {
        stats.truncated = true;
        cutFile ??= read.path;
      }
    } catch {
      // Refused, secret-bearing, hard-linked, vanished: never searched.
      stats.skipped++;
      continue;
    }
    if (isBinary || binary(content)) {
      binaries++;
      continue;
    }
    stats.files++;
    if (!pattern.mayMatch(content)) continue;
    const lines = content.split("\n");
    if (mode !== "content") {
      let count = 0;
      for (const line of lines) {
        if (!pattern.test(line)) continue;
        count++;
        // A file's first match is all files_with_matches needs.
        if (mode === "files_with_matches") break;
      }
      if (count === 0) continue;
      if (full()) {
        more = true;
        break;
      }
      if (!take()) continue;
      total += count;
      if (mode === "count") counts.push({ path: file.path, count });
      else paths.push(file.path);
      continue;
    }
    /** The last line index shown for this file (as a match or context). */
    let shown = -1;
    let last: { match: GrepMatch; index: number } | undefined;
    for (let i = 0; i < lines.length; i++) {
      if (!pattern.test(lines[i]!)) continue;
      if (full()) {
        more = true;
        break;
      }
      if (last !== undefined) {
        contextAfter(last, lines, i, after);
        shown = last.index + (last.match.after?.length ?? 0);
      }
      if (!take()) continue;
      const context = before > 0 ? lines.slice(Math.max(shown + 1, i - before), i).map(cut) : [];
      const match: GrepMatch = {
        path: file.path,
        line: i + 1,
        text: cut(lines[i]!),
        ...(context.length > 0 ? { before: context } : {}),
      };
      matches.push(match);
      last = { match, index: i };
      shown = i;
    }
    if (last !== undefined) contextAfter(last, lines, lines.length, after);
    if (more) break;
  }
  if (binaries > 0) stats.binary = binaries;
  if (more) {
    stats.truncated = true;
    stats.note = `Stopped at head_limit ${limit}${
      offset ? ` (after offset ${offset})` : ""
    }: more ${
      mode === "content" ? "matching lines" : "files"
    } exist; narrow pattern, path, glob or type, or pass offset ${
      offset + limit
    } for the next page`;
  } else if (found.truncated) {
    stats.note =
      `A search bound was reached (${limits.directories} directories, ${limits.files} files, or ${limits.entriesPerDirectory} entries in one directory): some files were not searched; narrow path, glob or type`;
  } else if (cutFile !== undefined) {
    stats.note = `Only the first ${limits.bytesPerFile} bytes of large files (such as ${
      JSON.stringify(cutFile)
    }) were searched; read the rest of such a file with read_text_file`;
  }
  switch (mode) {
    case "content":
      return { matches, ...stats };
    case "files_with_matches":
      return { mode, paths, ...stats };
    case "count":
      return { mode, counts, total, ...stats };
  }
}

/** Gives the last match the lines after it, up to `after` and short of line `next`. */
function contextAfter(
  last: { match: GrepMatch; index: number },
  lines: readonly string[],
  next: number,
  after: number,
): void {
  if (after === 0) return;
  const end = Math.min(next, last.index + 1 + after);
  // A final empty "line" is the file's closing newline, not a line.
  const upto = end === lines.length && lines.at(-1) === "" ? end - 1 : end;
  if (upto > last.index + 1) last.match.after = lines.slice(last.index + 1, upto).map(cut);
}

function cut(line: string): string {
  return line.length > LINE_CHARS_MAX ? line.slice(0, LINE_CHARS_MAX) : line;
}
