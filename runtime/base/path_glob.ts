/**
 * Path globs for canonical workspace-relative paths: `*` matches within one segment, `**`
 * matches any number of segments (including none), `?` one character. Used by protected paths,
 * secret-bearing files and run-scoped denies. Matching is case-insensitive on purpose: these globs
 * only ever deny or ask, and normalisation may only make a decision stricter (DESIGN §2).
 *
 * Hand-written for a time guarantee and for these semantics: glob packages (`minimatch`,
 * `picomatch`, `@std/path`'s `globToRegExp`) compile a pattern to a regular expression, whose
 * cost on a hostile path depends on the engine's backtracking, and their dotfile, brace and
 * case rules differ from the deny-only, case-insensitive ones here. Matching is the two-pointer
 * wildcard algorithm: no regular expression, O(pattern × path) at worst.
 *
 * @module
 */
import { SECRET_FILES } from "./secret_files.ts";

/** A compiled glob. */
export interface PathGlob {
  readonly source: string;
  test(path: string): boolean;
  /** {@link PathGlob.test} on a path already in lower case (a set lowers it once for all). */
  testLower(lowered: string): boolean;
}

/** One segment's pattern: literal runs, `*` (any run of characters) and `?` (one character). */
type Part = { readonly kind: "literal"; readonly text: string } | { readonly kind: "star" } | {
  readonly kind: "one";
};

function parts(source: string): Part[] {
  const out: Part[] = [];
  let literal = "";
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === "*" || c === "?") {
      if (literal) out.push({ kind: "literal", text: literal.toLowerCase() });
      literal = "";
      // A run of stars is one star.
      if (c === "*") {
        if (out.at(-1)?.kind !== "star") out.push({ kind: "star" });
      } else out.push({ kind: "one" });
    } else literal += c;
  }
  if (literal) out.push({ kind: "literal", text: literal.toLowerCase() });
  return out;
}

/**
 * Wildcard matching without a regular expression and without exponential backtracking: the
 * classic two-pointer algorithm, which remembers only the last star (correct when every star
 * means "any run"), so it runs in O(pattern × text) at worst and linearly on ordinary globs.
 */
function wildcard<T>(
  pattern: readonly T[],
  text: number,
  isStar: (p: T) => boolean,
  step: (p: T, at: number) => number,
): boolean {
  let t = 0;
  let p = 0;
  let star = -1;
  let mark = 0;
  for (;;) {
    const token = pattern[t];
    if (token === undefined) {
      if (p === text) return true;
    } else if (isStar(token)) {
      star = t++;
      mark = p;
      continue;
    } else {
      const next = step(token, p);
      if (next >= 0) {
        t++;
        p = next;
        continue;
      }
    }
    if (star < 0 || mark >= text) return false;
    mark++;
    p = mark;
    t = star + 1;
  }
}

/** Whether one segment (or a whole unsegmented key) matches its parts. */
function matchParts(pattern: readonly Part[], text: string): boolean {
  return wildcard(pattern, text.length, (p) => p.kind === "star", (p, at) => {
    if (p.kind === "one") return at < text.length ? at + 1 : -1;
    if (p.kind === "literal") return text.startsWith(p.text, at) ? at + p.text.length : -1;
    return -1;
  });
}

/**
 * Compiles a glob. Matching is case-insensitive (globs here only ever deny or ask), never uses a
 * regular expression on the (untrusted) path, and cannot backtrack exponentially. With segments
 * (paths), `*` and `?` stay within a segment and a `**` segment matches any number of segments,
 * none included (`secrets/**` also matches `secrets` itself: stricter, never looser).
 * @throws {TypeError} for an empty or over-long pattern.
 */
export function compileGlob(
  source: string,
  options: { readonly segments?: boolean } = {},
): PathGlob {
  if (typeof source !== "string" || source.length === 0 || source.length > 1024) {
    throw new TypeError(`A path glob must be 1-1024 characters, got ${JSON.stringify(source)}`);
  }
  // Paths have segments; other keys (a shell command, a host) have none, and `*` spans all.
  const compiled = (testLower: (lowered: string) => boolean): PathGlob => ({
    source,
    test: (path) => testLower(path.toLowerCase()),
    testLower,
  });
  if (options.segments === false) {
    const whole = parts(source);
    return compiled((key) => matchParts(whole, key));
  }
  const names = source.split("/");
  // `**/NAME` (most secret globs): only the last segment can match NAME — one comparison
  // instead of one per segment.
  if (names.length === 2 && names[0] === "**" && names[1] !== "**") {
    const last = parts(names[1]!);
    return compiled((path) => matchParts(last, path.slice(path.lastIndexOf("/") + 1)));
  }
  const segments = names.map((segment) =>
    segment === "**" ? ("globstar" as const) : parts(segment)
  );
  // Its literal segments (`.aws` in `**/.aws/*/**`) must each be a segment of the path: a cheap
  // test that turns most paths away before the segment-by-segment match.
  const literals = names.filter((n) => n !== "**" && !/[*?]/.test(n)).map((n) =>
    `/${n.toLowerCase()}/`
  );
  return compiled((path) => {
    const framed = `/${path}/`;
    if (!literals.every((literal) => framed.includes(literal))) return false;
    const names = path.split("/");
    return wildcard(
      segments,
      names.length,
      (s) => s === "globstar",
      (s, at) => s !== "globstar" && at < names.length && matchParts(s, names[at]!) ? at + 1 : -1,
    );
  });
}

/** A set of globs; `match` names the first that matches. */
export interface GlobSet {
  readonly globs: readonly PathGlob[];
  match(path: string): PathGlob | undefined;
}

/**
 * Compiles several globs into a {@link GlobSet}. `match` answers as if it tried each glob in
 * order, but looks up the common forms — `**\/NAME` by the path's last segment and `**\/*.EXT`
 * by its extension — instead of trying all of them (a shield walk matches every file of the
 * workspace against some seventy secret globs).
 */
export function globSet(sources: readonly string[]): GlobSet {
  const globs = sources.map((source) => compileGlob(source));
  /** Index of the first `**\/NAME` glob per lower-case NAME. */
  const byName = new Map<string, number>();
  /** Indexes of the `**\/*.EXT` globs per lower-case last extension. */
  const byExtension = new Map<string, number[]>();
  /** Indexes of every other glob, in order. */
  const others: number[] = [];
  for (const [i, source] of sources.entries()) {
    const last = source.slice(3);
    const simple = source.startsWith("**/") && !last.includes("/") && last !== "**";
    if (simple && !/[*?]/.test(last)) {
      const name = last.toLowerCase();
      if (!byName.has(name)) byName.set(name, i);
    } else if (simple && last.startsWith("*.") && !/[*?]/.test(last.slice(1))) {
      const ext = last.slice(last.lastIndexOf(".") + 1).toLowerCase();
      byExtension.set(ext, [...(byExtension.get(ext) ?? []), i]);
    } else others.push(i);
  }
  return {
    globs,
    match: (path) => {
      const lowered = path.toLowerCase();
      const base = lowered.slice(lowered.lastIndexOf("/") + 1);
      let best = byName.get(base) ?? globs.length;
      for (const i of byExtension.get(base.slice(base.lastIndexOf(".") + 1)) ?? []) {
        if (i < best && globs[i]!.testLower(lowered)) best = i;
      }
      for (const i of others) {
        if (i >= best) break;
        if (globs[i]!.testLower(lowered)) best = i;
      }
      return globs[best];
    },
  };
}

/**
 * Paths whose writes and deletes ask in every mode (DESIGN §3); also the workspace's own policy
 * folder, which `--trust-workspace-policy` makes law for the next run (an agent must not write
 * its own rules).
 */
export const PROTECTED_GLOBS: readonly string[] = Object.freeze([
  "**/.git",
  "**/.git/**",
  "**/.gitmodules",
  ".libos",
  ".libos/**",
]);

/**
 * Secret-bearing files (DESIGN §2): reads ask even under a broad read grant, writes ask in every
 * mode. The globs of {@link SECRET_FILES}, where each has its reason and source.
 */
export const SECRET_GLOBS: readonly string[] = Object.freeze(SECRET_FILES.map((f) => f.glob));

/** The first glob in `globs` that matches `path`, if any. */
export function firstMatch(globs: readonly PathGlob[], path: string): PathGlob | undefined {
  return globs.find((g) => g.test(path));
}
