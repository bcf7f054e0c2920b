/**
 * `libos agent`: the coding-agent launcher. It spawns one top-level process for a goal (or takes
 * up a stopped one with `--resume PID`) and runs that process tree — and only it — on a model
 * until the process ends or waits on a human nobody here can answer.
 *
 * The runtime underneath always parks an action that needs a human (the `queue` human mode),
 * so what a human decides is durable: the launcher then answers the parked request itself — at
 * the terminal (`interactive`, the request rendered with every value escaped and the diff shown)
 * or automatically (`--yes`: each action once, never what a protected path guards) — or, with
 * `--human queue`, stops with exit 3 for `libos human approve` and a later `--resume`. A launcher killed at any point leaves a process
 * that `--resume` continues: a request it was showing is still pending and is shown again. A
 * resume runs under the governance recorded with the run (`_run_governance.ts`; settled, with
 * every refusal, in `_agent_setup.ts` before anything is written).
 *
 * Exit status: 0 the process exited, 1 it failed or was killed (or stopped elsewhere), 2 usage,
 * 3 it waits on a human nobody here answers (`--human queue`, or `none` on a run already parked),
 * or its model endpoint kept failing after every retry (the run is parked; `--resume` continues).
 *
 * @module
 */
import { resolve } from "node:path";
import { JitSandbox, JitValidator, lifecycleFor } from "../jit/mod.ts";
import type { JsonValue } from "../runtime/base/canonical_json.ts";
import { escapePreview } from "../runtime/base/escape_preview.ts";
import type { AuditEntry } from "../runtime/audit/audit_log.ts";
import { executorFor, PARKED_PREFIX } from "../runtime/model/executor.ts";
import type { HumanRequest } from "../runtime/human/human_request.ts";
import type { HumanDecision } from "../runtime/human/human_channel.ts";
import { LibosError, UsageError } from "../runtime/base/errors.ts";
import { filesChanged, renderFilesChanged } from "../runtime/model/files_changed.ts";
import { OPERATOR_ACTOR } from "../runtime/memory/object_memory.ts";
import { type AgentProcess, isFinal } from "../runtime/process/process.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import {
  applyHostGrants,
  applyRemembered,
  type Invocation,
  invocation,
  launchSetup,
  resumeSetup,
  type Setup,
  treeProcesses,
} from "./_agent_setup.ts";
import { type LauncherHuman, type Progress, progress } from "./_agent_terminal.ts";
import { keepPolicyText } from "./_governance_store.ts";
import type { ModelChoice } from "./_model_choice.ts";
import { runLock, treeOf } from "./_run_lock.ts";
import { mcpServersOf } from "./_mcp_setup.ts";
import { type CliIo, type Command, flagOption, type ParsedArgs, stringOption } from "./_options.ts";
import { EXIT_FAILED, EXIT_OK, field, printJson } from "./_output.ts";
import {
  describeChanges,
  governanceDetail,
  type GovernancePlan,
  withCopies,
} from "./_run_governance.ts";

export { type LauncherHuman, terminalHuman, yesHuman } from "./_agent_terminal.ts";

/** Exit status: the run waits on a human (`--human queue`) or on its model endpoint (parked). */
export const EXIT_PARKED = 3;
/** Exit status: Ctrl-C stopped the run (128 + SIGINT, as shells report it); it is resumable. */
export const EXIT_INTERRUPTED = 130;

const DEFAULT_IMAGE = "coding-agent:v0";
/** A launched process's wall time (the human channel's default request lifetime). */
const AGENT_WALL_TIME_MS = 24 * 60 * 60 * 1000;
/** How much of a result object the final report shows. */
const RESULT_CHARS = 8_000;

/** A request a process of the tree is parked on, when there is one still pending. */
function parkedRequest(runtime: Runtime, processes: readonly AgentProcess[]): HumanRequest | null {
  for (const p of processes) {
    if (p.status !== "waiting_human" || p.wait?.kind !== "human") continue;
    const request = runtime.human.get(p.wait.request);
    if (request.status === "pending") return request;
  }
  return null;
}

/** How often a request shown at the terminal is looked up, to see it decided elsewhere (ms). */
const ELSEWHERE_POLL_MS = 250;

/**
 * Applies a human's decision to a parked request. A request decided elsewhere first (`libos
 * human` in another terminal) withdraws the question at once and says so; an answer typed into
 * it meanwhile is said not to count. False when it was decided elsewhere.
 */
async function answer(
  runtime: Runtime,
  human: LauncherHuman,
  request: HumanRequest,
  note: (text: string) => void,
): Promise<boolean> {
  const withdrawn = new AbortController();
  const elsewhere = () => {
    const current = runtime.human.get(request.id);
    return current.status === "pending" ? null : current;
  };
  const watch = setInterval(() => {
    try {
      if (elsewhere()) withdrawn.abort(new Error("decided elsewhere"));
    } catch (error) {
      // A store that cannot be read is not a decision: the question stays; the error is said.
      withdrawn.abort(error);
    }
  }, ELSEWHERE_POLL_MS);
  let decision: HumanDecision;
  try {
    decision = await human.decide(request, runtime.human.alwaysOptions(request), {
      signal: withdrawn.signal,
      project: runtime.human.remembers,
    });
  } catch (error) {
    const decided = elsewhere();
    if (!decided) throw error;
    note(`libos: ${decidedElsewhere(decided)}; the question here is withdrawn`);
    return false;
  } finally {
    clearInterval(watch);
  }
  const by = human.name === "yes" ? "human:yes" : "human:terminal";
  const decided = elsewhere();
  if (decided) {
    note(`libos: ${decidedElsewhere(decided)} first; the answer typed here was not used`);
    return false;
  }
  if (decision.type === "approve") {
    try {
      runtime.human.approve(request.id, {
        by,
        ...(decision.always === undefined ? {} : { always: decision.always }),
        ...(decision.always === undefined || decision.remember === undefined
          ? {}
          : { remember: decision.remember }),
      });
    } catch (error) {
      // A project answer the grants file cannot keep approves nothing: the request stays
      // pending, and is shown again (the human may answer for this run only).
      if (decision.remember !== "project" || !(error instanceof LibosError)) throw error;
      note(
        `libos: "allow always" could not be remembered for this project (${error.code}: ${
          field(error.message, 500)
        }); nothing was approved — answer again`,
      );
      return false;
    }
  } else if (decision.type === "answer" && request.kind === "question") {
    runtime.human.answer(request.id, { by, text: decision.text });
  } else {
    runtime.human.reject(request.id, {
      by,
      ...(decision.type === "reject" && decision.reason ? { reason: decision.reason } : {}),
    });
  }
  return true;
}

/** "request r-1 was approved by human:cli" (escaped). */
function decidedElsewhere(request: HumanRequest): string {
  return `request ${request.id} was ${request.status}${
    request.response ? ` by ${field(request.response.by, 64)}` : ""
  } in another place`;
}

/** What the audit log holds for the run's processes. */
function auditSummary(runtime: Runtime, pids: readonly string[]) {
  let records = 0;
  const decisions = { allow: 0, ask: 0, deny: 0 };
  let toolCalls = 0;
  let humanDecisions = 0;
  for (const pid of pids) {
    let after = 0;
    for (;;) {
      const page = runtime.audit.query({ pid, afterSeq: after, limit: 1000 });
      for (const r of page) {
        records++;
        if (r.decision === "allow" || r.decision === "ask" || r.decision === "deny") {
          decisions[r.decision]++;
        }
        if (r.action === "tool.invoke") toolCalls++;
        if (
          r.action === "human.approve" || r.action === "human.reject" ||
          r.action === "human.answer"
        ) humanDecisions++;
      }
      if (page.length < 1000) break;
      after = page[page.length - 1]!.seq;
    }
  }
  // The head file advances at commit: a run shorter than one group-commit window has none yet.
  runtime.store.flush();
  const verification = runtime.audit.verify({ head: runtime.audit.hasHead });
  return {
    records,
    allowed: decisions.allow,
    asked: decisions.ask,
    denied: decisions.deny,
    tool_calls: toolCalls,
    human_decisions: humanDecisions,
    chain_verified: verification.ok,
  };
}

/** The result object a finished process names, as text. */
function resultOf(runtime: Runtime, p: AgentProcess): { ref: string; content: string } | null {
  if (!p.result) return null;
  try {
    const payload: JsonValue = runtime.memory.read(OPERATOR_ACTOR, p.result).payload;
    return {
      ref: p.result,
      content: typeof payload === "string" ? payload : JSON.stringify(payload, null, 2),
    };
  } catch {
    return { ref: p.result, content: "" };
  }
}

/** The command's exit status for where the root process stands. */
function exitStatus(
  root: AgentProcess,
  parked: HumanRequest | null,
  model: AgentProcess | undefined,
): number {
  if (root.status === "exited") return EXIT_OK;
  if (parked || model) return EXIT_PARKED;
  return EXIT_FAILED;
}

/** How a run ended, for the report. */
interface RunEnd {
  readonly root: AgentProcess;
  /** The request a process of the run waits on, when nobody here answered it. */
  readonly parked: HumanRequest | null;
  /** Ctrl-C stopped the run. */
  readonly interrupted: boolean;
}

/**
 * Spawns the run's process (`--goal`) or takes up the stopped one `resumeSetup` locked
 * (`--resume`), and records the launch with its governance — only once every check that can
 * refuse has passed. A new run's lock is taken into `held`.
 */
function launch(
  runtime: Runtime,
  parsed: ParsedArgs,
  call: Invocation,
  setup: Setup,
  held: DisposableStack,
): { readonly root: AgentProcess; readonly plan: GovernancePlan } {
  // The text of each policy file, kept first: a launch record names only texts that are kept.
  const plan = withCopies(setup.plan, (policy) => keepPolicyText(runtime, policy));
  const g = plan.governance;
  const record = (root: AgentProcess, action: string, extra: Record<string, JsonValue>) =>
    runtime.audit.append({
      actor: "operator",
      pid: root.pid,
      action,
      resource: `process:${root.pid}`,
      decision: "none",
      authority: "operator",
      detail: {
        image: root.image,
        mode: g.mode,
        model: setup.chosen.spec,
        human: plan.human,
        ...extra,
        ...governanceDetail(plan),
      },
    });
  if (call.goal !== undefined) {
    // A day of wall time: as long as a request stays answerable, so a run parked on a human
    // overnight can still be resumed (the runtime's default is an hour).
    const root = runtime.processes.spawn({
      goal: call.goal,
      image: stringOption(parsed, "image") ?? DEFAULT_IMAGE,
      budgets: { maxWallTimeMs: AGENT_WALL_TIME_MS },
    });
    held.use(runLock(runtime, root.pid));
    record(root, "agent.start", { workspace: runtime.location.workspace });
    return { root, plan };
  }
  const root = runtime.processes.get(call.resume!);
  record(root, "agent.resume", { from: root.status });
  // A process its model endpoint parked goes on now (one an operator paused stays paused).
  for (const p of treeProcesses(runtime, root.pid)) {
    if (modelParked(p)) runtime.processes.signal(p.pid, "resume");
  }
  return { root: runtime.processes.get(root.pid), plan };
}

/** Whether the executor parked `p` because its model endpoint kept failing. */
function modelParked(p: AgentProcess): boolean {
  return p.status === "paused" && (p.message ?? "").startsWith(PARKED_PREFIX);
}

/**
 * Runs the tree of `pid` until its process ends, waits on a human nobody here answers, or
 * Ctrl-C stops it; answers parked requests with `human` between runs of the scheduler.
 */
async function runTree(
  runtime: Runtime,
  io: CliIo,
  pid: string,
  chosen: ModelChoice,
  human: LauncherHuman | null,
  shown: Progress,
  json: boolean,
): Promise<RunEnd> {
  const seenMessages = new Set<string>();
  const showMessages = () => {
    for (const p of treeProcesses(runtime, pid)) {
      for (const m of runtime.human.list({ pid: p.pid, statuses: ["delivered"], limit: 1000 })) {
        if (m.kind !== "output" || seenMessages.has(m.id)) continue;
        seenMessages.add(m.id);
        if (!json) shown.note(`[${m.pid}] ${field(m.text ?? "", 4000)}`);
      }
    }
  };
  showMessages();
  const executor = executorFor(runtime, chosen.model, {
    observer: (event) => {
      showMessages();
      shown.step(event);
    },
  });
  // A scripted model answers in script order, so its processes take turns one at a time; a real
  // model lets a process and the children it forked think at once (and a JIT tool blocked in a
  // process.wait syscall does not hold the only slot its child needs).
  using scheduler = runtime.scheduler(executor, {
    concurrency: chosen.scripted ? 1 : 4,
    scope: treeOf(runtime, pid),
  });
  // Ctrl-C: the turns in flight finish and the run stops there, resumable; a second Ctrl-C, or
  // one at a prompt (whose request is already on disk), stops at once.
  const drain = new AbortController();
  let prompting = false;
  using _interrupts = io.onInterrupt?.(() => {
    const now = prompting || drain.signal.aborted;
    shown.note(
      now
        ? `libos agent: stopped; continue with "libos agent --resume ${pid}"`
        : "libos agent: stopping after the current turn (Ctrl-C again stops at once; the run stays resumable)",
    );
    drain.abort();
    if (!now) return "handled";
    // Stopping at once: the status line goes, and the stop is on record like any other.
    shown.stop();
    try {
      recordStop(runtime, pid, {
        status: runtime.processes.get(pid).status,
        exit: EXIT_INTERRUPTED,
        at_once: true,
      });
    } catch {
      // The record is not worth failing the stop over; the run's state is what resume reads.
    }
    try {
      runtime.store.flush();
    } catch {
      // Whatever was not committed is recovered on resume.
    }
    return "exit";
  }) ?? { [Symbol.dispose]() {} };
  for (;;) {
    await scheduler.runUntilIdle({ drain: drain.signal });
    showMessages();
    const root = runtime.processes.get(pid);
    const interrupted = drain.signal.aborted;
    const parked = isFinal(root.status) || interrupted
      ? null
      : parkedRequest(runtime, treeProcesses(runtime, pid));
    if (!parked || !human) return { root, parked, interrupted };
    // Durable before a human sees it: a launcher killed at its prompt leaves the process parked
    // on this very request, and another terminal can decide it.
    runtime.store.flush();
    prompting = true;
    try {
      await shown.hold(() => answer(runtime, human, parked, (text) => shown.note(text)));
    } finally {
      prompting = false;
    }
    // The decision (this one, or one made first in another terminal) made a process runnable.
    scheduler.refresh();
  }
}

/** The run's `agent.stop` record: how the launcher left it. */
function recordStop(runtime: Runtime, pid: string, detail: AuditEntry["detail"]): void {
  runtime.audit.append({
    actor: "operator",
    pid,
    action: "agent.stop",
    resource: `process:${pid}`,
    decision: "none",
    authority: "operator",
    detail,
  });
}

/** Prints the final report (or the `--json` document); returns the exit status. */
function report(
  io: CliIo,
  json: boolean,
  runtime: Runtime,
  end: RunEnd,
): number {
  const { root, parked, interrupted } = end;
  const pid = root.pid;
  const pids = treeProcesses(runtime, pid).map((p) => p.pid);
  const summary = auditSummary(runtime, pids);
  const changed = filesChanged(runtime.audit, pids);
  const result = resultOf(runtime, root);
  // A process of the run its model endpoint parked: resumable once the endpoint answers.
  const model = isFinal(root.status)
    ? undefined
    : treeProcesses(runtime, pid).find((p) => modelParked(p));
  const status = interrupted && !isFinal(root.status)
    ? EXIT_INTERRUPTED
    : exitStatus(root, parked, model);
  recordStop(runtime, pid, {
    status: root.status,
    exit: status,
    ...(parked ? { waiting: parked.id } : model ? { waiting: "model", parked: model.pid } : {}),
  });
  const dbPath = runtime.location.path;
  if (json) {
    printJson(io, {
      pid,
      status: root.status,
      message: root.message,
      result,
      waiting: parked
        ? { request: parked.id, kind: parked.kind }
        : model
        ? { request: null, kind: "model", pid: model.pid, reason: model.message }
        : null,
      interrupted,
      db: dbPath,
      audit_summary: summary,
      files_changed: changed,
    });
    return status;
  }
  const lines = [
    "",
    `Agent ${pid}: ${root.status}${root.message ? ` — ${field(root.message, 500)}` : ""}`,
  ];
  if (result) {
    lines.push(
      `Result ${result.ref}:`,
      escapePreview(result.content, { maxChars: RESULT_CHARS, multiline: true }).split("\n")
        .map((l) => `  ${l}`).join("\n"),
    );
  }
  if (parked) {
    lines.push(
      `Waiting on a human: ${parked.kind} ${parked.id}. Decide with "libos human show ${parked.id}" and "libos human approve|reject${
        parked.kind === "question" ? "|answer" : ""
      } ${parked.id}", then continue with "libos agent --resume ${pid}".`,
    );
  } else if (model) {
    lines.push(
      `Parked: ${
        model.pid === pid ? "the agent" : `process ${model.pid}`
      } could not reach its model (${
        field((model.message ?? "").slice(PARKED_PREFIX.length), 500)
      }). Check the endpoint (OPENAI_BASE_URL, the network, the key), then continue with "libos agent --resume ${pid}".`,
    );
  } else if (!isFinal(root.status)) {
    lines.push(
      `It stopped${
        interrupted ? " (Ctrl-C)" : ""
      } while ${root.status}; continue with "libos agent --resume ${pid}".`,
    );
  }
  // What the run changed, every run: writes and deletes from the audit log, and the commands.
  lines.push(
    ...renderFilesChanged(changed).map((l, i) => i === 0 ? l[0]!.toUpperCase() + l.slice(1) : l),
  );
  lines.push(
    `Audit: ${summary.records} records for this run (${summary.tool_calls} tool calls, ${summary.denied} denied, ${summary.asked} asked, ${summary.human_decisions} human decisions); chain ${
      summary.chain_verified ? "verified" : "NOT verified (run libos audit verify)"
    }.`,
    `Database: ${field(dbPath, 4096)}`,
  );
  io.stdout(lines.join("\n") + "\n");
  return status;
}

async function agent(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const call = invocation(parsed);
  const json = flagOption(parsed, "json");
  const quiet = flagOption(parsed, "quiet");
  const verbose = flagOption(parsed, "verbose");
  if (quiet && verbose) {
    throw new UsageError("--quiet and --verbose contradict each other; give one of them");
  }
  using shown = progress(io, {
    quiet: json,
    verbosity: quiet ? "quiet" : verbose ? "verbose" : "normal",
  });
  const note = (text: string) => shown.note(text);
  const workspace = stringOption(parsed, "workspace");
  const db = stringOption(parsed, "db");
  const envFile = stringOption(parsed, "env-file");
  const place = {
    ...(workspace === undefined ? {} : { workspace }),
    ...(db === undefined ? {} : { db }),
    env: io.env,
    cwd: io.cwd,
  };
  // Released when the command ends, however it ends: a resumed run's lock is taken while its
  // governance is checked.
  using held = new DisposableStack();
  // Everything that can be refused is refused before the database is written.
  const setup = call.resume === undefined
    ? launchSetup(parsed, io, call, note)
    : await resumeSetup(parsed, io, call, { place, held, note });
  const { chosen } = setup;
  const g = setup.plan.governance;
  // MCP servers (docs/mcp.md): read from the flags and the user's mcp.json, launch and resume alike.
  const mcpServers = mcpServersOf(parsed, io, resolve(io.cwd, workspace ?? "."));
  await using runtime = await createRuntime({
    ...place,
    onFileChange: (change) => shown.change(change),
    mode: g.mode,
    ...(g.denies.length === 0 ? {} : { denies: g.denies }),
    rules: setup.rules,
    shellPolicy: g.shellPolicy,
    // Asks park durably; this launcher (or a later one, or `libos human`) answers them.
    human: setup.plan.human === "none" ? "none" : "queue",
    // Nobody reads what --yes approves: the wall keeps secrets and .git out of every command's
    // reach — and once a run had it, a resume keeps it.
    shieldShell: g.shield,
    ...(g.toolchains.length === 0 ? {} : { toolchains: g.toolchains }),
    ...(envFile === undefined ? {} : { conceal: [resolve(io.cwd, envFile)] }),
    create: call.resume === undefined,
    secrets: chosen.secrets,
    ...(mcpServers.length === 0 ? {} : { mcpServers }),
  });
  // JIT tools (propose, validate, register, call): the toolmaker image's, and any a process
  // registered before a restart. Sandboxes start only when a tool is validated or called.
  await using sandbox = new JitSandbox();
  await using validator = new JitValidator();
  lifecycleFor(runtime, { sandbox, validator });
  const { root, plan } = launch(runtime, parsed, call, setup, held);
  // "Allow always … for this project": kept in the user's grants file, applied to a new run.
  applyRemembered(runtime, root.pid, setup, io, call.resume === undefined);
  // --allow-host / allowHosts: a net: capability per host, granted by the operator (audited).
  applyHostGrants(runtime, root.pid, plan);
  // Each MCP server started (decided as a command, inside the wall) and its tools listed.
  for (const problem of await runtime.tools.loadMcp(root.pid)) {
    io.stderr(`libos agent: MCP: ${field(problem.message, 2000)}\n`);
  }
  // What a resume changed is shown (and was audited with agent.resume), --json or not.
  for (const line of describeChanges(plan, root.pid)) {
    io.stderr(`libos agent: ${field(line, 8192)}\n`);
  }
  if (!json) {
    const counted = (n: number, what: string) =>
      n === 0 ? "" : `, ${n} ${what}${n === 1 ? "" : "s"}`;
    io.stderr(
      `libos agent: ${call.goal !== undefined ? "started" : "resuming"} ${root.pid} (image ${
        field(root.image)
      }, mode ${g.mode}, shell ${g.shellPolicy}${counted(g.denies.length, "deny rule")}${
        counted(g.policies.length, "policy file")
      }${g.hosts.length === 0 ? "" : `, hosts ${g.hosts.join(" ")}`}, model ${
        field(chosen.spec)
      }, human ${plan.human}${
        runtime.primitives.shell.toolchains.length === 0
          ? ""
          : `, toolchains ${
            runtime.primitives.shell.toolchains.map((t) => field(t, 4096)).join(" ")
          }`
      }); database ${field(runtime.location.path, 4096)}\n`,
    );
  }
  const end = await runTree(runtime, io, root.pid, chosen, setup.human, shown, json);
  shown.stop();
  return report(io, json, runtime, end);
}

/** The `agent` command. */
export const agentCommand: Command = {
  name: "agent",
  summary: "run the coding agent on a goal (or --resume a stopped run) until it ends",
  usage: `Usage: libos agent (--goal TEXT | --resume PID) [--workspace DIR] [--image ID]
         [--mode read-only|plan|workspace-write|full-access | --preset read-only|edit|full]
         [--shell-policy LEVEL] [--policy FILE]... [--trust-workspace-policy] [--deny RULE]...
         [--model replay:FILE.jsonl | openai[:MODEL]] [--env-file FILE] [--record LOG.jsonl]
         [--toolchain DIR]... [--allow-host HOST[:PORT]]... [--db FILE]
         [--mcp-config FILE]... [--trust-workspace-mcp]
         [--human interactive|queue|none | --yes] [--json]
         [--widen] [--policy-from launch|current]            (these two with --resume)

Spawns a top-level process for the goal (image ${DEFAULT_IMAGE} unless --image) in the
workspace (default: the current directory; the host's cwd is never changed) and runs it, and
the children it makes, until it ends. --resume PID takes up a stopped run (a killed launcher, a
process waiting on a human).

A resumed run keeps its governance: the mode, human, --yes shield, shell policy, --deny rules,
policy files (path and sha-256; the text is kept), toolchains and model are recorded with the
run and re-applied — no need to repeat them. Flags may narrow it (a stricter --mode or
--shell-policy, more --deny rules, a --policy file of deny rules only) or change who answers
(--human). A widening — a looser mode or level, --yes, a --toolchain, a --policy file with allow
or ask rules — is refused (governance_widened) unless --widen is given; it is then shown and
audited, and holds for the run from then on. A recorded policy file that changed, vanished or
cannot be read here refuses the resume (policy_changed, policy_unverified) until
--policy-from launch (the text recorded at launch) or --policy-from current (the file as it is
now; a vanished file's rules are dropped) says which holds. Another --model is shown and
audited. A run launched before libos recorded governance resumes with the flags given (said).

The mode (default workspace-write; presets read-only, edit, full) is the run's ceiling and the
process's default grants; --deny RULE adds run denies; --policy files and the shell policy
(default allowlist_auto_else_ask) decide shell commands.

The model: openai (OPENAI_MODEL, OPENAI_API_KEY and OPENAI_BASE_URL from --env-file, the
environment or ~/.config/libos/env — never a .env inside the workspace) or openai:MODEL, the
default; replay:FILE.jsonl runs a scripted model offline. --record appends each reply to a
session log.

Shell commands run inside the OS wall, which shows them the system directories, /etc (with
credential files covered), the workspace and a private /tmp and home — nothing else of the
host. --toolchain DIR (and "toolchains" in ~/.config/libos/config.jsonc) adds a directory of
programs (pyenv, nvm, rustup, /opt/...) read-only; its bin/ is searched first. A whole home and
libos's own configuration and state directories cannot be added.

The human (default: interactive when standard input is a terminal, else none): interactive
shows each request in the terminal — escaped, with the diff for edits — and reads y, n [REASON]
or an "allow always" choice; queue stops with exit 3, to be decided with "libos human approve"
and continued with --resume; none refuses whatever needs a human; --yes approves each action
once (never what a protected path guards, a standing permission or an answer).

What the run does is shown as it happens (on standard error; everything an agent or its model
wrote is escaped): the model's text, one line per tool call with its key argument, each
outcome (a refusal with its reason, a command's exit code and the tail of its output), the diff
of every file written (approved or not) and each turn's tokens (and cost when the endpoint
reports it), under a live status line on a terminal. -q/--quiet shows only failures and what
needs a person; -v/--verbose shows every block uncut. It ends with the final report: status,
result, the files changed, an audit summary. --json prints one document:
{pid, status, message, result, waiting, interrupted, db, audit_summary, files_changed}.

--allow-host HOST[:PORT] (and "allowHosts" in config.jsonc) lets the run reach that host: the
launcher's network permission and a net: capability of the process (a host alone: ports 80 and
443). The mode still decides: workspace-write asks for each request; full-access runs it.
Commands inside the OS wall still have no network. On --resume another host is a widening.

--mcp-config FILE (and ~/.config/libos/mcp.json; the workspace's .mcp.json only with
--trust-workspace-mcp) names MCP servers in the common {"mcpServers": {...}} shape: each stdio
server starts inside the OS wall, its tools appear as mcp__SERVER__TOOL, and each call is
decided (it asks unless a rule allows it), ledgered and audited. Give them again on --resume.
See docs/mcp.md.

Ctrl-C lets the turns in flight finish and stops there (exit 130, resumable); a second Ctrl-C,
or one at a prompt, stops at once.

A model endpoint that times out or answers 429 or 5xx is retried (honouring Retry-After), then
tried again on later turns; when it still fails the run parks (exit 3) and --resume continues it.

Exit status: 0 the process exited, 1 it failed or was killed, 2 usage, 3 it waits on a human or
on its model endpoint (parked), 130 stopped by Ctrl-C.`,
  options: [
    "goal",
    "resume",
    "image",
    "mode",
    "preset",
    "shell-policy",
    "policy",
    "no-user-config",
    "trust-workspace-policy",
    "deny",
    "model",
    "env-file",
    "record",
    "human",
    "yes",
    "toolchain",
    "allow-host",
    "mcp-config",
    "trust-workspace-mcp",
    "widen",
    "policy-from",
    "quiet",
    "verbose",
  ],
  run: agent,
};
