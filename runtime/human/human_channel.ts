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
 * This file is the delivery half: taking a process's ask, question, message or permission
 * request to the human (prompting now, parking, or refusing), waking a process when its request
 * is decided, and dispatching an approved action once through the operation it names
 * (`action_registry.ts`). The requests as stored, and the transitions a decision makes (approve,
 * reject, answer, cancel, withdraw, expire), are `_request_book.ts`.
 *
 * @module
 */
import type { ActionOutcome } from "../process/action_ledger.ts";
import { ActionRegistry } from "./action_registry.ts";
import { type AlwaysOption, type Rememberer, RequestBook } from "./_request_book.ts";
import { renderApprovalRequest } from "./approval_render.ts";
import type { Authority } from "../authority/authority.ts";
import {
  errorInfo,
  HumanDecisionError,
  HumanPendingError,
  IllegalTransitionError,
  ValidationError,
} from "../base/errors.ts";
import {
  type ApprovalDetails,
  type GrantScope,
  type HumanRequest,
  JUSTIFICATION_MAX,
  type PermissionRequest,
  type Remember,
} from "./human_request.ts";
import { pauseFor } from "../base/clock.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import { refuseNetPrefix } from "../base/net_host.ts";

export {
  type AlwaysOption,
  type RememberedApproval,
  type Rememberer,
  runWideIssuer,
} from "./_request_book.ts";

/** How the runtime reaches its human (DESIGN §4). */
export type HumanMode = "interactive" | "queue" | "none";

/**
 * What a human decided. An approval may add an "allow always" scope (`always`, one of the
 * request's {@link AlwaysOption}s) and how far it holds (`remember`: `process`, `run` — the
 * default — or `project`, see {@link Remember}); `remember` without `always` is refused.
 */
export type HumanDecision =
  | { readonly type: "approve"; readonly always?: GrantScope; readonly remember?: Remember }
  | { readonly type: "reject"; readonly reason?: string }
  | { readonly type: "answer"; readonly text: string };

/** How a prompt asks. */
export interface PromptOptions {
  /** Aborted when the request was decided elsewhere: the prompt withdraws the question. */
  readonly signal?: AbortSignal;
  /** Whether an "allow always" answer may be remembered for the project (a grants file). */
  readonly project?: boolean;
}

/** The interactive prompt: shows a rendered request and waits for the human. */
export interface HumanPrompt {
  decide(
    request: HumanRequest,
    rendered: string,
    always: readonly AlwaysOption[],
    options?: PromptOptions,
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
  readonly #book: RequestBook;
  /**
   * The operations an approved action can name, by exact name: each primitive (and the JIT tool
   * lifecycle) registers its own; {@link resume} runs a stored action only through one of them.
   */
  readonly actions: ActionRegistry = new ActionRegistry();
  /** The reason each process's model gave for the tool call it is in (see {@link stating}). */
  readonly #stated = new Map<string, string>();

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
    this.#book = new RequestBook(core, {
      authority: options.authority,
      processes: options.processes,
      ttlMs: options.ttlMs ?? 24 * 60 * 60 * 1000,
      // A decision wakes the process parked on it.
      decided: (request) => this.#processes.wakeHuman(request.pid, request.id),
    });
    if (this.mode === "interactive" && !this.#prompt) {
      throw new ValidationError(
        "The interactive human mode needs a prompt (a terminal); use queue or none without one",
      );
    }
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
   * Runs `during` (one tool call of process `pid`) with the reason its model gave for the call:
   * an approval the call asks for carries it, as the model's words, to the human.
   */
  async stating<T>(pid: string, reason: string | undefined, during: () => Promise<T>): Promise<T> {
    if (reason === undefined || reason.trim() === "") return await during();
    this.#stated.set(pid, reason.trim());
    try {
      return await during();
    } finally {
      this.#stated.delete(pid);
    }
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
    const stated = this.#stated.get(pid);
    const request = this.#book.create(pid, "approval", {
      approval: stated === undefined ? details : {
        ...details,
        justification: stated.slice(0, JUSTIFICATION_MAX),
      },
    });
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
        ...(decision.always && decision.remember ? { remember: decision.remember } : {}),
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
    const request = this.#book.create(pid, "question", { text: question }, true, allowed);
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
    const request = this.#book.create(pid, "output", { text, status: "delivered" }, false, allowed);
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
    const request = this.#book.create(pid, "permission", { permission }, true, allowed);
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
    const request = this.#book.create(pid, "interrupt", { text, status: "delivered" }, false);
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

  /**
   * After process `pid` parked on request `id`: if the request was decided in the meantime (between
   * the ask and the park, when nobody was waiting yet), wakes the process now.
   */
  settleWait(pid: string, id: string): void {
    const row = this.#core.store.getHumanRequest(id);
    if (row && row.status !== "pending") this.#processes.wakeHuman(pid, id);
  }

  // ------------------------------------------------------------------ requests

  /**
   * A request by id.
   * @throws {NotFoundError} when there is none.
   */
  get(id: string): HumanRequest {
    return this.#book.get(id);
  }

  /**
   * Requests, oldest first; by default the pending ones. `onCorrupt` is called with each stored
   * request libos cannot read (then left out); without it such a request is a `store_corrupt` error.
   */
  list(query: Parameters<RequestBook["list"]>[0] = {}): HumanRequest[] {
    return this.#book.list(query);
  }

  /**
   * The "allow always" choices for a request, each with exactly what it would grant — only
   * choices that would really allow this action next time.
   */
  alwaysOptions(request: HumanRequest): AlwaysOption[] {
    return this.#book.alwaysOptions(request);
  }

  /**
   * Approves a pending approval or permission request. For an approval: a one-shot capability
   * bound to the action's digest, and with `always`, a standing capability of that scope — for
   * the process, its whole run (the default) or, remembered in the user's grants file, every
   * later run in the workspace too (`remember`).
   * @throws {IllegalTransitionError} for a request that is not pending or not approvable.
   * @throws {ValidationError} for a scope the request does not offer, `remember` without
   *   `always`, or `project` where nothing can remember it; nothing is approved.
   */
  approve(
    id: string,
    options: { readonly by: string; readonly always?: GrantScope; readonly remember?: Remember },
  ): HumanRequest {
    return this.#book.approve(id, options);
  }

  /** Whether "allow always … for this project" answers can be kept (see {@link rememberWith}). */
  get remembers(): boolean {
    return this.#book.remembers;
  }

  /** Wires where "allow always … for this project" answers are kept (the user's grants file). */
  rememberWith(rememberer: Rememberer): void {
    this.#book.rememberWith(rememberer);
  }

  /** Rejects a pending approval, permission request or question. */
  reject(id: string, options: { readonly by: string; readonly reason?: string }): HumanRequest {
    return this.#book.reject(id, options);
  }

  /** Answers a pending question. */
  answer(id: string, options: { readonly by: string; readonly text: string }): HumanRequest {
    return this.#book.answer(id, options);
  }

  /**
   * Cancels a pending request nobody will act on (its process was cancelled or ended); audited.
   * Returns undefined when it was no longer pending.
   */
  cancel(id: string, by: string, why: string): HumanRequest | undefined {
    return this.#book.cancel(id, by, why);
  }

  /**
   * Withdraws the requests process `pid` made at or after `since` (ms since the epoch) that are
   * still pending, or approved but not run: what a call cut off by a restart was waiting on.
   */
  cancelSince(pid: string, since: number, why: string): HumanRequest[] {
    return this.#book.cancelSince(pid, since, why);
  }

  /**
   * Withdraws a request its asker will never act on: a pending one is cancelled; an approved
   * action that has not run yet is cancelled too and its one-shot grant revoked.
   */
  withdraw(id: string, by: string, why: string): HumanRequest | undefined {
    return this.#book.withdraw(id, by, why);
  }

  /** Expires every pending request past its time (a rejection, audited); returns them. */
  expireDue(): HumanRequest[] {
    return this.#book.expireDue();
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
    this.#book.dispatching(request);
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
