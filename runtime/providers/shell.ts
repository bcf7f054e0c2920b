/**
 * The shell provider: runs one resolved program with an explicit environment, limits and a
 * timeout, optionally inside the OS wall (bubblewrap). It is the only code that starts host
 * processes for agents, and it starts exactly one kind of process itself: `setsid`.
 *
 * How a run is launched (outermost first):
 * - `setsid`: the run gets its own session and process group, so a timeout kills the whole group
 *   (its pid is the group id);
 * - `setpriv --pdeathsig SIGKILL`: the run dies with the runtime;
 * - `prlimit`: CPU seconds, address space, file size, open files (and processes, when not root);
 * - with the wall, `bwrap` (`wall.ts`): an allowlist of the host — system directories, `/etc`
 *   with its credential files covered, the workspace, a private `/tmp` and home, `/proc` and
 *   `/dev` of its own — as an unprivileged uid in its own user namespace without capabilities;
 *   `--unshare-pid --die-with-parent` (every process of the run dies with it, a `setsid`
 *   grandchild included), no network unless allowed, and a seccomp filter (`_seccomp.ts`)
 *   refusing Unix-domain sockets and io_uring;
 * - the program itself, by absolute path (which is also its argv[0]: bwrap 0.8 cannot set one).
 *
 * Orphans without the wall: every run's process group is reported to a watchdog (`sh`) reading
 * from a pipe the runtime holds. When the runtime ends — closed, or SIGKILLed — the pipe closes
 * and the watchdog kills every group it was told about: a background child that outlived its call
 * dies with the runtime. (A grandchild that leaves the group with `setsid` escapes this; only the
 * wall's PID namespace holds it.)
 *
 * @module
 */
import { join, resolve } from "node:path";
import {
  probeOptions,
  seccompFilter,
  type WallFiles,
  wallLauncher,
  wallOptions,
  type WallSpec,
} from "./wall.ts";

export type { WallSpec } from "./wall.ts";

/** One run. */
export interface ShellRunSpec {
  /** The program, an absolute path. */
  readonly executable: string;
  /** The arguments after the program name (argv[1…]). */
  readonly args: readonly string[];
  readonly cwd: string;
  /** The whole environment (nothing is inherited). */
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** Bytes kept of stdout and of stderr each. */
  readonly maxOutputBytes: number;
  readonly stdin?: string;
  /** The wall, or null to run on the host (still limited, grouped and watched). */
  readonly wall: WallSpec | null;
}

/** What a run did. */
export interface ShellRunResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly timedOut: boolean;
  /**
   * The command exited but something it left running still held stdout or stderr open; reading
   * stopped {@link OUTPUT_GRACE_MS} later and the call returned (what was left keeps running,
   * until the runtime ends).
   */
  readonly outputLeftOpen: boolean;
  readonly durationMs: number;
}

/** A program found for a name or path. */
export interface ResolvedProgram {
  /** The path that will run (absolute; what the approval binds). */
  readonly executable: string;
  /** Where it really leads (symbolic links resolved). */
  readonly real: string;
}

/** Runs programs for the shell primitive. */
export interface ShellProvider extends AsyncDisposable {
  /** Whether the OS wall works on this machine (probed once). */
  wallAvailable(): Promise<boolean>;
  /**
   * The program `token` names: with a `/`, that path (from `cwd`); else the first executable
   * regular file called `token` in `searchPath`. Undefined when there is none.
   */
  resolveProgram(
    token: string,
    cwd: string,
    searchPath: readonly string[],
  ): ResolvedProgram | undefined;
  run(spec: ShellRunSpec, signal?: AbortSignal): Promise<ShellRunResult>;
}

/** Where the host tools live (absolute paths: no PATH lookup for the launchers either). */
export interface HostTools {
  readonly setsid: string;
  readonly setpriv: string;
  readonly prlimit: string;
  readonly bwrap: string;
  readonly sh: string;
}

/** The standard locations on Debian-like systems. */
export const DEFAULT_TOOLS: HostTools = Object.freeze({
  setsid: "/usr/bin/setsid",
  setpriv: "/usr/bin/setpriv",
  prlimit: "/usr/bin/prlimit",
  bwrap: "/usr/bin/bwrap",
  sh: "/bin/sh",
});

/** Limits applied with prlimit. */
export interface RunLimits {
  /** Address space, bytes. */
  readonly addressSpace: number;
  /** Largest file a run may write, bytes. */
  readonly fileSize: number;
  readonly openFiles: number;
  /** Processes of the user (skipped as root, where it would count every root process). */
  readonly processes: number;
}

/** The limits when nothing else is configured. */
export const DEFAULT_RUN_LIMITS: RunLimits = Object.freeze({
  addressSpace: 16 * 1024 * 1024 * 1024,
  fileSize: 1024 * 1024 * 1024,
  openFiles: 1024,
  processes: 512,
});

/**
 * Reads a stream, keeping at most `max` bytes; the rest is drained and counted. When `stop`
 * aborts, reading ends with what was read (a process outside the run's group may hold the pipe
 * open forever).
 */
async function capped(
  stream: ReadableStream<Uint8Array>,
  max: number,
  stop: AbortSignal,
): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let truncated = false;
  const reader = stream.getReader();
  const onStop = () => reader.cancel().catch(() => {});
  stop.addEventListener("abort", onStop, { once: true });
  try {
    for (;;) {
      const { value: chunk, done } = await reader.read().catch(() => ({
        value: undefined,
        done: true as const,
      }));
      if (done || chunk === undefined) break;
      if (kept < max) {
        const take = chunk.subarray(0, Math.min(chunk.length, max - kept));
        chunks.push(take);
        kept += take.length;
        if (take.length < chunk.length) truncated = true;
      } else if (chunk.length) truncated = true;
    }
  } finally {
    stop.removeEventListener("abort", onStop);
  }
  const bytes = new Uint8Array(kept);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return { bytes, truncated };
}

/** How long output is still read after the command exited or its group was killed. */
export const OUTPUT_GRACE_MS = 1000;

/** UTF-8 text of at most the bytes kept, never ending inside a code point. */
function text(bytes: Uint8Array): string {
  return new TextDecoder("utf-8", { fatal: false }).decode(bytes).replace(/\uFFFD$/, "");
}

/**
 * Whether this process runs as root. Without `--allow-sys=uid` the answer is "no": the process
 * limit is then passed, which root's kernel accounting ignores anyway.
 */
function runsAsRoot(): boolean {
  try {
    return Deno.uid() === 0;
  } catch {
    return false;
  }
}

/** The launcher argv around a run (see the module documentation). */
export function launchArgv(
  spec: ShellRunSpec,
  tools: HostTools,
  limits: RunLimits,
  root: boolean,
  files?: WallFiles,
): string[] {
  const seconds = Math.max(1, Math.ceil(spec.timeoutMs / 1000) + 1);
  const prlimit = [
    tools.prlimit,
    `--cpu=${seconds}`,
    `--as=${limits.addressSpace}`,
    `--fsize=${limits.fileSize}`,
    `--nofile=${limits.openFiles}`,
    ...(root ? [] : [`--nproc=${limits.processes}`]),
    "--",
  ];
  const wall = spec.wall;
  if (wall && files === undefined) {
    throw new TypeError("A walled run needs the seccomp filter and cover files (see wall.ts)");
  }
  const inner = wall
    ? [
      ...wallLauncher(tools, files!, [
        ...wallOptions(wall, files!.empty),
        "--chdir",
        spec.cwd,
        "--",
        spec.executable,
        ...spec.args,
      ]),
    ]
    : [spec.executable, ...spec.args];
  return [tools.setpriv, "--pdeathsig", "SIGKILL", "--", ...prlimit, ...inner];
}

/** The host provider. */
export function hostShell(
  options: { readonly tools?: HostTools; readonly limits?: RunLimits } = {},
): ShellProvider {
  const tools = options.tools ?? DEFAULT_TOOLS;
  const limits = options.limits ?? DEFAULT_RUN_LIMITS;
  let probe: Promise<boolean> | undefined;
  let watchdog:
    | { child: Deno.ChildProcess; writer: WritableStreamDefaultWriter<Uint8Array> }
    | undefined;
  const root = runsAsRoot();
  const encoder = new TextEncoder();
  let files: (WallFiles & { readonly dir: string }) | undefined;
  /**
   * The wall's files — the seccomp filter and the empty cover file — in a private directory,
   * written once per provider; undefined on a CPU without a filter.
   */
  const wallFiles = (): WallFiles | undefined => {
    const filter = files === undefined ? seccompFilter() : undefined;
    if (filter !== undefined) {
      const dir = Deno.makeTempDirSync({ prefix: "libos-wall-" });
      const seccomp = join(dir, "seccomp.bpf");
      const empty = join(dir, "empty");
      Deno.writeFileSync(seccomp, filter, { mode: 0o600 });
      Deno.writeFileSync(empty, new Uint8Array(), { mode: 0o444 });
      files = { dir, seccomp, empty };
    }
    return files;
  };

  /**
   * The watchdog: kills a group when told (`k GROUP`), and every group it was told to watch
   * (`w GROUP`) when the runtime ends (see the module docs). Group kills go through it because
   * `Deno.kill` on a process group needs a permission the CLI's bootstrap does not grant (its
   * `--allow-run` names `setsid` only).
   * @throws {Error} when the watchdog cannot be told (the caller refuses the run).
   */
  const tell = async (line: string): Promise<void> => {
    if (!watchdog) {
      const child = new Deno.Command(tools.setsid, {
        args: [
          tools.sh,
          "-c",
          // Collect groups until stdin closes (the runtime ended), then kill them all. No `--`:
          // dash's `kill` takes it for a pid and stops ("Illegal number").
          'set --; while read -r op g; do case $op in w) set -- "$@" "$g" ;; k) kill -KILL "-$g" 2>/dev/null ;; esac; done; for g; do kill -KILL "-$g" 2>/dev/null; done',
        ],
        stdin: "piped",
        stdout: "null",
        stderr: "null",
        clearEnv: true,
        env: { PATH: "/usr/bin:/bin" },
      }).spawn();
      child.unref();
      const writer = child.stdin.getWriter();
      watchdog = { child, writer };
    }
    await watchdog.writer.write(encoder.encode(`${line}\n`));
  };

  return {
    wallAvailable() {
      const wall = wallFiles();
      if (wall === undefined) return Promise.resolve(false);
      probe ??= new Deno.Command(tools.setsid, {
        // Every mount, namespace and privilege flag a walled run uses, its credential covers
        // and its seccomp filter, so "works" means runs will.
        args: wallLauncher(tools, wall, [...probeOptions(), "--", "/bin/true"]),
        stdout: "null",
        stderr: "null",
        clearEnv: true,
        env: { PATH: "/usr/bin:/bin" },
      }).output().then((o) => o.success, (error: unknown) => {
        // Not "bwrap does not work": the probe could not even start (no permission to run
        // setsid, no such program). Nothing can run, walled or not; say why.
        throw new Error(`Cannot start the OS wall's probe (${tools.setsid}): ${error}`, {
          cause: error,
        });
      });
      return probe;
    },

    resolveProgram(token, cwd, searchPath) {
      const candidates = token.includes("/")
        ? [resolve(cwd, token)]
        : searchPath.map((dir) => join(dir, token));
      for (const candidate of candidates) {
        try {
          const facts = Deno.statSync(candidate);
          if (!facts.isFile || ((facts.mode ?? 0) & 0o111) === 0) continue;
          return { executable: candidate, real: Deno.realPathSync(candidate) };
        } catch (error) {
          // A missing permission is not a missing program: say which one it is.
          if (error instanceof Deno.errors.NotCapable) throw error;
          continue;
        }
      }
      return undefined;
    },

    async run(spec, signal) {
      const started = performance.now();
      const child = new Deno.Command(tools.setsid, {
        args: launchArgv(spec, tools, limits, root, spec.wall ? wallFiles() : undefined),
        cwd: spec.cwd,
        clearEnv: true,
        env: { ...spec.env },
        stdin: spec.stdin === undefined ? "null" : "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      // setsid made the child a session and group leader: its pid is the group id.
      const group = child.pid;
      let exited = false;
      child.status.then(() => exited = true, () => exited = true);
      if (!spec.wall) {
        try {
          await tell(`w ${group}`);
        } catch (error) {
          // Nothing would kill what the run leaves behind: it does not go on.
          child.kill("SIGKILL");
          await child.status;
          throw new Error(`The watchdog that ends unwalled runs is gone: ${error}`, {
            cause: error,
          });
        }
      }
      let timedOut = false;
      // Stops reading output a grace period after the kill: a `setsid` grandchild (without the
      // wall) is outside the group and may hold stdout open for ever.
      const stopReading = new AbortController();
      let grace: ReturnType<typeof setTimeout> | undefined;
      const killGroup = () => {
        // The leader by its handle (which needs no permission). Walled, the leader is bwrap:
        // its death ends the wall's PID namespace and everything in it. Unwalled, the
        // watchdog kills the whole group.
        try {
          if (!exited) child.kill("SIGKILL");
        } catch (error) {
          // Exited between the check and the kill: nothing left of the leader to stop.
          if (!(error instanceof TypeError)) throw error;
        }
        if (!spec.wall) tell(`k ${group}`).catch(() => {/* the watchdog kills it at the end */});
        grace ??= setTimeout(() => stopReading.abort(), OUTPUT_GRACE_MS);
      };
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup();
      }, spec.timeoutMs);
      const onAbort = () => killGroup();
      signal?.addEventListener("abort", onAbort, { once: true });
      // Aborted while the run was being registered with the watchdog: the listener came late.
      if (signal?.aborted) killGroup();
      try {
        if (spec.stdin !== undefined) {
          const writer = child.stdin.getWriter();
          await writer.write(encoder.encode(spec.stdin)).catch(() => {});
          await writer.close().catch(() => {});
        }
        // The command's own exit also starts the grace: a background child it left holding
        // stdout must not keep the call open until the timeout.
        const exited = child.status.then((status) => {
          grace ??= setTimeout(() => stopReading.abort(), OUTPUT_GRACE_MS);
          return status;
        });
        const [out, err, status] = await Promise.all([
          capped(child.stdout, spec.maxOutputBytes, stopReading.signal),
          capped(child.stderr, spec.maxOutputBytes, stopReading.signal),
          exited,
        ]);
        const outputLeftOpen = stopReading.signal.aborted && !timedOut && !signal?.aborted;
        if (timedOut || signal?.aborted) killGroup();
        return {
          exitCode: status.signal ? null : status.code,
          signal: status.signal ?? null,
          stdout: text(out.bytes),
          stderr: text(err.bytes),
          stdoutTruncated: out.truncated,
          stderrTruncated: err.truncated,
          timedOut,
          outputLeftOpen,
          durationMs: performance.now() - started,
        };
      } finally {
        clearTimeout(timer);
        clearTimeout(grace);
        signal?.removeEventListener("abort", onAbort);
      }
    },

    async [Symbol.asyncDispose]() {
      // Closing the watchdog's stdin makes it kill every group it knows: nothing outlives the
      // runtime, however it ended.
      if (watchdog) {
        // Ref'd again: awaiting an unref'd child would let the event loop end under us.
        watchdog.child.ref();
        await watchdog.writer.close().catch(() => {});
        await watchdog.child.status.catch(() => {});
        watchdog = undefined;
      }
      if (files !== undefined) {
        try {
          Deno.removeSync(files.dir, { recursive: true });
        } catch { /* already gone: nothing of it is needed any more */ }
        files = undefined;
      }
    },
  };
}
