/**
 * The model as the executor sees it (DESIGN §1, §9): one `complete()` per turn — a system prompt,
 * the conversation, the tools the process may see — and a typed reply: text, tool calls, why it
 * stopped, and the tokens it cost. Implementations: the OpenAI-compatible client, the scripted
 * model that replays a session log (`replay:FILE.jsonl`), and a recorder that writes one.
 *
 * @module
 */
import { z } from "zod";
import { LibosError } from "../base/errors.ts";

/** One tool call the model asked for. */
export const ModelToolCall = z.object({
  /** The model's id for the call (the reply to it carries the same id). */
  id: z.string().min(1).max(256),
  name: z.string().max(256),
  /** The arguments as the model sent them: JSON text or an object; validated by the broker. */
  arguments: z.unknown(),
}).strict();
/** One tool call the model asked for. */
export type ModelToolCall = z.infer<typeof ModelToolCall>;

/** One message of the conversation. */
export type ChatMessage =
  | { readonly role: "user"; readonly content: string }
  | {
    readonly role: "assistant";
    readonly content: string | null;
    readonly toolCalls?: readonly ModelToolCall[];
  }
  | { readonly role: "tool"; readonly toolCallId: string; readonly content: string };

/** What the model is shown of a tool. */
export interface ModelToolSchema {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** One turn's request. */
export interface ModelRequest {
  readonly system: string;
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ModelToolSchema[];
  /** The most tokens the reply may use. */
  readonly maxTokens?: number;
  /** Which turn of the process this is, 1, 2, 3… (kept across restarts and takeovers). */
  readonly turn?: number;
}

/** Why a reply ended. */
export const FinishReason = z.enum(["stop", "tool_calls", "length", "content_filter", "other"]);
/** Why a reply ended. */
export type FinishReason = z.infer<typeof FinishReason>;

/** Tokens a turn cost, as the provider counted them. */
export const TokenUsage = z.object({
  promptTokens: z.number().int().nonnegative(),
  completionTokens: z.number().int().nonnegative(),
  /** What the turn cost, in the endpoint's currency (USD at OpenRouter), when it says. */
  cost: z.number().nonnegative().optional(),
}).strict();
/** Tokens a turn cost. */
export type TokenUsage = z.infer<typeof TokenUsage>;

/** One turn's reply. */
export interface ModelReply {
  readonly content: string | null;
  readonly toolCalls: readonly ModelToolCall[];
  readonly finishReason: FinishReason;
  /** Absent when the provider did not say (the executor then estimates). */
  readonly usage?: TokenUsage;
  /** The model that answered, as the provider named it. */
  readonly model?: string;
}

/** A model. */
export interface ModelClient {
  /** A short name for logs and audit: `openai:gpt-4.1`, `replay:session.jsonl`. */
  readonly name: string;
  /**
   * One turn.
   * @throws {ModelError} with a stable code (`replay_exhausted`, `model_unavailable`, …).
   */
  complete(request: ModelRequest, signal: AbortSignal): Promise<ModelReply>;
}

/** Stable codes of model failures. */
export type ModelErrorCode =
  | "replay_exhausted"
  | "session_log_invalid"
  | "model_unavailable"
  | "model_timeout"
  | "model_refused"
  | "model_bad_reply";

/** A model failed: the turn did not happen. */
export class ModelError extends LibosError {
  /** Builds a typed model failure. */
  constructor(code: ModelErrorCode, message: string, options: { readonly cause?: unknown } = {}) {
    // A bad or exhausted script is the operator's to fix; the rest is the model host's.
    const operator = code === "session_log_invalid" || code === "replay_exhausted";
    super(code, operator ? "operator" : "runtime", message, options);
  }
}
