/**
 * Read-only commands (issue 23, "fewer needless asks"): `readOnlyCommand(argv)` says whether an
 * argv is an invocation that can neither change anything nor run code — `ls`, `cat README.md`,
 * `git status` — and gives it a short label, or null. Under `allowlist_auto_else_ask`, inside
 * the OS wall, such a command runs without asking, confined (`shell_policy.ts`: the workspace
 * read-only, secret-bearing files masked).
 *
 * The table is argv-aware: a program is read-only only without the options that make it write a
 * file or run a program, each listed with why (`sort -o`, `rg --pre`, `find -exec`,
 * `git diff --output`, `tree -o`, `file -C`, `date -s`, …). The sources: the programs' manuals,
 * the GTFOBins catalogue of options that write files or run commands, and peers' read-only
 * lists — Codex CLI's `is_safe_command` (find's `-exec`/`-delete`/`-fprint*`, rg's `--pre`,
 * `--hostname-bin`, `-z`; `sed -n Np` alone of sed), and the bugs filed against classifiers that
 * looked only at the first words (`git branch -D`, `git remote set-url`, `git diff --output`,
 * `git branch --edit-description` runs an editor, `uniq IN OUT` writes OUT).
 *
 * Matching is deliberately wider than each program's own parser, never narrower:
 * - a program is named bare (`ls`) or by a system directory (`/usr/bin/ls`), never by another
 *   path (`./ls` is whatever that file is);
 * - a long option is refused in its `=value` form and in every abbreviation GNU getopt and git
 *   accept (`--out=x` is `--output=x`): any prefix of a refused name;
 * - a cluster of short options (`-ro`) is refused when any letter in it is refused, unless the
 *   program's own option string (copied exactly) says an earlier letter takes the rest as its
 *   value (`sort -to`: `-t o`);
 * - options are looked for in every token before `--` (GNU programs take options after
 *   operands); after it, everything is an operand;
 * - where operands matter (`uniq` writes its second; `git branch NAME` creates one) they are
 *   counted, skipping only the values of options known to take one.
 * Linear in the argv; no regular expression runs on untrusted text.
 *
 * @module
 */
import { SYSTEM_BIN } from "./_argv_classify.ts";

/** One option that makes a command not read-only. */
export interface Refusal {
  /** `--name` (refused with any value and in any abbreviation) or `-x` (one short letter). */
  readonly option: string;
  readonly why: string;
}

/** What makes one program's invocation read-only. */
interface ProgramSpec {
  readonly refuse?: readonly Refusal[];
  /**
   * The short options that take a value (from the program's getopt string): in a cluster, the
   * rest of the token after one of them is its value; alone, the next token is. Given only where
   * it is known exactly — a letter wrongly listed would hide a refused letter after it.
   */
  readonly valuedShort?: string;
  /** Long options (full names, `--` included) whose value may be the next token. */
  readonly valuedLong?: readonly string[];
  /** At most this many operands. */
  readonly maxOperands?: number;
  /** Every operand must start with this (date: only `+FORMAT`; an operand sets the clock). */
  readonly operandPrefix?: string;
}

const FIND_REFUSED: readonly Refusal[] = [
  { option: "-exec", why: "runs the command it is given for each file" },
  { option: "-execdir", why: "runs the command it is given for each file" },
  { option: "-ok", why: "runs the command it is given for each file (after a prompt)" },
  { option: "-okdir", why: "runs the command it is given for each file (after a prompt)" },
  { option: "-delete", why: "deletes what it finds" },
  { option: "-fprint", why: "writes its results to the file it names" },
  { option: "-fprint0", why: "writes its results to the file it names" },
  { option: "-fprintf", why: "writes its results to the file it names" },
  { option: "-fls", why: "writes its results to the file it names" },
];

const GIT_DIFF_REFUSED: readonly Refusal[] = [
  { option: "--output", why: "writes the output to the file it names" },
  { option: "--ext-diff", why: "runs the external diff program the configuration names" },
  { option: "--textconv", why: "runs the text conversion program the configuration names" },
];

/** Programs whose every invocation is read-only (no option writes a file or runs a program). */
const PLAIN: readonly string[] = [
  // A shell builtin in `sh -c "cd sub && ls"` (it changes only the shell's directory).
  "cd",
  "ls",
  "dir",
  "cat",
  "tac",
  "nl",
  "head",
  "tail",
  "wc",
  "stat",
  "du",
  "df",
  "pwd",
  "echo",
  "printf",
  "basename",
  "dirname",
  "realpath",
  "readlink",
  "grep",
  "egrep",
  "fgrep",
  "cut",
  "tr",
  "comm",
  "diff",
  "cmp",
  "md5sum",
  "sha1sum",
  "sha256sum",
  "sha512sum",
  "od",
  "hexdump",
  "strings",
  "column",
  "fold",
  "paste",
  "expand",
  "which",
  "whoami",
  "id",
  "uname",
  "true",
  "false",
  "jq",
];

/** Programs read-only except for the options listed. */
const SPECS: Readonly<Record<string, ProgramSpec>> = {
  file: {
    refuse: [
      { option: "-C", why: "compiles a magic file and writes it" },
      { option: "--compile", why: "compiles a magic file and writes it" },
      { option: "-z", why: "runs external decompression programs on what it reads" },
      { option: "-Z", why: "runs external decompression programs on what it reads" },
      { option: "--uncompress", why: "runs external decompression programs on what it reads" },
      {
        option: "--uncompress-noreport",
        why: "runs external decompression programs on what it reads",
      },
    ],
  },
  tree: {
    refuse: [
      { option: "-o", why: "writes its output to the file it names" },
      { option: "--output", why: "writes its output to the file it names" },
      { option: "-R", why: "with -H, writes an 00Tree.html into every directory" },
    ],
  },
  rg: {
    refuse: [
      { option: "--pre", why: "runs each file through the preprocessor program it names" },
      { option: "--pre-glob", why: "chooses the files --pre runs its program on" },
      { option: "--search-zip", why: "runs decompression programs on compressed files" },
      { option: "-z", why: "runs decompression programs on compressed files (--search-zip)" },
      { option: "--hostname-bin", why: "runs the program it names to get the host name" },
    ],
  },
  sort: {
    refuse: [
      { option: "-o", why: "writes the result to the file it names" },
      { option: "--output", why: "writes the result to the file it names" },
      { option: "--compress-program", why: "runs the program it names on temporary files" },
      { option: "-T", why: "writes temporary files into the directory it names" },
      {
        option: "--temporary-directory",
        why: "writes temporary files into the directory it names",
      },
    ],
    // GNU sort's short options: "-bcCdfghik:mMno:rRsS:t:T:uVy:z".
    valuedShort: "koStTy",
  },
  uniq: {
    maxOperands: 1,
    // GNU uniq's short options: "-0123456789Dcdf:is:uw:z".
    valuedShort: "fsw",
    valuedLong: ["--skip-fields", "--skip-chars", "--check-chars"],
  },
  date: {
    refuse: [
      { option: "-s", why: "sets the system clock" },
      { option: "--set", why: "sets the system clock" },
    ],
    // GNU date's short options: "d:f:I::r:Rs:u" (-I takes its value attached).
    valuedShort: "dfIrs",
    operandPrefix: "+",
  },
};

/** git subcommands that only read, with the options that would not. */
const GIT_SUBCOMMANDS: Readonly<Record<string, ProgramSpec>> = {
  status: {},
  "rev-parse": {},
  "ls-files": {},
  describe: {},
  log: { refuse: GIT_DIFF_REFUSED },
  diff: { refuse: GIT_DIFF_REFUSED },
  show: { refuse: GIT_DIFF_REFUSED },
  shortlog: { refuse: GIT_DIFF_REFUSED },
  blame: {
    refuse: [{
      option: "--textconv",
      why: "runs the text conversion program the configuration names",
    }],
  },
  grep: {
    refuse: [
      { option: "-O", why: "opens the matching files in the pager it names" },
      { option: "--open-files-in-pager", why: "opens the matching files in the pager it names" },
      { option: "--textconv", why: "runs the text conversion program the configuration names" },
    ],
  },
};

/** Flags of `git branch` / `git tag` that only list (anything else may create, delete or edit). */
const GIT_LIST_FLAGS: Readonly<Record<"branch" | "tag", readonly string[]>> = {
  branch: [
    "-a",
    "--all",
    "-r",
    "--remotes",
    "-v",
    "-vv",
    "--verbose",
    "-l",
    "--list",
    "--show-current",
    "-i",
    "--ignore-case",
    "--no-color",
    "--no-column",
    "--no-abbrev",
    "--omit-empty",
  ],
  tag: ["-l", "--list", "-n", "-i", "--ignore-case", "--no-color", "--no-column", "--omit-empty"],
};

/** Listing filters of `git branch` / `git tag` whose value is the next token (or `=value`). */
const GIT_LIST_VALUED: readonly string[] = [
  "--contains",
  "--no-contains",
  "--merged",
  "--no-merged",
  "--points-at",
  "--sort",
  "--format",
];

/** Listing options of `git branch` / `git tag` whose value comes only attached (`=value`). */
const GIT_LIST_ATTACHED: readonly string[] = ["--color", "--column", "--abbrev"];

/** Whether `text` is at least `min` ASCII digits and nothing else. */
function digits(text: string, min: number): boolean {
  if (text.length < min) return false;
  for (let k = 0; k < text.length; k++) {
    const c = text.charCodeAt(k);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** The program's name when argv[0] names it bare or in a system directory; else null. */
function nameOf(program: string): string | null {
  if (!program.includes("/")) return program;
  for (const dir of SYSTEM_BIN) {
    if (!program.startsWith(dir)) continue;
    const rest = program.slice(dir.length);
    return rest !== "" && !rest.includes("/") ? rest : null;
  }
  return null;
}

/** The first refused option in one token (not an operand), or undefined. */
function refusedIn(token: string, spec: ProgramSpec): Refusal | undefined {
  const refuse = spec.refuse ?? [];
  if (token.startsWith("--")) {
    const eq = token.indexOf("=");
    const name = eq < 0 ? token : token.slice(0, eq);
    if (name.length <= 2) return undefined;
    // The option itself, or any abbreviation of it.
    return refuse.find((r) => r.option.startsWith("--") && r.option.startsWith(name));
  }
  for (let k = 1; k < token.length; k++) {
    const letter = token[k]!;
    const found = refuse.find((r) => r.option.length === 2 && r.option[1] === letter);
    if (found) return found;
    // The rest of the token is this option's value.
    if (spec.valuedShort?.includes(letter)) return undefined;
  }
  return undefined;
}

/** How many tokens an option token takes (1, or 2 when its value is the next token). */
function width(token: string, spec: ProgramSpec): number {
  if (token.startsWith("--")) {
    if (token.includes("=")) return 1;
    return spec.valuedLong?.includes(token) ? 2 : 1;
  }
  for (let k = 1; k < token.length; k++) {
    if (spec.valuedShort?.includes(token[k]!)) return k === token.length - 1 ? 2 : 1;
  }
  return 1;
}

/** Why `args` (the tokens after the program or subcommand) are not read-only, or null. */
function refusal(args: readonly string[], spec: ProgramSpec): string | null {
  let operands = 0;
  for (let i = 0; i < args.length; i++) {
    const token = args[i]!;
    if (token === "--") {
      for (const operand of args.slice(i + 1)) {
        if (spec.operandPrefix !== undefined && !operand.startsWith(spec.operandPrefix)) {
          return `the operand ${JSON.stringify(operand)} is not read-only`;
        }
      }
      operands += args.length - i - 1;
      break;
    }
    if (token.startsWith("-") && token !== "-") {
      const found = refusedIn(token, spec);
      if (found) return `${found.option} ${found.why}`;
      i += width(token, spec) - 1;
      continue;
    }
    if (spec.operandPrefix !== undefined && !token.startsWith(spec.operandPrefix)) {
      return `the operand ${JSON.stringify(token)} is not read-only`;
    }
    operands++;
  }
  if (spec.maxOperands !== undefined && operands > spec.maxOperands) {
    return `more than ${spec.maxOperands} operand(s): the next one is written`;
  }
  return null;
}

/** Whether the arguments of `git branch` / `git tag` only list. */
function gitLists(sub: "branch" | "tag", args: readonly string[]): boolean {
  const flags = GIT_LIST_FLAGS[sub];
  let list = false;
  let operands = 0;
  for (let i = 0; i < args.length; i++) {
    const token = args[i]!;
    if (token === "--") {
      operands += args.length - i - 1;
      break;
    }
    if (!token.startsWith("-") || token === "-") {
      operands++;
      continue;
    }
    const eq = token.indexOf("=");
    const name = eq < 0 ? token : token.slice(0, eq);
    if (GIT_LIST_VALUED.includes(name)) {
      if (eq < 0) i++;
      continue;
    }
    if (GIT_LIST_ATTACHED.includes(name)) continue;
    if (eq >= 0) return false;
    if (sub === "tag" && token.startsWith("-n") && digits(token.slice(2), 0)) continue;
    if (flags.includes(token)) {
      if (token === "-l" || token === "--list") list = true;
      continue;
    }
    // A cluster of listing letters (`-av`, `-rl`).
    if (!token.startsWith("--") && token.length > 2) {
      const letters = sub === "branch" ? "arvli" : "li";
      if ([...token.slice(1)].every((c) => letters.includes(c))) {
        if (token.includes("l")) list = true;
        continue;
      }
    }
    return false;
  }
  // With --list, operands are patterns; without it, a name to create.
  return operands === 0 || list;
}

/** What an argv is: read-only (with its label), or why not. */
type Verdict = { readonly label: string } | { readonly refused: string };

/** A read-only git invocation, or why not. */
function gitCommand(argv: readonly string[]): Verdict {
  let i = 1;
  // Global options before the subcommand: only these two.
  while (i < argv.length && argv[i]!.startsWith("-")) {
    if (argv[i] === "--no-pager") i++;
    else if (argv[i] === "-C" && i + 1 < argv.length) i += 2;
    else return { refused: `the git option ${argv[i]} (only -C DIR and --no-pager)` };
  }
  const sub = argv[i];
  if (sub === undefined) return { refused: "no git subcommand" };
  const args = argv.slice(i + 1);
  const label = `git ${sub}`;
  if (sub === "branch" || sub === "tag") {
    return gitLists(sub, args) ? { label } : { refused: `${label} that does not only list` };
  }
  if (sub === "remote") {
    return args.length === 0 || (args.length === 1 && ["-v", "--verbose"].includes(args[0]!))
      ? { label }
      : { refused: "git remote with a subcommand" };
  }
  if (!Object.hasOwn(GIT_SUBCOMMANDS, sub)) return { refused: `${label} is not read-only` };
  const why = refusal(args, GIT_SUBCOMMANDS[sub]!);
  return why === null ? { label } : { refused: why };
}

/** `sed -n 'N[,M]p' FILE…`: printing lines is the one read-only sed (`w` writes, `e` runs). */
function sedPrints(argv: readonly string[]): boolean {
  if (argv.length < 4 || argv[1] !== "-n") return false;
  const range = argv[2]!.split(",");
  if (range.length > 2 || !range.at(-1)!.endsWith("p")) return false;
  range[range.length - 1] = range.at(-1)!.slice(0, -1);
  if (!range.every((n) => digits(n, 1) && n.length <= 9)) return false;
  // A file name that starts with "-" would be an option (`-i` edits in place).
  return argv.slice(3).every((file) => file !== "" && !file.startsWith("-"));
}

/** What `argv` is: read-only with a label, or why not. */
function classify(argv: readonly string[]): Verdict {
  const program = argv[0];
  if (program === undefined) return { refused: "nothing to run" };
  const name = nameOf(program);
  if (name === null) return { refused: "a program named by a path outside the system directories" };
  const args = argv.slice(1);
  if (name === "git") return gitCommand(argv);
  if (name === "find") {
    const found = FIND_REFUSED.find((r) => args.includes(r.option));
    return found ? { refused: `${found.option} ${found.why}` } : { label: "find" };
  }
  if (name === "sed") {
    return sedPrints(argv) ? { label: "sed -n" } : { refused: "sed other than -n 'N[,M]p' FILE…" };
  }
  if (PLAIN.includes(name)) return { label: name };
  if (Object.hasOwn(SPECS, name)) {
    const why = refusal(args, SPECS[name]!);
    return why === null ? { label: name } : { refused: why };
  }
  return { refused: `${name} is not in the table of read-only programs` };
}

/**
 * The label of a read-only invocation (`"ls"`, `"git status"`), or null when `argv` may change
 * something or run code — or is not a program this table knows.
 */
export function readOnlyCommand(argv: readonly string[]): string | null {
  const verdict = classify(argv);
  return "label" in verdict ? verdict.label : null;
}

/** Why `argv` is not read-only (the refused option, or what is not in the table), or null. */
export function readOnlyRefusal(argv: readonly string[]): string | null {
  const verdict = classify(argv);
  return "refused" in verdict ? verdict.refused : null;
}

/**
 * Labels of git commands that can print what files held in the repository's history: a secret
 * file the shield masks in the working tree is still there (`git show HEAD:.env`, or `git diff`
 * of a masked tracked file).
 */
export const SHOWS_HISTORY: readonly string[] = Object.freeze([
  "git log",
  "git diff",
  "git show",
  "git blame",
  "git grep",
]);
