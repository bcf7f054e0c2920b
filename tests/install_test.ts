/**
 * Installing libos as a command (issue 23): the README's command, `deno task install`, puts a
 * `libos` on the PATH that works from any directory with exactly the launcher's permissions, and
 * `deno uninstall` takes it away again.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "./_cli_sandbox.ts";
import { fixture } from "./agent_fixture.ts";
import { LIBOS_VERSION } from "../cli/version.ts";

const decoder = new TextDecoder();

/** The `deno.json` of the repository. */
function denoJson(): {
  version: string;
  tasks: Record<string, string>;
  permissions: Record<string, { read?: boolean; env?: string[]; run?: boolean }>;
} {
  return JSON.parse(Deno.readTextFileSync(join(REPO, "deno.json")));
}

/** A command's `--allow-*` and `--no-prompt` flags, sorted. */
function permissionFlags(command: string): string[] {
  return command.split(" ").filter((w) => w.startsWith("--allow-") || w === "--no-prompt").sort();
}

/** What a `--permission-set=NAME` of deno.json grants, as the flags that would grant it. */
function setFlags(set: { read?: boolean; env?: string[]; run?: boolean }): string[] {
  assert.deepEqual(Object.keys(set).sort(), ["env", "read", "run"], "no other permission");
  return [
    ...(set.read === true ? ["--allow-read"] : []),
    ...(set.env ? [`--allow-env=${set.env.join(",")}`] : []),
    ...(set.run === true ? ["--allow-run"] : []),
  ];
}

Deno.test("the install task grants exactly what the libos and demo tasks (the launcher's permission set) grant, and --version says deno.json's version", () => {
  const { version, tasks, permissions } = denoJson();
  assert.ok(tasks.install?.includes("cli/bootstrap.ts"), "control: it installs the launcher");
  // The tasks name the set (so `deno task libos` prints a short line); install cannot, and
  // spells the same permissions out.
  for (const task of [tasks.libos!, tasks.demo!]) {
    assert.match(task, /^deno run --quiet --no-prompt --permission-set=libos cli\/bootstrap\.ts\b/);
    assert.ok(!task.includes("--allow-"), task);
  }
  assert.deepEqual(
    permissionFlags(tasks.install!),
    [...setFlags(permissions.libos!), "--no-prompt"].sort(),
  );
  assert.equal(LIBOS_VERSION, version);
});

Deno.test("deno task install puts a libos on the PATH that runs from another directory (--version, a whole agent run there), and deno uninstall removes it", async () => {
  const root = Deno.makeTempDirSync({ prefix: "libos-install-" });
  try {
    const env = {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: join(root, "home"),
      DENO_INSTALL_ROOT: join(root, "install"),
      DENO_NO_UPDATE_CHECK: "1",
      NO_COLOR: "1",
    };
    // The Deno cache is shared with the suite's (the packages are not fetched again).
    const cache = Deno.env.get("DENO_DIR");
    const installed = await new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", "install"],
      cwd: REPO,
      clearEnv: true,
      env: { ...env, ...(cache ? { DENO_DIR: cache } : { XDG_CACHE_HOME: cacheHome() }) },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(installed.code, 0, decoder.decode(installed.stderr));
    const libos = join(root, "install", "bin", "libos");
    assert.ok(Deno.statSync(libos).isFile);

    // Another directory: a repository of the user's, nothing of libos in it.
    const workspace = join(root, "repo");
    Deno.mkdirSync(workspace);
    const script = fixture(workspace);
    const run = (args: string[]) =>
      new Deno.Command(libos, {
        args,
        cwd: workspace,
        clearEnv: true,
        env: {
          ...env,
          PATH: `${join(Deno.execPath(), "..")}:${env.PATH}`,
          XDG_STATE_HOME: join(root, "state"),
          ...(cache ? { DENO_DIR: cache } : { XDG_CACHE_HOME: cacheHome() }),
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
    const version = await run(["--version"]);
    assert.equal(version.code, 0, decoder.decode(version.stderr));
    assert.equal(
      decoder.decode(version.stdout),
      `libos ${LIBOS_VERSION} (Deno ${Deno.version.deno})\n`,
    );
    const agent = await run([
      "agent",
      "--goal",
      "Make the test pass",
      "--model",
      `replay:${script}`,
      "--yes",
    ]);
    const said = decoder.decode(agent.stdout) + decoder.decode(agent.stderr);
    assert.equal(agent.code, 0, said);
    assert.match(said, /exited/);
    assert.equal(
      Deno.readTextFileSync(join(workspace, "src", "mathlib.py")),
      "def add(a, b):\n    return a + b\n",
      "the agent fixed the repository it was started in",
    );
    assert.ok(
      [...Deno.readDirSync(join(root, "state", "libos"))].some((e) => e.name.endsWith(".db")),
      "its database is in the user's state directory, not in the repository",
    );

    const removed = await new Deno.Command(Deno.execPath(), {
      args: ["uninstall", "--global", "libos"],
      clearEnv: true,
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(removed.code, 0, decoder.decode(removed.stderr));
    assert.throws(() => Deno.statSync(libos), Deno.errors.NotFound);
    assert.deepEqual([...Deno.readDirSync(join(root, "install", "bin"))], [], "nothing left");
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

/** Where Deno keeps its cache for the user running the suite (HOME is replaced above). */
function cacheHome(): string {
  return Deno.env.get("XDG_CACHE_HOME") ?? join(Deno.env.get("HOME") ?? "/root", ".cache");
}
