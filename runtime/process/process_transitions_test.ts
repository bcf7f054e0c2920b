import assert from "node:assert/strict";
import { IllegalTransitionError } from "../base/errors.ts";
import { ProcessStatus } from "./process.ts";
import { type ProcessEvent, type Target, transition, TRANSITIONS } from "./process_transitions.ts";

/**
 * The specification, written out independently of the implementation's table: for each event,
 * the statuses it is legal from and where it leads. Everything not listed must be illegal.
 */
const LIVE = [
  "created",
  "runnable",
  "running",
  "sleeping",
  "waiting_child",
  "waiting_human",
  "paused",
] as const;
const BLOCKED = ["sleeping", "waiting_child", "waiting_human"] as const;
const SPEC: Record<ProcessEvent, Partial<Record<ProcessStatus, Target>>> = {
  start: { created: "runnable" },
  schedule: { runnable: "running" },
  yield: { running: "runnable" },
  sleep: { running: "sleeping" },
  wait_child: { running: "waiting_child" },
  wait_human: { running: "waiting_human" },
  wake: Object.fromEntries(BLOCKED.map((s) => [s, "runnable"])),
  exit: Object.fromEntries(LIVE.map((s) => [s, "exited"])),
  fail: Object.fromEntries(LIVE.map((s) => [s, "failed"])),
  kill: Object.fromEntries(LIVE.map((s) => [s, "killed"])),
  terminate: { ...Object.fromEntries(LIVE.map((s) => [s, "killed"])), running: "deferred" },
  pause: {
    ...Object.fromEntries(["created", "runnable", ...BLOCKED].map((s) => [s, "paused"])),
    running: "deferred",
  },
  resume: { paused: "resume_to" },
  cancel: { ...Object.fromEntries(BLOCKED.map((s) => [s, "runnable"])), running: "deferred" },
  interrupt: {
    ...Object.fromEntries(BLOCKED.map((s) => [s, "runnable"])),
    created: "same",
    runnable: "same",
    paused: "same",
    running: "deferred",
  },
};

Deno.test("transition() allows exactly the specified event/status pairs and leads where the specification says", () => {
  const events = Object.keys(SPEC) as ProcessEvent[];
  assert.deepEqual(
    Object.keys(TRANSITIONS).sort(),
    [...events].sort(),
    "the table covers exactly the specified events",
  );
  let legal = 0;
  let illegal = 0;
  for (const event of events) {
    for (const status of ProcessStatus.options) {
      const expected = SPEC[event][status];
      if (expected === undefined) {
        assert.throws(
          () => transition("pid_000000000001", status, event),
          (e: unknown) => e instanceof IllegalTransitionError && e.code === "illegal_transition",
          `${event} from ${status} must be illegal`,
        );
        illegal++;
      } else {
        assert.equal(
          transition("pid_000000000001", status, event),
          expected,
          `${event} from ${status}`,
        );
        legal++;
      }
    }
  }
  assert.equal(legal + illegal, events.length * ProcessStatus.options.length);
});

Deno.test("transition() never leaves a final status, whatever the event", () => {
  for (const status of ["exited", "failed", "killed"] as const) {
    for (const event of Object.keys(TRANSITIONS) as ProcessEvent[]) {
      assert.throws(() => transition("pid_000000000001", status, event), /never changes again/);
    }
  }
});
