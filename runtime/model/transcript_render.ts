/**
 * A transcript as text for a terminal (`libos log PID`): one entry per line or block, every value
 * from the run — the model's text, arguments, output, diffs, paths, reasons — escaped through
 * `escapePreview` (DESIGN §5), as the approval prompt does, so nothing a model or a file wrote
 * can move the cursor, clear the screen or hide a line.
 *
 * @module
 */
import { escapePreview } from "../base/escape_preview.ts";
import { explainLine } from "../authority/explain.ts";
import { renderFilesChanged } from "./files_changed.ts";
import { PLAN_TOOL, planChecklist } from "./plan_checklist.ts";
import type { TranscriptEntry } from "./transcript.ts";

/** The gutter of a multiline block (model text, output, diffs). */
const GUTTER = "    │ ";
const FIELD = 300;
const BLOCK = 20_000;

function one(value: string | number | null | undefined, max = FIELD): string {
  return value === null || value === undefined
    ? "-"
    : escapePreview(String(value), { maxChars: max });
}

function block(text: string): string[] {
  return escapePreview(text, { multiline: true, maxChars: BLOCK }).split("\n")
    .map((l) => `${GUTTER}${l}`);
}

function time(ms: number | null): string {
  if (ms === null) return "-";
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString();
}

/** One entry's lines. */
function entryLines(e: TranscriptEntry): string[] {
  switch (e.type) {
    case "process": {
      const lines = [
        `process ${one(e.pid)}${e.parent ? ` (child of ${one(e.parent)})` : ""}: ${one(e.status)}`,
        `  goal: ${one(e.goal, 2000)}`,
        `  image: ${one(e.image)}  started: ${time(e.createdAt)}  finished: ${time(e.finishedAt)}`,
        `  tokens: ${e.tokens}  tool calls: ${e.toolCalls}`,
      ];
      if (e.message !== null) lines.push(`  message: ${one(e.message, 2000)}`);
      if (e.retained) {
        lines.push(
          `  retained since ${time(e.retained.since)}${
            e.retained.removed === null
              ? " (until libos gc removes it)"
              : `; removed by libos gc at ${time(e.retained.removed)}`
          }`,
        );
      }
      if (e.note) lines.push(`  note: ${one(e.note, 1000)}`);
      return lines;
    }
    case "turn": {
      const head = `turn ${e.seq} (${one(e.outcome)}${
        e.tokens === null ? "" : `, ${e.tokens} tokens`
      })`;
      return e.content === null || e.content === ""
        ? [head]
        : [head, "  model:", ...block(e.content)];
    }
    case "tool_call": {
      const call = `  call ${one(e.name)} ${one(JSON.stringify(e.arguments), 2000)}  [${
        one(e.id)
      }]`;
      // A plan also as its checklist, so a reader sees the steps and their status at a glance.
      if (e.name !== PLAN_TOOL) return [call];
      return [call, ...planChecklist(e.arguments).map((l) => `${GUTTER}${l}`)];
    }
    case "tool_result": {
      const status = e.error
        ? `error ${one(e.error.code)}: ${one(e.error.message, 1000)}`
        : e.exitCode !== null
        ? `exit ${e.exitCode}`
        : e.ok === true
        ? "ok"
        : e.ok === false
        ? "failed"
        : "outcome unknown";
      const lines = [`  result of ${one(e.name)}: ${status}`];
      if (e.value !== null) lines.push(`    value: ${one(e.value, 1000)}`);
      if (e.output !== null) lines.push("    output (last lines):", ...block(e.output));
      if (e.note !== null) lines.push(`    note: ${one(e.note, 1000)}`);
      return lines;
    }
    case "diff":
      return [
        `  diff of ${one(e.path, 1000)} (${
          e.source === "approval" ? "as the human was shown it" : "the edit's old and new text"
        }):`,
        ...block(e.diff.replace(/\n$/, "")),
      ];
    case "decision": {
      const who = e.by !== null || e.request !== null
        ? ` — ${e.by === null ? "" : `decided by ${one(e.by)}`}${
          e.request === null ? "" : `${e.by === null ? "" : ", "}request ${one(e.request)}`
        }`
        : "";
      const exit = typeof e.detail?.exitCode === "number" ? ` (exit ${e.detail.exitCode})` : "";
      // A rule's file:line and text, or a run deny's text, when the record kept them (the
      // authority alone names every other layer; `libos why SEQ` has the rest).
      const explained = e.effect !== "none" && e.detail?.explain !== undefined
        ? ` (${explainLine(e)})`
        : "";
      return [
        `  ${e.effect === "none" ? "event:" : `decision: ${one(e.effect)}`} ${one(e.action)} ${
          one(e.resource, 500)
        }${exit} by ${one(e.authority, 500)}${explained}${who}  [#${e.auditSeq}]`,
      ];
    }
    case "checkpoint":
      return [`  checkpoint ${one(e.id)} ${one(e.label)} at ${time(e.at)}`];
    case "files_changed":
      return renderFilesChanged(e);
    case "total":
      return [
        `total: ${e.processes} process(es), ${e.turns} turn(s), ${e.toolCalls} tool call(s), ${e.tokens} tokens`,
      ];
  }
}

/** The whole transcript as escaped text, ending with a newline. */
export function renderTranscript(entries: readonly TranscriptEntry[]): string {
  return entries.flatMap(entryLines).join("\n") + "\n";
}
