/**
 * The OpenAI-compatible model (`npm:openai`): chat completions for any base URL (vLLM,
 * llama.cpp, Ollama, OpenAI), or the Responses API — by default when the base URL is OpenAI's
 * own. Tool calls (in parallel when the server allows), streaming of message text, timeouts and
 * retries with backoff (the SDK's), and fallbacks that are remembered for the rest of the run: a
 * server that rejects `parallel_tool_calls` is asked again without it, one that rejects
 * `max_completion_tokens` gets `max_tokens`. Failures are typed {@link ModelError}s.
 *
 * The key and endpoint come from the operator's configuration (DESIGN §2): this module reads no
 * environment variable and no file.
 *
 * @module
 */
import type OpenAI from "openai";
import { type Redactor, redactor } from "../base/redaction.ts";
import {
  type ChatMessage,
  type FinishReason,
  type ModelClient,
  ModelError,
  type ModelErrorCode,
  type ModelReply,
  type ModelRequest,
  type ModelToolCall,
} from "./model_client.ts";

/** How to reach the model. */
export interface OpenAIModelOptions {
  readonly apiKey: string;
  /** The model's name at the endpoint, e.g. `gpt-4.1` or `qwen2.5-coder`. */
  readonly model: string;
  /** Default OpenAI's. */
  readonly baseURL?: string;
  /** Per request, milliseconds (default 120,000). */
  readonly timeoutMs?: number;
  /** Retries after a connection error, 408, 409, 429 or 5xx, with backoff (default 2). */
  readonly maxRetries?: number;
  /** `auto` (default): the Responses API on OpenAI's own endpoint, chat completions elsewhere. */
  readonly api?: "auto" | "chat" | "responses";
  /** Called with each piece of message text as it streams (the reply is still returned whole). */
  readonly onText?: (text: string) => void;
  /** The fetch to use (tests, or a host with its own network wall). */
  readonly fetch?: typeof fetch;
}

const OPENAI_HOST = "api.openai.com";

function finish(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case "stop":
    case "tool_calls":
    case "length":
    case "content_filter":
      return reason;
    case "function_call":
      return "tool_calls";
    default:
      return "other";
  }
}

/** The chat-completions form of the conversation. */
function chatMessages(request: ModelRequest): OpenAI.Chat.ChatCompletionMessageParam[] {
  const out: OpenAI.Chat.ChatCompletionMessageParam[] = [
    { role: "system", content: request.system },
  ];
  for (const m of request.messages) {
    if (m.role === "user") out.push({ role: "user", content: m.content });
    else if (m.role === "tool") {
      out.push({ role: "tool", tool_call_id: m.toolCallId, content: m.content });
    } else {
      out.push({
        role: "assistant",
        content: m.content,
        ...(m.toolCalls?.length
          ? {
            tool_calls: m.toolCalls.map((c) => ({
              id: c.id,
              type: "function" as const,
              function: { name: c.name, arguments: argumentText(c.arguments) },
            })),
          }
          : {}),
      });
    }
  }
  return out;
}

function argumentText(args: unknown): string {
  return typeof args === "string" ? args : JSON.stringify(args ?? {});
}

/** The SDK's client class (its error classes hang off it). */
type Sdk = typeof OpenAI;

/**
 * The SDK, loaded on a model's first request: a run on another model (the scripted one, the
 * demo, every command but `agent`) never pays for loading it (about 100 ms and 12 MiB).
 */
async function loadSdk(): Promise<Sdk> {
  return (await import("openai")).default;
}

/** What a rejected request's error says, for the fallbacks. */
function rejects(Sdk: Sdk, error: unknown, parameter: string): boolean {
  return error instanceof Sdk.APIError && error.status === 400 &&
    String(error.message).includes(parameter);
}

/** A typed failure for whatever the SDK (when it loaded) threw. */
function failure(Sdk: Sdk | undefined, error: unknown, name: string): ModelError {
  if (error instanceof ModelError) return error;
  if (Sdk === undefined) {
    return new ModelError(
      "model_unavailable",
      `The openai package could not be loaded for ${name} (${
        error instanceof Error ? error.message : String(error)
      }); run "deno install" in the libos checkout`,
      { cause: error },
    );
  }
  if (error instanceof Sdk.APIConnectionTimeoutError) {
    return new ModelError("model_timeout", `${name} did not answer in time`, { cause: error });
  }
  if (error instanceof Sdk.APIUserAbortError) {
    return new ModelError("model_unavailable", `The request to ${name} was cancelled`, {
      cause: error,
    });
  }
  if (error instanceof Sdk.APIError && error.status !== undefined) {
    const code = error.status >= 400 && error.status < 500 && error.status !== 429
      ? "model_refused"
      : "model_unavailable";
    return new ModelError(
      code,
      `${name} answered ${error.status}: ${String(error.message).slice(0, 500)}`,
      { cause: error },
    );
  }
  return new ModelError(
    "model_unavailable",
    `${name} could not be reached: ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  );
}

/** An OpenAI-compatible endpoint. */
export class OpenAIModel implements ModelClient {
  readonly name: string;
  /** The SDK's client, made on the first request. */
  #client: Promise<OpenAI> | undefined;
  /** The SDK once it has loaded. */
  #sdk: Sdk | undefined;
  readonly #o: OpenAIModelOptions;
  readonly #api: "chat" | "responses";
  /** Fallbacks learnt from this endpoint's refusals, kept for the rest of the run. */
  #noParallel = false;
  #legacyMaxTokens = false;
  readonly #redactor: Redactor;

  constructor(options: OpenAIModelOptions) {
    this.#o = options;
    this.#redactor = redactor([options.apiKey]);
    this.name = `openai:${options.model}`;
    const official = options.baseURL === undefined ||
      new URL(options.baseURL).hostname === OPENAI_HOST;
    this.#api = options.api === "chat" || options.api === "responses"
      ? options.api
      : official
      ? "responses"
      : "chat";
  }

  /** The SDK's client, loading the SDK the first time. */
  #connect(): Promise<OpenAI> {
    const options = this.#o;
    this.#client ??= loadSdk().then((Sdk) => {
      this.#sdk = Sdk;
      return new Sdk({
        apiKey: options.apiKey,
        ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
        timeout: options.timeoutMs ?? 120_000,
        maxRetries: options.maxRetries ?? 2,
        // Nothing from the environment: the configuration is explicit.
        organization: null,
        project: null,
        ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
      });
    });
    return this.#client;
  }

  /** Whether the endpoint refused a request for `parameter` (a fallback may drop it). */
  #rejects(error: unknown, parameter: string): boolean {
    return this.#sdk !== undefined && rejects(this.#sdk, error, parameter);
  }

  async complete(request: ModelRequest, signal: AbortSignal): Promise<ModelReply> {
    try {
      return this.#api === "responses"
        ? await this.#responses(request, signal)
        : await this.#chat(request, signal);
    } catch (error) {
      // A server may echo the key in its error ("Incorrect API key provided: sk-…").
      const typed = failure(this.#sdk, error, this.name);
      const hidden = this.#redactor.text(typed.message);
      return Promise.reject(
        hidden === typed.message ? typed : new ModelError(typed.code as ModelErrorCode, hidden),
      );
    }
  }

  async #chat(request: ModelRequest, signal: AbortSignal): Promise<ModelReply> {
    for (let attempt = 0;; attempt++) {
      const body: OpenAI.Chat.ChatCompletionCreateParams = {
        model: this.#o.model,
        messages: chatMessages(request),
        ...(request.tools.length
          ? {
            tools: request.tools.map((t) => ({
              type: "function" as const,
              function: {
                name: t.name,
                description: t.description,
                parameters: t.parameters as Record<string, unknown>,
              },
            })),
            ...(this.#noParallel ? {} : { parallel_tool_calls: true }),
          }
          : {}),
        ...(request.maxTokens === undefined
          ? {}
          : this.#legacyMaxTokens
          ? { max_tokens: request.maxTokens }
          : { max_completion_tokens: request.maxTokens }),
      };
      try {
        return this.#o.onText ? await this.#chatStreamed(body, signal) : this.#chatReply(
          await (await this.#connect()).chat.completions.create({ ...body, stream: false }, {
            signal,
          }),
        );
      } catch (error) {
        if (attempt < 2 && !this.#noParallel && this.#rejects(error, "parallel_tool_calls")) {
          this.#noParallel = true;
          continue;
        }
        if (
          attempt < 2 && !this.#legacyMaxTokens && this.#rejects(error, "max_completion_tokens")
        ) {
          this.#legacyMaxTokens = true;
          continue;
        }
        throw error;
      }
    }
  }

  #chatReply(completion: OpenAI.Chat.ChatCompletion): ModelReply {
    const choice = completion.choices[0];
    if (!choice) throw new ModelError("model_bad_reply", `${this.name} returned no choice`);
    const toolCalls: ModelToolCall[] = [];
    for (const call of choice.message.tool_calls ?? []) {
      if (call.type !== "function") continue;
      toolCalls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments });
    }
    return {
      content: choice.message.content ?? null,
      toolCalls,
      finishReason: finish(choice.finish_reason),
      ...(completion.usage
        ? {
          usage: {
            promptTokens: completion.usage.prompt_tokens,
            completionTokens: completion.usage.completion_tokens,
            ...costOf(completion.usage),
          },
        }
        : {}),
      model: completion.model,
    };
  }

  async #chatStreamed(
    body: OpenAI.Chat.ChatCompletionCreateParams,
    signal: AbortSignal,
  ): Promise<ModelReply> {
    // The SDK's timeout covers the request, not a stream that keeps trickling: a stream that
    // sends no data for the timeout is cut off too.
    const idleMs = this.#o.timeoutMs ?? 120_000;
    const idle = new AbortController();
    let timer = setTimeout(() => idle.abort(), idleMs);
    const client = await this.#connect();
    const stream = await client.chat.completions.create(
      { ...body, stream: true, stream_options: { include_usage: true } },
      { signal: AbortSignal.any([signal, idle.signal]) },
    );
    try {
      const reply = await this.#readStream(stream, () => {
        clearTimeout(timer);
        timer = setTimeout(() => idle.abort(), idleMs);
      });
      // An aborted stream may simply end: what it gave is not a reply.
      if (signal.aborted) throw signal.reason;
      if (idle.signal.aborted) {
        throw new ModelError("model_timeout", `${this.name} stopped streaming for ${idleMs} ms`);
      }
      return reply;
    } catch (error) {
      if (error instanceof ModelError) throw error;
      if (idle.signal.aborted && !signal.aborted) {
        throw new ModelError("model_timeout", `${this.name} stopped streaming for ${idleMs} ms`, {
          cause: error,
        });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  async #readStream(
    stream: AsyncIterable<OpenAI.Chat.ChatCompletionChunk>,
    alive: () => void,
  ): Promise<ModelReply> {
    let content = "";
    let reason: string | null = null;
    let model: string | undefined;
    let usage: ModelReply["usage"];
    const calls = new Map<number, { id: string; name: string; arguments: string }>();
    for await (const chunk of stream) {
      alive();
      model ??= chunk.model;
      if (chunk.usage) {
        usage = {
          promptTokens: chunk.usage.prompt_tokens,
          completionTokens: chunk.usage.completion_tokens,
          ...costOf(chunk.usage),
        };
      }
      const choice = chunk.choices[0];
      if (!choice) continue;
      if (choice.delta.content) {
        content += choice.delta.content;
        this.#o.onText?.(choice.delta.content);
      }
      for (const delta of choice.delta.tool_calls ?? []) {
        const call = calls.get(delta.index) ?? { id: "", name: "", arguments: "" };
        if (delta.id) call.id = delta.id;
        if (delta.function?.name) call.name += delta.function.name;
        if (delta.function?.arguments) call.arguments += delta.function.arguments;
        calls.set(delta.index, call);
      }
      if (choice.finish_reason) reason = choice.finish_reason;
    }
    return {
      content: content === "" ? null : content,
      toolCalls: [...calls.entries()].sort(([a], [b]) => a - b).map(([i, c]) => ({
        id: c.id || `call_${i + 1}`,
        name: c.name,
        arguments: c.arguments,
      })),
      finishReason: finish(reason),
      ...(usage ? { usage } : {}),
      ...(model === undefined ? {} : { model }),
    };
  }

  async #responses(request: ModelRequest, signal: AbortSignal): Promise<ModelReply> {
    const input: OpenAI.Responses.ResponseInputItem[] = [];
    for (const m of request.messages as readonly ChatMessage[]) {
      if (m.role === "user") input.push({ role: "user", content: m.content });
      else if (m.role === "tool") {
        input.push({ type: "function_call_output", call_id: m.toolCallId, output: m.content });
      } else {
        if (m.content) input.push({ role: "assistant", content: m.content });
        for (const c of m.toolCalls ?? []) {
          input.push({
            type: "function_call",
            call_id: c.id,
            name: c.name,
            arguments: argumentText(c.arguments),
          });
        }
      }
    }
    const response = await (await this.#connect()).responses.create({
      model: this.#o.model,
      instructions: request.system,
      input,
      ...(request.tools.length
        ? {
          tools: request.tools.map((t) => ({
            type: "function" as const,
            name: t.name,
            description: t.description,
            parameters: t.parameters as Record<string, unknown>,
            strict: false,
          })),
          ...(this.#noParallel ? {} : { parallel_tool_calls: true }),
        }
        : {}),
      ...(request.maxTokens === undefined ? {} : { max_output_tokens: request.maxTokens }),
    }, { signal });
    let content = "";
    const toolCalls: ModelToolCall[] = [];
    for (const item of response.output ?? []) {
      if (item.type === "function_call") {
        toolCalls.push({ id: item.call_id, name: item.name, arguments: item.arguments });
      } else if (item.type === "message") {
        for (const part of item.content) {
          if (part.type === "output_text") content += part.text;
        }
      }
    }
    const cut = response.status === "incomplete" &&
      response.incomplete_details?.reason === "max_output_tokens";
    return {
      content: content === "" ? null : content,
      toolCalls,
      finishReason: cut ? "length" : toolCalls.length > 0 ? "tool_calls" : "stop",
      ...(response.usage
        ? {
          usage: {
            promptTokens: response.usage.input_tokens,
            completionTokens: response.usage.output_tokens,
            ...costOf(response.usage),
          },
        }
        : {}),
      model: response.model,
    };
  }
}

/**
 * The cost an endpoint reports beside its token counts (OpenRouter's `usage.cost`; the OpenAI
 * API reports none), when it is a plausible number.
 */
function costOf(usage: object): { cost?: number } {
  const cost = (usage as { cost?: unknown }).cost;
  return typeof cost === "number" && Number.isFinite(cost) && cost >= 0 && cost < 1e6
    ? { cost }
    : {};
}
