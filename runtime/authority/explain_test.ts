import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { explainLine, explainRecord, recordedExplanation, shellExplanation } from "./explain.ts";
import { parsePolicy, PolicyRules } from "../policy/policy_rules.ts";

const POLICY = `{
  // a comment line
  "version": 1,
  "rules": [
    { "effect": "allow", "shell": ["git", "status"] },

    {
      "effect": "ask",
      "path": ".github/**"
    }
  ]
}
`;

Deno.test("parsePolicy() keeps each rule's file and the line its brace is on", () => {
  const rules = new PolicyRules(parsePolicy(POLICY, "/home/u/.config/libos/policy.jsonc"));
  assertEquals(rules.source("rule:/home/u/.config/libos/policy.jsonc#1"), {
    source: "/home/u/.config/libos/policy.jsonc",
    line: 5,
    text: '{"effect":"allow","shell":["git","status"]}',
  });
  assertEquals(rules.source("rule:/home/u/.config/libos/policy.jsonc#2")?.line, 7);
  assertEquals(rules.source("rule:/other.jsonc#1"), undefined);
  assertEquals(rules.source("cap:cap_000000000001"), undefined);
});

const TABLE: {
  name: string;
  authority: string;
  detail?: Record<string, never> | { explain: unknown };
  line: string;
  layer: string;
}[] = [
  { name: "hardline", authority: "hardline:rm-root", line: "hardline rm-root", layer: "hardline" },
  {
    name: "run deny with its text",
    authority: "run:2",
    detail: { explain: { deny: "fs.write:secrets/**" } },
    line: "run deny #2 fs.write:secrets/**",
    layer: "run",
  },
  { name: "run deny, old record", authority: "run:1", line: "run deny #1", layer: "run" },
  { name: "mode", authority: "mode:read-only", line: "mode read-only", layer: "mode" },
  {
    name: "protected",
    authority: "protected:**/.git/**",
    line: "protected path **/.git/**",
    layer: "protected",
  },
  {
    name: "rule with file:line and text",
    authority: "rule:/c/policy.jsonc#2",
    detail: {
      explain: { rule: { source: "/c/policy.jsonc", line: 7, text: '{"effect":"ask"}' } },
    },
    line: 'rule /c/policy.jsonc:7 {"effect":"ask"}',
    layer: "rule",
  },
  {
    name: "rule, old record (derived from the authority)",
    authority: "rule:/c/po#licy.jsonc#3",
    line: "rule /c/po#licy.jsonc #3",
    layer: "rule",
  },
  {
    name: "hostile rule text and file name are escaped",
    authority: "rule:/c/\x1b[2Jp.jsonc#1",
    detail: {
      explain: { rule: { source: "/c/\x1b[2Jp.jsonc", line: 1, text: '{"note":"\u202e\x07"}' } },
    },
    line: 'rule /c/\\x1B[2Jp.jsonc:1 {"note":"\\u{202E}\\x07"}',
    layer: "rule",
  },
  {
    name: "capability",
    authority: "cap:cap_00000000000a",
    line: "capability cap_00000000000a",
    layer: "capability",
  },
  {
    name: "default",
    authority: "default",
    line: "default deny (no rule or capability allows it)",
    layer: "default",
  },
  {
    name: "read-only",
    authority: "read-only:git log",
    line: "read-only command git log",
    layer: "read-only",
  },
  {
    name: "shell-policy level",
    authority: "shell-policy:allowlist_auto_else_ask",
    line: "shell policy allowlist_auto_else_ask",
    layer: "shell-policy",
  },
  {
    name: "shell-policy kind",
    authority: "inline_code: python -c runs code",
    line: "shell policy: inline_code python -c runs code",
    layer: "shell-policy",
  },
  {
    name: "a human's answer",
    authority: "human:terminal",
    line: "a human's answer (human:terminal)",
    layer: "human",
  },
  {
    name: "a runtime rule",
    authority: "containment",
    line: "runtime containment",
    layer: "runtime",
  },
  {
    name: "a malformed recorded explanation is ignored",
    authority: "rule:/c/p.jsonc#1",
    detail: { explain: { rule: "not an object" } },
    line: "rule /c/p.jsonc #1",
    layer: "rule",
  },
];

for (const c of TABLE) {
  Deno.test(`explainLine(): ${c.name}`, () => {
    const record = {
      authority: c.authority,
      detail: (c.detail ?? null) as { explain: never } | null,
    };
    assertEquals(explainRecord(record).layer, c.layer);
    assertEquals(explainLine(record), c.line);
  });
}

Deno.test("explainLine(): a capability chain names who granted it and its parent", () => {
  const line = explainLine(explainRecord({ authority: "cap:cap_b" }, [
    {
      id: "cap_b",
      subject: "pid_child",
      issuer: "pid_parent",
      grantedBy: "pid_parent",
      at: 2,
      effect: "allow",
      resource: "fs:src",
      rights: ["write"],
      derivedFrom: "cap_a",
      revokedAt: null,
    },
  ]));
  assertEquals(line, "capability cap_b (granted by delegation by pid_parent, from cap_a)");
});

Deno.test("recordedExplanation() keeps a rule's and a run deny's text, bounded, and nothing else", () => {
  const long = "x".repeat(5000);
  const sources = {
    rule: (r: string) => r === "rule:f#1" ? { source: "f", line: 3, text: long } : undefined,
    denies: [{ source: "net:*" }],
  };
  const rule = recordedExplanation("rule:f#1", sources);
  assertEquals((rule?.explain.rule as { text: string }).text.length, 1001);
  assertEquals(recordedExplanation("run:1", sources), { explain: { deny: "net:*" } });
  assertEquals(recordedExplanation("run:9", sources), undefined);
  assertEquals(recordedExplanation("cap:cap_x", sources), undefined);
  assertEquals(recordedExplanation("mode:plan", sources), undefined);
});

Deno.test("shellExplanation() names the nested command that decided, and nothing when it is the argv itself", () => {
  const decided = {
    decision: "ask",
    reason: "shell-policy:allowlist_auto_else_ask",
    commands: [
      { argv: ["sh", "-c", "ls && make"], decision: "allow", reason: "wrapper: sh" },
      { argv: ["ls"], decision: "allow", reason: "read-only:ls" },
      { argv: ["make"], decision: "ask", reason: "shell-policy:allowlist_auto_else_ask" },
    ],
  };
  assertEquals(shellExplanation(["sh", "-c", "ls && make"], decided, undefined), {
    explain: { command: "make" },
  });
  assertEquals(
    shellExplanation(["make"], { ...decided, commands: [decided.commands[2]!] }, undefined),
    undefined,
  );
  assertEquals(
    shellExplanation(["sh", "-c", "ls && make"], decided, { explain: { deny: "shell:make" } }),
    { explain: { deny: "shell:make", command: "make" } },
  );
  assertEquals(
    explainLine({
      authority: "shell-policy:allowlist_auto_else_ask",
      detail: { explain: { command: "make \x1b[2J" } },
    }),
    "shell policy allowlist_auto_else_ask (in make \\x1B[2J)",
  );
});
