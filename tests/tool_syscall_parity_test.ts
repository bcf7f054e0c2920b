/**
 * Parity (issue 12): each built-in tool and its matching JIT syscall reach the same primitive
 * method of the same runtime — so a tool the model calls and a syscall an agent-written tool makes
 * are decided by one piece of code, never two. Every primitive method is wrapped with a recorder
 * on the runtime's own instances (the broker and the syscall session hold those very objects).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import { LibOSSyscallSession, runtimeTargets } from "../runtime/syscall_session.ts";

/** Wraps each named method of `target` so that a call is recorded before it runs. */
function record(target: object, label: string, methods: readonly string[], calls: string[]): void {
  const o = target as Record<string, unknown>;
  for (const method of methods) {
    const original = o[method] as (...args: unknown[]) => unknown;
    o[method] = (...args: unknown[]) => {
      calls.push(`${label}.${method}`);
      return original.apply(target, args);
    };
  }
}

function instrument(runtime: Runtime): string[] {
  const calls: string[] = [];
  const { fs, clock, shell, net } = runtime.primitives;
  record(fs, "fs", [
    "readText",
    "writeText",
    "listDir",
    "makeDir",
    "deleteFile",
    "deleteDir",
    "editText",
    "glob",
    "grep",
  ], calls);
  record(clock, "clock", ["now", "wait"], calls);
  record(shell, "shell", ["run"], calls);
  record(net, "net", ["fetch"], calls);
  record(runtime.memory, "memory", ["create", "read", "list", "createNamespace"], calls);
  record(runtime.human, "human", ["output", "ask", "requestPermission"], calls);
  record(runtime.memory, "memory", ["merge"], calls);
  record(runtime.processes, "processes", [
    "find",
    "list",
    "fork",
    "spawnChild",
    "collectChild",
    "signal",
  ], calls);
  return calls;
}

/** [tool, its arguments, syscall, its arguments, the primitive method both reach]. */
const PARITY: readonly [
  string,
  Record<string, unknown>,
  string,
  Record<string, unknown>,
  string,
][] = [
  ["read_text_file", { path: "a.txt" }, "fs.read_text", { path: "a.txt" }, "fs.readText"],
  ["write_text_file", { path: "b.txt", content: "x" }, "fs.write_text", {
    path: "c.txt",
    content: "x",
  }, "fs.writeText"],
  ["read_directory", { path: "." }, "fs.list", { path: "." }, "fs.listDir"],
  ["write_directory", { path: "d1" }, "fs.make_dir", { path: "d2" }, "fs.makeDir"],
  ["delete_file", { path: "gone1.txt", missing_ok: true }, "fs.delete_file", {
    path: "gone2.txt",
    missing_ok: true,
  }, "fs.deleteFile"],
  ["delete_directory", { path: "e1" }, "fs.delete_dir", { path: "e2" }, "fs.deleteDir"],
  ["edit_file", { path: "a.txt", old_string: "hello", new_string: "hi" }, "fs.edit", {
    path: "a.txt",
    old_string: "hi",
    new_string: "hello",
  }, "fs.editText"],
  ["glob", { pattern: "**/*.txt" }, "fs.glob", { pattern: "**/*.txt" }, "fs.glob"],
  ["grep", { text: "TODO" }, "fs.grep", { text: "TODO" }, "fs.grep"],
  ["get_current_time", {}, "clock.now", {}, "clock.now"],
  ["sleep", { ms: 1 }, "clock.sleep", { ms: 1 }, "clock.wait"],
  ["create_memory_object", { type: "note", payload: 1 }, "memory.create", {
    type: "note",
    payload: 1,
  }, "memory.create"],
  ["list_memory_namespace", {}, "memory.list", {}, "memory.list"],
  ["create_memory_namespace", { namespace: "team1" }, "memory.create_namespace", {
    namespace: "team2",
  }, "memory.createNamespace"],
  ["human_output", { text: "hi" }, "human.output", { text: "hi" }, "human.output"],
  ["ask_human", { question: "q?" }, "human.ask", { question: "q?" }, "human.ask"],
  [
    "request_permission",
    {
      resource: { type: "fs", path: "src", scope: "subtree" },
      rights: ["write"],
      reason: "r",
    },
    "human.request_permission",
    {
      resource: { type: "fs", path: "src", scope: "subtree" },
      rights: ["write"],
      reason: "r",
    },
    "human.requestPermission",
  ],
  ["run_shell_command", { argv: ["true"] }, "shell.run", { argv: ["true"] }, "shell.run"],
  ["fetch_url", { url: "http://127.0.0.1:9/" }, "net.fetch", {
    url: "http://127.0.0.1:9/",
  }, "net.fetch"],
  ["get_working_directory", {}, "process.cwd", {}, "processes.find"],
  ["list_child_processes", {}, "process.list", {}, "processes.list"],
  ["fork_child_process", { goal: "a" }, "process.fork", { goal: "b" }, "processes.fork"],
  ["spawn_child_process", { image: "base-agent:v0", goal: "c" }, "process.spawn_child", {
    image: "base-agent:v0",
    goal: "d",
  }, "processes.spawnChild"],
  ["wait_child_process", { pid: "$done" }, "process.wait", {
    pid: "$done",
    timeout_ms: 0,
  }, "processes.collectChild"],
  ["signal_child_process", { pid: "$live", signal: "pause" }, "process.signal", {
    pid: "$live",
    signal: "resume",
  }, "processes.signal"],
  ["merge_child_memory", { pid: "$done" }, "process.merge", { pid: "$done" }, "memory.merge"],
];

/** Replaces `$done` and `$live` with the pids of a finished and a live child. */
function bind(
  args: Record<string, unknown>,
  pids: Record<string, string>,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(args).map(([k, v]) => [k, typeof v === "string" && v in pids ? pids[v] : v]),
  );
}

Deno.test("Each built-in tool and its JIT syscall reach the same primitive method (parity table)", async () => {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-parity-" }));
  try {
    Deno.writeTextFileSync(join(ws, "a.txt"), "hello TODO\n");
    Deno.mkdirSync(join(ws, "e1"));
    Deno.mkdirSync(join(ws, "e2"));
    await using runtime = await createRuntime({
      workspace: ws,
      db: ":memory:",
      mode: "full-access",
      wall: false,
    });
    const calls = instrument(runtime);
    const tools = PARITY.map(([tool]) => tool);
    const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0", tools }).pid;
    const session = new LibOSSyscallSession(runtime, runtimeTargets(runtime), pid, "parity");
    // Children to wait for, merge and signal (made before the recorders count).
    const done = runtime.processes.fork(pid, { goal: "done" }).pid;
    runtime.processes.exit(done, { message: "finished" });
    const live = runtime.processes.fork(pid, { goal: "live" }).pid;
    const pids = { $done: done, $live: live };
    const signal = new AbortController().signal;
    const covered = new Set<string>();
    for (const [tool, toolArgs, syscall, syscallArgs, method] of PARITY) {
      calls.length = 0;
      const result = await runtime.tools.invoke(pid, {
        name: tool,
        arguments: bind(toolArgs, pids),
      }, signal);
      // Refusals count too: what matters is which code decided.
      assert.ok(
        result.ok || result.error.code !== "invalid_arguments",
        `${tool}: ${result.forModel}`,
      );
      assert.equal(calls[0], method, `${tool} reached ${calls[0]}`);
      calls.length = 0;
      await session.call(syscall, bind(syscallArgs, pids), signal).catch(() => {});
      assert.equal(calls[0], method, `${syscall} reached ${calls[0]}`);
      covered.add(method);
    }
    assert.equal(covered.size, PARITY.length, "one row per primitive method");
    // Process control had its effects: the finished child was collected by a wait.
    assert.equal(runtime.processes.get(done).reaped, true);
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
});
