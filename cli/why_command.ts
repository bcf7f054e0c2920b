/**
 * `libos why SEQ`: the decision of one audit record and its full explanation — the layer that
 * decided, the rule's text with its file and line, the run deny, the mode or protected path, or
 * the capability with the chain of grants it was attenuated from (who granted each link, and
 * when). Read-only; every stored value is escaped before it reaches a terminal.
 *
 * @module
 */
import type { AuditLog, AuditRecord } from "../runtime/audit/audit_log.ts";
import { Capability } from "../runtime/authority/capability.ts";
import {
  capabilityChain,
  type CapabilityLink,
  explainLine,
  explainRecord,
  type Explanation,
  grantedByLine,
} from "../runtime/authority/explain.ts";
import { NotFoundError, UsageError } from "../runtime/base/errors.ts";
import type { Store } from "../runtime/store/store.ts";
import { type CliIo, type Command, flagOption, type ParsedArgs } from "./_options.ts";
import { EXIT_OK, field, printJson } from "./_output.ts";
import { locateFrom, openAudit } from "./_workspace.ts";

/** The record with sequence number `seq`, if there is one. */
export function auditRecord(audit: AuditLog, seq: number): AuditRecord | undefined {
  const [record] = audit.query({ afterSeq: seq - 1, limit: 1 });
  return record?.seq === seq ? record : undefined;
}

/** Looks a capability and its grant record up in a store (unparseable rows end the chain). */
function lookups(store: Store, audit: AuditLog) {
  return {
    capability(id: string): Capability | undefined {
      const row = store.getCapability(id);
      if (!row) return undefined;
      try {
        const parsed = Capability.safeParse(JSON.parse(row.data));
        return parsed.success ? parsed.data : undefined;
      } catch {
        // A row edited outside libos: the chain ends there, and says so (no link shown).
        return undefined;
      }
    },
    grantedBy(id: string): string | null {
      const [grant] = audit.query({ action: "capability.grant", correlation: id, limit: 1 });
      return grant?.actor ?? null;
    },
  };
}

/** The explanation of a decision record, with the capability chain looked up in the store. */
export function explainStored(store: Store, audit: AuditLog, record: AuditRecord): Explanation {
  const base = explainRecord(record);
  if (base.layer !== "capability" || !base.capability) return base;
  return explainRecord(record, capabilityChain(base.capability.id, lookups(store, audit)));
}

function time(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString();
}

function linkLine(link: CapabilityLink): string {
  return `${field(link.id)}  ${field(link.effect)} ${field(link.rights.join(","))} on ${
    field(link.resource, 300)
  } for ${field(link.subject)} — granted by ${grantedByLine(link)} (issuer ${
    field(link.issuer)
  }) at ${time(link.at)}${link.revokedAt === null ? "" : `, revoked at ${time(link.revokedAt)}`}`;
}

/** The explanation's lines after the first (what `libos why` prints below the decision). */
function detailLines(e: Explanation): string[] {
  switch (e.layer) {
    case "rule": {
      const r = e.rule!;
      return [
        `  file: ${field(r.source, 1000)}`,
        r.line === null
          ? `  rule: #${r.index ?? "?"} of the file (recorded before rule lines were kept)`
          : `  line: ${r.line}${r.index === null ? "" : ` (rule #${r.index} of the file)`}`,
        ...(r.text === null ? [] : [`  text: ${field(r.text, 1000)}`]),
      ];
    }
    case "run":
      return [
        `  run deny #${e.deny?.index ?? "?"} (--deny)${
          e.deny?.text == null ? "" : `: ${field(e.deny.text, 1000)}`
        }`,
      ];
    case "mode":
      return [`  the ${field(e.detail)} mode's ceiling (the run's mode, or the process's image's)`];
    case "protected":
      return [`  the protected path ${field(e.detail, 1000)}`];
    case "capability": {
      const chain = e.capability?.chain ?? [];
      if (chain.length === 0) return ["  (the capability is no longer stored)"];
      const last = chain[chain.length - 1]!;
      return [
        "  chain (the deciding capability first, then each one it was attenuated from):",
        ...chain.map((link) => `    ${linkLine(link)}`),
        ...(last.derivedFrom === null
          ? []
          : [`    ${field(last.derivedFrom)}  (no longer stored; the chain ends here)`]),
      ];
    }
    default:
      return [];
  }
}

function run(parsed: ParsedArgs, io: CliIo): number {
  const [given] = parsed.args;
  const seq = Number(given);
  if (!/^[0-9]{1,15}$/.test(given ?? "") || !Number.isSafeInteger(seq) || seq < 1) {
    throw new UsageError(
      `SEQ must be an audit record's sequence number (a positive integer), got ${
        JSON.stringify(given)
      }; list them with "libos audit query"`,
    );
  }
  const location = locateFrom(parsed, io);
  using opened = openAudit(location, "read");
  const record = auditRecord(opened.audit, seq);
  if (!record) {
    throw new NotFoundError(
      `No audit record #${seq} in ${location.path}; list them with "libos audit query"`,
    );
  }
  const json = flagOption(parsed, "json");
  const head = `#${record.seq} ${time(record.time)}  ${field(record.action, 100)} ${
    field(record.resource, 300)
  }  (actor ${field(record.actor, 100)}${
    record.pid === null ? "" : `, process ${field(record.pid, 100)}`
  })`;
  if (record.decision === "none") {
    if (json) {
      printJson(io, {
        db: location.path,
        seq: record.seq,
        action: record.action,
        decision: "none",
        explanation: null,
      });
    } else {
      io.stdout(`${head}\nnot a decision: this record says what happened; nothing decided it.\n`);
    }
    return EXIT_OK;
  }
  const explanation = explainStored(opened.store, opened.audit, record);
  const line = explainLine(explanation);
  if (json) {
    printJson(io, {
      db: location.path,
      seq: record.seq,
      time: time(record.time),
      actor: record.actor,
      pid: record.pid,
      action: record.action,
      resource: record.resource,
      decision: record.decision,
      authority: record.authority,
      explanation: { ...explanation, line },
    });
    return EXIT_OK;
  }
  io.stdout(
    [
      head,
      `${record.decision} by ${line}`,
      `  layer: ${explanation.layer} (authority ${field(record.authority, 500)})`,
      ...detailLines(explanation),
      ...(explanation.command === undefined
        ? []
        : [`  the command that decided: ${field(explanation.command, 1000)}`]),
    ].join("\n") + "\n",
  );
  return EXIT_OK;
}

/** The `why` command. */
export const whyCommand: Command = {
  name: "why",
  summary: "explain the decision of one audit record (rule and line, capability chain, mode)",
  usage: `Usage: libos why SEQ [--json]

Prints the decision of audit record SEQ and what made it: the layer (hardline, run deny, mode,
protected path, rule, capability, default, shell policy), the rule's file, line and text, or the
capability with the chain of grants it was attenuated from — who granted each link (a human's
request, the operator, the mode's default grants at spawn, a remembered grant, a parent's
delegation) and when. A record that is not a decision says so; an unknown SEQ is not_found.
Find sequence numbers with "libos audit query" (--explain adds the one-line explanation).`,
  options: [],
  positionals: ["SEQ"],
  run,
};
