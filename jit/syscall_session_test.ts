import assert from "node:assert/strict";
import { join } from "node:path";
import {
  BudgetExhaustedError,
  CapabilityDeniedError,
  ValidationError,
} from "../runtime/base/errors.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { LibOSSyscallSession, runtimeTargets, type SyscallTargets } from "./syscall_session.ts";

/** What the spies say about any process. */
const CHILD = {
  pid: "pid_000000000002",
  parent: "pid_1",
  image: "base-agent:v0",
  status: "exited" as const,
  goal: "g",
  cwd: "src",
  result: null,
  message: null,
};

/** Targets whose every method records its name and arguments. */
function spies(): { targets: SyscallTargets; calls: [string, unknown[]][] } {
  const calls: [string, unknown[]][] = [];
  const spy = (name: string, value: unknown = null) => (...args: unknown[]) => {
    // The call's signal is passed along; the rest is compared.
    calls.push([
      name,
      args.filter((a) => !(a instanceof AbortSignal)).map((a) =>
        typeof a === "object" && a !== null && "signal" in a ? { ...a, signal: "<signal>" } : a
      ),
    ]);
    return value;
  };
  const async = (name: string, value: unknown = null) => (...args: unknown[]) =>
    Promise.resolve(spy(name, value)(...args));
  return {
    calls,
    targets: {
      fs: {
        readText: async("fs.readText"),
        writeText: async("fs.writeText"),
        listDir: async("fs.listDir"),
        makeDir: async("fs.makeDir"),
        deleteFile: async("fs.deleteFile"),
        deleteDir: async("fs.deleteDir"),
        stat: async("fs.stat"),
        editText: async("fs.editText"),
        glob: async("fs.glob"),
        applyPatch: async("fs.applyPatch"),
        grep: async("fs.grep"),
      },
      clock: { now: spy("clock.now"), wait: async("clock.wait") as () => Promise<void> },
      memory: {
        create: spy("memory.create"),
        read: spy("memory.read"),
        readByName: spy("memory.readByName"),
        list: spy("memory.list"),
        update: spy("memory.update"),
        merge: spy("memory.merge", { oid: "obj_9" }),
        createNamespace: spy("memory.createNamespace"),
      },
      human: {
        output: spy("human.output"),
        ask: async("human.ask", "blue") as () => Promise<string>,
        requestPermission: async("human.requestPermission", []) as () => Promise<string[]>,
        awaitResolution: async("human.awaitResolution") as () => Promise<never>,
      },
      shell: { run: async("shell.run") },
      net: { fetch: async("net.fetch") },
      mcp: { call: async("mcp.call") },
      processes: {
        find: spy("processes.find", CHILD) as () => typeof CHILD,
        list: spy("processes.list", [CHILD]) as () => (typeof CHILD)[],
        fork: spy("processes.fork", CHILD) as () => typeof CHILD,
        spawnChild: spy("processes.spawnChild", CHILD) as () => typeof CHILD,
        collectChild: spy("processes.collectChild", CHILD) as () => typeof CHILD,
        signal: spy("processes.signal", CHILD) as () => typeof CHILD,
        exit: spy("processes.exit"),
        exec: spy("processes.exec"),
        onFinished: () => () => {},
        chargeToolCall: () => undefined,
      },
      images: { list: spy("images.list", [{ id: "base-agent:v0" }]) as () => { id: string }[] },
    },
  };
}

Deno.test("LibOSSyscallSession.call() calls exactly one primitive method per syscall, bound to the caller", async () => {
  await using runtime = await createRuntime({ db: ":memory:" });
  const { targets, calls } = spies();
  const session = new LibOSSyscallSession(runtime, targets, "pid_1", "counter");
  const SELF = { kind: "process", pid: "pid_1" };
  const signal = new AbortController().signal;
  const table: [string, Record<string, unknown>, string, unknown[]][] = [
    ["fs.read_text", { path: "a", max_bytes: 9 }, "fs.readText", ["pid_1", {
      path: "a",
      maxBytes: 9,
    }]],
    ["fs.write_text", { path: "a", content: "x", overwrite: false }, "fs.writeText", ["pid_1", {
      path: "a",
      content: "x",
      overwrite: false,
      parents: true,
    }]],
    ["fs.read_text", { path: "a", offset: 3, limit: 2 }, "fs.readText", ["pid_1", {
      path: "a",
      offset: 3,
      limit: 2,
    }]],
    [
      "fs.edit",
      {
        path: "a",
        edits: [{ old_string: "x", new_string: "y" }, {
          old_string: "z",
          new_string: "w",
          replace_all: true,
        }],
      },
      "fs.editText",
      ["pid_1", {
        path: "a",
        edits: [{ oldString: "x", newString: "y" }, {
          oldString: "z",
          newString: "w",
          replaceAll: true,
        }],
      }],
    ],
    ["fs.list", {}, "fs.listDir", ["pid_1", { path: "." }]],
    ["fs.make_dir", { path: "d", parents: true }, "fs.makeDir", ["pid_1", {
      path: "d",
      parents: true,
    }]],
    ["fs.delete_file", { path: "a", missing_ok: true }, "fs.deleteFile", ["pid_1", {
      path: "a",
      missingOk: true,
    }]],
    ["fs.delete_dir", { path: "d", recursive: true }, "fs.deleteDir", ["pid_1", {
      path: "d",
      recursive: true,
    }]],
    ["fs.stat", { path: "a" }, "fs.stat", ["pid_1", { path: "a" }]],
    ["fs.edit", { path: "a", old_string: "x", new_string: "y" }, "fs.editText", ["pid_1", {
      path: "a",
      oldString: "x",
      newString: "y",
    }]],
    ["fs.apply_patch", { patch: "*** Begin Patch" }, "fs.applyPatch", ["pid_1", {
      patch: "*** Begin Patch",
    }]],
    ["fs.glob", { pattern: "**/*.ts", limit: 5 }, "fs.glob", ["pid_1", {
      glob: "**/*.ts",
      limit: 5,
    }]],
    ["fs.grep", { text: "TODO", ignore_case: true }, "fs.grep", ["pid_1", {
      text: "TODO",
      ignoreCase: true,
    }]],
    [
      "fs.grep",
      {
        pattern: "a|b",
        "-i": true,
        "-C": 2,
        output_mode: "count",
        head_limit: 0,
      },
      "fs.grep",
      ["pid_1", {
        pattern: "a|b",
        ignoreCase: true,
        before: 2,
        after: 2,
        mode: "count",
        maxMatches: 2000,
      }],
    ],
    ["clock.now", { time_zone: "UTC" }, "clock.now", ["pid_1", { timeZone: "UTC" }]],
    ["clock.sleep", { ms: 5 }, "clock.wait", ["pid_1", 5]],
    ["memory.create", { type: "note", payload: { a: 1 } }, "memory.create", ["pid_1", {
      type: "note",
      payload: { a: 1 },
      provenance: { source: "tool", label: "counter", ref: null },
    }]],
    ["memory.read", { oid: "obj_1" }, "memory.read", ["pid_1", "obj_1"]],
    ["memory.read_by_name", { namespace: "n", name: "x" }, "memory.readByName", [
      "pid_1",
      "n",
      "x",
    ]],
    ["memory.list", {}, "memory.list", ["pid_1", undefined]],
    ["memory.update", { oid: "obj_1", payload: 2 }, "memory.update", ["pid_1", "obj_1", {
      payload: 2,
    }]],
    ["memory.create_namespace", { namespace: "project" }, "memory.createNamespace", [
      "pid_1",
      "project",
    ]],
    ["human.output", { text: "hi" }, "human.output", ["pid_1", "hi"]],
    ["human.ask", { question: "colour?" }, "human.ask", ["pid_1", "colour?"]],
    [
      "human.request_permission",
      {
        resource: { type: "fs", path: "src", scope: "subtree" },
        rights: ["write"],
        reason: "edit",
      },
      "human.requestPermission",
      ["pid_1", {
        resource: { type: "fs", path: "src", scope: "subtree" },
        rights: ["write"],
        reason: "edit",
      }],
    ],
    ["shell.run", { argv: ["ls"], timeout_ms: 100 }, "shell.run", ["pid_1", {
      argv: ["ls"],
      timeoutMs: 100,
    }, { signal: "<signal>" }]],
    // Readable (HTML as Markdown) unless the call asks for the body raw, as fetch_url.
    ["net.fetch", { url: "https://x.example/", method: "GET" }, "net.fetch", ["pid_1", {
      url: "https://x.example/",
      method: "GET",
      readable: true,
    }, { signal: "<signal>" }]],
    ["mcp.call", { server: "fx", tool: "echo", arguments: { text: "hi" } }, "mcp.call", [
      "pid_1",
      { server: "fx", tool: "echo", arguments: { text: "hi" } },
      { signal: "<signal>" },
    ]],
    ["process.cwd", {}, "processes.find", ["pid_1"]],
    ["process.list", {}, "processes.list", [{ parent: "pid_1", limit: 1000 }]],
    ["process.fork", { goal: "half", budgets: { maxToolCalls: 5 } }, "processes.fork", [
      "pid_1",
      { goal: "half", budgets: { maxToolCalls: 5 } },
      SELF,
    ]],
    [
      "process.spawn_child",
      {
        image: "base-agent:v0",
        goal: "look",
        inherit: [{ resource: { type: "fs", path: "src", scope: "subtree" }, rights: ["read"] }],
      },
      "processes.spawnChild",
      ["pid_1", {
        image: "base-agent:v0",
        goal: "look",
        inherit: [{ resource: { type: "fs", path: "src", scope: "subtree" }, rights: ["read"] }],
      }, SELF],
    ],
    ["process.wait", { pid: "pid_000000000002" }, "processes.collectChild", [
      "pid_1",
      "pid_000000000002",
      SELF,
    ]],
    ["process.signal", { pid: "pid_000000000002", signal: "pause" }, "processes.signal", [
      "pid_000000000002",
      "pause",
      SELF,
    ]],
    ["process.merge", { pid: "pid_000000000002" }, "memory.merge", ["pid_1", "pid_000000000002"]],
    ["image.list", {}, "images.list", ["pid_1"]],
  ];
  for (const [name, args, method, expected] of table) {
    calls.length = 0;
    await session.call(name, args, signal);
    assert.equal(calls.length, 1, name);
    assert.equal(calls[0]![0], method, name);
    assert.deepEqual(calls[0]![1], expected, name);
  }
  assert.equal(await session.call("human.ask", { question: "q" }, signal), "blue");
  assert.equal(await session.call("process.cwd", {}, signal), "src");
  assert.deepEqual(await session.call("process.wait", {}, signal), CHILD);
  const audited = runtime.audit.query({ pid: "pid_1" }).filter((r) =>
    r.action.startsWith("syscall.")
  );
  assert.equal(audited.length, table.length + 3);
  assert.ok(audited.every((r) => r.decision === "allow" && r.resource === "tool:counter"));
});

Deno.test("LibOSSyscallSession.call() refuses unknown syscalls and bad arguments before any primitive, audited", async () => {
  await using runtime = await createRuntime({ db: ":memory:" });
  const { targets, calls } = spies();
  const session = new LibOSSyscallSession(runtime, targets, "pid_1", "t");
  const signal = new AbortController().signal;
  const bad: [string, Record<string, unknown>][] = [
    ["deno.run", {}],
    ["__proto__", {}],
    ["fs.read_text", {}],
    ["fs.read_text", { path: "a", extra: 1 }],
    ["shell.run", { argv: [] }],
    ["clock.sleep", { ms: 10_000_000 }],
    ["memory.create", { type: "x", payload: { f: 1n } }],
  ];
  for (const [name, args] of bad) {
    await assert.rejects(session.call(name, args, signal), ValidationError, name);
  }
  assert.deepEqual(calls, []);
  const denied = runtime.audit.query({ pid: "pid_1" }).filter((r) => r.decision === "deny");
  assert.equal(denied.length, bad.length);
});

Deno.test("LibOSSyscallSession.call() attack: syscalls are charged to the process's tool calls like the tools they mirror — refused ones too, unknown ones not — and the one past the budget never reaches its primitive", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-session-budget-" }));
  try {
    await using runtime = await createRuntime({
      workspace: root,
      db: ":memory:",
      mode: "workspace-write",
    });
    const pid = runtime.processes.spawn({
      goal: "g",
      image: "base-agent:v0",
      budgets: { maxToolCalls: 4 },
    }).pid;
    const session = new LibOSSyscallSession(runtime, runtimeTargets(runtime), pid, "writer");
    const signal = new AbortController().signal;
    const used = () => runtime.processes.get(pid).usage.toolCalls;
    await assert.rejects(session.call("no.such_call", {}, signal), ValidationError);
    assert.equal(used(), 0, "an unknown syscall is refused for free, as an unknown tool is");
    await session.call("fs.write_text", { path: "a.txt", content: "1" }, signal);
    await assert.rejects(session.call("fs.write_text", { path: 7 }, signal), ValidationError);
    await session.call("clock.now", {}, signal);
    await session.call("fs.write_text", { path: "b.txt", content: "2" }, signal);
    assert.equal(used(), 4, "each known syscall cost one tool call, the refused one included");
    await assert.rejects(
      session.call("fs.write_text", { path: "c.txt", content: "3" }, signal),
      BudgetExhaustedError,
    );
    assert.throws(() => Deno.statSync(join(root, "c.txt")), Deno.errors.NotFound);
    assert.equal(Deno.readTextFileSync(join(root, "b.txt")), "2", "control: b.txt was written");
    assert.equal(runtime.processes.get(pid).status, "failed");
    // One record per syscall: the filesystem primitive's for the two writes (carrying the
    // syscall), the session's for the two refused before any primitive.
    const writes = runtime.audit.query({ pid }).filter((r) =>
      r.action === "syscall.fs.write_text" ||
      (r.detail?.syscall === "fs.write_text" && r.decision !== "none")
    );
    assert.deepEqual(writes.map((r) => [r.action, r.decision, r.detail?.tool ?? r.authority]), [
      ["fs.write", "allow", "writer"],
      ["syscall.fs.write_text", "deny", "validation"],
      ["fs.write", "allow", "writer"],
      ["syscall.fs.write_text", "deny", "budget_exhausted"],
    ]);
    assert.equal(runtime.audit.query({ pid, action: "budget.exhausted" }).length, 1);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("LibOSSyscallSession.call() records a refused syscall with what refused it (the mode, the capability), not only the error's code", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-session-deny-" }));
  try {
    await using runtime = await createRuntime({ workspace: root, db: ":memory:", mode: "plan" });
    const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
    const session = new LibOSSyscallSession(runtime, runtimeTargets(runtime), pid, "writer");
    const signal = new AbortController().signal;
    await assert.rejects(
      session.call("fs.write_text", { path: "a.txt", content: "1" }, signal),
      CapabilityDeniedError,
    );
    assert.throws(() => Deno.statSync(join(root, "a.txt")), Deno.errors.NotFound);
    // The one record of the refused syscall: the primitive's deny, naming the syscall and tool.
    const records = runtime.audit.query({ pid }).filter((r) =>
      r.action === "syscall.fs.write_text" ||
      (r.detail?.syscall === "fs.write_text" && r.decision !== "none")
    );
    assert.equal(records.length, 1);
    const [record] = records;
    assert.equal(record?.action, "fs.write");
    assert.equal(record?.decision, "deny");
    assert.equal(record?.authority, "mode:plan");
    assert.deepEqual(record?.detail, { syscall: "fs.write_text", tool: "writer" });
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
