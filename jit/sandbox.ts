/**
 * The JIT sandbox (DESIGN §7): one agent-written tool call in one permission-less Deno process,
 * which reaches the world only through syscall frames the host answers. It holds on its own,
 * with the validator switched off:
 *
 * - no `--allow-*`, `--no-prompt`, `--no-config`, `--no-remote`, `--no-npm`; V8 with a heap cap
 *   and `--disallow-code-generation-from-strings` (eval and Function throw);
 * - a fresh temporary directory per call as cwd and `DENO_DIR` (the Cache API and `localStorage`
 *   persist in a shared `DENO_DIR`), deleted afterwards; an environment of only `DENO_DIR` and
 *   `NO_COLOR`; the harness copied into that directory (stack traces reveal no install path);
 * - `setsid` (its own process group, killed whole), `setpriv --pdeathsig SIGKILL` (it dies with
 *   the host), `prlimit --data` (the V8 heap cap does not bound ArrayBuffers or Wasm memory:
 *   {@link DENO_BASE_DATA_MIB} for Deno itself plus the memory budget), `--cpu`, `--fsize`;
 * - the harness (`_harness.js`) takes its stdio, then fixes `Deno`, `Worker`, `caches`,
 *   `localStorage`, `sessionStorage` and `process` as non-configurable getters that throw (merely
 *   deleting them let a tool plant a fake `Deno` that revived Node's `node:fs`, `node:vm` and
 *   `node:worker_threads` polyfills — fd 1, new contexts, workers with a real `Deno`), blocks
 *   `URL.createObjectURL`, then imports the tool from a `data:` URL (so the tool's own imports
 *   are permission-checked). Code a tool builds into another `data:` URL or Wasm still runs, with
 *   exactly the tool's (lack of) authority;
 * - every frame carries the run frame's nonce, so output a tool writes to fd 1 by some other
 *   route is a protocol error, never a frame; "out of memory" is the harness's finding from the
 *   process's memory use, not the tool's claim;
 * - limits: wall time that stops while the host serves a syscall (a human approval does not time
 *   the tool out; work the tool does meanwhile is bounded by the CPU limit), CPU, memory, syscall
 *   count, frame bytes, log and stderr bytes; on the host's side, the number of frames, every log
 *   frame counted at its size on the wire (an empty `console.log()` costs its line), and the host
 *   time spent serving syscalls, human waits excluded. Host memory per call is thereby bounded
 *   whatever the tool sends. A breach kills the process group and fails the call with a typed
 *   {@link SandboxError} — or with the error the syscall handler says ends the call (a budget
 *   the process has exhausted).
 *
 * Resident processes (`reuse`, opt-in): a process per call costs a Deno start, bubblewrap and a
 * reap, so back to back a warm pool cannot refill faster than processes start. With `reuse`, a
 * call that names its agent process (`reuseFor`) is served by a walled process bound to that
 * agent process and that exact source, which runs each call in a fresh Worker started ahead
 * (a new isolate: globals, prototypes, module instance, `Error.prepareStackTrace`, timers —
 * all new, and ended with the call) with the same doors closed, the Worker's own included
 * (`postMessage`, `close`). Another agent process's calls never reach it. The process's
 * harness holds each call to its CPU and memory budgets (it measures the process, and the
 * Worker's own ArrayBuffers), the kernel's limits of the process being the backstop (larger:
 * each Worker's isolate reserves about 0.5 GiB of address space); wall time, frames, syscalls
 * and output are counted per call by the host as for any call. A breach or a death retires
 * the process; so do {@link RESIDENT_MAX_CALLS} calls or its CPU time nearing its limit.
 * With `reuse: "worker"`, the Worker itself serves the agent process's next call of the tool
 * when its last call succeeded and left nothing running (no unanswered syscall, no timer, no
 * message channel): the module is imported once and its state carries between that agent
 * process's calls, as between one program's calls, at the cost of a message round trip instead
 * of a Worker's start; a `libos` handle refuses once the call it was given to has ended.
 *
 * @module
 */
import { join } from "node:path";
import { LibosError, type LibosErrorOptions } from "../runtime/base/errors.ts";
import { type FrameLine, frameLines } from "./_frames.ts";
import { ServingClock } from "./_serving_clock.ts";
import { PROTOCOL_VERSION, type ToolFrame, ToolFrame as ToolFrameSchema } from "./protocol.ts";
import { VETTED_IMPORTS } from "./validator.ts";
import {
  SANDBOX_DENO,
  SANDBOX_DIR,
  sandboxWallArgv,
  seccompFilter,
  wallFailure,
} from "../runtime/providers/wall.ts";

/** Stable codes of {@link SandboxError}. */
export type SandboxErrorCode =
  | "timeout"
  | "cpu_limit"
  | "memory_limit"
  | "output_limit"
  | "frame_limit"
  | "syscall_limit"
  | "serving_limit"
  | "protocol_error"
  | "tool_error"
  | "sandbox_failed"
  | "wall_unavailable"
  | "aborted";

/** A tool call that failed: the tool threw, or the sandbox stopped it. */
export class SandboxError extends LibosError {
  override readonly code: SandboxErrorCode;
  constructor(code: SandboxErrorCode, message: string, options: LibosErrorOptions = {}) {
    super(code, code === "tool_error" ? "caller" : "runtime", message, options);
    this.code = code;
  }
}

/** What one call may use. */
export interface SandboxLimits {
  /** Wall time, excluding time the host spends serving syscalls. */
  readonly wallMs: number;
  readonly cpuSeconds: number;
  /** Memory beyond what Deno itself needs (ArrayBuffers and Wasm included). */
  readonly memoryMiB: number;
  readonly maxSyscalls: number;
  /** The largest single frame the tool may send. */
  readonly maxFrameBytes: number;
  /**
   * Bytes of log frames (each counted whole, as sent: an empty line costs its frame) and,
   * separately, of stderr.
   */
  readonly maxOutputBytes: number;
  /** Frames of any kind the tool may send in one call. */
  readonly maxFrames: number;
  /**
   * Host time spent serving the call's syscalls, in total (a shell command, a sleep, a child's
   * wait); time its process waits on its human is not counted.
   */
  readonly maxServingMs: number;
}

/** The limits when nothing else is configured. */
export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = Object.freeze({
  wallMs: 30_000,
  cpuSeconds: 30,
  memoryMiB: 256,
  maxSyscalls: 1_000,
  maxFrameBytes: 1024 * 1024,
  maxOutputBytes: 1024 * 1024,
  maxFrames: 10_000,
  // One shell command or child wait at its longest (ten minutes), and then some.
  maxServingMs: 900_000,
});

/**
 * `RLIMIT_DATA` Deno 2.9.6 needs to start at all, measured here (it fails at 500 MiB, starts at
 * 600); `tests` calibrate it per Deno version.
 */
export const DENO_BASE_DATA_MIB = 640;

/** Answers one syscall: its value, or a thrown {@link LibosError} the tool sees as an error. */
export type SyscallHandler = (
  name: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
) => Promise<unknown>;

/** One log line the tool wrote. */
export interface ToolLog {
  readonly level: "debug" | "info" | "log" | "warn" | "error";
  readonly text: string;
}

/** What a successful call returns. */
export interface SandboxResult {
  readonly value: unknown;
  readonly logs: readonly ToolLog[];
  readonly syscalls: number;
  readonly durationMs: number;
}

/** How to run one call. */
export interface CallOptions {
  /**
   * What the source is written in: TypeScript (the default; Deno transpiles it in the sandbox),
   * or JavaScript — a registered tool's source transpiled once on the host, which spares each
   * call Deno's transpile.
   */
  readonly language?: "typescript" | "javascript";
  /**
   * Whether the calling process waits on its human right now: that time is not counted against
   * {@link SandboxLimits.maxServingMs} (default: never).
   */
  readonly waitingOnHuman?: () => boolean;
  /**
   * Whether an error the syscall handler threw ends the whole call rather than only failing the
   * syscall (a budget the process has exhausted): the tool is killed and the call fails with
   * that very error.
   */
  readonly endsCall?: (error: unknown) => boolean;
  /**
   * The agent process the call is for. With {@link JitSandboxOptions.reuse}, its calls of this
   * same source are served one after another by one walled process bound to it (each call in a
   * fresh Worker there); another process's calls never reach that process. Without it, or when
   * its process is busy with another call, the call gets a process of its own.
   */
  readonly reuseFor?: string;
}

/** Host programs the sandbox launches through. */
export interface SandboxTools {
  readonly deno: string;
  readonly setsid: string;
  readonly setpriv: string;
  readonly prlimit: string;
  /** The OS wall's launcher and bubblewrap. */
  readonly sh: string;
  readonly bwrap: string;
}

/** Options of {@link JitSandbox}. */
export interface JitSandboxOptions {
  readonly limits?: Partial<SandboxLimits>;
  readonly tools?: Partial<SandboxTools>;
  /**
   * Sandbox processes started ahead of calls, each waiting for exactly one call (default 0:
   * every call starts its own). Nothing is shared between calls either way.
   */
  readonly poolSize?: number;
  /**
   * The OS wall around each sandbox process (`runtime/providers/wall.ts`): `true` requires it,
   * `false` turns it off, `"auto"` (the default) uses it when bubblewrap works here.
   */
  readonly wall?: boolean | "auto";
  /**
   * Serve the calls that name their agent process ({@link CallOptions.reuseFor}) with resident
   * processes: one walled, permission-less process per agent process and tool source. `true`
   * runs each call in a fresh Worker there (its own isolate: globals, module instance, timers,
   * stack trace hooks all new, and ended with the call). `"worker"` also keeps the Worker for
   * the agent process's next call of the tool when the last one succeeded and left nothing
   * running (no unanswered syscall, no pending timer, no message channel): that agent process's
   * calls then share the module's state, as one program's calls would, and a libos handle a
   * call kept refuses once its call has ended; another agent process's calls never reach it, and a
   * failed call's Worker is never kept. A call that breaches a limit or dies retires the process;
   * so do {@link RESIDENT_MAX_CALLS} calls, or its CPU time nearing the process's limit. Default
   * false: one process per call.
   */
  readonly reuse?: boolean | "worker";
}

/** Calls one resident process serves before it is retired. */
export const RESIDENT_MAX_CALLS = 1_000;

/** Resident processes kept at once; the least recently used idle one is retired past that. */
export const RESIDENT_MAX_PROCESSES = 16;

/**
 * A resident process's kernel CPU limit, in calls' budgets: a backstop behind its harness's
 * per-call measure; the process is retired before a call could meet it.
 */
const RESIDENT_CPU_BUDGETS = 4;

/**
 * `RLIMIT_DATA` one Worker's isolate reserves when it starts (about 523 MiB with Deno 2.9.6,
 * measured as VmData), with a margin. A resident process holds up to four (the call's, two
 * started ahead, and a finished one until it is released), so its kernel limit is that much
 * above a one-shot process's; its harness holds each call to the memory budget itself.
 */
const WORKER_DATA_MIB = 560;

/** A resident process: bound to one agent process and one source. */
interface Resident {
  readonly owner: string;
  readonly spawned: Promise<Spawned>;
  /** Its frame lines, read across calls. */
  lines?: AsyncGenerator<FrameLine | undefined>;
  busy: boolean;
  calls: number;
  /** Its CPU time so far as its harness reported it, milliseconds. */
  cpuMs: number;
}

/** A started sandbox process waiting for its one call. */
interface Spawned {
  readonly dir: string;
  readonly child: Deno.ChildProcess;
  readonly stderr: Promise<string>;
}

const ENCODER = new TextEncoder();

/** How long an unused pooled process has to exit on its own (stdin closed) before it is killed. */
const UNUSED_EXIT_MS = 10_000;

/** Runs tool calls, one sandbox process each. Dispose it to stop the pool. */
export class JitSandbox implements AsyncDisposable {
  readonly limits: SandboxLimits;
  readonly poolSize: number;
  readonly #tools: SandboxTools;
  readonly #pool: Promise<Spawned>[] = [];
  readonly #reaping = new Set<Promise<void>>();
  readonly #wallSetting: boolean | "auto";
  readonly #reuse: boolean | "worker";
  /** Resident processes by agent process and source, least recently used first. */
  readonly #residents = new Map<string, Resident>();
  #wall: Promise<boolean> | undefined;
  #disposed = false;

  constructor(options: JitSandboxOptions = {}) {
    this.limits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
    this.poolSize = Math.max(0, Math.min(options.poolSize ?? 0, 64));
    this.#tools = {
      deno: Deno.execPath(),
      setsid: "/usr/bin/setsid",
      setpriv: "/usr/bin/setpriv",
      prlimit: "/usr/bin/prlimit",
      sh: "/bin/sh",
      bwrap: "/usr/bin/bwrap",
      ...options.tools,
    };
    this.#wallSetting = options.wall ?? "auto";
    this.#reuse = options.reuse ?? false;
  }

  /** The resident processes now: the agent process each serves, its host pid, its calls. */
  residents(): { readonly owner: string; readonly pid: number; readonly calls: number }[] {
    const out: { owner: string; pid: number; calls: number }[] = [];
    for (const resident of this.#residents.values()) {
      const pid = resident.lines === undefined ? undefined : this.#pids.get(resident);
      if (pid !== undefined) out.push({ owner: resident.owner, pid, calls: resident.calls });
    }
    return out;
  }

  /**
   * Whether sandbox processes run inside the OS wall: probed once (a walled Deno that prints its
   * version), unless the wall is off.
   * @throws {SandboxError} `wall_unavailable` when the wall is required and does not work here.
   */
  wall(): Promise<boolean> {
    this.#wall ??= (async () => {
      if (this.#wallSetting === false) return false;
      const filter = seccompFilter();
      const works = filter !== undefined && await this.#probe(filter);
      if (!works && this.#wallSetting === true) {
        throw new SandboxError(
          "wall_unavailable",
          "The JIT sandbox's OS wall is required but bubblewrap does not work on this machine (or its CPU has no seccomp filter: x86_64 and aarch64 do); install the Debian package bubblewrap, or allow the sandbox without it",
        );
      }
      return works;
    })();
    return this.#wall;
  }

  /** Starts one walled Deno that prints its version: true when that works. */
  async #probe(filter: Uint8Array): Promise<boolean> {
    const dir = await Deno.makeTempDir({ prefix: "libos-jit-probe-" });
    try {
      await Deno.mkdir(join(dir, "cwd"));
      const seccomp = join(dir, "seccomp.bpf");
      await Deno.writeFile(seccomp, filter);
      const output = await new Deno.Command(this.#tools.setsid, {
        args: sandboxWallArgv(this.#tools, seccomp, {
          deno: this.#tools.deno,
          dir,
          writable: ["cwd"],
        }, [SANDBOX_DENO, "--version"]),
        clearEnv: true,
        env: { NO_COLOR: "1" },
        stdout: "null",
        stderr: "null",
      }).output();
      return output.success;
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }

  /**
   * Starts processes ahead of calls until `count` wait unused (default {@link poolSize}; calls
   * refill to that). A caller that knows a call is coming starts its process now, so that the
   * start (and the wall's probe, the first time) overlaps its other work; each process still
   * serves exactly one call.
   */
  warm(count: number = this.poolSize): void {
    const wanted = Math.max(0, Math.min(count, 64));
    while (!this.#disposed && this.#pool.length < wanted) {
      const spawned = this.#spawn();
      // A pooled process that failed to start is noticed by the call that takes it.
      spawned.catch(() => {});
      this.#pool.push(spawned);
    }
  }

  /**
   * Runs `source`'s `run(args, libos)` in a sandbox process of its own (a pooled one when the
   * pool has one ready), answering its syscalls with `onSyscall`. The result is returned as
   * soon as its frame arrives; the process is reaped afterwards.
   * @throws {SandboxError} when the tool throws (`tool_error`) or breaches a limit; the handler's
   *   own error when {@link CallOptions.endsCall} says it ends the call.
   */
  async call(
    source: string,
    args: unknown,
    onSyscall: SyscallHandler,
    signal?: AbortSignal,
    options: CallOptions = {},
  ): Promise<SandboxResult> {
    signal?.throwIfAborted();
    if (this.#disposed) throw new SandboxError("sandbox_failed", "The sandbox was disposed");
    if (this.#reuse !== false && options.reuseFor !== undefined) {
      const key = residentKey(options.reuseFor, source, options.language);
      const resident = this.#residents.get(key);
      if (resident === undefined || !resident.busy) {
        return this.#callResident(key, resident, source, args, onSyscall, signal, options);
      }
    }
    const taken = this.#pool.shift() ?? this.#spawn();
    let spawned: Spawned;
    try {
      spawned = await taken;
    } catch (error) {
      throw new SandboxError("sandbox_failed", `The sandbox process did not start: ${error}`, {
        cause: error,
      });
    }
    try {
      return await this.#drive(spawned, source, args, onSyscall, signal, options);
    } finally {
      this.#reap(spawned);
      // Refilled after the call: starting a Deno competes with the running tool for the CPU.
      this.warm();
    }
  }

  /** One call in the resident process of `key`, started now if there is none. */
  async #callResident(
    key: string,
    found: Resident | undefined,
    source: string,
    args: unknown,
    onSyscall: SyscallHandler,
    signal: AbortSignal | undefined,
    options: CallOptions,
  ): Promise<SandboxResult> {
    let resident = found;
    if (resident === undefined) {
      this.#evictResidents();
      const spawned = this.#spawn(true);
      spawned.catch(() => {});
      resident = { owner: options.reuseFor!, spawned, busy: false, calls: 0, cpuMs: 0 };
    }
    // Most recently used last.
    this.#residents.delete(key);
    this.#residents.set(key, resident);
    resident.busy = true;
    let spawned: Spawned;
    try {
      spawned = await resident.spawned;
    } catch (error) {
      this.#residents.delete(key);
      throw new SandboxError("sandbox_failed", `The sandbox process did not start: ${error}`, {
        cause: error,
      });
    }
    this.#pids.set(resident, spawned.child.pid);
    resident.lines ??= frameLines(spawned.child.stdout, this.limits.maxFrameBytes);
    const usage = { cpuMs: resident.cpuMs };
    let healthy = false;
    try {
      const result = await this.#drive(spawned, source, args, onSyscall, signal, options, {
        lines: resident.lines,
        usage,
      });
      healthy = true;
      return result;
    } catch (error) {
      // A tool that threw leaves its process as it found it; anything else retires it.
      healthy = error instanceof SandboxError && error.code === "tool_error";
      throw error;
    } finally {
      resident.busy = false;
      resident.calls++;
      resident.cpuMs = usage.cpuMs;
      const cpuLimitMs = this.limits.cpuSeconds * 1000 * RESIDENT_CPU_BUDGETS;
      if (
        !healthy || this.#disposed || resident.calls >= RESIDENT_MAX_CALLS ||
        resident.cpuMs + this.limits.cpuSeconds * 1000 > cpuLimitMs
      ) {
        this.#retire(key, resident, spawned, healthy);
      }
    }
  }

  /** Host pids of resident processes, for {@link residents}. */
  readonly #pids = new WeakMap<Resident, number>();

  /** Retires idle resident processes beyond the most kept (the least recently used first). */
  #evictResidents(): void {
    for (const [key, resident] of this.#residents) {
      if (this.#residents.size < RESIDENT_MAX_PROCESSES) return;
      if (resident.busy) continue;
      this.#residents.delete(key);
      resident.spawned.then((spawned) => this.#reap(spawned, { unused: true }), () => {});
    }
  }

  /** Ends a resident process: the ordinary way when it is well, killed otherwise. */
  #retire(key: string, resident: Resident, spawned: Spawned, healthy: boolean): void {
    if (this.#residents.get(key) === resident) this.#residents.delete(key);
    this.#reap(spawned, { unused: healthy });
  }

  /** Kills pooled processes and waits until every process and directory is gone. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#disposed = true;
    for (const resident of this.#residents.values()) {
      if (resident.busy) continue;
      await resident.spawned.then((spawned) => this.#reap(spawned, { unused: true }), () => {});
    }
    this.#residents.clear();
    for (const pending of this.#pool.splice(0)) {
      await pending.then((spawned) => this.#reap(spawned, { unused: true }), () => {});
    }
    while (this.#reaping.size > 0) await Promise.all([...this.#reaping]);
  }

  /**
   * Kills a process group, then waits for it and removes its directory, in the background.
   * `unused`: a pooled process no call took may still be starting, and a kill landing before
   * bubblewrap arms its parent-death signal leaves the sandbox's init running, holding the pipes
   * (seen under load: dispose then waited for ever). Such a process is ended the ordinary way
   * first — its stdin closed, the harness exits — and killed only if it has not after a while.
   */
  #reap(spawned: Spawned, options: { readonly unused?: boolean } = {}): void {
    const done = (async () => {
      if (options.unused) {
        await spawned.child.stdin.close().catch(() => {});
        let timer: ReturnType<typeof setTimeout> | undefined;
        const exited = await Promise.race([
          spawned.child.status.then(() => true, () => true),
          new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), UNUSED_EXIT_MS)),
        ]);
        clearTimeout(timer);
        if (!exited) killChild(spawned.child);
      } else killChild(spawned.child);
      await spawned.child.stdin.close().catch(() => {});
      await spawned.child.status.catch(() => {});
      await spawned.stderr.catch(() => "");
      await Deno.remove(spawned.dir, { recursive: true }).catch(() => {});
    })();
    this.#reaping.add(done);
    done.finally(() => this.#reaping.delete(done));
  }

  /**
   * Starts one sandbox process: for one call, or `resident` (for several, each in a Worker).
   */
  async #spawn(resident = false): Promise<Spawned> {
    const limits = this.limits;
    const dir = await Deno.makeTempDir({ prefix: "libos-jit-" });
    const harness = join(dir, "harness.js");
    await Deno.copyFile(new URL("./_harness.js", import.meta.url), harness);
    // The vetted module and an import map sending its allowlisted specifiers there; a resident
    // process's Workers may read no file, so there it is a data: URL.
    const vendor = new URL("./vendor/libos_std.js", import.meta.url);
    let target = "./vendor/libos_std.js";
    if (resident) {
      target = `data:application/javascript;base64,${base64(await Deno.readFile(vendor))}`;
    } else {
      await Deno.mkdir(join(dir, "vendor"));
      await Deno.copyFile(vendor, join(dir, "vendor", "libos_std.js"));
    }
    const importMap = join(dir, "import_map.json");
    await Deno.writeTextFile(
      importMap,
      JSON.stringify({ imports: Object.fromEntries(VETTED_IMPORTS.map((key) => [key, target])) }),
    );
    await Deno.mkdir(join(dir, "cache"));
    await Deno.mkdir(join(dir, "cwd"));
    const heapMiB = Math.max(16, Math.min(limits.memoryMiB, 4096));
    const cpuLimit = limits.cpuSeconds * (resident ? RESIDENT_CPU_BUDGETS : 1);
    const dataMiB = DENO_BASE_DATA_MIB + limits.memoryMiB + (resident ? 4 * WORKER_DATA_MIB : 0);
    const walled = await this.wall();
    // Inside the wall the process sees its directory at a neutral path, and Deno at another.
    const inside = walled ? SANDBOX_DIR : dir;
    const deno = [
      walled ? SANDBOX_DENO : this.#tools.deno,
      "run",
      "--quiet",
      "--no-prompt",
      "--no-config",
      "--no-remote",
      "--no-npm",
      `--import-map=${join(inside, "import_map.json")}`,
      `--v8-flags=--max-old-space-size=${heapMiB},--disallow-code-generation-from-strings`,
      join(inside, "harness.js"),
      ...(resident ? ["resident"] : []),
    ];
    let command = deno;
    if (walled) {
      const seccomp = join(dir, "seccomp.bpf");
      await Deno.writeFile(seccomp, seccompFilter()!);
      command = sandboxWallArgv(this.#tools, seccomp, {
        deno: this.#tools.deno,
        dir,
        writable: ["cache", "cwd"],
      }, deno);
    }
    const child = new Deno.Command(this.#tools.setsid, {
      args: [
        this.#tools.setpriv,
        "--pdeathsig",
        "SIGKILL",
        "--",
        this.#tools.prlimit,
        `--data=${dataMiB * 1024 * 1024}`,
        // SIGXCPU at the soft limit (reported as cpu_limit), SIGKILL a second later; a resident
        // process's harness measures each call, this limit being its backstop.
        `--cpu=${cpuLimit}:${cpuLimit + 1}`,
        `--fsize=${16 * 1024 * 1024}`,
        "--",
        ...command,
      ],
      cwd: join(dir, "cwd"),
      clearEnv: true,
      env: { DENO_DIR: join(inside, "cache"), NO_COLOR: "1" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    return { dir, child, stderr: readCapped(child.stderr, limits.maxOutputBytes) };
  }

  async #drive(
    spawned: Spawned,
    source: string,
    args: unknown,
    onSyscall: SyscallHandler,
    signal: AbortSignal | undefined,
    options: CallOptions,
    resident?: {
      /** The process's frame lines, read on by its next call. */
      readonly lines: AsyncGenerator<FrameLine | undefined>;
      /** Set to the process's CPU time its harness reports. */
      readonly usage: { cpuMs: number };
    },
  ): Promise<SandboxResult> {
    const limits = this.limits;
    const { child } = spawned;
    const started = performance.now();
    const nonce = crypto.randomUUID();
    const kill = () => killChild(child);
    const writer = child.stdin.getWriter();
    const send = (frame: unknown) =>
      writer.write(ENCODER.encode(JSON.stringify(frame) + "\n")).catch(() => {});

    // Wall time runs only while the tool runs: paused while the host serves a syscall. One
    // timer at a time, armed for the earliest moment the budget could run out; when it fires
    // during a pause, or before the budget is spent (pauses pushed it back), it is armed again
    // for what is left — instead of a timer set and cleared around every syscall.
    let breach: LibosError | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let spent = 0;
    let resumedAt: number | undefined;
    // Aborted when the call ends or breaches: a syscall blocked on the host (a human, a child)
    // is cut off with it.
    const serving = new AbortController();
    const stop = (error: LibosError) => {
      breach ??= error;
      kill();
      serving.abort(error);
    };
    const used = () => spent + (resumedAt === undefined ? 0 : performance.now() - resumedAt);
    const arm = () => {
      timer = setTimeout(() => {
        timer = undefined;
        if (serving.signal.aborted) return;
        // Paused: the next resume arms it again.
        if (resumedAt === undefined) return;
        if (used() >= limits.wallMs) {
          stop(
            new SandboxError(
              "timeout",
              `The tool ran for more than ${limits.wallMs} ms (time serving syscalls not counted)`,
            ),
          );
        } else arm();
      }, Math.max(0, limits.wallMs - used()));
    };
    const resume = () => {
      resumedAt = performance.now();
      if (timer === undefined) arm();
    };
    const pause = () => {
      if (resumedAt !== undefined) spent += performance.now() - resumedAt;
      resumedAt = undefined;
    };
    const onAbort = () => stop(new SandboxError("aborted", "The call was cancelled"));
    signal?.addEventListener("abort", onAbort, { once: true });

    const serveClock = new ServingClock(
      limits.maxServingMs,
      options.waitingOnHuman ?? (() => false),
    );
    const overServing = () =>
      new SandboxError(
        "serving_limit",
        `The host spent more than ${limits.maxServingMs} ms serving the tool's syscalls (time waiting on a human not counted); split the work into several calls`,
      );
    const logs: ToolLog[] = [];
    let logBytes = 0;
    let frameCount = 0;
    let syscalls = 0;
    let outcome: { value: unknown } | SandboxError | undefined;
    const death = child.status.then((exited) => ({ exited }));
    const lines = resident?.lines ?? frameLines(child.stdout, limits.maxFrameBytes);
    try {
      await send({
        type: "run",
        v: PROTOCOL_VERSION,
        nonce,
        memoryBytes: limits.memoryMiB * 1024 * 1024,
        source,
        ...(options.language === "javascript" ? { lang: options.language } : {}),
        ...(resident ? { cpuMs: limits.cpuSeconds * 1000 } : {}),
        ...(resident && this.#reuse === "worker" ? { keep: true } : {}),
        args,
      });
      resume();
      for (;;) {
        const next = await lines.next();
        if (next.done) break;
        const line = next.value;
        if (line === undefined) {
          stop(
            new SandboxError(
              "output_limit",
              `The tool sent a frame over ${limits.maxFrameBytes} bytes`,
            ),
          );
          break;
        }
        // Counted before it is parsed: a flood of tiny frames costs the host no more than this.
        if (++frameCount > limits.maxFrames) {
          stop(
            new SandboxError(
              "frame_limit",
              `The tool sent more than ${limits.maxFrames} frames (logs, syscalls) in one call; log less, or batch its work`,
            ),
          );
          break;
        }
        const frame = parseFrame(line.text);
        if (!frame || frame.n !== nonce) {
          stop(new SandboxError("protocol_error", "The tool sent a malformed frame"));
          break;
        }
        if (frame.type === "log") {
          // The whole frame counts, newline included: an empty line costs what carrying it does.
          logBytes += line.bytes + 1;
          if (logBytes > limits.maxOutputBytes) {
            stop(
              new SandboxError(
                "output_limit",
                `The tool logged over ${limits.maxOutputBytes} bytes (each log frame counted whole, as sent)`,
              ),
            );
            break;
          }
          logs.push({ level: frame.level, text: frame.text });
          continue;
        }
        if (frame.type === "result") {
          if (resident && frame.cpu !== undefined) resident.usage.cpuMs = frame.cpu;
          outcome = { value: frame.value };
          break;
        }
        if (frame.type === "error") {
          if (resident && frame.cpu !== undefined) resident.usage.cpuMs = frame.cpu;
          if (resident && frame.limit === "cpu") {
            outcome = new SandboxError(
              "cpu_limit",
              `The tool used more than ${limits.cpuSeconds} s of CPU`,
            );
            break;
          }
          // An allocation the data limit refused surfaces in the tool as a RangeError; the
          // harness marks it out of memory only when the process really nears its budget.
          outcome = frame.oom
            ? new SandboxError(
              "memory_limit",
              `The tool ran out of memory (budget ${limits.memoryMiB} MiB): ${frame.message}`,
            )
            : new SandboxError("tool_error", `The tool failed: ${frame.name}: ${frame.message}`);
          break;
        }
        // A syscall: the clock stops while the host serves it.
        if (++syscalls > limits.maxSyscalls) {
          stop(
            new SandboxError(
              "syscall_limit",
              `The tool made more than ${limits.maxSyscalls} syscalls`,
            ),
          );
          break;
        }
        pause();
        const metered = serveClock.serve(() => stop(overServing()));
        const served = onSyscall(frame.name, frame.args, serving.signal).then(
          (value) => ({ type: "syscall_result", id: frame.id, ok: true, value: value ?? null }),
          (error: unknown) => {
            if (error instanceof LibosError && options.endsCall?.(error)) stop(error);
            return {
              type: "syscall_result",
              id: frame.id,
              ok: false,
              error: {
                code: error instanceof LibosError ? error.code : "failed",
                message: (error instanceof Error ? error.message : String(error)).slice(0, 4096),
              },
            };
          },
        );
        // The tool's process may die while the host serves (its CPU limit runs on while a
        // syscall waits on a human): then the call ends now, and the wait is cut off with it.
        const reply = await Promise.race([served, death]);
        const overspent = metered();
        if ("exited" in reply) {
          stop(breach ?? deathOf(reply.exited, await spawned.stderr, limits));
          break;
        }
        if (overspent) stop(overServing());
        if (breach) break;
        await send(reply);
        resume();
      }
    } finally {
      clearTimeout(timer);
      serveClock.close();
      serving.abort();
      signal?.removeEventListener("abort", onAbort);
      writer.releaseLock();
    }
    // A one-shot process's output is read no further (as a for-await's break would end it).
    if (!resident) await lines.return(undefined);
    if (breach) throw breach;
    if (outcome instanceof SandboxError) throw outcome;
    if (outcome) {
      // Returned now; the process is reaped after (it may still be exiting).
      return { value: outcome.value, logs, syscalls, durationMs: performance.now() - started };
    }
    kill();
    throw deathOf(await child.status, await spawned.stderr, limits);
  }
}

/**
 * Kills a sandbox process by its handle, which needs no permission (`Deno.kill` on its group
 * needs one the CLI's bootstrap does not grant). Walled, the process is bwrap: its death ends the
 * wall's PID namespace, the tool's Deno with it; unwalled, it is the tool's Deno itself, which
 * may start no process of its own.
 */
function killChild(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch (error) {
    // Already exited: nothing left to stop.
    if (!(error instanceof TypeError)) throw error;
  }
}

/** Why a sandbox process ended without a result frame. */
/**
 * Signals by number, for a walled process: bubblewrap reports a child a signal ended as exit
 * status 128 + its number (the harness never exits with such a status itself).
 */
const SIGNALS: Readonly<Record<number, Deno.Signal>> = Object.freeze({
  5: "SIGTRAP",
  6: "SIGABRT",
  9: "SIGKILL",
  11: "SIGSEGV",
  24: "SIGXCPU",
  25: "SIGXFSZ",
});

/** The signal that ended a sandbox process, walled or not. */
function signalOf(status: Deno.CommandStatus): Deno.Signal | null {
  if (status.signal) return status.signal;
  return status.code > 128 ? SIGNALS[status.code - 128] ?? null : null;
}

function deathOf(exited: Deno.CommandStatus, stderr: string, limits: SandboxLimits): SandboxError {
  const signal = signalOf(exited);
  const status = { ...exited, signal };
  const wall = wallFailure(status.code, stderr);
  if (wall !== null) {
    return new SandboxError(
      "sandbox_failed",
      `The tool's OS wall could not be set up, so it did not run: ${wall}`,
    );
  }
  const tail = stderr.trim().split("\n").slice(-3).join(" | ").slice(0, 500);
  if (status.signal === "SIGXCPU") {
    return new SandboxError("cpu_limit", `The tool used more than ${limits.cpuSeconds} s of CPU`);
  }
  if (
    status.signal === "SIGTRAP" || status.signal === "SIGABRT" || status.signal === "SIGSEGV" ||
    /out of memory|heap limit|allocation failed/i.test(stderr)
  ) {
    return new SandboxError(
      "memory_limit",
      `The tool ran out of memory (budget ${limits.memoryMiB} MiB)${tail ? `: ${tail}` : ""}`,
    );
  }
  return new SandboxError(
    "protocol_error",
    `The tool's process ended (${status.signal ?? `exit ${status.code}`}) without a result${
      tail ? `: ${tail}` : ""
    }`,
  );
}

function parseFrame(line: string): ToolFrame | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  const parsed = ToolFrameSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** At most `max` bytes of a stream, as text; the rest is drained. */
async function readCapped(stream: ReadableStream<Uint8Array>, max: number): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of stream) {
    if (text.length < max) text += decoder.decode(chunk, { stream: true });
  }
  return text.slice(0, max);
}

/**
 * The resident process key of an agent process's calls of one source: the source itself (a map
 * key hashes it; a digest here would cost each call a trip to the thread pool).
 */
function residentKey(owner: string, source: string, language: CallOptions["language"]): string {
  return `${owner}\u0000${language ?? "typescript"}\u0000${source}`;
}

/** Standard base64 of some bytes. */
function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
