/**
 * Sharing objects between processes: links, handles, grants with attenuation, the retention of a
 * finished process's scratch objects, merging a child's result, and a process's view.
 *
 * @module
 */
import {
  isPrivileged,
  type MemoryActor,
  OBJECT_RIGHTS,
  type ObjectAccess,
} from "./_object_access.ts";
import type { Capability, Right } from "../authority/capability.ts";
import { CapabilityDeniedError, IllegalTransitionError, ValidationError } from "../base/errors.ts";
import {
  type ObjectInfo,
  type ObjectLink,
  objectResource,
  Oid,
  processNamespace,
} from "./memory_object.ts";
import { type AgentProcess, isFinal } from "../process/process.ts";

const LINK_REL = /^[a-z][a-z0-9_.-]{0,63}$/;

/** A handle: an object and the rights the holder has on it, backed by its capabilities. */
export interface ObjectHandle {
  readonly oid: string;
  readonly namespace: string;
  readonly name: string | null;
  readonly type: string;
  readonly rights: Right[];
  /** When the earliest of the capabilities behind the handle expires (null: never). */
  readonly expiresAt: number | null;
}

/** Lists a namespace as the actor may see it (the memory's `list`). */
export type Lister = (
  actor: MemoryActor,
  namespace: string,
  options: { readonly limit?: number },
) => ObjectInfo[];

/** Links, handles, grants, retention, merge and views over one runtime's objects. */
export class ObjectSharing {
  readonly #a: ObjectAccess;
  readonly #list: Lister;

  /** Binds sharing to the memory's shared state. */
  constructor(access: ObjectAccess, list: Lister) {
    this.#a = access;
    this.#list = list;
  }

  // ---------------------------------------------------------------- links

  /** Links `from` to `to` (`rel`, e.g. `derived_from`): link on `from`, read on `to`. */
  link(actor: MemoryActor, from: string, to: string, rel: string): ObjectLink {
    if (!LINK_REL.test(rel)) {
      throw new ValidationError(
        `A link relation must be 1-64 lowercase letters, digits and _ . - (e.g. derived_from)`,
      );
    }
    return this.#a.step(() => {
      const src = this.#a.visible(actor, from, "link", "object.link");
      this.#a.visible(actor, to, "read", "object.link");
      const link: ObjectLink = {
        from,
        to,
        rel,
        creator: actor,
        createdAt: Math.trunc(this.#a.core.clock.now()),
      };
      this.#a.core.store.putLink({ ...link, created: link.createdAt });
      this.#a.allowed(actor, "object.link", `object:${src.namespace}/${from}`, { to, rel });
      return link;
    });
  }

  /** Removes a link (link on `from`); false when there was none. */
  unlink(actor: MemoryActor, from: string, to: string, rel: string): boolean {
    return this.#a.step(() => {
      const src = this.#a.visible(actor, from, "link", "object.unlink");
      // Like link(): the other end must be visible too, or unlink would tell it exists.
      this.#a.visible(actor, to, "read", "object.unlink");
      const removed = this.#a.core.store.deleteLink(from, to, rel);
      this.#a.allowed(actor, "object.unlink", `object:${src.namespace}/${from}`, {
        to,
        rel,
        removed,
      });
      return removed;
    });
  }

  /** Links from or to an object the actor may read, whose other end it may read too. */
  links(actor: MemoryActor, oid: string): ObjectLink[] {
    return this.#a.reading(() => {
      const row = this.#a.visible(actor, oid, "read", "object.links");
      const links = this.#a.core.store.listLinks(oid, this.#a.limits.pageMax).filter((l) => {
        const other = this.#a.core.store.getObject(l.from === oid ? l.to : l.from);
        return other !== undefined &&
          this.#a.may(actor, objectResource(other.namespace, other.oid), "read");
      }).map((l) => ({
        from: l.from,
        to: l.to,
        rel: l.rel,
        creator: l.creator,
        createdAt: l.created,
      }));
      this.#a.allowed(actor, "object.links", `object:${row.namespace}/${oid}`, {
        links: links.length,
      }, { read: true });
      return links;
    });
  }

  // ---------------------------------------------------------------- handles and grants

  /**
   * The actor's handle on an object: the rights it holds on it and when the earliest capability
   * behind them expires.
   * @throws {CapabilityDeniedError} when it holds none (the same when there is no such object).
   */
  handle(actor: MemoryActor, oid: string): ObjectHandle {
    return this.#a.reading(() => {
      const found = Oid.safeParse(oid).success ? this.#a.core.store.getObject(oid) : undefined;
      // A retained object is, to a process, one that is not there.
      const row = found && (isPrivileged(actor) || !this.#a.retained(found.namespace, found.oid))
        ? found
        : undefined;
      const action = "object.handle";
      if (!row) {
        this.#a.audit(actor, action, `object:?/${String(oid).slice(0, 64)}`, "deny", "not_visible");
        throw this.#a.invisible(actor, oid, "read");
      }
      const resource = objectResource(row.namespace, row.oid);
      const rights: Right[] = [];
      let expiresAt: number | null = null;
      let refused = "default";
      for (const right of OBJECT_RIGHTS) {
        const d = this.#a.decision(actor, resource, right);
        if (d.effect !== "allow") {
          if (right === "read") refused = d.reason;
          continue;
        }
        if (rights.length === 0) this.#a.passed(actor, action, `object:${resource.key}`, d.reason);
        rights.push(right);
        const cap = d.capability ? this.#a.authority.capabilities.get(d.capability) : undefined;
        if (cap?.expiresAt != null) {
          expiresAt = expiresAt === null ? cap.expiresAt : Math.min(expiresAt, cap.expiresAt);
        }
      }
      if (rights.length === 0) {
        this.#a.audit(actor, action, `object:${resource.key}`, "deny", refused);
        throw this.#a.invisible(actor, oid, "read");
      }
      const info = this.#a.decode(row);
      this.#a.allowed(actor, action, `object:${resource.key}`, { rights: rights.join(",") }, {
        read: true,
      });
      return {
        oid,
        namespace: info.namespace,
        name: info.name,
        type: info.type,
        rights,
        expiresAt,
      };
    });
  }

  /**
   * Passes rights on an object to another process: needs `grant` on it, and every right passed
   * must be one the giver holds (allow, not ask). Each new capability derives from the one that
   * gave the giver that right — revoking the giver's revokes it — and never outlives it.
   * @throws {CapabilityDeniedError} without grant (the same when there is no such object), or
   *   `cannot_delegate` for a right the giver does not hold.
   */
  grant(
    actor: MemoryActor,
    oid: string,
    to: string,
    rights: readonly Right[],
    options: { readonly expiresAt?: number } = {},
  ): Capability[] {
    if (rights.length === 0 || rights.some((r) => !OBJECT_RIGHTS.includes(r))) {
      throw new ValidationError(`Object rights are ${OBJECT_RIGHTS.join(", ")}; pass at least one`);
    }
    return this.#a.step(() => {
      const row = this.#a.visible(actor, oid, "grant", "object.grant");
      const target = this.#a.processes.get(to);
      if (isFinal(target.status)) {
        throw new IllegalTransitionError("illegal_transition", `Process ${to} is ${target.status}`);
      }
      const resource = objectResource(row.namespace, row.oid);
      // Group the rights by the capability that gives the giver each one.
      const bySource = new Map<string, { cap: Capability | undefined; rights: Right[] }>();
      for (const right of new Set(rights)) {
        const d = this.#a.decision(actor, resource, right);
        if (d.effect !== "allow") {
          this.#a.audit(actor, "object.grant", `object:${row.namespace}/${oid}`, "deny", d.reason, {
            right,
            to,
            code: "cannot_delegate",
          });
          throw new CapabilityDeniedError(
            "cannot_delegate",
            `${actor} cannot pass ${right} on object ${oid}: it does not hold it (${d.reason}); a process can only pass rights it has`,
            { reason: d.reason },
          );
        }
        const id = d.capability ?? "operator";
        const entry = bySource.get(id) ??
          {
            cap: d.capability ? this.#a.authority.capabilities.get(d.capability) : undefined,
            rights: [],
          };
        entry.rights.push(right);
        bySource.set(id, entry);
      }
      const minted: Capability[] = [];
      for (const { cap, rights: given } of bySource.values()) {
        const limits = [options.expiresAt, cap?.expiresAt ?? undefined].filter((t): t is number =>
          typeof t === "number"
        );
        minted.push(this.#a.authority.capabilities.grant({
          subject: to,
          resource: { type: "object", key: resource.key, scope: "exact" },
          rights: given,
          effect: "allow",
          issuer: actor,
          ...(cap ? { derivedFrom: cap.id } : {}),
          ...(limits.length ? { expiresAt: Math.min(...limits) } : {}),
        }, actor));
      }
      this.#a.allowed(actor, "object.grant", `object:${row.namespace}/${oid}`, {
        to,
        rights: rights.join(","),
      });
      return minted;
    });
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * At a process's finish (in its step): its scratch objects — tool results, turns, checkpoints —
   * are retained for review, no longer reachable by any process (see
   * {@link ObjectAccess.retained}); the result it names stays reachable for its parent's merge.
   * Volatile payloads never reach disk, so volatile objects go now. The retention is recorded
   * (`retained`, with when) for `libos gc`, and audited.
   */
  retain(p: AgentProcess): void {
    const namespace = processNamespace(p.pid);
    let dropped = 0;
    let after: string | undefined;
    for (;;) {
      const rows = this.#a.core.store.listObjects({
        namespaces: [namespace],
        limit: 500,
        ...(after === undefined ? {} : { afterOid: after }),
      });
      for (const row of rows) {
        if (!row.volatile) continue;
        this.#a.core.store.deleteObject(row.oid);
        this.#a.volatile.delete(row.oid);
        dropped++;
      }
      if (rows.length < 500) break;
      after = rows[rows.length - 1]!.oid;
    }
    const usage = this.#a.core.store.namespaceUsage(namespace);
    const result = p.result !== null &&
        this.#a.core.store.getObject(p.result)?.namespace === namespace
      ? p.result
      : null;
    if (usage.objects === 0 && dropped === 0) return;
    this.#a.core.store.putRetained({
      pid: p.pid,
      namespace,
      since: Math.trunc(this.#a.core.clock.now()),
      objects: usage.objects,
      bytes: usage.bytes,
      removed: null,
    });
    this.#a.core.audit.append({
      actor: "runtime",
      pid: p.pid,
      action: "object.retain",
      resource: `namespace:${namespace}`,
      decision: "none",
      authority: "lifecycle",
      detail: { objects: usage.objects, bytes: usage.bytes, result, volatile: dropped },
    });
  }

  /**
   * Merges a finished child's result into its parent: the parent (which must hold wait on the
   * child) gets read and link on the result object — only if the child itself created it in its
   * own namespace. An oid the child merely named (another process's object) grants nothing.
   * @throws {CapabilityDeniedError} for a forged result or a process that is not the parent's.
   */
  merge(parent: string, child: string): ObjectInfo {
    return this.#a.step(() => {
      // An unknown pid gets the non-child's answer, word for word (no existence oracle).
      const c = this.#a.processes.find(child);
      const action = "object.merge";
      if (!c || c.parent !== parent) {
        this.#a.audit(parent, action, `process:${child}`, "deny", "lineage:not_a_child");
        throw new IllegalTransitionError(
          "not_a_child",
          `${child} is not a child of ${parent}; only a parent merges a child's result`,
        );
      }
      const waits = { resource: { type: "process" as const, key: child }, right: "wait" as const };
      this.#a.require(
        parent,
        action,
        waits.resource,
        waits.right,
        (d) => this.#a.authority.refusal(parent, waits, d, `merge the result of ${child}`),
      );
      if (!isFinal(c.status)) {
        throw new IllegalTransitionError(
          "illegal_transition",
          `${child} is ${c.status}; merge its result after it finishes`,
        );
      }
      const result = c.result;
      const row = result && Oid.safeParse(result).success
        ? this.#a.core.store.getObject(result)
        : undefined;
      if (!row || row.namespace !== processNamespace(child) || row.creator !== child) {
        this.#a.audit(parent, action, `process:${child}`, "deny", "forged_result", {
          result: result ?? null,
        });
        throw new CapabilityDeniedError(
          "capability_denied",
          `${child}'s result ${
            JSON.stringify(result)
          } is not an object ${child} created in its own namespace; nothing was merged (an oid alone grants nothing)`,
          { reason: "forged_result" },
        );
      }
      const key = objectResource(row.namespace, row.oid).key;
      const issuer = `lineage:merge:${child}`;
      const merged = this.#a.authority.capabilities.list(parent).some((c) =>
        c.issuer === issuer && c.revokedAt === null && c.resource.type === "object" &&
        c.resource.key === key
      );
      // Merging twice changes nothing.
      if (merged) {
        this.#a.allowed(parent, action, `object:${key}`, { child, already: true });
        return this.#a.decode(row);
      }
      this.#a.authority.capabilities.grant({
        subject: parent,
        resource: { type: "object", key, scope: "exact" },
        rights: ["read", "link"],
        effect: "allow",
        issuer,
      }, "runtime");
      this.#a.allowed(parent, action, `object:${key}`, { child });
      return this.#a.decode(row);
    });
  }

  /**
   * A process's view: the objects it may read in its own namespace, then those it holds an
   * exact grant on elsewhere (passed to it, merged results), in oid order.
   */
  view(pid: string, limit: number = this.#a.limits.pageMax): ObjectInfo[] {
    const own = this.#list(pid, processNamespace(pid), { limit });
    const seen = new Set(own.map((o) => o.oid));
    const out = [...own];
    for (const cap of this.#a.authority.capabilities.list(pid)) {
      if (out.length >= limit) break;
      if (cap.resource.type !== "object" || cap.resource.scope !== "exact") continue;
      const oid = cap.resource.key.slice(cap.resource.key.lastIndexOf("/") + 1);
      if (seen.has(oid)) continue;
      const row = this.#a.core.store.getObject(oid);
      if (!row || !this.#a.may(pid, objectResource(row.namespace, row.oid), "read")) continue;
      seen.add(oid);
      out.push(this.#a.decode(row));
    }
    return out;
  }
}
