/**
 * Fewer needless asks (issue 23), as users run it: `libos agent` through the real launcher
 * (`deno task libos`, the bootstrap's permissions) under the default shell policy level
 * (`allowlist_auto_else_ask`), inside the OS wall. A model's `ls` and `git status` run without
 * anyone being asked — confined: the workspace read-only, secret-bearing files masked — and
 * their output reaches the model; `rm x` still asks (and, with no human, is refused).
 *
 * The OS wall is required here: these run wherever bwrap works, and in CI (`LIBOS_REQUIRE_WALL=1`)
 * always.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type Sandbox, sandbox, taskWith } from "./_cli_sandbox.ts";
import { call, chatEndpoint, final, onTerminal, type SentMessage } from "./agent_fixture.ts";
import { hostGit, wallTestMode } from "./shell_fixture.ts";

const wallMode = wallTestMode();
const SECRET = "SECRET-agent-readonly-81c4";

/** A workspace with a README, a file to delete, a secret `.env` and a real repository. */
function workspace(ws: string): void {
  Deno.writeTextFileSync(join(ws, "README.md"), "# Read-only demo\n");
  Deno.writeTextFileSync(join(ws, "x"), "keep me\n");
  hostGit(ws, "init", "-q", "-b", "main", ".");
  hostGit(ws, "add", "-A");
  hostGit(ws, "commit", "-qm", "init");
  Deno.writeTextFileSync(join(ws, ".env"), `TOKEN=${SECRET}\n`);
}

/** The tool result each request carried last (request n+1 answers call n). */
function toolResults(requests: readonly (readonly SentMessage[])[]): string[] {
  return requests.slice(1).map((messages) =>
    messages.filter((m) => m.role === "tool").at(-1)?.content ?? ""
  );
}

/** Runs `libos agent` through the launcher against a model that makes `calls`, one per turn. */
async function agent(
  s: Sandbox,
  calls: readonly (readonly string[])[],
  flags: readonly string[],
) {
  const requests: SentMessage[][] = [];
  await using endpoint = chatEndpoint((body) => {
    requests.push([...body.messages]);
    // One call per turn: the n-th request gets the n-th call.
    const next = calls[requests.length - 1];
    return next === undefined
      ? { content: "Looked around." }
      : { calls: [{ name: "run_shell_command", arguments: { argv: next } }] };
  });
  const run = await taskWith(
    {
      OPENAI_API_KEY: "sk-local-0123456789",
      OPENAI_MODEL: "local-model",
      OPENAI_BASE_URL: endpoint.baseURL,
    },
    s.workspace,
    s.state,
    "libos",
    "agent",
    "--goal",
    "Look around the repository",
    "--mode",
    "workspace-write",
    ...flags,
  );
  return { ...run, results: toolResults(requests) };
}

/** The shell.run audit records of the sandbox's runs, oldest first. */
async function shellAudit(s: Sandbox) {
  const out = await s.json("audit", "query", "--action", "shell.run");
  assert.equal(out.status, 0, out.stderr);
  return (out.doc.records ?? out.doc) as {
    decision: string;
    authority: string;
    resource: string;
    detail?: Record<string, unknown> | null;
  }[];
}

Deno.test({
  name:
    "libos agent (the real launcher, --human none): the model's ls and git status run without a request and their output reaches it, confined (.env reads empty); rm x still asks and is refused",
  ignore: wallMode.ignore,
  fn: async () => {
    using s = sandbox();
    workspace(s.workspace);
    const run = await agent(s, [
      ["ls", "-a"],
      ["git", "status", "--short"],
      ["cat", ".env"],
      ["rm", "x"],
    ], ["--human", "none"]);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    const [ls, status, cat, rm] = run.results;
    assert.match(ls ?? "", /README\.md/, "ls's output reached the model");
    assert.match(status ?? "", /\?\? \.env/, "git status's output reached the model");
    assert.ok(!(cat ?? "").includes(SECRET), "the masked .env read empty");
    assert.doesNotMatch(rm ?? "", /"exitCode"\s*:\s*0/, "rm did not run");
    assert.match(rm ?? "", /approv|human/i, "rm needed a human");
    assert.equal(Deno.readTextFileSync(join(s.workspace, "x")), "keep me\n", "x is still there");
    assert.ok(!run.stdout.includes(SECRET) && !run.stderr.includes(SECRET));
    const audit = await shellAudit(s);
    const byCommand = (prefix: string) => audit.filter((r) => r.resource.startsWith(prefix));
    for (
      const [prefix, label] of [
        ["shell:ls -a", "read-only:ls"],
        ["shell:git status", "read-only:git status"],
        ["shell:cat .env", "read-only:cat"],
      ]
    ) {
      const records = byCommand(prefix!);
      assert.deepEqual(records.map((r) => [r.decision, r.authority, r.detail?.confined]), [
        ["allow", label, true],
      ], prefix);
    }
    assert.deepEqual(byCommand("shell:rm x").map((r) => r.decision), ["ask"]);
    // Nobody was asked about anything but rm.
    const human = await s.json("human", "list", "--all");
    const asked = JSON.stringify(human.doc);
    assert.ok(!asked.includes('"ls"') && !asked.includes("git status"), asked);
  },
});

Deno.test({
  name:
    "libos agent on a real terminal (real bootstrap, scripted model): ls and git status run with no approval card and their output is shown; the only card is rm x's, and declining it leaves x",
  ignore: wallMode.ignore,
  fn: async () => {
    using s = sandbox();
    workspace(s.workspace);
    const script = join(s.workspace, "..", "script.jsonl");
    Deno.writeTextFileSync(
      script,
      [
        call("run_shell_command", { argv: ["ls"] }),
        call("run_shell_command", { argv: ["git", "status", "--short"] }),
        call("run_shell_command", { argv: ["rm", "x"] }),
        final("Looked around."),
      ].join("\n") + "\n",
    );
    const launcher = await onTerminal(s, script, { more: ["--mode", "workspace-write"] });
    let screen = launcher.screen;
    try {
      const before = screen.replaceAll("\r\n", "\n");
      // Before the first card: both commands ran and their output is on the screen.
      const card = before.indexOf("⚑ Approve?");
      assert.ok(card > 0, before);
      const ran = before.slice(0, card);
      assert.match(ran, /run_shell_command \$ ls\n/);
      assert.match(ran, /README\.md/);
      assert.match(ran, /run_shell_command \$ git status --short\n/);
      assert.match(ran, /\?\? \.env/);
      assert.match(before.slice(card), /\$ rm x\n/, "the card is rm's");
      const { rest, code } = await launcher.type("n\n");
      screen += rest;
      assert.equal(code, 0, screen);
    } finally {
      await launcher.close();
    }
    assert.equal(screen.split("⚑ Approve?").length - 1, 1, "one card: rm's");
    assert.equal(Deno.readTextFileSync(join(s.workspace, "x")), "keep me\n", "x is still there");
  },
});

Deno.test("libos policy check --wall on shows a read-only command as allowed, confined; --wall off, it asks", async () => {
  using s = sandbox();
  const on = await s.cli(
    "policy",
    "check",
    "--no-user-config",
    "--wall",
    "on",
    "--",
    "git",
    "status",
  );
  assert.equal(on.status, 0, on.stderr);
  assert.match(
    on.stdout,
    /^allow {2}read-only:git status {2}\(confined: workspace read-only, secret-bearing files masked\)\n/,
  );
  // --json before the argv (after "--" it would be an argument of the command).
  const check = async (...args: string[]) => {
    const run = await s.cli("policy", "check", "--no-user-config", "--json", ...args);
    assert.equal(run.status, 0, run.stderr);
    return { doc: JSON.parse(run.stdout) };
  };
  const json = await check("--wall", "on", "--", "ls");
  assert.deepEqual([json.doc.decision, json.doc.reason, json.doc.confined], [
    "allow",
    "read-only:ls",
    true,
  ]);
  const off = await check("--", "ls");
  assert.deepEqual([off.doc.decision, off.doc.reason, off.doc.confined], [
    "ask",
    "shell-policy:allowlist_auto_else_ask",
    false,
  ]);
  const sorted = await check(
    "--wall",
    "on",
    "--",
    "sort",
    "-o",
    "out.txt",
    "in.txt",
  );
  assert.equal(sorted.doc.decision, "ask");
});
