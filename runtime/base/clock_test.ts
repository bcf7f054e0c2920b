import assert from "node:assert/strict";
import { FakeClock, systemClock } from "./clock.ts";

Deno.test("FakeClock.sleep() resolves only when advance() passes its deadline", async () => {
  const clock = new FakeClock(1000);
  const order: string[] = [];
  const short = clock.sleep(10).then(() => order.push("short"));
  const long = clock.sleep(50).then(() => order.push("long"));
  clock.advance(9);
  await Promise.resolve();
  assert.deepEqual(order, []);
  clock.advance(1);
  await short;
  assert.deepEqual(order, ["short"]);
  clock.advance(40);
  await long;
  assert.deepEqual(order, ["short", "long"]);
  assert.equal(clock.now(), 1050);
});

Deno.test("FakeClock.sleep() rejects with the abort reason when its signal aborts", async () => {
  const clock = new FakeClock();
  const controller = new AbortController();
  const sleeping = clock.sleep(100, controller.signal);
  controller.abort(new Error("cancelled"));
  await assert.rejects(sleeping, /cancelled/);
  await assert.rejects(clock.sleep(1, controller.signal), /cancelled/);
  assert.throws(() => clock.advance(-1), RangeError);
});

Deno.test("systemClock().sleep() can be aborted before it fires", async () => {
  const controller = new AbortController();
  const sleeping = systemClock().sleep(60_000, controller.signal);
  controller.abort(new Error("stop"));
  await assert.rejects(sleeping, /stop/);
});
