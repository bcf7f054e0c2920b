/**
 * The JIT sandbox protocol (DESIGN §7): one JSON object per line over the sandbox process's
 * stdin and stdout, validated with zod on the host; stdout carries frames only. Host → tool:
 * `run` (first, carrying a fresh nonce; a resident process gets one per call, each after the
 * previous call's result), `syscall_result`. Tool → host: `syscall`, `log`,
 * then one `result` or `error`, each carrying the nonce as `n`. A frame that does not parse, is
 * too large, comes out of order or lacks the nonce (a tool writing fd 1 itself) kills the tool.
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
    /** A fresh secret per call: every frame the harness sends carries it as `n`. */
    nonce: z.string().min(16).max(64),
    /** The memory budget: an error is out of memory only when the process nears it. */
    memoryBytes: z.number().int().positive(),
    source: z.string(),
    /** What `source` is written in: TypeScript (default), or JavaScript the host transpiled. */
    lang: z.enum(["typescript", "javascript"]).optional(),
    /**
     * The call's CPU budget in milliseconds, sent to a resident process (one serving several
     * calls, each in its own Worker), whose harness measures each call; a one-shot process has
     * the kernel's limit instead.
     */
    cpuMs: z.number().int().positive().optional(),
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
    n: z.string(),
  }).strict(),
  z.object({
    type: z.literal("log"),
    level: z.enum(["debug", "info", "log", "warn", "error"]),
    text: z.string().max(16 * 1024),
    n: z.string(),
  }).strict(),
  z.object({
    type: z.literal("result"),
    value: Json,
    /** A resident process's CPU time so far, milliseconds (its harness's measure). */
    cpu: z.number().nonnegative().optional(),
    n: z.string(),
  }).strict(),
  z.object({
    type: z.literal("error"),
    name: z.string().max(128),
    message: z.string().max(4096),
    /** Set by the harness from the process's own memory use, not by the tool. */
    oom: z.boolean(),
    /** Set by a resident process's harness when the call outran its CPU budget. */
    limit: z.literal("cpu").optional(),
    cpu: z.number().nonnegative().optional(),
    n: z.string(),
  }).strict(),
]);
/** Tool → host. */
export type ToolFrame = z.infer<typeof ToolFrame>;
