/**
 * Checkpoint commands: `checkpoint create PID`, `checkpoint list PID`, `checkpoint diff PID ID`,
 * `checkpoint restore PID ID` — made as the operator and audited. A restore prints the external
 * effects since the checkpoint that it could not undo.
 *
 * @module
 */
import type { CheckpointDiff } from "../runtime/memory/checkpoints.ts";
import { formatTime } from "../runtime/human/approval_render.ts";
import { type CliIo, type Command, type ParsedArgs, stringOption } from "./_options.ts";
import { field, say } from "./_output.ts";
import { openRuntime } from "./_workspace.ts";

function diffLines(diff: CheckpointDiff): string[] {
  const lines: string[] = [];
  for (const [key, change] of Object.entries(diff.process)) {
    lines.push(
      `process ${key}: ${field(JSON.stringify(change.then), 120)} -> ${
        field(JSON.stringify(change.now), 120)
      }`,
    );
  }
  const o = diff.objects;
  lines.push(
    `objects: ${o.changed.length} changed, ${o.added.length} added, ${o.removed.length} removed`,
  );
  lines.push(
    `capabilities: ${diff.capabilities.granted.length} granted since, ${diff.capabilities.gone.length} gone`,
  );
  lines.push(`irreversible effects since: ${diff.irreversible.length}`);
  for (const e of diff.irreversible) {
    lines.push(`  #${e.seq}  ${field(e.action, 40)}  ${field(e.resource, 200)}`);
  }
  return lines;
}

async function create(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "write");
  const cp = runtime.checkpoints.create(pid!, stringOption(parsed, "label") ?? "");
  return say(
    io,
    parsed,
    runtime.location.path,
    {
      checkpoint: {
        id: cp.id,
        pid: cp.pid,
        label: cp.label,
        at: cp.at,
        objects: cp.objects.length,
      },
    },
    `${field(cp.id)}: checkpoint of ${field(pid)} (${cp.objects.length} object(s))`,
  );
}

async function list(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "write");
  const all = runtime.checkpoints.list(pid!);
  return say(
    io,
    parsed,
    runtime.location.path,
    {
      checkpoints: all.map((c) => ({
        id: c.id,
        label: c.label,
        at: c.at,
        objects: c.objects.length,
        auditSeq: c.auditSeq,
      })),
    },
    all.length === 0
      ? `${field(pid)} has no checkpoint`
      : all.map((c) => `${field(c.id)}  ${formatTime(c.at)}  ${field(c.label, 80)}`).join("\n"),
  );
}

async function diff(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid, id] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "write");
  const d = runtime.checkpoints.diff(pid!, id!);
  return say(io, parsed, runtime.location.path, { diff: d }, diffLines(d).join("\n"));
}

async function restore(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid, id] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "write");
  const d = runtime.checkpoints.restore(pid!, id!);
  return say(
    io,
    parsed,
    runtime.location.path,
    { restored: id, diff: d },
    [
      `${field(pid)} restored to ${field(id)}; what it undid and what it could not:`,
      ...diffLines(d),
    ]
      .join("\n"),
  );
}

/** `checkpoint create PID [--label TEXT]`. */
export const checkpointCreateCommand: Command = {
  name: "checkpoint create",
  summary: "checkpoint a process (its state, own objects and capabilities)",
  usage: `Usage: libos checkpoint create PID [--label TEXT] [--json]`,
  options: ["label"],
  positionals: ["PID"],
  run: create,
};

/** `checkpoint list PID`. */
export const checkpointListCommand: Command = {
  name: "checkpoint list",
  summary: "list a process's checkpoints",
  usage: `Usage: libos checkpoint list PID [--json]`,
  options: [],
  positionals: ["PID"],
  run: list,
};

/** `checkpoint diff PID ID`. */
export const checkpointDiffCommand: Command = {
  name: "checkpoint diff",
  summary: "what changed for a process since a checkpoint, and which external effects it made",
  usage: `Usage: libos checkpoint diff PID ID [--json]`,
  options: [],
  positionals: ["PID", "ID"],
  run: diff,
};

/** `checkpoint restore PID ID`. */
export const checkpointRestoreCommand: Command = {
  name: "checkpoint restore",
  summary: "restore a process to a checkpoint (external effects are listed, never undone)",
  usage: `Usage: libos checkpoint restore PID ID [--json]

Puts back the process's image, tool table, working directory and goal, its own objects, and
revokes capabilities granted to it since. The process must not be running (pause it first).
File writes and deletes, commands and requests made since are listed as irreversible.`,
  options: [],
  positionals: ["PID", "ID"],
  run: restore,
};
