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
 *    the human channel: interactive approval retries the call, queue mode parks the process;
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
import { checkToolchains, suggestedToolchain } from "../providers/toolchains.ts";
import { SYSTEM_DIRECTORIES, wallFailure } from "../providers/wall.ts";
import { SHIELD_SCAN_BUDGET, type ShieldMounts, shieldMounts } from "./_shield.ts";

export { SHIELD_SCAN_BUDGET, type ShieldMounts, shieldMounts };
import { isAbsolute, join, relative, resolve } from "node:path";
import type { ActionLedger } from "../process/action_ledger.ts";
import type { Authority } from "../authority/authority.ts";
import { digestOf, type JsonValue, sha256Hex } from "../base/canonical_json.ts";
import type { Capability } from "../authority/capability.ts";
import {
  CapabilityDeniedError,
  IllegalTransitionError,
  LibosError,
  NotFoundError,
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
  type ShellCapabilityAnswer,
  type ShellDecision,
  type ShellPolicyLevel,
} from "../policy/shell_policy.ts";
import type { ShellParser } from "../policy/shell_script.ts";
import type { WorkspaceLock } from "../base/workspace_lock.ts";
import { containedDirectory, insideWorkspace } from "../providers/workspace_path.ts";
import {
  findRepositories,
  GIT_OVERRIDES_MAX,
  GIT_REPOSITORIES_MAX,
  gitConfigEnv,
  gitOverrides,
  REPOSITORY_SCAN_BUDGET,
  repositoryKeys,
} from "./_git_hardening.ts";

export { SYSTEM_PATH };

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
  /** Things the caller should know (a partial repository scan). */
  readonly warnings: readonly string[];
}

/** The wall: `true` requires it, `false` turns it off, `"auto"` uses it when it works. */
export type WallSetting = boolean | "auto";

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

/** A commit identity. */
export interface GitIdentity {
  readonly name: string;
  readonly email: string;
}

/** The identity of commits made by agents in a repository that sets none. */
export const DEFAULT_GIT_IDENTITY: GitIdentity = Object.freeze({
  name: "libos agent",
  email: "agent@libos.invalid",
});

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

/** Whether absolute `path` lies in one of the system directories every wall shows. */
function underSystem(path: string): boolean {
  return SYSTEM_DIRECTORIES.some((dir) => insideWorkspace(dir, path));
}

/**
 * Whether `dir` is an existing directory. A search path entry that is missing is skipped (its
 * programs are not found either); one that cannot be looked at is an error.
 */
function existsDir(fs: FilesystemProvider, dir: string): boolean {
  try {
    return fs.stat(dir).isDirectory;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw new ValidationError(
      `Search path entry ${JSON.stringify(dir)} cannot be looked at (${
        error instanceof Error ? error.message : String(error)
      })`,
      { cause: error },
    );
  }
}

/** The placeholder the environment hash uses for per-runtime scratch paths. */
const HOME_PLACEHOLDER = "<scratch home>";
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
  /** The programs-that-run-programs table, built once. */
  readonly #programs = new ProgramTable();
  readonly #wallSetting: WallSetting;
  readonly #searchPath: readonly string[];
  readonly #redactor: Redactor;
  readonly #scanner = new SecretScanner();
  readonly #identity: GitIdentity;
  readonly level: ShellPolicyLevel;
  readonly limits: ShellLimits;
  #wall: Promise<boolean> | undefined;
  #homes: string | undefined;
  readonly #shield: boolean;
  /** Directories bound read-only into the wall besides the system ones (toolchains). */
  readonly #bound: readonly string[];
  readonly #conceal: readonly string[];
  readonly #userPath: readonly string[];

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
    this.#wallSetting = options.wall ?? "auto";
    this.level = options.level ?? "allowlist_auto_else_ask";
    this.limits = { ...DEFAULT_SHELL_LIMITS, ...options.limits };
    const searchPath = options.searchPath ?? SYSTEM_PATH;
    for (const dir of searchPath) {
      if (!dir.startsWith("/") || insideWorkspace(this.#workspace, dir)) {
        throw new ValidationError(
          `Search path entry ${
            JSON.stringify(dir)
          } must be an absolute directory outside the workspace (a relative entry or one inside the workspace lets workspace files pose as programs)`,
        );
      }
    }
    this.#conceal = Object.freeze([...new Set(options.conceal ?? [])].filter(isAbsolute));
    const facts = {
      workspace: this.#workspace,
      ...(options.home === undefined ? {} : { home: options.home }),
      own: this.#conceal,
    };
    const toolchains = checkToolchains(this.#fs, options.toolchains ?? [], facts);
    // A search path directory outside the system ones is bound into the wall like a toolchain
    // (and checked like one): every directory a program is found in is one a command can see.
    const extra = checkToolchains(
      this.#fs,
      searchPath.filter((dir) => !underSystem(dir) && existsDir(this.#fs, dir)),
      facts,
      { bin: false },
    );
    this.#bound = Object.freeze([...new Set([...toolchains, ...extra].map((t) => t.root))]);
    this.#searchPath = Object.freeze([
      ...new Set([...toolchains.map((t) => t.bin), ...searchPath]),
    ]);
    this.#userPath = Object.freeze((options.userPath ?? []).filter(isAbsolute));
    this.#identity = options.gitIdentity ?? DEFAULT_GIT_IDENTITY;
    for (const v of [this.#identity.name, this.#identity.email]) {
      if (typeof v !== "string" || v === "" || v.length > 200 || /[\0\n\r]/.test(v)) {
        throw new ValidationError(
          "gitIdentity name and email must be one line of 1 to 200 characters",
        );
      }
    }
    this.#redactor = redactor(options.secrets ?? []);
    this.#shield = options.shield ?? false;
  }

  /** The toolchain directories bound into the wall (real paths), for the run's first line. */
  get toolchains(): readonly string[] {
    return this.#bound;
  }

  /**
   * What the wall binds for a run besides its allowlist: the toolchains, libos's own paths where
   * the workspace contains them (covered), the scratch git configuration (read-only) and the
   * shield's mounts.
   * @throws {LibosError} `wall_incomplete` when one of libos's own paths inside the workspace
   *   cannot be looked at: it could not be covered, so nothing runs.
   */
  #mounts(shield: ShieldMounts | undefined): {
    toolchains: readonly string[];
    hidden: string[];
    readOnly: string[];
    masked: string[];
  } {
    const hidden: string[] = [];
    const masked: string[] = [];
    for (const path of this.#conceal) {
      if (!insideWorkspace(this.#workspace, path) || path === this.#workspace) continue;
      let facts;
      try {
        facts = this.#fs.stat(path);
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) continue;
        throw new LibosError(
          "wall_incomplete",
          "operator",
          `Cannot run a command inside the OS wall: libos's own ${path} lies inside the workspace and cannot be looked at to be covered (${
            error instanceof Error ? error.message : String(error)
          }); keep the state and configuration directories outside the workspace`,
          { cause: error },
        );
      }
      (facts.isDirectory ? hidden : masked).push(path);
    }
    return {
      toolchains: this.#bound,
      hidden,
      readOnly: [join(this.#scratch(), "gitconfig"), ...(shield?.readOnly ?? [])],
      masked: [...masked, ...(shield?.masked ?? [])],
    };
  }

  /** Whether `path` (absolute) is something a command inside the wall can see. */
  #visible(path: string): boolean {
    return insideWorkspace(this.#workspace, path) || underSystem(path) ||
      this.#bound.some((dir) => insideWorkspace(dir, path));
  }

  /**
   * What to tell the caller when the user's own `PATH` would run another file for `token` than
   * the wall's search path does (or one where the wall finds none): the toolchain to add.
   */
  #suggestion(token: string, cwd: string, found: ResolvedProgram | undefined): string | null {
    if (token.includes("/") || this.#userPath.length === 0) return null;
    let theirs: ResolvedProgram | undefined;
    try {
      theirs = this.#provider.resolveProgram(token, cwd, this.#userPath);
    } catch {
      // A hint only (nothing is decided from it): a PATH directory libos may not look at
      // gives no hint.
      return null;
    }
    if (!theirs || theirs.real === found?.real || this.#visible(theirs.real)) return null;
    const shim = /\/(shims|\.asdf)\//.test(theirs.executable)
      ? " (a version manager's shim: add the version's own directory, e.g. what `pyenv prefix` prints)"
      : "";
    return `your PATH runs ${theirs.executable}${
      theirs.real === theirs.executable ? "" : ` -> ${theirs.real}`
    }, which the OS wall does not show; to run it, add --toolchain ${
      suggestedToolchain(theirs.real)
    }${shim}`;
  }

  /**
   * The shield's mounts for a run now (under the workspace lock, so no primitive changes the
   * workspace while they are found), or undefined when the run is not shielded.
   * @throws {LibosError} `shield_unavailable` without the OS wall; `shield_incomplete` for a
   *   workspace too large to look through.
   */
  #shielded(wall: boolean): ShieldMounts | undefined {
    if (!this.#shield) return undefined;
    if (!wall) {
      throw new LibosError(
        "shield_unavailable",
        "caller",
        "This run shields what protected paths guard (libos agent --yes), which only the OS wall can do, and the wall is off here; install bubblewrap, or run the agent with a person answering (a terminal, or --human queue)",
      );
    }
    const mounts = shieldMounts(this.#fs, this.#workspace);
    if (mounts.incomplete !== null) {
      throw new LibosError(
        "shield_incomplete",
        "caller",
        `A shielded run (libos agent --yes) must first find every secret-bearing file and protected path in the workspace, and ${mounts.incomplete} (at most ${SHIELD_SCAN_BUDGET} directories are looked through); fix that, or run the agent with a person answering (a terminal, or --human queue)`,
      );
    }
    return mounts;
  }

  /**
   * Whether runs go inside the OS wall: probed on first use; when the wall is wanted but does not
   * work here, a notice says so once (or, when it is required, every run is refused).
   * @throws {LibosError} `wall_unavailable` when the wall is required and does not work.
   */
  wall(): Promise<boolean> {
    this.#wall ??= (async () => {
      if (this.#wallSetting === false) {
        this.#authority.setWall(false);
        return false;
      }
      const works = await this.#provider.wallAvailable();
      if (!works && this.#wallSetting === true) {
        throw new LibosError(
          "wall_unavailable",
          "operator",
          "The OS wall is required (--wall on) but bubblewrap does not work on this machine (or its CPU has no seccomp filter: x86_64 and aarch64 do); install the Debian package bubblewrap (and allow unprivileged user namespaces), or run with --wall auto",
        );
      }
      if (!works) {
        this.#core.events.emit({
          kind: "notice",
          payload: {
            level: "warn",
            code: "wall_unavailable",
            message:
              "Shell commands run without the OS wall: bubblewrap (bwrap) does not work on this machine (or its CPU has no seccomp filter: x86_64 and aarch64 do), so a command can write outside the workspace and reach the network; install the Debian package bubblewrap to turn the wall on",
          },
        });
      }
      this.#authority.setWall(works);
      return works;
    })();
    return this.#wall;
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

  /** Decides the argv for `pid`; one-shot capabilities that allowed a command are collected. */
  #decide(pid: string, argv: readonly string[], wall: boolean, used: Capability[]): ShellDecision {
    const context = this.#authority.context;
    return this.#authority.capabilities.checked(() =>
      decideShell({
        argv,
        level: this.level,
        mode: this.#modeOf(pid),
        wall,
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
  ): void {
    this.#core.audit.append({
      actor: pid,
      pid,
      action: "shell.run",
      resource: `shell:${argv.join(" ")}`.slice(0, 4096),
      decision,
      authority,
      ...extra,
    });
  }

  /**
   * The runtime's scratch directory (created on first use, removed with the runtime): the
   * per-process homes, and the git configuration libos gives every run (`gitconfig`: the default
   * identity, below any repository's own).
   */
  #scratch(): string {
    if (this.#homes) return this.#homes;
    const dir = Deno.makeTempDirSync({ prefix: "libos-home-" });
    const quote = (v: string) => JSON.stringify(v);
    Deno.writeTextFileSync(
      join(dir, "gitconfig"),
      `[user]\n\tname = ${quote(this.#identity.name)}\n\temail = ${quote(this.#identity.email)}\n`,
      { mode: 0o600 },
    );
    this.#homes = dir;
    return dir;
  }

  /** The scratch HOME of a process. */
  #home(pid: string): string {
    const home = join(this.#scratch(), pid);
    Deno.mkdirSync(home, { recursive: true, mode: 0o700 });
    return home;
  }

  /** The environment every run gets (git overrides are added at run time). */
  #baseEnv(home: string): Record<string, string> {
    return {
      PATH: this.#searchPath.join(":"),
      HOME: home,
      LANG: "C.UTF-8",
      TERM: "dumb",
      TMPDIR: "/tmp",
      PAGER: "cat",
      GIT_PAGER: "cat",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: join(this.#scratch(), "gitconfig"),
      GIT_TERMINAL_PROMPT: "0",
    };
  }

  /**
   * Resolves the program, or throws a typed error that says where it looked (and which toolchain
   * would have it).
   */
  #resolve(token: string, cwdAbsolute: string): ResolvedProgram {
    const found = this.#provider.resolveProgram(token, cwdAbsolute, this.#searchPath);
    if (found) return found;
    const hint = this.#suggestion(token, cwdAbsolute, undefined);
    throw new NotFoundError(
      token.includes("/")
        ? `Cannot run ${JSON.stringify(token)}: no executable file there`
        : `Cannot run ${JSON.stringify(token)}: no executable of that name in ${
          this.#searchPath.join(":")
        } (libos looks only in fixed system directories and the operator's toolchains; name a workspace program by its path, e.g. ./script.sh)${
          hint ? `; ${hint}` : ""
        }`,
    );
  }

  /**
   * Refuses a program the wall does not show (a path outside the workspace, the system
   * directories and the toolchains, or a link that leads there).
   * @throws {NotFoundError} naming the toolchain to add.
   */
  #checkVisible(program: ResolvedProgram): void {
    for (const path of [program.executable, program.real]) {
      if (this.#visible(path)) continue;
      throw new NotFoundError(
        `Cannot run ${JSON.stringify(program.executable)}${
          program.real === program.executable ? "" : ` (-> ${program.real})`
        } inside the OS wall: ${path} is outside the workspace, the system directories and the toolchains, so a command cannot see it; add --toolchain ${
          suggestedToolchain(program.real)
        } (or "toolchains" in config.jsonc) to show it read-only`,
      );
    }
  }

  /** Whether a decision's commands may start git (directly, or through code that might). */
  #mayRunGit(decision: ShellDecision): boolean {
    return decision.commands.some((c) =>
      c.kind === "workspace_code" || c.kind === "inline_code" || c.kind === "opaque" ||
      programName(c.argv[0] ?? "") === "git"
    );
  }

  /**
   * The git overrides for a run in `cwd`: the fixed ones, and every program-naming key of the
   * repositories around and below it (see `_git_hardening.ts`).
   * @throws {LibosError} `git_config_unsafe` when a repository sets more keys than can be overridden.
   */
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

  /**
   * The git overrides of a run (see `_git_hardening.ts`). What the scan could not cover — a
   * configuration git cannot read from here, more than 64 repositories, the directory budget, the
   * scan's share of the run's time — is refused without the wall (a git started by the run could
   * run a program the repository names, on the host) and only warned about inside it (whatever
   * slips through is walled in like any workspace code).
   * @throws {LibosError} `git_config_unsafe` for an incomplete scan without the wall, or a
   *   configuration over the caps.
   */
  async #gitEnv(
    cwdAbsolute: string,
    env: Record<string, string>,
    scan: boolean,
    context: { readonly wall: boolean; readonly timeoutMs: number; readonly warnings: string[] },
  ): Promise<Record<string, string>> {
    if (!scan) return gitConfigEnv(gitOverrides([]));
    const git = this.#provider.resolveProgram("git", cwdAbsolute, this.#searchPath);
    if (!git) return gitConfigEnv(gitOverrides([]));
    const gaps: string[] = [];
    const found = findRepositories(this.#fs, cwdAbsolute);
    if (found.partial) {
      gaps.push(
        `the search for nested repositories stopped after ${REPOSITORY_SCAN_BUDGET} directories`,
      );
    }
    // Inside the wall only the workspace exists: a directory above it that could not be looked
    // at holds nothing a walled git could read.
    const unreadable = found.unreadable.filter((dir) =>
      !context.wall || insideWorkspace(this.#workspace, dir)
    );
    if (unreadable.length > 0) {
      gaps.push(
        `${unreadable.length} director${
          unreadable.length === 1 ? "y" : "ies"
        } could not be looked at for repositories (${unreadable.slice(0, 3).join(", ")})`,
      );
    }
    if (found.repositories.length > GIT_REPOSITORIES_MAX) {
      gaps.push(
        `${found.repositories.length} repositories were found and at most ${GIT_REPOSITORIES_MAX} are read`,
      );
    }
    // The scan gets at most half of the run's time (and 30 s): a hostile include (a FIFO) must
    // not hold the workspace lock beyond what the caller allowed.
    const deadline = performance.now() + Math.min(context.timeoutMs / 2, 30_000);
    const keys: string[] = [];
    for (const repository of found.repositories.slice(0, GIT_REPOSITORIES_MAX)) {
      const left = Math.floor(deadline - performance.now());
      if (left < 50) {
        gaps.push("reading the repositories' configuration ran out of time");
        break;
      }
      // The enclosing repository is read from the run's own directory: an include's path can
      // depend on it (/proc/self/cwd).
      const where = insideWorkspace(repository, cwdAbsolute) ? cwdAbsolute : repository;
      const listed = await this.#provider.run({
        executable: git.executable,
        args: ["config", "--list", "--null", "--name-only", "--show-scope", "--includes"],
        cwd: where,
        env: { ...env, ...gitConfigEnv(gitOverrides([])) },
        timeoutMs: left,
        maxOutputBytes: 4 * 1024 * 1024,
        wall: null,
      });
      if (listed.stdoutTruncated) {
        throw new LibosError(
          "git_config_unsafe",
          "caller",
          `The git configuration of ${repository} is over 4 MiB; libos does not run commands that may start git there. Inspect it (it is not something git writes itself)`,
        );
      }
      if (listed.timedOut) gaps.push(`reading the configuration of ${repository} timed out`);
      else if (listed.exitCode === 0) keys.push(...repositoryKeys(listed.stdout));
      else {
        gaps.push(
          `git cannot read the configuration of ${repository} (${
            listed.stderr.trim().slice(0, 200)
          })`,
        );
      }
    }
    if (gaps.length > 0) {
      const what = gaps.join("; ");
      if (!context.wall) {
        throw new LibosError(
          "git_config_unsafe",
          "caller",
          `Cannot run a command that may start git in ${cwdAbsolute} without the OS wall: ${what}, so a program a repository names could run on the host. Run it inside the wall (install bubblewrap), from a directory with fewer nested repositories, or repair the configuration`,
        );
      }
      context.warnings.push(
        `git hardening is incomplete (${what}); the command runs inside the OS wall`,
      );
    }
    const overrides = gitOverrides(keys);
    if (overrides.length > GIT_OVERRIDES_MAX) {
      throw new LibosError(
        "git_config_unsafe",
        "caller",
        `The git repositories under ${cwdAbsolute} set ${overrides.length} keys that name programs; libos overrides at most ${GIT_OVERRIDES_MAX} and does not run commands that may start git there`,
      );
    }
    return gitConfigEnv(overrides);
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
      offers: this.#offers(argv, decision, mode, wall),
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
    return await this.#gate.pass(pid, {
      operation: "shell.run",
      args: callArgs,
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
        const decision = this.#decide(pid, argv, wall, used);
        if (decision.decision === "deny") {
          this.#record(pid, argv, "deny", decision.reason);
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
          const program = this.#resolve(argv[0]!, cwdAbsolute);
          if (wall) this.#checkVisible(program);
          const home = this.#home(pid);
          const base = this.#baseEnv(home);
          const envHash = `sha256:${
            sha256Hex(
              JSON.stringify(
                Object.entries({
                  ...base,
                  HOME: HOME_PLACEHOLDER,
                  GIT_CONFIG_GLOBAL: HOME_PLACEHOLDER,
                }).sort(),
              ),
            )
          }`;
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
              this.#record(pid, argv, "ask", decision.reason, { inputDigest: digest });
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
            if (digestNow() !== digest) return null;
            // Shielded: decided before anything is used up, so a refused run costs no approval.
            const shield = this.#shielded(wall);
            // Use up every one-shot capability behind this run before it starts (compare-and-set).
            this.#gate.spend(used);
            const warnings: string[] = [];
            const hint = this.#suggestion(argv[0]!, cwdAbsolute, program);
            if (hint) warnings.push(`${argv[0]} ran ${program.executable}; ${hint}`);
            const gitEnv = await this.#gitEnv(cwdAbsolute, base, this.#mayRunGit(decision), {
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
                  writable: !["read-only", "plan"].includes(this.#modeOf(pid)),
                  home,
                  ...this.#mounts(shield),
                  network,
                }
                : null,
            }, signal);
            running.catch(() => {/* awaited below, once the lock is released */});
            return { id, warnings, running };
          });
          if (started === null) {
            // This decision's record: allowed, not used (decided again below).
            this.#record(pid, argv, "allow", authority, {
              inputDigest: digest,
              detail: { failed: "changed_before_start" },
            });
            recorded = true;
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
            },
          });
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
    if (this.#homes) {
      await Deno.remove(this.#homes, { recursive: true }).catch(() => {});
      this.#homes = undefined;
    }
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
