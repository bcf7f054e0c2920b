/**
 * Path globs for canonical workspace-relative paths: `*` matches within one segment, `**`
 * matches any number of segments (including none), `?` one character. Used by protected paths,
 * secret-bearing files and run-scoped denies. Matching is case-insensitive on purpose: these globs
 * only ever deny or ask, and normalisation may only make a decision stricter (DESIGN §2).
 *
 * @module
 */

/** A compiled glob. */
export interface PathGlob {
  readonly source: string;
  /** The regular expression body (without anchors or flags). */
  readonly pattern: string;
  test(path: string): boolean;
}

/**
 * Compiles a glob.
 * @throws {TypeError} for an empty or over-long pattern.
 */
export function compileGlob(
  source: string,
  options: { readonly segments?: boolean } = {},
): PathGlob {
  // Paths have segments, so `*` stops at `/`; other keys (a shell command, a host) have none.
  const star = options.segments === false ? ".*" : "[^/]*";
  const one = options.segments === false ? "." : "[^/]";
  if (typeof source !== "string" || source.length === 0 || source.length > 1024) {
    throw new TypeError(`A path glob must be 1-1024 characters, got ${JSON.stringify(source)}`);
  }
  let pattern = "";
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === "*" && source[i + 1] === "*") {
      const slash = source[i + 2] === "/";
      // `**/` may match nothing at all; a trailing or inner `**` any run of characters.
      pattern += slash ? "(?:.*/)?" : ".*";
      i += slash ? 2 : 1;
    } else if (c === "*") {
      pattern += star;
    } else if (c === "?") {
      pattern += one;
    } else {
      pattern += c.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
    }
  }
  const regex = new RegExp(`^${pattern}$`, "iu");
  return { source, pattern, test: (path) => regex.test(path) };
}

/** A set of globs tested with one combined regular expression; `match` names the first that matches. */
export interface GlobSet {
  readonly globs: readonly PathGlob[];
  match(path: string): PathGlob | undefined;
}

/** Compiles several globs into a {@link GlobSet}. */
export function globSet(sources: readonly string[]): GlobSet {
  const globs = sources.map((source) => compileGlob(source));
  const any = globs.length
    ? new RegExp(globs.map((g) => `^(?:${g.pattern})$`).join("|"), "iu")
    : undefined;
  return {
    globs,
    // One regex answers "none" (the common case); only a hit looks for which glob it was.
    match: (path) => (any?.test(path) ? globs.find((g) => g.test(path)) : undefined),
  };
}

/** Paths whose writes and deletes ask in every mode (DESIGN §3). */
export const PROTECTED_GLOBS: readonly string[] = Object.freeze([
  "**/.git",
  "**/.git/**",
  "**/.gitmodules",
]);

/** Files whose reads ask even under a broad read grant (DESIGN §2). */
export const SECRET_GLOBS: readonly string[] = Object.freeze([
  "**/.env",
  "**/.env.*",
  "**/*.pem",
  "**/id_*",
  "**/.npmrc",
  "**/.netrc",
  "**/.git-credentials",
]);

/** The first glob in `globs` that matches `path`, if any. */
export function firstMatch(globs: readonly PathGlob[], path: string): PathGlob | undefined {
  return globs.find((g) => g.test(path));
}
