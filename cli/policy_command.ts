/**
 * `libos policy check`: what the policy would decide for a command — every nested command it
 * would run, and the strictest answer — with no process and so no capability layer.
 *
 * @module
 */
import { resolve } from "node:path";
import { type ErrorInfo, errorInfo, UsageError, ValidationError } from "../runtime/base/errors.ts";
import { parseRunDeny, type RunDeny } from "../runtime/authority/decide.ts";
import { type ModeName, parseMode } from "../runtime/authority/modes.ts";
import type { PolicyRules } from "../runtime/policy/policy_rules.ts";
import { ShellParser } from "../runtime/policy/shell_script.ts";
import { ProgramTable } from "../runtime/policy/shell_programs.ts";
import {
  decideShell,
  SHELL_HARD_CAP,
  type ShellDecision,
  ShellPolicyLevel,
} from "../runtime/policy/shell_policy.ts";
import {
  type CliIo,
  type Command,
  flagOption,
  listOption,
  type ParsedArgs,
  stringOption,
} from "./_options.ts";
import { EXIT_FAILED, EXIT_OK, field, printJson } from "./_output.ts";
import { policyRulesOf, shellPolicyOf } from "./_run_options.ts";

interface Settings {
  readonly mode: ModeName;
  readonly level: ShellPolicyLevel;
  readonly wall: boolean;
  readonly denies: readonly RunDeny[];
  readonly rules: PolicyRules;
  readonly scripts: ShellParser;
  readonly programs: ProgramTable;
}

/** The JSON a decision prints (snake case, as documented). */
function document(decision: ShellDecision): Record<string, unknown> {
  return {
    decision: decision.decision,
    reason: decision.reason,
    matched_rule: decision.matchedRule,
    high_risk: decision.highRisk,
    confined: decision.confined,
    commands: decision.commands.map((c) => ({
      argv: c.argv,
      decision: c.decision,
      reason: c.reason,
    })),
  };
}

function decide(settings: Settings, argv: readonly string[]): ShellDecision {
  return decideShell({
    argv,
    level: settings.level,
    mode: settings.mode,
    wall: settings.wall,
    denies: settings.denies,
    rules: settings.rules,
    scripts: settings.scripts,
    programs: settings.programs,
  });
}

function describe(decision: ShellDecision): string {
  return [
    `${decision.decision}  ${field(decision.reason, 300)}${
      decision.highRisk ? "  (high risk)" : ""
    }${decision.confined ? "  (confined: workspace read-only, secret-bearing files masked)" : ""}`,
    ...(decision.matchedRule ? [`matched rule: ${field(decision.matchedRule, 500)}`] : []),
    ...decision.commands.map((c) =>
      `  ${c.decision.padEnd(5)}  ${field(JSON.stringify(c.argv), 300)}  ${field(c.reason, 200)}`
    ),
  ].join("\n");
}

async function settingsOf(parsed: ParsedArgs, io: CliIo): Promise<Settings> {
  const mode = parseMode(stringOption(parsed, "mode") ?? "workspace-write");
  const level = shellPolicyOf(parsed) ?? "allowlist_auto_else_ask";
  const wallText = stringOption(parsed, "wall") ?? "off";
  if (wallText !== "on" && wallText !== "off") {
    throw new UsageError(`--wall must be on or off, got ${JSON.stringify(wallText)}`);
  }
  const denies = listOption(parsed, "deny").map(parseRunDeny);
  const scripts = new ShellParser();
  await scripts.load();
  return {
    mode,
    level,
    wall: wallText === "on",
    denies,
    rules: policyRulesOf(parsed, io),
    scripts,
    programs: new ProgramTable(),
  };
}

async function check(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const batch = stringOption(parsed, "batch");
  const argv = [...parsed.args];
  if ((batch === undefined) === (argv.length === 0)) {
    throw new UsageError(
      `"libos policy check" needs either -- ARGV... or --batch FILE|- (one of them)`,
    );
  }
  const settings = await settingsOf(parsed, io);
  const json = flagOption(parsed, "json");
  if (batch === undefined) {
    let decision: ShellDecision;
    try {
      decision = decide(settings, argv);
    } catch (error) {
      if (error instanceof ValidationError) {
        if (json) printJson(io, { error: errorInfo(error) });
        else io.stderr(`libos: ${field(error.message, 500)}\n`);
        return EXIT_FAILED;
      }
      throw error;
    }
    if (json) printJson(io, document(decision));
    else io.stdout(`${describe(decision)}\n`);
    return EXIT_OK;
  }
  let text: string;
  if (batch === "-") {
    if (!io.readStdin) throw new UsageError("There is no standard input to read the batch from");
    text = await io.readStdin();
  } else {
    try {
      text = Deno.readTextFileSync(resolve(io.cwd, batch));
    } catch (error) {
      throw new UsageError(
        `Cannot read the batch file ${JSON.stringify(batch)}: ${(error as Error).message}`,
      );
    }
  }
  let failures = 0;
  const lines = text.split("\n");
  for (const [i, raw] of lines.entries()) {
    const line = i + 1;
    const content = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (content.trim() === "") continue;
    let result: Record<string, unknown>;
    try {
      if (content.length > SHELL_HARD_CAP * 2) {
        throw new ValidationError(
          `The line is over ${SHELL_HARD_CAP} bytes; nothing that large is decided`,
        );
      }
      let value: unknown;
      try {
        value = JSON.parse(content);
      } catch {
        throw new ValidationError("The line is not JSON; each line is one JSON array of strings");
      }
      if (!Array.isArray(value) || value.some((t) => typeof t !== "string")) {
        throw new ValidationError("Each line must be one JSON array of strings (an argv)");
      }
      result = { ...document(decide(settings, value as string[])), line };
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      failures++;
      const info: ErrorInfo = errorInfo(error);
      result = { line, error: info };
    }
    printJson(io, result);
  }
  return failures ? EXIT_FAILED : EXIT_OK;
}

/** The `policy check` command. */
export const policyCheckCommand: Command = {
  name: "policy check",
  summary: "decide a command as the policy would (every nested command it runs)",
  usage:
    `Usage: libos policy check [--mode M] [--shell-policy LEVEL] [--policy FILE]... [--no-user-config]
                          [--trust-workspace-policy] [--wall on|off] [--deny RULE]... [--json]
                          (-- ARGV... | --batch FILE|-)

Prints {decision, reason, matched_rule, high_risk, confined, commands: [{argv, decision, reason}]}:
the strictest decision over every command the argv would run — wrappers unwrapped, sh -c scripts
parsed — by the hardline floor, the run ceiling (--deny, --mode), the rules (the user's config
directory unless --no-user-config, then each --policy file; a workspace .libos/policy.jsonc only
with --trust-workspace-policy) and the shell policy LEVEL (always_deny, allowlist_auto_else_ask,
blocklist_ask_else_auto, always_allow). Under allowlist_auto_else_ask with --wall on, a read-only
command (ls, cat, git status, …) is allowed as read-only:<label> and runs confined (the workspace
read-only, secret-bearing files masked). There is no process, so no capability layer.
--batch reads one JSON argv array per line and prints one JSON object per line (with "line");
a malformed line prints {line, error} and the batch goes on. Defaults: --mode workspace-write,
--shell-policy allowlist_auto_else_ask, --wall off. Exit: 0 decisions printed, 1 some input
refused, 2 usage.`,
  options: [
    "mode",
    "shell-policy",
    "policy",
    "no-user-config",
    "trust-workspace-policy",
    "wall",
    "deny",
    "batch",
  ],
  variadic: true,
  run: check,
};
