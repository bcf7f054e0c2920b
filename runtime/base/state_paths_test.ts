import assert from "node:assert/strict";
import { join } from "node:path";
import { ValidationError } from "./errors.ts";
import {
  databaseRealPath,
  defaultDatabasePath,
  headFilePath,
  resolveWorkspace,
  stateDirectory,
} from "./state_paths.ts";

const env = (vars: Record<string, string>) => ({ get: (name: string) => vars[name] });

Deno.test("stateDirectory() prefers an absolute XDG_STATE_HOME, then HOME, and ignores a relative XDG_STATE_HOME", () => {
  assert.equal(stateDirectory(env({ XDG_STATE_HOME: "/s", HOME: "/h" })), "/s/libos");
  assert.equal(stateDirectory(env({ XDG_STATE_HOME: "rel", HOME: "/h" })), "/h/.local/state/libos");
  assert.equal(stateDirectory(env({ HOME: "/h" })), "/h/.local/state/libos");
  assert.throws(() => stateDirectory(env({})), ValidationError);
});

Deno.test("defaultDatabasePath() keys the database by the workspace's real path, in the state directory", () => {
  const a = defaultDatabasePath("/state/libos", "/home/u/project");
  assert.match(a, /^\/state\/libos\/[0-9a-f]{64}\.db$/);
  assert.notEqual(a, defaultDatabasePath("/state/libos", "/home/u/other"));
  assert.match(headFilePath("/state/libos", a), /^\/state\/libos\/heads\/[0-9a-f]{64}\.head$/);
});

Deno.test("resolveWorkspace() canonicalises symlinks and refuses a missing path or a file", () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-ws-" }));
  try {
    Deno.mkdirSync(join(dir, "real"));
    Deno.symlinkSync(join(dir, "real"), join(dir, "link"));
    Deno.writeTextFileSync(join(dir, "file"), "x");
    assert.equal(resolveWorkspace("link", dir), join(dir, "real"));
    assert.equal(resolveWorkspace(join(dir, "real", ".."), "/"), dir);
    assert.throws(() => resolveWorkspace("missing", dir), ValidationError);
    assert.throws(() => resolveWorkspace("file", dir), /not a directory/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("databaseRealPath() resolves a not-yet-created file through its directory's real path", () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-db-" }));
  try {
    Deno.mkdirSync(join(dir, "real"));
    Deno.symlinkSync(join(dir, "real"), join(dir, "link"));
    assert.equal(databaseRealPath("link/new.db", dir), join(dir, "real", "new.db"));
    assert.throws(() => databaseRealPath("nowhere/new.db", dir), /directory does not exist/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
