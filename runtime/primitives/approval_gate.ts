/**
 * The approval gate: the one loop every primitive (and the JIT tool lifecycle) runs an action
 * through when `decide()` may say ask (DESIGN §5).
 *
 * **The shape the primitives share.** The filesystem (`#operate`), shell (`run`), network
 * (`#permit`, per hop) and tool lifecycle (`register`) loops each did the same, in this order:
 * 1. decide afresh (a deny is audited and thrown by the primitive — its own record and error);
 * 2. when it asks, look for a human's one-shot approval bound to exactly this action's digest
 *    ({@link ApprovalGate.approval}); with one, the action is allowed by that capability;
 * 3. without one, the primitive records its `ask` and the gate decides whether to ask at all: a
 *    caller that must not ask, or no human, is refused unasked; after N approvals that no longer
 *    match (the action keeps changing between the approval and its re-run) the action fails
 *    ("still needs approval after N approvals; it keeps changing");
 * 4. otherwise the gate parks the exact action with the request — the operation's registered
 *    name and the call's arguments as given ({@link PendingAction}), which is what a resume
 *    re-dispatches through the action registry — and escalates: interactive approval resolves
 *    and the loop decides again (step 1) with the one-shot grant; queue mode throws
 *    `HumanPendingError` (the process parks); none, or a rejection, throws `HumanDecisionError`;
 * 5. before the effect, every one-shot capability behind the allow is used up, compare-and-set,
 *    once ({@link ApprovalGate.spend}): a second use of the same approval is refused.
 *
 * **Where they differ** (each difference is a hook of {@link GatedAction}, not a copy):
 * - what is decided and digested, where the ask is found (the filesystem finds it under the
 *   workspace lock, after reading the target; the network per hop) — {@link GatedAction.attempt};
 * - the preview a human sees (`ApprovalDetails`: a diff, an argv with its environment hash, a
 *   request's lines, a tool's source) — {@link Ask.details};
 * - refusing unasked — the filesystem when a search passes `ask: false` (`ApprovalRequiredError`,
 *   "it was skipped"), the network without a human channel (`ApprovalRequiredError`) or for a
 *   redirect of a request that cannot be re-run (`redirect_needs_approval`), the tool lifecycle
 *   without a human or in mode none — {@link GatedAction.unasked};
 * - how many asks are allowed and what the last says: three for files (`ValidationError`),
 *   shell (`ValidationError`) and the network (`ApprovalRequiredError`), two for a tool
 *   registration — {@link GatedAction.attempts}, {@link GatedAction.exhausted};
 * - a shell run re-hashes what it would run under the workspace lock and, when it changed after
 *   the decision, decides again without asking — an attempt that returns `again`;
 * - the audit records (their actions, resources and details) and the ledger intent/outcome
 *   records stay the primitive's own: the gate writes none.
 *
 * @module
 */
import type { JsonValue } from "../base/canonical_json.ts";
import type { Authority } from "../authority/authority.ts";
import type { ActionResource, Capability, CapabilityResource } from "../authority/capability.ts";
import type { Decision } from "../authority/decide.ts";
import { ApprovalRequiredError } from "../base/errors.ts";
import type { HumanChannel } from "../human/human_channel.ts";
import type { ApprovalDetails, PendingAction } from "../human/human_request.ts";

/** An attempt that needs a human: what to show them (the gate adds the parked action). */
export interface Ask {
  /** The preview: everything the human sees but the action, which the gate parks. */
  readonly details: Omit<ApprovalDetails, "action">;
  /** The action in the primitive's words, for its refusals (`"src/a.ts"`, `fetch "…"`). */
  readonly subject: string;
}

/** What one attempt of a gated action came to. */
export type Attempt<T> =
  | { readonly type: "done"; readonly value: T }
  | { readonly type: "ask"; readonly ask: Ask }
  /** Decided again at once: what it would do changed after the decision (nobody is asked). */
  | { readonly type: "again" };

/** One action through the gate: what is the primitive's own. */
export interface GatedAction<T> {
  /** The registered operation an approval resumes through (`fs.write`). */
  readonly operation: string;
  /** The call's arguments as given: what is parked with the request and re-dispatched. */
  readonly args: Record<string, JsonValue>;
  /**
   * One attempt, numbered from 1: decides afresh and performs the action (spending its grants
   * before the effect), or records its ask and returns it.
   */
  attempt(n: number): Promise<Attempt<T>>;
  /**
   * The resource of the one-shot capability a human's approval of `ask` mints — the primitive's
   * own kind (`fs`, `shell`, `net`, `tool`, …), met by its decisions on the retried action. It is
   * bound to the action's digest, so a wide resource widens nothing.
   */
  grant(ask: Ask): CapabilityResource;
  /** The refusal when this ask must not reach a human; undefined: ask. */
  unasked?(ask: Ask, n: number): Error | undefined;
  /** Asks allowed: the ask of attempt `attempts` (or later) fails with {@link exhausted}. Default 3. */
  readonly attempts?: number;
  /** The error when the action still asks after `n - 1` approvals. */
  exhausted(ask: Ask, n: number): Error;
}

/** What the gate needs. */
export interface ApprovalGateOptions {
  readonly authority:
    & Pick<Authority, "consume" | "capabilities">
    & Partial<Pick<Authority, "explanation">>;
  /** Where asks go; without one, an ask is refused ({@link GatedAction.unasked} or a generic refusal). */
  readonly human?: Pick<HumanChannel, "escalate"> | undefined;
}

/** The approval gate of one primitive. */
export class ApprovalGate {
  readonly #authority:
    & Pick<Authority, "consume" | "capabilities">
    & Partial<Pick<Authority, "explanation">>;
  readonly #human: Pick<HumanChannel, "escalate"> | undefined;

  /** Binds the gate to the runtime's authority and human channel. */
  constructor(options: ApprovalGateOptions) {
    this.#authority = options.authority;
    this.#human = options.human;
  }

  /** Whether a human can be asked at all. */
  get canAsk(): boolean {
    return this.#human !== undefined;
  }

  /**
   * A human's live one-shot approval of exactly this action: bound to `digest`, so an approval
   * of one content, path or argv never lets another through.
   */
  approval(
    pid: string,
    resource: ActionResource,
    right: string,
    digest: string,
  ): Capability | undefined {
    return this.#authority.capabilities.approval(pid, resource, right, digest)?.capability;
  }

  /**
   * Uses up every one-shot capability behind an action, each once, before its effect
   * (compare-and-set: one used meanwhile refuses), so none outlives its one use. Decisions that
   * are not allows, or came from no capability, and standing capabilities are passed over.
   * @throws {CapabilityDeniedError} when one was already used; nothing after it is spent.
   */
  spend(grants: Iterable<Decision | Capability | undefined>): void {
    const spent = new Set<string>();
    for (const grant of grants) {
      if (!grant) continue;
      if ("id" in grant) {
        if (spent.has(grant.id)) continue;
        spent.add(grant.id);
        this.#authority.capabilities.consume(grant);
      } else {
        if (grant.effect !== "allow" || !grant.capability || spent.has(grant.capability)) continue;
        spent.add(grant.capability);
        this.#authority.consume(grant);
      }
    }
  }

  /**
   * Runs an action until it is done: each ask is refused, exhausted or escalated with the exact
   * action parked, and the action is attempted again once a human approved it.
   * @throws whatever an attempt throws; the hooks' refusals; `HumanPendingError` (queue mode:
   *   the process parks) and `HumanDecisionError` (none, rejected) from the human channel.
   */
  async pass<T>(pid: string, action: GatedAction<T>): Promise<T> {
    const attempts = action.attempts ?? 3;
    for (let n = 1;; n++) {
      const outcome = await action.attempt(n);
      if (outcome.type === "done") return outcome.value;
      if (outcome.type === "again") continue;
      const { ask } = outcome;
      const refusal = action.unasked?.(ask, n) ??
        (this.#human ? undefined : new ApprovalRequiredError(
          `Cannot ${ask.details.operation} ${ask.subject} yet: it needs a human's approval (${ask.details.reason}) and no human channel is attached`,
          { reason: ask.details.reason, digest: ask.details.digest },
        ));
      if (refusal) throw refusal;
      if (n >= attempts) throw action.exhausted(ask, n);
      const parked: PendingAction = {
        primitive: action.operation,
        args: action.args as PendingAction["args"],
      };
      // Interactive approval resolves (and the action is attempted again with the one-shot
      // grant); queue mode throws HumanPendingError (the process parks); none rejects.
      // A rule that asked: the card names its file and line.
      const rule = this.#authority.explanation?.(ask.details.reason)?.explain.rule;
      await this.#human!.escalate(pid, {
        ...ask.details,
        ...(rule === undefined ? {} : { rule }),
        grant: action.grant(ask),
        action: parked,
      });
    }
  }
}
