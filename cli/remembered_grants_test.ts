import assert from "node:assert/strict";
import { join } from "node:path";
import {
  forgetGrant,
  GrantsFileError,
  loadAllRememberedGrants,
  loadRememberedGrants,
  type RememberedGrant,
  rememberGrant,
} from "./remembered_grants.ts";

const GRANT: Omit<RememberedGrant, "id"> = {
  resource: { type: "shell", argv: ["npm", "test"], scope: "exact" },
  rights: ["execute"],
  scope: "exact",
  request: "hreq_0123456789ab",
  by: "human:cli",
  at: "2026-12-02T10:00:00.000Z",
};

/** A home with a config directory, and a workspace beside it; removed when disposed. */
function place() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-grants-" }));
  const workspace = join(root, "ws");
  Deno.mkdirSync(workspace);
  const vars: Record<string, string> = {
    HOME: join(root, "home"),
    XDG_CONFIG_HOME: join(root, "cfg"),
  };
  return {
    root,
    workspace,
    vars,
    env: { get: (name: string) => vars[name] },
    file: join(root, "cfg", "libos", "grants.jsonc"),
    [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }),
  };
}

Deno.test("rememberGrant() writes grants.jsonc in the config directory (mode 0600, no temporary file left), keyed by the workspace; forgetGrant() removes one", () => {
  using p = place();
  const id = rememberGrant(p.env, p.workspace, GRANT);
  assert.match(id, /^grant_[0-9a-f]{12}$/);
  assert.equal(Deno.statSync(p.file).mode! & 0o777, 0o600);
  assert.throws(() => Deno.statSync(`${p.file}.tmp`), Deno.errors.NotFound);
  const other = join(p.root, "other");
  Deno.mkdirSync(other);
  assert.deepEqual(loadRememberedGrants(p.env, other).grants, [], "another workspace has none");
  const [kept] = loadRememberedGrants(p.env, p.workspace).grants;
  assert.equal(kept?.id, id);
  assert.deepEqual(kept?.resource, GRANT.resource);
  assert.equal(forgetGrant(p.env, other, id), undefined, "not another workspace's to forget");
  assert.equal(forgetGrant(p.env, p.workspace, id)?.id, id);
  assert.deepEqual(loadAllRememberedGrants(p.env).workspaces, {});
});

Deno.test("a broken grants file is a grants_file_invalid error naming file, line and column — and is never rewritten", () => {
  using p = place();
  Deno.mkdirSync(join(p.root, "cfg", "libos"), { recursive: true });
  const cases: [string, RegExp][] = [
    [
      '{ "version": 1, "workspaces": {\n  "/x": [ { "id": "grant_0123456789ab" ',
      /:2:\d+: .*fix that line/,
    ],
    ['{ "version": 2, "workspaces": {} }', /:1:\d+: version/],
    [
      `{ "version": 1, "workspaces": { "/w": [ ${
        JSON.stringify({ ...GRANT, id: "grant_0123456789ab", rights: ["write"] })
      } ] } }`,
      /"write" is not a right on a shell resource/,
    ],
    [
      `{ "version": 1, "workspaces": { "relative/ws": [] } }`,
      /absolute real path/,
    ],
    [
      `{ "version": 1, "workspaces": {}, "extra": true }`,
      /Unrecognized key|unrecognized/i,
    ],
  ];
  for (const [text, message] of cases) {
    Deno.writeTextFileSync(p.file, text);
    for (
      const attempt of [
        () => loadRememberedGrants(p.env, p.workspace),
        () => rememberGrant(p.env, p.workspace, GRANT),
      ]
    ) {
      assert.throws(attempt, (e: unknown) => {
        assert.ok(e instanceof GrantsFileError, String(e));
        assert.equal(e.code, "grants_file_invalid");
        assert.ok(e.message.startsWith(p.file), e.message);
        assert.match(e.message, message);
        return true;
      });
    }
    assert.equal(Deno.readTextFileSync(p.file), text, "nothing was lost");
    assert.throws(() => Deno.statSync(`${p.file}.tmp`), Deno.errors.NotFound);
  }
});

Deno.test("attack: a config directory inside the workspace (XDG_CONFIG_HOME=<workspace>/cfg) — its grants file is ignored and never written", () => {
  using p = place();
  p.vars.XDG_CONFIG_HOME = join(p.workspace, "cfg");
  const planted = join(p.workspace, "cfg", "libos", "grants.jsonc");
  Deno.mkdirSync(join(p.workspace, "cfg", "libos"), { recursive: true });
  const text = JSON.stringify({
    version: 1,
    workspaces: { [p.workspace]: [{ ...GRANT, id: "grant_0123456789ab" }] },
  });
  Deno.writeTextFileSync(planted, text);
  const loaded = loadRememberedGrants(p.env, p.workspace);
  assert.deepEqual(loaded.grants, []);
  assert.equal(loaded.ignored, planted);
  assert.throws(
    () => rememberGrant(p.env, p.workspace, GRANT),
    (e: unknown) =>
      e instanceof GrantsFileError && e.code === "grants_file_unwritable" &&
      /inside the workspace/.test(e.message),
  );
  assert.equal(Deno.readTextFileSync(planted), text, "untouched");
});

Deno.test("rememberGrant() refuses while another writer holds the lock (its temporary file), and takes over a stale one", () => {
  using p = place();
  rememberGrant(p.env, p.workspace, GRANT);
  const before = Deno.readTextFileSync(p.file);
  Deno.writeTextFileSync(`${p.file}.tmp`, "half written");
  assert.throws(
    () => rememberGrant(p.env, p.workspace, GRANT),
    (e: unknown) => e instanceof GrantsFileError && /another libos is writing/.test(e.message),
  );
  assert.equal(Deno.readTextFileSync(p.file), before);
  // Left over from a crash a while ago: taken over.
  const old = new Date(Date.now() - 60_000);
  Deno.utimeSync(`${p.file}.tmp`, old, old);
  rememberGrant(p.env, p.workspace, GRANT);
  assert.equal(loadRememberedGrants(p.env, p.workspace).grants.length, 2);
});
