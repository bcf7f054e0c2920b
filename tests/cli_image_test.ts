/**
 * The image and tool commands of the `libos` command line.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { AgentProcess } from "../runtime/process/process.ts";
import { sandbox } from "./_cli_sandbox.ts";

const IMAGE = `id: triage:v1
name: triage
version: v1
systemPrompt: Sort incoming issues.
defaultTools: [get_current_time, human_output]
safety: { maxMode: read-only }
requiredCapabilities:
  - resource: { type: human, key: owner, scope: exact }
    rights: [write]
`;

Deno.test("libos images list, show and load work against the workspace database; hostile YAML is refused", async () => {
  using s = sandbox();
  assert.equal((await s.cli("init")).status, 0);
  const listed = await s.cli("images", "list");
  assert.equal(listed.status, 0, listed.stderr);
  assert.match(listed.stdout, /^base-agent:v0\s+builtin/m);
  assert.match(listed.stdout, /^coding-agent:v0\s+builtin/m);
  Deno.writeTextFileSync(join(s.workspace, "triage.yaml"), IMAGE);
  const loaded = await s.json("images", "load", "triage.yaml");
  assert.equal(loaded.status, 0, loaded.stdout);
  const shown = await s.cli("images", "show", "triage:v1");
  assert.match(shown.stdout, /max mode: read-only/);
  assert.match(shown.stdout, /default tools: get_current_time, human_output/);
  // Spawning it gives the image's tools.
  const spawned = await s.json("spawn", "--goal", "triage", "--image", "triage:v1");
  const pid = (spawned.doc.process as AgentProcess).pid;
  const tools = await s.cli("tools", "--pid", pid);
  assert.match(tools.stdout, /^get_current_time/m);
  assert.doesNotMatch(tools.stdout, /write_text_file/);
  assert.match((await s.cli("tools")).stdout, /^write_text_file\s+fs\.write/m);
  // Hostile and invalid files: one clear line, exit 1, nothing loaded.
  const hostile: [string, string][] = [
    ["dup.yaml", IMAGE + "name: again\n"],
    ["tag.yaml", IMAGE.replace("Sort incoming issues.", "!!js/function Sort")],
    ["alias.yaml", "a: &a [1,2]\nb: *a\n"],
    [
      "builtin.yaml",
      IMAGE.replace("triage:v1", "base-agent:v0").replace("name: triage", "name: base-agent")
        .replace("version: v1", "version: v0"),
    ],
  ];
  for (const [file, text] of hostile) {
    Deno.writeTextFileSync(join(s.workspace, file), text);
    const refused = await s.cli("images", "load", file, "--replace");
    assert.equal(refused.status, 1, file);
    assert.match(refused.stderr, /^libos: .+/, file);
  }
  assert.equal((await s.cli("images", "load", "missing.yaml")).status, 2);
  const after = (await s.json("images", "list")).doc.images as { id: string; origin: string }[];
  assert.deepEqual(after.map((i) => [i.id, i.origin]), [
    ["base-agent:v0", "builtin"],
    ["coding-agent:v0", "builtin"],
    ["review-agent:v0", "builtin"],
    ["toolmaker-agent:v0", "builtin"],
    ["triage:v1", "loaded"],
  ]);
});

Deno.test("libos exec swaps image and tools from an id or a YAML file, through the registry, and never lifts capabilities (attack: exec a YAML that asks for everything)", async () => {
  using s = sandbox();
  assert.equal((await s.cli("init")).status, 0);
  const spawned = await s.json(
    "spawn",
    "--goal",
    "g",
    "--mode",
    "read-only",
    "--image",
    "base-agent:v0",
  );
  const pid = (spawned.doc.process as AgentProcess).pid;
  const caps = async () =>
    ((await s.json("caps", pid)).doc.capabilities as { id: string }[]).map((c) => c.id).sort();
  const before = await caps();
  const greedy = IMAGE.replace("triage:v1", "greedy:v1").replace("name: triage", "name: greedy")
    .replace("maxMode: read-only", "maxMode: full-access")
    .replace(
      "requiredCapabilities:",
      "requiredCapabilities:\n  - resource: { type: fs, path: ., scope: subtree }\n    rights: [read, write, delete]",
    );
  Deno.writeTextFileSync(join(s.workspace, "greedy.yaml"), greedy);
  const execd = await s.json("exec", pid, "--file", "greedy.yaml");
  assert.equal(execd.status, 0, execd.stdout);
  assert.equal((execd.doc.process as AgentProcess).image, "greedy:v1");
  assert.deepEqual(await caps(), before, "exec lifted nothing");
  // A built-in cannot be smuggled in through exec --file either.
  Deno.writeTextFileSync(
    join(s.workspace, "fake-base.yaml"),
    greedy.replace("greedy:v1", "base-agent:v0").replace("name: greedy", "name: base-agent")
      .replace("version: v1", "version: v0"),
  );
  const smuggled = await s.cli("exec", pid, "--file", "fake-base.yaml", "--replace");
  assert.equal(smuggled.status, 1);
  assert.match(smuggled.stderr, /needs admin/);
  const back = await s.json("exec", pid, "--image", "base-agent:v0");
  assert.equal((back.doc.process as AgentProcess).image, "base-agent:v0");
  assert.equal((await s.cli("exec", pid)).status, 2);
  assert.equal((await s.cli("exec", pid, "--image", "ghost:v1")).status, 1);
});
