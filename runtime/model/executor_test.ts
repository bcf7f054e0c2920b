import assert from "node:assert/strict";
import { join } from "node:path";
import { allow } from "../../tests/authority_fixture.ts";
import { executorFor } from "./executor.ts";
import type { HumanMode } from "../human/human_channel.ts";
import type { ModelClient, ModelRequest } from "./model_client.ts";
import { testRuntime } from "../../testing.ts";
import { RecordingModel, ScriptedModel } from "./scripted_model.ts";
import { parseSessionLog, SessionLogWriter } from "./session_log.ts";

async function fixture(human: HumanMode = "none") {
  const t = await testRuntime({
    prefix: "libos-exec-",
    files: { "README.md": "# Demo\nTODO: write notes\n" },
    mode: "workspace-write",
    human,
  });
  return { ...t, pid: t.spawn({ goal: "write notes", image: "coding-agent:v0" }) };
}

/** A scripted model that also records every request it was sent. */
function spyScript(lines: string[]): { model: ModelClient; requests: ModelRequest[] } {
  const inner = new ScriptedModel(parseSessionLog(lines.join("\n")), "replay:test");
  const requests: ModelRequest[] = [];
  return {
    requests,
    model: {
      name: inner.name,
      complete(request, signal) {
        requests.push(structuredClone(request));
        return inner.complete(request, signal);
      },
    },
  };
}

const turn = (value: Record<string, unknown>) => JSON.stringify({ type: "model_turn", ...value });

Deno.test("ModelExecutor runs a scripted session: tool calls through the broker, results shown next turn, a final answer exits", async () => {
  await using f = await fixture();
  const { model, requests } = spyScript([
    turn({ tool_calls: [{ name: "read_text_file", arguments: { path: "README.md" } }] }),
    turn({
      tool_calls: [{
        name: "write_text_file",
        arguments: '{"path":"notes.txt","content":"notes written"}',
      }],
    }),
    turn({ content: "Wrote notes.txt." }),
  ]);
  using scheduler = f.runtime.scheduler(executorFor(f.runtime, model));
  await scheduler.runUntilIdle();
  const p = f.runtime.processes.get(f.pid);
  assert.equal(p.status, "exited", p.message ?? "");
  assert.equal(p.message, "Wrote notes.txt.");
  assert.equal(f.runtime.memory.read("operator", p.result!).payload, "Wrote notes.txt.");
  assert.equal(Deno.readTextFileSync(join(f.workspace, "notes.txt")), "notes written");
  assert.ok(p.usage.modelTokens > 0, "every turn's tokens were charged");
  assert.equal(requests.length, 3);
  // The system prompt is the image's; the tools are the process's table.
  assert.match(requests[0]!.system, /software engineer/);
  assert.ok(requests[0]!.tools.some((t) => t.name === "edit_file"));
  assert.match(requests[0]!.messages[0]!.content ?? "", /Goal: write notes/);
  // Turn 2 shows turn 1's call and its result verbatim.
  const second = requests[1]!.messages;
  assert.equal(second[1]!.role, "assistant");
  assert.equal(second[2]!.role, "tool");
  assert.match(second[2]!.content ?? "", /TODO: write notes/);
});

Deno.test("ModelExecutor fails the process with replay_exhausted when the script runs out", async () => {
  await using f = await fixture();
  const { model } = spyScript([
    turn({ tool_calls: [{ name: "read_directory", arguments: {} }] }),
  ]);
  using scheduler = f.runtime.scheduler(executorFor(f.runtime, model));
  await scheduler.runUntilIdle();
  const p = f.runtime.processes.get(f.pid);
  assert.equal(p.status, "failed");
  assert.match(p.message ?? "", /replay_exhausted/);
});

Deno.test("ModelExecutor gives an invalid tool name one repair turn listing the valid names; a second in a row fails", async () => {
  await using f = await fixture();
  const { model, requests } = spyScript([
    turn({ tool_calls: [{ name: "rm_rf", arguments: {} }] }),
    turn({ tool_calls: [{ name: "read_text_file", arguments: { path: "README.md" } }] }),
    turn({ tool_calls: [{ name: "nope", arguments: {} }] }),
    turn({ tool_calls: [{ name: "still_nope", arguments: {} }] }),
  ]);
  using scheduler = f.runtime.scheduler(executorFor(f.runtime, model));
  await scheduler.runUntilIdle();
  const repair = requests[1]!.messages.find((m) => m.role === "tool")!.content;
  assert.match(repair, /no tool named \\"rm_rf\\"/i);
  assert.match(repair, /read_text_file/, "the valid names are listed");
  const p = f.runtime.processes.get(f.pid);
  assert.equal(p.status, "failed");
  assert.match(p.message ?? "", /invalid_tool_name/);
  assert.equal(requests.length, 4, "one repair after the first, then the second pair fails it");
});

Deno.test("ModelExecutor runs no tool call of a length-truncated reply, and tells the next turn", async () => {
  await using f = await fixture();
  const { model, requests } = spyScript([
    turn({
      tool_calls: [{ name: "write_text_file", arguments: { path: "cut.txt", content: "x" } }],
      finish_reason: "length",
    }),
    turn({ content: "ok" }),
  ]);
  using scheduler = f.runtime.scheduler(executorFor(f.runtime, model));
  await scheduler.runUntilIdle();
  assert.throws(() => Deno.statSync(join(f.workspace, "cut.txt")), Deno.errors.NotFound);
  assert.match(requests[1]!.messages[0]!.content ?? "", /cut off/);
  assert.equal(f.runtime.processes.get(f.pid).status, "exited");
});

Deno.test("ModelExecutor parks on a human approval and, once approved, shows the model the action's outcome", async () => {
  await using f = await fixture("queue");
  allow(f.runtime, f.pid, { type: "fs", path: ".", scope: "subtree" }, ["delete"]);
  const { model, requests } = spyScript([
    turn({ tool_calls: [{ name: "delete_file", arguments: { path: "README.md" } }] }),
    turn({ content: "deleted" }),
  ]);
  using scheduler = f.runtime.scheduler(executorFor(f.runtime, model));
  await scheduler.runUntilIdle();
  assert.equal(f.runtime.processes.get(f.pid).status, "waiting_human");
  const [request] = f.runtime.human.list();
  f.runtime.human.approve(request!.id, { by: "human:test" });
  await scheduler.runUntilIdle();
  assert.throws(() => Deno.statSync(join(f.workspace, "README.md")), Deno.errors.NotFound);
  const shown = requests[1]!.messages.find((m) => m.role === "tool")!.content;
  assert.match(shown, /"ok":true/);
  assert.equal(f.runtime.processes.get(f.pid).status, "exited");
});

Deno.test("A recorded session replays to the same actions", async () => {
  const script = [
    turn({ tool_calls: [{ name: "grep", arguments: { text: "TODO" } }] }),
    turn({
      tool_calls: [{ name: "write_text_file", arguments: { path: "a.txt", content: "A" } }],
    }),
    turn({ content: "done" }),
  ];
  const actions = async (model: ModelClient) => {
    await using f = await fixture();
    using scheduler = f.runtime.scheduler(executorFor(f.runtime, model));
    await scheduler.runUntilIdle();
    return f.runtime.audit.query({ pid: f.pid, action: "tool.invoke", limit: 100 }).map((r) =>
      r.resource
    );
  };
  let log = "";
  const first = await actions(
    new RecordingModel(
      new ScriptedModel(parseSessionLog(script.join("\n"))),
      new SessionLogWriter((line) => log += line),
    ),
  );
  const replayed = await actions(new ScriptedModel(parseSessionLog(log)));
  assert.deepEqual(replayed, first);
  assert.deepEqual(first, ["tool:grep", "tool:write_text_file"]);
});
