/**
 * Every event the code emits in realistic runs is one of the schema's (issue 24): each event
 * emitted while the demo scenario runs in process (spawn, fork, a JIT tool, a checkpoint, a
 * refused write, a human-approved edit), while `libos agent` runs with an approval answered from
 * another command and resumed, and while a checkpoint is taken and restored, is captured as it
 * is emitted and validated against the envelope union; and what `libos events --json` reads back
 * is exactly what was emitted.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli } from "../cli/mod.ts";
import { EventLog } from "../runtime/audit/event_log.ts";
import { Event, type EventEnvelope } from "../runtime/audit/events.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { sandbox } from "./_cli_sandbox.ts";
import { fixture } from "./agent_fixture.ts";

/**
 * Records every event any {@link EventLog} in this process emits while held (the spy is removed
 * on dispose; tests in this file run one at a time).
 */
function captureEvents(): Disposable & { readonly events: EventEnvelope[] } {
  const original = Object.getOwnPropertyDescriptor(EventLog.prototype, "emit")!;
  const emit = EventLog.prototype.emit;
  const events: EventEnvelope[] = [];
  Object.defineProperty(EventLog.prototype, "emit", {
    ...original,
    value: function (this: EventLog, ...args: Parameters<EventLog["emit"]>) {
      const event = emit.apply(this, args);
      events.push(event);
      return event;
    },
  });
  return {
    events,
    [Symbol.dispose]() {
      Object.defineProperty(EventLog.prototype, "emit", original);
    },
  };
}

/** Asserts every captured event is a schema envelope (as JSON, exactly as a host receives it). */
function assertAllValid(events: readonly EventEnvelope[]): void {
  for (const event of events) {
    const wire = JSON.parse(JSON.stringify(event));
    const parsed = Event.safeParse(wire);
    assert.ok(
      parsed.success,
      `emitted event is not in the schema: ${JSON.stringify(event)}: ${parsed.error?.message}`,
    );
    assert.deepEqual(parsed.data, wire, "the schema keeps every field it is given");
  }
}

function kinds(events: readonly EventEnvelope[]): Set<string> {
  return new Set(events.map((e) => e.kind));
}

Deno.test("the demo scenario (spawn, fork, JIT tool, checkpoint, refused write, human-approved edit) emits only schema events, decisions included", async () => {
  using capture = captureEvents();
  let stdout = "";
  const status = await runCli(["demo", "--json", "--seed", "7"], {
    stdout: (text) => stdout += text,
    stderr: () => {},
    env: { get: () => undefined },
    cwd: Deno.cwd(),
  });
  assert.equal(status, 0, stdout);
  assert.ok((JSON.parse(stdout) as { steps: unknown[] }).steps.length > 5);
  assertAllValid(capture.events);
  const seen = kinds(capture.events);
  for (
    const kind of [
      "session.started",
      "process.spawned",
      "process.status",
      "decision",
      "human.request",
      "human.decision",
      "checkpoint.created",
      "session.ended",
    ]
  ) assert.ok(seen.has(kind), `the demo emitted no ${kind}: ${[...seen].join(", ")}`);
  const spawned = capture.events.flatMap((e) => e.kind === "process.spawned" ? [e.payload] : []);
  assert.ok(spawned.some((p) => p.how === "fork" && p.parent !== null), "the fork is an event");
  const decisions = capture.events.flatMap((e) => e.kind === "decision" ? [e.payload] : []);
  assert.ok(decisions.some((d) => d.effect === "deny"), "the refused write is a deny event");
  assert.ok(decisions.some((d) => d.effect === "ask"), "the edit sent to a human is an ask");
  // Each decision event names a real audit record, in order.
  const seqs = decisions.map((d) => d.auditSeq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
});

Deno.test("libos agent --human queue, libos human approve, --resume, a checkpoint and its restore: every event is a schema event, and libos events --json reads back exactly what was emitted", async () => {
  using s = sandbox();
  using capture = captureEvents();
  const script = fixture(s.workspace);
  const model = `replay:${script}`;
  let run = await s.json(
    "agent",
    "--goal",
    "Make the test pass",
    "--model",
    model,
    "--human",
    "queue",
  );
  const pid = run.doc.pid as string;
  // While it waits on the human: a checkpoint, and a restore to it.
  const created = await s.json("checkpoint", "create", pid);
  assert.equal(created.status, 0, created.stdout + created.stderr);
  const id = (created.doc.checkpoint as { id: string } | undefined)?.id ?? created.doc.id as string;
  const restored = await s.cli("checkpoint", "restore", pid, id);
  assert.equal(restored.status, 0, restored.stdout + restored.stderr);
  for (let round = 0; round < 4 && run.status === 3; round++) {
    const request = (run.doc.waiting as { request: string }).request;
    assert.equal((await s.cli("human", "approve", request)).status, 0);
    run = await s.json("agent", "--resume", pid, "--model", model, "--human", "queue");
  }
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assertAllValid(capture.events);
  const seen = kinds(capture.events);
  for (
    const kind of [
      "turn.started",
      "turn.ended",
      "tool.call",
      "tool.result",
      "decision",
      "human.request",
      "human.decision",
      "checkpoint.created",
      "checkpoint.restored",
    ]
  ) assert.ok(seen.has(kind), `no ${kind} event: ${[...seen].join(", ")}`);
  // The approved command's result arrives on the resume, with the turn it belongs to.
  const shell = capture.events.flatMap((e) =>
    e.kind === "tool.result" && e.payload.tool === "run_shell_command" ? [e] : []
  );
  assert.deepEqual(shell.map((e) => [e.payload.ok, e.payload.exitCode]), [[true, 1], [true, 0]]);
  assert.deepEqual(shell.map((e) => e.turn), shell.map((e) => e.payload.seq));
  // No event carries a tool's arguments or output.
  const wire = JSON.stringify(capture.events);
  assert.doesNotMatch(wire, /return a \+ b \+ 1|assertEqual|Ran 1 test/);
  // What a host reads back is what was emitted, in order, every field.
  const read = await s.cli("events", "--json");
  assert.equal(read.status, 0, read.stderr);
  const stored = read.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(stored, JSON.parse(JSON.stringify(capture.events)));
  assert.ok(Deno.statSync(join(s.workspace, "src", "mathlib.py")).isFile);
});

Deno.test("attack: a decision whose resource holds a known secret or 4,003 characters reaches hosts redacted and cut to the schema's bound, and the decision is still recorded", async () => {
  const root = Deno.makeTempDirSync({ prefix: "libos-events-" });
  try {
    Deno.mkdirSync(join(root, "ws"));
    const secret = "sk-live-0123456789abcdef";
    await using runtime = await createRuntime({
      workspace: join(root, "ws"),
      db: join(root, "x.db"),
      env: { get: (n) => (n === "XDG_STATE_HOME" ? join(root, "state") : undefined) },
      secrets: [secret],
    });
    const leaky = runtime.audit.append({
      actor: "operator",
      action: "shell.run",
      resource: `shell:curl -H "Authorization: Bearer ${secret}" https://example.test`,
      decision: "deny",
      authority: "default",
    });
    const long = runtime.audit.append({
      actor: "operator",
      action: "fs.write",
      resource: `fs:${"a".repeat(4_000)}`,
      decision: "ask",
      authority: `rule:policy.jsonc#${"9".repeat(482)}`,
    });
    const decisions = runtime.events.read({ kinds: ["decision"] })
      .flatMap((e) => e.kind === "decision" ? [e.payload] : []);
    const [first, second] = decisions.slice(-2);
    assert.equal(first?.auditSeq, leaky.seq);
    assert.equal(first?.layer, "default");
    assert.equal(first?.effect, "deny");
    assert.doesNotMatch(JSON.stringify(runtime.events.read({ limit: 1000 })), /sk-live-/);
    assert.match(first!.resource, /Bearer \[redacted\]/);
    assert.equal(second?.auditSeq, long.seq);
    assert.equal(second?.resource.length, 1024);
    assert.ok(second?.resource.endsWith("…"));
    assert.equal(second?.authority.length, 500);
    assert.equal(second?.layer, "rule");
    // The audit record itself is whole: the event is a summary of it, not a replacement.
    assert.equal(
      runtime.audit.query({ afterSeq: long.seq - 1, limit: 1 })[0]?.resource.length,
      4_003,
    );
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
