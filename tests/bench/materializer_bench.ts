/**
 * Materializer benchmark (issue "Object Memory", part "Materializer").
 *
 * - A view of 1,000 objects (100–2,000 characters, every 25th 20,000): the first turn (no previous
 *   state), then steady turns that update one object each. Target: warm p99 ≤ 5 ms.
 * - 200 turns adding one object per turn under the default 32k-token budget: the context size per
 *   turn, which must stay within the budget on every turn (the run fails otherwise).
 * - Competitor: the prototype's way (REFERENCE §10.4), re-sending every object every turn into a
 *   growing conversation — quadratic growth.
 *
 * Arrival pattern: back-to-back turns, one caller, no model in the loop.
 *
 * @module
 */
import { canonicalJson, type JsonValue, sha256Hex } from "../../runtime/base/canonical_json.ts";
import {
  DEFAULT_CONTEXT_POLICY,
  materialize,
  type MaterializedContext,
  type ViewObject,
} from "../../runtime/memory/materializer.ts";
import type { BenchCase, BenchResult } from "./_bench.ts";

const TURNS = 200;

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ["read", "file", "tool", "result", "plan", "step", "error", "value", "test", "done"];

/** Object `n`: prose-like text of a size drawn from `random`, every 25th one oversized. */
function object(n: number, random: () => number, version = 1): ViewObject {
  const size = n % 25 === 0 ? 20_000 : 100 + Math.floor(random() * 1_900);
  let payload = "";
  while (payload.length < size) {
    payload += `${WORDS[Math.floor(random() * WORDS.length)]}${random() < 0.1 ? "\n" : " "}`;
  }
  return withPayload(n, payload, version);
}

function withPayload(n: number, payload: JsonValue, version: number): ViewObject {
  const json = canonicalJson(payload);
  return {
    info: {
      oid: `obj_${n.toString(16).padStart(12, "0")}`,
      namespace: "process:pid_000000000001",
      name: `result-${n}`,
      type: n % 3 === 0 ? "tool.output" : "note",
      metadata: { tags: [], attrs: {} },
      provenance: { source: n % 4 === 0 ? "web" : "tool", label: "bench", ref: null },
      version,
      immutable: false,
      volatile: false,
      creator: "pid_000000000001",
      bytes: json.length,
      sha256: sha256Hex(json),
      createdAt: n,
      updatedAt: n * 10 + version,
    },
    payload,
    pinned: n <= 2,
  };
}

function timed(iterations: number, step: (i: number) => void): BenchResult {
  const latencies: number[] = [];
  const start = performance.now();
  for (let i = 0; i < iterations; i++) {
    const t = performance.now();
    step(i);
    latencies.push(performance.now() - t);
  }
  return { ops: iterations, seconds: (performance.now() - start) / 1000, latenciesMs: latencies };
}

function thousand(): ViewObject[] {
  const random = rng(1);
  return Array.from({ length: 1_000 }, (_, i) => object(i + 1, random));
}

/** "t10 12.3k t20 24.1k …": the size at every 10th turn. */
function sequence(sizes: readonly number[]): string {
  return sizes.flatMap((s, i) => (i + 1) % 10 === 0 ? [`t${i + 1} ${(s / 1000).toFixed(1)}k`] : [])
    .join(" ");
}

/** The materializer rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "materializer: 1,000 objects",
    name: "materialize() 1,000-object view, first turn",
    run() {
      const objects = thousand();
      for (let i = 0; i < 20; i++) materialize({ objects }); // warm-up
      let last: MaterializedContext | undefined;
      const result = timed(200, () => {
        last = materialize({ objects });
      });
      return {
        ...result,
        note: `${last!.tokens.estimated} est. tokens: ${
          last!.body.filter((s) => s.kind === "full").length
        } full, ${last!.references.length} refs, ${last!.omitted.length} left out`,
      };
    },
  },
  {
    group: "materializer: 1,000 objects",
    name: "materialize() 1,000-object view, one object updated per turn",
    target: { maxP99Ms: 5 },
    run() {
      const random = rng(2);
      const objects = thousand();
      let previous = materialize({ objects });
      const step = (i: number) => {
        const n = 1 + Math.floor(random() * objects.length);
        const old = objects[n - 1]!;
        objects[n - 1] = withPayload(n, `update ${i} of ${n}`, old.info.version + 1);
        previous = materialize({ objects }, { previous: previous.state });
      };
      for (let i = 0; i < 100; i++) step(i); // warm-up
      let compactions = 0;
      const result = timed(1_000, (i) => {
        step(100 + i);
        if (previous.compacted) compactions++;
      });
      return {
        ...result,
        note: `steady state with previous state; ${compactions} compactions in 1,000 turns; ${
          (JSON.stringify(previous.state).length / 1024).toFixed(0)
        } KiB state`,
      };
    },
  },
  {
    group: "materializer: 200 turns",
    name: "materialize() 200 turns, one new object per turn",
    run() {
      const random = rng(3);
      const objects: ViewObject[] = [];
      const sizes: number[] = [];
      let sent = 0;
      let reused = 0;
      let previous: MaterializedContext | undefined;
      const budget = DEFAULT_CONTEXT_POLICY.budgetTokens;
      const result = timed(TURNS, (i) => {
        objects.push(object(i + 1, random));
        previous = materialize({ objects }, { previous: previous?.state });
        if (previous.tokens.estimated > budget) {
          throw new Error(`turn ${i + 1}: ${previous.tokens.estimated} tokens > budget ${budget}`);
        }
        sizes.push(previous.text.length);
        sent += previous.text.length;
        reused += previous.reusedChars;
      });
      const max = Math.max(...sizes);
      return {
        ...result,
        note: `chars ${sequence(sizes)}; max ${
          (max / 1000).toFixed(1)
        }k; every turn <= ${budget} tokens: MET; ${(sent / 1e6).toFixed(1)} M chars sent in all, ${
          Math.round(100 * reused / sent)
        }% a cached prefix`,
      };
    },
  },
  {
    group: "materializer: 200 turns",
    name: "naive re-send of every object each turn (prototype-style competitor)",
    run() {
      const random = rng(3);
      const objects: ViewObject[] = [];
      const sizes: number[] = [];
      let prompt = "";
      let sent = 0;
      const result = timed(TURNS, (i) => {
        objects.push(object(i + 1, random));
        // Each turn appends a snapshot of every object to the conversation, as the prototype did.
        let snapshot = "";
        for (const o of objects) snapshot += `${o.info.oid}: ${canonicalJson(o.payload ?? null)}\n`;
        prompt += snapshot;
        sizes.push(prompt.length);
        sent += prompt.length;
      });
      return {
        ...result,
        note: `chars t40 ${(sizes[39]! / 1e6).toFixed(2)}M, t200 ${
          (sizes[TURNS - 1]! / 1e6).toFixed(1)
        }M (${
          Math.round(sizes[TURNS - 1]! / 4 / DEFAULT_CONTEXT_POLICY.budgetTokens)
        }x the budget); ${(sent / 1e6).toFixed(0)} M chars sent in all`,
      };
    },
  },
];
