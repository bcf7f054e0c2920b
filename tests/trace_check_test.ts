/**
 * The trace invariant checker (issue 24) on recorded runs: clean runs — the fix run with `--yes`
 * and its approvals, a fork with delegation — keep every invariant; a COPY of a run's database
 * tampered with node:sqlite the way a careful tamperer would (the chain re-hashed after the edit,
 * the head file re-anchored, so the hash check sees nothing) is caught by the invariant it breaks:
 * an effect with no decision, an effect after an unanswered ask, a one-shot approval used twice,
 * a child given more than its parent holds. `libos audit check` exits 1 listing each, escaped.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { auditHash, AuditLog, GENESIS_HASH } from "../runtime/audit/audit_log.ts";
import type { TraceInvariant } from "../runtime/audit/trace_check.ts";
import { systemClock } from "../runtime/base/clock.ts";
import { locateDatabase } from "../runtime/store/database.ts";
import { SqliteStore } from "../runtime/store/sqlite_store.ts";
import type { AuditRow } from "../runtime/store/store.ts";
import { fsScope } from "../runtime/authority/authority.ts";
import { testRuntime } from "../testing.ts";
import { type Sandbox, sandbox } from "./_cli_sandbox.ts";
import { yesRun } from "./agent_fixture.ts";
import { assertTraceInvariants, traceReport } from "./trace_invariants.ts";

const COLUMNS: Record<keyof AuditRow, string> = {
  seq: "seq",
  chain: "chain",
  chainSeq: "chain_seq",
  time: "time",
  actor: "actor",
  pid: "pid",
  action: "action",
  resource: "resource",
  decision: "decision",
  authority: "authority",
  inputDigest: "input_digest",
  correlation: "correlation",
  parent: "parent",
  detail: "detail",
  prev: "prev",
  hash: "hash",
};

/** A record to insert: what it says; seq, chain position, links and hash are redone. */
type Draft = Omit<AuditRow, "seq" | "chainSeq" | "prev" | "hash"> & { seq?: number };

/**
 * Rewrites the audit table of the database at `path`: `edit` gets the records in order and
 * returns the new list; every record is renumbered and re-hashed into one valid chain, and the
 * head file (when `headPath` is given) is re-anchored — only the invariants can tell.
 */
function rewriteAudit(
  path: string,
  edit: (rows: Draft[]) => Draft[],
  headPath: string | null = null,
): void {
  const db = new DatabaseSync(path);
  const rows = db.prepare("SELECT * FROM audit ORDER BY seq").all().map((r) =>
    Object.fromEntries(
      Object.entries(COLUMNS).map(([key, column]) => [key, r[column]]),
    ) as unknown as AuditRow
  );
  const edited = edit(rows);
  const triggers = db.prepare("SELECT sql FROM sqlite_schema WHERE type = 'trigger'").all();
  db.exec("DROP TRIGGER IF EXISTS audit_no_update; DROP TRIGGER IF EXISTS audit_no_delete;");
  db.exec("DELETE FROM audit");
  const insert = db.prepare(
    `INSERT INTO audit (${Object.values(COLUMNS).join(", ")}) VALUES (${
      Object.keys(COLUMNS).map(() => "?").join(", ")
    })`,
  );
  let prev = GENESIS_HASH;
  edited.forEach((draft, i) => {
    const body = { ...draft, seq: i + 1, chainSeq: i + 1 };
    const row: AuditRow = { ...body, prev, hash: auditHash(prev, body) };
    insert.run(...Object.keys(COLUMNS).map((k) => row[k as keyof AuditRow] as SQLInputValue));
    prev = row.hash;
  });
  for (const t of triggers) db.exec(String(t.sql));
  db.close();
  if (headPath !== null) {
    const store = SqliteStore.open({ path });
    try {
      using audit = new AuditLog(store, { clock: systemClock(), headPath, database: path });
      audit.reanchor();
    } finally {
      store.close();
    }
  }
}

/** Inserts `drafts` before the first record `before` picks. */
function insertBefore(rows: Draft[], before: (r: Draft) => boolean, ...drafts: Draft[]): Draft[] {
  const at = rows.findIndex(before);
  assert.ok(at >= 0, "the record to insert before exists");
  return [...rows.slice(0, at), ...drafts, ...rows.slice(at)];
}

function sql(path: string, statement: string, ...values: SQLInputValue[]): void {
  const db = new DatabaseSync(path);
  db.prepare(statement).run(...values);
  db.close();
}

function invariants(path: string, pid: string): TraceInvariant[] {
  return [...new Set(traceReport(path, pid).violations.map((v) => v.invariant))];
}

/** The fix run with `--yes` (two shell runs approved, one edit), its pid and a copy maker. */
async function fixRun(s: Sandbox) {
  const { pid } = await yesRun(s);
  let n = 0;
  return {
    pid,
    /** A copy of the database beside the state directory, and its head file's path. */
    copy() {
      const path = join(s.state, "..", `copy-${n++}.db`);
      Deno.copyFileSync(s.dbPath(), path);
      const location = locateDatabase({
        db: path,
        env: { get: (k) => (k === "XDG_STATE_HOME" ? s.state : undefined) },
        cwd: s.workspace,
      });
      return { path, headPath: location.headPath };
    },
  };
}

const DIGEST = `sha256:${"ab".repeat(32)}`;

Deno.test("checkTrace on the fix run with --yes: every invariant holds (3 effects, 2 one-shot approvals each used once, 2 requests); libos audit check exits 0", async () => {
  using s = sandbox();
  const run = await fixRun(s);
  const report = assertTraceInvariants(s.dbPath(), run.pid);
  assert.deepEqual(report.checked, {
    processes: 1,
    records: report.checked.records,
    effects: 3,
    approvals: 2,
    oneShots: 2,
    delegated: 0,
  });
  const cli = await s.cli("audit", "check", run.pid);
  assert.equal(cli.status, 0, cli.stdout + cli.stderr);
  assert.match(cli.stdout, /keeps every invariant \(1 process, \d+ records, 3 effects/);
  const json = await s.json("audit", "check", run.pid, "--tree");
  assert.equal(json.status, 0);
  assert.equal(json.doc.ok, true);
  assert.deepEqual(json.doc.violations, []);
});

Deno.test("attack: an effect inserted with no decision (intent and done of an fs.write, the chain re-hashed and re-anchored) — audit verify passes, audit check reports decision_before_effect, escaped", async () => {
  using s = sandbox();
  const run = await fixRun(s);
  const { path, headPath } = run.copy();
  const hostile = "notes/\x1b[2Jowned.txt";
  const request = JSON.stringify({ path: hostile, sha256: "ab".repeat(32), bytes: 5 });
  sql(
    path,
    "INSERT INTO actions VALUES ('act_0000deadbeef', ?, 'fs.write', ?, 'done', ?, NULL, 1, 0, 0)",
    run.pid,
    DIGEST,
    request,
  );
  rewriteAudit(path, (rows) => {
    const base = rows.find((r) => r.action === "action.intent")!;
    const record = (action: string): Draft => ({
      ...base,
      action,
      resource: "action:act_0000deadbeef",
      inputDigest: DIGEST,
      correlation: "act_0000deadbeef",
      detail: action === "action.intent" ? JSON.stringify({ kind: "fs.write" }) : null,
    });
    return insertBefore(
      rows,
      (r) => r.action === "agent.stop",
      record("action.intent"),
      record("action.done"),
    );
  }, headPath);
  const verify = await s.json("audit", "verify", "--db", path);
  assert.equal(verify.status, 0, "the chain itself verifies: only the invariant catches it");
  assert.deepEqual(invariants(path, run.pid), ["decision_before_effect"]);
  const cli = await s.cli("audit", "check", run.pid, "--db", path);
  assert.equal(cli.status, 1);
  assert.match(
    cli.stdout,
    /decision_before_effect \(seq \d+\) pid_[0-9a-f]{12}: action act_0000deadbeef \(fs\.write on "notes\/.*owned\.txt", done\) took effect but no fs\.write decision record stands for it/,
  );
  assert.ok(!cli.stdout.includes("\x1b"), "the hostile path reaches the terminal escaped");
  const json = await s.json("audit", "check", run.pid, "--db", path);
  assert.equal(json.status, 1);
  assert.equal(json.doc.ok, false);
  // And the original run is untouched by the check of its copy.
  assertTraceInvariants(s.dbPath(), run.pid);
});

Deno.test("attack: the human's approval removed from the record (the ask left unanswered, the grant gone) — decision_before_effect names the run after an unanswered ask and the ungranted capability", async () => {
  using s = sandbox();
  const run = await fixRun(s);
  const { path } = run.copy();
  let dropped = "";
  rewriteAudit(path, (rows) => {
    const approve = rows.find((r) => r.action === "human.approve")!;
    const grant = rows.find((r) =>
      r.action === "capability.grant" && r.authority === `human:${approve.correlation}`
    )!;
    dropped = grant.correlation!;
    return rows.filter((r) => r !== approve && r !== grant);
  });
  const report = traceReport(path, run.pid);
  assert.deepEqual([...new Set(report.violations.map((v) => v.invariant))], [
    "decision_before_effect",
    "approval_at_most_once",
  ]);
  const messages = report.violations.map((v) => v.message).join("\n");
  assert.match(messages, /follows an unanswered ask of the same action/);
  assert.match(messages, new RegExp(`allowed by ${dropped}, which was not granted`));
  assert.match(messages, /human request hreq_[0-9a-f]{12} was dispatched but never approved/);
});

Deno.test("attack: a one-shot approval used twice (a second shell run recorded under the same approval) — approval_at_most_once", async () => {
  using s = sandbox();
  const run = await fixRun(s);
  const { path } = run.copy();
  const db = new DatabaseSync(path);
  const first = db.prepare("SELECT * FROM actions WHERE kind = 'shell.run' ORDER BY created")
    .get()!;
  db.close();
  sql(
    path,
    "INSERT INTO actions VALUES ('act_00000000beef', ?, 'shell.run', ?, 'done', ?, ?, 1, ?, ?)",
    run.pid,
    String(first.digest),
    String(first.request),
    String(first.outcome),
    Number(first.created) + 1,
    Number(first.updated) + 1,
  );
  let cap = "";
  rewriteAudit(path, (rows) => {
    const intent = rows.find((r) => r.correlation === first.id && r.action === "action.intent")!;
    const done = rows.find((r) => r.correlation === first.id && r.action === "action.done")!;
    const allow = rows.find((r) =>
      r.action === "shell.run" && r.decision === "allow" && r.seq! > done.seq!
    )!;
    cap = allow.authority.slice(4);
    const again = (r: Draft): Draft => ({
      ...r,
      resource: r.resource.startsWith("action:") ? "action:act_00000000beef" : r.resource,
      correlation: r.correlation === null ? null : "act_00000000beef",
    });
    const at = rows.indexOf(allow) + 1;
    return [...rows.slice(0, at), again(intent), again(done), again(allow), ...rows.slice(at)];
  });
  const report = traceReport(path, run.pid);
  assert.deepEqual([...new Set(report.violations.map((v) => v.invariant))], [
    "approval_at_most_once",
  ]);
  assert.match(
    report.violations[0]!.message,
    new RegExp(`one-shot capability ${cap} allowed 2 effects`),
  );
});

Deno.test("checkTrace on a fork with delegation: clean; a child given network its parent never held (a derived capability row and its grant record, chain re-hashed), or a wider mode ceiling — child_within_parent", async () => {
  await using t = await testRuntime({
    prefix: "libos-trace-",
    dirs: ["src"],
    mode: "workspace-write",
    fromRoot: (root) => ({ db: join(root, "..", `${root.split("/").pop()}.db`) }),
  });
  const path = t.db;
  try {
    const parent = t.spawn({ goal: "lead" });
    const child = t.runtime.processes.fork(parent, {
      goal: "src only",
      inherit: [fsScope("src", ["read", "write"])],
    }).pid;
    await t.runtime.close();
    const clean = assertTraceInvariants(path, parent);
    assert.deepEqual(clean.pids, [parent, child]);
    assert.equal(clean.checked.delegated, 2, "read and write on src, each derived");

    const copy = `${path}.wider.db`;
    Deno.copyFileSync(path, copy);
    const db = new DatabaseSync(copy);
    const derived = db.prepare(
      "SELECT * FROM capabilities WHERE subject = ? AND derived_from IS NOT NULL",
    ).get(child)!;
    db.close();
    const wider = {
      ...JSON.parse(String(derived.data)),
      id: "cap_0000000000ff",
      resource: { type: "net", key: "*", scope: "any" },
      rights: ["connect"],
    };
    sql(
      copy,
      "INSERT INTO capabilities VALUES (?, ?, ?, NULL, ?, ?)",
      wider.id,
      child,
      String(derived.derived_from),
      JSON.stringify(wider),
      Number(derived.created),
    );
    rewriteAudit(copy, (rows) => {
      const grant = rows.findLast((r) => r.action === "capability.grant" && r.pid === child)!;
      const at = rows.indexOf(grant) + 1;
      return [...rows.slice(0, at), {
        ...grant,
        resource: "net:",
        correlation: wider.id,
        detail: JSON.stringify({ ...JSON.parse(grant.detail!), capability: wider.id }),
      }, ...rows.slice(at)];
    });
    const report = traceReport(copy, parent);
    assert.deepEqual([...new Set(report.violations.map((v) => v.invariant))], [
      "child_within_parent",
    ]);
    const messages = report.violations.map((v) => v.message).join("\n");
    assert.match(messages, /cap_0000000000ff .* is wider than its parent's cap_[0-9a-f]{12}/);
    assert.match(messages, /has rights its parent's cap_[0-9a-f]{12} lacks: connect/);

    const ceiling = `${path}.ceiling.db`;
    Deno.copyFileSync(path, ceiling);
    const rows = new DatabaseSync(ceiling);
    const docs = new Map(
      rows.prepare("SELECT pid, data FROM processes").all().map((r) => [
        String(r.pid),
        JSON.parse(String(r.data)),
      ]),
    );
    rows.close();
    sql(
      ceiling,
      "UPDATE processes SET data = ? WHERE pid = ?",
      JSON.stringify({
        ...docs.get(parent),
        ceiling: "workspace-write",
      }),
      parent,
    );
    sql(
      ceiling,
      "UPDATE processes SET data = ? WHERE pid = ?",
      JSON.stringify({
        ...docs.get(child),
        ceiling: "full-access",
      }),
      child,
    );
    const widened = traceReport(ceiling, parent).violations;
    assert.deepEqual(widened.map((v) => [v.invariant, v.pid]), [["child_within_parent", child]]);
    assert.match(widened[0]!.message, /mode ceiling full-access is wider than its parent/);
  } finally {
    for (const suffix of ["", ".wider.db", ".ceiling.db"]) {
      for (const extra of ["", "-wal", "-shm"]) {
        try {
          Deno.removeSync(`${path}${suffix}${extra}`);
        } catch { /* not made */ }
      }
    }
  }
});

Deno.test("attack: a record edited in place without re-hashing — the chain invariant reports it (audit.verify reused)", async () => {
  using s = sandbox();
  const run = await fixRun(s);
  const { path } = run.copy();
  const db = new DatabaseSync(path);
  const trigger = db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'audit_no_update'").get()!;
  db.exec("DROP TRIGGER audit_no_update");
  db.prepare("UPDATE audit SET decision = 'allow' WHERE action = 'shell.run' AND decision = 'ask'")
    .run();
  db.exec(String(trigger.sql));
  db.close();
  assert.deepEqual(invariants(path, run.pid).includes("chain"), true);
});

Deno.test("libos audit check: an unknown pid is not_found (exit 1), a missing PID a usage error (exit 2); nothing is written", async () => {
  using s = sandbox();
  const run = await fixRun(s);
  const before = Deno.readFileSync(s.dbPath());
  const unknown = await s.json("audit", "check", "pid_000000000000");
  assert.equal(unknown.status, 1);
  assert.equal((unknown.doc.error as { code: string }).code, "not_found");
  const missing = await s.cli("audit", "check");
  assert.equal(missing.status, 2);
  await s.cli("audit", "check", run.pid, "--tree");
  assert.deepEqual(Deno.readFileSync(s.dbPath()), before);
});
