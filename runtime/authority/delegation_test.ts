import assert from "node:assert/strict";
import { IMAGE_OPERATOR } from "../broker/image_registry.ts";
import type { CapabilityResource, Effect, Right } from "./capability.ts";
import type { GrantRequest } from "./capability_table.ts";
import { FakeClock } from "../base/clock.ts";
import type { Action } from "./decide.ts";
import type { InheritScope } from "./delegation.ts";
import { CapabilityDeniedError } from "../base/errors.ts";
import { seededIds } from "../base/ids.ts";
import type { ModeName } from "./modes.ts";
import type { Runtime } from "../runtime.ts";
import { type TestRuntime, testRuntime } from "../../testing.ts";

function fixture(mode: ModeName = "workspace-write"): Promise<TestRuntime> {
  return testRuntime({
    prefix: "libos-delegation-",
    mode,
    clock: new FakeClock(),
    ids: seededIds(17),
  });
}

const WHOLE_TREE: CapabilityResource = { type: "fs", path: ".", scope: "subtree" };
const READ_TREE: InheritScope = { resource: WHOLE_TREE, rights: ["read"] };

function spawnParent(runtime: Runtime): string {
  return runtime.processes.spawn({ goal: "parent", image: "coding-agent:v0" }).pid;
}

function fork(runtime: Runtime, parent: string, inherit?: readonly InheritScope[]): string {
  return runtime.processes.fork(
    parent,
    inherit === undefined ? {} : { inherit },
    { kind: "process", pid: parent },
  ).pid;
}

function fsAction(path: string, right: Right, digest?: string): Action {
  return {
    resource: { type: "fs", path },
    right,
    ...(digest === undefined ? {} : { digest }),
  };
}

function effect(runtime: Runtime, pid: string, action: Action): Effect {
  return runtime.authority.decide(pid, action).effect;
}

function grant(
  runtime: Runtime,
  subject: string,
  fields: Omit<GrantRequest, "subject" | "issuer">,
): string {
  return runtime.authority.capabilities.grant({ subject, issuer: "operator", ...fields }).id;
}

/** The fs read/stat/write/delete capability the mode granted a top-level process on `.`. */
function workspaceGrant(runtime: Runtime, pid: string): string {
  const found = runtime.authority.capabilities.list(pid).find((c) =>
    c.resource.type === "fs" && c.resource.path === "." && c.issuer.startsWith("mode:")
  );
  assert.ok(found, `process ${pid} has no workspace grant`);
  return found.id;
}

Deno.test("ProcessManager.fork() keeps a parent's deny carve-out in the child (attack: fork to read secrets/)", async () => {
  for (const how of ["fork", "spawnChild"] as const) {
    await using f = await fixture();
    const { runtime } = f;
    const parent = spawnParent(runtime);
    const denySecrets = grant(runtime, parent, {
      resource: { type: "fs", path: "secrets", scope: "subtree" },
      rights: ["read"],
      effect: "deny",
    });
    const child = how === "fork"
      ? fork(runtime, parent, [READ_TREE])
      : runtime.processes.spawnChild(
        parent,
        { goal: "child", image: "coding-agent:v0", inherit: [READ_TREE] },
        { kind: "process", pid: parent },
      ).pid;
    const secret = runtime.authority.decide(child, fsAction("secrets/x", "read"));
    assert.equal(secret.effect, "deny", how);
    // The child's deny is derived from the parent's, so it names a capability of the child's.
    assert.match(secret.reason, /^cap:cap_/);
    assert.equal(runtime.authority.capabilities.get(secret.capability!).derivedFrom, denySecrets);
    assert.equal(effect(runtime, child, fsAction("SECRETS/x", "read")), "deny", how);
    assert.equal(effect(runtime, child, fsAction("src/a.ts", "read")), "allow", how);
    // Only read was handed over.
    assert.equal(effect(runtime, child, fsAction("src/a.ts", "write")), "deny", how);
    assert.throws(
      () => runtime.authority.require(child, fsAction("secrets/x", "read"), "read secrets/x"),
      CapabilityDeniedError,
    );
  }
});

Deno.test("ProcessManager.fork() never turns a parent's shell ask into a child's allow (attack: delegate to escape approval)", async () => {
  await using f = await fixture("full-access");
  const { runtime } = f;
  // Without the parser the hardline floor refuses every script body it cannot look into.
  await runtime.shellParser.load();
  const parent = spawnParent(runtime);
  const anyShell: CapabilityResource = { type: "shell", argv: [], scope: "any" };
  grant(runtime, parent, { resource: anyShell, rights: ["execute"], effect: "ask" });
  const action: Action = {
    resource: { type: "shell", argv: ["bash", "-c", "id"] },
    right: "execute",
  };
  assert.equal(effect(runtime, parent, action), "ask");
  const child = fork(runtime, parent, [{ resource: anyShell, rights: ["execute"] }]);
  assert.equal(effect(runtime, child, action), "ask");
  assert.equal(
    effect(runtime, child, { resource: { type: "shell", argv: ["ls"] }, right: "execute" }),
    "ask",
  );
  // Even an allow-always the child is granted afterwards leaves the inherited ask in place.
  grant(runtime, child, {
    resource: { type: "shell", argv: ["bash", "-c", "id"], scope: "exact" },
    rights: ["execute"],
    effect: "allow",
  });
  assert.equal(effect(runtime, child, action), "ask");
});

Deno.test("ProcessManager.fork() child: an allow-always granted later never overrides an inherited deny", async () => {
  await using f = await fixture();
  const { runtime } = f;
  const parent = spawnParent(runtime);
  grant(runtime, parent, {
    resource: { type: "fs", path: "secrets", scope: "subtree" },
    rights: ["read"],
    effect: "deny",
  });
  const child = fork(runtime, parent, [READ_TREE]);
  const always = grant(runtime, child, {
    resource: { type: "fs", path: "secrets/x", scope: "exact" },
    rights: ["read"],
    effect: "allow",
  });
  const decision = runtime.authority.decide(child, fsAction("secrets/x", "read"));
  assert.equal(decision.effect, "deny");
  assert.notEqual(decision.capability, always);
  assert.equal(runtime.authority.capabilities.get(decision.capability!).tier, "inherited");
});

Deno.test("CapabilityTable.revoke() of a parent's grant stops the child's derived one", async () => {
  await using f = await fixture();
  const { runtime } = f;
  const parent = spawnParent(runtime);
  const child = fork(runtime, parent, [READ_TREE]);
  const grandchild = fork(runtime, child, [READ_TREE]);
  for (const pid of [parent, child, grandchild]) {
    assert.equal(effect(runtime, pid, fsAction("src/a.ts", "read")), "allow", pid);
  }
  const revoked = runtime.authority.capabilities.revoke(workspaceGrant(runtime, parent));
  assert.deepEqual(revoked.map((c) => c.subject).sort(), [parent, child, grandchild].sort());
  for (const pid of [parent, child, grandchild]) {
    assert.deepEqual(
      runtime.authority.decide(pid, fsAction("src/a.ts", "read")),
      { effect: "deny", reason: "default", layer: "default" },
      pid,
    );
  }
});

Deno.test("ProcessManager.fork() refuses to delegate a scope the parent lacks and creates no child (attack: widen README.md to the whole tree)", async () => {
  await using f = await fixture();
  const { runtime } = f;
  const top = spawnParent(runtime);
  const readme: CapabilityResource = { type: "fs", path: "README.md", scope: "exact" };
  const parent = fork(runtime, top, [{ resource: readme, rights: ["read"] }]);
  assert.equal(effect(runtime, parent, fsAction("README.md", "read")), "allow");
  assert.equal(effect(runtime, parent, fsAction("src/a.ts", "read")), "deny");
  const before = runtime.processes.list().map((p) => p.pid);
  const lastSeq = runtime.audit.query({ order: "desc", limit: 1 })[0]?.seq ?? 0;
  const forksBefore = runtime.audit.query({ action: "process.fork" }).length;
  const parentCaps = runtime.authority.capabilities.list(parent).length;
  assert.throws(
    () => fork(runtime, parent, [READ_TREE]),
    (error: unknown) => {
      assert.ok(error instanceof CapabilityDeniedError, String(error));
      assert.equal(error.code, "cannot_delegate");
      assert.match(error.message, /^Cannot hand read on fs:\.\/\*\* to a child/);
      return true;
    },
  );
  assert.deepEqual(runtime.processes.list().map((p) => p.pid), before);
  assert.deepEqual(runtime.processes.list({ parent }), []);
  // No lineage grant, no child capability survived the refusal; its one record is the refusal.
  const added = runtime.audit.query({ afterSeq: lastSeq, limit: 10 });
  assert.deepEqual(
    added.map((r) => [r.action, r.decision, r.authority, r.pid, r.detail?.code]),
    [["process.fork", "deny", "default", parent, "cannot_delegate"]],
  );
  assert.equal(runtime.audit.query({ action: "process.fork" }).length, forksBefore + 1);
  assert.equal(runtime.authority.capabilities.list(parent).length, parentCaps);
  // The refusal left the parent able to fork within what it holds.
  const ok = fork(runtime, parent, [{ resource: readme, rights: ["read"] }]);
  assert.equal(effect(runtime, ok, fsAction("README.md", "read")), "allow");
});

Deno.test("ProcessManager.fork() without inherit gives the child no filesystem authority, and exec never lifts it", async () => {
  await using f = await fixture("full-access");
  const { runtime } = f;
  const parent = spawnParent(runtime);
  const child = fork(runtime, parent);
  const grid: Action[] = [];
  for (const path of [".", "README.md", "src/a.ts", ".git/config", ".env"]) {
    for (const right of ["read", "stat", "write", "delete"] as const) {
      grid.push(fsAction(path, right));
    }
  }
  grid.push({ resource: { type: "shell", argv: ["ls"] }, right: "execute" });
  grid.push({ resource: { type: "net", key: "example.com" }, right: "connect" });
  grid.push({ resource: { type: "process", key: parent }, right: "signal" });
  const decide = () => grid.map((a) => runtime.authority.decide(child, a));
  const before = decide();
  for (const [i, d] of before.entries()) {
    assert.deepEqual(d, { effect: "deny", reason: "default", layer: "default" }, `${i}`);
  }
  // exec checks capabilities like every other path: the bare child may not even read an image.
  assert.throws(
    () =>
      runtime.processes.exec(child, { image: "base-agent:v0", tools: [] }, {
        kind: "process",
        pid: child,
      }),
    (e: unknown) => e instanceof CapabilityDeniedError && e.code === "capability_denied",
  );
  assert.equal(runtime.processes.get(child).image, "coding-agent:v0", "nothing changed");
  // With image read delegated, exec works — and still lifts nothing.
  const reader = fork(runtime, parent, [{
    resource: { type: "image", key: "*", scope: "any" },
    rights: ["read"],
  }]);
  const beforeReader = grid.map((a) => runtime.authority.decide(reader, a));
  runtime.processes.exec(reader, { image: "base-agent:v0" }, { kind: "process", pid: reader });
  assert.deepEqual(
    runtime.processes.get(reader).tools,
    runtime.images.get(IMAGE_OPERATOR, "base-agent:v0").defaultTools,
    "the image's default tools: visible, not authorised",
  );
  assert.deepEqual(grid.map((a) => runtime.authority.decide(reader, a)), beforeReader);
  for (const d of beforeReader) assert.equal(d.effect, "deny");
  assert.deepEqual(decide(), before);
});

const RANK: Readonly<Record<Effect, number>> = { deny: 0, ask: 1, allow: 2 };
const RIGHTS: readonly Right[] = ["read", "stat", "write", "delete"];
const PATHS: readonly string[] = [
  ".",
  "README.md",
  "src",
  "src/a.ts",
  "SRC/a.ts",
  "src/gen/x.ts",
  "src/lib/y.ts",
  "src/secret/k",
  "src/Secret/k",
  "secrets",
  "secrets/x",
  "SECRETS/x",
  "vendor/ok.js",
  "vendor/other.js",
  ".env",
  ".git/config",
];
const ALL_RIGHTS_TREE: InheritScope = { resource: WHOLE_TREE, rights: [...RIGHTS] };
const DIGEST = `sha256:${"c".repeat(64)}`;

interface AttenuationCase {
  readonly name: string;
  /** Grants added to the parent on top of full-access's read/stat/write/delete on `.`. */
  readonly grants: readonly Omit<GrantRequest, "subject" | "issuer">[];
  readonly inherit: readonly InheritScope[];
  /** Decide the grid's actions with this digest as well as without one. */
  readonly digest?: string;
}

const fsCap = (path: string, scope: "exact" | "subtree" = "subtree"): CapabilityResource => ({
  type: "fs",
  path,
  scope,
});

const ATTENUATION: readonly AttenuationCase[] = [
  { name: "the mode's defaults only, whole tree", grants: [], inherit: [ALL_RIGHTS_TREE] },
  {
    name: "deny and ask carve-outs inside the tree",
    grants: [
      { resource: fsCap("secrets"), rights: ["read"], effect: "deny" },
      { resource: fsCap("src/gen"), rights: ["write"], effect: "ask" },
      { resource: fsCap("src/a.ts", "exact"), rights: ["delete"], effect: "deny" },
      { resource: fsCap("README.md", "exact"), rights: ["stat"], effect: "ask" },
    ],
    inherit: [ALL_RIGHTS_TREE],
  },
  {
    name: "an allow-always inside an ask carve-out",
    grants: [
      { resource: fsCap("vendor"), rights: ["read", "write"], effect: "ask" },
      { resource: fsCap("vendor/ok.js", "exact"), rights: ["read"], effect: "allow" },
    ],
    inherit: [ALL_RIGHTS_TREE],
  },
  {
    name: "the parent's own inherited floor under its own allow-always",
    grants: [
      { resource: fsCap("secrets"), rights: ["read"], effect: "deny", tier: "inherited" },
      { resource: fsCap("secrets/x", "exact"), rights: ["read"], effect: "allow" },
      { resource: fsCap("."), rights: ["write"], effect: "ask", tier: "inherited" },
    ],
    inherit: [ALL_RIGHTS_TREE],
  },
  {
    name: "a narrower scope (src) with a deny inside it",
    grants: [{ resource: fsCap("src/lib"), rights: ["read"], effect: "deny" }],
    inherit: [{ resource: fsCap("src"), rights: [...RIGHTS] }],
  },
  {
    name: "a case-variant deny (SRC/Secret) inside a narrower scope (src)",
    grants: [{ resource: fsCap("SRC/Secret"), rights: ["read"], effect: "deny" }],
    inherit: [{ resource: fsCap("src"), rights: ["read"] }],
  },
  {
    name: "a one-shot deny carve-out",
    grants: [{ resource: fsCap("secrets"), rights: ["read"], effect: "deny", oneShot: true }],
    inherit: [ALL_RIGHTS_TREE],
  },
  {
    name: "a digest-bound deny carve-out",
    grants: [{
      resource: fsCap("src/a.ts", "exact"),
      rights: ["write"],
      effect: "deny",
      actionDigest: DIGEST,
    }],
    inherit: [ALL_RIGHTS_TREE],
    digest: DIGEST,
  },
];

for (const c of ATTENUATION) {
  Deno.test(`ProcessManager.fork() child is never more permissive than its parent: ${c.name}`, async () => {
    await using f = await fixture("full-access");
    const { runtime } = f;
    const parent = spawnParent(runtime);
    for (const g of c.grants) grant(runtime, parent, g);
    const child = fork(runtime, parent, c.inherit);
    const wider: string[] = [];
    let checked = 0;
    let childAllows = 0;
    for (const path of PATHS) {
      for (const right of RIGHTS) {
        for (const digest of c.digest === undefined ? [undefined] : [undefined, c.digest]) {
          const action = fsAction(path, right, digest);
          const p = runtime.authority.decide(parent, action);
          const k = runtime.authority.decide(child, action);
          checked++;
          if (k.effect === "allow") childAllows++;
          if (RANK[k.effect] > RANK[p.effect]) {
            wider.push(
              `${right} ${path}${
                digest ? " (digest)" : ""
              }: child ${k.effect} (${k.reason}) > parent ${p.effect} (${p.reason})`,
            );
          }
        }
      }
    }
    assert.ok(checked >= PATHS.length * RIGHTS.length);
    // The child did receive authority: the comparison is not deny against deny everywhere.
    assert.ok(childAllows > 0, "the child was handed nothing");
    assert.deepEqual(wider, []);
  });
}
