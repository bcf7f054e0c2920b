import assert from "node:assert/strict";
import { join } from "node:path";
import { FakeClock } from "../base/clock.ts";
import { ValidationError } from "../base/errors.ts";
import { EventLog } from "./event_log.ts";
import type { EventBody, EventEnvelope } from "./events.ts";
import { SqliteStore } from "../store/sqlite_store.ts";

const notice = (code: string): EventBody => ({
  kind: "notice",
  payload: { level: "info", code, message: code },
});

/** Collects the next `n` events of an iterator. */
async function take(
  iterator: AsyncIterableIterator<EventEnvelope>,
  n: number,
): Promise<EventEnvelope[]> {
  const out: EventEnvelope[] = [];
  while (out.length < n) {
    const next = await iterator.next();
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

Deno.test("EventLog.emit() stores a versioned envelope with session, turn and ISO time", () => {
  using store = SqliteStore.open({ path: ":memory:" });
  const clock = new FakeClock(Date.UTC(2026, 10, 29, 12));
  using events = new EventLog(store, { clock, session: "ses_1" });
  const e = events.emit(notice("hello"), { turn: 3 });
  assert.deepEqual(e, {
    version: 1,
    seq: 1,
    session: "ses_1",
    turn: 3,
    time: "2026-11-29T12:00:00.000Z",
    kind: "notice",
    payload: { level: "info", code: "hello", message: "hello" },
  });
  assert.deepEqual(events.read(), [e]);
});

Deno.test("EventLog.emit() refuses a payload that does not match its kind, storing nothing", () => {
  using store = SqliteStore.open({ path: ":memory:" });
  using events = new EventLog(store, { clock: new FakeClock(), session: "s" });
  const bad = [
    { kind: "notice", payload: { level: "loud", code: "x", message: "m" } },
    { kind: "session.ended", payload: { reason: "closed", extra: 1 } },
    { kind: "no.such.kind", payload: {} },
  ] as unknown as EventBody[];
  for (const body of bad) assert.throws(() => events.emit(body), ValidationError);
  assert.throws(() => events.emit(notice("x"), { turn: -1 }), RangeError);
  assert.equal(store.lastEventSeq(), 0);
});

Deno.test("EventLog persists events: a new runtime on the same database reads them back", () => {
  const dir = Deno.makeTempDirSync({ prefix: "libos-events-" });
  try {
    const path = join(dir, "e.db");
    {
      using store = SqliteStore.open({ path });
      using events = new EventLog(store, { clock: new FakeClock(), session: "first" });
      events.emit({
        kind: "session.started",
        payload: { workspace: "/w", database: path, libos: "0.1.0" },
      });
      events.emit(notice("between"));
    }
    using store = SqliteStore.open({ path });
    using events = new EventLog(store, { clock: new FakeClock(), session: "second" });
    assert.deepEqual(events.read().map((e) => [e.session, e.kind]), [["first", "session.started"], [
      "first",
      "notice",
    ]]);
    assert.deepEqual(events.read({ kinds: ["notice"] }).map((e) => e.seq), [2]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("EventLog.subscribe() delivers an event only after the commit that made it durable", async () => {
  using store = SqliteStore.open({ path: ":memory:", batchMs: 60_000, batchSteps: 1000 });
  using events = new EventLog(store, { clock: new FakeClock(), session: "s" });
  const controller = new AbortController();
  const iterator = events.subscribe({ signal: controller.signal });
  const first = iterator.next();
  events.emit(notice("one"));
  let delivered = false;
  first.then(() => delivered = true);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(delivered, false, "not delivered before the commit");
  store.flush();
  const result = await first;
  assert.equal(result.done, false);
  assert.equal(result.value?.kind === "notice" && result.value.payload.code, "one");
  controller.abort();
  assert.equal((await iterator.next()).done, true);
});

Deno.test("EventLog.subscribe() never delivers events of a rolled-back step", async () => {
  using store = SqliteStore.open({ path: ":memory:" });
  using events = new EventLog(store, { clock: new FakeClock(), session: "s" });
  const iterator = events.subscribe();
  assert.throws(() =>
    store.step(() => {
      events.emit(notice("phantom"));
      throw new Error("step failed");
    })
  );
  events.emit(notice("real"));
  store.flush();
  const [e] = await take(iterator, 1);
  assert.equal(e?.kind === "notice" && e.payload.code, "real");
  events.close();
  assert.equal((await iterator.next()).done, true);
});

Deno.test("EventLog.subscribe({after}) replays stored events, then follows new ones, filtering by kind", async () => {
  using store = SqliteStore.open({ path: ":memory:" });
  using events = new EventLog(store, { clock: new FakeClock(), session: "s" });
  events.emit(notice("a"));
  events.emit({ kind: "session.ended", payload: { reason: "closed" } });
  events.emit(notice("b"));
  store.flush();
  const controller = new AbortController();
  const all = events.subscribe({ after: 0, signal: controller.signal });
  const notices = events.subscribe({ after: 0, kinds: ["notice"], signal: controller.signal });
  assert.deepEqual((await take(all, 3)).map((e) => e.seq), [1, 2, 3]);
  assert.deepEqual((await take(notices, 2)).map((e) => e.seq), [1, 3]);
  const later = take(notices, 1);
  events.emit({ kind: "session.ended", payload: { reason: "closed" } });
  events.emit(notice("c"));
  store.flush();
  assert.deepEqual((await later).map((e) => e.seq), [5]);
  controller.abort();
  assert.equal((await all.next()).done, true);
});

Deno.test("EventLog.subscribe() lets a slow subscriber catch up from the store without losing events", async () => {
  using store = SqliteStore.open({ path: ":memory:" });
  using events = new EventLog(store, { clock: new FakeClock(), session: "s" });
  const iterator = events.subscribe();
  for (let i = 0; i < 1000; i++) events.emit(notice(`n${i}`));
  store.flush();
  const got = await take(iterator, 1000);
  assert.equal(got.length, 1000);
  assert.deepEqual(got.map((e) => e.seq), Array.from({ length: 1000 }, (_, i) => i + 1));
  events.close();
});

Deno.test("EventLog redacts configured secret values from payloads before they are stored", () => {
  using store = SqliteStore.open({ path: ":memory:" });
  const secret = "sk-test-0123456789";
  using events = new EventLog(store, {
    clock: new FakeClock(),
    session: "s",
    redact: (text) => text.replaceAll(secret, "[redacted]"),
  });
  events.emit({
    kind: "notice",
    payload: { level: "warn", code: "leak", message: `key is ${secret}` },
  });
  const raw = store.readEvents({ after: 0, limit: 10 })[0]!;
  assert.ok(!raw.payload.includes(secret));
  assert.match(raw.payload, /\[redacted\]/);
});

Deno.test("EventLog instances over two stores in one process do not see each other's events", () => {
  using a = SqliteStore.open({ path: ":memory:" });
  using b = SqliteStore.open({ path: ":memory:" });
  using ea = new EventLog(a, { clock: new FakeClock(), session: "a" });
  using eb = new EventLog(b, { clock: new FakeClock(), session: "b" });
  ea.emit(notice("only_a"));
  assert.equal(eb.read().length, 0);
  assert.equal(ea.read().length, 1);
});
