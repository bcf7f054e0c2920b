/**
 * `terminalPrompt()`: the `interactive` human mode's prompt (DESIGN §4). It shows the rendered
 * request — every value already escaped — on standard error, with the choices and, for "allow
 * always", exactly what each choice would grant, then reads one line from a terminal.
 *
 * Unclear input is asked again (three times at most); a closed terminal or a third unclear
 * answer is a rejection, never an approval.
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";
import { escapePreview } from "../base/escape_preview.ts";
import type { AlwaysOption, HumanDecision, HumanPrompt } from "./human_channel.ts";
import type { HumanRequest } from "./human_request.ts";
import { approvalCard } from "./approval_card.ts";

/** Where the prompt reads and writes (the process's terminal by default). */
export interface TerminalIo {
  /** Reads bytes as `Deno.stdin.read` does: a count, or null at end of input. */
  read(buffer: Uint8Array): Promise<number | null>;
  isTerminal(): boolean;
  write(text: string): void;
}

/** How many unclear answers are asked again before the prompt gives up (a rejection). */
const ATTEMPTS = 3;

function standardIo(): TerminalIo {
  const encoder = new TextEncoder();
  return {
    read: (buffer) => Deno.stdin.read(buffer),
    isTerminal: () => Deno.stdin.isTerminal(),
    write: (text) => {
      const data = encoder.encode(text);
      for (let done = 0; done < data.length;) done += Deno.stderr.writeSync(data.subarray(done));
    },
  };
}

/** A line reader that outlives one question: a read in flight when a card is withdrawn is kept. */
interface LineReader {
  /** The next line, or null at end of input; rejects with the signal's reason when aborted. */
  next(signal?: AbortSignal): Promise<string | null>;
  /** Drops what was typed ahead (an answer counts only if typed after its question); returns it. */
  discard(): string;
}

/** Waits for `promise`, or rejects as soon as `signal` aborts (leaving `promise` running). */
function until<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(signal.reason);
    signal.addEventListener("abort", stop, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", stop);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", stop);
        reject(error);
      },
    );
  });
}

/** Reads lines from `io`, keeping what follows a line — and a read in flight — for the next one. */
function lineReader(io: TerminalIo): LineReader {
  const decoder = new TextDecoder();
  const chunk = new Uint8Array(4096);
  let pending = "";
  let ended = false;
  let reading: Promise<void> | undefined;
  const fill = (): Promise<void> =>
    reading ??= io.read(chunk).then((n) => {
      reading = undefined;
      if (n === null) {
        ended = true;
        pending += decoder.decode();
      } else pending += decoder.decode(chunk.subarray(0, n), { stream: true });
    }, (error) => {
      reading = undefined;
      ended = true;
      throw error;
    });
  return {
    discard() {
      const dropped = pending;
      pending = "";
      return dropped;
    },
    async next(signal) {
      for (;;) {
        const newline = pending.indexOf("\n");
        if (newline >= 0) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          return line.replace(/\r$/, "");
        }
        if (ended) {
          const rest = pending;
          pending = "";
          return rest === "" ? null : rest;
        }
        await until(fill(), signal);
      }
    },
  };
}

function choices(request: HumanRequest, always: readonly AlwaysOption[]): string {
  if (request.kind === "question") return "Type your answer (an empty line declines): ";
  const lines = [
    request.kind === "permission"
      ? "  y  grant this permission      n [REASON]  refuse"
      : "  y  approve this action, once  n [REASON]  reject",
    ...always.map((o, i) =>
      `  ${i + 1}  allow always (${o.scope}): ${escapePreview(o.description, { maxChars: 400 })}`
    ),
  ];
  return `${lines.join("\n")}\n> `;
}

/**
 * What an answer means, "details" for a request to see the whole request, or undefined. `a` (or
 * an option's number) allows always for this run; `p` (or the number and `p`) for this project
 * too, where it can be remembered.
 */
function parse(
  request: HumanRequest,
  answer: string,
  always: readonly AlwaysOption[],
  project: boolean,
): HumanDecision | "details" | undefined {
  if (request.kind === "question") {
    return answer.trim() === ""
      ? { type: "reject", reason: "declined to answer" }
      : { type: "answer", text: answer };
  }
  const text = answer.trim();
  if (/^(?:y|yes)$/i.test(text)) return { type: "approve" };
  const no = /^(?:n|no)(?:\s+(.*))?$/is.exec(text);
  if (no) return { type: "reject", ...(no[1] ? { reason: no[1].slice(0, 4096) } : {}) };
  if (/^(?:d|details|\?)$/i.test(text)) return "details";
  const chosen = /^(?:(a|always)|(p|project)|(\d{1,2})(p?))$/i.exec(text);
  if (!chosen) return undefined;
  const option = chosen[3] !== undefined ? always[Number(chosen[3]) - 1] : always[0];
  const forProject = chosen[2] !== undefined || chosen[4] !== undefined && chosen[4] !== "";
  if (!option || (forProject && !project)) return undefined;
  return {
    type: "approve",
    always: option.scope,
    ...(forProject ? { remember: "project" as const } : {}),
  };
}

/** How the prompt draws its cards. */
export interface TerminalPromptOptions {
  /** ANSI colour on the cards (default false; the CLI turns it on at a terminal without NO_COLOR). */
  readonly color?: boolean;
  /** The terminal's width, when it has one. */
  readonly columns?: () => number | undefined;
}

/**
 * The prompt of the `interactive` human mode, on this process's terminal (or `io`). An approval
 * is shown as its compact card (`approval_card.ts`), the whole request one key (`d`) away; other
 * requests as rendered. An aborted `signal` (the request was decided elsewhere) withdraws the
 * question: `decide` rejects with the signal's reason, and a read in flight serves the next one.
 * @throws {ValidationError} when standard input is not a terminal: use `queue` or `none` then.
 */
export function terminalPrompt(
  io: TerminalIo = standardIo(),
  options: TerminalPromptOptions = {},
): HumanPrompt {
  if (!io.isTerminal()) {
    throw new ValidationError(
      "The interactive human mode needs a terminal on standard input; use --human queue (answer later with libos human) or --human none",
    );
  }
  const lines = lineReader(io);
  const color = options.color ?? false;
  const columns = options.columns;
  return {
    async decide(request, rendered, always, options = {}) {
      const { signal } = options;
      const project = options.project === true;
      const dropped = lines.discard();
      if (dropped.trim() !== "") {
        io.write(
          `\n(what was typed before this request was shown is not an answer to it: ${
            escapePreview(dropped.trim(), { maxChars: 80 })
          })\n`,
        );
      }
      const card = approvalCard(request, {
        color,
        always,
        project,
        columns: columns?.() ?? 100,
      });
      const details = () =>
        `\n${rendered}${
          always.length
            ? `\n\nAllow always in this run (a, or its number)${
              project ? "; in every later run of this workspace too (p, or the number and p)" : ""
            }:\n${
              always.map((o, i) =>
                `  ${i + 1}  ${o.scope}: ${escapePreview(o.description, { maxChars: 400 })}`
              ).join("\n")
            }`
            : ""
        }\n\n`;
      const ask = card.length > 0 ? () => "> " : () => choices(request, always);
      io.write(card.length > 0 ? `\n${card.join("\n")}\n` : `\n${rendered}\n\n`);
      for (let attempt = 1; attempt <= ATTEMPTS;) {
        io.write(ask());
        const answer = await lines.next(signal);
        if (answer === null) return { type: "reject", reason: "the terminal closed" };
        const decision = parse(request, answer, always, project);
        if (decision === "details") {
          io.write(details());
          if (card.length > 0) io.write(`${card.at(-1)}\n`);
          continue;
        }
        if (decision) return decision;
        attempt++;
        io.write(
          card.length > 0
            ? `Please answer y, n${always.length ? ", a" : ""}${
              always.length && project ? ", p" : ""
            } or d (details).\n`
            : `Please answer y or n${always.length ? ` or 1-${always.length}` : ""}.\n`,
        );
      }
      return { type: "reject", reason: `no clear answer after ${ATTEMPTS} attempts` };
    },
    notify(_request, rendered) {
      io.write(`\n${rendered}\n`);
    },
  };
}
