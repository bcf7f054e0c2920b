/**
 * Attacks on the OS wall (bubblewrap) around shell commands, with real programs and a real
 * bwrap: writing outside the workspace, reaching the network, leaving processes behind after a
 * timeout (a `setsid` grandchild included), writing under the read-only mode, and reading the
 * libos state or the user's home. Each attack has a control that shows the same command does
 * the thing without the wall, so a refusal is the wall's doing.
 *
 * These tests run wherever bwrap works, and in CI (`LIBOS_REQUIRE_WALL=1`) always: there a
 * machine without a working wall fails them instead of skipping them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { LibosError } from "../runtime/base/errors.ts";
import { parsePolicy, PolicyRules } from "../runtime/policy/policy_rules.ts";
import type { ShellProvider } from "../runtime/providers/shell.ts";
import { hostShell } from "../runtime/providers/shell.ts";
import { type FilesystemProvider, hostFilesystem } from "../runtime/providers/filesystem.ts";
import {
  eventually,
  exists,
  failure,
  processesWith,
  script,
  type ShellFixture,
  shellFixture,
  wallTestMode,
} from "./shell_fixture.ts";

const mode = wallTestMode();

/** Runs a workspace script under `always_allow` (the policy lets it; only the wall stands). */
function runScript(f: ShellFixture, argv: string[], timeoutMs?: number) {
  return f.runtime.primitives.shell.run(f.pid, {
    argv,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

Deno.test({
  name: "Shell wall: the wall works on this machine (CI requires it)",
  ignore: mode.ignore,
  fn: async () => {
    assert.ok(mode.works, "bwrap does not work here: install the Debian package bubblewrap");
    await using f = await shellFixture({ level: "always_allow", wall: true });
    const r = await runScript(f, ["true"]);
    assert.equal(r.wall, true);
    assert.equal(r.exitCode, 0);
    assert.equal(f.runtime.authority.context.wall, true, "decide() sees the wall on");
  },
});

Deno.test({
  name: "Shell wall attack: a command cannot write outside the workspace",
  ignore: mode.ignore,
  fn: async () => {
    // A directory outside /tmp (which the wall replaces) and outside the workspace.
    const host = Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "libos-wall-" });
    try {
      await using f = await shellFixture({ level: "always_allow", wall: true });
      const target = join(host, "escape.txt");
      const tmpTarget = join(f.outside, "escape.txt");
      script(
        join(f.ws, "escape.sh"),
        `echo pwned > '${target}'; echo "host=$?"\necho pwned > '${tmpTarget}'; echo "tmp=$?"\necho fine > inside.txt; echo "ws=$?"`,
      );
      const r = await runScript(f, ["./escape.sh"]);
      assert.equal(r.wall, true);
      assert.match(r.stdout, /host=[1-9]/, "the write to the host was refused");
      // /var is not in the wall's allowlist: the directory does not exist inside.
      assert.match(r.stderr, /Directory nonexistent|No such file or directory/);
      assert.equal(exists(target), false, "nothing was written outside the workspace");
      // /tmp inside the wall is private: the write lands there and vanishes with the run.
      assert.equal(exists(tmpTarget), false, "nothing reached the host's /tmp");
      assert.match(r.stdout, /ws=0/, "control: the workspace itself is writable");
      assert.equal(Deno.readTextFileSync(join(f.ws, "inside.txt")), "fine\n");
    } finally {
      Deno.removeSync(host, { recursive: true });
    }
  },
});

Deno.test({
  name: "Shell wall attack: control — without the wall the same script does write outside",
  ignore: mode.ignore,
  fn: async () => {
    const host = Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "libos-wall-" });
    try {
      await using f = await shellFixture({ level: "always_allow", wall: false });
      const target = join(host, "escape.txt");
      script(join(f.ws, "escape.sh"), `echo pwned > '${target}'`);
      const r = await runScript(f, ["./escape.sh"]);
      assert.equal(r.wall, false);
      assert.equal(Deno.readTextFileSync(target), "pwned\n", "the attack is real");
    } finally {
      Deno.removeSync(host, { recursive: true });
    }
  },
});

/** A local HTTP server counting its hits. */
function countingServer() {
  let hits = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => {
      hits += 1;
      return new Response("hello from the host\n");
    },
  );
  return {
    port: server.addr.port,
    hits: () => hits,
    close: () => server.shutdown(),
  };
}

/** A workspace script that fetches http://127.0.0.1:<port>/ through bash's /dev/tcp. */
function probeScript(f: ShellFixture): void {
  Deno.writeTextFileSync(
    join(f.ws, "probe.sh"),
    [
      "#!/bin/bash",
      'exec 3<>"/dev/tcp/127.0.0.1/$1" || { echo "connect failed"; exit 7; }',
      "printf 'GET / HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n' >&3",
      "cat <&3",
    ].join("\n") + "\n",
  );
  Deno.chmodSync(join(f.ws, "probe.sh"), 0o755);
}

Deno.test({
  name: "Shell wall attack: no network inside the wall without a net capability",
  ignore: mode.ignore,
  fn: async () => {
    const server = countingServer();
    try {
      {
        await using f = await shellFixture({ level: "always_allow", wall: false });
        probeScript(f);
        const r = await runScript(f, ["./probe.sh", String(server.port)]);
        assert.match(r.stdout, /hello from the host/, "control: without the wall it connects");
        assert.equal(server.hits(), 1);
      }
      {
        await using f = await shellFixture({ level: "always_allow", wall: true });
        probeScript(f);
        const r = await runScript(f, ["./probe.sh", String(server.port)]);
        assert.equal(r.exitCode, 7, `the connection was refused: ${r.stdout}${r.stderr}`);
        assert.doesNotMatch(r.stdout, /hello/);
        assert.equal(server.hits(), 1, "the server saw nothing from inside the wall");
      }
      {
        // The mode must allow the network too: under workspace-write a net grant still asks,
        // and a shell run never asks for its network.
        await using f = await shellFixture({
          level: "always_allow",
          wall: true,
          mode: "full-access",
        });
        probeScript(f);
        f.runtime.authority.capabilities.grant({
          subject: f.pid,
          resource: { type: "net", key: "*", scope: "any" },
          rights: ["connect"],
          effect: "allow",
          issuer: "operator",
        });
        const r = await runScript(f, ["./probe.sh", String(server.port)]);
        assert.match(r.stdout, /hello from the host/, "a net:* grant opens the network");
        assert.equal(server.hits(), 2);
      }
    } finally {
      await server.close();
    }
  },
});

Deno.test({
  name: "Shell wall attack: nothing survives a timeout, a setsid grandchild included",
  ignore: mode.ignore,
  fn: async () => {
    const tag = String(Date.now() % 100000).padStart(5, "0");
    const escaper = `49.${tag}3`;
    const plain = `49.${tag}4`;
    const sleeping = (marker: string) => processesWith(`sleep ${marker}`);
    try {
      await using f = await shellFixture({ level: "always_allow", wall: true });
      script(
        join(f.ws, "spawn.sh"),
        `setsid sleep ${escaper} >/dev/null 2>&1 < /dev/null &\nsleep ${plain} &\nsleep 60`,
      );
      const r = await runScript(f, ["./spawn.sh"], 1500);
      assert.equal(r.timedOut, true);
      assert.equal(r.wall, true);
      assert.ok(
        await eventually(() => sleeping(escaper).length === 0 && sleeping(plain).length === 0),
        `left behind: ${sleeping(escaper)} ${sleeping(plain)}`,
      );
    } finally {
      for (const pid of [...sleeping(escaper), ...sleeping(plain)]) Deno.kill(pid, "SIGKILL");
    }
  },
});

Deno.test({
  name: "Shell wall attack: control — without the wall a setsid grandchild escapes the group kill",
  ignore: mode.ignore,
  fn: async () => {
    // The window the wall closes (documented in DESIGN): shown here so the test above is not
    // passing for a reason other than the wall.
    const tag = String(Date.now() % 100000).padStart(5, "0");
    const escaper = `50.${tag}5`;
    const sleeping = () => processesWith(`sleep ${escaper}`);
    try {
      await using f = await shellFixture({ level: "always_allow", wall: false });
      script(
        join(f.ws, "spawn.sh"),
        `setsid sleep ${escaper} >/dev/null 2>&1 < /dev/null &\nsleep 60`,
      );
      const r = await runScript(f, ["./spawn.sh"], 1500);
      assert.equal(r.timedOut, true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(sleeping().length, 1, "the grandchild left its process group");
    } finally {
      for (const pid of sleeping()) Deno.kill(pid, "SIGKILL");
    }
  },
});

Deno.test({
  name: "Shell wall attack: under the read-only mode the workspace is read-only inside the wall",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shellFixture({ level: "always_allow", wall: true, mode: "read-only" });
    Deno.writeTextFileSync(join(f.ws, "notes.txt"), "kept\n");
    script(
      join(f.ws, "write.sh"),
      `cat notes.txt\necho changed > notes.txt; echo "write=$?"\ntouch new.txt; echo "new=$?"`,
    );
    const r = await runScript(f, ["./write.sh"]);
    assert.equal(r.wall, true);
    assert.match(r.stdout, /^kept\n/, "reading works");
    assert.match(r.stdout, /write=[1-9]/);
    assert.match(r.stdout, /new=[1-9]/);
    assert.equal(Deno.readTextFileSync(join(f.ws, "notes.txt")), "kept\n", "unchanged");
    assert.equal(exists(join(f.ws, "new.txt")), false, "nothing created");
  },
});

Deno.test({
  name:
    "Shell wall attack: the libos state directory and the user's home do not exist inside the wall",
  ignore: mode.ignore,
  fn: async () => {
    const root = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "libos-wh-" }));
    try {
      const home = join(root, "home");
      const state = join(root, "state");
      Deno.mkdirSync(join(home, ".ssh"), { recursive: true });
      Deno.writeTextFileSync(join(home, ".ssh", "id_ed25519"), "PRIVATE-KEY-7f3a\n");
      const env = (name: string) =>
        name === "HOME" ? home : name === "XDG_STATE_HOME" ? state : undefined;
      const dbDir = join(state, "libos");
      Deno.mkdirSync(dbDir, { recursive: true });
      for (const wall of [false, true]) {
        await using f = await shellFixture({
          level: "always_allow",
          wall,
          extra: { env: { get: env }, db: join(dbDir, `run-${wall}.db`) },
        });
        script(
          join(f.ws, "peek.sh"),
          `cat '${join(home, ".ssh", "id_ed25519")}'\nls '${dbDir}'`,
        );
        const r = await runScript(f, ["./peek.sh"]);
        if (!wall) {
          assert.match(r.stdout, /PRIVATE-KEY-7f3a/, "control: readable without the wall");
          assert.match(r.stdout, /run-false\.db/, "control: the database is visible");
        } else {
          assert.doesNotMatch(r.stdout, /PRIVATE-KEY/, "the user's home is hidden");
          assert.doesNotMatch(r.stdout, /\.db/, "the state directory is hidden");
          assert.match(r.stderr, /No such file or directory/, "neither exists inside the wall");
        }
      }
    } finally {
      Deno.removeSync(root, { recursive: true });
    }
  },
});

/** The host provider, claiming the wall does not work here. */
function noWall(): ShellProvider {
  const host = hostShell();
  return {
    wallAvailable: () => Promise.resolve(false),
    resolveProgram: (token, cwd, searchPath) => host.resolveProgram(token, cwd, searchPath),
    run: (spec, signal) => host.run(spec, signal),
    [Symbol.asyncDispose]: () => host[Symbol.asyncDispose](),
  };
}

Deno.test("ShellPrimitive.wall() without a working bwrap: auto runs unwalled with one notice, required refuses", async () => {
  {
    await using f = await shellFixture({
      level: "always_allow",
      wall: "auto",
      extra: { shell: noWall() },
    });
    const seen = f.runtime.events.read({ after: 0 }).length;
    const r = await runScript(f, ["true"]);
    await runScript(f, ["true"]);
    assert.equal(r.wall, false);
    assert.equal(f.runtime.authority.context.wall, false, "decide() sees the wall off");
    const notices = f.runtime.events.read({ after: 0 }).slice(seen).filter((e) =>
      e.kind === "notice" && JSON.stringify(e.payload).includes("wall_unavailable")
    );
    assert.equal(notices.length, 1, "one notice, not one per run");
  }
  {
    await using f = await shellFixture({
      level: "always_allow",
      wall: true,
      extra: { shell: noWall() },
    });
    const log = join(f.ws, "ran.txt");
    script(join(f.ws, "mark.sh"), `echo ran > '${log}'`);
    const error = await failure(runScript(f, ["./mark.sh"]), LibosError);
    assert.equal(error.code, "wall_unavailable");
    assert.match(error.message, /bubblewrap/);
    assert.equal(exists(log), false, "nothing ran unwalled");
  }
});

Deno.test({
  name: "Shell wall: a rule auto-allows a workspace test runner only inside the wall",
  ignore: mode.ignore,
  fn: async () => {
    const rules = new PolicyRules(
      parsePolicy(
        '{"version": 1, "rules": [{ "effect": "allow", "shell": ["./run_tests.sh"] }]}',
        "user.jsonc",
      ),
    );
    for (const wall of [true, false]) {
      await using f = await shellFixture({ wall, extra: { rules } });
      const ran = join(f.ws, "ran.txt");
      script(join(f.ws, "run_tests.sh"), `echo tested > '${ran}'\necho ok`);
      if (wall) {
        const r = await runScript(f, ["./run_tests.sh"]);
        assert.equal(r.stdout, "ok\n", "inside the wall the rule lets the runner run");
        assert.equal(Deno.readTextFileSync(ran), "tested\n");
      } else {
        const error = await failure(runScript(f, ["./run_tests.sh"]), LibosError);
        assert.match(error.message, /outside the OS wall/, "without the wall it asks");
        assert.equal(exists(ran), false, "and nothing ran");
      }
    }
  },
});

Deno.test({
  name:
    "Shell wall attack: no connection to a host daemon's Unix socket, though the host is mounted read-only",
  ignore: mode.ignore,
  fn: async () => {
    // A host daemon listening on a socket file outside /tmp, like /run/docker.sock (a perl
    // process: Deno's own unix listener would need a net permission the test task lacks).
    const dir = Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "libos-sock-" });
    const path = join(dir, "daemon.sock");
    const hitsFile = join(dir, "hits");
    const daemon = new Deno.Command("perl", {
      args: [
        "-MIO::Socket::UNIX",
        "-e",
        '$s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => $ARGV[0], Listen => 5) or die "$!";' +
        '$| = 1; print "ready\\n";' +
        // Reads the whole request before answering: closing a socket with unread input resets
        // the connection, and curl could lose the answer.
        "while ($c = $s->accept) { while (my $l = <$c>) { last if $l =~ /^\\r?\\n$/ }" +
        ' open(my $h, ">>", $ARGV[1]); print $h "hit\\n"; close $h;' +
        ' print $c "HTTP/1.0 200 OK\\r\\n\\r\\nroot on the host\\n"; close $c }',
        path,
        hitsFile,
      ],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const hitCount = () => {
      try {
        return Deno.readTextFileSync(hitsFile).split("\n").filter((l) => l === "hit").length;
      } catch {
        return 0;
      }
    };
    const reader = daemon.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const first = await reader.read();
    assert.match(first.value ?? "", /ready/, "the daemon listens");
    await reader.cancel();
    try {
      for (const wall of [false, true]) {
        await using f = await shellFixture({ level: "always_allow", wall });
        script(join(f.ws, "dial.sh"), `curl -sS --unix-socket '${path}' http://daemon/`);
        const r = await runScript(f, ["./dial.sh"]);
        if (!wall) {
          assert.match(
            r.stdout,
            /root on the host/,
            `control: without the wall it connects: ${JSON.stringify(r)}`,
          );
          assert.equal(hitCount(), 1);
        } else {
          assert.notEqual(r.exitCode, 0, "the connection was refused");
          assert.doesNotMatch(r.stdout, /root on the host/);
          assert.equal(hitCount(), 1, "the daemon saw nothing from inside the wall");
        }
      }
    } finally {
      daemon.kill("SIGKILL");
      await daemon.status;
      Deno.removeSync(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "Shell wall: the seccomp filter refuses socket(AF_UNIX) but keeps socketpair and Internet sockets",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shellFixture({ level: "always_allow", wall: true });
    const perl = (code: string) => runScript(f, ["perl", "-MSocket", "-e", code]);
    const unix = await perl(
      'socket(my $s, AF_UNIX, SOCK_STREAM, 0) ? print "created\\n" : print "refused: $!\\n"',
    );
    assert.match(unix.stdout, /^refused: Permission denied/);
    const pair = await perl(
      'socketpair(my $a, my $b, AF_UNIX, SOCK_STREAM, PF_UNSPEC) ? print "pair\\n" : print "no: $!\\n"',
    );
    assert.equal(pair.stdout, "pair\n", "socketpair (pipes between a program's processes) works");
    const inet = await perl(
      'socket(my $s, AF_INET, SOCK_STREAM, 0) ? print "inet\\n" : print "no: $!\\n"',
    );
    assert.equal(inet.stdout, "inet\n", "Internet sockets are the network namespace's business");
  },
});

Deno.test({
  name:
    "Shell wall: an incomplete git scan inside the wall warns and runs (without it, it refuses)",
  ignore: mode.ignore,
  fn: async () => {
    for (const wall of [true, false]) {
      await using f = await shellFixture({ level: "always_allow", wall });
      // A repository whose configuration git cannot read.
      const init = new Deno.Command("git", {
        args: ["init", "-q", f.ws],
        clearEnv: true,
        env: { PATH: "/usr/bin:/bin", GIT_CONFIG_NOSYSTEM: "1", HOME: f.root },
      }).outputSync();
      assert.ok(init.success);
      Deno.writeTextFileSync(join(f.ws, ".git", "config"), "this is [[[ not a configuration\n");
      const run = f.runtime.primitives.shell.run(f.pid, { argv: ["git", "--version"] });
      if (wall) {
        const r = await run;
        assert.equal(r.exitCode, 0);
        assert.ok(r.warnings.some((w) => w.startsWith("git hardening is incomplete")));
      } else {
        const error = await failure(run, LibosError);
        assert.equal(error.code, "git_config_unsafe");
        assert.match(error.message, /without the OS wall/);
      }
    }
  },
});

Deno.test({
  name:
    "Shell wall fail-closed attack: a bind that cannot be made (a toolchain removed after start) refuses the command as wall_incomplete; nothing runs",
  ignore: mode.ignore,
  fn: async () => {
    const toolchain = Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "libos-tc-" });
    try {
      await using f = await shellFixture({
        level: "always_allow",
        wall: true,
        extra: { toolchains: [toolchain] },
      });
      const log = join(f.ws, "ran.txt");
      script(join(f.ws, "mark.sh"), `echo ran > '${log}'`);
      const control = await runScript(f, ["./mark.sh"]);
      assert.equal(control.exitCode, 0, "control: it runs while the toolchain is there");
      Deno.removeSync(log);
      Deno.removeSync(toolchain, { recursive: true });
      const error = await failure(runScript(f, ["./mark.sh"]), LibosError);
      assert.equal(error.code, "wall_incomplete");
      assert.match(error.message, /could not be set up/);
      assert.equal(exists(log), false, "nothing ran with less protection");
      const [record] = f.runtime.audit.query({ action: "shell.run", order: "desc", limit: 1 });
      assert.equal(record?.decision, "deny");
      assert.equal(record?.authority, "wall_incomplete");
    } finally {
      if (exists(toolchain)) Deno.removeSync(toolchain, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "Shell wall fail-closed attack: libos's own directory inside the workspace that cannot be looked at refuses the command (wall_incomplete), never runs it uncovered",
  ignore: mode.ignore,
  fn: async () => {
    const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-conceal-" }));
    try {
      const ws = join(root, "ws");
      const config = join(ws, ".config");
      Deno.mkdirSync(join(config, "libos"), { recursive: true });
      Deno.writeTextFileSync(join(config, "libos", "env"), "OPENAI_API_KEY=CONCEALED-7d1e\n");
      // The stat of the configuration directory fails as it does without read permission.
      const fs = hostFilesystem();
      const denying: FilesystemProvider = {
        ...fs,
        stat: (path) => {
          if (path === join(config, "libos")) {
            throw new Deno.errors.NotCapable(`Requires read access to "${path}"`);
          }
          return fs.stat(path);
        },
      };
      for (const blind of [false, true]) {
        await using f = await shellFixture({
          level: "always_allow",
          wall: true,
          extra: {
            workspace: ws,
            env: { get: (n) => (n === "XDG_CONFIG_HOME" ? config : undefined) },
            ...(blind ? { filesystem: denying } : {}),
          },
        });
        script(join(ws, "peek.sh"), `cat .config/libos/env > seen.txt 2>&1; echo ran >> seen.txt`);
        if (!blind) {
          const r = await runScript(f, ["./peek.sh"]);
          assert.equal(r.exitCode, 0);
          const seen = Deno.readTextFileSync(join(ws, "seen.txt"));
          assert.match(seen, /ran/, "control: the command ran");
          assert.doesNotMatch(seen, /CONCEALED/, "libos's configuration is covered inside");
          Deno.removeSync(join(ws, "seen.txt"));
        } else {
          const error = await failure(runScript(f, ["./peek.sh"]), LibosError);
          assert.equal(error.code, "wall_incomplete");
          assert.equal(exists(join(ws, "seen.txt")), false, "nothing ran");
        }
      }
    } finally {
      Deno.removeSync(root, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "ShellPrimitive.run() does not stall other processes' file reads while a long command runs (the workspace lock is held only to start it)",
  ignore: mode.ignore,
  fn: async () => {
    await using f = await shellFixture({ level: "always_allow", wall: true });
    Deno.writeTextFileSync(join(f.ws, "a.txt"), "read me\n");
    const other = f.runtime.processes.spawn({ goal: "reader", image: "base-agent:v0" }).pid;
    // The command waits for a file only the test creates — after the read has come back. If the
    // read waited for the command, neither would ever finish (until the command's timeout).
    script(join(f.ws, "wait.sh"), "while [ ! -f go ]; do sleep 0.05; done; echo finished");
    const order: string[] = [];
    const long = runScript(f, ["./wait.sh"], 30_000).then((r) => {
      order.push("command");
      return r;
    });
    await eventually(() => processesWith(join(f.ws, "wait.sh")).length > 0);
    const read = await f.runtime.primitives.fs.readText(other, { path: "a.txt" });
    order.push("read");
    assert.equal(read.content, "read me\n");
    Deno.writeTextFileSync(join(f.ws, "go"), "");
    const r = await long;
    assert.equal(r.stdout, "finished\n", "control: the command ran to its end");
    assert.equal(r.timedOut, false);
    assert.deepEqual(order, ["read", "command"]);
  },
});
