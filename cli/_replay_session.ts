/**
 * The actions a session log's tool calls name (for `libos replay --session`): each built-in tool
 * that reaches a primitive, with the resource its arguments name — `read_text_file` reads
 * `args.path`, `edit_file` reads then writes it, `run_shell_command` executes `args.argv`,
 * `fetch_url` connects to the URL's host. A tool that reaches no file, command or host (memory,
 * processes, the human) is counted, not decided.
 *
 * @module
 */
import { posix } from "node:path";
import type { ActionResource, Right } from "../runtime/authority/capability.ts";
import type { RecordedAction } from "../runtime/policy/recorded_run.ts";
import type { SessionRecord } from "../runtime/model/session_log.ts";

/** The pid a session log's actions are decided for (a session log names no process). */
export const SESSION_PID = "session";

type Derive = (args: Record<string, unknown>) => [string, ActionResource, Right][] | undefined;

function path(value: unknown): string | undefined {
  if (typeof value !== "string" || value === "") return undefined;
  const normal = posix.normalize(value.replace(/^\/+/, ""));
  return normal === "" || normal === "./" ? "." : normal.replace(/\/$/, "");
}

function fs(op: string, right: Right, key = "path"): Derive {
  return (args) => {
    const p = path(args[key]);
    return p === undefined ? undefined : [[op, { type: "fs", path: p }, right]];
  };
}

const TOOLS: Readonly<Record<string, Derive>> = Object.freeze({
  read_text_file: fs("fs.read", "read"),
  read_directory: fs("fs.list", "read"),
  glob: fs("fs.list", "read"),
  grep: fs("fs.read", "read"),
  write_text_file: fs("fs.write", "write"),
  write_directory: fs("fs.mkdir", "write"),
  delete_file: fs("fs.delete", "delete"),
  delete_directory: fs("fs.rmdir", "delete"),
  edit_file: (args) => {
    const p = path(args.path);
    return p === undefined ? undefined : [
      ["fs.read", { type: "fs", path: p }, "read"],
      ["fs.write", { type: "fs", path: p }, "write"],
    ];
  },
  run_shell_command: (args) => {
    const argv = args.argv;
    return Array.isArray(argv) && argv.length > 0 && argv.every((t) => typeof t === "string")
      ? [["shell.run", { type: "shell", argv: argv as string[] }, "execute"]]
      : undefined;
  },
  fetch_url: (args) => {
    if (typeof args.url !== "string") return undefined;
    try {
      return [["net.fetch", { type: "net", key: new URL(args.url).hostname }, "connect"]];
    } catch {
      return undefined;
    }
  },
});

/** The actions of a session log's model turns, and how many tool calls named none. */
export function sessionActions(
  records: readonly SessionRecord[],
): { readonly actions: RecordedAction[]; readonly turns: number; readonly skipped: number } {
  const actions: RecordedAction[] = [];
  let turns = 0;
  let skipped = 0;
  for (const record of records) {
    if (record.type !== "model_turn") continue;
    turns++;
    for (const call of record.tool_calls ?? []) {
      const args = typeof call.arguments === "object" && call.arguments !== null
        ? call.arguments as Record<string, unknown>
        : {};
      const derived = Object.hasOwn(TOOLS, call.name) ? TOOLS[call.name]!(args) : undefined;
      if (!derived) {
        skipped++;
        continue;
      }
      for (const [action, resource, right] of derived) {
        actions.push({
          seq: null,
          turn: turns,
          pid: SESSION_PID,
          action,
          resource,
          right,
          recorded: null,
          approved: false,
          authority: null,
          time: 0,
        });
      }
    }
  }
  return { actions, turns, skipped };
}
