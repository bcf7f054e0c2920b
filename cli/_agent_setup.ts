/**
 * What `libos agent` runs with, settled before the database is written: the command line checked
 * (`invocation`), the model, and the run's governance — from the flags for a new run
 * (`launchSetup`), or the one recorded with the run, narrowed or widened by the flags, for
 * `--resume` (`resumeSetup`, which also takes the run's lock and positions a scripted model).
 * Every refusal happens here, so a refused command leaves nothing recorded.
 *
 * @module
 */
import { LibosError, UsageError, ValidationError } from "../runtime/base/errors.ts";
import { executorFor } from "../runtime/model/executor.ts";
import { type ModeName, parseMode } from "../runtime/authority/modes.ts";
import type { AgentProcess } from "../runtime/process/process.ts";
import type { PolicyRules } from "../runtime/policy/policy_rules.ts";
import { createRuntime, type Runtime, type RuntimeOptions } from "../runtime/runtime.ts";
import { MEMORY_DB, resolveWorkspace } from "../runtime/base/state_paths.ts";
import { fileRememberer, loadRememberedGrants, type WorkspaceGrants } from "./remembered_grants.ts";
import { type LauncherHuman, terminalHuman, yesHuman } from "./_agent_terminal.ts";
import { lastLaunch, policyNow, recordedText } from "./_governance_store.ts";
import { chooseModel, type ModelChoice } from "./_model_choice.ts";
import { type CliIo, flagOption, listOption, type ParsedArgs, stringOption } from "./_options.ts";
import { runLock } from "./_run_lock.ts";
import {
  checkRecordable,
  DEFAULT_MODE,
  type GovernanceFlags,
  type GovernancePlan,
  HumanChoice,
  launchGovernance,
  resumeGovernance,
  rulesOf,
} from "./_run_governance.ts";
import { loadedPolicyOf, shellPolicyOf, toolchainsOf } from "./_run_options.ts";
import { field } from "./_output.ts";
import { endpointKeys, hostGrantText, parseAllowHost, parseAllowHosts } from "./egress_hosts.ts";
import { loadUserConfig } from "./user_config.ts";

const PRESETS: Readonly<Record<string, ModeName>> = Object.freeze({
  "read-only": "read-only",
  edit: "workspace-write",
  full: "full-access",
});

/** The launcher's command line, checked before anything is opened. */
export interface Invocation {
  readonly goal: string | undefined;
  readonly resume: string | undefined;
  /** `--mode` / `--preset`, when given. */
  readonly mode: ModeName | undefined;
  /** `--human` / `--yes`, when given. */
  readonly human: HumanChoice | undefined;
  /** `--widen`: a resume may have more authority than recorded. */
  readonly widen: boolean;
  /** `--policy-from`: which text of a recorded policy file that is not as it was holds. */
  readonly policyFrom: "launch" | "current" | undefined;
}

/**
 * The command line of `libos agent`.
 * @throws {UsageError} for a combination that cannot work.
 */
export function invocation(parsed: ParsedArgs): Invocation {
  const goal = stringOption(parsed, "goal");
  const resume = stringOption(parsed, "resume");
  if ((goal === undefined) === (resume === undefined)) {
    throw new UsageError(
      `"libos agent" needs exactly one of --goal TEXT (a new run) or --resume PID (a stopped one); run "libos agent --help"`,
    );
  }
  if (goal !== undefined && goal.trim() === "") throw new UsageError("--goal must not be empty");
  if (resume !== undefined && stringOption(parsed, "image") !== undefined) {
    throw new UsageError("--image applies to a new run; a resumed process keeps its image");
  }
  if (resume !== undefined && stringOption(parsed, "db") === MEMORY_DB) {
    throw new UsageError("--resume needs the database the run was kept in; --db :memory: has none");
  }
  const policyFromText = stringOption(parsed, "policy-from");
  if (goal !== undefined && (flagOption(parsed, "widen") || policyFromText !== undefined)) {
    throw new UsageError(
      "--widen and --policy-from apply to --resume: a new run has no recorded governance to widen",
    );
  }
  if (
    policyFromText !== undefined && policyFromText !== "launch" && policyFromText !== "current"
  ) {
    throw new UsageError(
      `--policy-from must be launch (the text recorded at launch) or current (the file as it is now), not ${
        JSON.stringify(policyFromText)
      }`,
    );
  }
  const modeText = stringOption(parsed, "mode");
  const preset = stringOption(parsed, "preset");
  if (modeText !== undefined && preset !== undefined) {
    throw new UsageError("Give --mode or --preset, not both (a preset is a name for a mode)");
  }
  let mode: ModeName | undefined;
  if (preset !== undefined) {
    if (!Object.hasOwn(PRESETS, preset)) {
      throw new UsageError(
        `--preset must be read-only, edit or full, not ${JSON.stringify(preset)}`,
      );
    }
    mode = PRESETS[preset];
  } else if (modeText !== undefined) {
    try {
      mode = parseMode(modeText);
    } catch (error) {
      throw new UsageError(`--mode: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const humanText = stringOption(parsed, "human");
  if (humanText !== undefined && flagOption(parsed, "yes")) {
    throw new UsageError("Give --human or --yes, not both (--yes is the human who approves)");
  }
  let human: HumanChoice | undefined;
  if (flagOption(parsed, "yes")) human = "yes";
  else if (humanText !== undefined) {
    const known = HumanChoice.exclude(["yes"]).safeParse(humanText);
    if (!known.success) {
      throw new UsageError(
        `--human must be interactive, queue or none, not ${JSON.stringify(humanText)}`,
      );
    }
    human = known.data;
  }
  return {
    goal,
    resume,
    mode,
    human,
    widen: flagOption(parsed, "widen"),
    policyFrom: policyFromText,
  };
}

/** What a run runs with. */
export interface Setup {
  readonly chosen: ModelChoice;
  readonly plan: GovernancePlan;
  readonly rules: PolicyRules;
  /** Who answers parked requests here; null: nobody (`queue`, `none`). */
  readonly human: LauncherHuman | null;
  /**
   * The workspace's remembered grants ("allow always … for this project"), read before anything
   * is written; null with `--no-user-config`.
   */
  readonly remembered: WorkspaceGrants | null;
}

/** Where the database is, as `createRuntime` takes it. */
export type Place = Pick<RuntimeOptions, "workspace" | "db" | "env" | "cwd">;

/**
 * The process `root` and its descendants, parents before children (other runs in the database
 * are not read).
 */
export function treeProcesses(runtime: Runtime, root: string): AgentProcess[] {
  const out = [runtime.processes.get(root)];
  for (let i = 0; i < out.length && out.length < 10_000; i++) {
    let after: string | undefined;
    for (;;) {
      const page = runtime.processes.list({
        parent: out[i]!.pid,
        limit: 1000,
        ...(after === undefined ? {} : { afterPid: after }),
      });
      out.push(...page);
      if (page.length < 1000) break;
      after = page[page.length - 1]!.pid;
    }
  }
  return out;
}

/**
 * Positions a scripted model after the turns the run's processes already took.
 * @throws {UsageError} when the script holds fewer turns than that.
 */
function skipTaken(runtime: Runtime, chosen: ModelChoice, root: string): void {
  const executor = executorFor(runtime, chosen.model);
  const taken = treeProcesses(runtime, root).reduce(
    (n, p) => n + executor.turns(p.pid).length,
    0,
  );
  try {
    chosen.scripted?.skip(taken);
  } catch {
    throw new UsageError(
      `The script ${chosen.spec} has fewer turns than the ${taken} this run already took; give the script of this run`,
    );
  }
}

/** The human who answers here, for the governance's choice. */
function humanOf(io: CliIo, human: HumanChoice, note: (text: string) => void) {
  return human === "interactive" ? terminalHuman(io) : human === "yes" ? yesHuman(note) : null;
}

/**
 * The run's hosts (`host` or `host:port`): the user's `allowHosts` (unless `--no-user-config` or
 * `userConfig: false`), then each `--allow-host`.
 * @throws {UsageError} naming a value that is not a host, or too many.
 */
function hostsOf(
  parsed: ParsedArgs,
  io: CliIo,
  options: { readonly userConfig?: boolean } = {},
): string[] {
  const userConfig = options.userConfig ?? !flagOption(parsed, "no-user-config");
  const fromConfig = userConfig ? loadUserConfig(io.env).allowHosts : [];
  const given = parseAllowHosts(
    listOption(parsed, "allow-host").map((text) => ({ text, source: "--allow-host" })),
  );
  return parseAllowHosts(
    [...fromConfig, ...given].map((g) => ({ text: hostGrantText(g), source: "--allow-host" })),
  ).map(hostGrantText);
}

/** What the command line says about governance, with the policy files and toolchains it read. */
function flagsOf(
  parsed: ParsedArgs,
  call: Invocation,
  chosen: ModelChoice,
  read: {
    readonly policies: GovernanceFlags["policies"];
    readonly toolchains: string[];
    readonly hosts: string[];
  },
): GovernanceFlags {
  return {
    mode: call.mode,
    human: call.human,
    shellPolicy: shellPolicyOf(parsed),
    denies: listOption(parsed, "deny"),
    policies: read.policies,
    toolchains: read.toolchains,
    hosts: read.hosts,
    model: { spec: chosen.spec, endpoint: chosen.endpoint },
  };
}

/** The setup of a plan: refused if too large to record; its rules parsed; its human ready. */
function finish(
  io: CliIo,
  chosen: ModelChoice,
  plan: GovernancePlan,
  note: (text: string) => void,
  remembered: WorkspaceGrants | null,
): Setup {
  checkRecordable(plan);
  const rules = rulesOf(plan);
  return { chosen, plan, rules, human: humanOf(io, plan.human, note), remembered };
}

/**
 * The workspace's remembered grants (none with `--no-user-config`); says on stderr when the
 * grants file is ignored because the configuration directory lies inside the workspace.
 * @throws {GrantsFileError} `grants_file_invalid` for a file that cannot be read or parsed.
 */
function rememberedOf(parsed: ParsedArgs, io: CliIo): WorkspaceGrants | null {
  if (flagOption(parsed, "no-user-config")) return null;
  const workspace = resolveWorkspace(stringOption(parsed, "workspace") ?? ".", io.cwd);
  const remembered = loadRememberedGrants(io.env, workspace);
  if (remembered.ignored !== null) {
    io.stderr(
      `libos: ignoring the grants file ${
        field(remembered.ignored, 4096)
      }: it is inside the workspace, which the agent can write (set XDG_CONFIG_HOME outside it)\n`,
    );
  }
  return remembered;
}

/**
 * Wires the run's "allow always … for this project" answers to the user's grants file, and
 * gives the top-level process of a new run (`fresh`) the workspace's remembered grants — each
 * a capability issued by `user-config:<id>` (granted as actor `user-config`, audited), which
 * processes forked in the run inherit, and which the hardline, the mode's ceiling and the rules
 * still overrule. A resumed run keeps what it was given, less what was revoked from the file
 * since (revoked now, audited, with every copy derived from it).
 */
export function applyRemembered(
  runtime: Runtime,
  root: string,
  setup: Setup,
  io: CliIo,
  fresh: boolean,
): void {
  const remembered = setup.remembered;
  const workspace = runtime.location.workspace;
  if (remembered === null) return;
  // Wired even when the file is ignored: a project answer then says why it cannot be kept.
  runtime.human.rememberWith(fileRememberer(io.env, workspace));
  if (remembered.ignored !== null) return;
  const caps = runtime.authority.capabilities;
  if (!fresh) {
    const kept = new Set(remembered.grants.map((g) => `user-config:${g.id}`));
    for (const cap of caps.list(root)) {
      if (cap.revokedAt !== null || !cap.issuer.startsWith("user-config:")) continue;
      if (!kept.has(cap.issuer)) caps.revoke(cap.id, "user-config");
    }
    return;
  }
  if (remembered.grants.length === 0) return;
  const applied = runtime.store.step(() =>
    remembered.grants.map((g) => ({
      grant: g.id,
      capability: caps.grant({
        subject: root,
        resource: g.resource,
        rights: [...g.rights],
        effect: "allow",
        issuer: `user-config:${g.id}`,
      }, "user-config").id,
    }))
  );
  runtime.audit.append({
    actor: "user-config",
    pid: root,
    action: "grants.apply",
    resource: `process:${root}`,
    decision: "none",
    authority: "user-config",
    detail: { file: remembered.path, workspace, applied },
  });
}

/** Who grants a run's hosts: the operator, at launch (or at a resume that widened them). */
export const ALLOW_HOST_ISSUER = "operator:allow-host";

/**
 * Gives the run's top-level process a `net:` capability for each host of its governance
 * (`--allow-host`, `allowHosts`): connect on each exact endpoint `host:port` (a host without a
 * port: 80 and 443), issued by {@link ALLOW_HOST_ISSUER}, granted as actor `operator` (audited)
 * — inherited by the processes it forks, and still under the hardline, the run's denies, the
 * mode's ceiling (workspace-write asks for every request) and the rules. A resume grants only
 * what the process does not hold yet (a host `--widen` added). Never `net:*`: commands inside
 * the OS wall keep no network.
 */
export function applyHostGrants(runtime: Runtime, root: string, plan: GovernancePlan): void {
  const caps = runtime.authority.capabilities;
  const held = new Set(
    caps.list(root)
      .filter((c) =>
        c.revokedAt === null && c.issuer === ALLOW_HOST_ISSUER && c.resource.type === "net"
      )
      .map((c) => c.resource.type === "net" ? c.resource.key : ""),
  );
  const keys = plan.governance.hosts.flatMap((text) =>
    endpointKeys(parseAllowHost(text, "the run's recorded host"))
  ).filter((key) => !held.has(key));
  if (keys.length === 0) return;
  runtime.store.step(() => {
    for (const key of keys) {
      caps.grant({
        subject: root,
        resource: { type: "net", key, scope: "exact" },
        rights: ["connect"],
        effect: "allow",
        issuer: ALLOW_HOST_ISSUER,
      }, "operator");
    }
  });
}

/**
 * A new run's model and governance, from the flags.
 * @throws {UsageError} / {ValidationError} for what cannot work; nothing is opened.
 */
export function launchSetup(
  parsed: ParsedArgs,
  io: CliIo,
  call: Invocation,
  note: (text: string) => void,
): Setup {
  const chosen = chooseModel(parsed, io, "openai")!;
  const flags = flagsOf(parsed, call, chosen, {
    policies: loadedPolicyOf(parsed, io).texts,
    toolchains: toolchainsOf(parsed, io),
    hosts: hostsOf(parsed, io),
  });
  const terminal = io.terminal?.isTerminal() ?? false;
  const remembered = rememberedOf(parsed, io);
  return finish(
    io,
    chosen,
    launchGovernance(flags, { mode: DEFAULT_MODE, terminal }),
    note,
    remembered,
  );
}

/** `--model` as given, else the one the run was launched with. */
function resumedModel(parsed: ParsedArgs, io: CliIo, recorded: string | undefined): ModelChoice {
  if (stringOption(parsed, "model") !== undefined || recorded === undefined) {
    return chooseModel(parsed, io, "openai")!;
  }
  try {
    return chooseModel({ ...parsed, values: { ...parsed.values, model: recorded } }, io, "openai")!;
  } catch (error) {
    if (!(error instanceof LibosError) || error.code !== "session_log_invalid") throw error;
    throw new UsageError(
      `${error.message}; the run was launched with --model ${recorded}: name it again with --model so libos may read it`,
      { cause: error },
    );
  }
}

/**
 * A stopped run's model and governance: the governance recorded with it, narrowed by the flags
 * or — with `--widen` — widened. Takes the run's lock into `held` (refused with `run_busy` while
 * another launcher runs it) and positions a scripted model after the turns already taken.
 * @throws {NotFoundError} for an unknown process; {@link ValidationError} for a child;
 *   {@link UsageError} for a script too short or flags that do not apply; `GovernanceError`
 *   for a widening without `--widen` or a policy file that is not as it was.
 */
export async function resumeSetup(
  parsed: ParsedArgs,
  io: CliIo,
  call: Invocation,
  context: {
    readonly place: Place;
    readonly held: DisposableStack;
    readonly note: (t: string) => void;
  },
): Promise<Setup> {
  // Read only: nothing is written before every check has passed.
  await using peek = await createRuntime({ ...context.place, create: false, readOnly: true });
  const root = peek.processes.get(call.resume!);
  if (root.parent !== null) {
    throw new ValidationError(
      `Process ${root.pid} is a child of ${root.parent}; resume the top-level process of its tree (libos sessions lists them)`,
    );
  }
  context.held.use(runLock(peek, root.pid));
  const last = lastLaunch(peek, root.pid);
  const stored = last.governance;
  if (stored !== undefined && flagOption(parsed, "no-user-config")) {
    throw new UsageError(
      `--no-user-config applies to a new run: ${root.pid} keeps the policy files and toolchains its launch recorded`,
    );
  }
  const chosen = resumedModel(parsed, io, stored?.model.spec);
  // A scripted model goes on where the stopped run left it: after the turns already taken.
  if (chosen.scripted) skipTaken(peek, chosen, root.pid);
  const terminal = io.terminal?.isTerminal() ?? false;
  if (stored === undefined) {
    // Launched before libos recorded governance: what the flags say, as a launch would.
    const flags = flagsOf(parsed, call, chosen, {
      policies: loadedPolicyOf(parsed, io).texts,
      toolchains: toolchainsOf(parsed, io),
      // The launcher grants a resume only recorded and named hosts, never the config's.
      hosts: hostsOf(parsed, io, { userConfig: false }),
    });
    const mode = parseRecordedMode(last.mode);
    const plan = launchGovernance(flags, { mode, terminal });
    return finish(io, chosen, { ...plan, recorded: false }, context.note, rememberedOf(parsed, io));
  }
  const recordedPaths = new Set(stored.policies.map((p) => p.path));
  const flags = flagsOf(parsed, call, chosen, {
    // The user's policy file and toolchains were read at launch (and recorded) or not at all.
    policies: loadedPolicyOf(parsed, io, { userConfig: false, known: (p) => recordedPaths.has(p) })
      .texts,
    toolchains: toolchainsOf(parsed, io, { userConfig: false }),
    hosts: hostsOf(parsed, io, { userConfig: false }),
  });
  const given = new Set(flags.toolchains);
  readableHere(stored.toolchains.filter((dir) => !given.has(dir)));
  const plan = resumeGovernance(stored, flags, {
    pid: root.pid,
    now: policyNow,
    recordedText: (source) => recordedText(peek, source),
    terminal,
    widen: call.widen,
    policyFrom: call.policyFrom,
  });
  return finish(
    io,
    chosen,
    plan,
    context.note,
    rememberedOf({ ...parsed, values: { ...parsed.values, "no-user-config": false } }, io),
  );
}

/**
 * Refuses a recorded toolchain this invocation may not read: the bootstrap grants read only on
 * directories named on the command line or in `config.jsonc`.
 * @throws {UsageError} saying to name it again (the same directory is no widening).
 */
function readableHere(toolchains: readonly string[]): void {
  for (const dir of toolchains) {
    try {
      Deno.statSync(dir);
    } catch (error) {
      if (
        error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied
      ) {
        throw new UsageError(
          `The run's toolchain ${
            JSON.stringify(dir)
          } cannot be read by this invocation (libos may read only toolchains named on its command line or in config.jsonc); name it again with --toolchain ${dir}`,
          { cause: error },
        );
      }
      // Missing or otherwise wrong: the toolchain check says why when the runtime is built.
    }
  }
}

/** The mode an older launch record names (canonical then too), else the default. */
function parseRecordedMode(mode: string | undefined): ModeName {
  try {
    return mode === undefined ? DEFAULT_MODE : parseMode(mode);
  } catch {
    return DEFAULT_MODE;
  }
}
