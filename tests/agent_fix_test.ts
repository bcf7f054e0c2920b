/**
 * End to end (issue 14): the coding agent, driven by the scripted model, fixes a failing test in a
 * small fixture repository — it reads the test, runs it through the shell policy (which asks a
 * human), reads the code, edits it under approval (the human is shown the unified diff), runs the
 * test again, and reports. The test plays the human: it approves each request after checking what
 * it shows.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { executorFor } from "../runtime/model/executor.ts";
import type { ModelClient } from "../runtime/model/model_client.ts";
import { ScriptedModel } from "../runtime/model/scripted_model.ts";
import { parseSessionLog } from "../runtime/model/session_log.ts";
import { testRuntime } from "../testing.ts";
import { BROKEN, FIX_EDIT, FIXED, RUN_TESTS, TEST, turn } from "./agent_fixture.ts";
import { assertTraceInvariants } from "./trace_invariants.ts";

Deno.test("The coding agent on the scripted model fixes a failing test: read, run the test (asked), edit under approval with a diff, run again, report", async () => {
  await using t = await testRuntime({
    prefix: "libos-fix-",
    // The fixture repository (fixRepository()): a failing test and the code under it.
    files: { "src/mathlib.py": BROKEN, "tests/test_mathlib.py": TEST },
    mode: "workspace-write",
    human: "queue",
    wall: false,
    env: { get: (n) => (n === "PYTHONDONTWRITEBYTECODE" ? "1" : undefined) },
  });
  const { runtime, workspace: ws } = t;
  const pid = t.spawn({ goal: "Make tests/test_mathlib.py pass", image: "coding-agent:v0" });
  // The operator's policy: edits under src/ go to a human.
  runtime.authority.capabilities.grant({
    subject: pid,
    resource: { type: "fs", path: "src", scope: "subtree" },
    rights: ["write"],
    effect: "ask",
    issuer: "operator",
  }, "operator");
  const model = new ScriptedModel(parseSessionLog([
    turn({
      tool_calls: [{ name: "read_text_file", arguments: { path: "tests/test_mathlib.py" } }],
    }),
    turn({ tool_calls: [RUN_TESTS] }),
    turn({ tool_calls: [{ name: "read_text_file", arguments: { path: "src/mathlib.py" } }] }),
    turn({ tool_calls: [FIX_EDIT] }),
    turn({ tool_calls: [RUN_TESTS] }),
    turn({
      content: "Fixed add() in src/mathlib.py (it added 1); tests/test_mathlib.py passes.",
    }),
  ].join("\n")));
  // What the model is shown of each command it ran.
  const runsShown: string[] = [];
  const spy: ModelClient = {
    name: model.name,
    complete(request, signal) {
      const last = request.messages.filter((m) => m.role === "tool").map((m) => m.content);
      for (const content of last) if (content.includes('"exitCode"')) runsShown.push(content);
      return model.complete(request, signal);
    },
  };
  using scheduler = runtime.scheduler(executorFor(runtime, spy));
  const shown: string[] = [];
  for (let round = 0; round < 10; round++) {
    await scheduler.runUntilIdle();
    if (runtime.processes.get(pid).status !== "waiting_human") break;
    for (const request of runtime.human.list()) {
      const a = request.approval!;
      shown.push(a.operation);
      if (a.operation === "fs.write") {
        // The human sees exactly the edit.
        assert.match(a.diff ?? "", /^- {4}return a \+ b \+ 1$/m);
        assert.match(a.diff ?? "", /^\+ {4}return a \+ b$/m);
      } else {
        assert.deepEqual(a.argv, ["python3", "tests/test_mathlib.py"]);
      }
      runtime.human.approve(request.id, { by: "human:test" });
    }
  }
  const p = runtime.processes.get(pid);
  assert.equal(p.status, "exited", p.message ?? "");
  assert.match(p.message ?? "", /Fixed add\(\)/);
  assert.equal(Deno.readTextFileSync(join(ws, "src", "mathlib.py")), FIXED);
  assert.deepEqual(shown, ["shell.run", "fs.write", "shell.run"], "three human decisions");
  // The two runs, as the model was shown them: failing, then passing.
  const exits = [...new Set(runsShown)].map((content) => {
    const shown = JSON.parse(content) as { value?: { exitCode?: number; stderr?: string } };
    return [shown.value?.exitCode, /FAILED|OK/.exec(shown.value?.stderr ?? "")?.[0]];
  });
  assert.deepEqual(exits, [[1, "FAILED"], [0, "OK"]]);
  const report = runtime.memory.read("operator", p.result!).payload as string;
  assert.match(report, /passes/);
  assertTraceInvariants(runtime, pid);
});
