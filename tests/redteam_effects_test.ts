/**
 * Red-team attacks on the external-effects layer (shell primitive, launcher, OS wall, git
 * hardening). Each test names the attack, attempts it for real, and asserts the refusal and the
 * absence of side effects. Written by a red-team pass over issue 9: every attack here worked when
 * it was written (root keeping capabilities in the wall, `.git` symlinks, unlisted git keys, an
 * incomplete scan that only warned, a scan ignoring the timeout, output held open by a `setsid`
 * grandchild, approvals not bound to a script's content) and was fixed.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { HumanPendingError, LibosError } from "../runtime/base/errors.ts";
import {
  allowExact,
  eventually,
  exists,
  failure,
  hostGit as git,
  hostileRepo,
  plainGitRuns,
  processesWith,
  script,
  type ShellFixture,
  shellFixture,
  wallTestMode,
} from "./shell_fixture.ts";

const mode = wallTestMode();

/** Runs `argv` in `cwd` for the fixture's process, allowed exactly (an operator's grant). */
function runAllowed(f: ShellFixture, argv: string[], cwd?: string, timeoutMs?: number) {
  allowExact(f.runtime, f.pid, argv);
  return f.runtime.primitives.shell.run(f.pid, {
    argv,
    ...(cwd === undefined ? {} : { cwd }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

/** Runs like {@link runAllowed}; a refusal is returned as its error instead of thrown. */
async function attempt(f: ShellFixture, argv: string[], cwd?: string, timeoutMs?: number) {
  try {
    return { output: await runAllowed(f, argv, cwd, timeoutMs), error: undefined };
  } catch (error) {
    if (!(error instanceof LibosError)) throw error;
    return { output: undefined, error };
  }
}

// ------------------------------------------------------------------------------ git hardening

Deno.test("Red team git attack: a repository whose .git is a symbolic link is scanned too; its diff textconv does not run under `git diff`", async () => {
  await using f = await shellFixture();
  const marker = join(f.outside, "PWNED");
  const pkg = join(f.ws, "pkg");
  hostileRepo(
    pkg,
    `[diff "evil"]\n\ttextconv = touch ${marker}; cat\n`,
    "*.txt diff=evil\n",
  );
  // The git directory moves next to the work tree; `.git` becomes a link to it.
  Deno.renameSync(join(pkg, ".git"), join(pkg, "gd"));
  Deno.symlinkSync("gd", join(pkg, ".git"));
  assert.ok(plainGitRuns(pkg, ["diff"], marker), "the attack is live against plain git");
  const r = await runAllowed(f, ["git", "diff"], "pkg");
  assert.equal(
    exists(marker),
    false,
    `the textconv of a repository behind a .git symlink ran (stdout: ${r.stdout.slice(0, 200)})`,
  );
});

Deno.test("Red team git: a repository whose .git is a FILE naming a git directory elsewhere is hardened", async () => {
  await using f = await shellFixture();
  const marker = join(f.outside, "PWNED");
  const pkg = join(f.ws, "pkg");
  hostileRepo(
    pkg,
    `[diff "evil"]\n\ttextconv = touch ${marker}; cat\n`,
    "*.txt diff=evil\n",
  );
  const gitdir = join(f.ws, "elsewhere.git");
  Deno.renameSync(join(pkg, ".git"), gitdir);
  Deno.writeTextFileSync(join(pkg, ".git"), `gitdir: ${gitdir}\n`);
  assert.ok(plainGitRuns(pkg, ["diff"], marker), "the attack is live against plain git");
  const r = await runAllowed(f, ["git", "diff"], "pkg");
  // (An empty textconv makes git 2.39 fail the diff, "cannot run": safe, if not "still works".)
  assert.equal(typeof r.exitCode, "number", r.stderr);
  assert.equal(exists(marker), false, "the textconv never ran");
});

Deno.test("Red team git attack: gpg.ssh.defaultKeyCommand with signing on does not run under `git commit`", async () => {
  await using f = await shellFixture();
  const marker = join(f.outside, "PWNED");
  const pkg = join(f.ws, "pkg");
  hostileRepo(
    pkg,
    `[commit]\n\tgpgSign = true\n[gpg]\n\tformat = ssh\n[gpg "ssh"]\n\tdefaultKeyCommand = touch ${marker}\n`,
  );
  assert.ok(
    plainGitRuns(pkg, ["commit", "-qam", "two"], marker),
    "the attack is live against plain git",
  );
  const r = await runAllowed(f, ["git", "commit", "-qam", "two"], "pkg");
  assert.equal(
    exists(marker),
    false,
    `the repository's default-key command ran (stderr: ${r.stderr.slice(0, 300)})`,
  );
});

Deno.test("Red team git attack: tar.<format>.command does not run under `git archive --format=tgz`", async () => {
  await using f = await shellFixture();
  const marker = join(f.outside, "PWNED");
  const pkg = join(f.ws, "pkg");
  hostileRepo(pkg, `[tar "tgz"]\n\tcommand = touch ${marker}; cat\n`);
  assert.ok(
    plainGitRuns(pkg, ["archive", "--format=tgz", "HEAD"], marker),
    "the attack is live against plain git",
  );
  const r = await runAllowed(f, ["git", "archive", "--format=tgz", "HEAD"], "pkg");
  assert.equal(
    exists(marker),
    false,
    `the repository's archive filter ran (stderr: ${r.stderr.slice(0, 300)})`,
  );
});

Deno.test("Red team git attack: an include that breaks only where libos reads it (/proc/self/cwd) refuses the run instead of skipping the hardening", async () => {
  await using f = await shellFixture();
  const marker = join(f.outside, "PWNED");
  hostileRepo(
    f.ws,
    `[include]\n\tpath = /proc/self/cwd/x.cfg\n[alias]\n\tst = !touch ${marker}\n`,
  );
  Deno.mkdirSync(join(f.ws, "sub"));
  // In the work tree's top (where libos lists the configuration) the include is not a valid
  // configuration: the listing fails, which is only a warning. In `sub` (where the command runs)
  // there is no such file, and git ignores a missing include.
  Deno.writeTextFileSync(join(f.ws, "x.cfg"), "this is [[[ not a configuration\n");
  assert.ok(plainGitRuns(join(f.ws, "sub"), ["st"], marker), "the attack is live against git");
  const r = await attempt(f, ["git", "st"], "sub");
  assert.equal(exists(marker), false, `the alias ran: ${JSON.stringify(r.output?.warnings)}`);
  // git reads its configuration from the work tree's top, where the include is broken: without
  // the wall a configuration libos cannot read refuses the run.
  assert.equal(r.error?.code, "git_config_unsafe");
  assert.match(r.error!.message, /cannot read the configuration/);
});

Deno.test("Red team git attack: 64 decoy .git directories pushing a submodule past the scan's cap refuse the run without the wall", async () => {
  await using f = await shellFixture();
  const marker = join(f.outside, "PWNED");
  const pkg = join(f.ws, "z", "pkg");
  hostileRepo(pkg, `[diff "evil"]\n\ttextconv = touch ${marker}; cat\n`, "*.txt diff=evil\n");
  git(f.ws, "init", "-q", ".");
  const head = git(pkg, "rev-parse", "HEAD").trim();
  git(f.ws, "update-index", "--add", "--cacheinfo", `160000,${head},z/pkg`);
  git(f.ws, "commit", "-qm", "top");
  // A harmless key of the top repository shows submodule changes as a diff (run in the submodule).
  Deno.writeTextFileSync(join(f.ws, ".git", "config"), "[diff]\n\tsubmodule = diff\n", {
    append: true,
  });
  // Decoys: empty `.git` directories, found before `z/pkg` in the breadth-first walk.
  for (let i = 0; i < 64; i++) {
    Deno.mkdirSync(join(f.ws, `d${String(i).padStart(2, "0")}`, ".git"), { recursive: true });
  }
  assert.ok(plainGitRuns(f.ws, ["diff"], marker), "the attack is live against plain git");
  const r = await attempt(f, ["git", "diff"]);
  assert.equal(
    exists(marker),
    false,
    `the submodule's textconv ran: ${JSON.stringify(r.output?.warnings)}`,
  );
  // Without the wall a scan past its cap refuses the run.
  assert.equal(r.error?.code, "git_config_unsafe");
  assert.match(r.error!.message, /66 repositories were found/);
});

Deno.test("Red team git attack: a FIFO include cannot hold the scan (and the workspace lock) past the run's timeout", async () => {
  await using f = await shellFixture();
  for (const name of ["r1", "r2"]) {
    const dir = join(f.ws, name);
    hostileRepo(dir, `[include]\n\tpath = hold.fifo\n`);
    const made = new Deno.Command("mkfifo", { args: [join(dir, ".git", "hold.fifo")] })
      .outputSync();
    assert.ok(made.success);
  }
  const started = performance.now();
  const r = await attempt(f, ["git", "--version"], undefined, 1000);
  const took = performance.now() - started;
  assert.ok(took < 3000, `a 1 s run took ${Math.round(took)} ms (the scan has its own timeouts)`);
  // The configuration could not be read in time: without the wall the run is refused.
  assert.equal(r.error?.code, "git_config_unsafe");
  assert.match(r.error!.message, /timed out|ran out of time/);
});

// --------------------------------------------------------------------------- launcher, timeout

Deno.test("Red team launcher attack: without the wall, a setsid grandchild holding stdout cannot keep the call (and the workspace lock) open past its timeout", async () => {
  const tag = String(Date.now() % 100000).padStart(5, "0");
  const holder = `8.${tag}7`;
  const sleeping = () => processesWith(`sleep ${holder}`);
  try {
    await using f = await shellFixture({ level: "always_allow", wall: false });
    // The grandchild keeps the run's stdout and stderr, and leaves the process group.
    script(join(f.ws, "hold.sh"), `setsid sleep ${holder} &\nsleep 60`);
    const started = performance.now();
    const r = await f.runtime.primitives.shell.run(f.pid, {
      argv: ["./hold.sh"],
      timeoutMs: 1000,
    });
    const took = performance.now() - started;
    assert.equal(r.timedOut, true);
    assert.ok(took < 4000, `a run with a 1 s timeout returned after ${Math.round(took)} ms`);
  } finally {
    for (const pid of sleeping()) Deno.kill(pid, "SIGKILL");
  }
});

Deno.test({
  name:
    "Red team wall: the runtime's own environment is out of reach through /proc inside the wall, and only there",
  ignore: mode.ignore,
  fn: async () => {
    // The runtime's initial environment (what /proc/<pid>/environ shows) holds the user's real
    // HOME; a command's own HOME is a scratch directory. An API key would sit beside it.
    const home = Deno.env.get("HOME");
    assert.ok(home, "the test needs a HOME");
    const marker = `HOME=${home}`;
    for (const wall of [false, true]) {
      await using f = await shellFixture({ level: "always_allow", wall });
      // The program's parent, and every process it can see.
      script(
        join(f.ws, "peek.sh"),
        'tr "\\0" "\\n" < "/proc/$PPID/environ"\nfor p in /proc/[0-9]*; do tr "\\0" "\\n" < "$p/environ"; done 2>/dev/null',
      );
      const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["./peek.sh"] });
      const lines = r.stdout.split("\n");
      if (wall) {
        assert.equal(lines.includes(marker), false, "the wall's pid namespace hides the runtime");
      } else {
        // The documented window (runtime/primitives/shell.ts): a process of the same user reads
        // another's /proc entries. Shown so the walled assertion is not vacuous.
        assert.equal(lines.includes(marker), true, "control: without the wall it is readable");
      }
    }
  },
});

// ---------------------------------------------------------------------------------- the wall

Deno.test({
  name:
    "Red team wall attack: a walled command of a root runtime has no capabilities: it cannot remount / read-write and write outside the workspace",
  ignore: mode.ignore,
  fn: async () => {
    const host = Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "libos-rt-" });
    try {
      await using f = await shellFixture({ level: "always_allow", wall: true });
      const target = join(host, "escape.txt");
      script(
        join(f.ws, "escape.sh"),
        [
          `echo direct > '${target}'; echo "direct=$?"`,
          "grep CapEff /proc/self/status",
          `mount -o remount,bind,rw / 2>&1; echo "remount=$?"`,
          `echo pwned > '${target}'; echo "after=$?"`,
        ].join("\n"),
      );
      const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["./escape.sh"] });
      assert.equal(r.wall, true);
      assert.match(r.stdout, /direct=[1-9]/, "control: a plain write is refused");
      assert.equal(
        exists(target),
        false,
        `the wall let the command write ${target} (stdout: ${r.stdout.trim()})`,
      );
    } finally {
      Deno.removeSync(host, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "Red team wall: /dev/shm, /proc/self/root and a workspace symlink pointing outside do not reach the host",
  ignore: mode.ignore,
  fn: async () => {
    const host = Deno.realPathSync(
      Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "libos-rt-" }),
    );
    const shm = `/dev/shm/libos-rt-${crypto.randomUUID()}`;
    try {
      await using f = await shellFixture({ level: "always_allow", wall: true });
      Deno.symlinkSync(host, join(f.ws, "out"));
      script(
        join(f.ws, "w.sh"),
        [
          `echo a > '${shm}' 2>/dev/null`,
          `echo b > '/proc/self/root${host}/b.txt' 2>/dev/null; echo "proc=$?"`,
          `echo c > out/c.txt 2>/dev/null; echo "link=$?"`,
        ].join("\n"),
      );
      const r = await f.runtime.primitives.shell.run(f.pid, { argv: ["./w.sh"] });
      assert.equal(r.wall, true);
      assert.equal(exists(shm), false, "the host's /dev/shm was written");
      assert.equal(exists(join(host, "b.txt")), false, "/proc/self/root reached the host");
      assert.equal(exists(join(host, "c.txt")), false, "a workspace symlink reached the host");
      assert.match(r.stdout, /proc=[1-9]/);
      assert.match(r.stdout, /link=[1-9]/);
    } finally {
      Deno.removeSync(host, { recursive: true });
      try {
        Deno.removeSync(shm);
      } catch { /* not there: good */ }
    }
  },
});

Deno.test({
  name:
    "Red team wall: a process's scratch HOME and the gitconfig bind do not let a run change another run's git",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shellFixture({ level: "always_allow", wall: true });
    const marker = join(f.ws, "PWNED");
    hostileRepo(join(f.ws, "pkg"), "");
    script(
      join(f.ws, "plant.sh"),
      [
        `printf '[alias]\\n\\tst = !touch ${marker}\\n' > "$HOME/.gitconfig"`,
        `printf '[alias]\\n\\tst = !touch ${marker}\\n' >> "$GIT_CONFIG_GLOBAL" 2>/dev/null; echo "global=$?"`,
        'mkdir -p "$HOME/.config/git"',
        `printf '[alias]\\n\\tst = !touch ${marker}\\n' > "$HOME/.config/git/config"`,
      ].join("\n"),
    );
    const planted = await f.runtime.primitives.shell.run(f.pid, { argv: ["./plant.sh"] });
    assert.match(planted.stdout, /global=[1-9]/, "libos's git configuration is read-only");
    await f.runtime.primitives.shell.run(f.pid, { argv: ["git", "st"], cwd: "pkg" });
    assert.equal(exists(marker), false, "a planted configuration ran a program");
  },
});

// ---------------------------------------------------------------------------- control: orphans

Deno.test("Red team launcher: a plain background child holding stdout dies at the timeout (no setsid)", async () => {
  const tag = String(Date.now() % 100000).padStart(5, "0");
  const holder = `9.${tag}3`;
  const sleeping = () => processesWith(`sleep ${holder}`);
  try {
    await using f = await shellFixture({ level: "always_allow", wall: false });
    script(join(f.ws, "hold.sh"), `sleep ${holder} &\nsleep 60`);
    const started = performance.now();
    const r = await f.runtime.primitives.shell.run(f.pid, {
      argv: ["./hold.sh"],
      timeoutMs: 1000,
    });
    assert.equal(r.timedOut, true);
    assert.ok(performance.now() - started < 4000);
    assert.ok(await eventually(() => sleeping().length === 0), "the child outlived the timeout");
  } finally {
    for (const pid of sleeping()) Deno.kill(pid, "SIGKILL");
  }
});

// --------------------------------------------------------------------------------- approvals

Deno.test("Red team approvals attack: a workspace script rewritten after its approval asks again", async () => {
  await using f = await shellFixture({ human: "queue" });
  const marker = join(f.outside, "PWNED");
  const tool = join(f.ws, "tool.sh");
  script(tool, "echo harmless");
  const pending = await failure(
    f.runtime.primitives.shell.run(f.pid, { argv: ["./tool.sh"] }),
    HumanPendingError,
  );
  f.runtime.human.approve(pending.request, { by: "operator" });
  // The human approved what tool.sh said then; the agent now rewrites it and runs it again.
  script(tool, `touch '${marker}'`);
  await f.runtime.primitives.shell.run(f.pid, { argv: ["./tool.sh"] }).catch(() => {});
  assert.equal(exists(marker), false, "the approval ran code the human never saw");
});
