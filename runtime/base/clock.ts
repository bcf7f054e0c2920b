/**
 * Time as an injected dependency: the system clock for real runs, {@link FakeClock} for tests
 * and deterministic demos. Nothing in the runtime reads `Date.now()` directly.
 *
 * @module
 */

/** A source of wall-clock time in milliseconds since the Unix epoch, and of sleeps. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Resolves after `ms` milliseconds; rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The host's clock. */
export function systemClock(): Clock {
  return {
    now: () => Date.now(),
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        const onAbort = () => {
          clearTimeout(timer);
          reject(signal?.reason);
        };
        const timer = setTimeout(() => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        }, Math.max(0, ms));
        signal?.addEventListener("abort", onAbort, { once: true });
      }),
  };
}

/**
 * Resolves after `ms` of real time, or as soon as `signal` aborts (never rejects): the pause
 * between two polls, which must pass in real time even when the runtime's clock is a fake one.
 */
export function pauseFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

interface Sleeper {
  readonly until: number;
  readonly resolve: () => void;
}

/** A clock that only moves when told to; sleeps resolve as {@link FakeClock.advance} passes them. */
export class FakeClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];

  /** Starts the clock at `start` milliseconds since the epoch. */
  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  /** The current fake time. */
  now(): number {
    return this.#now;
  }

  /** Moves time forward by `ms` and wakes every sleeper whose deadline has passed. */
  advance(ms: number): void {
    if (!(ms >= 0)) {
      throw new RangeError(`FakeClock.advance() needs a non-negative duration, got ${ms}`);
    }
    this.#now += ms;
    const due = this.#sleepers.filter((s) => s.until <= this.#now);
    this.#sleepers = this.#sleepers.filter((s) => s.until > this.#now);
    for (const sleeper of due) sleeper.resolve();
  }

  /** Resolves once the fake time reaches now + `ms`. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const sleeper: Sleeper = {
        until: this.#now + ms,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#sleepers.push(sleeper);
    });
  }
}
