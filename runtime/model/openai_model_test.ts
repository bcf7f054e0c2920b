/**
 * The OpenAI-compatible model against a local HTTP server that speaks the chat-completions and
 * Responses wire formats: tool calls in, tool results out, parallel calls, a retry after a 500,
 * servers that reject `parallel_tool_calls` or `max_completion_tokens`, a streamed reply, a
 * timeout, a refusal.
 */
import assert from "node:assert/strict";
import { ModelError, type ModelRequest } from "./model_client.ts";
import { OpenAIModel } from "./openai_model.ts";

type Body = Record<string, unknown>;

/** A local endpoint: `answer` gets each request's path and JSON body. */
function endpoint(answer: (path: string, body: Body, n: number) => Response | Promise<Response>) {
  const seen: { path: string; body: Body }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.json() as Body;
    seen.push({ path: new URL(req.url).pathname, body });
    return await answer(new URL(req.url).pathname, body, seen.length);
  });
  return {
    seen,
    baseURL: `http://127.0.0.1:${server.addr.port}/v1`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

function completion(message: Body, finish = "stop", usage = true): Response {
  return Response.json({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "local-model",
    choices: [{ index: 0, finish_reason: finish, message: { role: "assistant", ...message } }],
    ...(usage ? { usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57 } } : {}),
  });
}

const NEVER = new AbortController().signal;

const REQUEST: ModelRequest = {
  system: "You are a test.",
  messages: [
    { role: "user", content: "Count the words." },
    {
      role: "assistant",
      content: null,
      toolCalls: [{ id: "call_a", name: "read_text_file", arguments: { path: "a.txt" } }],
    },
    { role: "tool", toolCallId: "call_a", content: '{"ok":true,"value":"one two"}' },
  ],
  tools: [{
    name: "read_text_file",
    description: "Read a file.",
    parameters: { type: "object", properties: { path: { type: "string" } } },
  }],
  maxTokens: 256,
};

Deno.test("OpenAIModel (chat) sends the conversation and tools, and reads parallel tool calls and usage", async () => {
  await using server = endpoint(() =>
    completion({
      content: null,
      tool_calls: [
        {
          id: "c1",
          type: "function",
          function: { name: "read_text_file", arguments: '{"path":"b"}' },
        },
        { id: "c2", type: "function", function: { name: "grep", arguments: '{"text":"x"}' } },
      ],
    }, "tool_calls")
  );
  const model = new OpenAIModel({ apiKey: "k", model: "local-model", baseURL: server.baseURL });
  const reply = await model.complete(REQUEST, NEVER);
  assert.deepEqual(reply.toolCalls.map((c) => [c.id, c.name, c.arguments]), [
    ["c1", "read_text_file", '{"path":"b"}'],
    ["c2", "grep", '{"text":"x"}'],
  ]);
  assert.equal(reply.finishReason, "tool_calls");
  assert.deepEqual(reply.usage, { promptTokens: 50, completionTokens: 7 });
  const body = server.seen[0]!.body;
  assert.equal(server.seen[0]!.path, "/v1/chat/completions");
  assert.equal(body.parallel_tool_calls, true);
  assert.equal(body.max_completion_tokens, 256);
  assert.deepEqual((body.messages as Body[]).map((m) => m.role), [
    "system",
    "user",
    "assistant",
    "tool",
  ]);
  assert.deepEqual((body.messages as Body[])[2]!.tool_calls, [{
    id: "call_a",
    type: "function",
    function: { name: "read_text_file", arguments: '{"path":"a.txt"}' },
  }]);
  assert.equal((body.messages as Body[])[3]!.tool_call_id, "call_a");
  assert.equal(((body.tools as Body[])[0]!.function as Body).name, "read_text_file");
});

Deno.test("OpenAIModel retries after a 500 and succeeds", async () => {
  await using server = endpoint((_p, _b, n) =>
    n === 1
      ? Response.json({ error: { message: "overloaded" } }, { status: 500 })
      : completion({ content: "fine" })
  );
  const model = new OpenAIModel({
    apiKey: "k",
    model: "m",
    baseURL: server.baseURL,
    maxRetries: 2,
  });
  const reply = await model.complete(REQUEST, NEVER);
  assert.equal(reply.content, "fine");
  assert.equal(server.seen.length, 2);
});

Deno.test("OpenAIModel falls back when a server rejects parallel_tool_calls or max_completion_tokens, and remembers", async () => {
  await using server = endpoint((_p, body) => {
    for (const parameter of ["parallel_tool_calls", "max_completion_tokens"]) {
      if (parameter in body) {
        return Response.json({
          error: { message: `Unrecognized request argument supplied: ${parameter}` },
        }, { status: 400 });
      }
    }
    return completion({ content: "ok" });
  });
  const model = new OpenAIModel({ apiKey: "k", model: "m", baseURL: server.baseURL });
  assert.equal((await model.complete(REQUEST, NEVER)).content, "ok");
  assert.equal(server.seen.length, 3, "two refusals, then the request without either");
  const last = server.seen[2]!.body;
  assert.equal("parallel_tool_calls" in last, false);
  assert.equal(last.max_tokens, 256);
  assert.equal((await model.complete(REQUEST, NEVER)).content, "ok");
  assert.equal(server.seen.length, 4, "the next turn goes straight to what the server takes");
});

Deno.test("OpenAIModel streams message text to onText and assembles the reply and its tool calls", async () => {
  const chunk = (delta: Body, finish: string | null = null, usage?: Body) =>
    `data: ${
      JSON.stringify({
        id: "s",
        object: "chat.completion.chunk",
        created: 1,
        model: "streamer",
        choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }],
        ...(usage ? { usage } : {}),
      })
    }\n\n`;
  await using server = endpoint(() =>
    new Response(
      chunk({ role: "assistant", content: "Hel" }) + chunk({ content: "lo" }) +
        chunk({
          tool_calls: [{
            index: 0,
            id: "t1",
            type: "function",
            function: { name: "echo", arguments: '{"te' },
          }],
        }) +
        chunk({ tool_calls: [{ index: 0, function: { arguments: 'xt":"x"}' } }] }, "tool_calls") +
        chunk({}, null, { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 }) +
        "data: [DONE]\n\n",
      { headers: { "content-type": "text/event-stream" } },
    )
  );
  const pieces: string[] = [];
  const model = new OpenAIModel({
    apiKey: "k",
    model: "m",
    baseURL: server.baseURL,
    onText: (t) => pieces.push(t),
  });
  const reply = await model.complete(REQUEST, NEVER);
  assert.deepEqual(pieces, ["Hel", "lo"]);
  assert.equal(reply.content, "Hello");
  assert.deepEqual(reply.toolCalls, [{ id: "t1", name: "echo", arguments: '{"text":"x"}' }]);
  assert.equal(reply.finishReason, "tool_calls");
  assert.deepEqual(reply.usage, { promptTokens: 9, completionTokens: 4 });
  assert.equal(server.seen[0]!.body.stream, true);
});

Deno.test("OpenAIModel reports a server that does not answer in time as model_timeout, and a 401 as model_refused", async () => {
  await using slow = endpoint(async () => {
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    return completion({ content: "late" });
  });
  const model = new OpenAIModel({
    apiKey: "k",
    model: "m",
    baseURL: slow.baseURL,
    timeoutMs: 200,
    maxRetries: 0,
  });
  await assert.rejects(
    model.complete(REQUEST, NEVER),
    (e: unknown) => e instanceof ModelError && e.code === "model_timeout",
  );
  await using denied = endpoint(() =>
    Response.json({ error: { message: "bad key" } }, { status: 401 })
  );
  const refused = new OpenAIModel({ apiKey: "k", model: "m", baseURL: denied.baseURL });
  await assert.rejects(
    refused.complete(REQUEST, NEVER),
    (e: unknown) => e instanceof ModelError && e.code === "model_refused",
  );
  // Let the slow handler finish before its server shuts down.
  await new Promise((resolve) => setTimeout(resolve, 1_400));
});

Deno.test("OpenAIModel (Responses API) maps the conversation to input items and reads function calls", async () => {
  await using server = endpoint(() =>
    Response.json({
      id: "resp_1",
      object: "response",
      created_at: 1,
      status: "completed",
      model: "gpt-test",
      output: [
        {
          type: "message",
          id: "m1",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "Reading.", annotations: [] }],
        },
        {
          type: "function_call",
          id: "f1",
          call_id: "call_9",
          name: "read_text_file",
          arguments: '{"path":"c"}',
          status: "completed",
        },
      ],
      usage: { input_tokens: 30, output_tokens: 5, total_tokens: 35 },
    })
  );
  const model = new OpenAIModel({
    apiKey: "k",
    model: "gpt-test",
    baseURL: server.baseURL,
    api: "responses",
  });
  const reply = await model.complete(REQUEST, NEVER);
  assert.equal(reply.content, "Reading.");
  assert.deepEqual(reply.toolCalls, [{
    id: "call_9",
    name: "read_text_file",
    arguments: '{"path":"c"}',
  }]);
  assert.deepEqual(reply.usage, { promptTokens: 30, completionTokens: 5 });
  const body = server.seen[0]!.body;
  assert.equal(server.seen[0]!.path, "/v1/responses");
  assert.equal(body.instructions, "You are a test.");
  assert.equal(body.max_output_tokens, 256);
  assert.deepEqual((body.input as Body[]).map((i) => i.type ?? i.role), [
    "user",
    "function_call",
    "function_call_output",
  ]);
});

Deno.test("OpenAIModel reads the cost an endpoint reports beside its usage (OpenRouter's usage.cost); an implausible one is left out", async () => {
  for (
    const [cost, expected] of [
      [0.00042, { cost: 0.00042 }],
      [-1, {}],
      ["0.1", {}],
      [Number.MAX_VALUE, {}],
    ] as const
  ) {
    await using server = endpoint(() =>
      Response.json({
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 1,
        model: "local-model",
        choices: [{
          index: 0,
          finish_reason: "stop",
          message: { role: "assistant", content: "ok" },
        }],
        usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57, cost },
      })
    );
    const model = new OpenAIModel({ apiKey: "k", model: "local-model", baseURL: server.baseURL });
    const reply = await model.complete(REQUEST, NEVER);
    assert.deepEqual(
      reply.usage,
      { promptTokens: 50, completionTokens: 7, ...expected },
      String(cost),
    );
  }
});
