import assert from "node:assert/strict";
import { ServingClock } from "./_serving_clock.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("ServingClock counts each syscall's host time, one timer for many syscalls, none left after close()", async () => {
  const clock = new ServingClock(10_000, () => false);
  let exceeded = 0;
  for (let i = 0; i < 50; i++) {
    const stop = clock.serve(() => exceeded++);
    await sleep(1);
    assert.equal(stop(), false);
  }
  assert.ok(clock.spentMs >= 40, `counted ${clock.spentMs} ms`);
  assert.equal(exceeded, 0);
  // The test's sanitizer fails on a timer left behind.
  clock.close();
});

Deno.test("ServingClock calls onExceeded while a syscall runs past the limit, and stop() says so", async () => {
  const clock = new ServingClock(150, () => false);
  let exceeded = 0;
  const stop = clock.serve(() => exceeded++);
  await sleep(320);
  assert.equal(exceeded, 1, "noticed during the syscall, once");
  assert.equal(stop(), true);
  clock.close();
});

Deno.test("ServingClock does not count the time a syscall waits on the human (to within one tick)", async () => {
  let waiting = true;
  const clock = new ServingClock(150, () => waiting);
  let exceeded = 0;
  const stop = clock.serve(() => exceeded++);
  await sleep(350);
  assert.equal(exceeded, 0, "a human wait is not host time");
  waiting = false;
  assert.equal(stop(), false, `counted ${clock.spentMs} ms`);
  clock.close();
});
