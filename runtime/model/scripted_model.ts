/**
 * The scripted model (DESIGN §9): `replay:FILE.jsonl` answers each turn with the next
 * `model_turn` record of a session log or a plain script — deterministic, no network, what every
 * test and the demo run on — and fails with `replay_exhausted` when the script runs out. The
 * recorder wraps any model and writes each of its replies as a chained `model_turn` record, so a
 * real session can be replayed to the same actions.
 *
 * @module
 */
import {
  type ModelClient,
  ModelError,
  type ModelReply,
  type ModelRequest,
  type ModelToolCall,
} from "./model_client.ts";
import {
  type ModelTurnRecord,
  parseSessionLog,
  type SessionLogWriter,
  type SessionRecord,
} from "./session_log.ts";

/** The reply a recorded turn stands for (tool call ids made up when the script gave none). */
function replyOf(turn: ModelTurnRecord, index: number): ModelReply {
  const toolCalls: ModelToolCall[] = (turn.tool_calls ?? []).map((call, i) => ({
    id: call.id ?? `call_${index + 1}_${i + 1}`,
    name: call.name,
    // Absent in a hand-written script: no arguments. A recorded null replays as null.
    arguments: call.arguments === undefined ? {} : call.arguments,
  }));
  return {
    content: turn.content ?? null,
    toolCalls,
    finishReason: turn.finish_reason ?? (toolCalls.length > 0 ? "tool_calls" : "stop"),
    ...(turn.usage === undefined ? {} : { usage: turn.usage }),
    ...(turn.model === undefined ? {} : { model: turn.model }),
  };
}

/**
 * Answers turns from a script, in order — one cursor for the whole run, or (`eachProcess`) the
 * script from the top for every process, at the turn the process has reached (the request's
 * `turn`, kept durably), so a process taken over by another worker goes on where it was.
 */
export class ScriptedModel implements ModelClient {
  readonly name: string;
  readonly #turns: readonly ModelTurnRecord[];
  readonly #eachProcess: boolean;
  #next = 0;

  /** A model that replays the `model_turn` records of `records` (other records are skipped). */
  constructor(
    records: readonly SessionRecord[],
    name = "replay",
    options: { readonly eachProcess?: boolean } = {},
  ) {
    this.name = name;
    this.#turns = records.filter((r): r is ModelTurnRecord => r.type === "model_turn");
    this.#eachProcess = options.eachProcess ?? false;
  }

  /**
   * Reads a session log or plain script (`replay:FILE.jsonl`).
   * @throws {ModelError} `session_log_invalid` for a file that cannot be read or does not parse.
   */
  static fromFile(path: string, options: { readonly eachProcess?: boolean } = {}): ScriptedModel {
    let text: string;
    try {
      text = Deno.readTextFileSync(path);
    } catch (error) {
      throw new ModelError(
        "session_log_invalid",
        `Cannot read the script ${JSON.stringify(path)}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    return new ScriptedModel(
      parseSessionLog(text, path),
      `${options.eachProcess ? "replay-each" : "replay"}:${path}`,
      options,
    );
  }

  /**
   * Skips the first `turns` turns: a resumed run's processes already took them (their replies
   * are kept as `model.turn` records), so the script goes on where the stopped run left it.
   * @throws {RangeError} for a count that is not a whole number from 0 to the turns left.
   */
  skip(turns: number): void {
    if (!Number.isSafeInteger(turns) || turns < 0 || turns > this.remaining) {
      throw new RangeError(
        `Cannot skip ${turns} turn(s) of ${this.name}: it has ${this.remaining} left`,
      );
    }
    this.#next += turns;
  }

  /** How many turns are left. */
  get remaining(): number {
    return this.#turns.length - this.#next;
  }

  complete(request: ModelRequest, signal: AbortSignal): Promise<ModelReply> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const index = this.#eachProcess ? (request.turn ?? 1) - 1 : this.#next;
    const turn = this.#turns[index];
    if (!turn) {
      return Promise.reject(
        new ModelError(
          "replay_exhausted",
          `The script ${this.name} has no turn ${
            index + 1
          } (it holds ${this.#turns.length}); add turns or end the run earlier`,
        ),
      );
    }
    if (!this.#eachProcess) this.#next++;
    return Promise.resolve(replyOf(turn, index));
  }
}

/** Wraps a model and records each reply as a chained `model_turn` record. */
export class RecordingModel implements ModelClient {
  readonly name: string;
  readonly #inner: ModelClient;
  readonly #writer: SessionLogWriter;

  constructor(inner: ModelClient, writer: SessionLogWriter) {
    this.#inner = inner;
    this.#writer = writer;
    this.name = inner.name;
  }

  async complete(request: ModelRequest, signal: AbortSignal): Promise<ModelReply> {
    const reply = await this.#inner.complete(request, signal);
    this.#writer.write({
      type: "model_turn",
      content: reply.content,
      tool_calls: reply.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
      finish_reason: reply.finishReason,
      ...(reply.usage === undefined ? {} : { usage: reply.usage }),
      ...(reply.model === undefined ? {} : { model: reply.model }),
    });
    return reply;
  }
}
