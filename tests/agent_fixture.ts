/**
 * What the `libos agent` tests share: a small Python repository with a failing test and the
 * scripted model that fixes it, script-writing shorthands, the CLI run in process with a chosen
 * terminal, a typing fake terminal, and the real launcher on a pseudo-terminal (`script(1)`).
 */
import { join } from "node:path";
import { runCli } from "../cli/mod.ts";
import type { TerminalIo } from "../runtime/human/tty_prompt.ts";
import assert from "node:assert/strict";
import { REPO, type Run, task } from "./_cli_sandbox.ts";
import { processesWith } from "./shell_fixture.ts";

/** The fixture repository's test: `add(2, 2)` must be 4. */
export const TEST = `import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from src.mathlib import add

class MathTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 2), 4)

if __name__ == "__main__":
    unittest.main()
`;
/** The code under test, with its bug. */
export const BROKEN = "def add(a, b):\n    return a + b + 1\n";
/** The code once fixed. */
export const FIXED = "def add(a, b):\n    return a + b\n";

/** One scripted model turn (a `model_turn` session-log line). */
export const turn = (value: Record<string, unknown>): string =>
  JSON.stringify({ type: "model_turn", ...value });
/** A turn that calls one tool. */
export const call = (name: string, args: Record<string, unknown> = {}): string =>
  turn({ tool_calls: [{ name, arguments: args }] });
/** A turn that answers (the process exits with it). */
export const final = (content: string): string => turn({ content });

/** The tool call that runs the fixture's test. */
export const RUN_TESTS = {
  name: "run_shell_command",
  arguments: { argv: ["python3", "tests/test_mathlib.py"] },
};
/** The edit that fixes the bug. */
export const FIX_EDIT = {
  name: "edit_file",
  arguments: { path: "src/mathlib.py", old_string: "return a + b + 1", new_string: "return a + b" },
};
/** The scripted model: read the test, run it (asks), edit, run it again (asks), report. */
export const SCRIPT = [
  call("read_text_file", { path: "tests/test_mathlib.py" }),
  turn({ tool_calls: [RUN_TESTS] }),
  turn({ tool_calls: [FIX_EDIT] }),
  turn({ tool_calls: [RUN_TESTS] }),
  final("Fixed add() in src/mathlib.py; tests/test_mathlib.py passes."),
].join("\n") + "\n";

/** Writes the failing repository into `workspace`. */
export function fixRepository(workspace: string): void {
  Deno.mkdirSync(join(workspace, "src"));
  Deno.mkdirSync(join(workspace, "tests"));
  Deno.writeTextFileSync(join(workspace, "src", "mathlib.py"), BROKEN);
  Deno.writeTextFileSync(join(workspace, "tests", "test_mathlib.py"), TEST);
}

/** The repository in `workspace` and {@link SCRIPT} beside it (outside it); returns the script. */
export function fixture(workspace: string): string {
  fixRepository(workspace);
  const script = join(workspace, "..", "script.jsonl");
  Deno.writeTextFileSync(script, SCRIPT);
  return script;
}

/**
 * `libos agent --goal GOAL --model replay:SCRIPT --yes --json` on the sandbox (default: the fix
 * run on {@link fixture}) — in process, or through the real launcher with `launcher` — asserted
 * to exit 0; returns the run's pid and its output.
 */
export async function yesRun(
  s: {
    readonly workspace: string;
    readonly state: string;
    json(...args: string[]): Promise<Run & { doc: Record<string, unknown> }>;
  },
  options: { readonly script?: string; readonly goal?: string; readonly launcher?: boolean } = {},
): Promise<{ readonly pid: string; readonly run: Run }> {
  const script = options.script ?? fixture(s.workspace);
  const args = [
    "agent",
    "--goal",
    options.goal ?? "Make the test pass",
    "--model",
    `replay:${script}`,
    "--yes",
  ];
  const run = options.launcher
    ? await task(s.workspace, s.state, "libos", ...args, "--json")
    : await s.json(...args);
  assert.equal(run.status, 0, run.stdout + run.stderr);
  return { pid: (JSON.parse(run.stdout) as { pid: string }).pid, run };
}

/** One message of a chat-completions request, as the endpoint receives it. */
export interface SentMessage {
  readonly role: string;
  readonly content: string | null;
}

/** What the endpoint answers a request with: text, or tool calls. */
export type ChatAnswer =
  | { readonly content: string }
  | { readonly calls: readonly { readonly name: string; readonly arguments: unknown }[] }
  /** A failure: this status (429, 503, …) with these headers (`retry-after`, …). */
  | { readonly status: number; readonly headers?: Readonly<Record<string, string>> };

/**
 * A local OpenAI-compatible chat-completions endpoint: `answer` gets each request's body (and
 * the request) and says what the model replies. `baseURL` goes in `OPENAI_BASE_URL`.
 */
export function chatEndpoint(
  answer: (
    body: { readonly model?: string; readonly messages: readonly SentMessage[] },
    request: Request,
  ) => ChatAnswer,
): { readonly baseURL: string } & AsyncDisposable {
  let n = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.json() as { model?: string; messages?: SentMessage[] };
    const reply = answer({ ...body, messages: body.messages ?? [] }, req);
    n++;
    if ("status" in reply) {
      return Response.json({ error: { message: `failing on purpose (${reply.status})` } }, {
        status: reply.status,
        headers: reply.headers ?? {},
      });
    }
    const message = "calls" in reply
      ? {
        content: null,
        tool_calls: reply.calls.map((c, i) => ({
          id: `call_${n}_${i}`,
          type: "function",
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        })),
      }
      : { content: reply.content };
    return Response.json({
      id: `chatcmpl-${n}`,
      object: "chat.completion",
      created: 1,
      model: body.model ?? "local-model",
      choices: [{
        index: 0,
        finish_reason: "calls" in reply ? "tool_calls" : "stop",
        message: { role: "assistant", ...message },
      }],
      usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57 },
    });
  });
  return {
    baseURL: `http://127.0.0.1:${server.addr.port}/v1`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** How the in-process CLI sees its terminal and environment. */
export interface IoOptions {
  readonly terminal?: TerminalIo;
  readonly stderrIsTerminal?: boolean;
  readonly columns?: number;
  readonly env?: Record<string, string>;
  /** Where stderr goes besides the returned text (a shared transcript). */
  readonly onStderr?: (text: string) => void;
  /** Receives the command's Ctrl-C handler while it is registered (a test presses Ctrl-C). */
  readonly onInterrupt?: (handler: (() => "handled" | "exit") | undefined) => void;
}

/** Runs the CLI in process in the sandbox, with a chosen terminal setup. */
export async function cli(
  s: { readonly workspace: string; readonly state: string },
  options: IoOptions,
  ...args: string[]
): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const env: Record<string, string> = {
    XDG_STATE_HOME: s.state,
    HOME: join(s.state, "home"),
    ...options.env,
  };
  const status = await runCli(args, {
    stdout: (t) => stdout += t,
    stderr: (t) => {
      stderr += t;
      options.onStderr?.(t);
    },
    env: { get: (n) => env[n] },
    cwd: s.workspace,
    ...(options.terminal ? { terminal: options.terminal } : {}),
    ...(options.stderrIsTerminal === undefined
      ? {}
      : { stderrIsTerminal: options.stderrIsTerminal }),
    ...(options.columns === undefined ? {} : { columns: () => options.columns }),
    ...(options.onInterrupt === undefined ? {} : {
      onInterrupt: (handler: () => "handled" | "exit") => {
        options.onInterrupt?.(handler);
        return { [Symbol.dispose]: () => options.onInterrupt?.(undefined) };
      },
    }),
  });
  return { status, stdout, stderr };
}

/**
 * A terminal that types `answers`, one per read (then closes), and records what was written to
 * it; `onRead` is told before each read, `onWrite` of each write.
 */
export function fakeTerminal(
  answers: string[],
  hooks: { readonly onRead?: () => void; readonly onWrite?: (text: string) => void } = {},
): TerminalIo & { readonly screen: () => string } {
  let screen = "";
  return {
    read(buffer) {
      hooks.onRead?.();
      const next = answers.shift();
      if (next === undefined) return Promise.resolve(null);
      const bytes = new TextEncoder().encode(next);
      buffer.set(bytes);
      return Promise.resolve(bytes.length);
    },
    isTerminal: () => true,
    write(text) {
      screen += text;
      hooks.onWrite?.(text);
    },
    screen: () => screen,
  };
}

/**
 * `libos …ARGS --workspace WS` through the real bootstrap on a pseudo-terminal (`script(1)`), with
 * a clean environment whose TMPDIR is `temp`; its stdout is the terminal's screen.
 */
export function terminalCommand(
  s: { readonly workspace: string; readonly state: string },
  temp: string,
  args: readonly string[],
  options: { readonly stdin: "piped" | "null" },
): Deno.Command {
  const quote = (w: string) => `'${w.replaceAll("'", `'\\''`)}'`;
  const command = [
    Deno.execPath(),
    "task",
    "--quiet",
    `--config=${join(REPO, "deno.json")}`,
    "libos",
    ...args,
    "--workspace",
    s.workspace,
  ].map(quote).join(" ");
  return new Deno.Command("script", {
    args: ["--quiet", "--return", "--command", command, "/dev/null"],
    cwd: s.workspace,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: Deno.env.get("HOME") ?? "/root",
      XDG_STATE_HOME: s.state,
      TMPDIR: temp,
      DENO_NO_UPDATE_CHECK: "1",
      NO_COLOR: "1",
      TERM: "dumb",
    },
    stdin: options.stdin,
    stdout: "piped",
    stderr: "null",
  });
}

/** A launcher started through the real bootstrap on a pseudo-terminal (`script`). */
export interface TerminalLauncher {
  /** What the terminal showed until it started (its first prompt, or what the caller waited for). */
  readonly screen: string;
  /** SIGKILLs the launcher (every process whose arguments name the workspace). */
  kill(): void;
  /** Types `text` on the terminal, then reads the screen to its end: the rest, and the exit code. */
  type(text: string): Promise<{ readonly rest: string; readonly code: number }>;
  /** Waits for the terminal to close. */
  close(): Promise<void>;
}

/** The terminal shows a request and waits for the answer. */
const PROMPTED = /(?:yes, once|approve this action, once)[^\n]*\n[^]*> /;

/**
 * Starts `libos agent --goal … --model replay:SCRIPT [MORE…]` on a terminal and reads its screen
 * until `until` shows (default: its first prompt for an approval).
 */
export async function onTerminal(
  s: { workspace: string; state: string },
  script: string,
  options: { readonly more?: readonly string[]; readonly until?: RegExp } = {},
): Promise<TerminalLauncher> {
  const temp = Deno.makeTempDirSync({ prefix: "libos-agent-tmp-" });
  const until = options.until ?? PROMPTED;
  const child = terminalCommand(s, temp, [
    "agent",
    "--goal",
    "Make the test pass",
    "--model",
    `replay:${script}`,
    ...(options.more ?? []),
  ], { stdin: "piped" }).spawn();
  let screen = "";
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  const deadline = Date.now() + 60_000;
  while (!until.test(screen) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    screen += decoder.decode(value, { stream: true });
  }
  let closed = false;
  const kill = () => {
    for (const pid of processesWith(s.workspace)) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* already gone */ }
    }
  };
  const writer = child.stdin.getWriter();
  return {
    screen,
    kill,
    async type(text) {
      await writer.write(new TextEncoder().encode(text));
      let rest = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        rest += decoder.decode(value, { stream: true });
      }
      return { rest, code: (await child.status).code };
    },
    async close() {
      if (closed) return;
      closed = true;
      kill();
      await reader.cancel().catch(() => {});
      await writer.close().catch(() => {});
      await child.status;
      Deno.removeSync(temp, { recursive: true });
    },
  };
}
