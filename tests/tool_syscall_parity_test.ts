/**
 * Parity (issues 12, 20): each built-in tool and its matching JIT syscall reach the same primitive
 * method of the same runtime — so a tool the model calls and a syscall an agent-written tool makes
 * are decided by one piece of code, never two. Every primitive method is wrapped with a recorder
 * on the runtime's own instances (the broker and the syscall session hold those very objects).
 * And they have the same caps: no syscall accepts an argument its tool refuses (how long it may
 * wait on the host, how much it may carry), compared on the JSON Schemas both derive.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { z } from "zod";
import { DEFAULT_SANDBOX_LIMITS } from "../jit/sandbox.ts";
import { MAX_SLEEP_MS } from "../runtime/primitives/clock.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import { LibOSSyscallSession, runtimeTargets, SYSCALL_ARGS } from "../jit/syscall_session.ts";
import {
  CHILD_WAIT_MS_MAX,
  FETCH_TIMEOUT_MS_MAX,
  SHELL_TIMEOUT_MS_MAX,
  SLEEP_MS_MAX,
} from "../tools/caps.ts";
import { builtinToolSpecs } from "../tools/mod.ts";

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

// ---------------------------------------------------------------- caps (issue 20)

/** Tool/syscall pairs beyond {@link PARITY}: the same arguments, applied later or by another read. */
const MORE_PAIRS: readonly [string, string][] = [
  ["read_memory_object", "memory.read"],
  ["read_memory_object", "memory.read_by_name"],
  ["process_exit", "process.exit"],
  ["exec_process", "process.exec"],
];

/** Syscalls no built-in tool mirrors, and why (anything else must have a pair). */
const NO_TOOL: Readonly<Record<string, string>> = {
  "fs.stat": "the model reads a file's facts through read_directory and read_text_file",
  "memory.update": "the model appends (append_memory_object); a tool may replace its payload",
  "image.list": "the model is told its image; a tool may list the ids it may read",
};

/** Every tool/syscall pair. */
function pairs(): [string, string][] {
  return [...PARITY.map(([tool, , syscall]) => [tool, syscall] as [string, string]), ...MORE_PAIRS];
}

const UPPER = ["maximum", "maxLength", "maxItems", "maxProperties"] as const;
const LOWER = ["minimum", "minLength", "minItems"] as const;

/** A node's bounds, an exclusive bound of an integer read as the inclusive one it means. */
function boundsOf(n: Record<string, unknown>): [string, number][] {
  const out: [string, number][] = [];
  for (const keyword of [...UPPER, ...LOWER]) {
    if (typeof n[keyword] === "number") out.push([keyword, n[keyword] as number]);
  }
  const step = n.type === "integer" ? 1 : 0;
  if (typeof n.exclusiveMaximum === "number") out.push(["maximum", n.exclusiveMaximum - step]);
  if (typeof n.exclusiveMinimum === "number") out.push(["minimum", n.exclusiveMinimum + step]);
  return out;
}

/** A schema's numeric bounds by field path (`argv[]`, `headers{}`, `resource.path`). */
interface Flat {
  readonly paths: Set<string>;
  /** `path|keyword` → the loosest value any branch of a union allows there. */
  readonly bounds: Map<string, number>;
}

function flatten(node: unknown, path = "", flat: Flat = { paths: new Set(), bounds: new Map() }) {
  if (typeof node !== "object" || node === null) return flat;
  const n = node as Record<string, unknown>;
  flat.paths.add(path);
  for (const [keyword, value] of boundsOf(n)) {
    const key = `${path}|${keyword}`;
    const seen = flat.bounds.get(key);
    const upper = (UPPER as readonly string[]).includes(keyword);
    flat.bounds.set(
      key,
      seen === undefined ? value : upper ? Math.max(seen, value) : Math.min(seen, value),
    );
  }
  for (const [name, child] of Object.entries((n.properties ?? {}) as Record<string, unknown>)) {
    flatten(child, path ? `${path}.${name}` : name, flat);
  }
  if (n.items) flatten(n.items, `${path}[]`, flat);
  if (typeof n.additionalProperties === "object") {
    flatten(n.additionalProperties, `${path}{}`, flat);
  }
  if (n.propertyNames) flatten(n.propertyNames, `${path}{key}`, flat);
  for (const union of ["anyOf", "oneOf", "allOf"]) {
    for (const branch of (n[union] ?? []) as unknown[]) flatten(branch, path, flat);
  }
  return flat;
}

function jsonSchema(schema: z.ZodType): unknown {
  return z.toJSONSchema(schema, { unrepresentable: "any" });
}

/** Where `syscall` accepts more than `tool` does on a field both have, one line each. */
function looser(tool: Flat, syscall: Flat): string[] {
  const found: string[] = [];
  for (const [key, limit] of tool.bounds) {
    const [path, keyword] = key.split("|") as [string, string];
    if (!syscall.paths.has(path)) continue;
    const mine = syscall.bounds.get(key);
    const upper = (UPPER as readonly string[]).includes(keyword);
    if (mine === undefined) {
      // A missing lower bound of 0 is no bound at all; anything else is looser.
      if (!upper && limit <= 0) continue;
      found.push(`${path} has no ${keyword} (the tool's is ${limit})`);
    } else if (upper ? mine > limit : mine < limit) {
      found.push(`${path} ${keyword} ${mine} (the tool's is ${limit})`);
    }
  }
  return found;
}

Deno.test("No JIT syscall accepts an argument its built-in tool refuses: every tool/syscall pair has the same or stricter caps", () => {
  const tools = new Map(builtinToolSpecs().map((t) => [t.name, t]));
  const problems: string[] = [];
  for (const [toolName, syscall] of pairs()) {
    const tool = tools.get(toolName);
    assert.ok(tool, `${toolName} is a built-in tool`);
    const args = SYSCALL_ARGS[syscall as keyof typeof SYSCALL_ARGS];
    assert.ok(args, `${syscall} is a syscall`);
    for (const line of looser(flatten(jsonSchema(tool.args)), flatten(jsonSchema(args)))) {
      problems.push(`${syscall} vs ${toolName}: ${line}`);
    }
  }
  assert.deepEqual(problems, []);
  // Control: the comparison finds a looser cap when there is one (today's shell.run of an hour).
  const hour = z.object({ timeout_ms: z.number().int().min(1).max(3_600_000).optional() });
  assert.deepEqual(
    looser(flatten(jsonSchema(tools.get("run_shell_command")!.args)), flatten(jsonSchema(hour))),
    ["timeout_ms maximum 3600000 (the tool's is 600000)"],
  );
});

Deno.test("Every JIT syscall is paired with its built-in tool or listed as having none, so a new one cannot skip the caps check", () => {
  const paired = new Set(pairs().map(([, syscall]) => syscall));
  for (const name of Object.keys(SYSCALL_ARGS)) {
    assert.ok(
      paired.has(name) !== Object.hasOwn(NO_TOOL, name),
      `${name}: pair it with its tool in PARITY or MORE_PAIRS, or say in NO_TOOL why it has none`,
    );
  }
});

Deno.test("Every JIT syscall argument is bounded: strings, arrays, records and numbers all have a cap", () => {
  const unbounded: string[] = [];
  const walk = (node: unknown, path: string) => {
    if (typeof node !== "object" || node === null) return;
    const n = node as Record<string, unknown>;
    // A JSON value (a payload) is bounded by the frame it arrives in, and by the primitive.
    if (typeof n.$ref === "string") return;
    if (n.type === "string" && n.enum === undefined && n.const === undefined) {
      if (typeof n.maxLength !== "number") unbounded.push(`${path}: a string without maxLength`);
    }
    if (n.type === "array" && typeof n.maxItems !== "number") {
      unbounded.push(`${path}: an array without maxItems`);
    }
    if (n.type === "number" || n.type === "integer") {
      const max = typeof n.maximum === "number" ? n.maximum : n.exclusiveMaximum;
      if (typeof max !== "number" || max >= Number.MAX_SAFE_INTEGER) {
        unbounded.push(`${path}: a number without a maximum`);
      }
    }
    for (const [name, child] of Object.entries((n.properties ?? {}) as Record<string, unknown>)) {
      walk(child, `${path}.${name}`);
    }
    if (n.items) walk(n.items, `${path}[]`);
    if (typeof n.additionalProperties === "object") walk(n.additionalProperties, `${path}{}`);
    if (n.propertyNames) walk(n.propertyNames, `${path}{key}`);
    for (const union of ["anyOf", "oneOf", "allOf"]) {
      for (const branch of (n[union] ?? []) as unknown[]) walk(branch, path);
    }
  };
  for (const [name, args] of Object.entries(SYSCALL_ARGS)) walk(jsonSchema(args), name);
  assert.deepEqual(unbounded, []);
});

Deno.test("The syscalls that wait on the host have their tool's cap, from tools/caps.ts, each within the call's serving bound", () => {
  const tools = new Map(builtinToolSpecs().map((t) => [t.name, t]));
  const maxOf = (schema: z.ZodType, field: string) =>
    flatten(jsonSchema(schema)).bounds.get(`${field}|maximum`);
  const WAITS: [string, string, string, number][] = [
    ["run_shell_command", "shell.run", "timeout_ms", SHELL_TIMEOUT_MS_MAX],
    ["sleep", "clock.sleep", "ms", SLEEP_MS_MAX],
    ["fetch_url", "net.fetch", "timeout_ms", FETCH_TIMEOUT_MS_MAX],
  ];
  for (const [tool, syscall, field, cap] of WAITS) {
    assert.equal(maxOf(tools.get(tool)!.args, field), cap, `${tool}.${field}`);
    assert.equal(maxOf(SYSCALL_ARGS[syscall as keyof typeof SYSCALL_ARGS], field), cap, syscall);
    assert.ok(cap <= DEFAULT_SANDBOX_LIMITS.maxServingMs, `${syscall} fits the serving bound`);
  }
  // The built-in wait parks its process; the syscall holds its call, so it has a cap of its own.
  assert.equal(maxOf(SYSCALL_ARGS["process.wait"], "timeout_ms"), CHILD_WAIT_MS_MAX);
  assert.ok(CHILD_WAIT_MS_MAX <= DEFAULT_SANDBOX_LIMITS.maxServingMs);
  assert.equal(SLEEP_MS_MAX, MAX_SLEEP_MS, "the clock primitive's own bound");
});
