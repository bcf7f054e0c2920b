/**
 * Human requests as stored (the request half of the human channel; `human_channel.ts` is the
 * delivery half: prompting, waking, dispatching approved actions): creating a request, reading
 * and listing them, and every transition a decision makes — approve (minting the one-shot grant
 * bound to the action's digest, and an "allow always" scope the human chose), reject, answer,
 * cancel, withdraw (revoking an unused grant), expire — each audited, each one store step.
 *
 * @module
 */
import { dirname } from "node:path";
import type { Authority } from "../authority/authority.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import { sha256Hex } from "../base/canonical_json.ts";
import {
  type Capability,
  type CapabilityResource,
  resourceString,
  type Right,
  specificity,
} from "../authority/capability.ts";
import {
  IllegalTransitionError,
  NotFoundError,
  StoreError,
  ValidationError,
} from "../base/errors.ts";
import { isFinal } from "../process/process.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { HumanRequestRow } from "../store/store.ts";
import {
  type ApprovalDetails,
  type GrantScope,
  HumanRequest,
  type HumanRequestKind,
  type HumanRequestStatus,
  type Remember,
} from "./human_request.ts";

/** One "allow always" choice and exactly what it would grant, shown before it is minted. */
export interface AlwaysOption {
  readonly scope: GrantScope;
  readonly resource: CapabilityResource;
  readonly rights: readonly Right[];
  readonly description: string;
}

/** What the book needs. */
export interface RequestBookOptions {
  readonly authority: Authority;
  readonly processes: ProcessManager;
  /** How long a request stays answerable; expiry is a rejection. */
  readonly ttlMs: number;
  /** Told of each request a decision changed, inside its store step (to wake its process). */
  readonly decided: (request: HumanRequest) => void;
}

/** An "allow always" grant to remember for the project, as the human approved it. */
export interface RememberedApproval {
  readonly resource: CapabilityResource;
  readonly rights: readonly Right[];
  readonly scope: GrantScope;
  readonly description: string;
  /** The request approved, who approved it and when (ms since the epoch). */
  readonly request: string;
  readonly by: string;
  readonly at: number;
}

/**
 * Where "allow always … for this project" answers are kept (the user's grants file; see
 * `cli/remembered_grants.ts`). Without one, a runtime refuses `remember: "project"`.
 */
export interface Rememberer {
  /**
   * Refuses, before anything is approved, when a grant cannot be remembered now (a broken
   * file, a configuration directory inside the workspace).
   */
  check(): void;
  /**
   * Stores the grant (atomically) and returns its id; called last inside the approval's store
   * step, so a failure here approves nothing.
   */
  remember(grant: RememberedApproval): string;
}

/**
 * Whether a capability's issuer marks it as holding for a whole run: an "allow always" for the
 * run or the project (`human:<request>:run|project`), or a grant the user's grants file
 * remembered (`user-config:<id>`). Processes forked in the run receive a derived copy.
 */
export function runWideIssuer(issuer: string): boolean {
  return /^human:hreq_[0-9a-f]{12}:(run|project)$/.test(issuer) ||
    issuer.startsWith("user-config:");
}

const OWNER: CapabilityResource = Object.freeze({ type: "human", key: "owner", scope: "exact" });

/** The stored human requests of one runtime, and the transitions a decision makes. */
export class RequestBook {
  readonly #core: RuntimeCore;
  readonly #authority: Authority;
  readonly #processes: ProcessManager;
  readonly #ttlMs: number;
  readonly #decided: (request: HumanRequest) => void;
  #rememberer: Rememberer | undefined;

  /**
   * Binds the book to a runtime's store, authority and processes. A process forked from one
   * holding a run-wide "allow always" receives a copy derived from its parent's.
   */
  constructor(core: RuntimeCore, options: RequestBookOptions) {
    this.#core = core;
    this.#authority = options.authority;
    this.#processes = options.processes;
    this.#ttlMs = options.ttlMs;
    this.#decided = options.decided;
    options.processes.onFork((child, parent) => this.#inheritRunWide(parent.pid, child.pid));
  }

  /** Wires where "allow always … for this project" answers are kept. */
  /** Whether a "project" answer can be remembered (a grants file is wired). */
  get remembers(): boolean {
    return this.#rememberer !== undefined;
  }

  rememberWith(rememberer: Rememberer): void {
    this.#rememberer = rememberer;
  }

  /** Copies every live run-wide grant of `parent` to `child`, each derived from the parent's. */
  #inheritRunWide(parent: string, child: string): void {
    const now = this.#core.clock.now();
    for (const cap of this.#authority.capabilities.list(parent)) {
      if (!runWide(cap, now)) continue;
      this.#copy(cap, child);
    }
  }

  #copy(from: Capability, subject: string): Capability {
    return this.#authority.capabilities.grant({
      subject,
      resource: from.resource,
      rights: [...from.rights],
      effect: "allow",
      issuer: from.issuer,
      derivedFrom: from.id,
      tier: "inherited",
      ...(from.expiresAt === null ? {} : { expiresAt: from.expiresAt }),
    }, "runtime");
  }

  /**
   * The top-level process of `pid`'s run and every live process of its tree, parents before
   * children.
   */
  #run(pid: string): { readonly root: string; readonly live: readonly [string, string][] } {
    let root = this.#processes.get(pid);
    for (let hops = 0; root.parent !== null && hops < 10_000; hops++) {
      root = this.#processes.get(root.parent);
    }
    const live: [string, string][] = [];
    const queue = [root.pid];
    for (let i = 0; i < queue.length && queue.length < 10_000; i++) {
      const parent = queue[i]!;
      let after: string | undefined;
      for (;;) {
        const page = this.#processes.list({
          parent,
          limit: 1000,
          ...(after === undefined ? {} : { afterPid: after }),
        });
        for (const child of page) {
          if (isFinal(child.status)) continue;
          queue.push(child.pid);
          live.push([parent, child.pid]);
        }
        if (page.length < 1000) break;
        after = page[page.length - 1]!.pid;
      }
    }
    return { root: root.pid, live };
  }

  /**
   * Grants `option` for the whole run of `pid`: to its top-level process, and a derived copy to
   * each live process of the tree (from its parent's copy). Returns the capability ids.
   */
  #grantRunWide(pid: string, option: AlwaysOption, issuer: string, by: string): string[] {
    const { root, live } = this.#run(pid);
    const top = this.#authority.capabilities.grant({
      subject: root,
      resource: option.resource,
      rights: [...option.rights],
      effect: "allow",
      issuer,
    }, by);
    const copies = new Map<string, Capability>([[root, top]]);
    for (const [parent, child] of live) {
      const from = copies.get(parent);
      if (from) copies.set(child, this.#copy(from, child));
    }
    return [...copies.values()].map((c) => c.id);
  }

  /** Marks an approved request `dispatched` (committed): its action is handed back at most once. */
  dispatching(request: HumanRequest): void {
    this.#core.store.step(() =>
      this.#save({
        ...request,
        status: "dispatched",
        updatedAt: Math.trunc(this.#core.clock.now()),
      })
    );
  }

  #decode(row: HumanRequestRow): HumanRequest {
    const parsed = HumanRequest.safeParse((() => {
      try {
        return JSON.parse(row.data);
      } catch {
        return undefined;
      }
    })());
    if (!parsed.success) {
      throw new StoreError(
        "store_corrupt",
        `Human request ${row.id} is stored in a shape this libos does not understand; the database was edited outside libos`,
      );
    }
    return parsed.data;
  }

  #save(request: HumanRequest): void {
    this.#core.store.putHumanRequest({
      id: request.id,
      pid: request.pid,
      kind: request.kind,
      status: request.status,
      data: JSON.stringify(request),
      created: request.createdAt,
      expires: request.expiresAt,
    });
  }

  /**
   * A request by id.
   * @throws {NotFoundError} when there is none.
   */
  get(id: string): HumanRequest {
    const row = this.#core.store.getHumanRequest(id);
    if (!row) {
      throw new NotFoundError(
        `No human request ${JSON.stringify(id)}; list them with "libos human list"`,
      );
    }
    return this.#decode(row);
  }

  /** Requests, oldest first; by default the pending ones. */
  list(
    query: {
      readonly statuses?: readonly HumanRequestStatus[];
      readonly pid?: string;
      readonly limit?: number;
      /**
       * Called with the id of each stored request libos cannot read (edited outside libos), which
       * is then left out; without it such a request is a `store_corrupt` error.
       */
      readonly onCorrupt?: (id: string, error: StoreError) => void;
    } = {},
  ): HumanRequest[] {
    const rows = this.#core.store.listHumanRequests({
      statuses: query.statuses ?? ["pending"],
      limit: query.limit ?? 1000,
      ...(query.pid === undefined ? {} : { pid: query.pid }),
    });
    const out: HumanRequest[] = [];
    for (const row of rows) {
      try {
        out.push(this.#decode(row));
      } catch (error) {
        if (!(error instanceof StoreError) || !query.onCorrupt) throw error;
        query.onCorrupt(row.id, error);
      }
    }
    return out;
  }

  /**
   * Stores a request. `allowed` is the reason of the decision that let the process make it (a
   * question, a message, a permission request): its record is that decision's. An approval's
   * record is not a decision (the primitive recorded its ask), nor an interrupt's.
   */
  create(
    pid: string,
    kind: HumanRequestKind,
    fields: Partial<Pick<HumanRequest, "approval" | "text" | "permission" | "status">>,
    expires = true,
    allowed?: string,
  ): HumanRequest {
    return this.#core.store.step(() => {
      const now = Math.trunc(this.#core.clock.now());
      const request: HumanRequest = {
        id: this.#core.ids.next("hreq"),
        pid,
        kind,
        status: fields.status ?? "pending",
        approval: fields.approval ?? null,
        text: fields.text ?? null,
        permission: fields.permission ?? null,
        response: null,
        createdAt: now,
        updatedAt: now,
        expiresAt: expires ? now + this.#ttlMs : null,
      };
      this.#save(request);
      this.#core.audit.append({
        actor: pid,
        pid,
        action: `human.${kind}`,
        resource: request.approval?.resource ?? `human:owner`,
        decision: allowed === undefined ? "none" : "allow",
        authority: allowed ?? request.approval?.reason ?? "runtime",
        correlation: request.id,
        ...(request.approval ? { inputDigest: request.approval.digest } : {}),
      });
      this.#core.events.emit({
        kind: "human.request",
        payload: {
          id: request.id,
          pid,
          requestKind: kind,
          // What an approval is for, cut to the event's bound (the request holds it whole).
          resource: request.approval ? request.approval.resource.slice(0, 1024) : null,
        },
      });
      return request;
    });
  }

  /**
   * The "allow always" choices for a request, each with exactly what it would grant — only
   * choices that would really allow this action next time: the ask must come from a capability
   * (`cap:<id>`; a mode ceiling or a protected path asks whatever a capability says), and the new
   * capability must be more specific than the one that asked. For files: `path` (this path
   * exactly) and `subtree` (its directory and everything below).
   */
  alwaysOptions(request: HumanRequest): AlwaysOption[] {
    const a = request.approval;
    if (a?.offers && !a.ceiling) {
      // The primitive checked each one against its own decision (shell runs).
      return a.offers.map((o) => ({
        scope: o.scope,
        resource: o.resource,
        rights: [...o.rights] as Right[],
        description: `allow ${o.rights.join(", ")} on ${resourceString(o.resource)}${
          o.scope === "prefix" ? " followed by any arguments" : ""
        } from now on, in this run (revocable with "libos revoke")`,
      }));
    }
    if (!a || a.path === null || !a.reason.startsWith("cap:") || a.ceiling) return [];
    let asking: CapabilityResource;
    try {
      asking = this.#authority.capabilities.get(a.reason.slice("cap:".length)).resource;
    } catch (error) {
      if (error instanceof NotFoundError) return [];
      throw error;
    }
    const action = { type: "fs", path: a.path } as const;
    const floor = specificity(asking, action, true) ?? 0;
    const right = a.right as Right;
    const dir = dirname(a.path);
    const candidates: [GrantScope, CapabilityResource][] = [
      ["path", { type: "fs", path: a.path, scope: "exact" }],
      ["subtree", { type: "fs", path: dir === "" ? "." : dir, scope: "subtree" }],
    ];
    return candidates
      .filter(([, resource]) => (specificity(resource, action, false) ?? 0) > floor)
      .map(([scope, resource]) => ({
        scope,
        resource,
        rights: [right],
        description: `allow ${right} on ${
          resourceString(resource)
        } from now on, in this run (revocable with "libos revoke")`,
      }));
  }

  /**
   * The allow-always option `scope` of a request.
   * @throws {ValidationError} when the request does not offer it (nothing is approved).
   */
  #alwaysOption(request: HumanRequest, scope: GrantScope): AlwaysOption {
    const offered = this.alwaysOptions(request);
    const option = offered.find((o) => o.scope === scope);
    if (option) return option;
    throw new ValidationError(
      offered.length
        ? `"${scope}" is not an allow-always scope of request ${request.id}; use one of ${
          offered.map((o) => o.scope).join(", ")
        } ("libos human show ${request.id}" says what each grants); nothing was approved`
        : `Request ${request.id} offers no allow-always scope: it asks because of ${
          request.approval?.reason ?? request.kind
        }, which no capability overrides; approve it once instead; nothing was approved`,
    );
  }

  #decide(
    id: string,
    by: string,
    update: (request: HumanRequest) => Partial<HumanRequest>,
    allowed: readonly HumanRequestKind[],
  ): HumanRequest {
    return this.#core.store.step(() => {
      const request = this.get(id);
      if (!allowed.includes(request.kind)) {
        throw new IllegalTransitionError(
          "illegal_transition",
          `Request ${id} is a ${request.kind}; this answer does not apply to it`,
        );
      }
      if (request.status !== "pending") {
        throw new IllegalTransitionError(
          "illegal_transition",
          `Request ${id} is already ${request.status}; nothing was changed`,
        );
      }
      const next: HumanRequest = {
        ...request,
        ...update(request),
        updatedAt: Math.trunc(this.#core.clock.now()),
      };
      this.#save(next);
      this.#core.events.emit({
        kind: "human.decision",
        payload: { id, pid: next.pid, status: next.status, by: by.slice(0, 256) },
      });
      this.#decided(next);
      return next;
    });
  }

  /**
   * Approves a pending approval or permission request. For an approval: a one-shot capability
   * bound to the action's digest, and with `always`, a standing capability of that scope.
   * @throws {IllegalTransitionError} for a request that is not pending or not approvable.
   */
  approve(
    id: string,
    options: { readonly by: string; readonly always?: GrantScope; readonly remember?: Remember },
  ): HumanRequest {
    if (options.remember !== undefined && options.always === undefined) {
      throw new ValidationError(
        `"remember" (${options.remember}) applies to an allow-always answer; choose a scope with "always" too; nothing was approved`,
      );
    }
    this.expireDue();
    this.#refuseIfOrphaned(id);
    this.#refuseIfInconsistent(this.get(id));
    const option = options.always === undefined
      ? undefined
      : this.#alwaysOption(this.get(id), options.always);
    const remember: Remember | undefined = option ? options.remember ?? "run" : undefined;
    if (remember === "project") {
      if (!this.#rememberer) {
        throw new ValidationError(
          `This runtime cannot remember a grant for the project: no user configuration is wired (libos agent --no-user-config, or a runtime embedded without one); approve with remember "run" or "process"; nothing was approved`,
        );
      }
      this.#rememberer.check();
    }
    return this.#decide(id, options.by, (request) => {
      const caps: string[] = [];
      const now = Math.trunc(this.#core.clock.now());
      if (request.kind === "approval" && request.approval) {
        const a = request.approval;
        // Bound to the digest, so it covers this action only, on the resource the primitive that
        // asked named (requests parked before approvals named it: derived from their primitive).
        caps.push(
          this.#authority.capabilities.grant({
            subject: request.pid,
            resource: a.grant ?? storedGrant(a),
            rights: [a.right],
            effect: "allow",
            oneShot: true,
            actionDigest: a.digest,
            issuer: `human:${id}`,
            // Good until the process resumes, even if that is after the request's own expiry.
            expiresAt: now + this.#ttlMs,
          }, options.by).id,
        );
        if (option && remember === "process") {
          caps.push(
            this.#authority.capabilities.grant({
              subject: request.pid,
              resource: option.resource,
              rights: [...option.rights],
              effect: "allow",
              issuer: `human:${id}`,
            }, options.by).id,
          );
        } else if (option) {
          caps.push(
            ...this.#grantRunWide(request.pid, option, `human:${id}:${remember}`, options.by),
          );
        }
      }
      if (request.kind === "permission" && request.permission) {
        const p = request.permission;
        caps.push(
          this.#authority.capabilities.grant({
            subject: request.pid,
            resource: p.resource,
            rights: p.rights,
            effect: "allow",
            issuer: `human:${id}`,
          }, options.by).id,
        );
      }
      // In the step, after the grants: a grant that cannot be stored approves nothing.
      const remembered = option && remember === "project"
        ? this.#rememberer!.remember({
          resource: option.resource,
          rights: option.rights,
          scope: option.scope,
          description: option.description,
          request: id,
          by: options.by,
          at: now,
        })
        : undefined;
      this.#core.audit.append({
        actor: options.by,
        pid: request.pid,
        action: "human.approve",
        resource: request.approval?.resource ??
          resourceString(request.permission?.resource ?? OWNER),
        decision: "allow",
        authority: options.by,
        correlation: id,
        ...(request.approval ? { inputDigest: request.approval.digest } : {}),
        detail: {
          capabilities: caps,
          always: options.always ?? null,
          remember: remember ?? null,
          remembered: remembered ?? null,
        },
      });
      return {
        status: "approved",
        response: {
          by: options.by,
          at: now,
          capabilities: caps,
          ...(options.always ? { always: options.always } : {}),
          ...(remember ? { remember } : {}),
          ...(remembered === undefined ? {} : { remembered }),
        },
      };
    }, ["approval", "permission"]);
  }

  /** Rejects a pending approval, permission request or question. */
  reject(id: string, options: { readonly by: string; readonly reason?: string }): HumanRequest {
    if (options.reason !== undefined && options.reason.length > 4096) {
      throw new ValidationError("A rejection reason must be at most 4096 characters");
    }
    this.expireDue();
    return this.#decide(id, options.by, (request) => {
      this.#core.audit.append({
        actor: options.by,
        pid: request.pid,
        action: "human.reject",
        resource: request.approval?.resource ?? "human:owner",
        decision: "deny",
        authority: options.by,
        correlation: id,
      });
      return {
        status: "rejected",
        response: {
          by: options.by,
          at: Math.trunc(this.#core.clock.now()),
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        },
      };
    }, ["approval", "permission", "question"]);
  }

  /** Answers a pending question. */
  answer(id: string, options: { readonly by: string; readonly text: string }): HumanRequest {
    if (typeof options.text !== "string" || options.text.length > 100_000) {
      throw new ValidationError("An answer must be text of at most 100000 characters");
    }
    this.expireDue();
    this.#refuseIfOrphaned(id);
    return this.#decide(id, options.by, (request) => {
      this.#core.audit.append({
        actor: options.by,
        pid: request.pid,
        action: "human.answer",
        resource: "human:owner",
        decision: "none",
        authority: options.by,
        correlation: id,
      });
      return {
        status: "answered",
        response: { by: options.by, at: Math.trunc(this.#core.clock.now()), answer: options.text },
      };
    }, ["question"]);
  }

  /**
   * A pending request whose process has ended is cancelled (audited) instead of approved or
   * answered: nobody is left to act on it.
   * @throws {IllegalTransitionError} after cancelling it.
   */
  #refuseIfOrphaned(id: string): void {
    const request = this.get(id);
    if (request.status !== "pending") return;
    const p = this.#processes.find(request.pid);
    if (p && !isFinal(p.status)) return;
    this.cancel(id, "runtime", `its process ${request.pid} has ${p ? p.status : "gone"}`);
    throw new IllegalTransitionError(
      "illegal_transition",
      `Request ${id} was cancelled: its process ${request.pid} ${
        p ? `has ${p.status}` : "no longer exists"
      }, so nothing was approved`,
    );
  }

  /**
   * What the human was shown must be what runs: the stored action's operation, and for a write
   * its content's size and sha256, must match the displayed fields.
   * @throws {StoreError} `store_corrupt` when they differ (the database was edited).
   */
  #refuseIfInconsistent(request: HumanRequest): void {
    const a = request.approval;
    if (!a) return;
    const content = a.action.args.content;
    const data = typeof content === "string" ? new TextEncoder().encode(content) : undefined;
    const agrees = a.action.primitive === a.operation &&
      (data === undefined || (sha256Hex(data) === a.sha256 && data.length === a.bytes));
    if (!agrees) {
      throw new StoreError(
        "store_corrupt",
        `Request ${request.id} stores an action that differs from what it shows; the database was edited outside libos — nothing was approved; reject it`,
      );
    }
  }

  #auditCancel(request: HumanRequest, by: string, detail: Record<string, string>): void {
    this.#core.audit.append({
      actor: by,
      pid: request.pid,
      action: "human.cancel",
      resource: request.approval?.resource ?? "human:owner",
      decision: "none",
      authority: by,
      correlation: request.id,
      detail,
    });
  }

  /**
   * Cancels a pending request nobody will act on (its process was cancelled or ended); audited.
   * Returns undefined when it was no longer pending.
   */
  cancel(id: string, by: string, why: string): HumanRequest | undefined {
    const row = this.#core.store.getHumanRequest(id);
    if (!row || row.status !== "pending") return undefined;
    return this.#decide(id, by, (request) => {
      this.#auditCancel(request, by, { why });
      return {
        status: "cancelled",
        response: { by, at: Math.trunc(this.#core.clock.now()), reason: why },
      };
    }, ["approval", "permission", "question"]);
  }

  /**
   * Withdraws the requests process `pid` made at or after `since` (ms since the epoch) that are
   * still pending, or approved but not run: what a call cut off by a restart was waiting on.
   * Returns them.
   */
  cancelSince(pid: string, since: number, why: string): HumanRequest[] {
    const out: HumanRequest[] = [];
    for (const request of this.list({ pid, statuses: ["pending", "approved"] })) {
      if (request.createdAt < Math.trunc(since)) continue;
      const withdrawn = this.withdraw(request.id, "runtime", why);
      if (withdrawn) out.push(withdrawn);
    }
    return out;
  }

  /**
   * Withdraws a request its asker will never act on (the call that asked was cut off): a
   * pending one is cancelled; an approved action that has not run yet is cancelled too and its
   * one-shot grant revoked, so it cannot let the same action through later, unasked. (Standing
   * grants the human chose — "allow always", a permission — stay: they were decisions of their
   * own.) Returns the request, or undefined when there was nothing to withdraw.
   */
  withdraw(id: string, by: string, why: string): HumanRequest | undefined {
    const row = this.#core.store.getHumanRequest(id);
    if (!row) return undefined;
    if (row.status === "pending") return this.cancel(id, by, why);
    if (row.status !== "approved" || row.kind !== "approval") return undefined;
    return this.#core.store.step(() => {
      const request = this.get(id);
      const revoked: string[] = [];
      for (const capId of request.response?.capabilities ?? []) {
        const cap = this.#authority.capabilities.get(capId);
        if (cap.oneShot && cap.usedAt === null && cap.revokedAt === null) {
          this.#authority.capabilities.revoke(capId, by);
          revoked.push(capId);
        }
      }
      const now = Math.trunc(this.#core.clock.now());
      const next: HumanRequest = {
        ...request,
        status: "cancelled",
        response: { ...(request.response ?? { by, at: now }), reason: why.slice(0, 4096) },
        updatedAt: now,
      };
      this.#save(next);
      this.#auditCancel(request, by, { why: why.slice(0, 500), revoked: revoked.join(",") });
      return next;
    });
  }

  /** Expires every pending request past its time (a rejection, audited); returns them. */
  expireDue(): HumanRequest[] {
    const now = Math.trunc(this.#core.clock.now());
    const due = this.#core.store.listHumanRequests({
      statuses: ["pending"],
      expiringBefore: now + 1,
      limit: 1000,
    });
    return due.map((row) =>
      this.#decide(row.id, "human:expired", (request) => {
        this.#core.audit.append({
          actor: "runtime",
          pid: request.pid,
          action: "human.expire",
          resource: request.approval?.resource ?? "human:owner",
          decision: "deny",
          authority: "human:expired",
          correlation: request.id,
        });
        return { status: "expired", response: { by: "human:expired", at: now } };
      }, ["approval", "permission", "question"])
    );
  }
}

/** A live standing allow that holds for a whole run (see {@link runWideIssuer}). */
function runWide(cap: Capability, now: number): boolean {
  return cap.revokedAt === null && cap.effect === "allow" && !cap.oneShot &&
    cap.actionDigest === null && (cap.expiresAt === null || cap.expiresAt > now) &&
    runWideIssuer(cap.issuer);
}

/**
 * The one-shot grant's resource for an approval parked before approval details named it (they
 * name it since the approval gate, `grant`): the exact file shown, the workspace for an action
 * without a path, any command for a shell run and any host for a request (their digests bind the
 * rest), the tool's name for a registration. New primitives name their grant; none is added here.
 */
function storedGrant(a: ApprovalDetails): CapabilityResource {
  switch (a.primitive) {
    case "shell":
      return { type: "shell", argv: [], scope: "any" };
    case "tool":
      return { type: "tool", key: a.resource.replace(/^tool:/, ""), scope: "exact" };
    case "network":
      return { type: "net", key: "*", scope: "any" };
    default:
      return a.path === null
        ? { type: "fs", path: ".", scope: "subtree" }
        : { type: "fs", path: a.path, scope: "exact" };
  }
}
