/**
 * A secret in an innocently named file (issue 20): the filesystem primitive learns a file's
 * content when it reads it (decide() cannot see it), and a read whose bytes carry a private key
 * or a known token format goes to the human like a secret-named file — bound to exactly those
 * bytes, audited as `protected:content:<rule>`. Every route that reads goes through that read:
 * read_text_file, create_object_from_file, edit_file, grep (which skips such a file unasked),
 * and the JIT syscalls (the same primitive methods). Each attack has its benign control.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { HumanDecisionError, HumanPendingError } from "../runtime/base/errors.ts";
import { testRuntime, type TestRuntimeOptions } from "../testing.ts";

const NEVER = new AbortController().signal;
const MARKER = "KEYMARKER";

/** A PEM private key whose body carries {@link MARKER} (assembled: no key literal in this file). */
function privateKey(): string {
  const line = `MIIEvQIBADANBgkqhkiG9w0BAQEFAASC${MARKER}${"A".repeat(23)}`;
  return ["-----BEGIN", " PRIVATE KEY-----\n", `${line}\n`.repeat(5), "-----END PRIVATE KEY-----\n"]
    .join("");
}
/** A GitHub token carrying the marker. */
const GITHUB_TOKEN = ["gh", "p_", MARKER, "0123456789abcdefghijklmnopq"].join("");

const NOTES = `Deploy notes\n\nThe server key, for now:\n${privateKey()}\nMore notes.\n`;

async function fixture(options: TestRuntimeOptions = {}) {
  const t = await testRuntime({
    prefix: "libos-content-",
    files: {
      "README.md": "# Demo\nplain text\n",
      "notes.txt": NOTES,
      "config.json": `{"token": "${GITHUB_TOKEN}"}\n`,
    },
    mode: "workspace-write",
    human: "none",
    wall: false,
    ...options,
  });
  const tools = ["read_text_file", "grep", "edit_file", "create_object_from_file"];
  const pid = t.spawn({ image: "coding-agent:v0", tools });
  return {
    ...t,
    pid,
    call: (name: string, args: Record<string, unknown>) =>
      t.runtime.tools.invoke(pid, { name, arguments: args }, NEVER),
    /** The audit reasons of `fs.read` asks. */
    asks: () =>
      t.runtime.audit.query({ pid, limit: 1000 })
        .filter((r) => r.action === "fs.read" && r.decision === "ask")
        .map((r) => `${r.resource} ${r.authority}`),
  };
}

Deno.test("FilesystemPrimitive.readText() attack: a private key in notes.txt and a GitHub token in config.json (workspace-write, human none) are refused, audited protected:content:<rule>, nothing returned; README.md is read", async () => {
  await using f = await fixture();
  for (const [path, rule] of [["notes.txt", "private-key"], ["config.json", "github-token"]]) {
    await assert.rejects(
      f.runtime.primitives.fs.readText(f.pid, { path: path! }),
      (error: unknown) => {
        assert.ok(error instanceof HumanDecisionError, String(error));
        assert.equal(error.reason, `protected:content:${rule}`);
        assert.doesNotMatch(error.message, new RegExp(MARKER));
        return true;
      },
    );
  }
  const control = await f.runtime.primitives.fs.readText(f.pid, { path: "README.md" });
  assert.equal(control.content, "# Demo\nplain text\n");
  assert.deepEqual(f.asks(), [
    "fs:notes.txt protected:content:private-key",
    "fs:config.json protected:content:github-token",
  ]);
  const audit = JSON.stringify(f.runtime.audit.query({ limit: 1000 }));
  assert.doesNotMatch(audit, new RegExp(MARKER), "the secret reached the audit log");
  assert.ok(
    !f.runtime.audit.query({ pid: f.pid, limit: 1000 }).some((r) =>
      r.action === "fs.read" && r.decision === "allow" && r.resource !== "fs:README.md"
    ),
    "a secret read was audited as allowed",
  );
});

Deno.test("FilesystemPrimitive.readText(): a human's approval is bound to the exact content — it returns those bytes once; a changed file asks again", async () => {
  await using f = await fixture({ human: "queue" });
  const fs = f.runtime.primitives.fs;
  await assert.rejects(fs.readText(f.pid, { path: "notes.txt" }), HumanPendingError);
  const [request] = f.runtime.human.list({ pid: f.pid });
  assert.ok(request?.approval);
  assert.equal(request.approval.reason, "protected:content:private-key");
  assert.equal(request.approval.preview, null, "the human request stores no content");
  assert.doesNotMatch(JSON.stringify(request), new RegExp(MARKER));
  f.runtime.human.approve(request.id, { by: "human:test" });
  // The content changes after the approval, keeping size and mtime (the target's fingerprint):
  // the approval does not cover other bytes.
  const path = join(f.workspace, "notes.txt");
  const { mtime, atime } = Deno.statSync(path);
  const swap = (text: string) => {
    Deno.writeTextFileSync(path, text);
    Deno.utimeSync(path, atime!, mtime!);
  };
  swap(NOTES.replace(MARKER, "OTHERMARK"));
  await assert.rejects(fs.readText(f.pid, { path: "notes.txt" }), HumanPendingError);
  // The approved bytes again: read once, then the one-shot approval is spent.
  swap(NOTES);
  const read = await fs.readText(f.pid, { path: "notes.txt" });
  assert.equal(read.content, NOTES);
  await assert.rejects(fs.readText(f.pid, { path: "notes.txt" }), HumanPendingError);
});

Deno.test("FilesystemPrimitive.readText() attack: max_bytes cut anywhere inside the key or token (to get its first part) still asks — the scan looks past the cut; a cut well before it reads", async () => {
  await using f = await fixture();
  const fs = f.runtime.primitives.fs;
  const files: readonly (readonly [string, string])[] = [
    ["notes.txt", NOTES],
    ["config.json", `{"token": "${GITHUB_TOKEN}"}\n`],
  ];
  for (const [path, text] of files) {
    const start = text.indexOf(path === "notes.txt" ? "-----BEGIN" : GITHUB_TOKEN.slice(0, 4));
    for (let cut = start; cut <= start + 40; cut += 3) {
      await assert.rejects(
        fs.readText(f.pid, { path, maxBytes: cut }),
        HumanDecisionError,
        `${path} cut at ${cut}`,
      );
    }
  }
  // Control: text far enough before a key (more than the scan's lookahead) reads.
  Deno.writeTextFileSync(join(f.workspace, "long.txt"), `${"x".repeat(999)}\n${privateKey()}`);
  const head = await fs.readText(f.pid, { path: "long.txt", maxBytes: 100 });
  assert.equal(head.content, "x".repeat(100));
  await assert.rejects(fs.readText(f.pid, { path: "long.txt", maxBytes: 900 }), HumanDecisionError);
});

Deno.test("grep attack: a secret line in a non-secret-named file is never returned — the file is skipped unasked (like a secret-named one) and audited; the control line is found", async () => {
  await using f = await fixture({ human: "queue" });
  Deno.writeTextFileSync(join(f.workspace, "more.txt"), `${MARKER} is not a secret here\n`);
  const result = await f.call("grep", { text: MARKER });
  assert.ok(result.ok, result.forModel);
  const value = result.value as { matches: { path: string }[]; skipped: number };
  assert.deepEqual(value.matches.map((m) => m.path), ["more.txt"], "the control matched");
  assert.equal(value.skipped, 2, "notes.txt and config.json were left out, and counted");
  assert.equal(result.forModel.split(MARKER).length - 1, 1, "only the control line carries it");
  assert.deepEqual(f.runtime.human.list(), [], "a search asks nobody");
  assert.deepEqual(f.asks().sort(), [
    "fs:config.json protected:content:github-token",
    "fs:notes.txt protected:content:private-key",
  ]);
});

Deno.test("edit_file and create_object_from_file attack: a file carrying a key is not edited (an edit's refusals would echo it) nor copied into memory; the controls work", async () => {
  await using f = await fixture();
  const edit = await f.call("edit_file", {
    path: "notes.txt",
    old_string: "Deploy notes",
    new_string: "Notes",
  });
  assert.equal(edit.ok, false, edit.forModel);
  assert.doesNotMatch(edit.forModel, new RegExp(MARKER));
  assert.equal(Deno.readTextFileSync(join(f.workspace, "notes.txt")), NOTES, "notes.txt unchanged");
  const object = await f.call("create_object_from_file", { path: "config.json", name: "cfg" });
  assert.equal(object.ok, false, object.forModel);
  assert.doesNotMatch(object.forModel, new RegExp(MARKER));
  // Controls.
  const editControl = await f.call("edit_file", {
    path: "README.md",
    old_string: "plain text",
    new_string: "edited",
  });
  assert.ok(editControl.ok, editControl.forModel);
  const objectControl = await f.call("create_object_from_file", { path: "README.md", name: "rd" });
  assert.ok(objectControl.ok, objectControl.forModel);
  const names = f.runtime.memory.view(f.pid).map((o) => o.name);
  assert.ok(names.includes("rd") && !names.includes("cfg"), names.join(", "));
});

Deno.test("FilesystemPrimitive.writeText() attack: overwriting .env or creating .npmrc asks in workspace-write and full-access; no request shows (and stores) a diff of a secret there now, by name or by content; src.ts is written", async () => {
  for (const mode of ["workspace-write", "full-access"] as const) {
    await using f = await fixture({ human: "queue", mode });
    Deno.writeTextFileSync(join(f.workspace, ".env"), `TOKEN=${MARKER}\n`);
    // A hard link asks on any write (its other name would change too): notes.txt carries a key.
    Deno.linkSync(join(f.workspace, "notes.txt"), join(f.workspace, "notes-link.txt"));
    const fs = f.runtime.primitives.fs;
    for (const path of [".env", ".npmrc", "notes.txt"]) {
      await assert.rejects(
        fs.writeText(f.pid, { path, content: "registry=https://evil.example/\n" }),
        HumanPendingError,
        `${mode} ${path}`,
      );
    }
    const requests = f.runtime.human.list({ pid: f.pid });
    assert.deepEqual(
      requests.map((r) => [r.approval?.path, r.approval?.reason, r.approval?.diff ?? null]),
      [
        [".env", "protected:**/.env*", null],
        [".npmrc", "protected:**/.npmrc", null],
        ["notes.txt", "protected:hardlink", null],
      ],
      mode,
    );
    assert.doesNotMatch(JSON.stringify(requests), new RegExp(MARKER), mode);
    assert.equal(Deno.readTextFileSync(join(f.workspace, ".env")), `TOKEN=${MARKER}\n`, mode);
    assert.equal(Deno.readTextFileSync(join(f.workspace, "notes.txt")), NOTES, mode);
    assert.throws(() => Deno.lstatSync(join(f.workspace, ".npmrc")), Deno.errors.NotFound, mode);
    // Control: an ordinary file is written, and a hard-linked innocent one shows its diff.
    await fs.writeText(f.pid, { path: "src.ts", content: "export {};\n" });
    assert.equal(Deno.readTextFileSync(join(f.workspace, "src.ts")), "export {};\n", mode);
    Deno.linkSync(join(f.workspace, "README.md"), join(f.workspace, "readme-link.md"));
    await assert.rejects(fs.writeText(f.pid, { path: "README.md", content: "new\n" }));
    const diff = f.runtime.human.list({ pid: f.pid }).at(-1)?.approval?.diff ?? "";
    assert.match(diff, /^-plain text$/m, mode);
  }
});
