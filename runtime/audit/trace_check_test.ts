import assert from "node:assert/strict";
import { checkTrace } from "./trace_check.ts";
import { covers } from "./_trace_rows.ts";
import { NotFoundError } from "../base/errors.ts";
import { testRuntime } from "../../testing.ts";

Deno.test("covers(): a delegated resource lies within its parent's only when the parent's scope contains all of it", () => {
  const fs = (path: string, scope: "exact" | "subtree") => ({ type: "fs", path, scope } as const);
  const key = (type: string, k: string, scope: "exact" | "prefix" | "any") => ({
    type,
    key: k,
    scope,
  });
  const shell = (
    argv: string[],
    scope: "exact" | "prefix" | "any",
  ) => ({ type: "shell", argv, scope } as const);
  const table: [string, Parameters<typeof covers>, boolean][] = [
    ["the workspace covers a subtree", [fs(".", "subtree"), fs("src", "subtree"), false], true],
    ["a subtree covers itself", [fs("src", "subtree"), fs("src", "subtree"), false], true],
    ["a subtree covers a file in it", [fs("src", "subtree"), fs("src/a.ts", "exact"), false], true],
    [
      "a sibling sharing a prefix is outside",
      [fs("src", "subtree"), fs("srcx/a", "exact"), false],
      false,
    ],
    [
      "a file does not cover its directory",
      [fs("src/a.ts", "exact"), fs("src", "subtree"), false],
      false,
    ],
    [
      "case differs: outside for an allow",
      [fs("src", "subtree"), fs("SRC/a", "exact"), false],
      false,
    ],
    [
      "case differs: inside for a deny or ask",
      [fs("src", "subtree"), fs("SRC/a", "exact"), true],
      true,
    ],
    ["another type is outside", [fs(".", "subtree"), key("net", "*", "any"), false], false],
    ["a host prefix covers a longer key", [
      key("net", "api.", "prefix"),
      key("net", "api.x", "exact"),
      false,
    ], true],
    ["an exact key does not cover a prefix", [
      key("net", "a", "exact"),
      key("net", "a", "prefix"),
      false,
    ], false],
    [
      "any covers everything of its type",
      [key("net", "", "any"), key("net", "x", "prefix"), false],
      true,
    ],
    [
      "a prefix does not cover any",
      [key("tool", "x", "prefix"), key("tool", "", "any"), false],
      false,
    ],
    ["an argv prefix covers a longer argv", [
      shell(["git"], "prefix"),
      shell(["git", "log"], "exact"),
      false,
    ], true],
    ["an exact argv does not cover a prefix", [
      shell(["git"], "exact"),
      shell(["git"], "prefix"),
      false,
    ], false],
  ];
  for (const [name, args, expected] of table) assert.equal(covers(...args), expected, name);
});

Deno.test("checkTrace(): a fresh process with a fork keeps every invariant; an unknown pid is NotFoundError; nothing is appended", async () => {
  await using t = await testRuntime({
    prefix: "libos-trace-unit-",
    dirs: ["src"],
    mode: "workspace-write",
  });
  const parent = t.spawn();
  const child = t.runtime.processes.fork(parent, {
    inherit: [{ resource: { type: "fs", path: "src", scope: "subtree" }, rights: ["read"] }],
  }).pid;
  const before = t.runtime.store.lastAuditSeq();
  const report = checkTrace(t.runtime, parent, { tree: true });
  assert.deepEqual(report.violations, []);
  assert.deepEqual(report.pids, [parent, child]);
  assert.equal(report.checked.delegated, 1);
  assert.deepEqual(checkTrace(t.runtime, parent).pids, [parent], "without tree: the process only");
  assert.throws(() => checkTrace(t.runtime, "pid_000000000000"), NotFoundError);
  assert.equal(t.runtime.store.lastAuditSeq(), before, "the check appends nothing");
});
