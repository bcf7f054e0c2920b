/**
 * "Allow always" that lasts (issue 23), as users run it: `libos agent` on the scripted model with
 * `--human queue`, `libos human approve ID --always SCOPE --remember run|project`, `--resume`, a
 * later run, and `libos grants list|revoke` — in process, and through the real launcher.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { permissionFlags } from "../cli/bootstrap.ts";
import { createRuntime } from "../runtime/runtime.ts";
import type { HumanRequest } from "../runtime/human/human_request.ts";
import { type Sandbox, sandbox, taskWith } from "./_cli_sandbox.ts";
import { BROKEN, call, cli, final, fixture, RUN_TESTS, turn } from "./agent_fixture.ts";

const TEST_ARGV = RUN_TESTS.arguments.argv;

/** What a `--json` agent run printed. */
interface AgentDoc {
  readonly pid: string;
  readonly status: string;
  readonly waiting: { readonly request: string; readonly kind: string } | null;
}

/** A configuration directory outside the workspace (beside it, in the sandbox). */
function configOf(s: Sandbox): { readonly XDG_CONFIG_HOME: string } {
  return { XDG_CONFIG_HOME: join(s.workspace, "..", "cfg") };
}

function grantsFile(env: { readonly XDG_CONFIG_HOME: string }): string {
  return join(env.XDG_CONFIG_HOME, "libos", "grants.jsonc");
}

/** `libos agent --goal … --model replay:SCRIPT --human queue --json …MORE` in process. */
async function agent(
  s: Sandbox,
  env: Record<string, string>,
  script: string,
  ...more: string[]
): Promise<{ status: number; doc: AgentDoc; stderr: string }> {
  const run = await cli(
    s,
    { env },
    "agent",
    "--goal",
    "Make the test pass",
    "--model",
    `replay:${script}`,
    "--human",
    "queue",
    "--json",
    ...more,
  );
  assert.ok(run.stdout.trim() !== "", run.stderr);
  return { status: run.status, doc: JSON.parse(run.stdout) as AgentDoc, stderr: run.stderr };
}

/** `libos …ARGS --json` in process: status and document. */
async function json(s: Sandbox, env: Record<string, string>, ...args: string[]) {
  const run = await cli(s, { env }, ...args, "--json");
  return { status: run.status, doc: JSON.parse(run.stdout) as Record<string, unknown> };
}

/** The shell runs of the run's process that asked a human, from the audit log. */
async function asked(s: Sandbox, pid: string): Promise<number> {
  await using runtime = await createRuntime({
    workspace: s.workspace,
    db: s.dbPath(),
    create: false,
    readOnly: true,
  });
  return runtime.audit.query({ pid, action: "shell.run", decision: "ask", limit: 100 }).length;
}

Deno.test("libos agent: an approval remembered for the project applies in a later run in the same workspace, not in another; listed, revoked (audited), and then asked again", async () => {
  using s = sandbox();
  using elsewhere = sandbox();
  const script = fixture(s.workspace);
  const env = configOf(s);
  const first = await agent(s, env, script);
  assert.equal(first.status, 3, first.stderr);
  const request = first.doc.waiting!.request;
  const shown = await cli(s, { env }, "human", "show", request);
  assert.match(shown.stdout, /--remember project {2}this run, and every later libos agent run/);
  const approved = await json(
    s,
    env,
    "human",
    "approve",
    request,
    "--always",
    "exact",
    "--remember",
    "project",
  );
  assert.equal(approved.status, 0, JSON.stringify(approved.doc));
  const response = (approved.doc.request as HumanRequest).response!;
  assert.equal(response.remember, "project");
  const id = response.remembered!;
  assert.match(id, /^grant_[0-9a-f]{12}$/);
  assert.equal(Deno.statSync(grantsFile(env)).mode! & 0o777, 0o600);
  // Nothing of it in the workspace.
  assert.throws(() => Deno.statSync(join(s.workspace, ".libos")), Deno.errors.NotFound);
  // The run goes on: its second test run is not asked about (the grant holds for the run).
  const resumed = await cli(s, { env }, "agent", "--resume", first.doc.pid, "--human", "queue");
  assert.equal(resumed.status, 0, resumed.stdout + resumed.stderr);
  assert.equal(await asked(s, first.doc.pid), 1, "asked once in the first run");

  // A later run in the same workspace starts with it: nothing asks.
  Deno.writeTextFileSync(join(s.workspace, "src", "mathlib.py"), BROKEN);
  const second = await agent(s, env, script);
  assert.equal(second.status, 0, second.stderr);
  assert.equal(second.doc.status, "exited");
  assert.equal(await asked(s, second.doc.pid), 0, "the later run was not asked");
  const granted = await json(
    s,
    env,
    "audit",
    "query",
    "--pid",
    second.doc.pid,
    "--action",
    "capability.grant",
    "--actor",
    "user-config",
  );
  const records = granted.doc.records as { authority: string; resource: string }[];
  assert.deepEqual(records.map((r) => [r.authority, r.resource]), [
    [`user-config:${id}`, `shell:${TEST_ARGV.join(" ")}`],
  ]);
  const applied = await json(s, env, "audit", "query", "--action", "grants.apply");
  const [record] = applied.doc.records as { detail: { file: string } }[];
  assert.equal(record?.detail.file, grantsFile(env), "the record names where it came from");

  // Another workspace (same user, same config) is asked as before.
  const otherScript = fixture(elsewhere.workspace);
  const other = await agent(elsewhere, env, otherScript);
  assert.equal(other.status, 3, "another workspace is asked");
  assert.deepEqual((await json(elsewhere, env, "grants", "list")).doc.grants, []);

  // Listed, revoked (audited), and asked again.
  const listed = await json(s, env, "grants", "list");
  const grants = listed.doc.grants as { id: string; resource: unknown; request: string }[];
  assert.deepEqual(grants.map((g) => [g.id, g.request]), [[id, request]]);
  assert.deepEqual(grants[0]?.resource, { type: "shell", argv: TEST_ARGV, scope: "exact" });
  const text = await cli(s, { env }, "grants", "list");
  assert.match(
    text.stdout,
    new RegExp(`${id}\\s+execute on shell:python3 tests/test_mathlib\\.py`),
  );
  const revoked = await json(s, env, "grants", "revoke", id);
  assert.equal(revoked.status, 0, JSON.stringify(revoked.doc));
  const again = await json(s, env, "grants", "revoke", id);
  assert.equal(again.status, 1, "already gone");
  assert.equal((again.doc.error as { code: string }).code, "not_found");
  const audited = await json(s, env, "audit", "query", "--action", "grants.revoke");
  assert.deepEqual(
    (audited.doc.records as { correlation: string }[]).map((r) => r.correlation),
    [id],
  );
  Deno.writeTextFileSync(join(s.workspace, "src", "mathlib.py"), BROKEN);
  const third = await agent(s, env, script);
  assert.equal(third.status, 3, "asked again after the revocation");
});

Deno.test("libos agent: allow always for this run (the default) lets the run go on unasked, and does not reach a later run", async () => {
  using s = sandbox();
  const script = fixture(s.workspace);
  const env = configOf(s);
  const first = await agent(s, env, script);
  const approved = await json(
    s,
    env,
    "human",
    "approve",
    first.doc.waiting!.request,
    "--always",
    "exact",
  );
  assert.equal((approved.doc.request as HumanRequest).response?.remember, "run");
  const resumed = await cli(s, { env }, "agent", "--resume", first.doc.pid, "--human", "queue");
  assert.equal(resumed.status, 0, resumed.stdout + resumed.stderr);
  assert.equal(await asked(s, first.doc.pid), 1);
  assert.throws(() => Deno.statSync(grantsFile(env)), Deno.errors.NotFound, "nothing remembered");
  Deno.writeTextFileSync(join(s.workspace, "src", "mathlib.py"), BROKEN);
  const second = await agent(s, env, script);
  assert.equal(second.status, 3, "a later run is asked");
});

Deno.test("attack: a grants file planted inside the workspace is ignored — <workspace>/.libos/grants.jsonc, or a config directory inside the workspace (said; --remember project refused, nothing approved)", async () => {
  using s = sandbox();
  const script = fixture(s.workspace);
  const planted = {
    version: 1,
    workspaces: {
      [s.workspace]: [{
        id: "grant_0123456789ab",
        resource: { type: "shell", argv: TEST_ARGV, scope: "exact" },
        rights: ["execute"],
        scope: "exact",
      }],
    },
  };
  Deno.mkdirSync(join(s.workspace, ".libos"));
  Deno.writeTextFileSync(join(s.workspace, ".libos", "grants.jsonc"), JSON.stringify(planted));
  const first = await agent(s, configOf(s), script);
  assert.equal(first.status, 3, "the planted file granted nothing: asked");
  // A configuration directory the agent could write: the same file there is ignored too.
  const inside = { XDG_CONFIG_HOME: join(s.workspace, ".libos", "cfg") };
  Deno.mkdirSync(join(inside.XDG_CONFIG_HOME, "libos"), { recursive: true });
  Deno.writeTextFileSync(grantsFile(inside), JSON.stringify(planted));
  const second = await agent(s, inside, script);
  assert.equal(second.status, 3, "asked");
  assert.match(second.stderr, /ignoring the grants file .* inside the workspace/);
  const refused = await json(
    s,
    inside,
    "human",
    "approve",
    second.doc.waiting!.request,
    "--always",
    "exact",
    "--remember",
    "project",
  );
  assert.equal(refused.status, 1);
  assert.equal((refused.doc.error as { code: string }).code, "grants_file_unwritable");
  const list = await json(s, inside, "human", "list");
  assert.deepEqual(
    (list.doc.requests as HumanRequest[]).map((r) => r.id).includes(second.doc.waiting!.request),
    true,
    "still pending: nothing was approved",
  );
  assert.equal(Deno.readTextFileSync(grantsFile(inside)), JSON.stringify(planted), "not written");
});

Deno.test("a malformed grants file refuses libos agent with grants_file_invalid naming file and line — nothing recorded, the file kept as it was; approve --remember project is refused too", async () => {
  using s = sandbox();
  const script = fixture(s.workspace);
  const env = configOf(s);
  const parked = await agent(s, env, script);
  assert.equal(parked.status, 3);
  const broken =
    '{\n  "version": 1,\n  "workspaces": {\n    "/somewhere": [ { "id": 7 } ]\n  }\n}\n';
  Deno.mkdirSync(join(env.XDG_CONFIG_HOME, "libos"), { recursive: true });
  Deno.writeTextFileSync(grantsFile(env), broken);
  const before = (await json(s, env, "audit", "query", "--limit", "10000")).doc
    .records as unknown[];
  const refused = await cli(
    s,
    { env },
    "agent",
    "--goal",
    "x",
    "--model",
    `replay:${script}`,
    "--human",
    "queue",
    "--json",
  );
  assert.equal(refused.status, 1);
  const error = (JSON.parse(refused.stdout) as { error: { code: string; message: string } }).error;
  assert.equal(error.code, "grants_file_invalid");
  assert.ok(error.message.startsWith(`${grantsFile(env)}:4:`), error.message);
  const after = (await json(s, env, "audit", "query", "--limit", "10000")).doc.records as unknown[];
  assert.equal(after.length, before.length, "the refused run recorded nothing");
  const approve = await json(
    s,
    env,
    "human",
    "approve",
    parked.doc.waiting!.request,
    "--always",
    "exact",
    "--remember",
    "project",
  );
  assert.equal((approve.doc.error as { code: string }).code, "grants_file_invalid");
  const list = await json(s, env, "grants", "list");
  assert.equal((list.doc.error as { code: string }).code, "grants_file_invalid");
  assert.equal(Deno.readTextFileSync(grantsFile(env)), broken, "nothing was lost");
  const pending = await json(s, env, "human", "list");
  assert.equal((pending.doc.requests as unknown[]).length, 1, "nothing was approved");
});

Deno.test("a remembered grant is a capability: it does not lift the mode's ceiling (a delete in workspace-write still asks), a --deny or a deny rule of the user's policy", async () => {
  using s = sandbox();
  fixture(s.workspace);
  const env = configOf(s);
  Deno.writeTextFileSync(join(s.workspace, "notes.txt"), "keep me");
  Deno.mkdirSync(join(env.XDG_CONFIG_HOME, "libos"), { recursive: true });
  const grant = (id: string, resource: unknown, rights: string[], scope: string) => ({
    id,
    resource,
    rights,
    scope,
  });
  Deno.writeTextFileSync(
    grantsFile(env),
    JSON.stringify({
      version: 1,
      workspaces: {
        [s.workspace]: [
          grant("grant_00000000000a", { type: "fs", path: ".", scope: "subtree" }, [
            "delete",
          ], "subtree"),
          grant("grant_00000000000b", { type: "shell", argv: TEST_ARGV, scope: "exact" }, [
            "execute",
          ], "exact"),
        ],
      },
    }),
  );
  const deleting = join(s.workspace, "..", "delete.jsonl");
  Deno.writeTextFileSync(
    deleting,
    [call("delete_file", { path: "notes.txt" }), final("done")].join("\n") + "\n",
  );
  const del = await agent(s, env, deleting);
  assert.equal(del.status, 3, "the delete asks");
  const request = (await json(s, env, "human", "show", del.doc.waiting!.request)).doc;
  assert.equal((request.request as HumanRequest).approval?.reason, "mode:workspace-write");
  assert.deepEqual(request.always, [], "and offers no allow-always: the ceiling asks regardless");
  assert.equal(Deno.readTextFileSync(join(s.workspace, "notes.txt")), "keep me");

  const testRun = join(s.workspace, "..", "test.jsonl");
  Deno.writeTextFileSync(
    testRun,
    [turn({ tool_calls: [RUN_TESTS] }), final("done")].join("\n") + "\n",
  );
  // Control: the remembered grant lets the test run unasked.
  const control = await agent(s, env, testRun);
  assert.equal(control.status, 0, control.stderr);
  assert.equal(await asked(s, control.doc.pid), 0);
  const ran = async (pid: string) => {
    await using runtime = await createRuntime({
      workspace: s.workspace,
      db: s.dbPath(),
      create: false,
      readOnly: true,
    });
    return runtime.audit.query({ pid, action: "shell.run", limit: 100 })
      .map((r) => `${r.decision} ${r.authority.split(":")[0]}`);
  };
  assert.deepEqual(await ran(control.doc.pid), ["allow cap"]);
  const denied = await agent(s, env, testRun, "--deny", "shell:python3 *");
  assert.equal(denied.status, 0, denied.stderr);
  assert.deepEqual(await ran(denied.doc.pid), ["deny run"], "the run deny holds");
  Deno.writeTextFileSync(
    join(env.XDG_CONFIG_HOME, "libos", "policy.jsonc"),
    '{ "version": 1, "rules": [{ "effect": "deny", "shell": ["python3"] }] }',
  );
  const ruled = await agent(s, env, testRun);
  assert.equal(ruled.status, 0, ruled.stderr);
  assert.deepEqual(await ran(ruled.doc.pid), ["deny rule"], "the user's deny rule holds");
});

Deno.test("through the real launcher: libos human approve --remember project writes grants.jsonc (0600) in a config directory it makes, a later libos agent run starts with it, libos grants revoke removes it", async () => {
  using s = sandbox();
  const script = fixture(s.workspace);
  const env = configOf(s);
  const first = await agent(s, env, script);
  assert.equal(first.status, 3);
  const approve = await taskWith(
    env,
    s.workspace,
    s.state,
    "libos",
    "human",
    "approve",
    first.doc.waiting!.request,
    "--always",
    "exact",
    "--remember",
    "project",
    "--json",
  );
  assert.equal(approve.status, 0, approve.stdout + approve.stderr);
  const id = (JSON.parse(approve.stdout) as { request: HumanRequest }).request.response
    ?.remembered!;
  assert.equal(Deno.statSync(grantsFile(env)).mode! & 0o777, 0o600);
  assert.equal(Deno.statSync(join(env.XDG_CONFIG_HOME, "libos")).mode! & 0o777, 0o700);
  Deno.writeTextFileSync(join(s.workspace, "src", "mathlib.py"), BROKEN);
  const later = await taskWith(
    env,
    s.workspace,
    s.state,
    "libos",
    "agent",
    "--goal",
    "Make the test pass",
    "--model",
    `replay:${script}`,
    "--human",
    "queue",
    "--json",
  );
  assert.equal(later.status, 0, later.stdout + later.stderr);
  assert.equal(await asked(s, (JSON.parse(later.stdout) as AgentDoc).pid), 0);
  const revoke = await taskWith(env, s.workspace, s.state, "libos", "grants", "revoke", id);
  assert.equal(revoke.status, 0, revoke.stdout + revoke.stderr);
  const listed = await taskWith(env, s.workspace, s.state, "libos", "grants", "list", "--json");
  assert.deepEqual((JSON.parse(listed.stdout) as { grants: unknown[] }).grants, []);
});

Deno.test("bootstrap permissionFlags(): an agent run may write the grants file and its temporary file only — not the configuration directory (policy files, the model's env); human approve and grants may make it; other commands write nothing there", () => {
  const env = { get: (n: string) => ({ HOME: "/home/u" } as Record<string, string>)[n] };
  const config = "/home/u/.config/libos";
  const writes = (...args: string[]) =>
    permissionFlags({ args, cwd: "/w", env, realPath: (p) => p })
      .find((f) => f.startsWith("--allow-write="))!.slice("--allow-write=".length).split(",")
      .filter((p) => p.startsWith(config));
  assert.deepEqual(writes("agent", "--goal", "g").sort(), [
    `${config}/grants.jsonc`,
    `${config}/grants.jsonc.tmp`,
  ]);
  assert.deepEqual(writes("human", "approve", "hreq_0123456789ab"), [config]);
  assert.deepEqual(writes("grants", "revoke", "grant_0123456789ab"), [config]);
  for (const args of [["human", "list"], ["init"], ["run", "pid_0123456789ab"], ["caps", "p"]]) {
    assert.deepEqual(writes(...args), [], args.join(" "));
  }
});

Deno.test("libos agent --resume: a remembered grant revoked from the file since the launch is revoked as the run resumes (audited), and the command asks again", async () => {
  using s = sandbox();
  fixture(s.workspace);
  const env = configOf(s);
  Deno.writeTextFileSync(join(s.workspace, "notes.txt"), "old");
  Deno.mkdirSync(join(env.XDG_CONFIG_HOME, "libos"), { recursive: true });
  const id = "grant_00000000000c";
  Deno.writeTextFileSync(
    grantsFile(env),
    JSON.stringify({
      version: 1,
      workspaces: {
        [s.workspace]: [{
          id,
          resource: { type: "shell", argv: TEST_ARGV, scope: "exact" },
          rights: ["execute"],
          scope: "exact",
        }],
      },
    }),
  );
  // The run parks on a delete first (the mode's ceiling asks), then runs the test.
  const script = join(s.workspace, "..", "park.jsonl");
  Deno.writeTextFileSync(
    script,
    [
      call("delete_file", { path: "notes.txt" }),
      turn({ tool_calls: [RUN_TESTS] }),
      final("done"),
    ].join("\n") + "\n",
  );
  const first = await agent(s, env, script);
  assert.equal(first.status, 3);
  const caps = await cli(s, { env }, "caps", first.doc.pid);
  assert.match(
    caps.stdout,
    new RegExp(`shell:python3 tests/test_mathlib\\.py\\s+execute.*user-config:${id}`),
  );
  assert.equal((await json(s, env, "grants", "revoke", id)).status, 0);
  const approved = await cli(s, { env }, "human", "approve", first.doc.waiting!.request);
  assert.equal(approved.status, 0, approved.stderr);
  const resumed = await cli(
    s,
    { env },
    "agent",
    "--resume",
    first.doc.pid,
    "--human",
    "queue",
    "--json",
  );
  assert.equal(resumed.status, 3, "the test run asks again");
  const doc = JSON.parse(resumed.stdout) as AgentDoc;
  const waiting = (await json(s, env, "human", "show", doc.waiting!.request)).doc
    .request as HumanRequest;
  assert.deepEqual(waiting.approval?.argv, TEST_ARGV);
  const revoked = await json(
    s,
    env,
    "audit",
    "query",
    "--action",
    "capability.revoke",
    "--actor",
    "user-config",
  );
  assert.equal((revoked.doc.records as unknown[]).length, 1);
});
