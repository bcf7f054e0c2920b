/**
 * What a run changed in the workspace (issue 23): the files its processes wrote, created or
 * deleted — from the audit log's allowed effects, which outlive everything else a run leaves — and
 * how many commands it ran (a command may change files the audit log cannot name). `libos log`
 * ends with it; a launcher prints it at the end of a run:
 *
 * ```ts ignore
 * const lines = renderFilesChanged(filesChanged(runtime.audit, [pid]));
 * ```
 *
 * @module
 */
import type { AuditLog, AuditRecord } from "../audit/audit_log.ts";
import { escapePreview } from "../base/escape_preview.ts";

const PAGE = 5_000;

/** A file a run changed, and how. */
export interface FileChange {
  readonly path: string;
  /** The net change: `created`, `edited`, `deleted`, `created+deleted` (gone again). */
  readonly change: "created" | "edited" | "deleted" | "created+deleted";
  /** How many writes, deletes and directory changes it took. */
  readonly operations: number;
}

/** What a run changed in the workspace, from the audit log. */
export interface FilesChanged {
  readonly files: readonly FileChange[];
  /**
   * Commands that ran with the workspace writable: they may have changed files the audit log
   * cannot name (read-only commands, run confined, are not counted).
   */
  readonly commands: number;
}

/** Every audit record of `pid`, oldest first. */
export function auditOf(audit: AuditLog, pid: string): AuditRecord[] {
  const out: AuditRecord[] = [];
  let after = 0;
  for (;;) {
    const page = audit.query({ pid, afterSeq: after, limit: PAGE });
    out.push(...page);
    if (page.length < PAGE) return out;
    after = page[page.length - 1]!.seq;
  }
}

/**
 * The files a run changed — writes, deletes and directories of `pids`, from the audit log's
 * allowed effects — and how many commands it ran. The one summary `libos log` ends with, and a
 * launcher prints at the end of a run.
 */
export function filesChanged(audit: AuditLog, pids: readonly string[]): FilesChanged {
  const byPath = new Map<string, { first: string; last: string; operations: number }>();
  let commands = 0;
  for (const pid of pids) {
    for (const r of auditOf(audit, pid)) {
      if (r.decision !== "allow" || r.actor !== pid || r.detail?.failed !== undefined) continue;
      if (r.action === "shell.run") {
        // A confined run (a read-only command: the workspace bound read-only) changed nothing.
        if (r.detail?.confined !== true) commands++;
        continue;
      }
      const op = r.action === "fs.write"
        ? (r.detail?.created === true ? "created" : "edited")
        : r.action === "fs.mkdir"
        ? "created"
        : r.action === "fs.delete" || r.action === "fs.rmdir"
        ? "deleted"
        : null;
      if (op === null || !r.resource.startsWith("fs:")) continue;
      const path = r.resource.slice("fs:".length);
      const seen = byPath.get(path);
      if (seen) {
        seen.last = op;
        seen.operations++;
      } else byPath.set(path, { first: op, last: op, operations: 1 });
    }
  }
  const files = [...byPath.entries()].map(([path, s]): FileChange => ({
    path,
    change: s.last === "deleted"
      ? (s.first === "created" ? "created+deleted" : "deleted")
      : s.first === "created"
      ? "created"
      : "edited",
    operations: s.operations,
  })).sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  return { files, commands };
}

/** The "files changed" summary, escaped, one file per line. */
export function renderFilesChanged(summary: FilesChanged): string[] {
  const lines = [`files changed: ${summary.files.length}`];
  const width = Math.max(0, ...summary.files.map((f) => f.change.length));
  for (const f of summary.files) {
    lines.push(`  ${f.change.padEnd(width)}  ${escapePreview(f.path, { maxChars: 1000 })}`);
  }
  if (summary.commands > 0) {
    lines.push(
      `  and ${summary.commands} command(s) ran (a command may change files that are not listed here)`,
    );
  }
  return lines;
}
