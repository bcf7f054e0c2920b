/**
 * Red team of the OS wall through the real launcher: `deno task libos agent --yes` (its
 * bootstrap and exact Deno permissions, where the old wall's home check failed and the home
 * stayed visible), with a scripted model whose shell commands try to reach the host. Each
 * command writes what it saw into `out/NAME.txt` in the workspace; the test reads those files.
 *
 * Everything the attacks aim at lives under `/var/tmp`, not `/tmp`: the wall's private `/tmp`
 * would hide anything there whether or not the allowlist works. Every secret is first read on
 * the host by the test (it is there, and readable), and one command reads a workspace file into
 * `out/control.txt` (commands did run, inside the wall).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO, type Run } from "./_cli_sandbox.ts";
import { call, chatEndpoint, final, type SentMessage } from "./agent_fixture.ts";
import { wallTestMode } from "./shell_fixture.ts";

const mode = wallTestMode();

/** The host places of one scenario, under a fresh directory in /var/tmp. */
interface Host extends Disposable {
  readonly root: string;
  readonly ws: string;
  readonly home: string;
  readonly state: string;
  readonly config: string;
  readonly envFile: string;
  /** A host secret outside every known place (think /srv/app/.env). */
  readonly srv: string;
  /** A toolchain directory with one program, `libos-demo-tool`, in its bin/. */
  readonly toolchain: string;
}

const SECRETS = {
  ssh: "SSH-KEY-MARKER-4b1d",
  aws: "AWS-CRED-MARKER-8e2c",
  config: "CONFIG-KEY-MARKER-77aa",
  envFile: "ENV-FILE-MARKER-0f31",
  srv: "SRV-ENV-MARKER-c9d4",
  database: "DATABASE-MARKER-51e0",
} as const;
const NOTES = "WORKSPACE-NOTES-6a02";
const TOOL_OUTPUT = "TOOLCHAIN-RAN-3e7f";

function host(): Host {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "libos-rtw-" }));
  const at = (...parts: string[]) => join(root, ...parts);
  const write = (path: string, text: string, mode = 0o600) => {
    Deno.mkdirSync(join(path, ".."), { recursive: true });
    Deno.writeTextFileSync(path, text, { mode });
  };
  write(at("home", ".ssh", "id_ed25519"), `${SECRETS.ssh}\n`);
  write(at("home", ".aws", "credentials"), `[default]\naws_secret_access_key=${SECRETS.aws}\n`);
  write(at("config", "libos", "env"), `OPENAI_API_KEY=${SECRETS.config}\n`);
  write(at("envfile"), `OPENAI_API_KEY=${SECRETS.envFile}\n`);
  write(at("srv", "app", ".env"), `TOKEN=${SECRETS.srv}\n`);
  write(at("state", "libos", "planted.db"), `${SECRETS.database}\n`);
  write(at("toolchain", "bin", "libos-demo-tool"), `#!/bin/sh\necho ${TOOL_OUTPUT}\n`, 0o755);
  write(at("ws", "notes.txt"), `${NOTES}\n`, 0o644);
  Deno.mkdirSync(at("ws", "out"));
  return {
    root,
    ws: at("ws"),
    home: at("home"),
    state: at("state"),
    config: at("config"),
    envFile: at("envfile"),
    srv: at("srv"),
    toolchain: at("toolchain"),
    [Symbol.dispose]() {
      Deno.removeSync(root, { recursive: true });
    },
  };
}

/** Where Deno keeps its caches here: a test's own HOME must not send it elsewhere. */
function denoDir(): string {
  const out = new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stderr: "null" })
    .outputSync();
  return (JSON.parse(new TextDecoder().decode(out.stdout)) as { denoDir: string }).denoDir;
}

/** `deno task libos ARGS` in the workspace, with the scenario's home, config and state. */
async function libos(h: Host, env: Record<string, string>, ...args: string[]): Promise<Run> {
  const temp = Deno.makeTempDirSync({ prefix: "libos-rtw-tmp-" });
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", `--config=${join(REPO, "deno.json")}`, "libos", ...args],
      cwd: h.ws,
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        DENO_DIR: denoDir(),
        HOME: h.home,
        XDG_CONFIG_HOME: h.config,
        XDG_STATE_HOME: h.state,
        TMPDIR: temp,
        DENO_NO_UPDATE_CHECK: "1",
        NO_COLOR: "1",
        ...env,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder();
    return {
      status: output.code,
      stdout: text.decode(output.stdout),
      stderr: text.decode(output.stderr),
    };
  } finally {
    Deno.removeSync(temp, { recursive: true });
  }
}

/** A model turn that runs `script` with sh and keeps stdout and stderr in `out/NAME.txt`. */
const shTurn = (name: string, script: string) =>
  call("run_shell_command", { argv: ["sh", "-c", `{ ${script} ; } > out/${name}.txt 2>&1`] });

/** What one command kept, as the host sees it afterwards. */
function kept(h: Host, name: string): string {
  return Deno.readTextFileSync(join(h.ws, "out", `${name}.txt`));
}

/** Every secret marker found in any workspace file. */
function leaks(h: Host): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) walk(path);
      else if (entry.isFile) {
        const text = Deno.readTextFileSync(path);
        for (const marker of Object.values(SECRETS)) {
          if (text.includes(marker)) found.push(`${marker} in ${path}`);
        }
      }
    }
  };
  walk(h.ws);
  return found;
}

/** Runs the agent on `turns` under `--yes`; asserts it ran to the end. */
async function agent(h: Host, turns: string[], more: string[] = []): Promise<Run> {
  const script = join(h.root, "script.jsonl");
  Deno.writeTextFileSync(script, [...turns, final("done")].join("\n") + "\n");
  const run = await libos(
    h,
    { OPENAI_API_KEY: SECRETS.config },
    "agent",
    "--goal",
    "Look around",
    "--model",
    `replay:${script}`,
    "--yes",
    "--env-file",
    h.envFile,
    ...more,
  );
  assert.equal(run.status, 0, `the agent ran to its end: ${run.stdout}\n${run.stderr}`);
  return run;
}

Deno.test({
  name:
    "Wall attack through the launcher: the home, libos's config, state and env file, and host secrets elsewhere do not exist inside the wall",
  ignore: mode.ignore,
  fn: async () => {
    using h = host();
    // The host holds every secret, readable by this user: what follows is the wall's doing.
    for (
      const [path, marker] of [
        [join(h.home, ".ssh", "id_ed25519"), SECRETS.ssh],
        [join(h.home, ".aws", "credentials"), SECRETS.aws],
        [join(h.config, "libos", "env"), SECRETS.config],
        [h.envFile, SECRETS.envFile],
        [join(h.srv, "app", ".env"), SECRETS.srv],
        [join(h.state, "libos", "planted.db"), SECRETS.database],
      ] as const
    ) assert.match(Deno.readTextFileSync(path), new RegExp(marker));
    await agent(h, [
      shTurn("control", "cat notes.txt"),
      shTurn("ssh", `cat ${h.home}/.ssh/id_* ${h.home}/.ssh/*`),
      shTurn("aws", `cat ${h.home}/.aws/credentials; cat ~/.aws/credentials`),
      shTurn("config", `cat ${h.config}/libos/env`),
      shTurn("envfile", `cat ${h.envFile}`),
      shTurn("srv", `cat ${h.srv}/app/.env; grep -r TOKEN ${h.root} /var/tmp`),
      shTurn("state", `ls -la ${h.state}/libos; cat ${h.state}/libos/*`),
      shTurn("find", `find / -xdev -name '*.db' -o -name credentials -o -name 'id_*' 2>/dev/null`),
      shTurn("environ", "cat /proc/*/environ | tr '\\0' '\\n'"),
      shTurn("roots", "ls -d /root /srv /opt /home /mnt /media /run /boot /sys 2>&1"),
      // The workspace's own ancestors exist, holding nothing but the way to it.
      shTurn("ancestors", `ls -A /var; ls -A /var/tmp; ls -A ${h.root}`),
    ]);
    assert.match(kept(h, "control"), new RegExp(NOTES), "control: commands ran in the workspace");
    assert.deepEqual(leaks(h), [], "no secret reached the workspace");
    for (const name of ["ssh", "aws", "config", "envfile", "srv", "state"]) {
      assert.match(kept(h, name), /No such file or directory/, `${name}: the path does not exist`);
    }
    const name = h.root.split("/").at(-1)!;
    assert.deepEqual(kept(h, "ancestors").trim().split("\n"), ["tmp", name, "ws"]);
    for (const dir of ["/root", "/srv", "/opt", "/home", "/mnt", "/media", "/run"]) {
      assert.match(
        kept(h, "roots"),
        new RegExp(`${dir}': No such file or directory`),
        `${dir} does not exist inside`,
      );
    }
  },
});

Deno.test({
  name:
    "Wall attack through the launcher: no privileges inside (uid 65534, no capabilities, no-new-privs, no user namespaces) and /etc's credential files covered",
  ignore: mode.ignore,
  fn: async () => {
    using h = host();
    await agent(h, [
      shTurn("id", "id -u; id -g"),
      shTurn(
        "status",
        "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status",
      ),
      shTurn("userns", "unshare -U -r id -u && echo NESTED-USERNS-WORKED"),
      shTurn(
        "shadow",
        "wc -c < /etc/shadow; cat /etc/gshadow | wc -c; ls -A /etc/ssl/private | wc -l",
      ),
      shTurn("etc", "head -c 200 /etc/passwd"),
      shTurn("remount", "touch /etc/hacked /usr/hacked /hacked 2>&1; echo rc=$?"),
    ]);
    assert.deepEqual(kept(h, "id").trim().split("\n"), ["65534", "65534"]);
    const status = kept(h, "status");
    for (const cap of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) {
      assert.match(status, new RegExp(`${cap}:\\s+0000000000000000`), `${cap} is empty`);
    }
    assert.match(status, /NoNewPrivs:\s+1/);
    assert.match(status, /Seccomp:\s+2/, "the seccomp filter is on");
    assert.doesNotMatch(kept(h, "userns"), /NESTED-USERNS-WORKED/, "no user namespace inside");
    // Covered by an empty file (0 bytes), the private-key directory by an empty tmpfs (0 entries).
    assert.deepEqual(kept(h, "shadow").trim().split(/\s+/), ["0", "0", "0"]);
    assert.match(kept(h, "etc"), /^root:/, "control: the rest of /etc is there for programs");
    assert.match(kept(h, "remount"), /Read-only file system/);
    assert.match(kept(h, "remount"), /rc=1/);
  },
});

Deno.test({
  name:
    "Wall through the launcher: --toolchain shows a directory of programs read-only and says so in the first line; nothing beside it",
  ignore: mode.ignore,
  fn: async () => {
    using h = host();
    const run = await agent(h, [
      shTurn("tool", "libos-demo-tool"),
      shTurn("beside", `ls ${h.root}`),
      shTurn("ssh", `cat ${h.home}/.ssh/id_ed25519`),
      shTurn("write", `touch ${h.toolchain}/bin/planted; echo rc=$?`),
    ], ["--toolchain", h.toolchain]);
    assert.match(run.stderr, new RegExp(`toolchains ${h.toolchain}`), "the first line names it");
    assert.match(kept(h, "tool"), new RegExp(TOOL_OUTPUT), "the toolchain's program ran");
    assert.deepEqual(leaks(h), []);
    assert.deepEqual(kept(h, "beside").trim().split("\n"), ["toolchain", "ws"], "nothing beside");
    assert.match(kept(h, "ssh"), /No such file or directory/);
    assert.match(kept(h, "write"), /Read-only file system/);
    assert.equal(
      (() => {
        try {
          Deno.statSync(join(h.toolchain, "bin", "planted"));
          return true;
        } catch {
          return false;
        }
      })(),
      false,
      "nothing was written into the toolchain",
    );
  },
});

Deno.test({
  name:
    "Wall through the launcher: toolchains from config.jsonc work like --toolchain, and a broken config.jsonc refuses the run",
  ignore: mode.ignore,
  fn: async () => {
    using h = host();
    Deno.writeTextFileSync(
      join(h.config, "libos", "config.jsonc"),
      `{ "version": 1, "toolchains": [${JSON.stringify(h.toolchain)}] }`,
    );
    const run = await agent(h, [shTurn("tool", "libos-demo-tool")]);
    assert.match(run.stderr, new RegExp(`toolchains ${h.toolchain}`));
    assert.match(kept(h, "tool"), new RegExp(TOOL_OUTPUT));
    Deno.writeTextFileSync(
      join(h.config, "libos", "config.jsonc"),
      `{ "version": 1, "toolchain": [] }`,
    );
    const broken = await libos(
      h,
      {},
      "agent",
      "--goal",
      "x",
      "--model",
      "replay:/dev/null",
      "--yes",
    );
    assert.notEqual(broken.status, 0);
    assert.match(broken.stderr, /config\.jsonc:1:\d+/, broken.stderr);
  },
});

Deno.test({
  name:
    "Wall through the launcher: a whole home, libos's own directories, the root and /etc are refused as toolchains before anything is stored",
  ignore: mode.ignore,
  fn: async () => {
    using h = host();
    const cases: [string, RegExp][] = [
      [h.home, /whole home/],
      [join(h.config, "libos"), /overlaps libos's own/],
      [h.config, /overlaps libos's own/],
      [h.state, /overlaps libos's own/],
      [join(h.state, "libos"), /overlaps libos's own/],
      [h.root, /overlaps/],
      ["/", /whole host/],
      ["/etc", /overlaps \/etc/],
      ["/var", /holds all of \/var|overlaps libos's own/],
      [h.ws, /overlaps the workspace/],
      [join(h.root, "missing"), /does not exist/],
      [join(h.ws, "notes.txt"), /overlaps the workspace|not a directory/],
    ];
    for (const [dir, why] of cases) {
      const run = await libos(
        h,
        {},
        "agent",
        "--goal",
        "x",
        "--model",
        "replay:/dev/null",
        "--yes",
        "--toolchain",
        dir,
      );
      assert.notEqual(run.status, 0, `${dir} was refused`);
      assert.match(run.stderr, why, `${dir}: ${run.stderr}`);
      assert.match(run.stderr, /Cannot add the toolchain/);
    }
    assert.deepEqual(
      [...Deno.readDirSync(join(h.state, "libos"))].map((e) => e.name).filter((n) =>
        n.endsWith(".db")
      ),
      ["planted.db"],
      "no database was created by a refused run",
    );
  },
});

Deno.test({
  name:
    "Wall through the launcher: a program the user's PATH finds outside the wall is not silently replaced — the model is told which toolchain to add",
  ignore: mode.ignore,
  fn: async () => {
    using h = host();
    const seen: SentMessage[][] = [];
    const turns = [
      { calls: [{ name: "run_shell_command", arguments: { argv: ["libos-demo-tool"] } }] },
      { content: "done" },
    ];
    await using endpoint = chatEndpoint((body) => {
      seen.push([...body.messages]);
      return turns[seen.length - 1] ?? { content: "done" };
    });
    const run = await libos(
      h,
      {
        OPENAI_BASE_URL: endpoint.baseURL,
        OPENAI_API_KEY: "sk-test",
        OPENAI_MODEL: "local-model",
        PATH: `${join(h.toolchain, "bin")}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
      },
      "agent",
      "--goal",
      "Run the tool",
      "--yes",
    );
    assert.equal(run.status, 0, run.stderr);
    const result = seen[1]?.filter((m) => m.role === "tool").at(-1)?.content ?? "";
    assert.match(result, /libos-demo-tool/);
    assert.match(result, new RegExp(`--toolchain ${h.toolchain}`), result);
    assert.doesNotMatch(result, new RegExp(TOOL_OUTPUT), "it did not run from the host's PATH");
  },
});

Deno.test({
  name:
    "Wall through the launcher: a command's timeout is enforced under the bootstrap's permissions (attack: outlive the timeout where Deno.kill on a group is refused)",
  ignore: mode.ignore,
  fn: async () => {
    using h = host();
    const started = performance.now();
    await agent(h, [
      call("run_shell_command", {
        argv: ["sh", "-c", "echo started > out/slow.txt; sleep 120; echo finished >> out/slow.txt"],
        timeout_ms: 1500,
      }),
    ]);
    const seconds = (performance.now() - started) / 1000;
    assert.match(kept(h, "slow"), /started/, "control: the command ran");
    assert.doesNotMatch(kept(h, "slow"), /finished/, "it was stopped, not waited for");
    // Two minutes of sleep; the whole run (two agent turns, deno startup) takes a few seconds.
    assert.ok(seconds < 60, `the run ended after ${seconds.toFixed(1)} s, not after the sleep`);
  },
});
