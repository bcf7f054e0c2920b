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
import type { AlwaysOption, HumanDecision } from "../runtime/human/human_channel.ts";
import type { ApprovalDetails, HumanRequest } from "../runtime/human/human_request.ts";
import { terminalPrompt } from "../runtime/human/tty_prompt.ts";
import type { CliIo } from "./_options.ts";
import { field } from "./_output.ts";

/** Where the launcher reports progress. */
export interface Progress extends Disposable {
  /** A turn began or a tool is called. */
  step(event: ExecutorEvent): void;
  /** A line that stays (a message from a process, an automatic approval). */
  note(text: string): void;
  /** Removes the status line and keeps it away while `during` runs (a prompt). */
  hold<T>(during: () => Promise<T>): Promise<T>;
  /** Stops the status line for good (before the final report); disposing does the same. */
  stop(): void;
}

const CLEAR_LINE = "\r\x1b[2K";

/**
 * The launcher's progress display: a status line redrawn on stderr every second when it is a
 * terminal, plain lines on stderr otherwise, nothing under `quiet` (`--json`) but notes.
 */
export function progress(io: CliIo, options: { readonly quiet: boolean }): Progress {
  const started = Date.now();
  const live = io.stderrIsTerminal === true && !options.quiet;
  let current = "starting";
  let drawn = false;
  let held = false;
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
  return {
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
      if (event.kind === "result") {
        // Failures and commands' exit codes are shown as they happen; what succeeded is not.
        const said = outcomeLine(event);
        if (said !== undefined && !options.quiet) note(said);
        return;
      }
      current = event.kind === "model"
        ? `${event.pid} · turn ${event.seq} · thinking`
        : `${event.pid} · turn ${event.seq} · ${field(event.name, 64)}`;
      if (live) draw();
      else if (!options.quiet) io.stderr(`[${current}]\n`);
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

/** The line a tool call's outcome is shown as, when it is shown: a failure, or a command's exit. */
function outcomeLine(event: Extract<ExecutorEvent, { kind: "result" }>): string | undefined {
  const who = `${event.pid} · turn ${event.seq} · ${field(event.name, 64)}`;
  if (event.error !== undefined) {
    return `  ✗ ${who}: ${field(event.error.code, 64)} — ${field(event.error.message, 300)}`;
  }
  if (event.exitCode === undefined) return undefined;
  return event.exitCode === 0
    ? `  ✓ ${who}: exit 0`
    : `  ✗ ${who}: exit ${event.exitCode === null ? "(killed by a signal)" : event.exitCode}`;
}

/** Who answers a request a process is parked on. */
export interface LauncherHuman {
  readonly name: "interactive" | "yes";
  decide(request: HumanRequest, always: readonly AlwaysOption[]): Promise<HumanDecision>;
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
  const prompt = terminalPrompt(io.terminal);
  return {
    name: "interactive",
    decide: (request, always) => prompt.decide(request, renderApprovalRequest(request), always),
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
