/**
 * The parameter names models send for ours (issue 27): a model trained on Claude Code or Gemini
 * CLI reads with `file_path`, one trained on OpenCode edits with `filePath`/`oldString`, and
 * Anthropic's text editor writes `file_text`. Each row calls a tool through the broker as the
 * agent does, with the arguments as the model sent them, and checks what happened on disk and
 * in the audit (what is decided and recorded is the canonical form, the renames noted). Two
 * values for one parameter, an unknown parameter and a missing one are refused with what to send
 * instead — and change nothing. One script runs through the real `libos agent` launcher.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { exists, toolFixture } from "./model_style_fixture.ts";
import { sandbox } from "./_cli_sandbox.ts";
import { call, final, yesRun } from "./agent_fixture.ts";

interface Row {
  readonly name: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  /** Files before the call (path → content). */
  readonly before?: Record<string, string>;
  /** Files after the call; `null`: the file does not exist. */
  readonly after: Record<string, string | null>;
  /** The refusal's message, when the call must be refused. */
  readonly refused?: RegExp;
  /** What the model is shown of a successful call. */
  readonly shows?: RegExp;
  /** What the audit's tool.invoke record notes as renamed. */
  readonly renamed?: string;
}

const ROWS: readonly Row[] = [
  {
    name: "Claude Code's Write: file_path and content",
    tool: "write_text_file",
    args: { file_path: "build/out.txt", content: "done\n" },
    after: { "build/out.txt": "done\n" },
    renamed: "file_path→path",
  },
  {
    name: "Anthropic's text editor create: path and file_text",
    tool: "write_text_file",
    args: { path: "notes.md", file_text: "# notes\n" },
    after: { "notes.md": "# notes\n" },
    renamed: "file_text→content",
  },
  {
    name: "OpenCode's write: filePath",
    tool: "write_text_file",
    args: { filePath: "a.txt", content: "a\n" },
    after: { "a.txt": "a\n" },
    renamed: "filePath→path",
  },
  {
    name: "Claude Code's Edit: file_path, old_string, new_string, replace_all",
    tool: "edit_file",
    args: { file_path: "app.ts", old_string: "80", new_string: "8080", replace_all: true },
    before: { "app.ts": "port = 80; // 80\n" },
    after: { "app.ts": "port = 8080; // 8080\n" },
    renamed: "file_path→path",
  },
  {
    name: "OpenCode's edit: filePath, oldString, newString, replaceAll",
    tool: "edit_file",
    args: { filePath: "app.ts", oldString: "80", newString: "8080", replaceAll: true },
    before: { "app.ts": "port = 80; // 80\n" },
    after: { "app.ts": "port = 8080; // 8080\n" },
    renamed: "filePath→path, oldString→old_string, newString→new_string, replaceAll→replace_all",
  },
  {
    name: "a MultiEdit's edits with camelCase names",
    tool: "edit_file",
    args: {
      file_path: "app.ts",
      edits: [{ oldString: "a", newString: "b" }, { old_string: "c", new_string: "d" }],
    },
    before: { "app.ts": "a c\n" },
    after: { "app.ts": "b d\n" },
    renamed: "file_path→path, edits.0.oldString→old_string, edits.0.newString→new_string",
  },
  {
    name: "Gemini CLI's read_file: absolute_path",
    tool: "read_text_file",
    args: { absolute_path: "a.txt", offset: 2, limit: 1 },
    before: { "a.txt": "one\ntwo\nthree\n" },
    after: { "a.txt": "one\ntwo\nthree\n" },
    shows: /2\\ttwo/,
    renamed: "absolute_path→path",
  },
  {
    name: "delete_file with file_path",
    tool: "delete_file",
    args: { file_path: "gone.txt" },
    before: { "gone.txt": "x" },
    after: { "gone.txt": null },
    renamed: "file_path→path",
  },
  {
    name: "Codex's shell call: command as a list, workdir",
    tool: "run_shell_command",
    args: { command: ["touch", "made.txt"], workdir: "sub" },
    before: { "sub/.keep": "" },
    after: { "sub/made.txt": "", "made.txt": null },
    renamed: "command→argv, workdir→cwd",
  },
  {
    name: "refused: Claude Code's Bash command line as one string (not an argv) — nothing runs",
    tool: "run_shell_command",
    args: { command: "touch made.txt" },
    after: { "made.txt": null },
    refused:
      /takes no "command" \(argv is a list of strings, not that\); its parameters are argv, cwd/,
  },
  {
    name: "refused: path and file_path both given (two targets: neither is written)",
    tool: "write_text_file",
    args: { path: "one.txt", file_path: "two.txt", content: "x" },
    after: { "one.txt": null, "two.txt": null },
    refused: /path and file_path were both given.*send only path/,
  },
  {
    name: "refused: old_string and oldString in one edit (nothing replaced)",
    tool: "edit_file",
    args: { path: "app.ts", edits: [{ old_string: "a", oldString: "b", new_string: "c" }] },
    before: { "app.ts": "a b\n" },
    after: { "app.ts": "a b\n" },
    refused: /edits\.0\.old_string and edits\.0\.oldString were both given/,
  },
  {
    name: "refused: an unknown parameter names the ones the tool takes",
    tool: "write_text_file",
    args: { path: "c.txt", content: "x", mode: "0644" },
    after: { "c.txt": null },
    refused:
      /takes no "mode"; its parameters are path, content, overwrite, justification; call it again/,
  },
  {
    name: "refused: a missing parameter is named",
    tool: "write_text_file",
    args: { content: "x" },
    after: {},
    refused: /write_text_file at path: required and not given.*call it again with it/,
  },
];

for (const row of ROWS) {
  Deno.test(`model-style names: ${row.name}`, async () => {
    // Commands run without asking: these rows are about names, not the shell policy.
    await using f = await toolFixture({
      spawn: { image: "coding-agent:v0" },
      shellPolicy: "always_allow",
    });
    for (const [path, content] of Object.entries(row.before ?? {})) {
      Deno.mkdirSync(dirname(f.at(path)), { recursive: true });
      Deno.writeTextFileSync(f.at(path), content);
    }
    const result = await f.call(row.tool, row.args);
    if (row.refused) {
      assert.equal(result.ok, false, JSON.stringify(result));
      assert.equal(result.ok ? "" : result.error.code, "invalid_arguments");
      assert.match(result.ok ? "" : result.error.message, row.refused);
    } else {
      assert.ok(result.ok, JSON.stringify(result));
    }
    for (const [path, content] of Object.entries(row.after)) {
      if (content === null) assert.ok(!exists(f.at(path)), `${path} does not exist`);
      else assert.equal(Deno.readTextFileSync(f.at(path)), content, path);
    }
    assert.deepEqual(f.prompted, [], "no human was asked");
    const invoke = f.runtime.audit.query({ action: "tool.invoke", order: "desc", limit: 1 })[0];
    assert.equal(invoke?.decision, row.refused ? "deny" : "allow");
    assert.equal(invoke?.detail?.renamed, row.renamed);
    if (row.shows) assert.match(JSON.stringify(result.ok ? result.value : null), row.shows);
  });
}

Deno.test("model-style names through the real `libos agent` launcher: a script written with Claude Code's names writes and edits", async () => {
  using s = sandbox();
  const script = join(s.workspace, "..", "aliases.jsonl");
  Deno.writeTextFileSync(
    script,
    [
      call("write_text_file", { file_path: "build/report.md", content: "status: red\n" }),
      call("edit_file", { file_path: "build/report.md", oldString: "red", newString: "green" }),
      final("done"),
    ].join("\n") + "\n",
  );
  await yesRun(s, { script, goal: "Write the report", launcher: true });
  assert.equal(
    Deno.readTextFileSync(join(s.workspace, "build", "report.md")),
    "status: green\n",
  );
});
