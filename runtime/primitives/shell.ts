/**
 * The shell primitive: `run` — one argv, no shell expansion — the only way a process starts a
 * host program (DESIGN §2, §5).
 *
 * A run, in order:
 * 1. the argv, timeout, output cap and stdin are checked; the working directory is the
 *    process's cwd (or `cwd` from it), contained in the workspace with symlinks resolved;
 * 2. `decideShell()` decides every command the argv will run, through wrappers and `sh -c`
 *    bodies, under the run's shell policy level, mode, rules and the process's capabilities; the
 *    decision's context says whether the OS wall is on. A deny is audited and thrown;
 * 3. the program is resolved to an absolute path: a bare name on a PATH of fixed system
 *    directories (never a relative entry, never the workspace), a name with a `/` from the
 *    working directory; exactly that path runs;
 * 4. an `ask` needs a human's approval of exactly this action — bound to the resolved executable
 *    (and where it leads), the argv, the working directory, a hash of the environment, stdin and
 *    whether the wall is on — so an approval of `git status` does not run `git push`, and a
 *    different directory or a different program first on PATH asks again. Without one it goes to
 *    the human channel: interactive approval retries the call, queue mode parks the process
 *    (the loop is `approval_gate.ts`);
 * 5. under the workspace lock (exclusive while the run is prepared and started: no filesystem
 *    primitive runs meanwhile; released while the command runs), with the intent committed to
 *    the action ledger, the provider runs it: an explicit environment (no
 *    API key, no `DENO_*`, no `GIT_*` from anyone but libos, nothing from `.env`), git hardened
 *    (`_git_hardening.ts`), limits, a timeout that kills the whole process group, capped output;
 *    inside the OS wall when it works here.
 *
 * **Known windows** (each tested as a control where it can be shown):
 * - without the wall, a `setsid` grandchild leaves the process group, so neither the timeout nor
 *   the watchdog kills it (the call itself still ends: output is read for 1 s after the kill);
 *   with the wall, the pid namespace ends with the run;
 * - without the wall, commands can write anywhere the runtime's user can (the policy sees the
 *   argv, not what a workspace script does), reach the network and host daemons' sockets, and
 *   read the runtime's own `/proc/<pid>/environ` (API keys the runtime was started with);
 * - a background child that keeps stdout open does not keep the call open: reading stops 1 s
 *   after the command exits (`outputLeftOpen`, with a warning), and the child keeps running,
 *   without anywhere to write, until it ends or the runtime does;
 * - git hardening is computed before the run: a repository a script creates, configures or
 *   checks out during the run is not neutralised, nor one outside the workspace reached through a
 *   symlinked directory; `core.worktree` is left as set. A scan that cannot cover everything (an
 *   unreadable configuration, more than 64 repositories, over 20,000 directories, out of time)
 *   refuses the run without the wall and warns inside it;
 * - an approval binds the program's and the argument files' contents, not files a program reads
 *   by itself (`make` and its Makefile);
 * - inside the wall, network is all or nothing (`net:*`), without the network primitive's address
 *   checks: a granted command can reach private addresses.
 *
 * @module
 */
import { SYSTEM_PATH } from "../base/system_path.ts";
import { wallFailure } from "../providers/wall.ts";
import { join, relative, resolve } from "node:path";
import type { ActionLedger } from "../process/action_ledger.ts";
import { type Authority, explained } from "../authority/authority.ts";
import { shellExplanation } from "../authority/explain.ts";
import { digestOf, type JsonValue, sha256Hex } from "../base/canonical_json.ts";
import type { Capability } from "../authority/capability.ts";
import {
  CapabilityDeniedError,
  IllegalTransitionError,
  LibosError,
  ValidationError,
} from "../base/errors.ts";
import { z } from "zod";
import { type ActionOperation, ActionRegistry, defineAction } from "../human/action_registry.ts";
import type { HumanChannel } from "../human/human_channel.ts";
import { type Redactor, redactor } from "../base/redaction.ts";
import { SecretScanner } from "../base/secret_scan.ts";
import {
  actionApproval,
  type ApprovalDetails,
  type PendingAction,
} from "../human/human_request.ts";
import { isFinal } from "../process/process.ts";
import { type GitIdentity, ShellWall, type WallSetting } from "./_shell_wall.ts";
import { ApprovalGate, type Attempt } from "./approval_gate.ts";
import type { ModeName } from "../authority/modes.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { FilesystemProvider } from "../providers/filesystem.ts";
import type { ResolvedProgram, ShellProvider, ShellRunResult } from "../providers/shell.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import type { PolicyRules } from "../policy/policy_rules.ts";
import { programName } from "../policy/shell_argv.ts";
import { ProgramTable } from "../policy/shell_programs.ts";
import {
  decideShell,
  READ_ONLY,
  type ShellCapabilityAnswer,
  type ShellDecision,
  type ShellPolicyLevel,
  SHOWS_HISTORY,
} from "../policy/shell_policy.ts";
import type { ShellParser } from "../policy/shell_script.ts";
import type { WorkspaceLock } from "../base/workspace_lock.ts";
import { containedDirectory, insideWorkspace } from "../providers/workspace_path.ts";

export { SYSTEM_PATH };
export { SHIELD_SCAN_BUDGET, type ShieldMounts, shieldMounts } from "./_shield.ts";
export { DEFAULT_GIT_IDENTITY, type GitIdentity, type WallSetting } from "./_shell_wall.ts";

/** Bounds enforced inside the primitive. */
export interface ShellLimits {
  /** Default and largest timeout of a run, milliseconds. */
  readonly timeoutMs: number;
  readonly timeoutMsMax: number;
  /** Default and largest bytes kept of stdout and of stderr each. */
  readonly outputBytes: number;
  readonly outputBytesMax: number;
  /** Largest stdin. */
  readonly stdinBytesMax: number;
  /** Largest number of arguments. */
  readonly argsMax: number;
}

/** The limits when nothing else is configured. */
export const DEFAULT_SHELL_LIMITS: ShellLimits = Object.freeze({
  timeoutMs: 120_000,
  timeoutMsMax: 3_600_000,
  outputBytes: 256 * 1024,
  outputBytesMax: 8 * 1024 * 1024,
  stdinBytesMax: 8 * 1024 * 1024,
  argsMax: 4096,
});

/** One run's arguments, as a process gives them. */
export interface ShellRunArgs {
  readonly argv: readonly string[];
  /** The working directory, from the process's cwd (default: the process's cwd). */
  readonly cwd?: string;
  readonly timeoutMs?: number;
  readonly maxOutputBytes?: number;
  readonly stdin?: string;
}

/** What a run did. */
export interface ShellRunOutput extends ShellRunResult {
  readonly argv: readonly string[];
  /** The absolute path that ran. */
  readonly executable: string;
  /** The working directory, workspace-relative. */
  readonly cwd: string;
  /** Whether it ran inside the OS wall. */
  readonly wall: boolean;
  /** Allowed only because the level is `always_allow`. */
  readonly highRisk: boolean;
  /**
   * Present when it ran confined — a read-only command allowed without asking: the workspace
   * read-only, secret-bearing files masked.
   */
  readonly confined?: true;
  /** Things the caller should know (a partial repository scan). */
  readonly warnings: readonly string[];
}

/** What the primitive needs. */
export interface ShellPrimitiveOptions {
  readonly core: RuntimeCore;
  readonly authority: Authority;
  readonly processes: ProcessManager;
  readonly ledger: ActionLedger;
  readonly human: HumanChannel;
  readonly provider: ShellProvider;
  /** For the working directory's containment and the repository scan. */
  readonly filesystem: FilesystemProvider;
  readonly workspace: string;
  readonly lock: WorkspaceLock;
  readonly rules: PolicyRules;
  readonly parser: ShellParser;
  /** The run's shell policy level (default `allowlist_auto_else_ask`). */
  readonly level?: ShellPolicyLevel;
  /** Default `"auto"`. */
  readonly wall?: WallSetting;
  /** Where bare names are looked up (default {@link SYSTEM_PATH}); absolute, outside the workspace. */
  readonly searchPath?: readonly string[];
  /** Values removed from every output (known secrets), replaced with `[redacted]`. */
  readonly secrets?: readonly string[];
  /**
   * Toolchain directories the operator adds (`--toolchain`): each is bound read-only into the
   * wall, and its `bin` (or, without one, itself) is searched for programs before the system
   * directories. Absolute, existing, outside the workspace; checked by {@link checkToolchains}.
   */
  readonly toolchains?: readonly string[];
  /**
   * libos's own host paths (its state and configuration directories, the database's directory,
   * an env file): never inside the wall, which is an allowlist; when the workspace contains one
   * it is covered there too.
   */
  readonly conceal?: readonly string[];
  /**
   * The user's own `PATH` — never given to a command; only to say, when a program resolves to
   * another file than the user's shell would run (or to none), which toolchain to add.
   */
  readonly userPath?: readonly string[];
  /** The user's home: never a toolchain. */
  readonly home?: string;
  readonly limits?: Partial<ShellLimits>;
  /** The commit identity git uses where a repository sets none (default {@link DEFAULT_GIT_IDENTITY}). */
  readonly gitIdentity?: GitIdentity;
  /**
   * Every run inside the OS wall with secret-bearing files covered and protected paths read-only
   * (`_shield.ts`), and no run without the wall: what `libos agent --yes` runs under, where no
   * person reads the commands it approves.
   */
  readonly shield?: boolean;
}

/** What to do about a denied run, by the layer that denied it. */
function denyAdvice(reason: string): string {
  if (reason.startsWith("hardline:")) return "libos never runs it, in any mode or level";
  if (reason.startsWith("run:")) return "a --deny of this run forbids it";
  if (reason.startsWith("mode:")) {
    return "the mode forbids shell commands (read-only and plan allow them only inside the OS wall)";
  }
  if (reason.startsWith("shell-policy:")) return "the shell policy level denies every command";
  return "ask a human with request_permission if it is needed";
}

/** The largest workspace file hashed into an approval digest (larger: size and mtime). */
const CONTENT_HASH_MAX = 16 * 1024 * 1024;
/** How many files (the program, then arguments) an approval digest binds. */
const CONTENT_FILES_MAX = 64;

/** The shell primitive of one runtime. */
export class ShellPrimitive implements AsyncDisposable {
  readonly #core: RuntimeCore;
  readonly #authority: Authority;
  readonly #processes: ProcessManager;
  readonly #ledger: ActionLedger;
  readonly #gate: ApprovalGate;
  readonly #provider: ShellProvider;
  readonly #fs: FilesystemProvider;
  readonly #workspace: string;
  readonly #lock: WorkspaceLock;
  readonly #rules: PolicyRules;
  readonly #parser: ShellParser;
  /** The programs-that-run-programs table, built on the first command (about 15 ms). */
  #table: ProgramTable | undefined;
  get #programs(): ProgramTable {
    return this.#table ??= new ProgramTable();
  }
  readonly #redactor: Redactor;
  readonly #scanner = new SecretScanner();
  readonly level: ShellPolicyLevel;
  readonly limits: ShellLimits;
  /** The OS wall and the environment a run gets. */
  readonly #wall: ShellWall;

  /**
   * Binds the primitive to a runtime.
   * @throws {ValidationError} for a search path that is relative or inside the workspace.
   */
  constructor(options: ShellPrimitiveOptions) {
    this.#core = options.core;
    this.#authority = options.authority;
    this.#processes = options.processes;
    this.#ledger = options.ledger;
    this.#gate = new ApprovalGate({ authority: options.authority, human: options.human });
    this.#provider = options.provider;
    this.#fs = options.filesystem;
    this.#workspace = options.workspace;
    this.#lock = options.lock;
    this.#rules = options.rules;
    this.#parser = options.parser;
    this.level = options.level ?? "allowlist_auto_else_ask";
    this.limits = { ...DEFAULT_SHELL_LIMITS, ...options.limits };
    this.#wall = new ShellWall(options);
    this.#redactor = redactor(options.secrets ?? []);
  }

  /** The toolchain directories bound into the wall (real paths), for the run's first line. */
  get toolchains(): readonly string[] {
    return this.#wall.toolchains;
  }

  /**
   * Whether runs go inside the OS wall: probed on first use; when the wall is wanted but does not
   * work here, a notice says so once (or, when it is required, every run is refused).
   * @throws {LibosError} `wall_unavailable` when the wall is required and does not work.
   */
  wall(): Promise<boolean> {
    return this.#wall.wall();
  }

  // ---------------------------------------------------------------- checks

  #validate(args: ShellRunArgs): Required<Omit<ShellRunArgs, "cwd" | "stdin">> & {
    cwd: string;
    stdin: string | null;
  } {
    const argv = args?.argv;
    if (!Array.isArray(argv) || argv.length === 0) {
      throw new ValidationError(
        'argv must be a non-empty array of strings, the program first (e.g. ["git", "status"]); no shell parses it',
      );
    }
    if (argv.length > this.limits.argsMax) {
      throw new ValidationError(
        `argv has ${argv.length} arguments; the limit is ${this.limits.argsMax}`,
      );
    }
    for (const [i, token] of argv.entries()) {
      if (typeof token !== "string") {
        throw new ValidationError(`argv[${i}] must be a string, got ${typeof token}`);
      }
      if (token.includes("\0")) {
        throw new ValidationError(`argv[${i}] contains a NUL byte, which no program can receive`);
      }
    }
    if (argv[0] === "") throw new ValidationError("argv[0] (the program) must not be empty");
    const integer = (name: string, value: unknown, fallback: number, max: number) => {
      const v = value ?? fallback;
      if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > max) {
        throw new ValidationError(`${name} must be an integer from 1 to ${max}, got ${String(v)}`);
      }
      return v;
    };
    const stdin = args.stdin ?? null;
    if (stdin !== null) {
      if (typeof stdin !== "string") throw new ValidationError("stdin must be text");
      if (new TextEncoder().encode(stdin).length > this.limits.stdinBytesMax) {
        throw new ValidationError(`stdin is over ${this.limits.stdinBytesMax} bytes`);
      }
    }
    const cwd = args.cwd ?? ".";
    if (typeof cwd !== "string") throw new ValidationError("cwd must be a path");
    return {
      argv: [...argv],
      cwd,
      stdin,
      timeoutMs: integer(
        "timeoutMs",
        args.timeoutMs,
        this.limits.timeoutMs,
        this.limits.timeoutMsMax,
      ),
      maxOutputBytes: integer(
        "maxOutputBytes",
        args.maxOutputBytes,
        this.limits.outputBytes,
        this.limits.outputBytesMax,
      ),
    };
  }

  /** The process's working directory for this run, workspace-relative and canonical. */
  #cwd(pid: string, path: string): string {
    const p = this.#processes.get(pid);
    if (isFinal(p.status)) {
      throw new IllegalTransitionError(
        "illegal_transition",
        `Process ${pid} is ${p.status} and can run no command`,
      );
    }
    return containedDirectory(this.#fs, this.#workspace, p.cwd, path);
  }

  /**
   * Decides the argv for `pid`; one-shot capabilities that allowed a command are collected.
   * `withheld`: why read-only commands may not run confined this time (they ask instead).
   */
  #decide(
    pid: string,
    argv: readonly string[],
    wall: boolean,
    used: Capability[],
    withheld: string | undefined,
  ): ShellDecision {
    const context = this.#authority.context;
    return this.#authority.capabilities.checked(() =>
      decideShell({
        argv,
        level: this.level,
        mode: this.#modeOf(pid),
        wall,
        ...(withheld === undefined ? {} : { readOnlyWithheld: withheld }),
        denies: context.denies,
        rules: this.#rules,
        scripts: this.#parser.loaded ? this.#parser : null,
        programs: this.#programs,
        pid,
        capabilities: (command) => {
          const match = this.#authority.capabilities.match(
            pid,
            { type: "shell", argv: command },
            "execute",
            undefined,
          );
          if (!match) return undefined;
          if (match.effect === "allow" && match.capability.oneShot) used.push(match.capability);
          const answer: ShellCapabilityAnswer = {
            effect: match.effect,
            reason: `cap:${match.capability.id}`,
            exact: match.capability.resource.type === "shell" &&
              match.capability.resource.scope === "exact",
          };
          return answer;
        },
      })
    );
  }

  /** The mode the process acts under (the run's, narrowed by its ceiling). */
  #modeOf(pid: string): ModeName {
    return this.#authority.modeOf(pid);
  }

  #record(
    pid: string,
    argv: readonly string[],
    decision: "allow" | "ask" | "deny",
    authority: string,
    extra: { inputDigest?: string; detail?: Record<string, string | number | boolean | null> } = {},
    decided?: ShellDecision,
  ): void {
    const recorded = this.#authority.explanation(authority);
    this.#core.audit.append({
      actor: pid,
      pid,
      action: "shell.run",
      resource: `shell:${argv.join(" ")}`.slice(0, 4096),
      decision,
      authority,
      ...extra,
      // Which nested command decided, when the decision's own reason is what is recorded.
      ...explained(
        decided?.reason === authority ? shellExplanation(argv, decided, recorded) : recorded,
        extra.detail,
      ),
    });
  }

  /** Whether a decision's commands may start git (directly, or through code that might). */
  #mayRunGit(decision: ShellDecision): boolean {
    return decision.commands.some((c) =>
      c.kind === "workspace_code" || c.kind === "inline_code" || c.kind === "opaque" ||
      programName(c.argv[0] ?? "") === "git"
    );
  }

  /**
   * What the workspace files a run names contain: the program when it lives in the workspace
   * (`./tool.sh`) and every argument naming a regular file there (`python3 build.py`), as
   * workspace-relative path → sha256 (a file over {@link CONTENT_HASH_MAX} bytes by its size
   * and modification time). Part of the approval digest: a script rewritten after its approval
   * asks again.
   */
  #contents(
    program: ResolvedProgram,
    argv: readonly string[],
    cwdAbsolute: string,
  ): Record<string, string> {
    const out: Record<string, string> = {};
    const candidates = [program.real, ...argv.slice(1).map((a) => resolve(cwdAbsolute, a))];
    for (const candidate of candidates.slice(0, CONTENT_FILES_MAX)) {
      let real: string;
      try {
        real = this.#fs.realPath(candidate);
        if (!insideWorkspace(this.#workspace, real) || !this.#fs.stat(real).isFile) continue;
      } catch {
        continue;
      }
      const key = relative(this.#workspace, real);
      if (Object.hasOwn(out, key)) continue;
      try {
        using handle = this.#fs.open(real);
        const facts = handle.facts();
        out[key] = facts.size > CONTENT_HASH_MAX
          ? `size:${facts.size}:mtime:${facts.mtime}`
          : `sha256:${sha256Hex(handle.read(CONTENT_HASH_MAX))}`;
      } catch {
        out[key] = "unreadable";
      }
    }
    return out;
  }

  #redact(text: string): string {
    return this.#redactor.text(text);
  }

  /**
   * A command's output as the caller may see it: known secret values and every secret the
   * content rules know (a key block, a token in an innocently named file that `cat` printed)
   * withheld — the command already ran, so the output can no longer ask a human.
   */
  #withheld(text: string, warnings: string[], stream: string): string {
    const { text: clean, rules } = this.#scanner.redact(this.#redact(text));
    if (rules.length > 0) {
      warnings.push(
        `the command's ${stream} held what looks like a secret (${
          rules.join(", ")
        }); it was withheld as [redacted: …]. Read a secret-bearing file with the file tools, which ask a human first`,
      );
    }
    return clean;
  }

  /** The approval request a human sees for a run that asked. */
  #details(
    argv: readonly string[],
    program: ResolvedProgram,
    cwd: string,
    envHash: string,
    stdin: string | null,
    decision: ShellDecision,
    digest: string,
    wall: boolean,
    mode: ModeName,
    withheld: string | undefined,
  ): Omit<ApprovalDetails, "action"> {
    const stdinBytes = stdin === null ? null : new TextEncoder().encode(stdin);
    return actionApproval({
      primitive: "shell",
      operation: "shell.run",
      resource: `shell:${argv.join(" ")}`.slice(0, 4096),
      right: "execute",
      reason: decision.reason,
      grantScope: `this exact command, once (bound to its digest)${
        wall ? ", inside the OS wall" : ", WITHOUT the OS wall"
      }`,
      bytes: stdinBytes === null ? null : stdinBytes.length,
      sha256: stdinBytes === null ? null : `sha256:${sha256Hex(stdinBytes)}`,
      preview: stdin === null ? null : stdin.slice(0, 2000),
      executable: program.real === program.executable
        ? program.executable
        : `${program.executable} -> ${program.real}`,
      argv: [...argv],
      cwd: cwd === "." ? this.#workspace : join(this.#workspace, cwd),
      envHash,
      digest,
      ceiling: decision.reason.startsWith("mode:") || decision.reason.startsWith("run:")
        ? decision.reason
        : null,
      offers: this.#offers(argv, decision, mode, wall, withheld),
    });
  }

  /**
   * The "allow always" scopes that would really let this argv run next time: this exact argv,
   * and its first two words (`git status …`) — never a whole program — each kept only when the
   * decision with that capability added would be allow.
   */
  #offers(
    argv: readonly string[],
    decision: ShellDecision,
    mode: ModeName,
    wall: boolean,
    withheld: string | undefined,
  ): ApprovalDetails["offers"] {
    if (decision.decision !== "ask") return [];
    const fits = argv.length <= 256 && argv.every((t) => t.length >= 1 && t.length <= 4096);
    if (!fits) return [];
    const candidates: { scope: "exact" | "prefix"; argv: string[] }[] = [
      { scope: "exact", argv: [...argv] },
    ];
    if (argv.length > 2 && !argv[1]!.startsWith("-")) {
      candidates.push({ scope: "prefix", argv: argv.slice(0, 2) });
    }
    return candidates.filter((c) => {
      const trial = decideShell({
        argv,
        level: this.level,
        mode,
        wall,
        denies: this.#authority.context.denies,
        rules: this.#rules,
        scripts: this.#parser.loaded ? this.#parser : null,
        programs: this.#programs,
        // A capability the human grants is what lets it run then, unconfined: the trial must
        // not count the read-only allowance, which was withheld for this run.
        readOnlyWithheld: withheld ?? "the trial of a capability",
        capabilities: (command) => {
          const covers = c.scope === "exact"
            ? command.length === c.argv.length && c.argv.every((t, i) => t === command[i])
            : c.argv.length <= command.length && c.argv.every((t, i) => t === command[i]);
          return covers
            ? { effect: "allow", reason: "offer", exact: c.scope === "exact" }
            : undefined;
        },
      });
      return trial.decision === "allow";
    }).map((c) => ({
      scope: c.scope,
      resource: { type: "shell" as const, argv: c.argv, scope: c.scope },
      rights: ["execute"],
    }));
  }

  // ---------------------------------------------------------------- the operation

  /**
   * Runs one argv (see the module documentation).
   * @throws {ValidationError} for a malformed argv, timeout, output cap or stdin.
   * @throws {CapabilityDeniedError} when the decision is deny (audited).
   * @throws {HumanPendingError} / {@link HumanDecisionError} when it asks and the human mode is
   *   queue / none (or the human rejected it).
   * @throws {NotFoundError} when the program does not exist.
   * @throws {OutsideWorkspaceError} when the working directory leaves the workspace.
   * @throws {LibosError} `wall_unavailable` when the wall is required and does not work.
   * @throws the signal's reason when `signal` aborts before the command starts; aborted while it
   *   runs, the command's process group is killed and the result says so.
   */
  async run(
    pid: string,
    args: ShellRunArgs,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<ShellRunOutput> {
    const signal = options.signal;
    signal?.throwIfAborted();
    const input = this.#validate(args);
    const callArgs: Record<string, JsonValue> = {
      argv: input.argv,
      cwd: input.cwd,
      timeoutMs: input.timeoutMs,
      maxOutputBytes: input.maxOutputBytes,
      ...(input.stdin === null ? {} : { stdin: input.stdin }),
    };
    await this.#parser.load();
    const wall = await this.wall();
    const argv = input.argv;
    const quoted = JSON.stringify(argv.join(" ").slice(0, 200));
    // Why a read-only command may not run confined (set once its shield could not be made):
    // decided again, it asks like any other command.
    let withheld: string | undefined;
    return await this.#gate.pass(pid, {
      operation: "shell.run",
      args: callArgs,
      // This command (the digest binds the executable, argv, cwd and environment too); one a
      // capability cannot name (an empty or oversized word) is granted as any command, which
      // its digest still narrows to this one.
      grant: () =>
        argv.length <= 256 && argv.every((word) => word.length >= 1 && word.length <= 4096)
          ? { type: "shell", argv: [...argv], scope: "exact" }
          : { type: "shell", argv: [], scope: "any" },
      exhausted: (_, n) =>
        new ValidationError(
          `${quoted} still needs approval after ${
            n - 1
          } approvals; what it would run keeps changing — try again`,
        ),
      attempt: async (attempt): Promise<Attempt<ShellRunOutput>> => {
        const cwd = this.#cwd(pid, input.cwd);
        const cwdAbsolute = cwd === "." ? this.#workspace : join(this.#workspace, cwd);
        const used: Capability[] = [];
        const decision = this.#decide(pid, argv, wall, used, withheld);
        const confined = decision.confined;
        if (decision.decision === "deny") {
          this.#record(pid, argv, "deny", decision.reason, {}, decision);
          throw new CapabilityDeniedError(
            "capability_denied",
            `Cannot run ${JSON.stringify(argv.join(" ").slice(0, 200))}: ${
              decision.commands.length > 1 ? "a command it runs is" : "it is"
            } denied (${decision.reason}); ${denyAdvice(decision.reason)}`,
            { reason: decision.reason },
          );
        }
        // One record per decision (audit_log.ts): an allowed run that fails before or while it
        // runs (no such program, the shield, a spawn failure) keeps its allow, with what failed;
        // an ask that fails before it reaches the human is recorded as the ask it was.
        let recorded = false;
        let authority = decision.reason;
        let approvedNow = false;
        try {
          const program = this.#wall.resolve(argv[0]!, cwdAbsolute);
          if (wall) this.#wall.checkVisible(program);
          const home = this.#wall.home(pid);
          const base = this.#wall.baseEnv(home);
          const envHash = this.#wall.envHash(base);
          const digestNow = () =>
            digestOf({
              primitive: "shell.run",
              executable: program.executable,
              real: program.real,
              argv,
              cwd,
              envHash,
              stdin: input.stdin === null ? null : sha256Hex(input.stdin),
              wall,
              contents: this.#contents(program, argv, cwdAbsolute),
            });
          const digest = digestNow();
          if (decision.decision === "ask") {
            const approved = this.#gate.approval(pid, { type: "shell", argv }, "execute", digest);
            if (!approved) {
              this.#record(pid, argv, "ask", decision.reason, { inputDigest: digest }, decision);
              recorded = true;
              const details = this.#details(
                argv,
                program,
                cwd,
                envHash,
                input.stdin,
                decision,
                digest,
                wall,
                this.#modeOf(pid),
                withheld,
              );
              return { type: "ask", ask: { details, subject: quoted } };
            }
            used.push(approved);
            authority = `cap:${approved.id}`;
            approvedNow = true;
          }
          const started = await this.#lock.exclusive(async () => {
            // What was decided and approved is what runs: the files it names, hashed again now
            // that no primitive can change them, still match (a script rewritten meanwhile is
            // decided again, and asks again).
            if (digestNow() !== digest) return { again: "changed_before_start" } as const;
            // Shielded: decided before anything is used up, so a refused run costs no approval.
            // A confined run whose shield cannot be made is decided again without the read-only
            // allowance (it asks); any other shield that cannot be made refuses the run, recorded
            // as refused (like the wall).
            let shield: ReturnType<ShellWall["shielded"]>;
            if (confined) {
              const made = this.#wall.confinement();
              if ("incomplete" in made) {
                withheld = `the shield that masks secret-bearing files cannot be made (${
                  made.incomplete.slice(0, 300)
                })`;
                return { again: "shield_incomplete" } as const;
              }
              // git can show what a masked secret file held, from the repository's history.
              const history = decision.commands.find((c) =>
                c.decision === "allow" && c.reason.startsWith(READ_ONLY) &&
                SHOWS_HISTORY.includes(c.reason.slice(READ_ONLY.length))
              );
              if (history && made.mounts.masked.length > 0) {
                withheld = `${
                  history.reason.slice(READ_ONLY.length)
                } can show from the repository's history what the ${made.mounts.masked.length} secret-bearing file(s) the shield masks held`;
                return { again: "shows_history" } as const;
              }
              shield = made.mounts;
            } else {
              try {
                shield = this.#wall.shielded(wall);
              } catch (error) {
                if (error instanceof LibosError) {
                  this.#record(pid, argv, "deny", error.code, { inputDigest: digest });
                  recorded = true;
                }
                throw error;
              }
            }
            // Use up every one-shot capability behind this run before it starts (compare-and-set).
            this.#gate.spend(used);
            const warnings: string[] = [];
            const hint = this.#wall.suggestion(argv[0]!, cwdAbsolute, program);
            if (hint) warnings.push(`${argv[0]} ran ${program.executable}; ${hint}`);
            const gitEnv = await this.#wall.gitEnv(cwdAbsolute, base, this.#mayRunGit(decision), {
              wall,
              timeoutMs: input.timeoutMs,
              warnings,
            });
            const network = wall &&
              this.#authority.decide(pid, { resource: { type: "net", key: "*" }, right: "connect" })
                  .effect === "allow";
            const { id } = this.#ledger.begin(pid, {
              kind: "shell.run",
              request: { argv, cwd, executable: program.executable, digest },
            });
            // Started here, under the lock (the process exists once run() returns its promise);
            // waited for after the lock is released: a long command must not stall every
            // filesystem primitive of every process. Against a command that changes the workspace
            // meanwhile, the filesystem primitive's own checks hold (identity after opening, the
            // parent still where it was), as they do against what a command leaves running.
            signal?.throwIfAborted();
            const running = this.#provider.run({
              executable: program.executable,
              args: argv.slice(1),
              cwd: cwdAbsolute,
              env: { ...base, ...gitEnv },
              timeoutMs: input.timeoutMs,
              maxOutputBytes: input.maxOutputBytes,
              ...(input.stdin === null ? {} : { stdin: input.stdin }),
              wall: wall
                ? {
                  workspace: this.#workspace,
                  // Confined: nothing a read-only command does can change the workspace.
                  writable: !confined && !["read-only", "plan"].includes(this.#modeOf(pid)),
                  home,
                  ...this.#wall.mounts(shield),
                  network,
                }
                : null,
            }, signal);
            running.catch(() => {/* awaited below, once the lock is released */});
            return { id, warnings, running };
          });
          if ("again" in started) {
            // This decision's record: allowed, not used (decided again below).
            this.#record(pid, argv, "allow", authority, {
              inputDigest: digest,
              detail: { failed: started.again, ...(confined ? { confined: true } : {}) },
            });
            recorded = true;
            // Not confined after all: decided again at once, without the read-only allowance.
            if (started.again !== "changed_before_start") return { type: "again" };
            if (attempt >= 3) {
              throw new ValidationError(
                `${quoted} changed while it was being started, ${attempt} times; what it would run keeps changing — try again`,
              );
            }
            return { type: "again" };
          }
          const { id, warnings } = started;
          let result: ShellRunResult;
          try {
            result = await started.running;
          } catch (error) {
            this.#ledger.finish(id, {
              ok: false,
              error: {
                code: error instanceof LibosError ? error.code : "spawn_failed",
                message: error instanceof Error ? error.message : String(error),
              },
            });
            throw error;
          }
          const failed = wall ? wallFailure(result.exitCode, result.stderr) : null;
          if (failed !== null) {
            // The wall could not be built: the command never started. Refused, not its result.
            const message = `Cannot run ${
              JSON.stringify(argv.join(" ").slice(0, 200))
            }: the OS wall could not be set up (${
              this.#redact(failed)
            }), so the command did not start; check the toolchain directories and bubblewrap, or report it`;
            this.#ledger.finish(id, { ok: false, error: { code: "wall_incomplete", message } });
            this.#record(pid, argv, "deny", "wall_incomplete", { inputDigest: digest });
            recorded = true;
            throw new LibosError("wall_incomplete", "operator", message);
          }
          if (result.outputLeftOpen) {
            warnings.push(
              "the command exited, but a process it left running held its output open; the call returned and that process keeps running (without output) until it ends or the runtime does",
            );
          }
          const output: ShellRunOutput = {
            ...result,
            stdout: this.#withheld(result.stdout, warnings, "output"),
            stderr: this.#withheld(result.stderr, warnings, "error output"),
            argv,
            executable: program.executable,
            cwd,
            wall,
            highRisk: decision.highRisk,
            ...(confined ? { confined: true as const } : {}),
            warnings,
          };
          this.#ledger.finish(id, {
            ok: true,
            value: {
              exitCode: result.exitCode,
              signal: result.signal,
              timedOut: result.timedOut,
            },
          });
          recorded = true;
          this.#record(pid, argv, "allow", authority, {
            inputDigest: digest,
            detail: {
              executable: program.executable,
              exitCode: result.exitCode,
              signal: result.signal,
              timedOut: result.timedOut,
              wall,
              highRisk: decision.highRisk,
              confined,
            },
          }, decision);
          return { type: "done", value: output };
        } catch (error) {
          if (!recorded) {
            this.#record(
              pid,
              argv,
              decision.decision === "ask" && !approvedNow ? "ask" : "allow",
              authority,
              { detail: { failed: error instanceof LibosError ? error.code : "failed" } },
            );
          }
          throw error;
        }
      },
    });
  }

  /**
   * Runs a stored action (an approved request being re-dispatched).
   * @throws {ValidationError} for a stored action that is not a shell run.
   */
  async dispatch(pid: string, action: PendingAction): Promise<JsonValue> {
    const registry = new ActionRegistry();
    registry.register(...shellActions(this));
    return await registry.dispatch(pid, action, new AbortController().signal);
  }

  /** Ends the watchdog (every group a run left behind dies) and removes the scratch homes. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.#provider[Symbol.asyncDispose]();
    await this.#wall.dispose();
  }
}

/** What a stored `shell.run` carries (see {@link ShellPrimitive.run}). */
const StoredRun = z.object({
  argv: z.array(z.string()),
  cwd: z.string().optional(),
  timeoutMs: z.number().optional(),
  maxOutputBytes: z.number().optional(),
  stdin: z.string().optional(),
});

/**
 * The shell's resumable operation (see `action_registry.ts`): the run again with the stored
 * arguments, decided afresh — the one-shot approval bound to its digest now allows exactly it.
 */
export function shellActions(shell: ShellPrimitive): ActionOperation[] {
  return [
    defineAction("shell.run", StoredRun, async (pid, a) => {
      const out = await shell.run(pid, {
        argv: a.argv,
        ...(a.cwd === undefined ? {} : { cwd: a.cwd }),
        ...(a.timeoutMs === undefined ? {} : { timeoutMs: a.timeoutMs }),
        ...(a.maxOutputBytes === undefined ? {} : { maxOutputBytes: a.maxOutputBytes }),
        ...(a.stdin === undefined ? {} : { stdin: a.stdin }),
      });
      return JSON.parse(JSON.stringify(out)) as JsonValue;
    }),
  ];
}
