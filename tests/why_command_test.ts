/**
 * Decision explanations (issue 24): decisions made through the real primitives — hardline, run
 * deny, mode ceiling, protected path, a rule from a file (its exact line), a capability a human
 * granted and a parent delegated to its fork (the chain), default deny, a shell read-only allow
 * and a shell-policy ask — each leave the explanation `libos why SEQ` prints (in process, and
 * through the real launcher once); hostile rule text and file names are shown escaped; records
 * made before explanations existed are still answered from their authority.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { AuditRecord } from "../runtime/audit/audit_log.ts";
import { permissionFlags } from "../cli/bootstrap.ts";
import { HumanPendingError } from "../runtime/base/errors.ts";
import { approvalCard } from "../runtime/human/approval_card.ts";
import { renderTranscript } from "../runtime/model/transcript_render.ts";
import { loadPolicies } from "../runtime/policy/policy_files.ts";
import type { NetProvider } from "../runtime/providers/net.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import { type Sandbox, sandbox, task } from "./_cli_sandbox.ts";

/** A network that answers 200 and resolves every name to a public address. */
const NET: NetProvider = {
  resolve: () => Promise.resolve(["93.184.216.34"]),
  request: () =>
    Promise.resolve({
      status: 200,
      headers: {},
      bodyBytes: new TextEncoder().encode("ok"),
      truncated: false,
    }),
};

/** The policy file: the deny on docs/** is rule 2, written on line 9; its note is hostile. */
const POLICY = `// the user's policy
{
  "version": 1,
  "rules": [
    { "effect": "allow", "shell": ["git", "status"], "exact": true },

    // keep the docs out of reach
    // (a second comment line)
    {
      "effect": "deny",
      "path": "docs/**",
      "note": "\\u001b[2J\\u202eevil"
    },
    { "effect": "ask", "path": ".github/**" }
  ]
}
`;
const RULE_LINE = 9;
/** The ask on .github/** is rule 3, on line 14. */
const ASK_LINE = 14;

/** True when no escape or bidi override reached the output raw. */
function clean(text: string): boolean {
  return !text.includes("\x1b") && !text.includes("\u202e");
}

/** A file outside the workspace, as a user's policy would be. */
function outside(s: Sandbox, name: string): string {
  const dir = join(s.state, "..", "config");
  Deno.mkdirSync(dir, { recursive: true });
  return join(dir, name);
}

function env(s: Sandbox) {
  const vars: Record<string, string> = { XDG_STATE_HOME: s.state, HOME: join(s.state, "home") };
  return { get: (name: string) => vars[name] };
}

async function runtimeIn(
  s: Sandbox,
  options: { mode: string; policy?: string; denies?: string[] },
): Promise<Runtime> {
  const rules = options.policy === undefined ? undefined : loadPolicies({
    env: env(s),
    cwd: s.workspace,
    userConfig: false,
    files: [options.policy],
  }).rules;
  return await createRuntime({
    workspace: s.workspace,
    env: env(s),
    mode: options.mode,
    human: "queue",
    net: NET,
    ...(rules ? { rules } : {}),
    ...(options.denies ? { denies: options.denies } : {}),
  });
}

/** Runs `op`, ignoring the refusal it is expected to meet, and returns the decision records it left. */
async function decided(runtime: Runtime, op: () => unknown): Promise<AuditRecord[]> {
  const before = runtime.audit.query({ order: "desc", limit: 1 })[0]?.seq ?? 0;
  try {
    await op();
  } catch {
    // The refusal is what the row is about; its record is checked below.
  }
  runtime.store.flush();
  return runtime.audit.query({ afterSeq: before, limit: 1000 }).filter((r) =>
    r.decision !== "none" && ["fs.", "shell.", "net."].some((p) => r.action.startsWith(p))
  );
}

interface Row {
  readonly name: string;
  readonly op: (runtime: Runtime, pid: string) => unknown;
  readonly decision: "allow" | "ask" | "deny";
  readonly authority: RegExp;
  readonly explain?: unknown;
  /** The lines `libos why` prints after its heading, each matched in order. */
  readonly why: readonly RegExp[];
  /** The one-line explanation `audit query --explain` shows. */
  readonly line: RegExp;
}

function rows(policyPath: string): Row[] {
  return [
    {
      name: "hardline (rm -rf / through sh -c)",
      op: (r, pid) => r.primitives.shell.run(pid, { argv: ["sh", "-c", "rm -rf /"] }),
      decision: "deny",
      authority: /^hardline:rm-rf-root$/,
      explain: { command: "rm -rf /" },
      why: [
        /^deny by hardline rm-rf-root \(in rm -rf \/\)$/,
        /^ {2}layer: hardline/,
        /^ {2}the command that decided: rm -rf \/$/,
      ],
      line: /^hardline rm-rf-root \(in rm -rf \/\)$/,
    },
    {
      name: "a run deny (--deny fs.write:secret/**), its text recorded",
      op: (r, pid) => r.primitives.fs.writeText(pid, { path: "secret/a.txt", content: "x" }),
      decision: "deny",
      authority: /^run:1$/,
      explain: { deny: "fs.write:secret/**" },
      why: [/^deny by run deny #1 fs\.write:secret\/\*\*$/, /^ {2}layer: run/],
      line: /^run deny #1 fs\.write:secret\/\*\*$/,
    },
    {
      name: "a protected path asks",
      op: (r, pid) => r.primitives.fs.writeText(pid, { path: ".git/config", content: "x" }),
      decision: "ask",
      authority: /^protected:/,
      why: [/^ask by protected path \S*\.git/, /^ {2}layer: protected/],
      line: /^protected path /,
    },
    {
      name: "a rule from a file, with its exact line and text (hostile note and file name escaped)",
      op: (r, pid) => r.primitives.fs.readText(pid, { path: "docs/readme.md" }),
      decision: "deny",
      authority: new RegExp(`^rule:.*#2$`),
      explain: {
        rule: {
          source: policyPath,
          line: RULE_LINE,
          text: JSON.stringify({ effect: "deny", path: "docs/**", note: "\x1b[2J\u202eevil" }),
        },
      },
      why: [
        new RegExp(`^deny by rule .*\\\\x1B\\[31m.*:${RULE_LINE} \\{"effect":"deny"`),
        /^ {2}layer: rule/,
        /^ {2}file: .*pol\\x1B\[31micy\.jsonc$/,
        new RegExp(`^ {2}line: ${RULE_LINE} \\(rule #2 of the file\\)$`),
        /^ {2}text: .*"note":"\\\\u001b\[2J\\u\{202E\}evil"/,
      ],
      line: new RegExp(`^rule .*:${RULE_LINE} \\{"effect":"deny","path":"docs/\\*\\*"`),
    },
    {
      name: "default deny (no capability names the host)",
      op: (r, pid) => r.primitives.net.fetch(pid, { url: "https://nothing.example/" }),
      decision: "deny",
      authority: /^default$/,
      why: [/^deny by default deny \(no rule or capability allows it\)$/, /^ {2}layer: default/],
      line: /^default deny/,
    },
    {
      name: "a shell read-only command is allowed (confined)",
      op: (r, pid) => r.primitives.shell.run(pid, { argv: ["ls"] }),
      decision: "allow",
      authority: /^read-only:ls$/,
      why: [/^allow by read-only command ls$/, /^ {2}layer: read-only/],
      line: /^read-only command ls$/,
    },
    {
      name: "the shell policy asks for a command no rule or grant allows",
      op: (r, pid) => r.primitives.shell.run(pid, { argv: ["touch", "made-by-touch"] }),
      decision: "ask",
      authority: /^shell-policy:allowlist_auto_else_ask$/,
      why: [/^ask by shell policy allowlist_auto_else_ask$/, /^ {2}layer: shell-policy/],
      line: /^shell policy allowlist_auto_else_ask$/,
    },
  ];
}

Deno.test("libos why explains each layer's decision, made through the real primitives", async () => {
  using s = sandbox();
  const policyPath = outside(s, "pol\x1b[31micy.jsonc");
  Deno.writeTextFileSync(policyPath, POLICY);
  Deno.mkdirSync(join(s.workspace, ".git"));
  const table = rows(policyPath);
  const seqs: number[] = [];
  {
    await using runtime = await runtimeIn(s, {
      mode: "full-access",
      policy: policyPath,
      denies: ["fs.write:secret/**"],
    });
    const pid = runtime.processes.spawn({ goal: "act", image: "base-agent:v0" }).pid;
    for (const row of table) {
      const records = await decided(runtime, () => row.op(runtime, pid));
      const record = records.at(-1);
      assert.ok(record, `${row.name}: a decision record`);
      assert.equal(record.decision, row.decision, `${row.name}: ${record.authority}`);
      assert.match(record.authority, row.authority, row.name);
      assert.deepEqual(record.detail?.explain, row.explain, `${row.name}: detail.explain`);
      seqs.push(record.seq);
    }
    // Refused and asked rows had no effect.
    for (const path of ["secret/a.txt", ".git/config", "made-by-touch"]) {
      assert.throws(() => Deno.statSync(join(s.workspace, path)), Deno.errors.NotFound);
    }
  }
  for (const [i, row] of table.entries()) {
    const out = await s.cli("why", String(seqs[i]));
    assert.equal(out.status, 0, out.stderr);
    const lines = out.stdout.trimEnd().split("\n");
    assert.match(lines[0]!, new RegExp(`^#${seqs[i]} `), row.name);
    for (const [j, expected] of row.why.entries()) {
      assert.match(lines[j + 1] ?? "", expected, `${row.name}, line ${j + 1}:\n${out.stdout}`);
    }
    // Nothing raw reaches the terminal.
    assert.ok(clean(out.stdout), row.name);
    const json = await s.json("why", String(seqs[i]));
    const explanation = json.doc.explanation as { line: string; layer: string };
    assert.match(explanation.line, row.line, row.name);
  }
  // audit query --explain: one line per decision row, in text and JSON.
  const query = await s.json("audit", "query", "--explain", "--limit", "10000");
  const bySeq = new Map(
    (query.doc.records as { seq: number; explanation?: string | null }[]).map((
      r,
    ) => [r.seq, r.explanation]),
  );
  for (const [i, row] of table.entries()) assert.match(bySeq.get(seqs[i]!) ?? "", row.line);
  const text = await s.cli("audit", "query", "--explain", "--decision", "deny");
  assert.equal(text.status, 0, text.stderr);
  assert.match(text.stdout.split("\n")[0]!, /EXPLANATION$/);
  assert.match(text.stdout, /default deny \(no rule or capability allows it\)/);
  assert.ok(clean(text.stdout));

  // Through the real launcher: the rule's line and the escaped file name.
  const ruleSeq = seqs[table.findIndex((r) => r.authority.source.startsWith("^rule"))]!;
  const launched = await task(s.workspace, s.state, "libos", "why", String(ruleSeq));
  assert.equal(launched.status, 0, launched.stderr);
  assert.match(
    launched.stdout,
    new RegExp(`^ {2}line: ${RULE_LINE} \\(rule #2 of the file\\)$`, "m"),
  );
  assert.match(launched.stdout, /pol\\x1B\[31micy\.jsonc/);
  assert.ok(clean(launched.stdout));
});

Deno.test("libos why shows a mode ceiling's deny", async () => {
  using s = sandbox();
  let seq: number;
  {
    await using runtime = await runtimeIn(s, { mode: "read-only" });
    const pid = runtime.processes.spawn({ goal: "act", image: "base-agent:v0" }).pid;
    const [record] = await decided(
      runtime,
      () => runtime.primitives.fs.writeText(pid, { path: "a.txt", content: "x" }),
    );
    assert.equal(record?.decision, "deny");
    assert.equal(record.authority, "mode:read-only");
    assert.equal(record.detail?.explain, undefined, "a mode decision records nothing extra");
    seq = record.seq;
  }
  assert.throws(() => Deno.statSync(join(s.workspace, "a.txt")), Deno.errors.NotFound);
  const out = await s.cli("why", String(seq));
  assert.equal(out.status, 0, out.stderr);
  assert.match(out.stdout, /^deny by mode read-only$/m);
  assert.match(out.stdout, /^ {2}the read-only mode's ceiling/m);
});

Deno.test("libos why shows a capability a human granted and its parent delegated to a fork: the chain", async () => {
  using s = sandbox();
  let seq: number;
  let human: string;
  let child: string;
  let parentCap: string;
  let childCap: string;
  {
    await using runtime = await runtimeIn(s, { mode: "full-access" });
    const pid = runtime.processes.spawn({ goal: "act", image: "base-agent:v0" }).pid;
    const resource = { type: "net", key: "example.com", scope: "exact" } as const;
    const pending = await runtime.human.requestPermission(pid, {
      resource,
      rights: ["connect"],
      reason: "fetch the docs",
    }).then(() => undefined, (error: unknown) => error);
    assert.ok(pending instanceof HumanPendingError);
    human = pending.request;
    const approved = runtime.human.approve(human, { by: "human:terminal" });
    parentCap = approved.response!.capabilities![0]!;
    child = runtime.processes.fork(pid, { inherit: [{ resource, rights: ["connect"] }] }).pid;
    const records = await decided(
      runtime,
      () => runtime.primitives.net.fetch(child, { url: "https://example.com/" }),
    );
    const record = records.at(-1)!;
    assert.equal(record.decision, "allow");
    assert.match(record.authority, /^cap:cap_/);
    childCap = record.authority.slice(4);
    assert.notEqual(childCap, parentCap);
    seq = record.seq;
  }
  const out = await s.cli("why", String(seq));
  assert.equal(out.status, 0, out.stderr);
  const lines = out.stdout.split("\n");
  assert.equal(
    lines[1],
    `allow by capability ${childCap} (granted by delegation by ${
      out.stdout.match(/for (pid_[0-9a-f]+) — granted by human/)?.[1]
    }, from ${parentCap})`,
  );
  assert.match(lines[3]!, /^ {2}chain/);
  assert.match(
    lines[4]!,
    new RegExp(
      `^ {4}${childCap} {2}allow connect on net:example\\.com for ${child} — granted by delegation by pid_`,
    ),
  );
  assert.match(
    lines[5]!,
    new RegExp(
      `^ {4}${parentCap} {2}allow connect on net:example\\.com for pid_\\S+ — granted by human:terminal via ${human} \\(issuer human:${human}\\) at \\d{4}-`,
    ),
  );
  const json = await s.json("why", String(seq));
  const chain = (json.doc.explanation as { capability: { chain: { id: string }[] } }).capability
    .chain;
  assert.deepEqual(chain.map((l) => l.id), [childCap, parentCap]);
});

Deno.test("libos why: a record that is not a decision says so; an unknown seq is not_found; a bad one is a usage error", async () => {
  using s = sandbox();
  let seq: number;
  {
    await using runtime = await runtimeIn(s, { mode: "full-access" });
    // A record of what happened (as the action ledger writes), not a decision.
    seq = runtime.store.step(() =>
      runtime.audit.append({
        actor: "runtime",
        action: "action.intent",
        resource: "fs:a.txt",
        decision: "none",
        authority: "none",
      })
    ).seq;
  }
  const out = await s.cli("why", String(seq));
  assert.equal(out.status, 0, out.stderr);
  assert.match(out.stdout, /^not a decision: /m);
  const json = await s.json("why", String(seq));
  assert.equal(json.doc.decision, "none");
  assert.equal(json.doc.explanation, null);
  const missing = await s.json("why", "999999");
  assert.equal(missing.status, 1);
  assert.equal((missing.doc.error as { code: string }).code, "not_found");
  const bad = await s.cli("why", "-1x");
  assert.equal(bad.status, 2);
});

Deno.test("libos why answers a record made before explanations existed, from its authority; the audit chain verifies with both", async () => {
  using s = sandbox();
  const policyPath = outside(s, "policy.jsonc");
  Deno.writeTextFileSync(policyPath, POLICY);
  let old: number;
  let now: number;
  {
    await using runtime = await runtimeIn(s, { mode: "full-access", policy: policyPath });
    const pid = runtime.processes.spawn({ goal: "act", image: "base-agent:v0" }).pid;
    // What an earlier libos recorded for the same refusal: the authority, no detail.explain.
    old = runtime.store.step(() =>
      runtime.audit.append({
        actor: pid,
        pid,
        action: "fs.read",
        resource: "fs:docs/a.md",
        decision: "deny",
        authority: `rule:${policyPath}#2`,
      })
    ).seq;
    const [record] = await decided(
      runtime,
      () => runtime.primitives.fs.readText(pid, { path: "docs/a.md" }),
    );
    now = record!.seq;
  }
  const out = await s.cli("why", String(old));
  assert.equal(out.status, 0, out.stderr);
  assert.match(out.stdout, /^deny by rule .*policy\.jsonc #2$/m);
  assert.match(out.stdout, /^ {2}rule: #2 of the file \(recorded before rule lines were kept\)$/m);
  const line = await s.json(
    "audit",
    "query",
    "--explain",
    "--after",
    String(old - 1),
    "--limit",
    "1",
  );
  assert.match(
    (line.doc.records as { explanation: string }[])[0]!.explanation,
    /^rule .*policy\.jsonc #2$/,
  );
  const fresh = await s.cli("why", String(now));
  assert.match(fresh.stdout, new RegExp(`^ {2}line: ${RULE_LINE} `, "m"));
  const verified = await s.json("audit", "verify");
  assert.equal(verified.status, 0, verified.stdout);
  assert.equal(verified.doc.ok, true);
});

Deno.test("the approval card names the rule that asked by file:line; the transcript's decision line carries the rule", async () => {
  using s = sandbox();
  const policyPath = outside(s, "policy.jsonc");
  Deno.writeTextFileSync(policyPath, POLICY);
  Deno.mkdirSync(join(s.workspace, ".github"));
  await using runtime = await runtimeIn(s, { mode: "full-access", policy: policyPath });
  const pid = runtime.processes.spawn({ goal: "act", image: "base-agent:v0" }).pid;
  const asked = await runtime.primitives.fs.writeText(pid, { path: ".github/ci.yml", content: "x" })
    .then(() => undefined, (error: unknown) => error);
  assert.ok(asked instanceof HumanPendingError);
  assert.throws(() => Deno.statSync(join(s.workspace, ".github/ci.yml")), Deno.errors.NotFound);
  const request = runtime.human.get(asked.request);
  assert.equal(request.approval?.reason, `rule:${policyPath}#3`);
  assert.deepEqual(request.approval?.rule, {
    source: policyPath,
    line: ASK_LINE,
    text: '{"effect":"ask","path":".github/**"}',
  });
  const card = approvalCard(request, { color: false, always: [] }).join("\n");
  assert.match(card, new RegExp(`asked by: a policy rule \\(${policyPath}:${ASK_LINE}\\)`));
  runtime.store.flush();
  const [record] = runtime.audit.query({ action: "fs.write", decision: "ask" });
  assert.ok(record);
  const text = renderTranscript([{
    type: "decision",
    pid,
    auditSeq: record.seq,
    time: record.time,
    actor: record.actor,
    action: record.action,
    resource: record.resource,
    effect: record.decision,
    authority: record.authority,
    request: null,
    by: null,
    detail: record.detail,
  }]);
  assert.match(
    text,
    new RegExp(
      `decision: ask fs\\.write fs:\\.github/ci\\.yml by rule:\\S+#3 \\(rule \\S+:${ASK_LINE} \\{"effect":"ask","path":"\\.github/\\*\\*"\\}\\)  \\[#${record.seq}\\]`,
    ),
  );
});

Deno.test("bootstrap permissionFlags(): libos why may read the workspace and state and write nothing, run nothing, reach no network", () => {
  const flags = permissionFlags({
    cwd: "/home/u",
    env: { get: (n: string) => ({ HOME: "/home/u", TMPDIR: "/tmp" } as Record<string, string>)[n] },
    realPath: (p: string) => p,
    args: ["why", "12", "--json"],
  });
  const read = flags.find((f) => f.startsWith("--allow-read="))?.slice(13).split(",") ?? [];
  assert.ok(read.includes("/home/u/.local/state/libos"));
  assert.deepEqual(
    flags.filter((f) =>
      f.startsWith("--allow-write") || f.startsWith("--allow-run") ||
      f.startsWith("--allow-net") || f === "-A" || f === "--allow-all"
    ),
    [],
  );
});
