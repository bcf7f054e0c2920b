import assert from "node:assert/strict";
import { join } from "node:path";
import { hostFilesystem } from "../providers/filesystem.ts";
import {
  findRepositories,
  GIT_FIXED_CONFIG,
  gitConfigEnv,
  gitOverrides,
  neutralValue,
  repositoryKeys,
} from "./_git_hardening.ts";

Deno.test("neutralValue() neutralises every key that names a program, whatever its case", () => {
  const table: [string, string | undefined][] = [
    ["core.fsmonitor", "false"],
    ["CORE.FsMonitor", "false"],
    ["diff.external", ""],
    ["Diff.External", ""],
    ["core.sshCommand", ""],
    ["filter.lfs.clean", ""],
    ["FILTER.evil.Smudge", ""],
    ["filter.x.process", ""],
    ["diff.pdf.textconv", ""],
    ["diff.x.command", ""],
    ["merge.ours.driver", ""],
    ["credential.https://example.com.helper", ""],
    ["alias.st", ""],
    ["ALIAS.anything.at.all", ""],
    ["pager.log", "false"],
    ["core.pager", "cat"],
    ["gpg.program", "false"],
    ["remote.origin.uploadpack", ""],
    ["submodule.lib.update", "checkout"],
    ["gpg.ssh.defaultKeyCommand", ""],
    ["tar.tgz.command", ""],
    ["difftool.vim.path", ""],
    ["interactive.diffFilter", ""],
    ["imap.tunnel", ""],
    ["sendemail.work.sendmailCmd", ""],
    ["guitool.run.cmd", ""],
    // Unknown to the tables, named like a program: neutralised by shape.
    ["future.thing.launchCommand", ""],
    ["newsection.preHook", ""],
    // Harmless keys stay as the repository set them.
    ["user.name", undefined],
    ["core.autocrlf", undefined],
    ["remote.origin.url", undefined],
    ["filter.lfs.required", undefined],
    ["diff.renames", undefined],
    // Malformed keys are not keys.
    ["nodot", undefined],
    [".leading", undefined],
    ["trailing.", undefined],
  ];
  for (const [key, expected] of table) {
    assert.equal(neutralValue(key), expected, key);
  }
});

Deno.test("repositoryKeys() keeps local and worktree entries only", () => {
  const output = [
    "local",
    "core.fsmonitor",
    "command",
    "core.hooksPath",
    "worktree",
    "alias.st",
    "global",
    "alias.g",
    "system",
    "diff.external",
    "local",
    "",
  ].join("\0");
  assert.deepEqual(repositoryKeys(output), ["core.fsmonitor", "alias.st"]);
  assert.deepEqual(repositoryKeys(""), []);
});

Deno.test("gitOverrides() starts with the fixed keys and adds each neutralised key once", () => {
  const fixed = GIT_FIXED_CONFIG.length;
  const out = gitOverrides([
    "core.fsmonitor", // already fixed: not repeated
    "CORE.FSMONITOR",
    "alias.st",
    "ALIAS.st", // same key for git
    "alias.ST", // the variable is case-insensitive too
    "filter.lfs.clean",
    "filter.LFS.clean", // another subsection: subsections are case-sensitive
    "user.name", // harmless: not overridden
  ]);
  assert.deepEqual(out.slice(0, fixed), GIT_FIXED_CONFIG.map(([k, v]) => [k, v]));
  assert.deepEqual(out.slice(fixed), [
    ["alias.st", ""],
    ["filter.lfs.clean", ""],
    ["filter.LFS.clean", ""],
  ]);
});

Deno.test("gitConfigEnv() numbers each pair and counts them", () => {
  assert.deepEqual(gitConfigEnv([["a.b", "1"], ["c.d", ""]]), {
    GIT_CONFIG_COUNT: "2",
    GIT_CONFIG_KEY_0: "a.b",
    GIT_CONFIG_VALUE_0: "1",
    GIT_CONFIG_KEY_1: "c.d",
    GIT_CONFIG_VALUE_1: "",
  });
});

Deno.test("findRepositories() finds the enclosing repository and every nested one, without following symlinks", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-gitscan-" }));
  try {
    const outer = join(root, "outer");
    const sub = join(outer, "src", "deep");
    const nested = join(outer, "pkg", "lib");
    const worktree = join(outer, "wt");
    const elsewhere = join(root, "elsewhere");
    for (const dir of [join(outer, ".git"), sub, join(nested, ".git"), worktree, elsewhere]) {
      Deno.mkdirSync(dir, { recursive: true });
    }
    // A linked worktree or submodule has a `.git` file.
    Deno.writeTextFileSync(join(worktree, ".git"), "gitdir: ../.git/worktrees/wt\n");
    // A repository reachable only through a symlink is not walked into.
    Deno.mkdirSync(join(elsewhere, "linked", ".git"), { recursive: true });
    Deno.symlinkSync(elsewhere, join(outer, "link"));
    // A repository-looking directory inside .git is not a repository.
    Deno.mkdirSync(join(outer, ".git", "modules", "m", ".git"), { recursive: true });

    const fs = hostFilesystem();
    const scan = findRepositories(fs, outer);
    assert.equal(scan.partial, false);
    assert.deepEqual(scan.unreadable, []);
    assert.deepEqual([...scan.repositories].sort(), [nested, outer, worktree].sort());

    // From a directory inside the outer repository: the enclosing one, upwards.
    const below = findRepositories(fs, sub);
    assert.deepEqual(below.repositories, [outer]);

    // A budget smaller than the tree stops the walk and says so.
    const cut = findRepositories(fs, outer, 1);
    assert.equal(cut.partial, true);
    assert.ok(cut.repositories.includes(outer), "the enclosing repository is always found");
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("findRepositories() reports what it cannot look at instead of taking it for no repository (attack: an enclosing repository behind a missing permission, a name that is not UTF-8)", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-gitscan-" }));
  try {
    const outer = join(root, "outer");
    const ws = join(outer, "ws");
    Deno.mkdirSync(join(outer, ".git"), { recursive: true });
    Deno.mkdirSync(join(ws, "src"), { recursive: true });
    // A directory whose name is not UTF-8 (Deno reads it back with U+FFFD).
    new Deno.Command("/bin/sh", { args: ["-c", `mkdir "$(printf 'ws/bad\\377')"`], cwd: outer })
      .outputSync();
    const host = hostFilesystem();
    // What the CLI's bootstrap permissions make of a directory above the workspace.
    const fs = {
      ...host,
      stat: (path: string) => {
        if (path === join(outer, ".git")) throw new Deno.errors.NotCapable("Requires read access");
        return host.stat(path);
      },
    };
    const scan = findRepositories(fs, ws);
    assert.ok(!scan.repositories.includes(outer), "the enclosing repository was not seen");
    assert.ok(scan.unreadable.includes(outer), "…and that is said, not taken for none");
    assert.ok(
      scan.unreadable.some((dir) => dir.includes("\uFFFD")),
      "a name the host cannot spell back is reported too",
    );
    // Control: with the permission the enclosing repository is found, and nothing is unreadable
    // but the non-UTF-8 directory.
    const seeing = findRepositories(host, ws);
    assert.deepEqual(seeing.repositories, [outer]);
    assert.equal(seeing.unreadable.length, 1);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
