/**
 * Programs that run programs (issue 21 §1): every row of every family table decided by
 * `decideShell()` — its example is never auto-allowed where the row says it must not be — the
 * controls next to them stay allowed, every exec-style wrapper's operand is decided as its own
 * command, and an argv[0] carrying shell syntax is refused before anything is decided.
 * (`tests/policy_programs_test.ts` runs the same tables through the real launcher.)
 */
import assert from "node:assert/strict";
import { ValidationError } from "../base/errors.ts";
import { parsePolicy, PolicyRules } from "./policy_rules.ts";
import { analyzeArgv, programName, WRAPPERS } from "./shell_argv.ts";
import { decideShell, type ShellDecision, type ShellPolicyLevel } from "./shell_policy.ts";
import { CODE_ROWS, type CodeRow, CONTROLS } from "./shell_programs.ts";
import { ShellParser } from "./shell_script.ts";

async function parser(): Promise<ShellParser> {
  const scripts = new ShellParser();
  await scripts.load();
  return scripts;
}

/** Rules allowing each program (as a prefix) — the "one allow rule for git" of the issue. */
function allowing(...programs: string[]): PolicyRules {
  const rules = programs.map((p) => ({ effect: "allow", shell: [p] }));
  return new PolicyRules(parsePolicy(JSON.stringify({ version: 1, rules }), "test.jsonc"));
}

function decide(
  scripts: ShellParser,
  argv: readonly string[],
  options: { level?: ShellPolicyLevel; rules?: PolicyRules | null; wall?: boolean } = {},
): ShellDecision {
  return decideShell({
    argv,
    level: options.level ?? "allowlist_auto_else_ask",
    mode: "workspace-write",
    wall: options.wall ?? true,
    denies: [],
    rules: options.rules ?? null,
    scripts,
  });
}

function programs(row: CodeRow): readonly string[] {
  return typeof row.program === "string" ? [row.program] : row.program;
}

Deno.test("CODE_ROWS: each row names its programs as users type them, says why, and its example runs one of them; each family has controls", () => {
  assert.deepEqual(Object.keys(CONTROLS), Object.keys(CODE_ROWS));
  const examples = new Set<string>();
  const problems: string[] = [];
  for (const [family, rows] of Object.entries(CODE_ROWS)) {
    assert.ok(rows.length >= 8, `${family}: only ${rows.length} rows`);
    for (const row of rows) {
      const key = JSON.stringify(row.example);
      if (examples.has(key)) problems.push(`${family}: the example ${key} appears twice`);
      examples.add(key);
      const names = programs(row);
      for (const name of names) {
        if (programName(name) !== name) {
          problems.push(`${family}: ${name} is looked up as ${programName(name)}; write that`);
        }
      }
      if (!names.includes(programName(row.example[0]!))) {
        problems.push(`${family}: ${key} does not run ${programs(row).join("/")}`);
      }
      if (row.why.length < 10) problems.push(`${family}: ${key} has no reason`);
    }
  }
  assert.deepEqual(problems, []);
});

Deno.test("Every row of every family: its example is asked about, never auto-allowed — inline code even with an allow rule for the program, workspace code outside the wall", async (t) => {
  const scripts = await parser();
  for (const [family, rows] of Object.entries(CODE_ROWS)) {
    await t.step(family, () => {
      const failures: string[] = [];
      for (const row of rows) {
        const argv = row.example;
        const fail = (what: string, d: ShellDecision) =>
          failures.push(`${JSON.stringify(argv)} ${what}: ${d.decision} (${d.reason})`);
        // The analysis finds the row (its kind, its reason).
        const found = analyzeArgv(argv, scripts).some((c) =>
          c.kind === row.kind && c.reason?.includes(row.why)
        );
        if (!found) {
          failures.push(`${JSON.stringify(argv)}: no nested command of kind ${row.kind}`);
          continue;
        }
        // Blocklist (a plain command runs on its own): code asks.
        const blocklist = decide(scripts, argv, { level: "blocklist_ask_else_auto" });
        if (blocklist.decision === "allow") fail("under blocklist_ask_else_auto", blocklist);
        // One allow rule for the program, outside the wall: never allowed.
        const rules = allowing(argv[0]!);
        const outside = decide(scripts, argv, { rules, wall: false });
        if (outside.decision === "allow") fail("with an allow rule, outside the wall", outside);
        // Inline code: not even inside the wall — only an exact allow lets it through.
        if (row.kind === "inline_code") {
          const inside = decide(scripts, argv, { rules, wall: true });
          if (inside.decision === "allow") fail("with an allow rule, inside the wall", inside);
          const exact = new PolicyRules(
            parsePolicy(
              JSON.stringify({
                version: 1,
                rules: [{ effect: "allow", shell: argv, exact: true }],
              }),
              "exact.jsonc",
            ),
          );
          const allowed = decide(scripts, argv, { rules: exact, wall: true });
          if (allowed.decision === "deny") fail("with an exact allow", allowed);
        }
      }
      assert.deepEqual(failures, [], failures.join("\n"));
    });
  }
});

Deno.test("Controls next to the rows stay allowed: under a blocklist, and with one allow rule for the program inside the wall", async () => {
  const scripts = await parser();
  const failures: string[] = [];
  for (const argv of Object.values(CONTROLS).flat()) {
    const blocklist = decide(scripts, argv, { level: "blocklist_ask_else_auto" });
    if (blocklist.decision !== "allow") {
      failures.push(`${JSON.stringify(argv)} blocklist: ${blocklist.reason}`);
    }
    const ruled = decide(scripts, argv, { rules: allowing(argv[0]!, "true") });
    if (ruled.decision !== "allow") {
      failures.push(`${JSON.stringify(argv)} allow rule: ${ruled.reason}`);
    }
  }
  assert.deepEqual(failures, [], failures.join("\n"));
});

Deno.test("The matcher reads options as the programs do: abbreviations, clusters, attached values, old-style tar, subcommands after leading options", async () => {
  const scripts = await parser();
  const cases: readonly [string, readonly string[]][] = [
    ["a GNU abbreviation", ["git", "grep", "--open-files=sh -c 'id'", "x"]],
    ["an abbreviation with its value apart", ["tar", "-xf", "a.tar", "--to-comm", "sh"]],
    ["a cluster of short flags", ["rsync", "-avze", "sh -c id", "h:x", "."]],
    ["an attached short value", ["ssh", "-oProxyCommand=sh -c id", "x"]],
    ["a keyword in any case", ["scp", "-o", "proxycommand sh -c id", "x", "h:"]],
    ["old-style tar", ["tar", "xIf", "sh -c id", "a.tar"]],
    ["cargo +toolchain", ["cargo", "+nightly", "-Zunstable-options", "run"]],
    ["go -C dir", ["go", "-C", "sub", "generate"]],
    ["npm after --prefix", ["npm", "--prefix", "pkg", "run", "build"]],
    ["a lifecycle command", ["npm", "version", "patch"]],
    ["git -C then the subcommand", ["git", "--no-pager", "bisect", "run", "make"]],
    ["a dot-command on a later line", ["sqlite3", "x.db", "select 1;\n.shell id"]],
    [
      "a needle across a 32 KiB chunk, in capitals",
      ["sqlite3", "x.db", `select '${"x".repeat(32 * 1024 - 13)}', LOAD_EXTENSION('./e')`],
    ],
    ["a pipe in strace -o", ["strace", "-o|sh -c id", "true"]],
    ["a wrapper in front", ["timeout", "5", "git", "grep", "-Osh", "x"]],
    ["inside sh -c", ["sh", "-c", "git ls-remote --upload-pack='touch x;' ."]],
    ["a checkpoint action", ["tar", "-cf", "o.tar", "--checkpoint-action", "exec=id", "x"]],
    ["uvx", ["uvx", "ruff"]],
    ["pipx run", ["pipx", "run", "black"]],
    ["pip wheel", ["pip3", "wheel", "."]],
  ];
  const failures: string[] = [];
  for (const [name, argv] of cases) {
    const d = decide(scripts, argv, { level: "blocklist_ask_else_auto" });
    const code = d.commands.some((c) => c.kind === "inline_code" || c.kind === "workspace_code");
    if (d.decision === "allow" || !code) failures.push(`${name}: ${d.decision} (${d.reason})`);
  }
  assert.deepEqual(failures, [], failures.join("\n"));
});

Deno.test("Every exec-style wrapper: its operand is decided as its own command (inline code asks, rm -rf / meets the floor)", async () => {
  const scripts = await parser();
  /** What a wrapper needs before its command (an operand, an option value). */
  const prefix: Readonly<Record<string, readonly string[]>> = {
    timeout: ["5"],
    chrt: ["1"],
    taskset: ["1"],
    chroot: ["/"],
    sg: ["staff"],
    faketime: ["2020-01-01"],
    setlock: ["lock"],
    setuidgid: ["nobody"],
    envuidgid: ["nobody"],
    gosu: ["nobody"],
    "su-exec": ["nobody"],
    logsave: ["log.txt"],
    perf: ["stat"],
    rr: ["record"],
    setarch: ["x86_64"],
    cgexec: ["-g", "cpu:x"],
    prlimit: ["--nofile=64"],
    numactl: ["--interleave=all"],
  };
  const skip = new Set(["command", "builtin", "exec"]);
  const failures: string[] = [];
  for (const name of Object.keys(WRAPPERS)) {
    if (skip.has(name)) continue;
    const head = [name, ...(prefix[name] ?? [])];
    const code = decide(scripts, [...head, "python3", "-c", "print(1)"], {
      level: "blocklist_ask_else_auto",
    });
    const inner = code.commands.find((c) => c.kind === "inline_code");
    if (code.decision === "allow" || !inner || inner.via.at(-1) !== name) {
      failures.push(`${name} python3 -c: ${code.decision} (${code.reason})`);
    }
    const floor = decide(scripts, [...head, "rm", "-rf", "/"], { level: "always_allow" });
    if (floor.decision !== "deny") failures.push(`${name} rm -rf /: ${floor.decision}`);
  }
  assert.deepEqual(failures, [], failures.join("\n"));
  for (const name of ["prlimit", "setpriv", "fakeroot", "faketime", "numactl", "rlwrap"]) {
    assert.ok(Object.hasOwn(WRAPPERS, name), `${name} is a wrapper`);
  }
  for (const name of ["xvfb-run", "dbus-run-session", "chpst", "strace", "ltrace", "valgrind"]) {
    assert.ok(Object.hasOwn(WRAPPERS, name), `${name} is a wrapper`);
  }
});

Deno.test("script -c runs its string as a shell script; script alone is an interactive shell (opaque)", async () => {
  const scripts = await parser();
  const viaScript = decide(scripts, ["script", "-qc", "rm -rf /", "/dev/null"], {
    level: "always_allow",
  });
  assert.equal(viaScript.decision, "deny");
  assert.equal(viaScript.reason, "hardline:rm-rf-root");
  const alone = decide(scripts, ["script", "-q", "/dev/null"], {
    level: "blocklist_ask_else_auto",
  });
  assert.equal(alone.decision, "ask");
  assert.match(alone.reason, /interactive shell/);
});

Deno.test("decideShell() refuses an argv[0] carrying shell syntax as malformed, before anything is decided (attack: a shell line passed as one token)", async () => {
  const scripts = await parser();
  const malformed: readonly [string, string][] = [
    ["ls -la", "whitespace"],
    [" ls", "whitespace"],
    ["ls ", "whitespace"],
    ["ls\t", "control character"],
    ["\u00a0ls", "whitespace"],
    ["'ls'", "quote"],
    ['"rm"', "quote"],
    ["r\\m", "backslash"],
    ["*.sh", "glob"],
    ["ls?", "glob"],
    ["[ab]", "glob"],
    ["{ls,rm}", "glob"],
    ["FOO=1", "assignment"],
    ["PATH=/tmp", "assignment"],
    ["$SHELL", "shell syntax"],
    ["ls;id", "shell syntax"],
    ["a&&b", "shell syntax"],
    ["ls|sh", "shell syntax"],
    ["(id)", "shell syntax"],
    ["`id`", "quote"],
    ["~/bin/x", "starts with"],
    ["#x", "starts with"],
    ["", "empty"],
  ];
  for (const [program, why] of malformed) {
    assert.throws(
      () => decide(scripts, [program, "x"], { level: "always_allow" }),
      (e: unknown) =>
        e instanceof ValidationError && e.code === "validation_failed" &&
        e.message.includes(why) && e.message.includes('["sh", "-c"'),
      JSON.stringify(program),
    );
  }
  for (const program of ["[", "/usr/bin/[", "g++", "python3.11", "x86_64-linux-gnu-gcc", "ls"]) {
    assert.doesNotThrow(() => decide(scripts, [program, "x"]), program);
  }
  // Through a wrapper, the operand is a program name too: not auto-allowed.
  const wrapped = decide(scripts, ["env", "ls -la"], { level: "always_allow" });
  assert.equal(wrapped.decision, "ask");
  assert.match(wrapped.reason, /program name .*whitespace/);
});
