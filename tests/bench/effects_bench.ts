/**
 * External-effects benchmark (issue 9): what the shell and network primitives add to one effect.
 *
 * - Shell: `true` spawned directly (`Deno.Command`, the competitor: no policy, no limits, no
 *   audit), then through `ShellPrimitive.run` without and with the OS wall (decide, audit,
 *   ledger, setsid + setpriv + prlimit, bwrap); and `git status` in a small repository spawned
 *   directly versus through the primitive (repository scan and config hardening included).
 * - Network: one GET to a loopback server with `fetch()` (the competitor: no checks) versus
 *   `NetPrimitive.fetch` with an exact endpoint grant (decide, address checks, pinned
 *   `node:http` connection, audit).
 *
 * Arrival pattern: back-to-back effects, one caller. No target: these rows say what the
 * guarantees cost, as ratios to the unguarded row of their group.
 *
 * @module
 */
import { join } from "node:path";
import { parsePolicy, PolicyRules } from "../../runtime/policy/policy_rules.ts";
import { createRuntime, type Runtime } from "../../runtime/runtime.ts";
import { seccompFilter, wallLauncher, wallOptions } from "../../runtime/providers/wall.ts";
import { type BenchCase, benchDir, measure } from "./_bench.ts";

const ALLOW = new PolicyRules(
  parsePolicy(
    '{"version": 1, "rules": [{"effect": "allow", "shell": ["true"]}, {"effect": "allow", "shell": ["git", "status"]}]}',
    "bench.jsonc",
  ),
);

/** A runtime on a fresh workspace with a small git repository, and one process. */
async function shellRuntime(
  dir: string,
  wall: boolean,
): Promise<{ runtime: Runtime; pid: string; ws: string }> {
  const ws = join(dir, "ws");
  Deno.mkdirSync(ws);
  const git = (...args: string[]) =>
    new Deno.Command("git", {
      args,
      cwd: ws,
      env: { GIT_CONFIG_NOSYSTEM: "1", HOME: dir },
      stdout: "null",
      stderr: "null",
    }).outputSync();
  git("init", "-q");
  for (let i = 0; i < 20; i++) Deno.writeTextFileSync(join(ws, `f${i}.txt`), `line ${i}\n`);
  git("add", ".");
  git("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init");
  const runtime = await createRuntime({
    workspace: ws,
    db: join(dir, "b.db"),
    env: { get: (n) => (n === "XDG_STATE_HOME" ? join(dir, "state") : undefined) },
    rules: ALLOW,
    wall,
  });
  const pid = runtime.processes.spawn({ goal: "bench", image: "base-agent:v0" }).pid;
  return { runtime, pid, ws };
}

function shellCase(name: string, argv: string[], wall: boolean, count: number): BenchCase {
  return {
    group: `shell: ${argv.join(" ")}`,
    name,
    async run() {
      using dir = benchDir();
      const { runtime, pid } = await shellRuntime(dir.path, wall);
      try {
        return await measure(count, async () => {
          const r = await runtime.primitives.shell.run(pid, { argv });
          if (r.exitCode !== 0 || r.wall !== wall) throw new Error(`bench run failed: ${r.stderr}`);
        }, wall ? "inside bubblewrap" : "no wall");
      } finally {
        await runtime.close();
      }
    },
  };
}

function directCase(name: string, argv: string[], count: number): BenchCase {
  return {
    group: `shell: ${argv.join(" ")}`,
    name,
    async run() {
      using dir = benchDir();
      const { runtime, ws } = await shellRuntime(dir.path, false);
      await runtime.close();
      // Awaited here: `dir` is removed when this function returns.
      return await measure(count, async () => {
        const out = await new Deno.Command(argv[0]!, {
          args: argv.slice(1),
          cwd: ws,
          stdout: "piped",
          stderr: "piped",
        }).output();
        if (!out.success) throw new Error("direct run failed");
      }, "Deno.Command, no policy, no limits, no audit (competitor)");
    },
  };
}

function netCase(name: string, guarded: boolean): BenchCase {
  return {
    group: "net: GET a loopback server",
    name,
    async run() {
      using dir = benchDir();
      const server = Deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen: () => {} },
        () => new Response("x".repeat(1024)),
      );
      const url = `http://127.0.0.1:${server.addr.port}/`;
      try {
        if (!guarded) {
          return await measure(
            500,
            async () => await (await fetch(url)).arrayBuffer(),
            "fetch(), no checks (competitor)",
          );
        }
        const ws = join(dir.path, "ws");
        Deno.mkdirSync(ws);
        const runtime = await createRuntime({
          workspace: ws,
          db: join(dir.path, "b.db"),
          env: { get: (n) => (n === "XDG_STATE_HOME" ? join(dir.path, "state") : undefined) },
          mode: "full-access",
        });
        try {
          const pid = runtime.processes.spawn({ goal: "bench", image: "base-agent:v0" }).pid;
          runtime.authority.capabilities.grant({
            subject: pid,
            resource: { type: "net", key: `127.0.0.1:${server.addr.port}`, scope: "exact" },
            rights: ["connect"],
            effect: "allow",
            issuer: "operator",
          });
          return await measure(500, async () => {
            const r = await runtime.primitives.net.fetch(pid, { url });
            if (r.status !== 200) throw new Error(`status ${r.status}`);
          }, "exact endpoint grant; decide, address check, pinned connection, audit");
        } finally {
          await runtime.close();
        }
      } finally {
        await server.shutdown();
      }
    },
  };
}

/**
 * bubblewrap alone around `/bin/true`, launched as the provider launches it: the old wall (the
 * whole host read-only, as root inside) against the allowlist wall (system directories, /etc
 * with its credential covers decided by the launcher script, an unprivileged user namespace).
 */
function wallCase(name: string, allowlist: boolean): BenchCase {
  return {
    group: "shell: the OS wall alone around /bin/true",
    name,
    async run() {
      using dir = benchDir();
      const ws = join(dir.path, "ws");
      const home = join(dir.path, "home");
      Deno.mkdirSync(ws);
      Deno.mkdirSync(home);
      const seccomp = join(dir.path, "seccomp.bpf");
      const empty = join(dir.path, "empty");
      Deno.writeFileSync(seccomp, seccompFilter()!);
      Deno.writeFileSync(empty, new Uint8Array());
      const tools = { sh: "/bin/sh", bwrap: "/usr/bin/bwrap" };
      const tail = ["--chdir", ws, "--", "/bin/true"];
      const argv = allowlist
        ? wallLauncher(tools, { seccomp, empty }, [
          ...wallOptions({ workspace: ws, writable: true, home, network: false }, empty),
          ...tail,
        ])
        : [
          "/bin/sh",
          "-c",
          'exec 3<"$0" && exec "$@"',
          seccomp,
          "/usr/bin/bwrap",
          "--seccomp",
          "3",
          ...["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"],
          ...["--bind", ws, ws, "--bind", home, home],
          ...["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"],
          ...["--cap-drop", "ALL", "--unshare-net", "--die-with-parent", "--new-session"],
          ...tail,
        ];
      return await measure(200, async () => {
        const out = await new Deno.Command(argv[0]!, { args: argv.slice(1) }).output();
        if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
      }, allowlist ? "allowlist, uid 65534, credential covers" : "host read-only, as before");
    },
  };
}

/** The external-effects rows. */
export const CASES: readonly BenchCase[] = [
  directCase("spawn /usr/bin/true directly (competitor)", ["true"], 300),
  shellCase("ShellPrimitive.run true, no wall", ["true"], false, 300),
  shellCase("ShellPrimitive.run true, OS wall", ["true"], true, 300),
  wallCase("bwrap: the host read-only (the wall before issue 20)", false),
  wallCase("bwrap: the allowlist wall (issue 20)", true),
  directCase("spawn git status directly (competitor)", ["git", "status"], 100),
  shellCase("ShellPrimitive.run git status, hardened, no wall", ["git", "status"], false, 100),
  shellCase("ShellPrimitive.run git status, hardened, OS wall", ["git", "status"], true, 100),
  netCase("fetch() to loopback (competitor)", false),
  netCase("NetPrimitive.fetch to a granted loopback endpoint", true),
];
