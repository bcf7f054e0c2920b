/**
 * The shell shield (`runtime/primitives/_shield.ts`, `createRuntime({shieldShell: true})`, what
 * `libos agent --yes` runs under): every command inside the OS wall with secret-bearing files
 * covered and `.git`/`.gitmodules` read-only — tested as attacks with real commands in the wall,
 * each beside an unshielded control that shows the command itself works.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { LibosError } from "../runtime/base/errors.ts";
import { SHIELD_SCAN_BUDGET, shieldMounts } from "../runtime/primitives/shell.ts";
import { hostFilesystem } from "../runtime/providers/filesystem.ts";
import { exists, runWorkspaceScript, shellFixture, wallTestMode } from "./shell_fixture.ts";

const mode = wallTestMode();
const SECRET = "SECRET-shield-2c41";

/** A workspace with secrets (one hard-linked, one reached through a symlink) and a repository. */
function seed(ws: string): void {
  Deno.writeTextFileSync(join(ws, ".env"), `TOKEN=${SECRET}\n`);
  Deno.mkdirSync(join(ws, "deploy"));
  Deno.writeTextFileSync(join(ws, "deploy", ".env.production"), `TOKEN=${SECRET}\n`);
  Deno.writeTextFileSync(join(ws, "id_ed25519"), `${SECRET}\n`);
  Deno.linkSync(join(ws, "id_ed25519"), join(ws, "backup.txt"));
  Deno.symlinkSync(".env", join(ws, "innocent.txt"));
  Deno.writeTextFileSync(join(ws, "notes.txt"), "plain notes\n");
  Deno.mkdirSync(join(ws, ".git", "hooks"), { recursive: true });
  Deno.writeTextFileSync(join(ws, ".git", "config"), "[core]\n\tbare = false\n");
  Deno.writeTextFileSync(join(ws, ".gitmodules"), "");
}

Deno.test("shieldMounts() finds every secret-bearing file (and a hard link to one) and the protected paths, skipping symlinks", () => {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-shield-" }));
  try {
    seed(ws);
    const mounts = shieldMounts(hostFilesystem(), ws);
    assert.deepEqual(
      [...mounts.masked].map((p) => p.slice(ws.length + 1)).sort(),
      [".env", "backup.txt", "deploy/.env.production", "id_ed25519"],
    );
    assert.deepEqual(
      [...mounts.readOnly].map((p) => p.slice(ws.length + 1)).sort(),
      [".git", ".gitmodules"],
    );
    assert.equal(mounts.incomplete, null);
    // A workspace larger than the budget is incomplete (the primitive then refuses).
    for (let i = 0; i < 3; i++) Deno.mkdirSync(join(ws, `d${i}`));
    assert.match(shieldMounts(hostFilesystem(), ws, 2).incomplete ?? "", /more than 2 directories/);
    assert.ok(SHIELD_SCAN_BUDGET >= 10_000);
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
});

Deno.test({
  name:
    "Shield attack: shielded commands read no secret (directly, recursively, through a symlink or a hard link) and change no .git file; unshielded, the same commands do (control)",
  ignore: mode.ignore,
  fn: async () => {
    const script = [
      "cat .env innocent.txt backup.txt deploy/.env.production 2>/dev/null",
      "grep -r TOKEN . 2>/dev/null",
      "echo planted > .git/hooks/pre-commit 2>/dev/null",
      "echo '[core] hooksPath = x' >> .git/config 2>/dev/null",
      "echo '[submodule]' >> .gitmodules 2>/dev/null",
      "cp .env copy.txt 2>/dev/null",
      "cat notes.txt",
      "true",
    ].join("; ");
    await using shielded = await shellFixture({
      level: "always_allow",
      wall: true,
      extra: { shieldShell: true },
    });
    seed(shielded.ws);
    const r = await runWorkspaceScript(shielded, script);
    assert.equal(r.wall, true);
    assert.ok(!r.stdout.includes(SECRET), `no secret in ${JSON.stringify(r.stdout)}`);
    assert.match(r.stdout, /plain notes/, "the command ran");
    assert.equal(Deno.readTextFileSync(join(shielded.ws, ".env")), `TOKEN=${SECRET}\n`);
    assert.ok(!exists(join(shielded.ws, ".git", "hooks", "pre-commit")), "no hook");
    assert.equal(
      Deno.readTextFileSync(join(shielded.ws, ".git", "config")),
      "[core]\n\tbare = false\n",
    );
    assert.equal(Deno.readTextFileSync(join(shielded.ws, ".gitmodules")), "");
    assert.ok(
      !exists(join(shielded.ws, "copy.txt")) ||
        !Deno.readTextFileSync(join(shielded.ws, "copy.txt")).includes(SECRET),
    );
    // Control: the same command without the shield reads and writes all of it.
    await using open = await shellFixture({ level: "always_allow", wall: true });
    seed(open.ws);
    const c = await runWorkspaceScript(open, script);
    assert.ok(c.stdout.includes(SECRET), "unshielded, the secret is read");
    assert.ok(exists(join(open.ws, ".git", "hooks", "pre-commit")), "unshielded, planted");
  },
});

Deno.test("Shield attack: with the OS wall off, a shielded runtime runs no command at all (shield_unavailable), and uses up no approval", async () => {
  await using f = await shellFixture({
    level: "always_allow",
    wall: false,
    extra: { shieldShell: true },
  });
  seed(f.ws);
  const error = await f.runtime.primitives.shell.run(f.pid, { argv: ["cat", ".env"] }).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof LibosError, String(error));
  assert.equal(error.code, "shield_unavailable");
  assert.match(error.message, /install bubblewrap/);
  const runs = f.runtime.audit.query({ action: "action.intent", limit: 10 });
  assert.equal(runs.length, 0, "nothing was started");
});

Deno.test("shieldMounts() protects a repository's core.hooksPath (husky's .husky): hooks kept in ordinary files run on the user's next commit", () => {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-shield-" }));
  try {
    Deno.mkdirSync(join(ws, ".git"));
    Deno.writeTextFileSync(join(ws, ".git", "config"), "[core]\n\thooksPath = .husky\n");
    Deno.mkdirSync(join(ws, ".husky"));
    Deno.writeTextFileSync(join(ws, ".husky", "pre-commit"), "npm test\n");
    const mounts = shieldMounts(hostFilesystem(), ws);
    assert.deepEqual([...mounts.readOnly].sort(), [join(ws, ".git"), join(ws, ".husky")]);
    assert.equal(mounts.incomplete, null);
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
});

Deno.test("shieldMounts() fails closed where it cannot see core.hooksPath (attack: the setting past 64 KiB of padding, or in an included file, leaves .husky writable)", () => {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-shield-" }));
  try {
    Deno.mkdirSync(join(ws, ".git"));
    Deno.mkdirSync(join(ws, ".husky"));
    const config = join(ws, ".git", "config");
    const padding = `[core]\n${"\t# padding\n".repeat(8_000)}`;
    Deno.writeTextFileSync(config, `${padding}\thooksPath = .husky\n`);
    assert.match(shieldMounts(hostFilesystem(), ws).incomplete ?? "", /over 65536 bytes/);
    Deno.writeTextFileSync(join(ws, "hooks.inc"), "[core]\n\thooksPath = .husky\n");
    Deno.writeTextFileSync(config, "[include]\n\tpath = ../hooks.inc\n");
    assert.match(shieldMounts(hostFilesystem(), ws).incomplete ?? "", /includes other files/);
    // Control: the same setting, seen, protects the directory.
    Deno.writeTextFileSync(config, "[core]\n\thooksPath = .husky\n");
    const seen = shieldMounts(hostFilesystem(), ws);
    assert.equal(seen.incomplete, null);
    assert.ok(seen.readOnly.includes(join(ws, ".husky")));
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
});
