import assert from "node:assert/strict";
import { join } from "node:path";
import { locateDatabase } from "./database.ts";
import { UsageError, ValidationError } from "../base/errors.ts";
import { createRuntime } from "../runtime.ts";

Deno.test("locateDatabase() refuses a default database that would land inside the workspace (workspace = HOME)", () => {
  const home = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-home-" }));
  try {
    assert.throws(
      () =>
        locateDatabase({
          workspace: home,
          env: { get: (n) => (n === "HOME" ? home : undefined) },
          cwd: home,
          createStateDirectory: true,
        }),
      (e: unknown) =>
        e instanceof ValidationError && /inside the workspace/.test(e.message) &&
        /XDG_STATE_HOME/.test(e.message),
    );
    assert.deepEqual(
      [...Deno.readDirSync(home)],
      [],
      "the state directory was not created inside the workspace",
    );
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
});

Deno.test("locateDatabase() refuses an explicit --db inside the workspace, also through a symlink", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-loc-" }));
  try {
    const workspace = join(root, "ws");
    Deno.mkdirSync(workspace);
    Deno.symlinkSync(workspace, join(root, "alias"));
    const env = { get: (n: string) => (n === "XDG_STATE_HOME" ? join(root, "state") : undefined) };
    for (const db of [join(workspace, "state.db"), "state.db", join(root, "alias", "x.db")]) {
      assert.throws(() => locateDatabase({ workspace, db, env, cwd: workspace }), UsageError, db);
    }
    const fine = locateDatabase({ workspace, db: join(root, "outside.db"), env, cwd: workspace });
    assert.equal(fine.path, join(root, "outside.db"));
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("createRuntime() reports a refused database as a rejected promise, never a synchronous throw", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-reject-" }));
  try {
    const notes = join(root, "notes.db");
    Deno.writeTextFileSync(notes, "not a database\n".repeat(10));
    Deno.mkdirSync(join(root, "ws"));
    let promise: Promise<unknown> | undefined;
    assert.doesNotThrow(() => {
      promise = createRuntime({ workspace: join(root, "ws"), db: notes });
    });
    await assert.rejects(promise!, /not a libos database/);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
