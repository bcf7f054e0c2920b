/**
 * `libos demo`: the Agent libOS paper's demo scenario. The scenario needs the processes, tools,
 * model executor and checkpoints of later issues; until they land the command says so plainly
 * and exits 0, so `deno task demo` stays a working command at every commit.
 *
 * @module
 */
import { type CliIo, type Command, flagOption, type ParsedArgs } from "./_options.ts";
import { EXIT_OK, printJson } from "./_output.ts";

function run(parsed: ParsedArgs, io: CliIo): number {
  const message =
    "The demo scenario (spawn a coding agent, fork a log parser, a JIT tool, a denied write, a human approval, a checkpoint) arrives with the checkpoints-and-demo issue; this build has the store, audit chain and event log it will run on. Try: deno task libos init, then deno task libos audit verify.";
  if (flagOption(parsed, "json")) {
    printJson(io, { version: 1, demo: "not_available", message });
  } else {
    io.stdout(`libos demo: ${message}\n`);
  }
  return EXIT_OK;
}

/** The `demo` command. */
export const demoCommand: Command = {
  name: "demo",
  summary: "run the paper's demo scenario (arrives with a later issue)",
  usage: `Usage: libos demo [--json] [--seed N]

Runs the Agent libOS demo scenario in a temporary workspace with a temporary database.`,
  options: ["seed"],
  run,
};
