import assert from "node:assert/strict";
import type { Capability } from "../authority/capability.ts";
import { parseRunDeny } from "../authority/decide.ts";
import { testRuntime } from "../../testing.ts";
import { parsePolicy, PolicyRules } from "./policy_rules.ts";
import { type RecordedAction, recordedRun } from "./recorded_run.ts";
import { changes, replay, Replayer, type ReplayGovernance, tally } from "./replay.ts";
import { ProgramTable } from "./shell_programs.ts";
import { ShellParser } from "./shell_script.ts";

const PID = "pid_000000000001";

function governance(more: Partial<ReplayGovernance> = {}): ReplayGovernance {
  return {
    mode: "workspace-write",
    denies: [],
    rules: null,
    level: "allowlist_auto_else_ask",
    wall: true,
    ...more,
  };
}

function cap(id: string, more: Partial<Capability>): Capability {
  return {
    id,
    subject: PID,
    resource: { type: "fs", path: "docs", scope: "subtree" },
    rights: ["write"],
    effect: "allow",
    oneShot: false,
    usedAt: null,
    actionDigest: null,
    expiresAt: null,
    issuer: "operator",
    derivedFrom: null,
    tier: "own",
    revokedAt: null,
    createdAt: 0,
    ...more,
  };
}

function action(seq: number, more: Partial<RecordedAction> = {}): RecordedAction {
  return {
    seq,
    turn: 1,
    pid: PID,
    action: "fs.write",
    resource: { type: "fs", path: "docs/a.md" },
    right: "write",
    recorded: "allow",
    approved: false,
    authority: "cap:x",
    time: 0,
    ...more,
  };
}

async function replayer(
  g: ReplayGovernance,
  caps: readonly Capability[],
  lifetimes: ReadonlyMap<string, { from: number; to: number | null }> = new Map(),
  modeGrants: readonly string[] = [],
): Promise<Replayer> {
  const scripts = new ShellParser();
  await scripts.load();
  return new Replayer(g, {
    capabilities: caps,
    lifetimes,
    modeGrants,
    scripts,
    programs: new ProgramTable(),
  });
}

Deno.test("Replayer: a human's one-shot approval is not standing authority (it allows nothing in the replay); an allow-always grant is, from its grant to its revocation", async () => {
  const once = cap("cap_000000000001", { oneShot: true, issuer: "human:hreq_1", usedAt: 5 });
  const always = cap("cap_000000000002", { issuer: "human:hreq_2" });
  const lifetimes = new Map([
    ["cap_000000000001", { from: 1, to: null }],
    ["cap_000000000002", { from: 10, to: 20 }],
  ]);
  const r = await replayer(governance(), [once, always], lifetimes);
  // Before the allow-always grant, during its life, after its revocation.
  assert.deepEqual([5, 15, 25].map((seq) => r.decide(action(seq)).effect), [
    "deny",
    "allow",
    "deny",
  ]);
  assert.equal(r.decide(action(15)).reason, "cap:cap_000000000002");
  assert.equal(r.decide(action(5)).reason, "default");
});

Deno.test("Replayer: the mode's default grants follow the replay's mode (a read-only run's write, replayed under full-access, is allowed by the new mode's grant)", async () => {
  const full = await replayer(governance({ mode: "full-access" }), [], new Map(), [PID]);
  const write = action(3, { recorded: "deny", authority: "mode:read-only" });
  const decided = full.decide(write);
  assert.equal(decided.effect, "allow");
  assert.equal(decided.reason, "cap:mode:full-access#1");
  assert.match(decided.explanation, /full-access mode's default grants/);
  // A process that received no mode grants (a child) gets none from the replay either.
  const child = await replayer(governance({ mode: "full-access" }), [], new Map(), []);
  assert.equal(child.decide(write).effect, "deny");
});

Deno.test("Replayer: run denies, rules, the floor and the shell level decide as in a run; changes() and tally() list only what moved", async () => {
  const rules = new PolicyRules(
    parsePolicy(
      '{"version": 1, "rules": [\n  {"effect": "ask", "path": "docs/**"}\n]}',
      "p.jsonc",
    ),
  );
  const r = await replayer(
    governance({ rules, denies: [parseRunDeny("shell:curl *")] }),
    [],
    new Map(),
    [PID],
  );
  const actions = [
    action(1),
    action(2, {
      action: "shell.run",
      resource: { type: "shell", argv: ["curl", "https://x"] },
      right: "execute",
      recorded: "ask",
      approved: true,
    }),
    action(3, {
      action: "shell.run",
      resource: { type: "shell", argv: ["rm", "-rf", "/"] },
      right: "execute",
      recorded: "deny",
    }),
    action(4, {
      action: "fs.read",
      resource: { type: "fs", path: "src/x.ts" },
      right: "read",
    }),
  ];
  const replayed = replay(actions, r);
  assert.deepEqual(replayed.map((x) => x.decision.reason), [
    "rule:p.jsonc#1",
    "run:1",
    "hardline:rm-rf-root",
    "cap:mode:workspace-write#1",
  ]);
  assert.equal(
    replayed[0]!.decision.explanation,
    'rule p.jsonc:2 {"effect":"ask","path":"docs/**"}',
  );
  const moved = changes(replayed);
  assert.deepEqual(moved.map((x) => x.action.seq), [1, 2]);
  assert.deepEqual(tally(moved), { "allow→ask": 1, "ask→deny": 1 });
});

Deno.test("recordedRun(): an ask a human approved and the allow that followed are one action, an approved ask, with the exact argv from the request", async () => {
  await using t = await testRuntime({
    prefix: "libos-replay-",
    files: { "a.txt": "a\n" },
    mode: "workspace-write",
    human: "queue",
    wall: false,
  });
  const { runtime } = t;
  const pid = t.spawn({ image: "coding-agent:v0" });
  await runtime.primitives.fs.readText(pid, { path: "a.txt" });
  const argv = ["python3", "-c", "print('a b')"];
  await assert.rejects(runtime.primitives.shell.run(pid, { argv }));
  const [request] = runtime.human.list();
  assert.ok(request);
  runtime.human.approve(request.id, { by: "human:test" });
  // The approved command, run again: allowed once by the approval.
  const ran = await runtime.primitives.shell.run(pid, { argv });
  assert.equal(ran.exitCode, 0);
  const run = recordedRun(runtime.store, pid);
  const shell = run.actions.filter((a) => a.action === "shell.run");
  assert.equal(shell.length, 1);
  assert.deepEqual(shell[0]!.resource, { type: "shell", argv });
  assert.equal(shell[0]!.recorded, "ask");
  assert.equal(shell[0]!.approved, true);
  assert.deepEqual(run.actions.map((a) => [a.action, a.recorded]), [
    ["fs.read", "allow"],
    ["shell.run", "ask"],
  ]);
  assert.deepEqual([...run.modeGrants], [[pid, "workspace-write"]]);
});

Deno.test("Replayer: a process decides under the narrower of the replay's mode and its own ceiling (an image's maxMode), as in the run", async () => {
  const g = governance({ mode: "full-access" });
  const capped = await replayer(g, [], new Map(), [PID]);
  const scripts = new ShellParser();
  await scripts.load();
  const narrowed = new Replayer(g, {
    capabilities: [],
    modeGrants: [PID],
    ceilingOf: () => "read-only",
    scripts,
    programs: new ProgramTable(),
  });
  const write = action(1);
  assert.equal(capped.decide(write).effect, "allow");
  assert.deepEqual(
    [narrowed.decide(write).effect, narrowed.decide(write).reason],
    ["deny", "mode:read-only"],
  );
});
