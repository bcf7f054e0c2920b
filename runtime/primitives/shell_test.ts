import assert from "node:assert/strict";
import { join } from "node:path";
import {
  CapabilityDeniedError,
  HumanDecisionError,
  HumanPendingError,
  NotFoundError,
  OutsideWorkspaceError,
  ValidationError,
} from "../base/errors.ts";
import { createRuntime } from "../runtime.ts";
import { hostFilesystem } from "../providers/filesystem.ts";
import { parsePolicy, PolicyRules } from "../policy/policy_rules.ts";
import {
  eventually,
  exists,
  failure,
  fakeProgram,
  hostGit,
  logLines,
  processesWith,
  script,
  shellFixture,
  wallTestMode,
} from "../../tests/shell_fixture.ts";
import type { ShellRunArgs } from "./shell.ts";

Deno.test("ShellPrimitive.run() runs an allowed argv and reports exit code, output and the resolved path", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  const r = await f.runtime.primitives.shell.run(f.pid, {
    argv: ["sh", "-c", "echo out; echo err >&2; exit 3"],
  });
  assert.equal(r.exitCode, 3);
  assert.equal(r.signal, null);
  assert.equal(r.stdout, "out\n");
  assert.equal(r.stderr, "err\n");
  assert.equal(r.executable, "/usr/bin/sh");
  assert.equal(r.cwd, ".");
  assert.equal(r.timedOut, false);
  const audit = f.runtime.audit.query({ action: "shell.run" });
  assert.equal(audit.at(-1)?.decision, "allow");
  const actions = f.runtime.ledger.list(f.pid);
  assert.equal(actions.length, 1);
  assert.equal(actions[0]?.status, "done");
});

Deno.test("ShellPrimitive.run() refuses malformed input with a typed error and runs nothing", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  const bad: [string, unknown][] = [
    ["no argv", {}],
    ["empty argv", { argv: [] }],
    ["argv not an array", { argv: "ls -la" }],
    ["a non-string token", { argv: ["ls", 3] }],
    ["a NUL byte", { argv: ["ls", "a\0b"] }],
    ["an empty program", { argv: [""] }],
    ["timeout zero", { argv: ["true"], timeoutMs: 0 }],
    ["timeout fractional", { argv: ["true"], timeoutMs: 1.5 }],
    ["timeout over the max", { argv: ["true"], timeoutMs: 10_000_000 }],
    ["output cap negative", { argv: ["true"], maxOutputBytes: -1 }],
    ["stdin not text", { argv: ["cat"], stdin: 42 }],
    ["stdin too big", { argv: ["cat"], stdin: "x".repeat(9 * 1024 * 1024) }],
    ["cwd not a path", { argv: ["true"], cwd: 7 }],
  ];
  for (const [name, args] of bad) {
    await assert.rejects(
      f.runtime.primitives.shell.run(f.pid, args as ShellRunArgs),
      ValidationError,
      name,
    );
  }
  assert.equal(f.runtime.ledger.list(f.pid).length, 0);
});

Deno.test("ShellPrimitive.run() attack: a hardline command is denied and audited, and never starts", async () => {
  await using f = await shellFixture({ level: "always_allow", fakePath: true });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[0]!, "rm", log);
  fakeProgram(f.bins[0]!, "sudo", log);
  for (const argv of [["rm", "-rf", "/"], ["sudo", "rm", "-rf", "/"]]) {
    const error = await failure(
      f.runtime.primitives.shell.run(f.pid, { argv }),
      CapabilityDeniedError,
    );
    assert.match(String(error), /hardline/);
  }
  assert.deepEqual(logLines(log), []);
  assert.equal(f.runtime.ledger.list(f.pid).length, 0);
  const denies = f.runtime.audit.query({ action: "shell.run" }).filter((r) =>
    r.decision === "deny"
  );
  assert.equal(denies.length, 2);
});

Deno.test("ShellPrimitive.run() asks under the allowlist level and, with no human, runs nothing", async () => {
  await using f = await shellFixture({ fakePath: true });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[0]!, "git", log);
  const error = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["git", "status"] }),
    HumanDecisionError,
  );
  assert.equal(error.code, "human_unavailable");
  assert.deepEqual(logLines(log), []);
  assert.equal(f.runtime.audit.query({ action: "shell.run" }).at(-1)?.decision, "ask");
});

Deno.test("ShellPrimitive.run() attack: a workspace file named like a program does not run in its place", async () => {
  await using f = await shellFixture({ level: "always_allow", fakePath: true });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[1]!, "git", log);
  // The agent plants ./git in the workspace (its cwd): a bare name never looks there.
  script(join(f.ws, "git"), `touch '${join(f.outside, "PLANTED_RAN")}'`);
  const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["git", "status"] });
  assert.equal(r.executable, join(f.bins[1]!, "git"));
  assert.equal(r.stdout, "ran git\n");
  assert.equal(logLines(log).length, 1);
  await assert.rejects(Deno.stat(join(f.outside, "PLANTED_RAN")), Deno.errors.NotFound);
});

Deno.test("createRuntime() refuses a search path that is relative or inside the workspace", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-shell-path-" }));
  try {
    for (const searchPath of [["bin"], [join(root, "bin")], ["/usr/bin", root]]) {
      await assert.rejects(
        createRuntime({ workspace: root, db: ":memory:", searchPath }),
        ValidationError,
      );
    }
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("ShellPrimitive.run() reports a missing program with where it looked", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  const error = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["no-such-program-libos"] }),
    NotFoundError,
  );
  assert.match(error.message, /\/usr\/bin/);
  await assert.rejects(
    f.runtime.primitives.shell.run(f.pid, { argv: ["./missing.sh"] }),
    NotFoundError,
  );
  assert.equal(f.runtime.ledger.list(f.pid).length, 0);
});

Deno.test("ShellPrimitive.run() attack: a working directory outside the workspace is refused, by .. or by symlink", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  Deno.symlinkSync(f.outside, join(f.ws, "link"));
  for (const cwd of ["..", "../outside", "/", "link", "link/x/..", "./link"]) {
    await assert.rejects(
      f.runtime.primitives.shell.run(f.pid, { argv: ["touch", "escaped"], cwd }),
      OutsideWorkspaceError,
      cwd,
    );
  }
  await assert.rejects(Deno.stat(join(f.outside, "escaped")), Deno.errors.NotFound);
  assert.equal(f.runtime.ledger.list(f.pid).length, 0);
});

Deno.test("ShellPrimitive.run() runs in a contained subdirectory given as cwd", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  Deno.mkdirSync(join(f.ws, "sub"));
  const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["pwd"], cwd: "sub" });
  assert.equal(r.stdout.trim(), join(f.ws, "sub"));
  assert.equal(r.cwd, "sub");
});

Deno.test("ShellPrimitive.run() kills the whole process group at the timeout", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  const marker = `29.${Math.floor(Math.random() * 1e6)}`;
  script(join(f.ws, "slow.sh"), `sleep ${marker}1 &\nsleep ${marker}2`);
  const started = Date.now();
  const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["./slow.sh"], timeoutMs: 300 });
  assert.equal(r.timedOut, true);
  assert.equal(r.signal, "SIGKILL");
  assert.equal(r.exitCode, null);
  assert.ok(Date.now() - started < 10_000);
  assert.ok(await eventually(() => processesWith(marker).length === 0), "a group member survived");
});

Deno.test("ShellPrimitive.run() caps stdout and stderr and says so", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  const r = await f.runtime.primitives.shell.run(f.pid, {
    argv: ["seq", "1", "100000"],
    maxOutputBytes: 1000,
  });
  assert.equal(r.stdoutTruncated, true);
  assert.equal(new TextEncoder().encode(r.stdout).length, 1000);
  assert.equal(r.stderrTruncated, false);
  assert.equal(r.exitCode, 0);
});

Deno.test("ShellPrimitive.run() feeds stdin, and the approval digest binds it", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["cat"], stdin: "hello\n" });
  assert.equal(r.stdout, "hello\n");
});

Deno.test("ShellPrimitive.run() holds the workspace lock only to start a command: a file write goes through while it runs", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  const order: string[] = [];
  // The command ends only once the write has landed: a write that waited for it would never
  // land (until the command's timeout).
  const marker = "libos-lock-test-4e1c";
  const run = f.runtime.primitives.shell.run(f.pid, {
    argv: ["sh", "-c", `while [ ! -f a.txt ]; do sleep 0.05; done; cat a.txt # ${marker}`],
    timeoutMs: 30_000,
  }).then((r) => {
    order.push("shell");
    return r;
  });
  // Written only once the command is running.
  assert.ok(await eventually(() => processesWith(marker).length > 0), "the command started");
  await f.runtime.primitives.fs.writeText(f.pid, { path: "a.txt", content: "x" });
  order.push("write");
  const r = await run;
  assert.equal(r.stdout, "x");
  assert.equal(r.timedOut, false);
  assert.deepEqual(order, ["write", "shell"]);
});

Deno.test("ShellPrimitive.run() redacts known secret values from its output", async () => {
  await using f = await shellFixture({ level: "always_allow", secrets: ["sk-known-secret-4242"] });
  Deno.writeTextFileSync(join(f.ws, "notes.txt"), "key=sk-known-secret-4242\n");
  const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["cat", "notes.txt"] });
  assert.equal(r.stdout, "key=[redacted]\n");
});

Deno.test("ShellPrimitive.run() under read-only without the wall is denied by the mode", async () => {
  await using f = await shellFixture({ level: "always_allow", mode: "read-only" });
  const error = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["true"] }),
    CapabilityDeniedError,
  );
  assert.match(error.message, /mode:read-only/);
});

Deno.test("ShellPrimitive.run() refuses a finished process", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  f.runtime.processes.signal(f.pid, "terminate");
  await assert.rejects(f.runtime.primitives.shell.run(f.pid, { argv: ["true"] }));
});

Deno.test("ShellPrimitive.run() parks in queue mode and a human's approval runs exactly that action", async () => {
  await using f = await shellFixture({ human: "queue", fakePath: true });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[0]!, "git", log);
  const pending = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["git", "status"] }),
    HumanPendingError,
  );
  const request = f.runtime.human.get(pending.request);
  assert.equal(request.approval?.executable, join(f.bins[0]!, "git"));
  assert.deepEqual(request.approval?.argv, ["git", "status"]);
  assert.equal(request.approval?.cwd, f.ws);
  assert.match(request.approval?.envHash ?? "", /^sha256:/);
  assert.deepEqual(logLines(log), []);
  f.runtime.human.approve(pending.request, { by: "operator" });
  const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["git", "status"] });
  assert.equal(r.stdout, "ran git\n");
  assert.equal(logLines(log).length, 1);
  // One-shot: the same command asks again.
  await assert.rejects(
    f.runtime.primitives.shell.run(f.pid, { argv: ["git", "status"] }),
    HumanPendingError,
  );
  assert.equal(logLines(log).length, 1);
});

/** Rules from one JSONC policy text. */
function rulesOf(text: string): PolicyRules {
  return new PolicyRules(parsePolicy(text, "test.jsonc"));
}

Deno.test("ShellPrimitive.run() under the allowlist: an exact rule runs without asking; extra args or a path-qualified program ask", async () => {
  await using f = await shellFixture({
    fakePath: true,
    extra: {
      rules: rulesOf(
        '{"version": 1, "rules": [{"effect": "allow", "shell": ["git", "status", "--short"], "exact": true}]}',
      ),
    },
  });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[0]!, "git", log);
  script(join(f.ws, "git"), `touch '${join(f.outside, "LOCAL_GIT_RAN")}'`);
  const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["git", "status", "--short"] });
  assert.equal(r.stdout, "ran git\n", "the exact allowed command runs without a human");
  for (const argv of [["git", "status", "--short", "--branch"], ["./git", "status", "--short"]]) {
    const error = await failure(
      f.runtime.primitives.shell.run(f.pid, { argv }),
      HumanDecisionError,
    );
    assert.equal(error.code, "human_unavailable", argv.join(" "));
  }
  assert.equal(logLines(log).length, 1);
  await assert.rejects(Deno.stat(join(f.outside, "LOCAL_GIT_RAN")), Deno.errors.NotFound);
});

Deno.test("ShellPrimitive.run() under always_deny: an explicit grant of the exact command is overridden", async () => {
  await using f = await shellFixture({ level: "always_deny", fakePath: true });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[0]!, "git", log);
  f.runtime.authority.capabilities.grant({
    subject: f.pid,
    resource: { type: "shell", argv: ["git"], scope: "prefix" },
    rights: ["execute"],
    effect: "allow",
    issuer: "operator",
  });
  const error = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["git", "status"] }),
    CapabilityDeniedError,
  );
  assert.match(error.message, /shell-policy|always_deny/);
  assert.deepEqual(logLines(log), []);
});

Deno.test("ShellPrimitive.run() under the blocklist: an ask rule on bash catches `env bash -c …`, naming the rule", async () => {
  await using f = await shellFixture({
    level: "blocklist_ask_else_auto",
    fakePath: true,
    extra: { rules: rulesOf('{"version": 1, "rules": [{"effect": "ask", "shell": ["bash"]}]}') },
  });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[0]!, "env", log);
  fakeProgram(f.bins[0]!, "bash", log);
  const error = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["env", "bash", "-c", "id"] }),
    HumanDecisionError,
  );
  assert.match(error.message, /rule:test\.jsonc#/);
  assert.deepEqual(logLines(log), []);
});

Deno.test("ShellPrimitive.run() enforces its own output and timeout limits whatever the caller asks", async () => {
  await using f = await shellFixture({
    level: "always_allow",
    extra: { shellLimits: { outputBytes: 3, outputBytesMax: 3, timeoutMsMax: 300_000 } },
  });
  const r = await f.runtime.primitives.shell.run(f.pid, {
    argv: ["sh", "-c", "echo 0123456789; echo abcdefghij >&2"],
  });
  assert.equal(r.stdout, "012");
  assert.equal(r.stderr, "abc");
  assert.equal(r.stdoutTruncated, true);
  assert.equal(r.stderrTruncated, true);
  // Asking for more than the primitive's maximum is refused, not honoured.
  await assert.rejects(
    f.runtime.primitives.shell.run(f.pid, { argv: ["true"], maxOutputBytes: 10 }),
    ValidationError,
  );
  for (const timeoutMs of [0, 300_001]) {
    await assert.rejects(
      f.runtime.primitives.shell.run(f.pid, { argv: ["true"], timeoutMs }),
      ValidationError,
    );
  }
});

Deno.test("ShellPrimitive.run() returns soon after the command exits even when a background child holds its output", async () => {
  const tag = String(Date.now() % 100000).padStart(5, "0");
  const marker = `31.${tag}9`;
  try {
    await using f = await shellFixture({ level: "always_allow" });
    script(join(f.ws, "serve.sh"), `sleep ${marker} &\necho started`);
    const started = performance.now();
    const r = await f.runtime.primitives.shell.run(f.pid, {
      argv: ["./serve.sh"],
      timeoutMs: 60_000,
    });
    const took = performance.now() - started;
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, "started\n");
    assert.equal(r.timedOut, false);
    assert.equal(r.outputLeftOpen, true);
    assert.ok(r.warnings.some((w) => w.includes("held its output open")));
    assert.ok(took < 10_000, `returned after ${Math.round(took)} ms, not at the 60 s timeout`);
    assert.equal(processesWith(`sleep ${marker}`).length, 1, "the background child keeps running");
    // A plain command does not wait out the grace.
    const quick = await f.runtime.primitives.shell.run(f.pid, { argv: ["true"] });
    assert.equal(quick.outputLeftOpen, false);
  } finally {
    // The runtime's close killed it; nothing is left either way.
    assert.ok(await eventually(() => processesWith(`sleep ${marker}`).length === 0));
  }
});

Deno.test("ShellPrimitive.run() stops its command when the caller's signal aborts (attack: a cancelled tool call or a JIT tool killed for a breach leaves its command running)", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  const marker = "libos-abort-test-77b3";
  const controller = new AbortController();
  const run = f.runtime.primitives.shell.run(
    f.pid,
    { argv: ["sh", "-c", `sleep 60 # ${marker}`], timeoutMs: 120_000 },
    { signal: controller.signal },
  );
  assert.ok(await eventually(() => processesWith(marker).length > 0), "control: it started");
  controller.abort(new Error("cancelled"));
  const r = await run;
  assert.equal(r.signal, "SIGKILL");
  assert.equal(r.timedOut, false);
  assert.ok(await eventually(() => processesWith(marker).length === 0), "nothing left running");
  // Aborted before it starts: nothing runs at all.
  await assert.rejects(
    f.runtime.primitives.shell.run(f.pid, { argv: ["touch", "never"] }, {
      signal: AbortSignal.abort(new Error("too late")),
    }),
    /too late/,
  );
  assert.equal(
    (() => {
      try {
        Deno.statSync(join(f.ws, "never"));
        return true;
      } catch {
        return false;
      }
    })(),
    false,
  );
});

Deno.test("ShellPrimitive.run() hashes the files it names again once it holds the workspace lock (attack: rewrite an approved script between its decision and its start)", async () => {
  const fs = hostFilesystem();
  let opens = 0;
  let path = "";
  const racing = {
    ...fs,
    open(file: string) {
      // The first hash of the script is taken; then the script is rewritten, as another
      // process's approved write would between the decision and the start.
      if (file === path && ++opens === 1) {
        const handle = fs.open(file);
        return {
          ...handle,
          facts: () => handle.facts(),
          read: (max: number) => {
            const bytes = handle.read(max);
            Deno.writeTextFileSync(file, "#!/bin/sh\necho rewritten\n");
            return bytes;
          },
          close: () => handle.close(),
          [Symbol.dispose]: () => handle[Symbol.dispose](),
        };
      }
      return fs.open(file);
    },
  };
  await using f = await shellFixture({ level: "always_allow", extra: { filesystem: racing } });
  path = script(join(f.ws, "run.sh"), "echo approved");
  const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["./run.sh"] });
  assert.equal(r.stdout, "rewritten\n", "what ran was decided on its own content");
  const records = f.runtime.audit.query({ action: "shell.run" });
  assert.deepEqual(
    records.map((x) => [x.decision, x.detail?.failed ?? null]),
    [["allow", "changed_before_start"], ["allow", null]],
    "the first decision did not run; the second, on the new content, did",
  );
  assert.notEqual(records[0]!.inputDigest, records[1]!.inputDigest);
});

// ------------------------------------------------------------------ read-only commands (issue 23)

const wallMode = wallTestMode();
const SECRET = "SECRET-readonly-5d19";

/** A workspace with a README, a secret `.env`, notes that mention SECRET, and a real repository. */
function readOnlyWorkspace(ws: string, options: { commitEnv?: boolean } = {}): void {
  Deno.writeTextFileSync(join(ws, "README.md"), "# Read me\n");
  Deno.writeTextFileSync(join(ws, "notes.txt"), "SECRET_NOTES are not secret\n");
  hostGit(ws, "init", "-q", "-b", "main", ".");
  if (options.commitEnv) Deno.writeTextFileSync(join(ws, ".env"), `TOKEN=${SECRET}\n`);
  hostGit(ws, "add", "-A");
  hostGit(ws, "commit", "-qm", "init");
  Deno.writeTextFileSync(join(ws, ".env"), `TOKEN=${SECRET}\n`);
}

Deno.test({
  name:
    "ShellPrimitive.run() inside the wall runs ls, cat README.md and git status without a human (no request at all), confined, and audits them as read-only",
  ignore: wallMode.ignore,
  fn: async () => {
    await using f = await shellFixture({ wall: true });
    readOnlyWorkspace(f.ws);
    const ls = await f.runtime.primitives.shell.run(f.pid, { argv: ["ls"] });
    assert.deepEqual(ls.stdout.split("\n").filter((l) => l), ["README.md", "notes.txt"]);
    const cat = await f.runtime.primitives.shell.run(f.pid, { argv: ["cat", "README.md"] });
    assert.equal(cat.stdout, "# Read me\n");
    const status = await f.runtime.primitives.shell.run(f.pid, {
      argv: ["git", "status", "--short"],
    });
    assert.equal(status.exitCode, 0, status.stderr);
    assert.equal(status.stdout, "?? .env\n");
    for (const r of [ls, cat, status]) {
      assert.equal(r.wall, true);
      assert.equal(r.confined, true);
    }
    assert.deepEqual(f.runtime.human.list(), [], "nobody was asked");
    const audit = f.runtime.audit.query({ action: "shell.run" });
    assert.deepEqual(audit.map((r) => [r.decision, r.authority, r.detail?.confined]), [
      ["allow", "read-only:ls", true],
      ["allow", "read-only:cat", true],
      ["allow", "read-only:git status", true],
    ]);
  },
});

Deno.test({
  name:
    "ShellPrimitive.run() attack: a read-only command reads a secret — cat .env runs confined and sees an empty file; grep -r SECRET . does not find it",
  ignore: wallMode.ignore,
  fn: async () => {
    await using f = await shellFixture({ wall: true });
    readOnlyWorkspace(f.ws);
    const cat = await f.runtime.primitives.shell.run(f.pid, { argv: ["cat", ".env"] });
    assert.equal(cat.exitCode, 0);
    assert.equal(cat.stdout, "", "the masked .env is empty");
    assert.equal(cat.confined, true);
    const grep = await f.runtime.primitives.shell.run(f.pid, {
      argv: ["grep", "-r", "SECRET", "."],
    });
    assert.equal(grep.stdout, "./notes.txt:SECRET_NOTES are not secret\n", "control: grep ran");
    assert.ok(!(cat.stdout + cat.stderr + grep.stdout + grep.stderr).includes(SECRET));
    assert.equal(Deno.readTextFileSync(join(f.ws, ".env")), `TOKEN=${SECRET}\n`, "untouched");
    assert.deepEqual(f.runtime.human.list(), []);
  },
});

Deno.test({
  name:
    "ShellPrimitive.run() attack: a program allowed as read-only that writes (an option the table missed) cannot — the confined workspace is read-only; unconfined, the same program writes (control)",
  ignore: wallMode.ignore,
  fn: async () => {
    for (const level of ["allowlist_auto_else_ask", "always_allow"] as const) {
      await using f = await shellFixture({ wall: true, fakePath: true, level });
      // An `ls` on the search path that writes into the workspace as it lists.
      script(
        join(f.bins[0]!, "ls"),
        'if /usr/bin/touch planted.txt; then echo wrote; else echo "no write"; fi',
      );
      const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["ls"] });
      if (level === "allowlist_auto_else_ask") {
        assert.equal(r.confined, true);
        assert.equal(r.stdout, "no write\n");
        assert.match(r.stderr, /Read-only file system/);
        assert.equal(exists(join(f.ws, "planted.txt")), false, "nothing was created");
      } else {
        assert.equal(r.confined, undefined);
        assert.equal(r.stdout, "wrote\n", "control: unconfined, the program writes");
        assert.equal(exists(join(f.ws, "planted.txt")), true);
      }
    }
  },
});

Deno.test({
  name:
    "ShellPrimitive.run() attack: commands that only look read-only still ask inside the wall, and nothing of theirs runs — find -delete, find -exec rm, sort -o, git diff --output, git -c core.pager, git branch -D, ./ls",
  ignore: wallMode.ignore,
  fn: async () => {
    await using f = await shellFixture({ wall: true });
    readOnlyWorkspace(f.ws);
    const marker = join(f.ws, "PLANTED");
    script(join(f.ws, "ls"), `touch '${marker}'`);
    const attacks: string[][] = [
      ["find", ".", "-delete"],
      ["find", ".", "-name", "README.md", "-exec", "rm", "{}", ";"],
      ["sort", "-o", "out.txt", "README.md"],
      ["git", "diff", "--output=out.txt"],
      ["git", "-c", `core.pager=touch ${marker}`, "log"],
      ["git", "branch", "-D", "main"],
      ["./ls"],
    ];
    for (const argv of attacks) {
      const error = await failure(
        f.runtime.primitives.shell.run(f.pid, { argv }),
        HumanDecisionError,
      );
      assert.equal(error.code, "human_unavailable", argv.join(" "));
    }
    assert.equal(exists(marker), false, "nothing planted ran");
    assert.equal(exists(join(f.ws, "out.txt")), false, "nothing was written");
    assert.equal(Deno.readTextFileSync(join(f.ws, "README.md")), "# Read me\n");
    assert.equal(hostGit(f.ws, "branch", "--list", "main"), "* main\n");
    const audit = f.runtime.audit.query({ action: "shell.run" });
    assert.deepEqual(audit.map((r) => r.decision), attacks.map(() => "ask"));
    assert.ok(audit.every((r) => !r.authority.startsWith("read-only:")));
  },
});

Deno.test({
  name:
    "ShellPrimitive.run() a deny rule on ls still denies inside the wall; without the wall, ls asks",
  ignore: wallMode.ignore,
  fn: async () => {
    {
      await using f = await shellFixture({
        wall: true,
        extra: { rules: rulesOf('{"version": 1, "rules": [{"effect": "deny", "shell": ["ls"]}]}') },
      });
      const error = await failure(
        f.runtime.primitives.shell.run(f.pid, { argv: ["ls"] }),
        CapabilityDeniedError,
      );
      assert.match(error.message, /rule:test\.jsonc#1/);
    }
    {
      await using f = await shellFixture({ wall: false });
      const error = await failure(
        f.runtime.primitives.shell.run(f.pid, { argv: ["ls"] }),
        HumanDecisionError,
      );
      assert.equal(error.code, "human_unavailable");
      assert.equal(
        f.runtime.audit.query({ action: "shell.run" }).at(-1)?.authority,
        "shell-policy:allowlist_auto_else_ask",
      );
    }
  },
});

Deno.test({
  name:
    "ShellPrimitive.run() a read-only command whose shield cannot be made (a file name that is not UTF-8) is not refused: it asks, saying why, and once approved runs unconfined",
  ignore: wallMode.ignore,
  fn: async () => {
    await using f = await shellFixture({ wall: true, human: "queue" });
    Deno.writeTextFileSync(join(f.ws, "README.md"), "# Read me\n");
    new Deno.Command("python3", {
      args: ["-c", "import sys; open(sys.argv[1].encode() + b'/bad\\xffname.txt', 'wb')", f.ws],
    }).outputSync();
    const pending = await failure(
      f.runtime.primitives.shell.run(f.pid, { argv: ["cat", "README.md"] }),
      HumanPendingError,
    );
    const request = f.runtime.human.get(pending.request);
    assert.match(
      request.approval?.reason ?? "",
      /read-only cat, but not confined: the shield that masks secret-bearing files cannot be made \(.*not UTF-8/,
    );
    f.runtime.human.approve(pending.request, { by: "operator" });
    const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["cat", "README.md"] });
    assert.equal(r.stdout, "# Read me\n");
    assert.equal(r.confined, undefined);
    const audit = f.runtime.audit.query({ action: "shell.run" });
    assert.deepEqual(audit.map((x) => [x.decision, x.detail?.failed ?? null]), [
      ["allow", "shield_incomplete"],
      ["ask", null],
      ["allow", "shield_incomplete"],
      ["allow", null],
    ]);
  },
});

Deno.test({
  name:
    "ShellPrimitive.run() attack: git show HEAD:.env — git's history holds what the shield masks — asks instead of running confined; in a workspace without secrets, git log runs unasked",
  ignore: wallMode.ignore,
  fn: async () => {
    await using f = await shellFixture({ wall: true });
    readOnlyWorkspace(f.ws, { commitEnv: true });
    const error = await failure(
      f.runtime.primitives.shell.run(f.pid, { argv: ["git", "show", "HEAD:.env"] }),
      HumanDecisionError,
    );
    assert.equal(error.code, "human_unavailable");
    assert.ok(!error.message.includes(SECRET));
    const asked = f.runtime.audit.query({ action: "shell.run" }).at(-1);
    assert.equal(asked?.decision, "ask");
    assert.match(asked?.authority ?? "", /git show can show from the repository's history/);
    // Without a secret-bearing file, git log is read-only like any other.
    Deno.removeSync(join(f.ws, ".env"));
    const log = await f.runtime.primitives.shell.run(f.pid, { argv: ["git", "log", "--oneline"] });
    assert.equal(log.confined, true);
    assert.match(log.stdout, /init/);
  },
});
