/**
 * Policy benchmark (issue 8): shell decisions through `decideShell()` — every nested command,
 * hardline, run ceiling, rules and the level — with a realistic blocklist of rules.
 * Rows: a 64 KiB pathological `sh -c` body (the pre-scan answers ask; target p99 < 5 ms),
 * ordinary `sh -c` scripts, plain argv (with wrappers). Competitor: a naive regular expression
 * over the joined command line — the prototype's kind of block list, blind to every wrapper.
 * Arrival pattern: back-to-back decisions, one caller.
 *
 * @module
 */
import { parsePolicy, PolicyRules } from "../../runtime/policy_rules.ts";
import { decideShell, type ShellDecisionInput } from "../../runtime/shell_policy.ts";
import { ShellParser } from "../../runtime/shell_script.ts";
import type { BenchCase, BenchResult } from "./_bench.ts";

const POLICY = `{"version": 1, "rules": [
  { "effect": "deny", "shell": ["rm"] },
  { "effect": "ask", "shell": ["curl"] },
  { "effect": "ask", "shell": ["wget"] },
  { "effect": "deny", "shell": ["dd"] },
  { "effect": "ask", "shell": ["chmod"] },
  { "effect": "ask", "shell": ["git", "push"] },
  { "effect": "deny", "shell": ["env"] },
  { "effect": "ask", "shell": ["ssh"] }
]}`;

async function settings(): Promise<Omit<ShellDecisionInput, "argv">> {
  const scripts = new ShellParser();
  await scripts.load();
  return {
    level: "blocklist_ask_else_auto",
    mode: "workspace-write",
    wall: false,
    denies: [],
    rules: new PolicyRules(parsePolicy(POLICY, "bench.jsonc")),
    scripts,
  };
}

function timed(
  count: number,
  inputs: readonly (readonly string[])[],
  decide: (argv: readonly string[]) => unknown,
  note: string,
): BenchResult {
  for (let i = 0; i < Math.min(200, count); i++) decide(inputs[i % inputs.length]!);
  const latencies: number[] = [];
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    decide(inputs[i % inputs.length]!);
    latencies.push(performance.now() - t);
  }
  return { ops: count, seconds: (performance.now() - start) / 1000, latenciesMs: latencies, note };
}

const PATHOLOGICAL: readonly (readonly string[])[] = [
  ["sh", "-c", "(".repeat(64 * 1024)],
  ["bash", "-c", "$(".repeat(32 * 1024)],
  ["sh", "-c", "a;".repeat(32 * 1024)],
  ["sh", "-c", `echo ${"x\\ ".repeat(21 * 1024)}`],
];

const SCRIPTS: readonly (readonly string[])[] = [
  ["sh", "-c", "ls -la && git status"],
  ["bash", "-c", 'for f in a b c; do echo "$f"; done'],
  ["sh", "-c", "grep -rn TODO src/ | head -20"],
  ["bash", "-lc", "cd build && make -j4 2>&1 | tail -5"],
  ["sh", "-c", "cat README.md; rm -rf build"],
  ["zsh", "-c", "if test -f x; then echo yes; else echo no; fi"],
];

const PLAIN: readonly (readonly string[])[] = [
  ["git", "status"],
  ["ls", "-la", "src"],
  ["sudo", "-u", "build", "env", "-i", "PATH=/usr/bin", "timeout", "30", "make", "test"],
  ["grep", "-rn", "rm", "src/"],
  ["find", ".", "-name", "*.o", "-exec", "rm", "{}", ";"],
  ["xargs", "-0", "rm", "-f"],
  ["python3.11", "-c", "print(1)"],
  ["git", "-c", "core.pager=less", "log"],
];

/** The policy rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "policy: sh -c",
    name: "decideShell() 64 KiB pathological sh -c body (pre-scan answers ask)",
    target: { maxP99Ms: 5 },
    async run() {
      const s = await settings();
      return timed(
        400,
        PATHOLOGICAL,
        (argv) => decideShell({ ...s, argv }),
        "4 kinds of 32-64 KiB bodies: ( nesting, $( nesting, ; runs, escaped words",
      );
    },
  },
  {
    group: "policy: sh -c",
    name: "naive regex /rm\\s+(-\\w+\\s+)*\\// over the same bodies (competitor)",
    run() {
      // A common "blocklist" shortcut: a backtracking regular expression on the joined text.
      const naive = /(?:^|[;&|]\s*)(?:\w+=\S*\s+)*rm\s+(?:-\w+\s+)*\//;
      return timed(
        40,
        PATHOLOGICAL.map((a) => [a.join(" ")]),
        (argv) => naive.test(argv[0]!),
        "fast here, but blind: it misses sudo, env, sh -c, find -delete and every other wrapper",
      );
    },
  },
  {
    group: "policy: decisions",
    name: "decideShell() ordinary sh -c scripts (parsed)",
    async run() {
      const s = await settings();
      return timed(5000, SCRIPTS, (argv) => decideShell({ ...s, argv }), "6 scripts round-robin");
    },
  },
  {
    group: "policy: decisions",
    name: "decideShell() plain argv (wrappers, find -exec, xargs, interpreters)",
    async run() {
      const s = await settings();
      return timed(50_000, PLAIN, (argv) => decideShell({ ...s, argv }), "8 argv round-robin");
    },
  },
];
