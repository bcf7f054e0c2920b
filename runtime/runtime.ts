/**
 * `createRuntime(options)`: the one constructor of everything a runtime holds. There are no
 * module-level singletons, so two runtimes live side by side in one process (DESIGN §2).
 *
 * @module
 */
import { AuditLog } from "./audit/audit_log.ts";
import { type Clock, systemClock } from "./base/clock.ts";
import { type DatabaseLocation, locateDatabase, openDatabase } from "./store/database.ts";
import { LibosError, ValidationError } from "./base/errors.ts";
import { decisionEvent, EventLog } from "./audit/event_log.ts";
import { redactor } from "./base/redaction.ts";
import { ActionLedger } from "./process/action_ledger.ts";
import { Authority, type RunOptions } from "./authority/authority.ts";
import { parseRunDeny } from "./authority/decide.ts";
import { parseMode } from "./authority/modes.ts";
import { ClockPrimitive } from "./primitives/clock.ts";
import {
  type FileChange,
  filesystemActions,
  FilesystemPrimitive,
} from "./primitives/filesystem.ts";
import { shellActions, type ShellLimits, ShellPrimitive } from "./primitives/shell.ts";
import { hostShell, type ShellProvider } from "./providers/shell.ts";
import { netActions, type NetLimits, NetPrimitive } from "./primitives/net.ts";
import { hostNet, type NetProvider } from "./providers/net.ts";
import {
  mcpActions,
  type McpLauncher,
  type McpLimits,
  McpPrimitive,
  type McpServerEntry,
  walledLauncher,
} from "./primitives/mcp.ts";
import { SYSTEM_PATH } from "./base/system_path.ts";
import type { ShellPolicyLevel } from "./policy/shell_policy.ts";
import { HumanChannel, type HumanMode, type HumanPrompt } from "./human/human_channel.ts";
import { processNamespace } from "./memory/memory_object.ts";
import { type ObjectLimits, ObjectMemory } from "./memory/object_memory.ts";
import { builtinToolSpecs } from "../tools/mod.ts";
import { defineTool } from "./broker/tool.ts";
import { Checkpoints } from "./memory/checkpoints.ts";
import { ToolBroker } from "./broker/tool_broker.ts";
import { ImageRegistry } from "./broker/image_registry.ts";
import { HardlineLayer } from "./policy/policy_layers.ts";
import { PolicyRules } from "./policy/policy_rules.ts";
import { ShellParser } from "./policy/shell_script.ts";
import { builtinImages } from "../images/mod.ts";
import { WorkspaceLock } from "./base/workspace_lock.ts";
import { type IdSource, randomIds } from "./base/ids.ts";
import type { Budgets } from "./process/process.ts";
import { ProcessManager } from "./process/process_manager.ts";
import { type FilesystemProvider, hostFilesystem } from "./providers/filesystem.ts";
import { type ProcessDriver, Scheduler, type SchedulerOptions } from "./kernel/scheduler.ts";
import { configDirectory, type EnvReader, stateDirectory } from "./base/state_paths.ts";
import { dirname } from "node:path";
import type { RuntimeCore } from "./audit/runtime_core.ts";
import { LIBOS_VERSION } from "./base/version.ts";
import { checkToolchains } from "./providers/toolchains.ts";

/** How to build a runtime. Every dependency with a side effect can be injected. */
export interface RuntimeOptions extends RunOptions {
  /** The workspace directory (default: the current directory). */
  readonly workspace?: string;
  /** A database path or `:memory:` (default: the workspace's database in the state directory). */
  readonly db?: string;
  readonly env?: EnvReader;
  readonly cwd?: string;
  readonly clock?: Clock;
  readonly ids?: IdSource;
  /** The session id stamped on events (default: a fresh `ses_` id). */
  readonly session?: string;
  readonly busyTimeoutMs?: number;
  /** The host filesystem backend (default: the real one). */
  readonly filesystem?: FilesystemProvider;
  /** Budgets of top-level processes when a spawn does not say. */
  readonly defaultBudgets?: Budgets;
  /** Create the database when it does not exist (default true); false makes that a `not_found` error. */
  readonly create?: boolean;
  /** Open an existing database without writing anything (no session events, no migration). */
  readonly readOnly?: boolean;
  /**
   * How asks reach a human (DESIGN §4; default `none`: every ask is denied at once). `queue`
   * parks the asking process until `libos human …` decides; `interactive` needs `prompt`.
   */
  readonly human?: HumanMode;
  /** The prompt of the `interactive` human mode (e.g. {@link terminalPrompt}). */
  readonly prompt?: HumanPrompt;
  /** How long a human request stays answerable (default 24 hours); expiry is a rejection. */
  readonly humanTtlMs?: number;
  /** Bounds of the object memory. */
  readonly objectLimits?: Partial<ObjectLimits>;
  /** Policy rules (layer 3 of `decide()`; see `policy_files.ts` to load them from files). */
  readonly rules?: PolicyRules;
  /** The host shell backend (default: the real one, with bubblewrap when it works). */
  readonly shell?: ShellProvider;
  /** The run's shell policy level (default `allowlist_auto_else_ask`). */
  readonly shellPolicy?: ShellPolicyLevel;
  /**
   * Every shell command inside the OS wall with secret-bearing files covered and `.git` and
   * `.gitmodules` read-only, and none without the wall (default false; `libos agent --yes`).
   */
  readonly shieldShell?: boolean;
  /** Where bare program names are looked up (default: the fixed system directories). */
  readonly searchPath?: readonly string[];
  /**
   * Toolchain directories bound read-only into the OS wall and searched for programs first
   * (`libos agent --toolchain`; see `toolchains.ts` for what may not be one).
   */
  readonly toolchains?: readonly string[];
  /** More host paths of libos's own that no walled command may see (an `--env-file`). */
  readonly conceal?: readonly string[];
  /** Known secret values, removed from every shell output. */
  readonly secrets?: readonly string[];
  /** Told of every file a process writes or deletes, with its diff (a host's display). */
  readonly onFileChange?: (change: FileChange) => void;
  readonly shellLimits?: Partial<ShellLimits>;
  /** The host network backend (default: the real resolver and `node:http`/`node:https`). */
  readonly net?: NetProvider;
  readonly netLimits?: Partial<NetLimits>;
  /** The run's MCP servers (see `primitives/_mcp_config.ts` to load them from files). */
  readonly mcpServers?: readonly McpServerEntry[];
  /** Starts stdio MCP servers (default: inside the OS wall, see `walledLauncher`). */
  readonly mcpLauncher?: () => McpLauncher;
  readonly mcpLimits?: Partial<McpLimits>;
}

/** The runtime's primitives. */
export interface Primitives {
  readonly fs: FilesystemPrimitive;
  readonly shell: ShellPrimitive;
  readonly net: NetPrimitive;
  readonly mcp: McpPrimitive;
  readonly clock: ClockPrimitive;
}

/** A running libos instance. Close it with `await using` or {@link Runtime.close}. */
export interface Runtime extends RuntimeCore, AsyncDisposable {
  readonly location: DatabaseLocation;
  /** Decides what processes may do (`decide()`), and holds their capabilities. */
  readonly authority: Authority;
  /** The authority boundary: every effect goes through one of these. */
  readonly primitives: Primitives;
  /** Serialises filesystem primitives against shell runs on this workspace. */
  readonly lock: WorkspaceLock;
  /** Durable requests between processes and their human (DESIGN §4). */
  readonly human: HumanChannel;
  /** Typed objects in namespaces, behind capabilities. */
  readonly memory: ObjectMemory;
  /** Tool tables, the tool registry and invocation (visibility ≠ invocation ≠ authority). */
  readonly tools: ToolBroker;
  /** Agent images: built-in, and loaded from strict YAML. */
  readonly images: ImageRegistry;
  /** The policy rules in force (layer 3 of `decide()`). */
  readonly rules: PolicyRules;
  /** The shell parser behind hardline and shell decisions (load it before deciding scripts). */
  readonly shellParser: ShellParser;
  readonly processes: ProcessManager;
  readonly ledger: ActionLedger;
  /** Checkpoints of processes: create, list, diff, restore. */
  readonly checkpoints: Checkpoints;
  /** A scheduler that runs this runtime's processes with `driver`. */
  scheduler(
    driver: ProcessDriver,
    options?: Pick<SchedulerOptions, "concurrency" | "scope" | "admit">,
  ): Scheduler;
  /** Flushes, records the end of the session, and closes the store. Idempotent. */
  close(): Promise<void>;
}

/**
 * libos's own host places, which no command inside the OS wall may see (the wall is an allowlist,
 * so they exist inside only where the workspace contains them, and are covered there): the
 * state directory (databases, audit heads, locks), the database's directory, the configuration
 * directory (the model's API key, policy files) and whatever the caller adds (an env file).
 */
function ownPaths(location: DatabaseLocation, env: EnvReader, extra: readonly string[]): string[] {
  const own: string[] = [...extra];
  try {
    own.push(stateDirectory(env));
  } catch (error) {
    // No HOME and no XDG_STATE_HOME: there is no state directory to keep out.
    if (!(error instanceof ValidationError)) throw error;
  }
  const config = configDirectory(env);
  if (config !== undefined) own.push(config);
  for (const path of [location.headPath, location.lockPath]) {
    if (path) own.push(dirname(dirname(path)));
  }
  if (location.path.startsWith("/")) own.push(dirname(location.path));
  return own;
}

/** The user's home and `PATH` (for toolchain checks and hints only; never given to a command). */
function homeAndPath(env: EnvReader): { home?: string; userPath?: string[] } {
  const home = env.get("HOME");
  const path = env.get("PATH");
  return {
    ...(home === undefined || home === "" ? {} : { home }),
    ...(path === undefined ? {} : { userPath: path.split(":").filter((d) => d.startsWith("/")) }),
  };
}

/**
 * Builds a runtime: locates and opens (creating when missing) the database, and wires the audit
 * and event logs to it.
 * @throws {StoreError} when the database cannot be opened; nothing is modified.
 */
export function createRuntime(options: RuntimeOptions = {}): Promise<Runtime> {
  // Failures arrive as a rejected promise, never as a synchronous throw.
  try {
    return Promise.resolve(build(options));
  } catch (error) {
    return Promise.reject(error);
  }
}

const HUMAN_MODES: readonly string[] = Object.freeze(["interactive", "queue", "none"]);

function build(options: RuntimeOptions): Runtime {
  // Refuse a bad mode or run deny before anything is opened.
  if (options.mode !== undefined) parseMode(options.mode);
  if (options.human !== undefined && !HUMAN_MODES.includes(options.human)) {
    throw new ValidationError(
      `Unknown human mode ${JSON.stringify(options.human)}: use interactive, queue or none`,
    );
  }
  if (options.human === "interactive" && !options.prompt) {
    throw new ValidationError(
      "The interactive human mode needs a prompt (a terminal); use queue or none without one",
    );
  }
  for (const deny of options.denies ?? []) parseRunDeny(deny);
  const clock = options.clock ?? systemClock();
  const ids = options.ids ?? randomIds();
  const location = locateDatabase({
    ...(options.workspace === undefined ? {} : { workspace: options.workspace }),
    ...(options.db === undefined ? {} : { db: options.db }),
    allowMemory: true,
    createStateDirectory: !(options.readOnly ?? false),
    env: options.env ?? Deno.env,
    cwd: options.cwd ?? Deno.cwd(),
  });
  const readOnly = options.readOnly ?? false;
  const env = options.env ?? Deno.env;
  const own = ownPaths(location, env, options.conceal ?? []);
  // Refused before the database is opened: a toolchain that may not be one changes nothing.
  checkToolchains(options.filesystem ?? hostFilesystem(), options.toolchains ?? [], {
    workspace: location.workspace,
    ...homeAndPath(env),
    own,
  });
  const store = openDatabase(location, {
    create: !readOnly && (options.create ?? true),
    readOnly,
    ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
  });
  let audit: AuditLog | undefined;
  let events: EventLog | undefined;
  const session = options.session ?? ids.next("ses");
  try {
    // Every decision the audit log records is also a `decision` event, in the same step.
    // On a shared database every runtime appends to a chain segment of its own (several append
    // at once); the single-writer file store keeps its one chain.
    audit = new AuditLog(store, {
      clock,
      headPath: location.headPath,
      database: location.path,
      ...(location.engine === "postgres" ? { chain: `seg:${session}` } : {}),
      onDecision: (record) => events?.emit(decisionEvent(record)),
    });
    // Known secrets never reach a host through an event (a command line in a decision's resource).
    const secrets = options.secrets?.length ? redactor(options.secrets) : undefined;
    events = new EventLog(store, {
      clock,
      session,
      // Never longer than it was, so a value within its schema bound stays within it.
      ...(secrets === undefined ? {} : {
        redact: (text: string) => {
          const out = secrets.text(text);
          return out.length <= text.length ? out : `${out.slice(0, Math.max(0, text.length - 1))}…`;
        },
      }),
    });
    if (!readOnly) {
      events.emit({
        kind: "session.started",
        payload: { workspace: location.workspace, database: location.path, libos: LIBOS_VERSION },
      });
      if (!audit.anchoring && location.headPath !== null) {
        const why = audit.headError;
        events.emit({
          kind: "notice",
          payload: {
            level: "warn",
            code: why instanceof LibosError ? why.code : "audit_head_invalid",
            message: `The audit head file "${location.headPath}" is not being kept up to date (${
              why instanceof Error ? why.message : String(why)
            }); run "libos audit verify" to see why, and "libos init --reanchor" once you know`,
          },
        });
      }
    }
  } catch (error) {
    events?.close();
    audit?.[Symbol.dispose]();
    store.close();
    throw error;
  }
  const auditLog = audit;
  const eventLog = events;
  const core: RuntimeCore = { store, audit: auditLog, events: eventLog, clock, ids };
  const rules = options.rules ?? new PolicyRules([]);
  const shellParser = new ShellParser();
  const authority = new Authority(core, {
    hardline: new HardlineLayer(() => shellParser.loaded ? shellParser : null),
    rules,
    ...(options.mode === undefined ? {} : { mode: options.mode }),
    ...(options.denies === undefined ? {} : { denies: options.denies }),
    ...(options.wall === undefined ? {} : { wall: options.wall }),
  });
  const images = new ImageRegistry(core, authority, builtinImages());
  const processes = new ProcessManager({
    ...core,
    authority,
    images,
    filesystem: options.filesystem ?? hostFilesystem(),
    workspace: location.workspace,
    ...(options.defaultBudgets === undefined ? {} : { defaultBudgets: options.defaultBudgets }),
  });
  const ledger = new ActionLedger({ ...core, processes });
  const lock = new WorkspaceLock(readOnly ? null : location.lockPath);
  const human = new HumanChannel(core, {
    authority,
    processes,
    mode: options.human ?? "none",
    ...(options.prompt === undefined ? {} : { prompt: options.prompt }),
    ...(options.humanTtlMs === undefined ? {} : { ttlMs: options.humanTtlMs }),
  });
  const memory = new ObjectMemory(core, {
    authority,
    processes,
    ...(options.objectLimits === undefined ? {} : { limits: options.objectLimits }),
  });
  const shellProvider = options.shell ?? hostShell();
  const mode = options.mode === undefined ? undefined : parseMode(options.mode);
  const primitives: Primitives = {
    fs: new FilesystemPrimitive({
      core,
      authority,
      processes,
      ledger,
      provider: options.filesystem ?? hostFilesystem(),
      workspace: location.workspace,
      lock,
      human,
      ...(options.secrets === undefined ? {} : { secrets: options.secrets }),
      ...(options.onFileChange === undefined ? {} : { onChange: options.onFileChange }),
    }),
    shell: new ShellPrimitive({
      core,
      authority,
      processes,
      ledger,
      human,
      provider: shellProvider,
      filesystem: options.filesystem ?? hostFilesystem(),
      workspace: location.workspace,
      lock,
      rules,
      parser: shellParser,
      ...(options.shellPolicy === undefined ? {} : { level: options.shellPolicy }),
      ...(options.wall === undefined ? {} : { wall: options.wall }),
      ...(options.searchPath === undefined ? {} : { searchPath: options.searchPath }),
      ...(options.secrets === undefined ? {} : { secrets: options.secrets }),
      ...(options.shellLimits === undefined ? {} : { limits: options.shellLimits }),
      ...(options.shieldShell === undefined ? {} : { shield: options.shieldShell }),
      conceal: own,
      ...(options.toolchains === undefined ? {} : { toolchains: options.toolchains }),
      ...homeAndPath(env),
    }),
    net: new NetPrimitive({
      core,
      authority,
      processes,
      ledger,
      human,
      provider: options.net ?? hostNet(),
      ...(options.netLimits === undefined ? {} : { limits: options.netLimits }),
    }),
    mcp: new McpPrimitive({
      core,
      authority,
      processes,
      ledger,
      human,
      servers: options.mcpServers ?? [],
      net: { fetch: (pid, request, o) => primitives.net.fetch(pid, request, o) },
      launcher: options.mcpLauncher ?? (() =>
        walledLauncher({
          workspace: location.workspace,
          writable: mode !== "read-only" && mode !== "plan",
          wallAvailable: () => shellProvider.wallAvailable(),
          hidden: own.filter((p) => p.startsWith(`${location.workspace}/`)),
          filesystem: options.filesystem ?? hostFilesystem(),
          toolchains: primitives.shell.toolchains,
        })),
      resolveProgram: (token, cwd) =>
        shellProvider.resolveProgram(token, cwd, options.searchPath ?? SYSTEM_PATH),
      workspace: location.workspace,
      ...(options.secrets === undefined ? {} : { secrets: options.secrets }),
      ...(options.mcpLimits === undefined ? {} : { limits: options.mcpLimits }),
    }),
    clock: new ClockPrimitive(core),
  };
  const checkpoints = new Checkpoints({ core, processes, memory, authority });
  const tools = new ToolBroker(core, {
    checkpoints,
    rules,
    processes,
    memory,
    fs: primitives.fs,
    clock: primitives.clock,
    human,
    shell: primitives.shell,
    net: primitives.net,
    mcp: primitives.mcp,
    images,
    ...(options.secrets === undefined ? {} : { secrets: options.secrets }),
  });
  for (const spec of builtinToolSpecs()) tools.registerBuiltin(defineTool(spec));
  // A process acts under the narrower of the run's mode and its images' maxMode; exec replaces
  // its whole tool table (JIT tools included) and may narrow that ceiling.
  authority.setCeilings((pid) => processes.find(pid)?.ceiling ?? null);
  processes.onExec((p) => {
    authority.forgetCeiling(p.pid);
    tools.dropJit(p.pid);
    // ...and their registrations, so that no restore brings them back.
    memory.dropRecords(processNamespace(p.pid), "jit.registration");
  });
  processes.onFinished((p) => tools.dropJit(p.pid));
  // A finished process can use none of its approvals: the ones it left unused are revoked
  // (audited), so none is listed as live for it.
  processes.onFinished((p) => {
    for (const cap of authority.capabilities.list(p.pid)) {
      if (cap.oneShot && cap.usedAt === null && cap.revokedAt === null) {
        authority.capabilities.revoke(cap.id, "runtime");
      }
    }
  });
  // An approved action resumes through the operation it names, its stored arguments parsed
  // against that operation's schema (runtime/human/action_registry.ts).
  human.actions.register(
    ...filesystemActions(primitives.fs),
    ...shellActions(primitives.shell),
    ...netActions(primitives.net),
    ...mcpActions(primitives.mcp),
  );
  const schedulers = new Set<Scheduler>();
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    for (const scheduler of schedulers) scheduler[Symbol.dispose]();
    // Every process group a shell run left behind, and every MCP server, dies with the runtime.
    try {
      await primitives.mcp[Symbol.asyncDispose]().finally(() =>
        primitives.shell[Symbol.asyncDispose]()
      );
    } finally {
      try {
        if (!readOnly) eventLog.emit({ kind: "session.ended", payload: { reason: "closed" } });
        store.flush();
      } finally {
        lock[Symbol.dispose]();
        eventLog.close();
        auditLog[Symbol.dispose]();
        store.close();
      }
    }
  };
  return {
    ...core,
    location,
    authority,
    processes,
    primitives,
    lock,
    human,
    memory,
    tools,
    images,
    rules,
    shellParser,
    ledger,
    checkpoints,
    scheduler(driver, schedulerOptions = {}) {
      const scheduler = new Scheduler({
        processes,
        ledger,
        driver,
        clock,
        human,
        ...schedulerOptions,
      });
      schedulers.add(scheduler);
      return scheduler;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
