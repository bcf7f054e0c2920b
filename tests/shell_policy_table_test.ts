/**
 * The shell policy table (DESIGN §2 "Fail closed", §3; REFERENCE §10.1 items 1, 7, 8): every
 * case of `fixtures/policy/shell_cases.jsonl` — attacks through each wrapper, shell and
 * interpreter form, the hardline floor in every level and mode, and benign controls that a
 * blocklist must keep auto-allowed — decided by `decideShell()` and by `libos policy check`.
 *
 * Mismatches are collected and reported together, so one run shows every failing case.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { runCli } from "../cli/mod.ts";
import { ModeName } from "../runtime/authority/modes.ts";
import { parsePolicy, PolicyRules } from "../runtime/policy/policy_rules.ts";
import { programName } from "../runtime/policy/shell_argv.ts";
import {
  decideShell,
  type ShellDecision,
  ShellPolicyLevel,
} from "../runtime/policy/shell_policy.ts";
import { ShellParser } from "../runtime/policy/shell_script.ts";

const FIXTURES = new URL("./fixtures/policy/", import.meta.url);
const CASES_FILE = fileURLToPath(new URL("shell_cases.jsonl", FIXTURES));
const POLICY_FILES = {
  blocklist: fileURLToPath(new URL("blocklist.jsonc", FIXTURES)),
  allowlist: fileURLToPath(new URL("allowlist.jsonc", FIXTURES)),
} as const;

/** One line of the table. */
const TableCase = z.object({
  name: z.string().min(1),
  argv: z.array(z.string()).min(1),
  level: ShellPolicyLevel,
  policy: z.enum(["blocklist", "allowlist"]).nullable(),
  mode: ModeName.default("workspace-write"),
  wall: z.boolean().default(false),
  expect: z.enum(["allow", "ask", "deny"]),
  /** A substring the decision's reason must contain (`hardline:rm-rf-root`, `rule:`, …). */
  reason: z.string().min(1).optional(),
}).strict();
type TableCase = z.infer<typeof TableCase>;

/** Every wrapper, shell, interpreter and find action the issue lists: each needs a case. */
const PROGRAMS: readonly string[] = Object.freeze([
  "env",
  "nice",
  "timeout",
  "nohup",
  "stdbuf",
  "chrt",
  "taskset",
  "setsid",
  "ionice",
  "flock",
  "unshare",
  "sudo",
  "doas",
  "su",
  "runuser",
  "pkexec",
  "xargs",
  "find",
  "time",
  "command",
  "watch",
  "exec",
  "busybox",
  "toybox",
  "sh",
  "bash",
  "dash",
  "zsh",
  "ksh",
  "python",
  "node",
  "perl",
  "ruby",
  "deno",
  "awk",
  "make",
  "npm",
  "pytest",
  "cargo",
  "git",
]);
/** Tokens that must appear verbatim (or as `OPTION=…`) in some case's argv. */
const TOKENS: readonly string[] = Object.freeze([
  "python3.11",
  "-exec",
  "-execdir",
  "-ok",
  "-delete",
  "-S",
  "-i",
  "-u",
  "-c",
  "--config-env",
  "--exec-path",
  "-C",
  "--git-dir",
]);
/** Every hardline rule: each must be the expected reason of some case. */
const HARDLINE_RULES: readonly string[] = Object.freeze([
  "rm-rf-root",
  "mkfs",
  "dd-device",
  "wipe",
  "power",
  "kill-all",
  "chmod-root",
  "fork-bomb",
]);

function loadCases(): TableCase[] {
  const text = Deno.readTextFileSync(CASES_FILE);
  return text.split("\n").flatMap((line, i) => {
    if (line.trim() === "") return [];
    const parsed = TableCase.safeParse(JSON.parse(line));
    if (!parsed.success) {
      throw new Error(`shell_cases.jsonl line ${i + 1}: ${parsed.error.issues[0]?.message}`);
    }
    return [parsed.data];
  });
}

function loadRules(): Record<keyof typeof POLICY_FILES, PolicyRules> {
  const rulesOf = (path: string) => new PolicyRules(parsePolicy(Deno.readTextFileSync(path), path));
  return { blocklist: rulesOf(POLICY_FILES.blocklist), allowlist: rulesOf(POLICY_FILES.allowlist) };
}

/** A token short enough to read in a failure report. */
function short(token: string): string {
  return token.length > 80 ? `${token.slice(0, 60)}…[${token.length} chars]` : token;
}

function showArgv(argv: readonly string[]): string {
  return JSON.stringify(argv.map(short));
}

function decideCase(
  c: TableCase,
  rules: Record<keyof typeof POLICY_FILES, PolicyRules>,
  scripts: ShellParser,
): ShellDecision {
  return decideShell({
    argv: c.argv,
    level: c.level,
    mode: c.mode,
    wall: c.wall,
    denies: [],
    rules: c.policy === null ? null : rules[c.policy],
    scripts,
  });
}

/** The cases `libos policy check --shell-policy blocklist_ask_else_auto` decides with its defaults. */
function isCliBlocklistCase(c: TableCase): boolean {
  return c.level === "blocklist_ask_else_auto" && c.policy === "blocklist" &&
    c.mode === "workspace-write" && !c.wall;
}

Deno.test("shell_cases.jsonl has at least 150 uniquely named cases covering every wrapper, shell, interpreter, git option and hardline rule", () => {
  const cases = loadCases();
  assert.ok(cases.length >= 150, `only ${cases.length} cases; the issue asks for at least 150`);
  const names = new Set<string>();
  for (const c of cases) {
    assert.ok(!names.has(c.name), `the case name ${JSON.stringify(c.name)} appears twice`);
    names.add(c.name);
  }
  const tokens = cases.flatMap((c) => c.argv);
  const programs = new Set(tokens.map(programName));
  const missing = [
    ...PROGRAMS.filter((p) => !programs.has(p)),
    ...TOKENS.filter((t) => !tokens.some((token) => token === t || token.startsWith(`${t}=`))),
    ...HARDLINE_RULES.filter((rule) =>
      !cases.some((c) => c.expect === "deny" && c.reason === `hardline:${rule}`)
    ),
  ];
  assert.deepEqual(missing, [], `no case covers: ${missing.join(", ")}`);
  for (const level of ShellPolicyLevel.options) {
    assert.ok(cases.some((c) => c.level === level), `no case runs under ${level}`);
  }
  for (const expect of ["allow", "ask", "deny"] as const) {
    assert.ok(cases.some((c) => c.expect === expect), `no case expects ${expect}`);
  }
  const benign = cases.filter((c) =>
    c.level === "blocklist_ask_else_auto" && c.policy === "blocklist" && c.expect === "allow"
  );
  assert.ok(benign.length >= 30, `only ${benign.length} benign blocklist controls`);
});

Deno.test("decideShell() gives every table case its expected decision, and libos policy check --batch agrees on the blocklist cases", async (t) => {
  const cases = loadCases();
  const rules = loadRules();
  const scripts = new ShellParser();
  await scripts.load();
  const decisions = new Map<TableCase, ShellDecision>();

  await t.step("every case decides as expected (all mismatches reported at once)", () => {
    const mismatches: string[] = [];
    for (const c of cases) {
      const got = decideCase(c, rules, scripts);
      decisions.set(c, got);
      const reasonOk = c.reason === undefined || got.reason.includes(c.reason);
      if (got.decision === c.expect && reasonOk) continue;
      const commands = got.commands.map((command) =>
        `      ${command.decision.padEnd(5)} ${command.kind.padEnd(14)} ${
          showArgv(command.argv)
        } via ${JSON.stringify(command.via)}: ${short(command.reason)}`
      );
      mismatches.push(
        [
          `- ${c.name}`,
          `    argv ${
            showArgv(c.argv)
          } (${c.level}, policy ${c.policy}, ${c.mode}, wall ${c.wall})`,
          `    expected ${c.expect}${c.reason ? ` with reason containing ${c.reason}` : ""}`,
          `    got      ${got.decision}: ${short(got.reason)}`,
          ...commands,
        ].join("\n"),
      );
    }
    assert.equal(
      mismatches.length,
      0,
      `${mismatches.length} of ${cases.length} cases decided otherwise:\n${mismatches.join("\n")}`,
    );
  });

  await t.step("libos policy check --batch - --json prints the same decisions", async () => {
    const subset = cases.filter(isCliBlocklistCase);
    assert.ok(subset.length >= 100, `only ${subset.length} blocklist cases for the CLI`);
    const cwd = Deno.makeTempDirSync({ prefix: "libos-policy-table-" });
    try {
      let stdout = "";
      let stderr = "";
      const status = await runCli([
        "policy",
        "check",
        "--batch",
        "-",
        "--json",
        "--no-user-config",
        "--policy",
        POLICY_FILES.blocklist,
        "--shell-policy",
        "blocklist_ask_else_auto",
      ], {
        stdout: (text) => stdout += text,
        stderr: (text) => stderr += text,
        env: { get: () => undefined },
        cwd,
        readStdin: () => Promise.resolve(subset.map((c) => JSON.stringify(c.argv)).join("\n")),
      });
      assert.equal(status, 0, `exit ${status}: ${stderr}${stdout.slice(0, 2000)}`);
      const lines = stdout.trim().split("\n").map((line) =>
        JSON.parse(line) as { line: number; decision: string; reason: string }
      );
      assert.equal(lines.length, subset.length);
      const differences: string[] = [];
      for (const [i, c] of subset.entries()) {
        const cli = lines[i]!;
        const direct = decisions.get(c) ?? decideCase(c, rules, scripts);
        assert.equal(cli.line, i + 1);
        if (cli.decision !== direct.decision || cli.reason !== direct.reason) {
          differences.push(
            `- ${c.name}: cli ${cli.decision} (${short(cli.reason)}), direct ${direct.decision} (${
              short(direct.reason)
            })`,
          );
        }
      }
      assert.deepEqual(
        differences,
        [],
        `the CLI and decideShell() differ:\n${differences.join("\n")}`,
      );
    } finally {
      Deno.removeSync(cwd, { recursive: true });
    }
  });
});
