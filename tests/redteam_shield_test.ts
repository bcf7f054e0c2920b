/**
 * Red-team tests of the shell shield (`runtime/primitives/_shield.ts`, `shieldShell: true`, what
 * `libos agent --yes` runs under): real commands in the real OS wall try to read a
 * secret-bearing file's content or change a protected path. Each test asserts the secure outcome
 * beside a control that proves the command ran.
 *
 * The first version of the shield had seven holes found here (a secret moved into a new `.GIT`
 * or `.libos`, a hard link inside `.git`, directories and files with names that are not UTF-8,
 * a directory locked with chmod, `.git` as a `gitdir:` file or a symlink, `.libos` as a
 * symlink); the walk now looks inside protected paths, follows `gitdir:` files and protected
 * symlinks to their real place, and fails closed on anything it cannot look at.
 */
import assert from "node:assert/strict";
import { LibosError } from "../runtime/base/errors.ts";
import { join } from "node:path";
import {
  exists,
  runWorkspaceScript,
  type ShellFixture,
  shellFixture,
  wallTestMode,
} from "./shell_fixture.ts";

const mode = wallTestMode();
const SECRET = "SECRET-redteam-7f3a";
const NOTES = "plain-notes-c0ffee";
const GIT_CONFIG = "[core]\n\tbare = false\n";

/** A workspace with secrets at the top, one level down and deep down, and a repository. */
function seed(ws: string): void {
  Deno.writeTextFileSync(join(ws, ".env"), `TOKEN=${SECRET}\n`);
  Deno.mkdirSync(join(ws, "deploy"));
  Deno.writeTextFileSync(join(ws, "deploy", ".env.production"), `TOKEN=${SECRET}\n`);
  Deno.writeTextFileSync(join(ws, "notes.txt"), `${NOTES}\n`);
  Deno.mkdirSync(join(ws, ".git", "hooks"), { recursive: true });
  Deno.writeTextFileSync(join(ws, ".git", "config"), GIT_CONFIG);
}

/** Runs `script` as a workspace script, in the wall. */
async function sh(f: ShellFixture, script: string, name = "run.sh") {
  const r = await runWorkspaceScript(f, script, name);
  assert.equal(r.wall, true, "the run was walled");
  return r;
}

/** A shielded fixture (always_allow, the wall, the shield), seeded unless `bare`. */
async function shielded(bare = false): Promise<ShellFixture> {
  const f = await shellFixture({ level: "always_allow", wall: true, extra: { shieldShell: true } });
  if (!bare) seed(f.ws);
  return f;
}

/**
 * Runs `script` (its last line prints the notes) and asserts it ran and read no secret, against
 * the holders seen `before`.
 */
async function sealedRun(
  f: ShellFixture,
  before: ReadonlySet<string>,
  script: string | readonly string[],
  name?: string,
) {
  const r = await sh(f, typeof script === "string" ? script : script.join("\n"), name);
  assert.match(r.stdout, new RegExp(NOTES), "the command ran");
  assertNoSecret(f.ws, before, r);
}

/** The identities (`dev:ino`) of the regular files under `dir` whose content holds the secret. */
function holders(dir: string, out = new Set<string>()): Set<string> {
  for (const entry of Deno.readDirSync(dir)) {
    const path = join(dir, entry.name);
    try {
      if (entry.isDirectory) holders(path, out);
      else if (entry.isFile && Deno.readTextFileSync(path).includes(SECRET)) {
        const info = Deno.lstatSync(path);
        out.add(`${info.dev}:${info.ino}`);
      }
    } catch { /* unreadable, or a name Deno cannot spell */ }
  }
  return out;
}

/**
 * The secure outcome: the marker is neither in the output nor in a workspace file that did not
 * hold it before the run (`before`, from {@link holders}: a copy is a new file).
 */
function assertNoSecret(
  ws: string,
  before: ReadonlySet<string>,
  r: { stdout: string; stderr: string },
): void {
  assert.ok(!r.stdout.includes(SECRET), `secret read: ${JSON.stringify(r.stdout)}`);
  assert.ok(!r.stderr.includes(SECRET), `secret read: ${JSON.stringify(r.stderr)}`);
  const copies = [...holders(ws)].filter((key) => !before.has(key));
  assert.deepEqual(copies, [], "the secret was copied into a workspace file");
}

/** Runs a host shell command (fixture setup only, never through libos). */
function hostSh(cwd: string, script: string): void {
  const out = new Deno.Command("/bin/sh", { args: ["-c", script], cwd, stderr: "piped" })
    .outputSync();
  if (!out.success) throw new Error(`${script}: ${new TextDecoder().decode(out.stderr)}`);
}

// ---------------------------------------------------------------------------------------------
// Attacks that hold.
// ---------------------------------------------------------------------------------------------

/** The shielded run was refused as incomplete (nothing ran); returns the error. */
async function refused(run: Promise<unknown>): Promise<LibosError> {
  const error = await run.then(() => undefined, (e: unknown) => e);
  assert.ok(error instanceof LibosError, `refused, not run: ${String(error)}`);
  assert.equal(error.code, "shield_incomplete");
  return error;
}

Deno.test({
  name:
    "attack: case variants, every secret glob, deep nesting; read directly, with grep -r, find|xargs and a symlink",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shielded();
    let deep = f.ws;
    for (let i = 0; i < 80; i++) deep = join(deep, "d");
    Deno.mkdirSync(deep, { recursive: true });
    for (
      const name of [".ENV", ".Env.Local", "KEY.PEM", "ID_RSA", "Id_Ed25519.pub", ".NPMRC"]
    ) Deno.writeTextFileSync(join(f.ws, name), `${SECRET}\n`);
    for (const name of [".netrc", ".git-credentials", ".Env.deep"]) {
      Deno.writeTextFileSync(join(deep, name), `${SECRET}\n`);
    }
    const before = holders(f.ws);
    await sealedRun(
      f,
      before,
      [
        "cat .ENV .Env.Local KEY.PEM ID_RSA Id_Ed25519.pub .NPMRC 2>/dev/null",
        "grep -ra TOKEN . 2>/dev/null",
        "grep -ra 'redteam-[7]f3a' . 2>/dev/null",
        "find . -type f -print0 | xargs -0 cat 2>/dev/null | grep -a 'redteam-[7]f3a'",
        "ln -s deploy/.env.production link.txt; cat link.txt 2>/dev/null",
        "cat .env deploy/.env.production > copy.txt 2>/dev/null",
        "tar cf - . 2>/dev/null | grep -a 'redteam-[7]f3a'",
        "cp -r . /tmp/copy 2>/dev/null; grep -ra 'redteam-[7]f3a' /tmp/copy",
        "cat notes.txt",
      ].join("\n"),
    );
  },
});

Deno.test({
  name:
    "attack: the masked file by another route (/proc/self/root, /proc/1/root, /proc/*/cwd, ../ws, every mount point, inherited fds)",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shielded();
    const before = holders(f.ws);
    await sealedRun(
      f,
      before,
      [
        'W="$PWD"',
        'cat /proc/self/root"$W"/.env /proc/1/root"$W"/.env /proc/self/cwd/.env /proc/1/cwd/.env 2>/dev/null',
        'cat "$W"/../ws/.env "$W"/./deploy/../.env /proc/self/cwd/deploy/.env.production 2>/dev/null',
        // Every mount point, with the workspace's path and its last parts under it.
        "for mp in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do",
        '  cat "$mp$W/.env" "$mp/ws/.env" "$mp/.env" 2>/dev/null',
        "done",
        // Inherited descriptors that are files (a pipe would block).
        'for fd in /proc/self/fd/* /proc/1/fd/*; do [ -f "$fd" ] && head -c 4096 "$fd"; done 2>/dev/null',
        'for p in /proc/[0-9]*; do cat "$p/root$W/.env" 2>/dev/null; done',
        "grep -rsa 'redteam-[7]f3a' /tmp /var/tmp /dev/shm 2>/dev/null",
        "cat notes.txt",
      ].join("\n"),
    );
  },
});

Deno.test({
  name:
    "attack: mount tricks in the wall (umount, umount -l, mount --move, unshare -Urm then umount / a plain bind / an overlay with the workspace as lower layer)",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shielded();
    const before = holders(f.ws);
    await sealedRun(
      f,
      before,
      [
        'W="$PWD"',
        "umount .env 2>/dev/null; umount -l .env 2>/dev/null; cat .env 2>/dev/null",
        "mkdir -p /tmp/mv; mount --move .env /tmp/mv/x 2>/dev/null; cat .env 2>/dev/null",
        "unshare -Urm sh -c '",
        '  umount -l "$0/.env" 2>/dev/null; cat "$0/.env" 2>/dev/null',
        '  mkdir -p /tmp/b && mount --bind "$0" /tmp/b 2>/dev/null && cat /tmp/b/.env 2>/dev/null',
        "  mkdir -p /tmp/o/l /tmp/o/m",
        '  mount -t overlay overlay -o "lowerdir=$0:/tmp/o/l" /tmp/o/m 2>/dev/null && cat /tmp/o/m/.env /tmp/o/m/deploy/.env.production 2>/dev/null',
        '  mount -t overlay overlay -o "lowerdir=$0/deploy:/tmp/o/l" /tmp/o/m 2>/dev/null && cat /tmp/o/m/.env.production 2>/dev/null',
        '\' "$W" 2>/dev/null',
        "cat notes.txt",
      ].join("\n"),
    );
    assert.equal(Deno.readTextFileSync(join(f.ws, ".env")), `TOKEN=${SECRET}\n`);
  },
});

Deno.test({
  name:
    "attack: change a masked file or a protected path (ln, mv, rm, write, chmod; a hook, git config, replace .git; rename the secret's directory and read it there)",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shielded();
    Deno.writeTextFileSync(join(f.ws, ".gitmodules"), "");
    const before = holders(f.ws);
    await sealedRun(
      f,
      before,
      [
        "ln .env hl.txt 2>/dev/null; cat hl.txt 2>/dev/null",
        "ln deploy/.env.production hl2.txt 2>/dev/null; cat hl2.txt 2>/dev/null",
        "mv .env moved.txt 2>/dev/null; cat moved.txt 2>/dev/null",
        "rm -f .env 2>/dev/null; echo overwritten > .env 2>/dev/null; chmod 666 .env 2>/dev/null",
        "echo planted > .git/hooks/pre-commit 2>/dev/null",
        "git config --file .git/config core.hooksPath /tmp 2>/dev/null",
        "mv .git g2 2>/dev/null || rm -rf .git 2>/dev/null; mkdir -p .git/hooks 2>/dev/null",
        "echo planted > .git/hooks/post-checkout 2>/dev/null",
        "echo '[submodule]' > .gitmodules 2>/dev/null; rm -f .gitmodules 2>/dev/null",
        // The secret's directory can be renamed; the mask moves with it in this run.
        "mv deploy d2 && cat d2/.env.production 2>/dev/null",
        "cat notes.txt",
      ].join("\n"),
    );
    assert.equal(Deno.readTextFileSync(join(f.ws, ".env")), `TOKEN=${SECRET}\n`);
    assert.ok(Deno.lstatSync(join(f.ws, ".git")).isDirectory);
    assert.ok(!exists(join(f.ws, ".git", "hooks", "pre-commit")), "no hook");
    assert.ok(!exists(join(f.ws, ".git", "hooks", "post-checkout")), "no hook");
    assert.equal(Deno.readTextFileSync(join(f.ws, ".git", "config")), GIT_CONFIG);
    assert.equal(Deno.readTextFileSync(join(f.ws, ".gitmodules")), "");
    // The rename happened on the host: the next run masks the secret at its new place.
    assert.ok(exists(join(f.ws, "d2", ".env.production")), "the directory was renamed");
    await sealedRun(f, before, "cat d2/.env.production 2>/dev/null; cat notes.txt");
  },
});

Deno.test({
  name:
    "attack: a background process left by one run (nohup, setsid) swaps a secret's directory for a decoy after the next run's walk",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shielded();
    const swap =
      "sleep 1; echo alive > bg_marker.txt; mv deploy d2; mkdir deploy; echo decoy > deploy/.env.production";
    const before = holders(f.ws);
    const first = await sh(
      f,
      [
        `nohup sh -c '${swap}' >/dev/null 2>&1 &`,
        `setsid sh -c '${swap}' >/dev/null 2>&1 < /dev/null &`,
        "echo started",
      ].join("\n"),
    );
    assert.match(first.stdout, /started/, "the command ran");
    // The next run starts while the background process (if it lived) would be sleeping.
    await sealedRun(
      f,
      before,
      "sleep 2; cat d2/.env.production deploy/.env.production 2>/dev/null; cat notes.txt",
      "run2.sh",
    );
    await new Promise((r) => setTimeout(r, 1500));
    assert.ok(!exists(join(f.ws, "bg_marker.txt")), "the background process died with its run");
    assert.equal(
      Deno.readTextFileSync(join(f.ws, "deploy", ".env.production")),
      `TOKEN=${SECRET}\n`,
    );
  },
});

Deno.test({
  name:
    "attack: two concurrent runs, one swapping the secret's directory for a decoy while the other's walk runs",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shielded();
    Deno.writeTextFileSync(
      join(f.ws, "a.sh"),
      "sleep 0.5; mv deploy d2; mkdir deploy; echo decoy > deploy/.env.production; echo A-ran\n",
    );
    Deno.writeTextFileSync(
      join(f.ws, "b.sh"),
      "cat d2/.env.production deploy/.env.production 2>/dev/null; echo B-ran\n",
    );
    const shell = f.runtime.primitives.shell;
    const before = holders(f.ws);
    const [a, b] = await Promise.all([
      shell.run(f.pid, { argv: ["sh", "a.sh"] }),
      new Promise((r) => setTimeout(r, 100)).then(() => shell.run(f.pid, { argv: ["sh", "b.sh"] })),
    ]);
    assert.match(a.stdout, /A-ran/);
    assert.match(b.stdout, /B-ran/);
    assertNoSecret(f.ws, before, b);
    assert.equal(Deno.readTextFileSync(join(f.ws, "d2", ".env.production")), `TOKEN=${SECRET}\n`);
  },
});

Deno.test({
  name:
    "attack: hide a secret's directory from the walk with chmod 000 / 111 — as root it reads past the mode; otherwise the walk cannot read the directory and the next run is refused",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shielded();
    Deno.mkdirSync(join(f.ws, "keys"));
    Deno.writeTextFileSync(join(f.ws, "keys", "id_rsa"), `${SECRET}\n`);
    const before = holders(f.ws);
    const first = await sh(f, "chmod 000 deploy && chmod 111 keys && echo locked");
    assert.match(first.stdout, /locked/, "the command ran");
    const second = await sh(
      f,
      "cat keys/id_rsa 2>/dev/null; chmod 755 deploy keys; cat deploy/.env.production keys/id_rsa 2>/dev/null; cat notes.txt",
      "run2.sh",
    ).catch((error: unknown) => error);
    if (second instanceof LibosError) {
      // Not root: the walk cannot read the locked directory, so nothing runs.
      assert.equal(second.code, "shield_incomplete");
      assert.match(second.message, /cannot read the directory/);
    } else {
      // Root reads past the mode: the walk sees the secrets and masks them.
      assert.ok(!(second instanceof Error), String(second));
      const ran = second as Awaited<ReturnType<typeof sh>>;
      assert.match(ran.stdout, new RegExp(NOTES), "the command ran");
      assertNoSecret(f.ws, before, ran);
    }
  },
});

// ---------------------------------------------------------------------------------------------
// Holes of the first version, closed.
// ---------------------------------------------------------------------------------------------

for (const dir of [".GIT", ".libos"]) {
  Deno.test({
    name:
      `attack: move a secret's directory into a new \`${dir}\` (a protected path); the walk looks inside protected paths too, so the next run reads nothing of it`,
    ignore: mode.ignore,
    fn: async () => {
      await using f = await shielded();
      // `.GIT` matches `**/.git` (globs are case-insensitive) but means nothing to git on Linux.
      assert.ok(!exists(join(f.ws, dir)));
      const before = holders(f.ws);
      const first = await sh(f, `mkdir ${dir} && mv deploy ${dir}/deploy && echo moved`);
      assert.match(first.stdout, /moved/, "the command ran");
      await sealedRun(
        f,
        before,
        `cat ${dir}/deploy/.env.production 2>/dev/null; cat notes.txt`,
        "run2.sh",
      );
    },
  });
}

Deno.test({
  name:
    "attack: rename a secret's directory to a non-UTF-8 name (Deno's readDir mangles it, the walk could not open it) — the next run is refused (shield_incomplete)",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shielded();
    const first = await sh(f, "mv deploy \"$(printf 'd\\377')\" && echo moved");
    assert.match(first.stdout, /moved/, "the command ran");
    // The walk cannot name the directory back to the host: the run is refused, not unshielded.
    const second = await refused(
      sh(f, "cat \"$(printf 'd\\377')\"/.env.production 2>/dev/null; cat notes.txt", "run2.sh"),
    );
    assert.match(second.message, /not UTF-8/);
  },
});

Deno.test({
  name:
    "attack: a secret whose own name is not UTF-8 (`.env.caf\\xe9`, Latin-1) cannot be masked by name — the run is refused (shield_incomplete)",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shielded();
    hostSh(f.ws, `printf 'TOKEN=${SECRET}\\n' > "$(printf '.env.caf\\351')"`);
    const before = holders(f.ws);
    // The secret cannot be named back to the host to mask it: the run is refused.
    const r = await refused(sh(f, "cat .env.caf* 2>/dev/null; cat notes.txt"));
    assert.match(r.message, /not UTF-8/);
    assert.deepEqual(holders(f.ws), before);
  },
});

Deno.test({
  name:
    "attack: a hard link to a secret inside `.git` is masked (the walk descends into protected paths)",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shielded();
    Deno.mkdirSync(join(f.ws, ".git", "info"));
    Deno.linkSync(join(f.ws, ".env"), join(f.ws, ".git", "info", "env.bak"));
    const before = holders(f.ws);
    await sealedRun(f, before, "cat .git/info/env.bak 2>/dev/null; cat notes.txt");
  },
});

Deno.test({
  name:
    "attack: `.git` as a `gitdir:` file (git init --separate-git-dir) into the workspace: the file is read-only, the repository it names is not; a hook and core.hooksPath are planted",
  ignore: mode.ignore,
  fn: async () => {
    // Its own repository layout, not the seeded one.
    await using f = await shielded(true);
    Deno.writeTextFileSync(join(f.ws, "notes.txt"), `${NOTES}\n`);
    const realgit = join(f.ws, "realgit");
    hostSh(f.ws, `git init -q --separate-git-dir="${realgit}" .`);
    assert.match(Deno.readTextFileSync(join(f.ws, ".git")), /^gitdir: /);
    const config = Deno.readTextFileSync(join(realgit, "config"));
    const r = await sh(
      f,
      [
        "echo 'gitdir: /tmp' > .git 2>/dev/null",
        "printf '#!/bin/sh\\necho pwned\\n' > realgit/hooks/pre-commit 2>/dev/null",
        "git config core.hooksPath /tmp/evil-hooks 2>/dev/null",
        "cat notes.txt",
      ].join("\n"),
    );
    assert.match(r.stdout, new RegExp(NOTES), "the command ran");
    assert.match(Deno.readTextFileSync(join(f.ws, ".git")), /^gitdir: /, ".git file unchanged");
    assert.ok(!exists(join(realgit, "hooks", "pre-commit")), "a hook was planted in realgit/");
    assert.equal(Deno.readTextFileSync(join(realgit, "config")), config, "git config changed");
  },
});

Deno.test({
  name:
    "attack: `.git` and `.libos` as symlinks to workspace directories: the walk skips symlinks, so neither is read-only and a hook / policy is planted",
  ignore: mode.ignore,
  fn: async () => {
    // Its own repository layout, not the seeded one.
    await using f = await shielded(true);
    Deno.writeTextFileSync(join(f.ws, "notes.txt"), `${NOTES}\n`);
    Deno.mkdirSync(join(f.ws, "repo.git", "hooks"), { recursive: true });
    Deno.writeTextFileSync(join(f.ws, "repo.git", "config"), GIT_CONFIG);
    Deno.symlinkSync("repo.git", join(f.ws, ".git"));
    Deno.mkdirSync(join(f.ws, "libos-config"));
    Deno.writeTextFileSync(join(f.ws, "libos-config", "policy.json"), "{}\n");
    Deno.symlinkSync("libos-config", join(f.ws, ".libos"));
    const r = await sh(
      f,
      [
        "echo planted > .git/hooks/pre-commit 2>/dev/null",
        "echo '[core] hooksPath = /tmp' >> .git/config 2>/dev/null",
        'echo \'{"allow":"*"}\' > .libos/policy.json 2>/dev/null',
        "cat notes.txt",
      ].join("\n"),
    );
    assert.match(r.stdout, new RegExp(NOTES), "the command ran");
    assert.ok(!exists(join(f.ws, "repo.git", "hooks", "pre-commit")), "a hook was planted");
    assert.equal(Deno.readTextFileSync(join(f.ws, "repo.git", "config")), GIT_CONFIG);
    assert.equal(Deno.readTextFileSync(join(f.ws, "libos-config", "policy.json")), "{}\n");
  },
});
