/**
 * `approvalCard(request, options)`: the compact card a human decides an approval from at a
 * terminal — at most {@link CARD_LINES} lines in the common case (a command or an edit), the full
 * request (`renderApprovalRequest`) one key away.
 *
 * ```text
 * ⚑ Approve? · process p-2 · request r-9
 *   $ git push origin main
 *   asked by: the shell policy — no rule or grant allows this command (shell-policy:allowlist_auto_else_ask)
 *   the model says: «publish the fix»
 *   a = allow exactly this command from now on
 *   y yes, once · n [reason] no · a always · d details
 * ```
 *
 * Every value an agent could have written (a path, an argument, a diff line, the model's stated
 * reason) goes through `escapePreview` before any colour is added, so only libos's own codes
 * reach the terminal; a command is shown shell-quoted, so no argument can pass for two.
 *
 * @module
 */
import { escapePreview } from "../base/escape_preview.ts";
import type { AlwaysOption } from "./_request_book.ts";
import type { ApprovalDetails, HumanRequest } from "./human_request.ts";

/** The most lines a card takes in the common case (header, subject, a few diff lines, the
 * reasons, the choices). */
export const CARD_LINES = 8;

/** How the card is drawn. */
export interface CardOptions {
  /** ANSI colour (a terminal, and `NO_COLOR` unset). */
  readonly color: boolean;
  /** The "allow always" choices, the first of which `a` picks. */
  readonly always: readonly AlwaysOption[];
  /** Whether `p` (allow always, remembered for the project) is offered too. */
  readonly project?: boolean;
  /** The terminal's width (default 100): long lines are cut with `…`. */
  readonly columns?: number;
}

const STYLE = Object.freeze({
  bold: ["\x1b[1m", "\x1b[22m"],
  dim: ["\x1b[2m", "\x1b[22m"],
  yellow: ["\x1b[33m", "\x1b[39m"],
  red: ["\x1b[31m", "\x1b[39m"],
  green: ["\x1b[32m", "\x1b[39m"],
  cyan: ["\x1b[36m", "\x1b[39m"],
});

type Style = keyof typeof STYLE;

/** Paints already-escaped text (a no-op without colour). */
function painter(color: boolean): (style: Style, text: string) => string {
  return (style, text) => color ? `${STYLE[style][0]}${text}${STYLE[style][1]}` : text;
}

/** One argument as a POSIX shell would need it written: bare when safe, else single-quoted. */
export function shellQuote(arg: string): string {
  if (arg !== "" && /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg)) return arg;
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** An argv as one unambiguous line (escaped: nothing in it can move the cursor). */
export function commandLine(argv: readonly string[], maxChars = 400): string {
  return escapePreview(argv.map(shellQuote).join(" "), { maxChars });
}

/**
 * Why `decide()` asked, in words, with the layer's own token kept for reference; for a policy
 * rule whose source is known (`rule`, from the approval details), its file and line instead of
 * its number in the file — the file's tail when the path is long, so the line stays on the card.
 */
export function whyItAsks(
  reason: string,
  ceiling?: string | null,
  rule?: { readonly source: string; readonly line: number } | null,
): string {
  const said = (token: string): string => {
    const [layer, ...rest] = token.split(":");
    const detail = rest.join(":");
    switch (layer) {
      case "protected":
        return `a protected path (${detail})`;
      case "mode":
        return `the mode ${detail}`;
      case "rule": {
        if (!rule || token !== reason) return `a policy rule (${detail})`;
        const file = rule.source.length <= 120 ? rule.source : `…${rule.source.slice(-119)}`;
        return `a policy rule (${file}:${rule.line})`;
      }
      case "cap":
        return `the grant ${detail}`;
      case "run":
        return `a run deny (${detail})`;
      case "shell-policy":
        return detail === "allowlist_auto_else_ask"
          ? "the shell policy: no rule or grant allows this command"
          : `the shell policy ${detail}`;
      case "inline_code":
      case "workspace_code":
      case "opaque":
      case "git_config":
      case "wrapper":
      case "open_ended":
        return `the shell policy: ${layer.replace("_", " ")} — ${detail.trim()}`;
      default:
        return token;
    }
  };
  const shown = said(reason);
  const extra = ceiling && ceiling !== reason ? `; ${said(ceiling)}` : "";
  return `${shown}${extra}`;
}

/** The `+`/`-` lines of a unified diff (headers and context left out), and their counts. */
function changedLines(diff: string): { lines: string[]; added: number; removed: number } {
  const lines: string[] = [];
  let added = 0;
  let removed = 0;
  for (const line of diff.split("\n")) {
    if (line.startsWith("+++") || line.startsWith("---")) continue;
    if (line.startsWith("+")) added++;
    else if (line.startsWith("-")) removed++;
    else continue;
    lines.push(line);
  }
  return { lines, added, removed };
}

/** What the action is on, in one line: the command, or the operation and its path. */
function subject(a: ApprovalDetails): string {
  if (a.argv !== null && a.argv.length > 0) return `$ ${commandLine(a.argv, 4000)}`;
  const target = escapePreview(a.path ?? a.resource, { maxChars: 300 });
  const facts: string[] = [];
  if (a.willCreate === true) facts.push("new file");
  else if (a.target?.exists && a.target.type) facts.push(a.target.type);
  if (a.bytes !== null) facts.push(`${a.bytes} bytes`);
  if (a.target?.links !== null && a.target?.links !== undefined && a.target.links > 1) {
    facts.push(`${a.target.links} hard links`);
  }
  return `${escapePreview(a.operation, { maxChars: 64 })} ${target}${
    facts.length ? ` (${facts.join(", ")})` : ""
  }`;
}

/** Cuts a line to the terminal's width; escapes were already made (no sequence is split). */
function fit(line: string, columns: number): string {
  const chars = [...line];
  return chars.length > columns ? chars.slice(0, columns - 1).join("") + "…" : line;
}

/** The choices line of an approval card (what `a` grants is on the line above it). */
export function cardChoices(options: CardOptions): string {
  const paint = painter(options.color);
  const key = (k: string) => paint("bold", k);
  return [
    `${key("y")} yes, once`,
    `${key("n")} [reason] no`,
    ...(options.always.length > 0 ? [`${key("a")} always`] : []),
    ...(options.always.length > 0 && options.project
      ? [`${key("p")} always, and in later runs here`]
      : []),
    `${key("d")} details`,
  ].join(" · ");
}

/**
 * The compact card of an approval request (see the module documentation): lines of text, every
 * untrusted value escaped. Only content (a diff, a new file's lines) is cut to the terminal's
 * width; what is being approved — the command, the path, who asked — is never cut (a long line
 * wraps). Requests of other kinds have no card (their full rendering is short).
 */
export function approvalCard(request: HumanRequest, options: CardOptions): string[] {
  const a = request.approval;
  if (request.kind !== "approval" || !a) return [];
  const paint = painter(options.color);
  const columns = Math.max(40, options.columns ?? 100);
  const header = `⚑ Approve? · process ${escapePreview(request.pid, { maxChars: 64 })} · request ${
    escapePreview(request.id, { maxChars: 64 })
  }`;
  const lines = [paint("bold", paint("yellow", header))];
  const changes = a.diff !== null ? changedLines(a.diff) : undefined;
  const head = subject(a) +
    (changes
      ? ` ${paint("green", `+${changes.added}`)} ${paint("red", `−${changes.removed}`)}`
      : "");
  lines.push(`  ${head}`);
  const tail: string[] = [
    `  ${
      paint(
        "dim",
        `asked by: ${escapePreview(whyItAsks(a.reason, a.ceiling, a.rule), { maxChars: 300 })}`,
      )
    }`,
  ];
  if (a.justification) {
    const said = escapePreview(a.justification, { maxChars: 300 });
    tail.push(`  the model says: «${paint("cyan", said)}»`);
  }
  const first = options.always[0];
  if (first) {
    tail.push(`  ${paint("bold", "a")} = ${escapePreview(first.description, { maxChars: 400 })}`);
  }
  tail.push(`  ${cardChoices(options)}`);
  // The diff gets what the other lines leave of the card (at least two lines, and the rest is
  // one key away).
  if (changes && changes.lines.length > 0) {
    const room = Math.max(2, CARD_LINES - lines.length - tail.length - 1);
    const shown = changes.lines.length <= room + 1 ? changes.lines : changes.lines.slice(0, room);
    for (const line of shown) {
      const text = fit(`│ ${escapePreview(line, { maxChars: 300 })}`, columns - 2);
      lines.push(`  ${line.startsWith("+") ? paint("green", text) : paint("red", text)}`);
    }
    if (shown.length < changes.lines.length) {
      lines.push(
        `  ${
          paint(
            "dim",
            `│ … ${
              changes.lines.length - shown.length
            } more changed lines (d shows the whole diff)`,
          )
        }`,
      );
    }
  } else if (a.diff === null && a.preview !== null && a.argv === null && a.willCreate === true) {
    const first = a.preview.split("\n").filter((l) => l.trim() !== "");
    const room = Math.max(1, CARD_LINES - lines.length - tail.length - 1);
    for (const line of first.slice(0, room)) {
      lines.push(
        `  ${paint("green", fit(`│ +${escapePreview(line, { maxChars: 300 })}`, columns - 2))}`,
      );
    }
    if (first.length > room) {
      lines.push(
        `  ${paint("dim", `│ … ${first.length - room} more lines (d shows the content)`)}`,
      );
    }
  }
  return [...lines, ...tail];
}
