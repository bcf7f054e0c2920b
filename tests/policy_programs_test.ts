/**
 * Programs that run programs, as they run for users (issue 21 §1): every row of every family
 * table and the controls beside them, decided by `deno task libos policy check --batch` through
 * the real bootstrap — the same decisions as in process — and a sample end to end: `libos agent`
 * with one allow rule each for git and tar (the "one allow rule for git"), whose scripted
 * model tries the embedded commands; a marker file proves whether each ran.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parsePolicy, PolicyRules } from "../runtime/policy/policy_rules.ts";
import { decideShell } from "../runtime/policy/shell_policy.ts";
import { CODE_ROWS, CONTROLS } from "../runtime/policy/shell_programs.ts";
import { ShellParser } from "../runtime/policy/shell_script.ts";
import { sandbox, task } from "./_cli_sandbox.ts";
import { call, final } from "./agent_fixture.ts";
import { wallTestMode } from "./shell_fixture.ts";

const mode = wallTestMode();

Deno.test("libos policy check through the launcher decides every family row and control as decideShell() does: one allow rule per program never lets a row through, the controls run, a malformed argv[0] is refused", async () => {
  using s = sandbox();
  const rows = Object.values(CODE_ROWS).flat();
  const argvs = [...rows.map((r) => r.example), ...Object.values(CONTROLS).flat()];
  // `true`: what the strace control runs.
  const programs = [...new Set([...argvs.map((a) => a[0]!), "true"])];
  const policy = {
    version: 1,
    rules: programs.map((p) => ({ effect: "allow", shell: [p] })),
  };
  const policyFile = join(s.workspace, "..", "allow-programs.jsonc");
  Deno.writeTextFileSync(policyFile, JSON.stringify(policy));
  const batch = join(s.workspace, "..", "rows.jsonl");
  Deno.writeTextFileSync(batch, argvs.map((a) => JSON.stringify(a)).join("\n") + "\n");
  const run = await task(
    s.workspace,
    s.state,
    "libos",
    "policy",
    "check",
    "--no-user-config",
    "--policy",
    policyFile,
    "--wall",
    "off",
    "--json",
    "--batch",
    batch,
  );
  assert.equal(run.status, 0, run.stderr);
  const printed = run.stdout.trim().split("\n").map((l) =>
    JSON.parse(l) as { line: number; decision: string; reason: string }
  );
  assert.equal(printed.length, argvs.length);
  const scripts = new ShellParser();
  await scripts.load();
  const rules = new PolicyRules(parsePolicy(JSON.stringify(policy), policyFile));
  const failures: string[] = [];
  for (const [k, argv] of argvs.entries()) {
    const got = printed[k]!;
    const want = decideShell({
      argv,
      level: "allowlist_auto_else_ask",
      mode: "workspace-write",
      wall: false,
      denies: [],
      rules,
      scripts,
    });
    if (got.decision !== want.decision || got.reason !== want.reason) {
      failures.push(
        `${JSON.stringify(argv)}: launcher ${got.decision}, in process ${want.decision}`,
      );
    }
    const control = k >= rows.length;
    if (control !== (got.decision === "allow")) {
      failures.push(`${JSON.stringify(argv)}: ${got.decision} (${got.reason})`);
    }
  }
  assert.deepEqual(failures, [], failures.join("\n"));
  // A shell line passed as argv[0] is refused as malformed, before anything is decided.
  for (const program of ["ls -la", "FOO=1", "*.sh", "'rm'"]) {
    const refused = await task(
      s.workspace,
      s.state,
      "libos",
      "policy",
      "check",
      "--json",
      "--",
      program,
    );
    assert.equal(refused.status, 1, refused.stdout + refused.stderr);
    const error =
      (JSON.parse(refused.stdout) as { error: { code: string; message: string } }).error;
    assert.equal(error.code, "validation_failed");
    assert.match(error.message, /argv\[0\] must be a program, not shell syntax/);
  }
});

/** A git repository with one commit and an archive, the workspace of the end-to-end run. */
function repository(ws: string): void {
  const git = (...args: string[]) => {
    const out = new Deno.Command("git", {
      args: ["-c", "user.name=t", "-c", "user.email=t@t", ...args],
      cwd: ws,
      stdout: "null",
      stderr: "piped",
    }).outputSync();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
  };
  Deno.writeTextFileSync(join(ws, "notes.txt"), "TODO: nothing\n");
  git("init", "-q");
  git("add", "notes.txt");
  git("commit", "-qm", "init");
  const tar = new Deno.Command("tar", { args: ["-cf", "a.tar", "notes.txt"], cwd: ws })
    .outputSync();
  assert.ok(tar.success);
}

/** The attacks: each would create `PWNED-N` in the working directory if its command ran. */
const ATTACKS: readonly (readonly string[])[] = [
  ["git", "grep", "--open-files-in-pager=sh -c 'touch PWNED-1'", "TODO"],
  ["git", "ls-remote", "--upload-pack=touch PWNED-2;", "."],
  ["git", "-c", "alias.st=!touch PWNED-3", "st"],
  [
    "tar",
    "-cf",
    "/dev/null",
    "notes.txt",
    "--checkpoint=1",
    "--checkpoint-action=exec=touch PWNED-4",
  ],
  ["tar", "-xf", "a.tar", "--to-command=sh -c 'touch PWNED-5'"],
  ["tar", "-xf", "a.tar", "-I", "sh -c 'touch PWNED-6'"],
];

function markers(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith("PWNED")).sort();
}

Deno.test({
  name:
    "Attack through the launcher: with one allow rule each for git and tar, git grep --open-files-in-pager, ls-remote --upload-pack, an alias, tar --checkpoint-action, --to-command and -I do not run their commands; git status and tar -cf do",
  ignore: mode.ignore,
  fn: async () => {
    // Each attack is live against the programs themselves.
    const live = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-live-" }));
    try {
      repository(live);
      for (const argv of ATTACKS) {
        new Deno.Command(argv[0]!, {
          args: argv.slice(1),
          cwd: live,
          stdout: "null",
          stderr: "null",
        })
          .outputSync();
      }
      assert.deepEqual(markers(live), ATTACKS.map((_, k) => `PWNED-${k + 1}`), "attacks are live");
    } finally {
      Deno.removeSync(live, { recursive: true });
    }
    using s = sandbox();
    repository(s.workspace);
    const policy = join(s.workspace, "..", "policy.jsonc");
    Deno.writeTextFileSync(
      policy,
      JSON.stringify({
        version: 1,
        rules: [{ effect: "allow", shell: ["git"] }, { effect: "allow", shell: ["tar"] }],
      }),
    );
    const script = join(s.workspace, "..", "script.jsonl");
    const shell = (argv: readonly string[]) => call("run_shell_command", { argv });
    Deno.writeTextFileSync(
      script,
      [
        ...ATTACKS.map(shell),
        shell(["git", "status", "--short"]),
        shell(["tar", "-cf", "control.tar", "notes.txt"]),
        final("done"),
      ].join("\n") + "\n",
    );
    const run = await task(
      s.workspace,
      s.state,
      "libos",
      "agent",
      "--goal",
      "look around",
      "--model",
      `replay:${script}`,
      "--human",
      "none",
      "--policy",
      policy,
      "--json",
    );
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.deepEqual(markers(s.workspace), [], "no embedded command ran");
    assert.ok(Deno.statSync(join(s.workspace, "control.tar")).isFile, "the allowed tar ran");
    const { pid } = JSON.parse(run.stdout) as { pid: string };
    const audit = await task(
      s.workspace,
      s.state,
      "libos",
      "audit",
      "query",
      "--json",
      "--pid",
      pid,
      "--limit",
      "10000",
    );
    const records = (JSON.parse(audit.stdout) as {
      records: { action: string; decision: string; resource: string }[];
    }).records.filter((r) => r.action === "shell.run");
    const decided = (argv: readonly string[]) =>
      records.filter((r) => r.resource === `shell:${argv.join(" ")}`).map((r) => r.decision);
    for (const argv of ATTACKS) {
      assert.deepEqual(decided(argv), ["ask"], `${argv.join(" ")}: asked, refused (none)`);
    }
    assert.deepEqual(decided(["git", "status", "--short"]), ["allow"]);
  },
});
