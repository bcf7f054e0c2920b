/**
 * `libos sessions`: the runs `libos agent` started, newest first — where each stands now, what it
 * was launched with, and how to take it up again. By default the runs of this workspace's
 * database (or `--db`); `--all` reads every database in the state directory, read-only.
 *
 * @module
 */
import { join } from "node:path";
import { formatTime } from "../runtime/human/approval_render.ts";
import type { AuditRecord } from "../runtime/audit/audit_log.ts";
import type { DatabaseLocation } from "../runtime/store/database.ts";
import { AgentProcess, isFinal, type ProcessStatus } from "../runtime/process/process.ts";
import { stateDirectory } from "../runtime/base/state_paths.ts";
import {
  type CliIo,
  type Command,
  flagOption,
  integerOption,
  type ParsedArgs,
} from "./_options.ts";
import { field, say, table } from "./_output.ts";
import { locateFrom, openAudit, type OpenedAudit } from "./_workspace.ts";

/** One run as `libos sessions` reports it. */
export interface SessionSummary {
  readonly pid: string;
  readonly goal: string;
  readonly status: ProcessStatus;
  readonly image: string;
  /** The workspace it ran in, when its launch recorded it. */
  readonly workspace: string | null;
  readonly mode: string | null;
  readonly model: string | null;
  readonly started: number;
  readonly updated: number;
  /** How many times a launcher took it up (the start included). */
  readonly launches: number;
  /** The exit status the last launcher ended with, when one ended. */
  readonly lastExit: number | null;
  /** The database it is kept in (`--resume` needs it, or the workspace that defaults to it). */
  readonly db: string;
}

function text(record: AuditRecord | undefined, key: string): string | null {
  const value = record?.detail?.[key];
  return typeof value === "string" ? value : null;
}

/** The runs recorded in one opened database, newest first, at most `limit`. */
function runsIn(opened: OpenedAudit, db: string, limit: number): SessionSummary[] {
  const { store, audit } = opened;
  const found: SessionSummary[] = [];
  for (const start of audit.query({ action: "agent.start", order: "desc", limit })) {
    const pid = start.pid;
    const row = pid === null ? undefined : store.getProcess(pid);
    if (pid === null || row === undefined) continue; // its process is gone: nothing to resume
    let p: AgentProcess;
    try {
      p = AgentProcess.parse(JSON.parse(row.data));
    } catch {
      continue; // a row libos cannot read is left to `libos ps`, which says so
    }
    const resumes = audit.query({ pid, action: "agent.resume", limit: 10_000 });
    const [stop] = audit.query({ pid, action: "agent.stop", order: "desc", limit: 1 });
    const last = resumes.at(-1) ?? start;
    const exit = stop?.detail?.exit;
    found.push({
      pid,
      goal: p.goal,
      status: p.status,
      image: p.image,
      workspace: text(start, "workspace"),
      mode: text(last, "mode"),
      model: text(last, "model"),
      started: start.time,
      updated: p.updatedAt,
      launches: 1 + resumes.length,
      lastExit: typeof exit === "number" ? exit : null,
      db,
    });
  }
  return found;
}

/** Every database file in the state directory. */
function stateDatabases(io: CliIo): string[] {
  const dir = stateDirectory(io.env);
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  return entries.filter((e) => e.isFile && /^[0-9a-f]{64}\.db$/.test(e.name))
    .map((e) => join(dir, e.name)).sort();
}

function sessions(parsed: ParsedArgs, io: CliIo): number {
  const limit = integerOption(parsed, "limit", 1, 1000) ?? 50;
  const all = flagOption(parsed, "all");
  const places: DatabaseLocation[] = all
    ? stateDatabases(io).map((path) => ({
      workspace: "",
      path,
      headPath: null,
      lockPath: null,
      isDefault: true,
    }))
    : [locateFrom(parsed, io)];
  const found: SessionSummary[] = [];
  const unreadable: string[] = [];
  for (const place of places) {
    try {
      using opened = openAudit(place, "read");
      found.push(...runsIn(opened, place.path, limit));
    } catch (error) {
      if (!all) throw error;
      unreadable.push(place.path); // another libos's database, or a damaged one: said, skipped
    }
  }
  found.sort((a, b) => b.started - a.started || (a.pid < b.pid ? 1 : -1));
  const shown = found.slice(0, limit);
  const rows = shown.map((s) => [
    s.pid,
    s.status,
    formatTime(s.started),
    field(s.model, 40),
    field(s.mode, 16),
    ...(all ? [field(s.workspace, 80)] : []),
    field(s.goal, 80),
    isFinal(s.status)
      ? ""
      : `(libos agent --resume ${s.pid}${
        all && s.workspace ? ` --workspace ${field(s.workspace, 200)}` : ""
      })`,
  ]);
  const where = all
    ? `the state directory's ${places.length} database(s)`
    : field(places[0]!.path, 4096);
  const header = [
    "PID",
    "STATUS",
    "STARTED",
    "MODEL",
    "MODE",
    ...(all ? ["WORKSPACE"] : []),
    "GOAL",
    "",
  ];
  return say(
    io,
    parsed,
    all ? stateDirectory(io.env) : places[0]!.path,
    { sessions: shown, ...(all ? { unreadable } : {}) },
    [
      ...(shown.length === 0
        ? [`No agent runs in ${where}; start one with libos agent --goal TEXT.`]
        : table(header, rows)),
      ...unreadable.map((path) => `(skipped ${field(path, 4096)}: it could not be read)`),
    ].join("\n"),
  );
}

/** The `sessions` command. */
export const sessionsCommand: Command = {
  name: "sessions",
  summary: "list the runs libos agent started, newest first",
  usage: `Usage: libos sessions [--all] [--limit N] [--json]

Lists the runs "libos agent" started in this workspace's database (or --db), newest first (at
most N, default 50): the top-level process, where it stands now, when it started, the model and
mode it last ran with, its goal, and for an unfinished one the command that takes it up again.
--all reads every workspace's database in the state directory (read-only) and adds the
workspace. --json adds the number of launches, the exit status the last one ended with and the
database.`,
  options: ["limit", "all"],
  run: sessions,
};
