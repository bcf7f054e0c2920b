/**
 * `libos demo`: the Agent libOS paper's demo scenario (see `_demo_scenario.ts`), in a fresh
 * temporary workspace with a temporary database, both removed afterwards — never the user's cwd
 * or state directory — and no network. It prints each step as it happens and a summary;
 * `--json` prints exactly one document (`DemoReport`, versioned); `--seed N` makes ids and the
 * clock deterministic.
 *
 * @module
 */
import { resolve } from "node:path";
import { UsageError } from "../runtime/base/errors.ts";
import { type CliIo, type Command, flagOption, type ParsedArgs, stringOption } from "./_options.ts";
import { EXIT_FAILED, EXIT_OK, field, printJson } from "./_output.ts";
import { runDemo } from "./_demo_scenario.ts";

export { DemoReport } from "./_demo_scenario.ts";

async function run(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const seedText = stringOption(parsed, "seed");
  const seed = seedText === undefined ? undefined : Number(seedText);
  if (seed !== undefined && (!Number.isSafeInteger(seed) || seed < 0)) {
    throw new UsageError(`--seed must be a non-negative integer, got ${JSON.stringify(seedText)}`);
  }
  const json = flagOption(parsed, "json");
  if (!json) {
    io.stdout(
      "Agent libOS demo: a coding agent fixes a failing test in a temporary workspace (scripted model, no network; the demo plays the human).\n\n",
    );
  }
  // --db keeps the run's database there (for libos replay); by default it is removed.
  const db = stringOption(parsed, "db");
  const report = await runDemo({
    ...(seed === undefined ? {} : { seed }),
    ...(db === undefined ? {} : { db: resolve(io.cwd, db) }),
    ...(json ? {} : { say: (line: string) => io.stdout(line + "\n") }),
  });
  const ok = report.status === "exited" && report.write.verified && report.audit.verified;
  if (json) printJson(io, report);
  else {
    io.stdout(
      [
        "",
        `Agent ${report.pids.agent} ${report.status}; worker ${report.pids.worker} parsed the log.`,
        `Failing tests found by the JIT tool: ${report.failedTests.join(", ")}`,
        `Denied: the worker's ${report.denial.tool} (${report.denial.code}).`,
        `Approved by the human: edit of ${report.approval.path} (request ${report.approval.request}); on disk: ${
          report.write.verified ? "verified" : "NOT FOUND"
        }.`,
        `Checkpoint ${report.checkpoint}; report object ${report.report}.`,
        `Audit: ${report.audit.records} records, ${report.audit.denials} denials, chain ${
          report.audit.verified ? "verified" : "BROKEN"
        }. ${
          db === undefined
            ? "The temporary workspace and database were removed."
            : `The temporary workspace was removed; the database is kept at ${field(db, 500)}.`
        }`,
        "",
      ].join("\n"),
    );
  }
  return ok ? EXIT_OK : EXIT_FAILED;
}

/** The `demo` command. */
export const demoCommand: Command = {
  name: "demo",
  summary: "run the paper's demo scenario in a temporary workspace",
  usage: `Usage: libos demo [--json] [--seed N] [--db PATH]

Runs the Agent libOS demo scenario in a temporary workspace with a temporary database (both
removed afterwards): a coding agent, an error-trace object, a forked worker, a JIT tool, a
checkpoint, a denied write, a human approval (played by the demo), a verified write, a report.
--json prints one versioned JSON document; --seed N makes ids and the clock deterministic;
--db PATH keeps the run's database at PATH (outside the temporary workspace) for libos replay.`,
  options: ["seed"],
  run,
};
