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
import {
  type ActionResource,
  type Capability,
  type Effect,
  foldArgv,
  specificity,
} from "./capability.ts";

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
  if (resource.type === "shell") {
    return (fold ? foldArgv(resource.argv) : resource.argv).join("\u0000");
  }
  const raw = resource.type === "fs" ? resource.path : resource.key;
  return fold ? raw.toLowerCase() : raw;
}

interface Bucket {
  readonly exact: Map<string, Capability[]>;
  readonly prefix: Map<string, Capability[]>;
  /** For keyed resources: the lengths of the prefixes present, so only those are looked up. */
  readonly prefixLengths: Set<number>;
  readonly any: Capability[];
}

function bucket(): Bucket {
  return { exact: new Map(), prefix: new Map(), prefixLengths: new Set(), any: [] };
}

function push(map: Map<string, Capability[]>, key: string, cap: Capability): void {
  const list = map.get(key);
  if (list) list.push(cap);
  else map.set(key, [cap]);
}

/** Candidate lookup keys for a concrete resource: each enclosing prefix, itself included. */
function prefixes(resource: ActionResource, fold: boolean, lengths: ReadonlySet<number>): string[] {
  if (resource.type === "fs") {
    const path = fold ? resource.path.toLowerCase() : resource.path;
    const out = ["."];
    if (path === ".") return out;
    for (let i = path.indexOf("/"); i !== -1; i = path.indexOf("/", i + 1)) {
      out.push(path.slice(0, i));
    }
    out.push(path);
    return out;
  }
  if (resource.type === "shell") {
    const argv = fold ? foldArgv(resource.argv) : resource.argv;
    // The empty prefix (every command) first, then each longer one.
    const out: string[] = [""];
    let key = "";
    for (const [i, token] of argv.entries()) {
      key = i === 0 ? token : `${key}\u0000${token}`;
      out.push(key);
    }
    return out;
  }
  const key = fold ? resource.key.toLowerCase() : resource.key;
  const out: string[] = [];
  for (const length of lengths) if (length <= key.length) out.push(key.slice(0, length));
  return out;
}

const FOLDS: readonly boolean[] = Object.freeze([false, true]);

interface Best {
  cap: Capability | undefined;
  spec: number;
}

/** Folds the candidates in `list` into `best` (most specific; ties deny > ask > allow). */
function consider(
  best: Best,
  list: readonly Capability[] | undefined,
  resource: ActionResource,
  right: string,
  digest: string | undefined,
  now: number,
  fold: boolean,
): void {
  if (!list) return;
  for (const cap of list) {
    if (!cap.rights.includes(right) || !isLive(cap, now)) continue;
    if (cap.actionDigest !== null && cap.actionDigest !== digest) continue;
    const spec = specificity(cap.resource, resource, fold);
    if (spec === undefined) continue;
    if (
      spec > best.spec ||
      (spec === best.spec && best.cap && RANK[cap.effect] > RANK[best.cap.effect])
    ) {
      best.cap = cap;
      best.spec = spec;
    }
  }
}

/** One subject's capabilities, indexed. Immutable once built; rebuild to change. */
export class CapabilityIndex {
  /** `type|tier|fold` → bucket. Allow capabilities are indexed exactly, deny/ask folded. */
  readonly #buckets = new Map<string, Bucket>();
  /** Allow capabilities bound to one action digest: a human's approval of exactly that action. */
  readonly #approvals: Capability[] = [];
  readonly size: number;

  /** Indexes the given capabilities (dead ones included: liveness is checked at match time). */
  constructor(caps: readonly Capability[]) {
    this.size = caps.length;
    for (const cap of caps) {
      if (cap.effect === "allow" && cap.actionDigest !== null) {
        // An approval answers an ask for exactly its action, never an ordinary lookup: indexed
        // with the rest it could tie with, or outrank, a standing grant on another path.
        this.#approvals.push(cap);
        continue;
      }
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
      else {
        const key = keyOf(cap.resource, fold);
        push(b.prefix, key, cap);
        b.prefixLengths.add(key.length);
      }
    }
  }

  #best(
    resource: ActionResource,
    right: string,
    digest: string | undefined,
    now: number,
    tier: Capability["tier"],
  ): CapabilityMatch | undefined {
    const found: Best = { cap: undefined, spec: -1 };
    for (const fold of FOLDS) {
      const b = this.#buckets.get(`${resource.type}|${tier}|${fold}`);
      if (!b) continue;
      if (b.exact.size > 0) {
        consider(found, b.exact.get(keyOf(resource, fold)), resource, right, digest, now, fold);
      }
      // Enclosing prefixes are computed only when some capability is a prefix or subtree.
      if (b.prefix.size > 0) {
        for (const key of prefixes(resource, fold, b.prefixLengths)) {
          consider(found, b.prefix.get(key), resource, right, digest, now, fold);
        }
      }
      consider(found, b.any, resource, right, digest, now, fold);
    }
    return found.cap ? { effect: found.cap.effect, capability: found.cap } : undefined;
  }

  /**
   * A live approval (an allow bound to exactly this action's digest) covering the action, if any.
   * `decide()` lets one satisfy an ask from any layer — that ask was for this human decision —
   * but never a deny.
   */
  approval(
    resource: ActionResource,
    right: string,
    digest: string | undefined,
    now: number,
  ): CapabilityMatch | undefined {
    if (digest === undefined) return undefined;
    for (const cap of this.#approvals) {
      if (
        cap.actionDigest === digest && cap.rights.includes(right) && isLive(cap, now) &&
        specificity(cap.resource, resource, false) !== undefined
      ) {
        return { effect: "allow", capability: cap };
      }
    }
    return undefined;
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
