/**
 * `libos policy check`: single argv, batch from a file and from stdin, exit codes, caps.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli } from "../cli/mod.ts";
import { sandbox } from "./_cli_sandbox.ts";

async function cli(
  cwd: string,
  args: string[],
  stdin?: string,
): Promise<{ status: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const status = await runCli(args, {
    stdout: (t) => stdout += t,
    stderr: (t) => stderr += t,
    env: { get: () => undefined },
    cwd,
    ...(stdin === undefined ? {} : { readStdin: () => Promise.resolve(stdin) }),
  });
  return { status, stdout, stderr };
}

Deno.test("libos policy check prints the documented decision for an argv, nested commands included", async () => {
  using s = sandbox();
  const out = await cli(s.workspace, [
    "policy",
    "check",
    "--json",
    "--no-user-config",
    "--shell-policy",
    "blocklist_ask_else_auto",
    "--",
    "sudo",
    "env",
    "-i",
    "bash",
    "-c",
    "ls -la && rm -rf /",
  ]);
  assert.equal(out.status, 0, out.stderr);
  const doc = JSON.parse(out.stdout);
  assert.deepEqual(Object.keys(doc).sort(), [
    "commands",
    "confined",
    "decision",
    "high_risk",
    "matched_rule",
    "reason",
  ]);
  assert.equal(doc.decision, "deny");
  assert.equal(doc.reason, "hardline:rm-rf-root");
  assert.equal(doc.matched_rule, null);
  assert.equal(doc.high_risk, false);
  assert.equal(doc.confined, false);
  // Every command, wrappers included (a rule on a wrapper applies to it).
  assert.deepEqual(doc.commands.map((c: { argv: string[] }) => c.argv[0]), [
    "sudo",
    "env",
    "bash",
    "ls",
    "rm",
  ]);
  assert.deepEqual(doc.commands.slice(3), [
    { argv: ["ls", "-la"], decision: "allow", reason: "shell-policy:blocklist_ask_else_auto" },
    { argv: ["rm", "-rf", "/"], decision: "deny", reason: "hardline:rm-rf-root" },
  ]);
  // A rule from --policy is named in matched_rule.
  Deno.writeTextFileSync(
    join(s.workspace, "p.jsonc"),
    `{"version": 1, "rules": [{ "effect": "deny", "shell": ["curl"] }]}`,
  );
  const ruled = JSON.parse(
    (await cli(s.workspace, [
      "policy",
      "check",
      "--json",
      "--no-user-config",
      "--policy",
      "p.jsonc",
      "--shell-policy",
      "always_allow",
      "--",
      "timeout",
      "5",
      "curl",
      "https://example.org",
    ])).stdout,
  );
  assert.equal(ruled.decision, "deny");
  assert.equal(ruled.matched_rule, JSON.stringify({ effect: "deny", shell: ["curl"] }));
  const plain = await cli(s.workspace, [
    "policy",
    "check",
    "--no-user-config",
    "--",
    "git",
    "status",
  ]);
  assert.match(plain.stdout, /^ask {2}shell-policy:allowlist_auto_else_ask/);
});

Deno.test("libos policy check --batch decides one JSON argv per line, reports bad lines, and exits 1 if any was refused", async () => {
  using s = sandbox();
  const lines = [
    JSON.stringify(["git", "status"]),
    "not json",
    "",
    JSON.stringify(["bash", "-c", "x".repeat(9000)]),
    JSON.stringify(["ok", 7]),
    JSON.stringify(["rm", "-rf", "~"]),
  ];
  const args = [
    "policy",
    "check",
    "--json",
    "--no-user-config",
    "--shell-policy",
    "blocklist_ask_else_auto",
    "--batch",
  ];
  for (
    const [source, run] of [
      ["stdin", () => cli(s.workspace, [...args, "-"], lines.join("\n"))],
      ["file", () => {
        Deno.writeTextFileSync(join(s.workspace, "batch.jsonl"), lines.join("\r\n"));
        return cli(s.workspace, [...args, "batch.jsonl"]);
      }],
    ] as const
  ) {
    const out = await run();
    assert.equal(out.status, 1, source);
    const docs = out.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(docs.map((d) => [d.line, d.decision ?? d.error.code]), [
      [1, "allow"],
      [2, "validation_failed"],
      [4, "ask"],
      [5, "validation_failed"],
      [6, "deny"],
    ], source);
    assert.match(
      docs[2].reason,
      /prescan/,
      "an over-long script is a decision (ask), not an error",
    );
  }
});

Deno.test("libos policy check refuses input past the hard cap, and bad usage exits 2", async () => {
  using s = sandbox();
  const huge = await cli(s.workspace, [
    "policy",
    "check",
    "--json",
    "--no-user-config",
    "--",
    "echo",
    "x".repeat(1024 * 1024 + 10),
  ]);
  assert.equal(huge.status, 1);
  assert.equal(JSON.parse(huge.stdout).error.code, "validation_failed");
  for (
    const args of [
      ["policy", "check"],
      ["policy", "check", "--shell-policy", "yolo", "--", "ls"],
      ["policy", "check", "--wall", "maybe", "--", "ls"],
      ["policy", "check", "--batch", "-", "--", "ls"],
      ["policy", "check", "--mode", "nope", "--", "ls"],
    ]
  ) {
    const out = await cli(s.workspace, args);
    assert.notEqual(out.status, 0, args.join(" "));
  }
  assert.equal((await cli(s.workspace, ["policy", "check", "--", "ls"])).status, 0);
  assert.equal((await cli(s.workspace, ["policy", "check"])).status, 2);
});

Deno.test("libos policy check ignores the workspace's own policy unless trusted, and says so", async () => {
  using s = sandbox();
  Deno.mkdirSync(join(s.workspace, ".libos"));
  Deno.writeTextFileSync(
    join(s.workspace, ".libos", "policy.jsonc"),
    `{"version": 1, "rules": [{ "effect": "allow", "shell": ["curl"] }]}`,
  );
  const base = ["policy", "check", "--json", "--no-user-config"];
  const untrusted = await cli(s.workspace, [...base, "--", "curl", "x"]);
  assert.equal(JSON.parse(untrusted.stdout).decision, "ask");
  assert.match(untrusted.stderr, /ignoring the workspace policy/);
  const trusted = await cli(s.workspace, [...base, "--trust-workspace-policy", "--", "curl", "x"]);
  assert.equal(JSON.parse(trusted.stdout).decision, "allow");
});
