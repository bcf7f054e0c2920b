/**
 * The programs table's data (`shell_programs.ts` matches argv against it): the row type, the
 * leading options of programs with subcommands, the families of rows (one file each,
 * `_program_rows_*.ts`), the controls that must stay allowed, and the information-only options.
 *
 * @module
 */
import { BUILD_TOOLS } from "./_program_rows_build.ts";
import { EDITORS_AND_DEBUGGERS } from "./_program_rows_editors.ts";
import { CODE_LOADING } from "./_program_rows_loading.ts";
import { VCS_AND_ARCHIVERS } from "./_program_rows_vcs.ts";

/** What a row makes the command. */
export type CodeKind = "inline_code" | "workspace_code";

/**
 * One way a program runs code it is given. A row with neither `option` nor `operand` matches
 * every use of the program (or of its `sub`command) but `--version`/`--help`.
 */
export interface CodeRow {
  /**
   * Program names as `programName()` gives them (`sqlite3` → `sqlite`, `python3.11` → `python`);
   * the tests check each is.
   */
  readonly program: string | readonly string[];
  /**
   * The subcommand path it applies under (`["bisect", "run"]`), found after the program's own
   * leading options (`PROGRAM_OPTIONS`); `"*"` matches any subcommand.
   */
  readonly sub?: readonly string[];
  /** With `sub: ["*"]`: the subcommands that run no code. */
  readonly except?: readonly string[];
  /** Option spellings (`--exec`, `-x`, `-engine`) that run code. */
  readonly option?: readonly string[];
  /** The option (or operand) counts only if its value starts with one of these (any case). */
  readonly value?: readonly string[];
  /** The option's value (or an operand) counts only if it contains one of these (any case). */
  readonly contains?: readonly string[];
  /** An operand (or a line of one) starting with one of these (any case). */
  readonly operand?: readonly string[];
  /** The row applies only with at least this many operands after the subcommand. */
  readonly minOperands?: number;
  /** The row applies only with at most this many operands after the subcommand. */
  readonly maxOperands?: number;
  /** The row does not apply when one of these options is present. */
  readonly unless?: readonly string[];
  readonly kind: CodeKind;
  /** Why it runs code: the end of the decision's reason. */
  readonly why: string;
  /** An argv that does it: the row's test. */
  readonly example: readonly string[];
}

/** How to find a program's subcommand: the leading options that take a value. */
export interface ProgramOptions {
  readonly valued?: readonly string[];
  /** Skip `+toolchain` tokens (`cargo +nightly test`). */
  readonly plus?: boolean;
  /** Its first argument may be an option cluster without a dash (`tar xzf`). */
  readonly oldStyle?: boolean;
  /** Options are single-dash words (`-engine`, `-cmd`): no short-option clusters. */
  readonly singleDash?: boolean;
}

/** The leading options of programs with subcommands, so `go -C dir test` is seen as `test`. */
export const PROGRAM_OPTIONS: Readonly<Record<string, ProgramOptions>> = Object.freeze({
  git: {
    valued: [
      "-C",
      "-c",
      "--git-dir",
      "--work-tree",
      "--namespace",
      "--super-prefix",
      "--config-env",
      "--list-cmds",
      "--attr-source",
    ],
  },
  cargo: { valued: ["-Z", "--config", "--color", "-C"], plus: true },
  rustup: { valued: ["--toolchain"], plus: true },
  go: { valued: ["-C"] },
  npm: {
    valued: [
      "--prefix",
      "-C",
      "-w",
      "--workspace",
      "--registry",
      "--cache",
      "--userconfig",
      "--globalconfig",
      "--loglevel",
      "--location",
      "--tag",
    ],
  },
  deno: { valued: ["--config", "-c", "--log-level"] },
  pip: { valued: ["--python", "--log", "--proxy", "--cert", "--cache-dir", "--timeout"] },
  uv: { valued: ["--directory", "--project", "--config-file", "--cache-dir", "--color"] },
  poetry: { valued: ["--directory", "-C", "--project", "-P"] },
  pipenv: { valued: ["--python"] },
  pipx: {},
  bundle: { valued: ["--gemfile"] },
  gem: {},
  composer: { valued: ["--working-dir", "-d"] },
  dotnet: {},
  conda: {},
  mamba: {},
  rye: {},
  zig: {},
  docker: { valued: ["-H", "--host", "--context", "-c", "--config", "-l", "--log-level"] },
  podman: { valued: ["--connection", "--url", "--root", "--runroot"] },
  kubectl: { valued: ["-n", "--namespace", "--context", "--kubeconfig", "--cluster", "--user"] },
  ip: { valued: ["-n", "-netns", "-b", "-batch"] },
  perf: {},
  tar: { oldStyle: true },
  openssl: { singleDash: true },
  sqlite: {
    singleDash: true,
    valued: [
      "-separator",
      "--separator",
      "-newline",
      "--newline",
      "-nullvalue",
      "--nullvalue",
      "-cmd",
      "--cmd",
      "-init",
      "--init",
      "-mmap",
      "-lookaside",
      "-pagecache",
      "-heap",
      "-maxsize",
      "-vfs",
      "--vfs",
      "-escape",
    ],
  },
  gcc: { singleDash: true },
  "g++": { singleDash: true },
  cc: { singleDash: true },
  "c++": { singleDash: true },
  clang: { singleDash: true },
  "clang++": { singleDash: true },
  cpp: { singleDash: true },
  dpkg: { singleDash: true },
  rpm: { singleDash: true },
  rpmbuild: { singleDash: true },
  gdb: { singleDash: true },
  tex: { singleDash: true },
  latex: { singleDash: true },
  pdflatex: { singleDash: true },
  xelatex: { singleDash: true },
  lualatex: { singleDash: true },
  pdftex: { singleDash: true },
  luatex: { singleDash: true },
  xetex: { singleDash: true },
  etex: { singleDash: true },
  julia: {},
});

/**
 * The families of programs that run programs, each a table (`libos policy check` and the tests
 * decide every row's example).
 */
export const CODE_ROWS: Readonly<Record<string, readonly CodeRow[]>> = Object.freeze({
  "version control and archivers": VCS_AND_ARCHIVERS,
  "editors, pagers, debuggers and tracers": EDITORS_AND_DEBUGGERS,
  "tools that load code through options": CODE_LOADING,
  "build and package tools": BUILD_TOOLS,
});

/**
 * Commands beside each family's rows that must stay allowed — under a blocklist, and with one
 * allow rule for the program inside the wall: the tables are no excuse to ask about everything.
 */
export const CONTROLS: Readonly<Record<string, readonly (readonly string[])[]>> = Object.freeze({
  "version control and archivers": [
    ["git", "status"],
    ["git", "status", "--short"],
    ["git", "log", "--oneline", "-5"],
    ["git", "log", "--output-indicator-new=+", "-p"],
    ["git", "diff", "HEAD~1"],
    ["git", "show", "HEAD"],
    ["git", "grep", "-n", "TODO"],
    ["git", "config", "user.name"],
    ["git", "config", "--get", "remote.origin.url"],
    ["git", "config", "get", "user.email"],
    ["git", "config", "--list"],
    ["git", "clone", "https://example.com/r.git"],
    ["git", "fetch", "origin"],
    ["git", "archive", "--format=tar", "HEAD"],
    ["git", "rebase", "origin/main"],
    ["git", "branch", "-a"],
    ["tar", "-tf", "a.tar"],
    ["tar", "-czf", "out.tgz", "src"],
    ["tar", "xzf", "a.tgz"],
    ["tar", "-xvf", "a.tar", "-C", "out"],
    ["zip", "-r", "a.zip", "src"],
    ["unzip", "-l", "a.zip"],
    ["rsync", "-av", "--delete", "src/", "dst/"],
    ["cpio", "-t"],
    ["sort", "-u", "names.txt"],
    ["split", "-l", "100", "big.txt"],
    ["ls", "-la"],
  ],
  "editors, pagers, debuggers and tracers": [
    ["less", "+G", "log.txt"],
    ["man", "ls"],
    ["strace", "-o", "trace.txt", "true"],
    ["vim", "--version"],
    ["cat", "README.md"],
  ],
  "tools that load code through options": [
    ["rg", "-n", "--glob", "*.ts", "TODO"],
    ["ssh", "-o", "BatchMode=yes", "host", "uptime"],
    ["scp", "-r", "dir", "host:dir"],
    ["ssh-keygen", "-t", "ed25519", "-P", "", "-f", "key"],
    ["openssl", "x509", "-in", "cert.pem", "-noout", "-text"],
    ["curl", "-fsSL", "https://example.com"],
    ["sqlite3", "app.db", "select count(*) from users"],
    ["sqlite3", "-json", "app.db", "select 1"],
    ["psql", "-c", "select 1"],
    ["psql", "-Atc", "\\dt"],
    ["mysql", "-e", "show tables"],
    ["gcc", "-DBAR=1", "-O2", "-Wall", "-c", "x.c"],
    ["cc", "-fuse-ld=lld", "x.c"],
    ["rustc", "-O", "-C", "opt-level=3", "x.rs"],
    ["rpm", "-qi", "bash"],
    ["dpkg", "-l"],
    ["docker", "ps"],
  ],
  "build and package tools": [
    ["npm", "ls"],
    ["npm", "view", "zod", "version"],
    ["npm", "--version"],
    ["cargo", "tree"],
    ["cargo", "--version"],
    ["go", "version"],
    ["go", "env", "GOPATH"],
    ["go", "-C", "pkg", "list", "./..."],
    ["deno", "fmt", "--check"],
    ["deno", "--version"],
    ["pip", "list"],
    ["uv", "pip", "list"],
    ["make", "--version"],
    ["python3", "--version"],
    ["apt", "list", "--installed"],
    ["brew", "info", "git"],
    ["java", "-version"],
  ],
});

/** Arguments that only print information: a program given only these runs nothing. */
export const INFO_OPTIONS: readonly string[] = Object.freeze([
  "--version",
  "-V",
  "--help",
  "-h",
  "-version",
  "-help",
]);
