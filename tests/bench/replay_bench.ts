/**
 * Policy replay benchmark (issue 24): a 200-turn run is recorded once (the coding agent on the
 * scripted model: each turn reads a file, writes one or runs a command — the command asks and
 * nobody answers), then `libos replay`'s work — load the recorded actions from the store, build
 * the "what if" governance (read-only, a deny rule, an allow policy), re-decide every action and
 * list the changes — is repeated. Reported in turns/s; target >= 1,000 turns/s. The shell parser
 * is loaded once beforehand, as the command does before replaying.
 *
 * @module
 */
import { join } from "node:path";
import { executorFor } from "../../runtime/model/executor.ts";
import { createRuntime } from "../../runtime/runtime.ts";
import { ScriptedModel } from "../../runtime/model/scripted_model.ts";
import { parseSessionLog } from "../../runtime/model/session_log.ts";
import { parseRunDeny } from "../../runtime/authority/decide.ts";
import { parsePolicy, PolicyRules } from "../../runtime/policy/policy_rules.ts";
import { recordedRun } from "../../runtime/policy/recorded_run.ts";
import { changes, replay, Replayer } from "../../runtime/policy/replay.ts";
import { ShellParser } from "../../runtime/policy/shell_script.ts";
import { ProgramTable } from "../../runtime/policy/shell_programs.ts";
import { type BenchCase, benchDir, type BenchResult } from "./_bench.ts";

const TURNS = 200;
const REPLAYS = 30;

function script(): string {
  const lines: string[] = [];
  for (let i = 0; i < TURNS - 1; i++) {
    const call = i % 3 === 0
      ? { name: "read_text_file", arguments: { path: `src/f${i % 10}.txt` } }
      : i % 3 === 1
      ? { name: "write_text_file", arguments: { path: `out/n${i}.txt`, content: `note ${i}` } }
      : { name: "run_shell_command", arguments: { argv: ["python3", `tests/t${i % 7}.py`] } };
    lines.push(JSON.stringify({ type: "model_turn", tool_calls: [call] }));
  }
  lines.push(JSON.stringify({ type: "model_turn", content: "done" }));
  return lines.join("\n");
}

const POLICY = JSON.stringify({
  version: 1,
  rules: [
    { effect: "allow", shell: ["python3", "tests/t1.py"], exact: true },
    { effect: "deny", path: "out/n1*.txt", rights: ["write"] },
  ],
});

async function replayRun(): Promise<BenchResult> {
  using dir = benchDir();
  const workspace = join(dir.path, "ws");
  Deno.mkdirSync(join(workspace, "src"), { recursive: true });
  Deno.mkdirSync(join(workspace, "out"));
  for (let i = 0; i < 10; i++) Deno.writeTextFileSync(join(workspace, "src", `f${i}.txt`), "x\n");
  await using runtime = await createRuntime({
    workspace,
    db: join(dir.path, "b.db"),
    env: { get: (n) => (n === "XDG_STATE_HOME" ? join(dir.path, "state") : undefined) },
    mode: "workspace-write",
    human: "none",
    wall: false,
  });
  const pid = runtime.processes.spawn({
    goal: "work for 200 turns",
    image: "coding-agent:v0",
    budgets: { maxToolCalls: 10_000, maxModelTokens: 1_000_000_000 },
  }).pid;
  {
    using scheduler = runtime.scheduler(
      executorFor(runtime, new ScriptedModel(parseSessionLog(script()))),
    );
    await scheduler.runUntilIdle();
  }
  const scripts = new ShellParser();
  await scripts.load();
  const programs = new ProgramTable();
  const governances = [
    { mode: "read-only" as const, denies: [], rules: null },
    { mode: "workspace-write" as const, denies: [parseRunDeny("fs.read:src/f1*")], rules: null },
    {
      mode: "workspace-write" as const,
      denies: [],
      rules: new PolicyRules(parsePolicy(POLICY, "bench.jsonc")),
    },
  ];
  let turns = 0;
  let actions = 0;
  let changed = 0;
  const once = (i: number) => {
    const run = recordedRun(runtime.store, pid);
    const replayer = new Replayer(
      { ...governances[i % governances.length]!, level: "allowlist_auto_else_ask", wall: false },
      {
        capabilities: run.capabilities,
        lifetimes: run.lifetimes,
        modeGrants: run.modeGrants.keys(),
        scripts,
        programs,
      },
    );
    const replayed = replay(run.actions, replayer);
    turns = run.turns;
    actions = replayed.length;
    changed = changes(replayed).length;
  };
  for (let i = 0; i < 3; i++) once(i);
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < REPLAYS; i++) {
    const t = performance.now();
    once(i);
    latencies.push(performance.now() - t);
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    ops: REPLAYS * turns,
    seconds,
    latenciesMs: latencies,
    note:
      `${turns} turns, ${actions} actions per replay (store load + re-decide + diff; ${changed} changed in the last); latencies per whole replay; back to back`,
  };
}

/** The replay row. */
export const CASES: readonly BenchCase[] = [
  {
    group: "policy replay: a 200-turn recorded run",
    name: "replay: turns/s on a 200-turn recorded run",
    target: { minOpsPerSecond: 1_000 },
    run: replayRun,
  },
];
