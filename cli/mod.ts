/**
 * The `libos` command line: `runCli(args, io)` dispatches to a command and turns every error into
 * one readable line (or a JSON error envelope under `--json`) and an exit status: 0 ok, 1 refused
 * or failed, 2 usage.
 *
 * @module
 */
import { UsageError } from "../runtime/base/errors.ts";
import { auditQueryCommand, auditVerifyCommand } from "./audit_command.ts";
import { auditCheckCommand } from "./audit_check_command.ts";
import { whyCommand } from "./why_command.ts";
import {
  checkpointCreateCommand,
  checkpointDiffCommand,
  checkpointListCommand,
  checkpointRestoreCommand,
} from "./checkpoint_commands.ts";
import { agentCommand } from "./agent_command.ts";
import { sessionsCommand } from "./sessions_command.ts";
import { logCommand } from "./log_command.ts";
import { eventsCommand } from "./events_command.ts";
import { gcCommand } from "./gc_command.ts";
import { mcpServeCommand } from "./mcp_serve_command.ts";
import { demoCommand } from "./demo_command.ts";
import { initCommand } from "./init_command.ts";
import { capsCommand, grantCommand, revokeCommand } from "./capability_commands.ts";
import { grantsListCommand, grantsRevokeCommand } from "./grants_command.ts";
import {
  humanAnswerCommand,
  humanApproveCommand,
  humanInterruptCommand,
  humanListCommand,
  humanRejectCommand,
  humanShowCommand,
} from "./human_commands.ts";
import { policyCheckCommand } from "./policy_command.ts";
import { replayCommand } from "./replay_command.ts";
import {
  jitCheckCommand,
  jitProposeCommand,
  jitRegisterCommand,
  jitRunCommand,
  jitValidateCommand,
} from "./jit_command.ts";
import { memoryLsCommand, memoryNamespaceCommand, memoryShowCommand } from "./memory_commands.ts";
import {
  execCommand,
  imagesListCommand,
  imagesLoadCommand,
  imagesShowCommand,
  toolsCommand,
} from "./image_commands.ts";
import {
  cdCommand,
  exitCommand,
  psCommand,
  runCommand,
  signalCommand,
  spawnCommand,
  stepCommand,
} from "./process_commands.ts";
import { workerCommand } from "./worker_command.ts";
import {
  type CliIo,
  type Command,
  flagOption,
  onlyOptions,
  parseCommandLine,
  wantsJson,
} from "./_options.ts";
import { EXIT_OK, reportError } from "./_output.ts";
import { LIBOS_VERSION } from "./version.ts";

export type { CliIo } from "./_options.ts";

const COMMANDS: readonly Command[] = [
  initCommand,
  spawnCommand,
  psCommand,
  runCommand,
  stepCommand,
  workerCommand,
  signalCommand,
  cdCommand,
  exitCommand,
  checkpointCreateCommand,
  checkpointListCommand,
  checkpointDiffCommand,
  checkpointRestoreCommand,
  capsCommand,
  grantCommand,
  revokeCommand,
  grantsListCommand,
  grantsRevokeCommand,
  humanListCommand,
  humanShowCommand,
  humanApproveCommand,
  humanRejectCommand,
  humanAnswerCommand,
  humanInterruptCommand,
  memoryLsCommand,
  memoryShowCommand,
  memoryNamespaceCommand,
  imagesListCommand,
  imagesShowCommand,
  imagesLoadCommand,
  toolsCommand,
  execCommand,
  policyCheckCommand,
  replayCommand,
  jitCheckCommand,
  jitProposeCommand,
  jitValidateCommand,
  jitRegisterCommand,
  jitRunCommand,
  auditQueryCommand,
  auditVerifyCommand,
  auditCheckCommand,
  whyCommand,
  eventsCommand,
  agentCommand,
  mcpServeCommand,
  sessionsCommand,
  logCommand,
  gcCommand,
  demoCommand,
];

const GLOBAL_HELP = `Global options (every command):
  --workspace DIR   the workspace (default: the current directory)
  --db PATH         the database (default: <state dir>/<sha256 of the workspace path>.db;
                    the state dir is $XDG_STATE_HOME/libos or ~/.local/state/libos)
  --json            print one JSON document on stdout; errors as {"error":{"code","message"}}
  -h, --help        show help (of a command, or of a group: libos human --help)
  -V, --version     print the version of libos (and of Deno)

Exit status: 0 ok, 1 refused or failed, 2 usage error.`;

function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "Usage: libos <command> [options]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    GLOBAL_HELP,
    "",
  ].join("\n");
}

/** The commands of a group (`human` → `human list`, `human show`, …), in the list's order. */
function groupCommands(word: string): readonly Command[] {
  return COMMANDS.filter((c) => c.name.startsWith(`${word} `));
}

function groupHelp(word: string, commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    `Usage: libos ${word} <command> [options]`,
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    `Run "libos ${word} <command> --help" for a command's options.`,
    "",
  ].join("\n");
}

function findCommand(
  positionals: readonly string[],
): { command: Command; rest: readonly string[] } | undefined {
  for (const command of COMMANDS) {
    const words = command.name.split(" ");
    if (words.every((word, i) => positionals[i] === word)) {
      return { command, rest: positionals.slice(words.length) };
    }
  }
  return undefined;
}

/** Runs one `libos` invocation and returns its exit status. */
export async function runCli(args: readonly string[], io: CliIo): Promise<number> {
  const json = wantsJson(args);
  try {
    const parsed = parseCommandLine(args);
    if (parsed.positionals.length === 0 && flagOption(parsed, "version")) {
      if (json) {
        io.stdout(JSON.stringify({ version: LIBOS_VERSION, deno: Deno.version.deno }) + "\n");
      } else io.stdout(`libos ${LIBOS_VERSION} (Deno ${Deno.version.deno})\n`);
      return EXIT_OK;
    }
    if (parsed.positionals.length === 0 || parsed.positionals[0] === "help") {
      if (parsed.positionals.length === 0 && !flagOption(parsed, "help")) {
        throw new UsageError(`No command given; run "libos --help" to see the commands`);
      }
      io.stdout(overview());
      return EXIT_OK;
    }
    const found = findCommand(parsed.positionals);
    if (!found) {
      const words = parsed.positionals.join(" ");
      const group = parsed.positionals[0]!;
      const members = groupCommands(group);
      if (members.length === 0) {
        throw new UsageError(`Unknown command "${words}"; run "libos --help" to see the commands`);
      }
      if (parsed.positionals.length === 1 && flagOption(parsed, "help")) {
        io.stdout(groupHelp(group, members));
        return EXIT_OK;
      }
      const names = members.map((c) => c.name.slice(group.length + 1)).join(", ");
      throw new UsageError(
        parsed.positionals.length === 1
          ? `"libos ${group}" needs a command: ${names}; run "libos ${group} --help"`
          : `Unknown command "${words}"; the ${group} commands are: ${names} (run "libos ${group} --help")`,
      );
    }
    const { command, rest } = found;
    if (flagOption(parsed, "help")) {
      io.stdout(`${command.usage}\n\n${GLOBAL_HELP}\n`);
      return EXIT_OK;
    }
    const expected = command.positionals ?? [];
    if (rest.length < expected.length) {
      throw new UsageError(
        `"libos ${command.name}" needs ${
          expected.slice(rest.length).join(" ")
        }; run "libos ${command.name} --help"`,
      );
    }
    if (rest.length > expected.length && !command.variadic) {
      throw new UsageError(
        `"libos ${command.name}" takes no argument ${
          JSON.stringify(rest[expected.length])
        }; run "libos ${command.name} --help"`,
      );
    }
    onlyOptions(parsed, command.name, command.options);
    return await command.run({ ...parsed, args: rest }, io);
  } catch (error) {
    return reportError(io, error, json);
  }
}
