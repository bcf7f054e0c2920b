/**
 * Delegation (DESIGN §2, attenuation): what a child receives when a parent hands it a scope.
 *
 * The child gets the parent's *effective* authority over the delegated scope, never more: for
 * each right, at the scope itself and at every parent capability boundary inside it, the child
 * receives a capability whose effect is the parent's decision there — so deny and ask carve-outs
 * inside the scope survive, an ask never becomes an allow, and the parent's own inherited floor
 * is already folded in. Every derived capability names the parent capability that decided it,
 * so revoking that one revokes the child's too. One-shot and action-bound capabilities (human
 * approvals of one exact action) are never delegated.
 *
 * @module
 */
import {
  type ActionResource,
  type Capability,
  type CapabilityResource,
  foldArgv,
  inSubtree,
  resourceString,
  type Right,
} from "./capability.ts";
import { CapabilityIndex, isLive } from "./capability_index.ts";
import type { GrantRequest } from "./capability_table.ts";
import { CapabilityDeniedError } from "../base/errors.ts";

/** A scope a parent hands to a child. */
export interface InheritScope {
  readonly resource: CapabilityResource;
  readonly rights: readonly Right[];
}

/** A character no real path segment, argv token or key ends with: a point strictly inside a prefix. */
const INSIDE = "\u0001";

/**
 * Whether capability resource `inner` lies within scope `outer` (same type). `fold` compares the
 * way deny and ask capabilities match (case-insensitively, programs by bare name): a carve-out
 * written `SRC/Secret` lies inside a scope `src`.
 */
function within(outer: CapabilityResource, inner: CapabilityResource, fold: boolean): boolean {
  const text = (s: string) => (fold ? s.toLowerCase() : s);
  if (outer.type === "fs" && inner.type === "fs") {
    const o = text(outer.path);
    const i = text(inner.path);
    if (outer.scope === "exact") return inner.scope === "exact" && i === o;
    return inSubtree(o, i);
  }
  if (outer.type === "shell" && inner.type === "shell") {
    if (outer.scope === "any") return true;
    const o = fold ? foldArgv(outer.argv) : outer.argv;
    const i = fold ? foldArgv(inner.argv) : inner.argv;
    const fits = o.length <= i.length && o.every((t, n) => t === i[n]);
    if (outer.scope === "exact") return inner.scope === "exact" && fits && o.length === i.length;
    return fits && inner.scope !== "any";
  }
  if (
    outer.type !== "fs" && outer.type !== "shell" && inner.type !== "fs" && inner.type !== "shell"
  ) {
    if (outer.type !== inner.type) return false;
    if (outer.scope === "any") return true;
    if (outer.scope === "exact") {
      return inner.scope === "exact" && text(inner.key) === text(outer.key);
    }
    return inner.scope !== "any" && text(inner.key).startsWith(text(outer.key));
  }
  return false;
}

/** A concrete point that only `resource` (and what encloses it) covers: its path, or just inside it. */
function probe(resource: CapabilityResource): ActionResource {
  if (resource.type === "fs") {
    return {
      type: "fs",
      path: resource.scope === "exact"
        ? resource.path
        : resource.path === "."
        ? INSIDE
        : `${resource.path}/${INSIDE}`,
    };
  }
  if (resource.type === "shell") {
    return {
      type: "shell",
      argv: resource.scope === "exact" ? resource.argv : [...resource.argv, INSIDE],
    };
  }
  return {
    type: resource.type,
    key: resource.scope === "exact"
      ? resource.key
      : `${resource.scope === "any" ? "" : resource.key}${INSIDE}`,
  };
}

/**
 * The grants a child receives for `scopes`, computed from the parent's capabilities at `now`.
 * @throws {CapabilityDeniedError} `cannot_delegate` when the parent holds no allow or ask for a
 *   requested right at the scope itself (it cannot hand over what it does not have).
 */
export function delegate(
  parentCaps: readonly Capability[],
  child: string,
  scopes: readonly InheritScope[],
  now: number,
): GrantRequest[] {
  // One-shot and action-bound allows (a human approving one exact action) are never handed on;
  // restrictions always are. Action-bound restrictions are copied as they are (below), since a
  // probe carries no action digest; the rest shape the parent's effective answer.
  const live = parentCaps.filter((c) =>
    isLive(c, now) && (c.effect !== "allow" || (!c.oneShot && c.actionDigest === null))
  );
  const usable = live.filter((c) => c.actionDigest === null);
  const bound = live.filter((c) => c.actionDigest !== null);
  const parent = new CapabilityIndex(usable);
  const grants: GrantRequest[] = [];
  for (const scope of scopes) {
    for (const right of new Set(scope.rights)) {
      const root = parent.match(probe(scope.resource), right, undefined, now);
      if (!root || root.effect === "deny") {
        throw new CapabilityDeniedError(
          "cannot_delegate",
          `Cannot hand ${right} on ${resourceString(scope.resource)} to a child: the parent ${
            root ? `is denied it (${root.capability.id})` : "holds no such authority"
          }; delegate a scope the parent may use`,
          { reason: root ? `cap:${root.capability.id}` : "default" },
        );
      }
      const boundaries = [
        scope.resource,
        ...usable.filter((c) =>
          c.rights.includes(right) && within(scope.resource, c.resource, c.effect !== "allow")
        ).map((c) => c.resource),
      ];
      const seen = new Set<string>();
      for (const boundary of boundaries) {
        const key = JSON.stringify(boundary);
        if (seen.has(key)) continue;
        seen.add(key);
        const answer = parent.match(probe(boundary), right, undefined, now);
        if (!answer) continue;
        grants.push({
          subject: child,
          resource: boundary,
          rights: [right],
          effect: answer.effect,
          issuer: `lineage:${answer.capability.subject}`,
          derivedFrom: answer.capability.id,
          tier: "inherited",
          ...(answer.capability.expiresAt === null
            ? {}
            : { expiresAt: answer.capability.expiresAt }),
        });
      }
      for (const cap of bound) {
        if (!cap.rights.includes(right) || !within(scope.resource, cap.resource, true)) continue;
        grants.push({
          subject: child,
          resource: cap.resource,
          rights: [right],
          effect: cap.effect,
          actionDigest: cap.actionDigest!,
          ...(cap.oneShot ? { oneShot: true } : {}),
          issuer: `lineage:${cap.subject}`,
          derivedFrom: cap.id,
          tier: "inherited",
          ...(cap.expiresAt === null ? {} : { expiresAt: cap.expiresAt }),
        });
      }
    }
  }
  return grants;
}
