/**
 * The clock primitive: the current time in an IANA time zone, and bounded sleeps. A sleeping
 * process is parked in the `sleeping` state by the scheduler (its driver ends the quantum with
 * the `until` this returns), so it never blocks other processes; `wait` is the awaitable form for
 * syscalls that must block inside one call. Reading the clock needs no capability, but every
 * use is audited.
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";

/** The longest sleep one call may ask for, in milliseconds. */
export const MAX_SLEEP_MS = 60_000;

/** The current time as a process sees it. */
export interface ClockReading {
  /** ISO 8601 with the zone's offset, e.g. `2026-11-29T20:00:00.000+08:00`. */
  readonly iso: string;
  readonly epochMs: number;
  readonly timeZone: string;
}

function offsetIso(epochMs: number, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    }).formatToParts(epochMs).map((p) => [p.type, p.value]),
  );
  const local = Date.UTC(
    Number(parts.year),
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  );
  const offsetMin = Math.round((local - Math.floor(epochMs / 1000) * 1000) / 60_000);
  const sign = offsetMin < 0 ? "-" : "+";
  const abs = Math.abs(offsetMin);
  const ms = String(((epochMs % 1000) + 1000) % 1000).padStart(3, "0");
  const zone = offsetMin === 0 && timeZone === "UTC"
    ? "Z"
    : `${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${
      String(abs % 60).padStart(2, "0")
    }`;
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}.${ms}${zone}`;
}

/** The clock primitive of one runtime. */
export class ClockPrimitive {
  readonly #core: RuntimeCore;

  /** Binds the primitive to a runtime. */
  constructor(core: RuntimeCore) {
    this.#core = core;
  }

  /**
   * The current time in `timeZone` (default UTC).
   * @throws {ValidationError} for a time zone the host does not know.
   */
  now(pid: string, options: { readonly timeZone?: string } = {}): ClockReading {
    const timeZone = options.timeZone ?? "UTC";
    try {
      new Intl.DateTimeFormat("en-US", { timeZone });
    } catch (error) {
      throw new ValidationError(
        `Unknown time zone ${
          JSON.stringify(timeZone)
        }: use an IANA name such as UTC or Asia/Shanghai`,
        { cause: error },
      );
    }
    const epochMs = this.#core.clock.now();
    this.#record(pid, "clock.now", { timeZone });
    return { iso: offsetIso(epochMs, timeZone), epochMs, timeZone };
  }

  /** Audits a use of the clock: it needs no capability, but every use is on record. */
  #record(pid: string, action: string, detail: Record<string, string | number>): void {
    this.#core.audit.append({
      actor: pid,
      pid,
      action,
      resource: "clock",
      decision: "allow",
      authority: "runtime",
      detail,
    });
  }

  #bounded(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0 || ms > MAX_SLEEP_MS) {
      throw new ValidationError(
        `A sleep must be from 0 to ${MAX_SLEEP_MS / 1000} seconds, got ${ms / 1000}`,
      );
    }
    return Math.round(ms);
  }

  /**
   * When a sleep of `ms` ends; the caller's quantum ends with `{ type: "sleep", until }` and the
   * scheduler wakes the process then.
   * @throws {ValidationError} for a negative or over-long sleep (nothing is audited).
   */
  sleepUntil(pid: string, ms: number): { readonly until: number } {
    const bounded = this.#bounded(ms);
    const until = this.#core.clock.now() + bounded;
    this.#record(pid, "clock.sleep", { ms: bounded });
    return { until };
  }

  /** Sleeps inside one call (for syscalls that must block), bounded like {@link sleepUntil}. */
  async wait(pid: string, ms: number, signal?: AbortSignal): Promise<void> {
    const bounded = this.#bounded(ms);
    this.#record(pid, "clock.sleep", { ms: bounded });
    await this.#core.clock.sleep(bounded, signal);
  }
}
