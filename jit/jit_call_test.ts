import assert from "node:assert/strict";
import { join } from "node:path";
import type { HumanMode } from "../runtime/human/human_channel.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import { runtimeTargets } from "./syscall_session.ts";
import { callJitTool } from "./jit_call.ts";
import { LibosError } from "../runtime/base/errors.ts";
import { exists } from "../tests/shell_fixture.ts";
import { JitSandbox, SandboxError } from "./sandbox.ts";
import { allow } from "../tests/authority_fixture.ts";

/**
 * The decision records a syscall left — its primitive's, each carrying the syscall in its
 * detail — as [action, decision, the tool named], oldest first.
 */
function syscallDecisions(
  runtime: Runtime,
  pid: string,
  syscall: string,
): [string, string, unknown][] {
  return runtime.audit.query({ pid, limit: 10_000 })
    .filter((r) => r.detail?.syscall === syscall && r.decision !== "none")
    .map((r) => [r.action, r.decision, r.detail?.tool]);
}

async function setup(mode: string, human: HumanMode = "none", wallMs = 2_000) {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-jitcall-" }));
  const runtime = await createRuntime({ workspace: root, db: ":memory:", mode, human });
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const sandbox = new JitSandbox({ limits: { wallMs } });
  return {
    root,
    runtime,
    pid,
    host: { core: runtime, targets: runtimeTargets(runtime), sandbox, ledger: runtime.ledger },
    async [Symbol.asyncDispose]() {
      await sandbox[Symbol.asyncDispose]();
      await runtime.close();
      Deno.removeSync(root, { recursive: true });
    },
  };
}

Deno.test("callJitTool() runs a tool under its process's capabilities: it reads a workspace file through the filesystem primitive", async () => {
  await using s = await setup("workspace-write");
  Deno.writeTextFileSync(join(s.root, "notes.txt"), "alpha\nbeta\n");
  const result = await callJitTool(s.host, {
    pid: s.pid,
    tool: "line_count",
    source: `export async function run(args, libos) {
      const file = await libos.call("fs.read_text", { path: args.path });
      return file.content.split("\\n").filter(Boolean).length;
    }`,
    args: { path: "notes.txt" },
  });
  assert.equal(result.value, 2);
  const audit = s.runtime.audit.query({ pid: s.pid });
  // One record for the syscall: the primitive's, carrying the syscall and the tool.
  assert.deepEqual(syscallDecisions(s.runtime, s.pid, "fs.read_text"), [
    ["fs.read", "allow", "line_count"],
  ]);
  assert.ok(!audit.some((r) => r.action === "syscall.fs.read_text"));
  assert.ok(
    audit.some((r) =>
      r.action === "jit.call" && r.decision === "allow" && r.authority === "syscalls:1"
    ),
  );
});

Deno.test("callJitTool() attack: a tool cannot write what its process may not — the primitive refuses, nothing is written", async () => {
  await using s = await setup("read-only");
  const result = await callJitTool(s.host, {
    pid: s.pid,
    tool: "vandal",
    source: `export async function run(args, libos) {
      try { await libos.call("fs.write_text", { path: "pwned.txt", content: "x" }); return "wrote"; }
      catch (e) { return e.code; }
    }`,
    args: {},
  });
  assert.equal(result.value, "capability_denied");
  assert.throws(() => Deno.statSync(join(s.root, "pwned.txt")), Deno.errors.NotFound);
  assert.deepEqual(syscallDecisions(s.runtime, s.pid, "fs.write_text"), [
    ["fs.write", "deny", "vandal"],
  ]);
  assert.deepEqual(s.runtime.audit.query({ pid: s.pid, action: "syscall.fs.write_text" }), []);
});

Deno.test("callJitTool() audits a breach with its code", async () => {
  await using s = await setup("workspace-write");
  await assert.rejects(
    callJitTool(s.host, {
      pid: s.pid,
      tool: "spinner",
      source: "export function run() { for (;;) {} }",
      args: {},
    }),
    (e: unknown) => e instanceof SandboxError && e.code === "timeout",
  );
  const record = s.runtime.audit.query({ pid: s.pid, action: "jit.call" }).at(-1);
  assert.equal(record?.decision, "deny");
  assert.equal(record?.authority, "timeout");
  assert.equal(record?.resource, "tool:spinner");
});

/** Waits (real time) until `find` returns something. */
async function eventually<T>(find: () => T | undefined, what: string): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const found = find();
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Lets the process delete in the workspace: workspace-write's ceiling then asks a human. */
function grantDelete(s: { runtime: { authority: Runtime["authority"] }; pid: string }): void {
  allow(s.runtime, s.pid, { type: "fs", path: ".", scope: "subtree" }, ["delete"]);
}

const DELETER = `export async function run(args, libos) {
  try { return await libos.call("fs.delete_file", { path: args.path }); }
  catch (e) { return { refused: e.code }; }
}`;

Deno.test("callJitTool() a queue-mode approval blocks inside the syscall, past the tool's wall time, and the approved action runs exactly once", async () => {
  // workspace-write asks a human before a delete; the sandbox allows 1 s of wall time.
  await using s = await setup("workspace-write", "queue", 1_000);
  Deno.writeTextFileSync(join(s.root, "old.txt"), "x");
  grantDelete(s);
  const call = callJitTool(s.host, {
    pid: s.pid,
    tool: "cleaner",
    source: DELETER,
    args: { path: "old.txt" },
  });
  const request = await eventually(() => s.runtime.human.list()[0], "the approval request");
  assert.equal(request.kind, "approval");
  // Longer than the tool's wall time: time blocked on the human does not count.
  await new Promise((resolve) => setTimeout(resolve, 1_300));
  assert.ok(exists(join(s.root, "old.txt")), "nothing is deleted before the human decides");
  s.runtime.human.approve(request.id, { by: "human:test" });
  const result = await call;
  assert.ok(!("refused" in (result.value as object)), JSON.stringify(result.value));
  assert.ok(!exists(join(s.root, "old.txt")), "the approved delete ran");
  assert.equal(s.runtime.human.get(request.id).status, "dispatched", "handed back once");
  // One record per decision on the syscall path: the primitive's ask, then its allow (the delete
  // ran once), each naming the syscall and the tool; the session adds none of its own.
  assert.deepEqual(syscallDecisions(s.runtime, s.pid, "fs.delete_file"), [
    ["fs.delete", "ask", "cleaner"],
    ["fs.delete", "allow", "cleaner"],
  ]);
  assert.deepEqual(s.runtime.audit.query({ pid: s.pid, action: "syscall.fs.delete_file" }), []);
  const action = s.runtime.ledger.list(s.pid).find((a) => a.kind === "jit.call");
  assert.equal(action?.status, "done");
});

Deno.test("callJitTool() a rejected approval reaches the tool as a typed error and nothing happens", async () => {
  await using s = await setup("workspace-write", "queue");
  Deno.writeTextFileSync(join(s.root, "keep.txt"), "x");
  grantDelete(s);
  const call = callJitTool(s.host, {
    pid: s.pid,
    tool: "cleaner",
    source: DELETER,
    args: { path: "keep.txt" },
  });
  const request = await eventually(() => s.runtime.human.list()[0], "the approval request");
  s.runtime.human.reject(request.id, { by: "human:test", reason: "no" });
  assert.deepEqual((await call).value, { refused: "approval_rejected" });
  assert.ok(exists(join(s.root, "keep.txt")));
});

Deno.test("callJitTool() human.ask in queue mode blocks until the answer, which the tool gets", async () => {
  await using s = await setup("workspace-write", "queue");
  const call = callJitTool(s.host, {
    pid: s.pid,
    tool: "asker",
    source: `export async function run(args, libos) {
      return "colour: " + await libos.call("human.ask", { question: "Which colour?" });
    }`,
    args: {},
  });
  const request = await eventually(() => s.runtime.human.list()[0], "the question");
  s.runtime.human.answer(request.id, { by: "human:test", text: "blue" });
  assert.equal((await call).value, "colour: blue");
});

Deno.test("callJitTool() an aborted call cancels the approval it was blocked on", async () => {
  await using s = await setup("workspace-write", "queue");
  Deno.writeTextFileSync(join(s.root, "keep.txt"), "x");
  grantDelete(s);
  const controller = new AbortController();
  const call = callJitTool(s.host, {
    pid: s.pid,
    tool: "cleaner",
    source: DELETER,
    args: { path: "keep.txt" },
    signal: controller.signal,
  });
  const request = await eventually(() => s.runtime.human.list()[0], "the approval request");
  controller.abort();
  await assert.rejects(call, (e: unknown) => e instanceof SandboxError && e.code === "aborted");
  assert.equal(s.runtime.human.get(request.id).status, "cancelled");
  assert.throws(() => s.runtime.human.approve(request.id, { by: "human:test" }));
  assert.ok(exists(join(s.root, "keep.txt")));
  assert.equal(s.runtime.ledger.list(s.pid).find((a) => a.kind === "jit.call")?.status, "failed");
});

Deno.test("callJitTool() process.fork and process.wait: the wait blocks until the child exits (clock paused) and returns it", async () => {
  await using s = await setup("workspace-write", "none", 1_000);
  const call = callJitTool(s.host, {
    pid: s.pid,
    tool: "forker",
    source: `export async function run(args, libos) {
      const child = await libos.call("process.fork", { goal: "half the work", budgets: { maxToolCalls: 3 } });
      const listed = await libos.call("process.list", {});
      const done = await libos.call("process.wait", { pid: child.pid });
      return { child: child.pid, listed: listed.map((p) => p.pid), status: done.status, result: done.result };
    }`,
    args: {},
  });
  const child = await eventually(
    () => s.runtime.processes.list({ parent: s.pid })[0],
    "the forked child",
  );
  assert.equal(child.goal, "half the work");
  assert.equal(child.budgets.maxToolCalls, 3);
  await new Promise((resolve) => setTimeout(resolve, 1_300));
  s.runtime.processes.exit(child.pid, { message: "done" });
  assert.deepEqual((await call).value, {
    child: child.pid,
    listed: [child.pid],
    status: "exited",
    result: null,
  });
  assert.equal(s.runtime.processes.get(child.pid).reaped, true, "the wait collected it");
});

Deno.test("callJitTool() attack: a tool cannot signal, wait for or merge a process that is not its child", async () => {
  await using s = await setup("workspace-write");
  const other = s.runtime.processes.spawn({ goal: "victim", image: "base-agent:v0" }).pid;
  const result = await callJitTool(s.host, {
    pid: s.pid,
    tool: "meddler",
    source: `export async function run(args, libos) {
      const codes = [];
      for (const [name, a] of [
        ["process.signal", { pid: args.other, signal: "terminate" }],
        ["process.wait", { pid: args.other, timeout_ms: 0 }],
        ["process.merge", { pid: args.other }],
      ]) {
        try { await libos.call(name, a); codes.push("allowed"); } catch (e) { codes.push(e.code); }
      }
      return codes;
    }`,
    args: { other },
  });
  assert.ok((result.value as string[]).every((c) => c !== "allowed"), String(result.value));
  assert.equal(s.runtime.processes.get(other).status, "runnable", "the victim is untouched");
});

Deno.test("callJitTool() process.exit applies after the result frame, and only when the call succeeds", async () => {
  await using s = await setup("workspace-write");
  const result = await callJitTool(s.host, {
    pid: s.pid,
    tool: "finisher",
    source: `export async function run(args, libos) {
      await libos.call("process.exit", { message: "finished by a tool" });
      // Still alive: the exit waits for this result.
      await libos.call("fs.write_text", { path: "after.txt", content: "still running" });
      return "bye";
    }`,
    args: {},
  });
  assert.equal(result.value, "bye");
  assert.deepEqual(result.applied, { kind: "exit", message: "finished by a tool" });
  assert.ok(exists(join(s.root, "after.txt")));
  const p = s.runtime.processes.get(s.pid);
  assert.equal(p.status, "exited");
  assert.equal(p.message, "finished by a tool");

  const second = s.runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  await assert.rejects(
    callJitTool(s.host, {
      pid: second,
      tool: "quitter",
      source: `export async function run(args, libos) {
        await libos.call("process.exit", {});
        throw new Error("changed my mind");
      }`,
      args: {},
    }),
    (e: unknown) => e instanceof SandboxError && e.code === "tool_error",
  );
  assert.equal(s.runtime.processes.get(second).status, "runnable", "a failed call exits nothing");
});

Deno.test("callJitTool() a deferred exec the manager refuses fails the call after its result, audited, process unchanged", async () => {
  await using s = await setup("workspace-write");
  await assert.rejects(
    callJitTool(s.host, {
      pid: s.pid,
      tool: "shapeshifter",
      source: `export async function run(args, libos) {
        await libos.call("process.exec", { image: "no-such-image:v9" });
        return "ok";
      }`,
      args: {},
    }),
    LibosError,
  );
  const p = s.runtime.processes.get(s.pid);
  assert.equal(p.image, "base-agent:v0");
  const record = s.runtime.audit.query({ pid: s.pid, action: "syscall.process.exec" }).at(-1);
  assert.equal(record?.decision, "deny");
  assert.equal(s.runtime.ledger.list(s.pid).find((a) => a.kind === "jit.call")?.status, "failed");
});
