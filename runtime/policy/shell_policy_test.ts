import assert from "node:assert/strict";
import { ValidationError } from "../base/errors.ts";
import { parseRunDeny } from "../authority/decide.ts";
import { parsePolicy, PolicyRules } from "./policy_rules.ts";
import {
  decideShell,
  SHELL_HARD_CAP,
  type ShellDecisionInput,
  utf8Length,
} from "./shell_policy.ts";
import { ShellParser } from "./shell_script.ts";

Deno.test("utf8Length() counts UTF-8 bytes as TextEncoder does, lone surrogates included", () => {
  const encoder = new TextEncoder();
  for (
    const text of [
      "",
      "ascii",
      "é",
      "€uro",
      "😀",
      "a😀b",
      "\ud800",
      "x\udc00y",
      "\ud800\ud800",
      "日本語テキスト",
      "\u0000\u007f\u0080\u07ff\u0800\uffff",
    ]
  ) {
    assert.equal(utf8Length(text), encoder.encode(text).length, JSON.stringify(text));
  }
});

Deno.test("decideShell() refuses an argv one byte over the hard cap and decides one at it, counting each size once (attack: 50,000 tokens past the estimate re-encoded the argv per token)", () => {
  const input = {
    level: "allowlist_auto_else_ask" as const,
    mode: "workspace-write" as const,
    // Outside the wall: `echo` would otherwise run as read-only; the size is what is decided.
    wall: false,
    denies: [],
    rules: new PolicyRules([]),
    scripts: null,
  };
  // "echo" + NUL + a token of the rest: exactly the cap, in multi-byte characters.
  const room = SHELL_HARD_CAP - 5;
  const at = ["echo", "é".repeat(room / 2) + "a".repeat(room % 2)];
  assert.equal(decideShell({ ...input, argv: at }).decision, "ask");
  const over = ["echo", at[1]! + "a"];
  assert.throws(() => decideShell({ ...input, argv: over }), ValidationError);
  // Many short tokens whose 3-bytes-per-character estimate passed the cap long ago: decided.
  const many = ["echo", ...Array.from({ length: 50_000 }, () => "ab")];
  assert.equal(decideShell({ ...input, argv: many }).decision, "ask");
});

/** A decision under the default level inside the wall, with `rules` (JSONC) and more. */
function readOnlyInput(argv: readonly string[], more: Partial<ShellDecisionInput> = {}) {
  return {
    argv,
    level: "allowlist_auto_else_ask" as const,
    mode: "workspace-write" as const,
    wall: true,
    denies: [],
    rules: new PolicyRules([]),
    scripts: null,
    ...more,
  };
}

function rulesOf(text: string): PolicyRules {
  return new PolicyRules(parsePolicy(text, "test.jsonc"));
}

Deno.test("decideShell() inside the wall allows a read-only command without asking, confined, as read-only:<label>", async () => {
  const scripts = new ShellParser();
  await scripts.load();
  const cases: [readonly string[], string][] = [
    [["ls"], "read-only:ls"],
    [["cat", "README.md"], "read-only:cat"],
    [["git", "status"], "read-only:git status"],
    [["/usr/bin/ls", "-la"], "read-only:ls"],
    [["timeout", "5", "grep", "-rn", "x", "."], "read-only:grep"],
    [["sh", "-c", "ls | wc -l"], "read-only:ls"],
    [["sh", "-c", "cd src && git log --oneline | head -5"], "read-only:cd"],
  ];
  for (const [argv, reason] of cases) {
    const d = decideShell(readOnlyInput(argv, { scripts }));
    assert.equal(d.decision, "allow", argv.join(" "));
    assert.equal(d.reason, reason, argv.join(" "));
    assert.equal(d.confined, true, argv.join(" "));
    assert.equal(d.highRisk, false);
  }
});

Deno.test("decideShell() attack: what only looks read-only still asks inside the wall (and nothing is confined)", async () => {
  const scripts = new ShellParser();
  await scripts.load();
  const cases: [readonly string[], RegExp][] = [
    [["find", ".", "-delete"], /shell-policy:allowlist_auto_else_ask/],
    [["find", ".", "-exec", "rm", "{}", ";"], /ask|open_ended/],
    [["rg", "--pre", "sh", "x"], /inline_code/],
    [["git", "diff", "--output=x"], /inline_code: git "--output=x"/],
    [["git", "-c", "core.pager=x", "log"], /git_config/],
    [["git", "-C", "sub", "status"], /git_config/],
    [["git", "branch", "-D", "main"], /shell-policy:allowlist_auto_else_ask/],
    [["./ls"], /workspace_code/],
    [["sort", "-o", "out.txt", "in.txt"], /shell-policy:allowlist_auto_else_ask/],
    [["uniq", "in.txt", "out.txt"], /shell-policy:allowlist_auto_else_ask/],
    [["xargs", "cat"], /shell-policy:allowlist_auto_else_ask/],
    [["env", "RIPGREP_CONFIG_PATH=./rc", "rg", "x"], /shell-policy:allowlist_auto_else_ask/],
    [["sh", "-c", "LC_ALL=C ls"], /shell-policy:allowlist_auto_else_ask/],
    [["sh", "-c", "ls; rm x"], /shell-policy:allowlist_auto_else_ask/],
    [["sh", "-c", "cat a > b"], /opaque|ask/],
    [["sudo", "ls"], /wrapper: sudo/],
  ];
  for (const [argv, reason] of cases) {
    const d = decideShell(readOnlyInput(argv, { scripts }));
    assert.equal(d.decision, "ask", argv.join(" "));
    assert.match(d.reason, reason, argv.join(" "));
    assert.equal(d.confined, false, argv.join(" "));
  }
});

Deno.test("decideShell() a read-only command outside the wall, under another level, or withheld, is not allowed as read-only", () => {
  // Without the wall nothing changes: it asks.
  const outside = decideShell(readOnlyInput(["ls"], { wall: false }));
  assert.deepEqual([outside.decision, outside.reason, outside.confined], [
    "ask",
    "shell-policy:allowlist_auto_else_ask",
    false,
  ]);
  // The other levels decide as before; nothing is confined.
  const blocklist = decideShell(readOnlyInput(["ls"], { level: "blocklist_ask_else_auto" }));
  assert.deepEqual([blocklist.decision, blocklist.confined], ["allow", false]);
  const all = decideShell(readOnlyInput(["ls"], { level: "always_allow" }));
  assert.deepEqual([all.decision, all.confined], ["allow", false]);
  const none = decideShell(readOnlyInput(["ls"], { level: "always_deny" }));
  assert.deepEqual([none.decision, none.confined], ["deny", false]);
  // Withheld (the shield could not be made): it asks, saying why.
  const withheld = decideShell(readOnlyInput(["ls"], { readOnlyWithheld: "the shield is gone" }));
  assert.equal(withheld.decision, "ask");
  assert.match(
    withheld.reason,
    /^shell-policy:allowlist_auto_else_ask \(read-only ls.*the shield is gone/,
  );
  assert.equal(withheld.confined, false);
});

Deno.test("decideShell() attack: a deny or ask from a rule, a run deny, a capability or the hardline floor stands over read-only", () => {
  const deny = decideShell(
    readOnlyInput(["ls"], {
      rules: rulesOf('{"version": 1, "rules": [{"effect": "deny", "shell": ["ls"]}]}'),
    }),
  );
  assert.equal(deny.decision, "deny");
  assert.match(deny.reason, /^rule:test\.jsonc#/);
  const ask = decideShell(
    readOnlyInput(["cat", ".env"], {
      rules: rulesOf('{"version": 1, "rules": [{"effect": "ask", "shell": ["cat"]}]}'),
    }),
  );
  assert.equal(ask.decision, "ask");
  assert.match(ask.reason, /^rule:/);
  const run = decideShell(readOnlyInput(["ls"], { denies: [parseRunDeny("shell:ls*")] }));
  assert.deepEqual([run.decision, run.reason], ["deny", "run:1"]);
  const cap = decideShell(
    readOnlyInput(["git", "status"], {
      capabilities: () => ({ effect: "deny", reason: "cap:c1", exact: false }),
    }),
  );
  assert.deepEqual([cap.decision, cap.reason], ["deny", "cap:c1"]);
  // An allow rule still allows as the rule (not confined: the operator vouched for it).
  const allowed = decideShell(
    readOnlyInput(["ls"], {
      rules: rulesOf('{"version": 1, "rules": [{"effect": "allow", "shell": ["ls"]}]}'),
    }),
  );
  assert.equal(allowed.decision, "allow");
  assert.match(allowed.reason, /^rule:/);
  assert.equal(allowed.confined, false);
});
