/**
 * Host time spent serving one call's syscalls, human waits excluded (issue 20). Whether the
 * process waits on its human is asked of the caller every {@link SERVING_TICK_MS} while a syscall
 * is being served — the wait may be a terminal prompt deep inside a primitive, which the sandbox
 * cannot see — so a human wait is excluded to within one tick, and a syscall answered within a
 * tick costs one timer and no question.
 *
 * @module
 */

/** How often a syscall still being served is looked at, in milliseconds. */
export const SERVING_TICK_MS = 100;

/** Meters the syscalls of one call against a total of `limitMs`; {@link close} it after the call. */
export class ServingClock {
  readonly limitMs: number;
  readonly #waitingOnHuman: () => boolean;
  #spentMs = 0;
  /** The syscall being served: since when it is counted, and what to call past the limit. */
  #serving: { last: number; readonly onExceeded: () => void } | undefined;
  /**
   * One timer for the whole call, not one per syscall: armed when a syscall starts and none is
   * armed, it looks at the syscall served when it fires (if any) and arms itself again only then.
   */
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(limitMs: number, waitingOnHuman: () => boolean) {
    this.limitMs = limitMs;
    this.#waitingOnHuman = waitingOnHuman;
  }

  /** Host time counted so far, in milliseconds. */
  get spentMs(): number {
    return this.#spentMs;
  }

  #next(): number {
    return Math.max(0, Math.min(SERVING_TICK_MS, this.limitMs - this.#spentMs));
  }

  #arm(): void {
    this.#timer = setTimeout(() => this.#tick(), this.#next());
  }

  #tick(): void {
    this.#timer = undefined;
    const serving = this.#serving;
    // Nothing served now: the next syscall arms the timer again.
    if (serving === undefined) return;
    const now = performance.now();
    // The interval just ended counts unless the process waits on its human now.
    if (!this.#waitingOnHuman()) this.#spentMs += now - serving.last;
    serving.last = now;
    if (this.#spentMs > this.limitMs) serving.onExceeded();
    else this.#arm();
  }

  /**
   * Starts metering one syscall; `onExceeded` is called (once) if the total passes the limit
   * while it is served. Returns the function that stops the metering, which says whether the
   * total is over the limit.
   */
  serve(onExceeded: () => void): () => boolean {
    const serving = { last: performance.now(), onExceeded };
    this.#serving = serving;
    if (this.#timer === undefined) this.#arm();
    return () => {
      if (this.#serving === serving) this.#serving = undefined;
      // The syscall is answered: whatever it waited on is over, so the last interval counts.
      this.#spentMs += performance.now() - serving.last;
      serving.last = performance.now();
      return this.#spentMs > this.limitMs;
    };
  }

  /** Stops the clock's timer (the call is over). */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#serving = undefined;
  }
}
