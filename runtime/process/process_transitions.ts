/**
 * The one table every process status change comes from. An event that the table does not list
 * for the current status is an {@link IllegalTransitionError}, raised before anything is written.
 *
 * Signals that arrive while a quantum is running (`pause`, `cancel`, `interrupt`, and `resume`
 * of nothing) are deferred to the end of the quantum: a process is only ever changed between
 * quanta, at a safe point. `terminate` is deferred too, but also aborts the running quantum.
 *
 * @module
 */
import { IllegalTransitionError } from "../base/errors.ts";
import type { ProcessStatus } from "./process.ts";

/** Everything that can happen to a process. */
export type ProcessEvent =
  | "start"
  | "schedule"
  | "yield"
  | "sleep"
  | "wait_child"
  | "wait_human"
  | "wake"
  | "exit"
  | "fail"
  | "pause"
  | "resume"
  | "cancel"
  | "interrupt"
  | "terminate"
  | "kill";

/** Where an event leads: a status, the status before a pause, no change, or "after the quantum". */
export type Target = ProcessStatus | "resume_to" | "same" | "deferred";

const LIVE_BLOCKED = {
  sleeping: "runnable",
  waiting_child: "runnable",
  waiting_human: "runnable",
} as const;

const TO_FINAL = (final: "exited" | "failed" | "killed") =>
  ({
    created: final,
    runnable: final,
    running: final,
    sleeping: final,
    waiting_child: final,
    waiting_human: final,
    paused: final,
  }) as const;

/** The transition table: event → current status → target. Absent pairs are illegal. */
export const TRANSITIONS: {
  readonly [E in ProcessEvent]: { readonly [S in ProcessStatus]?: Target };
} = {
  start: { created: "runnable" },
  schedule: { runnable: "running" },
  yield: { running: "runnable" },
  sleep: { running: "sleeping" },
  wait_child: { running: "waiting_child" },
  wait_human: { running: "waiting_human" },
  wake: LIVE_BLOCKED,
  exit: TO_FINAL("exited"),
  fail: TO_FINAL("failed"),
  terminate: { ...TO_FINAL("killed"), running: "deferred" },
  /** A terminate applied at the end of the quantum it arrived during. */
  kill: TO_FINAL("killed"),
  pause: {
    created: "paused",
    runnable: "paused",
    sleeping: "paused",
    waiting_child: "paused",
    waiting_human: "paused",
    running: "deferred",
  },
  resume: { paused: "resume_to" },
  cancel: { ...LIVE_BLOCKED, running: "deferred" },
  interrupt: {
    ...LIVE_BLOCKED,
    created: "same",
    runnable: "same",
    paused: "same",
    running: "deferred",
  },
};

/**
 * The target of `event` for a process in `status`.
 * @throws {IllegalTransitionError} `illegal_transition` when the table has no entry.
 */
export function transition(pid: string, status: ProcessStatus, event: ProcessEvent): Target {
  const target = TRANSITIONS[event][status];
  if (target === undefined) {
    const finished = status === "exited" || status === "failed" || status === "killed";
    throw new IllegalTransitionError(
      "illegal_transition",
      `Cannot ${event.replace("_", " ")} process ${pid}: it is ${status}${
        finished ? " and a finished process never changes again" : ""
      }; nothing was changed`,
    );
  }
  return target;
}
