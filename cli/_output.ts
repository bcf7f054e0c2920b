/**
 * How commands print: JSON documents on stdout under `--json`, readable lines otherwise, and every
 * untrusted field (resources, actors, messages) escaped before it reaches a terminal.
 *
 * @module
 */
import { type ErrorInfo, errorInfo, UsageError } from "../runtime/base/errors.ts";
import { escapePreview } from "../runtime/base/escape_preview.ts";
import { type CliIo, flagOption, type ParsedArgs } from "./_options.ts";

/** Exit status: success. */
export const EXIT_OK = 0;
/** Exit status: refused or failed. */
export const EXIT_FAILED = 1;
/** Exit status: the command line could not be understood. */
export const EXIT_USAGE = 2;

/** Writes one JSON document and a newline to stdout. */
export function printJson(io: CliIo, document: unknown): void {
  io.stdout(JSON.stringify(document) + "\n");
}

/**
 * Prints a command's result: `{db, ...document}` under `--json`, `text` otherwise; returns
 * {@link EXIT_OK}.
 */
export function say(
  io: CliIo,
  parsed: ParsedArgs,
  db: string,
  document: Record<string, unknown>,
  text: string,
): number {
  if (flagOption(parsed, "json")) printJson(io, { db, ...document });
  else io.stdout(text + "\n");
  return EXIT_OK;
}

/**
 * Lines of a table whose columns line up: each column as wide as its widest cell (header
 * included), two spaces between columns, the last column left ragged and trailing spaces cut.
 * Cells are one line each, already escaped ({@link field}); `right` columns align right
 * (numbers). Widths count code points.
 */
export function table(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  options: { readonly right?: readonly number[] } = {},
): string[] {
  const width = (text: string) => [...text].length;
  const widths = header.map((h, i) =>
    Math.max(width(h), ...rows.map((row) => width(row[i] ?? "")))
  );
  const line = (cells: readonly string[]) =>
    cells.map((cell, i) => {
      if (i === cells.length - 1) return cell;
      const pad = " ".repeat(Math.max(0, widths[i]! - width(cell)));
      return options.right?.includes(i) ? pad + cell : cell + pad;
    }).join("  ").trimEnd();
  return [line(header), ...rows.map(line)];
}

/** Escapes one untrusted value for a single terminal line. */
export function field(value: string | number | null | undefined, maxChars = 200): string {
  if (value === null || value === undefined) return "-";
  return escapePreview(String(value), { maxChars });
}

/**
 * Reports an error: `{"error":{"code","message"}}` on stdout under `--json`, one escaped line on
 * stderr otherwise. Returns the exit status (2 for usage errors, 1 for the rest).
 */
export function reportError(
  io: CliIo,
  error: unknown,
  json: boolean,
  extra: { readonly db?: string } = {},
): number {
  const info: ErrorInfo = errorInfo(error);
  if (json) {
    printJson(io, { ...(extra.db === undefined ? {} : { db: extra.db }), error: info });
  } else {
    io.stderr(`libos: ${field(info.message, 2000)}\n`);
  }
  return error instanceof UsageError ? EXIT_USAGE : EXIT_FAILED;
}
