/**
 * `libos grants list` and `libos grants revoke`: the "allow always … for this project" answers
 * libos remembers in the user's grants file (`remembered_grants.ts`), per workspace. Revoking
 * one removes it from the file — audited in the workspace's database — so no later run starts
 * with it (and a resumed run loses it when it resumes).
 *
 * @module
 */
import { NotFoundError } from "../runtime/base/errors.ts";
import { resolveWorkspace } from "../runtime/base/state_paths.ts";
import { resourceString } from "../runtime/authority/capability.ts";
import { type CliIo, type Command, flagOption, type ParsedArgs, stringOption } from "./_options.ts";
import { EXIT_OK, field, printJson, table } from "./_output.ts";
import { locateFrom, openAudit } from "./_workspace.ts";
import {
  forgetGrant,
  grantText,
  loadAllRememberedGrants,
  loadRememberedGrants,
  type RememberedGrant,
} from "./remembered_grants.ts";

function workspaceOf(parsed: ParsedArgs, io: CliIo): string {
  return resolveWorkspace(stringOption(parsed, "workspace") ?? ".", io.cwd);
}

function rows(workspace: string | null, grants: readonly RememberedGrant[]): string[][] {
  return grants.map((g) => [
    field(g.id, 40),
    ...(workspace === null ? [] : [field(workspace, 200)]),
    field(grantText(g), 200),
    g.scope,
    `${field(g.by ?? "-", 40)} ${field(g.at ?? "-", 40)}${
      g.request ? ` (${field(g.request, 40)})` : ""
    }`,
  ]);
}

function list(parsed: ParsedArgs, io: CliIo): number {
  const json = flagOption(parsed, "json");
  if (flagOption(parsed, "all")) {
    const all = loadAllRememberedGrants(io.env);
    if (json) {
      printJson(io, { file: all.path, workspaces: all.workspaces });
      return EXIT_OK;
    }
    const lines = Object.entries(all.workspaces).flatMap(([w, grants]) => rows(w, grants));
    io.stdout(
      lines.length
        ? table(["ID", "WORKSPACE", "GRANTS", "SCOPE", "APPROVED"], lines).join("\n") + "\n"
        : `No remembered grants${all.path ? ` in ${field(all.path, 4096)}` : ""}.\n`,
    );
    return EXIT_OK;
  }
  const workspace = workspaceOf(parsed, io);
  const remembered = loadRememberedGrants(io.env, workspace);
  if (json) {
    printJson(io, {
      file: remembered.path,
      workspace,
      ignored: remembered.ignored,
      grants: remembered.grants,
    });
    return EXIT_OK;
  }
  if (remembered.ignored !== null) {
    io.stdout(
      `The grants file ${
        field(remembered.ignored, 4096)
      } is inside the workspace, which the agent can write: libos ignores it. Set XDG_CONFIG_HOME outside the workspace.\n`,
    );
    return EXIT_OK;
  }
  io.stdout(
    remembered.grants.length
      ? [
        `Remembered for ${field(workspace, 4096)} (${field(remembered.path, 4096)}):`,
        ...table(["ID", "GRANTS", "SCOPE", "APPROVED"], rows(null, remembered.grants)),
      ].join("\n") + "\n"
      : `No remembered grants for ${field(workspace, 4096)}.\n`,
  );
  return EXIT_OK;
}

function revoke(parsed: ParsedArgs, io: CliIo): number {
  const [id] = parsed.args;
  const workspace = workspaceOf(parsed, io);
  // The audit is opened first: a revocation that cannot be recorded is not made.
  const location = locateFrom(parsed, io, true);
  using opened = openAudit(location, "create");
  const removed = forgetGrant(io.env, workspace, id!);
  if (!removed) {
    throw new NotFoundError(
      `No remembered grant ${
        JSON.stringify(id)
      } for the workspace ${workspace}; list them with "libos grants list" (--all for every workspace, then --workspace PATH)`,
    );
  }
  opened.audit.append({
    actor: "human:cli",
    action: "grants.revoke",
    resource: resourceString(removed.resource),
    decision: "none",
    authority: "human:cli",
    correlation: removed.id,
    detail: {
      grant: removed.id,
      rights: removed.rights,
      workspace,
      file: loadRememberedGrants(io.env, workspace).path,
      request: removed.request ?? null,
    },
  });
  if (flagOption(parsed, "json")) {
    printJson(io, { db: location.path, workspace, revoked: removed });
  } else {
    io.stdout(
      `Revoked ${field(removed.id, 40)} (${
        field(grantText(removed), 400)
      }): no later libos agent run in ${field(workspace, 4096)} starts with it.\n`,
    );
  }
  return EXIT_OK;
}

/** The `grants list` command. */
export const grantsListCommand: Command = {
  name: "grants list",
  summary: 'list the grants remembered for a workspace ("allow always … for this project")',
  usage: `Usage: libos grants list [--workspace DIR] [--all] [--json]

Lists the "allow always" answers remembered for the workspace (default: the current directory)
in grants.jsonc in your configuration directory ($XDG_CONFIG_HOME/libos, else ~/.config/libos;
never a file in the workspace). Every "libos agent" run in that workspace starts with them as
capabilities of its top-level process (issuer user-config:ID), which the hardline, the mode's
ceiling and the rules still overrule. --all lists every workspace's.`,
  options: ["all"],
  run: list,
};

/** The `grants revoke` command. */
export const grantsRevokeCommand: Command = {
  name: "grants revoke",
  summary: "forget a remembered grant: no later run starts with it",
  usage: `Usage: libos grants revoke ID [--workspace DIR] [--json]

Removes the remembered grant ID of the workspace (default: the current directory) from the
grants file, audited (grants.revoke) in the workspace's database. No later "libos agent" run
starts with it; a run resumed later loses it as it resumes. A capability a running process
holds now is revoked with "libos revoke CAPABILITY_ID" ("libos caps PID" lists them).`,
  options: [],
  positionals: ["ID"],
  run: revoke,
};
