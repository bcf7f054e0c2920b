/**
 * Search, edit and redaction through the broker (issue 12): grep and glob never reveal what the
 * process may not read — a denied directory, a secret-bearing file — and never bother a human
 * for it; edit_file replaces exactly and refuses a file that changed since it was read; known
 * secrets never reach a tool result, the stored result object or the model.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sha256Hex } from "../runtime/base/canonical_json.ts";
import { REDACTED } from "../runtime/base/redaction.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { testRuntime, type TestRuntimeOptions } from "../testing.ts";

const NEVER = new AbortController().signal;

async function fixture(files: Record<string, string>, options: TestRuntimeOptions = {}) {
  const t = await testRuntime({
    prefix: "libos-search-",
    files,
    mode: "workspace-write",
    human: "queue",
    wall: false,
    ...options,
  });
  const pid = t.spawn({
    tools: ["grep", "glob", "edit_file", "read_text_file", "run_shell_command"],
  });
  return {
    ...t,
    pid,
    call: (name: string, args: Record<string, unknown>) =>
      t.runtime.tools.invoke(pid, { name, arguments: args }, NEVER),
  };
}

/** The process may not read `private/` (a deny capability, as an operator would set). */
function denyPrivate(f: { runtime: { authority: Runtime["authority"] }; pid: string }): void {
  f.runtime.authority.capabilities.grant({
    subject: f.pid,
    resource: { type: "fs", path: "private", scope: "subtree" },
    rights: ["read"],
    effect: "deny",
    issuer: "operator",
  }, "operator");
}

const FILES = {
  "src/app.ts": "const token = TOKEN; // TOKEN here\n",
  "private/notes.txt": "TOKEN in a private note\n",
  ".env": "TOKEN=the-real-secret\n",
  "keys/id_rsa": "TOKEN private key\n",
};

Deno.test("grep() attack: never returns lines from a denied directory or a secret-bearing file, and asks no human", async () => {
  await using f = await fixture(FILES);
  denyPrivate(f);
  const result = await f.call("grep", { text: "TOKEN" });
  assert.ok(result.ok, result.forModel);
  const value = result.value as {
    matches: { path: string; line: number; text: string }[];
    skipped: number;
  };
  // Control: the readable file is searched.
  assert.deepEqual(value.matches.map((m) => [m.path, m.line]), [["src/app.ts", 1]]);
  assert.ok(value.skipped >= 2, `skipped ${value.skipped}`);
  assert.doesNotMatch(result.forModel, /private note|the-real-secret|private key/);
  assert.deepEqual(f.runtime.human.list(), [], "nobody was asked to approve a secret read");
});

Deno.test("glob() attack: a directory the process may not read is not entered; its files are not listed", async () => {
  await using f = await fixture(FILES);
  denyPrivate(f);
  const result = await f.call("glob", { pattern: "**/*.txt" });
  assert.ok(result.ok, result.forModel);
  assert.deepEqual((result.value as { matches: string[] }).matches, []);
  const ts = await f.call("glob", { pattern: "src/**/*.ts" });
  assert.ok(ts.ok, ts.forModel);
  assert.deepEqual((ts.value as { matches: string[] }).matches, ["src/app.ts"], "control");
});

Deno.test("edit_file() replaces exactly one occurrence, refuses an ambiguous one, and writes nothing on refusal", async () => {
  await using f = await fixture({ "a.txt": "one two one\n" });
  const ambiguous = await f.call("edit_file", {
    path: "a.txt",
    old_string: "one",
    new_string: "1",
  });
  assert.equal(ambiguous.ok, false);
  assert.match(ambiguous.forModel, /occurs 2 times/);
  assert.equal(Deno.readTextFileSync(join(f.workspace, "a.txt")), "one two one\n");
  const missing = await f.call("edit_file", {
    path: "a.txt",
    old_string: "three",
    new_string: "3",
  });
  assert.match(missing.forModel, /was not found in it; read the file again/);
  const unique = await f.call("edit_file", { path: "a.txt", old_string: "two", new_string: "2" });
  assert.ok(unique.ok, unique.forModel);
  assert.equal(Deno.readTextFileSync(join(f.workspace, "a.txt")), "one 2 one\n");
  const all = await f.call("edit_file", {
    path: "a.txt",
    old_string: "one",
    new_string: "1",
    replace_all: true,
  });
  assert.ok(all.ok, all.forModel);
  assert.equal((all.value as { replacements: number }).replacements, 2);
  assert.equal(Deno.readTextFileSync(join(f.workspace, "a.txt")), "1 2 1\n");
});

Deno.test("FilesystemPrimitive.writeText() with ifSha256 refuses a file that changed since it was read (what edit_file relies on)", async () => {
  await using f = await fixture({ "a.txt": "before\n" });
  const fs = f.runtime.primitives.fs;
  const read = await fs.readText(f.pid, { path: "a.txt" });
  // Someone else changes the file between the edit's read and its write.
  Deno.writeTextFileSync(join(f.workspace, "a.txt"), "changed by someone else\n");
  await assert.rejects(
    fs.writeText(f.pid, {
      path: "a.txt",
      content: "after\n",
      ifSha256: sha256Hex(new TextEncoder().encode(read.content)),
    }),
    /changed since it was read/,
  );
  assert.equal(Deno.readTextFileSync(join(f.workspace, "a.txt")), "changed by someone else\n");
});

Deno.test("Tool results are redacted of known secrets: a planted secret in a file read and in shell output never reaches the model or the stored result", async () => {
  const SECRET = "sk-test-PLANTED-0123456789";
  await using f = await fixture({ "config.txt": `key = ${SECRET}\n` }, {
    secrets: [SECRET],
    mode: "full-access",
    shellPolicy: "always_allow",
  });
  const read = await f.call("read_text_file", { path: "config.txt" });
  assert.ok(read.ok, read.forModel);
  // The model's view numbers the lines; the secret is redacted before that.
  assert.equal((read.value as { content: string }).content, `     1\tkey = ${REDACTED}\n`);
  const shell = await f.call("run_shell_command", { argv: ["cat", "config.txt"] });
  assert.ok(shell.ok, shell.forModel);
  for (const result of [read, shell]) {
    assert.doesNotMatch(result.forModel, new RegExp(SECRET));
    const stored = f.runtime.memory.read(f.pid, result.object!);
    assert.doesNotMatch(JSON.stringify(stored.payload), new RegExp(SECRET));
  }
  assert.match(JSON.stringify(shell.value), /\[redacted\]/, "control: the output was there");
  f.runtime.store.flush();
  const audit = JSON.stringify(f.runtime.audit.query({ limit: 10_000 }));
  assert.doesNotMatch(audit, new RegExp(SECRET), "nor in the audit log");
});
