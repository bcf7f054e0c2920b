/**
 * `libos gc` (issue 23): a finished run's retained records (turns, tool results, checkpoints)
 * survive a dry run untouched, go with `--older-than 0s`, and the audit log still verifies with
 * gc's own records in it; a live process's data, and a finished child's whose parent lives, are
 * never removed; `--keep-size` removes the oldest first until the rest fits.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { FakeClock } from "../runtime/base/clock.ts";
import { seededIds } from "../runtime/base/ids.ts";
import { processNamespace } from "../runtime/memory/memory_object.ts";
import { collectRetained, parseDuration, parseSize } from "../runtime/memory/retention.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { testRuntime } from "../testing.ts";
import { sandbox, task } from "./_cli_sandbox.ts";
import { call, final, fixRepository } from "./agent_fixture.ts";

function rows(db: string, sql: string, ...params: string[]): number {
  const raw = new DatabaseSync(db, { readOnly: true });
  try {
    return Number(raw.prepare(sql).get(...params)?.n ?? -1);
  } finally {
    raw.close();
  }
}

Deno.test("libos gc through the launcher: --dry-run removes nothing; --older-than 0s removes a finished run's records, never a live process's; the audit log verifies and holds gc's record", async () => {
  using s = sandbox();
  fixRepository(s.workspace);
  const script = join(s.workspace, "..", "script.jsonl");
  Deno.writeTextFileSync(
    script,
    [
      call("read_text_file", { path: "src/mathlib.py" }),
      call("checkpoint_create", { label: "cp" }),
      final("done"),
    ].join("\n") + "\n",
  );
  const run = await task(
    s.workspace,
    s.state,
    "libos",
    "agent",
    "--goal",
    "look",
    "--model",
    `replay:${script}`,
    "--json",
  );
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const pid = (JSON.parse(run.stdout) as { pid: string }).pid;
  const db = s.dbPath();
  // A live process with an object of its own, beside the finished run.
  let live: string;
  {
    await using rt = await createRuntime({ workspace: s.workspace, db, create: false });
    live = rt.processes.spawn({ goal: "still running", image: "base-agent:v0" }).pid;
    rt.memory.create("operator", {
      namespace: processNamespace(live),
      type: "note",
      payload: "mine",
      provenance: { source: "user", label: "test", ref: null },
    });
  }
  const count = (p: string) =>
    rows(db, "SELECT count(*) AS n FROM objects WHERE namespace = ?", `process:${p}`);
  const before = count(pid);
  assert.ok(before >= 4, "turns, results and a checkpoint were retained");
  const auditBefore = rows(db, "SELECT count(*) AS n FROM audit");

  const dry = await task(s.workspace, s.state, "libos", "gc", "--dry-run", "--older-than", "0s");
  assert.equal(dry.status, 0, dry.stderr);
  assert.match(
    dry.stdout,
    /would remove the retained data of 1 finished process\(es\): \d+ object\(s\)/,
  );
  assert.match(dry.stdout, /dry run: nothing was changed/);
  assert.equal(count(pid), before, "a dry run removes nothing");
  assert.equal(rows(db, "SELECT count(*) AS n FROM audit"), auditBefore, "and audits nothing");

  const kept = await task(s.workspace, s.state, "libos", "gc", "--json");
  assert.equal(kept.status, 0, kept.stderr);
  assert.equal(
    (JSON.parse(kept.stdout) as { gc: { totals: { processes: number } } }).gc.totals.processes,
    0,
    "the default keeps 30 days",
  );
  assert.equal(count(pid), before);

  const gc = await task(s.workspace, s.state, "libos", "gc", "--older-than", "0s", "--json");
  assert.equal(gc.status, 0, gc.stderr);
  const report = (JSON.parse(gc.stdout) as {
    gc: { totals: { processes: number; objects: number; bytes: number }; auditSeq: number };
  }).gc;
  assert.equal(report.totals.processes, 1);
  assert.equal(report.totals.objects, before);
  assert.ok(report.totals.bytes > 0);
  assert.equal(count(pid), 0, "the finished run's records are gone");
  assert.equal(count(live), 1, "a live process's data is never removed");
  assert.ok(rows(db, "SELECT count(*) AS n FROM audit") > auditBefore, "gc added records");
  assert.equal(
    rows(db, "SELECT count(*) AS n FROM audit WHERE seq <= ?", String(auditBefore)),
    auditBefore,
    "none was cut",
  );
  const verify = await task(s.workspace, s.state, "libos", "audit", "verify");
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  const query = await task(
    s.workspace,
    s.state,
    "libos",
    "audit",
    "query",
    "--action",
    "retention.gc",
    "--json",
  );
  assert.equal(query.status, 0, query.stderr);
  assert.match(query.stdout, new RegExp(`"objects":${before}`));
  // The log still says what happened, from the audit log.
  const log = await task(s.workspace, s.state, "libos", "log", pid);
  assert.equal(log.status, 0, log.stderr);
  assert.match(log.stdout, /removed by libos gc/);
  assert.match(log.stdout, /decision: allow fs\.read fs:src\/mathlib\.py/);
  // Nothing left to remove the second time.
  const again = await task(s.workspace, s.state, "libos", "gc", "--older-than", "0s");
  assert.match(again.stdout, /removed the retained data of 0 finished process/);
  const bad = await task(s.workspace, s.state, "libos", "gc", "--older-than", "soon");
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--older-than: "soon" is not a duration/);
});

Deno.test("collectRetained(): a finished child whose parent lives is kept; --keep-size removes the oldest first until the rest fits", async () => {
  const clock = new FakeClock(Date.UTC(2026, 10, 1));
  await using t = await testRuntime({ prefix: "libos-gc-", clock, ids: seededIds(7) });
  const rt = t.runtime;
  const note = (pid: string, payload: string) =>
    rt.memory.create(pid, {
      type: "note",
      payload,
      provenance: { source: "model", label: "t", ref: null },
    });
  const parent = t.spawn();
  const child = rt.processes.fork(parent).pid;
  note(child, "child's");
  rt.processes.exit(child);
  const old = t.spawn();
  note(old, "x".repeat(1000));
  clock.advance(60_000);
  rt.processes.exit(old);
  const young = t.spawn();
  note(young, "y".repeat(1000));
  clock.advance(60_000);
  rt.processes.exit(young);
  clock.advance(60_000);
  // A tree another runner holds is left alone, whatever the policy.
  const busy = collectRetained(rt, rt.processes, {
    olderThanMs: 0,
    keepBytes: 0,
    dryRun: false,
    busy: (pid) => pid === old || pid === young,
  });
  assert.deepEqual(busy.removed, []);
  assert.deepEqual(busy.skipped.map((e) => e.reason).sort(), ["busy", "busy", "parent_live"]);
  assert.equal(busy.auditSeq, null, "nothing removed, nothing audited");
  assert.equal(rt.store.namespaceUsage(processNamespace(old)).objects, 1);
  const first = collectRetained(rt, rt.processes, { olderThanMs: 0, dryRun: true });
  assert.deepEqual(first.skipped.map((e) => [e.pid, e.reason]), [[child, "parent_live"]]);
  assert.deepEqual(first.removed.map((e) => e.pid).sort(), [old, young].sort());
  assert.ok(rt.store.getRetained(old)?.removed === null, "a dry run changes nothing");
  // Nothing is old enough; the size bound alone removes the oldest until the rest fits.
  const youngBytes = rt.store.namespaceUsage(processNamespace(young)).bytes;
  const childBytes = rt.store.namespaceUsage(processNamespace(child)).bytes;
  const sized = collectRetained(rt, rt.processes, {
    olderThanMs: parseDuration("1d"),
    keepBytes: youngBytes + childBytes,
    dryRun: false,
  });
  assert.deepEqual(sized.removed.map((e) => [e.pid, e.reason]), [[old, "size"]]);
  assert.equal(rt.store.namespaceUsage(processNamespace(old)).objects, 0);
  assert.equal(rt.store.namespaceUsage(processNamespace(young)).objects, 1);
  assert.equal(rt.store.namespaceUsage(processNamespace(child)).objects, 1, "the child is kept");
  // Once its parent finishes, the child goes too.
  rt.processes.exit(parent);
  const all = collectRetained(rt, rt.processes, { olderThanMs: 0, dryRun: false });
  assert.ok(all.removed.some((e) => e.pid === child));
  assert.equal(rt.store.namespaceUsage(processNamespace(child)).objects, 0);
  assert.equal(rt.audit.verify({ head: false }).ok, true);
});

Deno.test("parseDuration() and parseSize() read 7d, 12h, 0s and 500MB, 1.5KB; anything else is refused with an example", () => {
  const durations: [string, number][] = [
    ["7d", 604_800_000],
    ["12h", 43_200_000],
    ["0s", 0],
    [
      "90m",
      5_400_000,
    ],
    ["2w", 1_209_600_000],
    ["250ms", 250],
  ];
  for (const [text, ms] of durations) assert.equal(parseDuration(text), ms, text);
  for (const bad of ["", "7", "d", "-1d", "1.5h", "7 days", "1y"]) {
    assert.throws(() => parseDuration(bad), /e\.g\. 7d or 12h/, JSON.stringify(bad));
  }
  const sizes: [string, number][] = [["500MB", 500 * 1024 ** 2], ["1.5KB", 1536], ["0", 0], [
    "10gb",
    10 * 1024 ** 3,
  ], ["42B", 42]];
  for (const [text, bytes] of sizes) assert.equal(parseSize(text), bytes, text);
  for (const bad of ["", "MB", "-1MB", "5 PB", "lots"]) {
    assert.throws(() => parseSize(bad), /e\.g\. 500MB/, JSON.stringify(bad));
  }
});
