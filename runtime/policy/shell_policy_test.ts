import assert from "node:assert/strict";
import { ValidationError } from "../base/errors.ts";
import { PolicyRules } from "./policy_rules.ts";
import { decideShell, SHELL_HARD_CAP, utf8Length } from "./shell_policy.ts";

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
    wall: true,
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
