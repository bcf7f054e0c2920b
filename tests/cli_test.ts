/**
 * The `libos` command line: in-process through `runCli` for behaviour, and as real subprocesses
 * through `deno task libos` for the bootstrap's narrow permissions and the exit statuses.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { sha256Hex } from "../runtime/base/canonical_json.ts";
import { permissionFlags, recordedReads, UnlistablePathError } from "../cli/bootstrap.ts";
import { sandbox, tamper, task } from "./_cli_sandbox.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { DemoReport } from "../cli/demo_command.ts";
import { fixture } from "./agent_fixture.ts";

Deno.test("libos init creates the workspace database (0600) and head file in the state directory, and is idempotent", async () => {
  using s = sandbox();
  const first = await s.json("init");
  assert.equal(first.status, 0, first.stdout);
  assert.equal(first.doc.result, "created");
  assert.equal(first.doc.db, s.dbPath());
  assert.equal(first.doc.workspace, s.workspace);
  assert.equal(Deno.statSync(s.dbPath()).mode! & 0o777, 0o600);
  assert.ok(Deno.statSync(String(first.doc.head)).isFile);
  assert.deepEqual([...Deno.readDirSync(s.workspace)], []);
  const again = await s.json("init");
  assert.equal(again.status, 0);
  assert.equal(again.doc.result, "already_initialized");
  const human = await s.cli("init");
  assert.match(human.stdout, /Already initialized: libos database/);
});

Deno.test("libos audit verify passes on an untouched log and names the first bad record after an edit", async () => {
  using s = sandbox();
  await s.cli("init");
  const ok = await s.json("audit", "verify");
  assert.equal(ok.status, 0);
  assert.equal(ok.doc.ok, true);
  assert.equal(ok.doc.head, "verified");
  assert.equal(ok.doc.db, s.dbPath());

  tamper(s.dbPath(), "UPDATE audit SET actor = 'someone-else' WHERE seq = 1");
  const bad = await s.json("audit", "verify");
  assert.equal(bad.status, 1);
  assert.deepEqual(bad.doc.error, {
    code: "audit_tampered",
    message: (bad.doc.problem as { message: string }).message,
  });
  assert.equal((bad.doc.problem as { seq: number }).seq, 1);
  const human = await s.cli("audit", "verify");
  assert.equal(human.status, 1);
  assert.match(human.stderr, /^libos: audit verification failed: Audit record seq 1 .* was edited/);
});

Deno.test("libos audit verify detects truncation through the head file and says so when the head is missing", async () => {
  using s = sandbox();
  await s.cli("init");
  await s.cli("init", "--reanchor");
  const records = await s.json("audit", "query");
  assert.equal((records.doc.records as unknown[]).length, 2);
  tamper(s.dbPath(), "DELETE FROM audit WHERE seq = 2");
  const truncated = await s.json("audit", "verify");
  assert.equal(truncated.status, 1);
  assert.equal((truncated.doc.problem as { kind: string }).kind, "truncated");

  for (const entry of Deno.readDirSync(join(s.state, "libos", "heads"))) {
    Deno.removeSync(join(s.state, "libos", "heads", entry.name));
  }
  const missing = await s.cli("audit", "verify");
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /Cannot detect truncation/);
  const noHead = await s.json("audit", "verify", "--no-head");
  assert.equal(noHead.status, 0);
  assert.equal(noHead.doc.head, "skipped");
});

Deno.test("libos init --reanchor refuses a chain that does not verify, and accepts one that does", async () => {
  using s = sandbox();
  await s.cli("init");
  for (const entry of Deno.readDirSync(join(s.state, "libos", "heads"))) {
    Deno.removeSync(join(s.state, "libos", "heads", entry.name));
  }
  const plain = await s.json("init");
  assert.equal(
    plain.status,
    1,
    "init does not silently recreate a head that vanished under records",
  );
  assert.equal((plain.doc.error as { code: string }).code, "audit_head_missing");
  const reanchored = await s.json("init", "--reanchor");
  assert.equal(reanchored.status, 0, reanchored.stdout);
  assert.equal(reanchored.doc.result, "reanchored");
  assert.equal((await s.cli("audit", "verify")).status, 0);
  const query = await s.json("audit", "query", "--action", "audit.reanchor");
  assert.equal((query.doc.records as unknown[]).length, 1, "the re-anchor is itself audited");

  tamper(s.dbPath(), "UPDATE audit SET decision = 'allow' WHERE seq = 1");
  const refused = await s.json("init", "--reanchor");
  assert.equal(refused.status, 1);
  assert.match((refused.doc.error as { message: string }).message, /Cannot re-anchor/);
});

Deno.test("libos audit query filters records and escapes hostile fields for the terminal", async () => {
  using s = sandbox();
  await s.cli("init");
  // Append hostile-looking records through the runtime API, as an agent's resources would be.
  const { createRuntime } = await import("../runtime/runtime.ts");
  {
    await using runtime = await createRuntime({
      workspace: s.workspace,
      env: { get: (n) => (n === "XDG_STATE_HOME" ? s.state : undefined) },
    });
    runtime.audit.append({
      actor: "pid_1",
      pid: "pid_1",
      action: "fs.write",
      resource: "filesystem:workspace:\u001b[31mred\u001b[0m\n.txt",
      decision: "deny",
      authority: "default",
    });
    runtime.audit.append({
      actor: "pid_2",
      pid: "pid_2",
      action: "fs.read",
      resource: "filesystem:workspace:a.txt",
      decision: "allow",
      authority: "cap:c1",
    });
  }
  const denied = await s.json("audit", "query", "--decision", "deny");
  assert.deepEqual((denied.doc.records as { pid: string }[]).map((r) => r.pid), ["pid_1"]);
  const byPrefix = await s.json("audit", "query", "--action", "fs.*", "--desc", "--limit", "1");
  assert.deepEqual((byPrefix.doc.records as { pid: string }[]).map((r) => r.pid), ["pid_2"]);
  const human = await s.cli("audit", "query", "--pid", "pid_1");
  assert.equal(human.status, 0);
  assert.ok(!human.stdout.includes("\u001b"), "no raw escape sequence reaches the terminal");
  assert.match(human.stdout, /\\x1B\[31mred\\x1B\[0m\\n\.txt/);
  const none = await s.cli("audit", "query", "--pid", "nobody");
  assert.match(none.stdout, /No audit records match/);
});

Deno.test("libos reports usage errors with exit status 2 and one line that says what to do", async () => {
  using s = sandbox();
  const cases: [string, string[], RegExp][] = [
    ["no command", [], /No command given/],
    ["unknown command", ["frobnicate"], /Unknown command "frobnicate"/],
    ["unknown option", ["audit", "query", "--bogus"], /Unknown option "--bogus"/],
    ["option of another command", ["audit", "verify", "--pid", "x"], /does not take --pid/],
    ["missing value", ["audit", "query", "--pid"], /--pid needs a value/],
    ["bad limit", ["audit", "query", "--limit", "0"], /--limit must be an integer from 1 to 10000/],
    [
      "bad time",
      ["audit", "query", "--since", "yesterday-ish"],
      /--since must be an ISO 8601 time/,
    ],
    [
      "bad decision",
      ["audit", "query", "--decision", "perhaps"],
      /--decision must be allow, ask, deny or none/,
    ],
    [
      "memory db outside one-shot commands",
      ["audit", "verify", "--db", ":memory:"],
      /:memory: is only accepted/,
    ],
    ["extra argument", ["init", "now"], /takes no argument "now"/],
  ];
  for (const [name, args, pattern] of cases) {
    const run = await s.cli(...args);
    assert.equal(run.status, 2, name);
    assert.match(run.stderr, pattern, name);
    assert.equal(run.stderr.trimEnd().split("\n").length, 1, `${name}: one line`);
    const json = await s.cli(...args, "--json");
    assert.equal(json.status, 2, `${name} --json`);
    assert.equal(JSON.parse(json.stdout).error.code, "usage", `${name} --json`);
  }
});

Deno.test("libos refuses a missing, foreign or newer-schema database with exit 1, leaving the file unmodified", async () => {
  using s = sandbox();
  const missing = await s.json("audit", "verify");
  assert.equal(missing.status, 1);
  assert.equal((missing.doc.error as { code: string }).code, "not_found");
  assert.match((missing.doc.error as { message: string }).message, /run "libos init"/);

  const foreign = join(s.workspace, "..", "notes.db");
  Deno.writeTextFileSync(foreign, "these are my notes, not a database\n".repeat(8));
  const before = sha256Hex(Deno.readFileSync(foreign));
  const run = await s.json("init", "--db", foreign);
  assert.equal(run.status, 1);
  assert.equal((run.doc.error as { code: string }).code, "store_foreign");
  assert.equal(sha256Hex(Deno.readFileSync(foreign)), before);

  await s.cli("init");
  const raw = new DatabaseSync(s.dbPath());
  raw.exec("PRAGMA user_version = 999");
  raw.close();
  const newer = await s.cli("audit", "query");
  assert.equal(newer.status, 1);
  assert.match(newer.stderr, /newer than this libos understands/);
});

Deno.test("libos --help lists every command, and each command has its own help", async () => {
  using s = sandbox();
  const help = await s.cli("--help");
  assert.equal(help.status, 0);
  for (const command of ["init", "audit query", "audit verify", "demo"]) {
    assert.ok(help.stdout.includes(command), command);
    const own = await s.cli(...command.split(" "), "--help");
    assert.equal(own.status, 0);
    assert.match(own.stdout, new RegExp(`^Usage: libos ${command}`));
  }
});

Deno.test("every command group answers --help with its commands; the group alone, or an unknown member, is a usage error naming them", async () => {
  using s = sandbox();
  const overview = await s.cli("--help");
  const groups = new Map<string, string[]>();
  for (const line of overview.stdout.split("\n")) {
    const words = /^ {2}([a-z]+) ([a-z]+) {2}/.exec(line);
    if (words) groups.set(words[1]!, [...groups.get(words[1]!) ?? [], words[2]!]);
  }
  assert.ok(groups.size >= 7, `control: the groups were found (${[...groups.keys()]})`);
  for (const [group, members] of groups) {
    const help = await s.cli(group, "--help");
    assert.equal(help.status, 0, `${group}: ${help.stderr}`);
    assert.match(help.stdout, new RegExp(`^Usage: libos ${group} <command>`));
    for (const member of members) assert.ok(help.stdout.includes(`${group} ${member}`), member);
    const bare = await s.cli(group);
    assert.equal(bare.status, 2, group);
    assert.ok(bare.stderr.includes(`"libos ${group}" needs a command: ${members.join(", ")}`));
    const unknown = await s.cli(group, "frobnicate");
    assert.equal(unknown.status, 2);
    assert.ok(unknown.stderr.includes(`Unknown command "${group} frobnicate"`), unknown.stderr);
    assert.ok(unknown.stderr.includes(members.join(", ")), unknown.stderr);
  }
  const none = await s.cli("frobnicate", "--help");
  assert.equal(none.status, 2);
  assert.match(none.stderr, /Unknown command "frobnicate"/);
});

Deno.test("libos --version (and -V) prints libos's and Deno's versions; --json as a document; with a command it is refused", async () => {
  using s = sandbox();
  for (const flag of ["--version", "-V"]) {
    const shown = await s.cli(flag);
    assert.equal(shown.status, 0);
    assert.match(shown.stdout, /^libos \d+\.\d+\.\d+ \(Deno \d+\.\d+\.\d+\)\n$/);
  }
  const doc = await s.json("--version");
  assert.deepEqual(Object.keys(doc.doc).sort(), ["deno", "version"]);
  const misplaced = await s.cli("ps", "--version");
  assert.equal(misplaced.status, 2);
});

Deno.test("bootstrap permissionFlags() grants read and write only on the workspace, state, temp dir and --db files", () => {
  const flags = permissionFlags({
    args: ["audit", "verify", "--db", "/data/x.db", "--workspace=/w"],
    cwd: "/home/u",
    env: { get: (n) => ({ HOME: "/home/u", TMPDIR: "/tmp" } as Record<string, string>)[n] },
    realPath: (p) => p,
  });
  const value = (name: string) =>
    flags.find((f) => f.startsWith(`--allow-${name}=`))?.split("=")[1]?.split(",");
  assert.deepEqual(value("write"), [
    "/w",
    "/home/u/.local/state/libos",
    "/tmp",
    "/data/x.db",
    "/data/x.db-wal",
    "/data/x.db-shm",
    "/data/x.db-journal",
  ]);
  assert.ok(value("read")?.includes("/data"));
  assert.ok(
    !flags.some((f) =>
      f === "-A" || f === "--allow-all" || f === "--allow-run" || f.startsWith("--allow-net") ||
      f.startsWith("--allow-ffi")
    ),
  );
  assert.ok(flags.includes("--no-prompt"));
  assert.ok(!value("write")?.includes("/data"), "the --db directory is readable, not writable");
});

Deno.test("bootstrap permissionFlags() on PostgreSQL: the network to that server only, the password file read-only (PGPASSFILE, else ~/.pgpass), PGPASSFILE readable", () => {
  const flagsWith = (env: Record<string, string>) =>
    permissionFlags({
      args: ["ps", "--db", "postgres://agent@db.internal:6543/team"],
      cwd: "/home/u",
      env: {
        get: (n) => ({ HOME: "/home/u", TMPDIR: "/tmp", ...env } as Record<string, string>)[n],
      },
      realPath: (p) => p,
    });
  const value = (flags: string[], name: string) =>
    flags.find((f) => f.startsWith(`--allow-${name}=`))?.split("=")[1]?.split(",");
  const home = flagsWith({});
  assert.deepEqual(value(home, "net"), ["db.internal:6543"]);
  assert.ok(value(home, "read")?.includes("/home/u/.pgpass"));
  assert.ok(!value(home, "write")?.includes("/home/u/.pgpass"), "read-only");
  assert.ok(value(home, "env")?.includes("PGPASSFILE"));
  const named = flagsWith({ PGPASSFILE: "/etc/libos/pgpass" });
  assert.ok(value(named, "read")?.includes("/etc/libos/pgpass"));
  assert.ok(!value(named, "read")?.includes("/home/u/.pgpass"), "only the file PGPASSFILE names");
  // A SQLite database grants no password file and no PG variable.
  const sqlite = permissionFlags({
    args: ["ps", "--db", "/data/x.db"],
    cwd: "/home/u",
    env: { get: (n) => ({ HOME: "/home/u", TMPDIR: "/tmp" } as Record<string, string>)[n] },
    realPath: (p) => p,
  });
  assert.ok(!value(sqlite, "read")?.includes("/home/u/.pgpass"));
  assert.ok(!value(sqlite, "env")?.includes("PGPASSFILE"));
});

Deno.test("bootstrap permissionFlags(): libos log may run the pager less and nothing else; no other read-only command may run a program", () => {
  const facts = {
    cwd: "/home/u",
    env: { get: (n: string) => ({ HOME: "/home/u", TMPDIR: "/tmp" } as Record<string, string>)[n] },
    realPath: (p: string) => p,
  };
  const runOf = (args: string[]) =>
    permissionFlags({ ...facts, args }).filter((f) => f.startsWith("--allow-run"));
  assert.deepEqual(runOf(["log", "pid_0123456789ab"]), ["--allow-run=less"]);
  for (const args of [["ps"], ["audit", "verify"], ["gc", "--dry-run"], ["human", "list"]]) {
    assert.deepEqual(runOf(args), [], args.join(" "));
  }
});

Deno.test("bootstrap recordedReads() finds what a run's last launch recorded (policy files, toolchains, a replay script) without writing; permissionFlags() grants read, not write, on them for agent --resume", async () => {
  using s = sandbox();
  assert.equal((await s.cli("init")).status, 0);
  const governance = (policy: string) => ({
    version: 1,
    policies: [{ path: policy, sha256: "0".repeat(64), copy: null }],
    toolchains: ["/opt/tc"],
    model: { spec: "replay:/scripts/run.jsonl", endpoint: null },
  });
  {
    await using runtime = await createRuntime({ workspace: s.workspace, db: s.dbPath() });
    const record = (pid: string, action: string, detail: Record<string, unknown>) =>
      runtime.audit.append({
        actor: "operator",
        pid,
        action,
        resource: `process:${pid}`,
        decision: "none",
        authority: "operator",
        detail: detail as Parameters<typeof runtime.audit.append>[0]["detail"],
      });
    record("pid_1", "agent.start", { governance: governance("/p/old.jsonc") });
    record("pid_1", "agent.resume", { governance: governance("/p/new.jsonc") });
    record("pid_2", "agent.start", { mode: "read-only" });
  }
  const before = Deno.statSync(s.dbPath()).mtime?.getTime();
  assert.deepEqual(recordedReads(s.dbPath(), "pid_1"), [
    "/p/new.jsonc",
    "/opt/tc",
    "/scripts/run.jsonl",
  ]);
  assert.deepEqual(recordedReads(s.dbPath(), "pid_2"), [], "a run launched before governance");
  assert.deepEqual(recordedReads(s.dbPath(), "pid_none"), []);
  assert.deepEqual(recordedReads(join(s.state, "missing.db"), "pid_1"), [], "no database");
  assert.equal(Deno.statSync(s.dbPath()).mtime?.getTime(), before, "the database is not written");
  const flags = permissionFlags({
    args: ["agent", "--resume", "pid_1"],
    cwd: "/w",
    env: { get: (n) => ({ HOME: "/home/u" } as Record<string, string>)[n] },
    realPath: (p) => p,
    recorded: ["/p/new.jsonc", "/opt/tc", "relative/ignored", "/a,b"],
  });
  const value = (name: string) =>
    flags.find((f) => f.startsWith(`--allow-${name}=`))?.split("=")[1]?.split(",") ?? [];
  assert.ok(value("read").includes("/p/new.jsonc") && value("read").includes("/opt/tc"));
  assert.ok(!value("write").includes("/p/new.jsonc") && !value("write").includes("/opt/tc"));
  assert.ok(!value("read").includes("relative/ignored"));
});

Deno.test("bootstrap permissionFlags() grants a symlinked place both as given and as its real path", () => {
  const real: Record<string, string> = {
    "/links/ws": "/real/ws",
    "/links/state/libos": "/real/state/libos",
    "/links/db.db": "/real/db.db",
  };
  const flags = permissionFlags({
    args: ["init", "--workspace", "/links/ws", "--db", "/links/db.db"],
    cwd: "/",
    env: {
      get: (n) => ({ XDG_STATE_HOME: "/links/state", TMPDIR: "/t" } as Record<string, string>)[n],
    },
    realPath: (p) => real[p] ?? p,
  });
  const write = flags.find((f) => f.startsWith("--allow-write="))!.slice("--allow-write=".length)
    .split(",");
  for (
    const path of [
      "/links/ws",
      "/real/ws",
      "/links/state/libos",
      "/real/state/libos",
      "/links/db.db",
      "/real/db.db",
      "/real/db.db-wal",
    ]
  ) {
    assert.ok(write.includes(path), path);
  }
});

Deno.test("bootstrap refuses a path with a comma instead of passing Deno a broken permission list", () => {
  assert.throws(
    () =>
      permissionFlags({
        args: ["init", "--workspace", "/tmp/a,b"],
        cwd: "/",
        env: { get: () => undefined },
        realPath: (p) => p,
      }),
    (e: unknown) => e instanceof UnlistablePathError && /comma/.test(e.message),
  );
});

Deno.test("deno task libos runs through the bootstrap with narrow permissions: init, verify, and exit statuses", async () => {
  using s = sandbox();
  const init = await task(s.workspace, s.state, "libos", "init", "--json");
  assert.equal(init.status, 0, init.stderr);
  assert.equal(JSON.parse(init.stdout).db, s.dbPath());
  const verify = await task(s.workspace, s.state, "libos", "audit", "verify");
  assert.equal(verify.status, 0, verify.stderr);
  assert.match(verify.stdout, /Audit log verified: 1 record/);
  const usage = await task(s.workspace, s.state, "libos", "audit", "nope");
  assert.equal(usage.status, 2);
  tamper(s.dbPath(), "DELETE FROM audit");
  const failed = await task(s.workspace, s.state, "libos", "audit", "verify");
  assert.equal(failed.status, 1);
  assert.match(failed.stderr, /truncated/);
});

Deno.test("bootstrap permissions stop the CLI process from reading, writing or running outside its grants (attack: escape the second wall)", async () => {
  using s = sandbox();
  const temp = join(s.workspace, "..", "tmp");
  const outside = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-outside-" }));
  try {
    Deno.mkdirSync(temp);
    Deno.writeTextFileSync(join(outside, "secret.txt"), "top secret");
    Deno.writeTextFileSync(join(s.workspace, "visible.txt"), "fine");
    const flags = permissionFlags({
      args: ["init"],
      cwd: s.workspace,
      env: { get: (n) => ({ XDG_STATE_HOME: s.state, TMPDIR: temp } as Record<string, string>)[n] },
      realPath: (p) => {
        try {
          return Deno.realPathSync(p);
        } catch {
          return p;
        }
      },
    });
    const probe = join(temp, "probe.ts");
    Deno.writeTextFileSync(
      probe,
      `const attempt = (name, fn) => { try { fn(); console.log(name + ":allowed"); } catch (e) { console.log(name + ":" + e.name); } };
attempt("read-workspace", () => Deno.readTextFileSync(${
        JSON.stringify(join(s.workspace, "visible.txt"))
      }));
attempt("read-outside", () => Deno.readTextFileSync(${
        JSON.stringify(join(outside, "secret.txt"))
      }));
attempt("write-outside", () => Deno.writeTextFileSync(${
        JSON.stringify(join(outside, "planted.txt"))
      }, "x"));
attempt("env-other", () => Deno.env.get("SHELL"));
attempt("run", () => new Deno.Command("true").outputSync());
attempt("ffi", () => Deno.dlopen("libc.so.6", {}));
`,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "--no-config", ...flags, probe],
      env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(output.stdout).trim().split("\n");
    assert.deepEqual(lines, [
      "read-workspace:allowed",
      "read-outside:NotCapable",
      "write-outside:NotCapable",
      "env-other:NotCapable",
      "run:NotCapable",
      "ffi:NotCapable",
    ]);
    assert.throws(() => Deno.statSync(join(outside, "planted.txt")), Deno.errors.NotFound);
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("deno task demo runs the paper's scenario: --json is one schema-valid document, --seed is deterministic, nothing is left behind", async () => {
  using s = sandbox();
  const before = [...Deno.readDirSync(s.workspace)].map((e) => e.name).sort();
  const run = await task(s.workspace, s.state, "demo");
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /\[human\] approve the edit \(the demo plays the human\)/);
  assert.match(run.stdout, /chain verified/);
  const first = await task(s.workspace, s.state, "demo", "--json", "--seed", "7");
  assert.equal(first.status, 0, first.stderr);
  const report = DemoReport.parse(JSON.parse(first.stdout));
  assert.equal(report.status, "exited");
  assert.deepEqual(report.failedTests, [
    "tests/test_mathlib.py::test_add",
    "tests/test_mathlib.py::test_add_negative",
  ]);
  assert.equal(report.denial.code, "capability_denied");
  assert.equal(report.write.verified, true);
  assert.equal(report.audit.verified, true);
  const tools = report.steps.map((step) => step.tool).filter((t) => t !== null);
  for (
    const tool of [
      "create_object_from_file",
      "fork_child_process",
      "wait_child_process",
      "propose_jit_tool",
      "validate_jit_tool",
      "register_jit_tool",
      "extract_failed_tests",
      "checkpoint_create",
      "edit_file",
      "process_exit",
    ]
  ) {
    assert.ok(tools.includes(tool), tool);
  }
  const second = DemoReport.parse(
    JSON.parse((await task(s.workspace, s.state, "demo", "--json", "--seed", "7")).stdout),
  );
  assert.deepEqual([second.pids, second.trace, second.report], [
    report.pids,
    report.trace,
    report.report,
  ]);
  // Never the user's workspace or state directory.
  assert.deepEqual([...Deno.readDirSync(s.workspace)].map((e) => e.name).sort(), before);
  assert.throws(() => Deno.statSync(join(s.state, "libos")), Deno.errors.NotFound);
});

Deno.test("deno task libos works with a symlinked state directory and a symlinked --db (both granted)", async () => {
  using s = sandbox();
  const root = join(s.workspace, "..");
  Deno.mkdirSync(join(root, "realstate"));
  Deno.symlinkSync(join(root, "realstate"), join(root, "statelink"));
  const init = await task(s.workspace, join(root, "statelink"), "libos", "init", "--json");
  assert.equal(init.status, 0, init.stdout + init.stderr);
  Deno.mkdirSync(join(root, "dbdir"));
  Deno.mkdirSync(join(root, "links"));
  const real = join(root, "dbdir", "real.db");
  const direct = await task(s.workspace, s.state, "libos", "init", "--json", "--db", real);
  assert.equal(direct.status, 0, direct.stdout + direct.stderr);
  Deno.symlinkSync(real, join(root, "links", "link.db"));
  const link = join(root, "links", "link.db");
  const viaLink = await task(
    s.workspace,
    s.state,
    "libos",
    "audit",
    "verify",
    "--json",
    "--db",
    link,
  );
  assert.equal(viaLink.status, 0, viaLink.stdout + viaLink.stderr);
  assert.equal(JSON.parse(viaLink.stdout).db, real);
});

Deno.test("deno task libos refuses a workspace path with a comma as a usage error (JSON envelope under --json)", async () => {
  using s = sandbox();
  const odd = join(s.workspace, "..", "a,b");
  Deno.mkdirSync(odd);
  const run = await task(odd, s.state, "libos", "init", "--json");
  assert.equal(run.status, 2, run.stderr);
  assert.equal(JSON.parse(run.stdout).error.code, "usage");
});

Deno.test("libos audit verify and query are read-only: an outdated database is reported, not migrated", async () => {
  using s = sandbox();
  await s.cli("init");
  const raw = new DatabaseSync(s.dbPath());
  raw.exec("PRAGMA user_version = 1");
  raw.close();
  // Schema v1 plus v2's tables would not match v1: rebuild a genuine v1 database instead.
  for (const suffix of ["", "-wal", "-shm"]) {
    try {
      Deno.removeSync(s.dbPath() + suffix);
    } catch { /* may not exist */ }
  }
  const { MIGRATIONS, SqliteStore } = await import("../runtime/store/sqlite_store.ts");
  SqliteStore.open({ path: s.dbPath(), migrations: [MIGRATIONS[0]!] }).close();
  const before = sha256Hex(Deno.readFileSync(s.dbPath()));
  for (const command of [["audit", "verify", "--no-head"], ["audit", "query"], ["ps"]]) {
    const run = await s.json(...command);
    assert.equal(run.status, 1, command.join(" "));
    assert.equal((run.doc.error as { code: string }).code, "store_outdated", command.join(" "));
  }
  assert.equal(sha256Hex(Deno.readFileSync(s.dbPath())), before, "nothing was migrated or written");
});

Deno.test("bootstrap permissionFlags() gives an OpenAI model its variables and the network to its endpoint only, and nothing without one", () => {
  const env = (vars: Record<string, string>) => ({
    get: (n: string) => ({ HOME: "/home/u", TMPDIR: "/tmp", ...vars } as Record<string, string>)[n],
  });
  const value = (flags: string[], name: string) =>
    flags.find((f) => f.startsWith(`--allow-${name}=`))?.split("=")[1]?.split(",");
  const openai = permissionFlags({
    args: ["run", "--model", "openai:gpt-test"],
    cwd: "/w",
    env: env({ OPENAI_BASE_URL: "http://127.0.0.1:8089/v1" }),
    realPath: (p) => p,
  });
  assert.deepEqual(value(openai, "net"), ["127.0.0.1:8089"]);
  assert.ok(value(openai, "env")?.includes("OPENAI_API_KEY"));
  const official = permissionFlags({
    args: ["step", "--model=openai:gpt-test"],
    cwd: "/w",
    env: env({}),
    realPath: (p) => p,
  });
  assert.deepEqual(value(official, "net"), ["api.openai.com:443"]);
  const scripted = permissionFlags({
    args: ["run", "--model", "replay:s.jsonl", "--record", "log.jsonl"],
    cwd: "/w",
    env: env({}),
    realPath: (p) => p,
  });
  assert.equal(value(scripted, "net"), undefined, "a scripted model gets no network");
  assert.ok(!value(scripted, "env")?.includes("OPENAI_API_KEY"), "nor the key");
  assert.ok(value(scripted, "read")?.includes("/w/s.jsonl"));
  assert.ok(value(scripted, "write")?.includes("/w/log.jsonl"));
});

Deno.test("bootstrap permissionFlags() for libos agent: the endpoint of its default model, setsid and the system directories for shell commands, nothing writable beyond the usual places", () => {
  const env = (vars: Record<string, string>) => ({
    get: (n: string) => ({ HOME: "/home/u", TMPDIR: "/tmp", ...vars } as Record<string, string>)[n],
  });
  const value = (flags: string[], name: string) =>
    flags.find((f) => f.startsWith(`--allow-${name}=`))?.split("=")[1]?.split(",");
  const byDefault = permissionFlags({
    args: ["agent", "--goal", "fix it"],
    cwd: "/w",
    env: env({ OPENAI_BASE_URL: "https://llm.internal:8443/v1" }),
    realPath: (p) => p,
    execPath: "/opt/deno/bin/deno",
  });
  assert.deepEqual(value(byDefault, "net"), ["llm.internal:8443"], "the model's host only");
  assert.deepEqual(value(byDefault, "run"), ["/usr/bin/setsid"], "setsid execs the rest");
  const read = value(byDefault, "read") ?? [];
  for (const dir of ["/usr/bin", "/bin", "/usr/local/bin", "/opt/deno/bin/deno"]) {
    assert.ok(read.includes(dir), `read on ${dir}`);
  }
  assert.deepEqual(value(byDefault, "write"), [
    "/w",
    "/home/u/.local/state/libos",
    "/tmp",
    // The remembered grants file and its temporary file ("allow always … for this project").
    "/home/u/.config/libos/grants.jsonc",
    "/home/u/.config/libos/grants.jsonc.tmp",
  ]);
  const scripted = permissionFlags({
    args: ["agent", "--goal", "fix it", "--model", "replay:/s/script.jsonl"],
    cwd: "/w",
    env: env({}),
    realPath: (p) => p,
    execPath: "/opt/deno/bin/deno",
  });
  assert.equal(value(scripted, "net"), undefined, "a scripted agent gets no network");
  assert.ok(!value(scripted, "env")?.includes("OPENAI_API_KEY"));
  assert.ok(value(scripted, "read")?.includes("/s/script.jsonl"));
  // Other commands do not get the agent's grants.
  const ps = permissionFlags({ args: ["ps"], cwd: "/w", env: env({}), realPath: (p) => p });
  assert.equal(value(ps, "run"), undefined);
  assert.ok(!value(ps, "read")?.includes("/usr/bin"));
});

/** Whether each row's cells start where the header's names do (a table whose columns line up). */
function assertAligned(text: string, names: readonly string[]): void {
  const [header, ...rows] = text.trimEnd().split("\n");
  const starts = names.map((name) =>
    [...header!.matchAll(new RegExp(`(?<=^|  )${name}(?=  |$)`, "g"))][0]?.index ?? -1
  );
  assert.ok(starts.every((s, i) => s >= 0 && (i === 0 || s > starts[i - 1]!)), header);
  assert.ok(rows.length >= 2, "control: rows to compare");
  for (const row of rows) {
    for (const start of starts.slice(1)) {
      const chars = [...row];
      assert.equal(chars.slice(start - 2, start).join(""), "  ", `${row}\n${header}`);
      assert.notEqual(chars[start], " ", `a cell starts at ${start}:\n${header}\n${row}`);
    }
  }
}

Deno.test("libos ps and audit query print tables whose columns line up, whatever the lengths of what is in them", async () => {
  using s = sandbox();
  for (const goal of ["a", "a much longer goal, with words", "ünïcödé — gōal"]) {
    assert.equal((await s.cli("spawn", "--goal", goal)).status, 0);
  }
  const ps = await s.cli("ps");
  assert.equal(ps.status, 0, ps.stderr);
  assertAligned(ps.stdout, ["PID", "PARENT", "STATUS", "IMAGE", "CWD", "GOAL"]);
  const audit = await s.cli("audit", "query", "--limit", "20");
  assert.equal(audit.status, 0, audit.stderr);
  assertAligned(audit.stdout, ["TIME", "ACTOR", "PID", "ACTION", "RESOURCE", "DECISION"]);
  // Two agent runs (each stops at its first approval) for libos sessions.
  const script = fixture(s.workspace);
  for (const goal of ["Fix it", "Make the failing test in tests/ pass, and say how"]) {
    const run = await s.cli(
      "agent",
      "--goal",
      goal,
      "--model",
      `replay:${script}`,
      "--human",
      "queue",
    );
    assert.equal(run.status, 3, run.stderr);
  }
  const sessions = await s.cli("sessions");
  assert.equal(sessions.status, 0, sessions.stderr);
  assertAligned(sessions.stdout, ["PID", "STATUS", "STARTED", "MODEL", "MODE", "GOAL"]);
});
