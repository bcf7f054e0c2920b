/**
 * `libos audit check PID [--tree] [--json]`: checks the trace invariants of a stored run
 * (runtime/audit/trace_check.ts) — the chain verifies, every effect has its decision before it,
 * every approval is used at most once, every child's authority is within its parent's. Read-only.
 * Exit 0 when the run keeps them all, 1 with each violation listed.
 *
 * @module
 */
import { checkTrace } from "../runtime/audit/trace_check.ts";
import { type CliIo, type Command, flagOption, type ParsedArgs } from "./_options.ts";
import { EXIT_FAILED, EXIT_OK, field, printJson } from "./_output.ts";
import { locateFrom, openAudit } from "./_workspace.ts";

function runCheck(parsed: ParsedArgs, io: CliIo): number {
  const pid = parsed.args[0]!;
  const location = locateFrom(parsed, io);
  using opened = openAudit(location, "read");
  const report = checkTrace(opened, pid, { tree: flagOption(parsed, "tree") });
  if (flagOption(parsed, "json")) {
    printJson(io, { db: location.path, ...report });
    return report.ok ? EXIT_OK : EXIT_FAILED;
  }
  const c = report.checked;
  const counts = `${c.processes} process${
    c.processes === 1 ? "" : "es"
  }, ${c.records} records, ${c.effects} effects, ${c.approvals} human requests, ${c.oneShots} one-shot approvals, ${c.delegated} delegated capabilities`;
  if (report.ok) {
    io.stdout(
      `Trace of ${field(pid, 64)} keeps every invariant (${counts}).\n  database: ${
        field(location.path, 4096)
      }\n`,
    );
    return EXIT_OK;
  }
  const lines = report.violations.map((v) =>
    `  ${v.invariant}${v.seq === undefined ? "" : ` (seq ${v.seq})`}${
      v.pid === undefined ? "" : ` ${field(v.pid, 64)}`
    }: ${field(v.message, 2000)}`
  );
  io.stdout(
    `Trace of ${field(pid, 64)} breaks ${report.violations.length} invariant${
      report.violations.length === 1 ? "" : "s"
    } (${counts}):\n${lines.join("\n")}\n  database: ${field(location.path, 4096)}\n`,
  );
  return EXIT_FAILED;
}

/** The `audit check` command. */
export const auditCheckCommand: Command = {
  name: "audit check",
  summary: "check a run's trace invariants (decisions before effects, approvals once, children)",
  usage: `Usage: libos audit check PID [--tree] [--json]

Reads the stored run of PID and checks (docs/security.md, "Trace invariants"):
  chain                    the audit chain and its head file verify
  decision_before_effect   every effect has an allow for the same process, action and resource;
                           none follows a deny or an unanswered ask
  approval_at_most_once    every one-shot approval allows at most one effect; every human request
                           is answered at most once, and dispatched only when approved
  child_within_parent      every delegated capability lies within its parent's (resource, rights,
                           effect, lifetime); a child's mode ceiling is not wider than its parent's
Exits 0 when the run keeps every invariant, 1 listing each violation. Writes nothing.

  --tree   also check every descendant of PID`,
  options: ["tree"],
  positionals: ["PID"],
  run: runCheck,
};
