import assert from "node:assert/strict";
import { testCapability } from "../../tests/authority_fixture.ts";
import { join } from "node:path";
import {
  type ActionResource,
  Capability,
  type CapabilityResource,
  type Effect,
} from "./capability.ts";
import { CapabilityIndex, isLive } from "./capability_index.ts";
import { FakeClock } from "../base/clock.ts";
import { CapabilityDeniedError, ValidationError } from "../base/errors.ts";
import { seededIds } from "../base/ids.ts";
import { testRuntime } from "../../testing.ts";

const NOW = 1_000_000;

const cap = testCapability;

/** The id and effect that answer `right` on `resource`, or `none`. */
function answer(index: CapabilityIndex, resource: ActionResource, right: string): string {
  const m = index.match(resource, right, undefined, NOW);
  return m ? `${m.effect} ${m.capability.id}` : "none";
}

function check(
  index: CapabilityIndex,
  right: string,
  table: readonly (readonly [ActionResource, Effect | "none", Capability | null])[],
): void {
  for (const [resource, effect, by] of table) {
    assert.equal(
      answer(index, resource, right),
      by === null ? effect : `${effect} ${by.id}`,
      JSON.stringify(resource),
    );
  }
}

const fsAt = (path: string): ActionResource => ({ type: "fs", path });
const argv = (...tokens: string[]): ActionResource => ({ type: "shell", argv: tokens });
const obj = (key: string): ActionResource => ({ type: "object", key });

Deno.test("CapabilityIndex.match() prefers the deepest filesystem subtree, and an exact path over any subtree", () => {
  const root = cap(1, {
    resource: { type: "fs", path: ".", scope: "subtree" },
    rights: ["read"],
    effect: "allow",
  });
  const src = cap(2, {
    resource: { type: "fs", path: "src", scope: "subtree" },
    rights: ["read"],
    effect: "ask",
  });
  const lib = cap(3, {
    resource: { type: "fs", path: "src/lib", scope: "subtree" },
    rights: ["read"],
    effect: "deny",
  });
  const ok = cap(4, {
    resource: { type: "fs", path: "src/lib/ok.ts", scope: "exact" },
    rights: ["read"],
    effect: "allow",
  });
  const index = new CapabilityIndex([ok, lib, src, root]);
  assert.equal(index.size, 4);
  check(index, "read", [
    [fsAt("."), "allow", root],
    [fsAt("README.md"), "allow", root],
    [fsAt("src"), "ask", src],
    [fsAt("src/a.ts"), "ask", src],
    [fsAt("src/lib"), "deny", lib],
    [fsAt("src/lib/deep/x.ts"), "deny", lib],
    [fsAt("src/lib/ok.ts"), "allow", ok],
    // A sibling whose name merely starts with "src" is not in the src subtree.
    [fsAt("srcfoo/a.ts"), "allow", root],
    [fsAt("src/libx/a.ts"), "ask", src],
  ]);
  check(index, "write", [[fsAt("src/a.ts"), "none", null]]);
});

Deno.test("CapabilityIndex.match() ranks shell argv exact over a longer prefix over a shorter prefix over any", () => {
  const any = cap(1, {
    resource: { type: "shell", argv: [], scope: "any" },
    rights: ["execute"],
    effect: "allow",
  });
  const git = cap(2, {
    resource: { type: "shell", argv: ["git"], scope: "prefix" },
    rights: ["execute"],
    effect: "ask",
  });
  const push = cap(3, {
    resource: { type: "shell", argv: ["git", "push"], scope: "prefix" },
    rights: ["execute"],
    effect: "deny",
  });
  const dry = cap(4, {
    resource: { type: "shell", argv: ["git", "push", "--dry-run"], scope: "exact" },
    rights: ["execute"],
    effect: "allow",
  });
  const index = new CapabilityIndex([any, git, push, dry]);
  check(index, "execute", [
    [argv("ls", "-la"), "allow", any],
    [argv("git"), "ask", git],
    [argv("git", "status"), "ask", git],
    [argv("git", "push", "origin", "main"), "deny", push],
    [argv("git", "push", "--dry-run"), "allow", dry],
    // Exact means exact: one more token and the prefix deny decides.
    [argv("git", "push", "--dry-run", "--force"), "deny", push],
    // Prefixes are token-wise: "gitx" is not "git", and "git push" as one token is not two.
    [argv("gitx", "push"), "allow", any],
    [argv("git push", "origin"), "allow", any],
  ]);
});

Deno.test("CapabilityIndex.match() ranks keyed resources exact over a longer prefix over a shorter prefix over any", () => {
  const any = cap(1, {
    resource: { type: "object", key: "x", scope: "any" },
    rights: ["read"],
    effect: "ask",
  });
  const project = cap(2, {
    resource: { type: "object", key: "project/", scope: "prefix" },
    rights: ["read"],
    effect: "allow",
  });
  const secret = cap(3, {
    resource: { type: "object", key: "project/secret", scope: "prefix" },
    rights: ["read"],
    effect: "deny",
  });
  const fine = cap(4, {
    resource: { type: "object", key: "project/secret-ok", scope: "exact" },
    rights: ["read"],
    effect: "allow",
  });
  const index = new CapabilityIndex([fine, secret, project, any]);
  check(index, "read", [
    [obj("other"), "ask", any],
    [obj("project"), "ask", any],
    [obj("project/a"), "allow", project],
    [obj("project/secrets/x"), "deny", secret],
    [obj("project/secret-ok"), "allow", fine],
    [obj("project/secret-ok/x"), "deny", secret],
  ]);
  // Another resource type with the same key is not matched.
  assert.equal(answer(index, { type: "namespace", key: "project/a" }, "read"), "none");
});

Deno.test("CapabilityIndex.match() folds case for deny and ask only (attack: RM -rf and SRC/x)", () => {
  const rm = cap(1, {
    resource: { type: "shell", argv: ["rm"], scope: "prefix" },
    rights: ["execute"],
    effect: "deny",
  });
  const ls = cap(2, {
    resource: { type: "shell", argv: ["ls"], scope: "exact" },
    rights: ["execute"],
    effect: "allow",
  });
  const src = cap(3, {
    resource: { type: "fs", path: "src", scope: "subtree" },
    rights: ["read"],
    effect: "allow",
  });
  const vendor = cap(4, {
    resource: { type: "fs", path: "Vendor", scope: "subtree" },
    rights: ["read"],
    effect: "ask",
  });
  const index = new CapabilityIndex([rm, ls, src, vendor]);
  check(index, "execute", [
    [argv("RM", "-rf", "x"), "deny", rm],
    [argv("Rm"), "deny", rm],
    [argv("ls"), "allow", ls],
    [argv("LS"), "none", null],
  ]);
  check(index, "read", [
    [fsAt("src/a.ts"), "allow", src],
    [fsAt("SRC/a.ts"), "none", null],
    [fsAt("vendor/x"), "ask", vendor],
    [fsAt("VENDOR/x"), "ask", vendor],
  ]);
});

Deno.test("CapabilityIndex.match() a deny on the empty shell prefix covers every command (attack: deny everything is silently ignored)", () => {
  const denyAll = cap(1, {
    resource: { type: "shell", argv: [], scope: "prefix" },
    rights: ["execute"],
    effect: "deny",
  });
  const allowLs = cap(2, {
    resource: { type: "shell", argv: ["ls"], scope: "prefix" },
    rights: ["execute"],
    effect: "allow",
  });
  const index = new CapabilityIndex([denyAll]);
  assert.equal(answer(index, argv("rm", "-rf", "x"), "execute"), `deny ${denyAll.id}`);
  // With a more specific allow, the allow decides there and the deny everywhere else.
  const both = new CapabilityIndex([denyAll, allowLs]);
  assert.equal(answer(both, argv("ls"), "execute"), `allow ${allowLs.id}`);
  assert.equal(answer(both, argv("curl", "x"), "execute"), `deny ${denyAll.id}`);
});

Deno.test("CapabilityIndex.match() a shell deny also matches .exe and version-suffixed names (attack: PYTHON3.11 and rm.exe)", () => {
  const python = cap(1, {
    resource: { type: "shell", argv: ["python"], scope: "prefix" },
    rights: ["execute"],
    effect: "deny",
  });
  const rm = cap(2, {
    resource: { type: "shell", argv: ["rm"], scope: "prefix" },
    rights: ["execute"],
    effect: "deny",
  });
  const index = new CapabilityIndex([python, rm]);
  check(index, "execute", [
    [argv("python3.11", "-c", "x"), "deny", python],
    [argv("PYTHON3", "-c", "x"), "deny", python],
    [argv("rm.exe", "-rf", "x"), "deny", rm],
  ]);
});

Deno.test("isLive() rejects revoked, expired and used one-shot capabilities and keeps the rest", () => {
  const base: Pick<Capability, "resource" | "rights" | "effect"> = {
    resource: { type: "fs", path: "a", scope: "exact" },
    rights: ["read"],
    effect: "allow",
  };
  assert.equal(isLive(cap(1, base), NOW), true);
  assert.equal(isLive(cap(1, { ...base, expiresAt: NOW + 1 }), NOW), true);
  assert.equal(isLive(cap(1, { ...base, expiresAt: NOW }), NOW), false);
  assert.equal(isLive(cap(1, { ...base, revokedAt: 5 }), NOW), false);
  assert.equal(isLive(cap(1, { ...base, oneShot: true }), NOW), true);
  assert.equal(isLive(cap(1, { ...base, oneShot: true, usedAt: 5 }), NOW), false);
});

Deno.test("CapabilityTable.grant() refuses a right the resource type does not know, and stores nothing", async () => {
  await using t = await testRuntime({
    prefix: "libos-cap-",
    clock: new FakeClock(),
    ids: seededIds(3),
  });
  const { runtime } = t;
  const table = runtime.authority.capabilities;
  const bad: { resource: CapabilityResource; rights: string[] }[] = [
    { resource: { type: "fs", path: ".", scope: "subtree" }, rights: ["execute"] },
    { resource: { type: "shell", argv: ["ls"], scope: "exact" }, rights: ["read"] },
    { resource: { type: "net", key: "example.com", scope: "exact" }, rights: ["write"] },
    // Not a canonical workspace-relative path.
    { resource: { type: "fs", path: "../etc", scope: "subtree" }, rights: ["read"] },
  ];
  for (const request of bad) {
    assert.throws(
      () =>
        table.grant({
          subject: "pid_000000000001",
          resource: request.resource,
          rights: request.rights,
          effect: "allow",
          issuer: "operator",
        }),
      (error: unknown) => {
        assert.ok(error instanceof ValidationError, String(error));
        assert.equal(error.code, "validation_failed");
        assert.match(error.message, /^Cannot grant/);
        return true;
      },
      JSON.stringify(request),
    );
  }
  assert.deepEqual(table.list("pid_000000000001"), []);
  assert.equal(runtime.audit.query({ action: "capability.grant" }).length, 0);
  assert.equal(
    runtime.authority.decide("pid_000000000001", {
      resource: { type: "fs", path: "a" },
      right: "read",
    }).reason,
    "default",
  );
});

Deno.test("CapabilityTable.revoke() revokes everything derived from a capability, transitively, and audits each", async () => {
  const clock = new FakeClock();
  await using t = await testRuntime({
    prefix: "libos-cap-",
    clock,
    ids: seededIds(5),
  });
  const { runtime } = t;
  const table = runtime.authority.capabilities;
  const grant = (subject: string, derivedFrom?: string) =>
    table.grant({
      subject,
      resource: { type: "fs", path: ".", scope: "subtree" },
      rights: ["read"],
      effect: "allow",
      issuer: "operator",
      ...(derivedFrom === undefined ? {} : { derivedFrom }),
    });
  const a = grant("pid_00000000000a");
  const b = grant("pid_00000000000b", a.id);
  const c = grant("pid_00000000000c", b.id);
  const unrelated = grant("pid_00000000000d");
  const readA = { resource: { type: "fs", path: "src/a.ts" }, right: "read" } as const;
  assert.equal(runtime.authority.decide("pid_00000000000c", readA).effect, "allow");
  clock.advance(1000);
  const revoked = table.revoke(a.id);
  assert.deepEqual(revoked.map((r) => r.id).sort(), [a.id, b.id, c.id].sort());
  for (const capability of [a, b, c]) {
    assert.equal(table.get(capability.id).revokedAt, clock.now());
    assert.deepEqual(
      runtime.authority.decide(capability.subject, readA),
      { effect: "deny", reason: "default", layer: "default" },
      capability.subject,
    );
  }
  assert.equal(table.get(unrelated.id).revokedAt, null);
  assert.equal(runtime.authority.decide(unrelated.subject, readA).effect, "allow");
  const records = runtime.audit.query({ action: "capability.revoke" });
  assert.deepEqual(
    records.map((r) => [r.correlation, r.authority]).sort(),
    [[a.id, "operator"], [b.id, `derived:${a.id}`], [c.id, `derived:${b.id}`]].sort(),
  );
  // Revoking again changes nothing and audits nothing.
  assert.deepEqual(table.revoke(a.id), []);
  assert.equal(runtime.audit.query({ action: "capability.revoke" }).length, 3);
});

Deno.test("Authority.require() consumes a one-shot capability once; it matches nothing afterwards (attack: replay an allow_once)", async () => {
  const clock = new FakeClock();
  await using t = await testRuntime({
    prefix: "libos-cap-",
    clock,
    ids: seededIds(7),
  });
  const { runtime } = t;
  const pid = "pid_000000000001";
  const once = runtime.authority.capabilities.grant({
    subject: pid,
    resource: { type: "fs", path: "notes.txt", scope: "exact" },
    rights: ["read"],
    effect: "allow",
    oneShot: true,
    issuer: "human:hreq_1",
  });
  const action = { resource: { type: "fs", path: "notes.txt" }, right: "read" } as const;
  // check() leaves it unconsumed.
  assert.equal(runtime.authority.check(pid, action, "read notes.txt").capability, once.id);
  assert.equal(runtime.authority.capabilities.get(once.id).usedAt, null);
  const first = runtime.authority.require(pid, action, "read notes.txt");
  assert.equal(first.effect, "allow");
  assert.equal(first.reason, `cap:${once.id}`);
  assert.equal(runtime.authority.capabilities.get(once.id).usedAt, clock.now());
  assert.throws(
    () => runtime.authority.require(pid, action, "read notes.txt"),
    (error: unknown) => {
      assert.ok(error instanceof CapabilityDeniedError, String(error));
      assert.equal(error.code, "capability_denied");
      assert.equal(error.reason, "default");
      assert.match(error.message, /^Cannot read notes\.txt: process pid_000000000001 lacks read/);
      return true;
    },
  );
  assert.equal(runtime.authority.decide(pid, action).reason, "default");
});

Deno.test("CapabilityTable: a revocation made from a second connection takes effect on the next check", async () => {
  const pid = "pid_000000000001";
  const action = { resource: { type: "fs", path: "src/a.ts" }, right: "read" } as const;
  await using t = await testRuntime({
    prefix: "libos-cap-",
    workspaceDir: "workspace",
    fromRoot: (dir) => ({
      db: join(dir, "state.db"),
      env: { get: (name) => (name === "XDG_STATE_HOME" ? join(dir, "xdg") : undefined) },
    }),
    clock: new FakeClock(),
    ids: seededIds(1),
  });
  const first = t.runtime;
  const granted = first.authority.capabilities.grant({
    subject: pid,
    resource: { type: "fs", path: ".", scope: "subtree" },
    rights: ["read"],
    effect: "allow",
    issuer: "operator",
  });
  assert.equal(first.authority.decide(pid, action).reason, `cap:${granted.id}`);
  // Commit, so the second connection can take the write lock.
  first.store.flush();
  {
    await using second = await t.reopen({ clock: new FakeClock(), ids: seededIds(2) });
    assert.equal(second.authority.decide(pid, action).effect, "allow");
    const revoked = second.authority.capabilities.revoke(granted.id);
    assert.deepEqual(revoked.map((r) => r.id), [granted.id]);
    second.store.flush();
  }
  // The first runtime's index was built before the revocation; the very next check sees it.
  assert.deepEqual(first.authority.decide(pid, action), {
    effect: "deny",
    reason: "default",
    layer: "default",
  });
  assert.notEqual(first.authority.capabilities.get(granted.id).revokedAt, null);
});
