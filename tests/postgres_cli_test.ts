/**
 * libos on PostgreSQL as users run it: `--db postgres://…` and `LIBOS_DB` through the real
 * launcher (`deno task libos`, its bootstrap permissions: the network to the server only), an
 * agent run end to end, the audit verified, and credentials kept out of argv, output, audit
 * records and the commands' environment.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { call, final, FIXED, fixture, turn } from "./agent_fixture.ts";
import { sandbox, task, taskWith } from "./_cli_sandbox.ts";
import { asAdmin, freshSchema, pgTest, postgresUrl } from "./pg_fixture.ts";
import { PostgresStore } from "../runtime/store/postgres_store.ts";

pgTest(
  "PostgreSQL through the launcher: init, an agent run that fixes a test, ps and audit verify",
  async () => {
    using s = sandbox();
    const db = freshSchema("cli");
    try {
      const init = await task(s.workspace, s.state, "libos", "init", "--db", db.url);
      assert.equal(init.status, 0, init.stdout + init.stderr);
      const script = fixture(s.workspace);
      const run = await task(
        s.workspace,
        s.state,
        "libos",
        "agent",
        "--goal",
        "Make the test pass",
        "--model",
        `replay:${script}`,
        "--yes",
        "--db",
        db.url,
        "--json",
      );
      assert.equal(run.status, 0, run.stdout + run.stderr);
      const doc = JSON.parse(run.stdout) as { pid: string; status: string };
      assert.equal(doc.status, "exited");
      assert.equal(Deno.readTextFileSync(join(s.workspace, "src", "mathlib.py")), FIXED);
      const verify = await task(s.workspace, s.state, "libos", "audit", "verify", "--db", db.url);
      assert.equal(verify.status, 0, verify.stdout + verify.stderr);
      assert.match(verify.stdout, /verified/);
      // The ledger on the server: every effect done once, none left executing.
      using store = PostgresStore.open({ url: db.url, readOnly: true });
      const actions = store.listActions({ pid: doc.pid, limit: 100 });
      assert.ok(actions.length >= 3, `actions: ${actions.length}`);
      assert.ok(actions.every((a) => a.status === "done" || a.status === "failed"));
    } finally {
      db.drop();
    }
  },
);

pgTest(
  "attack: a password written in --db (visible to every user in ps) is refused before anything is created",
  async () => {
    using s = sandbox();
    const db = freshSchema("pw");
    try {
      const url = new URL(db.url);
      url.password = "hunter2-in-argv";
      const run = await task(s.workspace, s.state, "libos", "init", "--db", url.href);
      assert.notEqual(run.status, 0);
      assert.match(run.stderr, /PGPASSWORD|LIBOS_DB/);
      assert.ok(!(run.stdout + run.stderr).includes("hunter2-in-argv"), run.stderr);
      // Nothing was created on the server.
      assert.throws(() => PostgresStore.open({ url: db.url, readOnly: true }), /No libos database/);
    } finally {
      db.drop();
    }
  },
);

pgTest(
  "attack: a password in LIBOS_DB never reaches output, --json, audit records or a command's environment",
  async () => {
    using s = sandbox();
    const db = freshSchema("env");
    const secret = "Sup3r-Secret-pw";
    const url = new URL(db.url);
    url.password = secret; // the test cluster trusts local logins: any password connects
    const env = { LIBOS_DB: url.href };
    try {
      const init = await taskWith(env, s.workspace, s.state, "libos", "init", "--json");
      assert.equal(init.status, 0, init.stdout + init.stderr);
      const script = join(s.workspace, "..", "env.jsonl");
      Deno.writeTextFileSync(
        script,
        [
          call("run_shell_command", { argv: ["env"] }),
          turn({ tool_calls: [{ name: "run_shell_command", arguments: { argv: ["ps", "aux"] } }] }),
          final("done"),
        ].join("\n") + "\n",
      );
      const run = await taskWith(
        env,
        s.workspace,
        s.state,
        "libos",
        "agent",
        "--goal",
        "show the environment",
        "--model",
        `replay:${script}`,
        "--yes",
        "--json",
      );
      assert.equal(run.status, 0, run.stdout + run.stderr);
      const audit = await taskWith(env, s.workspace, s.state, "libos", "audit", "query", "--json");
      const log = await taskWith(
        env,
        s.workspace,
        s.state,
        "libos",
        "log",
        (JSON.parse(run.stdout) as { pid: string }).pid,
      );
      for (
        const [what, text] of [
          ["init", init.stdout + init.stderr],
          ["run", run.stdout + run.stderr],
          ["audit", audit.stdout + audit.stderr],
          ["transcript (env and ps output of commands)", log.stdout + log.stderr],
        ]
      ) {
        assert.ok(!text!.includes(secret), `${what} shows the password`);
        assert.ok(!text!.includes("LIBOS_DB="), `${what} shows LIBOS_DB`);
      }
      assert.match(init.stdout, /postgres:\/\/libos@/);
      // The commands did run (the check above is not vacuous): their output is in the transcript.
      assert.match(log.stdout, /GIT_PAGER=cat/, log.stdout);
      assert.equal(log.stdout.match(/result of run_shell_command: exit 0/g)?.length, 2, log.stdout);
    } finally {
      db.drop();
    }
  },
);

pgTest(
  "a server that is not there: a typed error that says what to check, and no state left",
  async () => {
    using s = sandbox();
    const run = await task(
      s.workspace,
      s.state,
      "libos",
      "init",
      "--db",
      "postgres://libos@127.0.0.1:1/nowhere",
      "--json",
    );
    assert.notEqual(run.status, 0);
    const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
    assert.equal(error.code, "store_io");
    assert.match(
      error.message,
      /Cannot reach PostgreSQL at "postgres:\/\/libos@127\.0\.0\.1:1\/nowhere"/,
    );
  },
);

pgTest(
  "the password file (PGPASSFILE or ~/.pgpass) through the launcher: a login that needs a password gets it from there; a file others can read is refused; the password is never shown",
  async () => {
    using s = sandbox();
    const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
    const role = `libos_pw_${suffix}`;
    const password = `pw-${suffix}-Zq9`;
    // Members of libos_pw must give a password (.ci/run's pg_hba.conf line).
    asAdmin(
      `DO $$ BEGIN CREATE ROLE libos_pw NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
      `CREATE ROLE ${role} LOGIN PASSWORD '${password}' IN ROLE libos_pw`,
      `GRANT CREATE ON DATABASE postgres TO ${role}`,
    );
    const base = new URL(postgresUrl()!);
    const url = new URL(`postgres://${role}@${base.host}/postgres`);
    url.searchParams.set("schema", `pw_${suffix}`);
    const passFile = join(s.state, "..", "pgpass");
    /** `libos COMMAND --db URL` through the launcher with PGPASSFILE set to `file`. */
    const libos = (file: string, ...command: string[]) =>
      taskWith({ PGPASSFILE: file }, s.workspace, s.state, "libos", ...command, "--db", url.href);
    try {
      // Without a password the server refuses the login: the test is not vacuous.
      const none = await libos(join(s.state, "..", "absent"), "init", "--json");
      assert.notEqual(none.status, 0, "the test server must require a password of libos_pw");
      assert.match(none.stdout, /refused the login/);
      Deno.writeTextFileSync(
        passFile,
        `# libos test\n${base.hostname}:${base.port}:postgres:${role}:${password}\n`,
      );
      Deno.chmodSync(passFile, 0o644);
      const open = await libos(passFile, "init", "--json");
      assert.notEqual(open.status, 0);
      const error = (JSON.parse(open.stdout) as { error: { code: string; message: string } })
        .error;
      assert.equal(error.code, "store_io");
      assert.match(error.message, /can be read by others \(mode 644\); run "chmod 600/);
      Deno.chmodSync(passFile, 0o600);
      const init = await libos(passFile, "init", "--json");
      assert.equal(init.status, 0, init.stdout + init.stderr);
      const ps = await libos(passFile, "ps");
      assert.equal(ps.status, 0, ps.stdout + ps.stderr);
      for (const run of [none, open, init, ps]) {
        assert.ok(!(run.stdout + run.stderr).includes(password), run.stdout + run.stderr);
      }
    } finally {
      asAdmin(
        `DROP SCHEMA IF EXISTS pw_${suffix} CASCADE`,
        `REVOKE CREATE ON DATABASE postgres FROM ${role}`,
        `DROP ROLE IF EXISTS ${role}`,
      );
    }
  },
);
