/**
 * The file tools as models call them (issue 27): one table of the arguments a model trained on
 * the popular coding agents actually sends — relative and absolute paths, offsets and limits, a
 * new file in a directory that does not exist yet, old_string copied with trailing whitespace or
 * with the read's line numbers, LF text for a CRLF file, several edits at once, images and binary
 * files, symlinks — each through the tool broker as the agent calls it, with what the model is
 * shown and what happened on disk. Every refusal must say what to do.
 *
 * Then the attacks the new conveniences open: a parent directory created through a symlink that
 * leads out, a parent that is protected or denied (refused, and nothing created), a symlink
 * deleted whose target is outside or protected (the link goes, the target stays). One
 * parent-creation and one symlink case also run through the real `libos agent` launcher.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { JsonValue } from "../runtime/base/canonical_json.ts";
import type { HumanDecision } from "../runtime/human/human_channel.ts";
import type { ToolResult } from "../runtime/broker/tool_broker.ts";
import { sandbox } from "./_cli_sandbox.ts";
import { call, final, yesRun } from "./agent_fixture.ts";
import {
  approveAndResume,
  exists,
  grantFs,
  parked,
  replayScript,
  type ToolFixture as Fixture,
  toolFixture,
  tree,
} from "./model_style_fixture.ts";

// ---------------------------------------------------------------- fixture

/**
 * A runtime whose process has the coding agent's file tools; its human answers from `answers`.
 * Full-access mode: deletes ask in workspace-write, and these tests are about what the tools do
 * once allowed.
 */
function fixture(
  answers: readonly HumanDecision[] = [],
  human: "interactive" | "queue" = "interactive",
): Promise<Fixture> {
  return toolFixture({
    prefix: "libos-model-files-",
    human,
    answers,
    spawn: { image: "coding-agent:v0" },
  });
}

/** What the model reads of a result: an ok value's content and note, or the refusal. */
function shown(result: ToolResult): string {
  if (!result.ok) return `${result.error.code}: ${result.error.message}`;
  const v = result.value as Record<string, JsonValue>;
  return [typeof v.content === "string" ? v.content : "", JSON.stringify({ ...v, content: null })]
    .join("\n");
}

const TEN = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 73, 72]);

/** The standard workspace every row starts from. */
function seed(f: Fixture): void {
  Deno.mkdirSync(f.at("src"));
  Deno.writeTextFileSync(f.at("src/app.ts"), "const port = 80;\nconst host = 'localhost';\n");
  Deno.writeTextFileSync(f.at("ten.txt"), TEN);
  Deno.writeTextFileSync(f.at("dos.txt"), "first line\r\nsecond line\r\nthird line\r\n");
  Deno.writeTextFileSync(f.at("spaces.py"), "def f():   \n    return 1  \n");
  Deno.writeTextFileSync(f.at("repeat.txt"), "x = 1\nx = 1\nx = 1\n");
  Deno.writeFileSync(f.at("logo.png"), PNG);
  Deno.writeFileSync(f.at("blob.bin"), new Uint8Array([0x68, 0x69, 0x00, 0x01, 0x02]));
  Deno.writeFileSync(f.at("latin1.txt"), new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]));
  Deno.writeTextFileSync(f.at("empty.txt"), "");
  Deno.writeTextFileSync(join(f.outside, "target.txt"), "outside, untouched");
}

// ---------------------------------------------------------------- the table

interface Row {
  readonly name: string;
  readonly tool: string;
  /** The arguments the model sends (`$WS` stands for the workspace's absolute path). */
  readonly args: Record<string, unknown>;
  /** Extra setup on top of {@link seed}. */
  readonly setup?: (f: Fixture) => void;
  /** ok, or the refusal's error code. */
  readonly result: "ok" | string;
  /** What the model is shown must contain each of these (`$WS` replaced). */
  readonly contains?: readonly string[];
  /** ...and none of these. */
  readonly lacks?: readonly string[];
  /** The effect on disk. */
  readonly disk?: (f: Fixture) => void;
}

const unchanged = (path: string, content: string) => (f: Fixture) =>
  assert.equal(Deno.readTextFileSync(f.at(path)), content, `${path} is unchanged`);

const ROWS: readonly Row[] = [
  // read_text_file
  {
    name: "read a relative path: numbered like cat -n",
    tool: "read_text_file",
    args: { path: "src/app.ts" },
    result: "ok",
    contains: ["     1\tconst port = 80;\n     2\tconst host = 'localhost';\n", "to the end"],
  },
  {
    name: "read an absolute path inside the workspace",
    tool: "read_text_file",
    args: { path: "$WS/src/app.ts" },
    result: "ok",
    contains: ["     1\tconst port = 80;", '"path":"src/app.ts"'],
  },
  {
    name: "read an absolute path outside the workspace: refused, naming the workspace",
    tool: "read_text_file",
    args: { path: "/etc/hostname" },
    result: "outside_workspace",
    contains: ['outside the workspace "$WS"', "use a path inside it"],
  },
  {
    name: "read with offset and limit: those lines, and how to read on",
    tool: "read_text_file",
    args: { path: "ten.txt", offset: 3, limit: 2 },
    result: "ok",
    contains: ["     3\tline 3\n     4\tline 4\n", "Showing lines 3-4 of 10", "offset=5"],
    lacks: ["line 2\n", "line 5"],
  },
  {
    name: "read from an offset past the end: refused with the line count",
    tool: "read_text_file",
    args: { path: "ten.txt", offset: 50 },
    result: "validation_failed",
    contains: ["it has 10 lines", "use an offset from 1 to 10"],
  },
  {
    name: "read a long file: cut to fit, with the offset to read on",
    tool: "read_text_file",
    args: { path: "long.txt" },
    setup: (f) =>
      Deno.writeTextFileSync(
        f.at("long.txt"),
        Array.from({ length: 2000 }, (_, i) => `row ${i + 1}`).join("\n"),
      ),
    result: "ok",
    contains: ["     1\trow 1\n", "of 2000; to read on, call read_text_file with offset="],
    lacks: ["row 2000"],
  },
  {
    name: "read a file with a very long line: the line is cut with a marker",
    tool: "read_text_file",
    args: { path: "min.js" },
    setup: (f) => Deno.writeTextFileSync(f.at("min.js"), "a".repeat(5000) + "\nend\n"),
    result: "ok",
    contains: ["[line cut: 3000 more characters", "     2\tend"],
  },
  {
    name: "read an image: its type and size, not bytes",
    tool: "read_text_file",
    args: { path: "logo.png" },
    result: "ok",
    contains: ['"binary":"png"', '"mime":"image/png"', "a png file", `${PNG.length} bytes`],
    lacks: ["PNG", "\ufffd"],
  },
  {
    name: "read a file with NUL bytes: binary",
    tool: "read_text_file",
    args: { path: "blob.bin" },
    result: "ok",
    contains: ['"binary":"binary"', "a binary file"],
  },
  {
    name: "read a file that is not UTF-8: binary, not mojibake",
    tool: "read_text_file",
    args: { path: "latin1.txt" },
    result: "ok",
    contains: ['"binary":"binary"'],
    lacks: ["\ufffd"],
  },
  {
    name: "read a CRLF file: lines shown without their carriage returns",
    tool: "read_text_file",
    args: { path: "dos.txt" },
    result: "ok",
    contains: ["     1\tfirst line\n     2\tsecond line\n"],
    lacks: ["\r"],
  },
  {
    name: "read an empty file",
    tool: "read_text_file",
    args: { path: "empty.txt" },
    result: "ok",
    contains: ["The file is empty."],
  },
  // write_text_file
  {
    name: "write into a directory that does not exist yet: it is created",
    tool: "write_text_file",
    args: { path: "build/output.txt", content: "done\n" },
    result: "ok",
    contains: ['"directories":["build"]', '"created":true'],
    disk: (f) => assert.equal(Deno.readTextFileSync(f.at("build/output.txt")), "done\n"),
  },
  {
    name: "write an absolute path several directories deep",
    tool: "write_text_file",
    args: { path: "$WS/a/b/c/notes.md", content: "# notes\n" },
    result: "ok",
    contains: ['"directories":["a","a/b","a/b/c"]', '"path":"a/b/c/notes.md"'],
    disk: (f) => assert.equal(Deno.readTextFileSync(f.at("a/b/c/notes.md")), "# notes\n"),
  },
  {
    name: "write with overwrite: false over an existing file: refused",
    tool: "write_text_file",
    args: { path: "src/app.ts", content: "x", overwrite: false },
    result: "validation_failed",
    contains: ["already exists and overwrite is false"],
    disk: unchanged("src/app.ts", "const port = 80;\nconst host = 'localhost';\n"),
  },
  {
    name: "write with overwrite: false into a new directory: created",
    tool: "write_text_file",
    args: { path: "new/file.txt", content: "n", overwrite: false },
    result: "ok",
    disk: (f) => assert.equal(Deno.readTextFileSync(f.at("new/file.txt")), "n"),
  },
  {
    name: "write under a file as if it were a directory: refused, nothing created",
    tool: "write_text_file",
    args: { path: "src/app.ts/sub/x.txt", content: "x" },
    result: "validation_failed",
    contains: ["not a directory"],
    disk: unchanged("src/app.ts", "const port = 80;\nconst host = 'localhost';\n"),
  },
  {
    name: "write outside through an absolute path: refused, naming the workspace",
    tool: "write_text_file",
    args: { path: "/tmp/libos-model-style-never.txt", content: "x" },
    result: "outside_workspace",
    contains: ['outside the workspace "$WS"'],
    disk: () => assert.ok(!exists("/tmp/libos-model-style-never.txt")),
  },
  // edit_file
  {
    name: "edit with Claude Code's old_string/new_string",
    tool: "edit_file",
    args: { path: "src/app.ts", old_string: "const port = 80;", new_string: "const port = 8080;" },
    result: "ok",
    contains: ['"replacements":1'],
    disk: unchanged("src/app.ts", "const port = 8080;\nconst host = 'localhost';\n"),
  },
  {
    name: "edit an absolute path",
    tool: "edit_file",
    args: { path: "$WS/src/app.ts", old_string: "80", new_string: "81" },
    result: "ok",
    disk: unchanged("src/app.ts", "const port = 81;\nconst host = 'localhost';\n"),
  },
  {
    name: "edit with old_string missing the file's trailing whitespace: refused with the hint",
    tool: "edit_file",
    args: {
      path: "spaces.py",
      old_string: "def f():\n    return 1",
      new_string: "def f():\n    return 2",
    },
    result: "validation_failed",
    contains: ["was not found", "near line 1", "trailing whitespace", "trailing spaces included"],
    disk: unchanged("spaces.py", "def f():   \n    return 1  \n"),
  },
  {
    name: "edit with old_string carrying trailing whitespace the file lacks: refused with the hint",
    tool: "edit_file",
    args: {
      path: "src/app.ts",
      old_string: "const port = 80;  \n",
      new_string: "let port = 80;\n",
    },
    result: "validation_failed",
    contains: ["trailing whitespace"],
    disk: unchanged("src/app.ts", "const port = 80;\nconst host = 'localhost';\n"),
  },
  {
    name: "edit with old_string copied with the read's line numbers: refused, saying so",
    tool: "edit_file",
    args: { path: "ten.txt", old_string: "     2\tline 2\n     3\tline 3", new_string: "x" },
    result: "validation_failed",
    contains: ["line numbers", "copy only the text after the tab"],
    disk: unchanged("ten.txt", TEN),
  },
  {
    name: "edit a CRLF file with LF text: applied, CRLF kept",
    tool: "edit_file",
    args: {
      path: "dos.txt",
      old_string: "first line\nsecond line",
      new_string: "first line\ninserted\nsecond line",
    },
    result: "ok",
    disk: unchanged("dos.txt", "first line\r\ninserted\r\nsecond line\r\nthird line\r\n"),
  },
  {
    name: "edit text that occurs several times without replace_all: refused with the count",
    tool: "edit_file",
    args: { path: "repeat.txt", old_string: "x = 1", new_string: "x = 2" },
    result: "validation_failed",
    contains: ["occurs 3 times", "add surrounding lines", "replace_all: true"],
    disk: unchanged("repeat.txt", "x = 1\nx = 1\nx = 1\n"),
  },
  {
    name: "edit every occurrence with replace_all",
    tool: "edit_file",
    args: { path: "repeat.txt", old_string: "x = 1", new_string: "x = 2", replace_all: true },
    result: "ok",
    contains: ['"replacements":3'],
    disk: unchanged("repeat.txt", "x = 2\nx = 2\nx = 2\n"),
  },
  {
    name: "edit with an empty old_string: refused, pointing at write_text_file",
    tool: "edit_file",
    args: { path: "src/app.ts", old_string: "", new_string: "x" },
    result: "validation_failed",
    contains: ["old_string is empty", "write_text_file"],
  },
  {
    name: "edit with identical old and new: refused as changing nothing",
    tool: "edit_file",
    args: { path: "src/app.ts", old_string: "80", new_string: "80" },
    result: "validation_failed",
    contains: ["identical", "changes nothing"],
  },
  {
    name: "edit text that is not there: refused, saying to read and copy",
    tool: "edit_file",
    args: { path: "src/app.ts", old_string: "const port = 443;", new_string: "x" },
    result: "validation_failed",
    contains: ["was not found", "read the file again and copy the exact text"],
  },
  {
    name: "several edits at once, each on the result of the one before",
    tool: "edit_file",
    args: {
      path: "src/app.ts",
      edits: [
        { old_string: "const port = 80;", new_string: "const port = 8080; // web" },
        { old_string: "8080; // web", new_string: "8080;" },
        { old_string: "'localhost'", new_string: "'0.0.0.0'" },
      ],
    },
    result: "ok",
    contains: ['"edits":3', '"replacements":3'],
    disk: unchanged("src/app.ts", "const port = 8080;\nconst host = '0.0.0.0';\n"),
  },
  {
    name: "several edits, one of which cannot apply: none applied, the failing one named",
    tool: "edit_file",
    args: {
      path: "src/app.ts",
      edits: [
        { old_string: "const port = 80;", new_string: "const port = 8080;" },
        { old_string: "const user = 'root';", new_string: "x" },
      ],
    },
    result: "validation_failed",
    contains: ["edits[1].old_string was not found"],
    disk: unchanged("src/app.ts", "const port = 80;\nconst host = 'localhost';\n"),
  },
  {
    name: "edit with both old_string and edits: refused, saying to pick one",
    tool: "edit_file",
    args: {
      path: "src/app.ts",
      old_string: "80",
      new_string: "81",
      edits: [{ old_string: "a", new_string: "b" }],
    },
    result: "validation_failed",
    contains: ["both old_string/new_string and edits", "for several"],
  },
  // delete_file
  {
    name: "delete a symlink that points outside: the link goes, the target stays",
    tool: "delete_file",
    args: { path: "out-link" },
    setup: (f) => Deno.symlinkSync(join(f.outside, "target.txt"), f.at("out-link")),
    result: "ok",
    contains: ['"deleted":true'],
    disk: (f) => {
      assert.ok(!exists(f.at("out-link")), "the link is gone");
      assert.equal(Deno.readTextFileSync(join(f.outside, "target.txt")), "outside, untouched");
    },
  },
  {
    name: "delete an absolute path inside the workspace",
    tool: "delete_file",
    args: { path: "$WS/empty.txt" },
    result: "ok",
    disk: (f) => assert.ok(!exists(f.at("empty.txt"))),
  },
];

for (const row of ROWS) {
  Deno.test(`${row.tool} as a model calls it: ${row.name}`, async () => {
    await using f = await fixture();
    seed(f);
    row.setup?.(f);
    const args = JSON.parse(JSON.stringify(row.args).replaceAll("$WS", f.ws));
    const result = await f.call(row.tool, args);
    const text = shown(result);
    if (row.result === "ok") {
      assert.ok(result.ok, text);
    } else {
      assert.ok(!result.ok, `expected ${row.result}, got: ${text}`);
      assert.equal(result.error.code, row.result, text);
      // Every refusal says what to do: a "; " clause after what failed.
      assert.match(result.error.message, /; \S/, `the refusal says what to do: ${text}`);
    }
    for (const wanted of row.contains ?? []) {
      assert.ok(text.includes(wanted.replaceAll("$WS", f.ws)), `shown: ${text}\nlacks: ${wanted}`);
    }
    for (const unwanted of row.lacks ?? []) {
      assert.ok(!text.includes(unwanted), `shown: ${text}\nshould not hold: ${unwanted}`);
    }
    row.disk?.(f);
  });
}

Deno.test("read_text_file pages through a long file: following each note's offset shows every line once, in order", async () => {
  await using f = await fixture();
  const lines = Array.from({ length: 1500 }, (_, i) => `entry number ${i + 1}`);
  Deno.writeTextFileSync(f.at("log.txt"), lines.join("\n") + "\n");
  const seen: string[] = [];
  let offset: number | undefined;
  for (let page = 0; page < 100; page++) {
    const result = await f.call("read_text_file", {
      path: "log.txt",
      ...(offset === undefined ? {} : { offset }),
    });
    assert.ok(result.ok, shown(result));
    assert.ok(!result.truncated, "each page fits what the model is handed, uncut by the broker");
    const v = result.value as { content: string; note: string };
    for (const line of v.content.split("\n").filter((l) => l !== "")) {
      const [number, text] = line.split("\t");
      assert.equal(Number(number), seen.length + 1);
      seen.push(text!);
    }
    const next = /offset=(\d+)/.exec(v.note);
    if (!next) break;
    offset = Number(next[1]);
  }
  assert.deepEqual(seen, lines);
});

Deno.test("fs.read_text, the syscall twin, takes offset and limit and returns raw structured lines (no numbers)", async () => {
  await using f = await fixture();
  Deno.writeTextFileSync(f.at("ten.txt"), TEN);
  const read = await f.runtime.primitives.fs.readText(f.pid, {
    path: "ten.txt",
    offset: 9,
    limit: 5,
  });
  assert.deepEqual(read, {
    path: "ten.txt",
    content: "line 9\nline 10\n",
    bytes: 15,
    size: TEN.length,
    truncated: false,
    lines: { first: 9, last: 10, total: 10 },
    binary: null,
  });
});

Deno.test("edit_file with several edits under an ask policy: one approval, showing one diff with every change; once approved all apply together", async () => {
  await using f = await fixture([{ type: "approve" }]);
  seed(f);
  grantFs(f, "src", "subtree", "ask");
  const result = await f.call("edit_file", {
    path: "src/app.ts",
    edits: [
      { old_string: "const port = 80;", new_string: "const port = 8080;" },
      { old_string: "'localhost'", new_string: "'0.0.0.0'" },
    ],
  });
  assert.ok(result.ok, shown(result));
  assert.equal(f.prompted.length, 1, "one approval for the whole call");
  for (const line of ["-const port = 80;", "+const port = 8080;", "+const host = '0.0.0.0';"]) {
    assert.ok(f.prompted[0]!.includes(line), `the diff shows ${line}:\n${f.prompted[0]}`);
  }
  assert.equal(
    Deno.readTextFileSync(f.at("src/app.ts")),
    "const port = 8080;\nconst host = '0.0.0.0';\n",
  );
});

// ---------------------------------------------------------------- attacks

Deno.test("write_text_file attack: a missing parent reached through a symlinked directory that leads outside is refused, and nothing is created anywhere", async () => {
  await using f = await fixture();
  Deno.symlinkSync(f.outside, f.at("escape"));
  const before = tree(f.outside);
  const wsBefore = tree(f.ws);
  for (const path of ["escape/new/deep/x.txt", "escape/x.txt", "$WS/escape/new/x.txt"]) {
    const result = await f.call("write_text_file", {
      path: path.replace("$WS", f.ws),
      content: "pwned",
    });
    assert.ok(!result.ok, `refused: ${path}`);
    assert.equal(result.error.code, "outside_workspace", result.error.message);
  }
  assert.deepEqual(tree(f.outside), before, "nothing was created outside");
  assert.deepEqual(tree(f.ws), wsBefore, "nothing was created inside either");
  const allowed = f.runtime.audit.query({ pid: f.pid })
    .filter((r) => r.action === "fs.write" && r.decision === "allow");
  assert.deepEqual(allowed, [], "no write was allowed");
});

const ASKS_NOTHING_CREATED: readonly {
  readonly name: string;
  readonly path: string;
  readonly content: string;
  /** What the human is shown. */
  readonly shows: RegExp;
  /** The directory the write would have created first. */
  readonly missing: string;
}[] = [
  {
    name:
      "a missing parent that is protected (.libos) asks the human; rejected, no directory is created",
    path: ".libos/hooks/run.sh",
    content: "x",
    shows: /\.libos/,
    missing: ".libos",
  },
  {
    name:
      "a secret-bearing file in a new directory asks; rejected, not even the directory is created",
    path: "deploy/prod/.env.production",
    content: "TOKEN=x",
    shows: /deploy\/prod\/\.env\.production/,
    missing: "deploy",
  },
];

for (const row of ASKS_NOTHING_CREATED) {
  Deno.test(`write_text_file attack: ${row.name}`, async () => {
    await using f = await fixture([{ type: "reject", reason: "no" }]);
    const result = await f.call("write_text_file", { path: row.path, content: row.content });
    assert.ok(!result.ok, shown(result));
    assert.equal(f.prompted.length, 1, "the human was asked once, for the whole write");
    assert.match(f.prompted[0]!, row.shows);
    assert.ok(!exists(f.at(row.missing)), `${row.missing} was not created`);
  });
}

Deno.test("read_text_file attack: an offset past the end of a secret-bearing file does not tell its line count before a human allows the read", async () => {
  await using f = await fixture([{ type: "reject", reason: "no" }]);
  Deno.writeTextFileSync(f.at(".env"), "A=1\nB=2\nC=3\n");
  const result = await f.call("read_text_file", { path: ".env", offset: 99 });
  assert.ok(!result.ok, shown(result));
  assert.equal(f.prompted.length, 1, "the human was asked first");
  assert.ok(!/3 lines|from 1 to 3/.test(result.error.message), result.error.message);
});

Deno.test("write_text_file: a protected missing parent approved by the human is created with the file, each directory audited", async () => {
  await using f = await fixture([{ type: "approve" }]);
  const result = await f.call("write_text_file", { path: ".libos/notes/a.txt", content: "ok" });
  assert.ok(result.ok, shown(result));
  assert.equal(Deno.readTextFileSync(f.at(".libos/notes/a.txt")), "ok");
  const records = f.runtime.audit.query({ pid: f.pid })
    .filter((r) => r.action === "fs.write" && r.decision === "allow")
    .map((r) => r.resource);
  assert.deepEqual(records, ["fs:.libos", "fs:.libos/notes", "fs:.libos/notes/a.txt"]);
});

Deno.test("write_text_file in queue mode: a write that must create a protected parent parks; once approved it runs, creating the directories then", async () => {
  await using f = await fixture([], "queue");
  const id = await parked(f.call("write_text_file", { path: ".libos/notes/a.txt", content: "ok" }));
  assert.ok(!exists(f.at(".libos")), "nothing is created while it waits");
  const resolution = await approveAndResume(f, id);
  assert.equal(resolution.type, "outcome");
  assert.ok(resolution.type === "outcome" && resolution.outcome.ok, JSON.stringify(resolution));
  assert.equal(Deno.readTextFileSync(f.at(".libos/notes/a.txt")), "ok");
});

Deno.test("write_text_file attack: a parent swapped for a symlink leading outside while the write waits for approval is refused when the approval is used; nothing is created outside", async () => {
  await using f = await fixture([], "queue");
  const id = await parked(f.call("write_text_file", { path: ".libos/notes/a.txt", content: "ok" }));
  // Meanwhile the missing parent appears — as a symlink to a directory outside the workspace.
  Deno.symlinkSync(f.outside, f.at(".libos"));
  const before = tree(f.outside);
  const resolution = await approveAndResume(f, id);
  assert.ok(resolution.type === "outcome" && !resolution.outcome.ok, JSON.stringify(resolution));
  assert.equal(resolution.outcome.error.code, "outside_workspace");
  assert.deepEqual(tree(f.outside), before, "nothing was created outside");
});

Deno.test("write_text_file attack: one denied parent refuses the whole write before any directory is created (decide all, then create)", async () => {
  await using f = await fixture();
  grantFs(f, "gen/locked", "subtree", "deny");
  const result = await f.call("write_text_file", { path: "gen/locked/deep/x.txt", content: "x" });
  assert.ok(!result.ok, shown(result));
  assert.equal(result.error.code, "capability_denied", result.error.message);
  assert.match(result.error.message, /gen\/locked/);
  assert.ok(!exists(f.at("gen")), "not even the allowed outer directory was created");
});

Deno.test("delete_file attack: deleting a symlink to a protected file removes the link only, decided on the link's own path; the target is untouched", async () => {
  await using f = await fixture();
  Deno.mkdirSync(f.at(".git"));
  Deno.writeTextFileSync(f.at(".git/config"), "[core]\n");
  Deno.symlinkSync(".git/config", f.at("cfg"));
  const result = await f.call("delete_file", { path: "cfg" });
  assert.ok(result.ok, shown(result));
  assert.ok(!exists(f.at("cfg")), "the link is gone");
  assert.equal(Deno.readTextFileSync(f.at(".git/config")), "[core]\n", "the target is intact");
  const deletes = f.runtime.audit.query({ pid: f.pid })
    .filter((r) => r.action === "fs.delete").map((r) => `${r.decision} ${r.resource}`);
  assert.deepEqual(deletes, ["allow fs:cfg"], "decided on the link, never on .git/config");
  assert.equal(f.prompted.length, 0);
});

Deno.test("delete_file attack: a symlink to a file outside is removed without touching the target; a file reached through a symlinked directory outside stays refused", async () => {
  await using f = await fixture();
  Deno.writeTextFileSync(join(f.outside, "target.txt"), "outside, untouched");
  Deno.symlinkSync(join(f.outside, "target.txt"), f.at("abs-link"));
  Deno.symlinkSync("../outside/target.txt", f.at("rel-link"));
  Deno.symlinkSync(f.outside, f.at("out-dir"));
  for (const link of ["abs-link", "rel-link"]) {
    const result = await f.call("delete_file", { path: link });
    assert.ok(result.ok, shown(result));
    assert.ok(!exists(f.at(link)), `${link} is gone`);
  }
  const through = await f.call("delete_file", { path: "out-dir/target.txt" });
  assert.ok(!through.ok, "deleting through a symlinked directory stays refused");
  assert.equal(through.error.code, "outside_workspace");
  assert.equal(Deno.readTextFileSync(join(f.outside, "target.txt")), "outside, untouched");
  assert.ok(Deno.lstatSync(f.at("out-dir")).isSymlink, "the directory link was not touched");
});

Deno.test("write_text_file and delete_file through the real `libos agent` launcher: a file in a new directory is created, a symlink pointing outside is removed and its target kept", async () => {
  using s = sandbox();
  const outside = join(s.workspace, "..", "outside.txt");
  Deno.writeTextFileSync(outside, "keep me");
  Deno.symlinkSync(outside, join(s.workspace, "link"));
  const script = replayScript(s.workspace, [
    call("write_text_file", { path: "build/output.txt", content: "built\n" }),
    call("delete_file", { path: "link" }),
    final("Wrote build/output.txt and removed the link."),
  ], "files.jsonl");
  await yesRun(s, { script, goal: "Write the build output", launcher: true });
  assert.equal(Deno.readTextFileSync(join(s.workspace, "build", "output.txt")), "built\n");
  assert.ok(!exists(join(s.workspace, "link")), "the link is gone");
  assert.equal(Deno.readTextFileSync(outside), "keep me", "its target outside is intact");
});
