/**
 * `libos init`: creates a workspace's database (mode 0600, in the state directory unless `--db`)
 * and its audit head file; `--reanchor` accepts the current chain as the new head after checking
 * it, for when a head file was lost or a database was deliberately replaced.
 *
 * @module
 */
import type { AuditVerification } from "../runtime/audit/audit_log.ts";
import { databaseExists } from "../runtime/store/database.ts";
import { AuditError } from "../runtime/base/errors.ts";
import { readHeadFile } from "../runtime/audit/audit_head.ts";
import { type CliIo, type Command, flagOption, type ParsedArgs } from "./_options.ts";
import { EXIT_OK, field, printJson } from "./_output.ts";
import { locateFrom, openAudit } from "./_workspace.ts";

function problemOf(result: AuditVerification): string | undefined {
  return result.ok ? undefined : result.problem.message;
}

function run(parsed: ParsedArgs, io: CliIo): number {
  const json = flagOption(parsed, "json");
  const location = locateFrom(parsed, io, true);
  const existed = databaseExists(location);
  const headExisted = location.headPath !== null && readHeadFile(location.headPath) !== undefined;
  using opened = openAudit(location, "create");
  const { store, audit } = opened;
  let action: "created" | "initialized" | "already_initialized" | "reanchored";

  if (flagOption(parsed, "reanchor")) {
    const chain = audit.verify({ head: false });
    if (!chain.ok) {
      throw new AuditError(
        "audit_tampered",
        `Cannot re-anchor "${location.path}": the chain itself does not verify (${chain.problem.message}); keep the database for investigation`,
      );
    }
    const previous = location.headPath === null ? undefined : readHeadFile(location.headPath);
    audit.append({
      actor: "operator",
      action: "audit.reanchor",
      resource: `database:${location.path}`,
      decision: "none",
      authority: "operator",
      detail: { previousHead: previous === undefined ? null : previous.chains },
    });
    store.flush();
    audit.reanchor();
    action = "reanchored";
  } else if (store.auditTail(audit.chain) === undefined) {
    audit.append({
      actor: "operator",
      action: "store.init",
      resource: `database:${location.path}`,
      decision: "none",
      authority: "operator",
      detail: { workspace: location.workspace, schemaVersion: store.schemaVersion },
    });
    store.flush();
    action = existed ? "initialized" : "created";
  } else {
    action = "already_initialized";
  }
  if (audit.headError !== undefined) throw audit.headError;

  // A head file from an earlier database at the same path, or one that vanished under existing
  // records, is reported rather than silently replaced.
  const check = audit.verify({ head: true });
  const problem = problemOf(check);
  if (problem !== undefined) {
    const hint = !check.ok && check.problem.kind === "truncated" && headExisted &&
        action !== "already_initialized"
      ? ` A head file from an earlier database at this path exists; if that database was removed on purpose, run "libos init --reanchor".`
      : "";
    throw new AuditError(
      !check.ok && check.problem.kind === "head_missing" ? "audit_head_missing" : "audit_tampered",
      `${problem}${hint}`,
    );
  }
  if (json) {
    printJson(io, {
      db: location.path,
      workspace: location.workspace,
      head: location.headPath,
      schemaVersion: store.schemaVersion,
      result: action,
    });
  } else {
    const verb = {
      created: "Created",
      initialized: "Initialized",
      already_initialized: "Already initialized:",
      reanchored: "Re-anchored the audit head of",
    }[action];
    io.stdout(
      [
        `${verb} libos database ${field(location.path, 4096)} (schema v${store.schemaVersion})`,
        `  workspace: ${field(location.workspace, 4096)}`,
        `  head file: ${field(location.headPath, 4096)}`,
        "",
      ].join("\n"),
    );
  }
  return EXIT_OK;
}

/** The `init` command. */
export const initCommand: Command = {
  name: "init",
  summary: "create the workspace's database and audit head file",
  usage: `Usage: libos init [--workspace DIR] [--db PATH] [--reanchor] [--json]

Creates the database of a workspace (default: <state dir>/<sha256 of the workspace path>.db,
mode 0600, never inside the workspace) and its audit head file. Running it again is harmless.

  --reanchor   verify the audit chain, then make its current end the new head (use after a
               head file was lost, or a database was replaced on purpose); the act is audited`,
  options: ["reanchor"],
  run,
};
