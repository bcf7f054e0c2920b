/**
 * End-to-end attacks on the shell primitive: approvals bound to the action, secrets kept out of
 * a command's environment, a real git steered by a hostile repository configuration, and
 * children that outlive their call dying with a SIGKILLed runtime. Each attack runs for real and
 * asserts both the refusal and that the attacker's command never ran.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { HumanPendingError } from "../runtime/base/errors.ts";
import {
  allowExact,
  eventually,
  failure,
  fakeProgram,
  hostGit as git,
  hostileRepo,
  logLines,
  plainGitRuns,
  processesWith,
  script,
  type ShellFixture,
  shellFixture,
  spawnTestChild,
} from "./shell_fixture.ts";

/** Asks (queue mode), approves once, and returns the request id. */
async function approveOnce(f: ShellFixture, argv: string[], cwd?: string): Promise<string> {
  const pending = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv, ...(cwd === undefined ? {} : { cwd }) }),
    HumanPendingError,
  );
  f.runtime.human.approve(pending.request, { by: "operator" });
  return pending.request;
}

// ------------------------------------------------------------------ approvals bound to the action

Deno.test("Shell approvals attack: an approval of `git status` does not run `git push`", async () => {
  await using f = await shellFixture({ human: "queue", fakePath: true });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[0]!, "git", log);
  await approveOnce(f, ["git", "status"]);
  // The approved process now tries something else under the same approval.
  await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["git", "push"] }),
    HumanPendingError,
  );
  await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["git", "status", "--porcelain"] }),
    HumanPendingError,
  );
  assert.deepEqual(logLines(log), [], "nothing ran under the approval of another command");
  // The approved command itself still runs, once.
  const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["git", "status"] });
  assert.equal(r.stdout, "ran git\n");
  assert.deepEqual(logLines(log), [`git@${f.bins[0]} status`]);
});

Deno.test("Shell approvals attack: the approved command in another working directory asks again", async () => {
  await using f = await shellFixture({ human: "queue", fakePath: true });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[0]!, "git", log);
  Deno.mkdirSync(join(f.ws, "sub"));
  await approveOnce(f, ["git", "status"]);
  await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["git", "status"], cwd: "sub" }),
    HumanPendingError,
  );
  assert.deepEqual(logLines(log), []);
});

Deno.test("Shell approvals attack: a different program first on PATH after the approval asks again", async () => {
  await using f = await shellFixture({ human: "queue", fakePath: true });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[1]!, "git", log);
  const first = await approveOnce(f, ["git", "status"]);
  assert.equal(f.runtime.human.get(first).approval?.executable, join(f.bins[1]!, "git"));
  // Something now puts another git earlier on the search path.
  fakeProgram(f.bins[0]!, "git", log);
  const again = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["git", "status"] }),
    HumanPendingError,
  );
  assert.equal(f.runtime.human.get(again.request).approval?.executable, join(f.bins[0]!, "git"));
  assert.deepEqual(logLines(log), [], "neither git ran");
});

Deno.test("Shell approvals attack: changed stdin under the same argv asks again", async () => {
  await using f = await shellFixture({ human: "queue", fakePath: true });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[0]!, "tool", log);
  const pending = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["tool"], stdin: "harmless" }),
    HumanPendingError,
  );
  f.runtime.human.approve(pending.request, { by: "operator" });
  await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["tool"], stdin: "rm -rf ~" }),
    HumanPendingError,
  );
  assert.deepEqual(logLines(log), []);
});

Deno.test("Shell approvals: allow always offers this argv and its first two words, never the program", async () => {
  await using f = await shellFixture({ human: "queue", fakePath: true });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[0]!, "git", log);
  const pending = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["git", "log", "--oneline"] }),
    HumanPendingError,
  );
  const offers = f.runtime.human.alwaysOptions(f.runtime.human.get(pending.request));
  assert.deepEqual(
    offers.map((o) => [o.scope, o.resource]),
    [
      ["exact", { type: "shell", argv: ["git", "log", "--oneline"], scope: "exact" }],
      ["prefix", { type: "shell", argv: ["git", "log"], scope: "prefix" }],
    ],
  );
  f.runtime.human.approve(pending.request, { by: "operator", always: "prefix" });
  await f.runtime.primitives.shell.run(f.pid, { argv: ["git", "log", "--oneline"] });
  await f.runtime.primitives.shell.run(f.pid, { argv: ["git", "log", "-n", "1"] });
  assert.equal(logLines(log).length, 2);
  await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["git", "push"] }),
    HumanPendingError,
  );
  assert.equal(logLines(log).length, 2);
});

Deno.test("Shell approvals: inline code is offered no standing grant a prefix could widen", async () => {
  await using f = await shellFixture({ human: "queue" });
  const pending = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["python3", "-c", "print(1)"] }),
    HumanPendingError,
  );
  const offers = f.runtime.human.alwaysOptions(f.runtime.human.get(pending.request));
  assert.deepEqual(offers.map((o) => o.scope), ["exact"]);
});

// ------------------------------------------------------------------ secrets

Deno.test("Shell secrets attack: env and printenv print neither the runtime's OPENAI_API_KEY nor the workspace .env's", async () => {
  const runtimeKey = "sk-runtime-env-4b1d9c7e2f";
  const dotenvKey = "sk-dotenv-file-8e3a6b0c5d";
  const before = Deno.env.get("OPENAI_API_KEY");
  Deno.env.set("OPENAI_API_KEY", runtimeKey);
  try {
    await using f = await shellFixture({ level: "always_allow" });
    Deno.writeTextFileSync(join(f.ws, ".env"), `OPENAI_API_KEY=${dotenvKey}\nDENO_AUTH_TOKENS=x\n`);
    assert.equal(
      Deno.env.get("OPENAI_API_KEY"),
      runtimeKey,
      "the runtime's own environment has it",
    );
    for (
      const argv of [["env"], ["printenv"], ["printenv", "OPENAI_API_KEY"], ["sh", "-c", "set"]]
    ) {
      const r = await f.runtime.primitives.shell.run(f.pid, { argv }).catch((e) => {
        // `set` in sh -c is fine to refuse; what matters is that nothing printed the keys.
        return { stdout: "", stderr: String(e) };
      });
      for (const key of [runtimeKey, dotenvKey]) {
        assert.ok(!r.stdout.includes(key), `${argv.join(" ")} printed a key`);
        assert.ok(!r.stderr.includes(key), `${argv.join(" ")} printed a key on stderr`);
      }
      assert.ok(!r.stdout.includes("DENO_"), `${argv.join(" ")} saw a DENO_ variable`);
      assert.ok(!r.stdout.includes("OPENAI"), `${argv.join(" ")} saw an OPENAI variable`);
    }
    const env = await f.runtime.primitives.shell.run(f.pid, { argv: ["env"] });
    const names = env.stdout.split("\n").filter(Boolean).map((l) => l.slice(0, l.indexOf("=")));
    for (const name of names) {
      assert.ok(
        ["PATH", "HOME", "LANG", "TERM", "TMPDIR", "PAGER", "PWD"].includes(name) ||
          name.startsWith("GIT_"),
        `unexpected variable ${name}`,
      );
    }
    const home = env.stdout.split("\n").find((l) => l.startsWith("HOME="))!.slice(5);
    assert.ok(!home.startsWith(f.ws), "HOME is a scratch directory outside the workspace");
  } finally {
    if (before === undefined) Deno.env.delete("OPENAI_API_KEY");
    else Deno.env.set("OPENAI_API_KEY", before);
  }
});

// ------------------------------------------------------------------ git

const GIT_ATTACKS: {
  name: string;
  args: string[];
  config: (marker: string) => string;
  attributes?: string;
}[] = [
  {
    name: "core.fsmonitor in a nested pkg/.git/config, then git status",
    args: ["status"],
    config: (m) => `[core]\n\tfsmonitor = touch ${m}\n`,
  },
  {
    name: "a filter.*.clean driver, then git diff",
    args: ["diff"],
    config: (m) => `[filter "evil"]\n\tclean = sh -c 'touch ${m} && cat'\n`,
    attributes: "* filter=evil\n",
  },
  {
    name: "diff.external, then git diff",
    args: ["diff"],
    config: (m) => `[diff]\n\texternal = sh -c 'touch ${m}'\n`,
  },
  {
    name: "a diff driver's command and textconv, then git diff",
    args: ["diff"],
    config: (m) =>
      `[diff "evil"]\n\tcommand = sh -c 'touch ${m}'\n\ttextconv = sh -c 'touch ${m} && cat "$1"' --\n`,
    attributes: "*.txt diff=evil\n",
  },
  {
    name: "an alias running a shell command, then git st",
    args: ["st"],
    config: (m) => `[alias]\n\tst = !touch ${m}\n`,
  },
  {
    name: "an alias hidden in an included file, then git st",
    args: ["st"],
    config: () => `[include]\n\tpath = extra.cfg\n`,
  },
];

for (const attack of GIT_ATTACKS) {
  Deno.test(`Git hardening attack: ${attack.name} — the attacker's command never runs`, async () => {
    await using f = await shellFixture();
    const marker = join(f.outside, "PWNED");
    const pkg = join(f.ws, "pkg");
    hostileRepo(pkg, attack.config(marker), attack.attributes);
    if (attack.name.includes("included")) {
      Deno.writeTextFileSync(join(pkg, ".git", "extra.cfg"), `[alias]\n\tst = !touch ${marker}\n`);
    }
    const argv = ["git", ...attack.args];
    // Control: a plain git in this repository runs the attacker's command.
    assert.ok(plainGitRuns(pkg, attack.args, marker), "the attack is live against plain git");
    // Under libos, with the command allowed for this process:
    allowExact(f.runtime, f.pid, argv);
    const r = await f.runtime.primitives.shell.run(f.pid, { argv, cwd: "pkg" });
    await assert.rejects(Deno.stat(marker), Deno.errors.NotFound, `ran it: ${r.stderr}`);
    // From the workspace root, naming the nested repository through a subdirectory shell run.
    const sub = await f.runtime.primitives.shell.run(f.pid, { argv, cwd: "pkg" });
    assert.equal(typeof sub.exitCode, "number");
    await assert.rejects(Deno.stat(marker), Deno.errors.NotFound);
  });
}

Deno.test("Git hardening attack: a nested repository below the run's directory is hardened for a script that cds into it", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  const marker = join(f.outside, "PWNED");
  const pkg = join(f.ws, "pkg");
  hostileRepo(pkg, `[core]\n\tfsmonitor = touch ${marker}\n`);
  script(join(f.ws, "check.sh"), "cd pkg && git status --short");
  assert.ok(plainGitRuns(pkg, ["status"], marker), "the attack is live against plain git");
  const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["./check.sh"] });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.match(r.stdout, /a\.txt/);
  await assert.rejects(Deno.stat(marker), Deno.errors.NotFound);
});

Deno.test("Git hardening: a clean repository still works (status, diff, log, add, commit)", async () => {
  await using f = await shellFixture({ level: "always_allow" });
  hostileRepo(f.ws, "");
  const run = (...args: string[]) =>
    f.runtime.primitives.shell.run(f.pid, { argv: ["git", ...args] });
  assert.match((await run("status", "--short")).stdout, /M a\.txt/);
  assert.match((await run("diff")).stdout, /\+two/);
  assert.match((await run("log", "--oneline")).stdout, /init/);
  assert.equal((await run("add", "a.txt")).exitCode, 0);
  const commit = await run("commit", "-qm", "two");
  assert.equal(commit.exitCode, 0, commit.stderr);
  assert.match(
    (await run("log", "-1", "--format=%an <%ae>")).stdout,
    /libos agent <agent@libos\.invalid>/,
  );
  // A repository's own identity wins over libos's default.
  git(f.ws, "config", "user.name", "Repo Owner");
  await run("commit", "-q", "--allow-empty", "-m", "three");
  assert.match((await run("log", "-1", "--format=%an")).stdout, /Repo Owner/);
});

// ------------------------------------------------------------------------------------ orphans

/** Reads `child`'s stdout until a line starting with `ready`, or fails after `ms`. */
async function readyLine(child: Deno.ChildProcess, ms: number): Promise<string> {
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const timer = setTimeout(() => reader.cancel("timeout"), ms);
  try {
    while (!/^ready.*\n/m.test(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the child runtime ended before it was ready: ${text}`);
      text += value;
    }
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
  return /^ready.*$/m.exec(text)![0];
}

Deno.test("Shell orphans attack: children running long past their call die when the runtime is SIGKILLed", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-orphan-" }));
  // Unique sleep lengths are the markers the host's process table is searched for.
  const tag = String(Date.now() % 100000).padStart(5, "0");
  const background = `47.${tag}1`;
  const foreground = `48.${tag}2`;
  // The child runtime's own command line carries the numbers too; the sleeps' start with `sleep`.
  const sleeping = (marker: string) => processesWith(`sleep ${marker}`);
  try {
    const ws = join(root, "ws");
    Deno.mkdirSync(ws);
    script(join(ws, "bg.sh"), `sleep ${background} >/dev/null 2>&1 &\necho $!`);
    const child = spawnTestChild("_shell_orphan_child.ts", [ws, background, foreground], {
      stdout: "piped",
      stderr: "piped",
    });
    let killed = false;
    try {
      await readyLine(child, 60_000);
      assert.ok(
        await eventually(() =>
          sleeping(background).length === 1 && sleeping(foreground).length === 1
        ),
        "control: both sleeps run while the runtime lives",
      );
      child.kill("SIGKILL");
      killed = true;
      const status = await child.status;
      assert.equal(status.signal, "SIGKILL", "the runtime was killed, nothing ran its cleanup");
      assert.ok(
        await eventually(() => sleeping(background).length === 0, 10_000),
        `the background sleep outlived the runtime: ${sleeping(background)}`,
      );
      assert.ok(
        await eventually(() => sleeping(foreground).length === 0, 10_000),
        `the foreground sleep outlived the runtime: ${sleeping(foreground)}`,
      );
    } finally {
      if (!killed) child.kill("SIGKILL");
      await child.status;
      await child.stderr.cancel().catch(() => {});
      await child.stdout.cancel().catch(() => {});
      // Whatever the outcome, the test leaves no sleeper behind.
      for (const pid of [...sleeping(background), ...sleeping(foreground)]) {
        Deno.kill(pid, "SIGKILL");
      }
    }
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
