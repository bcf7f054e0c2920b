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
import { ProgramTable } from "../../runtime/policy/shell_programs.ts";
import { parsePolicy, PolicyRules } from "../../runtime/policy/policy_rules.ts";
import { decideShell, type ShellDecisionInput } from "../../runtime/policy/shell_policy.ts";
import { ShellParser } from "../../runtime/policy/shell_script.ts";
import { type BenchCase, type BenchResult, percentile } from "./_bench.ts";

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
    programs: new ProgramTable(),
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

/** The largest ratio between two doublings that still counts as linear. */
const LINEAR_RATIO = 2.5;

/**
 * One pathological dimension, doubled from `sizes[0]` up: the median decision time at each size
 * (over `repeats` runs), and the ratio of each time to the one before. The row's latencies are
 * the largest size's; its note lists every ratio and says whether each is within
 * {@link LINEAR_RATIO} (twice the input may cost at most 2.5 times the time).
 */
async function doubling(
  sizes: readonly number[],
  input: (size: number) => readonly string[],
  repeats: number,
): Promise<BenchResult> {
  const s = await settings();
  const decide = (argv: readonly string[]) => {
    try {
      decideShell({ ...s, argv });
    } catch {
      // Over the hard cap: refused, which is an answer too.
    }
  };
  const medians: number[] = [];
  let last: number[] = [];
  const start = performance.now();
  for (const size of sizes) {
    const argv = input(size);
    decide(argv);
    const times: number[] = [];
    for (let i = 0; i < repeats; i++) {
      const t = performance.now();
      decide(argv);
      times.push(performance.now() - t);
    }
    medians.push(percentile(times, 50));
    last = times;
  }
  // Below a quarter of a millisecond the timer's grain, the engine's tiers and the collector
  // dominate (and no stall is possible): ratios are taken from there up.
  const floor = 0.25;
  const ratios = medians.slice(1).map((m, i) => Math.max(m, floor) / Math.max(medians[i]!, floor));
  const worst = Math.max(...ratios);
  return {
    ops: repeats * sizes.length,
    seconds: (performance.now() - start) / 1000,
    latenciesMs: last,
    note: `${sizes[0]}…${sizes.at(-1)}: p50 ${medians.map((m) => m.toFixed(2)).join(" → ")} ms, ×${
      ratios.map((r) => r.toFixed(1)).join(", ×")
    } per doubling (${
      worst <= LINEAR_RATIO ? "linear" : `MISSED linear, worst ×${worst.toFixed(1)}`
    })`,
  };
}

/** Sizes from `first`, doubled `count - 1` times. */
const doublings = (first: number, count: number) =>
  Array.from({ length: count }, (_, i) => first * 2 ** i);

/** The policy rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "policy: linearity (each doubling ≤ 2.5× the time)",
    name: "argv tokens: 256 … 4,096 tokens of 240 characters (up to ~1 MiB, legal)",
    run: () =>
      doubling(
        doublings(256, 5),
        (n) => [
          "echo",
          ...Array.from({ length: n }, (_, i) => `${"x".repeat(236)}${String(i).padStart(4, "0")}`),
        ],
        9,
      ),
  },
  {
    group: "policy: linearity (each doubling ≤ 2.5× the time)",
    name: "argv tokens: 4,096 … 65,536 one-character tokens",
    run: () =>
      doubling(doublings(4096, 5), (n) => ["echo", ...Array.from({ length: n }, () => "a")], 9),
  },
  {
    group: "policy: linearity (each doubling ≤ 2.5× the time)",
    name: "token length: one token of 16 KiB … 1 MiB (the last over the hard cap)",
    run: () => doubling(doublings(16 * 1024, 7), (n) => ["echo", "y".repeat(n)], 9),
  },
  {
    group: "policy: linearity (each doubling ≤ 2.5× the time)",
    name: "nesting: 8 … 128 wrappers (nice nice … ls)",
    run: () =>
      doubling(doublings(8, 5), (n) => [...Array.from({ length: n }, () => "nice"), "ls"], 21),
  },
  {
    group: "policy: linearity (each doubling ≤ 2.5× the time)",
    name: "script length: sh -c of 1 KiB … 64 KiB of commands",
    run: () => doubling(doublings(1024, 7), (n) => ["sh", "-c", "echo a; ".repeat(n / 8)], 9),
  },
  {
    group: "policy: linearity (each doubling ≤ 2.5× the time)",
    name: "64 KiB of anything decided (one token, 1-char tokens, script): target p50 < 5 ms",
    target: { maxP50Ms: 5 },
    async run() {
      const s = await settings();
      return timed(
        60,
        [
          ["echo", "z".repeat(64 * 1024)],
          ["echo", ...Array.from({ length: 32 * 1024 }, () => "a")],
          ["sh", "-c", "echo a; ".repeat(8 * 1024)],
          ["git", "grep", ...Array.from({ length: 21 * 1024 }, () => "-n")],
          ["ssh", ...Array.from({ length: 21 * 1024 }, (_, i) => (i % 2 ? `v${i}` : "-o"))],
          ["tar", "xf", ...Array.from({ length: 21 * 1024 }, () => "-f")],
          ["sqlite3", "x.db", "select 1;\n".repeat(6 * 1024)],
        ],
        (argv) => decideShell({ ...s, argv }),
        "a 64 KiB token, 32,768 one-character tokens, a 64 KiB script, and 64 KiB of options of git, ssh, tar and sqlite3 (the programs table), round-robin",
      );
    },
  },
  {
    group: "policy: linearity (each doubling ≤ 2.5× the time)",
    name: "programs table: git grep with 2,048 … 32,768 option tokens",
    run: () =>
      doubling(
        doublings(2048, 5),
        (n) => ["git", "grep", ...Array.from({ length: n }, (_, i) => (i % 2 ? "-n" : `-O${i}`))],
        9,
      ),
  },
  {
    group: "policy: linearity (each doubling ≤ 2.5× the time)",
    name: "programs table: ssh with 2,048 … 32,768 distinct -o values",
    run: () =>
      doubling(
        doublings(2048, 5),
        (n) => ["ssh", ...Array.from({ length: n }, (_, i) => (i % 2 ? `Opt${i}=x` : "-o")), "h"],
        9,
      ),
  },
  {
    group: "policy: linearity (each doubling ≤ 2.5× the time)",
    name: "programs table: sqlite3 with an SQL operand of 1,024 … 16,384 lines",
    run: () =>
      doubling(doublings(1024, 5), (n) => ["sqlite3", "x.db", "select 1;\n".repeat(n)], 31),
  },

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
