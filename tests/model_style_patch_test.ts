/**
 * `apply_patch` called as models call it (issue 27): one table of patches in the shapes models
 * emit — the Codex envelope with add, update, delete and move in one patch, a CRLF file, trailing
 * whitespace, a heredoc around the patch, a unified diff — and of the ways they go wrong: a
 * context line that does not match, a missing `*** End Patch`, a path outside the workspace, a
 * symlink that leads out, an update to a missing file, a protected or secret file nobody may
 * approve. Each row states the result (its code, and the words that tell the model what to do)
 * and the whole workspace afterwards: a refused patch changes nothing, not even its other files.
 * Then: one approval for a whole patch, showing every file's diff; a write that fails midway is
 * undone (no partial application); the audit names every file; queue mode re-runs an approved
 * patch once, bound to the files as they were; a secret file's content is no oracle; and through
 * the real launcher (`libos agent` with a scripted model), a fix with one patch and a plan, and a
 * symlink attack refused whole.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FakeClock } from "../runtime/base/clock.ts";
import { seededIds } from "../runtime/base/ids.ts";
import type { HumanDecision } from "../runtime/human/human_channel.ts";
import {
  type FilesystemProvider,
  hostFilesystem,
  type RecordedCall,
  recordingFilesystem,
} from "../runtime/providers/filesystem.ts";
import type { ToolResult } from "../runtime/broker/tool_broker.ts";
import { call, final, FIXED, fixRepository } from "./agent_fixture.ts";
import { sandbox, task } from "./_cli_sandbox.ts";
import {
  approveAndResume,
  grantFs,
  NEVER,
  parked,
  replayScript,
  type ToolFixture,
  toolFixture,
  tree,
} from "./model_style_fixture.ts";

const OUTSIDE_SECRET = "outside-secret-0xBEEF\n";

interface Fixture extends ToolFixture {
  /** Sends `patch` to apply_patch, always as call `call_1`. */
  apply(patch: string): Promise<ToolResult>;
}

interface FixtureOptions {
  readonly human?: "interactive" | "queue" | "none";
  readonly answers?: readonly HumanDecision[];
  readonly mode?: "workspace-write" | "full-access";
  /** Wraps the host filesystem (to fail a call midway). */
  readonly filesystem?: (inner: FilesystemProvider) => FilesystemProvider;
}

/** A process with apply_patch alone, a fixed clock and ids, a secret outside the workspace. */
async function fixture(options: FixtureOptions = {}): Promise<Fixture> {
  const f = await toolFixture({
    prefix: "libos-patch-",
    clock: new FakeClock(Date.UTC(2026, 11, 2, 12)),
    ids: seededIds(27),
    human: options.human ?? "none",
    ...(options.mode ? { mode: options.mode } : {}),
    ...(options.answers ? { answers: options.answers } : {}),
    ...(options.filesystem ? { filesystem: options.filesystem(hostFilesystem()) } : {}),
    spawn: { tools: ["apply_patch"] },
  });
  Deno.writeTextFileSync(join(f.outside, "secret.txt"), OUTSIDE_SECRET);
  return { ...f, apply: (patch) => f.call("apply_patch", { patch }, "call_1") };
}

/** Writes files (and `-> target` symlinks) under the workspace. */
function seed(f: Fixture, files: Readonly<Record<string, string>>): void {
  for (const [rel, content] of Object.entries(files)) {
    const path = join(f.ws, rel);
    Deno.mkdirSync(join(path, ".."), { recursive: true });
    if (content.startsWith("-> ")) Deno.symlinkSync(content.slice(3), path);
    else Deno.writeTextFileSync(path, content);
  }
}

const patch = (...lines: string[]) => lines.join("\n");

const APP =
  "def greet(name):\n    return 'Hello ' + name\n\n\ndef main():\n    print(greet('Ada'))\n";

interface Row {
  readonly name: string;
  readonly files: Readonly<Record<string, string>>;
  readonly patch: string;
  /** Success: the result's `files` (path and status). */
  readonly ok?: readonly { path: string; status: string }[];
  /** Refusal: its code, and words its message must hold (what failed, what to do). */
  readonly refused?: { readonly code: string; readonly says: readonly (string | RegExp)[] };
  /** The whole workspace afterwards, for a success (a refusal leaves everything as it was). */
  readonly after?: Readonly<Record<string, string>>;
}

const ROWS: readonly Row[] = [
  {
    name: "add, update, delete and move in one patch",
    files: { "src/app.py": APP, "old.txt": "bye\n", "notes/draft.md": "# Draft\ntext\n" },
    patch: patch(
      "*** Begin Patch",
      "*** Add File: src/util/strings.py",
      "+def shout(s):",
      "+    return s.upper()",
      "*** Update File: src/app.py",
      "@@ def greet(name):",
      "-    return 'Hello ' + name",
      "+    return f'Hello, {name}!'",
      "@@ def main():",
      "-    print(greet('Ada'))",
      "+    print(greet('Grace'))",
      "*** Delete File: old.txt",
      "*** Update File: notes/draft.md",
      "*** Move to: docs/final.md",
      "@@",
      "-# Draft",
      "+# Final",
      " text",
      "*** End Patch",
    ),
    ok: [
      { path: "src/util/strings.py", status: "A" },
      { path: "src/app.py", status: "M" },
      { path: "old.txt", status: "D" },
      { path: "notes/draft.md", status: "D" },
      { path: "docs/final.md", status: "A" },
    ],
    after: {
      "src/": "",
      "src/app.py": APP.replace("'Hello ' + name", "f'Hello, {name}!'").replace("'Ada'", "'Grace'"),
      "src/util/": "",
      "src/util/strings.py": "def shout(s):\n    return s.upper()\n",
      "notes/": "",
      "docs/": "",
      "docs/final.md": "# Final\ntext\n",
    },
  },
  {
    name: "a CRLF file keeps its CRLF line endings (and the added line gets one)",
    files: { "win.txt": "one\r\ntwo\r\nthree\r\n" },
    patch: patch(
      "*** Begin Patch",
      "*** Update File: win.txt",
      " one",
      "-two",
      "+TWO",
      "+two and a half",
      " three",
      "*** End Patch",
    ),
    ok: [{ path: "win.txt", status: "M" }],
    after: { "win.txt": "one\r\nTWO\r\ntwo and a half\r\nthree\r\n" },
  },
  {
    name: "a patch sent with CRLF line endings applies to an LF file, which stays LF",
    files: { "a.txt": "x\ny\n" },
    patch: "*** Begin Patch\r\n*** Update File: a.txt\r\n x\r\n-y\r\n+z\r\n*** End Patch\r\n",
    ok: [{ path: "a.txt", status: "M" }],
    after: { "a.txt": "x\nz\n" },
  },
  {
    name: "trailing whitespace in the file's context is tolerated, and the context keeps it",
    files: { "ws.py": "if x:   \n    y = 1\t\n    z = 2\n" },
    patch: patch(
      "*** Begin Patch",
      "*** Update File: ws.py",
      " if x:",
      "     y = 1",
      "-    z = 2",
      "+    z = 3",
      "*** End Patch",
    ),
    ok: [{ path: "ws.py", status: "M" }],
    after: { "ws.py": "if x:   \n    y = 1\t\n    z = 3\n" },
  },
  {
    name:
      "an empty line inside a hunk is an empty context line; *** End of File anchors at the end",
    files: { "e.txt": "a\n\nb\nend\n\nb\nend\n" },
    patch: patch(
      "*** Begin Patch",
      "*** Update File: e.txt",
      "@@",
      "",
      " b",
      "-end",
      "+END",
      "*** End of File",
      "*** End Patch",
    ),
    ok: [{ path: "e.txt", status: "M" }],
    after: { "e.txt": "a\n\nb\nend\n\nb\nEND\n" },
  },
  {
    name: "a heredoc around the patch (as for a shell call) is taken off",
    files: { "h.txt": "old\n" },
    patch: patch(
      "apply_patch <<'EOF'",
      "*** Begin Patch",
      "*** Update File: h.txt",
      "-old",
      "+new",
      "*** End Patch",
      "EOF",
    ),
    ok: [{ path: "h.txt", status: "M" }],
    after: { "h.txt": "new\n" },
  },
  {
    name: "a unified diff is accepted (update, add from /dev/null, delete to /dev/null)",
    files: { "u.txt": "a\nb\nc\n", "gone.txt": "x\n" },
    patch: patch(
      "diff --git a/u.txt b/u.txt",
      "--- a/u.txt",
      "+++ b/u.txt",
      "@@ -1,3 +1,3 @@",
      " a",
      "-b",
      "+B",
      " c",
      "--- /dev/null",
      "+++ b/new.txt",
      "@@ -0,0 +1,2 @@",
      "+hello",
      "+world",
      "--- a/gone.txt",
      "+++ /dev/null",
      "@@ -1 +0,0 @@",
      "-x",
    ),
    ok: [
      { path: "u.txt", status: "M" },
      { path: "new.txt", status: "A" },
      { path: "gone.txt", status: "D" },
    ],
    after: { "u.txt": "a\nB\nc\n", "new.txt": "hello\nworld\n" },
  },
  {
    name: "a context line that does not match refuses the whole patch, naming the hunk",
    files: { "src/app.py": APP, "other.txt": "keep\n" },
    patch: patch(
      "*** Begin Patch",
      "*** Update File: other.txt",
      "-keep",
      "+changed",
      "*** Update File: src/app.py",
      "@@ def main():",
      "-    print(greet('Bob'))",
      "+    print(greet('Eve'))",
      "*** End Patch",
    ),
    refused: {
      code: "patch_mismatch",
      says: [
        'hunk 1 of "src/app.py"',
        "did not match",
        "Read the file again",
        "nothing was changed",
      ],
    },
  },
  {
    name: "an @@ context header that is not in the file refuses, naming it",
    files: { "src/app.py": APP },
    patch: patch(
      "*** Begin Patch",
      "*** Update File: src/app.py",
      "@@ def farewell(name):",
      "-    return 'Hello ' + name",
      "+    return 'Bye'",
      "*** End Patch",
    ),
    refused: { code: "patch_mismatch", says: ['"@@ def farewell(name):" line was not found'] },
  },
  {
    name: "a missing *** End Patch is a parse error naming the line and what to add",
    files: { "a.txt": "a\n" },
    patch: patch("*** Begin Patch", "*** Update File: a.txt", "-a", "+b"),
    refused: { code: "patch_invalid", says: ["Patch line 4", 'does not end with "*** End Patch"'] },
  },
  {
    name: "a line that is not a hunk line is a parse error naming it",
    files: { "a.txt": "a\n" },
    patch: patch("*** Begin Patch", "*** Update File: a.txt", "-a", "b", "*** End Patch"),
    refused: {
      code: "patch_invalid",
      says: ["Patch line 4", 'starting with " " (context), "-" (remove) or "+" (add)', '"b"'],
    },
  },
  {
    name: "an Add File line without + is a parse error",
    files: {},
    patch: patch("*** Begin Patch", "*** Add File: n.txt", "+ok", "oops", "*** End Patch"),
    refused: { code: "patch_invalid", says: ["Patch line 4", 'starting with "+"'] },
  },
  {
    name: "no *** Begin Patch is a parse error saying what a patch starts with",
    files: {},
    patch: patch("*** Update File: a.txt", "-a", "+b", "*** End Patch"),
    refused: { code: "patch_invalid", says: ["Patch line 1", 'expected "*** Begin Patch"'] },
  },
  {
    name: "a path outside the workspace (..) refuses the whole patch, its other files untouched",
    files: { "in.txt": "in\n" },
    patch: patch(
      "*** Begin Patch",
      "*** Update File: in.txt",
      "-in",
      "+changed",
      "*** Add File: ../outside/planted.txt",
      "+planted",
      "*** End Patch",
    ),
    refused: { code: "outside_workspace", says: ["outside the workspace", "use a path inside it"] },
  },
  {
    name: "an absolute path outside the workspace is refused",
    files: {},
    patch: patch("*** Begin Patch", "*** Delete File: /etc/hostname", "*** End Patch"),
    refused: { code: "outside_workspace", says: ["outside the workspace"] },
  },
  {
    name: "a symlink leading outside is refused, and its target is not written",
    files: { "link.txt": "-> ../outside/secret.txt" },
    patch: patch(
      "*** Begin Patch",
      "*** Update File: link.txt",
      "-outside-secret-0xBEEF",
      "+overwritten",
      "*** End Patch",
    ),
    refused: {
      code: "outside_workspace",
      says: ["a symlink leads outside the workspace", "patch only files inside the workspace"],
    },
  },
  {
    name: "a directory symlink leading outside is refused for a new file under it",
    files: { "out": "-> ../outside" },
    patch: patch("*** Begin Patch", "*** Add File: out/planted.txt", "+x", "*** End Patch"),
    refused: {
      code: "outside_workspace",
      says: ["a symlink leads outside the workspace", "patch only files inside the workspace"],
    },
  },
  {
    name: "an update to a missing file is refused, saying to add it instead",
    files: { "a.txt": "a\n" },
    patch: patch(
      "*** Begin Patch",
      "*** Update File: a.txt",
      "-a",
      "+b",
      "*** Update File: missing.py",
      "-x",
      "+y",
      "*** End Patch",
    ),
    refused: {
      code: "validation_failed",
      says: ['"missing.py"', "does not exist", "*** Add File:"],
    },
  },
  {
    name: "a new file under a path that is a file is refused, naming it",
    files: { "plain.txt": "x\n", "a.txt": "a\n" },
    patch: patch(
      "*** Begin Patch",
      "*** Update File: a.txt",
      "-a",
      "+b",
      "*** Add File: plain.txt/child.txt",
      "+x",
      "*** End Patch",
    ),
    refused: { code: "validation_failed", says: ['"plain.txt/child.txt"', "is a file"] },
  },
  {
    name: "a delete of a missing file is refused",
    files: {},
    patch: patch("*** Begin Patch", "*** Delete File: nothing.txt", "*** End Patch"),
    refused: { code: "validation_failed", says: ["does not exist", "*** Delete File:"] },
  },
  {
    name: "a protected path (.git) asks; with no human reachable the whole patch is refused",
    files: { ".git/config": "[core]\n", "a.txt": "a\n" },
    patch: patch(
      "*** Begin Patch",
      "*** Update File: a.txt",
      "-a",
      "+b",
      "*** Update File: .git/config",
      "+[hooks]",
      "*** End Patch",
    ),
    refused: { code: "human_unavailable", says: ["protected:", "--human queue"] },
  },
  {
    name: "a secret-bearing file (.env) asks; with no human reachable nothing is read or written",
    files: { ".env": "TOKEN=abc\n" },
    patch: patch(
      "*** Begin Patch",
      "*** Update File: .env",
      "-TOKEN=abc",
      "+TOKEN=x",
      "*** End Patch",
    ),
    refused: { code: "human_unavailable", says: ["no human is reachable"] },
  },
];

for (const row of ROWS) {
  Deno.test(`apply_patch as a model calls it: ${row.name}`, async () => {
    await using f = await fixture();
    seed(f, row.files);
    const before = tree(f.root);
    const result = await f.apply(row.patch);
    if (row.ok) {
      if (!result.ok) assert.fail(`expected ok, got ${result.error.code}: ${result.error.message}`);
      const files = (result.value as { files: { path: string; status: string }[] }).files;
      assert.deepEqual(files.map((x) => ({ path: x.path, status: x.status })), row.ok);
    } else {
      if (result.ok) {
        assert.fail(`expected ${row.refused!.code}, but it applied: ${result.forModel}`);
      }
      assert.equal(result.error.code, row.refused!.code, result.error.message);
      for (const words of row.refused!.says) {
        if (typeof words === "string") {
          assert.ok(result.error.message.includes(words), result.error.message);
        } else assert.match(result.error.message, words);
      }
    }
    const after = tree(f.root);
    if (row.after) assert.deepEqual(tree(f.ws), row.after);
    else assert.deepEqual(after, before, "a refused patch changes nothing");
    assert.equal(Deno.readTextFileSync(join(f.root, "outside", "secret.txt")), OUTSIDE_SECRET);
    assert.ok(
      !Object.keys(after).some((p) => p.includes(".libos-")),
      "no temporary file is left behind",
    );
  });
}

Deno.test("apply_patch: one approval covers the whole patch, and the human sees every file's diff", async () => {
  await using f = await fixture({
    human: "interactive",
    mode: "workspace-write",
    answers: [{ type: "approve" }],
  });
  seed(f, { "a.txt": "alpha\n", "b.txt": "beta\n" });
  const result = await f.apply(patch(
    "*** Begin Patch",
    "*** Update File: a.txt",
    "-alpha",
    "+ALPHA",
    "*** Delete File: b.txt",
    "*** Add File: c.txt",
    "+gamma",
    "*** End Patch",
  ));
  if (!result.ok) assert.fail(`${result.error.code}: ${result.error.message}`);
  assert.equal(f.prompted.length, 1, "asked once, for the whole patch");
  const shown = f.prompted[0]!;
  for (const line of ["-alpha", "+ALPHA", "-beta", "+gamma", "D b.txt", "A c.txt", "M a.txt"]) {
    assert.ok(shown.includes(line), `the approval shows ${line}:\n${shown}`);
  }
  assert.deepEqual(tree(f.ws), { "a.txt": "ALPHA\n", "c.txt": "gamma\n" });
  // Every file is audited as allowed by the human's approval.
  const records = f.runtime.audit.query({ pid: f.pid, limit: 100 })
    .filter((r) => r.action === "fs.patch" && r.decision === "allow");
  assert.deepEqual(records.map((r) => r.resource).sort(), ["fs:a.txt", "fs:b.txt", "fs:c.txt"]);
  assert.ok(
    records.every((r) => r.authority.startsWith("cap:")),
    "allowed by the one-shot approval",
  );
});

Deno.test("apply_patch: a rejected approval changes nothing", async () => {
  await using f = await fixture({
    human: "interactive",
    mode: "workspace-write",
    answers: [{ type: "reject", reason: "no" }],
  });
  seed(f, { "a.txt": "alpha\n", "b.txt": "beta\n" });
  const before = tree(f.root);
  const result = await f.apply(patch(
    "*** Begin Patch",
    "*** Update File: a.txt",
    "-alpha",
    "+ALPHA",
    "*** Delete File: b.txt",
    "*** End Patch",
  ));
  assert.equal(result.ok, false);
  assert.equal(f.prompted.length, 1);
  assert.deepEqual(tree(f.root), before);
});

Deno.test("apply_patch: a write that fails midway is undone — no partial application, no temporary files", async () => {
  const calls: RecordedCall[] = [];
  let renames = 0;
  await using f = await fixture({
    filesystem: (inner) =>
      recordingFilesystem(inner, calls, (call) => {
        // The second file's rename into place fails (a full disk, a vanished directory).
        if (call.op === "rename" && !call.path.includes(".libos-undo") && ++renames === 2) {
          throw new Deno.errors.PermissionDenied("injected failure");
        }
      }),
  });
  seed(f, { "one.txt": "1\n", "two.txt": "2\n", "three.txt": "3\n" });
  const before = tree(f.root);
  const result = await f.apply(patch(
    "*** Begin Patch",
    "*** Update File: one.txt",
    "-1",
    "+one",
    "*** Update File: two.txt",
    "-2",
    "+two",
    "*** Delete File: three.txt",
    "*** Add File: sub/four.txt",
    "+4",
    "*** End Patch",
  ));
  if (result.ok) assert.fail("the injected failure should fail the patch");
  assert.equal(result.error.code, "patch_rolled_back", result.error.message);
  assert.match(result.error.message, /injected failure/);
  assert.match(result.error.message, /nothing was changed/);
  assert.ok(renames >= 2, "the first file was renamed into place before the failure");
  assert.deepEqual(tree(f.root), before, "every file as it was; no sub/ directory, no temp file");
});

Deno.test("apply_patch: a patch that touches nothing it may not is audited per file; a refused one records no allow", async () => {
  await using f = await fixture();
  seed(f, { "a.txt": "a\n" });
  const refused = await f.apply(patch(
    "*** Begin Patch",
    "*** Update File: a.txt",
    "-a",
    "+b",
    "*** Add File: ../escape.txt",
    "+x",
    "*** End Patch",
  ));
  assert.equal(refused.ok, false);
  const records = f.runtime.audit.query({ pid: f.pid, limit: 100 })
    .filter((r) => r.action === "fs.patch");
  assert.ok(records.some((r) => r.decision === "deny" && r.authority === "containment"));
  assert.ok(!records.some((r) => r.decision === "allow"), "no allow recorded for a refused patch");
  assert.equal(Deno.readTextFileSync(join(f.ws, "a.txt")), "a\n");
});

const QUEUED = patch(
  "*** Begin Patch",
  "*** Update File: a.txt",
  "-alpha",
  "+ALPHA",
  "*** Delete File: b.txt",
  "*** End Patch",
);

Deno.test("apply_patch in queue mode: the parked patch runs once when approved, and a second resume does not run it again", async () => {
  await using f = await fixture({ human: "queue", mode: "workspace-write" });
  seed(f, { "a.txt": "alpha\n", "b.txt": "beta\n" });
  const id = await parked(f.apply(QUEUED));
  assert.deepEqual(
    tree(f.ws),
    { "a.txt": "alpha\n", "b.txt": "beta\n" },
    "nothing before approval",
  );
  const first = await approveAndResume(f, id);
  assert.equal(first.type, "outcome");
  if (first.type === "outcome") assert.equal(first.outcome.ok, true, JSON.stringify(first.outcome));
  assert.deepEqual(tree(f.ws), { "a.txt": "ALPHA\n" });
  const again = await f.runtime.human.resume(f.pid, id, NEVER);
  assert.equal(again.type, "outcome");
  if (again.type === "outcome") assert.equal(again.outcome.ok, false);
  assert.deepEqual(tree(f.ws), { "a.txt": "ALPHA\n" });
});

Deno.test("apply_patch in queue mode: an approval is bound to the files as they were — one changed meanwhile asks again, nothing applied", async () => {
  await using f = await fixture({ human: "queue", mode: "workspace-write" });
  seed(f, { "a.txt": "alpha\n", "b.txt": "beta\n" });
  const id = await parked(f.apply(QUEUED));
  // Someone changes b.txt after the human saw the patch; the patch still parses and matches.
  Deno.writeTextFileSync(join(f.ws, "b.txt"), "beta, edited\n");
  const resumed = await approveAndResume(f, id);
  assert.equal(resumed.type, "pending", "a new approval is needed for what is there now");
  assert.deepEqual(tree(f.ws), { "a.txt": "alpha\n", "b.txt": "beta, edited\n" });
});

Deno.test("apply_patch attack: a secret file's content is no oracle — a matching and a non-matching hunk against .env both ask, and a rejection tells nothing", async () => {
  const outcomes: string[] = [];
  for (const guess of ["TOKEN=abc", "TOKEN=xyz"]) {
    await using f = await fixture({
      human: "interactive",
      answers: [{ type: "reject", reason: "no" }],
    });
    seed(f, { ".env": "TOKEN=abc\n" });
    // The second file's new directory may not be made (a deny on exactly it): told only after
    // approval, or its refusal would say that the first hunk matched.
    grantFs(f, "newdir", "exact", "deny");
    const result = await f.apply(
      patch(
        "*** Begin Patch",
        "*** Update File: .env",
        `-${guess}`,
        "+TOKEN=",
        "*** Add File: newdir/child.txt",
        "+x",
        "*** End Patch",
      ),
    );
    if (result.ok) assert.fail("a rejected patch cannot apply");
    assert.equal(f.prompted.length, 1, "the human is asked before the hunk is matched");
    assert.ok(!f.prompted[0]!.includes("TOKEN=abc\n"), "the card shows no diff of the secret");
    outcomes.push(`${result.error.code}: ${result.error.message}`);
    assert.deepEqual(tree(f.ws), { ".env": "TOKEN=abc\n" });
  }
  assert.equal(outcomes[0]!.split(":")[0], "approval_rejected");
  assert.equal(outcomes[0], outcomes[1], "the right guess and the wrong one get the same answer");
});

Deno.test("apply_patch: once a human approved reading the secret file, a hunk that does not match is reported (and nothing changed)", async () => {
  await using f = await fixture({ human: "interactive", answers: [{ type: "approve" }] });
  seed(f, { ".env": "TOKEN=abc\n" });
  const result = await f.apply(
    patch("*** Begin Patch", "*** Update File: .env", "-TOKEN=xyz", "+TOKEN=", "*** End Patch"),
  );
  if (result.ok) assert.fail("the hunk does not match");
  assert.equal(result.error.code, "patch_mismatch");
  assert.equal(f.prompted.length, 1);
  assert.equal(Deno.readTextFileSync(join(f.ws, ".env")), "TOKEN=abc\n");
  // The approval was used for this outcome, and the record says what failed.
  const allowed = f.runtime.audit.query({ pid: f.pid, limit: 100 })
    .filter((r) => r.action === "fs.patch" && r.decision === "allow");
  assert.equal(allowed.length, 1);
  assert.match(allowed[0]!.authority, /^cap:/);
  assert.equal(allowed[0]!.detail?.failed, "patch_mismatch");
  const again = await f.apply(
    patch("*** Begin Patch", "*** Update File: .env", "-TOKEN=xyz", "+TOKEN=", "*** End Patch"),
  );
  assert.equal(again.ok, false);
  assert.equal(f.prompted.length, 2, "the used approval does not answer a second try");
});

/**
 * `libos agent --goal GOAL --model replay:SCRIPT --mode full-access --yes` (and `more`) through
 * the real launcher, the script written from `turns`; asserted to exit 0.
 */
async function launcherRun(
  s: { readonly workspace: string; readonly state: string },
  goal: string,
  turns: readonly string[],
  ...more: string[]
): ReturnType<typeof task> {
  const script = replayScript(s.workspace, turns);
  const run = await task(
    s.workspace,
    s.state,
    "libos",
    "agent",
    "--goal",
    goal,
    ...more,
    "--model",
    `replay:${script}`,
    "--mode",
    "full-access",
    "--yes",
  );
  assert.equal(run.status, 0, run.stdout + run.stderr);
  return run;
}

Deno.test("libos agent through the real launcher: a scripted model keeps its plan and fixes the repository with one apply_patch — the run shows the checklist and the diffs, libos log the plan", async () => {
  using s = sandbox();
  fixRepository(s.workspace);
  Deno.writeTextFileSync(join(s.workspace, "NOTES.txt"), "stale notes\n");
  const run = await launcherRun(
    s,
    "Make the test pass",
    [
      call("update_plan", {
        plan: [
          { step: "Fix add()", status: "in_progress" },
          { step: "Add a regression note", status: "pending" },
        ],
      }),
      call("apply_patch", {
        patch: patch(
          "*** Begin Patch",
          "*** Update File: src/mathlib.py",
          " def add(a, b):",
          "-    return a + b + 1",
          "+    return a + b",
          "*** Add File: docs/CHANGES.md",
          "+- add() no longer adds 1",
          "*** Delete File: NOTES.txt",
          "*** End Patch",
        ),
      }),
      call("update_plan", {
        plan: [
          { step: "Fix add()", status: "completed" },
          { step: "Add a regression note", status: "completed" },
        ],
      }),
      final("Fixed add(); noted it in docs/CHANGES.md."),
    ],
    "--image",
    "coding-agent:v0",
  );
  assert.equal(Deno.readTextFileSync(join(s.workspace, "src", "mathlib.py")), FIXED);
  assert.equal(
    Deno.readTextFileSync(join(s.workspace, "docs", "CHANGES.md")),
    "- add() no longer adds 1\n",
  );
  assert.throws(() => Deno.statSync(join(s.workspace, "NOTES.txt")), Deno.errors.NotFound);
  // The run display: the plan as a checklist under each call, and each file's change.
  assert.match(run.stderr, /update_plan\n\s+│ ▸ Fix add\(\)\n\s+│ □ Add a regression note/);
  assert.match(run.stderr, /│ ✔ Fix add\(\)\n\s+│ ✔ Add a regression note/);
  assert.match(run.stderr, /src\/mathlib\.py edited/);
  assert.match(run.stderr, /docs\/CHANGES\.md created/);
  assert.match(run.stderr, /NOTES\.txt deleted/);
  // The transcript shows the plan the same way.
  const pid = /pid_[0-9a-f]{12}/.exec(run.stdout + run.stderr)?.[0];
  assert.ok(pid, run.stdout);
  const log = await task(s.workspace, s.state, "libos", "log", pid);
  assert.equal(log.status, 0, log.stderr);
  assert.match(
    log.stdout,
    /call update_plan .*\n\s+│ ✔ Fix add\(\)\n\s+│ ✔ Add a regression note/,
  );
  assert.match(log.stdout, /call apply_patch/);
});

Deno.test("libos agent through the real launcher, attack: a patch that writes through a symlink out of the workspace is refused whole — the file outside and the file inside both unchanged", async () => {
  using s = sandbox();
  const outside = join(s.workspace, "..", "outside.txt");
  Deno.writeTextFileSync(outside, OUTSIDE_SECRET);
  Deno.writeTextFileSync(join(s.workspace, "in.txt"), "in\n");
  Deno.symlinkSync(outside, join(s.workspace, "link.txt"));
  const run = await launcherRun(s, "g", [
    call("apply_patch", {
      patch: patch(
        "*** Begin Patch",
        "*** Update File: in.txt",
        "-in",
        "+changed",
        "*** Update File: link.txt",
        "-outside-secret-0xBEEF",
        "+planted",
        "*** End Patch",
      ),
    }),
    final("done"),
  ]);
  assert.match(run.stderr, /outside_workspace/);
  assert.equal(Deno.readTextFileSync(outside), OUTSIDE_SECRET);
  assert.equal(Deno.readTextFileSync(join(s.workspace, "in.txt")), "in\n");
});
