/**
 * `libos log PID`: the whole transcript of a process — its turns (the model's text, tokens), tool
 * calls and results, diffs, every decision with who or what decided it, checkpoints, and the
 * files it changed — from a running, parked or finished process alike (a finished one's records
 * are retained until `libos gc`). `--tree` adds its children; `--json` prints the entries as one
 * array. Every value is escaped. On a terminal, a transcript longer than the screen goes through
 * `$PAGER` (else `less -R`) when libos may start one; otherwise it is printed as it is.
 *
 * @module
 */
import { transcript } from "../runtime/model/transcript.ts";
import { renderTranscript } from "../runtime/model/transcript_render.ts";
import { type CliIo, type Command, flagOption, type ParsedArgs } from "./_options.ts";
import { printJson } from "./_output.ts";
import { openRuntime } from "./_workspace.ts";

/**
 * The pager to run: `$PAGER` split into words (when set and readable), else `less -R` (which
 * passes the escaped text as it is). Null for `PAGER=cat` or an empty one: print plainly.
 */
export function pagerArgv(env: CliIo["env"]): string[] | null {
  let pager: string | undefined;
  try {
    pager = env.get("PAGER");
  } catch {
    pager = undefined; // libos may not read it (the launcher's env allowlist): the default
  }
  if (pager === undefined) return ["less", "-R"];
  const words = pager.trim().split(/\s+/).filter((w) => w !== "");
  return words.length === 0 || words[0] === "cat" ? null : words;
}

/**
 * Shows `text` through a pager when stdout is a terminal and the text is longer than the screen;
 * false (the caller prints it) when it is not, or no pager may or can be started.
 */
async function paged(text: string, io: CliIo): Promise<boolean> {
  if (io.stdoutIsTerminal !== true) return false;
  let rows: number;
  try {
    rows = Deno.consoleSize().rows;
  } catch {
    return false;
  }
  if (text.split("\n").length <= rows) return false;
  const argv = pagerArgv(io.env);
  if (argv === null) return false;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(argv[0]!, {
      args: argv.slice(1),
      stdin: "piped",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
  } catch {
    // Not allowed to run it (the launcher grants no --allow-run here), or not installed.
    return false;
  }
  const writer = child.stdin.getWriter();
  try {
    await writer.write(new TextEncoder().encode(text));
  } catch {
    // The reader quit early (q in less): nothing more to show.
  }
  await writer.close().catch(() => {});
  await child.status;
  return true;
}

async function log(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "read");
  const entries = transcript(runtime, pid!, { tree: flagOption(parsed, "tree") });
  if (flagOption(parsed, "json")) {
    printJson(io, { db: runtime.location.path, pid, entries });
    return 0;
  }
  const text = renderTranscript(entries);
  if (!(await paged(text, io))) io.stdout(text);
  return 0;
}

/** `log PID [--tree] [--json]`. */
export const logCommand: Command = {
  name: "log",
  summary: "the whole transcript of a run: turns, tool calls, results, diffs, decisions, files",
  usage: `Usage: libos log PID [--tree] [--json]

Prints everything process PID did, in order: each turn with the model's text and tokens, each
tool call with its arguments and result (a command's exit code and last lines of output, an
error), the diff of each edit, every decision from the audit log with who or what decided it
(rule, capability, mode, the human request and who answered it), its checkpoints, and at the
end the files it changed. Works on a running, parked or finished process; a finished one's
records are kept until "libos gc" removes them (its decisions stay in the audit log).
  --tree   its children too, each after its parent
  --json   the entries as one JSON array ({db, pid, entries})
Every value is escaped. On a terminal, a long transcript is paged with $PAGER (else less -R)
when libos may start it; otherwise it is printed. List processes with "libos ps".`,
  options: ["tree"],
  positionals: ["PID"],
  run: log,
};
