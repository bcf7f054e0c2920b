/**
 * Programs that run programs (DESIGN §2, "Fail closed"; issue 21 §1): the data the shell checker
 * (`shell_argv.ts`) decides with, kept as tables so each row is reviewed — and tested — on its
 * own.
 *
 * - `CODE_ROWS`, by family: a program, the option, subcommand or operand through which it runs
 *   code, why, and an example argv (the row's test). An option that runs a program makes the
 *   command `inline_code` (never auto-allowed without an exact allow); a subcommand that runs
 *   the workspace's code makes it `workspace_code`. Sources: the GTFOBins catalogue of programs
 *   that run commands, the programs' own manuals, and peers' issue trackers.
 *   The rows live in `_program_rows.ts` and one file per family (`_program_rows_*.ts`); this
 *   module re-exports them and holds the matcher ({@link ProgramTable}, {@link matchCodeRow}).
 * - Exec-style wrappers (`WRAPPERS`, `_argv_wrappers.ts`) and interpreters with inline code
 *   (`INLINE`, `_argv_classify.ts`) are tables of `shell_argv.ts`.
 *
 * Matching is deliberately wider than each program's own parser, never narrower: a long option
 * matches its GNU-style abbreviations and its `=value` form; a short one its attached value and
 * any cluster of short flags holding it; options are looked for in every token before `--`
 * (a message that happens to look like an option only costs a question). Linear in the argv: no
 * regular expression runs on untrusted text.
 *
 * @module
 */
import { CODE_ROWS, type CodeRow, INFO_OPTIONS, PROGRAM_OPTIONS } from "./_program_rows.ts";

export {
  CODE_ROWS,
  type CodeKind,
  type CodeRow,
  CONTROLS,
  INFO_OPTIONS,
  PROGRAM_OPTIONS,
  type ProgramOptions,
} from "./_program_rows.ts";

/**
 * The rows by program, built once (hold one per runtime or command: `decideShell()` and
 * `analyzeArgv()` take it; without one each lookup scans the tables).
 */
export class ProgramTable {
  readonly #entries = new Map<string, ProgramEntry>();

  constructor() {
    for (const family of Object.values(CODE_ROWS)) {
      for (const row of family) {
        for (const name of typeof row.program === "string" ? [row.program] : row.program) {
          if (this.#entries.has(name)) continue;
          const rows = codeRowsFor(name);
          this.#entries.set(name, { rows, wanted: wantedBy(rows) });
        }
      }
    }
  }

  /** The rows of program `name` (as `programName()` gives it) and the spellings they look for. */
  entryFor(name: string): ProgramEntry | undefined {
    return this.#entries.get(name);
  }
}

/** One program's rows (inline code first) and the option spellings they look for. */
export interface ProgramEntry {
  readonly rows: readonly CodeRow[];
  readonly wanted: Wanted;
}

/** The entry of program `name` without a {@link ProgramTable}: the tables scanned once. */
export function programEntry(name: string): ProgramEntry {
  const rows = codeRowsFor(name);
  return { rows, wanted: wantedBy(rows) };
}

/** The rows of program `name` (as `programName()` gives it), inline code first. */
function codeRowsFor(name: string): CodeRow[] {
  const rows: CodeRow[] = [];
  for (const family of Object.values(CODE_ROWS)) {
    for (const row of family) {
      if (typeof row.program === "string" ? row.program === name : row.program.includes(name)) {
        rows.push(row);
      }
    }
  }
  // Inline code first: it needs an exact allow, so it is the stricter reading of an argv.
  return rows.sort((a, b) => (a.kind === b.kind ? 0 : a.kind === "inline_code" ? -1 : 1));
}

// ------------------------------------------------------------------------------------ matching

/** A program's subcommand path (at most two levels) and where each of its tokens is. */
interface Located {
  readonly path: readonly string[];
  readonly at: readonly number[];
}

function locate(argv: readonly string[], valued: ReadonlySet<string>, plus: boolean): Located {
  let i = 1;
  while (i < argv.length) {
    const token = argv[i]!;
    if (token === "--") {
      i++;
      break;
    }
    if (plus && token.startsWith("+")) {
      i++;
      continue;
    }
    if (!token.startsWith("-") || token === "-") break;
    i += valued.has(token) ? 2 : 1;
  }
  if (i >= argv.length) return { path: [], at: [] };
  // A second level (`bisect run`, `submodule foreach`, `pip install`): the next operand.
  let j = i + 1;
  while (j < argv.length && argv[j]!.startsWith("-") && argv[j] !== "--") j++;
  return j < argv.length && argv[j] !== "--"
    ? { path: [argv[i]!, argv[j]!], at: [i, j] }
    : { path: [argv[i]!], at: [i] };
}

/** The option spellings a program's rows look for, so the index notes nothing else. */
export interface Wanted {
  /** Every prefix (of 3 characters or more) of a long spelling: its abbreviations. */
  readonly long: Set<string>;
  /** Single-dash words and short options as whole tokens (`-engine`, `-o`). */
  readonly word: Set<string>;
  /** The letters of short options (`o` of `-o`), as found in clusters. */
  readonly letters: Set<string>;
}

function wantedBy(rows: readonly CodeRow[]): Wanted {
  const wanted: Wanted = { long: new Set(), word: new Set(), letters: new Set() };
  for (const row of rows) {
    for (const spelling of [...(row.option ?? []), ...(row.unless ?? [])]) {
      if (spelling.startsWith("--")) {
        for (let length = 3; length <= spelling.length; length++) {
          wanted.long.add(spelling.slice(0, length));
        }
        wanted.word.add(spelling.slice(1));
      } else if (spelling.startsWith("-")) {
        wanted.word.add(spelling);
        if (spelling.length === 2) wanted.letters.add(spelling[1]!);
      }
    }
  }
  return wanted;
}

/** Adds `i` to the list under `key`, once. */
function note(map: Map<string, number[]>, key: string, i: number): void {
  const list = map.get(key);
  if (!list) map.set(key, [i]);
  else if (list.at(-1) !== i) list.push(i);
}

/**
 * Where each option-looking token of an argv is, built in one pass over it, so that looking up
 * every spelling of every row costs the hits, not the argv again (a hostile argv of 30,000
 * options stays linear).
 */
class OptionIndex {
  readonly #argv: readonly string[];
  readonly #singleDash: boolean;
  /** `--name` (before `=`) → indices. */
  readonly #long = new Map<string, number[]>();
  /** `-word` and `-x` as whole tokens (before `=`), and `--word` as `-word` → indices. */
  readonly #word = new Map<string, number[]>();
  /** Each letter of a cluster of short flags (`-avze`) → indices. */
  readonly #letter = new Map<string, number[]>();
  /** A single-dash token's first two characters (`-Bdir` → `-B`) → indices. */
  readonly #head = new Map<string, number[]>();
  readonly #plus: number[] = [];
  /** Old-style tar: the first argument is a cluster of options without its dash (`tar xzf`). */
  readonly #oldStyle: boolean;

  constructor(
    argv: readonly string[],
    wanted: Wanted,
    options: { readonly singleDash: boolean; readonly oldStyle: boolean },
  ) {
    const { singleDash, oldStyle } = options;
    this.#argv = argv;
    this.#singleDash = singleDash;
    this.#oldStyle = oldStyle && argv[1] !== undefined && !argv[1].startsWith("-");
    for (let i = 1; i < argv.length; i++) {
      const token = this.#token(i);
      if (token === "--") break;
      if (token.startsWith("+") && token.length > 1) {
        this.#plus.push(i);
        continue;
      }
      if (!token.startsWith("-") || token.length < 2) continue;
      const eq = token.indexOf("=");
      const name = eq > 0 ? token.slice(0, eq) : token;
      // Only what some row looks for is noted: the index stays as small as the table.
      if (token.startsWith("--")) {
        if (name.length > 2 && wanted.long.has(name)) note(this.#long, name, i);
        if (wanted.word.has(name.slice(1))) note(this.#word, name.slice(1), i);
        continue;
      }
      if (wanted.word.has(name)) note(this.#word, name, i);
      if (singleDash) {
        const head = token.slice(0, 2);
        if (wanted.word.has(head)) note(this.#head, head, i);
      } else {
        for (let k = 1; k < token.length; k++) {
          if (wanted.letters.has(token[k]!)) note(this.#letter, token[k]!, i);
        }
      }
    }
  }

  /** The token at `i`, as an option (the old-style cluster with its dash). */
  #token(i: number): string {
    return i === 1 && this.#oldStyle ? `-${this.#argv[1]}` : this.#argv[i]!;
  }

  /** The value option `spelling` has at `argv[i]` (which the index says holds it). */
  #value(i: number, spelling: string): string {
    const token = this.#token(i);
    const next = this.#argv[i + 1] ?? "";
    if (spelling === "+") return token.slice(1);
    const eq = token.indexOf("=");
    if (spelling.length > 2 || token.startsWith("--")) return eq > 0 ? token.slice(eq + 1) : next;
    if (token === spelling) return next;
    if (this.#singleDash) return token.slice(2);
    const at = token.indexOf(spelling[1]!, 1);
    return at + 1 < token.length ? token.slice(at + 1) : next;
  }

  /** Lists of the indices that may hold option `spelling` (in no particular order). */
  #hits(spelling: string): (readonly number[])[] {
    if (spelling === "+") return [this.#plus];
    const lists: (readonly number[])[] = [];
    const add = (list: readonly number[] | undefined) => {
      if (list) lists.push(list);
    };
    if (spelling.startsWith("--")) {
      // GNU-style long options accept any unambiguous prefix: a token that is a prefix counts.
      for (let length = 3; length <= spelling.length; length++) {
        add(this.#long.get(spelling.slice(0, length)));
      }
      return lists;
    }
    add(this.#word.get(spelling));
    if (spelling.length === 2) {
      add(this.#singleDash ? this.#head.get(spelling) : this.#letter.get(spelling[1]!));
    }
    return lists;
  }

  /**
   * The first token holding one of `spellings` whose value `accept`s, or undefined. Each
   * distinct value is judged once, so a thousand copies of one option cost one check.
   */
  find(spellings: readonly string[], accept?: (value: string) => boolean): string | undefined {
    for (const spelling of spellings) {
      const judged = new Set<string>();
      for (const list of this.#hits(spelling)) {
        for (const i of list) {
          if (!accept) return this.#argv[i];
          const value = this.#value(i, spelling);
          if (judged.has(value)) continue;
          judged.add(value);
          if (accept(value)) return this.#argv[i];
        }
      }
    }
    return undefined;
  }
}

function startsWithAny(
  text: string,
  prefixes: readonly string[],
  from = 0,
  to = text.length,
): boolean {
  let start = from;
  while (start < to && (text[start] === " " || text[start] === "\t")) start++;
  for (const prefix of prefixes) {
    if (to - start < prefix.length) continue;
    let k = 0;
    while (k < prefix.length) {
      let c = text.charCodeAt(start + k);
      if (c >= 65 && c <= 90) c += 32;
      if (c !== prefix.charCodeAt(k)) break;
      k++;
    }
    if (k === prefix.length) return true;
  }
  return false;
}

/**
 * Whether `text` contains one of `needles` (lowercase), in any case. Lowercased in chunks that
 * overlap by the longest needle, so a large operand never becomes one large copy.
 */
function containsAny(text: string, needles: readonly string[]): boolean {
  const CHUNK = 32 * 1024;
  const overlap = Math.max(0, ...needles.map((n) => n.length - 1));
  for (let start = 0; start < text.length; start += CHUNK) {
    const lower = text.slice(start, start + CHUNK + overlap).toLowerCase();
    if (needles.some((n) => lower.includes(n))) return true;
  }
  return false;
}

/** Whether operand `text` (or one of its lines) starts with one of `prefixes`. */
function operandStarts(text: string, prefixes: readonly string[]): boolean {
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = text.length;
    if (startsWithAny(text, prefixes, start, end)) return true;
    start = end + 1;
  }
  return false;
}

/** The operands of `argv` from index `from` (values of the program's valued options skipped). */
function operandsOf(argv: readonly string[], from: number, valued: ReadonlySet<string>): string[] {
  const operands: string[] = [];
  for (let i = from; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") {
      operands.push(...argv.slice(i + 1));
      break;
    }
    if (valued.has(token)) i++;
    else if (!token.startsWith("-") || token === "-") operands.push(token);
  }
  return operands;
}

/** What the rows of one argv are matched against: computed once, shared by every row. */
interface Subject {
  readonly argv: readonly string[];
  readonly located: Located;
  /** The program's options that take a value. */
  readonly valued: ReadonlySet<string>;
  /** Every argument only prints information (`--version`, `--help`). */
  readonly infoOnly: boolean;
  readonly index: OptionIndex;
  /** Operands from a given index (cached). */
  readonly operands: Map<number, string[]>;
}

/** What in the argv makes `row` match (for the reason), or undefined when it does not. */
function rowMatch(row: CodeRow, subject: Subject): string | undefined {
  const { argv, located } = subject;
  if (row.sub) {
    for (const [k, want] of row.sub.entries()) {
      const got = located.path[k];
      if (got === undefined) return undefined;
      if (want === "*") {
        if (row.except?.includes(got)) return undefined;
      } else if (got !== want) return undefined;
    }
  } else if (subject.infoOnly) {
    return undefined;
  }
  if (row.unless && subject.index.find(row.unless) !== undefined) return undefined;
  const from = row.sub ? located.at[row.sub.length - 1]! + 1 : 1;
  let operands = subject.operands.get(from);
  if (!operands) {
    operands = operandsOf(argv, from, subject.valued);
    subject.operands.set(from, operands);
  }
  if (row.minOperands !== undefined && operands.length < row.minOperands) return undefined;
  if (row.maxOperands !== undefined && operands.length > row.maxOperands) return undefined;
  if (row.option) {
    const accept = (value: string) =>
      (!row.value || startsWithAny(value, row.value)) &&
      (!row.contains || containsAny(value, row.contains));
    return subject.index.find(row.option, accept);
  }
  if (row.operand) return operands.find((o) => operandStarts(o, row.operand!));
  if (row.contains) return operands.find((o) => containsAny(o, row.contains!));
  return "";
}

/** A token short enough for a reason. */
function clip(token: string): string {
  return token.length > 60 ? `${token.slice(0, 57)}...` : token;
}

/**
 * The first row of `entry` that `argv` (a run of program `name`) matches, with its reason; or
 * undefined when the argv runs no code through its options or subcommands.
 */
export function matchCodeRow(
  name: string,
  argv: readonly string[],
  entry: ProgramEntry,
): { row: CodeRow; reason: string } | undefined {
  const { rows, wanted } = entry;
  if (rows.length === 0) return undefined;
  const options = Object.hasOwn(PROGRAM_OPTIONS, name) ? PROGRAM_OPTIONS[name] : undefined;
  const singleDash = options?.singleDash === true;
  const valued = new Set(options?.valued ?? []);
  let infoOnly = argv.length > 1;
  for (let i = 1; i < argv.length && infoOnly; i++) infoOnly = INFO_OPTIONS.includes(argv[i]!);
  const subject: Subject = {
    argv,
    located: locate(argv, valued, options?.plus === true),
    valued,
    infoOnly,
    index: new OptionIndex(argv, wanted, {
      singleDash,
      oldStyle: options?.oldStyle === true,
    }),
    operands: new Map(),
  };
  for (const row of rows) {
    const token = rowMatch(row, subject);
    if (token === undefined) continue;
    const sub = row.sub ? ` ${subject.located.path.slice(0, row.sub.length).join(" ")}` : "";
    const what = token === "" ? "" : ` ${JSON.stringify(clip(token))}`;
    return { row, reason: `${name}${sub}${what}: ${row.why}` };
  }
  return undefined;
}
