/**
 * A resumed run keeps its governance (issue 21 §4), through the real launcher (`deno task libos`,
 * the bootstrap's permissions): a launch with `--policy` and `--deny` stopped by Ctrl-C or for a
 * human, then `--resume` without them, decides as the launch did; a widening is refused without
 * `--widen` and nothing is recorded, and with it the run goes on, shown and audited; a narrowing
 * holds for later resumes; a policy file that changed (by hand or by the agent itself), vanished
 * or cannot be read is reported and the resume refused until `--policy-from` says which holds; a
 * run launched before libos recorded governance resumes with a notice.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sha256Hex } from "../runtime/base/canonical_json.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { type Run, type Sandbox, sandbox, task } from "./_cli_sandbox.ts";
import { call, final, onTerminal } from "./agent_fixture.ts";

const DENY = "fs.write:secret/**";

/** A policy file: `sleep` runs on its own (#1), a write under notes/ asks (#2). */
const STRICT = JSON.stringify({
  version: 1,
  rules: [
    { effect: "allow", shell: ["sleep"] },
    { effect: "ask", path: "notes/**", rights: ["write"] },
  ],
});

/** One decision record: action, resource, decision, authority. */
type Decision = readonly [string, string, string, string];

/** The workspace with `notes/` and `secret/`, a policy file in it, and a script beside it. */
function setup(s: Sandbox, turns: readonly string[], policyText = STRICT) {
  Deno.mkdirSync(join(s.workspace, "notes"));
  Deno.mkdirSync(join(s.workspace, "secret"));
  Deno.mkdirSync(join(s.workspace, "ci"));
  const policy = join(s.workspace, "ci", "strict.jsonc");
  Deno.writeTextFileSync(policy, policyText);
  const script = join(s.workspace, "..", "script.jsonl");
  Deno.writeTextFileSync(script, turns.join("\n") + "\n");
  return { policy, script };
}

/** `deno task libos agent ARGS… --json` through the real bootstrap. */
async function agent(
  s: Sandbox,
  ...args: string[]
): Promise<Run & { doc: Record<string, unknown> }> {
  const run = await task(s.workspace, s.state, "libos", "agent", ...args, "--json");
  return { ...run, doc: JSON.parse(run.stdout) as Record<string, unknown> };
}

/** A launch `--goal g --model replay:SCRIPT MORE… --human queue` (it parks at its first ask). */
function launch(s: Sandbox, script: string, ...more: string[]) {
  return agent(s, "--goal", "g", "--model", `replay:${script}`, ...more, "--human", "queue");
}

/** `--resume PID --model replay:SCRIPT MORE…` through the real bootstrap. */
function resume(s: Sandbox, pid: string, script: string, ...more: string[]) {
  return agent(s, "--resume", pid, "--model", `replay:${script}`, ...more);
}

/** A refusal: exit 1 with the code, and the message parts. */
function assertRefused(
  run: Run & { doc: Record<string, unknown> },
  code: string,
  ...says: RegExp[]
) {
  assert.equal(run.status, 1, run.stdout + run.stderr);
  const error = run.doc.error as { code: string; message: string };
  assert.equal(error.code, code, error.message);
  for (const pattern of says) assert.match(error.message, pattern);
}

/** The database's audit records and what they hold, read only. */
async function audit(s: Sandbox) {
  await using runtime = await createRuntime({
    workspace: s.workspace,
    db: s.dbPath(),
    create: false,
    readOnly: true,
  });
  return runtime.audit.query({ limit: 10_000 });
}

/** The file and shell decisions of a run, in order. */
async function decisions(s: Sandbox, pid: string): Promise<Decision[]> {
  return (await audit(s)).filter((r) =>
    r.pid === pid && /^(fs|shell)\./.test(r.action) &&
    (r.decision === "allow" || r.decision === "ask" || r.decision === "deny")
  ).map((r) => [r.action, r.resource, r.decision, r.authority] as const);
}

/** The detail of the last launch record (`agent.start` or `agent.resume`) of `pid`. */
async function lastLaunchDetail(s: Sandbox, pid: string) {
  const launches = (await audit(s)).filter((r) =>
    r.pid === pid && (r.action === "agent.start" || r.action === "agent.resume")
  );
  return launches.at(-1)!;
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Answers the request a parked run waits on (a question) or rejects it (an approval). */
async function settle(s: Sandbox, run: Run & { doc: Record<string, unknown> }) {
  assert.equal(run.status, 3, run.stdout + run.stderr);
  const waiting = run.doc.waiting as { request: string; kind: string };
  const answered = waiting.kind === "question"
    ? await s.cli("human", "answer", waiting.request, "go on")
    : await s.cli("human", "reject", waiting.request);
  assert.equal(answered.status, 0, answered.stderr);
}

Deno.test("libos agent: a launch with --policy and --deny stopped by Ctrl-C, then --resume without them decides as the launch did — the run deny refuses, the policy allows and asks (real bootstrap, real terminal)", async () => {
  using s = sandbox();
  const { policy, script } = setup(s, [
    call("run_shell_command", { argv: ["sleep", "2"] }),
    call("write_text_file", { path: "secret/a.txt", content: "leak" }),
    call("run_shell_command", { argv: ["sleep", "0"] }),
    call("write_text_file", { path: "notes/a.txt", content: "unasked" }),
    final("done"),
  ]);
  const launcher = await onTerminal(s, script, {
    more: ["--policy", policy, "--deny", DENY],
    until: /turn 1 · run_shell_command/,
  });
  let screen = launcher.screen;
  try {
    const { rest, code } = await launcher.type("\x03");
    screen += rest;
    assert.equal(code, 130, screen);
  } finally {
    await launcher.close();
  }
  const pid = /Agent (pid_[0-9a-f]{12}): runnable/.exec(screen)![1]!;
  const rule = (n: number) => `rule:${policy}#${n}`;
  assert.deepEqual(await decisions(s, pid), [["shell.run", "shell:sleep 2", "allow", rule(1)]]);
  // No --policy, no --deny, no --human: all three come from the launch record. No terminal here,
  // so the interactive run's request waits for a person (exit 3) instead of being refused.
  const resumed = await resume(s, pid, script);
  assert.equal(resumed.status, 3, resumed.stdout + resumed.stderr);
  assert.match(resumed.stderr, /no terminal here: requests wait for libos human this time/);
  assert.deepEqual(await decisions(s, pid), [
    ["shell.run", "shell:sleep 2", "allow", rule(1)],
    ["fs.write", "fs:secret/a.txt", "deny", "run:1"],
    ["shell.run", "shell:sleep 0", "allow", rule(1)],
    ["fs.write", "fs:notes/a.txt", "ask", rule(2)],
  ]);
  assert.ok(!exists(join(s.workspace, "secret", "a.txt")), "the run deny held");
  assert.ok(!exists(join(s.workspace, "notes", "a.txt")), "the policy's ask held");
  const records = await audit(s);
  const start = records.find((r) => r.action === "agent.start")!;
  const again = records.find((r) => r.action === "agent.resume")!;
  assert.deepEqual(again.detail?.governance, start.detail?.governance, "re-applied as recorded");
  assert.equal(again.detail?.human, "queue");
  const governance = start.detail?.governance as { policies: { path: string; sha256: string }[] };
  assert.deepEqual(governance.policies.map((p) => [p.path, p.sha256]), [
    [policy, sha256Hex(STRICT)],
  ]);
});

Deno.test("libos agent --resume: a widening (looser mode or shell policy, --yes, a policy file with allow rules, a toolchain) is refused without --widen and nothing is recorded; with --widen it goes on, shown and audited, and the run deny still holds (real bootstrap)", async () => {
  using s = sandbox();
  const { policy, script } = setup(s, [
    call("write_text_file", { path: "secret/a.txt", content: "leak" }),
    call("write_text_file", { path: "notes/a.txt", content: "first" }),
    call("write_text_file", { path: "secret/b.txt", content: "leak" }),
    call("write_text_file", { path: "notes/b.txt", content: "second" }),
    final("done"),
  ]);
  const first = await agent(
    s,
    "--goal",
    "write notes",
    "--model",
    `replay:${script}`,
    "--policy",
    policy,
    "--deny",
    DENY,
    "--human",
    "queue",
  );
  const pid = first.doc.pid as string;
  await settle(s, first);
  const loose = join(s.workspace, "ci", "loose.jsonc");
  Deno.writeTextFileSync(
    loose,
    JSON.stringify({ version: 1, rules: [{ effect: "allow", shell: ["rm"] }] }),
  );
  const toolchain = join(s.workspace, "..", "toolchain");
  Deno.mkdirSync(join(toolchain, "bin"), { recursive: true });
  const before = (await audit(s)).length;
  const attempts: [string[], RegExp][] = [
    [["--mode", "full-access"], /mode workspace-write → full-access/],
    [["--preset", "full"], /mode workspace-write → full-access/],
    [["--yes"], /--yes: every action approved without a person \(launched with queue\)/],
    [["--shell-policy", "always_allow"], /shell policy allowlist_auto_else_ask → always_allow/],
    [["--policy", loose], /policy \S*loose\.jsonc: its allow or ask rules/],
    [["--toolchain", toolchain], /toolchain \S*toolchain: its programs and files visible/],
  ];
  for (const [flags, says] of attempts) {
    const refused = await resume(s, pid, script, ...flags);
    assertRefused(refused, "governance_widened", says, /Pass --widen to accept/);
  }
  assert.equal((await audit(s)).length, before, "no refused resume left a record");
  assert.ok(!exists(join(s.workspace, "notes", "b.txt")));
  // Two widenings at once: both named.
  const both = await resume(s, pid, script, "--yes", "--mode", "full-access");
  assertRefused(both, "governance_widened", /mode workspace-write → full-access; --yes/);
  // Accepted: --yes approves what the policy asks; the run deny stays.
  const widened = await resume(s, pid, script, "--yes", "--widen");
  assert.equal(widened.status, 0, widened.stdout + widened.stderr);
  assert.match(
    widened.stderr,
    /widened \(--widen\): --yes: every action approved without a person/,
  );
  assert.equal(Deno.readTextFileSync(join(s.workspace, "notes", "b.txt")), "second");
  assert.ok(!exists(join(s.workspace, "secret", "b.txt")), "the run deny held under --yes");
  const detail = (await lastLaunchDetail(s, pid)).detail!;
  assert.deepEqual(detail.widened, [
    "--yes: every action approved without a person (launched with queue)",
  ]);
  const governance = detail.governance as Record<string, unknown>;
  assert.equal(governance.human, "yes");
  assert.equal(governance.shield, true, "--yes brings its shield");
  assert.deepEqual(governance.denies, [DENY]);
  const [denied] = (await decisions(s, pid)).filter((d) => d[1] === "fs:secret/b.txt");
  assert.deepEqual(denied, ["fs.write", "fs:secret/b.txt", "deny", "run:1"]);
});

Deno.test("libos agent --resume: a narrowing (another --deny, a policy file of deny rules only) is allowed, shown, audited, and holds for the next plain --resume (real bootstrap)", async () => {
  using s = sandbox();
  const { script } = setup(s, [
    call("ask_human", { question: "start?" }),
    call("write_text_file", { path: "notes/a.txt", content: "x" }),
    call("write_text_file", { path: "secret/a.txt", content: "x" }),
    call("ask_human", { question: "go on?" }),
    call("write_text_file", { path: "notes/b.txt", content: "x" }),
    call("write_text_file", { path: "secret/b.txt", content: "x" }),
    final("done"),
  ]);
  const denyOnly = join(s.workspace, "ci", "deny.jsonc");
  Deno.writeTextFileSync(
    denyOnly,
    JSON.stringify({ version: 1, rules: [{ effect: "deny", path: "secret/**" }] }),
  );
  const first = await launch(s, script);
  const pid = first.doc.pid as string;
  await settle(s, first);
  const narrowed = await resume(
    s,
    pid,
    script,
    "--deny",
    "fs.write:notes/**",
    "--policy",
    denyOnly,
  );
  assert.match(narrowed.stderr, /narrowed: --deny fs\.write:notes\/\*\*/);
  assert.match(narrowed.stderr, /narrowed: policy \S*deny\.jsonc \(deny rules only\)/);
  await settle(s, narrowed);
  // The user's configuration was read at launch (and recorded) or not at all.
  const noUser = await s.json(
    "agent",
    "--resume",
    pid,
    "--no-user-config",
    "--model",
    `replay:${script}`,
  );
  assert.equal(noUser.status, 2, noUser.stdout);
  assert.match(
    (noUser.doc.error as { message: string }).message,
    /--no-user-config applies to a new run/,
  );
  const plain = await resume(s, pid, script);
  assert.equal(plain.status, 0, plain.stdout + plain.stderr);
  assert.doesNotMatch(plain.stderr, /narrowed|widened/, "nothing new this time");
  const rule = `rule:${denyOnly}#1`;
  assert.deepEqual((await decisions(s, pid)).filter((d) => d[0] === "fs.write"), [
    ["fs.write", "fs:notes/a.txt", "deny", "run:1"],
    ["fs.write", "fs:secret/a.txt", "deny", rule],
    ["fs.write", "fs:notes/b.txt", "deny", "run:1"],
    ["fs.write", "fs:secret/b.txt", "deny", rule],
  ]);
  for (const f of ["notes/a.txt", "notes/b.txt", "secret/a.txt", "secret/b.txt"]) {
    assert.ok(!exists(join(s.workspace, f)), f);
  }
});

Deno.test("libos agent --resume: a policy file changed since the launch is reported (both digests) and refused until --policy-from says which holds — launch keeps the recorded text, current takes the file as it is (real bootstrap)", async () => {
  using s = sandbox();
  const { policy, script } = setup(s, [
    call("ask_human", { question: "start?" }),
    call("write_text_file", { path: "notes/a.txt", content: "first" }),
    call("write_text_file", { path: "notes/b.txt", content: "second" }),
    final("done"),
  ]);
  const first = await launch(s, script, "--policy", policy);
  const pid = first.doc.pid as string;
  await settle(s, first);
  const looser = JSON.stringify({ version: 1, rules: [] });
  Deno.writeTextFileSync(policy, looser);
  const before = (await audit(s)).length;
  const changedSays = new RegExp(
    `${policy} changed \\(sha256 ${sha256Hex(STRICT).slice(0, 12)} at launch, ${
      sha256Hex(looser).slice(0, 12)
    } now\\)`,
  );
  const refused = await resume(s, pid, script);
  assertRefused(
    refused,
    "policy_changed",
    changedSays,
    /--policy-from launch/,
    /--policy-from current/,
  );
  assert.equal((await audit(s)).length, before, "nothing recorded");
  // The launch's text holds: the write under notes/ still asks.
  const kept = await resume(s, pid, script, "--policy-from", "launch");
  assert.match(kept.stderr, /changed: policy \S+ changed .*: the text recorded at launch holds/);
  await settle(s, kept);
  assert.ok(!exists(join(s.workspace, "notes", "a.txt")));
  // The file still differs from the text the run decides by: asked again.
  assertRefused(await resume(s, pid, script), "policy_changed", changedSays);
  // The file as it is now holds: no rule asks any more.
  const current = await resume(s, pid, script, "--policy-from", "current");
  assert.equal(current.status, 0, current.stdout + current.stderr);
  assert.match(current.stderr, /changed: policy \S+ changed .*: its current text holds/);
  assert.equal(Deno.readTextFileSync(join(s.workspace, "notes", "b.txt")), "second");
  const detail = (await lastLaunchDetail(s, pid)).detail!;
  const governance = detail.governance as { policies: { sha256: string }[] };
  assert.equal(governance.policies[0]?.sha256, sha256Hex(looser));
  assert.equal((detail.changes as string[]).length, 1);
});

Deno.test("attack: the agent rewrites the --policy file it can reach in the workspace to loosen its next run — the resume reports the change and refuses; nothing runs and nothing is recorded (real bootstrap)", async () => {
  using s = sandbox();
  const { policy, script } = setup(s, [
    call("write_text_file", {
      path: "ci/strict.jsonc",
      content: JSON.stringify({ version: 1, rules: [{ effect: "allow", shell: ["curl"] }] }),
    }),
    call("ask_human", { question: "done editing; go on?" }),
    call("write_text_file", { path: "notes/pwned.txt", content: "pwned" }),
    final("done"),
  ]);
  const first = await launch(s, script, "--policy", policy);
  const pid = first.doc.pid as string;
  assert.notEqual(Deno.readTextFileSync(policy), STRICT, "the attack did rewrite the file");
  await settle(s, first);
  const before = (await audit(s)).length;
  const refused = await resume(s, pid, script);
  assertRefused(refused, "policy_changed", /ci\/strict\.jsonc changed/);
  assert.equal((await audit(s)).length, before, "no launch recorded, no turn taken");
  assert.ok(!exists(join(s.workspace, "notes", "pwned.txt")), "the next turn never ran");
});

Deno.test("libos agent --resume: a policy file that vanished is reported, and --policy-from launch re-applies the text kept with the run; one outside every place the launcher reads by default is read again without naming it (real bootstrap)", async () => {
  using s = sandbox();
  const { policy, script } = setup(s, [
    call("ask_human", { question: "start?" }),
    call("write_text_file", { path: "notes/a.txt", content: "x" }),
    final("done"),
  ]);
  const withPolicy = (file: string) => launch(s, script, "--policy", file);
  // Vanished.
  const first = await withPolicy(policy);
  const pid = first.doc.pid as string;
  await settle(s, first);
  Deno.removeSync(policy);
  assertRefused(await resume(s, pid, script), "policy_changed", /strict\.jsonc vanished/);
  const kept = await resume(s, pid, script, "--policy-from", "launch");
  assert.equal(kept.status, 3, kept.stdout + kept.stderr);
  assert.deepEqual((await decisions(s, pid)).at(-1), [
    "fs.write",
    "fs:notes/a.txt",
    "ask",
    `rule:${policy}#2`,
  ]);
  // Outside every place the launcher reads by default: the launcher grants read on what the
  // run recorded, so a plain resume checks it again (policy_unverified is for a file that
  // cannot be read at all; cli/_run_governance_test.ts).
  const outside = join(s.workspace, "..", "outside.jsonc");
  Deno.writeTextFileSync(outside, STRICT);
  const second = await withPolicy(outside);
  const other = second.doc.pid as string;
  await settle(s, second);
  const plain = await resume(s, other, script);
  assert.equal(plain.status, 3, plain.stdout + plain.stderr);
  assert.doesNotMatch(plain.stderr, /widened|narrowed/, "the same file, not another one");
  assert.deepEqual((await decisions(s, other)).at(-1), [
    "fs.write",
    "fs:notes/a.txt",
    "ask",
    `rule:${outside}#2`,
  ]);
  // Changed there, it is reported as any other.
  Deno.writeTextFileSync(outside, STRICT + "\n");
  assertRefused(await resume(s, other, script), "policy_changed", /outside\.jsonc/);
});

Deno.test("libos agent --resume of a run launched before libos recorded governance: it works, says so, applies the launch's mode and the flags given, and records them for the next resume (real bootstrap)", async () => {
  using s = sandbox();
  const { script } = setup(s, [
    call("write_text_file", { path: "notes/a.txt", content: "x" }),
    final("done"),
  ]);
  assert.equal((await s.cli("init")).status, 0);
  let pid: string;
  {
    await using runtime = await createRuntime({ workspace: s.workspace, db: s.dbPath() });
    pid = runtime.processes.spawn({ goal: "old run", image: "coding-agent:v0" }).pid;
    // What a launch recorded before this change: the mode, nothing else of its governance.
    runtime.audit.append({
      actor: "operator",
      pid,
      action: "agent.start",
      resource: `process:${pid}`,
      decision: "none",
      authority: "operator",
      detail: {
        image: "coding-agent:v0",
        mode: "read-only",
        model: `replay:${script}`,
        human: "none",
        workspace: s.workspace,
      },
    });
  }
  const resumed = await resume(s, pid, script, "--human", "none");
  assert.equal(resumed.status, 0, resumed.stdout + resumed.stderr);
  assert.match(
    resumed.stderr,
    /the launch of pid_[0-9a-f]{12} recorded no governance .*applies mode read-only and the flags given/,
  );
  assert.ok(!exists(join(s.workspace, "notes", "a.txt")), "read-only, as launched");
  const detail = (await lastLaunchDetail(s, pid)).detail!;
  assert.equal(detail.governance_recorded_at_launch, false);
  assert.equal((detail.governance as { mode: string }).mode, "read-only");
});

Deno.test("libos agent --resume re-applies a recorded --toolchain without naming it again (the launcher reads what the run recorded), and naming it again is no widening (real bootstrap)", async () => {
  using s = sandbox();
  const { script } = setup(s, [call("ask_human", { question: "start?" }), final("done")]);
  const toolchain = join(s.workspace, "..", "toolchain");
  Deno.mkdirSync(join(toolchain, "bin"), { recursive: true });
  const first = await launch(s, script, "--toolchain", toolchain);
  const pid = first.doc.pid as string;
  await settle(s, first);
  const unnamed = await resume(s, pid, script);
  assert.equal(unnamed.status, 0, unnamed.stdout + unnamed.stderr);
  assert.doesNotMatch(unnamed.stderr, /widened/);
  const named = await resume(s, pid, script, "--toolchain", toolchain);
  assert.equal(named.status, 0, named.stdout + named.stderr);
  assert.doesNotMatch(named.stderr, /widened/);
  const governance = (await lastLaunchDetail(s, pid)).detail!.governance as {
    toolchains: string[];
  };
  assert.deepEqual(governance.toolchains, [toolchain]);
});
