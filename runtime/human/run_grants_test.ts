/**
 * "Allow always" for this run (issue 23): the standing grant reaches every process of the run —
 * the top-level process, the processes alive in its tree and those forked later, each copy
 * derived from its parent's — and no other run; `process` keeps today's reach; `project` is
 * refused where nothing can remember it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { CapabilityDeniedError, HumanPendingError, ValidationError } from "../base/errors.ts";
import type { HumanRequest } from "./human_request.ts";
import type { Capability } from "../authority/capability.ts";
import { createRuntime, type Runtime } from "../runtime.ts";
import type { Rememberer } from "./human_channel.ts";

/** A scratch workspace and state directory, removed when disposed. */
function sandbox(): { readonly workspace: string; readonly state: string } & Disposable {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-run-grants-" }));
  Deno.mkdirSync(join(root, "ws"));
  return {
    workspace: join(root, "ws"),
    state: join(root, "state"),
    [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }),
  };
}

function open(s: { readonly workspace: string; readonly state: string }): Promise<Runtime> {
  return createRuntime({
    workspace: s.workspace,
    env: { get: (name) => name === "XDG_STATE_HOME" ? s.state : undefined },
    cwd: s.workspace,
    mode: "workspace-write",
    human: "queue",
  });
}

const DEPLOY = {
  resource: { type: "fs", path: "deploy", scope: "subtree" },
  rights: ["write"],
} as const;

/** Forks a child of `parent` handed deploy/** as its parent has it (`inherit`), or nothing. */
function fork(runtime: Runtime, parent: string, inherit = true): string {
  return runtime.processes.fork(parent, inherit ? { inherit: [DEPLOY] } : {}).pid;
}

/**
 * Writes `path` as `pid` (new content each time, so no one-shot approval of an earlier write
 * covers it): "written", "refused", or the request it parked on.
 */
async function write(
  runtime: Runtime,
  pid: string,
  path: string,
): Promise<"written" | "refused" | HumanRequest> {
  try {
    await runtime.primitives.fs.writeText(pid, {
      path,
      content: `${crypto.randomUUID()} by ${pid}\n`,
    });
    return "written";
  } catch (error) {
    if (error instanceof CapabilityDeniedError) return "refused";
    if (!(error instanceof HumanPendingError)) throw error;
    return runtime.human.get(error.request);
  }
}

/**
 * A run: a top-level process the operator wants asked about each deploy change (an ask
 * capability), and a child it forked and handed that scope (asked too).
 */
function run(runtime: Runtime): { root: string; child: string } {
  const root = runtime.processes.spawn({ goal: "deploy", image: "base-agent:v0" }).pid;
  runtime.authority.capabilities.grant({
    subject: root,
    resource: DEPLOY.resource,
    rights: [...DEPLOY.rights],
    effect: "ask",
    issuer: "operator",
  });
  return { root, child: fork(runtime, root) };
}

Deno.test("RequestBook.approve(): allow always for the run (the default) reaches the top-level process, its live child and a child forked later — each copy derived from its parent's — but not another run", async () => {
  using s = sandbox();
  Deno.mkdirSync(join(s.workspace, "deploy"));
  await using runtime = await open(s);
  const { root, child } = run(runtime);
  const other = run(runtime);
  const request = await write(runtime, child, "deploy/app.yml");
  assert.ok(typeof request === "object", "control: the child is asked");
  assert.ok(
    typeof (await write(runtime, fork(runtime, root, false), "deploy/app.yml")) === "string",
    "control",
  );
  const approved = runtime.human.approve(request.id, {
    by: "human:test",
    always: "path",
  });
  assert.equal(approved.response?.remember, "run", "run is the default reach");
  const caps = runtime.authority.capabilities;
  const [, top, ...copies] = (approved.response?.capabilities ?? []).map((id) => caps.get(id));
  assert.equal(top?.subject, root, "the run's grant is the top-level process's");
  assert.equal(top?.issuer, `human:${approved.id}:run`);
  assert.equal(copies.length, 2, "a copy for each live child: the asking one and the control");
  const copy = copies.find((c) => c.subject === child);
  assert.equal(copy?.derivedFrom, top?.id, "the child's copy is derived from its parent's");
  assert.equal(copy?.tier, "inherited");
  // Another content for that path asks no more: not the child, not its parent.
  assert.equal(await write(runtime, child, "deploy/app.yml"), "written");
  assert.equal(await write(runtime, root, "deploy/app.yml"), "written", "the parent too");
  // A child forked later, even one handed nothing, and its own child get a derived copy.
  const later = fork(runtime, root, false);
  const grandchild = fork(runtime, later, false);
  for (const [pid, parentCap] of [[later, top!.id], [grandchild, undefined]] as const) {
    assert.equal(await write(runtime, pid, "deploy/app.yml"), "written", pid);
    const copied: Capability = caps.list(pid).find((c) => c.issuer === top!.issuer)!;
    assert.equal(copied.tier, "inherited");
    if (parentCap) assert.equal(copied.derivedFrom, parentCap);
  }
  // Only that path: a sibling still asks (or, for a child handed nothing, is refused).
  assert.equal(typeof await write(runtime, child, "deploy/db.yml"), "object");
  assert.equal(await write(runtime, later, "deploy/db.yml"), "refused");
  // Another run (another top-level process) is asked as before.
  assert.equal(typeof await write(runtime, other.root, "deploy/app.yml"), "object");
  assert.equal(typeof await write(runtime, other.child, "deploy/app.yml"), "object");
  // Revoking the run's grant revokes every copy.
  const revoked = new Set(caps.revoke(top!.id, "operator").map((c) => c.subject));
  for (const pid of [root, child, later, grandchild]) assert.ok(revoked.has(pid), pid);
  assert.equal(typeof await write(runtime, child, "deploy/app.yml"), "object");
  assert.equal(await write(runtime, later, "deploy/app.yml"), "refused");
  assert.equal(await write(runtime, grandchild, "deploy/app.yml"), "refused");
});

Deno.test("RequestBook.approve(): remember process keeps the grant to the asking process — its parent is still asked", async () => {
  using s = sandbox();
  Deno.mkdirSync(join(s.workspace, "deploy"));
  await using runtime = await open(s);
  const { root } = run(runtime);
  // A child asked by a capability of its own (an inherited ask is a floor its own grants do not
  // lift: only a run-wide answer, which its parent holds, reaches it).
  const child = fork(runtime, root, false);
  runtime.authority.capabilities.grant({
    subject: child,
    resource: DEPLOY.resource,
    rights: [...DEPLOY.rights],
    effect: "ask",
    issuer: "operator",
  });
  const request = await write(runtime, child, "deploy/app.yml") as HumanRequest;
  const approved = runtime.human.approve(request.id, {
    by: "human:test",
    always: "path",
    remember: "process",
  });
  const minted = (approved.response?.capabilities ?? []).map((id) =>
    runtime.authority.capabilities.get(id)
  );
  assert.deepEqual(minted.map((c) => c.subject), [child, child]);
  assert.equal(minted[1]?.issuer, `human:${request.id}`);
  assert.equal(await write(runtime, child, "deploy/app.yml"), "written");
  assert.equal(typeof await write(runtime, root, "deploy/app.yml"), "object", "the parent asks");
  assert.equal(
    await write(runtime, fork(runtime, child, false), "deploy/app.yml"),
    "refused",
    "a child forked later and handed nothing does not get a process-only grant",
  );
});

Deno.test("RequestBook.approve() refuses remember without always, and project where nothing can remember it — nothing approved, nothing minted", async () => {
  using s = sandbox();
  Deno.mkdirSync(join(s.workspace, "deploy"));
  await using runtime = await open(s);
  const { root } = run(runtime);
  const request = await write(runtime, root, "deploy/app.yml") as HumanRequest;
  const before = runtime.authority.capabilities.list(root).length;
  assert.throws(
    () => runtime.human.approve(request.id, { by: "human:test", remember: "run" }),
    (e: unknown) => e instanceof ValidationError && /applies to an allow-always/.test(e.message),
  );
  assert.throws(
    () =>
      runtime.human.approve(request.id, { by: "human:test", always: "path", remember: "project" }),
    (e: unknown) => e instanceof ValidationError && /cannot remember a grant/.test(e.message),
  );
  // A rememberer whose store fails: the approval's step is undone.
  const failing: Rememberer = {
    check() {},
    remember() {
      throw new ValidationError("the grants file cannot be written");
    },
  };
  runtime.human.rememberWith(failing);
  assert.throws(
    () =>
      runtime.human.approve(request.id, { by: "human:test", always: "path", remember: "project" }),
    /cannot be written/,
  );
  assert.equal(runtime.human.get(request.id).status, "pending", "nothing was approved");
  assert.equal(runtime.authority.capabilities.list(root).length, before, "nothing was minted");
  assert.equal(
    runtime.audit.query({ action: "human.approve", limit: 10 }).length,
    0,
    "no approval on record",
  );
  // One that stores it: the grant holds for the run and is remembered under the id it gave.
  const kept: unknown[] = [];
  runtime.human.rememberWith({
    check() {},
    remember(grant) {
      kept.push(grant);
      return "grant_0123456789ab";
    },
  });
  const approved = runtime.human.approve(request.id, {
    by: "human:test",
    always: "path",
    remember: "project",
  });
  assert.equal(approved.response?.remembered, "grant_0123456789ab");
  assert.equal(kept.length, 1);
  assert.deepEqual((kept[0] as { resource: unknown }).resource, {
    type: "fs",
    path: "deploy/app.yml",
    scope: "exact",
  });
  const [record] = runtime.audit.query({ action: "human.approve", limit: 10 });
  assert.equal(record?.detail?.remember, "project");
  assert.equal(record?.detail?.remembered, "grant_0123456789ab");
});
