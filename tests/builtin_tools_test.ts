/**
 * Every built-in tool through the tool broker, from one table: each row runs the tool for real
 * (its result shape and its effect on the workspace, object memory, the human channel, a local
 * HTTP server, a real command, the process table, the image registry or the JIT sandbox; a call
 * that ends the quantum — wait, exit — is checked as the `QuantumEnd` the scheduler receives),
 * calls it from a process that lacks the authority (a typed refusal and no effect), and calls it
 * with arguments outside its schema (`invalid_arguments` naming the field, and the tool never
 * ran). A tool added to `builtinToolSpecs()` without a row fails the suite.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { JsonValue } from "../runtime/base/canonical_json.ts";
import { FakeClock } from "../runtime/base/clock.ts";
import { CapabilityDeniedError, HumanPendingError, QuantumEnd } from "../runtime/base/errors.ts";
import type { HumanDecision, HumanPrompt } from "../runtime/human/human_channel.ts";
import { HumanRequestStatus } from "../runtime/human/human_request.ts";
import { seededIds } from "../runtime/base/ids.ts";
import type { MemoryActor } from "../runtime/memory/object_memory.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import type { ToolResult } from "../runtime/broker/tool_broker.ts";
import { IMAGE_OPERATOR } from "../runtime/broker/image_registry.ts";
import type { ProcessDriver } from "../runtime/kernel/scheduler.ts";
import { JitSandbox, type JitToolLifecycle, JitValidator, lifecycleFor } from "../jit/mod.ts";
import { builtinToolSpecs } from "../tools/mod.ts";
import { parsePytest } from "../tools/pytest_log.ts";
import { allow } from "./authority_fixture.ts";
import { DOCS_READER, wordCounter } from "./sample_fixture.ts";

const NOW = Date.UTC(2026, 10, 29, 12);
const NEVER = new AbortController().signal;
/** `HumanChannel.list()` shows pending requests unless told otherwise. */
const EVERY_STATUS = HumanRequestStatus.options;

// ---------------------------------------------------------------- fixture

interface FixtureOptions {
  /** The one tool in the process's table. */
  readonly tool: string;
  /** Default `full-access`: a row's happy path needs every right a mode can give. */
  readonly mode?: "read-only" | "workspace-write" | "full-access";
  /** Default `interactive`, answered from `answers` (an unexpected prompt is rejected). */
  readonly human?: "interactive" | "queue" | "none";
  readonly answers?: readonly HumanDecision[];
}

interface Fixture extends AsyncDisposable {
  readonly runtime: Runtime;
  readonly clock: FakeClock;
  readonly ws: string;
  readonly pid: string;
  /** What the human was shown, one entry per prompt. */
  readonly prompted: string[];
  /** Calls the fixture's tool as the fixture's process. */
  call(args: unknown): Promise<ToolResult>;
  /** Another top-level process, with no tools (the owner of what the caller may not touch). */
  other(): string;
  /** A workspace path. */
  at(path: string): string;
  /** Closed with the fixture. */
  defer(resource: AsyncDisposable): void;
}

/** A prompt that answers from a script and records what it was shown. */
function scripted(answers: HumanDecision[], shown: string[]): HumanPrompt {
  return {
    decide(_request, rendered) {
      shown.push(rendered);
      return Promise.resolve(answers.shift() ?? { type: "reject", reason: "unexpected prompt" });
    },
  };
}

async function fixture(options: FixtureOptions): Promise<Fixture> {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-builtin-" }));
  const clock = new FakeClock(NOW);
  const prompted: string[] = [];
  const deferred: AsyncDisposable[] = [];
  let runtime: Runtime;
  try {
    runtime = await createRuntime({
      workspace: ws,
      db: ":memory:",
      mode: options.mode ?? "full-access",
      clock,
      ids: seededIds(12),
      human: options.human ?? "interactive",
      prompt: scripted([...(options.answers ?? [])], prompted),
      // No OS wall: these tests are about the tool path; tests/shell_wall_test.ts covers the wall.
      // The shell policy stays the run's default (allowlist_auto_else_ask), so a command runs
      // because a capability allows it, not because the level lets everything through.
      wall: false,
    });
  } catch (error) {
    Deno.removeSync(ws, { recursive: true });
    throw error;
  }
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0", tools: [options.tool] })
    .pid;
  return {
    runtime,
    clock,
    ws,
    pid,
    prompted,
    call: (args) =>
      runtime.tools.invoke(pid, { id: "call_1", name: options.tool, arguments: args }, NEVER),
    other: () => runtime.processes.spawn({ goal: "other", image: "base-agent:v0", tools: [] }).pid,
    at: (path) => join(ws, path),
    defer: (resource) => deferred.push(resource),
    async [Symbol.asyncDispose]() {
      try {
        for (const resource of deferred) await resource[Symbol.asyncDispose]();
        await runtime.close();
      } finally {
        Deno.removeSync(ws, { recursive: true });
      }
    },
  };
}

// ---------------------------------------------------------------- helpers

/** The value of a successful call (fails the test with the error otherwise). */
function value(result: ToolResult): JsonValue {
  if (!result.ok) assert.fail(`expected ok, got ${result.error.code}: ${result.error.message}`);
  return result.value;
}

/** The message of a refusal with `code` (fails the test otherwise). */
function refusal(result: ToolResult, code: string): string {
  if (result.ok) assert.fail(`expected ${code}, but it succeeded: ${result.forModel}`);
  assert.equal(result.error.code, code, result.error.message);
  return result.error.message;
}

/** A value's member (the tool results are JSON objects). */
function member(v: JsonValue, key: string): JsonValue | undefined {
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    assert.fail(`expected a JSON object, got ${JSON.stringify(v)}`);
  }
  return (v as { readonly [key: string]: JsonValue })[key];
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Every file and directory under `dir`, with each file's content. */
function tree(dir: string, prefix = ""): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of Deno.readDirSync(join(dir, prefix))) {
    const rel = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory) Object.assign(out, { [`${rel}/`]: "" }, tree(dir, rel));
    else out[rel] = Deno.readTextFileSync(join(dir, rel));
  }
  return out;
}

/**
 * Everything a tool could have changed: files, objects, human requests, grants, audited effects,
 * the process itself, its children, the images and the tools it sees.
 */
function snapshot(f: Fixture) {
  const p = f.runtime.processes.get(f.pid);
  return {
    process: { status: p.status, image: p.image, tools: p.tools, cwd: p.cwd, goal: p.goal },
    children: f.runtime.processes.list({ parent: f.pid })
      .map((c) => `${c.pid} ${c.status} reaped=${c.reaped}`),
    images: f.runtime.images.list(IMAGE_OPERATOR).map((i) => i.id),
    tools: f.runtime.tools.visible(f.pid).map((t) => t.name),
    files: tree(f.ws),
    // Observed as the operator: a listing by the process would itself be a decision, recorded.
    objects: f.runtime.memory.list("operator", `process:${f.pid}`)
      .map((o) => `${o.oid} v${o.version} ${o.bytes}`),
    requests: f.runtime.human.list({ statuses: EVERY_STATUS }).map((r) => `${r.id} ${r.status}`),
    capabilities: f.runtime.authority.capabilities.list(f.pid).map((c) => c.id),
    effects: f.runtime.audit.query({ pid: f.pid, limit: 1000 })
      .filter((r) => r.action !== "tool.invoke")
      .map((r) => `${r.action} ${r.resource} ${r.decision}`),
  };
}

/** Stores an object as `actor` (the test's setup, not through a tool). */
function stored(
  f: Fixture,
  actor: MemoryActor,
  input: { type: string; payload: JsonValue; name?: string; namespace?: string },
): string {
  return f.runtime.memory.create(actor, {
    ...input,
    provenance: { source: "model", label: "setup", ref: null },
  }).oid;
}

/** The byte length of a payload as object memory counts it (canonical JSON, UTF-8). */
function bytesOf(payload: JsonValue): number {
  return new TextEncoder().encode(JSON.stringify(payload)).length;
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Revokes every grant of `type` the process holds (e.g. the mode's workspace read). */
function revoke(f: Fixture, type: "fs" | "human" | "image"): void {
  const caps = f.runtime.authority.capabilities.list(f.pid).filter((c) => c.resource.type === type);
  assert.ok(caps.length > 0, `the process holds a ${type} grant to revoke`);
  for (const cap of caps) f.runtime.authority.capabilities.revoke(cap.id);
}

/** Grants an operator's allow on exactly this argv. */
function allowArgv(f: Fixture, argv: readonly string[]): void {
  f.runtime.authority.capabilities.grant({
    subject: f.pid,
    resource: { type: "shell", argv: [...argv], scope: "exact" },
    rights: ["execute"],
    effect: "allow",
    issuer: "operator",
  });
}

/** Whether this run may use the loopback network (`--allow-net=127.0.0.1`), as net_test.ts asks. */
function loopbackAllowed(): boolean {
  return Deno.permissions.querySync({ name: "net", host: "127.0.0.1" }).state === "granted";
}

interface LocalServer extends AsyncDisposable {
  readonly port: number;
  /** `METHOD path` of every request it received. */
  readonly seen: string[];
}

function localServer(): LocalServer {
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const url = new URL(request.url);
    seen.push(`${request.method} ${url.pathname}${url.search}`);
    return new Response("build #42: green", {
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  });
  return {
    port: server.addr.port,
    seen,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/** A grant of `connect` on exactly `127.0.0.1:<port>` (the one thing that unlocks loopback). */
function allowEndpoint(f: Fixture, port: number): void {
  f.runtime.authority.capabilities.grant({
    subject: f.pid,
    resource: { type: "net", key: `127.0.0.1:${port}`, scope: "exact" },
    rights: ["connect"],
    effect: "allow",
    issuer: "operator",
  });
}

// ---------------------------------------------------------------- processes, images, JIT tools

/** What a call that ends the quantum (wait, exit) hands the scheduler: its `QuantumEnd` outcome. */
async function quantumEnd(call: Promise<ToolResult>): Promise<QuantumEnd["outcome"]> {
  try {
    const result = await call;
    assert.fail(`expected the call to end the quantum, got ${result.forModel}`);
  } catch (error) {
    if (!(error instanceof QuantumEnd)) throw error;
    assert.equal(error.code, "quantum_end");
    return error.outcome;
  }
}

/** A child of the fixture's process (forked by the operator) that stored `payload` and exited naming it. */
function finishedChild(f: Fixture, payload: JsonValue): { pid: string; oid: string } {
  const pid = f.runtime.processes.fork(f.pid, { goal: "done" }).pid;
  const oid = stored(f, pid, { type: "finding", payload });
  f.runtime.processes.exit(pid, { result: oid });
  return { pid, oid };
}

/** Grants `image:<id>` write, as the operator (processes hold none by default). */
function allowImageWrite(f: Fixture, id: string): void {
  allow(f.runtime, f.pid, { type: "image", key: id, scope: "exact" }, ["write"]);
}

/** Attaches a JIT tool lifecycle (a real sandbox and validator, closed with the fixture). */
function attachJit(f: Fixture): JitToolLifecycle {
  const sandbox = new JitSandbox({ limits: { wallMs: 5000 } });
  const validator = new JitValidator();
  f.defer(validator);
  f.defer(sandbox);
  return lifecycleFor(f.runtime, { sandbox, validator });
}

/** The oid of a word counter the fixture's process proposed and that passed validation. */
async function validated(f: Fixture): Promise<string> {
  const jit = attachJit(f);
  const oid = jit.propose(f.pid, wordCounter());
  assert.equal((await jit.validate(f.pid, oid)).ok, true);
  return oid;
}

/** The process's tool candidates. */
function candidates(f: Fixture): string[] {
  return f.runtime.memory.list(f.pid).filter((o) => o.type === "jit.candidate").map((o) => o.oid);
}

/** The runtime's registration records in the process's namespace. */
function registrations(f: Fixture): JsonValue[] {
  return f.runtime.memory.records(`process:${f.pid}`, "jit.registration").map((r) => r.payload);
}

// ---------------------------------------------------------------- pytest logs

const ESC = "\x1b";
const red = (s: string) => `${ESC}[31m${s}${ESC}[0m`;
const bold = (s: string) => `${ESC}[1m${s}${ESC}[0m`;

/** A coloured pytest log, in the shape pytest 9 writes on a terminal. */
const PYTEST_LOG = [
  `${ESC}[1m============================= test session starts ==============================${ESC}[0m`,
  "platform linux -- Python 3.12.3, pytest-9.0.3, pluggy-1.6.0",
  "rootdir: /srv/project",
  `collected 14 items`,
  "",
  `tests/test_api.py ${ESC}[32m.${ESC}[0m${ESC}[32m.${ESC}[0m${ESC}[31mF${ESC}[0m${ESC}[32m.${ESC}[0m${ESC}[33ms${ESC}[0m${ESC}[32m.${ESC}[0m${ESC}[32m.${ESC}[0m${ESC}[32m [ 50%]${ESC}[0m`,
  `tests/test_db.py ${ESC}[32m.${ESC}[0m${ESC}[31mF${ESC}[0m${ESC}[32m.${ESC}[0m${ESC}[32m.${ESC}[0m${ESC}[32m.${ESC}[0m${ESC}[31mE${ESC}[0m${ESC}[31m [100%]${ESC}[0m`,
  "",
  `==================================== ERRORS ====================================`,
  `${red("_____________________ ERROR at setup of test_connection ______________________")}`,
  "    @pytest.fixture",
  "    def db():",
  `>       raise ConnectionError("db down")`,
  `${bold(red("E       ConnectionError: db down"))}`,
  `=================================== FAILURES ===================================`,
  `${red("_________________________________ test_status _________________________________")}`,
  "    def test_status():",
  ">       assert status() == 200",
  `${bold(red("E       assert 500 == 200"))}`,
  "----------------------------- Captured log call ------------------------------",
  "ERROR    app.api:api.py:31 upstream returned 500",
  `${ESC}[33m=============================== warnings summary ===============================${ESC}[0m`,
  "tests/test_db.py::test_pool",
  "  /srv/project/db.py:9: DeprecationWarning: pool_size is deprecated",
  `${ESC}[36m${ESC}[1m=========================== short test summary info ============================${ESC}[0m`,
  `${red("FAILED")} tests/test_api.py::${bold("test_status")} - assert 500 == 200`,
  `${red("FAILED")} tests/test_db.py::${
    bold("test_migrate")
  } - sqlite3.OperationalError: no such table: users`,
  `${red("ERROR")} tests/test_db.py::${bold("test_connection")} - ConnectionError: db down`,
  `${ESC}[31m=== ${ESC}[31m${ESC}[1m2 failed${ESC}[0m, ${ESC}[32m10 passed${ESC}[0m, ${ESC}[33m1 skipped${ESC}[0m, ${ESC}[33m1 warning${ESC}[0m${ESC}[31m in 0.52s${ESC}[0m${ESC}[31m ===${ESC}[0m`,
  "",
].join("\n");

const PYTEST_FAILURES = [
  { kind: "failed", test: "tests/test_api.py::test_status", message: "assert 500 == 200" },
  {
    kind: "failed",
    test: "tests/test_db.py::test_migrate",
    message: "sqlite3.OperationalError: no such table: users",
  },
  { kind: "error", test: "tests/test_db.py::test_connection", message: "ConnectionError: db down" },
];

// ---------------------------------------------------------------- the table

interface Row {
  readonly tool: string;
  /** Runs the tool for real: its exact result and its real effect. */
  readonly happy: () => Promise<void>;
  /** The same call without the authority: a typed refusal and no effect; or why there is none. */
  readonly denied: (() => Promise<void>) | { readonly skip: string };
  /** Arguments outside the schema, and the field the refusal must name. */
  readonly bad: {
    /** null: the tool takes no arguments, and the refusal names the unknown key instead. */
    readonly field: string | null;
    /** Sets the fixture up (so a call that ran would have an effect) and returns the arguments. */
    readonly args: (f: Fixture) => unknown;
  };
  /** Skipped when the run may not use the loopback network. */
  readonly loopback?: boolean;
}

const ROWS: readonly Row[] = [
  {
    tool: "append_memory_object",
    async happy() {
      await using f = await fixture({ tool: "append_memory_object" });
      const oid = stored(f, f.pid, { type: "todo", payload: ["write tests"] });
      const result = await f.call({ oid, item: "run them" });
      assert.deepEqual(value(result), {
        oid,
        namespace: `process:${f.pid}`,
        name: null,
        type: "todo",
        version: 2,
        bytes: bytesOf(["write tests", "run them"]),
      });
      const after = f.runtime.memory.read(f.pid, oid);
      assert.deepEqual(after.payload, ["write tests", "run them"]);
      assert.equal(after.info.version, 2);
      // Text appends to a string payload.
      const log = stored(f, f.pid, { type: "log", payload: "step 1;" });
      assert.equal(member(value(await f.call({ oid: log, item: " step 2;" })), "version"), 2);
      assert.equal(f.runtime.memory.read(f.pid, log).payload, "step 1; step 2;");
    },
    async denied() {
      await using f = await fixture({ tool: "append_memory_object" });
      const other = f.other();
      const oid = stored(f, other, { type: "plan", payload: ["secret plan"] });
      const message = refusal(await f.call({ oid, item: "hijacked" }), "capability_denied");
      assert.ok(!message.includes("secret plan"));
      const after = f.runtime.memory.read(other, oid);
      assert.deepEqual(after.payload, ["secret plan"]);
      assert.equal(after.info.version, 1);
    },
    bad: {
      field: "item",
      args: (f) => ({ oid: stored(f, f.pid, { type: "todo", payload: ["a"] }) }),
    },
  },
  {
    tool: "apply_patch",
    async happy() {
      await using f = await fixture({ tool: "apply_patch" });
      Deno.writeTextFileSync(f.at("app.ts"), "const port = 80;\n");
      const patch = [
        "*** Begin Patch",
        "*** Update File: app.ts",
        "-const port = 80;",
        "+const port = 8080;",
        "*** Add File: lib/util.ts",
        "+export const two = 2;",
        "*** End Patch",
      ].join("\n");
      assert.deepEqual(value(await f.call({ patch })), {
        format: "codex",
        files: [
          { path: "app.ts", status: "M", bytes: 19 },
          { path: "lib/util.ts", status: "A", bytes: 22 },
        ],
        unchanged: [],
        directoriesCreated: ["lib"],
      });
      assert.equal(Deno.readTextFileSync(f.at("app.ts")), "const port = 8080;\n");
      assert.equal(Deno.readTextFileSync(f.at("lib/util.ts")), "export const two = 2;\n");
    },
    async denied() {
      await using f = await fixture({ tool: "apply_patch", mode: "read-only" });
      Deno.writeTextFileSync(f.at("app.ts"), "const port = 80;\n");
      refusal(
        await f.call({
          patch: "*** Begin Patch\n*** Update File: app.ts\n-const port = 80;\n+x\n*** End Patch",
        }),
        "capability_denied",
      );
      assert.equal(Deno.readTextFileSync(f.at("app.ts")), "const port = 80;\n");
    },
    bad: { field: "patch", args: () => ({ patch: "" }) },
  },
  {
    tool: "ask_human",
    async happy() {
      {
        await using f = await fixture({
          tool: "ask_human",
          answers: [{ type: "answer", text: "release/2026-11" }],
        });
        const result = await f.call({ question: "Which branch should I deploy?" });
        assert.deepEqual(value(result), { answer: "release/2026-11" });
        assert.equal(f.prompted.length, 1);
        assert.ok(f.prompted[0]!.includes("Which branch should I deploy?"));
        assert.deepEqual(
          f.runtime.human.list({ pid: f.pid, statuses: EVERY_STATUS }).map((
            r,
          ) => [r.kind, r.status, r.text]),
          [["question", "answered", "Which branch should I deploy?"]],
        );
      }
      // In queue mode the call parks: the pending error reaches the caller (the scheduler).
      await using q = await fixture({ tool: "ask_human", human: "queue" });
      await assert.rejects(q.call({ question: "Which branch?" }), HumanPendingError);
      assert.deepEqual(
        q.runtime.human.list({ pid: q.pid, statuses: EVERY_STATUS }).map((
          r,
        ) => [r.kind, r.status, r.text]),
        [["question", "pending", "Which branch?"]],
      );
    },
    async denied() {
      await using f = await fixture({
        tool: "ask_human",
        answers: [{ type: "answer", text: "yes" }],
      });
      revoke(f, "human");
      refusal(await f.call({ question: "May I?" }), "capability_denied");
      assert.deepEqual(f.prompted, [], "no human was asked");
      assert.deepEqual(
        f.runtime.human.list({ pid: f.pid, statuses: EVERY_STATUS }),
        [],
        "no request stored",
      );
    },
    bad: { field: "question", args: () => ({ question: "" }) },
  },
  {
    tool: "checkpoint_create",
    async happy() {
      await using f = await fixture({ tool: "checkpoint_create" });
      stored(f, f.pid, { type: "plan", payload: ["step"] });
      const result = value(await f.call({ label: "before" })) as {
        checkpoint: { id: string; objects: number };
      };
      const [cp] = f.runtime.checkpoints.list(f.pid);
      assert.equal(result.checkpoint.id, cp?.id);
      assert.equal(cp?.label, "before");
      assert.equal(result.checkpoint.objects, cp?.objects.length);
      assert.ok(cp!.objects.some((o) => o.type === "plan"), "the plan object is kept");
    },
    denied: {
      skip:
        "a process checkpoints only itself, which needs no capability; the checkpoint grants nothing",
    },
    bad: { field: "label", args: () => ({ label: 5 }) },
  },
  {
    tool: "create_memory_namespace",
    async happy() {
      await using f = await fixture({ tool: "create_memory_namespace" });
      f.runtime.authority.capabilities.grant({
        subject: f.pid,
        resource: { type: "namespace", key: "team/", scope: "prefix" },
        rights: ["create"],
        effect: "allow",
        issuer: "operator",
      });
      const result = await f.call({ namespace: "team/notes" });
      assert.deepEqual(value(result), { namespace: "team/notes", created: true });
      assert.equal(f.runtime.store.getNamespace("team/notes")?.creator, f.pid);
      // Its creator owns it: it may store objects there.
      const oid = stored(f, f.pid, { type: "note", payload: "hi", namespace: "team/notes" });
      assert.deepEqual(f.runtime.memory.list(f.pid, "team/notes").map((o) => o.oid), [oid]);
    },
    async denied() {
      await using f = await fixture({ tool: "create_memory_namespace" });
      refusal(await f.call({ namespace: "team/notes" }), "capability_denied");
      assert.equal(f.runtime.store.getNamespace("team/notes"), undefined);
    },
    bad: { field: "namespace", args: () => ({ namespace: "" }) },
  },
  {
    tool: "create_memory_object",
    async happy() {
      await using f = await fixture({ tool: "create_memory_object" });
      const payload = { text: "remember the milk", priority: 2 };
      const result = await f.call({ type: "note", payload, name: "milk", tags: ["todo"] });
      const v = value(result);
      const oid = member(v, "oid");
      assert.ok(typeof oid === "string" && oid.startsWith("obj_"));
      assert.deepEqual(v, {
        oid,
        namespace: `process:${f.pid}`,
        name: "milk",
        type: "note",
        version: 1,
        bytes: bytesOf(payload),
      });
      const record = f.runtime.memory.read(f.pid, oid);
      assert.deepEqual(record.payload, payload);
      assert.deepEqual(record.info.metadata.tags, ["todo"]);
      assert.deepEqual(record.info.provenance, {
        source: "model",
        label: "create_memory_object",
        ref: null,
      });
      assert.equal(f.runtime.memory.readByName(f.pid, `process:${f.pid}`, "milk").info.oid, oid);
    },
    async denied() {
      await using f = await fixture({ tool: "create_memory_object" });
      const other = f.other();
      refusal(
        await f.call({ type: "note", payload: "planted", namespace: `process:${other}` }),
        "capability_denied",
      );
      assert.deepEqual(f.runtime.memory.list(other), [], "nothing planted in the other namespace");
    },
    bad: { field: "type", args: () => ({ type: "", payload: 1 }) },
  },
  {
    tool: "create_object_from_file",
    async happy() {
      await using f = await fixture({ tool: "create_object_from_file" });
      const content = "# Plan\n\nship the release on Friday\n";
      Deno.writeTextFileSync(f.at("plan.md"), content);
      const result = await f.call({ path: "plan.md", name: "plan" });
      const v = value(result);
      const oid = member(v, "oid");
      assert.ok(typeof oid === "string");
      assert.deepEqual(v, {
        oid,
        namespace: `process:${f.pid}`,
        name: "plan",
        type: "file",
        version: 1,
        bytes: bytesOf({ path: "plan.md", content }),
        path: "plan.md",
        truncated: false,
      });
      assert.ok(!result.forModel.includes("Friday"), "the content stays out of the result");
      const record = f.runtime.memory.read(f.pid, oid);
      assert.deepEqual(record.payload, { path: "plan.md", content });
      assert.deepEqual(record.info.provenance, {
        source: "file",
        label: "plan.md",
        ref: "plan.md",
      });
    },
    async denied() {
      await using f = await fixture({ tool: "create_object_from_file" });
      Deno.writeTextFileSync(f.at("plan.md"), "ship it");
      const other = f.other();
      refusal(
        await f.call({ path: "plan.md", namespace: `process:${other}` }),
        "capability_denied",
      );
      assert.deepEqual(f.runtime.memory.list(other), []);
    },
    bad: {
      field: "path",
      args: (f) => {
        Deno.writeTextFileSync(f.at("plan.md"), "ship it");
        return { path: "" };
      },
    },
  },
  {
    tool: "delete_directory",
    async happy() {
      await using f = await fixture({ tool: "delete_directory" });
      Deno.mkdirSync(f.at("build/out"), { recursive: true });
      Deno.writeTextFileSync(f.at("build/out/app.o"), "obj");
      Deno.writeTextFileSync(f.at("keep.txt"), "keep");
      const result = await f.call({ path: "build", recursive: true });
      assert.deepEqual(value(result), { path: "build", deleted: 3 });
      assert.deepEqual(tree(f.ws), { "keep.txt": "keep" });
    },
    async denied() {
      await using f = await fixture({ tool: "delete_directory", mode: "read-only" });
      Deno.mkdirSync(f.at("build"));
      Deno.writeTextFileSync(f.at("build/app.o"), "obj");
      refusal(await f.call({ path: "build", recursive: true }), "capability_denied");
      assert.deepEqual(tree(f.ws), { "build/": "", "build/app.o": "obj" });
    },
    bad: {
      field: "recursive",
      args: (f) => {
        Deno.mkdirSync(f.at("build"));
        return { path: "build", recursive: "yes" };
      },
    },
  },
  {
    tool: "delete_file",
    async happy() {
      await using f = await fixture({ tool: "delete_file" });
      Deno.writeTextFileSync(f.at("old.log"), "stale");
      assert.deepEqual(value(await f.call({ path: "old.log" })), {
        path: "old.log",
        deleted: true,
      });
      assert.ok(!exists(f.at("old.log")));
      // missing_ok: a file already gone is not an error.
      assert.deepEqual(value(await f.call({ path: "old.log", missing_ok: true })), {
        path: "old.log",
        deleted: false,
      });
      // A missing file is a failed precondition (not_found only where the process may know).
      assert.match(
        refusal(await f.call({ path: "old.log" }), "validation_failed"),
        /it does not exist/,
      );
    },
    async denied() {
      await using f = await fixture({ tool: "delete_file", mode: "read-only" });
      Deno.writeTextFileSync(f.at("old.log"), "stale");
      refusal(await f.call({ path: "old.log" }), "capability_denied");
      assert.equal(Deno.readTextFileSync(f.at("old.log")), "stale");
    },
    bad: {
      field: "missing_ok",
      args: (f) => {
        Deno.writeTextFileSync(f.at("old.log"), "stale");
        return { path: "old.log", missing_ok: 1 };
      },
    },
  },
  {
    tool: "echo",
    async happy() {
      await using f = await fixture({ tool: "echo" });
      const result = await f.call({ text: "ping ✓" });
      assert.deepEqual(value(result), { text: "ping ✓" });
      assert.equal(result.forModel, JSON.stringify({ ok: true, value: { text: "ping ✓" } }));
      assert.equal(f.runtime.memory.read(f.pid, result.object!).info.type, "tool.result");
    },
    denied: { skip: "no effect to deny: it returns its argument" },
    bad: { field: "text", args: () => ({ text: 5 }) },
  },
  {
    tool: "edit_file",
    async happy() {
      await using f = await fixture({ tool: "edit_file" });
      Deno.writeTextFileSync(f.at("app.ts"), 'const port = 80;\nconst host = "localhost";\n');
      const result = await f.call({ path: "app.ts", old_string: "= 80", new_string: "= 8080" });
      const edited = 'const port = 8080;\nconst host = "localhost";\n';
      assert.deepEqual(value(result), {
        path: "app.ts",
        edits: 1,
        replacements: 1,
        bytes: edited.length,
        sha256: await sha256(edited),
      });
      assert.equal(Deno.readTextFileSync(f.at("app.ts")), edited);
    },
    async denied() {
      await using f = await fixture({ tool: "edit_file", mode: "read-only" });
      Deno.writeTextFileSync(f.at("app.ts"), "const port = 80;\n");
      refusal(
        await f.call({ path: "app.ts", old_string: "80", new_string: "8080" }),
        "capability_denied",
      );
      assert.equal(Deno.readTextFileSync(f.at("app.ts")), "const port = 80;\n");
    },
    bad: {
      field: "old_string",
      args: (f) => {
        Deno.writeTextFileSync(f.at("app.ts"), "const port = 80;\n");
        return { path: "app.ts", old_string: 80, new_string: "x" };
      },
    },
  },

  {
    tool: "exec_process",
    async happy() {
      {
        await using f = await fixture({ tool: "exec_process" });
        const caps = f.runtime.authority.capabilities.list(f.pid).map((c) => c.id);
        assert.deepEqual(value(await f.call({ image: "coding-agent:v0", goal: "fix the bug" })), {
          pid: f.pid,
          parent: null,
          image: "coding-agent:v0",
          status: "runnable",
          goal: "fix the bug",
          cwd: ".",
          result: null,
          message: null,
        });
        const p = f.runtime.processes.get(f.pid);
        assert.equal(p.image, "coding-agent:v0");
        assert.deepEqual(
          p.tools,
          f.runtime.images.get(IMAGE_OPERATOR, "coding-agent:v0").defaultTools,
          "the image's tool table",
        );
        assert.deepEqual(
          f.runtime.authority.capabilities.list(f.pid).map((c) => c.id),
          caps,
          "exec never grants the new image's requirements",
        );
        // The new table has no exec_process: the process cannot call it again.
        refusal(await f.call({ image: "base-agent:v0" }), "tool_not_visible");
        assert.equal(f.runtime.processes.get(f.pid).image, "coding-agent:v0");
      }
      // A narrower table than the image's.
      await using f = await fixture({ tool: "exec_process" });
      assert.equal(
        member(
          value(await f.call({ image: "coding-agent:v0", tools: ["grep", "read_text_file"] })),
          "image",
        ),
        "coding-agent:v0",
      );
      assert.deepEqual(f.runtime.processes.get(f.pid).tools, ["grep", "read_text_file"]);
      assert.deepEqual(f.runtime.tools.visible(f.pid).map((t) => t.name), [
        "grep",
        "read_text_file",
      ]);
    },
    async denied() {
      {
        // Widening: the image does not list fork_child_process.
        await using f = await fixture({ tool: "exec_process" });
        const message = refusal(
          await f.call({
            image: "coding-agent:v0",
            tools: ["read_text_file", "fork_child_process"],
          }),
          "capability_denied",
        );
        assert.match(message, /fork_child_process/);
        const p = f.runtime.processes.get(f.pid);
        assert.deepEqual([p.image, p.tools], ["base-agent:v0", ["exec_process"]]);
      }
      // Without image read on the target.
      await using f = await fixture({ tool: "exec_process" });
      revoke(f, "image");
      refusal(await f.call({ image: "coding-agent:v0" }), "capability_denied");
      const p = f.runtime.processes.get(f.pid);
      assert.deepEqual([p.image, p.tools, p.goal], ["base-agent:v0", ["exec_process"], "g"]);
    },
    bad: { field: "goal", args: () => ({ image: "coding-agent:v0", goal: "" }) },
  },
  {
    tool: "fetch_url",
    loopback: true,
    async happy() {
      await using server = localServer();
      await using f = await fixture({ tool: "fetch_url" });
      allowEndpoint(f, server.port);
      const url = `http://127.0.0.1:${server.port}/status?job=42`;
      const v = value(await f.call({ url }));
      assert.equal(member(v, "url"), url);
      assert.equal(member(v, "status"), 200);
      assert.equal(member(v, "body"), "build #42: green");
      assert.equal(member(v, "bytes"), 16);
      assert.equal(member(v, "truncated"), false);
      assert.deepEqual(member(v, "redirects"), []);
      assert.equal(
        member(member(v, "headers") ?? {}, "content-type"),
        "text/plain; charset=utf-8",
      );
      assert.deepEqual(member(v, "provenance"), { source: "web", label: "127.0.0.1", ref: url });
      assert.deepEqual(server.seen, ["GET /status?job=42"]);
    },
    async denied() {
      await using server = localServer();
      // full-access: no mode ceiling on the network, so only the missing grant refuses it.
      await using f = await fixture({ tool: "fetch_url" });
      refusal(
        await f.call({ url: `http://127.0.0.1:${server.port}/status` }),
        "capability_denied",
      );
      assert.deepEqual(server.seen, [], "the server saw no request");
    },
    bad: {
      field: "method",
      args: (f) => {
        const server = localServer();
        f.defer({
          async [Symbol.asyncDispose]() {
            await server[Symbol.asyncDispose]();
            assert.deepEqual(server.seen, [], "the server saw no request");
          },
        });
        allowEndpoint(f, server.port);
        return { url: `http://127.0.0.1:${server.port}/`, method: "TRACE" };
      },
    },
  },
  {
    tool: "fork_child_process",
    async happy() {
      await using f = await fixture({ tool: "fork_child_process" });
      Deno.mkdirSync(f.at("src"));
      f.runtime.processes.chdir(f.pid, "src");
      const v = value(
        await f.call({
          goal: "fix src only",
          budgets: { maxToolCalls: 5 },
          inherit: [{ resource: { type: "fs", path: "src", scope: "subtree" }, rights: ["write"] }],
        }),
      );
      const child = member(v, "pid");
      assert.ok(typeof child === "string" && child.startsWith("pid_"));
      assert.deepEqual(v, {
        pid: child,
        parent: f.pid,
        image: "base-agent:v0",
        status: "runnable",
        goal: "fix src only",
        cwd: "src",
        result: null,
        message: null,
      });
      const c = f.runtime.processes.get(child);
      assert.deepEqual(c.tools, ["fork_child_process"], "the parent's tools");
      assert.equal(c.budgets.maxToolCalls, 5);
      assert.deepEqual(f.runtime.processes.list({ parent: f.pid }).map((p) => p.pid), [child]);
      const write = (path: string) =>
        f.runtime.authority.decide(child, { resource: { type: "fs", path }, right: "write" })
          .effect;
      assert.equal(write("src/a.ts"), "allow", "the scope handed over");
      assert.notEqual(write("README.md"), "allow", "and nothing else");
      // Without a goal: the parent's.
      assert.equal(member(value(await f.call({})), "goal"), "g");
    },
    async denied() {
      await using f = await fixture({ tool: "fork_child_process" });
      const caps = f.runtime.authority.capabilities.list(f.pid).map((c) => c.id);
      refusal(
        await f.call({
          goal: "wider",
          inherit: [{ resource: { type: "net", key: "*", scope: "any" }, rights: ["connect"] }],
        }),
        "cannot_delegate",
      );
      assert.deepEqual(f.runtime.processes.list({ parent: f.pid }), [], "no child is left");
      assert.deepEqual(f.runtime.authority.capabilities.list(f.pid).map((c) => c.id), caps);
    },
    bad: {
      field: "budgets.maxToolCalls",
      args: () => ({ goal: "half", budgets: { maxToolCalls: -1 } }),
    },
  },
  {
    tool: "get_current_time",
    async happy() {
      await using f = await fixture({ tool: "get_current_time" });
      assert.deepEqual(value(await f.call({})), {
        iso: "2026-11-29T12:00:00.000Z",
        epoch_ms: NOW,
        time_zone: "UTC",
      });
      f.clock.advance(90_000);
      assert.deepEqual(value(await f.call({ time_zone: "Asia/Shanghai" })), {
        iso: "2026-11-29T20:01:30.000+08:00",
        epoch_ms: NOW + 90_000,
        time_zone: "Asia/Shanghai",
      });
      refusal(await f.call({ time_zone: "Mars/Olympus_Mons" }), "validation_failed");
      assert.equal(f.runtime.audit.query({ pid: f.pid, action: "clock.now" }).length, 2);
    },
    denied: { skip: "the clock needs no capability (clock.ts audits every use instead)" },
    bad: { field: "time_zone", args: () => ({ time_zone: "" }) },
  },
  {
    tool: "get_working_directory",
    async happy() {
      await using f = await fixture({ tool: "get_working_directory" });
      assert.deepEqual(value(await f.call({})), { cwd: "." });
      Deno.mkdirSync(f.at("src/lib"), { recursive: true });
      f.runtime.processes.chdir(f.pid, "src/lib");
      assert.deepEqual(value(await f.call({})), { cwd: "src/lib" });
    },
    denied: { skip: "it reads only the caller's own working directory; no other can be named" },
    // A model confusing it with set_working_directory.
    bad: { field: null, args: () => ({ path: "src" }) },
  },
  {
    tool: "glob",
    async happy() {
      await using f = await fixture({ tool: "glob" });
      Deno.mkdirSync(f.at("src/lib"), { recursive: true });
      Deno.writeTextFileSync(f.at("src/main.ts"), "");
      Deno.writeTextFileSync(f.at("src/lib/util.ts"), "");
      Deno.writeTextFileSync(f.at("src/lib/util.js"), "");
      Deno.writeTextFileSync(f.at("README.md"), "");
      Deno.utimeSync(f.at("src/main.ts"), 1_000, 1_000);
      Deno.utimeSync(f.at("src/lib/util.ts"), 2_000, 2_000);
      assert.deepEqual(value(await f.call({ pattern: "src/**/*.ts" })), {
        // The most recently modified first.
        matches: ["src/lib/util.ts", "src/main.ts"],
        truncated: false,
        skipped: 0,
      });
      assert.deepEqual(member(value(await f.call({ pattern: "*.md" })), "matches"), ["README.md"]);
    },
    async denied() {
      await using f = await fixture({ tool: "glob" });
      Deno.mkdirSync(f.at("src"));
      Deno.writeTextFileSync(f.at("src/main.ts"), "");
      revoke(f, "fs");
      // Documented (tools/files.ts): directories the process may not read are not entered —
      // the call succeeds with nothing listed and the directory counted as skipped.
      assert.deepEqual(value(await f.call({ pattern: "**/*.ts" })), {
        matches: [],
        truncated: false,
        skipped: 1,
      });
    },
    bad: { field: "pattern", args: () => ({ pattern: "" }) },
  },
  {
    tool: "grep",
    async happy() {
      await using f = await fixture({ tool: "grep" });
      Deno.mkdirSync(f.at("src"));
      Deno.writeTextFileSync(f.at("src/a.ts"), "const a = 1;\n// TODO: handle errors\n");
      Deno.writeTextFileSync(f.at("src/b.ts"), "// todo lower case\n");
      Deno.writeTextFileSync(f.at("notes.md"), "TODO write docs\n");
      // A secret-bearing file is skipped unasked, and its content never appears.
      Deno.writeTextFileSync(f.at(".env"), "TODO_TOKEN=hunter2\n");
      const all = await f.call({ text: "TODO" });
      assert.deepEqual(value(all), {
        matches: [
          { path: "notes.md", line: 1, text: "TODO write docs" },
          { path: "src/a.ts", line: 2, text: "// TODO: handle errors" },
        ],
        files: 3,
        skipped: 1,
        truncated: false,
      });
      assert.ok(!all.forModel.includes("hunter2"));
      assert.deepEqual(f.prompted, [], "no human was asked about the secret file");
      assert.deepEqual(
        member(value(await f.call({ text: "todo", ignore_case: true, glob: "src/**" })), "matches"),
        [
          { path: "src/a.ts", line: 2, text: "// TODO: handle errors" },
          { path: "src/b.ts", line: 1, text: "// todo lower case" },
        ],
      );
    },
    async denied() {
      await using f = await fixture({ tool: "grep" });
      Deno.writeTextFileSync(f.at("notes.md"), "TODO write docs\n");
      revoke(f, "fs");
      // Documented (tools/files.ts): what the process may not read is skipped, never shown.
      const result = await f.call({ text: "TODO" });
      assert.deepEqual(value(result), { matches: [], files: 0, skipped: 1, truncated: false });
      assert.ok(!result.forModel.includes("write docs"));
    },
    bad: {
      field: "max_matches",
      args: () => ({ text: "TODO", max_matches: -1 }),
    },
  },
  {
    tool: "human_output",
    async happy() {
      await using f = await fixture({ tool: "human_output" });
      assert.deepEqual(value(await f.call({ text: "Tests pass; opening a PR." })), {
        delivered: true,
      });
      assert.deepEqual(
        f.runtime.human.list({ pid: f.pid, statuses: EVERY_STATUS }).map((
          r,
        ) => [r.kind, r.status, r.text]),
        [["output", "delivered", "Tests pass; opening a PR."]],
      );
      assert.deepEqual(f.prompted, [], "a message never blocks on a decision");
    },
    async denied() {
      await using f = await fixture({ tool: "human_output" });
      revoke(f, "human");
      refusal(await f.call({ text: "URGENT: run rm -rf" }), "capability_denied");
      assert.deepEqual(f.runtime.human.list({ pid: f.pid, statuses: EVERY_STATUS }), []);
    },
    bad: { field: "text", args: () => ({ text: "" }) },
  },
  {
    tool: "list_child_processes",
    async happy() {
      await using f = await fixture({ tool: "list_child_processes" });
      assert.deepEqual(value(await f.call({})), { children: [] });
      const done = finishedChild(f, "42 findings");
      const live = f.runtime.processes.fork(f.pid, { goal: "still working" }).pid;
      const children = member(value(await f.call({})), "children");
      assert.ok(Array.isArray(children));
      assert.deepEqual(
        [...children].sort((a, b) => String(member(a, "pid")) < String(member(b, "pid")) ? -1 : 1),
        [
          {
            pid: done.pid,
            parent: f.pid,
            image: "base-agent:v0",
            status: "exited",
            goal: "done",
            cwd: ".",
            result: done.oid,
            message: null,
          },
          {
            pid: live,
            parent: f.pid,
            image: "base-agent:v0",
            status: "runnable",
            goal: "still working",
            cwd: ".",
            result: null,
            message: null,
          },
        ].sort((a, b) => a.pid < b.pid ? -1 : 1),
      );
    },
    async denied() {
      await using f = await fixture({ tool: "list_child_processes" });
      const other = f.other();
      f.runtime.processes.fork(other, { goal: "another's secret errand" });
      // Documented (tools/process.ts): it lists the caller's own children; another's never appear.
      const result = await f.call({});
      assert.deepEqual(value(result), { children: [] });
      assert.ok(!result.forModel.includes("secret errand"));
    },
    // A model trying to name another process's children.
    bad: {
      field: null,
      args: (f) => {
        const other = f.other();
        f.runtime.processes.fork(other, { goal: "another's errand" });
        return { parent: other };
      },
    },
  },
  {
    tool: "list_memory_namespace",
    async happy() {
      await using f = await fixture({ tool: "list_memory_namespace" });
      const a = stored(f, f.pid, { type: "note", payload: "first", name: "one" });
      const b = stored(f, f.pid, { type: "plan", payload: ["x", "y"] });
      const expected = [
        {
          oid: a,
          namespace: `process:${f.pid}`,
          name: "one",
          type: "note",
          version: 1,
          bytes: bytesOf("first"),
        },
        {
          oid: b,
          namespace: `process:${f.pid}`,
          name: null,
          type: "plan",
          version: 1,
          bytes: bytesOf(["x", "y"]),
        },
      ].sort((x, y) => x.oid < y.oid ? -1 : 1);
      assert.deepEqual(value(await f.call({})), { objects: expected });
      // The first call's own tool.result is listed now too (a tool.result is never a payload).
      const now = f.runtime.memory.list(f.pid).map((o) => ({
        oid: o.oid,
        namespace: o.namespace,
        name: o.name,
        type: o.type,
        version: o.version,
        bytes: o.bytes,
      }));
      assert.equal(now.length, 3);
      assert.deepEqual(value(await f.call({ namespace: `process:${f.pid}` })), { objects: now });
    },
    async denied() {
      await using f = await fixture({ tool: "list_memory_namespace" });
      const other = f.other();
      stored(f, other, { type: "note", payload: "private", name: "diary" });
      const result = await f.call({ namespace: `process:${other}` });
      refusal(result, "capability_denied");
      assert.ok(!result.forModel.includes("diary"), "no name leaked");
    },
    bad: { field: "namespace", args: () => ({ namespace: 5 }) },
  },
  {
    tool: "load_image_from_yaml",
    async happy() {
      await using f = await fixture({ tool: "load_image_from_yaml" });
      allowImageWrite(f, "docs-reader:v1");
      assert.deepEqual(value(await f.call({ yaml: DOCS_READER })), {
        id: "docs-reader:v1",
        default_tools: ["read_text_file", "read_directory", "ask_human"],
      });
      const image = f.runtime.images.get(IMAGE_OPERATOR, "docs-reader:v1");
      assert.equal(image.description, "Reads the docs folder and answers questions.");
      assert.equal(image.safety.maxMode, "read-only");
      // Loading it again needs replace; with it, the new text is stored.
      refusal(await f.call({ yaml: DOCS_READER }), "validation_failed");
      const edited = DOCS_READER.replace("Reads the docs folder", "Reads docs");
      assert.equal(
        member(value(await f.call({ yaml: edited, replace: true })), "id"),
        "docs-reader:v1",
      );
      assert.equal(
        f.runtime.images.get(IMAGE_OPERATOR, "docs-reader:v1").description,
        "Reads docs and answers questions.",
      );
      // One record per decision: the second load was allowed, then failed its precondition.
      assert.deepEqual(
        f.runtime.audit.query({ pid: f.pid, action: "image.load" })
          .map((r) => [r.decision, r.detail?.failed ?? null]),
        [["allow", null], ["allow", "validation_failed"], ["allow", null]],
      );
      // An operator can now spawn it.
      assert.equal(
        f.runtime.processes.spawn({ goal: "read", image: "docs-reader:v1" }).image,
        "docs-reader:v1",
      );
    },
    async denied() {
      {
        // No image write (processes hold none by default).
        await using f = await fixture({ tool: "load_image_from_yaml" });
        refusal(await f.call({ yaml: DOCS_READER }), "capability_denied");
        assert.ok(!f.runtime.images.list(IMAGE_OPERATOR).some((i) => i.id === "docs-reader:v1"));
      }
      // Write alone does not replace a built-in (that needs admin): what the operator spawns next
      // stays the operator's.
      await using f = await fixture({ tool: "load_image_from_yaml" });
      allowImageWrite(f, "base-agent:v0");
      const hijack = DOCS_READER.replace("id: docs-reader:v1", "id: base-agent:v0")
        .replace("name: docs-reader", "name: base-agent").replace("version: v1", "version: v0");
      const before = f.runtime.images.get(IMAGE_OPERATOR, "base-agent:v0");
      refusal(await f.call({ yaml: hijack, replace: true }), "capability_denied");
      assert.deepEqual(
        f.runtime.images.get(IMAGE_OPERATOR, "base-agent:v0"),
        before,
        "the built-in is unchanged",
      );
    },
    bad: {
      field: "replace",
      args: (f) => {
        allowImageWrite(f, "docs-reader:v1");
        return { yaml: DOCS_READER, replace: "yes" };
      },
    },
  },
  {
    tool: "merge_child_memory",
    async happy() {
      await using f = await fixture({ tool: "merge_child_memory" });
      const done = finishedChild(f, "42 findings");
      assert.throws(() => f.runtime.memory.read(f.pid, done.oid), CapabilityDeniedError);
      const merged = member(value(await f.call({ pid: done.pid })), "merged");
      assert.equal(member(merged ?? null, "oid"), done.oid);
      assert.equal(member(merged ?? null, "namespace"), `process:${done.pid}`);
      assert.equal(f.runtime.memory.read(f.pid, done.oid).payload, "42 findings");
    },
    async denied() {
      // Attack: a child names another process's object as its result, to have its parent take it.
      await using f = await fixture({ tool: "merge_child_memory" });
      const secret = stored(f, f.other(), { type: "secret", payload: "the launch code is 0000" });
      const child = f.runtime.processes.fork(f.pid, { goal: "forge" }).pid;
      f.runtime.processes.exit(child, { result: secret });
      const result = await f.call({ pid: child });
      refusal(result, "capability_denied");
      assert.ok(!result.forModel.includes("launch code"));
      assert.throws(() => f.runtime.memory.read(f.pid, secret), CapabilityDeniedError);
    },
    bad: { field: "pid", args: (f) => ({ pid: [finishedChild(f, "42 findings").pid] }) },
  },
  {
    tool: "parse_pytest_log",
    async happy() {
      await using f = await fixture({ tool: "parse_pytest_log" });
      assert.deepEqual(value(await f.call({ log: PYTEST_LOG })), {
        complete: true,
        counts: {
          passed: 10,
          failed: 2,
          errors: 0,
          skipped: 1,
          xfailed: 0,
          xpassed: 0,
          warnings: 1,
        },
        duration_s: 0.52,
        failures: PYTEST_FAILURES,
      });
    },
    denied: { skip: "no effect to deny: it only reads its argument" },
    bad: { field: "log", args: () => ({ log: 5 }) },
  },
  {
    tool: "process_exit",
    async happy() {
      await using f = await fixture({ tool: "process_exit" });
      const oid = stored(f, f.pid, { type: "report", payload: "all green" });
      // The call ends the quantum (rethrown for the scheduler); it does not exit the process.
      assert.deepEqual(await quantumEnd(f.call({ result: oid, message: "all done" })), {
        type: "exit",
        result: oid,
        message: "all done",
      });
      assert.deepEqual(await quantumEnd(f.call({})), { type: "exit" });
      let p = f.runtime.processes.get(f.pid);
      assert.deepEqual([p.status, p.result, p.message], ["runnable", null, null], "not yet");
      // The scheduler applies it.
      const driver: ProcessDriver = {
        async runQuantum(ctx) {
          assert.equal(ctx.process.pid, f.pid);
          await f.call({ result: oid, message: "all done" });
          throw new Error("process_exit returned instead of ending the quantum");
        },
      };
      using scheduler = f.runtime.scheduler(driver);
      await scheduler.runUntilIdle();
      p = f.runtime.processes.get(f.pid);
      assert.deepEqual([p.status, p.result, p.message], ["exited", oid, "all done"]);
    },
    denied: {
      skip: "a process may always end itself; its parent's merge checks the result it names",
    },
    bad: { field: "result", args: () => ({ result: "", message: "done" }) },
  },
  {
    tool: "propose_jit_tool",
    async happy() {
      await using f = await fixture({ tool: "propose_jit_tool" });
      attachJit(f);
      const v = value(await f.call(wordCounter()));
      const oid = member(v, "oid");
      assert.ok(typeof oid === "string");
      assert.deepEqual(v, { oid });
      const record = f.runtime.memory.read(f.pid, oid);
      assert.equal(record.info.type, "jit.candidate");
      assert.deepEqual(record.payload, { candidate: wordCounter() });
      assert.ok(
        !f.runtime.tools.visible(f.pid).some((t) => t.name === "count_words"),
        "nothing runs yet",
      );
    },
    async denied() {
      {
        // No lifecycle attached: a clear refusal.
        await using f = await fixture({ tool: "propose_jit_tool" });
        assert.match(
          refusal(await f.call(wordCounter()), "validation_failed"),
          /JIT tools are not enabled/,
        );
        assert.deepEqual(candidates(f), []);
      }
      // read-only: the process may not write even its own namespace.
      await using f = await fixture({ tool: "propose_jit_tool", mode: "read-only" });
      attachJit(f);
      refusal(await f.call(wordCounter()), "capability_denied");
      assert.deepEqual(candidates(f), []);
    },
    bad: {
      field: "tests",
      args: (f) => {
        attachJit(f);
        return wordCounter({ tests: [] });
      },
    },
  },
  {
    tool: "read_directory",
    async happy() {
      await using f = await fixture({ tool: "read_directory" });
      Deno.mkdirSync(f.at("src"));
      Deno.writeTextFileSync(f.at("b.txt"), "");
      Deno.writeTextFileSync(f.at("a.txt"), "");
      assert.deepEqual(value(await f.call({})), {
        path: ".",
        entries: [
          { name: "a.txt", type: "file" },
          { name: "b.txt", type: "file" },
          { name: "src", type: "directory" },
        ],
        truncated: false,
      });
      // limit: see the ignored test "read_directory … limit" below (a known bug).
      const cut = value(await f.call({ path: ".", limit: 1 }));
      assert.equal(member(cut, "truncated"), true);
      assert.equal((member(cut, "entries") as JsonValue[]).length, 1);
    },
    async denied() {
      await using f = await fixture({ tool: "read_directory" });
      Deno.writeTextFileSync(f.at("salaries.csv"), "");
      revoke(f, "fs");
      const result = await f.call({});
      refusal(result, "capability_denied");
      assert.ok(!result.forModel.includes("salaries"), "no entry name leaked");
    },
    bad: { field: "limit", args: () => ({ path: ".", limit: 0 }) },
  },
  {
    tool: "read_memory_object",
    async happy() {
      await using f = await fixture({ tool: "read_memory_object" });
      const oid = stored(f, f.pid, { type: "note", payload: { text: "hi" }, name: "greeting" });
      const expected = {
        oid,
        namespace: `process:${f.pid}`,
        name: "greeting",
        type: "note",
        version: 1,
        bytes: bytesOf({ text: "hi" }),
        payload: { text: "hi" },
      };
      assert.deepEqual(value(await f.call({ oid })), expected);
      assert.deepEqual(
        value(await f.call({ namespace: `process:${f.pid}`, name: "greeting" })),
        expected,
      );
    },
    async denied() {
      await using f = await fixture({ tool: "read_memory_object" });
      const oid = stored(f, f.other(), { type: "secret", payload: "the launch code is 0000" });
      const result = await f.call({ oid });
      refusal(result, "capability_denied");
      assert.ok(!result.forModel.includes("launch code"), "no payload leaked");
    },
    bad: { field: "oid", args: () => ({ oid: "" }) },
  },
  {
    tool: "read_text_file",
    async happy() {
      await using f = await fixture({ tool: "read_text_file" });
      Deno.writeTextFileSync(f.at("notes.txt"), "héllo world\n");
      // Numbered like `cat -n`, with a note of the lines shown.
      assert.deepEqual(value(await f.call({ path: "notes.txt" })), {
        path: "notes.txt",
        content: "     1\théllo world\n",
        lines: { first: 1, last: 1, total: 1 },
        size: 13,
        truncated: false,
        note: "Showing lines 1-1 of 1 (to the end of the file).",
      });
      // Cut at a code point boundary: 2 bytes would split "é".
      assert.deepEqual(value(await f.call({ path: "notes.txt", max_bytes: 2 })), {
        path: "notes.txt",
        content: "     1\th\n",
        lines: { first: 1, last: 1, total: null },
        size: 13,
        truncated: true,
        note:
          "Showing lines 1-1 of a 13-byte file (line 1 cut at max_bytes); to read on, call read_text_file with offset=2, or read again with a larger max_bytes.",
      });
    },
    async denied() {
      await using f = await fixture({ tool: "read_text_file" });
      Deno.writeTextFileSync(f.at("notes.txt"), "private notes");
      revoke(f, "fs");
      const result = await f.call({ path: "notes.txt" });
      refusal(result, "capability_denied");
      assert.ok(!result.forModel.includes("private notes"), "no content leaked");
    },
    bad: {
      field: "max_bytes",
      args: (f) => {
        Deno.writeTextFileSync(f.at("notes.txt"), "x");
        return { path: "notes.txt", max_bytes: 0 };
      },
    },
  },
  {
    tool: "register_jit_tool",
    async happy() {
      await using f = await fixture({ tool: "register_jit_tool" });
      const oid = await validated(f);
      allow(f.runtime, f.pid, { type: "tool", key: "count_words", scope: "exact" }, ["register"]);
      assert.deepEqual(value(await f.call({ oid })), { registered: "count_words" });
      assert.deepEqual(
        f.runtime.tools.visible(f.pid).map((t) => [t.name, t.origin]),
        [["register_jit_tool", "builtin"], ["count_words", "jit"]],
      );
      assert.equal(registrations(f).length, 1);
      assert.deepEqual(f.prompted, [], "the right needs no human");
      // It runs for real: in the sandbox, reading the file through the filesystem primitive.
      Deno.writeTextFileSync(f.at("a.txt"), "alpha beta gamma delta");
      const counted = await f.runtime.tools.invoke(
        f.pid,
        { name: "count_words", arguments: { path: "a.txt" } },
        NEVER,
      );
      assert.deepEqual(value(counted), { words: 4 });
    },
    async denied() {
      {
        // No register right and no human to approve it.
        await using f = await fixture({ tool: "register_jit_tool", human: "none" });
        const oid = await validated(f);
        assert.match(
          refusal(await f.call({ oid }), "approval_required"),
          /register right on tool:count_words/,
        );
        assert.ok(!f.runtime.tools.visible(f.pid).some((t) => t.name === "count_words"));
        assert.deepEqual(registrations(f), []);
      }
      // A human who rejects registers nothing.
      await using f = await fixture({
        tool: "register_jit_tool",
        answers: [{ type: "reject", reason: "not this tool" }],
      });
      const oid = await validated(f);
      refusal(await f.call({ oid }), "approval_rejected");
      assert.equal(f.prompted.length, 1);
      assert.ok(!f.runtime.tools.visible(f.pid).some((t) => t.name === "count_words"));
      assert.deepEqual(registrations(f), []);
    },
    // A validated candidate and a human who would approve: a call that ran would register it.
    bad: { field: "oid", args: async (f) => ({ oid: [await validated(f)] }) },
  },
  {
    tool: "request_permission",
    async happy() {
      const npm = {
        resource: { type: "net", key: "registry.npmjs.org" },
        right: "connect",
      } as const;
      const args = {
        resource: { type: "net", key: "registry.npmjs.org", scope: "exact" },
        rights: ["connect"],
        reason: "install the project's dependencies",
      };
      {
        await using f = await fixture({
          tool: "request_permission",
          answers: [{ type: "approve" }],
        });
        assert.equal(f.runtime.authority.decide(f.pid, npm).effect, "deny");
        const v = value(await f.call(args));
        const ids = member(v, "capabilities");
        assert.ok(Array.isArray(ids) && ids.length === 1 && typeof ids[0] === "string");
        assert.deepEqual(v, { capabilities: ids });
        const cap = f.runtime.authority.capabilities.get(ids[0]);
        assert.deepEqual(cap.resource, { type: "net", key: "registry.npmjs.org", scope: "exact" });
        assert.deepEqual(cap.rights, ["connect"]);
        assert.match(cap.issuer, /^human:hreq_/);
        assert.equal(f.runtime.authority.decide(f.pid, npm).effect, "allow");
        assert.equal(f.prompted.length, 1);
        assert.ok(f.prompted[0]!.includes("install the project's dependencies"));
      }
      // A human who rejects mints nothing.
      await using f = await fixture({
        tool: "request_permission",
        answers: [{ type: "reject", reason: "not today" }],
      });
      const before = f.runtime.authority.capabilities.list(f.pid).length;
      refusal(await f.call(args), "approval_rejected");
      assert.equal(f.runtime.authority.capabilities.list(f.pid).length, before);
      assert.equal(f.runtime.authority.decide(f.pid, npm).effect, "deny");
    },
    async denied() {
      await using f = await fixture({ tool: "request_permission", answers: [{ type: "approve" }] });
      revoke(f, "human");
      const before = f.runtime.authority.capabilities.list(f.pid).map((c) => c.id);
      refusal(
        await f.call({
          resource: { type: "net", key: "registry.npmjs.org", scope: "exact" },
          rights: ["connect"],
          reason: "install dependencies",
        }),
        "capability_denied",
      );
      assert.deepEqual(f.prompted, [], "no human was asked");
      assert.deepEqual(f.runtime.authority.capabilities.list(f.pid).map((c) => c.id), before);
    },
    bad: {
      field: "resource",
      // An fs resource names a path, not a key.
      args: () => ({
        resource: { type: "fs", key: "src", scope: "subtree" },
        rights: ["write"],
        reason: "edit the sources",
      }),
    },
  },
  {
    tool: "run_shell_command",
    async happy() {
      await using f = await fixture({ tool: "run_shell_command" });
      allowArgv(f, ["echo", "hi"]);
      allowArgv(f, ["touch", "made.txt"]);
      const echo = value(await f.call({ argv: ["echo", "hi"] }));
      const duration = member(echo, "durationMs");
      const executable = member(echo, "executable");
      assert.equal(typeof duration, "number");
      assert.match(String(executable), /^\/(usr\/)?bin\/echo$/);
      assert.deepEqual(echo, {
        exitCode: 0,
        signal: null,
        stdout: "hi\n",
        stderr: "",
        stdoutTruncated: false,
        stderrTruncated: false,
        timedOut: false,
        outputLeftOpen: false,
        durationMs: duration,
        argv: ["echo", "hi"],
        executable,
        cwd: ".",
        wall: false,
        highRisk: false,
        warnings: [],
      });
      assert.equal(member(value(await f.call({ argv: ["touch", "made.txt"] })), "exitCode"), 0);
      assert.equal(Deno.readTextFileSync(f.at("made.txt")), "", "the command really ran");
      assert.deepEqual(f.prompted, [], "a granted command runs without asking");
    },
    async denied() {
      {
        // read-only without the OS wall: the mode forbids every command.
        await using f = await fixture({ tool: "run_shell_command", mode: "read-only" });
        allowArgv(f, ["touch", "made.txt"]);
        refusal(await f.call({ argv: ["touch", "made.txt"] }), "capability_denied");
        assert.ok(!exists(f.at("made.txt")));
        assert.deepEqual(f.prompted, []);
      }
      // No grant under the default level: it asks, and a human who rejects stops it.
      await using f = await fixture({
        tool: "run_shell_command",
        answers: [{ type: "reject", reason: "no" }],
      });
      refusal(await f.call({ argv: ["touch", "made.txt"] }), "approval_rejected");
      assert.equal(f.prompted.length, 1);
      assert.ok(!exists(f.at("made.txt")));
    },
    bad: {
      field: "timeout_ms",
      args: (f) => {
        allowArgv(f, ["touch", "made.txt"]);
        return { argv: ["touch", "made.txt"], timeout_ms: 0 };
      },
    },
  },
  {
    tool: "set_working_directory",
    async happy() {
      await using f = await fixture({ tool: "set_working_directory" });
      Deno.mkdirSync(f.at("src/lib"), { recursive: true });
      assert.deepEqual(value(await f.call({ path: "src" })), { cwd: "src" });
      assert.equal(f.runtime.processes.get(f.pid).cwd, "src");
      // Relative to the working directory.
      assert.deepEqual(value(await f.call({ path: "lib" })), { cwd: "src/lib" });
      assert.deepEqual(value(await f.call({ path: "../.." })), { cwd: "." });
      // Never out of the workspace, never into what is not a directory.
      refusal(await f.call({ path: "../.." }), "outside_workspace");
      refusal(await f.call({ path: "nope" }), "not_found");
      assert.equal(f.runtime.processes.get(f.pid).cwd, ".");
    },
    async denied() {
      await using f = await fixture({ tool: "set_working_directory" });
      Deno.mkdirSync(f.at("src"));
      revoke(f, "fs");
      // Without stat the answer is the same whether the directory exists or not.
      const there = refusal(await f.call({ path: "src" }), "capability_denied");
      const missing = refusal(await f.call({ path: "nope" }), "capability_denied");
      assert.equal(missing, there.replaceAll("src", "nope"));
      assert.equal(f.runtime.processes.get(f.pid).cwd, ".");
    },
    bad: {
      field: "path",
      args: (f) => {
        Deno.mkdirSync(f.at("src"));
        return { path: ["src"] };
      },
    },
  },
  {
    tool: "signal_child_process",
    async happy() {
      await using f = await fixture({ tool: "signal_child_process" });
      const child = f.runtime.processes.fork(f.pid, { goal: "half" }).pid;
      const summary = (status: string, message: string | null = null) => ({
        child: {
          pid: child,
          parent: f.pid,
          image: "base-agent:v0",
          status,
          goal: "half",
          cwd: ".",
          result: null,
          message,
        },
      });
      assert.deepEqual(value(await f.call({ pid: child, signal: "pause" })), summary("paused"));
      assert.equal(f.runtime.processes.get(child).status, "paused");
      assert.deepEqual(value(await f.call({ pid: child, signal: "resume" })), summary("runnable"));
      assert.deepEqual(
        value(await f.call({ pid: child, signal: "terminate" })),
        summary("killed", `terminated by ${f.pid}`),
      );
      assert.equal(f.runtime.processes.get(child).status, "killed");
    },
    async denied() {
      {
        // Attack: another process's pid.
        await using f = await fixture({ tool: "signal_child_process" });
        const stranger = f.other();
        refusal(await f.call({ pid: stranger, signal: "terminate" }), "not_a_child");
        assert.equal(f.runtime.processes.get(stranger).status, "runnable");
      }
      // Its own child, with the signal right revoked.
      await using f = await fixture({ tool: "signal_child_process" });
      const child = f.runtime.processes.fork(f.pid, { goal: "half" }).pid;
      for (const cap of f.runtime.authority.capabilities.list(f.pid)) {
        if (cap.resource.type === "process" && cap.resource.key === child) {
          f.runtime.authority.capabilities.revoke(cap.id);
        }
      }
      refusal(await f.call({ pid: child, signal: "terminate" }), "capability_denied");
      assert.equal(f.runtime.processes.get(child).status, "runnable");
    },
    bad: {
      field: "signal",
      args: (f) => ({ pid: f.runtime.processes.fork(f.pid, { goal: "half" }).pid, signal: "kill" }),
    },
  },
  {
    tool: "sleep",
    async happy() {
      await using f = await fixture({ tool: "sleep" });
      let settled = false;
      const call = f.call({ ms: 1500 }).finally(() => settled = true);
      // Wait until the sleep is registered with the fake clock (its audit record comes first).
      for (let i = 0; i < 100; i++) {
        if (f.runtime.audit.query({ pid: f.pid, action: "clock.sleep" }).length > 0) break;
        await new Promise((r) => setTimeout(r, 1));
      }
      f.clock.advance(1499);
      await new Promise((r) => setTimeout(r, 5));
      assert.equal(settled, false, "it does not wake early");
      f.clock.advance(1);
      assert.deepEqual(value(await call), { slept_ms: 1500 });
      assert.deepEqual(
        f.runtime.audit.query({ pid: f.pid, action: "clock.sleep" }).map((r) => r.detail?.ms),
        [1500],
      );
    },
    denied: { skip: "the clock needs no capability (clock.ts audits every use instead)" },
    bad: { field: "ms", args: () => ({ ms: 60_001 }) },
  },
  {
    tool: "spawn_child_process",
    async happy() {
      await using f = await fixture({ tool: "spawn_child_process" });
      const v = value(
        await f.call({
          image: "coding-agent:v0",
          goal: "read the docs",
          tools: ["grep", "read_text_file"],
          inherit: [{ resource: { type: "fs", path: "docs", scope: "subtree" }, rights: ["read"] }],
        }),
      );
      const child = member(v, "pid");
      assert.ok(typeof child === "string" && child.startsWith("pid_"));
      assert.deepEqual(v, {
        pid: child,
        parent: f.pid,
        image: "coding-agent:v0",
        status: "runnable",
        goal: "read the docs",
        cwd: ".",
        result: null,
        message: null,
      });
      assert.deepEqual(f.runtime.processes.get(child).tools, ["grep", "read_text_file"]);
      const read = (path: string) =>
        f.runtime.authority.decide(child, { resource: { type: "fs", path }, right: "read" })
          .effect;
      assert.equal(read("docs/intro.md"), "allow", "the scope handed over");
      assert.notEqual(read("README.md"), "allow", "its image's requirements are never granted");
      // Without tools: the image's.
      const plain = member(value(await f.call({ image: "base-agent:v0", goal: "g2" })), "pid");
      assert.deepEqual(
        f.runtime.processes.get(String(plain)).tools,
        f.runtime.images.get(IMAGE_OPERATOR, "base-agent:v0").defaultTools,
      );
    },
    async denied() {
      await using f = await fixture({ tool: "spawn_child_process" });
      const caps = f.runtime.authority.capabilities.list(f.pid).map((c) => c.id);
      refusal(
        await f.call({
          image: "base-agent:v0",
          goal: "wider",
          inherit: [{
            resource: { type: "net", key: "registry.npmjs.org", scope: "exact" },
            rights: ["connect"],
          }],
        }),
        "cannot_delegate",
      );
      assert.deepEqual(f.runtime.authority.capabilities.list(f.pid).map((c) => c.id), caps);
      // A tool table wider than the image's.
      assert.match(
        refusal(
          await f.call({ image: "base-agent:v0", goal: "wider", tools: ["load_image_from_yaml"] }),
          "capability_denied",
        ),
        /does not list them/,
      );
      // Without image read on the image.
      revoke(f, "image");
      refusal(await f.call({ image: "base-agent:v0", goal: "g" }), "capability_denied");
      assert.deepEqual(f.runtime.processes.list({ parent: f.pid }), [], "no child is left");
    },
    bad: { field: "goal", args: () => ({ image: "base-agent:v0", goal: "" }) },
  },
  {
    tool: "update_plan",
    async happy() {
      await using f = await fixture({ tool: "update_plan" });
      const plan = [
        { step: "Reproduce", status: "completed" },
        { step: "Fix", status: "in_progress" },
      ];
      const v = value(await f.call({ plan }));
      assert.equal(member(v, "summary"), "1 of 2 steps completed");
      const record = f.runtime.memory.readByName(f.pid, `process:${f.pid}`, "plan");
      assert.deepEqual(record.payload, {
        steps: [
          { content: "Reproduce", status: "completed" },
          { content: "Fix", status: "in_progress" },
        ],
        explanation: null,
      });
    },
    async denied() {
      await using f = await fixture({ tool: "update_plan" });
      // Two steps in progress: refused by the schema, and no plan object is written.
      const result = await f.call({
        plan: [{ step: "a", status: "in_progress" }, { step: "b", status: "in_progress" }],
      });
      refusal(result, "invalid_arguments");
      assert.deepEqual(f.runtime.memory.list("operator", `process:${f.pid}`), []);
    },
    bad: { field: "plan.0.status", args: () => ({ plan: [{ step: "a", status: "started" }] }) },
  },
  {
    tool: "validate_jit_tool",
    async happy() {
      await using f = await fixture({ tool: "validate_jit_tool" });
      const jit = attachJit(f);
      const oid = jit.propose(f.pid, wordCounter());
      assert.deepEqual(value(await f.call({ oid })), {
        ok: true,
        static: { ok: true, violations: [] },
        tests: [{ name: "three words", ok: true }],
      });
      // A test that fails: the tool really ran in the sandbox and counted 3.
      const wrong = jit.propose(
        f.pid,
        wordCounter({
          tests: [{ ...wordCounter().tests[0]!, expect: { words: 4 } }],
        }),
      );
      assert.deepEqual(value(await f.call({ oid: wrong })), {
        ok: false,
        static: { ok: true, violations: [] },
        tests: [{
          name: "three words",
          ok: false,
          message: 'expected {"words":4}, got {"words":3}',
        }],
      });
      // The runtime's own record of each outcome (listed in oid order).
      assert.deepEqual(
        f.runtime.memory.records(`process:${f.pid}`, "jit.validation").map((r) => {
          const p = r.payload as { candidate?: unknown; ok?: unknown };
          return `${p.candidate} ${p.ok}`;
        }).sort(),
        [`${oid} true`, `${wrong} false`].sort(),
      );
    },
    async denied() {
      await using f = await fixture({ tool: "validate_jit_tool" });
      const jit = attachJit(f);
      const other = f.other();
      const oid = jit.propose(other, wordCounter());
      refusal(await f.call({ oid }), "capability_denied");
      for (const pid of [f.pid, other]) {
        assert.deepEqual(f.runtime.memory.records(`process:${pid}`, "jit.validation"), []);
      }
    },
    bad: {
      field: "oid",
      args: (f) => ({ oid: [attachJit(f).propose(f.pid, wordCounter())] }),
    },
  },
  {
    tool: "wait_child_process",
    async happy() {
      await using f = await fixture({ tool: "wait_child_process" });
      const done = finishedChild(f, "42 findings");
      const live = f.runtime.processes.fork(f.pid, { goal: "still working" }).pid;
      assert.deepEqual(value(await f.call({ pid: done.pid })), {
        child: {
          pid: done.pid,
          parent: f.pid,
          image: "base-agent:v0",
          status: "exited",
          goal: "done",
          cwd: ".",
          result: done.oid,
          message: null,
        },
      });
      assert.equal(f.runtime.processes.get(done.pid).reaped, true, "collected");
      // None finished: the call ends the quantum (rethrown for the scheduler); nothing moves yet.
      assert.deepEqual(await quantumEnd(f.call({ pid: live })), { type: "wait_child", pid: live });
      assert.deepEqual(await quantumEnd(f.call({})), { type: "wait_child", pid: null });
      assert.equal(f.runtime.processes.get(f.pid).status, "runnable");
      assert.equal(f.runtime.processes.get(f.pid).wait, null);
      assert.equal(f.runtime.processes.get(live).reaped, false);
    },
    async denied() {
      // Attack: collect another process's finished child.
      await using f = await fixture({ tool: "wait_child_process" });
      const other = f.other();
      const theirs = f.runtime.processes.fork(other, { goal: "theirs" }).pid;
      f.runtime.processes.exit(theirs, { message: "secret result" });
      const result = await f.call({ pid: theirs });
      refusal(result, "capability_denied");
      assert.ok(!result.forModel.includes("secret result"));
      assert.equal(f.runtime.processes.get(theirs).reaped, false, "still theirs to collect");
    },
    bad: { field: "pid", args: (f) => ({ pid: [finishedChild(f, "42 findings").pid] }) },
  },
  {
    tool: "write_directory",
    async happy() {
      await using f = await fixture({ tool: "write_directory" });
      assert.deepEqual(value(await f.call({ path: "a/b/c", parents: true })), {
        path: "a/b/c",
        created: ["a", "a/b", "a/b/c"],
      });
      assert.ok(Deno.statSync(f.at("a/b/c")).isDirectory);
      assert.deepEqual(value(await f.call({ path: "a/d" })), { path: "a/d", created: ["a/d"] });
      assert.ok(Deno.statSync(f.at("a/d")).isDirectory);
    },
    async denied() {
      await using f = await fixture({ tool: "write_directory", mode: "read-only" });
      refusal(await f.call({ path: "a/b", parents: true }), "capability_denied");
      assert.deepEqual(tree(f.ws), {});
    },
    bad: { field: "parents", args: () => ({ path: "a/b", parents: "yes" }) },
  },
  {
    tool: "write_object_to_file",
    async happy() {
      await using f = await fixture({ tool: "write_object_to_file" });
      const content = "export const answer = 42;\n";
      const fromField = stored(f, f.pid, { type: "file", payload: { path: "x.ts", content } });
      const result = await f.call({ oid: fromField, path: "answer.ts" });
      assert.deepEqual(value(result), {
        oid: fromField,
        path: "answer.ts",
        bytes: content.length,
        created: true,
      });
      assert.ok(!result.forModel.includes("answer = 42"), "the content stays out of the result");
      assert.equal(Deno.readTextFileSync(f.at("answer.ts")), content);
      // A string payload is written as it is.
      const text = stored(f, f.pid, { type: "note", payload: "plain text\n" });
      assert.deepEqual(value(await f.call({ oid: text, path: "note.txt" })), {
        oid: text,
        path: "note.txt",
        bytes: 11,
        created: true,
      });
      assert.equal(Deno.readTextFileSync(f.at("note.txt")), "plain text\n");
    },
    async denied() {
      await using f = await fixture({ tool: "write_object_to_file" });
      const oid = stored(f, f.other(), { type: "note", payload: "someone else's text" });
      refusal(await f.call({ oid, path: "stolen.txt" }), "capability_denied");
      assert.ok(!exists(f.at("stolen.txt")));
    },
    bad: {
      field: "path",
      args: (f) => ({ oid: stored(f, f.pid, { type: "note", payload: "text" }), path: "" }),
    },
  },
  {
    tool: "write_text_file",
    async happy() {
      await using f = await fixture({ tool: "write_text_file" });
      assert.deepEqual(value(await f.call({ path: "hello.txt", content: "hi ✓\n" })), {
        path: "hello.txt",
        bytes: 7,
        sha256: await sha256("hi ✓\n"),
        created: true,
      });
      assert.equal(Deno.readTextFileSync(f.at("hello.txt")), "hi ✓\n");
      assert.equal(
        member(value(await f.call({ path: "hello.txt", content: "bye" })), "created"),
        false,
      );
      assert.equal(Deno.readTextFileSync(f.at("hello.txt")), "bye");
      refusal(
        await f.call({ path: "hello.txt", content: "x", overwrite: false }),
        "validation_failed",
      );
      assert.equal(Deno.readTextFileSync(f.at("hello.txt")), "bye");
    },
    async denied() {
      await using f = await fixture({ tool: "write_text_file", mode: "read-only" });
      refusal(await f.call({ path: "hello.txt", content: "hi" }), "capability_denied");
      assert.ok(!exists(f.at("hello.txt")));
    },
    bad: { field: "content", args: () => ({ path: "hello.txt", content: 5 }) },
  },
];

// ---------------------------------------------------------------- the tests

Deno.test("builtinToolSpecs() names exactly the tools this table covers, and the runtime registers them all", async () => {
  const table = ROWS.map((r) => r.tool);
  assert.deepEqual([...table].sort(), table, "the table is in name order");
  const specs = builtinToolSpecs().map((s) => s.name);
  assert.deepEqual(
    {
      withoutRow: specs.filter((name) => !table.includes(name)),
      notBuiltin: table.filter((name) => !specs.includes(name)),
    },
    { withoutRow: [], notBuiltin: [] },
    "every built-in tool needs a row in ROWS (happy, denied, bad arguments)",
  );
  assert.deepEqual(specs, table);
  await using f = await fixture({ tool: "echo" });
  assert.deepEqual(f.runtime.tools.builtins().map((t) => t.name), table);
});

Deno.test("every built-in tool's arguments convert to an object JSON Schema a model can be shown (converted on first use, not at definition)", async () => {
  await using f = await fixture({ tool: "echo" });
  const builtins = f.runtime.tools.builtins();
  assert.ok(builtins.length > 30, "control: the built-ins are there");
  for (const tool of builtins) {
    assert.equal(tool.parameters.type, "object", tool.name);
    assert.equal(tool.parameters, tool.parameters, `${tool.name}: converted once, then kept`);
    assert.ok(Object.isFrozen(tool.parameters), tool.name);
  }
});

for (const row of ROWS) {
  const ignore = row.loopback === true && !loopbackAllowed();
  Deno.test({
    name: `${row.tool} through the broker: does its job for real`,
    ignore,
    fn: row.happy,
  });
  const denied = row.denied;
  if (typeof denied === "function") {
    Deno.test({
      name: `${row.tool} through the broker: refused without the authority, and nothing happens`,
      ignore,
      fn: denied,
    });
  }
  const field = row.bad.field;
  Deno.test({
    name: `${row.tool} through the broker: ${
      field === null
        ? "an argument it does not take is refused naming it"
        : `arguments outside its schema are refused naming ${JSON.stringify(field)}`
    }, and it never runs`,
    ignore,
    async fn() {
      await using f = await fixture({ tool: row.tool, answers: [{ type: "approve" }] });
      const args = await row.bad.args(f);
      const before = snapshot(f);
      const result = await f.call(args);
      const message = refusal(result, "invalid_arguments");
      if (field === null) {
        assert.ok(message.startsWith(`Invalid arguments for ${row.tool}: `), message);
        for (const key of Object.keys(args as object)) {
          assert.ok(message.includes(JSON.stringify(key)), message);
        }
      } else {
        assert.ok(message.startsWith(`Invalid arguments for ${row.tool} at ${field}: `), message);
      }
      assert.equal(result.object, null, "a call refused before it ran stores no result");
      assert.deepEqual(snapshot(f), before, "no effect");
      assert.deepEqual(f.prompted, [], "no human was asked");
      assert.deepEqual(
        f.runtime.audit.query({ pid: f.pid, action: "tool.invoke" }).map((r) => [
          r.decision,
          r.authority,
        ]),
        [["deny", "invalid_arguments"]],
      );
    },
  });
}

Deno.test("parse_pytest_log reads a real coloured pytest log: counts, errors, duration and every FAILED/ERROR line", () => {
  // Captured from pytest 9.0.3 with --color=yes (trimmed): one error, two failures.
  const log = [
    `${ESC}[1m============================= test session starts ==============================${ESC}[0m`,
    "collected 14 items",
    "",
    `test_demo.py ${ESC}[32m.${ESC}[0m${ESC}[31mF${ESC}[0m${ESC}[33ms${ESC}[0m${ESC}[31mE${ESC}[0m${ESC}[31m [100%]${ESC}[0m`,
    `${ESC}[36m${ESC}[1m=========================== short test summary info ============================${ESC}[0m`,
    `${ESC}[31mFAILED${ESC}[0m test_demo.py::${ESC}[1mtest_fail${ESC}[0m - assert 1 == 2`,
    `${ESC}[31mFAILED${ESC}[0m test_demo.py::${ESC}[1mtest_limits[0-10]${ESC}[0m - ValueError: too big`,
    `${ESC}[31mERROR${ESC}[0m test_demo.py::${ESC}[1mtest_err${ESC}[0m - ConnectionError: db down`,
    `${ESC}[31m========= ${ESC}[31m${ESC}[1m2 failed${ESC}[0m, ${ESC}[32m10 passed${ESC}[0m, ${ESC}[33m1 skipped${ESC}[0m, ${ESC}[33m1 warning${ESC}[0m, ${ESC}[31m${ESC}[1m1 error${ESC}[0m${ESC}[31m in 125.30s (0:02:05)${ESC}[0m${ESC}[31m ==========${ESC}[0m`,
  ].join("\r\n");
  assert.deepEqual(parsePytest(log), {
    complete: true,
    counts: { passed: 10, failed: 2, errors: 1, skipped: 1, xfailed: 0, xpassed: 0, warnings: 1 },
    duration_s: 125.3,
    failures: [
      { kind: "failed", test: "test_demo.py::test_fail", message: "assert 1 == 2" },
      { kind: "failed", test: "test_demo.py::test_limits[0-10]", message: "ValueError: too big" },
      { kind: "error", test: "test_demo.py::test_err", message: "ConnectionError: db down" },
    ],
  });
  // The table's log, through the parser directly: the same summary the tool returned.
  assert.deepEqual(parsePytest(PYTEST_LOG).failures, PYTEST_FAILURES);
  // A captured log line ("ERROR    logger:…") is not a failing test.
  assert.ok(!parsePytest(PYTEST_LOG).failures.some((f) => f.test.startsWith("app.api")));
});

Deno.test("parse_pytest_log through the broker: a log cut short (no final line) is complete: false, with the failures seen so far", async () => {
  await using f = await fixture({ tool: "parse_pytest_log" });
  const cut = PYTEST_LOG.slice(0, PYTEST_LOG.indexOf(`${ESC}[31m=== `));
  assert.ok(cut.includes("short test summary info") && !cut.includes(" in 0.52s"));
  assert.deepEqual(value(await f.call({ log: cut })), {
    complete: false,
    counts: { passed: 0, failed: 0, errors: 0, skipped: 0, xfailed: 0, xpassed: 0, warnings: 0 },
    duration_s: null,
    failures: PYTEST_FAILURES,
  });
  assert.deepEqual(value(await f.call({ log: "" })), {
    complete: false,
    counts: { passed: 0, failed: 0, errors: 0, skipped: 0, xfailed: 0, xpassed: 0, warnings: 0 },
    duration_s: null,
    failures: [],
  });
  assert.equal(
    member(
      value(await f.call({ log: "============ no tests ran in 0.01s ============\n" })),
      "complete",
    ),
    true,
  );
});

// ---------------------------------------------------------------- known bugs (ignored)

Deno.test({
  name: "parse_pytest_log reads the final line of `pytest -q`, which has no === around it",
  // Was a bug: the final-line regex required the === borders.
  fn() {
    const log = [
      "..F.s.....F.E                                                            [100%]",
      "=========================== short test summary info ============================",
      "FAILED tests/test_api.py::test_status - assert 500 == 200",
      "2 failed, 10 passed, 1 skipped, 1 warning, 1 error in 0.52s",
    ].join("\n");
    const s = parsePytest(log);
    assert.equal(s.complete, true);
    assert.equal(s.duration_s, 0.52);
    assert.deepEqual(s.counts, {
      passed: 10,
      failed: 2,
      errors: 1,
      skipped: 1,
      xfailed: 0,
      xpassed: 0,
      warnings: 1,
    });
  },
});

Deno.test({
  name: "parse_pytest_log reads a log as read_text_file shows it (every line numbered, `cat -n`)",
  fn() {
    const log = [
      "FAILED tests/test_api.py::test_status - assert 500 == 200",
      "1 failed, 3 passed in 0.10s",
    ];
    const numbered = log.map((l, i) => `${String(i + 1).padStart(6)}\t${l}`).join("\n") + "\n";
    assert.deepEqual(parsePytest(numbered), parsePytest(log.join("\n")));
    assert.equal(parsePytest(numbered).complete, true);
    assert.equal(parsePytest(numbered).failures[0]?.test, "tests/test_api.py::test_status");
  },
});

Deno.test({
  name: "parse_pytest_log keeps a failing parametrized test whose id contains a space",
  // Was a bug: the test id was matched as a run of non-spaces.
  fn() {
    const s = parsePytest([
      "FAILED test_demo.py::test_param[a b] - AssertionError: assert 'a b' == 'c'",
      "=== 1 failed in 0.03s ===",
    ].join("\n"));
    assert.deepEqual(s.failures, [{
      kind: "failed",
      test: "test_demo.py::test_param[a b]",
      message: "AssertionError: assert 'a b' == 'c'",
    }]);
  },
});

Deno.test({
  name: "read_directory through the broker: limit keeps the first entries in name order",
  // Was a bug: the cut happened in the host's directory order, before sorting.
  async fn() {
    await using f = await fixture({ tool: "read_directory" });
    const names = Array.from({ length: 20 }, (_, i) => `f${String(i).padStart(2, "0")}.txt`);
    for (const name of [...names].reverse()) Deno.writeTextFileSync(f.at(name), "");
    assert.deepEqual(value(await f.call({ limit: 3 })), {
      path: ".",
      entries: names.slice(0, 3).map((name) => ({ name, type: "file" })),
      truncated: true,
    });
  },
});

Deno.test({
  name:
    "read_memory_object through the broker: oid together with namespace or name is refused as ambiguous",
  // Was a bug: {oid, name} passed the schema and the name was ignored.
  async fn() {
    await using f = await fixture({ tool: "read_memory_object" });
    const oid = stored(f, f.pid, { type: "note", payload: "a", name: "first" });
    for (const args of [{ oid, name: "second" }, { oid, namespace: `process:${f.pid}` }]) {
      refusal(await f.call(args), "invalid_arguments");
    }
  },
});
