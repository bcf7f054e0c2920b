/**
 * `libos audit query` and `libos audit verify`: read-only views of a workspace's audit log.
 *
 * @module
 */
import type { AuditFilter, AuditRecord } from "../runtime/audit/audit_log.ts";
import { explainLine } from "../runtime/authority/explain.ts";
import { UsageError } from "../runtime/base/errors.ts";
import {
  type CliIo,
  type Command,
  flagOption,
  integerOption,
  type ParsedArgs,
  stringOption,
  timeOption,
} from "./_options.ts";
import { EXIT_FAILED, EXIT_OK, field, printJson, table } from "./_output.ts";
import { locateFrom, openAudit } from "./_workspace.ts";

/** `--resource 'filesystem:workspace:src/*'` is a prefix match; without `*`, an exact one. */
function exactOrPrefix(value: string | undefined): { exact?: string; prefix?: string } {
  if (value === undefined) return {};
  if (value.endsWith("*")) {
    const prefix = value.slice(0, -1);
    if (prefix.includes("*")) {
      throw new UsageError(`Only a trailing "*" is supported in ${JSON.stringify(value)}`);
    }
    return { prefix };
  }
  return { exact: value };
}

/** Builds the query filter from the command line. */
export function auditFilterFrom(parsed: ParsedArgs): AuditFilter {
  const action = exactOrPrefix(stringOption(parsed, "action"));
  const resource = exactOrPrefix(stringOption(parsed, "resource"));
  const entries: [string, unknown][] = [
    ["pid", stringOption(parsed, "pid")],
    ["actor", stringOption(parsed, "actor")],
    ["action", action.exact],
    ["actionPrefix", action.prefix],
    ["resource", resource.exact],
    ["resourcePrefix", resource.prefix],
    ["decision", stringOption(parsed, "decision")],
    ["correlation", stringOption(parsed, "correlation")],
    ["since", timeOption(parsed, "since")],
    ["until", timeOption(parsed, "until")],
    ["afterSeq", integerOption(parsed, "after", 0, Number.MAX_SAFE_INTEGER)],
    ["limit", integerOption(parsed, "limit", 1, 10_000)],
    ["order", flagOption(parsed, "desc") ? "desc" : undefined],
  ];
  const decision = stringOption(parsed, "decision");
  if (decision !== undefined && !["allow", "ask", "deny", "none"].includes(decision)) {
    throw new UsageError(
      `--decision must be allow, ask, deny or none, got ${JSON.stringify(decision)}`,
    );
  }
  return Object.fromEntries(entries.filter(([, v]) => v !== undefined)) as AuditFilter;
}

function recordJson(record: AuditRecord, explain: boolean) {
  return {
    ...record,
    time: new Date(record.time).toISOString(),
    ...(explain ? { explanation: record.decision === "none" ? null : explainLine(record) } : {}),
  };
}

function recordRow(r: AuditRecord, explain: boolean): string[] {
  return [
    String(r.seq),
    new Date(r.time).toISOString(),
    field(r.actor, 40),
    field(r.pid, 40),
    field(r.action, 60),
    field(r.resource, 200),
    r.decision,
    field(r.authority, 100),
    // explainLine() escapes what it shows.
    ...(explain ? [r.decision === "none" ? "-" : explainLine(r)] : []),
  ];
}

function runQuery(parsed: ParsedArgs, io: CliIo): number {
  const filter = auditFilterFrom(parsed);
  const location = locateFrom(parsed, io);
  using opened = openAudit(location, "read");
  const audit = opened.audit;
  const records = audit.query(filter);
  const explain = flagOption(parsed, "explain");
  if (flagOption(parsed, "json")) {
    printJson(io, {
      db: location.path,
      workspace: location.workspace,
      records: records.map((r) => recordJson(r, explain)),
    });
  } else if (records.length === 0) {
    io.stdout(`No audit records match (database ${field(location.path, 4096)}).\n`);
  } else {
    const header = ["SEQ", "TIME", "ACTOR", "PID", "ACTION", "RESOURCE", "DECISION", "AUTHORITY"];
    if (explain) header.push("EXPLANATION");
    const rows = records.map((r) => recordRow(r, explain));
    io.stdout(table(header, rows, { right: [0] }).join("\n") + "\n");
  }
  return EXIT_OK;
}

function runVerify(parsed: ParsedArgs, io: CliIo): number {
  const location = locateFrom(parsed, io);
  using opened = openAudit(location, "read");
  const audit = opened.audit;
  const result = audit.verify({ head: !flagOption(parsed, "no-head") });
  const json = flagOption(parsed, "json");
  if (result.ok) {
    if (json) {
      printJson(io, {
        db: location.path,
        ok: true,
        records: result.records,
        chains: result.chains,
        head: result.head,
      });
    } else {
      const chains = result.chains.map((c) => `${field(c.chain, 64)} #${c.records}`).join(", ") ||
        "no records";
      const where = location.headPath === null ? "segment heads" : "head file";
      const head = result.head === "verified"
        ? `${where} ${location.headPath === null ? "match" : "matches"}`
        : `${where} not checked (--no-head): truncation of the tail is not detected`;
      io.stdout(
        `Audit log verified: ${result.records} record${
          result.records === 1 ? "" : "s"
        } (${chains}); ${head}.\n  database: ${field(location.path, 4096)}\n`,
      );
    }
    return EXIT_OK;
  }
  const code = result.problem.kind === "head_missing"
    ? "audit_head_missing"
    : result.problem.kind === "head_invalid"
    ? "audit_head_invalid"
    : "audit_tampered";
  if (json) {
    printJson(io, {
      db: location.path,
      ok: false,
      records: result.records,
      problem: result.problem,
      error: { code, message: result.problem.message },
    });
  } else {
    io.stderr(
      `libos: audit verification failed: ${field(result.problem.message, 2000)}\n  database: ${
        field(location.path, 4096)
      }\n`,
    );
  }
  return EXIT_FAILED;
}

/** The `audit query` command. */
export const auditQueryCommand: Command = {
  name: "audit query",
  summary: "list audit records by process, action, resource, decision or time",
  usage: `Usage: libos audit query [filters] [--limit N] [--desc] [--json]

Filters (combined with AND):
  --pid PID              records about this process
  --actor WHO            records by this actor (a pid, operator, human:<id>, runtime)
  --action A             an action such as fs.write; a trailing * matches a prefix (fs.*)
  --resource R           a resource; a trailing * matches a prefix (filesystem:workspace:src/*)
  --decision D           allow, ask, deny or none
  --correlation ID       records of one correlated operation
  --since T, --until T   time range (ISO 8601 or epoch ms); since is inclusive, until exclusive
  --after SEQ            records after this sequence number (paging)
  --limit N              at most N records (default 100, at most 10000)
  --desc                 newest first
  --explain              add each decision's one-line explanation (the rule's file:line and
                         text, the capability, the mode…); "libos why SEQ" gives the whole of it`,
  options: [
    "pid",
    "actor",
    "action",
    "resource",
    "decision",
    "correlation",
    "since",
    "until",
    "after",
    "limit",
    "desc",
    "explain",
  ],
  run: runQuery,
};

/** The `audit verify` command. */
export const auditVerifyCommand: Command = {
  name: "audit verify",
  summary: "check the audit hash chain and its head file",
  usage: `Usage: libos audit verify [--no-head] [--json]

Recomputes every record's hash and link and compares the chain's end with the head file kept in
the state directory. Exits 1 naming the first bad record on an edit, a deletion or a truncation,
and exits 1 with "cannot detect truncation" when the head file is missing.

  --no-head   check the chain only (truncation of the tail is then not detected)`,
  options: ["no-head"],
  run: runVerify,
};
