import assert from "node:assert/strict";
import { join } from "node:path";
import { createRuntime } from "../runtime/runtime.ts";
import { runtimeTargets } from "../runtime/syscall_session.ts";
import { callJitTool } from "./jit_call.ts";
import { JitSandbox, SandboxError } from "./sandbox.ts";

async function setup(mode: string) {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-jitcall-" }));
  const runtime = await createRuntime({ workspace: root, db: ":memory:", mode });
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const sandbox = new JitSandbox({ limits: { wallMs: 2_000 } });
  return {
    root,
    runtime,
    pid,
    host: { core: runtime, targets: runtimeTargets(runtime), sandbox },
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
  assert.ok(audit.some((r) => r.action === "syscall.fs.read_text" && r.decision === "allow"));
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
  const denied = s.runtime.audit.query({ pid: s.pid }).filter((r) =>
    r.action === "syscall.fs.write_text"
  );
  assert.deepEqual(denied.map((r) => r.decision), ["deny"]);
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
