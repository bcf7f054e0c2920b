/**
 * A process's plan (`update_plan`'s arguments) as a compact checklist, for the run display and
 * the transcript: one line per step, its status as a mark, every step's text escaped.
 *
 * ```text
 * ✔ Reproduce the failing test
 * ▸ Fix the parser
 * □ Run the whole suite
 * ```
 *
 * @module
 */
import { escapePreview } from "../base/escape_preview.ts";

/** The tool whose calls carry a plan. */
export const PLAN_TOOL = "update_plan";

const MARKS: Readonly<Record<string, string>> = Object.freeze({
  completed: "✔",
  in_progress: "▸",
  pending: "□",
});

/** The most steps shown (a longer plan ends with a count of the rest). */
const SHOWN_MAX = 30;

/**
 * The checklist lines of a plan tool call's arguments (`plan` or `todos`, items with `step` or
 * `content` and a `status`), or an empty list when they hold no plan. Untrusted text is escaped.
 */
export function planChecklist(args: unknown): string[] {
  if (typeof args !== "object" || args === null || Array.isArray(args)) return [];
  const a = args as Record<string, unknown>;
  const items = Array.isArray(a.plan) ? a.plan : Array.isArray(a.todos) ? a.todos : undefined;
  if (!items) return [];
  const lines: string[] = [];
  for (const item of items.slice(0, SHOWN_MAX)) {
    if (typeof item !== "object" || item === null) continue;
    const i = item as Record<string, unknown>;
    const text = typeof i.step === "string"
      ? i.step
      : typeof i.content === "string"
      ? i.content
      : "";
    const mark = typeof i.status === "string" ? MARKS[i.status] ?? "?" : "?";
    lines.push(`${mark} ${escapePreview(text, { maxChars: 200 })}`);
  }
  if (items.length > SHOWN_MAX) lines.push(`… ${items.length - SHOWN_MAX} more steps`);
  return lines;
}
