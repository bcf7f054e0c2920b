/**
 * Model executor benchmark (issue 13): 200 turns of one process on the scripted model, each turn
 * storing a ~2 KB note, so the process's memory keeps growing. Reported: the time per turn
 * (executor, materializer, broker, store — no model latency) and the largest prompt of the run
 * against the image's token budget (the target: every prompt under it, whatever the memory holds).
 * The competitor row sends the whole conversation every turn, the way a naive agent loop does.
 *
 * @module
 */
import { join } from "node:path";
import { executorFor } from "../../runtime/model/executor.ts";
import type { ModelClient, ModelRequest } from "../../runtime/model/model_client.ts";
import { createRuntime } from "../../runtime/runtime.ts";
import { ScriptedModel } from "../../runtime/model/scripted_model.ts";
import { parseSessionLog } from "../../runtime/model/session_log.ts";
import { type BenchCase, benchDir, type BenchResult } from "./_bench.ts";

const TURNS = 200;

function script(): string {
  const lines: string[] = [];
  for (let i = 0; i < TURNS - 1; i++) {
    lines.push(JSON.stringify({
      type: "model_turn",
      tool_calls: [{
        name: "create_memory_object",
        arguments: { type: "note", payload: `note ${i}: ${"observation ".repeat(170)}` },
      }],
    }));
  }
  lines.push(JSON.stringify({ type: "model_turn", content: "done" }));
  return lines.join("\n");
}

/** Characters of a request as the model would receive them. */
function promptChars(request: ModelRequest): number {
  return request.system.length + JSON.stringify(request.tools).length +
    request.messages.reduce((n, m) => n + JSON.stringify(m).length, 0);
}

async function turns(naive: boolean): Promise<BenchResult> {
  using dir = benchDir();
  const workspace = join(dir.path, "ws");
  Deno.mkdirSync(workspace);
  await using runtime = await createRuntime({
    workspace,
    db: join(dir.path, "b.db"),
    env: { get: (n) => (n === "XDG_STATE_HOME" ? join(dir.path, "state") : undefined) },
  });
  runtime.processes.spawn({
    goal: "take notes",
    image: "base-agent:v0",
    budgets: { maxToolCalls: 10_000, maxModelTokens: 1_000_000_000 },
  });
  const budget = runtime.images.get("operator", "base-agent:v0").contextPolicy?.budgetTokens ??
    32_000;
  const inner = new ScriptedModel(parseSessionLog(script()));
  const latencies: number[] = [];
  let largest = 0;
  let history = 0;
  let last = performance.now();
  const model: ModelClient = {
    name: "bench",
    complete(request, signal) {
      const now = performance.now();
      latencies.push(now - last);
      last = now;
      const chars = promptChars(request);
      // The naive loop re-sends every earlier prompt's new part: the whole conversation.
      history += chars;
      largest = Math.max(largest, naive ? history : chars);
      return inner.complete(request, signal);
    },
  };
  using scheduler = runtime.scheduler(executorFor(runtime, model));
  const started = performance.now();
  await scheduler.runUntilIdle();
  const seconds = (performance.now() - started) / 1000;
  const tokens = Math.ceil(largest / 4);
  return {
    ops: TURNS,
    seconds,
    latenciesMs: latencies.slice(1),
    note: `largest prompt ~${tokens} tokens (${largest} chars) vs budget ${budget}: ${
      tokens <= budget ? "within the budget" : "OVER"
    }`,
  };
}

/** The executor rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "model executor: 200 scripted turns",
    name: "materialized memory under the image's budget",
    run: () => turns(false),
  },
  {
    group: "model executor: 200 scripted turns",
    name: "whole conversation re-sent each turn (competitor, measured on the same run)",
    run: () => turns(true),
  },
];
