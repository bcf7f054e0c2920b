/**
 * Authority benchmark (issue 4): one capability check (`decide()` through the runtime, with the
 * `PRAGMA data_version` freshness check) while the subject holds 10,000 capabilities — target
 * p99 ≤ 10 µs. Competitor: the same answer by scanning every capability (no index).
 * Arrival pattern: back-to-back checks of random paths and keys, one caller.
 *
 * @module
 */
import { join } from "node:path";
import type { ActionResource, Capability, Right } from "../../runtime/authority/capability.ts";
import { isLive } from "../../runtime/authority/capability_index.ts";
import { specificity } from "../../runtime/authority/capability.ts";
import { createRuntime, type Runtime } from "../../runtime/runtime.ts";
import { type BenchCase, benchDir, type BenchResult } from "./_bench.ts";

const HELD = 10_000;
const CHECKS = 100_000;

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function setup(
  dir: string,
): Promise<
  { runtime: Runtime; pid: string; actions: { resource: ActionResource; right: Right }[] }
> {
  const workspace = join(dir, "ws");
  Deno.mkdirSync(workspace);
  const runtime = await createRuntime({
    workspace,
    db: join(dir, "b.db"),
    env: { get: (n) => (n === "XDG_STATE_HOME" ? join(dir, "state") : undefined) },
  });
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  const caps = runtime.authority.capabilities;
  runtime.store.step(() => {
    for (let i = 0; i < HELD; i++) {
      const kind = i % 10;
      if (kind < 6) {
        caps.grant({
          subject: pid,
          resource: { type: "fs", path: `src/mod_${i % 300}/file_${i}.ts`, scope: "exact" },
          rights: ["read", "write"],
          effect: "allow",
          issuer: "bench",
        });
      } else if (kind < 8) {
        caps.grant({
          subject: pid,
          resource: { type: "fs", path: `pkg_${i}`, scope: "subtree" },
          rights: ["read"],
          effect: "allow",
          issuer: "bench",
        });
      } else if (kind < 9) {
        caps.grant({
          subject: pid,
          resource: { type: "fs", path: `pkg_${i - 1}/secret`, scope: "subtree" },
          rights: ["read"],
          effect: "deny",
          issuer: "bench",
        });
      } else {caps.grant({
          subject: pid,
          resource: { type: "object", key: `obj_${i}`, scope: "exact" },
          rights: ["read"],
          effect: "allow",
          issuer: "bench",
        });}
    }
  });
  runtime.store.flush();
  const random = rng(7);
  const actions = Array.from({ length: 1000 }, () => {
    const i = Math.floor(random() * HELD);
    const pick = random();
    if (pick < 0.4) {
      return {
        resource: { type: "fs", path: `src/mod_${i % 300}/file_${i}.ts` } as ActionResource,
        right: "write" as Right,
      };
    }
    if (pick < 0.7) {
      return {
        resource: { type: "fs", path: `pkg_${i}/secret/deep/x.ts` } as ActionResource,
        right: "read" as Right,
      };
    }
    if (pick < 0.9) {
      return {
        resource: { type: "fs", path: `unlisted/${i}/a.ts` } as ActionResource,
        right: "read" as Right,
      };
    }
    return {
      resource: { type: "object", key: `obj_${i}` } as ActionResource,
      right: "read" as Right,
    };
  });
  return { runtime, pid, actions };
}

function timed(
  actions: readonly { resource: ActionResource; right: Right }[],
  check: (a: { resource: ActionResource; right: Right }) => unknown,
): BenchResult {
  const latencies: number[] = [];
  for (let i = 0; i < 2000; i++) check(actions[i % actions.length]!); // warm-up
  const start = performance.now();
  for (let i = 0; i < CHECKS; i++) {
    const a = actions[i % actions.length]!;
    const t = performance.now();
    check(a);
    latencies.push(performance.now() - t);
  }
  return { ops: CHECKS, seconds: (performance.now() - start) / 1000, latenciesMs: latencies };
}

/** The authority rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "capability check",
    name: "decide() with 10,000 capabilities held (indexed)",
    target: { maxP99Ms: 0.01 },
    async run() {
      using dir = benchDir();
      const { runtime, pid, actions } = await setup(dir.path);
      try {
        return {
          ...timed(actions, (a) => runtime.authority.decide(pid, a)),
          note:
            `${HELD} capabilities; random fs paths and object keys; includes the data_version check`,
        };
      } finally {
        await runtime.close();
      }
    },
  },
  {
    group: "capability check",
    name: "linear scan of 10,000 capabilities (competitor)",
    async run() {
      using dir = benchDir();
      const { runtime, pid, actions } = await setup(dir.path);
      try {
        const caps: Capability[] = runtime.authority.capabilities.list(pid);
        const scan = (a: { resource: ActionResource; right: Right }) => {
          let best: Capability | undefined;
          let spec = -1;
          for (const c of caps) {
            if (!c.rights.includes(a.right) || !isLive(c, 0)) continue;
            const s = specificity(c.resource, a.resource, c.effect !== "allow");
            if (s !== undefined && s > spec) {
              best = c;
              spec = s;
            }
          }
          return best;
        };
        return {
          ...timed(actions, scan),
          note: "no index, no layers: the floor an index has to beat",
        };
      } finally {
        await runtime.close();
      }
    },
  },
];
