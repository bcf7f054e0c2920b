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
    ["?\n?\n?\ny\n", { type: "reject", reason: "no clear answer after 3 attempts" }],
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
