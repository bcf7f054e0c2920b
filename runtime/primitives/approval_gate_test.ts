import assert from "node:assert/strict";
import { join } from "node:path";
import { z } from "zod";
import { digestOf } from "../base/canonical_json.ts";
import { CapabilityDeniedError, HumanPendingError, ValidationError } from "../base/errors.ts";
import { defineAction } from "../human/action_registry.ts";
import type { HumanResolution } from "../human/human_channel.ts";
import { actionApproval, type HumanRequest } from "../human/human_request.ts";
import { hostFilesystem, recordingFilesystem } from "../providers/filesystem.ts";
import { createRuntime, type Runtime } from "../runtime.ts";
import { fakeProgram, logLines, shellFixture } from "../../tests/shell_fixture.ts";
import { ApprovalGate, type Attempt } from "./approval_gate.ts";

/** A protected file: writing it asks under every mode. */
const TARGET = ".gitmodules";

interface Fixture extends AsyncDisposable {
  readonly ws: string;
  readonly runtime: Runtime;
  readonly pid: string;
  /** Called before each filesystem provider call. */
  hook: (op: string, path: string) => void;
}

async function fixture(): Promise<Fixture> {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-gate-" }));
  const f: { hook: (op: string, path: string) => void } = { hook: () => {} };
  const runtime = await createRuntime({
    workspace: ws,
    db: ":memory:",
    human: "queue",
    mode: "workspace-write",
    filesystem: recordingFilesystem(hostFilesystem(), [], (call) => f.hook(call.op, call.path)),
  });
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  return Object.assign(f, {
    ws,
    runtime,
    pid,
    async [Symbol.asyncDispose]() {
      await runtime.close();
      Deno.removeSync(ws, { recursive: true });
    },
  });
}

/** The request `call` parks on: it must throw HumanPendingError. */
async function parkOn(runtime: Runtime, call: () => Promise<unknown>): Promise<HumanRequest> {
  let caught: unknown;
  try {
    await call();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof HumanPendingError, `it parks on a human, got ${caught}`);
  return runtime.human.get(caught.request);
}

function fileText(ws: string, path = TARGET): string | null {
  try {
    return Deno.readTextFileSync(join(ws, path));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/** Allowed fs.write records on a path: effects the audit log says were done. */
function writesDone(runtime: Runtime, pid: string, path = TARGET): number {
  return runtime.audit.query({ pid, action: "fs.write", limit: 1000 })
    .filter((r) => r.decision === "allow" && r.resource === `fs:${path}`).length;
}

function outcomeOf(resolution: HumanResolution) {
  assert.equal(resolution.type, "outcome");
  return resolution.type === "outcome" ? resolution.outcome : undefined;
}

Deno.test("ApprovalGate attack: an approval bound to one write lets neither another content nor another path through", async () => {
  await using f = await fixture();
  const fs = f.runtime.primitives.fs;
  const request = await parkOn(
    f.runtime,
    () => fs.writeText(f.pid, { path: TARGET, content: "approved\n" }),
  );
  f.runtime.human.approve(request.id, { by: "operator" });
  // Different content, same path: asks again, nothing written.
  await parkOn(f.runtime, () => fs.writeText(f.pid, { path: TARGET, content: "evil\n" }));
  assert.equal(fileText(f.ws), null);
  // Same content, another protected path: asks again, nothing written.
  await fs.makeDir(f.pid, { path: "lib" });
  await parkOn(
    f.runtime,
    () => fs.writeText(f.pid, { path: "lib/.gitmodules", content: "approved\n" }),
  );
  assert.equal(fileText(f.ws, "lib/.gitmodules"), null);
  assert.equal(writesDone(f.runtime, f.pid), 0);
  // The approved action itself still goes through, once.
  await fs.writeText(f.pid, { path: TARGET, content: "approved\n" });
  assert.equal(fileText(f.ws), "approved\n");
  assert.equal(writesDone(f.runtime, f.pid), 1);
});

Deno.test("ApprovalGate attack: an approval of one argv does not run another (git status approved, git push asked)", async () => {
  await using f = await shellFixture({ human: "queue", fakePath: true });
  const log = join(f.outside, "runs.log");
  fakeProgram(f.bins[0]!, "git", log);
  const shell = f.runtime.primitives.shell;
  const request = await parkOn(f.runtime, () => shell.run(f.pid, { argv: ["git", "status"] }));
  f.runtime.human.approve(request.id, { by: "operator" });
  const other = await parkOn(f.runtime, () => shell.run(f.pid, { argv: ["git", "push"] }));
  assert.deepEqual(other.approval?.argv, ["git", "push"]);
  assert.deepEqual(logLines(log), [], "git push did not run");
  const r = await shell.run(f.pid, { argv: ["git", "status"] });
  assert.equal(r.stdout, "ran git\n");
  assert.equal(logLines(log).length, 1);
});

Deno.test("ApprovalGate: an approved action is re-dispatched exactly once — a second resume runs nothing, a second call asks again", async () => {
  await using f = await fixture();
  const fs = f.runtime.primitives.fs;
  const request = await parkOn(
    f.runtime,
    () => fs.writeText(f.pid, { path: TARGET, content: "once\n" }),
  );
  assert.deepEqual(request.approval?.action, {
    primitive: "fs.write",
    args: { path: TARGET, content: "once\n", overwrite: true },
  });
  f.runtime.human.approve(request.id, { by: "operator" });
  const signal = new AbortController().signal;
  const first = outcomeOf(await f.runtime.human.resume(f.pid, request.id, signal));
  assert.equal(first?.ok, true);
  assert.equal(fileText(f.ws), "once\n");
  Deno.writeTextFileSync(join(f.ws, TARGET), "changed by the user\n");
  const second = outcomeOf(await f.runtime.human.resume(f.pid, request.id, signal));
  assert.equal(second?.ok, false);
  assert.equal(second?.ok === false ? second.error.code : "", "outcome_unknown");
  // The one-shot grant is spent: the same call asks again and writes nothing.
  await parkOn(f.runtime, () => fs.writeText(f.pid, { path: TARGET, content: "once\n" }));
  assert.equal(fileText(f.ws), "changed by the user\n");
  assert.equal(writesDone(f.runtime, f.pid), 1);
});

Deno.test("ApprovalGate: a parked request names the grant its approval mints; one parked before requests named it (no grant stored) still resumes exactly once", async () => {
  await using f = await fixture();
  const fs = f.runtime.primitives.fs;
  const request = await parkOn(
    f.runtime,
    () => fs.writeText(f.pid, { path: TARGET, content: "legacy\n" }),
  );
  assert.deepEqual(request.approval?.grant, { type: "fs", path: TARGET, scope: "exact" });
  // As an earlier version stored it: the same request without the grant.
  const row = f.runtime.store.getHumanRequest(request.id);
  assert.ok(row);
  const data = JSON.parse(row.data);
  delete data.approval.grant;
  f.runtime.store.step(() =>
    f.runtime.store.putHumanRequest({ ...row, data: JSON.stringify(data) })
  );
  assert.equal(f.runtime.human.get(request.id).approval?.grant, undefined);
  const approved = f.runtime.human.approve(request.id, { by: "operator" });
  const [capId] = approved.response?.capabilities ?? [];
  assert.ok(capId);
  assert.deepEqual(f.runtime.authority.capabilities.get(capId).resource, {
    type: "fs",
    path: TARGET,
    scope: "exact",
  });
  const signal = new AbortController().signal;
  const first = outcomeOf(await f.runtime.human.resume(f.pid, request.id, signal));
  assert.equal(first?.ok, true);
  assert.equal(fileText(f.ws), "legacy\n");
  assert.equal(writesDone(f.runtime, f.pid), 1);
});

Deno.test("ApprovalGate: the one-shot grant is used up before the effect, and cannot be used a second time", async () => {
  await using f = await fixture();
  const fs = f.runtime.primitives.fs;
  const request = await parkOn(
    f.runtime,
    () => fs.writeText(f.pid, { path: TARGET, content: "spent\n" }),
  );
  const approved = f.runtime.human.approve(request.id, { by: "operator" });
  const [capId] = approved.response?.capabilities ?? [];
  assert.ok(capId);
  const caps = f.runtime.authority.capabilities;
  assert.equal(caps.get(capId).usedAt, null, "not used before the action runs");
  const seen: (number | null)[] = [];
  f.hook = (op) => {
    // The effect: the temporary file is created, then renamed over the target.
    if (op === "create" || op === "rename") seen.push(caps.get(capId).usedAt);
  };
  await fs.writeText(f.pid, { path: TARGET, content: "spent\n" });
  f.hook = () => {};
  assert.ok(seen.length >= 2, "the effect's provider calls were seen");
  assert.ok(seen.every((usedAt) => usedAt !== null), "used up before every effect call");
  // A second use, by the gate itself, is refused (compare-and-set).
  const gate = new ApprovalGate({ authority: f.runtime.authority });
  assert.throws(() => gate.spend([caps.get(capId)]), CapabilityDeniedError);
  assert.equal(writesDone(f.runtime, f.pid), 1);
});

/** Stores an approval request for a hand-made action (as a database edited outside libos). */
async function storedAction(
  f: Fixture,
  operation: string,
  args: Record<string, string | string[]>,
): Promise<HumanRequest> {
  return await parkOn(f.runtime, () =>
    f.runtime.human.escalate(f.pid, {
      ...actionApproval({
        primitive: "filesystem",
        operation,
        resource: "fs:victim.txt",
        right: "delete",
        reason: "test",
        grantScope: "once",
        bytes: null,
        sha256: null,
        preview: null,
        digest: digestOf({ operation }),
        ceiling: null,
      }),
      action: { primitive: operation, args },
    }));
}

Deno.test("ApprovalGate attack: a stored action naming an unknown operation, or with malformed arguments, is refused with a typed error and nothing runs", async () => {
  await using f = await fixture();
  Deno.writeTextFileSync(join(f.ws, "victim.txt"), "keep me\n");
  const signal = new AbortController().signal;
  const cases: [string, string, Record<string, string | string[]>, RegExp][] = [
    ["an unknown operation", "fs.shred", { path: "victim.txt" }, /fs\.shred/],
    ["a path that is not text", "fs.delete", { path: ["victim.txt"] }, /fs\.delete.*malformed/],
  ];
  for (const [name, operation, args, message] of cases) {
    const request = await storedAction(f, operation, args);
    f.runtime.human.approve(request.id, { by: "operator" });
    const outcome = outcomeOf(await f.runtime.human.resume(f.pid, request.id, signal));
    assert.equal(outcome?.ok, false, name);
    if (outcome?.ok === false) {
      assert.equal(outcome.error.code, "validation_failed", name);
      assert.match(outcome.error.message, message, name);
    }
    assert.equal(f.runtime.human.get(request.id).status, "dispatched", name);
    assert.equal(fileText(f.ws, "victim.txt"), "keep me\n", `${name}: nothing was deleted`);
  }
  await assert.rejects(
    f.runtime.human.actions.dispatch(f.pid, { primitive: "fs.shred", args: {} }, signal),
    ValidationError,
  );
  assert.equal(
    f.runtime.audit.query({ action: "fs.delete", limit: 10 }).filter((r) => r.decision === "allow")
      .length,
    0,
  );
});

Deno.test("ApprovalGate: a new primitive is a few lines and a registration — ask, approve, resume once", async () => {
  await using f = await fixture();
  const rung: string[] = [];
  // The whole primitive: how it digests and previews its action, and what it does.
  const gate = new ApprovalGate({ authority: f.runtime.authority, human: f.runtime.human });
  const ring = (pid: string, args: { bell: string }) =>
    gate.pass(pid, {
      operation: "demo.ring",
      args,
      grant: () => ({ type: "tool", key: "bell", scope: "exact" }),
      exhausted: () => new ValidationError("the bell keeps changing"),
      attempt: (): Promise<Attempt<string>> => {
        const digest = digestOf({ primitive: "demo.ring", bell: args.bell });
        const approved = gate.approval(pid, { type: "tool", key: "bell" }, "register", digest);
        if (!approved) {
          const details = actionApproval({
            // A kind of primitive the request book has never heard of: the grant it names is
            // what the approval mints.
            primitive: "bell",
            operation: "demo.ring",
            resource: "tool:bell",
            right: "register",
            reason: "default",
            grantScope: "this ring, once",
            bytes: null,
            sha256: null,
            preview: `ring ${args.bell}`,
            digest,
            ceiling: null,
          });
          return Promise.resolve({ type: "ask", ask: { details, subject: args.bell } });
        }
        gate.spend([approved]);
        rung.push(args.bell);
        return Promise.resolve({ type: "done", value: `rang ${args.bell}` });
      },
    });
  f.runtime.human.actions.register(
    defineAction("demo.ring", z.object({ bell: z.string() }), (pid, a) => ring(pid, a)),
  );
  const request = await parkOn(f.runtime, () => ring(f.pid, { bell: "front door" }));
  assert.deepEqual(request.approval?.action, {
    primitive: "demo.ring",
    args: { bell: "front door" },
  });
  assert.deepEqual(rung, [], "nothing happens before the approval");
  f.runtime.human.approve(request.id, { by: "operator" });
  const signal = new AbortController().signal;
  const outcome = outcomeOf(await f.runtime.human.resume(f.pid, request.id, signal));
  assert.deepEqual(outcome, { ok: true, value: "rang front door" });
  const again = outcomeOf(await f.runtime.human.resume(f.pid, request.id, signal));
  assert.equal(again?.ok === false ? again.error.code : "", "outcome_unknown");
  assert.deepEqual(rung, ["front door"], "rung exactly once");
});
