/**
 * Fixtures for the shell tests: a temporary root with `ws/` (the workspace), `outside/` (what no
 * command may touch) and `bin1/`, `bin2/` (a search path of fake programs that log each run),
 * and a runtime on it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { WallSetting } from "../runtime/primitives/shell.ts";
import type { Runtime, RuntimeOptions } from "../runtime/runtime.ts";
import type { ShellPolicyLevel } from "../runtime/policy/shell_policy.ts";
import { type TestRuntime, testRuntime } from "../testing.ts";

/** One fixture: the shared test runtime, on `root/ws`, with one process. */
export interface ShellFixture extends TestRuntime {
  /** `root/ws`: the workspace, unless `extra` named another. */
  readonly ws: string;
  readonly outside: string;
  /** Directories of fake programs, in search order. */
  readonly bins: readonly string[];
  readonly pid: string;
}

/** How to build one. */
export interface ShellFixtureOptions {
  readonly level?: ShellPolicyLevel;
  /** Default false: most tests do not need the wall (its own tests turn it on). */
  readonly wall?: WallSetting;
  readonly mode?: string;
  readonly human?: "queue" | "none";
  /** Use `bins` (two directories under the root) instead of the system directories. */
  readonly fakePath?: boolean;
  readonly secrets?: readonly string[];
  readonly extra?: Partial<RuntimeOptions>;
}

/** Builds a fixture; dispose it to close the runtime and remove the root. */
export async function shellFixture(options: ShellFixtureOptions = {}): Promise<ShellFixture> {
  const binsOf = (root: string) => [join(root, "bin1"), join(root, "bin2")];
  const { workspace, ...extra } = options.extra ?? {};
  const t = await testRuntime({
    prefix: "libos-shell-",
    // `root/ws` is made even when `extra` names another workspace.
    workspaceDir: workspace ?? "ws",
    dirs: ["ws", "outside", "bin1", "bin2"],
    wall: options.wall ?? false,
    shellPolicy: options.level ?? "allowlist_auto_else_ask",
    human: options.human ?? "none",
    ...(options.mode === undefined ? {} : { mode: options.mode }),
    ...(options.secrets === undefined ? {} : { secrets: options.secrets }),
    ...extra,
    ...(options.fakePath && options.extra?.searchPath === undefined
      ? { fromRoot: (root: string) => ({ searchPath: binsOf(root) }) }
      : {}),
  });
  return {
    ...t,
    ws: join(t.root, "ws"),
    outside: join(t.root, "outside"),
    bins: binsOf(t.root),
    pid: t.spawn(),
  };
}

/** Writes an executable `#!/bin/sh` script. */
export function script(path: string, body: string): string {
  Deno.writeTextFileSync(path, `#!/bin/sh\n${body}\n`);
  Deno.chmodSync(path, 0o755);
  return path;
}

/** A fake program that appends `<name>@<dir> <args>` to `log` and prints `ran <name>`. */
export function fakeProgram(dir: string, name: string, log: string): string {
  return script(
    join(dir, name),
    `printf '%s %s\\n' "${name}@${dir}" "$*" >> '${log}'\necho "ran ${name}"`,
  );
}

/** The lines of a log file (none when it does not exist). */
export function logLines(path: string): string[] {
  try {
    return Deno.readTextFileSync(path).split("\n").filter((l) => l !== "");
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

/** Grants `pid` an allow on exactly this argv (an operator's standing grant). */
export function allowExact(runtime: Runtime, pid: string, argv: readonly string[]): void {
  runtime.authority.capabilities.grant({
    subject: pid,
    resource: { type: "shell", argv: [...argv], scope: "exact" },
    rights: ["execute"],
    effect: "allow",
    issuer: "operator",
  });
}

/**
 * Whether wall tests run here: they run when bwrap works, and in CI (`LIBOS_REQUIRE_WALL=1`)
 * always — failing, not skipping, when the wall does not work.
 */
export function wallTestMode(): { readonly ignore: boolean; readonly works: boolean } {
  const required = Deno.env.get("LIBOS_REQUIRE_WALL") === "1";
  let works = false;
  try {
    works = new Deno.Command("/usr/bin/bwrap", {
      args: ["--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--", "/bin/true"],
      stdout: "null",
      stderr: "null",
    }).outputSync().success;
  } catch {
    works = false;
  }
  return { ignore: !works && !required, works };
}

/**
 * Host processes whose command line contains `marker` and that are not zombies (read with `ps`:
 * Deno lets only `--allow-all` read `/proc`).
 */
export function processesWith(marker: string): number[] {
  const out = new Deno.Command("ps", {
    args: ["-e", "-ww", "-o", "pid=,stat=,args="],
    stdout: "piped",
    stderr: "null",
  }).outputSync();
  const found: number[] = [];
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    const match = /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(line);
    if (!match || !match[3]!.includes(marker) || match[2]!.startsWith("Z")) continue;
    // `ps` itself does not carry the marker; a grep-like self-match cannot happen.
    found.push(Number(match[1]));
  }
  return found;
}

/** Polls `check` until it holds or `ms` pass; returns whether it held. */
export async function eventually(check: () => boolean, ms = 5000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

/** The error `promise` rejects with, which must be a `type`. */
export async function failure<E extends Error>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
): Promise<E> {
  const error = await promise.then(
    () => assert.fail(`expected ${type.name}, but it succeeded`),
    (e: unknown) => e,
  );
  assert.ok(error instanceof type, `expected ${type.name}, got ${String(error)}`);
  return error;
}

/** Runs host git for fixture setup (never through libos) and returns its stdout. */
export function hostGit(cwd: string, ...args: string[]): string {
  const out = new Deno.Command("git", {
    args: ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin", HOME: cwd, GIT_CONFIG_NOSYSTEM: "1" },
  }).outputSync();
  if (!out.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** A committed repository at `dir` with one modified file, and `config` appended to its config. */
export function hostileRepo(dir: string, config: string, attributes?: string): void {
  Deno.mkdirSync(dir, { recursive: true });
  hostGit(dir, "init", "-q", ".");
  Deno.writeTextFileSync(join(dir, "a.txt"), "one\n");
  if (attributes !== undefined) Deno.writeTextFileSync(join(dir, ".gitattributes"), attributes);
  hostGit(dir, "add", "-A");
  hostGit(dir, "commit", "-qm", "init");
  Deno.writeTextFileSync(join(dir, "a.txt"), "one\ntwo\n");
  Deno.writeTextFileSync(join(dir, ".git", "config"), config, { append: true });
}

/**
 * Whether an attack works against a plain host git (the control: a test is not vacuous); the
 * marker it leaves is removed.
 */
export function plainGitRuns(cwd: string, args: string[], marker: string): boolean {
  new Deno.Command("git", {
    args: ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args],
    cwd,
    stdout: "null",
    stderr: "null",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin", HOME: cwd, GIT_CONFIG_NOSYSTEM: "1" },
  }).outputSync();
  try {
    Deno.lstatSync(marker);
    Deno.removeSync(marker);
    return true;
  } catch {
    return false;
  }
}

/** Runs `body` as a workspace script `name` (`sh NAME`: workspace code, which always_allow runs). */
export async function runWorkspaceScript(f: ShellFixture, body: string, name = "run.sh") {
  Deno.writeTextFileSync(join(f.ws, name), body + "\n");
  return await f.runtime.primitives.shell.run(f.pid, { argv: ["sh", name] });
}

/** Whether a path exists on the host (a symlink counts, followed or not). */
export function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts one of the tests' child scripts (`tests/_*.ts`) as a real Deno process that the test can
 * SIGKILL: read, write, env and run granted, the repository's config, `env` added to a quiet
 * environment.
 */
export function spawnTestChild(
  script: string,
  args: readonly string[],
  options: {
    readonly env?: Record<string, string>;
    readonly stdout?: "piped" | "null";
    readonly stderr?: "piped" | "null";
  } = {},
): Deno.ChildProcess {
  const repo = new URL("..", import.meta.url).pathname;
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      `--config=${join(repo, "deno.json")}`,
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-run",
      join(repo, "tests", script),
      ...args,
    ],
    env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", ...options.env },
    stdout: options.stdout ?? "null",
    stderr: options.stderr ?? "null",
  }).spawn();
}
