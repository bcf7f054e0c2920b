/**
 * The OS wall and the environment a shell run gets — the set-up half of the shell primitive
 * (`shell.ts` keeps the launch chain: validate, decide, approve, start, report). What lives here
 * changes with the machine and the operator's configuration, not with the policy: whether the
 * wall works here (probed once), what it binds (toolchains, libos's own paths covered, the
 * scratch git configuration, the shield's mounts), the fixed program search path and how a
 * program is resolved on it, the explicit environment and its hash, the per-process scratch
 * homes, and git's hardening (`_git_hardening.ts`).
 *
 * @module
 */
import { isAbsolute, join } from "node:path";
import type { Authority } from "../authority/authority.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import { sha256Hex } from "../base/canonical_json.ts";
import { LibosError, NotFoundError, ValidationError } from "../base/errors.ts";
import { SYSTEM_PATH } from "../base/system_path.ts";
import type { FilesystemProvider } from "../providers/filesystem.ts";
import type { ResolvedProgram, ShellProvider } from "../providers/shell.ts";
import { checkToolchains, suggestedToolchain } from "../providers/toolchains.ts";
import { SYSTEM_DIRECTORIES } from "../providers/wall.ts";
import { insideWorkspace } from "../providers/workspace_path.ts";
import {
  findRepositories,
  GIT_OVERRIDES_MAX,
  GIT_REPOSITORIES_MAX,
  gitConfigEnv,
  gitOverrides,
  REPOSITORY_SCAN_BUDGET,
  repositoryKeys,
} from "./_git_hardening.ts";
import { SHIELD_SCAN_BUDGET, type ShieldMounts, shieldMounts } from "./_shield.ts";

/** The wall: `true` requires it, `false` turns it off, `"auto"` uses it when it works. */
export type WallSetting = boolean | "auto";

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

/** What the wall and environment need (see `ShellPrimitiveOptions` for each). */
export interface ShellWallOptions {
  readonly core: RuntimeCore;
  readonly authority: Authority;
  readonly provider: ShellProvider;
  readonly filesystem: FilesystemProvider;
  readonly workspace: string;
  readonly wall?: WallSetting;
  readonly searchPath?: readonly string[];
  readonly toolchains?: readonly string[];
  readonly conceal?: readonly string[];
  readonly userPath?: readonly string[];
  readonly home?: string;
  readonly gitIdentity?: GitIdentity;
  readonly shield?: boolean;
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

/** The wall and environment of one shell primitive. */
export class ShellWall {
  readonly #core: RuntimeCore;
  readonly #authority: Authority;
  readonly #provider: ShellProvider;
  readonly #fs: FilesystemProvider;
  readonly #workspace: string;
  readonly #wallSetting: WallSetting;
  readonly #searchPath: readonly string[];
  readonly #identity: GitIdentity;
  #wall: Promise<boolean> | undefined;
  #homes: string | undefined;
  readonly #shield: boolean;
  /** Directories bound read-only into the wall besides the system ones (toolchains). */
  readonly #bound: readonly string[];
  readonly #conceal: readonly string[];
  readonly #userPath: readonly string[];

  /**
   * Checks the search path, toolchains and identity.
   * @throws {ValidationError} for a search path that is relative or inside the workspace.
   */
  constructor(options: ShellWallOptions) {
    this.#core = options.core;
    this.#authority = options.authority;
    this.#provider = options.provider;
    this.#fs = options.filesystem;
    this.#workspace = options.workspace;
    this.#wallSetting = options.wall ?? "auto";
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
  mounts(shield: ShieldMounts | undefined): {
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
  suggestion(token: string, cwd: string, found: ResolvedProgram | undefined): string | null {
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
  shielded(wall: boolean): ShieldMounts | undefined {
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
   * The shield of a confined run (a read-only command allowed without asking: `shell_policy.ts`),
   * found now, under the workspace lock — or why it cannot be made (a workspace too large to look
   * through, a name that is not UTF-8), in which case the command is not run confined but asked
   * about like any other.
   */
  confinement(): { readonly mounts: ShieldMounts } | { readonly incomplete: string } {
    const mounts = shieldMounts(this.#fs, this.#workspace);
    return mounts.incomplete === null ? { mounts } : {
      incomplete:
        `${mounts.incomplete}; at most ${SHIELD_SCAN_BUDGET} directories are looked through`,
    };
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
  home(pid: string): string {
    const home = join(this.#scratch(), pid);
    Deno.mkdirSync(home, { recursive: true, mode: 0o700 });
    return home;
  }

  /** The environment every run gets (git overrides are added at run time). */
  baseEnv(home: string): Record<string, string> {
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
  resolve(token: string, cwdAbsolute: string): ResolvedProgram {
    const found = this.#provider.resolveProgram(token, cwdAbsolute, this.#searchPath);
    if (found) return found;
    const hint = this.suggestion(token, cwdAbsolute, undefined);
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
  checkVisible(program: ResolvedProgram): void {
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

  /**
   * The git overrides of a run (see `_git_hardening.ts`). What the scan could not cover — a
   * configuration git cannot read from here, more than 64 repositories, the directory budget, the
   * scan's share of the run's time — is refused without the wall (a git started by the run could
   * run a program the repository names, on the host) and only warned about inside it (whatever
   * slips through is walled in like any workspace code).
   * @throws {LibosError} `git_config_unsafe` for an incomplete scan without the wall, or a
   *   configuration over the caps.
   */
  async gitEnv(
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

  /**
   * The hash of the environment a run gets, with the per-runtime scratch paths replaced by a
   * placeholder (an approval does not depend on where the scratch home is).
   */
  envHash(base: Record<string, string>): string {
    return `sha256:${
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
  }

  /** Removes the scratch homes (the runtime is closing). */
  async dispose(): Promise<void> {
    if (this.#homes) {
      await Deno.remove(this.#homes, { recursive: true }).catch(() => {});
      this.#homes = undefined;
    }
  }
}
