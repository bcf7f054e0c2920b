/**
 * The human channel (DESIGN §4, §5): durable requests between processes and their human, in
 * one of three modes — `interactive` (a prompt answers now), `queue` (the process parks in
 * `waiting_human`; anyone answers later with `libos human …`, from another terminal or after a
 * restart), `none` (every ask is denied at once).
 *
 * A per-use approval is bound to the exact action: approving mints a one-shot capability carrying
 * the action's digest, which `decide()` accepts for that action only — content A approved never
 * lets content B through. When a parked process is woken by a decision, the runtime re-dispatches
 * the stored action once (no second model call) and hands the outcome to the process's driver; a
 * rejection or an expiry becomes a failed result with no side effect. "Allow always" mints a
 * capability with an explicit scope, described to the human before it is created.
 *
 * Decision records (see `audit_log.ts`): a process talking to its human (`human.question`,
 * `human.output`, `human.permission`) is decided on `human:owner` write and recorded once — the
 * refusal where it is made, the allow with the stored request, `human:none` when no human is
 * reachable. An approval request records no decision of its own (the primitive that asked
 * recorded the ask); the human's answer is one (`human.approve`, `human.reject`, …).
 *
 * @module
 */
import { dirname } from "node:path";
import type { ActionOutcome } from "../process/action_ledger.ts";
import { ActionRegistry } from "./action_registry.ts";
import { renderApprovalRequest } from "./approval_render.ts";
import type { Authority } from "../authority/authority.ts";
import { sha256Hex } from "../base/canonical_json.ts";
import {
  type CapabilityResource,
  resourceString,
  type Right,
  specificity,
} from "../authority/capability.ts";
import {
  errorInfo,
  HumanDecisionError,
  HumanPendingError,
  IllegalTransitionError,
  NotFoundError,
  StoreError,
  ValidationError,
} from "../base/errors.ts";
import {
  type ApprovalDetails,
  type GrantScope,
  HumanRequest,
  type HumanRequestKind,
  type HumanRequestStatus,
  type PermissionRequest,
} from "./human_request.ts";
import { pauseFor } from "../base/clock.ts";
import { isFinal } from "../process/process.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import type { HumanRequestRow } from "../store/store.ts";
import { refuseNetPrefix } from "../base/net_host.ts";

/** How the runtime reaches its human (DESIGN §4). */
export type HumanMode = "interactive" | "queue" | "none";

/** What a human decided. */
export type HumanDecision =
  | { readonly type: "approve"; readonly always?: GrantScope }
  | { readonly type: "reject"; readonly reason?: string }
  | { readonly type: "answer"; readonly text: string };

/** One "allow always" choice and exactly what it would grant, shown before it is minted. */
export interface AlwaysOption {
  readonly scope: GrantScope;
  readonly resource: CapabilityResource;
  readonly rights: readonly Right[];
  readonly description: string;
}

/** The interactive prompt: shows a rendered request and waits for the human. */
export interface HumanPrompt {
  decide(
    request: HumanRequest,
    rendered: string,
    always: readonly AlwaysOption[],
  ): Promise<HumanDecision>;
  /** Shows a message from a process (optional). */
  notify?(request: HumanRequest, rendered: string): void;
}

/** What a woken process gets for the request it waited on. */
export type HumanResolution =
  | { readonly type: "outcome"; readonly request: HumanRequest; readonly outcome: ActionOutcome }
  | { readonly type: "pending"; readonly request: string };

/** What the channel needs. */
export interface HumanChannelOptions {
  readonly authority: Authority;
  readonly processes: ProcessManager;
  readonly mode?: HumanMode;
  /** Required for `interactive`. */
  readonly prompt?: HumanPrompt;
  /** How long a request stays answerable (default 24 hours); expiry is a rejection. */
  readonly ttlMs?: number;
}

const OWNER: CapabilityResource = Object.freeze({ type: "human", key: "owner", scope: "exact" });

function failed(code: string, message: string): ActionOutcome {
  return { ok: false, error: { code, message } };
}

/** The human channel of one runtime. */
export class HumanChannel {
  readonly mode: HumanMode;
  readonly #core: RuntimeCore;
  readonly #authority: Authority;
  readonly #processes: ProcessManager;
  readonly #prompt: HumanPrompt | undefined;
  readonly #ttlMs: number;
  /**
   * The operations an approved action can name, by exact name: each primitive (and the JIT tool
   * lifecycle) registers its own; {@link resume} runs a stored action only through one of them.
   */
  readonly actions: ActionRegistry = new ActionRegistry();

  /**
   * Builds the channel.
   * @throws {ValidationError} for `interactive` without a prompt.
   */
  constructor(core: RuntimeCore, options: HumanChannelOptions) {
    this.#core = core;
    this.#authority = options.authority;
    this.#processes = options.processes;
    this.mode = options.mode ?? "queue";
    this.#prompt = options.prompt;
    this.#ttlMs = options.ttlMs ?? 24 * 60 * 60 * 1000;
    if (this.mode === "interactive" && !this.#prompt) {
      throw new ValidationError(
        "The interactive human mode needs a prompt (a terminal); use queue or none without one",
      );
    }
  }

  // ------------------------------------------------------------------ storage

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
  #create(
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
        payload: { id: request.id, pid, requestKind: kind },
      });
      return request;
    });
  }

  /**
   * Requires the process may talk to its human (`human:owner` write) for operation `op`; a
   * refusal is recorded. Returns the reason of the decision that allowed it.
   */
  #mayTalk(pid: string, op: string, what: string): string {
    return this.#authority.gate(
      pid,
      op,
      { resource: { type: "human", key: "owner" }, right: "write" },
      what,
    ).reason;
  }

  /** Records that no human is reachable to take a process's request, and returns the error. */
  #unreachable(pid: string, op: string, message: string): HumanDecisionError {
    this.#core.audit.append({
      actor: "runtime",
      pid,
      action: op,
      resource: "human:owner",
      decision: "deny",
      authority: "human:none",
    });
    return new HumanDecisionError("human_unavailable", message);
  }

  // ------------------------------------------------------------------ from processes

  /**
   * Shows a request to the interactive human once it is on disk: a runtime killed while the
   * human reads it leaves the request pending, decidable with `libos human` from elsewhere.
   */
  #showToHuman<T>(prompt: () => Promise<T>): Promise<T> {
    this.#core.store.flush();
    return prompt();
  }

  /**
   * A primitive's `decide()` said ask: resolves when the action may now run (interactive
   * approval), or throws.
   * @throws {HumanPendingError} in `queue` mode: the process should park on the request.
   * @throws {HumanDecisionError} `approval_rejected` in `none` mode or when the human says no.
   */
  async escalate(pid: string, details: ApprovalDetails): Promise<void> {
    if (this.mode === "none") {
      this.#core.audit.append({
        actor: "runtime",
        pid,
        action: "human.approval",
        resource: details.resource,
        decision: "deny",
        authority: "human:none",
        inputDigest: details.digest,
      });
      throw new HumanDecisionError(
        "human_unavailable",
        `Cannot ${details.operation} ${
          details.path ?? details.resource
        }: it needs a human's approval (${details.reason}) and no human is reachable (human mode none); run with --human queue, or grant a capability`,
        { reason: details.reason },
      );
    }
    const request = this.#create(pid, "approval", { approval: details });
    if (this.mode === "queue") {
      throw new HumanPendingError(
        `${details.operation} ${
          details.path ?? details.resource
        } waits for a human's approval (request ${request.id}); answer with "libos human approve ${request.id}" or "reject"`,
        { request: request.id },
      );
    }
    const decision = await this.#showToHuman(() =>
      this.#prompt!.decide(
        request,
        renderApprovalRequest(request),
        this.alwaysOptions(request),
      )
    );
    if (decision.type === "approve") {
      this.approve(request.id, {
        by: "human:terminal",
        ...(decision.always ? { always: decision.always } : {}),
      });
      return;
    }
    const reason = decision.type === "reject" ? decision.reason : undefined;
    this.reject(request.id, { by: "human:terminal", ...(reason === undefined ? {} : { reason }) });
    throw new HumanDecisionError(
      "approval_rejected",
      `The human rejected ${details.operation} ${details.path ?? details.resource}${
        reason ? `: ${reason}` : ""
      }`,
      { request: request.id, reason: details.reason },
    );
  }

  /**
   * Asks the human a question (`ask_human`). Interactive: resolves with the answer. Queue: throws
   * {@link HumanPendingError}; the answer comes back when the process resumes.
   * @throws {CapabilityDeniedError} without `human:owner` write.
   */
  async ask(pid: string, question: string): Promise<string> {
    const allowed = this.#mayTalk(pid, "human.question", "ask the human a question");
    if (this.mode === "none") {
      throw this.#unreachable(
        pid,
        "human.question",
        "No human is reachable (human mode none) to answer the question; run with --human queue",
      );
    }
    const request = this.#create(pid, "question", { text: question }, true, allowed);
    if (this.mode === "queue") {
      throw new HumanPendingError(
        `The question waits for a human (request ${request.id}); answer with "libos human answer ${request.id} TEXT"`,
        { request: request.id },
      );
    }
    const decision = await this.#showToHuman(() =>
      this.#prompt!.decide(request, renderApprovalRequest(request), [])
    );
    if (decision.type !== "answer") {
      this.reject(request.id, { by: "human:terminal" });
      throw new HumanDecisionError("approval_rejected", "The human declined to answer", {
        request: request.id,
      });
    }
    this.answer(request.id, { by: "human:terminal", text: decision.text });
    return decision.text;
  }

  /**
   * Sends the human a message (`human_output`); it is stored and shown, never blocks the process.
   * @throws {CapabilityDeniedError} without `human:owner` write.
   */
  output(pid: string, text: string): HumanRequest {
    const allowed = this.#mayTalk(pid, "human.output", "send the human a message");
    const request = this.#create(pid, "output", { text, status: "delivered" }, false, allowed);
    this.#prompt?.notify?.(request, renderApprovalRequest(request));
    return request;
  }

  /**
   * Asks for a standing permission (`request_permission`): approval mints the capability.
   * Interactive: resolves with the minted capability ids. Queue: throws {@link HumanPendingError}.
   */
  async requestPermission(pid: string, permission: PermissionRequest): Promise<string[]> {
    const allowed = this.#mayTalk(pid, "human.permission", "ask the human for a permission");
    // Refused before a human is bothered: approving it could not mint it.
    refuseNetPrefix(permission.resource);
    if (this.mode === "none") {
      throw this.#unreachable(
        pid,
        "human.permission",
        "No human is reachable (human mode none) to grant a permission; run with --human queue",
      );
    }
    const request = this.#create(pid, "permission", { permission }, true, allowed);
    if (this.mode === "queue") {
      throw new HumanPendingError(
        `The permission request waits for a human (request ${request.id}); answer with "libos human approve ${request.id}"`,
        { request: request.id },
      );
    }
    const decision = await this.#showToHuman(() =>
      this.#prompt!.decide(request, renderApprovalRequest(request), [])
    );
    if (decision.type !== "approve") {
      this.reject(request.id, {
        by: "human:terminal",
        ...(decision.type === "reject" && decision.reason ? { reason: decision.reason } : {}),
      });
      throw new HumanDecisionError("approval_rejected", "The human refused the permission", {
        request: request.id,
      });
    }
    return this.approve(request.id, { by: "human:terminal" }).response?.capabilities ?? [];
  }

  /** A message from the human to a process: stored, and the process is interrupted. */
  interrupt(pid: string, text: string, by: string): HumanRequest {
    const request = this.#create(pid, "interrupt", { text, status: "delivered" }, false);
    this.#processes.signal(pid, "interrupt");
    this.#core.audit.append({
      actor: by,
      pid,
      action: "human.interrupt",
      resource: `process:${pid}`,
      decision: "none",
      authority: by,
      correlation: request.id,
    });
    return request;
  }

  // ------------------------------------------------------------------ decisions

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
        } for ${request.pid} from now on (revocable with "libos revoke")`,
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
        } for ${request.pid} from now on (revocable with "libos revoke")`,
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
        payload: { id, pid: next.pid, status: next.status, by },
      });
      this.#processes.wakeHuman(next.pid, id);
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
    options: { readonly by: string; readonly always?: GrantScope },
  ): HumanRequest {
    this.expireDue();
    this.#refuseIfOrphaned(id);
    this.#refuseIfInconsistent(this.get(id));
    const option = options.always === undefined
      ? undefined
      : this.#alwaysOption(this.get(id), options.always);
    return this.#decide(id, options.by, (request) => {
      const caps: string[] = [];
      const now = Math.trunc(this.#core.clock.now());
      if (request.kind === "approval" && request.approval) {
        const a = request.approval;
        // Bound to the digest, so it covers this action only; the whole workspace as its resource
        // so the action's path as written and as resolved both meet it.
        caps.push(
          this.#authority.capabilities.grant({
            subject: request.pid,
            // The exact file the human was shown, or for a shell run any command (the digest
            // binds the executable, argv, cwd and environment), or for a request any host (the
            // digest binds the method, URL, headers and body; it meets the host and endpoint
            // decisions alike).
            resource: a.primitive === "shell"
              ? { type: "shell", argv: [], scope: "any" }
              : a.primitive === "tool"
              // A tool registration: that tool name (the digest binds the exact source).
              ? { type: "tool", key: a.resource.replace(/^tool:/, ""), scope: "exact" }
              : a.primitive === "network"
              ? { type: "net", key: "*", scope: "any" }
              : a.path === null
              ? { type: "fs", path: ".", scope: "subtree" }
              : { type: "fs", path: a.path, scope: "exact" },
            rights: [a.right],
            effect: "allow",
            oneShot: true,
            actionDigest: a.digest,
            issuer: `human:${id}`,
            // Good until the process resumes, even if that is after the request's own expiry.
            expiresAt: now + this.#ttlMs,
          }, options.by).id,
        );
        if (option) {
          caps.push(
            this.#authority.capabilities.grant({
              subject: request.pid,
              resource: option.resource,
              rights: [...option.rights],
              effect: "allow",
              issuer: `human:${id}`,
            }, options.by).id,
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
        detail: { capabilities: caps, always: options.always ?? null },
      });
      return {
        status: "approved",
        response: {
          by: options.by,
          at: now,
          capabilities: caps,
          ...(options.always ? { always: options.always } : {}),
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

  /**
   * After process `pid` parked on request `id`: if the request was decided in the meantime (between
   * the ask and the park, when nobody was waiting yet), wakes the process now.
   */
  settleWait(pid: string, id: string): void {
    const row = this.#core.store.getHumanRequest(id);
    if (row && row.status !== "pending") this.#processes.wakeHuman(pid, id);
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

  // ------------------------------------------------------------------ resuming

  /**
   * Blocks a caller that cannot park — a JIT tool inside a syscall — until request `id` is
   * decided, then resolves it exactly as {@link resume} does for a parked process (an approved
   * action runs once, marked `dispatched` first). Decisions made here or from another terminal
   * are noticed by reading the request every `pollMs` (the polling DESIGN §4 allows while a
   * process waits on a human); expiry is applied as it falls due. When `signal` aborts (the call
   * was cut off), the request is cancelled — nobody is left to act on it — and this rejects.
   */
  async awaitResolution(
    pid: string,
    id: string,
    signal: AbortSignal,
    pollMs = 100,
  ): Promise<HumanResolution> {
    for (;;) {
      if (signal.aborted) {
        this.withdraw(id, "runtime", "the tool call that asked was cut off");
        throw signal.reason ?? new HumanDecisionError("approval_rejected", "The wait was cut off");
      }
      this.expireDue();
      if (this.get(id).status !== "pending") return await this.resume(pid, id, signal);
      await pauseFor(pollMs, signal);
    }
  }

  /**
   * What a process woken by request `id` gets: for an approved action, the outcome of running
   * it again — once; a second resume of the same request reports `outcome_unknown` instead of
   * running it twice — for a rejection or an expiry, a failed result with no side effect; for a
   * question, the answer; for a permission, the minted capabilities.
   */
  async resume(pid: string, id: string, signal: AbortSignal): Promise<HumanResolution> {
    const request = this.get(id);
    if (request.pid !== pid) {
      throw new IllegalTransitionError(
        "not_a_child",
        `Request ${id} belongs to ${request.pid}, not ${pid}`,
      );
    }
    const done = (outcome: ActionOutcome): HumanResolution => ({
      type: "outcome",
      request,
      outcome,
    });
    switch (request.status) {
      case "pending":
        return { type: "pending", request: id };
      case "rejected":
        return done(
          failed(
            "approval_rejected",
            `The human rejected request ${id}${
              request.response?.reason ? `: ${request.response.reason}` : ""
            }; nothing was done`,
          ),
        );
      case "expired":
        return done(
          failed(
            "approval_expired",
            `Request ${id} expired before anyone answered; nothing was done`,
          ),
        );
      case "answered":
        return done({ ok: true, value: { answer: request.response?.answer ?? "" } });
      case "dispatched":
        return done(
          failed(
            "outcome_unknown",
            `The approved action of request ${id} was already handed back once and its outcome is unknown (the runtime stopped); it was not run again`,
          ),
        );
      case "approved":
        break;
      default:
        return done(failed("approval_rejected", `Request ${id} is ${request.status}`));
    }
    if (request.kind === "permission") {
      return done({ ok: true, value: { capabilities: request.response?.capabilities ?? [] } });
    }
    if (!request.approval) {
      return done(failed("approval_rejected", `Request ${id} carries no action`));
    }
    const action = request.approval.action;
    // Marked before it runs and committed: the action is handed back at most once.
    this.#core.store.step(() =>
      this.#save({
        ...request,
        status: "dispatched",
        updatedAt: Math.trunc(this.#core.clock.now()),
      })
    );
    this.#core.store.flush();
    try {
      return done({
        ok: true,
        value: await this.actions.dispatch(pid, action, signal),
      });
    } catch (error) {
      if (error instanceof HumanPendingError) return { type: "pending", request: error.request };
      return done({ ok: false, error: errorInfo(error) });
    }
  }
}
