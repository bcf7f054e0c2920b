/**
 * `libos events` (issue 24): the public event log through the real launcher — `--json` prints one
 * schema-valid envelope per line in order, `--after` resumes exactly after a sequence number,
 * `--kind` filters, the human form escapes what a model wrote, `--follow` sees the events another
 * process writes and ends cleanly on Ctrl-C, a malformed `--after` or an unknown kind is a usage
 * error, and reading never writes the database.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { permissionFlags } from "../cli/bootstrap.ts";
import { runCli } from "../cli/mod.ts";
import { Event } from "../runtime/audit/events.ts";
import { sha256Hex } from "../runtime/base/canonical_json.ts";
import { REPO, type Sandbox, sandbox, task } from "./_cli_sandbox.ts";
import { final, fixture, yesRun } from "./agent_fixture.ts";

type Envelope = { seq: number; kind: string; turn: number; payload: Record<string, unknown> };

/** The `--json` lines as envelopes, each parsed strictly by the schema's union. */
function envelopes(stdout: string): Envelope[] {
  return stdout.split("\n").filter((l) => l !== "").map((l) => {
    const event = JSON.parse(l);
    const parsed = Event.safeParse(event);
    assert.ok(parsed.success, `not an event of the schema: ${l}\n${parsed.error?.message}`);
    assert.deepEqual(parsed.data, event);
    return event as Envelope;
  });
}

/** `libos agent --yes` in process on the fixture (four tool calls, two approved shell runs). */
async function agentRun(s: Sandbox, script = fixture(s.workspace)): Promise<string> {
  return (await yesRun(s, { script })).pid;
}

/**
 * The database's content as it is now: the file and its write-ahead log (a reader must leave
 * them byte for byte; SQLite may create an empty log for a reader, which is no content).
 */
function dbState(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const suffix of ["", "-wal"]) {
    try {
      const bytes = Deno.readFileSync(`${path}${suffix}`);
      out[suffix] = bytes.length === 0 ? "empty" : sha256Hex(bytes);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      out[suffix] = "empty";
    }
  }
  return out;
}

Deno.test("libos events --json through the real launcher: every event of an agent run, schema-valid, in seq order; --after resumes exactly after; --kind filters; the database is not written", async () => {
  using s = sandbox();
  const pid = await agentRun(s);
  const before = dbState(s.dbPath());
  const all = await task(s.workspace, s.state, "libos", "events", "--json");
  assert.equal(all.status, 0, all.stderr);
  assert.equal(all.stderr, "");
  const events = envelopes(all.stdout);
  assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1), "every event, in order");
  assert.equal(events[0]?.kind, "session.started");
  assert.equal(events.at(-1)?.kind, "session.ended");
  const turns = events.filter((e) => e.kind === "turn.ended");
  assert.deepEqual(turns.map((e) => [e.payload.pid, e.payload.seq, e.payload.outcome]), [
    [pid, 1, "tool_calls"],
    [pid, 2, "tool_calls"],
    [pid, 3, "tool_calls"],
    [pid, 4, "tool_calls"],
    [pid, 5, "final"],
  ]);
  const calls = events.filter((e) => e.kind === "tool.call").map((e) => e.payload.tool);
  assert.deepEqual(calls, [
    "read_text_file",
    "run_shell_command",
    "edit_file",
    "run_shell_command",
  ]);
  const asks = events.filter((e) => e.kind === "decision" && e.payload.effect === "ask");
  assert.equal(asks.length, 2, "the two shell runs asked");
  // --after SEQ: exactly the events after it, for every cut.
  for (const cut of [0, 1, 17, events.length - 1, events.length, events.length + 5]) {
    const rest = await s.cli("events", "--json", "--after", String(cut));
    assert.equal(rest.status, 0, rest.stderr);
    assert.deepEqual(envelopes(rest.stdout), events.filter((e) => e.seq > cut), `--after ${cut}`);
  }
  const some = await task(
    s.workspace,
    s.state,
    "libos",
    "events",
    "--json",
    "--kind",
    "tool.result",
    "--kind",
    "human.decision",
    "--after",
    "20",
  );
  assert.equal(some.status, 0, some.stderr);
  assert.deepEqual(
    envelopes(some.stdout),
    events.filter((e) => e.seq > 20 && ["tool.result", "human.decision"].includes(e.kind)),
  );
  assert.deepEqual(dbState(s.dbPath()), before, "reading the events wrote nothing");
});

Deno.test("libos events (human form) escapes what a model wrote: no terminal control sequence or bidi override reaches the screen", async () => {
  using s = sandbox();
  fixture(s.workspace);
  const script = join(s.workspace, "..", "hostile.jsonl");
  Deno.writeTextFileSync(script, final("done \u001b[2J\u001b]0;pwned\u0007 \u202eevil") + "\n");
  await agentRun(s, script);
  const out = await task(s.workspace, s.state, "libos", "events");
  assert.equal(out.status, 0, out.stderr);
  const raw = [...out.stdout].filter((c) => {
    const code = c.codePointAt(0)!;
    return (code < 0x20 && c !== "\n") || code === 0x7f || code === 0x202e;
  });
  assert.deepEqual(raw, [], "no raw control or bidi character");
  assert.match(out.stdout, /process\.status .*to=exited .*message=done \\x1B\[2J/);
  assert.match(out.stdout, /\\u\{202E\}evil/);
  // Every line starts with its seq, then its time and kind.
  for (const line of out.stdout.trim().split("\n")) {
    assert.match(line, /^\d+ {2}\d{4}-\d\d-\d\dT[\d:.]+Z {2}[a-z_.]+( |$)/);
  }
});

Deno.test("libos events refuses a malformed --after or an unknown --kind as a usage error (exit 2), and a workspace with no database as not found, creating nothing", async () => {
  using s = sandbox();
  const cases: [string[], RegExp][] = [
    [["--after=-1"], /--after must be an event sequence number .*"-1"/],
    [["--after", "abc"], /--after must be an event sequence number .*"abc"/],
    [["--after", "1.5"], /--after must be an event sequence number/],
    [["--after", "99999999999999999999"], /--after must be an event sequence number/],
    [["--after", ""], /--after must be an event sequence number/],
    [
      ["--kind", "tool.output"],
      /--kind "tool\.output" is not an event kind; the kinds are .*tool\.result/,
    ],
    [["--db", ":memory:"], /--db :memory: has no events/],
  ];
  for (const [args, message] of cases) {
    const run = await s.cli("events", ...args);
    assert.equal(run.status, 2, `${args.join(" ")}: ${run.stderr}`);
    assert.match(run.stderr, message, args.join(" "));
    assert.equal(run.stdout, "");
  }
  const json = await s.cli("events", "--after", "x", "--json");
  assert.equal(json.status, 2);
  assert.equal(JSON.parse(json.stdout).error.code, "usage");
  const none = await task(s.workspace, s.state, "libos", "events", "--after", "1.5");
  assert.equal(none.status, 2, none.stderr);
  const missing = await s.cli("events");
  assert.equal(missing.status, 1, missing.stderr);
  assert.match(missing.stderr, /No database at/);
  assert.throws(() => Deno.statSync(s.dbPath()), Deno.errors.NotFound);
});

/** Reads `stream` line by line into `lines` until it ends. */
async function collect(stream: ReadableStream<Uint8Array>, lines: string[]): Promise<void> {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    rest += chunk;
    const parts = rest.split("\n");
    rest = parts.pop()!;
    lines.push(...parts);
  }
  if (rest !== "") lines.push(rest);
}

async function until(what: string, ok: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("libos events --follow --json (real launcher) streams the events an agent run in another process writes, from --after on, and ends with status 0 on Ctrl-C", async () => {
  using s = sandbox();
  const script = fixture(s.workspace);
  // A first run, so there is a database and a cursor to resume after.
  await agentRun(s, script);
  const first = envelopes((await s.cli("events", "--json")).stdout);
  const cursor = first.at(-1)!.seq;
  const temp = Deno.makeTempDirSync({ prefix: "libos-follow-tmp-" });
  // In a process group of its own (setsid), so a SIGINT to the group is a terminal's Ctrl-C.
  const follow = new Deno.Command("/usr/bin/setsid", {
    args: [
      Deno.execPath(),
      "task",
      "--quiet",
      `--config=${join(REPO, "deno.json")}`,
      "libos",
      "events",
      "--follow",
      "--json",
      "--after",
      String(cursor - 2),
    ],
    cwd: s.workspace,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      XDG_STATE_HOME: s.state,
      TMPDIR: temp,
      DENO_NO_UPDATE_CHECK: "1",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const reading = collect(follow.stdout, lines);
  const errors = new Response(follow.stderr).text();
  try {
    // The two last events of the first run first, then nothing until the second run writes.
    await until("the events after the cursor", () => lines.length >= 2);
    assert.deepEqual(envelopes(lines.join("\n")).map((e) => e.seq), [cursor - 1, cursor]);
    // A second agent run, by another process (the real launcher), in the same workspace.
    const { pid } = await yesRun(s, { script, launcher: true });
    await until(
      "the second run's session.ended",
      () =>
        lines.some((l) => l.includes(`"kind":"session.ended"`) && !l.includes(`"seq":${cursor}`)),
    );
    const seen = envelopes(lines.join("\n"));
    const stored = envelopes(
      (await s.cli("events", "--json", "--after", String(cursor - 2))).stdout,
    );
    assert.deepEqual(seen, stored, "followed exactly what is stored, in order, none twice");
    assert.ok(
      seen.some((e) => e.kind === "process.spawned" && e.payload.pid === pid),
      "the second run's process is in the stream",
    );
    assert.ok(seen.some((e) => e.kind === "tool.result" && e.payload.pid === pid));
  } finally {
    // Ctrl-C: the whole group, as a terminal sends it.
    Deno.kill(-follow.pid, "SIGINT");
  }
  const status = await follow.status;
  await reading;
  const stderr = await errors;
  Deno.removeSync(temp, { recursive: true });
  assert.equal(status.code, 0, stderr);
  assert.equal(stderr, "");
});

Deno.test("libos events --follow ends with status 0 as soon as its reader goes away (a closed stdout: libos events --follow | head -3), instead of polling on", async () => {
  using s = sandbox();
  await agentRun(s);
  const written: string[] = [];
  const started = Date.now();
  const status = await runCli(["events", "--follow", "--workspace", s.workspace], {
    stdout: (text) => {
      if (written.length === 3) throw new Deno.errors.BrokenPipe("Broken pipe (os error 32)");
      written.push(text);
    },
    stderr: (text) => written.push(`stderr: ${text}`),
    env: { get: (name) => (name === "XDG_STATE_HOME" ? s.state : undefined) },
    cwd: s.workspace,
  });
  assert.equal(status, 0);
  assert.equal(written.length, 3, written.join(""));
  assert.match(written[0]!, /^1 {2}.*session\.started/);
  assert.ok(Date.now() - started < 10_000);
});

Deno.test("bootstrap permissionFlags(): libos events may read the workspace, state and --db files and write nothing, run nothing, reach no network", () => {
  const facts = {
    cwd: "/home/u",
    env: { get: (n: string) => ({ HOME: "/home/u", TMPDIR: "/tmp" } as Record<string, string>)[n] },
    realPath: (p: string) => p,
  };
  for (
    const args of [
      ["events", "--follow", "--json", "--db", "/data/x.db", "--workspace=/w"],
      ["events", "--after", "3", "--kind", "decision"],
    ]
  ) {
    const flags = permissionFlags({ ...facts, args });
    const read = flags.find((f) => f.startsWith("--allow-read="))?.slice(13).split(",") ?? [];
    assert.ok(read.includes("/home/u/.local/state/libos"), args.join(" "));
    if (args.includes("/data/x.db")) assert.ok(read.includes("/data/x.db-wal"));
    assert.deepEqual(
      flags.filter((f) =>
        f.startsWith("--allow-write") || f.startsWith("--allow-run") ||
        f.startsWith("--allow-net") || f === "-A" || f === "--allow-all"
      ),
      [],
      args.join(" "),
    );
    assert.ok(flags.includes("--no-prompt"));
  }
  // Any other command still writes where it did.
  const agent = permissionFlags({ ...facts, args: ["ps", "--workspace=/w"] });
  assert.ok(agent.some((f) => f.startsWith("--allow-write=/w,")));
});
