/**
 * Process commands: `spawn`, `ps`, `signal`, `cd`, `exit`, and the scheduler's `run` and `step`.
 * Every change is made as the operator, audited, and visible to a runtime running elsewhere on
 * the same database at its next quantum boundary.
 *
 * @module
 */
import { LibosError, UsageError } from "../runtime/base/errors.ts";
import { type AgentProcess, isFinal, ProcessStatus, Signal } from "../runtime/process/process.ts";
import type { ProcessDriver } from "../runtime/kernel/scheduler.ts";
import { executorFor } from "../runtime/model/executor.ts";
import type { ModelClient } from "../runtime/model/model_client.ts";
import type { Runtime } from "../runtime/runtime.ts";
import {
  type CliIo,
  type Command,
  flagOption,
  listOption,
  type ParsedArgs,
  stringOption,
} from "./_options.ts";
import { EXIT_FAILED, EXIT_OK, field, printJson, say, table } from "./_output.ts";
import { openRuntime } from "./_workspace.ts";
import { chooseModel } from "./_model_choice.ts";
import { unlockedTrees } from "./_run_lock.ts";

const DEFAULT_IMAGE = "base-agent:v0";

function processRow(p: AgentProcess): string[] {
  return [
    p.pid,
    p.parent ?? "-",
    p.status,
    field(p.image, 40),
    field(p.cwd, 60),
    field(p.goal, 60),
  ];
}

async function spawn(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const goal = stringOption(parsed, "goal");
  if (goal === undefined) throw new UsageError(`"libos spawn" needs --goal TEXT`);
  await using runtime = await openRuntime(parsed, io, "create");
  const cwd = stringOption(parsed, "cwd");
  const p = runtime.processes.spawn({
    goal,
    image: stringOption(parsed, "image") ?? DEFAULT_IMAGE,
    // Without --tool, the image's default tools.
    ...(listOption(parsed, "tool").length ? { tools: listOption(parsed, "tool") } : {}),
    ...(cwd === undefined ? {} : { cwd }),
  });
  return say(
    io,
    parsed,
    runtime.location.path,
    { process: p },
    `Spawned ${p.pid} (${p.status}, image ${field(p.image)})`,
  );
}

async function ps(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const statuses = listOption(parsed, "status").map((s) => {
    const status = ProcessStatus.safeParse(s);
    if (!status.success) {
      throw new UsageError(
        `--status must be one of ${ProcessStatus.options.join(", ")}, got ${JSON.stringify(s)}`,
      );
    }
    return status.data;
  });
  await using runtime = await openRuntime(parsed, io, "read");
  const all = runtime.processes.list({ limit: 10_000, ...(statuses.length ? { statuses } : {}) });
  const shown = statuses.length || flagOption(parsed, "all")
    ? all
    : all.filter((p) => !isFinal(p.status));
  return say(
    io,
    parsed,
    runtime.location.path,
    { processes: shown },
    shown.length === 0
      ? `No ${statuses.length || flagOption(parsed, "all") ? "" : "live "}processes (database ${
        field(runtime.location.path, 4096)
      }).`
      : table(["PID", "PARENT", "STATUS", "IMAGE", "CWD", "GOAL"], shown.map(processRow)).join(
        "\n",
      ),
  );
}

async function signal(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid, name] = parsed.args;
  const sig = Signal.safeParse(name);
  if (!sig.success) {
    throw new UsageError(
      `SIGNAL must be one of ${Signal.options.join(", ")}, got ${JSON.stringify(name)}`,
    );
  }
  await using runtime = await openRuntime(parsed, io, "write");
  const before = runtime.processes.get(pid!);
  const after = runtime.processes.signal(pid!, sig.data);
  const deferred = after.status === "running" && after.deferred.includes(sig.data);
  return say(
    io,
    parsed,
    runtime.location.path,
    { process: after, deferred },
    deferred
      ? `${pid}: ${sig.data} will apply when its running quantum ends`
      : `${pid}: ${before.status} -> ${after.status}`,
  );
}

async function cd(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid, path] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "write");
  const p = runtime.processes.chdir(pid!, path!);
  return say(
    io,
    parsed,
    runtime.location.path,
    { process: p },
    `${pid}: cwd ${field(p.cwd, 4096)}`,
  );
}

async function exit(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid] = parsed.args;
  const message = stringOption(parsed, "message");
  const result = stringOption(parsed, "result");
  await using runtime = await openRuntime(parsed, io, "write");
  const p = runtime.processes.exit(pid!, {
    ...(message === undefined ? {} : { message }),
    ...(result === undefined ? {} : { result }),
  });
  return say(
    io,
    parsed,
    runtime.location.path,
    { process: p },
    `${pid}: exited${p.result ? ` with result ${field(p.result)}` : ""}`,
  );
}

/** Without `--model` there is no driver that can make a model turn. */
const NO_MODEL: ProcessDriver = {
  runQuantum: () =>
    Promise.reject(new LibosError("no_model", "operator", "No model is configured")),
};

async function run(parsed: ParsedArgs, io: CliIo, steps?: number): Promise<number> {
  const chosen = chooseModel(parsed, io, "configured");
  // The API key is a known secret: redacted from every tool result.
  await using runtime = await openRuntime(parsed, io, "write", {
    secrets: chosen?.secrets ?? [],
  });
  if (chosen) return await drive(parsed, io, runtime, chosen.model, steps);
  using trees = unlockedTrees(runtime);
  using scheduler = runtime.scheduler(NO_MODEL, { scope: trees.scope });
  const recovery = scheduler.recover();
  const waiting = scheduler.ready;
  const db = runtime.location.path;
  const lines = [
    `Recovered ${recovery.recovered.length} process(es) left running and ${recovery.outcomeUnknown.length} action(s) whose outcome is unknown (reported to their processes).`,
  ];
  if (waiting.length === 0) {
    return say(io, parsed, db, {
      ran: 0,
      recovered: recovery.recovered,
      outcomeUnknown: recovery.outcomeUnknown.map((a) => a.id),
      runnable: [],
    }, [...lines, "Nothing is runnable."].join("\n"));
  }
  const message =
    `${waiting.length} process(es) are runnable and need a model turn; pass --model replay:FILE.jsonl to run them on a scripted model; nothing was run`;
  if (flagOption(parsed, "json")) {
    printJson(io, {
      db,
      ran: 0,
      recovered: recovery.recovered,
      outcomeUnknown: recovery.outcomeUnknown.map((a) => a.id),
      runnable: waiting,
      error: { code: "no_model", message },
    });
  } else {
    io.stdout(lines.join("\n") + "\n");
    io.stderr(`libos: ${message}\n`);
  }
  return EXIT_FAILED;
}

const RUN_NOTE =
  `Before running anything it recovers from a stopped runtime: actions left executing become
outcome_unknown (reported to their process, never re-run), processes left running become
runnable, sleepers whose time has come wake. Then each runnable process gets model turns from
--model replay:FILE.jsonl (the scripted model: one model_turn record per turn; a script that runs
out fails its process with replay_exhausted) or --model openai:MODEL (an OpenAI-compatible
endpoint: OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_API from --env-file FILE, the environment or
~/.config/libos/env — never a .env inside the workspace; OPENAI_MODEL alone also selects it);
--record LOG.jsonl appends each reply to a chained session log. Without a model, runnable
processes are reported and it exits 1.`;

/** Runs processes with a model until idle (or `steps` quanta) and reports where each stands. */
async function drive(
  parsed: ParsedArgs,
  io: CliIo,
  runtime: Runtime,
  model: ModelClient,
  steps: number | undefined,
): Promise<number> {
  // Trees a launcher (or another `libos run`) is running are left to it.
  using trees = unlockedTrees(runtime);
  using scheduler = runtime.scheduler(executorFor(runtime, model), {
    concurrency: 1,
    scope: trees.scope,
  });
  const recovery = scheduler.recover();
  const report = await scheduler.runUntilIdle(steps === undefined ? {} : { maxQuanta: steps });
  const processes = runtime.processes.list({ limit: 1000 }).map((p) => ({
    pid: p.pid,
    status: p.status,
    message: p.message,
  }));
  const failed = processes.filter((p) => p.status === "failed");
  const busy = [...trees.busy];
  const lines = [
    `Recovered ${recovery.recovered.length} process(es); ran ${report.quanta} model turn(s).`,
    ...(busy.length
      ? [`Left to the runner that holds them: the process tree(s) of ${busy.join(", ")}.`]
      : []),
    ...processes.map((p) =>
      `${p.pid}  ${p.status}${p.message ? `  ${field(p.message, 200)}` : ""}`
    ),
  ];
  say(
    io,
    parsed,
    runtime.location.path,
    { ran: report.quanta, processes, busy },
    lines.join("\n"),
  );
  return failed.length ? EXIT_FAILED : EXIT_OK;
}

/** The `spawn` command. */
export const spawnCommand: Command = {
  name: "spawn",
  summary: "create a top-level process",
  usage:
    `Usage: libos spawn --goal TEXT [--image ID] [--tool NAME]... [--cwd DIR] [--mode MODE] [--json]

Creates a runnable top-level process (default image ${DEFAULT_IMAGE}; tools default to the
image's) with the default budgets and the default grants of MODE, as far as the image requires
them: read-only (workspace read), plan (read plus its own objects),
workspace-write or edit (read and write; the default), full-access or full (read, write, delete).`,
  options: ["goal", "image", "tool", "cwd", "mode"],
  run: spawn,
};

/** The `ps` command. */
export const psCommand: Command = {
  name: "ps",
  summary: "list processes",
  usage: `Usage: libos ps [--status STATUS]... [--all] [--json]

Lists live processes; --all includes finished ones; --status filters (repeatable).`,
  options: ["status", "all"],
  run: ps,
};

/** The `signal` command. */
export const signalCommand: Command = {
  name: "signal",
  summary: "pause, resume, cancel, interrupt or terminate a process",
  usage: `Usage: libos signal PID SIGNAL [--json]

SIGNAL is pause, resume, cancel, interrupt or terminate. A finished process refuses every signal
and keeps its result. A running process gets the signal when its quantum ends (terminate also
aborts the quantum).`,
  options: [],
  positionals: ["PID", "SIGNAL"],
  run: signal,
};

/** The `cd` command. */
export const cdCommand: Command = {
  name: "cd",
  summary: "change a process's working directory (inside the workspace)",
  usage: `Usage: libos cd PID PATH [--json]

PATH is resolved from the process's current directory and must stay inside the workspace
(neither .. nor a symlink may lead out).`,
  options: [],
  positionals: ["PID", "PATH"],
  run: cd,
};

/** The `exit` command. */
export const exitCommand: Command = {
  name: "exit",
  summary: "end a process, with an optional message and result link",
  usage: `Usage: libos exit PID [--message TEXT] [--result REF] [--json]

Ends the process (and its live descendants). The result link is kept for its parent's wait.`,
  options: ["message", "result"],
  positionals: ["PID"],
  run: exit,
};

/** The `run` command. */
export const runCommand: Command = {
  name: "run",
  summary: "recover and run runnable processes until idle",
  usage:
    `Usage: libos run [--model replay:FILE.jsonl [--record LOG.jsonl]] [--json]\n\n${RUN_NOTE}`,
  options: ["model", "record", "env-file"],
  run: (parsed, io) => run(parsed, io),
};

/** The `step` command. */
export const stepCommand: Command = {
  name: "step",
  summary: "recover and run one quantum",
  usage:
    `Usage: libos step [--model replay:FILE.jsonl|openai:MODEL] [--env-file FILE] [--record LOG.jsonl] [--json]\n\n${RUN_NOTE}`,
  options: ["model", "record", "env-file"],
  run: (parsed, io) => run(parsed, io, 1),
};
