import assert from "node:assert/strict";
import { FakeClock } from "../base/clock.ts";
import { seededIds } from "../base/ids.ts";
import { type MaterializerState } from "./materializer.ts";
import { processContext } from "./process_context.ts";
import { testRuntime } from "../../testing.ts";

async function fixture() {
  const clock = new FakeClock(Date.UTC(2026, 10, 29, 12));
  const t = await testRuntime({ prefix: "libos-context-", clock, ids: seededIds(61) });
  return { ...t, clock };
}

const MODEL = { source: "model", label: "test-model", ref: null } as const;

Deno.test("processContext() keeps a 200-turn process under its budget every turn, re-sending nothing it already sent", async () => {
  await using f = await fixture();
  const memory = f.runtime.memory;
  const pid = f.runtime.processes.spawn({ goal: "long task", image: "base-agent:v0" }).pid;
  memory.create(pid, {
    name: "goal",
    type: "note",
    payload: "Keep the build green.",
    tags: ["pinned"],
    provenance: { source: "user", label: "operator", ref: null },
  });
  const budget = 4000;
  let state: MaterializerState | undefined;
  let previous = "";
  const sizes: number[] = [];
  for (let turn = 1; turn <= 200; turn++) {
    f.clock.advance(1000);
    memory.create(pid, {
      type: "tool.output",
      // Varied sizes, some far above the per-object cap.
      payload: `turn ${turn}: ` + "log line\n".repeat((turn * 37) % 400),
      provenance: MODEL,
    });
    const ctx = processContext(memory, pid, {
      policy: { budgetTokens: budget },
      ...(state ? { previous: state } : {}),
    });
    assert.ok(ctx.tokens.estimated <= budget, `turn ${turn}: ${ctx.tokens.estimated} > ${budget}`);
    assert.ok(ctx.text.includes("Keep the build green."), "the pinned goal is always there");
    if (!ctx.compacted && previous !== "") {
      assert.ok(ctx.text.startsWith(previous), `turn ${turn} only appends between compactions`);
    }
    sizes.push(ctx.text.length);
    previous = ctx.text;
    state = JSON.parse(JSON.stringify(ctx.state));
  }
  // Bounded: the prototype grew to 820,000 characters in 40 turns.
  assert.ok(Math.max(...sizes) <= budget * 4 + 1000, `max ${Math.max(...sizes)} characters`);
});

Deno.test("processContext() shows only what the process may read (its own objects and those passed to it)", async () => {
  await using f = await fixture();
  const memory = f.runtime.memory;
  const a = f.runtime.processes.spawn({ goal: "a", image: "base-agent:v0" }).pid;
  const b = f.runtime.processes.spawn({ goal: "b", image: "base-agent:v0" }).pid;
  memory.create(a, { type: "note", payload: "SECRET-OF-A", provenance: MODEL });
  const shared = memory.create(a, { type: "note", payload: "shared with b", provenance: MODEL });
  memory.grant(a, shared.oid, b, ["read"]);
  memory.create(b, { type: "note", payload: "b's own note", provenance: MODEL });
  const ctx = processContext(memory, b);
  assert.ok(ctx.text.includes("b's own note"));
  assert.ok(ctx.text.includes("shared with b"));
  assert.ok(
    !ctx.text.includes("SECRET-OF-A"),
    "another process's object never reaches b's context",
  );
});
