/**
 * One lease claimer for the lease bench (`workers_bench.ts`): claims trees 50 at a time from a
 * shared database until none is left, and prints `{claimed, seconds, latenciesMs}`.
 * Usage: deno run … _pg_claimer.ts URL-OR-SQLITE-PATH OWNER
 *
 * @module
 */
import { PostgresStore } from "../../runtime/store/postgres_store.ts";
import { SqliteStore } from "../../runtime/store/sqlite_store.ts";
import type { Store } from "../../runtime/store/store.ts";

const FINISHED = ["exited", "failed", "killed"];

if (import.meta.main) {
  const [db, owner] = Deno.args as [string, string];
  const store: Store = db.startsWith("postgres")
    ? PostgresStore.open({ url: db })
    : SqliteStore.open({ path: db, busyTimeoutMs: 30_000 });
  const latencies: number[] = [];
  let claimed = 0;
  const start = performance.now();
  for (;;) {
    const t = performance.now();
    const got = store.claimTrees(owner, Date.now(), 600_000, 50, FINISHED).length;
    latencies.push(performance.now() - t);
    if (got === 0) break;
    claimed += got;
  }
  const seconds = (performance.now() - start) / 1000;
  store.close();
  Deno.stdout.writeSync(
    new TextEncoder().encode(JSON.stringify({ claimed, seconds, latenciesMs: latencies }) + "\n"),
  );
}
