/**
 * Capability commands: `caps` (list a process's capabilities), `grant`, `revoke`. A revocation
 * made here reaches a runtime running on the same database at its very next check (it watches
 * `PRAGMA data_version`).
 *
 * @module
 */
import {
  type Capability,
  CapabilityResource,
  policyOf,
  resourceString,
} from "../runtime/authority/capability.ts";
import { UsageError } from "../runtime/base/errors.ts";
import {
  type CliIo,
  type Command,
  flagOption,
  listOption,
  type ParsedArgs,
  stringOption,
  timeOption,
} from "./_options.ts";
import { EXIT_OK, field, printJson } from "./_output.ts";
import { openRuntime } from "./_workspace.ts";

/**
 * Parses a resource: `fs:PATH` (one file or directory), `fs:PATH/**` or `fs:.` (a subtree),
 * `TYPE:KEY` (exact), `TYPE:KEY*` (prefix), `TYPE:*` (any), `shell:ARGV…` (exact argv; a trailing
 * ` *` makes it a prefix).
 * @throws {UsageError} when it does not parse.
 */
export function parseResource(text: string): CapabilityResource {
  const colon = text.indexOf(":");
  if (colon < 1) {
    throw new UsageError(
      `Resource ${JSON.stringify(text)} must look like TYPE:VALUE, e.g. fs:src/** or process:pid_…`,
    );
  }
  const type = text.slice(0, colon);
  const value = text.slice(colon + 1);
  let candidate: unknown;
  if (type === "fs") {
    const subtree = value === "." || value === "**" || value.endsWith("/**");
    const path = value === "**" ? "." : subtree && value !== "." ? value.slice(0, -3) : value;
    candidate = { type, path: path || ".", scope: subtree ? "subtree" : "exact" };
  } else if (type === "shell") {
    const argv = value.split(/\s+/).filter(Boolean);
    if (argv.length === 1 && argv[0] === "*") candidate = { type, argv: [], scope: "any" };
    else if (argv.at(-1) === "*") candidate = { type, argv: argv.slice(0, -1), scope: "prefix" };
    else candidate = { type, argv, scope: "exact" };
  } else if (value === "*") {
    candidate = { type, key: "*", scope: "any" };
  } else if (value.endsWith("*")) {
    candidate = { type, key: value.slice(0, -1), scope: "prefix" };
  } else {
    candidate = { type, key: value, scope: "exact" };
  }
  const parsed = CapabilityResource.safeParse(candidate);
  if (!parsed.success) {
    throw new UsageError(
      `Resource ${JSON.stringify(text)} is not valid: ${
        parsed.error.issues[0]?.message ?? "invalid"
      }`,
    );
  }
  return parsed.data;
}

function describeCap(c: Capability): string {
  const state = c.revokedAt !== null ? "revoked" : c.oneShot && c.usedAt !== null ? "used" : "live";
  return [
    c.id,
    policyOf(c).padEnd(13),
    field(resourceString(c.resource), 80),
    c.rights.join(","),
    c.tier,
    state,
    field(c.issuer, 40),
  ].join("  ");
}

async function caps(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "read");
  runtime.processes.get(pid!);
  const all = runtime.authority.capabilities.list(pid!);
  const shown = flagOption(parsed, "all")
    ? all
    : all.filter((c) => c.revokedAt === null && !(c.oneShot && c.usedAt !== null));
  if (flagOption(parsed, "json")) printJson(io, { db: runtime.location.path, capabilities: shown });
  else {io.stdout(
      shown.length
        ? shown.map(describeCap).join("\n") + "\n"
        : `${pid} holds no live capabilities.\n`,
    );}
  return EXIT_OK;
}

async function grant(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid] = parsed.args;
  const resourceText = stringOption(parsed, "resource");
  if (resourceText === undefined) throw new UsageError(`"libos grant" needs --resource TYPE:VALUE`);
  const rights = listOption(parsed, "right").flatMap((r) => r.split(",")).filter(Boolean);
  if (rights.length === 0) {
    throw new UsageError(
      `"libos grant" needs --right (repeatable or comma-separated), e.g. --right read,write`,
    );
  }
  const effect = stringOption(parsed, "effect") ?? "allow";
  if (effect !== "allow" && effect !== "ask" && effect !== "deny") {
    throw new UsageError(`--effect must be allow, ask or deny, got ${JSON.stringify(effect)}`);
  }
  const expiresAt = timeOption(parsed, "expires");
  const resource = parseResource(resourceText);
  await using runtime = await openRuntime(parsed, io, "write");
  runtime.processes.get(pid!);
  const cap = runtime.authority.capabilities.grant({
    subject: pid!,
    resource,
    rights,
    effect,
    oneShot: flagOption(parsed, "once"),
    ...(expiresAt === undefined ? {} : { expiresAt }),
    issuer: "operator",
  });
  if (flagOption(parsed, "json")) printJson(io, { db: runtime.location.path, capability: cap });
  else io.stdout(`Granted ${describeCap(cap)}\n`);
  return EXIT_OK;
}

async function revoke(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [id] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "write");
  const revoked = runtime.authority.capabilities.revoke(id!);
  if (flagOption(parsed, "json")) {
    printJson(io, {
      db: runtime.location.path,
      revoked: revoked.map((c) => c.id),
    });
  } else {
    io.stdout(
      revoked.length === 0
        ? `${id} was already revoked.\n`
        : `Revoked ${revoked.length} capabilit${
          revoked.length === 1 ? "y" : "ies"
        } (with everything derived): ${revoked.map((c) => c.id).join(", ")}\n`,
    );
  }
  return EXIT_OK;
}

/** The `caps` command. */
export const capsCommand: Command = {
  name: "caps",
  summary: "list a process's capabilities",
  usage: `Usage: libos caps PID [--all] [--json]

Lists the process's live capabilities (--all adds revoked and used ones): id, policy
(always_allow, always_deny, ask_each_time, allow_once), resource, rights, tier (own or
inherited from its parent), state and issuer.`,
  options: ["all"],
  positionals: ["PID"],
  run: caps,
};

/** The `grant` command. */
export const grantCommand: Command = {
  name: "grant",
  summary: "grant a process a capability",
  usage:
    `Usage: libos grant PID --resource TYPE:VALUE --right R[,R...] [--effect allow|ask|deny] [--once] [--expires TIME] [--json]

Resources: fs:PATH (one path), fs:PATH/** or fs:. (a subtree), process:PID, object:KEY,
object:PREFIX*, net:HOST, shell:ARGV (exact), "shell:git status *" (argv prefix), TYPE:* (any).
Rights per type: fs read,write,delete,stat; process spawn,signal,wait,exec; shell execute;
net connect; object read,write,delete,grant,link; human write; image read,write.
The grant is made as the operator and audited. --once makes it an allow_once.`,
  options: ["resource", "right", "effect", "once", "expires"],
  positionals: ["PID"],
  run: grant,
};

/** The `revoke` command. */
export const revokeCommand: Command = {
  name: "revoke",
  summary: "revoke a capability and everything derived from it",
  usage: `Usage: libos revoke CAPABILITY_ID [--json]

Revokes the capability and, transitively, every capability delegated from it (a child's
inherited scopes). A runtime using the same database sees it at its next check.`,
  options: [],
  positionals: ["CAPABILITY_ID"],
  run: revoke,
};
