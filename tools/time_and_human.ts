/**
 * Clock and human tools: the time in a time zone; asking the human a question; telling the human
 * something. Each goes through its primitive (the human ones need `human:owner` write).
 *
 * @module
 */
import { z } from "zod";
import type { ToolSpec } from "../runtime/tool.ts";

const NowArgs = z.object({
  time_zone: z.string().min(1).max(64).optional().describe("An IANA time zone (default UTC)"),
}).strict();

/** `get_current_time`: the time in a time zone. */
export const getCurrentTime: ToolSpec<typeof NowArgs> = {
  name: "get_current_time",
  description: "The current date and time in an IANA time zone.",
  args: NowArgs,
  effects: ["clock"],
  run: (args, ctx) => {
    const reading = ctx.clock.now(args.time_zone === undefined ? {} : { timeZone: args.time_zone });
    return { iso: reading.iso, epoch_ms: reading.epochMs, time_zone: reading.timeZone };
  },
};

const AskArgs = z.object({ question: z.string().min(1).max(4000) }).strict();

/** `ask_human`: a question for the human; in queue mode the process waits for the answer. */
export const askHuman: ToolSpec<typeof AskArgs> = {
  name: "ask_human",
  description: "Ask your human a question and wait for the answer.",
  args: AskArgs,
  effects: ["human"],
  run: async (args, ctx) => ({ answer: await ctx.human.ask(args.question) }),
};

const OutputArgs = z.object({ text: z.string().min(1).max(20_000) }).strict();

/** `human_output`: a message to the human (never blocks). */
export const humanOutput: ToolSpec<typeof OutputArgs> = {
  name: "human_output",
  description: "Send your human a message.",
  args: OutputArgs,
  effects: ["human"],
  run: (args, ctx) => {
    ctx.human.output(args.text);
    return { delivered: true };
  },
};
