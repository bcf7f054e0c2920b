import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LibosError } from "../base/errors.ts";
import {
  prescanScript,
  SCRIPT_LIMITS,
  type ScriptAnalysis,
  type ScriptLimits,
  ShellParser,
} from "./shell_script.ts";

/** An expected command: its argv, or its argv and assignments. */
type Expected = readonly string[] | {
  readonly argv: readonly string[];
  readonly assignments: readonly string[];
};

interface Case {
  readonly name: string;
  readonly script: string;
  readonly commands: readonly Expected[];
  /** One pattern per reason, in order; a string matches as a substring. */
  readonly opaque?: readonly (string | RegExp)[];
  readonly limits?: Partial<ScriptLimits>;
}

const CASES: readonly Case[] = [
  // Simple commands, quoting and escapes.
  { name: "a simple command", script: "echo ok", commands: [["echo", "ok"]] },
  { name: "the empty script", script: "", commands: [] },
  { name: "only blanks and a comment", script: "  \n\t# nothing here\n", commands: [] },
  {
    name: "single quotes keep everything",
    script: `printf '%s\\n' 'a b' '$HOME' '\\'`,
    commands: [["printf", "%s\\n", "a b", "$HOME", "\\"]],
  },
  {
    name: 'double quotes resolve only \\$ \\` \\" \\\\ and backslash-newline',
    script: 'echo "a\\"b" "c\\\\d" "e\\f" "\\$HOME" "g\\\nh" "\\`x\\`"',
    commands: [["echo", 'a"b', "c\\d", "e\\f", "$HOME", "gh", "`x`"]],
  },
  {
    name: "unquoted backslashes escape the next character",
    script: "echo a\\ b \\$x \\\\ c\\d",
    commands: [["echo", "a b", "$x", "\\", "cd"]],
  },
  {
    name: "concatenated quoting forms one word",
    script: `'r'"m" -r\\f 'x y'"z"`,
    commands: [["rm", "-rf", "x yz"]],
  },
  {
    name: "an escaped command name is the plain name",
    script: "\\rm -rf /",
    commands: [["rm", "-rf", "/"]],
  },
  {
    name: "ANSI-C quoting is opaque, not decoded",
    script: "echo $'\\x41'",
    commands: [],
    opaque: [/^ANSI-C quoting: \$'…' in "echo" at 1:6/],
  },
  {
    name: 'locale quoting $"…" is opaque',
    script: 'echo $"hello"',
    commands: [],
    opaque: [/^locale quoting: /],
  },
  {
    name: "a quoted keyword is a command name",
    script: '"if" x',
    commands: [["if", "x"]],
  },
  {
    name: "empty quotes are an empty argument",
    script: "test '' = \"\"",
    commands: [["test", "", "=", ""]],
  },
  {
    name: "comments and line continuations",
    script: "# leading\necho a # trailing\nls \\\n  -la\n",
    commands: [["echo", "a"], ["ls", "-la"]],
  },
  {
    name: "multi-byte text passes through",
    script: "echo héllo '日本' \"😀\"",
    commands: [["echo", "héllo", "日本", "😀"]],
  },

  // Lists and pipelines.
  {
    name: "&& || ; | & and newlines",
    script: "a && b || c; d | e & f\ng |& h",
    commands: [["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"], ["h"]],
  },
  { name: "negation and time", script: "! false; time -p ls", commands: [["false"], ["ls"]] },

  // Compound commands.
  { name: "a subshell", script: "(cd src && make)", commands: [["cd", "src"], ["make"]] },
  { name: "a block", script: "{ a; b; }", commands: [["a"], ["b"]] },
  {
    name: "if / elif / else",
    script: "if a; then b; elif c; then d; else e; fi",
    commands: [["a"], ["b"], ["c"], ["d"], ["e"]],
  },
  {
    name: "while and until",
    script: "while a; do b; done; until c; do d; done",
    commands: [["a"], ["b"], ["c"], ["d"]],
  },
  {
    name: "for over literal words",
    script: "for f in a.txt b.txt; do wc -l a.txt; done",
    commands: [["wc", "-l", "a.txt"]],
  },
  {
    name: "the loop variable is a parameter expansion",
    script: "for f in a b; do rm $f; done",
    commands: [],
    opaque: [/^parameter expansion: \$f in "rm" at 1:21/],
  },
  {
    name: "a glob in a for list",
    script: "for f in *.log; do :; done",
    commands: [[":"]],
    opaque: [/^glob: \* in for loop/],
  },
  {
    name: "case: patterns are not globbed, bodies are walked",
    script: "case x in *.ts|a?) tsc;; [ab]) b;; esac",
    commands: [["tsc"], ["b"]],
  },
  {
    name: "extended globs in case patterns match strings",
    script: "case x in @(a|b)) y;; esac",
    commands: [["y"]],
  },
  {
    name: "select",
    script: "select x in a b; do :; done",
    commands: [[":"]],
  },
  {
    name: "[[ ]] with file tests and patterns is fine",
    script: "[[ -f a && ( b == b* || ! -d c ) ]] && [[ x =~ ^a.*$ ]] && echo y",
    commands: [["echo", "y"]],
  },
  {
    name: "a function definition is opaque; its body is walked",
    script: "ls() { rm -rf /; }; ls",
    commands: [["rm", "-rf", "/"], ["ls"]],
    opaque: [/^function definition: "ls" at 1:1/],
  },
  {
    name: "the function keyword",
    script: "function g { :; }",
    commands: [[":"]],
    opaque: [/^function definition: "g"/],
  },
  {
    name: "coproc",
    script: "coproc cat",
    commands: [["cat"]],
    opaque: [/^coproc: /],
  },

  // Substitutions.
  {
    name: "command substitution nested three deep",
    script: "echo $(a $(b $(c -x)))",
    commands: [["c", "-x"]],
    opaque: [
      /^command substitution: \$\(…\) in "echo" at 1:6/,
      /^command substitution: \$\(…\) in "a" at 1:10/,
      /^command substitution: \$\(…\) in "b" at 1:14/,
    ],
  },
  {
    name: "literal commands around and inside a substitution",
    script: 'cd "$(git rev-parse --show-toplevel)" && make',
    commands: [["git", "rev-parse", "--show-toplevel"], ["make"]],
    opaque: [/^command substitution: \$\(…\) in "cd"/],
  },
  {
    name: "backticks",
    script: "echo `date -u`",
    commands: [["date", "-u"]],
    opaque: [/^command substitution: `…` in "echo"/],
  },
  {
    name: "a substituted command name",
    script: '"$(which rm)" -rf /',
    commands: [["which", "rm"]],
    opaque: [/^command substitution: .* in the command name/, /^command name: not literal at 1:1/],
  },
  {
    name: "a parameter as the command name",
    script: "$CMD args",
    commands: [],
    opaque: [/^parameter expansion: \$CMD in the command name/, /^command name: not literal/],
  },
  {
    name: "process substitution: inner commands listed",
    script: "diff <(sort a) >(tee b)",
    commands: [["sort", "a"], ["tee", "b"]],
    opaque: [/^process substitution: .* at 1:6/, /^process substitution: .* at 1:16/],
  },
  {
    name: "parameter expansions of every shape",
    script: 'echo $1 $? "${x}" ${y:-$(rm -rf /)} ${a:1:2}',
    commands: [["rm", "-rf", "/"]],
    opaque: [
      /^parameter expansion: \$1 /,
      /^parameter expansion: \$\? /,
      /^parameter expansion: \$x /,
      /^parameter expansion: \$y /,
      /^command substitution: /,
      /^parameter expansion: \$a /,
    ],
  },

  // Arithmetic.
  {
    name: "arithmetic expansion is opaque even with numbers only",
    script: "echo $((1 + 2))",
    commands: [],
    opaque: [/^arithmetic expansion: /],
  },
  {
    name: "arithmetic with a substitution",
    script: "echo $(( $(wc -l < f) + 1 ))",
    commands: [["wc", "-l"]],
    opaque: [
      /^arithmetic expansion: /,
      /^command substitution: \$\(…\) in arithmetic/,
      /^redirection: < reads "f"/,
    ],
  },
  {
    name: "numeric-only arithmetic commands are fine",
    script: "((1 + 2)); let 3",
    commands: [],
  },
  {
    name: "arithmetic that reads a variable is opaque",
    script: "((i++)); let x=1",
    commands: [],
    opaque: [/^arithmetic: reads variable "i" at 1:3/, /^arithmetic: reads variable "x"/],
  },
  {
    name: "[[ -eq ]] on a name evaluates it",
    script: "[[ a -eq 1 ]]; [[ 1 -eq 2 ]]",
    commands: [],
    opaque: [/^arithmetic: \[\[ \]\] compares "a"/],
  },
  {
    name: "a quoted subscript in [[ -v ]] runs code",
    script: `[[ -v 'a[$(id)]' ]]`,
    commands: [],
    opaque: [/^subscript: \[\[ \]\] tests "a\[\$\(id\)\]"/],
  },
  {
    name: "C-style for",
    script: "for ((i = 0; i < 3; i++)); do :; done",
    commands: [[":"]],
    opaque: [
      /reads variable "i" at 1:7/,
      /reads variable "i" at 1:14/,
      /reads variable "i" at 1:21/,
    ],
  },

  // Assignments.
  {
    name: "assignments prefixing a command",
    script: "A=1 B='x y' CFLAGS=-O2 make -j4",
    commands: [{ argv: ["make", "-j4"], assignments: ["A=1", "B=x y", "CFLAGS=-O2"] }],
  },
  {
    name: "a bare assignment is a command with an empty argv",
    script: "x=1 y+=2; ls",
    commands: [{ argv: [], assignments: ["x=1", "y+=2"] }, ["ls"]],
  },
  {
    name: "globs in assignment values are not expanded",
    script: "A=*.txt cmd",
    commands: [{ argv: ["cmd"], assignments: ["A=*.txt"] }],
  },
  {
    name: "an assignment from a substitution",
    script: "A=$(id -u) env",
    commands: [["id", "-u"]],
    opaque: [/^command substitution: \$\(…\) in an assignment/],
  },
  {
    name: "declaration builtins are commands",
    script: 'export A=1 B; declare -x C="d e"; readonly R',
    commands: [["export", "A=1", "B"], ["declare", "-x", "C=d e"], ["readonly", "R"]],
  },
  {
    name: "declaration builtins with expansions",
    script: "local x=$y; export P=$(pwd)",
    commands: [["pwd"]],
    opaque: [/^parameter expansion: \$y in an assignment/, /^command substitution: /],
  },
  {
    name: "array assignments",
    script: "a=(1 2); b[1]=x; declare -A m=([k]=v)",
    commands: [],
    opaque: [
      /^assignment: array "a"/,
      /^assignment: element of array "b"/,
      /^assignment: array "m"/,
      /^arithmetic: reads variable "k"/,
    ],
  },

  {
    name: "an assignment to PATH changes which program a name runs",
    script: "PATH=/tmp/x ls",
    commands: [{ argv: ["ls"], assignments: ["PATH=/tmp/x"] }],
    opaque: [/^environment: PATH= at 1:1 changes which code later commands run/],
  },
  {
    name: "PS4 with set -x runs code",
    script: "PS4='$(id)'; set -x; ls",
    commands: [{ argv: [], assignments: ["PS4=$(id)"] }, ["set", "-x"], ["ls"]],
    opaque: [/^environment: PS4= /],
  },
  {
    name: "code variables set through builtins",
    script:
      "read PATH <<< /tmp; command export LD_PRELOAD=/x.so; printf -v BASH_ENV x; export PATH",
    commands: [
      ["read", "PATH"],
      ["command", "export", "LD_PRELOAD=/x.so"],
      ["printf", "-v", "BASH_ENV", "x"],
      ["export", "PATH"],
    ],
    opaque: [/^read: sets PATH/, /^export: sets LD_PRELOAD/, /^printf: sets BASH_ENV/],
  },
  {
    name: "program-specific variables are left to the policy",
    script: "GIT_SSH_COMMAND='rm -rf /' git fetch",
    commands: [{ argv: ["git", "fetch"], assignments: ["GIT_SSH_COMMAND=rm -rf /"] }],
  },

  // Redirections.
  {
    name: "fd duplication, closing and /dev/null are fine",
    script: "a 2>&1; b >&2; c 3>&-; d <&0; e >/dev/null 2>/dev/stderr; f </dev/null",
    commands: [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]],
  },
  {
    name: "each output redirection to a file",
    script: "a > f; b >> f; c >| f; d &> f; e &>> f; g <> f",
    commands: [["a"], ["b"], ["c"], ["d"], ["e"], ["g"]],
    opaque: [
      /^redirection: > writes "f"/,
      /^redirection: >> writes "f"/,
      /^redirection: >\| writes "f"/,
      /^redirection: &> writes "f"/,
      /^redirection: &>> writes "f"/,
      /^redirection: <> writes "f"/,
    ],
  },
  {
    name: ">&file writes a file",
    script: "echo x >&out.txt",
    commands: [["echo", "x"]],
    opaque: [/^redirection: >& "out.txt" .* opens a file/],
  },
  {
    name: "input from a file is read by the shell",
    script: "cat < .env",
    commands: [["cat"]],
    opaque: [/^redirection: < reads "\.env"/],
  },
  {
    name: "a redirection on a compound command",
    script: "{ a; } > log",
    commands: [["a"]],
    opaque: [/^redirection: > writes "log"/],
  },
  {
    name: "a redirection alone truncates a file",
    script: "> f",
    commands: [],
    opaque: [/^redirection: > writes "f"/],
  },
  {
    name: "a redirection target from a parameter",
    script: 'echo x > "$f"',
    commands: [["echo", "x"]],
    opaque: [/^parameter expansion: \$f in a redirection/],
  },
  {
    name: "a named descriptor",
    script: "exec {fd}>/dev/null",
    commands: [["exec"]],
    opaque: [/^redirection: named descriptor "\{fd\}"/],
  },
  {
    name: "a quoted-delimiter heredoc is literal",
    script: "cat <<'EOF'\n$HOME $(id) `id`\nEOF\n",
    commands: [["cat"]],
  },
  {
    name: "an unquoted heredoc with expansions",
    script: "cat <<EOF\n$HOME $(id -u)\nEOF\n",
    commands: [["cat"], ["id", "-u"]],
    opaque: [
      /^parameter expansion: \$HOME in a heredoc/,
      /^command substitution: \$\(…\) in a heredoc/,
    ],
  },
  {
    name: "an unquoted heredoc without expansions, tabs stripped",
    script: "cat <<-EOF\n\tplain text\n\tEOF\n",
    commands: [["cat"]],
  },
  {
    name: "here-strings",
    script: 'grep x <<< "a b"; grep y <<< "$v"',
    commands: [["grep", "x"], ["grep", "y"]],
    opaque: [/^parameter expansion: \$v in a redirection/],
  },

  // Builtins that run code.
  {
    name: "eval",
    script: 'eval "rm -rf /"',
    commands: [["eval", "rm -rf /"]],
    opaque: [/^eval: runs its arguments as shell code/],
  },
  {
    name: "source and .",
    script: "source ./env.sh; . ./x",
    commands: [["source", "./env.sh"], [".", "./x"]],
    opaque: [/^source: /, /^\.: /],
  },
  {
    name: "exec with a command",
    script: "exec rm -rf /",
    commands: [["exec", "rm", "-rf", "/"]],
    opaque: [/^exec: replaces the shell/],
  },
  {
    name: "exec with only redirections is fine",
    script: "exec 2>&1",
    commands: [["exec"]],
  },
  {
    name: "alias and trap",
    script: "alias ls='rm -rf'; trap 'rm -rf /' EXIT",
    commands: [["alias", "ls=rm -rf"], ["trap", "rm -rf /", "EXIT"]],
    opaque: [/^alias: /, /^trap: /],
  },
  {
    name: "builtins reached through builtin and command",
    script: "builtin eval x; command -p source y; command -v eval",
    commands: [["builtin", "eval", "x"], ["command", "-p", "source", "y"], [
      "command",
      "-v",
      "eval",
    ]],
    opaque: [/^eval: /, /^source: /],
  },
  {
    name: "enable, hash -p, fc, compgen, mapfile -C",
    script: "enable -f x.so y; hash -p /tmp/x ls; fc -s; compgen -C c w; mapfile -C cb arr",
    commands: [
      ["enable", "-f", "x.so", "y"],
      ["hash", "-p", "/tmp/x", "ls"],
      ["fc", "-s"],
      ["compgen", "-C", "c", "w"],
      ["mapfile", "-C", "cb", "arr"],
    ],
    opaque: [/^enable: /, /^hash: /, /^fc: /, /^compgen: /, /^mapfile: -C runs a callback/],
  },
  {
    name: "a subscript in a variable name runs code",
    script: `read 'a[$(id)]'; unset "b[1]"; printf -v 'c[0]' x; test -v 'd[1]'`,
    commands: [
      ["read", "a[$(id)]"],
      ["unset", "b[1]"],
      ["printf", "-v", "c[0]", "x"],
      ["test", "-v", "d[1]"],
    ],
    opaque: [
      /^read: a subscript/,
      /^unset: a subscript/,
      /^printf: a subscript/,
      /^test: a subscript/,
    ],
  },
  {
    name: "printf with brackets in its format is fine",
    script: "printf '[%s]\\n' x",
    commands: [["printf", "[%s]\\n", "x"]],
  },
  {
    name: "xargs stays a plain command",
    script: "find . -name '*.tmp' -print0 | xargs -0 rm -f",
    commands: [["find", ".", "-name", "*.tmp", "-print0"], ["xargs", "-0", "rm", "-f"]],
  },

  // Expansions the shell applies to literal-looking words.
  {
    name: "globs in arguments",
    script: "ls *.txt; rm -rf ./*; echo a?b; cat [ab].md",
    commands: [],
    opaque: [
      /^glob: \* in "ls"/,
      /^glob: \* in "rm"/,
      /^glob: \? in "echo"/,
      /^glob: \[…\] in "cat"/,
    ],
  },
  {
    name: "escaped and quoted globs are literal",
    script: "echo \\* '*' \"?\" a\\[b]",
    commands: [["echo", "*", "*", "?", "a[b]"]],
  },
  {
    name: "a glob in the command name",
    script: "/bin/r? -rf /",
    commands: [],
    opaque: [/^glob: \? in the command name/, /^command name: not literal/],
  },
  {
    name: "extended globs",
    script: "ls @(a|b)",
    commands: [],
    opaque: [/^glob: extended glob in "ls"/],
  },
  {
    name: "brace expansion",
    script: "echo {a,b}; touch x{1..3}; {r,}m -rf /",
    commands: [],
    opaque: [
      /^brace expansion: .* in "echo"/,
      /^brace expansion: .* in "touch"/,
      /^brace expansion: .* in the command name/,
      /^command name: not literal/,
    ],
  },
  {
    name: "braces that do not expand",
    script: "find . -exec cat {} \\; ; git show stash@{0}; echo {a}",
    commands: [["find", ".", "-exec", "cat", "{}", ";"], ["git", "show", "stash@{0}"], [
      "echo",
      "{a}",
    ]],
  },
  {
    name: "test brackets are not globs",
    script: "[ -f x ] && echo y",
    commands: [["[", "-f", "x", "]"], ["echo", "y"]],
  },
  {
    name: "tilde expansion",
    script: "cd ~; cat ~/x; make PREFIX=~/y; A=~ b; C=x:~/z d",
    commands: [],
    opaque: [
      /^tilde expansion: ~ in "cd"/,
      /^tilde expansion: ~ in "cat"/,
      /^tilde expansion: ~ in "make"/,
      /^tilde expansion: ~ in an assignment/,
      /^tilde expansion: ~ in an assignment/,
    ],
  },
  {
    name: "a tilde inside a word is literal",
    script: "git log HEAD~1 '~' \\~",
    commands: [["git", "log", "HEAD~1", "~", "~"]],
  },

  {
    name: "at most 32 reasons are listed",
    script: `echo${" $a".repeat(40)}`,
    commands: [],
    opaque: [
      ...Array.from(
        { length: 32 },
        (_, i) => `parameter expansion: $a in "echo" at 1:${6 + 3 * i}`,
      ),
      /^opaque: 8 more reasons or repeats not listed$/,
    ],
  },

  // Scripts that cannot be parsed.
  {
    name: "an unclosed quote",
    script: "echo 'abc",
    commands: [],
    opaque: [/^unparseable: 1:6: reached EOF without closing quote '/],
  },
  {
    name: "if without fi",
    script: "if true; then x",
    commands: [],
    opaque: [/^unparseable: 1:1: if statement must end with "fi"/],
  },
  {
    name: "a stray separator",
    script: "; ls",
    commands: [],
    opaque: [/^unparseable: /],
  },
  {
    name: "nesting the parser itself cannot handle, when the caller lifts the caps",
    script: `${"(".repeat(5000)}a${")".repeat(5000)}`,
    limits: { maxDepth: 1_000_000, maxBytes: 1 << 20 },
    commands: [],
    opaque: [/^unparseable: nested too deeply for the parser/],
  },

  // Pre-scan refusals reach analyze() as reasons, with nothing parsed.
  {
    name: "64 KiB of ( is over the byte cap",
    script: "(".repeat(65536),
    commands: [],
    opaque: [/^prescan: the script is over 8192 bytes/],
  },
  {
    name: "64 KiB of $( is too deep",
    script: "$(".repeat(32768),
    limits: { maxBytes: 1 << 20 },
    commands: [],
    opaque: [/^prescan: nesting deeper than 32 levels/],
  },
  {
    name: "64 KiB of ; is too many commands",
    script: ";".repeat(65536),
    limits: { maxBytes: 1 << 20 },
    commands: [],
    opaque: [/^prescan: more than 128 commands/],
  },
];

function normalise(
  expected: Expected,
): { argv: readonly string[]; assignments: readonly string[] } {
  return "argv" in expected ? expected : { argv: expected, assignments: [] };
}

function assertAnalysis(result: ScriptAnalysis, expected: Case): void {
  assert.deepEqual(
    result.commands.map((command) => ({ argv: command.argv, assignments: command.assignments })),
    expected.commands.map(normalise),
    `commands of ${JSON.stringify(expected.script.slice(0, 80))}`,
  );
  const patterns = expected.opaque ?? [];
  assert.equal(
    result.opaque.length,
    patterns.length,
    `reasons of ${JSON.stringify(expected.script.slice(0, 80))}: ${JSON.stringify(result.opaque)}`,
  );
  patterns.forEach((pattern, index) => {
    const reason = result.opaque[index]!;
    if (typeof pattern === "string") assert.ok(reason.includes(pattern), `${reason} ∌ ${pattern}`);
    else assert.match(reason, pattern);
  });
}

Deno.test("ShellParser.analyze() lists literal commands and every reason a script is opaque", async (t) => {
  const shell = new ShellParser();
  await shell.load();
  for (const row of CASES) {
    await t.step(row.name, () => assertAnalysis(shell.analyze(row.script, row.limits), row));
  }
});

Deno.test("ShellParser.analyze() returns frozen results", async () => {
  const shell = new ShellParser();
  await shell.load();
  const result = shell.analyze("A=1 ls -la; echo $x");
  assert.ok(Object.isFrozen(result) && Object.isFrozen(result.commands));
  assert.ok(Object.isFrozen(result.opaque) && Object.isFrozen(result.commands[0]!.argv));
  assert.ok(Object.isFrozen(result.commands[0]!.assignments));
});

Deno.test("ShellParser.analyze() before load() throws a TypeError", () => {
  const shell = new ShellParser();
  assert.equal(shell.loaded, false);
  assert.throws(() => shell.analyze("echo ok"), {
    name: "TypeError",
    message: /call and await load\(\) first/,
  });
});

Deno.test("ShellParser.load() twice shares one load; a second instance loads its own", async () => {
  const shell = new ShellParser();
  const first = shell.load();
  const second = shell.load();
  assert.equal(first, second);
  await first;
  assert.equal(shell.loaded, true);
  assert.equal(shell.load(), first);
  const other = new ShellParser();
  assert.equal(other.loaded, false);
  await other.load();
  assert.deepEqual(other.analyze("echo ok").commands[0]?.argv, ["echo", "ok"]);
});

Deno.test("ShellParser.load() puts globalThis.process back exactly as it was", async () => {
  const before = Object.getOwnPropertyDescriptor(globalThis, "process");
  await new ShellParser().load();
  assert.deepEqual(Object.getOwnPropertyDescriptor(globalThis, "process"), before);
});

Deno.test("ShellParser.analyze() rejects a non-string script and invalid limits as bad arguments", async () => {
  const shell = new ShellParser();
  await shell.load();
  assert.throws(() => shell.analyze(42 as unknown as string), TypeError);
  assert.throws(() => shell.analyze("ls", { maxDepth: -1 }), RangeError);
  assert.throws(() => prescanScript("ls", { maxBytes: 1.5 }), RangeError);
});

Deno.test("ShellParser loads mvdan-sh in a process with no env permission at all", async () => {
  const dir = await Deno.makeTempDir({ prefix: "libos-shell-" });
  try {
    const probe = join(dir, "probe.ts");
    const module = new URL("./shell_script.ts", import.meta.url).href;
    await Deno.writeTextFile(
      probe,
      [
        `import { ShellParser } from ${JSON.stringify(module)};`,
        `const env = (await Deno.permissions.query({ name: "env" })).state;`,
        "const shell = new ShellParser();",
        "await shell.load();",
        `console.log(JSON.stringify({ env, analysis: shell.analyze("echo ok") }));`,
      ].join("\n"),
    );
    const config = fileURLToPath(new URL("../../deno.json", import.meta.url));
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "--no-prompt", `--config=${config}`, probe],
      env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    assert.deepEqual(JSON.parse(new TextDecoder().decode(output.stdout)), {
      env: "prompt",
      analysis: {
        commands: [{ argv: ["echo", "ok"], assignments: [] }],
        partial: [],
        opaque: [],
      },
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ShellParser.load() imports once for concurrent and repeated calls", async () => {
  let imports = 0;
  const shell = new ShellParser({
    importModule: () => {
      imports++;
      return import("mvdan-sh");
    },
  });
  await Promise.all([shell.load(), shell.load(), shell.load()]);
  await shell.load();
  assert.equal(imports, 1);
});

Deno.test("ShellParser.load() failure is a LibosError, leaves it unloaded, and may be retried", async () => {
  let attempts = 0;
  const shell = new ShellParser({
    importModule: () => {
      attempts++;
      return attempts === 1 ? Promise.reject(new Error("not in the cache")) : Promise.resolve({});
    },
  });
  await assert.rejects(shell.load(), (error: unknown) => {
    assert.ok(error instanceof LibosError);
    assert.equal(error.code, "shell_parser_unavailable");
    assert.equal(error.fault, "operator");
    assert.match(error.message, /Cannot load the shell parser npm:mvdan-sh: not in the cache/);
    return true;
  });
  assert.equal(shell.loaded, false);
  await assert.rejects(shell.load(), {
    code: "shell_parser_unavailable",
    message: /no `syntax` namespace/,
  });
  assert.equal(attempts, 2);
  assert.equal(shell.loaded, false);
  assert.throws(() => shell.analyze("ls"), TypeError);
});

// ---------------------------------------------------------------------------------------------
// prescanScript
// ---------------------------------------------------------------------------------------------

interface PrescanCase {
  readonly name: string;
  readonly script: string;
  readonly limits?: Partial<ScriptLimits>;
  /** null when the script passes, else a pattern for the reason. */
  readonly refused: RegExp | null;
}

const { maxBytes, maxDepth, maxCommands, maxHeredocs } = SCRIPT_LIMITS;
const LIFTED = { maxBytes: 1 << 20 };

const PRESCAN_CASES: readonly PrescanCase[] = [
  { name: "bytes: exactly at the cap", script: "a".repeat(maxBytes), refused: null },
  { name: "bytes: one over the cap", script: "a".repeat(maxBytes + 1), refused: /over 8192 bytes/ },
  { name: "bytes: 2-byte é at the cap", script: "é".repeat(maxBytes / 2), refused: null },
  {
    name: "bytes: 2-byte é one over",
    script: `${"é".repeat(maxBytes / 2)}a`,
    refused: /over 8192 bytes/,
  },
  { name: "bytes: 3-byte 日 at the cap", script: `${"日".repeat(2730)}ab`, refused: null },
  {
    name: "bytes: 3-byte 日 one over",
    script: `${"日".repeat(2730)}abc`,
    refused: /over 8192 bytes/,
  },
  { name: "bytes: 4-byte 😀 at the cap", script: "😀".repeat(maxBytes / 4), refused: null },
  {
    name: "bytes: 4-byte 😀 one over",
    script: `${"😀".repeat(maxBytes / 4)}a`,
    refused: /over 8192 bytes/,
  },
  {
    name: "bytes: a lower cap",
    script: "echo hello",
    limits: { maxBytes: 9 },
    refused: /over 9 bytes/,
  },
  { name: "a NUL character", script: "echo a\0b", refused: /NUL/ },
  { name: "a lone surrogate", script: "echo \ud800", refused: /lone UTF-16 surrogate/ },
  {
    name: "depth: ( exactly at the cap",
    script: `${"(".repeat(maxDepth)}a${")".repeat(maxDepth)}`,
    refused: null,
  },
  {
    name: "depth: ( one over",
    script: `${"(".repeat(maxDepth + 1)}a${")".repeat(maxDepth + 1)}`,
    refused: /nesting deeper than 32 levels/,
  },
  {
    name: "depth: $( exactly at the cap",
    script: `echo ${"$(".repeat(maxDepth)}a${")".repeat(maxDepth)}`,
    refused: null,
  },
  {
    name: "depth: $( one over",
    script: `echo ${"$(".repeat(maxDepth + 1)}a${")".repeat(maxDepth + 1)}`,
    refused: /nesting deeper/,
  },
  {
    name: "depth: { blocks at the cap",
    script: `${"{ ".repeat(maxDepth)}a; ${"}; ".repeat(maxDepth)}`,
    refused: null,
  },
  {
    name: "depth: { blocks one over",
    script: `${"{ ".repeat(maxDepth + 1)}a; ${"}; ".repeat(maxDepth + 1)}`,
    refused: /nesting deeper/,
  },
  {
    name: "depth: quotes and substitutions alternate",
    script: `echo ${'"$('.repeat(17)}`,
    refused: /nesting deeper/,
  },
  {
    name: "depth: if inside if inside …",
    script: "if ".repeat(maxDepth + 1),
    refused: /nesting deeper/,
  },
  {
    name: "depth: case patterns do not close substitutions",
    script: `${"$(case x in a) ".repeat(20)}b${" esac)".repeat(20)}`,
    refused: /nesting deeper/,
  },
  {
    name: "depth: a heredoc body's $( counts",
    script: `cat <<E\n${"$(".repeat(maxDepth)}\nE\n`,
    refused: /nesting deeper/,
  },
  {
    name: "depth: a quoted heredoc body is text",
    script: `cat <<'E'\n${"$(".repeat(maxDepth * 4)}\nE\n`,
    refused: null,
  },
  {
    name: "depth: parentheses in quotes and comments do not nest",
    script: `echo '${"(".repeat(100)}' # ${"(".repeat(100)}\necho "${"(".repeat(100)}"`,
    refused: null,
  },
  {
    name: "commands: exactly at the cap",
    script: Array(maxCommands).fill("a").join(";"),
    refused: null,
  },
  {
    name: "commands: one over",
    script: Array(maxCommands + 1).fill("a").join(";"),
    refused: /more than 128 commands/,
  },
  {
    name: "commands: newlines at the cap",
    script: Array(maxCommands).fill("a").join("\n"),
    refused: null,
  },
  {
    name: "commands: && and | one over",
    script: Array(maxCommands + 1).fill("a").join(" && ").replace(/&& a$/, "| a"),
    refused: /more than 128 commands/,
  },
  {
    name: "commands: blank lines and comments are not commands",
    script: `a\n${"\n# c\n".repeat(500)}b`,
    refused: null,
  },
  {
    name: "commands: fd duplication is not a separator",
    script: Array(maxCommands).fill("a 2>&1 >|f &>g").join(";"),
    refused: null,
  },
  {
    name: "commands: substitutions count",
    script: `echo ${"$(a) ".repeat(maxCommands)}`,
    refused: /more than 128 commands/,
  },
  {
    name: "heredocs: exactly at the cap",
    script: "cat <<E\nx\nE\n".repeat(maxHeredocs),
    refused: null,
  },
  {
    name: "heredocs: one over",
    script: "cat <<E\nx\nE\n".repeat(maxHeredocs + 1),
    refused: /more than 8 heredocs/,
  },
  {
    name: "heredocs: a lower cap",
    script: "cat <<E\nx\nE\n",
    limits: { maxHeredocs: 0 },
    refused: /more than 0 heredocs/,
  },
  { name: "here-strings are not heredocs", script: "cat <<<x;".repeat(20), refused: null },
  { name: "64 KiB of (", script: "(".repeat(65536), refused: /over 8192 bytes/ },
  {
    name: "64 KiB of ( with the byte cap lifted",
    script: "(".repeat(65536),
    limits: LIFTED,
    refused: /nesting deeper/,
  },
  {
    name: "64 KiB of $( with the byte cap lifted",
    script: "$(".repeat(32768),
    limits: LIFTED,
    refused: /nesting deeper/,
  },
  {
    name: "64 KiB of ; with the byte cap lifted",
    script: ";".repeat(65536),
    limits: LIFTED,
    refused: /more than 128 commands/,
  },
  {
    name: "64 KiB of ` with the byte cap lifted",
    script: "`".repeat(65536),
    limits: LIFTED,
    refused: /more than 128 commands/,
  },
  {
    name: "a realistic script passes",
    script: [
      "set -euo pipefail",
      'cd "$(dirname "$0")/.." && for f in src/*.ts; do',
      '  case "$f" in',
      "    *_test.ts) continue ;;",
      '    *) deno fmt --check "$f" || { echo "bad: $f" >&2; exit 1; } ;;',
      "  esac",
      "done",
      'if [[ -n "${CI:-}" ]]; then echo ci; fi',
      "cat <<'EOF'",
      "it's (fine) $(not code)",
      "EOF",
      "echo done # trailing (comment",
    ].join("\n"),
    refused: null,
  },
];

Deno.test("prescanScript() refuses over-cap scripts without parsing, exactly at each cap", async (t) => {
  for (const row of PRESCAN_CASES) {
    await t.step(row.name, () => {
      const result = prescanScript(row.script, row.limits);
      if (row.refused === null) {
        assert.deepEqual(result, { ok: true });
      } else {
        assert.equal(result.ok, false);
        assert.match(result.ok ? "" : result.reason, /^prescan: /);
        assert.match(result.ok ? "" : result.reason, row.refused);
      }
    });
  }
});

Deno.test("SCRIPT_LIMITS are the documented, frozen defaults", () => {
  assert.deepEqual({ ...SCRIPT_LIMITS }, {
    maxBytes: 8192,
    maxDepth: 32,
    maxCommands: 128,
    maxHeredocs: 8,
  });
  assert.ok(Object.isFrozen(SCRIPT_LIMITS));
});
