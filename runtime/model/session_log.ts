/**
 * The session log (DESIGN §9): append-only JSONL of typed records — `model_turn` (what the model
 * said: text, tool calls, why it stopped, tokens), `event` and `workspace` (a tree hash). Each
 * record of a recorded log carries `prev`, the sha256 of the previous line's text (`null` on the
 * first), so an edited, inserted, deleted or reordered line is found and named (an edit of the
 * very last line, or lines cut off the end, leave nothing after them to disagree: the chain cannot
 * see those); a hand-written script with no `prev` anywhere is accepted as a plain script. Parsing is bounded (line length,
 * line count) and every refusal says which line and why.
 *
 * @module
 */
import { z } from "zod";
import { sha256Hex } from "../base/canonical_json.ts";
import { FinishReason, ModelError, TokenUsage } from "./model_client.ts";

/** The longest line a session log may hold (a model turn with large tool arguments). */
export const SESSION_LINE_MAX = 4 * 1024 * 1024;
/** The most lines a session log may hold. */
export const SESSION_LINES_MAX = 100_000;

const Prev = z.string().regex(/^[0-9a-f]{64}$/).nullable();

/** A model turn as a session log holds it. */
export const ModelTurnRecord = z.object({
  type: z.literal("model_turn"),
  prev: Prev.optional(),
  content: z.string().max(SESSION_LINE_MAX).nullable().optional(),
  tool_calls: z.array(
    z.object({
      id: z.string().min(1).max(256).optional(),
      name: z.string().min(1).max(256),
      arguments: z.unknown(),
    }).strict(),
  ).max(256).optional(),
  finish_reason: FinishReason.optional(),
  usage: TokenUsage.optional(),
  model: z.string().max(256).optional(),
}).strict();
/** A model turn as a session log holds it. */
export type ModelTurnRecord = z.infer<typeof ModelTurnRecord>;

/** Any record: model turns are checked in full; events and workspace hashes by their envelope. */
const Record = z.discriminatedUnion("type", [
  ModelTurnRecord,
  z.object({ type: z.literal("event"), prev: Prev.optional() }).passthrough(),
  z.object({
    type: z.literal("workspace"),
    prev: Prev.optional(),
    tree: z.string().min(1).max(256),
  }).passthrough(),
]);
/** One record of a session log. */
export type SessionRecord = z.infer<typeof Record>;

function invalid(source: string, line: number, why: string): ModelError {
  return new ModelError(
    "session_log_invalid",
    `${source} line ${line}: ${why}; nothing of the log was used`,
  );
}

/**
 * Parses a session log or a plain script. A log with `prev` on any record must chain on every
 * one. Blank lines are skipped.
 * @throws {ModelError} `session_log_invalid` naming the first bad line.
 */
export function parseSessionLog(text: string, source = "the session log"): SessionRecord[] {
  const lines = text.split("\n");
  if (lines.length > SESSION_LINES_MAX + 1) {
    throw invalid(source, SESSION_LINES_MAX + 1, `more than ${SESSION_LINES_MAX} lines`);
  }
  const parsed: { line: number; text: string; record: SessionRecord }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!.endsWith("\r") ? lines[i]!.slice(0, -1) : lines[i]!;
    if (raw.trim() === "") continue;
    if (raw.length > SESSION_LINE_MAX) {
      throw invalid(source, i + 1, `the line is longer than ${SESSION_LINE_MAX} characters`);
    }
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      throw invalid(source, i + 1, "not JSON");
    }
    const record = Record.safeParse(value);
    if (!record.success) {
      const issue = record.error.issues[0];
      throw invalid(
        source,
        i + 1,
        `${issue?.path.join(".") || "the record"} ${issue?.message ?? "is invalid"}`,
      );
    }
    parsed.push({ line: i + 1, text: raw, record: record.data });
  }
  const chained = parsed.some((p) => p.record.prev !== undefined);
  if (chained) {
    let previous: string | null = null;
    for (const p of parsed) {
      if (p.record.prev === undefined) {
        throw invalid(source, p.line, "a recorded log has prev on every record, and this has none");
      }
      if (p.record.prev !== previous) {
        throw invalid(
          source,
          p.line,
          "its prev does not match the previous line (a line was edited, inserted, removed or moved)",
        );
      }
      previous = sha256Hex(p.text);
    }
  }
  return parsed.map((p) => p.record);
}

/** Appends chained records to a session log (JSONL); one writer per file. */
export class SessionLogWriter {
  readonly #append: (line: string) => void;
  #previous: string | null;

  /**
   * `append` writes one line (the text plus `\n`); `previous` is the sha256 of the last line
   * already in the file, or null for a new one.
   */
  constructor(append: (line: string) => void, previous: string | null = null) {
    this.#append = append;
    this.#previous = previous;
  }

  /** Appends one record, chained to the last. Returns the line written. */
  write(record: SessionRecord): string {
    const { prev: _, ...rest } = record;
    const line = JSON.stringify({ ...rest, prev: this.#previous });
    this.#append(line + "\n");
    this.#previous = sha256Hex(line);
    return line;
  }
}
