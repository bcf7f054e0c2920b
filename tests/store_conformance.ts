/**
 * The Store conformance suite: the behaviour every `Store` implementation must show. It runs
 * against the SQLite file store and the in-memory store today, and any future backend
 * (PostgreSQL) registers itself the same way in `store_conformance_test.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { StoreError } from "../runtime/base/errors.ts";
import type { AuditRow, Store } from "../runtime/store/store.ts";

/** How the suite gets stores of one implementation. */
export interface StoreFactory {
  /** A fresh, empty store. */
  create(): Store | Promise<Store>;
  /** Opens the same database again after `close()`, when the backend is durable. */
  reopen?(): Store | Promise<Store>;
  /** Removes everything `create` made. */
  cleanup?(): void | Promise<void>;
}

/** A plausible audit row for storage tests (the store does not check hashes). */
export function sampleAuditRow(seq: number, overrides: Partial<AuditRow> = {}): AuditRow {
  return {
    seq,
    chain: "main",
    chainSeq: seq,
    time: 1_000 * seq,
    actor: "pid_a",
    pid: "pid_a",
    action: "fs.write",
    resource: `filesystem:workspace:file${seq}.txt`,
    decision: "allow",
    authority: "cap:c1",
    inputDigest: null,
    correlation: null,
    parent: null,
    detail: null,
    prev: "0".repeat(64),
    hash: seq.toString(16).padStart(64, "0"),
    ...overrides,
  };
}

interface Case {
  readonly name: string;
  readonly durable?: boolean;
  run(store: Store, factory: StoreFactory): void | Promise<void>;
}

const CASES: readonly Case[] = [
  {
    name: "reports the latest schema version after opening",
    run(store) {
      assert.ok(Number.isInteger(store.schemaVersion) && store.schemaVersion >= 1);
    },
  },
  {
    name: "stores, replaces and reads meta values",
    run(store) {
      assert.equal(store.getMeta("k"), undefined);
      store.setMeta("k", "one");
      store.setMeta("k", "two");
      assert.equal(store.getMeta("k"), "two");
    },
  },
  {
    name: "step() returns its callback's value",
    run(store) {
      assert.equal(store.step(() => 42), 42);
    },
  },
  {
    name: "a failed step loses only its own writes, not earlier steps of the same batch",
    run(store) {
      store.step(() => store.setMeta("kept", "1"));
      assert.throws(
        () =>
          store.step(() => {
            store.setMeta("lost", "1");
            store.insertAudit(sampleAuditRow(1));
            throw new Error("boom");
          }),
        /boom/,
      );
      store.flush();
      assert.equal(store.getMeta("kept"), "1");
      assert.equal(store.getMeta("lost"), undefined);
      assert.equal(store.lastAuditSeq(), 0);
    },
  },
  {
    name: "a failed nested step rolls back only the inner step",
    run(store) {
      store.step(() => {
        store.setMeta("outer", "1");
        assert.throws(() =>
          store.step(() => {
            store.setMeta("inner", "1");
            throw new Error("inner failure");
          })
        );
        store.setMeta("after", "1");
      });
      store.flush();
      assert.equal(store.getMeta("outer"), "1");
      assert.equal(store.getMeta("inner"), undefined);
      assert.equal(store.getMeta("after"), "1");
    },
  },
  {
    name:
      "a step whose callback returns a promise is refused and rolled back (no transaction spans an await)",
    async run(store) {
      assert.throws(
        () =>
          store.step(() => {
            store.setMeta("async", "1");
            return Promise.resolve(1);
          }),
        (error: unknown) => error instanceof TypeError && /synchronous/.test(error.message),
      );
      assert.equal(store.getMeta("async"), undefined);
      await Promise.resolve();
    },
  },
  {
    name: "flush() inside a step is refused: commits happen between steps",
    run(store) {
      assert.throws(() => store.step(() => store.flush()), TypeError);
      store.setMeta("still", "works");
      assert.equal(store.getMeta("still"), "works");
    },
  },
  {
    name: "onCommit listeners run after a commit and can unsubscribe",
    run(store) {
      let commits = 0;
      const off = store.onCommit(() => commits++);
      store.setMeta("a", "1");
      store.flush();
      assert.equal(commits, 1);
      store.flush();
      assert.equal(commits, 1, "a flush with nothing pending is not a commit");
      off();
      store.setMeta("b", "1");
      store.flush();
      assert.equal(commits, 1);
    },
  },
  {
    name: "appends audit rows and reports each chain's tail",
    run(store) {
      assert.equal(store.auditTail("main"), undefined);
      store.insertAudit(sampleAuditRow(1));
      store.insertAudit(sampleAuditRow(2));
      store.insertAudit(sampleAuditRow(3, { chain: "w2", chainSeq: 1 }));
      assert.deepEqual(store.auditTail("main"), {
        seq: 2,
        chainSeq: 2,
        hash: sampleAuditRow(2).hash,
      });
      assert.deepEqual(store.auditTail("w2"), {
        seq: 3,
        chainSeq: 1,
        hash: sampleAuditRow(3).hash,
      });
      assert.deepEqual(store.auditChains(), ["main", "w2"]);
      assert.equal(store.lastAuditSeq(), 3);
    },
  },
  {
    name: "refuses a second audit row at the same chain position",
    run(store) {
      store.insertAudit(sampleAuditRow(1));
      assert.throws(
        () => store.insertAudit(sampleAuditRow(2, { chainSeq: 1 })),
        (error: unknown) => error instanceof StoreError && error.code === "store_conflict",
      );
      assert.equal(store.lastAuditSeq(), 1);
    },
  },
  {
    name: "offers no way to update or delete audit rows",
    run(store) {
      store.insertAudit(sampleAuditRow(1));
      assert.equal(store.queryAudit({ limit: 10, order: "asc" }).length, 1);
      // The interface has no update or delete; append-only is a property of the API itself.
      const methods = Object.getOwnPropertyNames(Object.getPrototypeOf(store));
      assert.ok(!methods.some((m) => /^(update|delete|remove)Audit/i.test(m)), methods.join(","));
    },
  },
  {
    name: "round-trips every audit field, including nulls and unicode",
    run(store) {
      const row = sampleAuditRow(1, {
        pid: null,
        inputDigest: "sha256:" + "a".repeat(64),
        correlation: "corr_1",
        parent: null,
        detail: '{"k":"v\\u0000 é 😀"}',
        resource: "filesystem:workspace:dir/ünï code.txt",
      });
      store.insertAudit(row);
      assert.deepEqual(store.queryAudit({ limit: 1, order: "asc" })[0], row);
    },
  },
  {
    name:
      "queries audit rows by pid, actor, action, resource, decision, correlation, time and cursor",
    run(store) {
      const rows = [
        sampleAuditRow(1, {
          pid: "p1",
          action: "fs.write",
          resource: "filesystem:workspace:src/a.ts",
          decision: "allow",
        }),
        sampleAuditRow(2, {
          pid: "p2",
          action: "fs.read",
          resource: "filesystem:workspace:src/b.ts",
          decision: "deny",
        }),
        sampleAuditRow(3, {
          pid: "p1",
          actor: "human:1",
          action: "human.approve",
          resource: "filesystem:workspace:docs/c.md",
          decision: "allow",
          correlation: "c9",
        }),
        sampleAuditRow(4, {
          pid: null,
          actor: "operator",
          action: "store.init",
          resource: "",
          decision: "none",
        }),
        sampleAuditRow(5, {
          pid: "p1",
          action: "fs.write",
          resource: "filesystem:workspace:src%/x",
          decision: "ask",
        }),
      ];
      store.step(() => rows.forEach((r) => store.insertAudit(r)));
      const seqs = (q: Parameters<Store["queryAudit"]>[0]) => store.queryAudit(q).map((r) => r.seq);
      const base = { limit: 100, order: "asc" } as const;
      assert.deepEqual(seqs({ ...base, pid: "p1" }), [1, 3, 5]);
      assert.deepEqual(seqs({ ...base, actor: "operator" }), [4]);
      assert.deepEqual(seqs({ ...base, action: "fs.write" }), [1, 5]);
      assert.deepEqual(seqs({ ...base, actionPrefix: "fs." }), [1, 2, 5]);
      assert.deepEqual(seqs({ ...base, resourcePrefix: "filesystem:workspace:src/" }), [1, 2]);
      assert.deepEqual(
        seqs({ ...base, resourcePrefix: "filesystem:workspace:src%" }),
        [5],
        "% is literal",
      );
      assert.deepEqual(seqs({ ...base, decision: "deny" }), [2]);
      assert.deepEqual(seqs({ ...base, correlation: "c9" }), [3]);
      assert.deepEqual(seqs({ ...base, since: 2_000, until: 4_000 }), [2, 3]);
      assert.deepEqual(seqs({ ...base, afterSeq: 3 }), [4, 5]);
      assert.deepEqual(seqs({ limit: 2, order: "desc" }), [5, 4]);
      assert.deepEqual(seqs({ limit: 2, order: "desc", beforeSeq: 4 }), [3, 2]);
      assert.deepEqual(seqs({ ...base, pid: "p1", decision: "allow", actionPrefix: "fs." }), [1]);
      assert.deepEqual(seqs({ ...base, limit: 0 }), []);
    },
  },
  {
    name: "scans one chain in order from a position",
    run(store) {
      store.step(() => {
        for (let i = 1; i <= 5; i++) store.insertAudit(sampleAuditRow(i));
        store.insertAudit(sampleAuditRow(6, { chain: "w2", chainSeq: 1 }));
      });
      assert.deepEqual(store.scanAudit("main", 2, 2).map((r) => r.chainSeq), [3, 4]);
      assert.deepEqual(store.scanAudit("main", 5, 10), []);
      assert.deepEqual(store.scanAudit("w2", 0, 10).map((r) => r.seq), [6]);
    },
  },
  {
    name: "appends events with increasing seq and reads them after a cursor with filters",
    run(store) {
      const ev = (session: string, kind: string, turn = 0) => ({
        version: 1,
        session,
        turn,
        time: 5,
        kind,
        payload: `{"n":"${kind}"}`,
      });
      const a = store.insertEvent(ev("s1", "notice"));
      const b = store.insertEvent(ev("s2", "session.started", 3));
      const c = store.insertEvent(ev("s1", "session.ended"));
      assert.ok(a < b && b < c);
      assert.equal(store.lastEventSeq(), c);
      assert.deepEqual(store.readEvents({ after: 0, limit: 10 }).map((e) => e.seq), [a, b, c]);
      assert.deepEqual(store.readEvents({ after: a, limit: 10 }).map((e) => e.seq), [b, c]);
      assert.deepEqual(store.readEvents({ after: 0, upTo: b, limit: 10 }).map((e) => e.seq), [
        a,
        b,
      ]);
      assert.deepEqual(store.readEvents({ after: 0, session: "s1", limit: 10 }).map((e) => e.seq), [
        a,
        c,
      ]);
      assert.deepEqual(
        store.readEvents({ after: 0, kinds: ["notice", "session.ended"], limit: 10 }).map((e) =>
          e.seq
        ),
        [a, c],
      );
      assert.deepEqual(store.readEvents({ after: 0, kinds: [], limit: 10 }), []);
      assert.deepEqual(store.readEvents({ after: 0, limit: 1 }).map((e) => e.seq), [a]);
      assert.deepEqual(store.readEvents({ after: a, limit: 1 })[0], {
        seq: b,
        ...ev("s2", "session.started", 3),
      });
    },
  },
  {
    name: "stores, replaces and reads processes, listing them by status, parent and cursor",
    run(store) {
      const p = (pid: string, parent: string | null, status: string, updated = 1) => ({
        pid,
        parent,
        status,
        data: JSON.stringify({ pid, status }),
        created: 1,
        updated,
      });
      store.putProcess(p("pid_a", null, "runnable"));
      store.putProcess(p("pid_b", "pid_a", "sleeping"));
      store.putProcess(p("pid_c", "pid_a", "exited"));
      store.putProcess(p("pid_d", "pid_b", "runnable"));
      store.putProcess(p("pid_a", null, "running", 2));
      assert.deepEqual(store.getProcess("pid_a"), {
        ...p("pid_a", null, "running", 2),
        version: 2,
      });
      assert.equal(store.getProcess("pid_zz"), undefined);
      assert.equal(store.getProcessVersion("pid_a"), 2);
      assert.equal(store.getProcessVersion("pid_b"), 1);
      assert.equal(store.getProcessVersion("pid_zz"), undefined);
      assert.equal(
        store.putProcess(p("pid_b", "pid_a", "sleeping", 3)),
        2,
        "every write bumps the version",
      );
      const pids = (q: Parameters<Store["listProcesses"]>[0]) =>
        store.listProcesses(q).map((r) => r.pid);
      assert.deepEqual(pids({ limit: 10 }), ["pid_a", "pid_b", "pid_c", "pid_d"]);
      assert.deepEqual(pids({ statuses: ["runnable", "running"], limit: 10 }), ["pid_a", "pid_d"]);
      assert.deepEqual(pids({ statuses: [], limit: 10 }), []);
      assert.deepEqual(pids({ parent: "pid_a", limit: 10 }), ["pid_b", "pid_c"]);
      assert.deepEqual(pids({ afterPid: "pid_b", limit: 1 }), ["pid_c"]);
      assert.equal(store.countLiveChildren("pid_a", ["exited", "failed", "killed"]), 1);
      assert.equal(store.countLiveChildren("pid_a", []), 2);
      assert.equal(store.countLiveChildren("pid_d", ["exited"]), 0);
    },
  },
  {
    name: "stores actions and lists them by status, process and unreported outcome",
    run(store) {
      const a = (id: string, pid: string, status: string, reported = false, created = 1) => ({
        id,
        pid,
        kind: "tool_call",
        digest: `sha256:${"0".repeat(64)}`,
        status,
        request: '{"tool":"x"}',
        outcome: status === "executing" ? null : '{"ok":true}',
        reported,
        created,
        updated: created,
      });
      store.putAction(a("act_1", "pid_a", "executing", false, 1));
      store.putAction(a("act_2", "pid_a", "done", true, 2));
      store.putAction(a("act_3", "pid_b", "executing", false, 3));
      store.putAction({ ...a("act_1", "pid_a", "outcome_unknown", false, 1), updated: 9 });
      assert.deepEqual(store.getAction("act_1"), {
        ...a("act_1", "pid_a", "outcome_unknown"),
        updated: 9,
      });
      const ids = (q: Parameters<Store["listActions"]>[0]) => store.listActions(q).map((r) => r.id);
      assert.deepEqual(ids({ status: "executing", limit: 10 }), ["act_3"]);
      assert.deepEqual(ids({ pid: "pid_a", limit: 10 }), ["act_1", "act_2"]);
      assert.deepEqual(ids({ pid: "pid_a", unreported: true, limit: 10 }), ["act_1"]);
      assert.deepEqual(ids({ limit: 2 }), ["act_1", "act_2"]);
    },
  },
  {
    name: "stores human requests and lists them by status, process and expiry, oldest first",
    run(store) {
      const h = (
        id: string,
        pid: string,
        status: string,
        created: number,
        expires: number | null,
      ) => ({
        id,
        pid,
        kind: "approval",
        status,
        data: JSON.stringify({ id, note: "ünïcode ✓" }),
        created,
        expires,
      });
      store.putHumanRequest(h("hreq_3", "pid_b", "pending", 3, null));
      store.putHumanRequest(h("hreq_1", "pid_a", "pending", 1, 100));
      store.putHumanRequest(h("hreq_2", "pid_a", "approved", 2, 50));
      store.putHumanRequest(h("hreq_4", "pid_a", "pending", 4, 200));
      assert.deepEqual(store.getHumanRequest("hreq_1"), h("hreq_1", "pid_a", "pending", 1, 100));
      assert.equal(store.getHumanRequest("hreq_9"), undefined);
      // Replacing keeps one row per id.
      store.putHumanRequest(h("hreq_4", "pid_a", "expired", 4, 200));
      const ids = (q: Parameters<Store["listHumanRequests"]>[0]) =>
        store.listHumanRequests(q).map((r) => r.id);
      assert.deepEqual(ids({ limit: 10 }), ["hreq_1", "hreq_2", "hreq_3", "hreq_4"]);
      assert.deepEqual(ids({ statuses: ["pending"], limit: 10 }), ["hreq_1", "hreq_3"]);
      assert.deepEqual(ids({ statuses: ["pending", "expired"], pid: "pid_a", limit: 10 }), [
        "hreq_1",
        "hreq_4",
      ]);
      // A request that never expires is never due.
      assert.deepEqual(ids({ statuses: ["pending"], expiringBefore: 101, limit: 10 }), ["hreq_1"]);
      assert.deepEqual(ids({ expiringBefore: 100, limit: 10 }), ["hreq_2"]);
      assert.deepEqual(ids({ limit: 1 }), ["hreq_1"]);
      assert.deepEqual(ids({ statuses: [], limit: 10 }), []);
    },
  },
  {
    name: "lists human requests made in the same millisecond in the order they were made",
    run(store) {
      // Ids are random: "oldest first" must not fall back to their order.
      for (const id of ["hreq_c", "hreq_a", "hreq_b"]) {
        store.putHumanRequest({
          id,
          pid: "pid_a",
          kind: "approval",
          status: "pending",
          data: "{}",
          created: 7,
          expires: null,
        });
      }
      assert.deepEqual(store.listHumanRequests({ pid: "pid_a", limit: 10 }).map((r) => r.id), [
        "hreq_c",
        "hreq_a",
        "hreq_b",
      ]);
    },
  },
  {
    name: "keeps what finished processes retained, lists it oldest first by filter and cursor",
    run(store) {
      const r = (pid: string, since: number, removed: number | null = null) => ({
        pid,
        namespace: `process:${pid}`,
        since,
        objects: 3,
        bytes: 1_024,
        removed,
      });
      store.putRetained(r("pid_b", 20));
      store.putRetained(r("pid_a", 10));
      store.putRetained(r("pid_c", 20, 99));
      assert.deepEqual(store.getRetained("pid_a"), r("pid_a", 10));
      assert.equal(store.getRetained("pid_zz"), undefined);
      const pids = (q: Parameters<Store["listRetained"]>[0]) =>
        store.listRetained(q).map((x) => x.pid);
      assert.deepEqual(pids({ limit: 10 }), ["pid_a", "pid_b", "pid_c"]);
      assert.deepEqual(pids({ removed: false, limit: 10 }), ["pid_a", "pid_b"]);
      assert.deepEqual(pids({ removed: true, limit: 10 }), ["pid_c"]);
      assert.deepEqual(pids({ before: 20, limit: 10 }), ["pid_a"]);
      assert.deepEqual(pids({ after: { since: 10, pid: "pid_a" }, limit: 10 }), ["pid_b", "pid_c"]);
      // Marking a row removed replaces it.
      store.putRetained(r("pid_a", 10, 50));
      assert.equal(store.getRetained("pid_a")?.removed, 50);
      assert.deepEqual(store.namespaceUsage("process:nobody"), { objects: 0, bytes: 0 });
    },
  },
  {
    name: "stores objects with unique names per namespace, lists them by filter, and deletes links",
    run(store) {
      const o = (oid: string, namespace: string, name: string | null, type = "note") => ({
        oid,
        namespace,
        name,
        type,
        creator: "pid_a",
        data: JSON.stringify({ oid, note: "ünïcode ✓" }),
        payload: '{"text":"hello"}',
        volatile: false,
        created: 1,
        updated: 1,
      });
      store.putObject(o("obj_1", "process:pid_a", "note"));
      store.putObject(o("obj_2", "project", "note"));
      store.putObject(o("obj_3", "project", "notes%_", "result"));
      store.putObject({ ...o("obj_4", "project", null), payload: null, volatile: true });
      assert.deepEqual(store.getObject("obj_1"), o("obj_1", "process:pid_a", "note"));
      assert.equal(store.getObjectByName("project", "note")?.oid, "obj_2");
      assert.equal(store.getObjectByName("process:pid_b", "note"), undefined);
      // The same name in the same namespace conflicts; nothing changes.
      assert.throws(
        () => store.putObject(o("obj_5", "project", "note")),
        (e: unknown) => e instanceof StoreError && e.code === "store_conflict",
      );
      assert.equal(store.getObject("obj_5"), undefined);
      // A volatile object never stores a payload.
      assert.throws(
        () => store.putObject({ ...o("obj_6", "project", null), volatile: true }),
        StoreError,
      );
      const ids = (q: Parameters<Store["listObjects"]>[0]) =>
        store.listObjects(q).map((r) => r.oid);
      assert.deepEqual(ids({ namespaces: ["project"], limit: 10 }), ["obj_2", "obj_3", "obj_4"]);
      assert.deepEqual(ids({ namespaces: [], limit: 10 }), []);
      assert.deepEqual(ids({ type: "result", limit: 10 }), ["obj_3"]);
      // A name prefix is literal: % and _ are not wildcards.
      assert.deepEqual(ids({ namePrefix: "notes%", limit: 10 }), ["obj_3"]);
      assert.deepEqual(ids({ namePrefix: "no", limit: 10 }), ["obj_1", "obj_2", "obj_3"]);
      assert.deepEqual(ids({ afterOid: "obj_2", limit: 1 }), ["obj_3"]);
      store.putLink({ from: "obj_2", to: "obj_3", rel: "cites", creator: "pid_a", created: 5 });
      store.putLink({ from: "obj_2", to: "obj_3", rel: "cites", creator: "pid_a", created: 6 });
      store.putLink({ from: "obj_1", to: "obj_2", rel: "answers", creator: "pid_a", created: 7 });
      assert.deepEqual(store.listLinks("obj_2", 10).map((l) => [l.from, l.to, l.rel]), [
        ["obj_2", "obj_3", "cites"],
        ["obj_1", "obj_2", "answers"],
      ]);
      assert.equal(store.deleteLink("obj_1", "obj_2", "answers"), true);
      assert.equal(store.deleteLink("obj_1", "obj_2", "answers"), false);
      assert.equal(store.deleteObject("obj_3"), true);
      assert.deepEqual(store.listLinks("obj_2", 10), [], "links of a deleted object go with it");
      assert.equal(store.deleteObject("obj_3"), false);
      store.putNamespace({ key: "project", creator: "operator", created: 1 });
      store.putNamespace({ key: "project", creator: "someone", created: 2 });
      assert.deepEqual(store.getNamespace("project"), {
        key: "project",
        creator: "operator",
        created: 1,
      });
      assert.equal(store.getNamespace("team"), undefined);
      store.putNamespace({ key: "team/notes", creator: "operator", created: 3 });
      store.putNamespace({ key: "alpha", creator: "operator", created: 4 });
      assert.deepEqual(store.listNamespaces(undefined, 10).map((n) => n.key), [
        "alpha",
        "project",
        "team/notes",
      ]);
      assert.deepEqual(store.listNamespaces("alpha", 1).map((n) => n.key), ["project"]);
    },
  },
  {
    name:
      "stores images, replaces them by id keeping their creation time, and lists them in id order",
    run(store) {
      const image = (id: string, data: string, created = 1, updated = 1) => ({
        id,
        data,
        loader: "operator",
        created,
        updated,
      });
      store.putImage(image("triage:v1", '{"v":1}'));
      store.putImage(image("a-image:v0", '{"v":0}'));
      store.putImage(image("triage:v1", '{"v":2}', 1, 5));
      assert.deepEqual(store.getImage("triage:v1"), image("triage:v1", '{"v":2}', 1, 5));
      assert.equal(store.getImage("ghost:v1"), undefined);
      assert.deepEqual(store.listImages(undefined, 10).map((r) => r.id), [
        "a-image:v0",
        "triage:v1",
      ]);
      assert.deepEqual(store.listImages("a-image:v0", 10).map((r) => r.id), ["triage:v1"]);
    },
  },
  {
    name: "a closed store refuses every call with store_closed, and close() is idempotent",
    run(store) {
      store.close();
      store.close();
      for (
        const call of [
          () => store.getMeta("k"),
          () => store.setMeta("k", "v"),
          () => store.step(() => 1),
          () => store.flush(),
        ]
      ) {
        assert.throws(call, (e: unknown) => e instanceof StoreError && e.code === "store_closed");
      }
    },
  },
  {
    name: "flushed steps survive closing and reopening",
    durable: true,
    async run(store, factory) {
      store.setMeta("durable", "yes");
      store.insertAudit(sampleAuditRow(1));
      store.insertEvent({
        version: 1,
        session: "s",
        turn: 0,
        time: 1,
        kind: "notice",
        payload: "{}",
      });
      store.close();
      const again = await factory.reopen!();
      try {
        assert.equal(again.getMeta("durable"), "yes");
        assert.equal(again.lastAuditSeq(), 1);
        assert.equal(again.lastEventSeq(), 1);
      } finally {
        again.close();
      }
    },
  },
  {
    name:
      "dataVersion moves when another connection commits, and not for this connection's own commits",
    durable: true,
    async run(store, factory) {
      const other = await factory.reopen!();
      try {
        const before = store.dataVersion();
        store.setMeta("mine", "1");
        store.flush();
        assert.equal(store.dataVersion(), before, "its own commit is not another's");
        other.setMeta("theirs", "1");
        other.flush();
        assert.notEqual(store.dataVersion(), before, "another connection committed");
        assert.equal(store.getMeta("theirs"), "1");
        assert.equal(other.getMeta("mine"), "1");
      } finally {
        other.close();
      }
    },
  },
  {
    name:
      "leases: live top-level trees are claimed by one owner at a time, oldest first, up to a limit",
    run(store) {
      const FINISHED = ["exited", "failed", "killed"];
      const put = (pid: string, parent: string | null, status: string, updated: number) =>
        store.putProcess({ pid, parent, status, data: "{}", created: 1, updated });
      put("pid_r1", null, "runnable", 30);
      put("pid_r2", null, "sleeping", 10);
      put("pid_r3", null, "waiting", 20);
      put("pid_c1", "pid_r1", "runnable", 5);
      put("pid_done", null, "exited", 1);
      store.flush();
      assert.deepEqual(store.claimTrees("w1", 1_000, 500, 2, FINISHED), ["pid_r2", "pid_r3"]);
      assert.deepEqual(store.claimTrees("w2", 1_000, 500, 10, FINISHED), ["pid_r1"]);
      assert.deepEqual(store.claimTrees("w3", 1_000, 500, 10, FINISHED), [], "all are held");
      assert.deepEqual(store.claimTrees("w1", 1_000, 500, 10, FINISHED), [], "w1 holds its own");
      const leases = store.listLeases(10);
      assert.deepEqual(leases.map((l) => [l.root, l.owner, l.expires, l.generation]), [
        ["pid_r1", "w2", 1_500, 1],
        ["pid_r2", "w1", 1_500, 1],
        ["pid_r3", "w1", 1_500, 1],
      ]);
    },
  },
  {
    name:
      "leases: a lapsed lease is taken over (a new generation), renewals say what is still held, release frees",
    run(store) {
      const FINISHED = ["exited", "failed", "killed"];
      for (const pid of ["pid_a", "pid_b"]) {
        store.putProcess({
          pid,
          parent: null,
          status: "runnable",
          data: "{}",
          created: 1,
          updated: 1,
        });
      }
      store.flush();
      assert.deepEqual(store.claimTrees("dead", 1_000, 100, 10, FINISHED), ["pid_a", "pid_b"]);
      assert.deepEqual(store.renewLeases("dead", 1_050, 100), ["pid_a", "pid_b"]);
      // Not lapsed yet at 1_149: nothing to take.
      assert.deepEqual(store.claimTrees("alive", 1_149, 100, 10, FINISHED), []);
      // Only lapsed trees: none yet, and a tree never leased is not one.
      store.putProcess({
        pid: "pid_new",
        parent: null,
        status: "runnable",
        data: "{}",
        created: 1,
        updated: 9,
      });
      store.flush();
      assert.deepEqual(
        store.claimTrees("alive", 1_149, 100, 10, FINISHED, { lapsedOnly: true }),
        [],
      );
      // Lapsed at 1_150 (expires 1_150 is not after now).
      assert.deepEqual(
        store.claimTrees("alive", 1_150, 100, 1, FINISHED, { lapsedOnly: true }),
        ["pid_a"],
      );
      const taken = store.listLeases(10).find((l) => l.root === "pid_a")!;
      assert.equal(taken.owner, "alive");
      assert.equal(taken.generation, 2);
      assert.equal(taken.claimed, 1_150);
      // The old owner learns what it lost when it renews.
      assert.deepEqual(store.renewLeases("dead", 1_160, 100), ["pid_b"]);
      assert.equal(store.releaseLease("dead", "pid_a"), false, "not its lease any more");
      assert.equal(store.releaseLease("alive", "pid_a"), true);
      assert.deepEqual(store.listLeases(10).map((l) => l.root), ["pid_b"]);
      // A finished tree is never claimed.
      store.putProcess({
        pid: "pid_a",
        parent: null,
        status: "exited",
        data: "{}",
        created: 1,
        updated: 2,
      });
      store.flush();
      assert.deepEqual(store.claimTrees("alive", 5_000, 100, 10, FINISHED), ["pid_b", "pid_new"]);
    },
  },
  {
    name:
      "fenced commits: a worker that lost its lease commits nothing more (the whole batch rolled back, the store failed with store_lease_lost); the new owner's fenced commits go through; the fence reads its roots at each commit and can be lifted",
    durable: true,
    async run(store, factory) {
      const FINISHED = ["exited", "failed", "killed"];
      for (const pid of ["pid_a", "pid_b"]) {
        store.putProcess({
          pid,
          parent: null,
          status: "runnable",
          data: "{}",
          created: 1,
          updated: 1,
        });
      }
      store.flush();
      assert.deepEqual(store.claimTrees("stale", 1_000, 100, 10, FINISHED), ["pid_a", "pid_b"]);
      const held = new Set(["pid_a", "pid_b"]);
      store.fenceCommits("stale", () => [...held]);
      store.step(() => store.setMeta("before", "1"));
      store.flush();
      const other = await factory.reopen!();
      try {
        assert.equal(other.getMeta("before"), "1", "a fenced commit on held leases goes through");
        // The stale worker's lease on pid_a lapsed and another worker took the tree over.
        assert.deepEqual(
          other.claimTrees("fresh", 1_200, 100, 1, FINISHED, { lapsedOnly: true }),
          ["pid_a"],
        );
        const lifted = other.fenceCommits("fresh", () => ["pid_a"]);
        // The stale worker, unaware, writes (for any tree): nothing of the batch commits.
        store.step(() => store.setMeta("stale_write", "1"));
        assert.throws(
          () => store.flush(),
          (e: unknown) =>
            e instanceof StoreError && e.code === "store_lease_lost" &&
            /no longer holds the lease on process tree pid_a/.test(e.message),
        );
        assert.equal(other.getMeta("stale_write"), undefined, "nothing of the batch committed");
        assert.throws(() => store.getMeta("x"), /no longer holds the lease/);
        // The new owner's fenced commits go through.
        other.step(() => other.setMeta("fresh_write", "1"));
        other.flush();
        assert.equal(other.getMeta("fresh_write"), "1");
        // Lifted, a fence checks nothing: a commit goes through though "fresh" holds no pid_b.
        lifted();
        const wrong = other.fenceCommits("fresh", () => ["pid_b"]);
        wrong();
        other.step(() => other.setMeta("later", "1"));
        other.flush();
        assert.equal(other.getMeta("later"), "1");
      } finally {
        other.close();
      }
    },
  },
];

/** Registers the conformance suite for one Store implementation. */
export function storeConformance(
  name: string,
  factory: StoreFactory & { readonly durable: boolean },
): void {
  for (const c of CASES) {
    if (c.durable && !factory.durable) continue;
    Deno.test(`Store conformance (${name}): ${c.name}`, async () => {
      const store = await factory.create();
      try {
        await c.run(store, factory);
      } finally {
        store.close();
        await factory.cleanup?.();
      }
    });
  }
}
