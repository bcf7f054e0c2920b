import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { readHeadFile, writeHeadFile } from "./audit_head.ts";
import {
  type AuditEntry,
  auditHash,
  AuditLog,
  type AuditRecord,
  type AuditScope,
  GENESIS_HASH,
} from "./audit_log.ts";
import { canonicalJson, digestOf, sha256Hex } from "../base/canonical_json.ts";
import { FakeClock } from "../base/clock.ts";
import { AuditError, ValidationError } from "../base/errors.ts";
import { SqliteStore } from "../store/sqlite_store.ts";

const entry = (n: number, extra: Partial<AuditEntry> = {}): AuditEntry => ({
  actor: `pid_${n % 3}`,
  pid: `pid_${n % 3}`,
  action: n % 2 ? "fs.write" : "fs.read",
  resource: `filesystem:workspace:f${n}.txt`,
  decision: n % 5 === 0 ? "deny" : "allow",
  authority: n % 5 === 0 ? "default" : "cap:cap_1",
  ...extra,
});

interface Fixture extends Disposable {
  readonly dir: string;
  readonly dbPath: string;
  readonly headPath: string;
  readonly clock: FakeClock;
  store: SqliteStore;
  audit: AuditLog;
  /** Closes and reopens store and log, as a new runtime would. */
  reopen(): void;
  /** Runs raw SQL on the database file with the append-only triggers dropped: a tamperer. */
  tamper(sql: string): void;
}

function fixture(records = 0): Fixture {
  const dir = Deno.makeTempDirSync({ prefix: "libos-audit-" });
  const dbPath = join(dir, "audit.db");
  const headPath = join(dir, "state", "heads", "audit.head");
  const clock = new FakeClock();
  const open = () => {
    const store = SqliteStore.open({ path: dbPath });
    return { store, audit: new AuditLog(store, { clock, headPath, database: dbPath }) };
  };
  const f: Fixture = {
    dir,
    dbPath,
    headPath,
    clock,
    ...open(),
    reopen() {
      f.audit[Symbol.dispose]();
      f.store.close();
      Object.assign(f, open());
    },
    tamper(sql) {
      f.audit[Symbol.dispose]();
      f.store.close();
      const raw = new DatabaseSync(dbPath);
      // A careful tamperer puts the append-only triggers back exactly as they were.
      const triggers = raw.prepare("SELECT sql FROM sqlite_schema WHERE type = 'trigger'").all();
      raw.exec("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;");
      raw.exec(sql);
      for (const t of triggers) raw.exec(String(t.sql));
      raw.close();
      Object.assign(f, open());
    },
    [Symbol.dispose]() {
      f.audit[Symbol.dispose]();
      f.store.close();
      Deno.removeSync(dir, { recursive: true });
    },
  };
  for (let i = 1; i <= records; i++) {
    clock.advance(1000);
    f.audit.append(entry(i));
  }
  f.store.flush();
  return f;
}

Deno.test("AuditLog.append() links each record to the previous one's hash, starting from genesis", () => {
  using f = fixture();
  const a = f.audit.append(entry(1));
  const b = f.audit.append(
    entry(2, { inputDigest: digestOf({ path: "f2.txt" }), detail: { bytes: 12 } }),
  );
  assert.equal(a.prev, GENESIS_HASH);
  assert.equal(b.prev, a.hash);
  assert.equal([a.seq, a.chainSeq, b.seq, b.chainSeq].join(","), "1,1,2,2");
  assert.equal(b.hash, auditHash(b.prev, { ...b, detail: '{"bytes":12}' }));
  assert.deepEqual(b.detail, { bytes: 12 });
  assert.equal(a.time, f.clock.now());
});

Deno.test("auditHash() is sha256 of the previous hash, a newline and the canonical JSON of the record body", () => {
  const body = {
    seq: 7,
    chain: "main",
    chainSeq: 7,
    time: 1_700_000_000_123,
    actor: "pid_a",
    pid: null,
    action: "fs.write",
    resource: 'filesystem:workspace:é\u0000"quoted".txt',
    decision: "allow",
    authority: "cap:c1",
    inputDigest: null,
    correlation: "c",
    parent: 3,
    detail: '{"a":1}',
  };
  const prev = "ab".repeat(32);
  assert.equal(auditHash(prev, body), sha256Hex(`${prev}\n${canonicalJson(body)}`));
});

Deno.test("AuditLog.append() refuses malformed entries with a typed error and writes nothing", () => {
  using f = fixture();
  const bad: [string, AuditEntry][] = [
    ["empty actor", entry(1, { actor: "" })],
    ["action without area", entry(1, { action: "write" })],
    ["unknown decision", { ...entry(1), decision: "maybe" as "allow" }],
    ["malformed digest", entry(1, { inputDigest: "md5:abc" })],
    ["parent in the future", entry(1, { parent: 5 })],
    ["oversized detail", entry(1, { detail: { blob: "x".repeat(20_000) } })],
    ["unknown field", { ...entry(1), secret: "x" } as AuditEntry],
  ];
  for (const [name, e] of bad) {
    assert.throws(() => f.audit.append(e), ValidationError, name);
  }
  assert.equal(f.store.lastAuditSeq(), 0);
});

Deno.test("AuditLog.append() inside a step that fails leaves no record and no gap in the chain", () => {
  using f = fixture(2);
  assert.throws(() =>
    f.store.step(() => {
      f.audit.append(entry(3));
      throw new Error("the effect's intent could not be recorded");
    })
  );
  const next = f.audit.append(entry(4));
  assert.equal(next.chainSeq, 3);
  f.store.flush();
  assert.equal(f.audit.verify({ head: true }).ok, true);
});

Deno.test("AuditLog.within() folds its scope into the detail of each record appended during it, in its own async continuation only, and the chain stays valid", async () => {
  using f = fixture(1);
  const scope: AuditScope = { detail: { syscall: "fs.stat", tool: "t" }, decisions: [] };
  const other: AuditScope = { detail: { syscall: "clock.now", tool: "u" }, decisions: [] };
  let outside: AuditRecord | undefined;
  const [inside] = await Promise.all([
    f.audit.within(scope, async () => {
      await Promise.resolve();
      const made = f.audit.append(entry(2, { detail: { bytes: 3, tool: "spoofed" } }));
      f.audit.append({ ...entry(3), decision: "none" });
      return made;
    }),
    f.audit.within(other, () => Promise.resolve()),
    Promise.resolve().then(() => {
      outside = f.audit.append(entry(4));
    }),
  ]);
  // The scope's keys win over the record's own; a concurrent caller's record gets nothing.
  assert.deepEqual(inside.detail, { bytes: 3, syscall: "fs.stat", tool: "t" });
  assert.equal(outside?.detail, null);
  // Decision records are listed (not `none` ones), and only in their own scope.
  assert.deepEqual(scope.decisions, [{ seq: inside.seq, hash: inside.hash }]);
  assert.deepEqual(other.decisions, []);
  assert.equal(f.audit.holdsDecisionOf(scope), true);
  assert.equal(f.audit.holdsDecisionOf(other), false);
  // A timer the scoped call left behind records later, outside the scope: nothing is folded.
  let later: AuditRecord | undefined;
  await f.audit.within(scope, () => {
    setTimeout(() => {
      later = f.audit.append(entry(5));
    }, 0);
    return Promise.resolve();
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(later?.detail, null);
  assert.equal(scope.decisions.length, 1);
  f.store.flush();
  assert.equal(f.audit.verify({ head: true }).ok, true);
});

Deno.test("AuditLog.holdsDecisionOf() is false for a scope whose only decision record was rolled back with its step, even once its seq is reused", () => {
  using f = fixture(1);
  const scope: AuditScope = { detail: { syscall: "fs.write_text", tool: "t" }, decisions: [] };
  assert.throws(() =>
    f.audit.within(scope, () =>
      f.store.step(() => {
        f.audit.append(entry(2));
        throw new Error("the effect's step failed after its record");
      }))
  );
  assert.equal(scope.decisions.length, 1, "the log saw the append");
  // The rolled-back record's seq is taken by the next record, with another hash.
  assert.equal(f.audit.append(entry(3)).seq, scope.decisions[0]!.seq);
  assert.equal(f.audit.holdsDecisionOf(scope), false);
});

Deno.test("AuditLog.verify() accepts an untouched chain and its head file", () => {
  using f = fixture(25);
  const result = f.audit.verify({ head: true });
  assert.ok(result.ok);
  assert.equal(result.records, 25);
  assert.equal(result.head, "verified");
  assert.deepEqual(result.chains.map((c) => [c.chain, c.records, c.tailSeq]), [["main", 25, 25]]);
});

Deno.test("AuditLog.verify() names an edited record (attack: rewrite a decision from deny to allow)", () => {
  using f = fixture(10);
  f.tamper("UPDATE audit SET decision = 'allow', authority = 'cap:cap_1' WHERE seq = 5");
  const result = f.audit.verify({ head: true });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "hash_mismatch");
  assert.equal(result.problem.seq, 5);
  assert.equal(result.records, 4, "the four records before it verified");
  assert.match(result.problem.message, /seq 5 .* was edited/);
});

Deno.test("AuditLog.verify() names the record after an edit whose hash was recomputed (attack: re-hash one record)", () => {
  using f = fixture(10);
  const raw = f.store.queryAudit({ limit: 1, order: "asc", afterSeq: 3 })[0]!;
  const forged = { ...raw, resource: "filesystem:workspace:innocent.txt" };
  const hash = auditHash(forged.prev, forged);
  f.tamper(
    `UPDATE audit SET resource = 'filesystem:workspace:innocent.txt', hash = '${hash}' WHERE seq = 4`,
  );
  const result = f.audit.verify({ head: true });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "broken_link");
  assert.equal(result.problem.seq, 5);
});

Deno.test("AuditLog.verify() names a deleted record (attack: delete the record of a denied write)", () => {
  using f = fixture(10);
  f.tamper("DELETE FROM audit WHERE seq = 5");
  const result = f.audit.verify({ head: false });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "missing_record");
  assert.equal(result.problem.chainSeq, 5);
  assert.match(result.problem.message, /missing record #5/);
});

Deno.test("AuditLog.verify() detects a truncated tail through the head file (attack: delete the newest records)", () => {
  using f = fixture(10);
  f.tamper("DELETE FROM audit WHERE seq > 7");
  const chainOnly = f.audit.verify({ head: false });
  assert.ok(
    chainOnly.ok,
    "without the head file a clean cut is undetectable — which is why the head exists",
  );
  const result = f.audit.verify({ head: true });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "truncated");
  assert.equal(result.problem.chainSeq, 8);
  assert.match(result.problem.message, /#8\.\.#10 were removed/);
});

Deno.test("AuditLog.verify() detects a completely rewritten chain through the head file (attack: forge every hash)", () => {
  using f = fixture(6);
  // Rewrite record 3 and recompute every hash from there on, as a careful tamperer would.
  const rows = f.store.scanAudit("main", 0, 100);
  let prev = rows[1]!.hash;
  const updates: string[] = [];
  for (const row of rows.slice(2)) {
    const changed = row.seq === 3
      ? { ...row, resource: "filesystem:workspace:elsewhere.txt" }
      : row;
    const hash = auditHash(prev, changed);
    updates.push(
      `UPDATE audit SET resource = '${changed.resource}', prev = '${prev}', hash = '${hash}' WHERE seq = ${row.seq};`,
    );
    prev = hash;
  }
  f.tamper(updates.join("\n"));
  assert.ok(f.audit.verify({ head: false }).ok, "the forged chain is internally consistent");
  const result = f.audit.verify({ head: true });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "head_mismatch");
  assert.equal(result.problem.chainSeq, 6);
});

Deno.test("AuditLog.verify() says truncation cannot be detected when the head file is missing", () => {
  using f = fixture(3);
  Deno.removeSync(f.headPath);
  const result = f.audit.verify({ head: true });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "head_missing");
  assert.match(result.problem.message, /Cannot detect truncation/);
  assert.ok(f.audit.verify({ head: false }).ok);
});

Deno.test("AuditLog.verify() reports an unreadable head file instead of trusting it", () => {
  using f = fixture(3);
  Deno.writeTextFileSync(f.headPath, "{not json");
  const result = f.audit.verify({ head: true });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "head_invalid");
  assert.throws(() => readHeadFile(f.headPath), AuditError);
});

Deno.test("AuditLog does not recreate a head file that vanished while records exist (attack: delete head, then truncate)", () => {
  using f = fixture(5);
  Deno.removeSync(f.headPath);
  f.tamper("DELETE FROM audit WHERE seq > 3");
  assert.equal(f.audit.anchoring, false);
  f.audit.append(entry(9));
  f.store.flush();
  assert.equal(
    readHeadFile(f.headPath),
    undefined,
    "the runtime must not launder the truncation with a fresh head",
  );
  assert.equal(f.audit.verify({ head: true }).ok, false);
});

Deno.test("AuditLog never moves the head file backwards (a stale head from a deleted database stays visible)", () => {
  using f = fixture(5);
  const stale = readHeadFile(f.headPath)!;
  // The database is deleted and a new one created at the same path.
  f.audit[Symbol.dispose]();
  f.store.close();
  for (const suffix of ["", "-wal", "-shm"]) {
    try {
      Deno.removeSync(f.dbPath + suffix);
    } catch { /* may not exist */ }
  }
  f.store = SqliteStore.open({ path: f.dbPath });
  f.audit = new AuditLog(f.store, { clock: f.clock, headPath: f.headPath, database: f.dbPath });
  f.audit.append(entry(1));
  f.store.flush();
  assert.deepEqual(readHeadFile(f.headPath)!.chains, stale.chains);
  const result = f.audit.verify({ head: true });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "truncated");
});

Deno.test("AuditLog.reanchor() replaces the head with the current chain ends", () => {
  using f = fixture(5);
  writeHeadFile(f.headPath, {
    version: 1,
    database: f.dbPath,
    time: 0,
    chains: { main: { chainSeq: 99, seq: 99, hash: "a".repeat(64) } },
  });
  assert.equal(f.audit.verify({ head: true }).ok, false);
  f.audit.reanchor();
  assert.ok(f.audit.verify({ head: true }).ok);
  assert.equal(readHeadFile(f.headPath)!.chains.main!.chainSeq, 5);
});

Deno.test("AuditLog keeps the head file current across commits and reopen", () => {
  using f = fixture(2);
  assert.equal(readHeadFile(f.headPath)!.chains.main!.chainSeq, 2);
  f.audit.append(entry(3));
  assert.equal(
    readHeadFile(f.headPath)!.chains.main!.chainSeq,
    2,
    "the head follows commits, not appends",
  );
  f.store.flush();
  assert.equal(readHeadFile(f.headPath)!.chains.main!.chainSeq, 3);
  f.reopen();
  f.audit.append(entry(4));
  f.store.flush();
  assert.equal(readHeadFile(f.headPath)!.chains.main!.chainSeq, 4);
  assert.equal(Deno.statSync(f.headPath).mode! & 0o777, 0o600);
  assert.ok(f.audit.verify({ head: true }).ok);
});

Deno.test("AuditLog.query() filters by pid, action prefix, resource, decision and time range", () => {
  using f = fixture(20);
  const seqs = (filter: Parameters<AuditLog["query"]>[0]) =>
    f.audit.query(filter).map((r) => r.seq);
  assert.deepEqual(seqs({ pid: "pid_1" }), [1, 4, 7, 10, 13, 16, 19]);
  assert.deepEqual(seqs({ actionPrefix: "fs.", decision: "deny" }), [5, 10, 15, 20]);
  assert.deepEqual(seqs({ resource: "filesystem:workspace:f7.txt" }), [7]);
  const t3 = f.audit.query({ limit: 1, afterSeq: 2 })[0]!.time;
  assert.deepEqual(seqs({ since: t3, until: t3 + 3000 }), [3, 4, 5]);
  assert.deepEqual(seqs({ limit: 3, order: "desc" }), [20, 19, 18]);
  assert.throws(() => f.audit.query({ limit: 0 }), RangeError);
  assert.throws(() => f.audit.query({ limit: 10_001 }), RangeError);
});

Deno.test("AuditLog on an in-memory database verifies its chain but cannot anchor a head", () => {
  const store = SqliteStore.open({ path: ":memory:" });
  using audit = new AuditLog(store, {
    clock: new FakeClock(),
    headPath: null,
    database: ":memory:",
  });
  audit.append(entry(1));
  store.flush();
  assert.ok(audit.verify({ head: false }).ok);
  const withHead = audit.verify({ head: true });
  assert.ok(!withHead.ok);
  assert.equal(withHead.problem.kind, "head_missing");
  assert.throws(() => audit.reanchor(), AuditError);
  store.close();
});

Deno.test("AuditLog does not advance its head over a cut chain (attack: truncate, then let the runtime keep appending)", () => {
  using f = fixture(10);
  f.tamper("DELETE FROM audit WHERE seq > 7");
  assert.equal(f.audit.anchoring, false, "the contradiction is noticed at open");
  for (let i = 0; i < 4; i++) f.audit.append(entry(20 + i));
  f.store.flush();
  const result = f.audit.verify({ head: true });
  assert.ok(!result.ok, "appending past the old head must not make the cut chain valid again");
  assert.equal(result.problem.kind, "head_mismatch");
  assert.equal(
    readHeadFile(f.headPath)!.chains.main!.chainSeq,
    10,
    "the head stayed where it was, as evidence",
  );
});

Deno.test("AuditLog notices a cut made by another connection while it runs, and stops anchoring", () => {
  using f = fixture(10);
  const raw = new DatabaseSync(f.dbPath);
  const triggers = raw.prepare("SELECT sql FROM sqlite_schema WHERE type = 'trigger'").all();
  raw.exec(
    "DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete; DELETE FROM audit WHERE seq > 7;",
  );
  for (const t of triggers) raw.exec(String(t.sql));
  raw.close();
  for (let i = 0; i < 3; i++) f.audit.append(entry(30 + i));
  f.store.flush();
  assert.equal(f.audit.anchoring, false);
  assert.ok(f.audit.headError instanceof AuditError);
  const result = f.audit.verify({ head: true });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "head_mismatch");
});

Deno.test("AuditLog does not recreate a head file deleted while it runs (attack: delete the head mid-run)", () => {
  using f = fixture(3);
  Deno.removeSync(f.headPath);
  f.audit.append(entry(4));
  f.store.flush();
  assert.equal(readHeadFile(f.headPath), undefined);
  assert.equal(f.audit.anchoring, false);
  const result = f.audit.verify({ head: true });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "head_missing");
});

Deno.test("AuditLog.verify() flags a chain the head file does not anchor (attack: insert a forged second chain)", () => {
  using f = fixture(3);
  const body = {
    seq: 4,
    chain: "worker2",
    chainSeq: 1,
    time: 1,
    actor: "human:1",
    pid: null,
    action: "approval.grant",
    resource: "filesystem:/etc/shadow",
    decision: "allow",
    authority: "human:1",
    inputDigest: null,
    correlation: null,
    parent: null,
    detail: null,
  };
  const hash = auditHash(GENESIS_HASH, body);
  const raw = new DatabaseSync(f.dbPath);
  raw.prepare(
    "INSERT INTO audit (seq, chain, chain_seq, time, actor, pid, action, resource, decision, authority, input_digest, correlation, parent, detail, prev, hash) VALUES (4, 'worker2', 1, 1, 'human:1', NULL, 'approval.grant', 'filesystem:/etc/shadow', 'allow', 'human:1', NULL, NULL, NULL, NULL, ?, ?)",
  ).run(GENESIS_HASH, hash);
  raw.close();
  f.reopen();
  f.audit.append(entry(5));
  f.store.flush();
  const result = f.audit.verify({ head: true });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "unanchored_chain");
  assert.equal(result.problem.chain, "worker2");
  assert.equal(
    readHeadFile(f.headPath)!.chains.worker2,
    undefined,
    "a routine commit never anchors a chain it did not write",
  );
});

Deno.test("AuditLog.verify() counts records outside every chain position (attack: insert rows the chain walk skips)", () => {
  using f = fixture(3);
  const raw = new DatabaseSync(f.dbPath);
  assert.throws(
    () =>
      raw.exec(
        `INSERT INTO audit VALUES (9, 'main', 0, 1, 'a', NULL, 'x.y', '', 'allow', 'a', NULL, NULL, NULL, NULL, '${GENESIS_HASH}', '${GENESIS_HASH}')`,
      ),
    /CHECK constraint/,
  );
  raw.exec("PRAGMA ignore_check_constraints = ON");
  raw.exec(
    `INSERT INTO audit VALUES (9, 'main', 0, 1, 'a', NULL, 'x.y', '', 'allow', 'a', NULL, NULL, NULL, NULL, '${GENESIS_HASH}', '${GENESIS_HASH}')`,
  );
  raw.close();
  f.reopen();
  const result = f.audit.verify({ head: false });
  assert.ok(!result.ok);
  assert.equal(result.problem.kind, "unchained_records");
});

Deno.test("AuditLog.append() refuses NUL and unpaired surrogates, which SQLite would not store as hashed (attack: poison the chain)", () => {
  using f = fixture(1);
  for (const resource of ["file\u0000.txt", "file\uD800.txt", "\uDC00"]) {
    assert.throws(
      () => f.audit.append(entry(2, { resource })),
      ValidationError,
      JSON.stringify(resource),
    );
  }
  assert.throws(() => f.audit.append(entry(2, { actor: "a\u0000b" })), ValidationError);
  f.audit.append(
    entry(2, {
      resource: "emoji 😀 ok",
      detail: { raw: "\uD800 and \u0000 inside details are escaped JSON" },
    }),
  );
  f.store.flush();
  assert.ok(f.audit.verify({ head: true }).ok);
  assert.equal(f.store.lastAuditSeq(), 2);
});

Deno.test("AuditLog.verify() refuses a head file of another database, or one that anchors nothing", () => {
  using f = fixture(2);
  const real = readHeadFile(f.headPath)!;
  writeHeadFile(f.headPath, { ...real, database: "/elsewhere/other.db" });
  const foreign = f.audit.verify({ head: true });
  assert.ok(!foreign.ok);
  assert.equal(foreign.problem.kind, "head_invalid");
  writeHeadFile(f.headPath, { ...real, chains: {} });
  const empty = f.audit.verify({ head: true });
  assert.ok(!empty.ok);
  assert.equal(empty.problem.kind, "unanchored_chain");
});

Deno.test("AuditLog reads a head file replaced while it runs (attack: swap in a forged head between commits) and stops anchoring instead of trusting what it wrote last", () => {
  using f = fixture(5);
  f.audit.append(entry(6));
  f.store.flush();
  const mine = readHeadFile(f.headPath)!;
  // A forged head in place of the one the log wrote: it claims a tail this database never had.
  const forged = {
    ...mine,
    chains: { main: { chainSeq: 99, seq: 99, hash: "f".repeat(64) } },
  };
  const swap = join(f.headPath, "..", "forged.head");
  writeHeadFile(swap, forged);
  Deno.renameSync(swap, f.headPath);
  f.audit.append(entry(7));
  f.store.flush();
  assert.equal(f.audit.anchoring, false, "the swap was read, and it contradicts the database");
  assert.ok(f.audit.headError instanceof AuditError);
  assert.deepEqual(readHeadFile(f.headPath), forged, "the evidence is left as it was");
});

Deno.test("AuditLog rewrites its head file in place at each commit (one inode, whole pages, valid at every commit), and follows a file put in its place instead of writing through its old handle", () => {
  using f = fixture(2);
  const first = Deno.statSync(f.headPath);
  for (let i = 3; i <= 6; i++) {
    f.audit.append(entry(i));
    f.store.flush();
    const info = Deno.statSync(f.headPath);
    assert.equal(info.ino, first.ino, "the same file, rewritten");
    assert.equal(info.size % 4096, 0, "padded to whole pages: never truncated");
    assert.equal(readHeadFile(f.headPath)!.chains.main!.chainSeq, i);
  }
  // Another file (an identical copy) renamed over the path: the old inode is kept by a link.
  const oldLink = join(f.dir, "old.head");
  Deno.linkSync(f.headPath, oldLink);
  const copy = join(f.dir, "state", "heads", "copy.head");
  Deno.copyFileSync(f.headPath, copy);
  Deno.renameSync(copy, f.headPath);
  f.audit.append(entry(7));
  f.store.flush();
  assert.ok(f.audit.anchoring, "an identical head agrees with the database");
  assert.equal(readHeadFile(f.headPath)!.chains.main!.chainSeq, 7, "the file at the path moved on");
  assert.equal(readHeadFile(oldLink)!.chains.main!.chainSeq, 6, "the replaced one was left alone");
  assert.ok(f.audit.verify({ head: true }).ok);
});

Deno.test("AuditLog reads a head file forged in place while it runs (attack: overwrite the same inode between commits) and stops anchoring", () => {
  using f = fixture(5);
  const mine = readHeadFile(f.headPath)!;
  const forged = { ...mine, chains: { main: { chainSeq: 99, seq: 99, hash: "e".repeat(64) } } };
  const ino = Deno.statSync(f.headPath).ino;
  Deno.writeTextFileSync(f.headPath, JSON.stringify(forged) + "\n");
  assert.equal(Deno.statSync(f.headPath).ino, ino, "control: the same inode");
  f.audit.append(entry(6));
  f.store.flush();
  assert.equal(f.audit.anchoring, false);
  assert.ok(f.audit.headError instanceof AuditError);
  assert.deepEqual(readHeadFile(f.headPath), forged, "the evidence is left as it was");
});
