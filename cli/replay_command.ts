/**
 * `libos replay`: re-decides a stored run's recorded actions (or a session log's tool calls)
 * offline under another governance and prints the decisions that would change
 * (`runtime/policy/replay.ts`). The database is opened read-only; nothing is performed and no
 * model is called.
 *
 * @module
 */
import { resolve } from "node:path";
import { UsageError } from "../runtime/base/errors.ts";
import { parseRunDeny } from "../runtime/authority/decide.ts";
import { type ModeName, parseMode } from "../runtime/authority/modes.ts";
import { resourceString } from "../runtime/authority/capability.ts";
import { escapePreview } from "../runtime/base/escape_preview.ts";
import { parseSessionLog } from "../runtime/model/session_log.ts";
import { loadPolicies } from "../runtime/policy/policy_files.ts";
import { parsePolicy, PolicyRules } from "../runtime/policy/policy_rules.ts";
import { type RecordedAction, recordedRun } from "../runtime/policy/recorded_run.ts";
import {
  changes,
  replay,
  type Replayed,
  Replayer,
  type ReplayGovernance,
  tally,
} from "../runtime/policy/replay.ts";
import { ShellParser } from "../runtime/policy/shell_script.ts";
import { ProgramTable } from "../runtime/policy/shell_programs.ts";
import type { ShellPolicyLevel } from "../runtime/policy/shell_policy.ts";
import {
  type CliIo,
  type Command,
  flagOption,
  listOption,
  type ParsedArgs,
  stringOption,
} from "./_options.ts";
import { EXIT_OK, printJson } from "./_output.ts";
import { shellPolicyOf } from "./_run_options.ts";
import { openRuntime } from "./_workspace.ts";
import { lastLaunch, recordedText } from "./_governance_store.ts";
import { DEFAULT_MODE, DEFAULT_SHELL_POLICY } from "./_run_governance.ts";
import { SESSION_PID, sessionActions } from "./_replay_session.ts";

const line = (text: string, max = 300) => escapePreview(text, { maxChars: max });

function wallOf(parsed: ParsedArgs): boolean | undefined {
  const text = stringOption(parsed, "wall");
  if (text === undefined) return undefined;
  if (text !== "on" && text !== "off") {
    throw new UsageError(`--wall must be on or off, got ${JSON.stringify(text)}`);
  }
  return text === "on";
}

/** The recorded governance (mode, denies, level, policy texts), what the flags change of it. */
interface Base {
  readonly mode: ModeName;
  readonly denies: readonly string[];
  readonly level: ShellPolicyLevel;
  readonly policies: readonly { readonly path: string; readonly text: string }[];
  readonly wall: boolean;
}

function governanceOf(base: Base, parsed: ParsedArgs, io: CliIo): ReplayGovernance {
  const mode = stringOption(parsed, "mode");
  const denies = [...base.denies];
  for (const d of listOption(parsed, "deny")) if (!denies.includes(d)) denies.push(d);
  const added = loadPolicies({
    env: io.env,
    cwd: io.cwd,
    userConfig: false,
    files: listOption(parsed, "policy"),
  });
  const rules = [
    ...base.policies.flatMap((p) => parsePolicy(p.text, p.path)),
    ...added.rules.rules,
  ];
  return {
    mode: mode === undefined ? base.mode : parseMode(mode),
    denies: denies.map(parseRunDeny),
    rules: rules.length === 0 ? null : new PolicyRules(rules),
    level: shellPolicyOf(parsed) ?? base.level,
    wall: wallOf(parsed) ?? base.wall,
  };
}

function describeGovernance(g: ReplayGovernance): Record<string, unknown> {
  return {
    mode: g.mode,
    shell_policy: g.level,
    wall: g.wall,
    denies: g.denies.map((d) => d.source),
    rules: g.rules?.rules.map((r) => ({ reason: r.reason, rule: r.text })) ?? [],
  };
}

function target(action: RecordedAction): string {
  return action.resource.type === "shell"
    ? `shell:${JSON.stringify(action.resource.argv)}`
    : resourceString(action.resource);
}

function entry(r: Replayed): Record<string, unknown> {
  return {
    seq: r.action.seq,
    turn: r.action.turn,
    pid: r.action.pid,
    action: r.action.action,
    resource: target(r.action),
    before: r.action.recorded,
    approved: r.action.approved,
    after: r.decision.effect,
    reason: r.decision.reason,
    explanation: r.decision.explanation,
  };
}

function text(r: Replayed): string {
  const before = r.action.recorded === null
    ? ""
    : `${r.action.recorded}${r.action.approved ? " (approved once)" : ""} → `;
  const where = r.action.seq === null
    ? `turn ${r.action.turn}`
    : `#${r.action.seq}${r.action.turn === null ? "" : ` (turn ${r.action.turn})`}`;
  return `${where}  ${r.action.action} ${line(target(r.action))}: ${before}${r.decision.effect}  ${
    line(r.decision.explanation)
  }`;
}

async function run(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const session = stringOption(parsed, "session");
  const [pid, ...more] = parsed.args;
  if ((session === undefined) === (pid === undefined) || more.length > 0) {
    throw new UsageError(`"libos replay" needs either one PID or --session FILE.jsonl`);
  }
  const against = flagOption(parsed, "against");
  if (against && session === undefined) {
    throw new UsageError(
      `--against applies to --session (a stored run is compared with its own recorded decisions)`,
    );
  }
  const json = flagOption(parsed, "json");
  const scripts = new ShellParser();
  await scripts.load();
  const programs = new ProgramTable();
  let actions: readonly RecordedAction[];
  let base: Base;
  let replayer: Replayer;
  let head: Record<string, unknown>;
  let turns: number;
  let skipped = 0;
  if (session !== undefined) {
    let textOf: string;
    try {
      textOf = Deno.readTextFileSync(resolve(io.cwd, session));
    } catch (error) {
      throw new UsageError(
        `Cannot read the session log ${JSON.stringify(session)}: ${(error as Error).message}`,
      );
    }
    const derived = sessionActions(parseSessionLog(textOf, session));
    turns = derived.turns;
    skipped = derived.skipped;
    base = {
      mode: DEFAULT_MODE,
      denies: [],
      level: DEFAULT_SHELL_POLICY,
      policies: [],
      wall: false,
    };
    const governance = governanceOf(base, parsed, io);
    const options = { capabilities: [], modeGrants: [SESSION_PID], scripts, programs };
    replayer = new Replayer(governance, options);
    // --against: the defaults (with the same wall) decide first; the flags' decisions are
    // compared with theirs.
    const baseline = against
      ? new Replayer({
        mode: DEFAULT_MODE,
        denies: [],
        rules: null,
        level: DEFAULT_SHELL_POLICY,
        wall: governance.wall,
      }, options)
      : undefined;
    actions = baseline
      ? derived.actions.map((a) => ({ ...a, recorded: baseline.decide(a).effect }))
      : derived.actions;
    head = { session };
  } else {
    await using runtime = await openRuntime(parsed, io, "read");
    runtime.processes.get(pid!); // a typed not-found for an unknown pid
    const recorded = recordedRun(runtime.store, pid!);
    const launch = lastLaunch(runtime, pid!);
    const g = launch.governance;
    const policies = (g?.policies ?? []).map((source) => {
      const kept = recordedText(runtime, source);
      if (kept === undefined) {
        throw new UsageError(
          `Cannot replay ${pid}: the text of its policy file ${source.path} is no longer kept, so its decisions cannot be re-made`,
        );
      }
      return { path: source.path, text: kept };
    });
    base = {
      mode: g?.mode ?? [...recorded.modeGrants.values()][0] ?? DEFAULT_MODE,
      denies: g?.denies ?? [],
      level: g?.shellPolicy ?? DEFAULT_SHELL_POLICY,
      policies,
      wall: recorded.wall ?? g?.shield ?? false,
    };
    actions = recorded.actions;
    turns = recorded.turns;
    const ceilings = new Map(
      recorded.pids.map((p) => [p, runtime.processes.find(p)?.ceiling ?? null] as const),
    );
    replayer = new Replayer(governanceOf(base, parsed, io), {
      capabilities: recorded.capabilities,
      lifetimes: recorded.lifetimes,
      modeGrants: recorded.modeGrants.keys(),
      // Read now: the runtime is closed before the actions are re-decided.
      ceilingOf: (p) => ceilings.get(p) ?? null,
      scripts,
      programs,
    });
    head = { db: runtime.location.path, pid, processes: recorded.pids };
  }
  const replayed = replay(actions, replayer);
  const compared = session === undefined || against;
  const changed = compared ? changes(replayed) : replayed;
  const counts = tally(changed);
  if (json) {
    printJson(io, {
      ...head,
      governance: describeGovernance(replayer.governance),
      turns,
      actions: replayed.length,
      ...(compared ? { changed: changed.length, changes: counts } : {}),
      ...(session === undefined ? {} : { skipped }),
      decisions: changed.map(entry),
    });
    return EXIT_OK;
  }
  for (const r of changed) io.stdout(`${text(r)}\n`);
  const summary = compared
    ? `${replayed.length} actions re-decided, ${changed.length} changed${
      changed.length === 0
        ? ""
        : `: ${Object.entries(counts).map(([k, n]) => `${k} ${n}`).join(", ")}`
    }`
    : `${replayed.length} actions decided from ${turns} turns${
      skipped === 0 ? "" : ` (${skipped} tool calls name no file, command or host)`
    }`;
  io.stdout(`${summary}\n`);
  return EXIT_OK;
}

/** The `replay` command. */
export const replayCommand: Command = {
  name: "replay",
  summary: "re-decide a run's recorded actions under another policy, offline",
  usage: `Usage: libos replay (PID | --session FILE.jsonl [--against]) [--mode M] [--policy FILE]...
                    [--shell-policy L] [--deny RULE]... [--wall on|off] [--json]

Re-decides every file, command and network action process PID and its children made — as the
audit log recorded them, each command with its exact argv — under the run's recorded governance
changed by the flags: --mode and --shell-policy replace the run's, --deny and --policy add to its
run denies and policy files, --wall says whether commands run inside the OS wall. Prints each
decision that would change (before → after, with why) and a summary. A human's one-shot approval
is not standing authority: an action approved once reads "ask (approved once)" and stays an ask
unless the new policy decides it; the mode's default grants follow --mode; every other grant is
kept as it was when the action was made. With --session, the tool calls of a session log written
with --record are decided under the flags (no recorded decision: every one is printed); with
--against, only those the flags decide differently from the defaults (workspace-write,
allowlist_auto_else_ask, no denies or policy files, the same --wall), before → after. The
database is opened read-only; nothing runs and no model is called. --json: one document.`,
  options: ["session", "against", "mode", "policy", "shell-policy", "deny", "wall"],
  variadic: true,
  run,
};
