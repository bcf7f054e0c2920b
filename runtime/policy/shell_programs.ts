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
 * - `WRAPPERS`: exec-style wrappers — whose operand is a command, decided as its own command.
 * - `INLINE`: interpreters and the option that takes their program inline.
 *
 * Matching is deliberately wider than each program's own parser, never narrower: a long option
 * matches its GNU-style abbreviations and its `=value` form; a short one its attached value and
 * any cluster of short flags holding it; options are looked for in every token before `--`
 * (a message that happens to look like an option only costs a question). Linear in the argv: no
 * regular expression runs on untrusted text.
 *
 * @module
 */

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

/** C compilers (their options are single-dash words). */
const COMPILERS: readonly string[] = ["gcc", "g++", "cc", "c++", "clang", "clang++", "cpp"];

/** Version control, archivers and file tools that run commands through options. */
const VCS_AND_ARCHIVERS: readonly CodeRow[] = [
  {
    program: "git",
    sub: ["grep"],
    option: ["-O", "--open-files-in-pager"],
    kind: "inline_code",
    why: "opens the matching files in the pager it names",
    example: ["git", "grep", "--open-files-in-pager=sh -c 'touch PWNED'", "x"],
  },
  {
    program: "git",
    sub: ["ls-remote"],
    option: ["--upload-pack", "-u"],
    kind: "inline_code",
    why: "runs the upload-pack program it names",
    example: ["git", "ls-remote", "--upload-pack=touch PWNED;", "."],
  },
  {
    program: "git",
    sub: ["fetch"],
    option: ["--upload-pack"],
    kind: "inline_code",
    why: "runs the upload-pack program it names",
    example: ["git", "fetch", "--upload-pack", "touch PWNED;", "."],
  },
  {
    program: "git",
    sub: ["pull"],
    option: ["--upload-pack"],
    kind: "inline_code",
    why: "runs the upload-pack program it names",
    example: ["git", "pull", "--upload-pack=touch PWNED;", "."],
  },
  {
    program: "git",
    sub: ["clone"],
    option: ["--upload-pack", "-u"],
    kind: "inline_code",
    why: "runs the upload-pack program it names",
    example: ["git", "clone", "-u", "touch PWNED;", ".", "copy"],
  },
  {
    program: "git",
    sub: ["clone"],
    option: ["-c", "--config", "--template"],
    kind: "inline_code",
    why: "sets configuration (or copies a template) before it fetches, which can name programs",
    example: ["git", "clone", "-c", "core.sshCommand=touch PWNED", "ssh://h/r", "copy"],
  },
  {
    program: "git",
    sub: ["init"],
    option: ["--template"],
    kind: "inline_code",
    why: "copies hooks and configuration from the template directory it names",
    example: ["git", "init", "--template=./evil", "r"],
  },
  {
    program: "git",
    sub: ["push"],
    option: ["--receive-pack", "--exec"],
    kind: "inline_code",
    why: "runs the receive-pack program it names",
    example: ["git", "push", "--receive-pack=touch PWNED;", ".", "HEAD"],
  },
  {
    program: "git",
    sub: ["send-pack"],
    option: ["--receive-pack", "--exec"],
    kind: "inline_code",
    why: "runs the receive-pack program it names",
    example: ["git", "send-pack", "--exec=touch PWNED;", ".", "HEAD"],
  },
  {
    program: "git",
    sub: ["archive"],
    option: ["--exec", "--output", "-o"],
    kind: "inline_code",
    why: "runs the upload-archive program it names, or writes the file it names",
    example: ["git", "archive", "--remote=.", "--exec=touch PWNED;", "HEAD"],
  },
  {
    program: "git",
    option: ["--output", "--output-directory"],
    kind: "inline_code",
    why: "writes its output to the file or directory it names",
    example: ["git", "diff", "--output=/tmp/x", "HEAD"],
  },
  {
    program: "git",
    sub: ["format-patch"],
    option: ["-o"],
    kind: "inline_code",
    why: "writes patches into the directory it names",
    example: ["git", "format-patch", "-o", "../out", "HEAD~1"],
  },
  {
    program: "git",
    sub: ["rebase"],
    option: ["--exec", "-x"],
    kind: "inline_code",
    why: "runs the shell command it is given after each commit",
    example: ["git", "rebase", "--exec", "touch PWNED", "HEAD~1"],
  },
  {
    program: "git",
    sub: ["bisect", "run"],
    kind: "inline_code",
    why: "runs the command it is given on each commit",
    example: ["git", "bisect", "run", "sh", "-c", "touch PWNED"],
  },
  {
    program: "git",
    sub: ["submodule", "foreach"],
    kind: "inline_code",
    why: "runs the shell command it is given in each submodule",
    example: ["git", "submodule", "foreach", "touch PWNED"],
  },
  {
    program: "git",
    sub: ["difftool"],
    kind: "inline_code",
    why: "runs an external diff program (-x/--extcmd names any)",
    example: ["git", "difftool", "-x", "sh -c 'touch PWNED'", "HEAD"],
  },
  {
    program: "git",
    sub: ["mergetool"],
    kind: "inline_code",
    why: "runs an external merge program",
    example: ["git", "mergetool", "--tool=vimdiff"],
  },
  {
    program: "git",
    sub: ["filter-branch"],
    kind: "inline_code",
    why: "runs the shell filters it is given on every commit",
    example: ["git", "filter-branch", "--tree-filter", "touch PWNED", "HEAD"],
  },
  {
    program: "git",
    option: ["--ext-diff"],
    kind: "inline_code",
    why: "runs the external diff program named by configuration or GIT_EXTERNAL_DIFF",
    example: ["git", "log", "-p", "--ext-diff"],
  },
  {
    program: "git",
    sub: ["send-email"],
    option: ["--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd"],
    kind: "inline_code",
    why: "runs the program it names to send or address mail",
    example: ["git", "send-email", "--to-cmd=touch PWNED", "HEAD~1"],
  },
  {
    program: "git",
    sub: ["instaweb"],
    kind: "inline_code",
    why: "starts the web server program it is configured or told to (--httpd)",
    example: ["git", "instaweb", "--httpd=touch PWNED"],
  },
  {
    program: "git",
    sub: ["apply"],
    option: ["--unsafe-paths"],
    kind: "inline_code",
    why: "writes files outside the work tree",
    example: ["git", "apply", "--unsafe-paths", "--directory=/", "x.patch"],
  },
  {
    program: "git",
    operand: ["ext::"],
    kind: "inline_code",
    why: "the ext:: transport runs the command in its URL",
    example: ["git", "ls-remote", "ext::sh -c touch% PWNED"],
  },
  {
    program: "git",
    sub: ["config"],
    option: [
      "--add",
      "--replace-all",
      "--unset",
      "--unset-all",
      "--rename-section",
      "--remove-section",
      "--edit",
      "-e",
    ],
    kind: "inline_code",
    why: "changes git's configuration, which names programs git runs",
    example: ["git", "config", "--add", "core.pager", "sh -c 'touch PWNED'"],
  },
  {
    program: "git",
    sub: ["config", "*"],
    except: ["get", "list"],
    minOperands: 1,
    unless: ["--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list"],
    kind: "inline_code",
    why: "sets configuration that can name programs git runs (core.pager, alias.*)",
    example: ["git", "config", "core.pager", "sh -c 'touch PWNED'"],
  },
  {
    program: "hg",
    kind: "workspace_code",
    why: "runs the hooks and shell aliases of the repository's .hg/hgrc (and of --config)",
    example: ["hg", "--config", "alias.x=!touch PWNED", "x"],
  },
  {
    program: "svn",
    option: ["--config-option", "--config-dir", "--diff-cmd", "--diff3-cmd", "--editor-cmd"],
    kind: "inline_code",
    why: "runs the diff or editor program it names (or configuration naming one)",
    example: ["svn", "diff", "--diff-cmd", "./evil"],
  },
  {
    program: "tar",
    option: [
      "--to-command",
      "--use-compress-program",
      "-I",
      "--info-script",
      "--new-volume-script",
      "-F",
      "--rsh-command",
      "--rmt-command",
    ],
    kind: "inline_code",
    why: "runs the program it names for each member, to compress, or between volumes",
    example: ["tar", "-xf", "a.tar", "--to-command=sh -c 'touch PWNED'"],
  },
  {
    program: "tar",
    option: ["--checkpoint-action"],
    value: ["exec"],
    kind: "inline_code",
    why: "runs the command of its checkpoint action",
    example: [
      "tar",
      "-cf",
      "/dev/null",
      "x",
      "--checkpoint=1",
      "--checkpoint-action=exec=touch PWNED",
    ],
  },
  {
    program: ["tar", "cpio"],
    option: ["-f", "--file", "-F", "-O", "-I"],
    contains: [":"],
    kind: "inline_code",
    why: "a HOST:FILE archive is opened through the remote shell program",
    example: ["tar", "-xf", "host:a.tar"],
  },
  {
    program: "tar",
    option: ["-P", "--absolute-names"],
    kind: "inline_code",
    why: "writes members to absolute paths, outside the working directory",
    example: ["tar", "-xPf", "a.tar"],
  },
  {
    program: "cpio",
    option: ["--rsh-command"],
    kind: "inline_code",
    why: "runs the remote shell program it names",
    example: ["cpio", "-o", "--rsh-command", "./evil"],
  },
  {
    program: "zip",
    option: ["-TT", "--unzip-command"],
    kind: "inline_code",
    why: "runs the command it names to test the archive",
    example: ["zip", "a.zip", "x", "-T", "-TT", "sh -c 'touch PWNED' #"],
  },
  {
    program: "rsync",
    option: ["-e", "--rsh", "--rsync-path"],
    kind: "inline_code",
    why: "runs the remote shell (or remote rsync) command it names",
    example: ["rsync", "-e", "sh -c 'touch PWNED'", "x:y", "."],
  },
  {
    program: "borg",
    option: ["--rsh"],
    kind: "inline_code",
    why: "runs the remote shell command it names",
    example: ["borg", "list", "--rsh", "sh -c 'touch PWNED'", "h:repo"],
  },
  {
    program: "restic",
    option: ["--password-command"],
    kind: "inline_code",
    why: "runs the command it names to get the password",
    example: ["restic", "--password-command", "touch PWNED", "snapshots"],
  },
  {
    program: "restic",
    option: ["-o", "--option"],
    value: ["sftp.command", "rclone.program"],
    kind: "inline_code",
    why: "sets the program the backend runs",
    example: ["restic", "-o", "sftp.command=touch PWNED", "snapshots"],
  },
  {
    program: "sort",
    option: ["--compress-program"],
    kind: "inline_code",
    why: "runs the program it names to compress temporary files",
    example: ["sort", "--compress-program=./evil", "-S", "1", "big.txt"],
  },
  {
    program: "split",
    option: ["--filter"],
    kind: "inline_code",
    why: "runs each piece through the shell command it names",
    example: ["split", "--filter=sh -c 'touch PWNED'", "x"],
  },
  {
    program: "tcpdump",
    option: ["-z"],
    kind: "inline_code",
    why: "runs the command it names on each rotated file",
    example: ["tcpdump", "-w", "x", "-G", "1", "-z", "./evil"],
  },
  {
    program: "enscript",
    option: ["-I", "--filter"],
    kind: "inline_code",
    why: "runs its input through the shell command it names",
    example: ["enscript", "x", "-o", "/dev/null", "-I", "touch PWNED"],
  },
];

/** Editors, pagers, debuggers and tracers: each runs commands it is given. */
const EDITORS_AND_DEBUGGERS: readonly CodeRow[] = [
  {
    program: [
      "vi",
      "vim",
      "nvim",
      "ex",
      "view",
      "vimdiff",
      "rvim",
      "rview",
      "gvim",
      "evim",
      "vim.basic",
      "vim.tiny",
    ],
    kind: "inline_code",
    why: "an editor runs the commands it is given (-c, +cmd, -S, stdin in ex mode)",
    example: ["vim", "-c", ":!touch PWNED", "-c", ":q"],
  },
  {
    program: ["emacs", "emacsclient"],
    kind: "inline_code",
    why: "an editor runs the Lisp it is given (--eval, -l, --script, -f)",
    example: ["emacs", "--batch", "--eval", '(shell-command "touch PWNED")'],
  },
  {
    program: ["ed", "red"],
    kind: "inline_code",
    why: "reads commands (! runs a shell) from standard input",
    example: ["ed", "x.txt"],
  },
  {
    program: ["nano", "pico"],
    option: ["-s", "--speller", "--rcfile", "-f"],
    kind: "inline_code",
    why: "runs the spell-checker program it names",
    example: ["nano", "-s", "./evil", "x"],
  },
  {
    program: "less",
    option: ["+"],
    contains: ["!", "|", "v", "s", "e", ":", "#"],
    kind: "inline_code",
    why: "runs the commands it is given at start (! runs a shell, | pipes, v edits)",
    example: ["less", "+!touch PWNED", "x.txt"],
  },
  {
    program: "less",
    option: ["-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"],
    kind: "inline_code",
    why: "reads key bindings (which can run shell commands) from the file it names",
    example: ["less", "--lesskey-src=./keys", "x.txt"],
  },
  {
    program: "man",
    option: ["-P", "--pager", "-H", "--html"],
    kind: "inline_code",
    why: "runs the pager or browser program it names",
    example: ["man", "-P", "sh -c 'touch PWNED'", "ls"],
  },
  {
    program: ["gdb", "lldb", "gdb-multiarch", "cgdb", "pdb"],
    kind: "inline_code",
    why: "a debugger runs the commands it is given (-ex, -batch, stdin) and the program it debugs",
    example: ["gdb", "-nx", "-batch", "-ex", "!touch PWNED"],
  },
  {
    program: "gdbserver",
    kind: "inline_code",
    why: "runs the program it is given, controlled over the network",
    example: ["gdbserver", ":1234", "./evil"],
  },
  {
    program: "strace",
    option: ["-o", "--output"],
    value: ["|", "!"],
    kind: "inline_code",
    why: "pipes its trace into the command it names (-o '|cmd')",
    example: ["strace", "-o", "|sh -c 'touch PWNED'", "true"],
  },
  {
    program: "valgrind",
    option: ["--db-command", "--db-attach", "--vgdb-prefix"],
    kind: "inline_code",
    why: "runs the debugger command it names",
    example: ["valgrind", "--db-attach=yes", "--db-command=touch PWNED", "true"],
  },
  {
    program: "perf",
    sub: ["script"],
    kind: "workspace_code",
    why: "runs the script it is given (-s) on the recorded data",
    example: ["perf", "script", "-s", "evil.py"],
  },
  {
    program: "bpftrace",
    kind: "inline_code",
    why: "runs the tracing program it is given (system() with --unsafe) and -c commands",
    example: ["bpftrace", "--unsafe", "-e", 'BEGIN { system("touch PWNED") }'],
  },
  {
    program: "fzf",
    option: ["--bind", "--preview", "--listen"],
    kind: "inline_code",
    why: "runs the shell commands of its key bindings and preview",
    example: ["fzf", "--filter", "x", "--preview", "touch PWNED"],
  },
  {
    program: ["tmux", "screen", "tmate", "zellij", "byobu", "dtach", "abduco"],
    kind: "inline_code",
    why: "a terminal multiplexer runs the shell commands it is given, detached from this one",
    example: ["tmux", "new-session", "-d", "touch PWNED"],
  },
  {
    program: ["at", "batch"],
    kind: "inline_code",
    why: "schedules the commands it reads from standard input",
    example: ["at", "now"],
  },
  {
    program: "crontab",
    kind: "inline_code",
    why: "installs commands to run on a schedule",
    example: ["crontab", "jobs.txt"],
  },
  {
    // run0 (programName drops a version-like digit suffix).
    program: ["systemd-run", "run"],
    kind: "inline_code",
    why: "runs the command it is given through the service manager, outside this shell",
    example: ["systemd-run", "--user", "touch", "PWNED"],
  },
  {
    program: ["hyperfine", "parallel", "sem", "pee", "mispipe"],
    kind: "inline_code",
    why: "runs the shell command strings it is given",
    example: ["hyperfine", "--runs", "1", "touch PWNED"],
  },
  {
    program: "socat",
    operand: ["exec:", "system:"],
    kind: "inline_code",
    why: "an EXEC: or SYSTEM: address runs the command in it",
    example: ["socat", "-", "SYSTEM:touch PWNED"],
  },
  {
    program: ["ld.so", "ld-linux", "ld-linux-x86-64.so", "ld-linux-aarch64.so", "ld64.so"],
    kind: "inline_code",
    why: "the dynamic loader runs any program and preloads the libraries it is given",
    example: ["ld.so", "--preload", "./evil.so", "/bin/true"],
  },
  {
    program: ["capsh", "nsenter", "setcap"],
    kind: "inline_code",
    why: "changes capabilities or namespaces and runs a shell or command with them",
    example: ["capsh", "--", "-c", "touch PWNED"],
  },
  {
    program: "envdir",
    kind: "inline_code",
    why: "sets environment variables (LD_PRELOAD, PATH, …) from the files of a directory",
    example: ["envdir", "./env", "true"],
  },
  {
    program: "rlwrap",
    option: ["-z", "--filter"],
    kind: "inline_code",
    why: "runs the filter program it names",
    example: ["rlwrap", "-z", "./evil", "cat"],
  },
  {
    program: "fakeroot",
    option: ["-l", "--lib", "--faked"],
    kind: "inline_code",
    why: "preloads the library or runs the daemon program it names",
    example: ["fakeroot", "--lib", "./evil.so", "true"],
  },
  {
    program: "faketime",
    option: ["--date-prog"],
    kind: "inline_code",
    why: "runs the date program it names",
    example: ["faketime", "--date-prog", "./evil", "2020-01-01", "true"],
  },
  {
    program: "dbus-run-session",
    option: ["--dbus-daemon", "--config-file"],
    kind: "inline_code",
    why: "runs the bus daemon program (or its configuration's programs) it names",
    example: ["dbus-run-session", "--dbus-daemon=./evil", "true"],
  },
  {
    program: "xvfb-run",
    option: ["-f", "--auth-file", "-e", "--error-file"],
    kind: "inline_code",
    why: "writes the file it names",
    example: ["xvfb-run", "-e", "../outside.log", "true"],
  },
  {
    program: "ip",
    sub: ["netns", "exec"],
    kind: "inline_code",
    why: "runs the command it is given in another network namespace",
    example: ["ip", "netns", "exec", "n", "touch", "PWNED"],
  },
  {
    program: "ip",
    sub: ["vrf", "exec"],
    kind: "inline_code",
    why: "runs the command it is given in another routing domain",
    example: ["ip", "vrf", "exec", "v", "touch", "PWNED"],
  },
  {
    program: ["docker", "podman", "nerdctl"],
    sub: ["*"],
    except: ["ps", "images", "version", "info", "inspect", "logs", "help"],
    kind: "inline_code",
    why: "runs or builds containers, which run commands outside this shell's wall",
    example: ["docker", "run", "--rm", "-v", "/:/h", "alpine", "touch", "/h/PWNED"],
  },
  {
    program: "kubectl",
    sub: ["exec"],
    kind: "inline_code",
    why: "runs the command it is given in a container",
    example: ["kubectl", "exec", "pod", "--", "touch", "PWNED"],
  },
  {
    program: "kubectl",
    sub: ["debug"],
    kind: "inline_code",
    why: "starts a container running the command it is given",
    example: ["kubectl", "debug", "node/n", "-it", "--image=alpine"],
  },
];

/** Tools that load code or run programs through their options. */
const CODE_LOADING: readonly CodeRow[] = [
  {
    program: ["ssh", "scp", "sftp", "slogin"],
    option: ["-o"],
    value: [
      "proxycommand",
      "localcommand",
      "permitlocalcommand",
      "knownhostscommand",
      "match",
      "pkcs11provider",
      "securitykeyprovider",
      "include",
      "remotecommand",
    ],
    kind: "inline_code",
    why: "an -o option that runs a local command or loads a library",
    example: ["ssh", "-o", "ProxyCommand=sh -c 'touch PWNED'", "x"],
  },
  {
    program: ["ssh", "scp", "sftp", "slogin"],
    option: ["-F", "-I"],
    kind: "inline_code",
    why:
      "reads the configuration file (which can run commands) or loads the PKCS#11 library it names",
    example: ["ssh", "-F", "./evil_config", "x"],
  },
  {
    program: ["scp", "sftp"],
    option: ["-S", "-D"],
    kind: "inline_code",
    why: "runs the ssh (or sftp-server) program it names",
    example: ["scp", "-S", "./evil", "x", "h:"],
  },
  {
    program: "sftp",
    option: ["-b"],
    kind: "inline_code",
    why: "runs a batch of commands (! runs a local shell)",
    example: ["sftp", "-b", "cmds.txt", "h"],
  },
  {
    program: "sshfs",
    option: ["-o"],
    value: ["ssh_command", "sftp_server", "proxycommand"],
    kind: "inline_code",
    why: "runs the ssh command it names",
    example: ["sshfs", "-o", "ssh_command=./evil", "x:", "mnt"],
  },
  {
    program: "sshuttle",
    option: ["--ssh-cmd", "-e"],
    kind: "inline_code",
    why: "runs the ssh command it names",
    example: ["sshuttle", "--ssh-cmd", "sh -c 'touch PWNED'", "-r", "x", "0/0"],
  },
  {
    program: "ssh-keygen",
    option: ["-D", "-w"],
    kind: "inline_code",
    why: "loads the PKCS#11 or security-key provider library it names",
    example: ["ssh-keygen", "-D", "./evil.so"],
  },
  {
    program: "ssh-add",
    option: ["-s", "-S"],
    kind: "inline_code",
    why: "loads the PKCS#11 or security-key provider library it names",
    example: ["ssh-add", "-s", "./evil.so"],
  },
  {
    program: "ssh-agent",
    option: ["-P"],
    kind: "inline_code",
    why: "allows loading the PKCS#11 libraries its pattern names",
    example: ["ssh-agent", "-P", "/tmp/*", "true"],
  },
  {
    program: "openssl",
    option: [
      "-engine",
      "-keygen_engine",
      "-provider",
      "-provider-path",
      "-config",
      "-ssl_client_engine",
    ],
    kind: "inline_code",
    why: "loads the engine, provider or configuration (which loads modules) it names",
    example: ["openssl", "req", "-engine", "./evil.so"],
  },
  {
    program: ["java", "javaw", "jshell"],
    kind: "workspace_code",
    why: "runs the class, jar or source file it is given (and agents named by -javaagent)",
    example: ["java", "-jar", "evil.jar"],
  },
  {
    program: "openssl",
    sub: ["engine"],
    kind: "inline_code",
    why: "loads engines, with the control commands it is given",
    example: ["openssl", "engine", "dynamic", "-pre", "SO_PATH:./evil.so", "-pre", "LOAD"],
  },
  {
    program: "curl",
    option: ["--engine", "-K", "--config"],
    kind: "inline_code",
    why: "loads the crypto engine or the option file it names",
    example: ["curl", "--engine", "./evil.so", "https://x"],
  },
  {
    program: "wget",
    option: ["--use-askpass", "-e", "--execute", "--config"],
    kind: "inline_code",
    why: "runs the askpass program or the wgetrc commands it is given",
    example: ["wget", "--use-askpass=./evil", "http://x"],
  },
  {
    program: "aria2c",
    option: [
      "--on-download-complete",
      "--on-download-error",
      "--on-download-pause",
      "--on-download-start",
      "--on-download-stop",
      "--on-bt-download-complete",
      "--conf-path",
    ],
    kind: "inline_code",
    why: "runs the hook command it names",
    example: ["aria2c", "--on-download-error=./evil", "http://x"],
  },
  {
    program: "yt-dlp",
    option: ["--exec", "--exec-before-download", "--config-locations"],
    kind: "inline_code",
    why: "runs the command it is given after each download",
    example: ["yt-dlp", "--exec", "touch PWNED", "https://x"],
  },
  {
    program: "sqlite",
    operand: [
      ".shell",
      ".system",
      ".load",
      ".output",
      ".once",
      ".excel",
      ".read",
      ".import",
      ".save",
      ".backup",
      ".open",
      ".log",
      ".trace",
      ".cd",
    ],
    kind: "inline_code",
    why: "a dot-command that runs a program, loads an extension or writes a file",
    example: ["sqlite3", "x.db", ".shell touch PWNED"],
  },
  {
    program: "sqlite",
    contains: ["load_extension", "edit("],
    kind: "inline_code",
    why: "SQL that loads an extension or runs an editor",
    example: ["sqlite3", "x.db", "select load_extension('./evil')"],
  },
  {
    program: "sqlite",
    option: ["-cmd", "-init", "--cmd", "--init"],
    kind: "inline_code",
    why: "runs the commands (or command file) it is given before the database opens",
    example: ["sqlite3", "-cmd", ".shell touch PWNED", "x.db"],
  },
  {
    program: "sqlite",
    maxOperands: 1,
    kind: "inline_code",
    why: "with no SQL operand it reads commands (.shell runs a program) from standard input",
    example: ["sqlite3", "x.db"],
  },
  {
    program: "psql",
    option: ["-c", "--command"],
    contains: ["\\!", "\\o", "\\g", "\\w", "\\copy", "\\i", "\\e", "\\setenv", "program"],
    kind: "inline_code",
    why: "a meta-command that runs a shell, pipes to a program or reads a file",
    example: ["psql", "-c", "\\! touch PWNED"],
  },
  {
    program: "psql",
    unless: ["-c", "--command", "-l", "--list", "-V", "--version", "--help"],
    kind: "inline_code",
    why: "reads commands (\\! runs a shell) from standard input or a file (-f)",
    example: ["psql", "-h", "db"],
  },
  {
    program: ["mysql", "mariadb"],
    option: ["-e", "--execute"],
    contains: ["\\!", "system", "\\.", "source", "pager", "\\p", "tee", "\\t"],
    kind: "inline_code",
    why: "a client command that runs a shell, a pager or reads a file",
    example: ["mysql", "-e", "\\! touch PWNED"],
  },
  {
    program: ["mysql", "mariadb"],
    option: ["--pager", "--default-auth", "--plugin-dir", "--init-command"],
    kind: "inline_code",
    why: "runs the pager or loads the plugin it names",
    example: ["mysql", "--pager=sh -c 'touch PWNED'"],
  },
  {
    program: ["mysql", "mariadb"],
    unless: ["-e", "--execute", "-V", "--version", "--help"],
    kind: "inline_code",
    why: "reads commands (system runs a shell) from standard input",
    example: ["mysql", "-h", "db"],
  },
  {
    program: ["rg", "ripgrep"],
    option: ["--pre", "--hostname-bin"],
    kind: "inline_code",
    why: "runs each file through the preprocessor (or the hostname) program it names",
    example: ["rg", "--pre", "./evil", "x"],
  },
  {
    program: ["fd", "fdfind"],
    option: ["-x", "--exec", "-X", "--exec-batch"],
    kind: "inline_code",
    why: "runs the command it is given for each result",
    example: ["fd", "-e", "txt", "-x", "sh", "-c", "touch PWNED"],
  },
  {
    program: "ffmpeg",
    option: ["-af", "-vf", "-filter_complex", "-filter:a", "-filter:v", "-lavfi"],
    contains: ["ladspa", "lv2", "frei0r", "ocv"],
    kind: "inline_code",
    why: "a filter that loads the shared library it names",
    example: ["ffmpeg", "-i", "a.wav", "-af", "ladspa=file=./evil.so", "b.wav"],
  },
  {
    program: "nmap",
    option: ["--script", "--interactive", "--datadir"],
    kind: "inline_code",
    why: "runs the NSE (Lua) scripts it names, or an interactive shell",
    example: ["nmap", "--script=./evil.nse", "localhost"],
  },
  {
    program: "pidstat",
    option: ["-e"],
    kind: "inline_code",
    why: "runs the program it is given",
    example: ["pidstat", "-e", "sh", "-c", "touch PWNED"],
  },
  {
    program: "xdotool",
    sub: ["exec"],
    kind: "inline_code",
    why: "runs the command it is given",
    example: ["xdotool", "exec", "touch", "PWNED"],
  },
  {
    program: ["mail", "mailx", "s-nail"],
    option: ["--exec", "-E"],
    kind: "inline_code",
    why: "runs the mail commands it is given (! runs a shell)",
    example: ["mail", "--exec=!touch PWNED"],
  },
  {
    program: "lftp",
    option: ["-c", "-f", "-e"],
    kind: "inline_code",
    why: "runs the commands it is given (! runs a local shell)",
    example: ["lftp", "-c", "!touch PWNED"],
  },
  {
    program: "wg-quick",
    kind: "inline_code",
    why: "runs the PreUp/PostUp commands of the configuration it is given",
    example: ["wg-quick", "up", "./evil.conf"],
  },
  {
    program: COMPILERS,
    option: ["-wrapper", "-fplugin", "-B", "-specs", "--specs", "-fpass-plugin", "-load"],
    kind: "inline_code",
    why: "runs its passes through the program or loads the plugin it names",
    example: ["gcc", "-wrapper", "sh,-c,touch PWNED", "x.c"],
  },
  {
    program: COMPILERS,
    option: ["-fuse-ld", "--ld-path"],
    contains: ["/"],
    kind: "inline_code",
    why: "links with the program at the path it names",
    example: ["cc", "-fuse-ld=./evil", "x.c"],
  },
  {
    program: "rustc",
    option: ["-C", "-Z"],
    value: ["linker", "link-arg", "llvm-args", "plugin", "codegen-backend"],
    kind: "inline_code",
    why: "runs the linker program (or loads the compiler plugin) it names",
    example: ["rustc", "-C", "linker=./evil", "x.rs"],
  },
  {
    program: "rustc",
    option: ["--extern"],
    kind: "inline_code",
    why: "loads the crates it names, procedural macros (code run at compile time) included",
    example: ["rustc", "--extern", "m=./libevil.so", "x.rs"],
  },
  {
    program: ["tex", "latex", "pdflatex", "xelatex", "lualatex", "pdftex", "luatex", "xetex"],
    option: ["-shell-escape", "--shell-escape", "-enable-write18", "--enable-write18"],
    kind: "inline_code",
    why: "lets the document run shell commands (\\write18)",
    example: ["pdflatex", "--shell-escape", "x.tex"],
  },
  {
    program: "latexmk",
    kind: "workspace_code",
    why: "reads latexmkrc (Perl code) from the workspace and runs the commands it names",
    example: ["latexmk", "-pdflatex=sh -c 'touch PWNED' #", "x.tex"],
  },
  {
    program: "dvips",
    option: ["-R0"],
    kind: "inline_code",
    why: "lets the document run shell commands",
    example: ["dvips", "-R0", "x.dvi"],
  },
  {
    // m4 (programName drops a version-like digit suffix).
    program: "m",
    kind: "inline_code",
    why: "macros run shell commands (syscmd, esyscmd)",
    example: ["m4", "x.m4"],
  },
  {
    program: "dc",
    kind: "inline_code",
    why: "its ! command runs a shell",
    example: ["dc", "-e", "!touch PWNED"],
  },
  {
    program: ["gnuplot", "octave", "octave-cli"],
    kind: "inline_code",
    why: "runs the script it is given, which can run shell commands (system)",
    example: ["gnuplot", "-e", "system('touch PWNED')"],
  },
  {
    program: "csvtool",
    sub: ["call"],
    kind: "inline_code",
    why: "runs the command it is given on each row",
    example: ["csvtool", "call", "touch PWNED;", "x.csv"],
  },
  {
    program: "msgfilter",
    kind: "inline_code",
    why: "runs each message through the filter program it is given",
    example: ["msgfilter", "-i", "x.po", "sh", "-c", "touch PWNED"],
  },
  {
    program: "scrot",
    option: ["-e", "--exec"],
    kind: "inline_code",
    why: "runs the command it is given on the screenshot",
    example: ["scrot", "-e", "touch PWNED"],
  },
  {
    program: ["certbot", "openvpn", "dnsmasq"],
    option: [
      "--pre-hook",
      "--post-hook",
      "--deploy-hook",
      "--manual-auth-hook",
      "--manual-cleanup-hook",
      "--up",
      "--down",
      "--route-up",
      "--ipchange",
      "--client-connect",
      "--learn-address",
      "--tls-verify",
      "--auth-user-pass-verify",
      "--conf-script",
      "--dhcp-script",
    ],
    kind: "inline_code",
    why: "runs the hook script it names",
    example: ["certbot", "renew", "--pre-hook", "touch PWNED"],
  },
  {
    program: ["ansible", "ansible-playbook", "ansible-pull", "puppet", "salt-call"],
    kind: "inline_code",
    why: "runs the tasks (shell modules included) of the inventory and playbook it is given",
    example: ["ansible", "localhost", "-m", "shell", "-a", "touch PWNED"],
  },
  {
    program: "run-parts",
    kind: "workspace_code",
    why: "runs every program in the directory it is given",
    example: ["run-parts", "./hooks"],
  },
  {
    program: "gtester",
    kind: "workspace_code",
    why: "runs the test programs it is given",
    example: ["gtester", "./evil"],
  },
  {
    program: "start-stop-daemon",
    kind: "inline_code",
    why: "starts the program it names as a daemon",
    example: ["start-stop-daemon", "-S", "-x", "./evil"],
  },
  {
    program: "busctl",
    option: ["--address"],
    value: ["unixexec:"],
    kind: "inline_code",
    why: "a unixexec: address runs the program in it",
    example: ["busctl", "--address=unixexec:path=./evil", "status"],
  },
  {
    program: ["apt", "apt-get", "apt-cache", "apt-config"],
    option: ["-o", "--option", "-c", "--config-file"],
    kind: "inline_code",
    why: "sets configuration that runs commands (APT::Update::Pre-Invoke, Dpkg::Pre-Invoke)",
    example: ["apt-get", "update", "-o", "APT::Update::Pre-Invoke::=touch PWNED"],
  },
  {
    program: ["dpkg", "rpm", "rpmdb", "rpmquery", "rpmverify", "rpmbuild"],
    option: [
      "-i",
      "--install",
      "-U",
      "--upgrade",
      "-F",
      "--freshen",
      "-e",
      "--erase",
      "-r",
      "--remove",
      "-P",
      "--purge",
      "--configure",
      "--eval",
      "-E",
      "--pipe",
      "-b",
      "--build",
      "--unpack",
    ],
    kind: "inline_code",
    why: "runs package scripts or the macro expansion (%(…) runs a shell) it is given",
    example: ["rpm", "--eval", "%(touch PWNED)"],
  },
  {
    program: "pip",
    sub: ["config"],
    option: ["--editor"],
    kind: "inline_code",
    why: "runs the editor program it names",
    example: ["pip", "config", "--editor", "./evil", "edit"],
  },
  {
    program: "gem",
    sub: ["open"],
    kind: "inline_code",
    why: "runs the editor program it is given (-e)",
    example: ["gem", "open", "-e", "sh -c 'touch PWNED'", "rake"],
  },
  {
    program: [
      "apt",
      "apt-get",
      "aptitude",
      "dnf",
      "yum",
      "zypper",
      "apk",
      "pacman",
      "snap",
      "flatpak",
      "brew",
      "port",
      "nix-env",
      "emerge",
    ],
    sub: ["*"],
    except: [
      "list",
      "search",
      "info",
      "show",
      "policy",
      "madison",
      "depends",
      "rdepends",
      "--version",
    ],
    kind: "inline_code",
    why: "installs or changes packages, whose scripts run",
    example: ["brew", "install", "./evil.rb"],
  },
];

/** Build and package tools whose subcommands run the workspace's code. */
const BUILD_TOOLS: readonly CodeRow[] = [
  {
    program: [
      "make",
      "gmake",
      "bmake",
      "cmake",
      "ninja",
      "meson",
      "bazel",
      "bazelisk",
      "buck",
      "pants",
      "scons",
      "waf",
      "xmake",
      "sbt",
      "lein",
      "dune",
      "rebar",
      "nimble",
      "mvn",
      "mvnw",
      "gradle",
      "gradlew",
      "ant",
      "rake",
      "just",
      "task",
      "mix",
      "stack",
      "cabal",
      "hatch",
      "tox",
      "nox",
      "autoreconf",
      "autoconf",
      "autoheader",
      "automake",
      "swift",
      "ansible-test",
    ],
    kind: "workspace_code",
    why: "runs the build files of the workspace",
    example: ["make", "test"],
  },
  {
    program: [
      "npx",
      "yarn",
      "pnpm",
      "pnpx",
      "bunx",
      "uvx",
      "tsx",
      "ts-node",
      "jest",
      "vitest",
      "mocha",
      "ava",
      "eslint",
      "prettier",
      "webpack",
      "vite",
      "rollup",
      "turbo",
      "nx",
      "lerna",
      "playwright",
      "cypress",
      "pytest",
      "py.test",
      "phpunit",
      "rspec",
      "pre-commit",
      "lefthook",
    ],
    kind: "workspace_code",
    why: "runs code (scripts, tests, configuration, plugins) from the workspace",
    example: ["yarn", "--cwd", ".", "build"],
  },
  {
    program: "npm",
    sub: ["*"],
    except: [
      "ls",
      "list",
      "ll",
      "la",
      "view",
      "info",
      "show",
      "v",
      "search",
      "s",
      "find",
      "outdated",
      "whoami",
      "ping",
      "root",
      "prefix",
      "doctor",
      "fund",
      "query",
      "explain",
      "why",
      "help",
      "completion",
      "owner",
      "profile",
      "token",
      "team",
      "access",
      "dist-tag",
      "deprecate",
      "logout",
      "login",
      "adduser",
      "sbom",
      "cache",
      "config",
      "get",
      "audit",
    ],
    kind: "workspace_code",
    why: "runs package scripts (lifecycle scripts included) from the workspace",
    example: ["npm", "--prefix", ".", "test"],
  },
  {
    program: "npm",
    sub: ["audit", "fix"],
    kind: "workspace_code",
    why: "installs packages, running their lifecycle scripts",
    example: ["npm", "audit", "fix"],
  },
  {
    program: "cargo",
    sub: ["*"],
    except: [
      "tree",
      "search",
      "version",
      "help",
      "clean",
      "new",
      "init",
      "locate-project",
      "pkgid",
      "update",
      "fetch",
      "vendor",
      "generate-lockfile",
      "verify-project",
      "login",
      "logout",
      "owner",
      "yank",
      "read-manifest",
      "uninstall",
      "add",
      "remove",
      "info",
      "report",
      "config",
      "metadata",
    ],
    kind: "workspace_code",
    why: "builds or runs the workspace's code (build scripts, tests, aliases, runners)",
    example: ["cargo", "+nightly", "test"],
  },
  {
    program: "cargo",
    option: ["--config"],
    kind: "inline_code",
    why: "sets configuration that names programs (runners, rustc wrappers)",
    example: ["cargo", "--config", "target.x.runner='./evil'", "tree"],
  },
  {
    program: "go",
    sub: ["*"],
    except: ["version", "env", "help", "doc", "fmt", "mod", "work", "clean", "list", "telemetry"],
    kind: "workspace_code",
    why: "builds or runs the workspace's code (tests, generators, tools)",
    example: ["go", "-C", "pkg", "test", "./..."],
  },
  {
    program: "go",
    sub: ["env"],
    option: ["-w"],
    kind: "inline_code",
    why: "sets flags every later build uses (GOFLAGS=-toolexec=…)",
    example: ["go", "env", "-w", "GOFLAGS=-toolexec=./evil"],
  },
  {
    program: "go",
    option: ["-exec", "-toolexec", "-vettool"],
    kind: "inline_code",
    why: "runs the program it names for each binary or compiler step",
    example: ["go", "vet", "-vettool=./evil"],
  },
  {
    program: "deno",
    sub: ["*"],
    except: [
      "eval",
      "fmt",
      "check",
      "info",
      "doc",
      "types",
      "lsp",
      "completions",
      "help",
      "outdated",
      "clean",
      "coverage",
    ],
    kind: "workspace_code",
    why: "runs code from the workspace (tasks, tests, scripts, lint plugins)",
    example: ["deno", "--log-level=info", "main.ts"],
  },
  {
    program: "pip",
    sub: ["*"],
    except: [
      "list",
      "freeze",
      "show",
      "check",
      "search",
      "config",
      "cache",
      "debug",
      "hash",
      "inspect",
      "index",
      "help",
      "uninstall",
    ],
    kind: "workspace_code",
    why: "builds packages (running setup.py and build backends)",
    example: ["pip", "wheel", "."],
  },
  {
    program: "uv",
    sub: ["*"],
    except: ["version", "help", "venv", "cache", "python", "self", "pip"],
    kind: "workspace_code",
    why: "runs or builds the project's code",
    example: ["uv", "--directory", ".", "run", "x.py"],
  },
  {
    program: "uv",
    sub: ["pip", "*"],
    except: ["list", "show", "freeze", "check", "tree"],
    kind: "workspace_code",
    why: "builds packages (running their build backends)",
    example: ["uv", "pip", "install", "."],
  },
  {
    program: "pipx",
    sub: ["*"],
    except: ["list", "environment", "completions", "ensurepath", "uninstall", "uninstall-all"],
    kind: "workspace_code",
    why: "installs or runs a package's code",
    example: ["pipx", "run", "cowsay"],
  },
  {
    program: ["poetry", "pdm", "rye", "pipenv"],
    sub: ["*"],
    except: ["show", "check", "config", "env", "version", "search", "about", "list", "help"],
    kind: "workspace_code",
    why: "runs or builds the project's code",
    example: ["poetry", "-C", ".", "run", "pytest"],
  },
  {
    program: ["bundle", "bundler"],
    sub: ["*"],
    except: ["list", "show", "info", "check", "version", "help", "config", "platform"],
    kind: "workspace_code",
    why: "runs the Gemfile (Ruby code) and what it installs",
    example: ["bundle", "exec", "rake"],
  },
  {
    program: "gem",
    sub: ["*"],
    except: [
      "list",
      "search",
      "info",
      "contents",
      "which",
      "env",
      "environment",
      "help",
      "query",
      "specification",
      "dependency",
      "outdated",
      "sources",
      "uninstall",
    ],
    kind: "workspace_code",
    why: "builds or installs gems (running their extension builds)",
    example: ["gem", "build", "evil.gemspec"],
  },
  {
    program: "composer",
    sub: ["*"],
    except: [
      "show",
      "info",
      "search",
      "validate",
      "licenses",
      "outdated",
      "depends",
      "why",
      "why-not",
      "prohibits",
      "diagnose",
      "about",
      "help",
      "list",
      "status",
      "check-platform-reqs",
      "suggests",
      "fund",
      "audit",
    ],
    kind: "workspace_code",
    why: "runs the scripts of composer.json",
    example: ["composer", "run-script", "x"],
  },
  {
    program: "dotnet",
    sub: ["*"],
    except: ["sln", "list", "help", "nuget", "new", "workload", "sdk"],
    kind: "workspace_code",
    why: "builds or runs the project's code (MSBuild targets, F# scripts)",
    example: ["dotnet", "fsi", "evil.fsx"],
  },
  {
    program: ["conda", "mamba", "micromamba"],
    sub: ["*"],
    except: ["list", "info", "search", "config", "help", "env"],
    kind: "workspace_code",
    why: "runs commands or package scripts",
    example: ["conda", "run", "-n", "base", "touch", "PWNED"],
  },
  {
    program: "zig",
    sub: ["*"],
    except: ["fmt", "version", "help", "env", "targets", "zen", "init"],
    kind: "workspace_code",
    why: "runs the workspace's build.zig or program",
    example: ["zig", "build", "test"],
  },
  {
    program: "rustup",
    sub: ["run"],
    kind: "inline_code",
    why: "runs the command it is given with a toolchain",
    example: ["rustup", "run", "stable", "sh", "-c", "touch PWNED"],
  },
];

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
