import assert from "node:assert/strict";
import { join } from "node:path";
import { ValidationError } from "../base/errors.ts";
import { FakeClock } from "../base/clock.ts";
import { seededIds } from "../base/ids.ts";
import type { ModeName } from "../authority/modes.ts";
import { loadPolicies } from "./policy_files.ts";
import { parsePolicy, PolicyRules } from "./policy_rules.ts";
import { createRuntime } from "../runtime.ts";
import { decideShell } from "./shell_policy.ts";
import { ShellParser } from "./shell_script.ts";

const MODES: readonly ModeName[] = ["read-only", "plan", "workspace-write", "full-access"];

function rules(text: string): PolicyRules {
  return new PolicyRules(parsePolicy(text, "user.jsonc"));
}

async function runtimeWith(mode: ModeName, policy: PolicyRules) {
  const workspace = Deno.makeTempDirSync({ prefix: "libos-policy-" });
  const runtime = await createRuntime({
    workspace,
    db: ":memory:",
    mode,
    rules: policy,
    clock: new FakeClock(Date.UTC(2026, 10, 29, 12)),
    ids: seededIds(91),
  });
  return {
    runtime,
    async [Symbol.asyncDispose]() {
      await runtime.close();
      Deno.removeSync(workspace, { recursive: true });
    },
  };
}

const fs = (path: string, right: "read" | "write") =>
  ({ resource: { type: "fs", path }, right }) as const;

Deno.test("decide(): a user rule's deny beats a capability's allow, in every mode", async () => {
  const policy = rules(`{
    // The user never lets an agent read the secrets folder.
    "version": 1,
    "rules": [{ "effect": "deny", "path": "secrets/**", "rights": ["read"] }]
  }`);
  for (const mode of MODES) {
    await using f = await runtimeWith(mode, policy);
    const pid = f.runtime.processes.spawn({ goal: "g", image: "coding-agent:v0" }).pid;
    // The process holds workspace read from its mode — and an explicit allow on the file.
    f.runtime.authority.capabilities.grant({
      subject: pid,
      resource: { type: "fs", path: "secrets/token.txt", scope: "exact" },
      rights: ["read"],
      effect: "allow",
      issuer: "operator",
    });
    assert.equal(f.runtime.authority.decide(pid, fs("src/app.ts", "read")).effect, "allow", mode);
    assert.deepEqual(
      f.runtime.authority.decide(pid, fs("secrets/token.txt", "read")),
      { effect: "deny", reason: "rule:user.jsonc#1", layer: "rule" },
      mode,
    );
  }
});

Deno.test("decide(): an explicit ask rule beats a capability's allow (an ask is always honoured)", async () => {
  const policy = rules(`{"version": 1, "rules": [
    { "effect": "ask", "path": "deploy/**" },
    { "effect": "allow", "path": "deploy/**" }
  ]}`);
  await using f = await runtimeWith("full-access", policy);
  const pid = f.runtime.processes.spawn({ goal: "g", image: "coding-agent:v0" }).pid;
  const d = f.runtime.authority.decide(pid, fs("deploy/prod.yml", "write"));
  assert.equal(d.effect, "ask");
  assert.equal(d.reason, "rule:user.jsonc#1");
});

Deno.test("decide(): the hardline floor denies a shell action even with an allow-everything capability (always_allow stopped)", async () => {
  await using f = await runtimeWith("full-access", new PolicyRules([]));
  await f.runtime.shellParser.load();
  const pid = f.runtime.processes.spawn({ goal: "g", image: "coding-agent:v0" }).pid;
  f.runtime.authority.capabilities.grant({
    subject: pid,
    resource: { type: "shell", argv: [], scope: "any" },
    rights: ["execute"],
    effect: "allow",
    issuer: "shell-policy:always_allow",
  });
  const shell = (argv: string[]) =>
    ({ resource: { type: "shell", argv }, right: "execute" }) as const;
  assert.equal(f.runtime.authority.decide(pid, shell(["ls", "-la"])).effect, "allow");
  for (
    const argv of [
      ["rm", "-rf", "/"],
      ["sudo", "env", "-i", "nice", "rm", "-rf", "--no-preserve-root", "/"],
      ["bash", "-c", "echo ok; dd if=/dev/zero of=/dev/sda bs=1M"],
      ["sh", "-c", ":(){ :|:& };:"],
      ["find", "/", "-delete"],
    ]
  ) {
    const d = f.runtime.authority.decide(pid, shell(argv));
    assert.equal(d.effect, "deny", argv.join(" "));
    assert.match(d.reason, /^hardline:/, argv.join(" "));
  }
});

Deno.test("decideShell(): layer order — hardline, run deny, rules, then the level; always_allow is still stopped by the floor", async () => {
  const scripts = new ShellParser();
  await scripts.load();
  const policy = rules(`{"version": 1, "rules": [
    { "effect": "allow", "shell": ["rm"] },
    { "effect": "ask", "shell": ["curl"] },
    { "effect": "deny", "shell": ["env"] }
  ]}`);
  const base = {
    level: "always_allow",
    mode: "workspace-write",
    wall: false,
    denies: [],
    rules: policy,
    scripts,
  } as const;
  const decide = (argv: string[], extra: Partial<Parameters<typeof decideShell>[0]> = {}) =>
    decideShell({ ...base, argv, ...extra });
  assert.equal(
    decide(["rm", "-rf", "/"]).decision,
    "deny",
    "the floor beats always_allow and the rule",
  );
  assert.equal(decide(["rm", "-rf", "/"]).reason, "hardline:rm-rf-root");
  assert.equal(decide(["curl", "https://x"]).decision, "ask", "an explicit ask beats always_allow");
  assert.equal(decide(["env"]).decision, "deny", "a rule deny beats always_allow");
  const ok = decide(["ls"]);
  assert.equal(ok.decision, "allow");
  assert.equal(ok.highRisk, true);
  const { parseRunDeny } = await import("../authority/decide.ts");
  const run = decide(["rm", "build/x"], { denies: [parseRunDeny("shell:rm *")] });
  assert.equal(run.decision, "deny", "a run deny beats a rule allow");
  assert.equal(run.reason, "run:1");
  assert.equal(
    decide(["ls"], { mode: "read-only" }).decision,
    "deny",
    "read-only forbids the shell outside the wall",
  );
  assert.equal(decide(["ls"], { mode: "read-only", wall: true }).decision, "allow");
});

Deno.test("loadPolicies() ignores a workspace policy file unless trusted, and refuses a malformed file whole", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-policy-" }));
  try {
    const workspace = join(root, "ws");
    Deno.mkdirSync(join(workspace, ".libos"), { recursive: true });
    // An agent that can write the workspace plants a policy that allows everything.
    Deno.writeTextFileSync(
      join(workspace, ".libos", "policy.jsonc"),
      `{"version": 1, "rules": [{ "effect": "allow", "shell": ["curl"] }]}`,
    );
    const env = {
      get: (n: string) => (n === "XDG_CONFIG_HOME" ? join(root, "config") : undefined),
    };
    const untrusted = loadPolicies({ env, cwd: root, workspace });
    assert.equal(untrusted.rules.rules.length, 0);
    assert.equal(untrusted.ignored, join(workspace, ".libos", "policy.jsonc"));
    const trusted = loadPolicies({ env, cwd: root, workspace, trustWorkspace: true });
    assert.equal(trusted.rules.rules.length, 1);
    // The user's file, then --policy files, in order; a malformed one refuses everything.
    Deno.mkdirSync(join(root, "config", "libos"), { recursive: true });
    Deno.writeTextFileSync(
      join(root, "config", "libos", "policy.jsonc"),
      `{"version": 1, "rules": [{ "effect": "deny", "shell": ["env"] }]}`,
    );
    const bad = join(root, "bad.jsonc");
    Deno.writeTextFileSync(
      bad,
      `{"version": 1, "rules": [\n  { "effect": "allow", "shell": ["ls"] },\n  { "effect": "allow", "shell": ["ls"], "host": "x" }\n]}`,
    );
    assert.throws(
      () => loadPolicies({ env, cwd: root, files: [bad] }),
      (e: unknown) => e instanceof ValidationError && /bad\.jsonc:3:3/.test(e.message),
    );
    assert.throws(
      () => loadPolicies({ env, cwd: root, files: ["missing.jsonc"] }),
      ValidationError,
    );
    const user = loadPolicies({ env, cwd: root });
    assert.deepEqual(user.rules.rules.map((r) => r.reason), [
      `rule:${join(root, "config", "libos", "policy.jsonc")}#1`,
    ]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("parsePolicy() refuses hostile JSONC with the line and column (duplicate keys, depth, size, prototype keys)", () => {
  const refused: [string, string, RegExp][] = [
    ["duplicate key", `{"version": 1, "version": 1, "rules": []}`, /1:16: .*appears twice/],
    ["deep", `{"version": 1, "rules": [${"[".repeat(40)}${"]".repeat(40)}]}`, /nested deeper/],
    ["oversized", `{"version": 1, "rules": [], "x": "${"y".repeat(300 * 1024)}"}`, /bytes/],
    ["syntax", `{"version": 1, "rules": [ { "effect": "deny" "shell": ["x"] } ]}`, /1:\d+: /],
    [
      "prototype key",
      `{"version": 1, "rules": [], "__proto__": {"polluted": 1}}`,
      /__proto__|Unrecognized/i,
    ],
    [
      "two targets",
      `{"version": 1, "rules": [{ "effect": "deny", "shell": ["x"], "tool": "y" }]}`,
      /exactly one/,
    ],
    [
      "bad effect",
      `{"version": 1, "rules": [{ "effect": "maybe", "shell": ["x"] }]}`,
      /1:\d+: rules\.0\.effect/,
    ],
    ["empty", ``, /empty/],
  ];
  for (const [name, text, message] of refused) {
    assert.throws(
      () => parsePolicy(text, "p.jsonc"),
      (e: unknown) => e instanceof ValidationError && message.test(e.message),
      name,
    );
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  const ok = parsePolicy(
    `{
      // comments and trailing commas are JSONC
      "version": 1,
      "rules": [{ "effect": "allow", "shell": ["git", "status"], "exact": true },],
    }`,
    "p.jsonc",
  );
  assert.equal(ok.length, 1);
});

Deno.test("ToolBroker.invoke() honours tool rules: a deny refuses at once, an ask refuses until a human route exists", async () => {
  const policy = rules(`{"version": 1, "rules": [
    { "effect": "deny", "tool": "write_*" },
    { "effect": "ask", "tool": "human_output" }
  ]}`);
  await using f = await runtimeWith("workspace-write", policy);
  const pid = f.runtime.processes.spawn({ goal: "g", image: "coding-agent:v0" }).pid;
  const signal = new AbortController().signal;
  const write = await f.runtime.tools.invoke(pid, {
    name: "write_text_file",
    arguments: { path: "x.txt", content: "x" },
  }, signal);
  assert.equal(!write.ok && write.error.code, "tool_denied");
  const out = await f.runtime.tools.invoke(pid, {
    name: "human_output",
    arguments: { text: "hi" },
  }, signal);
  assert.equal(!out.ok && out.error.code, "approval_required");
  const time = await f.runtime.tools.invoke(
    pid,
    { name: "get_current_time", arguments: {} },
    signal,
  );
  assert.equal(time.ok, true);
  // Each refusal's record keeps the rule that decided: its file, line and text (libos why).
  const refused = f.runtime.audit.query({
    pid,
    action: "tool.invoke",
    decision: "deny",
    limit: 10,
  });
  const explains = refused.map((r) =>
    (r.detail as { explain?: { rule?: { line: number } } })
      ?.explain?.rule?.line
  );
  assert.deepEqual(explains, [2, 3]);
});
