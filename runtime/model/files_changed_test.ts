import assert from "node:assert/strict";
import { testRuntime } from "../../testing.ts";
import { filesChanged, renderFilesChanged } from "./files_changed.ts";

Deno.test("filesChanged() nets each path's allowed writes and deletes in order, skips refusals, failures and other actors, and counts commands; rendering escapes hostile paths", async () => {
  await using t = await testRuntime({ prefix: "libos-files-changed-" });
  const pid = t.spawn();
  const other = t.spawn();
  const rec = (
    action: string,
    path: string,
    extra: {
      decision?: "allow" | "deny";
      detail?: Record<string, string | boolean>;
      actor?: string;
    } = {},
  ) =>
    t.runtime.audit.append({
      actor: extra.actor ?? pid,
      pid,
      action,
      resource: `fs:${path}`,
      decision: extra.decision ?? "allow",
      authority: "cap:cap_000000000000",
      ...(extra.detail ? { detail: extra.detail } : {}),
    });
  rec("fs.write", "new.txt", { detail: { created: true } });
  rec("fs.write", "new.txt", { detail: { created: false } });
  rec("fs.write", "src/app.ts", { detail: { created: false } });
  rec("fs.write", "tmp.txt", { detail: { created: true } });
  rec("fs.delete", "tmp.txt");
  rec("fs.delete", "old.txt");
  rec("fs.mkdir", "build");
  rec("fs.write", "refused.txt", { decision: "deny" });
  rec("fs.write", "failed.txt", { detail: { failed: "io" } });
  rec("fs.write", "by-runtime.txt", { actor: "runtime" });
  rec("fs.read", "read-only.txt");
  rec("fs.write", "evil\x1b[2J\r.txt", { detail: { created: true } });
  t.runtime.audit.append({
    actor: pid,
    pid,
    action: "shell.run",
    resource: "shell:make",
    decision: "allow",
    authority: "cap:cap_000000000000",
  });
  // A read-only command ran confined (the workspace read-only): it changed nothing.
  t.runtime.audit.append({
    actor: pid,
    pid,
    action: "shell.run",
    resource: "shell:ls",
    decision: "allow",
    authority: "read-only:ls",
    detail: { confined: true },
  });
  t.runtime.audit.append({
    actor: other,
    pid: other,
    action: "fs.write",
    resource: "fs:elsewhere.txt",
    decision: "allow",
    authority: "cap:cap_000000000000",
  });
  const summary = filesChanged(t.runtime.audit, [pid]);
  assert.deepEqual(summary.files.map((f) => [f.path, f.change, f.operations]), [
    ["build", "created", 1],
    ["evil\x1b[2J\r.txt", "created", 1],
    ["new.txt", "created", 2],
    ["old.txt", "deleted", 1],
    ["src/app.ts", "edited", 1],
    ["tmp.txt", "created+deleted", 2],
  ]);
  assert.equal(summary.commands, 1);
  const text = renderFilesChanged(summary).join("\n");
  assert.ok(!text.includes("\x1b") && !text.includes("\r"), text);
  assert.match(text, /^files changed: 6\n/);
  assert.match(text, /evil\\x1B\[2J\\r\.txt/);
  assert.match(text, /and 1 command\(s\) ran/);
  assert.deepEqual(filesChanged(t.runtime.audit, [pid, other]).files.length, 7);
});
