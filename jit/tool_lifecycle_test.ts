import assert from "node:assert/strict";
import { join } from "node:path";
import {
  ApprovalRequiredError,
  CapabilityDeniedError,
  HumanPendingError,
  ValidationError,
} from "../runtime/base/errors.ts";
import type { HumanMode } from "../runtime/human/human_channel.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { JitSandbox } from "./sandbox.ts";
import { lifecycleFor, type ToolCandidate } from "./tool_lifecycle.ts";
import { JitValidator } from "./validator.ts";
import { allow } from "../tests/authority_fixture.ts";
import { echoCandidate, wordCounter } from "../tests/sample_fixture.ts";
import { executorFor } from "../runtime/model/executor.ts";
import type { ModelClient } from "../runtime/model/model_client.ts";
import { ScriptedModel } from "../runtime/model/scripted_model.ts";
import { parseSessionLog } from "../runtime/model/session_log.ts";

async function setup(human: HumanMode = "none") {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-jitlife-" }));
  const runtime = await createRuntime({ workspace: root, db: ":memory:", human });
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const sandbox = new JitSandbox({ limits: { wallMs: 3_000 } });
  const validator = new JitValidator();
  const lifecycle = lifecycleFor(runtime, { sandbox, validator });
  return {
    root,
    runtime,
    pid,
    lifecycle,
    async [Symbol.asyncDispose]() {
      await validator[Symbol.asyncDispose]();
      await sandbox[Symbol.asyncDispose]();
      await runtime.close();
      Deno.removeSync(root, { recursive: true });
    },
  };
}

Deno.test("JitToolLifecycle: propose, validate and register a tool, which then runs under its process's capabilities", async () => {
  await using s = await setup();
  const oid = s.lifecycle.propose(s.pid, wordCounter());
  const validation = await s.lifecycle.validate(s.pid, oid);
  assert.deepEqual(validation.tests, [{ name: "three words", ok: true }]);
  assert.equal(validation.ok, true);
  // Registering needs the register right on tool:count_words.
  await assert.rejects(s.lifecycle.register(s.pid, oid), ApprovalRequiredError);
  allow(s.runtime, s.pid, { type: "tool", key: "count_words", scope: "exact" }, ["register"]);
  assert.equal(await s.lifecycle.register(s.pid, oid), "count_words");
  assert.ok(
    s.runtime.tools.visible(s.pid).some((t) => t.name === "count_words" && t.origin === "jit"),
  );
  // Another process does not see it.
  const other = s.runtime.processes.spawn({ goal: "other", image: "base-agent:v0" }).pid;
  assert.ok(!s.runtime.tools.visible(other).some((t) => t.name === "count_words"));
  // It runs for real through the sandbox and the filesystem primitive.
  Deno.writeTextFileSync(join(s.root, "a.txt"), "alpha beta gamma delta");
  const tool = s.runtime.tools.visible(s.pid).find((t) => t.name === "count_words")!;
  const value = await tool.run(
    { path: "a.txt" },
    {
      pid: s.pid,
      signal: new AbortController().signal,
    } as Parameters<typeof tool.run>[1],
  );
  assert.deepEqual(value, { words: 4 });
});

Deno.test("JitToolLifecycle.validate() fails a test on a wrong, missing or extra syscall, a wrong output, or a validator finding", async () => {
  await using s = await setup();
  const cases: [string, Partial<ToolCandidate>, RegExp][] = [
    ["wrong arguments", {
      tests: [{
        name: "t",
        args: { path: "b.txt" },
        syscalls: [{ name: "fs.read_text", args: { path: "a.txt" }, result: { content: "x" } }],
      }],
    }, /expected syscall fs\.read_text/],
    ["an expectation never met", {
      tests: [{
        name: "t",
        args: { path: "a.txt" },
        syscalls: [
          { name: "fs.read_text", args: { path: "a.txt" }, result: { content: "x" } },
          { name: "fs.stat", args: { path: "a.txt" }, result: {} },
        ],
      }],
    }, /1 expected syscall\(s\) never made/],
    ["an unexpected syscall", {
      tests: [{ name: "t", args: { path: "a.txt" }, syscalls: [] }],
    }, /unexpected syscall fs\.read_text/],
    ["output schema", {
      output_schema: {
        type: "object",
        properties: { words: { type: "string" } },
        required: ["words"],
      },
    }, /output schema/],
    ["expected value", {
      tests: [{
        name: "t",
        args: { path: "a.txt" },
        syscalls: [{ name: "fs.read_text", args: { path: "a.txt" }, result: { content: "x y" } }],
        expect: { words: 3 },
      }],
    }, /expected \{"words":3\}/],
    ["args against the input schema", {
      tests: [{ name: "t", args: { file: "a.txt" }, syscalls: [] }],
    }, /input schema/],
  ];
  for (const [name, overrides, message] of cases) {
    const oid = s.lifecycle.propose(s.pid, wordCounter(overrides));
    const validation = await s.lifecycle.validate(s.pid, oid);
    assert.equal(validation.ok, false, name);
    assert.match(validation.tests[0]?.message ?? "", message, name);
    await assert.rejects(s.lifecycle.register(s.pid, oid), ValidationError, name);
  }
  // A validator finding stops before any test runs.
  const bad = s.lifecycle.propose(
    s.pid,
    wordCounter({ source: "export function run() { return eval('1'); }" }),
  );
  const validation = await s.lifecycle.validate(s.pid, bad);
  assert.equal(validation.ok, false);
  assert.equal(validation.static.violations[0]?.rule, "eval");
  assert.deepEqual(validation.tests, []);
});

Deno.test("JitToolLifecycle.validate() attack: a candidate whose test floods the sandbox fails validation, and the breach is audited (a throwing test is not)", async () => {
  await using s = await setup();
  const flood = s.lifecycle.propose(
    s.pid,
    echoCandidate(`export function run() { for (;;) console.log(); }`, "flooder"),
  );
  const flooded = await s.lifecycle.validate(s.pid, flood);
  assert.equal(flooded.ok, false);
  assert.match(flooded.tests[0]?.message ?? "", /more than 10000 frames/);
  const breach = s.runtime.audit.query({ pid: s.pid, action: "jit.test" });
  assert.deepEqual(breach.map((r) => [r.resource, r.decision, r.authority]), [
    ["tool:flooder", "deny", "frame_limit"],
  ]);
  // Control: a test that only throws fails too, with no sandbox breach to audit.
  const thrower = s.lifecycle.propose(
    s.pid,
    echoCandidate(`export function run() { throw new Error("no"); }`, "thrower"),
  );
  assert.equal((await s.lifecycle.validate(s.pid, thrower)).ok, false);
  assert.equal(s.runtime.audit.query({ pid: s.pid, action: "jit.test" }).length, 1);
});

Deno.test("JitToolLifecycle refuses malformed candidates and never lets a JIT tool shadow a built-in", async () => {
  await using s = await setup();
  for (
    const bad of [
      {},
      wordCounter({ name: "Bad Name" }),
      wordCounter({ tests: [] }),
      wordCounter({ input_schema: { type: 42 } }),
    ]
  ) {
    assert.throws(() => s.lifecycle.propose(s.pid, bad), ValidationError);
  }
  const builtin = s.runtime.tools.builtins()[0]!.name;
  const oid = s.lifecycle.propose(s.pid, wordCounter({ name: builtin }));
  assert.equal((await s.lifecycle.validate(s.pid, oid)).ok, true);
  allow(s.runtime, s.pid, { type: "tool", key: builtin, scope: "exact" }, ["register"]);
  await assert.rejects(s.lifecycle.register(s.pid, oid), /built-in tool/);
});

Deno.test("JitToolLifecycle.restore() brings a registered tool back after a restart exactly as registered: editing the candidate changes nothing", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-jitlife-restart-" }));
  const workspace = join(root, "ws");
  Deno.mkdirSync(workspace);
  const db = join(root, "libos.db");
  const env = { get: (n: string) => (n === "XDG_STATE_HOME" ? join(root, "state") : undefined) };
  await using sandbox = new JitSandbox({ limits: { wallMs: 3_000 } });
  await using validator = new JitValidator();
  const open = async () => {
    const runtime = await createRuntime({ workspace, db, env });
    return { runtime, lifecycle: lifecycleFor(runtime, { sandbox, validator }) };
  };
  try {
    let pid: string;
    let oid: string;
    {
      const { runtime, lifecycle } = await open();
      pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
      allow(runtime, pid, { type: "tool", key: "count_words", scope: "exact" }, ["register"]);
      oid = lifecycle.propose(pid, wordCounter());
      assert.equal((await lifecycle.validate(pid, oid)).ok, true);
      await lifecycle.register(pid, oid);
      await runtime.close();
    }
    {
      const { runtime, lifecycle } = await open();
      assert.ok(!runtime.tools.visible(pid).some((t) => t.name === "count_words"));
      assert.deepEqual(lifecycle.restore(pid), ["count_words"]);
      assert.ok(runtime.tools.visible(pid).some((t) => t.name === "count_words"));
      // The process edits its candidate after registering it.
      const record = runtime.memory.read(pid, oid);
      const payload = record.payload as { candidate: ToolCandidate };
      const edited = { ...payload.candidate, source: "export function run() { return 1; }" };
      runtime.memory.update(pid, oid, {
        payload: JSON.parse(JSON.stringify({ ...payload, candidate: edited })),
      });
      await runtime.close();
    }
    {
      const { runtime, lifecycle } = await open();
      // The registered source comes back, not the edited one (which returns 1).
      assert.deepEqual(lifecycle.restore(pid), ["count_words"]);
      Deno.writeTextFileSync(join(workspace, "b.txt"), "one two");
      const tool = runtime.tools.visible(pid).find((t) => t.name === "count_words")!;
      const value = await tool.run(
        { path: "b.txt" },
        { pid, signal: new AbortController().signal } as Parameters<typeof tool.run>[1],
      );
      assert.deepEqual(value, { words: 2 });
      await runtime.close();
    }
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

/** A validated counter candidate's oid. */
async function validated(s: Awaited<ReturnType<typeof setup>>, candidate = wordCounter()) {
  const oid = s.lifecycle.propose(s.pid, candidate);
  assert.equal((await s.lifecycle.validate(s.pid, oid)).ok, true);
  return oid;
}

/** The pending request a rejected promise carried. */
async function pendingOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  assert.ok(error instanceof HumanPendingError, String(error));
  return error.request;
}

Deno.test("JitToolLifecycle.register() without the right asks a human for this exact source; approving registers it once", async () => {
  await using s = await setup("queue");
  const oid = await validated(s);
  const id = await pendingOf(s.lifecycle.register(s.pid, oid));
  const request = s.runtime.human.get(id);
  assert.equal(request.approval?.resource, "tool:count_words");
  assert.equal(request.approval?.right, "register");
  assert.ok(!s.runtime.tools.visible(s.pid).some((t) => t.name === "count_words"));
  s.runtime.human.approve(id, { by: "human:test" });
  assert.equal(await s.lifecycle.register(s.pid, oid), "count_words");
  assert.ok(s.runtime.tools.visible(s.pid).some((t) => t.name === "count_words"));
  // The approval was one-shot: registering again (after an exec dropped it) asks again.
  s.runtime.tools.dropJit(s.pid);
  await pendingOf(s.lifecycle.register(s.pid, oid));
});

Deno.test("JitToolLifecycle.register() attack: an approval of one source does not register an edited one", async () => {
  await using s = await setup("queue");
  const oid = await validated(s);
  const id = await pendingOf(s.lifecycle.register(s.pid, oid));
  s.runtime.human.approve(id, { by: "human:test" });
  // The process swaps the source after the human looked (and validates the new one).
  const swapped = await validated(
    s,
    wordCounter({
      source: `export async function run(args, libos) {
        const file = await libos.call("fs.read_text", { path: args.path });
        return { words: file.content.split(/\\s+/).filter(Boolean).length };
      }`,
    }),
  );
  const again = await pendingOf(s.lifecycle.register(s.pid, swapped));
  assert.notEqual(again, id, "the edited source needs its own approval");
  assert.ok(!s.runtime.tools.visible(s.pid).some((t) => t.name === "count_words"));
});

Deno.test("JitToolLifecycle.register() an approved registration runs when its parked process resumes", async () => {
  await using s = await setup("queue");
  const oid = await validated(s);
  const id = await pendingOf(s.lifecycle.register(s.pid, oid));
  s.runtime.human.approve(id, { by: "human:test" });
  const resolution = await s.runtime.human.resume(s.pid, id, new AbortController().signal);
  assert.equal(resolution.type, "outcome");
  assert.deepEqual(resolution.type === "outcome" && resolution.outcome, {
    ok: true,
    value: { registered: "count_words" },
  });
  assert.ok(s.runtime.tools.visible(s.pid).some((t) => t.name === "count_words"));
});

Deno.test("JitToolLifecycle.register() a capability that denies the right is final: no human is asked", async () => {
  await using s = await setup("queue");
  const oid = await validated(s);
  s.runtime.authority.capabilities.grant({
    subject: s.pid,
    resource: { type: "tool", key: "count_words", scope: "exact" },
    rights: ["register"],
    effect: "deny",
    issuer: "operator",
  });
  await assert.rejects(s.lifecycle.register(s.pid, oid), CapabilityDeniedError);
  assert.deepEqual(s.runtime.human.list(), []);
});

Deno.test("JitToolLifecycle.inherit() a fork gets its parent's JIT tool only when granted the register right, as its own stored copy", async () => {
  await using s = await setup();
  const oid = await validated(s);
  allow(s.runtime, s.pid, { type: "tool", key: "count_words", scope: "exact" }, ["register"]);
  assert.equal(await s.lifecycle.register(s.pid, oid), "count_words");
  const sees = (pid: string) => s.runtime.tools.visible(pid).some((t) => t.name === "count_words");
  // Not granted: a fork does not get it.
  const plain = s.runtime.processes.fork(s.pid, { goal: "plain" }).pid;
  assert.equal(sees(plain), false);
  // Granted: the child gets it, stored in its own namespace (it outlives the parent).
  const heir = s.runtime.processes.fork(s.pid, {
    goal: "heir",
    inherit: [{
      resource: { type: "tool", key: "count_words", scope: "exact" },
      rights: ["register"],
    }],
  }).pid;
  assert.equal(sees(heir), true);
  const copies = s.runtime.memory.list(heir, `process:${heir}`).filter((o) =>
    o.type === "jit.registration"
  );
  assert.equal(copies.length, 1);
  s.runtime.tools.dropJit(heir);
  assert.deepEqual(s.lifecycle.restore(heir), ["count_words"], "restored from its own copy");
  assert.deepEqual(s.lifecycle.restore(plain), []);
});

Deno.test("JitToolLifecycle.inherit() attack: a tool registered by a one-shot approval cannot be handed to a fork", async () => {
  await using s = await setup("queue");
  const oid = await validated(s);
  const id = await pendingOf(s.lifecycle.register(s.pid, oid));
  s.runtime.human.approve(id, { by: "human:test" });
  assert.equal(await s.lifecycle.register(s.pid, oid), "count_words");
  const before = s.runtime.processes.list({ parent: s.pid }).length;
  assert.throws(
    () =>
      s.runtime.processes.fork(s.pid, {
        goal: "heir",
        inherit: [{
          resource: { type: "tool", key: "count_words", scope: "exact" },
          rights: ["register"],
        }],
      }),
    CapabilityDeniedError,
  );
  assert.equal(s.runtime.processes.list({ parent: s.pid }).length, before, "no child was made");
});

Deno.test("A registered JIT tool that asks process.exit ends its process through the scheduler, as process_exit does", async () => {
  await using s = await setup();
  allow(s.runtime, s.pid, { type: "tool", key: "finisher", scope: "exact" }, ["register"]);
  const oid = s.lifecycle.propose(s.pid, {
    name: "finisher",
    description: "Finish the process.",
    input_schema: { type: "object" },
    output_schema: {},
    source: `export async function run(args, libos) {
      await libos.call("process.exit", { message: "done by a JIT tool" });
      return "bye";
    }`,
    tests: [{
      name: "exits",
      args: {},
      syscalls: [{ name: "process.exit", args: { message: "done by a JIT tool" } }],
      expect: "bye",
    }],
  });
  assert.equal((await s.lifecycle.validate(s.pid, oid)).ok, true);
  await s.lifecycle.register(s.pid, oid);
  let calls = 0;
  using scheduler = s.runtime.scheduler({
    async runQuantum(ctx) {
      calls++;
      await s.runtime.tools.invoke(
        ctx.process.pid,
        { name: "finisher", arguments: {} },
        ctx.signal,
      );
      throw new Error("the tool's exit did not end the quantum");
    },
  });
  await scheduler.runUntilIdle();
  const p = s.runtime.processes.get(s.pid);
  assert.equal(p.status, "exited");
  assert.equal(p.message, "done by a JIT tool");
  assert.equal(calls, 1);
});

Deno.test("A registered JIT tool is back in its process's table when the executor runs it after a restart", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-jit-exec-" }));
  const workspace = join(root, "ws");
  Deno.mkdirSync(workspace);
  Deno.writeTextFileSync(join(workspace, "a.txt"), "one two three four");
  const db = join(root, "libos.db");
  const env = { get: (n: string) => (n === "XDG_STATE_HOME" ? join(root, "state") : undefined) };
  await using sandbox = new JitSandbox({ limits: { wallMs: 5_000 } });
  await using validator = new JitValidator();
  try {
    let pid: string;
    {
      await using runtime = await createRuntime({ workspace, db, env });
      const lifecycle = lifecycleFor(runtime, { sandbox, validator });
      pid = runtime.processes.spawn({ goal: "count", image: "base-agent:v0" }).pid;
      allow(runtime, pid, { type: "tool", key: "count_words", scope: "exact" }, ["register"]);
      const oid = lifecycle.propose(pid, wordCounter());
      assert.equal((await lifecycle.validate(pid, oid)).ok, true);
      await lifecycle.register(pid, oid);
    }
    await using runtime = await createRuntime({ workspace, db, env });
    lifecycleFor(runtime, { sandbox, validator });
    const seen: string[][] = [];
    const inner = new ScriptedModel(parseSessionLog([
      '{"type":"model_turn","tool_calls":[{"name":"count_words","arguments":{"path":"a.txt"}}]}',
      '{"type":"model_turn","content":"counted"}',
    ].join("\n")));
    const model: ModelClient = {
      name: "spy",
      complete(request, signal) {
        seen.push(request.tools.map((t) => t.name));
        return inner.complete(request, signal);
      },
    };
    using scheduler = runtime.scheduler(executorFor(runtime, model));
    await scheduler.runUntilIdle();
    assert.ok(seen[0]!.includes("count_words"), "the model was shown the restored tool");
    const p = runtime.processes.get(pid);
    assert.equal(p.status, "exited", p.message ?? "");
    const invoked = runtime.audit.query({ pid, action: "jit.call", limit: 10 });
    assert.deepEqual(invoked.map((r) => r.decision), ["allow"]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
