/**
 * Object memory commands for the operator: `memory ls`, `memory show`, `memory namespace`. They
 * act as the operator (the host): audited, never decided — an operator owns the database anyway.
 * Payloads are escaped before they reach a terminal.
 *
 * @module
 */
import { escapePreview } from "../runtime/base/escape_preview.ts";
import { UsageError } from "../runtime/base/errors.ts";
import type { ObjectInfo } from "../runtime/memory/memory_object.ts";
import { OPERATOR_ACTOR } from "../runtime/memory/object_memory.ts";
import {
  type CliIo,
  type Command,
  integerOption,
  type ParsedArgs,
  stringOption,
} from "./_options.ts";
import { field, say } from "./_output.ts";
import { openRuntime } from "./_workspace.ts";

function describe(o: ObjectInfo): string {
  return [
    o.oid,
    field(o.namespace, 60),
    field(o.name ?? "-", 40),
    o.type.padEnd(12),
    `v${o.version}`,
    `${o.bytes}B`,
    o.provenance.source,
    o.volatile ? "volatile" : o.immutable ? "immutable" : "",
  ].join("  ").trimEnd();
}

async function ls(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const namespace = stringOption(parsed, "namespace");
  const pid = stringOption(parsed, "pid");
  if ((namespace === undefined) === (pid === undefined)) {
    throw new UsageError(`"libos memory ls" needs --namespace NS or --pid PID (its namespace)`);
  }
  const limit = integerOption(parsed, "limit", 1, 1000) ?? 100;
  await using runtime = await openRuntime(parsed, io, "read");
  const ns = namespace ?? `process:${pid}`;
  const objects = runtime.memory.list(OPERATOR_ACTOR, ns, { limit });
  return say(
    io,
    parsed,
    runtime.location.path,
    { namespace: ns, objects },
    objects.length ? objects.map(describe).join("\n") : `No objects in ${field(ns)}.`,
  );
}

async function show(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [oid] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "read");
  const { info, payload } = runtime.memory.read(OPERATOR_ACTOR, oid!);
  const text = typeof payload === "string" ? payload : JSON.stringify(payload, null, 2);
  return say(
    io,
    parsed,
    runtime.location.path,
    { object: info, payload },
    [
      describe(info),
      `provenance: ${field(info.provenance.label)}${
        info.provenance.ref ? ` (${field(info.provenance.ref)})` : ""
      }`,
      `tags: ${field(info.metadata.tags.join(", ") || "-")}`,
      `sha256: ${info.sha256}`,
      "payload:",
      ...escapePreview(text, { multiline: true, maxChars: 20_000 }).split("\n").map((l) =>
        `  │ ${l}`
      ),
    ].join("\n"),
  );
}

async function namespace(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [key] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "create");
  runtime.memory.createNamespace(OPERATOR_ACTOR, key!);
  return say(
    io,
    parsed,
    runtime.location.path,
    { namespace: key },
    `Created namespace ${
      field(key)
    }; grant a process rights on it with libos grant PID --resource namespace:${
      field(key)
    } --right list,create and --resource "object:${field(key)}/*" --right read,write`,
  );
}

/** The `memory ls` command. */
export const memoryLsCommand: Command = {
  name: "memory ls",
  summary: "list the objects of a namespace (as the operator)",
  usage: `Usage: libos memory ls (--namespace NS | --pid PID) [--limit N] [--json]

Lists the objects of a namespace — an explicit one (project, team/notes) or a process's own
(--pid) — with oid, name, type, version, size, provenance and flags.`,
  options: ["namespace", "pid", "limit"],
  run: ls,
};

/** The `memory show` command. */
export const memoryShowCommand: Command = {
  name: "memory show",
  summary: "show one object and its payload (escaped)",
  usage: `Usage: libos memory show OID [--json]

A volatile object's payload is only in the memory of the runtime that made it; after that
runtime stops this says volatile_lost.`,
  options: [],
  positionals: ["OID"],
  run: show,
};

/** The `memory namespace` command. */
export const memoryNamespaceCommand: Command = {
  name: "memory namespace",
  summary: "create an explicit namespace (e.g. project, team/notes)",
  usage: `Usage: libos memory namespace KEY [--json]

KEY is up to 8 slash-separated segments of lowercase letters, digits and . _ -. Nobody has rights
on it until you grant them (the command prints how).`,
  options: [],
  positionals: ["KEY"],
  run: namespace,
};
