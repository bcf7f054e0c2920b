import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { sha256Hex } from "../base/canonical_json.ts";
import { StoreError } from "../base/errors.ts";
import { APPLICATION_ID, MIGRATIONS } from "./_schema.ts";
import { SqliteStore } from "./sqlite_store.ts";

function tempDir(): { readonly path: string } & Disposable {
  const path = Deno.makeTempDirSync({ prefix: "libos-sqlite-" });
  return { path, [Symbol.dispose]: () => Deno.removeSync(path, { recursive: true }) };
}

function fileDigest(path: string): string {
  return sha256Hex(Deno.readFileSync(path));
}

/** Asserts that opening `path` fails with `code` and leaves the file's bytes unchanged. */
function assertRefusedUnmodified(path: string, code: string, busyTimeoutMs = 200): StoreError {
  const before = fileDigest(path);
  const siblingsBefore = [...Deno.readDirSync(join(path, ".."))].map((e) => e.name).sort();
  let caught: unknown;
  try {
    SqliteStore.open({ path, busyTimeoutMs }).close();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof StoreError, `expected a StoreError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  assert.equal(fileDigest(path), before, "the refused file was modified");
  const siblingsAfter = [...Deno.readDirSync(join(path, ".."))].map((e) => e.name).sort();
  assert.deepEqual(
    siblingsAfter.filter((n) => !n.endsWith("-shm") && !n.endsWith("-wal")),
    siblingsBefore.filter((n) => !n.endsWith("-shm") && !n.endsWith("-wal")),
  );
  return caught;
}

Deno.test("SqliteStore.open() creates a new database with mode 0600, WAL and synchronous=NORMAL", () => {
  using dir = tempDir();
  const path = join(dir.path, "new.db");
  const store = SqliteStore.open({ path });
  store.setMeta("a", "b");
  store.close();
  assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
  const raw = new DatabaseSync(path);
  try {
    assert.equal(raw.prepare("PRAGMA journal_mode").get()?.journal_mode, "wal");
    assert.equal(raw.prepare("PRAGMA application_id").get()?.application_id, APPLICATION_ID);
    assert.equal(raw.prepare("PRAGMA user_version").get()?.user_version, MIGRATIONS.length);
  } finally {
    raw.close();
  }
  // synchronous is a per-connection setting: read it through the store's own connection.
  const again = SqliteStore.open({ path });
  again.close();
});

Deno.test("SqliteStore.open() applies only the migrations a database has not seen, in order", () => {
  using dir = tempDir();
  const path = join(dir.path, "m.db");
  const first = [{ version: 1, sql: "CREATE TABLE t1 (x INTEGER) STRICT;" }];
  SqliteStore.open({ path, migrations: first }).close();
  const second = [...first, {
    version: 2,
    sql: "CREATE TABLE t2 (y INTEGER) STRICT; INSERT INTO t1 VALUES (7);",
  }];
  const store = SqliteStore.open({ path, migrations: second });
  assert.equal(store.schemaVersion, 2);
  store.close();
  // Reopening with the same list applies nothing twice (t1 would get a second row).
  SqliteStore.open({ path, migrations: second }).close();
  const raw = new DatabaseSync(path);
  try {
    assert.equal(raw.prepare("SELECT count(*) AS n FROM t1").get()?.n, 1);
    assert.equal(raw.prepare("PRAGMA user_version").get()?.user_version, 2);
  } finally {
    raw.close();
  }
});

Deno.test("SqliteStore.open() rolls back a failing migration entirely and keeps the old version", () => {
  using dir = tempDir();
  const path = join(dir.path, "m.db");
  const first = [{ version: 1, sql: "CREATE TABLE t1 (x INTEGER) STRICT;" }];
  SqliteStore.open({ path, migrations: first }).close();
  const broken = [...first, { version: 2, sql: "CREATE TABLE t2 (y INTEGER); THIS IS NOT SQL;" }];
  assert.throws(() => SqliteStore.open({ path, migrations: broken }), StoreError);
  const raw = new DatabaseSync(path);
  try {
    assert.equal(raw.prepare("PRAGMA user_version").get()?.user_version, 1);
    assert.equal(
      raw.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE name = 't2'").get()?.n,
      0,
    );
  } finally {
    raw.close();
  }
});

Deno.test("SqliteStore.open() refuses a database with a newer schema and leaves it unmodified", () => {
  using dir = tempDir();
  const path = join(dir.path, "newer.db");
  SqliteStore.open({ path }).close();
  const raw = new DatabaseSync(path);
  raw.exec(`PRAGMA user_version = ${MIGRATIONS.length + 5}`);
  raw.close();
  const error = assertRefusedUnmodified(path, "store_newer_schema");
  assert.match(error.message, /newer than this libos understands/);
  assert.match(error.message, /Upgrade libos/);
});

Deno.test("SqliteStore.open() refuses a file that is not SQLite and leaves it unmodified", () => {
  using dir = tempDir();
  for (
    const [name, bytes] of [
      ["text.db", new TextEncoder().encode("just some notes, not a database\n".repeat(10))],
      ["short.db", new TextEncoder().encode("SQLite format 3\0")],
    ] as const
  ) {
    const path = join(dir.path, name);
    Deno.writeFileSync(path, bytes);
    assert.match(assertRefusedUnmodified(path, "store_foreign").message, /not a libos database/);
  }
});

Deno.test("SqliteStore.open() refuses another application's SQLite database and leaves it unmodified", () => {
  using dir = tempDir();
  const plain = join(dir.path, "other.db");
  const raw = new DatabaseSync(plain);
  raw.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hello');");
  raw.close();
  assertRefusedUnmodified(plain, "store_foreign");

  const tagged = join(dir.path, "tagged.db");
  const raw2 = new DatabaseSync(tagged);
  raw2.exec("PRAGMA application_id = 1234; CREATE TABLE t (x);");
  raw2.close();
  assert.match(assertRefusedUnmodified(tagged, "store_foreign").message, /another application/);
});

Deno.test("SqliteStore.open() refuses a corrupt database and leaves it unmodified", () => {
  using dir = tempDir();
  const path = join(dir.path, "corrupt.db");
  const store = SqliteStore.open({ path });
  for (let i = 0; i < 200; i++) store.setMeta(`k${i}`, "x".repeat(500));
  store.close();
  // Keep the header, overwrite the schema page and everything after it with garbage.
  const bytes = Deno.readFileSync(path);
  const garbage = bytes.slice();
  for (let i = 100; i < garbage.length; i++) garbage[i] = (i * 7919) & 0xff;
  Deno.writeFileSync(path, garbage);
  for (const suffix of ["-wal", "-shm"]) {
    try {
      Deno.removeSync(path + suffix);
    } catch { /* may not exist */ }
  }
  const error = assertRefusedUnmodified(path, "store_corrupt");
  assert.match(error.message, /corrupt/);
  assert.match(error.message, /not modified/);
});

Deno.test("SqliteStore.open() reports a database locked by another process as store_locked, unmodified", () => {
  using dir = tempDir();
  const path = join(dir.path, "locked.db");
  SqliteStore.open({ path }).close();
  const holder = new DatabaseSync(path);
  holder.exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;");
  try {
    const error = assertRefusedUnmodified(path, "store_locked", 100);
    assert.match(error.message, /locked by another connection/);
  } finally {
    holder.exec("ROLLBACK");
    holder.close();
  }
});

Deno.test("SqliteStore group commit: finished steps are invisible to other connections until flush()", () => {
  using dir = tempDir();
  const path = join(dir.path, "gc.db");
  const store = SqliteStore.open({ path, batchSteps: 1000, batchMs: 60_000 });
  const reader = new DatabaseSync(path, { readOnly: true });
  try {
    const count = () => Number(reader.prepare("SELECT count(*) AS n FROM meta").get()?.n);
    store.setMeta("a", "1");
    store.setMeta("b", "2");
    assert.equal(count(), 0, "a step is not durable before the batch commits");
    store.flush();
    assert.equal(count(), 2);
  } finally {
    reader.close();
    store.close();
  }
});

Deno.test("SqliteStore group commit: a batch commits after batchSteps steps", () => {
  using dir = tempDir();
  const path = join(dir.path, "gc.db");
  const store = SqliteStore.open({ path, batchSteps: 3, batchMs: 60_000 });
  let commits = 0;
  store.onCommit(() => commits++);
  store.setMeta("a", "1");
  store.setMeta("b", "1");
  assert.equal(commits, 0);
  store.setMeta("c", "1");
  assert.equal(commits, 1);
  store.close();
});

Deno.test("SqliteStore group commit: a batch commits by itself a few milliseconds after its first step", async () => {
  using dir = tempDir();
  const path = join(dir.path, "gc.db");
  const store = SqliteStore.open({ path, batchMs: 5 });
  const committed = new Promise<void>((resolve) => store.onCommit(resolve));
  store.setMeta("a", "1");
  await committed;
  const reader = new DatabaseSync(path, { readOnly: true });
  try {
    assert.equal(reader.prepare("SELECT value FROM meta WHERE key = 'a'").get()?.value, "1");
  } finally {
    reader.close();
    store.close();
  }
});

Deno.test("SqliteStore.dataVersion() changes when another connection commits", () => {
  using dir = tempDir();
  const path = join(dir.path, "dv.db");
  const store = SqliteStore.open({ path });
  const before = store.dataVersion();
  const other = new DatabaseSync(path);
  other.exec("INSERT INTO meta (key, value) VALUES ('from', 'cli')");
  other.close();
  assert.notEqual(store.dataVersion(), before);
  assert.equal(store.getMeta("from"), "cli");
  store.close();
});

Deno.test("SqliteStore refuses UPDATE and DELETE of audit rows even from a raw SQL connection", () => {
  using dir = tempDir();
  const path = join(dir.path, "ao.db");
  const store = SqliteStore.open({ path });
  store.insertAudit({
    seq: 1,
    chain: "main",
    chainSeq: 1,
    time: 1,
    actor: "a",
    pid: null,
    action: "x.y",
    resource: "",
    decision: "none",
    authority: "operator",
    inputDigest: null,
    correlation: null,
    parent: null,
    detail: null,
    prev: "0".repeat(64),
    hash: "1".repeat(64),
  });
  store.close();
  const raw = new DatabaseSync(path);
  try {
    assert.throws(() => raw.exec("UPDATE audit SET actor = 'someone else'"), /append-only/);
    assert.throws(() => raw.exec("DELETE FROM audit"), /append-only/);
    assert.equal(raw.prepare("SELECT actor FROM audit").get()?.actor, "a");
  } finally {
    raw.close();
  }
});

Deno.test("SqliteStore.open() refuses a directory given as the database path", () => {
  using dir = tempDir();
  assert.throws(
    () => SqliteStore.open({ path: dir.path }),
    (e: unknown) => e instanceof StoreError && e.code === "store_foreign",
  );
});

Deno.test("SqliteStore.open() refuses a libos database with planted or altered schema objects, unmodified (attack: a trigger that drops audit records)", () => {
  const attacks: [string, string][] = [
    [
      "a trigger that silently drops audit appends",
      "CREATE TRIGGER swallow BEFORE INSERT ON audit BEGIN SELECT RAISE(IGNORE); END;",
    ],
    ["a view shadowing nothing", "CREATE VIEW v AS SELECT 1;"],
    ["a dropped append-only trigger", "DROP TRIGGER audit_no_delete;"],
    ["an altered table", "ALTER TABLE meta ADD COLUMN extra TEXT;"],
    ["a dropped index", "DROP INDEX audit_by_time;"],
  ];
  for (const [name, sql] of attacks) {
    using dir = tempDir();
    const path = join(dir.path, "hostile.db");
    SqliteStore.open({ path }).close();
    const raw = new DatabaseSync(path);
    raw.exec(sql);
    raw.close();
    const error = assertRefusedUnmodified(path, "store_corrupt");
    assert.match(error.message, /does not have the schema/, name);
  }
});

Deno.test("SqliteStore.open() refuses a file claiming to be an empty libos database while holding tables, unmodified", () => {
  using dir = tempDir();
  const path = join(dir.path, "half.db");
  const raw = new DatabaseSync(path);
  raw.exec(`PRAGMA application_id = ${APPLICATION_ID}; CREATE TABLE audit (x);`);
  raw.close();
  const header = Deno.readFileSync(path).slice(0, 100);
  assertRefusedUnmodified(path, "store_corrupt");
  assert.deepEqual(Deno.readFileSync(path).slice(0, 100), header, "not even switched to WAL");
});

Deno.test("SqliteStore: a disk that fills up in the middle of a batch is a typed failure, and nothing later pretends to be saved", () => {
  using dir = tempDir();
  const path = join(dir.path, "full.db");
  SqliteStore.open({ path }).close();
  const store = SqliteStore.open({ path, maxPages: 40, batchSteps: 10_000, batchMs: 60_000 });
  store.setMeta("committed", "before the batch");
  store.flush();
  let failure: unknown;
  try {
    for (let i = 0; i < 1000; i++) store.setMeta(`k${i}`, "x".repeat(2000));
  } catch (error) {
    failure = error;
  }
  assert.ok(failure instanceof StoreError, `expected a StoreError, got ${String(failure)}`);
  assert.ok(["store_io", "store_failed"].includes(failure.code), failure.code);
  assert.match(failure.message, /full|lost/);
  if (failure.code === "store_failed") {
    assert.throws(
      () => store.setMeta("after", "x"),
      (e: unknown) => e instanceof StoreError && e.code === "store_failed",
    );
  }
  try {
    store.close();
  } catch { /* a failed store may refuse its final flush */ }
  const again = SqliteStore.open({ path });
  assert.equal(
    again.getMeta("committed"),
    "before the batch",
    "what was committed before survives",
  );
  assert.equal(again.getMeta("after"), undefined);
  again.close();
});

Deno.test("SqliteStore.open({readOnly}) reads without writing: no migration, no WAL switch, every write refused", () => {
  using dir = tempDir();
  const path = join(dir.path, "ro.db");
  const first = [MIGRATIONS[0]!];
  SqliteStore.open({ path, migrations: first }).close();
  const before = fileDigest(path);
  assert.throws(
    () => SqliteStore.open({ path, readOnly: true }),
    (e: unknown) => e instanceof StoreError && e.code === "store_outdated",
  );
  assert.equal(
    fileDigest(path),
    before,
    "an outdated database is not migrated by a read-only open",
  );
  SqliteStore.open({ path }).close();
  const store = SqliteStore.open({ path, readOnly: true });
  try {
    assert.equal(store.getMeta("x"), undefined);
    assert.throws(
      () => store.setMeta("x", "y"),
      (e: unknown) => e instanceof StoreError && e.code === "store_readonly",
    );
  } finally {
    store.close();
  }
});

Deno.test("SqliteStore retained rows: kept ones listed oldest first with a cursor and a time bound; namespaceUsage counts stored bytes", () => {
  using dir = tempDir();
  const store = SqliteStore.open({ path: join(dir.path, "retained.db") });
  try {
    const row = (pid: string, since: number, removed: number | null = null) => ({
      pid,
      namespace: `process:${pid}`,
      since,
      objects: 1,
      bytes: 10,
      removed,
    });
    store.putRetained(row("pid_00000000000b", 20));
    store.putRetained(row("pid_00000000000a", 20));
    store.putRetained(row("pid_00000000000c", 10));
    store.putRetained(row("pid_00000000000d", 5, 30));
    const kept = store.listRetained({ removed: false, limit: 10 }).map((r) => r.pid);
    assert.deepEqual(kept, ["pid_00000000000c", "pid_00000000000a", "pid_00000000000b"]);
    assert.deepEqual(
      store.listRetained({
        removed: false,
        limit: 10,
        after: { since: 20, pid: "pid_00000000000a" },
      })
        .map((r) => r.pid),
      ["pid_00000000000b"],
    );
    assert.deepEqual(
      store.listRetained({ before: 11, limit: 10 }).map((r) => r.pid),
      ["pid_00000000000d", "pid_00000000000c"],
    );
    assert.equal(store.getRetained("pid_00000000000d")?.removed, 30);
    assert.deepEqual(store.namespaceUsage("process:pid_00000000000a"), { objects: 0, bytes: 0 });
    store.putObject({
      oid: "obj_000000000001",
      namespace: "process:pid_00000000000a",
      name: null,
      type: "note",
      creator: "runtime",
      data: "{}",
      payload: JSON.stringify("é"),
      volatile: false,
      created: 1,
      updated: 1,
    });
    // "é" is two bytes in UTF-8: bytes, not characters.
    assert.deepEqual(store.namespaceUsage("process:pid_00000000000a"), { objects: 1, bytes: 6 });
  } finally {
    store.close();
  }
});
