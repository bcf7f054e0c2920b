/**
 * The capability table: grants, revocations (cascading to everything derived), one-shot
 * consumption, and the per-subject in-memory indexes checks run against. The indexes are
 * rebuilt when another connection commits (`PRAGMA data_version` changed), so a revocation made
 * from a second terminal takes effect on the very next check.
 *
 * @module
 */
import { z } from "zod";
import {
  type ActionResource,
  Capability,
  CapabilityResource,
  Effect,
  isRight,
  resourceString,
} from "./capability.ts";
import { CapabilityIndex, type CapabilityMatch } from "./capability_index.ts";
import {
  CapabilityDeniedError,
  NotFoundError,
  StoreError,
  ValidationError,
} from "../base/errors.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import type { CapabilityRow } from "../store/store.ts";
import { netHostPattern, refuseNetPrefix } from "../base/net_host.ts";

/** What a grant says; the table fills in id, times and bookkeeping. */
export const GrantRequest = z.object({
  subject: z.string().min(1).max(64),
  resource: CapabilityResource,
  rights: z.array(z.string()).min(1).max(16),
  effect: Effect,
  oneShot: z.boolean().optional(),
  actionDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/).optional(),
  expiresAt: z.number().int().optional(),
  issuer: z.string().min(1).max(200),
  derivedFrom: z.string().optional(),
  tier: z.enum(["own", "inherited"]).optional(),
}).strict();
/** What a grant says. */
export type GrantRequest = z.input<typeof GrantRequest>;

const PAGE = 5000;

function decode(row: CapabilityRow): Capability {
  try {
    return Capability.parse(JSON.parse(row.data));
  } catch (error) {
    throw new StoreError(
      "store_corrupt",
      `Capability ${row.id} is stored in a shape this libos does not understand; the database was edited outside libos`,
      { cause: error },
    );
  }
}

/** Stores and indexes capabilities. One per runtime. */
export class CapabilityTable {
  readonly #core: RuntimeCore;
  readonly #indexes = new Map<string, CapabilityIndex>();
  /** Capability id → one-shot (immutable per capability; see {@link isOneShot}). */
  readonly #oneShot = new Map<string, boolean>();
  #seenVersion: number;
  #generation = 0;

  /** Binds the table to a runtime. */
  constructor(core: RuntimeCore) {
    this.#core = core;
    this.#seenVersion = core.store.dataVersion();
  }

  /** Set while a caller that has just checked freshness decides (one data_version read). */
  #checked = false;

  /** Drops every index when another connection committed since the last look. */
  #fresh(): void {
    if (this.#checked) return;
    const version = this.#core.store.dataVersion();
    if (version !== this.#seenVersion) {
      this.#seenVersion = version;
      this.#indexes.clear();
      this.#generation++;
    }
  }

  /**
   * A number that moves whenever another connection committed (checked now): callers that
   * cache what other connections may change key their caches on it.
   */
  generation(): number {
    this.#fresh();
    return this.#generation;
  }

  /**
   * Runs `fn` (synchronous) with freshness already checked: one `data_version` read per
   * decision instead of one per lookup.
   */
  checked<T>(fn: () => T): T {
    this.#fresh();
    if (this.#checked) return fn();
    this.#checked = true;
    try {
      return fn();
    } finally {
      this.#checked = false;
    }
  }

  /** Every capability of a subject, live or not. */
  list(subject: string): Capability[] {
    const out: Capability[] = [];
    let after: string | undefined;
    for (;;) {
      const page = this.#core.store.listCapabilities({
        subject,
        limit: PAGE,
        ...(after ? { afterId: after } : {}),
      });
      out.push(...page.map(decode));
      if (page.length < PAGE) return out;
      after = page[page.length - 1]!.id;
    }
  }

  /**
   * A capability by id.
   * @throws {NotFoundError} when there is none.
   */
  get(id: string): Capability {
    const row = this.#core.store.getCapability(id);
    if (!row) throw new NotFoundError(`No capability ${JSON.stringify(id)}`);
    return decode(row);
  }

  /**
   * Whether capability `id` is one-shot. A capability's one-shot flag never changes, so the
   * answer is remembered: a standing capability deciding every call costs no read.
   * @throws {NotFoundError} when there is none.
   */
  isOneShot(id: string): boolean {
    let known = this.#oneShot.get(id);
    if (known === undefined) {
      known = this.get(id).oneShot;
      this.#oneShot.set(id, known);
    }
    return known;
  }

  /** The index of a subject's capabilities (built on first use, dropped on outside change). */
  index(subject: string): CapabilityIndex {
    this.#fresh();
    let index = this.#indexes.get(subject);
    if (!index) {
      index = new CapabilityIndex(this.list(subject));
      this.#indexes.set(subject, index);
    }
    return index;
  }

  /** A live approval bound to exactly this action, if the subject holds one. */
  approval(
    subject: string,
    resource: ActionResource,
    right: string,
    digest: string | undefined,
  ): CapabilityMatch | undefined {
    return this.index(subject).approval(resource, right, digest, this.#core.clock.now());
  }

  /** The capability answer for a subject's action, if any capability speaks. */
  match(
    subject: string,
    resource: ActionResource,
    right: string,
    digest: string | undefined,
  ): CapabilityMatch | undefined {
    return this.index(subject).match(resource, right, digest, this.#core.clock.now());
  }

  #save(cap: Capability): void {
    this.#core.store.putCapability({
      id: cap.id,
      subject: cap.subject,
      derivedFrom: cap.derivedFrom,
      revoked: cap.revokedAt,
      data: JSON.stringify(cap),
      created: cap.createdAt,
    });
    // Our own write does not move data_version; drop the subject's index ourselves.
    this.#indexes.delete(cap.subject);
  }

  /**
   * Grants a capability (in the caller's step, or its own) and audits it.
   * @throws {ValidationError} for a malformed request or a right the resource type does not know.
   */
  grant(request: GrantRequest, actor = "operator"): Capability {
    const parsed = GrantRequest.safeParse(request);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ValidationError(
        `Cannot grant capability: ${issue?.path.join(".") || "request"} ${
          issue?.message ?? "is invalid"
        }`,
        { cause: parsed.error },
      );
    }
    refuseNetPrefix(parsed.data.resource);
    // Net keys in the decision key's form: a deny on `bücher.example` meets its punycode host.
    const r = parsed.data.resource.type === "net" && parsed.data.resource.scope !== "any"
      ? {
        ...parsed.data,
        resource: { ...parsed.data.resource, key: netHostPattern(parsed.data.resource.key) },
      }
      : parsed.data;
    for (const right of r.rights) {
      if (!isRight(r.resource.type, right)) {
        throw new ValidationError(
          `Cannot grant ${JSON.stringify(right)} on a ${r.resource.type} resource: it knows ${
            r.resource.type === "fs" ? "read, write, delete, stat" : "other rights"
          }`,
        );
      }
    }
    return this.#core.store.step(() => {
      const cap: Capability = {
        id: this.#core.ids.next("cap"),
        subject: r.subject,
        resource: r.resource,
        rights: [...new Set(r.rights)],
        effect: r.effect,
        oneShot: r.oneShot ?? false,
        usedAt: null,
        actionDigest: r.actionDigest ?? null,
        expiresAt: r.expiresAt ?? null,
        issuer: r.issuer,
        derivedFrom: r.derivedFrom ?? null,
        tier: r.tier ?? "own",
        revokedAt: null,
        createdAt: Math.trunc(this.#core.clock.now()),
      };
      this.#save(cap);
      this.#core.audit.append({
        actor,
        pid: cap.subject,
        action: "capability.grant",
        resource: resourceString(cap.resource),
        decision: cap.effect,
        authority: cap.issuer,
        correlation: cap.id,
        detail: {
          capability: cap.id,
          rights: cap.rights,
          oneShot: cap.oneShot,
          derivedFrom: cap.derivedFrom,
          tier: cap.tier,
        },
      });
      return cap;
    });
  }

  /** Revokes a capability and, transitively, everything derived from it; returns what it revoked. */
  revoke(id: string, actor = "operator"): Capability[] {
    return this.#core.store.step(() => {
      const revoked: Capability[] = [];
      const queue = [id];
      const now = Math.trunc(this.#core.clock.now());
      while (queue.length > 0) {
        const next = queue.shift()!;
        const cap = this.get(next);
        if (cap.revokedAt === null) {
          const done = { ...cap, revokedAt: now };
          this.#save(done);
          revoked.push(done);
          this.#core.audit.append({
            actor,
            pid: cap.subject,
            action: "capability.revoke",
            resource: resourceString(cap.resource),
            decision: "none",
            authority: next === id ? actor : `derived:${cap.derivedFrom}`,
            correlation: cap.id,
          });
        }
        let after: string | undefined;
        for (;;) {
          const page = this.#core.store.listCapabilities({
            derivedFrom: next,
            limit: PAGE,
            ...(after ? { afterId: after } : {}),
          });
          queue.push(...page.map((row) => row.id));
          if (page.length < PAGE) break;
          after = page[page.length - 1]!.id;
        }
      }
      return revoked;
    });
  }

  /**
   * Marks a one-shot capability used — before the effect it allows. Compare-and-set: the stored
   * row is read again, and one already used (by a concurrent call, or another runtime) refuses.
   * @throws {CapabilityDeniedError} `capability_denied` when it was already used.
   */
  consume(cap: Capability): void {
    if (!cap.oneShot) return;
    const current = this.get(cap.id);
    if (current.usedAt !== null) {
      throw new CapabilityDeniedError(
        "capability_denied",
        `One-shot capability ${cap.id} was already used (${
          new Date(current.usedAt).toISOString()
        }); it allows one action, once — ask again`,
        { reason: `cap:${cap.id}` },
      );
    }
    this.#save({ ...current, usedAt: Math.trunc(this.#core.clock.now()) });
  }
}
