/**
 * The JIT sandbox protocol (DESIGN §7): one JSON object per line over the sandbox process's
 * stdin and stdout, validated with zod on the host; stdout carries frames only. Host → tool:
 * `run` (once, first), `syscall_result`. Tool → host: `syscall`, `log`, then one `result` or
 * `error`. A frame that does not parse, is too large, or comes out of order kills the tool.
 *
 * @module
 */
import { z } from "zod";

/** The protocol version; a `run` frame carries it and the harness refuses another. */
export const PROTOCOL_VERSION = 1;

/** A JSON value as frames carry it. */
const Json: z.ZodType<unknown> = z.unknown();

/** Host → tool. */
export const HostFrame = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("run"),
    v: z.literal(PROTOCOL_VERSION),
    source: z.string(),
    args: Json,
  }).strict(),
  z.object({
    type: z.literal("syscall_result"),
    id: z.number().int().nonnegative(),
    ok: z.boolean(),
    value: Json.optional(),
    error: z.object({ code: z.string().max(64), message: z.string().max(4096) }).strict()
      .optional(),
  }).strict(),
]);
/** Host → tool. */
export type HostFrame = z.infer<typeof HostFrame>;

/** Tool → host. */
export const ToolFrame = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("syscall"),
    id: z.number().int().nonnegative(),
    name: z.string().min(1).max(64),
    args: z.record(z.string(), Json),
  }).strict(),
  z.object({
    type: z.literal("log"),
    level: z.enum(["debug", "info", "log", "warn", "error"]),
    text: z.string().max(16 * 1024),
  }).strict(),
  z.object({ type: z.literal("result"), value: Json }).strict(),
  z.object({
    type: z.literal("error"),
    name: z.string().max(128),
    message: z.string().max(4096),
  }).strict(),
]);
/** Tool → host. */
export type ToolFrame = z.infer<typeof ToolFrame>;
