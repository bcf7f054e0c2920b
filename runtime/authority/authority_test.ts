import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { FakeClock } from "../base/clock.ts";
import { ApprovalRequiredError, CapabilityDeniedError, ValidationError } from "../base/errors.ts";
import { seededIds } from "../base/ids.ts";
import { createRuntime } from "../runtime.ts";
import { type TestRuntime, testRuntime } from "../../testing.ts";

interface Fixture extends TestRuntime {
  readonly clock: FakeClock;
}

async function fixture(mode = "workspace-write"): Promise<Fixture> {
  const clock = new FakeClock(Date.UTC(2026, 10, 29, 12));
  const t = await testRuntime({ prefix: "libos-authority-", mode, clock, ids: seededIds(21) });
  return { ...t, clock };
}

const self = (pid: string) => ({ kind: "process", pid }) as const;

Deno.test("Authority: a top-level process starts with its mode's default grants and rights over itself", async () => {
  for (
    const [mode, rights] of [["read-only", ["read", "stat"]], ["workspace-write", [
      "read",
      "stat",
      "write",
      "delete",
    ]], ["full-access", ["read", "stat", "write", "delete"]]] as const
  ) {
    await using f = await fixture(mode);
    const pid = f.runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    const caps = f.runtime.authority.capabilities.list(pid);
    const fs = caps.find((c) => c.resource.type === "fs");
    assert.deepEqual(fs?.rights, rights, mode);
    assert.equal(fs?.issuer, `mode:${mode}`);
    const proc = caps.find((c) => c.resource.type === "process");
    assert.deepEqual(proc?.rights, ["spawn", "exec"]);
  }
});

Deno.test("Authority: a process operation without a capability is denied and audited (attack: signal a sibling's child)", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const parent = pm.spawn({ goal: "p", image: "base-agent:v0" }).pid;
  const child = pm.fork(parent, {}, self(parent)).pid;
  // The parent's lineage right over the child is revoked: signalling it is now refused.
  const lineage = f.runtime.authority.capabilities.list(parent).find((c) =>
    c.resource.type === "process" && c.resource.key === child
  )!;
  f.runtime.authority.capabilities.revoke(lineage.id);
  assert.throws(
    () => pm.signal(child, "pause", self(parent)),
    (e: unknown) => e instanceof CapabilityDeniedError && e.reason === "default",
  );
  assert.equal(pm.get(child).status, "runnable", "nothing happened to the child");
  const denial = f.runtime.audit.query({ pid: parent, action: "process.signal", decision: "deny" });
  assert.equal(denial.length, 1);
  assert.equal(denial[0]?.authority, "default");
  assert.equal(denial[0]?.resource, `process:${child}`);
});

Deno.test("Authority: spawning needs the spawn right on oneself; without it no child is created", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const parent = pm.spawn({ goal: "p", image: "base-agent:v0" }).pid;
  const own = f.runtime.authority.capabilities.list(parent).find((c) =>
    c.resource.type === "process" && c.resource.key === parent
  )!;
  f.runtime.authority.capabilities.revoke(own.id);
  const before = pm.list().length;
  assert.throws(() => pm.fork(parent, {}, self(parent)), CapabilityDeniedError);
  assert.throws(
    () => pm.spawnChild(parent, { goal: "c", image: "base-agent:v0" }, self(parent)),
    CapabilityDeniedError,
  );
  assert.equal(pm.list().length, before);
  // Each refusal is recorded once, as the operation it refused, naming what decided it.
  for (const action of ["process.fork", "process.spawn_child"]) {
    const denied = f.runtime.audit.query({ pid: parent, action });
    assert.deepEqual(denied.map((r) => [r.decision, r.authority]), [["deny", "default"]]);
  }
});

Deno.test("Authority: exec swaps image and tools but never lifts capabilities", async () => {
  await using f = await fixture("read-only");
  const pm = f.runtime.processes;
  const pid = pm.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const before = f.runtime.authority.capabilities.list(pid).map((c) => c.id).sort();
  const write = () =>
    f.runtime.authority.decide(pid, { resource: { type: "fs", path: "src/a.ts" }, right: "write" });
  assert.equal(write().effect, "deny");
  pm.exec(pid, { image: "coding-agent:v0", tools: ["write_text_file"] }, self(pid));
  assert.deepEqual(f.runtime.authority.capabilities.list(pid).map((c) => c.id).sort(), before);
  assert.equal(write().effect, "deny");
});

Deno.test("Authority: chdir into a directory the caller cannot stat looks the same whether it exists or not (no existence oracle)", async () => {
  await using f = await fixture();
  Deno.mkdirSync(join(f.workspace, "hidden", "real"), { recursive: true });
  const pm = f.runtime.processes;
  const pid = pm.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  f.runtime.authority.capabilities.grant({
    subject: pid,
    resource: { type: "fs", path: "hidden", scope: "subtree" },
    rights: ["stat", "read"],
    effect: "deny",
    issuer: "operator",
  });
  const attempt = (path: string) => {
    try {
      pm.chdir(pid, path, self(pid));
      return "moved";
    } catch (error) {
      return `${(error as Error).constructor.name}:${(error as { code?: string }).code}:${
        (error as Error).message.replace(path, "<p>")
      }`;
    }
  };
  const existing = attempt("hidden/real");
  const missing = attempt("hidden/nope");
  assert.match(existing, /^CapabilityDeniedError:capability_denied:/);
  assert.equal(existing, missing.replace("hidden/nope", "hidden/real"));
  assert.equal(pm.get(pid).cwd, ".");
  assert.equal(
    attempt("nowhere"),
    'NotFoundError:not_found:Cannot use directory "<p>": it does not exist',
    "with stat, existence may be told",
  );
});

Deno.test("Authority: read-only mode with an explicit write capability still denies the write (the mode is a ceiling)", async () => {
  await using f = await fixture("read-only");
  const pid = f.runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  f.runtime.authority.capabilities.grant({
    subject: pid,
    resource: { type: "fs", path: "out.txt", scope: "exact" },
    rights: ["write"],
    effect: "allow",
    issuer: "operator",
  });
  await assert.rejects(
    f.runtime.primitives.fs.writeText(pid, { path: "out.txt", content: "x" }),
    (e: unknown) => e instanceof CapabilityDeniedError && e.reason === "mode:read-only",
  );
  assert.throws(() => Deno.statSync(join(f.workspace, "out.txt")), Deno.errors.NotFound);
});

Deno.test("Authority: a run-scoped deny beats a capability allow, and is named in the audit", async () => {
  {
    await using t = await testRuntime({
      prefix: "libos-rundeny-",
      mode: "full-access",
      denies: ["fs.write:secrets/**"],
    });
    const { runtime, workspace } = t;
    const pid = t.spawn();
    Deno.mkdirSync(join(workspace, "secrets"));
    await assert.rejects(
      runtime.primitives.fs.writeText(pid, { path: "secrets/token", content: "x" }),
      (e: unknown) => e instanceof CapabilityDeniedError && e.reason === "run:1",
    );
    assert.equal(runtime.audit.query({ pid, action: "fs.write" })[0]?.authority, "run:1");
    await runtime.primitives.fs.writeText(pid, { path: "public.txt", content: "ok" });
    assert.throws(() => Deno.statSync(join(workspace, "secrets", "token")), Deno.errors.NotFound);
  }
  await assert.rejects(createRuntime({ db: ":memory:", denies: ["nonsense"] }), ValidationError);
  await assert.rejects(createRuntime({ db: ":memory:", mode: "yolo" }), ValidationError);
});

Deno.test("Authority.check() turns an ask decision into a typed approval_required carrying the action digest", async () => {
  await using f = await fixture("workspace-write");
  const pid = f.runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const digest = `sha256:${"a".repeat(64)}`;
  assert.throws(
    () =>
      f.runtime.authority.check(pid, {
        resource: { type: "fs", path: ".git/config" },
        right: "write",
        digest,
      }, "write .git/config"),
    (e: unknown) =>
      e instanceof ApprovalRequiredError && e.reason.startsWith("protected:") &&
      e.digest === digest && e.code === "approval_required",
  );
  assert.ok(!existsSync(join(f.workspace, ".git")), "deciding has no side effect");
});

Deno.test("ClockPrimitive reads the time in an IANA zone, bounds sleeps, and audits both", async () => {
  await using f = await fixture();
  const pid = f.runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const clock = f.runtime.primitives.clock;
  assert.deepEqual(clock.now(pid), {
    iso: "2026-11-29T12:00:00.000Z",
    epochMs: f.clock.now(),
    timeZone: "UTC",
  });
  assert.equal(clock.now(pid, { timeZone: "Asia/Shanghai" }).iso, "2026-11-29T20:00:00.000+08:00");
  assert.equal(
    clock.now(pid, { timeZone: "America/St_Johns" }).iso,
    "2026-11-29T08:30:00.000-03:30",
  );
  assert.throws(() => clock.now(pid, { timeZone: "Mars/Olympus" }), ValidationError);
  assert.deepEqual(clock.sleepUntil(pid, 20), { until: f.clock.now() + 20 });
  const audits = f.runtime.audit.query({ pid, actionPrefix: "clock." }).length;
  assert.throws(() => clock.sleepUntil(pid, 61_000), ValidationError);
  assert.throws(() => clock.sleepUntil(pid, -1), ValidationError);
  assert.equal(
    f.runtime.audit.query({ pid, actionPrefix: "clock." }).length,
    audits,
    "a refused sleep is not audited as one",
  );
  const waiting = clock.wait(pid, 1000);
  f.clock.advance(1000);
  await waiting;
});

Deno.test("ClockPrimitive: a process sleeping through the clock primitive is parked and blocks nobody", async () => {
  await using f = await fixture();
  const pm = f.runtime.processes;
  const sleeper = pm.spawn({ goal: "sleeper", image: "base-agent:v0" }).pid;
  f.clock.advance(1);
  const worker = pm.spawn({ goal: "worker", image: "base-agent:v0" }).pid;
  const order: string[] = [];
  using scheduler = f.runtime.scheduler({
    runQuantum(ctx) {
      order.push(ctx.process.goal);
      if (ctx.process.pid === sleeper && !ctx.process.wake) {
        return Promise.resolve({
          type: "sleep",
          until: f.runtime.primitives.clock.sleepUntil(sleeper, 5000).until,
        });
      }
      return Promise.resolve({ type: "exit" });
    },
  });
  const run = scheduler.runUntilIdle();
  for (let i = 0; i < 20 && pm.get(worker).status !== "exited"; i++) {
    await new Promise((r) => setTimeout(r, 1));
  }
  assert.equal(pm.get(sleeper).status, "sleeping");
  assert.equal(pm.get(worker).status, "exited");
  f.clock.advance(5000);
  await run;
  assert.deepEqual(order, ["sleeper", "worker", "sleeper"]);
});

Deno.test("FilesystemPrimitive resolves relative paths from the process's working directory", async () => {
  await using f = await fixture();
  Deno.mkdirSync(join(f.workspace, "pkg"));
  const pm = f.runtime.processes;
  const pid = pm.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  pm.chdir(pid, "pkg", self(pid));
  const written = await f.runtime.primitives.fs.writeText(pid, {
    path: "notes.txt",
    content: "in pkg",
  });
  assert.equal(written.path, "pkg/notes.txt");
  assert.equal(Deno.readTextFileSync(join(f.workspace, "pkg", "notes.txt")), "in pkg");
  assert.equal(
    (await f.runtime.primitives.fs.readText(pid, { path: "notes.txt" })).content,
    "in pkg",
  );
  assert.equal(
    (await f.runtime.primitives.fs.readText(pid, { path: "../pkg/notes.txt" })).path,
    "pkg/notes.txt",
  );
});

Deno.test("FilesystemPrimitive: a write grant does not allow delete, even in full-access mode", async () => {
  await using f = await fixture("full-access");
  const pid = f.runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const caps = f.runtime.authority.capabilities;
  for (const cap of caps.list(pid)) if (cap.resource.type === "fs") caps.revoke(cap.id);
  caps.grant({
    subject: pid,
    resource: { type: "fs", path: "doomed.txt", scope: "exact" },
    rights: ["write", "read", "stat"],
    effect: "allow",
    issuer: "operator",
  });
  Deno.writeTextFileSync(join(f.workspace, "doomed.txt"), "still here");
  await assert.rejects(
    f.runtime.primitives.fs.deleteFile(pid, { path: "doomed.txt" }),
    (e: unknown) => e instanceof CapabilityDeniedError && e.reason === "default",
  );
  assert.equal(Deno.readTextFileSync(join(f.workspace, "doomed.txt")), "still here");
  await f.runtime.primitives.fs.writeText(pid, { path: "doomed.txt", content: "rewritten" });
  assert.equal(Deno.readTextFileSync(join(f.workspace, "doomed.txt")), "rewritten");
});

Deno.test("FilesystemPrimitive: a revoked filesystem capability stops the next write, with no success audited", async () => {
  await using f = await fixture();
  const pid = f.runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  await f.runtime.primitives.fs.writeText(pid, { path: "a.txt", content: "1" });
  for (const cap of f.runtime.authority.capabilities.list(pid)) {
    if (cap.resource.type === "fs") f.runtime.authority.capabilities.revoke(cap.id);
  }
  await assert.rejects(
    f.runtime.primitives.fs.writeText(pid, { path: "a.txt", content: "2" }),
    CapabilityDeniedError,
  );
  assert.equal(Deno.readTextFileSync(join(f.workspace, "a.txt")), "1");
  assert.deepEqual(f.runtime.audit.query({ pid, action: "fs.write" }).map((r) => r.decision), [
    "allow",
    "deny",
  ]);
});

Deno.test("Authority: in workspace-write a delete in the workspace asks a human (the mode's ceiling), never refused for want of a grant; read-only refuses it, full-access allows it", async () => {
  for (
    const [mode, effect] of [
      ["workspace-write", "ask"],
      ["read-only", "deny"],
      ["full-access", "allow"],
    ] as const
  ) {
    await using f = await fixture(mode);
    const pid = f.runtime.processes.spawn({ goal: "g", image: "coding-agent:v0" }).pid;
    const decision = f.runtime.authority.decide(pid, {
      resource: { type: "fs", path: "src/old.py" },
      right: "delete",
    });
    assert.equal(decision.effect, effect, `${mode}: ${decision.reason}`);
    if (mode === "workspace-write") assert.equal(decision.reason, "mode:workspace-write");
  }
});
