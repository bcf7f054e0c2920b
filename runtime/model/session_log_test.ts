import assert from "node:assert/strict";
import { sha256Hex } from "../base/canonical_json.ts";
import { type ModelClient, ModelError, type ModelReply } from "./model_client.ts";
import { RecordingModel, ScriptedModel } from "./scripted_model.ts";
import { parseSessionLog, SessionLogWriter } from "./session_log.ts";

const NEVER = new AbortController().signal;
const REQUEST = { system: "s", messages: [], tools: [] };

function invalidAt(line: number) {
  return (e: unknown) =>
    e instanceof ModelError && e.code === "session_log_invalid" &&
    e.message.includes(`line ${line}:`);
}

Deno.test("ScriptedModel replays a plain script's model turns in order, then fails with replay_exhausted", async () => {
  const script = [
    '{"type":"model_turn","tool_calls":[{"name":"read_text_file","arguments":{"path":"README.md"}}]}',
    "",
    '{"type":"event","kind":"note"}',
    '{"type":"model_turn","content":"done"}',
  ].join("\n");
  const model = new ScriptedModel(parseSessionLog(script), "replay:test");
  const first = await model.complete(REQUEST, NEVER);
  assert.deepEqual(first.toolCalls, [{
    id: "call_1_1",
    name: "read_text_file",
    arguments: { path: "README.md" },
  }]);
  assert.equal(first.finishReason, "tool_calls");
  const second = await model.complete(REQUEST, NEVER);
  assert.deepEqual([second.content, second.finishReason, second.toolCalls], ["done", "stop", []]);
  assert.equal(model.remaining, 0);
  await assert.rejects(
    model.complete(REQUEST, NEVER),
    (e: unknown) => e instanceof ModelError && e.code === "replay_exhausted",
  );
});

Deno.test("RecordingModel writes a chained log that replays to the same replies", async () => {
  const replies: ModelReply[] = [
    {
      content: null,
      toolCalls: [{ id: "c1", name: "grep", arguments: '{"text":"TODO"}' }],
      finishReason: "tool_calls",
      usage: { promptTokens: 120, completionTokens: 9 },
      model: "m-1",
    },
    { content: "finished", toolCalls: [], finishReason: "stop" },
  ];
  let i = 0;
  const inner: ModelClient = {
    name: "fake",
    complete: () => Promise.resolve(replies[i++]!),
  };
  let file = "";
  const recorder = new RecordingModel(inner, new SessionLogWriter((line) => file += line));
  for (let n = 0; n < replies.length; n++) await recorder.complete(REQUEST, NEVER);
  const lines = file.trimEnd().split("\n");
  assert.equal(JSON.parse(lines[0]!).prev, null);
  assert.equal(JSON.parse(lines[1]!).prev, sha256Hex(lines[0]!));
  const replay = new ScriptedModel(parseSessionLog(file));
  for (const expected of replies) assert.deepEqual(await replay.complete(REQUEST, NEVER), expected);
});

Deno.test("parseSessionLog() attack: an edited, inserted, removed or reordered line of a recorded log is found and named", () => {
  let file = "";
  const writer = new SessionLogWriter((line) => file += line);
  writer.write({ type: "model_turn", content: "one" });
  writer.write({ type: "model_turn", content: "two" });
  writer.write({ type: "model_turn", content: "three" });
  const lines = file.trimEnd().split("\n");
  assert.equal(parseSessionLog(file).length, 3, "control: the untouched log parses");
  const edited = [lines[0], lines[1]!.replace('"two"', '"TWO"'), lines[2]].join("\n");
  assert.throws(() => parseSessionLog(edited), invalidAt(3), "the line after the edit breaks");
  assert.throws(() => parseSessionLog([lines[0], lines[2]].join("\n")), invalidAt(2));
  assert.throws(() => parseSessionLog([lines[1], lines[0], lines[2]].join("\n")), invalidAt(1));
  const inserted = [lines[0], '{"type":"model_turn","content":"x"}', lines[1], lines[2]].join("\n");
  assert.throws(
    () => parseSessionLog(inserted),
    invalidAt(2),
    "an unchained line in a chained log",
  );
  // A log cut at its start: the new first line still names a predecessor.
  assert.throws(() => parseSessionLog([lines[1], lines[2]].join("\n")), invalidAt(1));
});

Deno.test("parseSessionLog() refuses malformed lines with the line number and uses nothing", () => {
  const cases: [string, number][] = [
    ['{"type":"model_turn","content":"ok"}\nnot json', 2],
    ['{"type":"model_turn","tool_calls":[{"arguments":{}}]}', 1],
    ['{"type":"model_turn","content":"x","extra":1}', 1],
    ['{"type":"mystery"}', 1],
    ['{"type":"model_turn","finish_reason":"exploded"}', 1],
    ['{"type":"workspace"}', 1],
  ];
  for (const [text, line] of cases) {
    assert.throws(() => parseSessionLog(text), invalidAt(line), text);
  }
});

Deno.test("ScriptedModel.fromFile() reports an unreadable file as session_log_invalid", () => {
  assert.throws(
    () => ScriptedModel.fromFile("/nonexistent/libos/script.jsonl"),
    (e: unknown) => e instanceof ModelError && e.code === "session_log_invalid",
  );
});
