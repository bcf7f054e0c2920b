/**
 * The governed MCP client (issue 25): a stdio server started inside the OS wall, its tools shown
 * as `mcp__<server>__<tool>`, every call decided, ledgered and audited. The fixture server
 * (tests/fixtures/mcp/mcp_server.ts, run with the repo's Deno) logs each call it receives to
 * `calls.log` in the workspace, so each test counts what really ran.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { testRuntime } from "../testing.ts";
import { parsePolicy, PolicyRules } from "../runtime/policy/policy_rules.ts";
import { parseMcpConfig } from "../runtime/primitives/mcp.ts";
import type { RuntimeOptions } from "../runtime/runtime.ts";
import { HumanPendingError } from "../runtime/base/errors.ts";
import { fakeMcpLauncher } from "./mcp_fixture.ts";
import { renderApprovalRequest } from "../runtime/human/approval_render.ts";
import { LibOSSyscallSession, runtimeTargets } from "../jit/mod.ts";

const FIXTURE = new URL("./fixtures/mcp/mcp_server.ts", import.meta.url);

async function fixture(
  options: { rules?: string; args?: string[]; extra?: Partial<RuntimeOptions> } = {},
) {
  const rules = options.rules
    ? new PolicyRules(parsePolicy(options.rules, "/policy.jsonc"))
    : undefined;
  const t = await testRuntime({
    prefix: "libos-mcp-",
    human: "none",
    wall: true,
    ...(rules ? { rules } : {}),
    fromRoot: (root: string) => {
      Deno.copyFileSync(FIXTURE, join(root, "server.ts"));
      return {
        mcpServers: parseMcpConfig(
          JSON.stringify({
            mcpServers: {
              fx: {
                command: "deno",
                args: [
                  "run",
                  "--quiet",
                  "--no-prompt",
                  "--allow-read=.",
                  "--allow-write=.",
                  "server.ts",
                  ...(options.args ?? []),
                ],
                env: { DENO_NO_UPDATE_CHECK: "1" },
              },
            },
          }),
          "/mcp.json",
        ),
        mcpLimits: { callTimeoutMs: 3000, backoffMs: 10 },
      };
    },
    ...options.extra,
  });
  const calls = () => {
    try {
      return Deno.readTextFileSync(join(t.root, "calls.log")).split("\n").filter(Boolean);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return [];
      throw error;
    }
  };
  const pid = t.spawn();
  return { ...t, pid, calls };
}

const ALLOW_ALL = `{"version": 1, "rules": [{"effect": "allow", "tool": "mcp__fx__*"}]}`;

Deno.test("MCP tools: the fixture's tools appear as mcp__fx__<tool>; the schema bomb is refused, the injected description is stripped of control characters and capped", async () => {
  await using t = await fixture();
  const problems = await t.runtime.tools.loadMcp(t.pid);
  const names = t.runtime.tools.visible(t.pid).map((x) => x.name).filter((n) =>
    n.startsWith("mcp__")
  );
  assert.ok(names.includes("mcp__fx__echo"));
  assert.ok(!names.includes("mcp__fx__bomb"), "a schema deeper than 16 levels is never shown");
  assert.ok(problems.some((p) => p.code === "mcp_schema_rejected" && p.message.includes("bomb")));
  const inject = t.runtime.tools.visible(t.pid).find((x) => x.name === "mcp__fx__inject")!;
  // deno-lint-ignore no-control-regex -- the attack is control characters reaching the model
  assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f\u202e\u200b]/.test(inject.description));
  assert.ok(inject.description.length < 2200);
  assert.match(inject.description, /^\[MCP server fx; untrusted description\]/);
  assert.match(inject.description, /truncated/);
  // Listing ran nothing.
  assert.deepEqual(t.calls(), []);
});

Deno.test("MCP call allowed by a rule runs once, is ledgered done and audited with the rule", async () => {
  await using t = await fixture({ rules: ALLOW_ALL });
  await t.runtime.tools.loadMcp(t.pid);
  const result = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__fx__echo", arguments: { text: "hi" } },
    new AbortController().signal,
  );
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.ok(result.ok && JSON.stringify(result.value).includes("echo:hi"));
  assert.deepEqual(t.calls(), ["echo hi"]);
  const actions = t.runtime.ledger.list(t.pid).filter((a) => a.kind === "mcp.call");
  assert.equal(actions.length, 1);
  assert.equal(actions[0]!.status, "done");
  const allowed = t.runtime.audit.query({}).filter((r) =>
    r.action === "mcp.call" && r.decision === "allow"
  );
  assert.equal(allowed.length, 1);
  assert.match(allowed[0]!.authority, /^rule:/);
});

Deno.test("MCP call refused by a deny rule: nothing reaches the server, the deny is audited", async () => {
  await using t = await fixture({
    rules: `{"version": 1, "rules": [{"effect": "deny", "tool": "mcp__fx__wipe"}]}`,
  });
  await t.runtime.tools.loadMcp(t.pid);
  const result = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__fx__wipe", arguments: { text: "all" } },
    new AbortController().signal,
  );
  assert.equal(result.ok, false);
  assert.equal(!result.ok && result.error.code, "capability_denied");
  assert.deepEqual(t.calls(), []);
  assert.ok(
    t.runtime.audit.query({}).some((r) => r.action === "mcp.call" && r.decision === "deny"),
  );
  assert.equal(t.runtime.ledger.list(t.pid).filter((a) => a.kind === "mcp.call").length, 0);
});

Deno.test("MCP call with nothing said asks (readOnlyHint lifts nothing): without a human it is refused, nothing runs", async () => {
  await using t = await fixture();
  await t.runtime.tools.loadMcp(t.pid);
  const result = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__fx__echo", arguments: { text: "x" } },
    new AbortController().signal,
  );
  assert.equal(result.ok, false);
  assert.equal(!result.ok && result.error.code, "human_unavailable");
  assert.deepEqual(t.calls(), []);
  const asked = t.runtime.audit.query({}).filter((r) => r.action === "mcp.call");
  assert.deepEqual(asked.map((r) => [r.decision, r.authority]), [["ask", "mcp:default"]]);
});

Deno.test("MCP call that asks parks in queue mode; approved, it runs exactly once on resume (a second resume runs nothing)", async () => {
  await using t = await fixture({ extra: { human: "queue" } });
  await t.runtime.tools.loadMcp(t.pid);
  let request: string | undefined;
  try {
    await t.runtime.tools.invoke(
      t.pid,
      { name: "mcp__fx__wipe", arguments: { text: "\u001b[31mred" } },
      new AbortController().signal,
    );
    assert.fail("the call should park");
  } catch (error) {
    assert.ok(error instanceof HumanPendingError, String(error));
    request = error.request;
  }
  assert.deepEqual(t.calls(), []);
  const pending = t.runtime.human.get(request!);
  const shown = JSON.stringify(pending);
  assert.ok(shown.includes("mcp:fx/wipe"));
  assert.ok(shown.includes("destructiveHint"));
  // The card a human reads: server, tool and the arguments, with the ESC the model sent escaped.
  const card = renderApprovalRequest(pending);
  assert.match(card, /server: fx/);
  assert.match(card, /tool: wipe/);
  assert.ok(card.includes("\\x1b[31mred") || card.includes("\\u001b[31mred"), card);
  assert.ok(!card.includes("\u001b"), "no raw ESC reaches the terminal");
  t.runtime.human.approve(request!, { by: "human:test" });
  const signal = new AbortController().signal;
  const once = await t.runtime.human.resume(t.pid, request!, signal);
  assert.equal(once.type === "outcome" && once.outcome.ok, true, JSON.stringify(once));
  const twice = await t.runtime.human.resume(t.pid, request!, signal);
  assert.equal(
    twice.type === "outcome" && !twice.outcome.ok && twice.outcome.error.code,
    "outcome_unknown",
  );
  assert.equal(t.calls().length, 1);
  assert.match(t.calls()[0]!, /^wipe /);
});

Deno.test("MCP hostile results: a 100 MB result ends the connection (mcp_result_too_large, outcome_unknown, not retried); a 1 MB one is cut to 256 KiB with a marker; the server restarts for the next call", async () => {
  await using t = await fixture({ rules: ALLOW_ALL });
  await t.runtime.tools.loadMcp(t.pid);
  const signal = new AbortController().signal;
  const huge = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__fx__huge", arguments: {} },
    signal,
  );
  assert.equal(!huge.ok && huge.error.code, "mcp_result_too_large");
  const large = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__fx__large", arguments: {} },
    signal,
  );
  assert.equal(large.ok, true, JSON.stringify(large).slice(0, 300));
  const text = large.ok ? (large.value as { text: string }).text : "";
  assert.ok(text.length <= 256 * 1024 + 64);
  assert.match(text, /…\[truncated \d+ bytes\]$/);
  assert.deepEqual(t.calls().map((c) => c.split(" ")[0]), ["huge", "large"]);
  const statuses = t.runtime.ledger.list(t.pid).filter((a) => a.kind === "mcp.call").map((a) =>
    a.status
  );
  assert.deepEqual(statuses, ["outcome_unknown", "done"]);
});

Deno.test("MCP hostile server: a call that hangs times out (mcp_timeout, outcome_unknown); one that crashes mid-call is outcome_unknown and never retried", async () => {
  await using t = await fixture({ rules: ALLOW_ALL });
  await t.runtime.tools.loadMcp(t.pid);
  const signal = new AbortController().signal;
  const hang = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__fx__hang", arguments: {} },
    signal,
  );
  assert.equal(!hang.ok && hang.error.code, "mcp_timeout");
  const crash = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__fx__crash", arguments: {} },
    signal,
  );
  assert.equal(!crash.ok && crash.error.code, "mcp_outcome_unknown");
  assert.deepEqual(t.calls().map((c) => c.split(" ")[0]), ["hang", "crash"]);
  const statuses = t.runtime.ledger.list(t.pid).filter((a) => a.kind === "mcp.call").map((a) =>
    a.status
  );
  assert.deepEqual(statuses, ["outcome_unknown", "outcome_unknown"]);
});

Deno.test("MCP call the server answers with an error is mcp_tool_error, ledgered failed (not unknown), and the server keeps running", async () => {
  await using t = await fixture({ rules: ALLOW_ALL });
  await t.runtime.tools.loadMcp(t.pid);
  const signal = new AbortController().signal;
  const failed = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__fx__fail", arguments: {} },
    signal,
  );
  assert.equal(!failed.ok && failed.error.code, "mcp_tool_error");
  const echo = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__fx__echo", arguments: { text: "after" } },
    signal,
  );
  assert.equal(echo.ok, true);
  const statuses = t.runtime.ledger.list(t.pid).filter((a) => a.kind === "mcp.call").map((a) =>
    a.status
  );
  assert.deepEqual(statuses, ["failed", "done"]);
  assert.deepEqual(t.calls(), ["fail ", "echo after"]);
});

Deno.test("MCP hostile server: a tool renamed between list and call is mcp_tool_unknown and the server is never called", async () => {
  await using t = await fixture({ rules: ALLOW_ALL, args: ["rename"] });
  await t.runtime.tools.loadMcp(t.pid);
  assert.ok(t.runtime.tools.visible(t.pid).some((x) => x.name === "mcp__fx__alpha"));
  const result = await t.runtime.tools.invoke(
    t.pid,
    { name: "mcp__fx__alpha", arguments: {} },
    new AbortController().signal,
  );
  assert.equal(!result.ok && result.error.code, "mcp_tool_unknown");
  assert.deepEqual(t.calls(), []);
  assert.equal(t.runtime.ledger.list(t.pid).filter((a) => a.kind === "mcp.call").length, 0);
});

Deno.test("MCP server start is decided as a command: a shell deny rule on its program refuses it, and no server process writes anything", async () => {
  await using t = await fixture({
    rules: `{"version": 1, "rules": [{"effect": "deny", "shell": ["deno"]}]}`,
  });
  const problems = await t.runtime.tools.loadMcp(t.pid);
  assert.ok(problems.some((p) => p.code === "capability_denied"), JSON.stringify(problems));
  assert.ok(!t.runtime.tools.visible(t.pid).some((x) => x.name.startsWith("mcp__")));
  assert.ok(
    t.runtime.audit.query({}).some((r) => r.action === "mcp.start" && r.decision === "deny"),
  );
});

Deno.test("MCP Streamable HTTP server: without a net: grant of its host the start is refused (capability_denied naming --allow-host) and nothing is sent", async () => {
  await using t = await testRuntime({
    prefix: "libos-mcp-http-",
    human: "none",
    mcpServers: parseMcpConfig(
      `{"mcpServers": {"remote": {"url": "http://127.0.0.1:9/mcp"}}}`,
      "/mcp.json",
    ),
  });
  const pid = t.spawn();
  const problems = await t.runtime.tools.loadMcp(pid);
  assert.deepEqual(problems.map((p) => p.code), ["capability_denied"]);
  await assert.rejects(
    () => t.runtime.primitives.mcp.call(pid, { server: "remote", tool: "x", arguments: {} }),
    (e: unknown) =>
      e instanceof Error && "code" in e && e.code === "capability_denied" &&
      e.message.includes("--allow-host 127.0.0.1:9"),
  );
  assert.equal(t.runtime.ledger.list(pid).length, 0);
  assert.ok(!t.runtime.audit.query({}).some((r) => r.action === "net.fetch"), "nothing was sent");
});

Deno.test("MCP tools follow the image: a review-agent process (maxMode read-only) is shown none and its call is denied by its mode; a base-agent process sees them", async () => {
  const calls: string[] = [];
  await using t = await testRuntime({
    prefix: "libos-mcp-image-",
    human: "none",
    mcpServers: parseMcpConfig(`{"mcpServers": {"fx": {"command": "/bin/true"}}}`, "/mcp.json"),
    mcpLauncher: fakeMcpLauncher(calls),
  });
  const agent = t.spawn();
  const reviewer = t.spawn({ image: "review-agent:v0" });
  assert.deepEqual(await t.runtime.tools.loadMcp(agent), []);
  const shown = (pid: string) =>
    t.runtime.tools.visible(pid).map((x) => x.name).filter((n) => n.startsWith("mcp__"));
  assert.deepEqual(shown(agent), ["mcp__fx__echo"]);
  assert.deepEqual(shown(reviewer), []);
  const refused = await t.runtime.tools.invoke(
    reviewer,
    { name: "mcp__fx__echo", arguments: { text: "x" } },
    new AbortController().signal,
  );
  assert.equal(!refused.ok && refused.error.code, "tool_not_visible");
  await assert.rejects(
    () => t.runtime.primitives.mcp.call(reviewer, { server: "fx", tool: "echo", arguments: {} }),
    (e: unknown) => e instanceof Error && "reason" in e && e.reason === "mode:read-only",
  );
  assert.deepEqual(calls, []);
  // Refused before the server was even started for it.
  assert.deepEqual(
    t.runtime.audit.query({}).filter((r) => r.pid === reviewer && r.action.startsWith("mcp."))
      .map((r) => [r.action, r.decision, r.authority]),
    [["mcp.call", "deny", "mode:read-only"]],
  );
});

Deno.test("JIT syscall mcp.call reaches the same primitive and gate: unasked it is refused (nothing runs); with a capability it runs once, audited as mcp.call", async () => {
  const calls: string[] = [];
  await using t = await testRuntime({
    prefix: "libos-mcp-syscall-",
    human: "none",
    mcpServers: parseMcpConfig(`{"mcpServers": {"fx": {"command": "/bin/true"}}}`, "/mcp.json"),
    mcpLauncher: fakeMcpLauncher(calls),
  });
  const pid = t.spawn();
  const session = new LibOSSyscallSession(t.runtime, runtimeTargets(t.runtime), pid, "jit_probe");
  const signal = new AbortController().signal;
  const args = { server: "fx", tool: "echo", arguments: { text: "hi" } };
  await assert.rejects(
    () => session.call("mcp.call", args, signal),
    (e: unknown) => e instanceof Error && "code" in e && e.code === "human_unavailable",
  );
  assert.deepEqual(calls, []);
  t.runtime.authority.capabilities.grant({
    subject: pid,
    resource: { type: "mcp", key: "fx/echo", scope: "exact" },
    rights: ["invoke"],
    effect: "allow",
    issuer: "operator",
  }, "operator");
  const result = await session.call("mcp.call", args, signal) as { text: string };
  assert.equal(result.text, "hi");
  assert.deepEqual(calls, ["echo hi"]);
  assert.deepEqual(
    t.runtime.audit.query({}).filter((r) => r.action === "mcp.call").map((r) => r.decision),
    ["ask", "allow"],
  );
});
