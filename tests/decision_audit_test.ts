/**
 * "Every decision is audited, allowed or not" (DESIGN §2, issue 20): one table drives every
 * operation of every authority-bearing component — the primitives (fs, shell, net, clock), the
 * object memory, the image registry, the process manager, the human channel, checkpoints, the
 * capability table, the tool broker and the JIT tool lifecycle — once allowed and once refused,
 * on a real runtime, and checks the decision records each left: exactly one per decision, with
 * the right decision and an authority naming the capability, rule, mode, human or runtime rule
 * that decided (the rule is written in `runtime/audit/audit_log.ts`). A refused row also attempts the
 * operation for real and checks that its effect did not happen; the allowed row is its control.
 *
 * The last test derives the operations from the components' own methods: a method added without
 * a row here (or a stated reason it decides nothing) fails the suite.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { z } from "zod";
import type { AuditRecord } from "../runtime/audit/audit_log.ts";
import { CapabilityTable } from "../runtime/authority/capability_table.ts";
import type { CapabilityResource } from "../runtime/authority/capability.ts";
import { Checkpoints } from "../runtime/memory/checkpoints.ts";
import {
  BudgetExhaustedError,
  CapabilityDeniedError,
  HumanDecisionError,
  HumanPendingError,
  IllegalTransitionError,
  NotFoundError,
  ValidationError,
} from "../runtime/base/errors.ts";
import { HumanChannel, type HumanMode, type HumanPrompt } from "../runtime/human/human_channel.ts";
import { ImageRegistry } from "../runtime/broker/image_registry.ts";
import { ObjectMemory } from "../runtime/memory/object_memory.ts";
import { processContext } from "../runtime/memory/process_context.ts";
import { ClockPrimitive } from "../runtime/primitives/clock.ts";
import { FilesystemPrimitive } from "../runtime/primitives/filesystem.ts";
import { NetPrimitive } from "../runtime/primitives/net.ts";
import { McpPrimitive, parseMcpConfig } from "../runtime/primitives/mcp.ts";
import { fakeMcpLauncher } from "./mcp_fixture.ts";
import { ShellPrimitive } from "../runtime/primitives/shell.ts";
import { ProcessManager } from "../runtime/process/process_manager.ts";
import type { NetProvider, NetRequest } from "../runtime/providers/net.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
import { parseStrictYaml } from "../runtime/base/strict_yaml.ts";
import { ToolBroker } from "../runtime/broker/tool_broker.ts";
import { JitSandbox, JitToolLifecycle, JitValidator, lifecycleFor } from "../jit/mod.ts";
import { BENIGN, DOCS_READER, echoCandidate } from "./sample_fixture.ts";
import { sandbox, task } from "./_cli_sandbox.ts";
import { call, final } from "./agent_fixture.ts";

const NEVER = new AbortController().signal;

/** The matching lines of a content-mode grep. */
function matchesOf(result: object): unknown[] {
  assert.ok("matches" in result && Array.isArray(result.matches), "a content-mode result");
  return result.matches;
}
const PROVENANCE = { source: "model", label: "decision audit", ref: null } as const;

// ---------------------------------------------------------------- fixture

interface FixtureOptions {
  /** Default `full-access`. */
  readonly mode?: string;
  /** Default `queue`. */
  readonly human?: HumanMode;
  /** The interactive human's answer to every prompt. */
  readonly answer?: "approve" | "reject";
}

interface Fixture extends AsyncDisposable {
  readonly runtime: Runtime;
  readonly ws: string;
  /** The acting process: the mode's default grants over the workspace, and its own namespace. */
  readonly pid: string;
  /** Another top-level process: the owner of what `pid` may not touch. */
  readonly other: string;
  /** What the fake network was asked to send. */
  readonly sent: NetRequest[];
  /** What the fake MCP server (`fx`, tool `echo`) was asked to run. */
  readonly mcpCalls: string[];
  /** `pid` acting for itself. */
  readonly self: { readonly kind: "process"; readonly pid: string };
  at(path: string): string;
  /** An operator's grant to `pid`; returns the capability id. */
  grant(resource: CapabilityResource, rights: readonly string[], effect?: "allow" | "deny"): string;
  /** A note object of `owner` in its own namespace; returns its oid. */
  note(owner: string, name?: string): string;
  /** A JIT lifecycle on a real sandbox (closed with the fixture). */
  jit(): JitToolLifecycle;
}

/** A network that answers 200 to everything and resolves every name to a public address. */
function fakeNet(sent: NetRequest[]): NetProvider {
  return {
    resolve: () => Promise.resolve(["93.184.216.34"]),
    request(request) {
      sent.push(request);
      return Promise.resolve({
        status: 200,
        headers: {},
        bodyBytes: new TextEncoder().encode("ok"),
        truncated: false,
      });
    },
  };
}

function prompt(answer: "approve" | "reject"): HumanPrompt {
  return { decide: () => Promise.resolve({ type: answer }) };
}

async function fixture(options: FixtureOptions = {}): Promise<Fixture> {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-decision-audit-" }));
  const sent: NetRequest[] = [];
  const mcpCalls: string[] = [];
  const closers: AsyncDisposable[] = [];
  let runtime: Runtime;
  try {
    runtime = await createRuntime({
      workspace: ws,
      db: ":memory:",
      mode: options.mode ?? "full-access",
      human: options.human ?? "queue",
      ...(options.answer ? { prompt: prompt(options.answer) } : {}),
      // These rows are about records; tests/shell_wall_test.ts covers the wall.
      wall: false,
      net: fakeNet(sent),
      mcpServers: parseMcpConfig(`{"mcpServers": {"fx": {"command": "/bin/true"}}}`, "/mcp.json"),
      mcpLauncher: fakeMcpLauncher(mcpCalls),
    });
  } catch (error) {
    Deno.removeSync(ws, { recursive: true });
    throw error;
  }
  const pid = runtime.processes.spawn({ goal: "act", image: "base-agent:v0" }).pid;
  const other = runtime.processes.spawn({ goal: "own", image: "base-agent:v0" }).pid;
  let lifecycle: JitToolLifecycle | undefined;
  return {
    runtime,
    ws,
    pid,
    other,
    sent,
    mcpCalls,
    self: { kind: "process", pid },
    at: (path) => join(ws, path),
    grant: (resource, rights, effect = "allow") =>
      runtime.authority.capabilities.grant({
        subject: pid,
        resource,
        rights: [...rights],
        effect,
        issuer: "operator",
      }, "operator").id,
    note: (owner, name) =>
      runtime.memory.create(owner, {
        type: "note",
        payload: `a note of ${owner}`,
        ...(name === undefined ? {} : { name }),
        provenance: PROVENANCE,
      }).oid,
    jit() {
      if (!lifecycle) {
        const sandbox = new JitSandbox({ limits: { wallMs: 10_000 } });
        const validator = new JitValidator();
        closers.push(sandbox, validator);
        lifecycle = lifecycleFor(runtime, { sandbox, validator });
      }
      return lifecycle;
    },
    async [Symbol.asyncDispose]() {
      try {
        assert.equal(runtime.audit.verify({ head: false }).ok, true, "the audit chain verifies");
        for (const closer of closers) await closer[Symbol.asyncDispose]();
        await runtime.close();
      } finally {
        Deno.removeSync(ws, { recursive: true });
      }
    },
  };
}

// ---------------------------------------------------------------- the table

/** Values a row's setup hands to its run (oids, pids, request ids). */
type Ctx = Record<string, string>;

/** One expected decision record: its action, decision, and what its authority must look like. */
type Expected = readonly [action: string, decision: "allow" | "ask" | "deny", authority: RegExp];

interface Case {
  /** The runtime it runs on (default: `full-access`, human `queue`). */
  readonly fixture?: FixtureOptions;
  /** Setup, outside the window the records are checked in. */
  prepare?(f: Fixture): Ctx | Promise<Ctx>;
  /** The operation; a refused case asserts its refusal and that its effect did not happen. */
  run(f: Fixture, c: Ctx): unknown;
  /** Every decision record the operation leaves, in order. */
  readonly records: readonly Expected[];
}

interface Row {
  /** `Class.method`, as the completeness check derives it. */
  readonly op: string;
  readonly allowed: Case;
  readonly refused: Case | { readonly skip: string };
}

/** A capability (`cap:<id>`): the mode's default grants and lineage rights are capabilities too. */
const CAP = /^cap:cap_[0-9a-f]+$/;
/** No capability allowed it (layer 5). */
const DEFAULT = /^default$/;

/** A setup that only does something (its run needs no values from it). */
function setup(act: (f: Fixture) => unknown): (f: Fixture) => Ctx {
  return (f) => {
    act(f);
    return {};
  };
}

/** Asserts that `run` rejects (or throws) with `type`, optionally with `code`. */
async function refusedWith(
  run: () => unknown,
  type: abstract new (...args: never[]) => Error,
  code?: string,
): Promise<void> {
  await assert.rejects(
    async () => {
      await run();
    },
    (error: unknown) => {
      assert.ok(error instanceof type, `expected ${type.name}, got ${String(error)}`);
      if (code !== undefined) assert.equal((error as Error & { code: string }).code, code);
      return true;
    },
  );
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

const fsRows: Row[] = [
  {
    op: "FilesystemPrimitive.readText",
    allowed: {
      prepare: setup((f) => Deno.writeTextFileSync(f.at("a.txt"), "alpha")),
      run: async (f) =>
        assert.equal(
          (await f.runtime.primitives.fs.readText(f.pid, { path: "a.txt" })).content,
          "alpha",
        ),
      records: [["fs.read", "allow", CAP]],
    },
    refused: {
      prepare: (f) => {
        Deno.writeTextFileSync(f.at("a.txt"), "alpha");
        return { cap: f.grant({ type: "fs", path: "a.txt", scope: "exact" }, ["read"], "deny") };
      },
      run: (f) =>
        refusedWith(
          () => f.runtime.primitives.fs.readText(f.pid, { path: "a.txt" }),
          CapabilityDeniedError,
        ),
      records: [["fs.read", "deny", CAP]],
    },
  },
  {
    op: "FilesystemPrimitive.writeText",
    allowed: {
      run: async (f) => {
        await f.runtime.primitives.fs.writeText(f.pid, { path: "b.txt", content: "beta" });
        assert.equal(Deno.readTextFileSync(f.at("b.txt")), "beta");
      },
      records: [["fs.write", "allow", CAP]],
    },
    refused: {
      prepare: setup((f) =>
        f.grant({ type: "fs", path: "b.txt", scope: "exact" }, ["write"], "deny")
      ),
      run: async (f) => {
        await refusedWith(
          () => f.runtime.primitives.fs.writeText(f.pid, { path: "b.txt", content: "beta" }),
          CapabilityDeniedError,
        );
        assert.equal(exists(f.at("b.txt")), false, "nothing was written");
      },
      records: [["fs.write", "deny", CAP]],
    },
  },
  {
    op: "FilesystemPrimitive.editText",
    allowed: {
      prepare: setup((f) => Deno.writeTextFileSync(f.at("c.txt"), "one two")),
      run: async (f) => {
        await f.runtime.primitives.fs.editText(f.pid, {
          path: "c.txt",
          oldString: "two",
          newString: "three",
        });
        assert.equal(Deno.readTextFileSync(f.at("c.txt")), "one three");
      },
      // An edit is a read and a write: each decided, each recorded once.
      records: [["fs.read", "allow", CAP], ["fs.write", "allow", CAP]],
    },
    refused: {
      prepare: (f) => {
        Deno.writeTextFileSync(f.at("c.txt"), "one two");
        f.grant({ type: "fs", path: "c.txt", scope: "exact" }, ["write"], "deny");
        return {};
      },
      run: async (f) => {
        await refusedWith(
          () =>
            f.runtime.primitives.fs.editText(f.pid, {
              path: "c.txt",
              oldString: "two",
              newString: "three",
            }),
          CapabilityDeniedError,
        );
        assert.equal(Deno.readTextFileSync(f.at("c.txt")), "one two", "the file is unchanged");
      },
      records: [["fs.read", "allow", CAP], ["fs.write", "deny", CAP]],
    },
  },
  {
    op: "FilesystemPrimitive.applyPatch",
    allowed: {
      prepare: setup((f) => Deno.writeTextFileSync(f.at("c.txt"), "one\ntwo\n")),
      run: async (f) => {
        await f.runtime.primitives.fs.applyPatch(f.pid, {
          patch: "*** Begin Patch\n*** Update File: c.txt\n@@\n one\n-two\n+three\n*** End Patch\n",
        });
        assert.equal(Deno.readTextFileSync(f.at("c.txt")), "one\nthree\n");
      },
      // One record per file of the patch, naming the rights it was decided on.
      records: [["fs.patch", "allow", CAP]],
    },
    refused: {
      prepare: (f) => {
        Deno.writeTextFileSync(f.at("c.txt"), "one\ntwo\n");
        f.grant({ type: "fs", path: "c.txt", scope: "exact" }, ["write"], "deny");
        return {};
      },
      run: async (f) => {
        await refusedWith(
          () =>
            f.runtime.primitives.fs.applyPatch(f.pid, {
              patch:
                "*** Begin Patch\n*** Update File: c.txt\n@@\n one\n-two\n+three\n*** End Patch\n",
            }),
          CapabilityDeniedError,
        );
        assert.equal(Deno.readTextFileSync(f.at("c.txt")), "one\ntwo\n", "the file is unchanged");
      },
      records: [["fs.patch", "deny", CAP]],
    },
  },
  {
    op: "FilesystemPrimitive.listDir",
    allowed: {
      prepare: setup((f) => Deno.mkdirSync(f.at("d"))),
      run: (f) => f.runtime.primitives.fs.listDir(f.pid, { path: "d" }),
      records: [["fs.list", "allow", CAP]],
    },
    refused: {
      prepare: (f) => {
        Deno.mkdirSync(f.at("d"));
        Deno.writeTextFileSync(f.at("d/hidden.txt"), "x");
        f.grant({ type: "fs", path: "d", scope: "subtree" }, ["read"], "deny");
        return {};
      },
      run: (f) =>
        refusedWith(
          () => f.runtime.primitives.fs.listDir(f.pid, { path: "d" }),
          CapabilityDeniedError,
        ),
      records: [["fs.list", "deny", CAP]],
    },
  },
  {
    op: "FilesystemPrimitive.makeDir",
    allowed: {
      run: async (f) => {
        await f.runtime.primitives.fs.makeDir(f.pid, { path: "e" });
        assert.equal(Deno.statSync(f.at("e")).isDirectory, true);
      },
      records: [["fs.mkdir", "allow", CAP]],
    },
    refused: {
      prepare: setup((f) => f.grant({ type: "fs", path: "e", scope: "exact" }, ["write"], "deny")),
      run: async (f) => {
        await refusedWith(
          () => f.runtime.primitives.fs.makeDir(f.pid, { path: "e" }),
          CapabilityDeniedError,
        );
        assert.equal(exists(f.at("e")), false, "no directory was made");
      },
      records: [["fs.mkdir", "deny", CAP]],
    },
  },
  {
    op: "FilesystemPrimitive.deleteFile",
    allowed: {
      prepare: setup((f) => Deno.writeTextFileSync(f.at("g.txt"), "x")),
      run: async (f) => {
        await f.runtime.primitives.fs.deleteFile(f.pid, { path: "g.txt" });
        assert.equal(exists(f.at("g.txt")), false);
      },
      records: [["fs.delete", "allow", CAP]],
    },
    refused: {
      prepare: (f) => {
        Deno.writeTextFileSync(f.at("g.txt"), "x");
        f.grant({ type: "fs", path: "g.txt", scope: "exact" }, ["delete"], "deny");
        return {};
      },
      run: async (f) => {
        await refusedWith(
          () => f.runtime.primitives.fs.deleteFile(f.pid, { path: "g.txt" }),
          CapabilityDeniedError,
        );
        assert.equal(exists(f.at("g.txt")), true, "the file is still there");
      },
      records: [["fs.delete", "deny", CAP]],
    },
  },
  {
    op: "FilesystemPrimitive.deleteDir",
    allowed: {
      prepare: setup((f) => Deno.mkdirSync(f.at("h"))),
      run: async (f) => {
        await f.runtime.primitives.fs.deleteDir(f.pid, { path: "h" });
        assert.equal(exists(f.at("h")), false);
      },
      records: [["fs.rmdir", "allow", CAP]],
    },
    refused: {
      prepare: (f) => {
        Deno.mkdirSync(f.at("h"));
        f.grant({ type: "fs", path: "h", scope: "subtree" }, ["delete"], "deny");
        return {};
      },
      run: async (f) => {
        await refusedWith(
          () => f.runtime.primitives.fs.deleteDir(f.pid, { path: "h" }),
          CapabilityDeniedError,
        );
        assert.equal(exists(f.at("h")), true, "the directory is still there");
      },
      records: [["fs.rmdir", "deny", CAP]],
    },
  },
  {
    op: "FilesystemPrimitive.stat",
    allowed: {
      run: async (f) =>
        assert.equal((await f.runtime.primitives.fs.stat(f.pid, { path: "nope" })).exists, false),
      records: [["fs.stat", "allow", CAP]],
    },
    refused: {
      prepare: setup((f) =>
        f.grant({ type: "fs", path: "nope", scope: "exact" }, ["stat", "read"], "deny")
      ),
      run: (f) =>
        refusedWith(
          () => f.runtime.primitives.fs.stat(f.pid, { path: "nope" }),
          CapabilityDeniedError,
        ),
      records: [["fs.stat", "deny", CAP]],
    },
  },
  {
    op: "FilesystemPrimitive.glob",
    allowed: {
      prepare: setup((f) => Deno.writeTextFileSync(f.at("i.txt"), "x")),
      run: async (f) =>
        assert.deepEqual((await f.runtime.primitives.fs.glob(f.pid, { glob: "*.txt" })).matches, [
          "i.txt",
        ]),
      // A search is made of listings and stats: one record per directory it listed, one per
      // match it dated (to sort the newest first).
      records: [["fs.list", "allow", CAP], ["fs.stat", "allow", CAP]],
    },
    refused: {
      prepare: (f) => {
        Deno.writeTextFileSync(f.at("i.txt"), "x");
        f.grant({ type: "fs", path: ".", scope: "subtree" }, ["read"], "deny");
        return {};
      },
      run: async (f) => {
        const found = await f.runtime.primitives.fs.glob(f.pid, { glob: "*.txt" });
        assert.deepEqual([found.matches, found.skipped], [[], 1], "nothing was listed");
      },
      records: [["fs.list", "deny", CAP]],
    },
  },
  {
    op: "FilesystemPrimitive.grep",
    allowed: {
      prepare: setup((f) => Deno.writeTextFileSync(f.at("j.txt"), "a needle\n")),
      run: async (f) =>
        assert.equal(
          matchesOf(await f.runtime.primitives.fs.grep(f.pid, { text: "needle" })).length,
          1,
        ),
      // A search lists and reads: one record for the directory, one for the file.
      records: [["fs.list", "allow", CAP], ["fs.read", "allow", CAP]],
    },
    refused: {
      prepare: (f) => {
        Deno.writeTextFileSync(f.at("j.txt"), "a needle\n");
        f.grant({ type: "fs", path: "j.txt", scope: "exact" }, ["read"], "deny");
        return {};
      },
      run: async (f) =>
        assert.deepEqual(
          matchesOf(await f.runtime.primitives.fs.grep(f.pid, { text: "needle" })),
          [],
          "the refused file's lines are not returned",
        ),
      records: [["fs.list", "allow", CAP], ["fs.read", "deny", CAP]],
    },
  },
];
const effectRows: Row[] = [{
  op: "ShellPrimitive.run",
  allowed: {
    prepare: setup((f) =>
      f.grant({ type: "shell", argv: ["touch", "made"], scope: "exact" }, ["execute"])
    ),
    run: async (f) => {
      const out = await f.runtime.primitives.shell.run(f.pid, { argv: ["touch", "made"] });
      assert.equal(out.exitCode, 0);
      assert.equal(exists(f.at("made")), true);
    },
    records: [["shell.run", "allow", CAP]],
  },
  refused: {
    prepare: setup((f) =>
      f.grant({ type: "shell", argv: ["touch", "made"], scope: "exact" }, ["execute"], "deny")
    ),
    run: async (f) => {
      await refusedWith(
        () => f.runtime.primitives.shell.run(f.pid, { argv: ["touch", "made"] }),
        CapabilityDeniedError,
      );
      assert.equal(exists(f.at("made")), false, "the command did not run");
    },
    records: [["shell.run", "deny", CAP]],
  },
}, {
  op: "NetPrimitive.fetch",
  allowed: {
    prepare: setup((f) =>
      f.grant({ type: "net", key: "example.com", scope: "exact" }, ["connect"])
    ),
    run: async (f) => {
      const res = await f.runtime.primitives.net.fetch(f.pid, { url: "http://example.com/" });
      assert.equal(res.status, 200);
      assert.equal(f.sent.length, 1);
    },
    records: [["net.fetch", "allow", CAP]],
  },
  refused: {
    run: async (f) => {
      await refusedWith(
        () => f.runtime.primitives.net.fetch(f.pid, { url: "http://example.com/" }),
        CapabilityDeniedError,
      );
      assert.deepEqual(f.sent, [], "nothing was sent");
    },
    records: [["net.fetch", "deny", DEFAULT]],
  },
}, {
  op: "McpPrimitive.call",
  allowed: {
    prepare: setup((f) => f.grant({ type: "mcp", key: "fx/echo", scope: "exact" }, ["invoke"])),
    run: async (f) => {
      const result = await f.runtime.primitives.mcp.call(f.pid, {
        server: "fx",
        tool: "echo",
        arguments: { text: "hi" },
      });
      assert.equal(result.text, "hi");
      assert.deepEqual(f.mcpCalls, ["echo hi"]);
    },
    records: [["mcp.start", "allow", /^config:\/mcp\.json$/], ["mcp.call", "allow", CAP]],
  },
  refused: {
    prepare: setup((f) =>
      f.grant({ type: "mcp", key: "fx/", scope: "prefix" }, ["invoke"], "deny")
    ),
    run: async (f) => {
      await refusedWith(
        () =>
          f.runtime.primitives.mcp.call(f.pid, {
            server: "fx",
            tool: "echo",
            arguments: { text: "hi" },
          }),
        CapabilityDeniedError,
      );
      assert.deepEqual(f.mcpCalls, [], "nothing reached the server");
    },
    records: [["mcp.start", "allow", /^config:/], ["mcp.call", "deny", CAP]],
  },
}, {
  op: "McpPrimitive.tools",
  allowed: {
    run: async (f) => {
      const { tools } = await f.runtime.primitives.mcp.tools(f.pid, "fx");
      assert.deepEqual(tools.map((t) => t.brokerName), ["mcp__fx__echo"]);
    },
    records: [["mcp.start", "allow", /^config:/]],
  },
  refused: {
    prepare: setup((f) =>
      f.grant({ type: "shell", argv: ["/bin/true"], scope: "exact" }, ["execute"], "deny")
    ),
    run: async (f) => {
      await refusedWith(() => f.runtime.primitives.mcp.tools(f.pid, "fx"), CapabilityDeniedError);
      assert.deepEqual(f.mcpCalls, []);
    },
    records: [["mcp.start", "deny", CAP]],
  },
}, {
  op: "ClockPrimitive.now",
  allowed: {
    run: (f) => f.runtime.primitives.clock.now(f.pid),
    records: [["clock.now", "allow", /^runtime$/]],
  },
  refused: { skip: "the clock needs no capability: reading it is never refused" },
}, {
  op: "ClockPrimitive.sleepUntil",
  allowed: {
    run: (f) => f.runtime.primitives.clock.sleepUntil(f.pid, 10),
    records: [["clock.sleep", "allow", /^runtime$/]],
  },
  refused: { skip: "the clock needs no capability: a bounded sleep is never refused" },
}, {
  op: "ClockPrimitive.wait",
  allowed: {
    run: (f) => f.runtime.primitives.clock.wait(f.pid, 1),
    records: [["clock.sleep", "allow", /^runtime$/]],
  },
  refused: { skip: "the clock needs no capability: a bounded sleep is never refused" },
}]; /** The other process's note, which `pid` may not touch. */
const foreign = (f: Fixture): Ctx => ({
  oid: f.note(f.other, "theirs"),
}); /** A note of `pid`'s own. */
const own = (f: Fixture): Ctx => ({
  oid: f.note(f.pid, "mine"),
}); /** Asserts the one answer for "no such object" and "you may not". */
const invisible = (run: () => unknown) =>
  refusedWith(run, CapabilityDeniedError, "capability_denied");
const memoryRows: Row[] = [{
  op: "ObjectMemory.createNamespace",
  allowed: {
    prepare: setup((f) =>
      f.grant({ type: "namespace", key: "team/notes", scope: "exact" }, ["create"])
    ),
    run: (f) => f.runtime.memory.createNamespace(f.pid, "team/notes"),
    records: [["namespace.create", "allow", CAP]],
  },
  refused: {
    run: async (f) => {
      await refusedWith(
        () => f.runtime.memory.createNamespace(f.pid, "team/notes"),
        CapabilityDeniedError,
      );
      assert.equal(f.runtime.store.getNamespace("team/notes"), undefined, "no namespace was made");
    },
    records: [["namespace.create", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.create",
  allowed: { run: (f) => f.note(f.pid), records: [["object.create", "allow", CAP]] },
  refused: {
    run: async (f) => {
      await refusedWith(
        () =>
          f.runtime.memory.create(f.pid, {
            namespace: `process:${f.other}`,
            type: "note",
            payload: "planted",
            provenance: PROVENANCE,
          }),
        CapabilityDeniedError,
      );
      assert.deepEqual(
        f.runtime.memory.list("operator", `process:${f.other}`),
        [],
        "nothing planted",
      );
    },
    records: [["object.create", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.read",
  allowed: {
    prepare: own,
    run: (f, c) => assert.equal(f.runtime.memory.read(f.pid, c.oid!).payload, `a note of ${f.pid}`),
    records: [["object.read", "allow", CAP]],
  },
  refused: {
    prepare: foreign,
    run: (f, c) => invisible(() => f.runtime.memory.read(f.pid, c.oid!)),
    records: [["object.read", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.info",
  allowed: {
    prepare: own,
    run: (f, c) => f.runtime.memory.info(f.pid, c.oid!),
    records: [["object.read", "allow", CAP]],
  },
  refused: {
    prepare: foreign,
    run: (f, c) => invisible(() => f.runtime.memory.info(f.pid, c.oid!)),
    records: [["object.read", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.readByName",
  allowed: {
    prepare: own,
    run: (f) => f.runtime.memory.readByName(f.pid, `process:${f.pid}`, "mine"),
    records: [["object.read", "allow", CAP]],
  },
  refused: {
    prepare: foreign,
    run: (f) => invisible(() => f.runtime.memory.readByName(f.pid, `process:${f.other}`, "theirs")),
    records: [["object.lookup", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.list",
  allowed: {
    prepare: own,
    run: (f) => assert.equal(f.runtime.memory.list(f.pid).length, 1),
    records: [["namespace.list", "allow", CAP]],
  },
  refused: {
    prepare: foreign,
    run: (f) => invisible(() => f.runtime.memory.list(f.pid, `process:${f.other}`)),
    records: [["namespace.list", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.query",
  allowed: {
    prepare: own,
    run: (f) =>
      assert.equal(
        f.runtime.memory.query(f.pid, { namespace: `process:${f.pid}` }).objects.length,
        1,
      ),
    records: [["object.query", "allow", CAP]],
  },
  refused: {
    prepare: foreign,
    run: (f) => invisible(() => f.runtime.memory.query(f.pid, { namespace: `process:${f.other}` })),
    records: [["object.query", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.update",
  allowed: {
    prepare: own,
    run: (f, c) => f.runtime.memory.update(f.pid, c.oid!, { payload: "changed" }),
    records: [["object.write", "allow", CAP]],
  },
  refused: {
    prepare: foreign,
    run: async (f, c) => {
      await invisible(() => f.runtime.memory.update(f.pid, c.oid!, { payload: "defaced" }));
      assert.equal(f.runtime.memory.read("operator", c.oid!).payload, `a note of ${f.other}`);
    },
    records: [["object.write", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.rename",
  allowed: {
    prepare: own,
    run: (f, c) => f.runtime.memory.rename(f.pid, c.oid!, "renamed"),
    // Naming needs namespace list too: named in `also`, not a record of its own.
    records: [["object.rename", "allow", CAP]],
  },
  refused: {
    prepare: foreign,
    run: async (f, c) => {
      await invisible(() => f.runtime.memory.rename(f.pid, c.oid!, "renamed"));
      assert.equal(f.runtime.memory.read("operator", c.oid!).info.name, "theirs");
    },
    records: [["object.rename", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.move",
  allowed: {
    prepare: (f) => {
      f.grant({ type: "namespace", key: "team/notes", scope: "exact" }, ["create"]);
      f.runtime.memory.createNamespace(f.pid, "team/notes");
      return own(f);
    },
    run: (f, c) => f.runtime.memory.move(f.pid, c.oid!, "team/notes"),
    records: [["object.move", "allow", CAP]],
  },
  refused: {
    prepare: foreign,
    run: async (f, c) => {
      await invisible(() => f.runtime.memory.move(f.pid, c.oid!, `process:${f.pid}`));
      assert.equal(f.runtime.memory.read("operator", c.oid!).info.namespace, `process:${f.other}`);
    },
    records: [["object.move", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.delete",
  allowed: {
    prepare: own,
    run: (f, c) => f.runtime.memory.delete(f.pid, c.oid!),
    records: [["object.delete", "allow", CAP]],
  },
  refused: {
    prepare: foreign,
    run: async (f, c) => {
      await invisible(() => f.runtime.memory.delete(f.pid, c.oid!));
      assert.ok(f.runtime.store.getObject(c.oid!), "the object is still there");
    },
    records: [["object.delete", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.link",
  allowed: {
    prepare: (f) => ({ a: f.note(f.pid), b: f.note(f.pid) }),
    run: (f, c) => f.runtime.memory.link(f.pid, c.a!, c.b!, "derived_from"),
    records: [["object.link", "allow", CAP]],
  },
  refused: {
    // Link on its own object, but no read on the other end.
    prepare: (f) => ({ a: f.note(f.pid), b: f.note(f.other) }),
    run: async (f, c) => {
      await invisible(() => f.runtime.memory.link(f.pid, c.a!, c.b!, "derived_from"));
      assert.deepEqual(f.runtime.store.listLinks(c.a!, 10), [], "no link was made");
    },
    records: [["object.link", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.unlink",
  allowed: {
    prepare: (f) => {
      const c = { a: f.note(f.pid), b: f.note(f.pid) };
      f.runtime.memory.link(f.pid, c.a, c.b, "derived_from");
      return c;
    },
    run: (f, c) => assert.equal(f.runtime.memory.unlink(f.pid, c.a!, c.b!, "derived_from"), true),
    records: [["object.unlink", "allow", CAP]],
  },
  refused: {
    prepare: (f) => {
      const c = { a: f.note(f.other), b: f.note(f.other) };
      f.runtime.memory.link(f.other, c.a, c.b, "derived_from");
      return c;
    },
    run: async (f, c) => {
      await invisible(() => f.runtime.memory.unlink(f.pid, c.a!, c.b!, "derived_from"));
      assert.equal(f.runtime.store.listLinks(c.a!, 10).length, 1, "the link is still there");
    },
    records: [["object.unlink", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.links",
  allowed: {
    prepare: own,
    run: (f, c) => f.runtime.memory.links(f.pid, c.oid!),
    records: [["object.links", "allow", CAP]],
  },
  refused: {
    prepare: foreign,
    run: (f, c) => invisible(() => f.runtime.memory.links(f.pid, c.oid!)),
    records: [["object.links", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.handle",
  allowed: {
    prepare: own,
    run: (f, c) => assert.ok(f.runtime.memory.handle(f.pid, c.oid!).rights.includes("read")),
    records: [["object.handle", "allow", CAP]],
  },
  refused: {
    prepare: foreign,
    run: (f, c) => invisible(() => f.runtime.memory.handle(f.pid, c.oid!)),
    records: [["object.handle", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.grant",
  allowed: {
    prepare: own,
    run: (f, c) => f.runtime.memory.grant(f.pid, c.oid!, f.other, ["read"]),
    records: [["object.grant", "allow", CAP]],
  },
  refused: {
    // Passing on another process's object: `pid` holds no grant right on it.
    prepare: (f) => ({
      oid: f.note(f.other),
      third: f.runtime.processes.spawn({ goal: "t", image: "base-agent:v0" }).pid,
    }),
    run: async (f, c) => {
      await invisible(() => f.runtime.memory.grant(f.pid, c.oid!, c.third!, ["read"]));
      assert.equal(f.runtime.memory.view(c.third!).length, 0, "nothing was passed on");
    },
    records: [["object.grant", "deny", DEFAULT]],
  },
}, {
  op: "ObjectMemory.merge",
  allowed: {
    prepare: (f) => {
      const child = f.runtime.processes.fork(f.pid, {}, f.self).pid;
      const result = f.note(child);
      f.runtime.processes.exit(child, { result }, { kind: "process", pid: child });
      return { child };
    },
    run: (f, c) => f.runtime.memory.merge(f.pid, c.child!),
    records: [["object.merge", "allow", CAP]],
  },
  refused: {
    // Not its child: another process's result is not its to take.
    prepare: (f) => {
      const result = f.note(f.other);
      f.runtime.processes.exit(f.other, { result });
      return { result };
    },
    run: async (f, c) => {
      await refusedWith(
        () => f.runtime.memory.merge(f.pid, f.other),
        IllegalTransitionError,
        "not_a_child",
      );
      await invisible(() => f.runtime.memory.read(f.pid, c.result!));
    },
    records: [["object.merge", "deny", /^lineage:not_a_child$/], ["object.read", "deny", DEFAULT]],
  },
}];
const imageRows: Row[] = [{
  op: "ImageRegistry.get",
  allowed: {
    run: (f) => f.runtime.images.get(f.pid, "base-agent:v0"),
    records: [["image.read", "allow", CAP]],
  },
  refused: {
    prepare: setup((f) =>
      f.grant({ type: "image", key: "base-agent:v0", scope: "exact" }, ["read"], "deny")
    ),
    run: (f) =>
      refusedWith(() => f.runtime.images.get(f.pid, "base-agent:v0"), CapabilityDeniedError),
    records: [["image.read", "deny", CAP]],
  },
}, {
  op: "ImageRegistry.loadYaml",
  allowed: {
    prepare: setup((f) =>
      f.grant({ type: "image", key: "docs-reader:v1", scope: "exact" }, ["write"])
    ),
    run: (f) => f.runtime.images.loadYaml(f.pid, DOCS_READER),
    records: [["image.load", "allow", CAP]],
  },
  refused: {
    run: async (f) => {
      await refusedWith(() => f.runtime.images.loadYaml(f.pid, DOCS_READER), CapabilityDeniedError);
      assert.equal(f.runtime.images.resolve("docs-reader:v1"), undefined, "nothing was loaded");
    },
    records: [["image.load", "deny", DEFAULT]],
  },
}, {
  op: "ImageRegistry.load",
  allowed: {
    prepare: setup((f) =>
      f.grant({ type: "image", key: "docs-reader:v1", scope: "exact" }, ["write"])
    ),
    run: (f) => f.runtime.images.load(f.pid, parseStrictYaml(DOCS_READER, { source: "test" })),
    records: [["image.load", "allow", CAP]],
  },
  refused: {
    run: async (f) => {
      await refusedWith(
        () => f.runtime.images.load(f.pid, parseStrictYaml(DOCS_READER, { source: "test" })),
        CapabilityDeniedError,
      );
      assert.equal(f.runtime.images.resolve("docs-reader:v1"), undefined, "nothing was loaded");
    },
    records: [["image.load", "deny", DEFAULT]],
  },
}]; /** The children of `pid`. */
const children = (f: Fixture) =>
  f.runtime.processes.list({
    parent: f.pid,
  }); /** A scope `pid` does not hold: the whole network. */
const NET_ANY = [{
  resource: { type: "net", key: "*", scope: "any" } as const,
  rights: ["connect" as const],
}];
const processRows: Row[] = [{
  op: "ProcessManager.spawn",
  allowed: {
    run: (f) => f.runtime.processes.spawn({ goal: "top", image: "base-agent:v0" }),
    records: [["process.spawn", "allow", /^operator$/]],
  },
  refused: {
    run: async (f) => {
      const before = f.runtime.processes.list().length;
      await refusedWith(
        () => f.runtime.processes.spawn({ goal: "escape", image: "base-agent:v0" }, f.self),
        IllegalTransitionError,
        "not_a_child",
      );
      assert.equal(f.runtime.processes.list().length, before, "no process was made");
    },
    records: [["process.spawn", "deny", /^lineage:not_a_child$/]],
  },
}, {
  op: "ProcessManager.fork",
  allowed: {
    run: (f) => f.runtime.processes.fork(f.pid, {}, f.self),
    records: [["process.fork", "allow", CAP]],
  },
  refused: {
    run: async (f) => {
      await refusedWith(
        () => f.runtime.processes.fork(f.pid, { inherit: NET_ANY }, f.self),
        CapabilityDeniedError,
        "cannot_delegate",
      );
      assert.deepEqual(children(f), [], "no child was made");
    },
    records: [["process.fork", "deny", DEFAULT]],
  },
}, {
  op: "ProcessManager.spawnChild",
  allowed: {
    run: (f) =>
      f.runtime.processes.spawnChild(f.pid, { goal: "c", image: "base-agent:v0" }, f.self),
    records: [["process.spawn_child", "allow", CAP]],
  },
  refused: {
    run: async (f) => {
      await refusedWith(
        () =>
          f.runtime.processes.spawnChild(f.pid, {
            goal: "c",
            image: "base-agent:v0",
            inherit: NET_ANY,
          }, f.self),
        CapabilityDeniedError,
        "cannot_delegate",
      );
      assert.deepEqual(children(f), [], "no child was made");
    },
    records: [["process.spawn_child", "deny", DEFAULT]],
  },
}, {
  op: "ProcessManager.exec",
  allowed: {
    run: (f) => f.runtime.processes.exec(f.pid, { image: "base-agent:v0" }, f.self),
    records: [["process.exec", "allow", CAP]],
  },
  refused: {
    prepare: setup((f) => {
      f.runtime.images.loadYaml("operator", DOCS_READER);
      f.grant({ type: "image", key: "docs-reader:v1", scope: "exact" }, ["read"], "deny");
    }),
    run: async (f) => {
      await refusedWith(
        () => f.runtime.processes.exec(f.pid, { image: "docs-reader:v1" }, f.self),
        CapabilityDeniedError,
      );
      assert.equal(
        f.runtime.processes.get(f.pid).image,
        "base-agent:v0",
        "the image is unchanged",
      );
    },
    records: [["process.exec", "deny", CAP]],
  },
}, {
  op: "ProcessManager.chdir",
  allowed: {
    prepare: setup((f) => Deno.mkdirSync(f.at("sub"))),
    run: (f) => assert.equal(f.runtime.processes.chdir(f.pid, "sub", f.self).cwd, "sub"),
    records: [["process.chdir", "allow", CAP]],
  },
  refused: {
    prepare: (f) => {
      Deno.mkdirSync(f.at("sub"));
      f.grant({ type: "fs", path: "sub", scope: "exact" }, ["stat"], "deny");
      return {};
    },
    run: async (f) => {
      await refusedWith(
        () => f.runtime.processes.chdir(f.pid, "sub", f.self),
        CapabilityDeniedError,
      );
      assert.equal(f.runtime.processes.get(f.pid).cwd, ".", "the cwd is unchanged");
    },
    records: [["process.chdir", "deny", CAP]],
  },
}, {
  op: "ProcessManager.collectChild",
  allowed: {
    prepare: (f) => {
      const child = f.runtime.processes.fork(f.pid, {}, f.self).pid;
      f.runtime.processes.exit(child, {}, { kind: "process", pid: child });
      return { child };
    },
    run: (f, c) =>
      assert.equal(f.runtime.processes.collectChild(f.pid, c.child!, f.self)?.pid, c.child),
    records: [["process.wait", "allow", CAP]],
  },
  refused: {
    prepare: setup((f) => f.runtime.processes.exit(f.other)),
    run: async (f) => {
      await refusedWith(
        () => f.runtime.processes.collectChild(f.pid, f.other, f.self),
        CapabilityDeniedError,
      );
      assert.equal(f.runtime.processes.get(f.other).reaped, false, "nothing was collected");
    },
    records: [["process.wait", "deny", DEFAULT]],
  },
}, {
  op: "ProcessManager.signal",
  allowed: {
    prepare: (f) => ({ child: f.runtime.processes.fork(f.pid, {}, f.self).pid }),
    run: (f, c) =>
      assert.equal(f.runtime.processes.signal(c.child!, "pause", f.self).status, "paused"),
    records: [["process.signal", "allow", CAP]],
  },
  refused: {
    run: async (f) => {
      await refusedWith(
        () => f.runtime.processes.signal(f.other, "terminate", f.self),
        IllegalTransitionError,
        "not_a_child",
      );
      assert.equal(f.runtime.processes.get(f.other).status, "runnable", "it runs on");
    },
    records: [["process.signal", "deny", /^lineage:not_a_child$/]],
  },
}, {
  op: "ProcessManager.exit",
  allowed: {
    run: (f) => assert.equal(f.runtime.processes.exit(f.pid, {}, f.self).status, "exited"),
    records: [["process.exit", "allow", /^self$/]],
  },
  refused: {
    run: async (f) => {
      await refusedWith(
        () => f.runtime.processes.exit(f.other, {}, f.self),
        IllegalTransitionError,
        "not_a_child",
      );
      assert.equal(f.runtime.processes.get(f.other).status, "runnable", "it runs on");
    },
    records: [["process.exit", "deny", /^lineage:not_a_child$/]],
  },
}];

/** The request `run` parked on. */
async function parked(run: () => unknown): Promise<string> {
  let request = "";
  await assert.rejects(
    async () => {
      await run();
    },
    (error: unknown) => {
      assert.ok(error instanceof HumanPendingError, String(error));
      request = error.request;
      return true;
    },
  );
  return request;
}

const OWNER = { type: "human", key: "owner", scope: "exact" } as const;
const PERMISSION = {
  resource: { type: "fs", path: "docs", scope: "subtree" } as const,
  rights: ["read"],
  reason: "to read the docs",
};

const humanRows: Row[] = [
  {
    op: "HumanChannel.ask",
    allowed: {
      run: (f) => parked(() => f.runtime.human.ask(f.pid, "Which branch?")),
      records: [["human.question", "allow", CAP]],
    },
    refused: {
      prepare: setup((f) => f.grant(OWNER, ["write"], "deny")),
      run: async (f) => {
        await refusedWith(() => f.runtime.human.ask(f.pid, "Which branch?"), CapabilityDeniedError);
        assert.deepEqual(f.runtime.human.list({ pid: f.pid }), [], "no question was stored");
      },
      records: [["human.question", "deny", CAP]],
    },
  },
  {
    op: "HumanChannel.output",
    allowed: {
      run: (f) => f.runtime.human.output(f.pid, "Done."),
      records: [["human.output", "allow", CAP]],
    },
    refused: {
      prepare: setup((f) => f.grant(OWNER, ["write"], "deny")),
      run: (f) => refusedWith(() => f.runtime.human.output(f.pid, "Done."), CapabilityDeniedError),
      records: [["human.output", "deny", CAP]],
    },
  },
  {
    op: "HumanChannel.requestPermission",
    allowed: {
      run: (f) => parked(() => f.runtime.human.requestPermission(f.pid, PERMISSION)),
      records: [["human.permission", "allow", CAP]],
    },
    refused: {
      prepare: setup((f) => f.grant(OWNER, ["write"], "deny")),
      run: (f) =>
        refusedWith(
          () => f.runtime.human.requestPermission(f.pid, PERMISSION),
          CapabilityDeniedError,
        ),
      records: [["human.permission", "deny", CAP]],
    },
  },
  {
    op: "HumanChannel.escalate",
    allowed: {
      fixture: { human: "interactive", answer: "approve" },
      // A write to a protected path asks in every mode; the human approves it at the terminal.
      run: async (f) => {
        await f.runtime.primitives.fs.writeText(f.pid, { path: ".gitmodules", content: "x" });
        assert.equal(Deno.readTextFileSync(f.at(".gitmodules")), "x");
      },
      records: [
        ["fs.write", "ask", /^protected:/],
        ["human.approve", "allow", /^human:terminal$/],
        ["fs.write", "allow", CAP],
      ],
    },
    refused: {
      // No human is reachable: the ask is answered no at once, on the runtime's authority.
      fixture: { human: "none" },
      run: async (f) => {
        await refusedWith(
          () => f.runtime.primitives.fs.writeText(f.pid, { path: ".gitmodules", content: "x" }),
          HumanDecisionError,
          "human_unavailable",
        );
        assert.equal(exists(f.at(".gitmodules")), false, "nothing was written");
      },
      records: [["fs.write", "ask", /^protected:/], ["human.approval", "deny", /^human:none$/]],
    },
  },
  {
    op: "HumanChannel.approve",
    allowed: {
      prepare: async (f) => ({
        id: await parked(() => f.runtime.human.requestPermission(f.pid, PERMISSION)),
      }),
      run: (f, c) => f.runtime.human.approve(c.id!, { by: "human:cli" }),
      records: [["human.approve", "allow", /^human:cli$/]],
    },
    refused: { skip: "a human's approval is itself the decision (a refusal is reject)" },
  },
  {
    op: "HumanChannel.reject",
    allowed: {
      prepare: async (f) => ({
        id: await parked(() => f.runtime.human.requestPermission(f.pid, PERMISSION)),
      }),
      run: (f, c) => f.runtime.human.reject(c.id!, { by: "human:cli" }),
      // Done, a rejection is the human's deny.
      records: [["human.reject", "deny", /^human:cli$/]],
    },
    refused: { skip: "a human's rejection is itself the decision" },
  },
];

const restRows: Row[] = [
  {
    op: "Checkpoints.create",
    allowed: {
      run: (f) => f.runtime.checkpoints.create(f.pid, "before", f.pid),
      // The checkpoint is stored by the runtime, on its own authority, with the decision.
      records: [["object.create", "allow", /^runtime$/], ["checkpoint.create", "allow", /^self$/]],
    },
    refused: { skip: "a process may always checkpoint itself (its own state); nothing to refuse" },
  },
  {
    op: "Checkpoints.restore",
    allowed: {
      prepare: (f) => ({ id: f.runtime.checkpoints.create(f.pid, "before", f.pid).id }),
      run: (f, c) => f.runtime.checkpoints.restore(f.pid, c.id!),
      records: [["process.restore", "allow", /^operator$/], [
        "checkpoint.restore",
        "allow",
        /^operator$/,
      ]],
    },
    refused: { skip: "only the operator restores, on its own authority" },
  },
  {
    op: "CapabilityTable.grant",
    allowed: {
      run: (f) => f.grant({ type: "net", key: "example.com", scope: "exact" }, ["connect"]),
      records: [["capability.grant", "allow", /^operator$/]],
    },
    refused: {
      skip:
        "the operator grants on its own authority; a process passes rights only through object grants and delegation (their rows)",
    },
  },
  {
    op: "ToolBroker.invoke",
    allowed: {
      run: async (f) =>
        assert.equal(
          (await f.runtime.tools.invoke(f.pid, { name: "get_current_time", arguments: {} }, NEVER))
            .ok,
          true,
        ),
      // Invocation (the broker) and authority (the primitive) are two decisions; the result is
      // stored by the runtime on its own authority.
      records: [
        ["tool.invoke", "allow", /^tool_table$/],
        ["clock.now", "allow", /^runtime$/],
        ["object.create", "allow", /^runtime$/],
      ],
    },
    refused: {
      run: async (f) => {
        const result = await f.runtime.tools.invoke(f.pid, {
          name: "run_shell_command",
          arguments: { argv: ["touch", "x"] },
        }, NEVER);
        assert.equal(!result.ok && result.error.code, "tool_not_visible");
        assert.equal(exists(f.at("x")), false, "nothing ran");
      },
      records: [["tool.invoke", "deny", /^not_in_tool_table$/]],
    },
  },
  {
    op: "ToolBroker.registerJit",
    allowed: {
      run: (f) =>
        f.runtime.tools.registerJit(f.pid, {
          name: "my_tool",
          description: "Mine.",
          args: z.object({}).strict(),
          parameters: { type: "object" },
          effects: [],
          origin: "jit",
          run: () => "mine",
        }),
      records: [["tool.register", "allow", /^registration$/]],
    },
    refused: {
      run: async (f) => {
        await refusedWith(
          () =>
            f.runtime.tools.registerJit(f.pid, {
              name: "read_text_file",
              description: "Shadows a built-in.",
              args: z.object({}).strict(),
              parameters: { type: "object" },
              effects: [],
              origin: "jit",
              run: () => "shadow",
            }),
          ValidationError,
        );
        assert.equal(f.runtime.tools.visible(f.pid).filter((t) => t.origin === "jit").length, 0);
      },
      records: [["tool.register", "deny", /^name_taken$/]],
    },
  },
];

/** A proposed and validated candidate of `pid`'s; returns its oid. */
async function validated(f: Fixture, name = "echo_tool"): Promise<string> {
  const oid = f.jit().propose(f.pid, echoCandidate(BENIGN, name));
  assert.equal((await f.jit().validate(f.pid, oid)).ok, true, "control: it validates");
  return oid;
}

const jitRows: Row[] = [
  {
    op: "JitToolLifecycle.propose",
    allowed: {
      run: (f) => f.jit().propose(f.pid, echoCandidate(BENIGN)),
      records: [["object.create", "allow", CAP]],
    },
    refused: {
      // Under read-only, a process may not even write its own scratch objects.
      fixture: { mode: "read-only" },
      run: async (f) => {
        await refusedWith(
          () => f.jit().propose(f.pid, echoCandidate(BENIGN)),
          CapabilityDeniedError,
        );
        assert.deepEqual(
          f.runtime.memory.list("operator", `process:${f.pid}`),
          [],
          "nothing stored",
        );
      },
      records: [["object.create", "deny", /^mode:read-only$/]],
    },
  },
  {
    op: "JitToolLifecycle.validate",
    allowed: {
      prepare: (f) => ({ oid: f.jit().propose(f.pid, echoCandidate(BENIGN)) }),
      run: async (f, c) => assert.equal((await f.jit().validate(f.pid, c.oid!)).ok, true),
      // It reads the candidate; the validation it stores is the runtime's own record.
      records: [["object.read", "allow", CAP], ["object.create", "allow", /^runtime$/]],
    },
    refused: {
      prepare: (f) => {
        // Another process's candidate: its oid alone grants nothing.
        return { oid: f.jit().propose(f.other, echoCandidate(BENIGN)) };
      },
      run: (f, c) => invisible(() => f.jit().validate(f.pid, c.oid!)),
      records: [["object.read", "deny", DEFAULT]],
    },
  },
  {
    op: "JitToolLifecycle.register",
    allowed: {
      prepare: async (f) => {
        f.grant({ type: "tool", key: "echo_tool", scope: "exact" }, ["register"]);
        return { oid: await validated(f) };
      },
      run: async (f, c) => assert.equal(await f.jit().register(f.pid, c.oid!), "echo_tool"),
      // It reads the candidate; the registration it stores is the runtime's own record.
      records: [
        ["object.read", "allow", CAP],
        ["tool.register", "allow", CAP],
        ["object.create", "allow", /^runtime$/],
      ],
    },
    refused: {
      prepare: async (f) => {
        f.grant({ type: "tool", key: "echo_tool", scope: "exact" }, ["register"], "deny");
        return { oid: await validated(f) };
      },
      run: async (f, c) => {
        await refusedWith(() => f.jit().register(f.pid, c.oid!), CapabilityDeniedError);
        assert.equal(f.runtime.tools.visible(f.pid).some((t) => t.name === "echo_tool"), false);
      },
      records: [["object.read", "allow", CAP], ["tool.register", "deny", CAP]],
    },
  },
];

const ROWS: readonly Row[] = [
  ...fsRows,
  ...effectRows,
  ...memoryRows,
  ...imageRows,
  ...processRows,
  ...humanRows,
  ...restRows,
  ...jitRows,
];

// ---------------------------------------------------------------- the checks

/** The last record's sequence number. */
function tail(runtime: Runtime): number {
  return runtime.audit.query({ order: "desc", limit: 1 })[0]?.seq ?? 0;
}

/**
 * The decision records after `seq`: every record whose decision is allow, ask or deny — but a
 * capability's own grant or revocation (their `decision` is the capability's effect), unless
 * that is what the row is about.
 */
function decisions(runtime: Runtime, seq: number, keepGrants: boolean): AuditRecord[] {
  return runtime.audit.query({ afterSeq: seq, limit: 1000 }).filter((r) =>
    r.decision !== "none" && (keepGrants || !r.action.startsWith("capability."))
  );
}

async function check(row: Row, c: Case, what: "allowed" | "refused"): Promise<void> {
  await using f = await fixture(c.fixture);
  const ctx = (await c.prepare?.(f)) ?? {};
  const mark = tail(f.runtime);
  await c.run(f, ctx);
  f.runtime.store.flush();
  const found = decisions(f.runtime, mark, row.op.startsWith("CapabilityTable."));
  assert.deepEqual(
    found.map((r) => `${r.action} ${r.decision}`),
    c.records.map(([action, decision]) => `${action} ${decision}`),
    `${row.op} ${what}: exactly one record per decision it took, in order (got ${
      JSON.stringify(found.map((r) => [r.action, r.decision, r.authority]))
    })`,
  );
  for (const [i, [action, , authority]] of c.records.entries()) {
    assert.match(found[i]!.authority, authority, `${row.op} ${what}: what decided ${action}`);
  }
}

for (const row of ROWS) {
  const actions = row.allowed.records.map(([a, d]) => `${a} ${d}`).join(", ");
  Deno.test(`${row.op}() allowed leaves exactly one decision record per decision (${actions}), naming what allowed it`, async () => {
    await check(row, row.allowed, "allowed");
  });
  const refused = row.refused;
  if ("skip" in refused) continue;
  const refusal = refused.records.map(([a, d]) => `${a} ${d}`).join(", ");
  Deno.test(`${row.op}() refused is recorded (${refusal}) naming what refused it, and its effect does not happen`, async () => {
    await check(row, refused, "refused");
  });
}

Deno.test("ObjectMemory.update() allowed, then failed (an immutable object): its one record is the allow, with detail.failed, and nothing changed", async () => {
  await using f = await fixture();
  const oid = f.runtime.memory.create(f.pid, {
    type: "note",
    payload: "fixed",
    immutable: true,
    provenance: PROVENANCE,
  }).oid;
  const mark = tail(f.runtime);
  await refusedWith(
    () => f.runtime.memory.update(f.pid, oid, { payload: "changed" }),
    ValidationError,
  );
  assert.equal(f.runtime.memory.read("operator", oid).payload, "fixed");
  assert.deepEqual(
    decisions(f.runtime, mark, false).map((r) => [r.action, r.decision, r.detail?.failed]),
    [["object.write", "allow", "validation_failed"]],
  );
  assert.match(decisions(f.runtime, mark, false)[0]!.authority, CAP);
});

Deno.test("FilesystemPrimitive.readText() allowed, then failed (no such file): its one record is the allow, with detail.failed", async () => {
  await using f = await fixture();
  f.grant({ type: "fs", path: "missing.txt", scope: "exact" }, ["read"]);
  const mark = tail(f.runtime);
  await refusedWith(
    () => f.runtime.primitives.fs.readText(f.pid, { path: "missing.txt" }),
    NotFoundError,
  );
  assert.deepEqual(
    decisions(f.runtime, mark, false).map((r) => [r.action, r.decision, r.detail?.failed]),
    [["fs.read", "allow", "not_found"]],
  );
  assert.match(decisions(f.runtime, mark, false)[0]!.authority, CAP);
});

Deno.test("ShellPrimitive.run() allowed, then failed (no such program): its one record is the allow, with detail.failed; nothing ran", async () => {
  await using f = await fixture();
  const argv = ["libos-no-such-program-91c2"];
  f.grant({ type: "shell", argv, scope: "exact" }, ["execute"]);
  const mark = tail(f.runtime);
  await refusedWith(() => f.runtime.primitives.shell.run(f.pid, { argv }), NotFoundError);
  assert.deepEqual(
    decisions(f.runtime, mark, false).map((r) => [r.action, r.decision, r.detail?.failed]),
    [["shell.run", "allow", "not_found"]],
  );
  assert.match(decisions(f.runtime, mark, false)[0]!.authority, CAP);
});

Deno.test("ProcessManager.fork() refused by its live-children budget (inside the step that rolls back) is recorded once, as a deny naming the budget; no child", async () => {
  await using f = await fixture();
  const parent = f.runtime.processes.fork(f.pid, { budgets: { maxLiveChildren: 0 } }, f.self).pid;
  const mark = tail(f.runtime);
  await refusedWith(
    () => f.runtime.processes.fork(parent, {}, { kind: "process", pid: parent }),
    BudgetExhaustedError,
    "budget_exhausted",
  );
  assert.deepEqual(f.runtime.processes.list({ parent }), [], "no child was made");
  assert.deepEqual(
    decisions(f.runtime, mark, false).map((r) => [r.action, r.decision, r.authority, r.pid]),
    [["process.fork", "deny", "budget:live_children", parent]],
  );
});

Deno.test("processContext() renders a process's view each turn without a record per object (a filter, decided); an explicit read of the same object is recorded", async () => {
  await using f = await fixture();
  const oid = f.note(f.pid);
  const mark = tail(f.runtime);
  const context = processContext(f.runtime.memory, f.pid);
  assert.ok(JSON.stringify(context).includes(`a note of ${f.pid}`), "control: the view shows it");
  assert.deepEqual(decisions(f.runtime, mark, false), [], "rendering decided nothing new");
  f.runtime.memory.read(f.pid, oid);
  assert.deepEqual(
    decisions(f.runtime, mark, false).map((r) => [r.action, r.decision]),
    [["object.read", "allow"]],
  );
});

/** The components whose operations decide, by the name the rows use. */
const COMPONENTS = {
  FilesystemPrimitive,
  ShellPrimitive,
  NetPrimitive,
  McpPrimitive,
  ClockPrimitive,
  ObjectMemory,
  ImageRegistry,
  ProcessManager,
  HumanChannel,
  Checkpoints,
  CapabilityTable,
  ToolBroker,
  JitToolLifecycle,
} as const;

/** Methods that are not operations a process (or a human) asks for, and why. */
const NOT_DECISIONS: Readonly<Record<string, string>> = {
  "FilesystemPrimitive.dispatch":
    "re-runs an approved stored action through its operation (its row)",
  "ShellPrimitive.wall": "probes whether the OS wall works here; decides nothing",
  "ShellPrimitive.toolchains": "the toolchain directories in force, for the run's first line",
  "ShellPrimitive.dispatch": "re-runs an approved stored action through run (its row)",
  "NetPrimitive.dispatch": "re-runs an approved stored action through fetch (its row)",
  "McpPrimitive.servers": "the configured servers' names: a lookup",
  "McpPrimitive.shownTo":
    "a filter: whether a tool is shown (the run ceiling's answer, unrecorded); each call is decided",
  "ObjectMemory.records":
    "the runtime's own reserved records, read by the runtime; no process asks",
  "ObjectMemory.dropRecords":
    "the runtime deletes its own records at an exec (audited as the runtime's)",
  "ObjectMemory.view":
    "the runtime rendering a process's own context each turn: which objects it shows is a filter",
  "ImageRegistry.resolve":
    "a lookup for the spawn path, which decides image read itself (its rows)",
  "ImageRegistry.list": "shows a process the images it may read: a filter, not a decision",
  "ProcessManager.onFinished": "registers a hook",
  "ProcessManager.onExec": "registers a hook",
  "ProcessManager.onFork": "registers a hook",
  "ProcessManager.dataVersion": "reads the store's version",
  "ProcessManager.listen": "registers a listener",
  "ProcessManager.find": "the runtime's lookup",
  "ProcessManager.get": "the runtime's lookup",
  "ProcessManager.list": "the runtime's lookup",
  "ProcessManager.start": "the operator's (audited as process.start on its own authority)",
  "ProcessManager.restoreShape": "part of the operator's checkpoint restore (its row)",
  "ProcessManager.fail": "the runtime's or the operator's (audited on their own authority)",
  "ProcessManager.chargeToolCall":
    "budget accounting; an exhausted budget is audited as budget.exhausted",
  "ProcessManager.chargeTokens":
    "budget accounting; an exhausted budget is audited as budget.exhausted",
  "ProcessManager.enforceWallTime":
    "budget accounting; an exhausted budget is audited as budget.exhausted",
  "ProcessManager.beginQuantum": "the scheduler's",
  "ProcessManager.endQuantum":
    "applies what the process's own tool asked (an exit is recorded as process.exit by self)",
  "ProcessManager.wakeHuman": "the scheduler's",
  "ProcessManager.wakeIfDue": "the scheduler's",
  "ProcessManager.recoverRunning": "recovery after a restart (audited as process.recover, none)",
  "ProcessManager.setPending": "the action ledger's bookkeeping",
  "HumanChannel.get": "the operator's lookup",
  "HumanChannel.list": "the operator's lookup",
  "HumanChannel.interrupt": "the human's message to a process (audited as human.interrupt, none)",
  "HumanChannel.alwaysOptions": "describes what an approval could mint; grants nothing",
  "HumanChannel.answer": "a human's answer to a question grants nothing (audited, none)",
  "HumanChannel.cancel": "withdraws a request (audited as human.cancel, none)",
  "HumanChannel.cancelSince": "withdraws requests (audited as human.cancel, none)",
  "HumanChannel.withdraw": "withdraws a request (audited as human.cancel, none)",
  "HumanChannel.settleWait": "the scheduler's bookkeeping",
  "HumanChannel.expireDue":
    "the runtime's expiry of unanswered requests (audited as human.expire, deny)",
  "HumanChannel.awaitResolution": "waits for a human's decision (recorded by approve/reject)",
  "HumanChannel.resume": "re-dispatches an approved action through its primitive (its row)",
  "HumanChannel.stating":
    "carries the model's stated reason to an approval request (the request's own record)",
  "HumanChannel.remembers": "a lookup: whether a project answer can be kept",
  "HumanChannel.rememberWith":
    "wiring: where project answers are kept (human.approve records what was remembered)",
  "Checkpoints.list": "the operator's read",
  "Checkpoints.get": "the operator's read",
  "Checkpoints.diff": "the operator's read",
  "CapabilityTable.generation": "the index's freshness",
  "CapabilityTable.checked": "the index's freshness",
  "CapabilityTable.list": "a lookup",
  "CapabilityTable.get": "a lookup",
  "CapabilityTable.isOneShot": "a lookup",
  "CapabilityTable.index": "a lookup",
  "CapabilityTable.approval": "part of decide()",
  "CapabilityTable.match": "part of decide()",
  "CapabilityTable.consume": "uses up a one-shot capability behind an allow already recorded",
  "CapabilityTable.revoke": "takes authority away (audited as capability.revoke, none)",
  "ToolBroker.registerBuiltin": "the host's setup",
  "ToolBroker.attachJit": "wiring",
  "ToolBroker.loadMcp":
    "lists the run's MCP servers through McpPrimitive.tools, which records mcp.start and mcp.list (tests/mcp_client_test.ts)",
  "ToolBroker.restoreJit": "puts back registrations already decided (their tool.register records)",
  "ToolBroker.dropJit": "the runtime's, at an exec or a finish",
  "ToolBroker.builtins": "a lookup",
  "ToolBroker.visible": "a lookup",
  "ToolBroker.keepResumed":
    "stores the outcome of an action its own records already decided (an approved call's result)",
  "ToolBroker.schemas": "a lookup",
  "JitToolLifecycle.dispatch": "re-runs an approved registration through register (its row)",
  "JitToolLifecycle.restore": "puts back registrations already decided, after a restart",
  "JitToolLifecycle.inherit":
    "at a fork: each tool passed on is decided on the child (tool.register)",
};

Deno.test("decision audit table: every operation of every authority-bearing component has a row — or a stated reason it decides nothing — so a new operation cannot go unrecorded", () => {
  const operations = Object.entries(COMPONENTS).flatMap(([name, component]) =>
    Object.getOwnPropertyNames(component.prototype)
      .filter((method) => method !== "constructor")
      .map((method) => `${name}.${method}`)
  );
  const rows = ROWS.map((r) => r.op);
  assert.deepEqual(
    operations.filter((op) => !rows.includes(op) && !(op in NOT_DECISIONS)),
    [],
    "operations without a row in this table",
  );
  assert.deepEqual(
    [...rows, ...Object.keys(NOT_DECISIONS)].filter((op) => !operations.includes(op)),
    [],
    "rows for operations that do not exist",
  );
  assert.deepEqual(
    rows.filter((op) => op in NOT_DECISIONS),
    [],
    "an operation is one or the other",
  );
  assert.equal(new Set(rows).size, rows.length, "one row per operation");
});

// ---------------------------------------------------------------- through the real launcher

/** An image whose agent can store, read, ask and fork (no built-in image has all four). */
const AUDITED = `id: audited:v1
name: audited
version: v1
description: Stores and reads notes, asks its human, forks.
systemPrompt: |
  You keep notes.
defaultTools: [create_memory_object, read_memory_object, ask_human, fork_child_process]
safety:
  maxMode: workspace-write
requiredCapabilities:
  - resource: { type: human, key: owner, scope: exact }
    rights: [write]
`;

interface CliRecord {
  readonly actor: string;
  readonly action: string;
  readonly decision: string;
  readonly authority: string;
  readonly resource: string;
  readonly pid: string | null;
  readonly detail: Record<string, unknown> | null;
}

Deno.test("libos agent through the real launcher: a scripted agent's allowed object read and its fork refused with cannot_delegate each leave one decision record in `libos audit query --json`, naming what decided; no child is made", async () => {
  using s = sandbox();
  const image = join(s.workspace, "..", "audited.yaml");
  Deno.writeTextFileSync(image, AUDITED);
  assert.equal((await s.cli("images", "load", image)).status, 0, "the operator loads the image");
  // First run: store a note, then ask the human (queue: the launcher stops, exit 3) — the pause
  // tells the test the oid the scripted model will read next.
  const script = join(s.workspace, "..", "script.jsonl");
  const first = [
    call("create_memory_object", { type: "note", payload: "for the record" }),
    call("ask_human", { question: "Go on?" }),
  ];
  Deno.writeTextFileSync(script, first.join("\n") + "\n");
  const agent = ["libos", "agent", "--model", `replay:${script}`, "--human", "queue", "--json"];
  const parked = await task(
    s.workspace,
    s.state,
    ...agent,
    "--goal",
    "keep a note",
    "--image",
    "audited:v1",
  );
  assert.equal(parked.status, 3, parked.stdout + parked.stderr);
  const { pid, waiting } = JSON.parse(parked.stdout) as {
    pid: string;
    waiting: { request: string };
  };
  const query = async (...filter: string[]): Promise<CliRecord[]> => {
    const run = await task(s.workspace, s.state, "libos", "audit", "query", "--json", ...filter);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    return (JSON.parse(run.stdout) as { records: CliRecord[] }).records;
  };
  const [created] = (await query("--pid", pid, "--action", "object.create"))
    .filter((r) => r.actor !== "runtime");
  const oid = created!.resource.slice(created!.resource.lastIndexOf("/") + 1);
  assert.match(oid, /^obj_/);
  assert.equal((await s.cli("human", "answer", waiting.request, "yes")).status, 0);
  // Second run: read the note (allowed), fork with the whole network (refused), finish.
  Deno.writeTextFileSync(
    script,
    [
      ...first,
      call("read_memory_object", { oid }),
      call("fork_child_process", {
        goal: "reach everything",
        inherit: [{ resource: { type: "net", key: "*", scope: "any" }, rights: ["connect"] }],
      }),
      final("done"),
    ].join("\n") + "\n",
  );
  const done = await task(s.workspace, s.state, ...agent, "--resume", pid);
  assert.equal(done.status, 0, done.stdout + done.stderr);
  const records = await query("--pid", pid, "--limit", "10000");
  const reads = records.filter((r) => r.action === "object.read");
  assert.deepEqual(
    reads.map((r) => [r.decision, r.resource]),
    [["allow", `object:process:${pid}/${oid}`]],
    "the allowed read: one record",
  );
  assert.match(reads[0]!.authority, CAP, "naming the capability that allowed it");
  const forks = records.filter((r) => r.action === "process.fork");
  assert.deepEqual(
    forks.map((r) => [r.decision, r.authority, r.resource, r.detail?.code]),
    [["deny", "default", `process:${pid}`, "cannot_delegate"]],
    "the refused fork: one record, naming why",
  );
  const ps = await s.json("ps");
  assert.deepEqual(
    (ps.doc.processes as { parent: string | null }[]).filter((p) => p.parent === pid),
    [],
    "no child was made",
  );
  const verified = await task(s.workspace, s.state, "libos", "audit", "verify", "--json");
  assert.equal(JSON.parse(verified.stdout).ok, true, verified.stdout);
});
