import assert from "node:assert/strict";
import { type JsonValue, sha256Hex } from "../runtime/base/canonical_json.ts";
import { UsageError } from "../runtime/base/errors.ts";
import {
  checkRecordable,
  type GovernanceFlags,
  type GovernancePlan,
  launchGovernance,
  type PolicyNow,
  type PolicySource,
  type ResumeFacts,
  resumeGovernance,
  rulesOf,
  type RunGovernance,
  storedGovernance,
  withCopies,
} from "./_run_governance.ts";

const STRICT = '{"version":1,"rules":[{"effect":"ask","path":"notes/**","rights":["write"]}]}';
const DENY_ONLY = '{"version":1,"rules":[{"effect":"deny","path":"secret/**"}]}';
const WITH_ALLOW = '{"version":1,"rules":[{"effect":"allow","shell":["rm"]}]}';
const WITH_ASK = '{"version":1,"rules":[{"effect":"ask","shell":["rm"]}]}';
const EDITED = '{"version":1,"rules":[]}';
const MODEL = { spec: "replay:/s.jsonl", endpoint: null };

const STORED: RunGovernance = {
  version: 1,
  mode: "workspace-write",
  human: "queue",
  shield: false,
  shellPolicy: "allowlist_auto_else_ask",
  denies: ["fs.write:secret/**"],
  policies: [{ path: "/p/strict.jsonc", sha256: sha256Hex(STRICT), copy: "obj_00000000000a" }],
  toolchains: ["/opt/tc"],
  hosts: ["api.example.com:443"],
  model: MODEL,
};

const NO_FLAGS: GovernanceFlags = {
  mode: undefined,
  human: undefined,
  shellPolicy: undefined,
  denies: [],
  policies: [],
  toolchains: [],
  hosts: [],
  model: MODEL,
};

function facts(over: Partial<ResumeFacts> = {}): ResumeFacts {
  return {
    pid: "pid_000000000001",
    now: () => ({ state: "same", text: STRICT }),
    recordedText: () => STRICT,
    terminal: false,
    widen: false,
    policyFrom: undefined,
    ...over,
  };
}

function refusal(run: () => unknown, code: string, ...says: RegExp[]) {
  assert.throws(run, (error: Error & { code?: string }) => {
    assert.equal(error.code, code, error.message);
    for (const s of says) assert.match(error.message, s);
    return true;
  });
}

Deno.test("resumeGovernance() with no flags re-applies the recorded governance exactly", () => {
  const plan = resumeGovernance(STORED, NO_FLAGS, facts());
  assert.deepEqual(plan.governance, STORED);
  assert.equal(plan.human, "queue");
  assert.deepEqual([plan.widened, plan.narrowed, plan.changes], [[], [], []]);
  assert.deepEqual(plan.policies.map((p) => p.text), [STRICT]);
  assert.deepEqual(rulesOf(plan).rules.map((r) => r.reason), ["rule:/p/strict.jsonc#1"]);
});

Deno.test("resumeGovernance(): each widening is refused with governance_widened naming it; --widen applies it and lists it", () => {
  const cases: [
    string,
    Partial<GovernanceFlags>,
    RegExp,
    (g: RunGovernance) => unknown,
    unknown,
  ][] = [
    [
      "a looser mode",
      { mode: "full-access" },
      /mode workspace-write → full-access/,
      (g) => g.mode,
      "full-access",
    ],
    [
      "a looser shell policy",
      { shellPolicy: "always_allow" },
      /shell policy allowlist_auto_else_ask → always_allow/,
      (g) => g.shellPolicy,
      "always_allow",
    ],
    ["--yes", { human: "yes" }, /--yes: .*launched with queue/, (g) => [g.human, g.shield], [
      "yes",
      true,
    ]],
    [
      "a policy file with an allow rule",
      { policies: [{ path: "/p/loose.jsonc", text: WITH_ALLOW }] },
      /policy \/p\/loose\.jsonc: its allow or ask rules/,
      (g) => g.policies.length,
      2,
    ],
    [
      "a policy file with an ask rule (it can turn a default deny into a question)",
      { policies: [{ path: "/p/ask.jsonc", text: WITH_ASK }] },
      /policy \/p\/ask\.jsonc/,
      (g) => g.policies.at(-1)?.path,
      "/p/ask.jsonc",
    ],
    [
      "another toolchain",
      { toolchains: ["/opt/other"] },
      /toolchain \/opt\/other/,
      (g) => g.toolchains,
      ["/opt/tc", "/opt/other"],
    ],
  ];
  for (const [name, flags, says, pick, expected] of cases) {
    refusal(
      () => resumeGovernance(STORED, { ...NO_FLAGS, ...flags }, facts()),
      "governance_widened",
      says,
      /Pass --widen/,
    );
    const plan = resumeGovernance(STORED, { ...NO_FLAGS, ...flags }, facts({ widen: true }));
    assert.equal(plan.widened.length, 1, name);
    assert.match(plan.widened[0]!, says, name);
    assert.deepEqual(pick(plan.governance), expected, name);
  }
  refusal(
    () => resumeGovernance(STORED, { ...NO_FLAGS, mode: "full-access", human: "yes" }, facts()),
    "governance_widened",
    /full-access; --yes/,
  );
});

Deno.test("resumeGovernance(): narrowings are allowed and listed; extra denies come after the recorded ones, whose numbers stay", () => {
  const plan = resumeGovernance(STORED, {
    ...NO_FLAGS,
    mode: "read-only",
    shellPolicy: "always_deny",
    human: "none",
    denies: ["fs.write:secret/**", "net:*"],
    policies: [{ path: "/p/deny.jsonc", text: DENY_ONLY }],
  }, facts());
  assert.deepEqual(plan.widened, []);
  assert.deepEqual(plan.narrowed, [
    "mode workspace-write → read-only",
    "shell policy allowlist_auto_else_ask → always_deny",
    "--deny net:*",
    "policy /p/deny.jsonc (deny rules only)",
  ]);
  assert.deepEqual(plan.changes, ["human queue → none"]);
  assert.deepEqual(plan.governance.denies, ["fs.write:secret/**", "net:*"]);
  assert.deepEqual(plan.governance.policies.map((p) => [p.path, p.copy]), [
    ["/p/strict.jsonc", "obj_00000000000a"],
    ["/p/deny.jsonc", null],
  ]);
  // --yes given up: narrower, but its shield stays.
  const yes = { ...STORED, human: "yes" as const, shield: true };
  const fromYes = resumeGovernance(yes, { ...NO_FLAGS, human: "interactive" }, facts());
  assert.deepEqual(fromYes.narrowed, ["human yes → interactive"]);
  assert.equal(fromYes.governance.shield, true);
});

Deno.test("resumeGovernance(): a recorded policy file named again is not another file, and a toolchain named again is not another one", () => {
  const plan = resumeGovernance(STORED, {
    ...NO_FLAGS,
    policies: [{ path: "/p/strict.jsonc", text: STRICT }],
    toolchains: ["/opt/tc"],
  }, facts());
  assert.deepEqual(plan.governance, STORED);
  assert.deepEqual([plan.widened, plan.narrowed], [[], []]);
});

Deno.test("resumeGovernance(): an interactive run resumed without a terminal parks its requests this time and stays interactive", () => {
  const interactive = { ...STORED, human: "interactive" as const };
  const away = resumeGovernance(interactive, NO_FLAGS, facts({ terminal: false }));
  assert.equal(away.human, "queue");
  assert.equal(away.governance.human, "interactive");
  assert.match(away.changes[0]!, /no terminal here/);
  const here = resumeGovernance(interactive, NO_FLAGS, facts({ terminal: true }));
  assert.equal(here.human, "interactive");
  assert.deepEqual(here.changes, []);
});

Deno.test("resumeGovernance(): another model is no widening but is listed as a change", () => {
  const plan = resumeGovernance(STORED, {
    ...NO_FLAGS,
    model: { spec: "openai:gpt-test", endpoint: "http://127.0.0.1:8000/v1" },
  }, facts());
  assert.deepEqual(plan.widened, []);
  assert.deepEqual(plan.changes, [
    "model replay:/s.jsonl → openai:gpt-test at http://127.0.0.1:8000/v1",
  ]);
});

Deno.test("resumeGovernance(): a recorded policy file that changed, vanished or cannot be read refuses until --policy-from says which text holds", () => {
  const states: [string, PolicyNow, string, RegExp][] = [
    [
      "changed",
      { state: "changed", text: EDITED },
      "policy_changed",
      new RegExp(
        `changed \\(sha256 ${sha256Hex(STRICT).slice(0, 12)} at launch, ${
          sha256Hex(EDITED).slice(0, 12)
        } now\\)`,
      ),
    ],
    ["vanished", { state: "vanished" }, "policy_changed", /strict\.jsonc vanished/],
    [
      "unreadable",
      { state: "unreadable", reason: "Requires read access" },
      "policy_unverified",
      /cannot be read here \(Requires read access\); name it with --policy \/p\/strict\.jsonc/,
    ],
  ];
  for (const [name, now, code, says] of states) {
    const at = (over: Partial<ResumeFacts>) => facts({ now: () => now, ...over });
    refusal(
      () => resumeGovernance(STORED, NO_FLAGS, at({})),
      code,
      says,
      /--policy-from launch .* --policy-from current/,
    );
    const launch = resumeGovernance(STORED, NO_FLAGS, at({ policyFrom: "launch" }));
    assert.deepEqual(launch.policies.map((p) => [p.text, p.copy]), [[STRICT, "obj_00000000000a"]]);
    assert.match(launch.changes[0]!, /the text recorded at launch holds/, name);
    refusal(
      () =>
        resumeGovernance(
          STORED,
          NO_FLAGS,
          at({ policyFrom: "launch", recordedText: () => undefined }),
        ),
      "policy_changed",
      /no longer kept/,
    );
    if (now.state === "unreadable") {
      refusal(
        () => resumeGovernance(STORED, NO_FLAGS, at({ policyFrom: "current" })),
        "policy_unverified",
      );
      continue;
    }
    const current = resumeGovernance(STORED, NO_FLAGS, at({ policyFrom: "current" }));
    assert.deepEqual(
      current.governance.policies.map((p) => [p.sha256, p.copy]),
      now.state === "changed" ? [[sha256Hex(EDITED), null]] : [],
      name,
    );
  }
  // Nothing drifted: --policy-from changes nothing.
  const same = resumeGovernance(STORED, NO_FLAGS, facts({ policyFrom: "current" }));
  assert.deepEqual(same.governance, STORED);
});

Deno.test("launchGovernance() takes the flags and fills the defaults; withCopies() names each kept text", () => {
  const plan = launchGovernance({
    ...NO_FLAGS,
    denies: ["net:*", "net:*"],
    policies: [{ path: "/p/strict.jsonc", text: STRICT }],
  }, { mode: "workspace-write", terminal: true });
  assert.deepEqual(plan.governance, {
    version: 1,
    mode: "workspace-write",
    human: "interactive",
    shield: false,
    shellPolicy: "allowlist_auto_else_ask",
    denies: ["net:*"],
    policies: [{ path: "/p/strict.jsonc", sha256: sha256Hex(STRICT), copy: null }],
    toolchains: [],
    hosts: [],
    model: MODEL,
  });
  assert.equal(
    launchGovernance({ ...NO_FLAGS, human: "yes" }, { mode: "plan", terminal: false })
      .governance.shield,
    true,
  );
  const kept: string[] = [];
  const copied: GovernancePlan = withCopies(plan, (p) => {
    kept.push(p.path);
    return "obj_0000000000ff";
  });
  assert.deepEqual(kept, ["/p/strict.jsonc"]);
  assert.equal(copied.governance.policies[0]?.copy, "obj_0000000000ff");
});

Deno.test("storedGovernance(): none in an older record; a record libos cannot read is governance_unreadable", () => {
  assert.equal(storedGovernance({ mode: "read-only" }, "pid_000000000001"), undefined);
  assert.equal(storedGovernance(null, "pid_000000000001"), undefined);
  assert.deepEqual(storedGovernance({ governance: STORED }, "pid_000000000001"), STORED);
  refusal(
    () => storedGovernance({ governance: { ...STORED, mode: "root" } }, "pid_000000000001"),
    "governance_unreadable",
    /start a new run/,
  );
  const relative: PolicySource = { path: "p.jsonc", sha256: sha256Hex(STRICT), copy: null };
  refusal(
    () => storedGovernance({ governance: { ...STORED, policies: [relative] } }, "pid_000000000001"),
    "governance_unreadable",
  );
});

Deno.test("checkRecordable() refuses a governance too large for its audit record, before anything is written", () => {
  const denies = Array.from({ length: 30 }, (_, i) => `fs.write:${"d".repeat(500)}${i}/**`);
  const plan = launchGovernance({ ...NO_FLAGS, denies }, {
    mode: "workspace-write",
    terminal: false,
  });
  assert.throws(() => checkRecordable(plan), UsageError);
  checkRecordable(launchGovernance(NO_FLAGS, { mode: "workspace-write", terminal: false }));
});

Deno.test("resumeGovernance(): another --allow-host is a widening refused without --widen; the recorded host named again is none", () => {
  refusal(
    () => resumeGovernance(STORED, { ...NO_FLAGS, hosts: ["evil.example"] }, facts()),
    "governance_widened",
    /host evil\.example: the run may connect to it/,
    /--widen/,
  );
  const same = resumeGovernance(STORED, { ...NO_FLAGS, hosts: ["api.example.com:443"] }, facts());
  assert.deepEqual([same.governance.hosts, same.widened], [["api.example.com:443"], []]);
  const widened = resumeGovernance(
    STORED,
    { ...NO_FLAGS, hosts: ["evil.example"] },
    facts({ widen: true }),
  );
  assert.deepEqual(widened.governance.hosts, ["api.example.com:443", "evil.example"]);
  assert.deepEqual(widened.widened, [
    "host evil.example: the run may connect to it (--allow-host)",
  ]);
});

Deno.test("storedGovernance(): a launch record written before hosts were recorded reads as no hosts", () => {
  const { hosts: _hosts, ...older } = STORED;
  const read = storedGovernance({ governance: older as unknown as JsonValue }, "pid_000000000001");
  assert.deepEqual(read?.hosts, []);
});
