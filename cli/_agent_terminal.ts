/**
 * What `libos agent` shows while it runs: a live status line on a terminal (the current process,
 * turn and tool, and the time since the run began), or one plain line per step elsewhere; and
 * the human who answers a parked request — at the terminal, or `--yes`.
 *
 * @module
 */
import { renderApprovalRequest } from "../runtime/human/approval_render.ts";
import { UsageError } from "../runtime/base/errors.ts";
import type { ExecutorEvent } from "../runtime/model/executor.ts";
import type { AlwaysOption, HumanDecision, PromptOptions } from "../runtime/human/human_channel.ts";
import type { ApprovalDetails, HumanRequest } from "../runtime/human/human_request.ts";
import { terminalPrompt } from "../runtime/human/tty_prompt.ts";
import { commandLine } from "../runtime/human/approval_card.ts";
import { escapePreview } from "../runtime/base/escape_preview.ts";
import type { FileChange } from "../runtime/primitives/filesystem.ts";
import type { CliIo } from "./_options.ts";
import { field } from "./_output.ts";
import { PLAN_TOOL, planChecklist } from "../runtime/model/plan_checklist.ts";

/** Where the launcher reports progress. */
export interface Progress extends Disposable {
  /** A turn began, the model answered, a tool is called or gave its outcome. */
  step(event: ExecutorEvent): void;
  /** A file a process wrote or deleted (its diff is shown unless the display is quiet). */
  change(change: FileChange): void;
  /** A line that stays (a message from a process, an automatic approval). */
  note(text: string): void;
  /** Removes the status line and keeps it away while `during` runs (a prompt). */
  hold<T>(during: () => Promise<T>): Promise<T>;
  /** Stops the status line for good (before the final report); disposing does the same. */
  stop(): void;
  /** The tokens the run's turns were charged so far, and their cost when the endpoint said. */
  readonly spent: { readonly tokens: number; readonly cost: number | null };
}

/**
 * How much of a run is shown: `quiet` the status line, failures and what must be checked;
 * `normal` also the model's text, every tool call and its outcome, every file change's diff and
 * each turn's tokens, each cut to a few lines; `verbose` all of it uncut (to a bound).
 */
export type Verbosity = "quiet" | "normal" | "verbose";

/** How many lines of each kind of block a verbosity shows. */
const SHOWN: Readonly<Record<Verbosity, { text: number; tail: number; diff: number }>> = Object
  .freeze({
    quiet: { text: 0, tail: 0, diff: 0 },
    normal: { text: 6, tail: 5, diff: 12 },
    verbose: { text: 200, tail: 40, diff: 400 },
  });

const CLEAR_LINE = "\r\x1b[2K";
/** The gutter of a block shown under a line (model text, output, a diff). */
const BLOCK = "      │ ";

/** Lines of untrusted text under a gutter, at most `max` of them (the last ones with `fromEnd`). */
function blockLines(text: string, max: number, fromEnd = false): string[] {
  if (max <= 0) return [];
  const all = escapePreview(text.replace(/\s+$/, ""), { multiline: true, maxChars: 64_000 })
    .split("\n");
  // An output's tail: its blank lines say nothing.
  const lines = fromEnd ? all.filter((l) => l.trim() !== "") : all;
  const shown = fromEnd ? lines.slice(-max) : lines.slice(0, max);
  const out = shown.map((l) => `${BLOCK}${l.length > 300 ? l.slice(0, 299) + "…" : l}`);
  if (lines.length > max) {
    const more = `${BLOCK}… ${lines.length - max} more line${lines.length - max === 1 ? "" : "s"}${
      fromEnd ? " above" : ""
    } (--verbose shows more; libos log shows all)`;
    if (fromEnd) out.unshift(more);
    else out.push(more);
  }
  return out;
}

/** The argument that says what a tool call does, shown beside its name (escaped). */
export function keyArgument(args: unknown): string {
  if (typeof args !== "object" || args === null || Array.isArray(args)) return "";
  const a = args as Record<string, unknown>;
  if (Array.isArray(a.argv) && a.argv.every((t) => typeof t === "string")) {
    return `$ ${commandLine(a.argv as string[], 200)}`;
  }
  for (const key of ["command", "path", "url", "pattern", "glob", "name", "goal", "query", "key"]) {
    const value = a[key];
    if (typeof value === "string" && value !== "") return field(value, 200);
  }
  return "";
}

/** "1,234". */
function count(n: number): string {
  return n.toLocaleString("en-US");
}

/**
 * The launcher's progress display: a status line redrawn on stderr every second when it is a
 * terminal, and above it (or alone, elsewhere) one line per step as `verbosity` says; nothing
 * under `quiet` (`--json`) but notes and what was cut off. Everything a process or its model
 * wrote is escaped.
 */
export function progress(
  io: CliIo,
  options: { readonly quiet: boolean; readonly verbosity?: Verbosity },
): Progress {
  const started = Date.now();
  const live = io.stderrIsTerminal === true && !options.quiet;
  const verbosity: Verbosity = options.quiet ? "quiet" : options.verbosity ?? "normal";
  const shown = SHOWN[verbosity];
  const paint = colorful(io) && !options.quiet ? painter() : (_: Paint, t: string) => t;
  let current = "starting";
  let drawn = false;
  let held = false;
  let tokens = 0;
  let cost: number | null = null;
  const draw = () => {
    if (held) return;
    const seconds = Math.round((Date.now() - started) / 1000);
    const columns = io.columns?.();
    const width = Math.max(20, (columns && columns > 0 ? columns : 80) - 1);
    const text = `libos ▸ ${current} · ${seconds}s`;
    io.stderr(CLEAR_LINE + (text.length > width ? text.slice(0, width - 1) + "…" : text));
    drawn = true;
  };
  const timer = live ? setInterval(draw, 1000) : undefined;
  const stop = () => {
    if (timer !== undefined) clearInterval(timer);
    clear();
  };
  const clear = () => {
    if (drawn) io.stderr(CLEAR_LINE);
    drawn = false;
  };
  const note = (text: string) => {
    clear();
    io.stderr(text.endsWith("\n") ? text : text + "\n");
    if (live) draw();
  };
  const lines = (out: readonly string[]) => {
    if (out.length > 0) note(out.join("\n"));
  };
  return {
    get spent() {
      return { tokens, cost };
    },
    step(event) {
      if (event.kind === "cut_off") {
        // Said whether or not the run is quiet: the user must check this effect.
        note(
          `  ⚠ ${event.pid}: ${field(event.action, 64)} ${
            field(event.what, 200)
          } was cut off when the run stopped (${
            field(event.code, 64)
          }: whether it took effect is unknown; it was not run again — check it)`,
        );
        return;
      }
      if (event.kind === "reply") {
        tokens += event.tokens;
        if (event.usage?.cost !== undefined) cost = (cost ?? 0) + event.usage.cost;
        if (options.quiet || verbosity === "quiet") return;
        const text = event.content?.trim() ?? "";
        const spentNow = event.usage
          ? `${count(event.usage.promptTokens)} in, ${count(event.usage.completionTokens)} out${
            event.usage.cost === undefined ? "" : `, $${event.usage.cost.toFixed(4)}`
          }`
          : `~${count(event.tokens)} estimated`;
        lines([
          paint(
            "dim",
            `  · ${event.pid} · turn ${event.seq} · tokens ${spentNow} · run total ${
              count(tokens)
            }${cost === null ? "" : ` ($${cost.toFixed(4)})`}`,
          ),
          ...(text === "" ? [] : [`  ● ${event.pid} says:`, ...blockLines(text, shown.text)]),
        ]);
        return;
      }
      if (event.kind === "result") {
        // Failures always; a command's exit and the tail of its output unless quiet.
        const out = outcomeLines(event, verbosity, paint);
        if (out.length > 0 && !options.quiet) lines(out);
        return;
      }
      current = event.kind === "model"
        ? `${event.pid} · turn ${event.seq} · thinking`
        : `${event.pid} · turn ${event.seq} · ${field(event.name, 64)}`;
      if (event.kind === "tool" && !options.quiet && verbosity !== "quiet") {
        const key = keyArgument(event.args);
        clear();
        io.stderr(
          `  → ${event.pid} · turn ${event.seq} · ${paint("bold", field(event.name, 64))}${
            key ? ` ${key}` : ""
          }\n`,
        );
        // A plan is shown as its checklist (each step escaped), whole: it is short by design.
        if (event.name === PLAN_TOOL) {
          for (const line of planChecklist(event.args)) io.stderr(`${BLOCK}${line}\n`);
        }
      }
      if (live) draw();
    },
    change(change) {
      if (options.quiet || verbosity === "quiet") return;
      const added = change.diff?.split("\n").filter((l) => /^\+(?!\+\+)/.test(l)).length ?? 0;
      const removed = change.diff?.split("\n").filter((l) => /^-(?!--)/.test(l)).length ?? 0;
      const what = change.op === "delete"
        ? "deleted"
        : change.op === "create"
        ? `created (+${added})`
        : `edited ${paint("green", `+${added}`)} ${paint("red", `−${removed}`)}`;
      const body = change.diff === null
        ? change.op === "delete" ? [] : [`${BLOCK}(diff not shown: a secret, or not small text)`]
        : blockLines(
          change.diff.split("\n").filter((l) => !l.startsWith("---") && !l.startsWith("+++"))
            .join("\n"),
          shown.diff,
        ).map((l) =>
          l.startsWith(`${BLOCK}+`)
            ? paint("green", l)
            : l.startsWith(`${BLOCK}-`)
            ? paint("red", l)
            : l
        );
      lines([`  ✎ ${change.pid} · ${field(change.path, 300)} ${what}`, ...body]);
    },
    note,
    async hold(during) {
      clear();
      held = true;
      try {
        return await during();
      } finally {
        held = false;
      }
    },
    stop,
    [Symbol.dispose]: stop,
  };
}

type Paint = "bold" | "dim" | "green" | "red";

/** ANSI paint for the launcher's own lines (what they quote is escaped before). */
function painter(): (style: Paint, text: string) => string {
  const codes: Record<Paint, [string, string]> = {
    bold: ["\x1b[1m", "\x1b[22m"],
    dim: ["\x1b[2m", "\x1b[22m"],
    green: ["\x1b[32m", "\x1b[39m"],
    red: ["\x1b[31m", "\x1b[39m"],
  };
  return (style, text) => `${codes[style][0]}${text}${codes[style][1]}`;
}

/** The lines a tool call's outcome is shown as: a failure, or a command's exit and output tail. */
function outcomeLines(
  event: Extract<ExecutorEvent, { kind: "result" }>,
  verbosity: Verbosity,
  paint: (style: Paint, text: string) => string,
): string[] {
  const who = `${event.pid} · turn ${event.seq} · ${field(event.name, 64)}`;
  if (event.error !== undefined) {
    return [
      paint(
        "red",
        `  ✗ ${who}: ${field(event.error.code, 64)} — ${field(event.error.message, 300)}`,
      ),
    ];
  }
  if (event.exitCode === undefined) return [];
  const failed = event.exitCode !== 0;
  const head = failed
    ? paint(
      "red",
      `  ✗ ${who}: exit ${event.exitCode === null ? "(killed by a signal)" : event.exitCode}`,
    )
    : `  ✓ ${who}: exit 0`;
  if (verbosity === "quiet") return failed ? [head] : [];
  const tail = event.tail === undefined
    ? []
    : blockLines(event.tail, failed || verbosity === "verbose" ? SHOWN[verbosity].tail : 2, true);
  return [head, ...tail];
}

/** Who answers a request a process is parked on. */
export interface LauncherHuman {
  readonly name: "interactive" | "yes";
  /**
   * The decision on `request`; rejects with the signal's reason when `signal` aborts (the request
   * was decided elsewhere, and the question is withdrawn).
   */
  decide(
    request: HumanRequest,
    always: readonly AlwaysOption[],
    options?: PromptOptions,
  ): Promise<HumanDecision>;
}

/** Whether the launcher may colour what it writes to standard error. */
export function colorful(io: CliIo): boolean {
  return io.stderrIsTerminal === true && (io.env.get("NO_COLOR") ?? "") === "";
}

/**
 * The human at the terminal: the request rendered (every value escaped, the diff shown), the
 * choices, one line read from standard input.
 * @throws {UsageError} when standard input is not a terminal.
 */
export function terminalHuman(io: CliIo): LauncherHuman {
  if (!io.terminal?.isTerminal()) {
    throw new UsageError(
      "--human interactive needs a terminal on standard input; use --human queue (answer later with libos human, then --resume), --human none or --yes",
    );
  }
  const prompt = terminalPrompt(io.terminal, {
    color: colorful(io),
    ...(io.columns ? { columns: io.columns } : {}),
  });
  return {
    name: "interactive",
    decide: (request, always, options) =>
      prompt.decide(request, renderApprovalRequest(request), always, options),
  };
}

/** Whether a protected path (DESIGN §3) is why the action asks. */
function isProtected(a: ApprovalDetails): boolean {
  return a.reason.startsWith("protected:") || (a.ceiling ?? "").startsWith("protected:");
}

/**
 * `--yes`: approves each action exactly as requested, once (never "allow always"); refuses what
 * a protected path guards (reading a secret, writing .git), standing permissions and questions,
 * which need a person.
 */
export function yesHuman(note: (text: string) => void): LauncherHuman {
  return {
    name: "yes",
    decide(request) {
      const a = request.approval;
      if (request.kind === "approval" && a && isProtected(a)) {
        const reason =
          "--yes does not approve what a protected path guards (secrets, .git, libos's own files); run in a terminal or with --human queue";
        note(
          `libos: --yes refused ${field(a.operation, 40)} ${
            field(a.path ?? a.resource, 200)
          } (request ${request.id}): ${field(a.ceiling ?? a.reason, 200)}`,
        );
        return Promise.resolve({ type: "reject", reason });
      }
      if (request.kind === "approval" && a) {
        note(
          `libos: --yes approved ${field(a.operation, 40)} ${
            field(a.path ?? a.resource, 200)
          } (request ${request.id}, once)`,
        );
        return Promise.resolve({ type: "approve" });
      }
      const reason = request.kind === "question"
        ? "--yes answers no questions; run in a terminal or with --human queue"
        : "--yes grants no standing permission; run in a terminal or with --human queue";
      note(`libos: --yes refused request ${request.id} (${request.kind}): ${reason}`);
      return Promise.resolve({ type: "reject", reason });
    },
  };
}
