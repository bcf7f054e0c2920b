/**
 * The cooperative scheduler. A quantum is the three phases of DESIGN §6: a synchronous step marks
 * the process running (after checking its status and wall-time budget); the driver does its work
 * outside any transaction, starting effects only through the action ledger; a second synchronous
 * step applies the result and any signals that arrived meanwhile.
 *
 * Processes run round-robin from a FIFO ready queue, at most `concurrency` quanta at a time.
 * Nothing polls: a process enters the queue when the process manager says it became runnable
 * (spawn, yield, a child's exit, a signal, a human's decision made in this runtime), and sleepers
 * are woken by clock timers. The one exception (DESIGN §4): `runUntilIdle({ waitForHumans })`
 * checks `PRAGMA data_version` on a short interval while a process waits on a human, to notice a
 * decision made from another terminal.
 *
 * @module
 */
import type {
  ActionLedger,
  ActionOutcome,
  ActionRecord,
  ActionRequest,
} from "../process/action_ledger.ts";
import type { JsonValue } from "../base/canonical_json.ts";
import { type Clock, pauseFor } from "../base/clock.ts";
import { errorInfo, HumanPendingError, QuantumEnd } from "../base/errors.ts";
import type { HumanChannel, HumanResolution } from "../human/human_channel.ts";
import type { AgentProcess } from "../process/process.ts";
import { deadline } from "../process/process_budget.ts";
import type { ProcessManager, QuantumResult } from "../process/process_manager.ts";

/** What a driver gets for one quantum of one process. */
export interface QuantumContext {
  /** The process as the quantum began (status `running`), with its wake reason and interrupts. */
  readonly process: AgentProcess;
  /** Aborted when the process is terminated, its wall time runs out, or the run is cancelled. */
  readonly signal: AbortSignal;
  /** Outcomes the process has not seen yet, e.g. `outcome_unknown` after a restart. */
  readonly recovered: readonly ActionRecord[];
  /**
   * When a human's decision woke the process: what came of the request it waited on — the
   * outcome of the approved action, run once by the runtime (no second model call), or a failed
   * result with nothing done for a rejection or an expiry, or the answer to a question.
   */
  readonly resumed?: HumanResolution & { readonly type: "outcome" };
  /** Runs an effect at most once through the action ledger (intent committed first). */
  perform(
    action: ActionRequest,
    effect: (signal: AbortSignal) => Promise<JsonValue>,
  ): Promise<ActionOutcome>;
}

/** What makes a process progress: the model executor, or a test's fake. */
export interface ProcessDriver {
  /**
   * Runs one quantum and says what the process does next. A {@link HumanPendingError} thrown
   * out of it (a primitive parked an action on a human) means `wait_human` on that request.
   */
  runQuantum(context: QuantumContext): Promise<QuantumResult>;
}

/** What one quantum did. */
export interface QuantumReport {
  readonly pid: string;
  readonly result: QuantumResult;
  /** The process's status after the quantum. */
  readonly status: AgentProcess["status"];
}

/** What {@link Scheduler.runUntilIdle} did. */
export interface RunReport {
  readonly quanta: number;
  /** True when it stopped because nothing was runnable or resumable; false when cancelled or capped. */
  readonly idle: boolean;
}

/** What the scheduler needs. */
export interface SchedulerOptions {
  readonly processes: ProcessManager;
  readonly ledger: ActionLedger;
  readonly driver: ProcessDriver;
  readonly clock: Clock;
  /** Quanta in flight at once (default 4). */
  readonly concurrency?: number;
  /** The human channel: re-dispatches approved actions when a decision wakes a process. */
  readonly human?: HumanChannel;
  /**
   * The processes this scheduler runs (default: every one). The launcher runs one process tree:
   * processes outside the scope are neither recovered, queued, nor woken by it, so another
   * runner's work on the same database is left alone.
   */
  readonly scope?: (pid: string) => boolean;
  /**
   * Asked right before each quantum starts (before the process is marked running): false skips
   * it. A worker answers whether its lease on the process's tree is still surely held.
   */
  readonly admit?: (pid: string) => boolean;
}

/** Options of {@link Scheduler.runUntilIdle}. */
export interface RunUntilIdleOptions {
  readonly signal?: AbortSignal;
  readonly maxQuanta?: number;
  /**
   * Keep running while a process waits on a human, until every such request is decided
   * (from this runtime or another terminal) or expires; default false (waiting on a human counts
   * as idle). Decisions made elsewhere are noticed by polling `PRAGMA data_version` (DESIGN §4).
   */
  readonly waitForHumans?: boolean;
  /** How often to poll for decisions while waiting on humans (default 150 ms). */
  readonly humanPollMs?: number;
  /**
   * A gentle stop: once aborted, no quantum starts, the ones in flight finish as they would, and
   * the run returns (not idle). `signal` is the hard stop: it aborts quanta in flight.
   */
  readonly drain?: AbortSignal;
}

/** How many quanta may start before the run loop lets timers and I/O in. */
const YIELD_EVERY = 64;

/**
 * A cheap macrotask boundary: a message to ourselves lets due timers and I/O run (11 µs here,
 * where a chained `setTimeout(0)` is clamped to milliseconds).
 */
function eventLoopTurn(): { next(): Promise<void> } & Disposable {
  let channel: MessageChannel | undefined;
  return {
    next() {
      channel ??= new MessageChannel();
      const { port1, port2 } = channel;
      return new Promise<void>((resolve) => {
        port1.onmessage = () => resolve();
        port2.postMessage(null);
      });
    },
    [Symbol.dispose]() {
      channel?.port1.close();
      channel?.port2.close();
    },
  };
}

/** The reason a finished quantum's deadline timer is cancelled with (cheaper than a DOMException). */
const QUANTUM_OVER = Object.freeze({ reason: "quantum over" });

interface InFlight {
  readonly controller: AbortController;
  readonly done: Promise<QuantumReport | undefined>;
}

/** Runs processes. Build one per runtime; close it when done. */
export class Scheduler implements Disposable {
  readonly #processes: ProcessManager;
  readonly #ledger: ActionLedger;
  readonly #driver: ProcessDriver;
  readonly #clock: Clock;
  readonly #concurrency: number;
  readonly #human: HumanChannel | undefined;
  readonly #scope: (pid: string) => boolean;
  readonly #admit: ((pid: string) => boolean) | undefined;
  readonly #ready: string[] = [];
  readonly #queued = new Set<string>();
  readonly #inFlight = new Map<string, InFlight>();
  readonly #timers = new Map<string, AbortController>();
  /** Pids that became runnable while their previous quantum was still finishing. */
  readonly #afterFlight = new Set<string>();
  readonly #unlisten: () => void;
  #wakeup = Promise.withResolvers<void>();
  #recovered = false;
  #closed = false;
  #seenVersion = -1;

  /** Wires the scheduler to the process manager's notifications. */
  constructor(options: SchedulerOptions) {
    this.#processes = options.processes;
    this.#ledger = options.ledger;
    this.#driver = options.driver;
    this.#clock = options.clock;
    this.#human = options.human;
    this.#scope = options.scope ?? (() => true);
    this.#admit = options.admit;
    const concurrency = options.concurrency ?? 4;
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1024) {
      throw new RangeError(
        `Scheduler concurrency must be an integer from 1 to 1024, got ${concurrency}`,
      );
    }
    this.#concurrency = concurrency;
    this.#unlisten = this.#processes.listen({
      runnable: (pid) => this.#enqueue(pid),
      sleeping: (pid, until) => this.#arm(pid, until),
      terminated: (pid) =>
        this.#inFlight.get(pid)?.controller.abort(new Error(`process ${pid} was terminated`)),
    });
  }

  #poke(): void {
    const wakeup = this.#wakeup;
    this.#wakeup = Promise.withResolvers<void>();
    wakeup.resolve();
  }

  #enqueue(pid: string): void {
    if (this.#queued.has(pid) || !this.#scope(pid)) return;
    this.#queued.add(pid);
    this.#ready.push(pid);
    this.#poke();
  }

  #arm(pid: string, until: number): void {
    this.#timers.get(pid)?.abort();
    if (this.#closed || !this.#scope(pid)) return;
    const controller = new AbortController();
    this.#timers.set(pid, controller);
    this.#clock.sleep(Math.max(0, until - this.#clock.now()), controller.signal).then(() => {
      if (this.#timers.get(pid) !== controller) return;
      this.#timers.delete(pid);
      if (!this.#closed) this.#processes.wakeIfDue(pid);
      this.#poke();
    }, () => {/* cancelled: the process woke or was re-armed another way */});
  }

  /**
   * After a restart: executing actions become `outcome_unknown`, processes left running become
   * runnable, and every runnable process and sleeper is picked up. Runs once; later calls do nothing.
   */
  recover(): {
    readonly outcomeUnknown: readonly ActionRecord[];
    readonly recovered: readonly string[];
  } {
    if (this.#recovered) return { outcomeUnknown: [], recovered: [] };
    this.#recovered = true;
    const outcomeUnknown = this.#ledger.recover(this.#scope);
    for (const action of outcomeUnknown) {
      // A JIT call blocked on a human when the runtime stopped: its approval is withdrawn.
      if (action.kind === "jit.call") {
        this.#human?.cancelSince(
          action.pid,
          action.created,
          `JIT call ${action.id} was cut off by a restart`,
        );
      }
    }
    const recovered = this.#processes.recoverRunning(this.#scope);
    // Requests that expired while nothing ran are rejections: their processes wake now.
    this.#human?.expireDue();
    let after: string | undefined;
    for (;;) {
      const page = this.#processes.list({
        statuses: ["sleeping"],
        limit: 1000,
        ...(after ? { afterPid: after } : {}),
      });
      for (const p of page) {
        if (p.wait?.kind !== "sleep" || !this.#scope(p.pid)) continue;
        // A sleep that ended while nothing ran wakes now; the rest get timers.
        if (p.wait.until > this.#clock.now() || !this.#processes.wakeIfDue(p.pid)) {
          this.#arm(p.pid, p.wait.until);
        }
      }
      if (page.length < 1000) break;
      after = page[page.length - 1]!.pid;
    }
    this.#enqueueRunnable();
    return { outcomeUnknown, recovered };
  }

  /**
   * Queues every runnable process not queued or in flight, oldest first (so the first round
   * after a restart runs processes in the order they were created). Also picks up processes
   * another connection made runnable (a decision made with `libos human` from another terminal).
   */
  #enqueueRunnable(): void {
    const runnable: AgentProcess[] = [];
    let after: string | undefined;
    for (;;) {
      const page = this.#processes.list({
        statuses: ["runnable"],
        limit: 1000,
        ...(after ? { afterPid: after } : {}),
      });
      runnable.push(...page);
      if (page.length < 1000) break;
      after = page[page.length - 1]!.pid;
    }
    runnable.sort((a, b) => a.createdAt - b.createdAt || (a.pid < b.pid ? -1 : 1));
    for (const p of runnable) {
      if (!this.#inFlight.has(p.pid)) this.#enqueue(p.pid);
    }
  }

  /**
   * Queues the processes that became runnable without this scheduler hearing of it: a decision
   * made on another connection (`libos human approve` in another terminal).
   */
  refresh(): void {
    this.#enqueueRunnable();
  }

  /** Whether some process waits on a human right now. */
  #humansAwaited(): boolean {
    return this.#processes.list({ statuses: ["waiting_human"], limit: 10_000 }).some((p) =>
      this.#scope(p.pid)
    );
  }

  /** Pids waiting in the ready queue, in order. */
  get ready(): readonly string[] {
    return [...this.#ready];
  }

  /** The next ready pid that is not in flight (one still finishing is queued again afterwards). */
  #next(): string | undefined {
    for (;;) {
      const pid = this.#ready.shift();
      if (pid === undefined) return undefined;
      this.#queued.delete(pid);
      if (!this.#inFlight.has(pid)) return pid;
      this.#afterFlight.add(pid);
    }
  }

  async #quantum(pid: string, controller: AbortController): Promise<QuantumReport | undefined> {
    if (this.#admit !== undefined && !this.#admit(pid)) return undefined;
    const p = this.#processes.beginQuantum(pid);
    if (!p) return undefined;
    // The wall-time budget also holds in the middle of a quantum.
    const deadlineTimer = new AbortController();
    this.#clock.sleep(Math.max(0, deadline(p) - this.#clock.now()), deadlineTimer.signal).then(
      () => {
        controller.abort(new Error(`process ${pid} ran out of wall time`));
        this.#processes.enforceWallTime(pid);
      },
      (error: unknown) => {
        // The quantum ended first. A timer that failed otherwise cannot hold the budget: the
        // quantum stops now.
        if (!deadlineTimer.signal.aborted) controller.abort(error);
      },
    );
    const recovered = this.#ledger.unreported(pid);
    let result: QuantumResult;
    try {
      if ((p.wake?.kind === "cancelled" || p.wake?.kind === "interrupted") && p.wake.request) {
        // Cancelled or interrupted while waiting on a human: the request is withdrawn.
        this.#human?.cancel(p.wake.request, "runtime", `process ${pid} was ${p.wake.kind}`);
      }
      const resumed = p.wake?.kind === "human" && this.#human
        ? await this.#human.resume(pid, p.wake.request, controller.signal)
        : undefined;
      result = resumed?.type === "pending"
        // Still undecided (or the re-run asked again): back to waiting, no model turn spent.
        ? { type: "wait_human", request: resumed.request }
        : await this.#driver.runQuantum({
          process: p,
          signal: controller.signal,
          recovered,
          ...(resumed ? { resumed } : {}),
          perform: (action, effect) => this.#ledger.perform(pid, action, effect, controller.signal),
        });
    } catch (error) {
      if (error instanceof HumanPendingError) {
        // A primitive parked the action on a human: the process waits for the decision.
        result = { type: "wait_human", request: error.request };
      } else if (error instanceof QuantumEnd) {
        // A tool asked to wait for a child or to exit: that is how the quantum ends.
        result = error.outcome;
      } else {
        const info = errorInfo(error);
        result = { type: "fail", reason: `driver_error:${info.code}: ${info.message}` };
      }
    } finally {
      deadlineTimer.abort(QUANTUM_OVER);
    }
    this.#ledger.markReported(recovered.map((a) => a.id));
    const after = this.#processes.endQuantum(pid, result, {
      interrupts: p.interrupts,
      wake: p.wake,
    });
    if (result.type === "wait_human" && after?.status === "waiting_human") {
      // A decision made before the process parked found nobody waiting: wake it now.
      this.#human?.settleWait(pid, result.request);
    }
    return { pid, result, status: after?.status ?? "failed" };
  }

  #start(
    pid: string,
    outer?: AbortSignal,
    onDone?: (report: QuantumReport | undefined) => void,
  ): InFlight {
    const controller = new AbortController();
    const onAbort = () => controller.abort(outer?.reason);
    outer?.addEventListener("abort", onAbort, { once: true });
    const done = this.#quantum(pid, controller).then((report) => {
      // Counted before the quantum leaves the in-flight set, so an idle check never misses it.
      onDone?.(report);
      return report;
    }).finally(() => {
      outer?.removeEventListener("abort", onAbort);
      this.#inFlight.delete(pid);
      if (this.#afterFlight.delete(pid)) this.#enqueue(pid);
      this.#poke();
    });
    const entry = { controller, done };
    this.#inFlight.set(pid, entry);
    return entry;
  }

  /**
   * Runs one quantum of the next runnable process and reports it; `undefined` when nothing is
   * runnable (sleepers are not waited for).
   */
  async step(options: { readonly signal?: AbortSignal } = {}): Promise<QuantumReport | undefined> {
    this.recover();
    for (let pid = this.#next(); pid !== undefined; pid = this.#next()) {
      if (options.signal?.aborted) return undefined;
      const report = await this.#start(pid, options.signal).done;
      if (report) return report;
    }
    return undefined;
  }

  /**
   * Runs until nothing is runnable or resumable: no process is ready, no quantum is in flight,
   * and no sleeper has a timer (a process waiting on a human does not keep it running). Stops
   * early, aborting quanta in flight, when `signal` aborts or after `maxQuanta` quanta; stops
   * starting quanta, and returns once those in flight end, when `drain` aborts.
   */
  async runUntilIdle(options: RunUntilIdleOptions = {}): Promise<RunReport> {
    this.recover();
    const { signal } = options;
    const max = options.maxQuanta ?? Number.POSITIVE_INFINITY;
    let started = 0;
    let ran = 0;
    let lastYield = 0;
    using turn = eventLoopTurn();
    const { drain } = options;
    const settled = (s: AbortSignal | undefined) =>
      s
        ? new Promise<void>((resolve) =>
          s.aborted ? resolve() : s.addEventListener("abort", () => resolve(), { once: true })
        )
        : undefined;
    const aborted = settled(signal);
    const draining = settled(drain);
    for (;;) {
      if (signal?.aborted || this.#closed) break;
      if (drain?.aborted && this.#inFlight.size === 0) return { quanta: ran, idle: false };
      while (this.#inFlight.size < this.#concurrency && started < max && !drain?.aborted) {
        const pid = this.#next();
        if (pid === undefined) break;
        started++;
        // A process that stopped being runnable before its turn costs no quantum.
        this.#start(pid, signal, (report) => report ? ran++ : started--);
      }
      if (this.#inFlight.size === 0) {
        if (started >= max) return { quanta: ran, idle: false };
        if (this.#ready.length === 0 && this.#timers.size === 0) {
          if (!options.waitForHumans || !this.#humansAwaited()) return { quanta: ran, idle: true };
          // The one polling exception (DESIGN §4): only while a process waits on a human.
          await pauseFor(options.humanPollMs ?? 150, signal);
          this.#noticeDecisions();
          continue;
        }
      }
      const waits: Promise<unknown>[] = [
        this.#wakeup.promise,
        ...[...this.#inFlight.values()].map((f) => f.done),
      ];
      if (aborted) waits.push(aborted);
      if (draining && !drain?.aborted) waits.push(draining);
      await Promise.race(waits);
      // Quanta that never wait on I/O resolve as microtasks; give timers (sleepers' wake-ups,
      // group commit) and I/O their turn regularly so a busy run cannot starve them.
      if (started - lastYield >= YIELD_EVERY) {
        lastYield = started;
        await turn.next();
      }
    }
    for (const entry of this.#inFlight.values()) entry.controller.abort(signal?.reason);
    await Promise.allSettled([...this.#inFlight.values()].map((f) => f.done));
    return { quanta: ran, idle: false };
  }

  /**
   * Picks up decisions: expires requests past their time, and when another connection committed
   * (`data_version` moved), queues the processes it made runnable.
   */
  #noticeDecisions(): void {
    this.#human?.expireDue();
    const version = this.#processes.dataVersion();
    if (version === this.#seenVersion) return;
    this.#seenVersion = version;
    this.#enqueueRunnable();
  }

  /** Stops timers and listening; quanta in flight finish on their own. */
  [Symbol.dispose](): void {
    this.#closed = true;
    this.#unlisten();
    for (const timer of this.#timers.values()) timer.abort();
    this.#timers.clear();
    this.#poke();
  }
}
