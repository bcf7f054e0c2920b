/**
 * The PostgreSQL store when its session ends under it — the server kills it (an administrator,
 * `idle_in_transaction_session_timeout` while the process was paused), restarts, or the network
 * drops. The driver would reconnect silently; statements meant for the open transaction would
 * then run outside it, each committed at once, while the store believes them pending. Attacks:
 * the session is terminated between two steps of one batch, and while nothing is pending; the
 * next write must fail typed, and nothing of the batch may appear in the database.
 *
 * @module
 */
import assert from "node:assert/strict";
import { StoreError } from "../runtime/base/errors.ts";
import { PostgresStore } from "../runtime/store/postgres_store.ts";
import { asAdmin, freshSchema, pgTest } from "./pg_fixture.ts";

/** Terminates the libos sessions sitting in an open transaction; how many there were. */
function terminateIdleInTransaction(): number {
  const [rows] = asAdmin(
    `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
       WHERE application_name = 'libos' AND state = 'idle in transaction'`,
  );
  return rows?.length ?? 0;
}

pgTest(
  "attack: the session is terminated in the middle of a batch — the next step fails typed, and neither the batch's earlier steps nor the later one reach the database (no silent reconnect running them outside the transaction)",
  async () => {
    const db = freshSchema("session");
    try {
      using store = PostgresStore.open({ url: db.url, batchSteps: 1_000, batchMs: 60_000 });
      store.step(() => store.setMeta("first", "1"));
      store.step(() => store.setMeta("second", "1"));
      assert.equal(terminateIdleInTransaction(), 1, "the store's session, in its open batch");
      await new Promise((r) => setTimeout(r, 200));
      assert.throws(
        () => {
          store.step(() => store.setMeta("third", "1"));
          store.flush();
        },
        (e: unknown) =>
          e instanceof StoreError && /session with PostgreSQL .* ended/.test(e.message),
      );
      using watch = PostgresStore.open({ url: db.url, readOnly: true });
      for (const key of ["first", "second", "third"]) {
        assert.equal(watch.getMeta(key), undefined, `${key} reached the database`);
      }
    } finally {
      db.drop();
    }
  },
);

pgTest(
  "the session ends while nothing is pending (a server restart, a dropped network): the next batch begins on a new session and commits; the session's settings (a worker's idle-transaction limit) are applied again",
  async () => {
    const db = freshSchema("session_idle");
    try {
      // Commits only when flushed: a batch can be left open on purpose below.
      using store = PostgresStore.open({ url: db.url, batchSteps: 1_000, batchMs: 60_000 });
      store.limitIdleTransactions(1_500);
      store.step(() => store.setMeta("before", "1"));
      store.flush();
      asAdmin(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE application_name = 'libos' AND state = 'idle'`,
      );
      await new Promise((r) => setTimeout(r, 200));
      store.step(() => store.setMeta("after", "1"));
      store.flush();
      using watch = PostgresStore.open({ url: db.url, readOnly: true });
      assert.equal(watch.getMeta("before"), "1");
      assert.equal(watch.getMeta("after"), "1");
      const [rows] = asAdmin(
        `SELECT count(*) AS n FROM pg_stat_activity
           WHERE application_name = 'libos' AND backend_type = 'client backend'`,
      );
      assert.ok(Number(rows?.[0]?.n) >= 1);
      // The limit was set again on the new session: a transaction left open past it is ended.
      store.step(() => store.setMeta("held_open", "1"));
      const [limits] = asAdmin(
        `SELECT count(*) AS n FROM pg_stat_activity
           WHERE application_name = 'libos' AND state = 'idle in transaction'`,
      );
      assert.equal(Number(limits?.[0]?.n), 1);
      await new Promise((r) => setTimeout(r, 2_500));
      assert.throws(() => store.flush(), /session with PostgreSQL .* ended/);
    } finally {
      db.drop();
    }
  },
);
