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

/** Reads lines from `io`, keeping what follows a line for the next read. */
function lineReader(
  io: TerminalIo,
): { next(): Promise<string | null>; discard(): void } {
  const decoder = new TextDecoder();
  let pending = "";
  let ended = false;
  return {
    /** Drops what was typed ahead: an answer counts only if typed after its question. */
    discard() {
      pending = "";
    },
    next: async () => {
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
        const buffer = new Uint8Array(4096);
        const n = await io.read(buffer);
        if (n === null) {
          ended = true;
          pending += decoder.decode();
        } else pending += decoder.decode(buffer.subarray(0, n), { stream: true });
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

/** What an answer means, or undefined when it is unclear. */
function parse(
  request: HumanRequest,
  answer: string,
  always: readonly AlwaysOption[],
): HumanDecision | undefined {
  if (request.kind === "question") {
    return answer.trim() === ""
      ? { type: "reject", reason: "declined to answer" }
      : { type: "answer", text: answer };
  }
  const text = answer.trim();
  if (/^(?:y|yes)$/i.test(text)) return { type: "approve" };
  const no = /^(?:n|no)(?:\s+(.*))?$/is.exec(text);
  if (no) return { type: "reject", ...(no[1] ? { reason: no[1].slice(0, 4096) } : {}) };
  const index = /^\d{1,2}$/.test(text) ? Number(text) - 1 : -1;
  const option = always[index];
  return option ? { type: "approve", always: option.scope } : undefined;
}

/**
 * The prompt of the `interactive` human mode, on this process's terminal (or `io`).
 * @throws {ValidationError} when standard input is not a terminal: use `queue` or `none` then.
 */
export function terminalPrompt(io: TerminalIo = standardIo()): HumanPrompt {
  if (!io.isTerminal()) {
    throw new ValidationError(
      "The interactive human mode needs a terminal on standard input; use --human queue (answer later with libos human) or --human none",
    );
  }
  const lines = lineReader(io);
  return {
    async decide(request, rendered, always) {
      lines.discard();
      io.write(`\n${rendered}\n\n`);
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        io.write(choices(request, always));
        const answer = await lines.next();
        if (answer === null) return { type: "reject", reason: "the terminal closed" };
        const decision = parse(request, answer, always);
        if (decision) return decision;
        io.write(
          `Please answer y or n${always.length ? ` or 1-${always.length}` : ""}.\n`,
        );
      }
      return { type: "reject", reason: `no clear answer after ${ATTEMPTS} attempts` };
    },
    notify(_request, rendered) {
      io.write(`\n${rendered}\n`);
    },
  };
}
