import assert from "node:assert/strict";
import { join } from "node:path";
import { readHeadFile } from "./audit/audit_head.ts";
import { FakeClock } from "./base/clock.ts";
import { seededIds } from "./base/ids.ts";
import { createRuntime } from "./runtime.ts";

const OPERATOR_RECORD = {
  actor: "operator",
  action: "test.run",
  resource: "",
  decision: "none",
  authority: "operator",
} as const;

function tempDir(): string {
  return Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-runtime-" }));
}

Deno.test("createRuntime() records the start and end of a session as events", async () => {
  const dir = tempDir();
  try {
    const runtime = await createRuntime({
      workspace: dir,
      db: ":memory:",
      ids: seededIds(7),
      clock: new FakeClock(),
    });
    const started = runtime.events.read();
    assert.deepEqual(started.map((e) => e.kind), ["session.started"]);
    assert.equal(started[0]?.kind === "session.started" && started[0].payload.workspace, dir);
    assert.match(started[0]!.session, /^ses_[0-9a-f]{12}$/);
    const store = runtime.store;
    await runtime.close();
    await runtime.close();
    assert.throws(() => store.getMeta("x"), /closed/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("createRuntime() puts the default database and head file in the state directory, never in the workspace", async () => {
  const workspace = tempDir();
  const state = tempDir();
  try {
    const env = { get: (name: string) => (name === "XDG_STATE_HOME" ? state : undefined) };
    {
      await using runtime = await createRuntime({ workspace, env, clock: new FakeClock() });
      runtime.audit.append(OPERATOR_RECORD);
      assert.ok(runtime.location.path.startsWith(join(state, "libos") + "/"));
      assert.equal(runtime.location.isDefault, true);
    }
    assert.deepEqual(
      [...Deno.readDirSync(workspace)],
      [],
      "nothing was written into the workspace",
    );
    const dbs = [...Deno.readDirSync(join(state, "libos"))].filter((e) => e.name.endsWith(".db"));
    assert.equal(dbs.length, 1);
    assert.equal(Deno.statSync(join(state, "libos", dbs[0]!.name)).mode! & 0o777, 0o600);
    assert.equal(Deno.statSync(join(state, "libos")).mode! & 0o777, 0o700);
    const heads = [...Deno.readDirSync(join(state, "libos", "heads"))];
    assert.equal(heads.length, 1);
    assert.equal(
      readHeadFile(join(state, "libos", "heads", heads[0]!.name))?.chains.main?.chainSeq,
      1,
    );
  } finally {
    Deno.removeSync(workspace, { recursive: true });
    Deno.removeSync(state, { recursive: true });
  }
});

Deno.test("createRuntime() builds independent runtimes that live side by side in one process", async () => {
  const dir = tempDir();
  try {
    await using a = await createRuntime({ workspace: dir, db: ":memory:", session: "ses_a" });
    await using b = await createRuntime({ workspace: dir, db: ":memory:", session: "ses_b" });
    a.audit.append({
      actor: "operator",
      action: "test.only_a",
      resource: "",
      decision: "none",
      authority: "operator",
    });
    assert.equal(a.audit.query().length, 1);
    assert.equal(b.audit.query().length, 0);
    assert.deepEqual(b.events.read().map((e) => e.session), ["ses_b"]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("createRuntime() warns with a notice when the head file vanished under existing records, and does not recreate it", async () => {
  const workspace = tempDir();
  const state = tempDir();
  try {
    const env = { get: (name: string) => (name === "XDG_STATE_HOME" ? state : undefined) };
    let headPath = "";
    {
      await using runtime = await createRuntime({ workspace, env });
      runtime.audit.append(OPERATOR_RECORD);
      headPath = runtime.location.headPath!;
    }
    Deno.removeSync(headPath);
    {
      await using runtime = await createRuntime({ workspace, env });
      const notices = runtime.events.read({ kinds: ["notice"] });
      assert.equal(notices.length, 1);
      assert.equal(notices[0]?.kind === "notice" && notices[0].payload.code, "audit_head_missing");
      runtime.audit.append(OPERATOR_RECORD);
    }
    assert.throws(() => Deno.statSync(headPath), Deno.errors.NotFound);
  } finally {
    Deno.removeSync(workspace, { recursive: true });
    Deno.removeSync(state, { recursive: true });
  }
});
