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

/** Meters the syscalls of one call against a total of `limitMs`. */
export class ServingClock {
  readonly limitMs: number;
  readonly #waitingOnHuman: () => boolean;
  #spentMs = 0;

  constructor(limitMs: number, waitingOnHuman: () => boolean) {
    this.limitMs = limitMs;
    this.#waitingOnHuman = waitingOnHuman;
  }

  /** Host time counted so far, in milliseconds. */
  get spentMs(): number {
    return this.#spentMs;
  }

  /**
   * Starts metering one syscall; `onExceeded` is called (once) if the total passes the limit
   * while it is served. Returns the function that stops the metering, which says whether the
   * total is over the limit.
   */
  serve(onExceeded: () => void): () => boolean {
    let last = performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const next = () => Math.max(0, Math.min(SERVING_TICK_MS, this.limitMs - this.#spentMs));
    const tick = () => {
      const now = performance.now();
      // The interval just ended counts unless the process waits on its human now.
      if (!this.#waitingOnHuman()) this.#spentMs += now - last;
      last = now;
      if (this.#spentMs > this.limitMs) onExceeded();
      else timer = setTimeout(tick, next());
    };
    timer = setTimeout(tick, next());
    return () => {
      clearTimeout(timer);
      // The syscall is answered: whatever it waited on is over, so the last interval counts.
      this.#spentMs += performance.now() - last;
      last = performance.now();
      return this.#spentMs > this.limitMs;
    };
  }
}
