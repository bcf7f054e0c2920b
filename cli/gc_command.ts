/**
 * `libos gc`: removes what finished processes left for review (their tool results, turns and
 * checkpoints, retained at exit) by age (`--older-than`, default 30d) and then by size
 * (`--keep-size`: oldest first until the rest fits). `--dry-run` says what would go and changes
 * nothing. It never touches a live process, a finished child whose parent still runs, or a tree
 * another launcher is running (its run lock is held); it never deletes audit records — it adds
 * its own, with counts and bytes.
 *
 * @module
 */
import { UsageError, ValidationError } from "../runtime/base/errors.ts";
import { formatTime } from "../runtime/human/approval_render.ts";
import {
  collectRetained,
  DEFAULT_RETENTION_MS,
  parseDuration,
  parseSize,
  type RetentionReport,
} from "../runtime/memory/retention.ts";
import { type CliIo, type Command, flagOption, type ParsedArgs, stringOption } from "./_options.ts";
import { field, say, table } from "./_output.ts";
import { rootFinder, tryRunLock } from "./_run_lock.ts";
import { openRuntime } from "./_workspace.ts";

/** Bytes as a person reads them: `512 B`, `1.5 KB`, `12.0 MB` (powers of 1024). */
export function formatBytes(bytes: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

function option<T>(parsed: ParsedArgs, name: "older-than" | "keep-size", parse: (t: string) => T) {
  const raw = stringOption(parsed, name);
  if (raw === undefined) return undefined;
  try {
    return parse(raw);
  } catch (error) {
    if (error instanceof ValidationError) {
      throw new UsageError(`--${name}: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

function summary(report: RetentionReport): string {
  const lines: string[] = [];
  const verb = report.dryRun ? "would remove" : "removed";
  const t = report.totals;
  lines.push(
    `libos gc ${verb} the retained data of ${t.processes} finished process(es): ${t.objects} object(s), ${
      formatBytes(t.bytes)
    }${report.dryRun ? " (dry run: nothing was changed)" : ""}`,
  );
  if (report.removed.length > 0) {
    lines.push(
      ...table(
        ["PID", "RETAINED SINCE", "OBJECTS", "BYTES", "WHY"],
        report.removed.map((e) => [
          field(e.pid),
          formatTime(e.since),
          String(e.objects),
          String(e.bytes),
          e.reason === "age" ? "older than the cutoff" : "over --keep-size",
        ]),
        { right: [2, 3] },
      ).map((l) => `  ${l}`),
    );
  }
  for (const s of report.skipped) {
    const why = s.reason === "busy"
      ? "another libos is running its process tree"
      : s.reason === "parent_live"
      ? "its parent is still alive (it may merge the result)"
      : "it is alive";
    lines.push(`kept ${field(s.pid)}: ${why}`);
  }
  const k = report.kept;
  lines.push(
    `still retained: ${k.processes} process(es), ${k.objects} object(s), ${formatBytes(k.bytes)}`,
  );
  if (report.auditSeq !== null) lines.push(`audited as record #${report.auditSeq} (retention.gc)`);
  return lines.join("\n");
}

async function gc(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const olderThanMs = option(parsed, "older-than", parseDuration) ?? DEFAULT_RETENTION_MS;
  const keepBytes = option(parsed, "keep-size", parseSize);
  const dryRun = flagOption(parsed, "dry-run");
  // A dry run opens the database read-only: it writes nothing at all.
  await using runtime = await openRuntime(parsed, io, dryRun ? "read" : "write");
  const rootOf = rootFinder(runtime);
  // The run lock of every tree it touches, held until it is done: a launcher running one is
  // left alone, and none can start on one while gc removes its data.
  using locks = new DisposableStack();
  const taken = new Map<string, boolean>();
  const busy = (pid: string): boolean => {
    const root = rootOf(pid) ?? pid;
    let free = taken.get(root);
    if (free === undefined) {
      const lock = tryRunLock(runtime, root);
      free = lock !== null;
      if (lock) locks.use(lock);
      taken.set(root, free);
    }
    return !free;
  };
  const report = collectRetained(runtime, runtime.processes, {
    olderThanMs,
    ...(keepBytes === undefined ? {} : { keepBytes }),
    dryRun,
    by: "operator",
    busy,
  });
  return say(io, parsed, runtime.location.path, { gc: report }, summary(report));
}

/** `gc [--older-than DURATION] [--keep-size SIZE] [--dry-run]`. */
export const gcCommand: Command = {
  name: "gc",
  summary: "remove what finished processes left for review (by age and size; --dry-run)",
  usage: `Usage: libos gc [--older-than DURATION] [--keep-size SIZE] [--dry-run] [--json]

A finished process's tool results, turns and checkpoints are kept for review ("libos log PID")
until gc removes them:
  --older-than DURATION  remove what was retained at least this long ago (default 30d);
                         a whole number and a unit: ms, s, m, h, d, w (7d, 12h, 0s)
  --keep-size SIZE       then remove the oldest until the rest takes at most SIZE
                         (B, KB, MB, GB, TB; powers of 1024), e.g. 500MB
  --dry-run              say what would go (processes, objects, bytes); change nothing

Never touches a live process, a finished child whose parent still runs, or a run another
libos is running. The audit log is never cut: gc adds its own records (retention.remove per
process, retention.gc with the counts and bytes).`,
  options: ["older-than", "keep-size", "dry-run"],
  run: gc,
};
