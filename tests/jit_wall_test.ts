/**
 * The JIT sandbox's OS wall (`runtime/providers/wall.ts` `sandboxWallArgv`): it must hold on its
 * own, so these tests run a Deno inside it with every permission (`-A`) — as if Deno's own
 * permission checks had a hole — and check what that Deno can reach; a control runs the same
 * probe without the wall. One test runs a registered tool through the real launcher
 * (`deno task libos jit run`) and checks that it ran walled there too.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { JitSandbox } from "../jit/mod.ts";
import { SANDBOX_DENO, sandboxWallArgv, seccompFilter } from "../runtime/providers/wall.ts";
import { REPO, sandbox, task, withJitTool } from "./_cli_sandbox.ts";
import { wallTestMode } from "./shell_fixture.ts";

const mode = wallTestMode();

/** What the probe reports about the world it runs in. */
interface Seen {
  readonly root: string[];
  readonly passwd: string;
  readonly secret: string;
  readonly uid: number;
  readonly caps: string;
  readonly net: string;
  readonly write: string;
}

/** A probe that tries every way out it has, with whatever permissions Deno gives it. */
const PROBE = `
const attempt = async (f) => { try { return String(await f()); } catch (e) { return "refused: " + e.name; } };
const seen = {
  root: [...Deno.readDirSync("/")].map((e) => e.name).sort(),
  passwd: await attempt(() => Deno.readTextFileSync("/etc/passwd").slice(0, 5)),
  secret: await attempt(() => Deno.readTextFileSync(Deno.args[0])),
  uid: Deno.uid(),
  caps: await attempt(() => Deno.readTextFileSync("/proc/self/status").match(/CapEff:\\s+(\\w+)/)[1]),
  net: await attempt(async () => (await fetch(Deno.args[1])).status),
  write: await attempt(() => { Deno.writeTextFileSync(Deno.args[0] + ".planted", "x"); return "written"; }),
};
console.log(JSON.stringify(seen));
`;

async function probe(walled: boolean): Promise<Seen> {
  const dir = Deno.makeTempDirSync({ prefix: "libos-jit-wall-" });
  const secretDir = Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "libos-jit-secret-" });
  const secret = join(secretDir, "secret.txt");
  Deno.writeTextFileSync(secret, "JIT-SECRET-MARKER");
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("hello"),
  );
  try {
    Deno.mkdirSync(join(dir, "cwd"));
    Deno.writeTextFileSync(join(dir, "probe.js"), PROBE);
    Deno.writeFileSync(join(dir, "seccomp.bpf"), seccompFilter()!);
    const url = `http://127.0.0.1:${server.addr.port}/`;
    const deno = [walled ? SANDBOX_DENO : Deno.execPath(), "run", "-A", "--quiet"];
    const argv = walled
      ? sandboxWallArgv({ sh: "/bin/sh", bwrap: "/usr/bin/bwrap" }, join(dir, "seccomp.bpf"), {
        deno: Deno.execPath(),
        dir,
        writable: ["cwd"],
      }, [...deno, "/sandbox/probe.js", secret, url])
      : [...deno, join(dir, "probe.js"), secret, url];
    const out = await new Deno.Command(argv[0]!, {
      args: argv.slice(1),
      clearEnv: true,
      env: { NO_COLOR: "1", DENO_DIR: join(dir, "cwd") },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    assert.equal(
      (() => {
        try {
          Deno.statSync(`${secret}.planted`);
          return true;
        } catch {
          return false;
        }
      })(),
      !walled ? true : false,
      "a write outside lands only without the wall",
    );
    return JSON.parse(text.trim().split("\n").at(-1)!) as Seen;
  } finally {
    Deno.removeSync(dir, { recursive: true });
    Deno.removeSync(secretDir, { recursive: true });
  }
}

Deno.test({
  name:
    "JIT wall attack: a sandbox Deno with every permission (a hole in Deno's checks) sees only Deno, its libraries and its directory — no host file, no network, no privileges",
  ignore: mode.ignore,
  fn: async () => {
    const control = await probe(false);
    assert.equal(control.secret, "JIT-SECRET-MARKER", "control: without the wall -A reads it");
    assert.equal(control.net, "200", "control: without the wall -A connects");
    const walled = await probe(true);
    assert.deepEqual(
      walled.root.filter((name) => !["lib", "lib32", "lib64", "libx32", "usr"].includes(name)),
      ["deno", "dev", "proc", "sandbox", "tmp"],
      "nothing else of the host exists",
    );
    assert.match(walled.passwd, /^refused: NotFound/, "no /etc");
    assert.match(walled.secret, /^refused: NotFound/, "no host file outside");
    assert.match(walled.net, /^refused:/, "no network");
    assert.match(walled.write, /^refused:/, "no write outside");
    assert.equal(walled.uid, 65534, "an unprivileged uid");
    assert.equal(walled.caps, "0000000000000000", "no capabilities");
  },
});

Deno.test({
  name:
    "JIT wall through the launcher: a registered tool run by deno task libos jit run runs inside the wall (control: unwalled in process)",
  ignore: mode.ignore,
  fn: async () => {
    const source =
      'export function run() {\n  return (new Error("where").stack ?? "").includes("file:///sandbox/");\n}\n';
    {
      await using unwalled = new JitSandbox({ wall: false });
      const r = await unwalled.call(source, {}, () => Promise.resolve(null));
      assert.equal(r.value, false, "control: without the wall the harness lives elsewhere");
    }
    using s = sandbox();
    const pid = await withJitTool(s, {
      name: "where",
      description: "Say whether the tool runs inside the wall.",
      input_schema: { type: "object" },
      output_schema: { type: "boolean" },
      source,
      tests: [{ name: "walled", args: {}, syscalls: [], expect: true }],
    });
    const ran = await task(s.workspace, s.state, "libos", "jit", "run", pid, "where", "--json");
    assert.equal(ran.status, 0, ran.stderr);
    assert.equal(JSON.parse(ran.stdout).value, true, "walled under the launcher's permissions");
  },
});

Deno.test({
  name:
    "JIT sandbox attack: a tool that sleeps past its wall time is stopped under the bootstrap's permissions (Deno.kill on a group refused)",
  ignore: mode.ignore,
  fn: async () => {
    const temp = Deno.makeTempDirSync({ prefix: "libos-jit-narrow-" });
    try {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--quiet",
          "--no-prompt",
          `--config=${join(REPO, "deno.json")}`,
          `--allow-read`,
          `--allow-write=${temp}`,
          "--allow-run=/usr/bin/setsid",
          "--allow-env=TMPDIR",
          join(REPO, "tests", "_jit_narrow_child.ts"),
        ],
        env: { TMPDIR: temp, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout).trim();
      assert.ok(out.success, new TextDecoder().decode(out.stderr));
      const { code, ms } = JSON.parse(text) as { code: string; ms: number };
      assert.equal(code, "timeout");
      // It sleeps for two minutes; stopped, the call ends within seconds.
      assert.ok(ms < 60_000, `the call ended after ${ms} ms`);
    } finally {
      Deno.removeSync(temp, { recursive: true });
    }
  },
});
