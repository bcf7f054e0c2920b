import assert from "node:assert/strict";
import { ValidationError } from "../base/errors.ts";
import type { AlwaysOption } from "./human_channel.ts";
import { HumanRequest } from "./human_request.ts";
import { type TerminalIo, terminalPrompt } from "./tty_prompt.ts";

/** A terminal that yields `typed` in chunks of `chunk` bytes and records what was written. */
function fakeTerminal(typed: string, chunk = 3, terminal = true): TerminalIo & { out: string } {
  const bytes = new TextEncoder().encode(typed);
  let at = 0;
  const io = {
    out: "",
    read(buffer: Uint8Array) {
      if (at >= bytes.length) return Promise.resolve(null);
      const n = Math.min(chunk, buffer.length, bytes.length - at);
      buffer.set(bytes.subarray(at, at + n));
      at += n;
      return Promise.resolve(n);
    },
    isTerminal: () => terminal,
    write(text: string) {
      io.out += text;
    },
  };
  return io;
}

function request(kind: HumanRequest["kind"]): HumanRequest {
  return HumanRequest.parse({
    id: "hreq_0123456789ab",
    pid: "pid_0123456789ab",
    kind,
    status: "pending",
    approval: null,
    text: kind === "question" ? "Which branch?" : null,
    permission: null,
    response: null,
    createdAt: 0,
    updatedAt: 0,
    expiresAt: null,
  });
}

const ALWAYS: AlwaysOption[] = [
  {
    scope: "path",
    resource: { type: "fs", path: "deploy/app.yml", scope: "exact" },
    rights: ["write"],
    description: "allow write on fs:deploy/app.yml for pid_0123456789ab from now on",
  },
  {
    scope: "subtree",
    resource: { type: "fs", path: "deploy", scope: "subtree" },
    rights: ["write"],
    description: "allow write on fs:deploy/** for pid_0123456789ab\x1b[2J from now on",
  },
];

Deno.test("terminalPrompt() refuses to start without a terminal on standard input", () => {
  assert.throws(
    () => terminalPrompt(fakeTerminal("y\n", 3, false)),
    (e: unknown) => e instanceof ValidationError && /--human queue/.test(e.message),
  );
});

Deno.test("terminalPrompt() maps answers to decisions: y, n with a reason, an allow-always number", async () => {
  const cases: [string, unknown][] = [
    ["y\n", { type: "approve" }],
    ["YES\r\n", { type: "approve" }],
    ["n\n", { type: "reject" }],
    ["no   it touches prod\n", { type: "reject", reason: "it touches prod" }],
    ["2\n", { type: "approve", always: "subtree" }],
    ["3\n1\n", { type: "approve", always: "path" }],
    ["", { type: "reject", reason: "the terminal closed" }],
    ["maybe\nsure\n?!\ny\n", { type: "reject", reason: "no clear answer after 3 attempts" }],
    ["a\n", { type: "approve", always: "path" }],
    ["d\ny\n", { type: "approve" }],
  ];
  for (const [typed, expected] of cases) {
    const io = fakeTerminal(typed);
    const decision = await terminalPrompt(io).decide(request("approval"), "RENDERED", ALWAYS);
    assert.deepEqual(decision, expected, JSON.stringify(typed));
    assert.ok(io.out.includes("RENDERED"));
    assert.ok(io.out.includes("2  allow always (subtree): allow write on fs:deploy/**"));
    assert.ok(!io.out.includes("\x1b"), "option descriptions are escaped");
  }
});

Deno.test("terminalPrompt() reads a question's answer as typed; an empty line declines", async () => {
  const io = fakeTerminal("release/2026-11\n\n", 4);
  const prompt = terminalPrompt(io);
  assert.deepEqual(await prompt.decide(request("question"), "Q", []), {
    type: "answer",
    text: "release/2026-11",
  });
  assert.deepEqual(await prompt.decide(request("question"), "Q", []), {
    type: "reject",
    reason: "declined to answer",
  });
});

Deno.test("terminalPrompt(): a request withdrawn while the human reads it rejects with the signal's reason; the read in flight answers the next request", async () => {
  let deliver: ((n: number | null) => void) | undefined;
  let reads = 0;
  const pending: Uint8Array[] = [];
  const io: TerminalIo & { out: string } = {
    out: "",
    read(buffer) {
      reads++;
      return new Promise((resolve) => {
        deliver = (n) => {
          if (n !== null) buffer.set(pending.shift()!);
          resolve(n);
        };
      });
    },
    isTerminal: () => true,
    write(text) {
      io.out += text;
    },
  };
  const prompt = terminalPrompt(io);
  const withdrawn = new AbortController();
  const first = prompt.decide(request("approval"), "FIRST", [], { signal: withdrawn.signal });
  await new Promise((r) => setTimeout(r, 10));
  withdrawn.abort(new Error("decided elsewhere"));
  await assert.rejects(first, /decided elsewhere/);
  // The next request's answer arrives through the same read: nothing typed is lost or doubled.
  const second = prompt.decide(request("approval"), "SECOND", []);
  await new Promise((r) => setTimeout(r, 10));
  pending.push(new TextEncoder().encode("y\n"));
  deliver!(2);
  assert.deepEqual(await second, { type: "approve" });
  assert.equal(reads, 1, "one read served both");
  assert.ok(io.out.includes("FIRST") && io.out.includes("SECOND"));
});

Deno.test("terminalPrompt(): what was typed before a request was shown is not its answer, and the human is told", async () => {
  const io = fakeTerminal("y\nn\n", 64);
  const prompt = terminalPrompt(io);
  assert.deepEqual(await prompt.decide(request("approval"), "ONE", []), { type: "approve" });
  // "n\n" was read with the first answer: typed ahead, it does not answer the second request.
  assert.deepEqual(await prompt.decide(request("approval"), "TWO", []), {
    type: "reject",
    reason: "the terminal closed",
  });
  assert.match(io.out, /what was typed before this request was shown is not an answer to it: n/);
});

Deno.test("terminalPrompt(): a remembers the allow-always for this run; p (or N p) for this project too — only where the project can remember it", async () => {
  const cases: [string, boolean, unknown][] = [
    ["a\n", true, { type: "approve", always: "path" }],
    ["p\n", true, { type: "approve", always: "path", remember: "project" }],
    ["2p\n", true, { type: "approve", always: "subtree", remember: "project" }],
    ["2\n", true, { type: "approve", always: "subtree" }],
    // Without a grants file to keep it, p is not an answer (asked again, then rejected).
    ["p\n2p\nP\n", false, { type: "reject", reason: "no clear answer after 3 attempts" }],
    ["p\na\n", false, { type: "approve", always: "path" }],
  ];
  for (const [typed, project, expected] of cases) {
    const io = fakeTerminal(typed);
    const decision = await terminalPrompt(io).decide(request("approval"), "R", ALWAYS, {
      project,
    });
    assert.deepEqual(decision, expected, `${JSON.stringify(typed)} project=${project}`);
  }
});
