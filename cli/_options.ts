/**
 * Command-line parsing shared by every `libos` command: one table of options, the globals every
 * command accepts (`--workspace`, `--db`, `--json`, `--help`), and the I/O a command writes to.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { UsageError } from "../runtime/base/errors.ts";
import type { EnvReader } from "../runtime/base/state_paths.ts";
import type { TerminalIo } from "../runtime/human/tty_prompt.ts";

/** Where a command writes and what it may read of its environment. */
export interface CliIo {
  /** Writes text to standard output (the caller adds newlines). */
  stdout(text: string): void;
  /** Writes text to standard error. */
  stderr(text: string): void;
  readonly env: EnvReader;
  /** The directory relative paths are resolved against. */
  readonly cwd: string;
  /** Reads standard input to its end (`--batch -`); absent where there is none. */
  readonly readStdin?: () => Promise<string>;
  /** The terminal a human answers approvals on (`libos agent`); absent where there is none. */
  readonly terminal?: TerminalIo;
  /** Whether standard error is a terminal: `libos agent` draws its live status line there. */
  readonly stderrIsTerminal?: boolean;
  /** Whether standard output is a terminal: `libos log` pages a long transcript there. */
  readonly stdoutIsTerminal?: boolean;
  /** The terminal's width in columns, when it has one. */
  readonly columns?: () => number | undefined;
  /**
   * Handles Ctrl-C (SIGINT) while the returned registration is held, instead of dying of it:
   * the handler says whether the command dealt with it or the process should exit now (130).
   */
  readonly onInterrupt?: (handler: () => "handled" | "exit") => Disposable;
}

/** Every option any command accepts, with its type. */
export const OPTION_SPECS = {
  workspace: { type: "string" },
  db: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
  reanchor: { type: "boolean" },
  "no-head": { type: "boolean" },
  pid: { type: "string" },
  actor: { type: "string" },
  action: { type: "string" },
  resource: { type: "string" },
  decision: { type: "string" },
  correlation: { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
  after: { type: "string" },
  limit: { type: "string" },
  desc: { type: "boolean" },
  explain: { type: "boolean" },
  seed: { type: "string" },
  goal: { type: "string" },
  image: { type: "string" },
  tool: { type: "string", multiple: true },
  cwd: { type: "string" },
  status: { type: "string", multiple: true },
  all: { type: "boolean" },
  message: { type: "string" },
  result: { type: "string" },
  "max-quanta": { type: "string" },
  mode: { type: "string" },
  deny: { type: "string", multiple: true },
  right: { type: "string", multiple: true },
  effect: { type: "string" },
  once: { type: "boolean" },
  expires: { type: "string" },
  always: { type: "string" },
  remember: { type: "string" },
  reason: { type: "string" },
  namespace: { type: "string" },
  replace: { type: "boolean" },
  admin: { type: "boolean" },
  file: { type: "string" },
  "shell-policy": { type: "string" },
  policy: { type: "string", multiple: true },
  "no-user-config": { type: "boolean" },
  "trust-workspace-policy": { type: "boolean" },
  "mcp-config": { type: "string", multiple: true },
  "trust-workspace-mcp": { type: "boolean" },
  wall: { type: "string" },
  batch: { type: "string" },
  "allow-import": { type: "string", multiple: true },
  args: { type: "string" },
  human: { type: "string" },
  model: { type: "string" },
  "env-file": { type: "string" },
  label: { type: "string" },
  record: { type: "string" },
  resume: { type: "string" },
  preset: { type: "string" },
  yes: { type: "boolean", short: "y" },
  toolchain: { type: "string", multiple: true },
  "allow-host": { type: "string", multiple: true },
  widen: { type: "boolean" },
  quiet: { type: "boolean", short: "q" },
  verbose: { type: "boolean", short: "v" },
  "policy-from": { type: "string" },
  "older-than": { type: "string" },
  "keep-size": { type: "string" },
  "dry-run": { type: "boolean" },
  tree: { type: "boolean" },
  session: { type: "string" },
  against: { type: "boolean" },
  follow: { type: "boolean" },
  kind: { type: "string", multiple: true },
  "approval-wait": { type: "string" },
  name: { type: "string" },
  "lease-ttl": { type: "string" },
  "max-trees": { type: "string" },
  concurrency: { type: "string" },
  "until-idle": { type: "boolean" },
} as const;

/** The name of an option. */
export type OptionName = keyof typeof OPTION_SPECS;

/** The options every command accepts. */
export const GLOBAL_OPTIONS: readonly OptionName[] = ["workspace", "db", "json", "help"];

/** Parsed command line: the command words and the option values. */
export interface ParsedArgs {
  readonly positionals: readonly string[];
  readonly values: { readonly [K in OptionName]?: string | boolean | readonly string[] };
  /** The command's own positional arguments (after the command words). */
  readonly args: readonly string[];
}

/**
 * Parses the command line against {@link OPTION_SPECS}.
 * @throws {UsageError} for an unknown option or a missing value.
 */
export function parseCommandLine(args: readonly string[]): ParsedArgs {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options: OPTION_SPECS,
      allowPositionals: true,
      strict: true,
    });
    return { positionals, values: { ...values }, args: [] };
  } catch (error) {
    throw new UsageError(`${describeParseError(error)}; run "libos --help" for the options`, {
      cause: error,
    });
  }
}

/** Rewrites `node:util` parse errors as one short sentence. */
function describeParseError(error: unknown): string {
  const code = typeof error === "object" && error !== null
    ? (error as { code?: unknown }).code
    : undefined;
  const message = error instanceof Error ? error.message : String(error);
  const option = /'(-{1,2}[^'\s]*)/.exec(message)?.[1];
  switch (code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `Unknown option ${JSON.stringify(option ?? message)}`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE": {
      const name = option?.replace(/^-+/, "").split(/[ ,=]/)[0] ?? "";
      const spec = (OPTION_SPECS as Record<string, { type: string }>)[name];
      if (!spec) return message.replace(/\s+/g, " ").trim();
      return spec.type === "string"
        ? `Option --${name} needs a value`
        : `Option --${name} takes no value`;
    }
    default:
      return message.replace(/\s+/g, " ").trim();
  }
}

/** Whether the raw arguments ask for JSON output (known even when parsing fails). */
export function wantsJson(args: readonly string[]): boolean {
  return args.includes("--json");
}

/** A string option's value, or undefined. */
export function stringOption(parsed: ParsedArgs, name: OptionName): string | undefined {
  const value = parsed.values[name];
  return typeof value === "string" ? value : undefined;
}

/** Every value of a repeatable string option. */
export function listOption(parsed: ParsedArgs, name: OptionName): readonly string[] {
  const value = parsed.values[name];
  return Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
}

/** A boolean option's value. */
export function flagOption(parsed: ParsedArgs, name: OptionName): boolean {
  return parsed.values[name] === true;
}

/**
 * Refuses options the command does not take.
 * @throws {UsageError} naming the first option that does not belong.
 */
export function onlyOptions(
  parsed: ParsedArgs,
  command: string,
  allowed: readonly OptionName[],
): void {
  for (const name of Object.keys(parsed.values) as OptionName[]) {
    if (!GLOBAL_OPTIONS.includes(name) && !allowed.includes(name)) {
      throw new UsageError(
        `"libos ${command}" does not take --${name}; run "libos ${command} --help"`,
      );
    }
  }
}

/**
 * Parses a positive integer option.
 * @throws {UsageError} when the value is not an integer in range.
 */
export function integerOption(
  parsed: ParsedArgs,
  name: OptionName,
  min: number,
  max: number,
): number | undefined {
  const raw = stringOption(parsed, name);
  if (raw === undefined) return undefined;
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new UsageError(
      `--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return Number(raw);
}

/**
 * Parses a time option: ISO 8601 (`2026-11-29`, `2026-11-29T10:00:00Z`) or milliseconds since the epoch.
 * @throws {UsageError} when it is neither.
 */
export function timeOption(parsed: ParsedArgs, name: OptionName): number | undefined {
  const raw = stringOption(parsed, name);
  if (raw === undefined) return undefined;
  const time = /^\d{1,15}$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isFinite(time)) {
    throw new UsageError(
      `--${name} must be an ISO 8601 time such as 2026-11-29T10:00:00Z or milliseconds since the epoch, got ${
        JSON.stringify(raw)
      }`,
    );
  }
  return time;
}

/** One `libos` command. */
export interface Command {
  /** The command words, e.g. `audit verify`. */
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** The full usage text shown by `--help`. */
  readonly usage: string;
  /** Options the command takes beyond the globals. */
  readonly options: readonly OptionName[];
  /** Names of its positional arguments, all required (e.g. `["PID", "SIGNAL"]`). */
  readonly positionals?: readonly string[];
  /** Takes any number of further positional arguments (e.g. the argv after `--`). */
  readonly variadic?: boolean;
  /** Runs the command and returns the exit status. */
  run(parsed: ParsedArgs, io: CliIo): number | Promise<number>;
}
