/**
 * The capability commands of the `libos` command line: caps, grant, revoke, and spawn --mode.
 */
import assert from "node:assert/strict";
import { parseResource } from "../cli/capability_commands.ts";
import { UsageError } from "../runtime/base/errors.ts";
import type { Capability } from "../runtime/authority/capability.ts";
import type { AgentProcess } from "../runtime/process/process.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { sandbox } from "./_cli_sandbox.ts";

Deno.test("parseResource() reads fs paths and subtrees, keyed exact/prefix/any, and shell argv", () => {
  const cases: [string, unknown][] = [
    ["fs:src/app.ts", { type: "fs", path: "src/app.ts", scope: "exact" }],
    ["fs:src/**", { type: "fs", path: "src", scope: "subtree" }],
    ["fs:.", { type: "fs", path: ".", scope: "subtree" }],
    ["fs:**", { type: "fs", path: ".", scope: "subtree" }],
    ["process:pid_0123456789ab", { type: "process", key: "pid_0123456789ab", scope: "exact" }],
    ["object:process:pid_1/*", { type: "object", key: "process:pid_1/", scope: "prefix" }],
    ["net:*", { type: "net", key: "*", scope: "any" }],
    ["shell:git status --short", {
      type: "shell",
      argv: ["git", "status", "--short"],
      scope: "exact",
    }],
    ["shell:git status *", { type: "shell", argv: ["git", "status"], scope: "prefix" }],
    ["shell:*", { type: "shell", argv: [], scope: "any" }],
  ];
  for (const [text, expected] of cases) assert.deepEqual(parseResource(text), expected, text);
  for (const bad of ["src/app.ts", "fs:../x", "fs:/etc/passwd", "disk:x", ":x"]) {
    assert.throws(() => parseResource(bad), UsageError, bad);
  }
});

Deno.test("libos spawn --mode read-only grants read and stat only, and caps lists them", async () => {
  using s = sandbox();
  const pid =
    ((await s.json("spawn", "--goal", "g", "--mode", "read-only")).doc.process as AgentProcess).pid;
  const caps = (await s.json("caps", pid)).doc.capabilities as Capability[];
  const fs = caps.find((c) => c.resource.type === "fs");
  assert.deepEqual(fs?.rights, ["read", "stat"]);
  assert.equal(fs?.issuer, "mode:read-only");
  const human = await s.cli("caps", pid);
  assert.match(human.stdout, /always_allow\s+fs:\.\/\*\*\s+read,stat/);
  const bad = await s.json("spawn", "--goal", "g", "--mode", "yolo");
  assert.equal(bad.status, 1);
  assert.equal((bad.doc.error as { code: string }).code, "validation_failed");
});

Deno.test("libos revoke from another terminal takes effect on a running runtime's next check", async () => {
  using s = sandbox();
  const pid = ((await s.json("spawn", "--goal", "g")).doc.process as AgentProcess).pid;
  const granted = await s.json(
    "grant",
    pid,
    "--resource",
    "net:api.example.com",
    "--right",
    "connect",
  );
  assert.equal(granted.status, 0, granted.stdout);
  const cap = granted.doc.capability as Capability;
  await using runtime = await createRuntime({
    workspace: s.workspace,
    env: { get: (n) => (n === "XDG_STATE_HOME" ? s.state : undefined) },
    mode: "full-access",
  });
  const check = () =>
    runtime.authority.decide(pid, {
      resource: { type: "net", key: "api.example.com" },
      right: "connect",
    });
  assert.equal(check().effect, "allow");
  runtime.store.flush();
  const revoked = await s.json("revoke", cap.id);
  assert.deepEqual(revoked.doc.revoked, [cap.id]);
  assert.equal(
    check().effect,
    "deny",
    "the very next check sees the other connection's revocation",
  );
  assert.equal(check().reason, "default");
  const again = await s.cli("revoke", cap.id);
  assert.match(again.stdout, /already revoked/);
});

Deno.test("libos grant refuses malformed requests with usage errors and unknown pids with not_found", async () => {
  using s = sandbox();
  const pid = ((await s.json("spawn", "--goal", "g")).doc.process as AgentProcess).pid;
  const cases: [string[], number, string][] = [
    [["grant", pid, "--right", "read"], 2, "usage"],
    [["grant", pid, "--resource", "fs:src/**"], 2, "usage"],
    [["grant", pid, "--resource", "fs:../up", "--right", "read"], 2, "usage"],
    [["grant", pid, "--resource", "fs:src/**", "--right", "read", "--effect", "maybe"], 2, "usage"],
    [["grant", pid, "--resource", "fs:src/**", "--right", "execute"], 1, "validation_failed"],
    [["grant", "pid_000000000000", "--resource", "fs:src/**", "--right", "read"], 1, "not_found"],
    [["revoke", "cap_000000000000"], 1, "not_found"],
  ];
  for (const [args, status, code] of cases) {
    const run = await s.json(...args);
    assert.equal(run.status, status, args.join(" "));
    assert.equal((run.doc.error as { code: string }).code, code, args.join(" "));
  }
});
