/**
 * The in-memory index of one subject's capabilities, built so that a check costs a few map
 * lookups whatever the number of capabilities held: exact resources by key, filesystem subtrees
 * by each ancestor of the requested path, prefixes by each prefix of the requested key.
 *
 * Matching (DESIGN §3, layer 4): among the live capabilities that cover the resource, hold the
 * right and fit the action digest, the most specific resource wins; ties go deny > ask > allow.
 * Deny and ask capabilities also match case-insensitively (stricter only); allow ones exactly.
 * Inherited capabilities form a floor: an inherited deny cannot be overridden and an inherited
 * ask cannot be lifted to allow by the subject's own later grants.
 *
 * @module
 */
import { type ActionResource, type Capability, type Effect, specificity } from "./capability.ts";

/** The capability that decided a check, and its effect. */
export interface CapabilityMatch {
  readonly effect: Effect;
  readonly capability: Capability;
}

const RANK: Readonly<Record<Effect, number>> = Object.freeze({ deny: 3, ask: 2, allow: 1 });

/** Whether a capability can match anything at `now`. */
export function isLive(cap: Capability, now: number): boolean {
  return cap.revokedAt === null && (cap.expiresAt === null || now < cap.expiresAt) &&
    !(cap.oneShot && cap.usedAt !== null);
}

function keyOf(resource: ActionResource | Capability["resource"], fold: boolean): string {
  const raw = resource.type === "fs"
    ? resource.path
    : resource.type === "shell"
    ? resource.argv.join("\u0000")
    : resource.key;
  return fold ? raw.toLowerCase() : raw;
}

interface Bucket {
  readonly exact: Map<string, Capability[]>;
  readonly prefix: Map<string, Capability[]>;
  readonly any: Capability[];
}

function bucket(): Bucket {
  return { exact: new Map(), prefix: new Map(), any: [] };
}

function push(map: Map<string, Capability[]>, key: string, cap: Capability): void {
  const list = map.get(key);
  if (list) list.push(cap);
  else map.set(key, [cap]);
}

/** Candidate lookup keys for a concrete resource: itself and each enclosing prefix. */
function prefixes(resource: ActionResource, fold: boolean): string[] {
  if (resource.type === "fs") {
    const path = fold ? resource.path.toLowerCase() : resource.path;
    const out = ["."];
    if (path === ".") return out;
    const parts = path.split("/");
    for (let i = 1; i <= parts.length; i++) out.push(parts.slice(0, i).join("/"));
    return out;
  }
  if (resource.type === "shell") {
    const argv = fold ? resource.argv.map((t) => t.toLowerCase()) : [...resource.argv];
    const out: string[] = [];
    for (let i = 1; i <= argv.length; i++) out.push(argv.slice(0, i).join("\u0000"));
    return out;
  }
  const key = fold ? resource.key.toLowerCase() : resource.key;
  const out: string[] = [];
  for (let i = 1; i <= key.length; i++) out.push(key.slice(0, i));
  return out;
}

/** One subject's capabilities, indexed. Immutable once built; rebuild to change. */
export class CapabilityIndex {
  /** `type|tier|fold` → bucket. Allow capabilities are indexed exactly, deny/ask folded. */
  readonly #buckets = new Map<string, Bucket>();
  readonly size: number;

  /** Indexes the given capabilities (dead ones included: liveness is checked at match time). */
  constructor(caps: readonly Capability[]) {
    this.size = caps.length;
    for (const cap of caps) {
      const fold = cap.effect !== "allow";
      const id = `${cap.resource.type}|${cap.tier}|${fold}`;
      let b = this.#buckets.get(id);
      if (!b) {
        b = bucket();
        this.#buckets.set(id, b);
      }
      const scope = cap.resource.scope;
      if (scope === "any") b.any.push(cap);
      else if (scope === "exact") push(b.exact, keyOf(cap.resource, fold), cap);
      else push(b.prefix, keyOf(cap.resource, fold), cap);
    }
  }

  #best(
    resource: ActionResource,
    right: string,
    digest: string | undefined,
    now: number,
    tier: Capability["tier"],
  ): CapabilityMatch | undefined {
    let best: Capability | undefined;
    let bestSpec = -1;
    const consider = (cap: Capability, fold: boolean) => {
      if (!cap.rights.includes(right) || !isLive(cap, now)) return;
      if (cap.actionDigest !== null && cap.actionDigest !== digest) return;
      const spec = specificity(cap.resource, resource, fold);
      if (spec === undefined) return;
      if (spec > bestSpec || (spec === bestSpec && best && RANK[cap.effect] > RANK[best.effect])) {
        best = cap;
        bestSpec = spec;
      }
    };
    for (const fold of [false, true]) {
      const b = this.#buckets.get(`${resource.type}|${tier}|${fold}`);
      if (!b) continue;
      const keys = prefixes(resource, fold);
      for (const cap of b.exact.get(keys[keys.length - 1] ?? "") ?? []) consider(cap, fold);
      for (const key of keys) for (const cap of b.prefix.get(key) ?? []) consider(cap, fold);
      for (const cap of b.any) consider(cap, fold);
    }
    return best ? { effect: best.effect, capability: best } : undefined;
  }

  /**
   * The capability answer for `right` on `resource`, or `undefined` when no capability speaks.
   * `digest` is the canonical digest of the action, for digest-bound capabilities.
   */
  match(
    resource: ActionResource,
    right: string,
    digest: string | undefined,
    now: number,
  ): CapabilityMatch | undefined {
    const inherited = this.#best(resource, right, digest, now, "inherited");
    const own = this.#best(resource, right, digest, now, "own");
    if (!inherited) return own;
    if (inherited.effect === "deny") return inherited;
    if (inherited.effect === "ask") return own?.effect === "deny" ? own : inherited;
    return own ?? inherited;
  }
}
