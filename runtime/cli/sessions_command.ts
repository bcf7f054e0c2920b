/**
 * `libos sessions`: the runs `libos agent` started in this workspace's database, newest first —
 * where each stands now, what it was launched with, and how to take it up again.
 *
 * @module
 */
import { formatTime } from "../approval_render.ts";
import type { AuditRecord } from "../audit_log.ts";
import { isFinal, type ProcessStatus } from "../process.ts";
import type { Runtime } from "../runtime.ts";
import { type CliIo, type Command, integerOption, type ParsedArgs } from "./_options.ts";
import { field, say } from "./_output.ts";
import { openRuntime } from "./_workspace.ts";

/** One run as `libos sessions` reports it. */
export interface SessionSummary {
  readonly pid: string;
  readonly goal: string;
  readonly status: ProcessStatus;
  readonly image: string;
  readonly mode: string | null;
  readonly model: string | null;
  readonly started: number;
  readonly updated: number;
  /** How many times a launcher took it up (the start included). */
  readonly launches: number;
  /** The exit status the last launcher ended with, when one ended. */
  readonly lastExit: number | null;
}

function text(record: AuditRecord | undefined, key: string): string | null {
  const value = record?.detail?.[key];
  return typeof value === "string" ? value : null;
}

function summary(runtime: Runtime, start: AuditRecord): SessionSummary | undefined {
  const pid = start.pid;
  if (pid === null) return undefined;
  let p;
  try {
    p = runtime.processes.get(pid);
  } catch {
    return undefined; // a run whose process is gone (another database's record) is skipped
  }
  const resumes = runtime.audit.query({ pid, action: "agent.resume", limit: 10_000 });
  const [stop] = runtime.audit.query({ pid, action: "agent.stop", order: "desc", limit: 1 });
  const last = resumes.at(-1) ?? start;
  const exit = stop?.detail?.exit;
  return {
    pid,
    goal: p.goal,
    status: p.status,
    image: p.image,
    mode: text(last, "mode"),
    model: text(last, "model"),
    started: start.time,
    updated: p.updatedAt,
    launches: 1 + resumes.length,
    lastExit: typeof exit === "number" ? exit : null,
  };
}

async function sessions(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const limit = integerOption(parsed, "limit", 1, 1000) ?? 50;
  await using runtime = await openRuntime(parsed, io, "read");
  const found = runtime.audit.query({ action: "agent.start", order: "desc", limit })
    .map((r) => summary(runtime, r))
    .filter((s): s is SessionSummary => s !== undefined);
  const lines = found.map((s) =>
    [
      s.pid,
      s.status.padEnd(13),
      formatTime(s.started),
      field(s.model, 40),
      field(s.mode, 16),
      field(s.goal, 80),
      isFinal(s.status) ? "" : `(libos agent --resume ${s.pid})`,
    ].join("  ").trimEnd()
  );
  return say(
    io,
    parsed,
    runtime.location.path,
    { sessions: found },
    found.length === 0
      ? `No agent runs in ${
        field(runtime.location.path, 4096)
      }; start one with libos agent --goal TEXT.`
      : ["PID               STATUS         STARTED  MODEL  MODE  GOAL", ...lines].join("\n"),
  );
}

/** The `sessions` command. */
export const sessionsCommand: Command = {
  name: "sessions",
  summary: "list the runs libos agent started here, newest first",
  usage: `Usage: libos sessions [--limit N] [--json]

Lists the runs "libos agent" started in this workspace's database (or --db), newest first (at
most N, default 50): the top-level process, where it stands now, when it started, the model and
mode it last ran with, its goal, and for an unfinished one the command that takes it up again.
--json adds the number of launches and the exit status the last one ended with.`,
  options: ["limit"],
  run: sessions,
};
