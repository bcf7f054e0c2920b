/**
 * Clock and human tools: the time in a time zone; asking the human a question; telling the human
 * something. Each goes through its primitive (the human ones need `human:owner` write).
 *
 * @module
 */
import { z } from "zod";
import { HUMAN_OUTPUT_CHARS_MAX, HUMAN_QUESTION_CHARS_MAX, SLEEP_MS_MAX } from "./caps.ts";
import { CapabilityResourceSchema, syscall, type ToolSpec } from "../runtime/broker/tool.ts";

const NowArgs = z.object({
  time_zone: z.string().min(1).max(64).optional().describe("An IANA time zone (default UTC)"),
}).strict();

/** `get_current_time`: the time in a time zone. */
export const getCurrentTime: ToolSpec<typeof NowArgs, "clock.now"> = {
  name: "get_current_time",
  description: "The current date and time in an IANA time zone.",
  args: NowArgs,
  effects: ["clock"],
  run: (args, ctx) => {
    const reading = ctx.clock.now(args.time_zone === undefined ? {} : { timeZone: args.time_zone });
    return { iso: reading.iso, epoch_ms: reading.epochMs, time_zone: reading.timeZone };
  },
  syscalls: {
    "clock.now": syscall(
      NowArgs,
      (a, sys) => sys.clock.now(a.time_zone ? { timeZone: a.time_zone } : {}),
    ),
  },
};

const AskArgs = z.object({ question: z.string().min(1).max(HUMAN_QUESTION_CHARS_MAX) }).strict();

/** `ask_human`: a question for the human; in queue mode the process waits for the answer. */
export const askHuman: ToolSpec<typeof AskArgs, "human.ask"> = {
  name: "ask_human",
  description: "Ask your human a question and wait for the answer.",
  args: AskArgs,
  effects: ["human"],
  run: async (args, ctx) => ({ answer: await ctx.human.ask(args.question) }),
  syscalls: { "human.ask": syscall(AskArgs, (a, sys) => sys.human.ask(a.question)) },
};

const OutputArgs = z.object({ text: z.string().min(1).max(HUMAN_OUTPUT_CHARS_MAX) }).strict();

/** `human_output`: a message to the human (never blocks). */
export const humanOutput: ToolSpec<typeof OutputArgs, "human.output"> = {
  name: "human_output",
  description: "Send your human a message.",
  args: OutputArgs,
  effects: ["human"],
  run: (args, ctx) => {
    ctx.human.output(args.text);
    return { delivered: true };
  },
  syscalls: {
    "human.output": syscall(OutputArgs, (a, sys) => {
      sys.human.output(a.text);
      return null;
    }),
  },
};

const PermissionArgs = z.object({
  resource: z.union([
    z.object({
      type: z.literal("fs"),
      path: z.string().min(1).max(4096),
      scope: z.enum(["exact", "subtree"]),
    }).strict(),
    z.object({
      type: z.enum(["net", "object", "namespace", "image", "tool", "process"]),
      key: z.string().min(1).max(4096),
      scope: z.enum(["exact", "prefix", "any"]),
    }).strict(),
  ]).describe("What the permission is on"),
  rights: z.array(z.string().min(1).max(32)).min(1).max(16).describe("e.g. read, write, connect"),
  reason: z.string().min(1).max(HUMAN_QUESTION_CHARS_MAX).describe(
    "Why you need it, in one or two sentences",
  ),
}).strict();

/**
 * A syscall's permission request: the same rights and reason; its resource is any capability
 * resource (a JIT tool may ask for a shell or human scope; the model's tool shows fewer kinds).
 */
const PermissionSyscallArgs = PermissionArgs.extend({ resource: CapabilityResourceSchema });

/** `request_permission`: asks the human for a standing permission; approving grants it. */
export const requestPermission: ToolSpec<typeof PermissionArgs, "human.request_permission"> = {
  name: "request_permission",
  description:
    "Ask your human for a standing permission (a resource and rights) you need for your task; approving grants it.",
  args: PermissionArgs,
  effects: ["human"],
  run: async (args, ctx) => ({ capabilities: await ctx.human.requestPermission(args) }),
  syscalls: {
    "human.request_permission": syscall(
      PermissionSyscallArgs,
      (a, sys) => sys.human.requestPermission(a),
    ),
  },
};

const EchoArgs = z.object({ text: z.string().max(100_000) }).strict();

/** `echo`: returns its text (a harmless probe of the tool path). */
export const echo: ToolSpec<typeof EchoArgs> = {
  name: "echo",
  description: "Return the given text unchanged.",
  args: EchoArgs,
  effects: [],
  run: (args) => ({ text: args.text }),
};

const SleepArgs = z.object({
  ms: z.number().int().min(0).max(SLEEP_MS_MAX).describe(
    `Milliseconds to wait (at most ${SLEEP_MS_MAX})`,
  ),
}).strict();

/** `sleep`: waits (within the clock primitive's bound). */
export const sleep: ToolSpec<typeof SleepArgs, "clock.sleep"> = {
  name: "sleep",
  description: "Wait a number of milliseconds (at most a minute), e.g. before polling again.",
  args: SleepArgs,
  effects: ["clock"],
  run: async (args, ctx) => {
    await ctx.clock.sleep(args.ms);
    return { slept_ms: args.ms };
  },
  syscalls: {
    "clock.sleep": syscall(SleepArgs, async (a, sys, signal) => {
      await sys.clock.wait(a.ms, signal);
      return null;
    }),
  },
};
