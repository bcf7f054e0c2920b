/**
 * Parity (issues 12, 20, 22): each JIT syscall is a field of the built-in tool declaration it
 * mirrors (`tools/*.ts`), so the two surfaces share one schema object, one set of caps and one
 * declared primitive call; a syscall no tool mirrors is declared with the same type, with the
 * reason it has no tool. What is checked here is derived from the declarations, not kept by hand:
 * - at compile time (`deno check`), a syscall name no declaration holds is not a `SyscallName`,
 *   and a declaration cannot name a syscall it does not declare (the `@ts-expect-error` cases);
 * - every syscall resolves to exactly one declaration; a syscall's schema is its tool's own
 *   object (`===`) or, where the shape must differ, has the same or stricter caps;
 * - a tool and its syscall reach the same primitive method of the same runtime (every primitive
 *   method is wrapped with a recorder on the runtime's own instances).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { z } from "zod";
import { DEFAULT_SANDBOX_LIMITS } from "../jit/sandbox.ts";
import { MAX_SLEEP_MS } from "../runtime/primitives/clock.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import { LibOSSyscallSession, runtimeTargets } from "../jit/syscall_session.ts";
import { syscall, type ToolSpec } from "../runtime/broker/tool.ts";
import {
  CHILD_WAIT_MS_MAX,
  FETCH_TIMEOUT_MS_MAX,
  SHELL_TIMEOUT_MS_MAX,
  SLEEP_MS_MAX,
} from "../tools/caps.ts";
import { builtinToolSpecs, type SyscallName, syscallTable } from "../tools/mod.ts";

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
    "applyPatch",
    "glob",
    "grep",
    "stat",
  ], calls);
  record(clock, "clock", ["now", "wait"], calls);
  record(shell, "shell", ["run"], calls);
  record(net, "net", ["fetch"], calls);
  record(runtime.memory, "memory", [
    "create",
    "read",
    "readByName",
    "list",
    "update",
    "createNamespace",
  ], calls);
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

/**
 * Arguments to call each tool and its syscall with (the model's and a tool's), so both can be
 * seen reaching their primitive. Keyed by syscall name: a name no declaration holds does not
 * compile, and a syscall with a tool but no sample fails the test below.
 */
const SAMPLES: {
  readonly [K in SyscallName]?: readonly [Record<string, unknown>, Record<string, unknown>];
} = {
  "fs.read_text": [{ path: "a.txt" }, { path: "a.txt" }],
  "fs.write_text": [{ path: "b.txt", content: "x" }, { path: "c.txt", content: "x" }],
  "fs.list": [{ path: "." }, { path: "." }],
  "fs.make_dir": [{ path: "d1" }, { path: "d2" }],
  "fs.delete_file": [{ path: "gone1.txt", missing_ok: true }, {
    path: "gone2.txt",
    missing_ok: true,
  }],
  "fs.delete_dir": [{ path: "e1" }, { path: "e2" }],
  "fs.edit": [{ path: "a.txt", old_string: "hello", new_string: "hi" }, {
    path: "a.txt",
    old_string: "hi",
    new_string: "hello",
  }],
  "fs.apply_patch": [
    { patch: "*** Begin Patch\n*** Add File: p1.txt\n+x\n*** End Patch" },
    { patch: "*** Begin Patch\n*** Add File: p2.txt\n+x\n*** End Patch" },
  ],
  "fs.glob": [{ pattern: "**/*.txt" }, { pattern: "**/*.txt" }],
  "fs.grep": [{ text: "TODO" }, { text: "TODO" }],
  "clock.now": [{}, {}],
  "clock.sleep": [{ ms: 1 }, { ms: 1 }],
  "memory.create": [{ type: "note", payload: 1 }, { type: "note", payload: 1 }],
  "memory.read": [{ oid: "$obj" }, { oid: "$obj" }],
  "memory.read_by_name": [{ namespace: "$ns", name: "kept" }, { namespace: "$ns", name: "kept" }],
  "memory.list": [{}, {}],
  "memory.create_namespace": [{ namespace: "team1" }, { namespace: "team2" }],
  "human.output": [{ text: "hi" }, { text: "hi" }],
  "human.ask": [{ question: "q?" }, { question: "q?" }],
  "human.request_permission": [
    { resource: { type: "fs", path: "src", scope: "subtree" }, rights: ["write"], reason: "r" },
    { resource: { type: "fs", path: "src", scope: "subtree" }, rights: ["write"], reason: "r" },
  ],
  "shell.run": [{ argv: ["true"] }, { argv: ["true"] }],
  "net.fetch": [{ url: "http://127.0.0.1:9/" }, { url: "http://127.0.0.1:9/" }],
  "process.cwd": [{}, {}],
  "process.list": [{}, {}],
  "process.fork": [{ goal: "a" }, { goal: "b" }],
  "process.spawn_child": [{ image: "base-agent:v0", goal: "c" }, {
    image: "base-agent:v0",
    goal: "d",
  }],
  "process.wait": [{ pid: "$done" }, { pid: "$done", timeout_ms: 0 }],
  "process.signal": [{ pid: "$live", signal: "pause" }, { pid: "$live", signal: "resume" }],
  "process.merge": [{ pid: "$done" }, { pid: "$done" }],
};

/**
 * Syscalls whose effect is applied after the tool's result frame (the built-in ends or replaces
 * its process at once): they reach the process manager later, through `applyDeferred`.
 */
const APPLIED_LATER: readonly SyscallName[] = ["process.exit", "process.exec"];

/** Replaces `$done`, `$live`, `$obj` and `$ns` with the ids the test made. */
function bind(
  args: Record<string, unknown>,
  ids: Record<string, string>,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(args).map(([k, v]) => [k, typeof v === "string" && v in ids ? ids[v] : v]),
  );
}

Deno.test("Every JIT syscall resolves to exactly one declaration: the tool it mirrors, or a syscall-only declaration saying why it has none", () => {
  const table = syscallTable();
  const tools = new Set(builtinToolSpecs().map((t) => t.name));
  for (const [name, entry] of table) {
    assert.equal(entry.name, name);
    if (entry.tool === null) {
      assert.ok(entry.noTool && entry.noTool.length > 10, `${name} says why no tool mirrors it`);
    } else {
      assert.ok(tools.has(entry.tool), `${name}'s tool ${entry.tool} is a registered built-in`);
      assert.equal(entry.noTool, null, name);
    }
  }
  // Exactly the syscalls a tool could make before (issue 22), mcp.call (issue 25) and
  // fs.apply_patch (issue 27).
  assert.deepEqual([...table.keys()], [
    "fs.read_text",
    "fs.write_text",
    "fs.list",
    "fs.make_dir",
    "fs.delete_file",
    "fs.delete_dir",
    "fs.stat",
    "fs.edit",
    "fs.apply_patch",
    "fs.glob",
    "fs.grep",
    "clock.now",
    "clock.sleep",
    "memory.create",
    "memory.read",
    "memory.read_by_name",
    "memory.list",
    "memory.update",
    "memory.create_namespace",
    "human.output",
    "human.ask",
    "human.request_permission",
    "shell.run",
    "net.fetch",
    "mcp.call",
    "process.cwd",
    "process.list",
    "process.fork",
    "process.spawn_child",
    "process.wait",
    "process.signal",
    "process.merge",
    "process.exit",
    "process.exec",
    "image.list",
  ]);
  assert.deepEqual(
    [...table.values()].filter((e) => e.tool === null).map((e) => e.name),
    ["fs.stat", "memory.update", "mcp.call", "image.list"],
  );
});

Deno.test("A JIT syscall's schema is its tool's own schema object unless its shape must differ; then it is built from the same caps", () => {
  const tools = new Map(builtinToolSpecs().map((t) => [t.name, t]));
  const shared: string[] = [];
  const problems: string[] = [];
  for (const entry of syscallTable().values()) {
    if (entry.tool === null) continue;
    const tool = tools.get(entry.tool)!;
    if (entry.spec.args === tool.args) {
      shared.push(entry.name);
      continue;
    }
    for (
      const line of looser(flatten(jsonSchema(tool.args)), flatten(jsonSchema(entry.spec.args)))
    ) {
      problems.push(`${entry.name} vs ${entry.tool}: ${line}`);
    }
  }
  assert.deepEqual(problems, []);
  // Most share the very object; the rest differ in shape, each for a reason its declaration gives.
  assert.deepEqual(
    [...syscallTable().values()].filter((e) => e.tool !== null && !shared.includes(e.name)).map((
      e,
    ) => e.name),
    [
      "memory.create",
      "memory.read",
      "memory.read_by_name",
      "human.request_permission",
      "process.fork",
      "process.spawn_child",
      "process.wait",
    ],
  );
});

Deno.test("Each built-in tool and its JIT syscall reach the same primitive method (derived from the declarations)", async () => {
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
    const entries = [...syscallTable().values()].filter((e) => e.tool !== null);
    const tools = [...new Set(entries.map((e) => e.tool!))];
    const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0", tools }).pid;
    const session = new LibOSSyscallSession(runtime, runtimeTargets(runtime), pid, "parity");
    // Children to wait for, merge and signal, and an object to read (made before the recorders
    // count).
    const done = runtime.processes.fork(pid, { goal: "done" }).pid;
    runtime.processes.exit(done, { message: "finished" });
    const live = runtime.processes.fork(pid, { goal: "live" }).pid;
    const kept = runtime.memory.create(pid, {
      name: "kept",
      type: "note",
      payload: "x",
      provenance: { source: "model", label: "test", ref: null },
    });
    const ids = { $done: done, $live: live, $obj: kept.oid, $ns: kept.namespace };
    const signal = new AbortController().signal;
    const reached = new Map<string, string | undefined>();
    for (const entry of entries) {
      if (APPLIED_LATER.includes(entry.name)) continue;
      const sample = SAMPLES[entry.name];
      assert.ok(sample, `${entry.name}: give SAMPLES a row to call ${entry.tool} and it with`);
      const [toolArgs, syscallArgs] = sample;
      calls.length = 0;
      const result = await runtime.tools.invoke(pid, {
        name: entry.tool!,
        arguments: bind(toolArgs, ids),
      }, signal);
      // Refusals count too: what matters is which code decided.
      assert.ok(
        result.ok || result.error.code !== "invalid_arguments",
        `${entry.tool}: ${result.forModel}`,
      );
      const byTool = calls[0];
      assert.ok(byTool, `${entry.tool} reached a primitive`);
      calls.length = 0;
      await session.call(entry.name, bind(syscallArgs, ids), signal).catch(() => {});
      assert.equal(calls[0], byTool, `${entry.name} reached ${calls[0]}, ${entry.tool} ${byTool}`);
      reached.set(entry.name, byTool);
    }
    // Each syscall with a tool was exercised (two read one method: memory.read).
    assert.equal(reached.size, entries.length - APPLIED_LATER.length);
    assert.equal(reached.get("memory.read_by_name"), "memory.readByName");
    // Process control had its effects: the finished child was collected by a wait.
    assert.equal(runtime.processes.get(done).reaped, true);
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
});

Deno.test("deno check proves it: a syscall without a declaration, or a declaration missing the syscall it names, does not compile", () => {
  // @ts-expect-error "fs.chmod" is held by no declaration, so it is no SyscallName.
  const undeclared: SyscallName = "fs.chmod";
  const declared: SyscallName = "fs.stat";
  const None = z.object({}).strict();
  const base = { name: "probe", description: "A probe.", args: None, effects: [], run: () => null };
  // @ts-expect-error a declaration that names a syscall must declare it.
  const missing: ToolSpec<typeof None, "probe.run"> = { ...base, syscalls: {} };
  const extra: ToolSpec<typeof None, "probe.run"> = {
    ...base,
    syscalls: {
      "probe.run": syscall(None, () => null),
      // @ts-expect-error a syscall the declaration does not name cannot be slipped in.
      "probe.other": syscall(None, () => null),
    },
  };
  const smuggled: ToolSpec<typeof None> = {
    ...base,
    // @ts-expect-error a tool declared without syscalls cannot carry one.
    syscalls: { "probe.run": syscall(None, () => null) },
  };
  // The values exist only for the compiler; at run time they are what they say.
  assert.deepEqual([undeclared, declared], ["fs.chmod", "fs.stat"]);
  assert.ok(missing && extra && smuggled);
});

// ---------------------------------------------------------------- caps (issue 20)

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

Deno.test("The caps comparison finds a looser cap when there is one (control)", () => {
  const tools = new Map(builtinToolSpecs().map((t) => [t.name, t]));
  // Today's shell.run of an hour, before issue 20.
  const hour = z.object({ timeout_ms: z.number().int().min(1).max(3_600_000).optional() });
  assert.deepEqual(
    looser(flatten(jsonSchema(tools.get("run_shell_command")!.args)), flatten(jsonSchema(hour))),
    ["timeout_ms maximum 3600000 (the tool's is 600000)"],
  );
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
  for (const [name, entry] of syscallTable()) walk(jsonSchema(entry.spec.args), name);
  assert.deepEqual(unbounded, []);
});

Deno.test("The syscalls that wait on the host have their tool's cap, from tools/caps.ts, each within the call's serving bound", () => {
  const tools = new Map(builtinToolSpecs().map((t) => [t.name, t]));
  const maxOf = (schema: z.ZodType, field: string) =>
    flatten(jsonSchema(schema)).bounds.get(`${field}|maximum`);
  const WAITS: [string, SyscallName, string, number][] = [
    ["run_shell_command", "shell.run", "timeout_ms", SHELL_TIMEOUT_MS_MAX],
    ["sleep", "clock.sleep", "ms", SLEEP_MS_MAX],
    ["fetch_url", "net.fetch", "timeout_ms", FETCH_TIMEOUT_MS_MAX],
  ];
  const table = syscallTable();
  const argsOf = (name: SyscallName) => table.get(name)!.spec.args;
  for (const [tool, syscall, field, cap] of WAITS) {
    assert.equal(table.get(syscall)?.tool, tool, `${syscall} is declared by ${tool}`);
    assert.equal(maxOf(tools.get(tool)!.args, field), cap, `${tool}.${field}`);
    assert.equal(maxOf(argsOf(syscall), field), cap, syscall);
    assert.ok(cap <= DEFAULT_SANDBOX_LIMITS.maxServingMs, `${syscall} fits the serving bound`);
  }
  // The built-in wait parks its process; the syscall holds its call, so it has a cap of its own.
  assert.equal(maxOf(argsOf("process.wait"), "timeout_ms"), CHILD_WAIT_MS_MAX);
  assert.ok(CHILD_WAIT_MS_MAX <= DEFAULT_SANDBOX_LIMITS.maxServingMs);
  assert.equal(SLEEP_MS_MAX, MAX_SLEEP_MS, "the clock primitive's own bound");
});
