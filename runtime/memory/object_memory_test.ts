import assert from "node:assert/strict";
import { join } from "node:path";
import { canonicalJson, type JsonValue, sha256Hex } from "../base/canonical_json.ts";
import { FakeClock } from "../base/clock.ts";
import {
  CapabilityDeniedError,
  LibosError,
  NotFoundError,
  StoreError,
  ValidationError,
  VolatileLostError,
} from "../base/errors.ts";
import { type IdSource, seededIds } from "../base/ids.ts";
import { processNamespace, type Provenance } from "./memory_object.ts";
import type { CreateObject, ObjectLimits, ObjectMemory } from "./object_memory.ts";
import { createRuntime, type Runtime } from "../runtime.ts";
import { collectRetained } from "./retention.ts";
import { type TestRuntime, testRuntime } from "../../testing.ts";

// ---------------------------------------------------------------- fixtures

const START = Date.UTC(2026, 10, 29, 12);
const PROV: Provenance = { source: "model", label: "object_memory_test", ref: null };
/** A well-formed oid that no test ever creates. */
const MISSING_OID = "obj_0123456789ab";

interface Fixture extends TestRuntime {
  readonly rt: Runtime;
  readonly mem: ObjectMemory;
  readonly clock: FakeClock;
}

async function fixture(
  options: {
    readonly mode?: string;
    readonly objectLimits?: Partial<ObjectLimits>;
    readonly ids?: IdSource;
  } = {},
): Promise<Fixture> {
  const clock = new FakeClock(START);
  const t = await testRuntime({
    prefix: "libos-objmem-",
    clock,
    ids: options.ids ?? seededIds(41),
    ...(options.mode === undefined ? {} : { mode: options.mode }),
    ...(options.objectLimits === undefined ? {} : { objectLimits: options.objectLimits }),
  });
  return { ...t, rt: t.runtime, mem: t.runtime.memory, clock };
}

/** A temporary root holding a workspace and, outside it, a state directory with a file database. */
interface FileRoot extends Disposable {
  readonly workspace: string;
  readonly state: string;
  readonly db: string;
  open(seed: number): Promise<Runtime>;
}

function fileRoot(): FileRoot {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-objmem-file-" }));
  const workspace = join(root, "workspace");
  const state = join(root, "state");
  Deno.mkdirSync(workspace);
  Deno.mkdirSync(state);
  const db = join(state, "objects.db");
  const env = { get: (name: string) => (name === "XDG_STATE_HOME" ? state : undefined) };
  return {
    workspace,
    state,
    db,
    open: (seed) =>
      createRuntime({ workspace, db, env, clock: new FakeClock(START), ids: seededIds(seed) }),
    [Symbol.dispose]() {
      Deno.removeSync(root, { recursive: true });
    },
  };
}

/** Creates a note with defaults for everything not given. */
function note(
  mem: ObjectMemory,
  actor: string,
  input: Partial<CreateObject> = {},
) {
  return mem.create(actor, { type: "note", payload: "x", provenance: PROV, ...input });
}

/** Every object row, links included: what "nothing changed" is checked against. */
function snapshot(rt: Runtime): string {
  const rows = rt.store.listObjects({ limit: 10_000 });
  return JSON.stringify(rows.map((r) => ({ ...r, links: rt.store.listLinks(r.oid, 1000) })));
}

function objectCount(rt: Runtime): number {
  return rt.store.listObjects({ limit: 10_000 }).length;
}

function capIds(rt: Runtime, pid: string): string[] {
  return rt.authority.capabilities.list(pid).map((c) => c.id).sort();
}

/** The object capabilities a process holds on `oid`, live or not. */
function objectCaps(rt: Runtime, pid: string, oid: string) {
  return rt.authority.capabilities.list(pid).filter((c) =>
    c.resource.type === "object" && c.resource.key.endsWith(`/${oid}`)
  );
}

function denials(rt: Runtime, pid: string, action: string) {
  return rt.audit.query({ pid, action, decision: "deny" });
}

/** Runs `fn`, which must throw a libos error, and returns it. */
function refusal(fn: () => unknown): LibosError {
  try {
    fn();
  } catch (error) {
    if (error instanceof LibosError) return error;
    throw error;
  }
  return assert.fail("expected a refusal, but the call succeeded");
}

/** Runs `fn` and returns what it threw, or `{ returned }` with what it returned. */
function attempt(fn: () => unknown): unknown {
  try {
    return { returned: fn() };
  } catch (error) {
    return error;
  }
}

function describe(outcome: unknown): string {
  if (outcome instanceof Error) return `${outcome.constructor.name}: ${outcome.message}`;
  if (typeof outcome === "object" && outcome !== null && "returned" in outcome) {
    const value = outcome.returned;
    return typeof value === "object" && value !== null
      ? "succeeded"
      : `succeeded, returning ${String(value)}`;
  }
  return String(outcome);
}

/** What a caller can observe of an error, with the given strings hidden. */
function observable(error: LibosError, ...hide: string[]) {
  let message = error.message;
  for (const h of hide) message = message.replaceAll(h, "<hidden>");
  return {
    class: error.constructor.name,
    code: error.code,
    fault: error.fault,
    reason: error instanceof CapabilityDeniedError ? error.reason : null,
    message,
  };
}

function grantNamespace(rt: Runtime, pid: string, key: string, rights: ("list" | "create")[]) {
  return rt.authority.capabilities.grant({
    subject: pid,
    resource: { type: "namespace", key, scope: "exact" },
    rights,
    effect: "allow",
    issuer: "operator",
  });
}

function grantObjects(
  rt: Runtime,
  pid: string,
  namespace: string,
  rights: ("read" | "write" | "delete" | "grant" | "link")[],
) {
  return rt.authority.capabilities.grant({
    subject: pid,
    resource: { type: "object", key: `${namespace}/`, scope: "prefix" },
    rights,
    effect: "allow",
    issuer: "operator",
  });
}

// ---------------------------------------------------------------- REFERENCE D: namespaces

Deno.test("ObjectMemory.create() rejects a duplicate name in one namespace with a ValidationError; nothing is stored", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const first = note(f.mem, a, { name: "local.note", payload: "first" });
  const before = snapshot(f.rt);
  const error = refusal(() => note(f.mem, a, { name: "local.note", payload: "second" }));
  assert.ok(error instanceof ValidationError, error.message);
  assert.match(error.message, /local\.note/);
  assert.equal(snapshot(f.rt), before, "nothing was stored or changed");
  assert.deepEqual(f.mem.readByName(a, processNamespace(a), "local.note").payload, "first");
  assert.equal(f.mem.readByName(a, processNamespace(a), "local.note").info.oid, first.oid);
});

Deno.test("ObjectMemory: the same name lives in a process namespace and in an explicit namespace; queries are scoped per namespace", async () => {
  await using f = await fixture();
  const a = f.spawn();
  f.mem.createNamespace("operator", "project");
  grantNamespace(f.rt, a, "project", ["create", "list"]);
  grantObjects(f.rt, a, "project", ["read"]);
  const local = note(f.mem, a, { name: "local.note", payload: "mine" });
  const shared = note(f.mem, a, { namespace: "project", name: "local.note", payload: "shared" });
  assert.notEqual(local.oid, shared.oid);
  assert.equal(shared.namespace, "project");
  assert.equal(f.mem.readByName(a, processNamespace(a), "local.note").payload, "mine");
  assert.equal(f.mem.readByName(a, "project", "local.note").payload, "shared");
  assert.deepEqual(
    f.mem.query(a, { namespace: "project", name: "local.note" }).objects.map((o) => o.oid),
    [shared.oid],
  );
  assert.deepEqual(
    f.mem.query(a, { namespace: processNamespace(a), name: "local.note" }).objects.map((o) =>
      o.oid
    ),
    [local.oid],
  );
});

Deno.test("ObjectMemory: two processes each own local.note, isolated by their namespaces", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const na = note(f.mem, a, { name: "local.note", payload: "a" });
  const nb = note(f.mem, b, { name: "local.note", payload: "b" });
  assert.equal(na.namespace, processNamespace(a));
  assert.equal(nb.namespace, processNamespace(b));
  assert.equal(f.mem.readByName(a, processNamespace(a), "local.note").payload, "a");
  assert.equal(f.mem.readByName(b, processNamespace(b), "local.note").payload, "b");
  assert.deepEqual(f.mem.list(a).map((o) => o.oid), [na.oid]);
  assert.deepEqual(f.mem.list(b).map((o) => o.oid), [nb.oid]);
});

Deno.test("ObjectMemory: another process cannot write, read or list until it holds namespace list plus object read (attack: read a neighbour's note)", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const own = processNamespace(a);
  const secret = note(f.mem, a, { name: "local.note", payload: "a's secret" });
  const before = snapshot(f.rt);

  // Nothing held: every route is refused.
  for (
    const [what, attempt] of [
      ["read", () => f.mem.read(b, secret.oid)],
      ["info", () => f.mem.info(b, secret.oid)],
      ["update", () => f.mem.update(b, secret.oid, { payload: "b was here" })],
      ["rename", () => f.mem.rename(b, secret.oid, "stolen")],
      ["delete", () => f.mem.delete(b, secret.oid)],
      ["list", () => f.mem.list(b, own)],
      ["readByName", () => f.mem.readByName(b, own, "local.note")],
      ["create in a's namespace", () => note(f.mem, b, { namespace: own, name: "planted" })],
    ] as const
  ) {
    const error = refusal(attempt);
    assert.ok(error instanceof CapabilityDeniedError, `${what}: ${error.message}`);
    assert.doesNotMatch(error.message, /a's secret/, `${what} leaks no content`);
  }
  assert.equal(snapshot(f.rt), before, "nothing was changed");

  // Namespace list alone: the listing hides the object, the lookup is refused.
  grantNamespace(f.rt, b, own, ["list"]);
  assert.deepEqual(f.mem.list(b, own), []);
  assert.ok(refusal(() => f.mem.readByName(b, own, "local.note")) instanceof CapabilityDeniedError);
  assert.ok(refusal(() => f.mem.read(b, secret.oid)) instanceof CapabilityDeniedError);

  // Plus object read (granted by its owner): listed and readable, still not writable.
  f.mem.grant(a, secret.oid, b, ["read"]);
  assert.deepEqual(f.mem.list(b, own).map((o) => o.oid), [secret.oid]);
  assert.equal(f.mem.readByName(b, own, "local.note").payload, "a's secret");
  assert.equal(f.mem.read(b, secret.oid).payload, "a's secret");
  assert.ok(
    refusal(() => f.mem.update(b, secret.oid, { payload: "b was here" })) instanceof
      CapabilityDeniedError,
  );
  assert.ok(refusal(() => f.mem.delete(b, secret.oid)) instanceof CapabilityDeniedError);
  assert.equal(f.mem.read(a, secret.oid).payload, "a's secret");
  assert.equal(f.mem.read(a, secret.oid).info.version, 1);

  // The refused reads (not in a step) and the refused writes (in a step) were both audited.
  assert.ok(denials(f.rt, b, "object.read").length >= 1, "refused reads are audited");
  assert.ok(denials(f.rt, b, "namespace.list").length >= 1, "refused listings are audited");
  assert.ok(denials(f.rt, b, "object.write").length >= 1, "refused writes are audited");
  assert.ok(denials(f.rt, b, "object.delete").length >= 1, "refused deletes are audited");
});

Deno.test("ObjectMemory.move() fails on a name clash and changes nothing; it succeeds with a rename", async () => {
  await using f = await fixture();
  const a = f.spawn();
  f.mem.createNamespace("operator", "project");
  grantNamespace(f.rt, a, "project", ["create", "list"]);
  grantObjects(f.rt, a, "project", ["read", "write", "delete"]);
  const taken = note(f.mem, "operator", { namespace: "project", name: "local.note", payload: 1 });
  const mine = note(f.mem, a, { name: "local.note", payload: 2 });
  const before = snapshot(f.rt);
  const error = refusal(() => f.mem.move(a, mine.oid, "project"));
  assert.ok(error instanceof ValidationError, error.message);
  assert.match(error.message, /local\.note/);
  assert.equal(snapshot(f.rt), before, "nothing moved");
  assert.equal(f.mem.info(a, mine.oid).namespace, processNamespace(a));

  const moved = f.mem.move(a, mine.oid, "project", { name: "local.note.2" });
  assert.equal(moved.namespace, "project");
  assert.equal(moved.name, "local.note.2");
  assert.equal(f.mem.readByName(a, "project", "local.note.2").payload, 2);
  assert.equal(f.mem.readByName(a, "project", "local.note").info.oid, taken.oid);
  assert.deepEqual(f.mem.list(a), [], "it left the process namespace");
});

Deno.test("ObjectMemory.move() of an immutable object fails and changes nothing", async () => {
  await using f = await fixture();
  const a = f.spawn();
  f.mem.createNamespace("operator", "project");
  grantNamespace(f.rt, a, "project", ["create", "list"]);
  const fixed = note(f.mem, a, { name: "fixed", immutable: true });
  const before = snapshot(f.rt);
  assert.ok(refusal(() => f.mem.move(a, fixed.oid, "project")) instanceof ValidationError);
  assert.ok(refusal(() => f.mem.rename(a, fixed.oid, "other")) instanceof ValidationError);
  assert.equal(snapshot(f.rt), before);
});

Deno.test("ObjectMemory.list() defaults to the process's own namespace", async () => {
  await using f = await fixture();
  const a = f.spawn();
  f.mem.createNamespace("operator", "project");
  grantNamespace(f.rt, a, "project", ["create", "list"]);
  grantObjects(f.rt, a, "project", ["read"]);
  const mine = note(f.mem, a, { name: "mine" });
  note(f.mem, a, { namespace: "project", name: "shared" });
  assert.deepEqual(f.mem.list(a).map((o) => o.oid), [mine.oid]);
  assert.deepEqual(
    f.mem.list(a).map((o) => o.oid),
    f.mem.list(a, processNamespace(a)).map((o) => o.oid),
  );
  assert.deepEqual(f.mem.list(a, "project").map((o) => o.name), ["shared"]);
});

Deno.test("ObjectMemory.readByName() does not bypass the object capability: object read without namespace list is refused, namespace list grants no write", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const own = processNamespace(a);
  const target = note(f.mem, a, { name: "target", payload: "v1" });
  // Object read, no namespace list: the oid works, the name does not.
  f.mem.grant(a, target.oid, b, ["read"]);
  assert.equal(f.mem.read(b, target.oid).payload, "v1");
  const byName = refusal(() => f.mem.readByName(b, own, "target"));
  assert.ok(byName instanceof CapabilityDeniedError, byName.message);
  assert.doesNotMatch(byName.message, /v1/);
  // Namespace list too: the lookup works, and still gives no write.
  grantNamespace(f.rt, b, own, ["list"]);
  assert.equal(f.mem.readByName(b, own, "target").payload, "v1");
  const before = snapshot(f.rt);
  const write = refusal(() => f.mem.update(b, target.oid, { payload: "v2" }));
  assert.ok(write instanceof CapabilityDeniedError, write.message);
  assert.ok(
    refusal(() => note(f.mem, b, { namespace: own, name: "planted" })) instanceof
      CapabilityDeniedError,
    "list gives no create either",
  );
  assert.equal(snapshot(f.rt), before);
  assert.equal(f.mem.read(a, target.oid).payload, "v1");
  assert.equal(denials(f.rt, b, "object.lookup").length, 1, "the refused lookup is audited");
  assert.equal(denials(f.rt, b, "object.write").length, 1, "the refused write is audited");
});

Deno.test("ObjectMemory.query() by name returns nothing or is refused until both capabilities are held", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const own = processNamespace(a);
  const target = note(f.mem, a, { name: "report.final", payload: "numbers" });
  // Nothing held: a scoped query is refused, an unscoped one finds nothing of a's.
  assert.ok(
    refusal(() => f.mem.query(b, { namespace: own, name: "report" })) instanceof
      CapabilityDeniedError,
  );
  assert.deepEqual(f.mem.query(b, { name: "report" }).objects, []);
  // Object read only: still refused / nothing.
  f.mem.grant(a, target.oid, b, ["read"]);
  assert.ok(
    refusal(() => f.mem.query(b, { namespace: own, name: "report" })) instanceof
      CapabilityDeniedError,
  );
  assert.deepEqual(f.mem.query(b, { name: "report" }).objects, []);
  // Both: found.
  grantNamespace(f.rt, b, own, ["list"]);
  assert.deepEqual(
    f.mem.query(b, { namespace: own, name: "report" }).objects.map((o) => o.oid),
    [target.oid],
  );
  assert.deepEqual(f.mem.query(b, { name: "report" }).objects.map((o) => o.oid), [target.oid]);
  assert.equal(denials(f.rt, b, "object.query").length, 2, "both refused queries are audited");
});

Deno.test("ObjectMemory.query() by name with namespace list but no object read returns nothing", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  note(f.mem, a, { name: "report.final" });
  grantNamespace(f.rt, b, processNamespace(a), ["list"]);
  assert.deepEqual(
    f.mem.query(b, { namespace: processNamespace(a), name: "report" }).objects,
    [],
  );
  assert.deepEqual(f.mem.query(b, { text: "report" }).objects, []);
});

Deno.test("ObjectMemory.rename() renames within the namespace; onto an existing name it fails and changes nothing", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const one = note(f.mem, a, { name: "one" });
  const two = note(f.mem, a, { name: "two" });
  const renamed = f.mem.rename(a, one.oid, "uno");
  assert.equal(renamed.name, "uno");
  assert.equal(f.mem.readByName(a, processNamespace(a), "uno").info.oid, one.oid);
  assert.ok(
    refusal(() => f.mem.readByName(a, processNamespace(a), "one")) instanceof NotFoundError,
  );
  const before = snapshot(f.rt);
  const clash = refusal(() => f.mem.rename(a, one.oid, "two"));
  assert.ok(clash instanceof ValidationError, clash.message);
  assert.match(clash.message, /"two"/);
  assert.equal(snapshot(f.rt), before, "nothing was renamed");
  assert.equal(f.mem.readByName(a, processNamespace(a), "two").info.oid, two.oid);
  // Removing a name frees it.
  f.mem.rename(a, two.oid, null);
  assert.equal(f.mem.rename(a, one.oid, "two").name, "two");
});

Deno.test("ObjectMemory: a new process after reopening a file database is unaffected by old names", async () => {
  using root = fileRoot();
  let old: { pid: string; oid: string };
  {
    await using rt = await root.open(1);
    const pid = rt.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    old = { pid, oid: note(rt.memory, pid, { name: "local.note", payload: "old" }).oid };
  }
  {
    // Another seed: a fresh run's ids.
    await using rt = await root.open(2);
    const pid = rt.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    assert.notEqual(pid, old.pid);
    const fresh = note(rt.memory, pid, { name: "local.note", payload: "new" });
    assert.notEqual(fresh.oid, old.oid);
    assert.equal(rt.memory.readByName(pid, processNamespace(pid), "local.note").payload, "new");
    assert.deepEqual(rt.memory.list(pid).map((o) => o.oid), [fresh.oid]);
    assert.ok(refusal(() => rt.memory.read(pid, old.oid)) instanceof CapabilityDeniedError);
    assert.equal(rt.memory.read(old.pid, old.oid).payload, "old", "the old object is intact");
  }
});

// ---------------------------------------------------------------- no existence oracle

Deno.test("ObjectMemory: every operation on an existing but unreadable oid answers exactly like a missing oid (attack: existence oracle)", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const c = f.spawn();
  const hidden = note(f.mem, a, { name: "hidden", payload: "x" });
  const mineB = note(f.mem, b, { name: "b.own" });
  f.mem.createNamespace("operator", "project");
  grantNamespace(f.rt, b, "project", ["create", "list"]);
  const before = snapshot(f.rt);
  const ops: readonly [string, (oid: string) => unknown][] = [
    ["read", (oid) => f.mem.read(b, oid)],
    ["info", (oid) => f.mem.info(b, oid)],
    ["update", (oid) => f.mem.update(b, oid, { payload: "y" })],
    ["update ifVersion", (oid) => f.mem.update(b, oid, { payload: "y", ifVersion: 7 })],
    ["rename", (oid) => f.mem.rename(b, oid, "b.own")],
    ["move", (oid) => f.mem.move(b, oid, "project")],
    ["delete", (oid) => f.mem.delete(b, oid)],
    ["handle", (oid) => f.mem.handle(b, oid)],
    ["grant", (oid) => f.mem.grant(b, oid, c, ["read"])],
    ["links", (oid) => f.mem.links(b, oid)],
    ["link from", (oid) => f.mem.link(b, oid, mineB.oid, "cites")],
    ["link to", (oid) => f.mem.link(b, mineB.oid, oid, "cites")],
    ["unlink", (oid) => f.mem.unlink(b, oid, mineB.oid, "cites")],
  ];
  for (const [what, op] of ops) {
    const existing = observable(refusal(() => op(hidden.oid)), hidden.oid);
    const missing = observable(refusal(() => op(MISSING_OID)), MISSING_OID);
    assert.deepEqual(existing, missing, `${what}: the same answer either way`);
    assert.equal(existing.class, "CapabilityDeniedError", what);
    assert.equal(existing.code, "capability_denied", what);
  }
  assert.equal(snapshot(f.rt), before, "nothing was changed");
  assert.deepEqual(objectCaps(f.rt, c, hidden.oid), [], "nothing was granted");
});

Deno.test("ObjectMemory.readByName() without namespace list answers the same for an existing and a missing name (attack: existence oracle)", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const own = processNamespace(a);
  note(f.mem, a, { name: "exists" });
  const existing = observable(refusal(() => f.mem.readByName(b, own, "exists")), "exists");
  const missing = observable(refusal(() => f.mem.readByName(b, own, "absent")), "absent");
  assert.deepEqual(existing, missing);
  assert.equal(existing.code, "capability_denied");
  // The same for an explicit namespace, and for one that does not exist at all.
  f.mem.createNamespace("operator", "project");
  note(f.mem, "operator", { namespace: "project", name: "exists" });
  const explicit = observable(
    refusal(() => f.mem.readByName(b, "project", "exists")),
    "exists",
    "project",
  );
  const nowhere = observable(
    refusal(() => f.mem.readByName(b, "ghost", "absent")),
    "absent",
    "ghost",
  );
  assert.deepEqual(explicit, nowhere);
  // And for list and query.
  assert.deepEqual(
    observable(refusal(() => f.mem.list(b, "project")), "project"),
    observable(refusal(() => f.mem.list(b, "ghost")), "ghost"),
  );
  assert.deepEqual(
    observable(refusal(() => f.mem.query(b, { namespace: "project" })), "project"),
    observable(refusal(() => f.mem.query(b, { namespace: "ghost" })), "ghost"),
  );
});

Deno.test("ObjectMemory.createNamespace() and create() answer the same for a missing namespace and one the caller lacks rights on (attack: existence oracle)", async () => {
  await using f = await fixture();
  const b = f.spawn();
  f.mem.createNamespace("operator", "project");
  const before = snapshot(f.rt);
  // createNamespace without rights: "project" exists, "ghost" does not.
  const nsExisting = observable(refusal(() => f.mem.createNamespace(b, "project")), "project");
  const nsMissing = observable(refusal(() => f.mem.createNamespace(b, "ghost")), "ghost");
  assert.deepEqual(nsExisting, nsMissing);
  assert.equal(nsExisting.code, "capability_denied");
  assert.equal(f.rt.store.getNamespace("ghost"), undefined, "no namespace was created");
  // create into a namespace without rights vs into one that does not exist.
  const inExisting = observable(refusal(() => note(f.mem, b, { namespace: "project" })), "project");
  const inMissing = observable(refusal(() => note(f.mem, b, { namespace: "ghost" })), "ghost");
  assert.deepEqual(inExisting, inMissing);
  // Holding create on a prefix does not make a missing namespace look different either.
  f.rt.authority.capabilities.grant({
    subject: b,
    resource: { type: "namespace", key: "team/", scope: "prefix" },
    rights: ["create"],
    effect: "allow",
    issuer: "operator",
  });
  const inMissingWithRight = observable(
    refusal(() => note(f.mem, b, { namespace: "team/ghost" })),
    "team/ghost",
  );
  assert.deepEqual(inMissingWithRight, inMissing);
  assert.equal(snapshot(f.rt), before, "no object was created");
  assert.equal(denials(f.rt, b, "namespace.create").length, 2, "refusals are audited");
  assert.ok(denials(f.rt, b, "object.create").length >= 2, "refusals are audited");
});

Deno.test("ObjectMemory.rename(), create() and move() by a caller without namespace list tell nothing about the names in it (attack: name oracle)", async () => {
  await using f = await fixture();
  const b = f.spawn();
  f.mem.createNamespace("operator", "project");
  note(f.mem, "operator", { namespace: "project", name: "acquisition.plan" });
  const shared = note(f.mem, "operator", { namespace: "project", name: "scratch" });
  // b may write one object in "project" and create there (a drop box), but may not list it.
  f.rt.authority.capabilities.grant({
    subject: b,
    resource: { type: "object", key: `project/${shared.oid}`, scope: "exact" },
    rights: ["read", "write"],
    effect: "allow",
    issuer: "operator",
  });
  grantNamespace(f.rt, b, "project", ["create"]);
  const mine = note(f.mem, b, { name: "mine" });
  const probes: readonly [string, (name: string) => unknown][] = [
    ["rename", (name) => f.mem.rename(b, shared.oid, name)],
    ["create", (name) => note(f.mem, b, { namespace: "project", name })],
    ["move", (name) => f.mem.move(b, mine.oid, "project", { name })],
  ];
  const leaks: string[] = [];
  for (const [what, probe] of probes) {
    const taken = attempt(() => probe("acquisition.plan"));
    const free = attempt(() => probe(`free.${what}`));
    const shape = (x: unknown, name: string) =>
      x instanceof LibosError ? JSON.stringify(observable(x, name)) : describe(x);
    if (shape(taken, "acquisition.plan") !== shape(free, `free.${what}`)) {
      leaks.push(`${what}: taken -> ${describe(taken)}; free -> ${describe(free)}`);
    }
  }
  assert.deepEqual(leaks, [], "a caller that may not list a namespace learns none of its names");
});

Deno.test("ObjectMemory.read() under an ask capability answers the same for an existing and a missing oid (attack: existence oracle through ask)", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const hidden = note(f.mem, a, { payload: "x" });
  // b's reads of a's objects need a human's approval.
  f.rt.authority.capabilities.grant({
    subject: b,
    resource: { type: "object", key: `${processNamespace(a)}/`, scope: "prefix" },
    rights: ["read"],
    effect: "ask",
    issuer: "operator",
  });
  const existing = attempt(() => f.mem.read(b, hidden.oid));
  const missing = attempt(() => f.mem.read(b, MISSING_OID));
  assert.ok(existing instanceof LibosError && missing instanceof LibosError);
  assert.doesNotMatch(existing.message, new RegExp(a), "the answer does not name the owner");
  assert.deepEqual(
    observable(existing, hidden.oid),
    observable(missing, MISSING_OID),
    "the same answer whether the object exists or not",
  );
});

Deno.test("ObjectMemory.unlink() of a link whose other end the caller cannot read answers like a missing link and removes nothing (attack: existence oracle via unlink)", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const hub = note(f.mem, a, { name: "hub" });
  const hidden = note(f.mem, a, { name: "hidden" });
  f.mem.link(a, hub.oid, hidden.oid, "cites");
  f.mem.grant(a, hub.oid, b, ["read", "link"]);
  assert.deepEqual(f.mem.links(b, hub.oid), [], "links() hides it");
  const before = snapshot(f.rt);
  const existing = attempt(() => f.mem.unlink(b, hub.oid, hidden.oid, "cites"));
  const missing = attempt(() => f.mem.unlink(b, hub.oid, MISSING_OID, "cites"));
  const shape = (x: unknown, oid: string) =>
    x instanceof LibosError ? observable(x, oid) : describe(x);
  const sameAnswer = JSON.stringify(shape(existing, hidden.oid)) ===
    JSON.stringify(shape(missing, MISSING_OID));
  const intact = snapshot(f.rt) === before;
  assert.ok(
    sameAnswer && intact,
    `unlink of a hidden link: ${describe(existing)}; of a missing one: ${
      describe(missing)
    }; the hidden link ${intact ? "is intact" : "was removed"}`,
  );
});

// ---------------------------------------------------------------- forged oid via exit result

Deno.test("ObjectMemory.merge() refuses a child's result naming its parent's private oid; the parent gains nothing (attack: forged oid via exit result)", async () => {
  await using f = await fixture();
  const pm = f.rt.processes;
  const parent = f.spawn();
  const secret = note(f.mem, parent, { name: "secret", payload: "parent only" });
  const child = pm.fork(parent).pid;
  assert.ok(refusal(() => f.mem.read(child, secret.oid)) instanceof CapabilityDeniedError);
  pm.exit(child, { result: secret.oid });
  const caps = capIds(f.rt, parent);
  const error = refusal(() => f.mem.merge(parent, child));
  assert.ok(error instanceof CapabilityDeniedError, error.message);
  assert.equal(error.code, "capability_denied");
  assert.equal(error.reason, "forged_result");
  assert.deepEqual(capIds(f.rt, parent), caps, "the parent gained no capability");
  assert.equal(f.mem.read(parent, secret.oid).payload, "parent only", "the object is intact");
  assert.equal(f.mem.read(parent, secret.oid).info.namespace, processNamespace(parent));
  const denied = denials(f.rt, parent, "object.merge");
  assert.equal(denied.length, 1, "the forged merge is audited as a deny");
  assert.equal(denied[0]?.authority, "forged_result");
});

Deno.test("ObjectMemory.merge() refuses a child's result naming a sibling's private oid; the parent cannot read it (attack: forged oid via exit result)", async () => {
  await using f = await fixture();
  const pm = f.rt.processes;
  const parent = f.spawn();
  const sibling = pm.fork(parent).pid;
  const forger = pm.fork(parent).pid;
  const ghost = pm.fork(parent).pid;
  const loot = note(f.mem, sibling, { name: "loot", payload: "sibling only" });
  pm.exit(forger, { result: loot.oid });
  const parentCaps = capIds(f.rt, parent);
  const forgerCaps = capIds(f.rt, forger);
  const error = refusal(() => f.mem.merge(parent, forger));
  assert.ok(error instanceof CapabilityDeniedError, error.message);
  assert.equal(error.reason, "forged_result");
  assert.doesNotMatch(error.message, /sibling only/);
  assert.deepEqual(capIds(f.rt, parent), parentCaps);
  assert.deepEqual(capIds(f.rt, forger), forgerCaps);
  assert.ok(refusal(() => f.mem.read(parent, loot.oid)) instanceof CapabilityDeniedError);
  assert.equal(f.mem.read(sibling, loot.oid).payload, "sibling only");
  // A nonexistent result is refused the same way.
  pm.exit(ghost, { result: MISSING_OID });
  const ghostError = refusal(() => f.mem.merge(parent, ghost));
  assert.ok(ghostError instanceof CapabilityDeniedError);
  assert.equal(ghostError.reason, "forged_result");
  assert.deepEqual(capIds(f.rt, parent), parentCaps);
});

Deno.test("ObjectMemory.merge() refuses a result the child created outside its own namespace", async () => {
  await using f = await fixture();
  const pm = f.rt.processes;
  const parent = f.spawn();
  const child = pm.fork(parent).pid;
  f.mem.createNamespace("operator", "project");
  grantNamespace(f.rt, child, "project", ["create"]);
  const elsewhere = note(f.mem, child, { namespace: "project", payload: "elsewhere" });
  pm.exit(child, { result: elsewhere.oid });
  const caps = capIds(f.rt, parent);
  const error = refusal(() => f.mem.merge(parent, child));
  assert.ok(error instanceof CapabilityDeniedError);
  assert.equal(error.reason, "forged_result");
  assert.deepEqual(capIds(f.rt, parent), caps);
});

Deno.test("ObjectMemory.merge() gives the parent read and link on its child's own result object, and nothing more", async () => {
  await using f = await fixture();
  const pm = f.rt.processes;
  const parent = f.spawn();
  const child = pm.fork(parent).pid;
  const scratch = note(f.mem, child, { name: "scratch", payload: "draft" });
  const result = note(f.mem, child, { name: "result", type: "result", payload: { answer: 42 } });
  assert.ok(refusal(() => f.mem.read(parent, result.oid)) instanceof CapabilityDeniedError);
  pm.exit(child, { result: result.oid });
  const merged = f.mem.merge(parent, child);
  assert.equal(merged.oid, result.oid);
  assert.deepEqual(f.mem.read(parent, result.oid).payload, { answer: 42 });
  assert.deepEqual(f.mem.handle(parent, result.oid).rights.sort(), ["link", "read"]);
  const before = snapshot(f.rt);
  assert.ok(
    refusal(() => f.mem.update(parent, result.oid, { payload: 0 })) instanceof
      CapabilityDeniedError,
  );
  assert.equal(snapshot(f.rt), before);
  assert.ok(f.rt.store.getObject(scratch.oid), "the scratch object is retained for review");
  assert.ok(
    refusal(() => f.mem.read(parent, scratch.oid)) instanceof CapabilityDeniedError,
    "but the parent reaches only the result",
  );
  assert.ok(f.mem.view(parent).some((o) => o.oid === result.oid), "the result is in the view");
  // Only the parent merges.
  const stranger = f.spawn();
  assert.ok(refusal(() => f.mem.merge(stranger, child)) instanceof LibosError);
  assert.ok(refusal(() => f.mem.read(stranger, result.oid)) instanceof CapabilityDeniedError);
});

Deno.test("ObjectMemory.read() by the oid of another process's object fails (attack: knowing an oid grants nothing)", async () => {
  await using f = await fixture({ mode: "full-access" });
  const a = f.spawn();
  const b = f.spawn();
  const o = note(f.mem, a, { payload: "private" });
  for (const pid of [b, f.rt.processes.fork(a).pid]) {
    const error = refusal(() => f.mem.read(pid, o.oid));
    assert.ok(error instanceof CapabilityDeniedError);
    assert.doesNotMatch(error.message, /private/);
    assert.deepEqual(objectCaps(f.rt, pid, o.oid), []);
  }
});

// ---------------------------------------------------------------- retention at exit

Deno.test("ObjectMemory retains a process's scratch objects and their links when it exits, fails or is killed — kept, marked with when, and reachable by no process; gc removes them", async () => {
  for (const how of ["exit", "fail", "kill"] as const) {
    await using f = await fixture();
    const pm = f.rt.processes;
    const a = f.spawn();
    const other = f.spawn();
    const s1 = note(f.mem, a, { name: "s1" });
    const s2 = note(f.mem, a, { name: "s2", volatile: true });
    const kept = note(f.mem, a, { name: "result", type: "result", payload: "kept" });
    const outside = note(f.mem, other, { name: "outside" });
    f.mem.link(a, s1.oid, s2.oid, "cites");
    f.mem.link(a, kept.oid, s1.oid, "derived_from");
    f.mem.grant(other, outside.oid, a, ["read", "link"]);
    f.mem.link(a, kept.oid, outside.oid, "cites");
    // Before it finishes, a passes read on s1 to another live process.
    f.mem.grant(a, s1.oid, other, ["read"]);
    assert.equal(f.mem.read(other, s1.oid).payload, "x");
    f.clock.advance(1000);
    if (how === "exit") pm.exit(a, { result: kept.oid });
    else if (how === "fail") pm.fail(a, "boom");
    else pm.signal(a, "terminate");
    assert.ok(f.rt.store.getObject(s1.oid), `${how}: s1 retained`);
    assert.equal(f.rt.store.getObject(s2.oid), undefined, `${how}: a volatile object goes`);
    assert.ok(f.rt.store.getObject(kept.oid), `${how}: the result object is retained`);
    assert.ok(f.rt.store.getObject(outside.oid), `${how}: another namespace is untouched`);
    const row = f.rt.store.getRetained(a);
    assert.equal(row?.since, START + 1000, `${how}: marked with when it became retained`);
    assert.equal(row?.objects, 2);
    assert.equal(row?.removed, null);
    const retain = f.rt.audit.query({ pid: a, action: "object.retain" });
    assert.equal(retain.length, 1, `${how}: object.retain audited`);
    assert.equal(retain[0]?.detail?.objects, 2);
    assert.equal(retain[0]?.detail?.volatile, 1);
    // No process reaches a retained object, even through a grant it got before: the same answer
    // as for an object that does not exist (no oracle).
    const gone = refusal(() => f.mem.read(other, MISSING_OID));
    const held = refusal(() => f.mem.read(other, s1.oid));
    assert.ok(held instanceof CapabilityDeniedError);
    assert.equal(held.message.replace(s1.oid, "X"), gone.message.replace(MISSING_OID, "X"));
    assert.ok(refusal(() => f.mem.handle(other, s1.oid)) instanceof CapabilityDeniedError);
    assert.ok(!f.mem.view(other).some((o) => o.oid === s1.oid), `${how}: not in the view`);
    // The operator reviews it.
    assert.equal(f.mem.read("operator", s1.oid).payload, "x");
    if (how === "exit") {
      assert.equal(retain[0]?.detail?.result, kept.oid);
    } else {
      assert.equal(retain[0]?.detail?.result, null);
    }
    // gc removes it, audited with counts and bytes.
    const report = collectRetained(f.rt, pm, { olderThanMs: 0, dryRun: false });
    assert.deepEqual(report.removed.map((e) => e.pid), [a]);
    assert.equal(f.rt.store.getObject(s1.oid), undefined, `${how}: gc removed s1`);
    assert.equal(f.rt.store.getObject(kept.oid), undefined, `${how}: gc removed the result`);
    assert.deepEqual(f.rt.store.listLinks(s1.oid, 100), [], `${how}: and its links`);
    assert.ok(f.rt.store.getObject(outside.oid), `${how}: another namespace is untouched`);
    assert.equal(f.rt.store.getRetained(a)?.removed, START + 1000);
    const gc = f.rt.audit.query({ action: "retention.gc" });
    assert.equal(gc.length, 1);
    assert.equal(gc[0]?.detail?.processes, 1);
    assert.equal(gc[0]?.detail?.objects, 2);
    assert.ok(Number(gc[0]?.detail?.bytes) > 0);
    assert.equal(f.rt.audit.verify({ head: false }).ok, true);
  }
});

Deno.test("ObjectMemory attack: a live process holding list and read on a finished process's namespace learns nothing of its retained objects — not by name, listing, query, link or handle", async () => {
  await using f = await fixture();
  const pm = f.rt.processes;
  const dead = f.spawn();
  const spy = f.spawn();
  const kept = note(f.mem, dead, { name: "secret.plan", payload: "retained" });
  const mine = note(f.mem, spy, { name: "mine" });
  // The spy is handed every right over the namespace — and they work while its owner lives.
  grantNamespace(f.rt, spy, processNamespace(dead), ["list", "create"]);
  grantObjects(f.rt, spy, processNamespace(dead), ["read", "link"]);
  assert.equal(f.mem.readByName(spy, processNamespace(dead), "secret.plan").payload, "retained");
  assert.equal(f.mem.list(spy, processNamespace(dead)).length, 1);
  pm.exit(dead);
  assert.ok(f.rt.store.getObject(kept.oid), "retained");
  const byName = refusal(() => f.mem.readByName(spy, processNamespace(dead), "secret.plan"));
  const absent = refusal(() => f.mem.readByName(spy, processNamespace(dead), "no.such"));
  assert.ok(byName instanceof NotFoundError);
  assert.equal(
    byName.message.replace("secret.plan", "X"),
    absent.message.replace("no.such", "X"),
    "the same answer as for a name that does not exist",
  );
  assert.deepEqual(f.mem.list(spy, processNamespace(dead)), []);
  assert.deepEqual(f.mem.query(spy, { text: "retained" }).objects, []);
  assert.ok(
    refusal(() => f.mem.link(spy, mine.oid, kept.oid, "cites")) instanceof
      CapabilityDeniedError,
  );
  assert.ok(refusal(() => f.mem.handle(spy, kept.oid)) instanceof CapabilityDeniedError);
  assert.ok(refusal(() => f.mem.read(spy, kept.oid)) instanceof CapabilityDeniedError);
  assert.deepEqual(f.rt.store.listLinks(mine.oid, 10), [], "no link was made");
});

Deno.test("ObjectMemory retains a child's scratch objects when its parent's exit terminates it", async () => {
  await using f = await fixture();
  const pm = f.rt.processes;
  const parent = f.spawn();
  const child = pm.fork(parent).pid;
  const scratch = note(f.mem, child, { name: "scratch" });
  pm.exit(parent);
  assert.equal(pm.get(child).status, "killed");
  assert.ok(f.rt.store.getObject(scratch.oid));
  assert.ok(f.rt.store.getRetained(child));
  assert.equal(f.rt.audit.query({ pid: child, action: "object.retain" }).length, 1);
});

Deno.test("ObjectMemory: a finished process's namespace takes no new objects (attack: write into a dead namespace)", async () => {
  await using f = await fixture();
  const a = f.spawn();
  f.rt.processes.exit(a);
  const before = objectCount(f.rt);
  assert.ok(refusal(() => note(f.mem, a, { name: "late" })) instanceof CapabilityDeniedError);
  assert.ok(
    refusal(() =>
      note(f.mem, "operator", { namespace: processNamespace(a), name: "late" })
    ) instanceof
      CapabilityDeniedError,
  );
  assert.equal(objectCount(f.rt), before);
});

// ---------------------------------------------------------------- volatile

function fileBytes(dir: string): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const entry of Deno.readDirSync(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) out.push(...fileBytes(path));
    else if (entry.isFile) out.push(Deno.readFileSync(path));
  }
  return out;
}

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) continue outer;
    }
    return true;
  }
  return false;
}

Deno.test("ObjectMemory: a volatile payload never reaches the database file; after a reopen it is volatile_lost and its description survives", async () => {
  using root = fileRoot();
  const tag = crypto.randomUUID().replaceAll("-", "");
  const volatileMarker = `VOLATILE-${tag}`;
  const updatedMarker = `VOLATILE-UPDATED-${tag}`;
  const durableMarker = `DURABLE-${tag}`;
  let pid = "";
  let volatileOid = "";
  let durableOid = "";
  {
    await using rt = await root.open(3);
    pid = rt.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    const v = note(rt.memory, pid, {
      name: "scratch.secret",
      volatile: true,
      payload: { secret: volatileMarker },
    });
    volatileOid = v.oid;
    durableOid = note(rt.memory, pid, { name: "durable", payload: { text: durableMarker } }).oid;
    // Reads, queries and updates of the volatile object happen in memory only.
    assert.deepEqual(rt.memory.read(pid, v.oid).payload, { secret: volatileMarker });
    assert.deepEqual(
      rt.memory.query(pid, { text: volatileMarker.toLowerCase() }).objects.map((o) => o.oid),
      [v.oid],
    );
    rt.memory.update(pid, v.oid, { payload: { secret: updatedMarker } });
    assert.deepEqual(rt.memory.read(pid, v.oid).payload, { secret: updatedMarker });
    rt.store.flush();
    // While the runtime is open (WAL not yet checkpointed) the files must not hold it either.
    const live = fileBytes(root.state);
    const enc = new TextEncoder();
    assert.ok(live.some((b) => contains(b, enc.encode(durableMarker))), "durable payload written");
    for (const marker of [volatileMarker, updatedMarker]) {
      assert.ok(!live.some((b) => contains(b, enc.encode(marker))), `${marker} not on disk`);
    }
  }
  const enc = new TextEncoder();
  const files = [root.db, `${root.db}-wal`, `${root.db}-shm`].filter((p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  });
  assert.ok(files.includes(root.db));
  const all = [...files.map((p) => Deno.readFileSync(p)), ...fileBytes(root.state)];
  assert.ok(all.some((b) => contains(b, enc.encode(durableMarker))), "durable payload on disk");
  for (const marker of [volatileMarker, updatedMarker]) {
    assert.ok(!all.some((b) => contains(b, enc.encode(marker))), `${marker} never on disk`);
  }
  {
    await using rt = await root.open(4);
    const error = refusal(() => rt.memory.read(pid, volatileOid));
    assert.ok(error instanceof VolatileLostError, error.message);
    assert.equal(error.code, "volatile_lost");
    assert.doesNotMatch(error.message, new RegExp(tag));
    const info = rt.memory.info(pid, volatileOid);
    assert.equal(info.volatile, true);
    assert.equal(info.name, "scratch.secret");
    const byName = refusal(() =>
      rt.memory.readByName(pid, processNamespace(pid), "scratch.secret")
    );
    assert.ok(byName instanceof VolatileLostError);
    assert.deepEqual(rt.memory.read(pid, durableOid).payload, { text: durableMarker });
    // A stranger still gets the plain refusal, not volatile_lost.
    const stranger = rt.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    const denied = refusal(() => rt.memory.read(stranger, volatileOid));
    assert.ok(denied instanceof CapabilityDeniedError, denied.message);
  }
});

Deno.test("ObjectMemory: a low-entropy volatile payload cannot be confirmed from the database file (attack: brute-force its stored digest)", async () => {
  using root = fileRoot();
  const pin = "4711";
  {
    await using rt = await root.open(5);
    const pid = rt.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    note(rt.memory, pid, { name: "pin", volatile: true, payload: pin });
    rt.store.flush();
  }
  // An attacker holding the file hashes every 4-digit PIN and compares.
  const enc = new TextEncoder();
  const digest = sha256Hex(canonicalJson(pin));
  const files = fileBytes(root.state);
  assert.ok(
    !files.some((b) => contains(b, enc.encode(digest))),
    "the sha256 of a volatile payload is on disk: a guessable payload is as good as written",
  );
});

// ---------------------------------------------------------------- grant attenuation

Deno.test("ObjectMemory.grant() needs grant on the object; a receiver without grant cannot re-grant (attack: delegable never enforced)", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const c = f.spawn();
  const o = note(f.mem, a, { payload: "p" });
  f.mem.grant(a, o.oid, b, ["read", "write"]);
  const cCaps = capIds(f.rt, c);
  const error = refusal(() => f.mem.grant(b, o.oid, c, ["read"]));
  assert.ok(error instanceof CapabilityDeniedError, error.message);
  assert.equal(error.code, "capability_denied");
  assert.deepEqual(capIds(f.rt, c), cCaps, "nothing was minted");
  assert.ok(refusal(() => f.mem.read(c, o.oid)) instanceof CapabilityDeniedError);
  assert.equal(denials(f.rt, b, "object.grant").length, 1, "the refused grant is audited");
});

Deno.test("ObjectMemory.grant() of a right the giver does not hold is cannot_delegate and mints nothing", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const c = f.spawn();
  const o = note(f.mem, a, { payload: "p" });
  f.mem.grant(a, o.oid, b, ["read", "grant"]);
  const cCaps = capIds(f.rt, c);
  const before = snapshot(f.rt);
  const error = refusal(() => f.mem.grant(b, o.oid, c, ["read", "write"]));
  assert.ok(error instanceof CapabilityDeniedError, error.message);
  assert.equal(error.code, "cannot_delegate");
  assert.match(error.message, /write/);
  assert.deepEqual(capIds(f.rt, c), cCaps, "not even the read was minted");
  assert.equal(snapshot(f.rt), before);
  assert.ok(refusal(() => f.mem.read(c, o.oid)) instanceof CapabilityDeniedError);
  // A right outside the object's rights is a ValidationError, also minting nothing.
  assert.ok(
    refusal(() => f.mem.grant(b, o.oid, c, ["execute" as "read"])) instanceof ValidationError,
  );
  assert.ok(refusal(() => f.mem.grant(b, o.oid, c, [])) instanceof ValidationError);
  assert.deepEqual(capIds(f.rt, c), cCaps);
  assert.equal(denials(f.rt, b, "object.grant").length, 1, "the cannot_delegate is audited");
});

Deno.test("ObjectMemory.grant() derives from the giver's capability: revoking it revokes the receiver's", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const c = f.spawn();
  const o = note(f.mem, a, { payload: "p" });
  const [toB] = f.mem.grant(a, o.oid, b, ["read", "grant"]);
  const [toC] = f.mem.grant(b, o.oid, c, ["read"]);
  assert.ok(toB && toC);
  assert.equal(toC.derivedFrom, toB.id);
  assert.notEqual(toB.derivedFrom, null, "b's copy derives from a's own capability");
  assert.equal(f.mem.read(c, o.oid).payload, "p");
  const revoked = f.rt.authority.capabilities.revoke(toB.id).map((cap) => cap.id);
  assert.ok(revoked.includes(toC.id), "the derived copy is revoked with it");
  assert.ok(refusal(() => f.mem.read(b, o.oid)) instanceof CapabilityDeniedError);
  assert.ok(refusal(() => f.mem.read(c, o.oid)) instanceof CapabilityDeniedError);
  assert.ok(refusal(() => f.mem.handle(c, o.oid)) instanceof CapabilityDeniedError);
  assert.equal(f.mem.read(a, o.oid).payload, "p", "the owner keeps its rights");
});

Deno.test("ObjectMemory.grant(): a copy never outlives an expiring source, and handle expiry is enforced", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const c = f.spawn();
  const o = note(f.mem, a, { payload: "p" });
  const expiresAt = START + 60_000;
  const [toB] = f.mem.grant(a, o.oid, b, ["read", "grant"], { expiresAt });
  assert.equal(toB?.expiresAt, expiresAt);
  // Asking for longer, or for no expiry at all, is clamped to the source's.
  const [later] = f.mem.grant(b, o.oid, c, ["read"], { expiresAt: expiresAt + 3_600_000 });
  const [unbounded] = f.mem.grant(b, o.oid, c, ["read"]);
  assert.equal(later?.expiresAt, expiresAt);
  assert.equal(unbounded?.expiresAt, expiresAt);
  // Asking for shorter is honoured.
  const [shorter] = f.mem.grant(b, o.oid, c, ["read"], { expiresAt: expiresAt - 1000 });
  assert.equal(shorter?.expiresAt, expiresAt - 1000);
  assert.equal(f.mem.handle(b, o.oid).expiresAt, expiresAt);
  assert.deepEqual(f.mem.handle(b, o.oid).rights.sort(), ["grant", "read"]);
  assert.equal(f.mem.read(c, o.oid).payload, "p");
  f.clock.advance(60_001);
  for (const pid of [b, c]) {
    assert.ok(refusal(() => f.mem.read(pid, o.oid)) instanceof CapabilityDeniedError);
    assert.ok(refusal(() => f.mem.handle(pid, o.oid)) instanceof CapabilityDeniedError);
  }
  const cCaps = capIds(f.rt, c);
  assert.ok(refusal(() => f.mem.grant(b, o.oid, c, ["read"])) instanceof CapabilityDeniedError);
  assert.deepEqual(capIds(f.rt, c), cCaps, "an expired giver mints nothing");
  assert.equal(f.mem.read(a, o.oid).payload, "p");
});

Deno.test("ObjectMemory.grant() to a finished or unknown process mints nothing", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const done = f.spawn();
  f.rt.processes.exit(done);
  const o = note(f.mem, a);
  const caps = capIds(f.rt, done);
  assert.ok(refusal(() => f.mem.grant(a, o.oid, done, ["read"])) instanceof LibosError);
  assert.deepEqual(capIds(f.rt, done), caps);
  assert.ok(
    refusal(() => f.mem.grant(a, o.oid, "pid_000000000000", ["read"])) instanceof LibosError,
  );
  assert.deepEqual(f.rt.authority.capabilities.list("pid_000000000000"), []);
});

// ---------------------------------------------------------------- payload isolation

Deno.test("ObjectMemory.read() returns a copy: mutating it, or the input after create, changes nothing stored (attack: live payload reference)", async () => {
  await using f = await fixture();
  const a = f.spawn();
  for (const volatile of [false, true]) {
    const input = { items: ["one"], meta: { n: 1 } };
    const o = note(f.mem, a, { payload: input, volatile, tags: ["t"] });
    input.items.push("mutated input");
    input.meta.n = 99;
    const first = f.mem.read(a, o.oid);
    const payload = first.payload as { items: string[]; meta: { n: number } };
    payload.items.push("mutated read");
    payload.meta.n = 42;
    (first.info.metadata.tags as string[]).push("mutated");
    (o.metadata.tags as string[]).push("mutated-create-result");
    const again = f.mem.read(a, o.oid);
    assert.deepEqual(again.payload, { items: ["one"], meta: { n: 1 } }, `volatile=${volatile}`);
    assert.deepEqual(again.info.metadata.tags, ["t"], `volatile=${volatile}`);
    assert.equal(again.info.version, 1);
  }
});

Deno.test("ObjectMemory.update() on an immutable object fails and changes nothing", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const o = note(f.mem, a, { payload: "frozen", immutable: true, tags: ["keep"] });
  const before = snapshot(f.rt);
  for (
    const change of [{ payload: "thawed" }, { tags: ["changed"] }, { attrs: { k: "v" } }, {
      payload: "thawed",
      ifVersion: 1,
    }]
  ) {
    const error = refusal(() => f.mem.update(a, o.oid, change));
    assert.ok(error instanceof ValidationError, error.message);
    assert.match(error.message, /immutable/);
  }
  assert.equal(snapshot(f.rt), before);
  const read = f.mem.read(a, o.oid);
  assert.equal(read.payload, "frozen");
  assert.equal(read.info.version, 1);
  assert.deepEqual(read.info.metadata.tags, ["keep"]);
  // It can still be deleted by its owner (immutable is about content).
  f.mem.delete(a, o.oid);
  assert.equal(f.rt.store.getObject(o.oid), undefined);
});

Deno.test("ObjectMemory.update() with a stale ifVersion is store_conflict and changes nothing", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const o = note(f.mem, a, { payload: "v1" });
  const v2 = f.mem.update(a, o.oid, { payload: "v2", ifVersion: 1 });
  assert.equal(v2.version, 2);
  const before = snapshot(f.rt);
  for (const stale of [1, 3, 0]) {
    const error = refusal(() => f.mem.update(a, o.oid, { payload: "v3", ifVersion: stale }));
    assert.ok(error instanceof StoreError, error.message);
    assert.equal(error.code, "store_conflict");
  }
  assert.equal(snapshot(f.rt), before);
  const read = f.mem.read(a, o.oid);
  assert.equal(read.payload, "v2");
  assert.equal(read.info.version, 2);
  assert.equal(f.mem.update(a, o.oid, { payload: "v3", ifVersion: 2 }).version, 3);
});

// ---------------------------------------------------------------- links

Deno.test("ObjectMemory.link() needs link on the source and read on the target; a refused link stores nothing", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const src = note(f.mem, a, { name: "src" });
  const theirs = note(f.mem, b, { name: "theirs" });
  const before = snapshot(f.rt);
  // No read on the target.
  assert.ok(
    refusal(() => f.mem.link(a, src.oid, theirs.oid, "cites")) instanceof CapabilityDeniedError,
  );
  // Read on the source but no link right on it.
  f.mem.grant(a, src.oid, b, ["read"]);
  assert.ok(
    refusal(() => f.mem.link(b, src.oid, theirs.oid, "cites")) instanceof CapabilityDeniedError,
  );
  // A malformed relation.
  assert.ok(refusal(() => f.mem.link(a, src.oid, src.oid, "Cites!")) instanceof ValidationError);
  assert.equal(snapshot(f.rt), before, "no link was stored");
  // With read on the target, the owner of the source may link.
  f.mem.grant(b, theirs.oid, a, ["read"]);
  const link = f.mem.link(a, src.oid, theirs.oid, "cites");
  assert.deepEqual([link.from, link.to, link.rel, link.creator], [src.oid, theirs.oid, "cites", a]);
  assert.equal(f.rt.store.listLinks(src.oid, 10).length, 1);
  assert.ok(denials(f.rt, a, "object.link").length >= 1, "the refused link is audited");
  assert.ok(denials(f.rt, b, "object.link").length >= 1, "the refused link is audited");
});

Deno.test("ObjectMemory.links() hides links whose other end the caller cannot read", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const c = f.spawn();
  const hub = note(f.mem, a, { name: "hub" });
  const visible = note(f.mem, a, { name: "visible" });
  const hidden = note(f.mem, a, { name: "hidden", payload: "do not reveal" });
  f.mem.link(a, hub.oid, visible.oid, "cites");
  f.mem.link(a, hub.oid, hidden.oid, "cites");
  f.mem.link(a, hidden.oid, hub.oid, "answers");
  assert.equal(f.mem.links(a, hub.oid).length, 3);
  f.mem.grant(a, hub.oid, c, ["read"]);
  assert.deepEqual(f.mem.links(c, hub.oid), [], "neither other end is readable");
  f.mem.grant(a, visible.oid, c, ["read"]);
  assert.deepEqual(
    f.mem.links(c, hub.oid).map((l) => [l.from, l.to, l.rel]),
    [[hub.oid, visible.oid, "cites"]],
  );
  assert.ok(!JSON.stringify(f.mem.links(c, hub.oid)).includes(hidden.oid));
  assert.ok(refusal(() => f.mem.links(c, hidden.oid)) instanceof CapabilityDeniedError);
});

// ---------------------------------------------------------------- query

Deno.test("ObjectMemory.query() honours type, tags, text, name and limit, and never returns unreadable objects", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  const n1 = note(f.mem, a, { name: "alpha.one", tags: ["red"], payload: "the quick brown fox" });
  const n2 = note(f.mem, a, {
    name: "alpha.two",
    tags: ["red", "blue"],
    payload: { text: "lazy dog" },
  });
  const n3 = note(f.mem, a, { name: "beta", type: "text", tags: ["blue"], payload: "FOX in caps" });
  const n4 = note(f.mem, a, { attrs: { topic: "zebra" }, payload: 7 });
  const ids = (r: { objects: { oid: string }[] }) => r.objects.map((o) => o.oid).sort();
  const sorted = (...xs: { oid: string }[]) => xs.map((x) => x.oid).sort();
  assert.deepEqual(ids(f.mem.query(a)), sorted(n1, n2, n3, n4));
  assert.deepEqual(ids(f.mem.query(a, { type: "note" })), sorted(n1, n2, n4));
  assert.deepEqual(ids(f.mem.query(a, { type: "text" })), sorted(n3));
  assert.deepEqual(ids(f.mem.query(a, { tags: ["red"] })), sorted(n1, n2));
  assert.deepEqual(ids(f.mem.query(a, { tags: ["red", "blue"] })), sorted(n2));
  assert.deepEqual(ids(f.mem.query(a, { text: "fox" })), sorted(n1, n3));
  assert.deepEqual(ids(f.mem.query(a, { text: "ZEBRA" })), sorted(n4));
  assert.deepEqual(ids(f.mem.query(a, { name: "alpha" })), sorted(n1, n2));
  assert.deepEqual(ids(f.mem.query(a, { name: "alpha.two" })), sorted(n2));
  assert.deepEqual(ids(f.mem.query(a, { name: "alpha", tags: ["blue"] })), sorted(n2));
  assert.deepEqual(ids(f.mem.query(a, { type: "note", text: "fox" })), sorted(n1));
  assert.equal(f.mem.query(a, { limit: 2 }).objects.length, 2);
  assert.equal(f.mem.query(a, { type: "note", limit: 1 }).objects.length, 1);
  assert.equal(f.mem.query(a, { limit: 1000 }).objects.length, 4);
  // Another process finds none of them, with any filter.
  assert.deepEqual(f.mem.query(b).objects, []);
  assert.deepEqual(f.mem.query(b, { text: "fox" }).objects, []);
  assert.deepEqual(f.mem.query(b, { name: "alpha" }).objects, []);
  const theirs = note(f.mem, b, { name: "fox.den", payload: "fox" });
  assert.deepEqual(ids(f.mem.query(b, { text: "fox" })), sorted(theirs));
  // With list on a's namespace but read on n1 only, it finds n1 only.
  grantNamespace(f.rt, b, processNamespace(a), ["list"]);
  f.mem.grant(a, n1.oid, b, ["read"]);
  assert.deepEqual(ids(f.mem.query(b, { namespace: processNamespace(a) })), sorted(n1));
  assert.deepEqual(ids(f.mem.query(b, { text: "fox" })), sorted(n1, theirs));
  assert.deepEqual(ids(f.mem.query(b, { text: "lazy" })), []);
});

Deno.test("ObjectMemory.query() in a namespace the caller may not list is refused and audited", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const b = f.spawn();
  note(f.mem, a, { name: "x" });
  f.mem.createNamespace("operator", "project");
  for (const namespace of [processNamespace(a), "project", "ghost"]) {
    const error = refusal(() => f.mem.query(b, { namespace }));
    assert.ok(error instanceof CapabilityDeniedError, `${namespace}: ${error.message}`);
  }
  assert.equal(denials(f.rt, b, "object.query").length, 3);
});

Deno.test("ObjectMemory.query() and list() never return more than the page bound, whatever the limit", async () => {
  await using f = await fixture({ objectLimits: { pageMax: 2 } });
  const a = f.spawn();
  for (let i = 0; i < 5; i++) note(f.mem, a, { name: `n${i}` });
  const wrong: string[] = [];
  for (const limit of [Number.NaN, Number.POSITIVE_INFINITY, -1, 0, 1.5, 3, 1e9]) {
    for (
      const [what, fn] of [
        ["query", () => f.mem.query(a, { limit }).objects.length],
        ["list", () => f.mem.list(a, undefined, { limit }).length],
      ] as const
    ) {
      try {
        const count = fn();
        if (count > 2) wrong.push(`${what} limit ${limit}: ${count} objects`);
      } catch (error) {
        if (!(error instanceof ValidationError)) {
          wrong.push(`${what} limit ${limit}: ${describe(error)}`);
        }
      }
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("ObjectMemory.query() rejects malformed filters", async () => {
  await using f = await fixture();
  const a = f.spawn();
  for (
    const [what, options] of [
      ["type", { type: "Bad Type" }],
      ["text (empty)", { text: "" }],
      ["text (too long)", { text: "x".repeat(257) }],
      ["namespace", { namespace: "Bad/NS" }],
    ] as const
  ) {
    assert.ok(refusal(() => f.mem.query(a, options)) instanceof ValidationError, what);
  }
});

// ---------------------------------------------------------------- bad input

const BAD_NAMESPACES: readonly [string, string][] = [
  ["uppercase", "Project"],
  ["empty segment", "a//b"],
  ["dot-dot", "../etc"],
  ["absolute", "/abs"],
  ["trailing slash", "a/"],
  ["empty", ""],
  ["space", "a b"],
  ["NUL", "a\u0000b"],
  ["bidi override", "a\u202eb"],
  ["zero width", "a\u200bb"],
  ["newline", "a\nb"],
  ["nine segments", "a/b/c/d/e/f/g/h/i"],
  ["long segment", "x".repeat(65)],
  ["malformed process", "process:pid_zzzzzzzzzzzz"],
  ["process with a path", "process:pid_0123456789ab/x"],
  ["wildcard", "team/*"],
];

const BAD_NAMES: readonly [string, string][] = [
  ["slash", "a/b"],
  ["dot-dot path", "../x"],
  ["newline", "a\nb"],
  ["carriage return", "a\rb"],
  ["NUL", "a\u0000"],
  ["escape", "a\u001b[31m"],
  ["bidi override", "a\u202eb"],
  ["zero width", "a\u200bb"],
  ["empty", ""],
  ["leading dot", ".hidden"],
  ["leading space", " lead"],
  ["tab", "name\t"],
  ["too long", "x".repeat(129)],
  ["non-ASCII lookalike", "раураl"],
];

Deno.test("ObjectMemory.create() rejects malformed namespaces, names, types, tags, attributes and provenance with a ValidationError naming the field; nothing is stored", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const cases: [string, RegExp, Partial<CreateObject>][] = [
    ...BAD_NAMESPACES.map(([w, ns]): [string, RegExp, Partial<CreateObject>] => [
      `namespace ${w}`,
      /namespace/,
      { namespace: ns },
    ]),
    ...BAD_NAMES.map(([w, name]): [string, RegExp, Partial<CreateObject>] => [
      `name ${w}`,
      /name/,
      { name },
    ]),
    ...["Text", "", "1abc", "a b", "a/b", "x".repeat(65), "note\n", "no\u202ete"].map((
      type,
    ): [string, RegExp, Partial<CreateObject>] => [
      `type ${JSON.stringify(type)}`,
      /type/,
      { type },
    ]),
    ["tag uppercase", /tags/, { tags: ["Bad"] }],
    ["tag space", /tags/, { tags: ["a b"] }],
    ["tag bidi", /tags/, { tags: ["ok\u202e"] }],
    ["tag too long", /tags/, { tags: ["x".repeat(65)] }],
    ["too many tags", /tags/, { tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }],
    ["attr key too long", /attrs/, { attrs: { ["k".repeat(65)]: 1 } }],
    ["provenance source", /provenance/, {
      provenance: { source: "oracle" as "user", label: "x", ref: null },
    }],
    ["provenance extra field", /provenance/, {
      provenance: { ...PROV, trusted: true } as unknown as Provenance,
    }],
    ["provenance label too long", /provenance/, {
      provenance: { ...PROV, label: "x".repeat(201) },
    }],
  ];
  const before = snapshot(f.rt);
  for (const [what, field, input] of cases) {
    const error = refusal(() => note(f.mem, a, input));
    assert.ok(
      error instanceof ValidationError,
      `${what}: ${error.constructor.name} ${error.message}`,
    );
    assert.match(error.message, field, `${what}: the message names the field`);
  }
  assert.equal(snapshot(f.rt), before, "nothing was stored");
});

Deno.test("ObjectMemory.create() rejects non-JSON and oversize payloads with a ValidationError naming the payload; nothing is stored", async () => {
  await using f = await fixture({ objectLimits: { payloadBytesMax: 1024 } });
  const a = f.spawn();
  const cycle: Record<string, unknown> = { a: 1 };
  cycle.self = cycle;
  const sparse: unknown[] = [];
  sparse[2] = "x";
  const cases: [string, unknown][] = [
    ["function", () => 1],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["nested NaN", { n: [1, Number.NaN] }],
    ["cycle", cycle],
    ["undefined", undefined],
    ["undefined member", { a: undefined }],
    ["bigint", 10n],
    ["symbol", Symbol("s")],
    ["Date", new Date(0)],
    ["Map", new Map([["k", "v"]])],
    [
      "class instance",
      new (class Point {
        x = 1;
      })(),
    ],
    ["sparse array", sparse],
    ["too deep", JSON.parse("[".repeat(200) + "]".repeat(200))],
    ["oversize string", "x".repeat(1024)],
    ["oversize object", { data: Array.from({ length: 200 }, (_, i) => `item-${i}`) }],
    ["oversize multibyte", "é".repeat(600)],
  ];
  const wrong: string[] = [];
  const check = (what: string, fn: () => unknown) => {
    const got = attempt(fn);
    if (!(got instanceof ValidationError) || !/payload/.test(got.message)) {
      wrong.push(`${what}: ${describe(got)}`);
    }
  };
  const before = snapshot(f.rt);
  for (const [what, payload] of cases) {
    for (const volatile of [false, true]) {
      check(
        `create ${what} (volatile=${volatile})`,
        () => note(f.mem, a, { payload: payload as JsonValue, volatile }),
      );
    }
  }
  const stored = snapshot(f.rt);
  // Just under the limit is fine (a JSON string of 1022 x's is 1024 bytes).
  assert.equal(note(f.mem, a, { payload: "x".repeat(1022) }).bytes, 1024);
  // update() applies the same checks and changes nothing.
  const o = note(f.mem, a, { payload: "ok" });
  const mid = snapshot(f.rt);
  // (An undefined payload in update() means "keep the payload", so it is not a case here.)
  for (const [what, payload] of cases.filter(([w]) => w !== "undefined")) {
    check(`update ${what}`, () => f.mem.update(a, o.oid, { payload: payload as JsonValue }));
  }
  assert.deepEqual(wrong, [], "every non-JSON or oversize payload is a ValidationError naming it");
  assert.equal(stored, before, "nothing was stored");
  assert.equal(snapshot(f.rt), mid, "nothing was updated");
});

Deno.test("ObjectMemory.create() bounds metadata attributes like the payload (attack: bypass payloadBytesMax through attrs)", async () => {
  await using f = await fixture({ objectLimits: { payloadBytesMax: 1024 } });
  const a = f.spawn();
  const before = snapshot(f.rt);
  const huge = { blob: "x".repeat(256 * 1024) };
  const error = refusal(() => note(f.mem, a, { payload: 1, attrs: huge }));
  assert.ok(error instanceof ValidationError, error.message);
  assert.equal(snapshot(f.rt), before, "nothing was stored");
  const o = note(f.mem, a, { payload: 1 });
  const mid = snapshot(f.rt);
  assert.ok(refusal(() => f.mem.update(a, o.oid, { attrs: huge })) instanceof ValidationError);
  assert.equal(snapshot(f.rt), mid);
});

Deno.test("ObjectMemory.createNamespace(), readByName(), list(), rename() and move() reject malformed keys and names", async () => {
  await using f = await fixture();
  const a = f.spawn();
  const o = note(f.mem, a, { name: "ok" });
  const before = snapshot(f.rt);
  for (const [what, key] of BAD_NAMESPACES) {
    const created = refusal(() => f.mem.createNamespace("operator", key));
    assert.ok(created instanceof ValidationError, `createNamespace ${what}: ${created.message}`);
    assert.match(created.message, /namespace/);
    assert.equal(f.rt.store.getNamespace(key), undefined);
    for (
      const [op, fn] of [
        ["readByName", () => f.mem.readByName(a, key, "ok")],
        ["list", () => f.mem.list(a, key)],
        ["move", () => f.mem.move(a, o.oid, key)],
      ] as const
    ) {
      const error = refusal(fn);
      assert.ok(error instanceof ValidationError, `${op} ${what}: ${error.message}`);
      assert.match(error.message, /namespace/);
    }
  }
  // A process namespace is not created through createNamespace.
  assert.ok(
    refusal(() => f.mem.createNamespace("operator", processNamespace(a))) instanceof
      ValidationError,
  );
  for (const [what, name] of BAD_NAMES) {
    for (
      const [op, fn] of [
        ["readByName", () => f.mem.readByName(a, processNamespace(a), name)],
        ["rename", () => f.mem.rename(a, o.oid, name)],
      ] as const
    ) {
      const error = refusal(fn);
      assert.ok(error instanceof ValidationError, `${op} ${what}: ${error.message}`);
      assert.match(error.message, /name/);
    }
  }
  assert.equal(snapshot(f.rt), before, "nothing was changed");
});

Deno.test("ObjectMemory.create() never overwrites an existing object when the id source repeats an oid", async () => {
  const base = seededIds(5);
  const ids: IdSource = {
    next: (prefix) => (prefix === "obj" ? "obj_00000000abcd" : base.next(prefix)),
  };
  await using f = await fixture({ ids });
  const a = f.spawn();
  const b = f.spawn();
  const first = note(f.mem, a, { name: "first", payload: "a's data" });
  assert.equal(first.oid, "obj_00000000abcd");
  const error = refusal(() => note(f.mem, b, { name: "second", payload: "b's data" }));
  assert.ok(error instanceof LibosError, error.message);
  const read = f.mem.read(a, first.oid);
  assert.equal(read.payload, "a's data", "the first object was not overwritten");
  assert.equal(read.info.namespace, processNamespace(a));
  assert.equal(f.rt.store.getObject(first.oid)?.namespace, processNamespace(a));
});

// ---------------------------------------------------------------- mode ceilings

Deno.test("ObjectMemory.create() under read-only mode is denied, audited, and stores nothing", async () => {
  await using f = await fixture({ mode: "read-only" });
  const a = f.spawn();
  const error = refusal(() => note(f.mem, a, { name: "draft" }));
  assert.ok(error instanceof CapabilityDeniedError, error.message);
  assert.equal(objectCount(f.rt), 0);
  // Reads and listings of its own (empty) namespace still work.
  assert.deepEqual(f.mem.list(a), []);
  const denied = denials(f.rt, a, "object.create");
  assert.equal(denied.length, 1, "the refusal is audited");
  assert.equal(denied[0]?.authority, "mode:read-only");
});

Deno.test("ObjectMemory under read-only mode: an object the operator put in the process's namespace can be read but not written, deleted, linked or granted", async () => {
  await using f = await fixture({ mode: "read-only" });
  const a = f.spawn();
  const b = f.spawn();
  const o = note(f.mem, "operator", { namespace: processNamespace(a), payload: "given" });
  assert.equal(f.mem.read(a, o.oid).payload, "given");
  const before = snapshot(f.rt);
  const bCaps = capIds(f.rt, b);
  for (
    const [what, fn] of [
      ["update", () => f.mem.update(a, o.oid, { payload: "changed" })],
      ["delete", () => f.mem.delete(a, o.oid)],
      ["rename", () => f.mem.rename(a, o.oid, "renamed")],
      ["link", () => f.mem.link(a, o.oid, o.oid, "cites")],
      ["grant", () => f.mem.grant(a, o.oid, b, ["read"])],
    ] as const
  ) {
    assert.ok(refusal(fn) instanceof CapabilityDeniedError, what);
  }
  assert.equal(snapshot(f.rt), before);
  assert.deepEqual(capIds(f.rt, b), bCaps);
});

Deno.test("ObjectMemory under plan mode: a process writes its own namespace, but not an explicit namespace even with a grant", async () => {
  await using f = await fixture({ mode: "plan" });
  const a = f.spawn();
  const mine = note(f.mem, a, { name: "plan.md", payload: "step 1" });
  assert.equal(f.mem.update(a, mine.oid, { payload: "step 2" }).version, 2);
  f.mem.createNamespace("operator", "project");
  grantNamespace(f.rt, a, "project", ["create", "list"]);
  grantObjects(f.rt, a, "project", ["read", "write", "delete"]);
  const shared = note(f.mem, "operator", { namespace: "project", name: "shared", payload: "s" });
  assert.equal(f.mem.read(a, shared.oid).payload, "s", "reading is allowed");
  const before = snapshot(f.rt);
  for (
    const [what, fn] of [
      ["create", () => note(f.mem, a, { namespace: "project", name: "new" })],
      ["update", () => f.mem.update(a, shared.oid, { payload: "changed" })],
      ["delete", () => f.mem.delete(a, shared.oid)],
      ["move in", () => f.mem.move(a, mine.oid, "project")],
      ["createNamespace", () => f.mem.createNamespace(a, "project/sub")],
    ] as const
  ) {
    const error = refusal(fn);
    assert.ok(error instanceof CapabilityDeniedError, `${what}: ${error.message}`);
  }
  assert.equal(snapshot(f.rt), before);
  assert.equal(f.rt.store.getNamespace("project/sub"), undefined);
  const denied = denials(f.rt, a, "object.create");
  assert.equal(denied.length, 1, "the refused create is audited");
  assert.equal(denied[0]?.authority, "mode:plan");
});
