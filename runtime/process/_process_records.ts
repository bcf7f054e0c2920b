/**
 * The decision records of process actors' operations on processes (see `process_manager.ts`): a
 * refusal by a capability, by lineage (`lineage:not_a_child`), by an image's tool list or inside
 * the operation's step is recorded as the operation's deny — in a step of its own, so it survives
 * the rollback —, and the allow with the rows the step wrote. The operator and the runtime act
 * on their own authority and leave no decision record here.
 *
 * @module
 */
import type { Actor, ProcessEngine } from "./_process_engine.ts";
import {
  BudgetExhaustedError,
  CapabilityDeniedError,
  IllegalTransitionError,
  LibosError,
} from "../base/errors.ts";
import type { Authority } from "../authority/authority.ts";
import type { ActionResource, Right } from "../authority/capability.ts";
import type { ResolvedImage } from "./process_manager.ts";

/** Checks and records what process actors do to processes; one per manager. */
export class OperationRecords {
  readonly #engine: ProcessEngine;
  readonly #authority: Authority;

  /** Records into `engine`'s audit log; decides with `authority`. */
  constructor(engine: ProcessEngine, authority: Authority) {
    this.#engine = engine;
    this.#authority = authority;
  }

  /**
   * Checks a process actor's authority for operation `op` before anything is written. A denial
   * (or an ask) is recorded in a step of its own, so the record survives, and thrown. The
   * operator and the runtime act on their own authority. Returns the decision's reason for the
   * operation's allow record.
   */
  authorize(
    actor: Actor,
    op: string,
    resource: ActionResource,
    right: Right,
    what: string,
  ): string | undefined {
    if (actor.kind !== "process") return undefined;
    return this.#authority.gate(actor.pid, op, { resource, right }, what).reason;
  }

  /**
   * Records a process actor's operation refused by a rule of the runtime rather than a
   * capability (lineage, an image's tool list), in a step of its own; returns the error to throw.
   */
  refused<E extends Error>(
    actor: Actor,
    op: string,
    resource: string,
    authority: string,
    error: E,
  ): E {
    if (actor.kind === "process") {
      this.#engine.audit.append({
        actor: actor.pid,
        pid: actor.pid,
        action: op,
        resource,
        decision: "deny",
        authority,
        detail: { code: error instanceof LibosError ? error.code : "refused" },
      });
    }
    return error;
  }

  /** A lineage refusal (`not_a_child`), recorded for a process actor. */
  notAChild(actor: Actor, op: string, resource: string, message: string): IllegalTransitionError {
    return this.refused(
      actor,
      op,
      resource,
      "lineage:not_a_child",
      new IllegalTransitionError("not_a_child", message),
    );
  }

  /**
   * Runs operation `op` of an actor as one store step. For a process actor whose checks passed
   * (`authority`), a failure inside the step — which rolls back the allow record written there —
   * is recorded after it: a refusal (a delegation the parent cannot make, a budget, a wait on a
   * non-child) as the operation's deny; anything else as its allow with `detail.failed`.
   */
  step<T>(
    actor: Actor,
    op: string,
    resource: string,
    authority: string | undefined,
    fn: () => T,
  ): T {
    try {
      return this.#engine.op(fn);
    } catch (error) {
      if (actor.kind === "process") {
        const refusal = error instanceof CapabilityDeniedError
          ? error.reason
          : error instanceof BudgetExhaustedError
          ? `budget:${error.kind}`
          : error instanceof IllegalTransitionError && error.code === "not_a_child"
          ? "lineage:not_a_child"
          : undefined;
        const code = error instanceof LibosError ? error.code : "failed";
        this.#engine.audit.append({
          actor: actor.pid,
          pid: actor.pid,
          action: op,
          resource,
          decision: refusal === undefined ? "allow" : "deny",
          authority: refusal ?? authority ?? "self",
          detail: refusal === undefined ? { failed: code } : { code },
        });
      }
      throw error;
    }
  }

  /**
   * A process may narrow the tool table of an image it execs or spawns a child with, never widen
   * it past the image's own list (the operator may). A refusal is recorded.
   * @throws {CapabilityDeniedError} naming the tools the image does not list.
   */
  widerTools(
    actor: Actor,
    op: string,
    explicit: readonly string[] | undefined,
    resolved: { readonly id: string; readonly image: ResolvedImage | undefined },
    what: string,
  ): void {
    if (actor.kind !== "process" || !explicit || !resolved.image) return;
    const defaults = resolved.image.defaultTools;
    const extra = explicit.filter((t) => !defaults.includes(t));
    if (extra.length) {
      throw this.refused(
        actor,
        op,
        `image:${resolved.id}`,
        `image:${resolved.id}`,
        new CapabilityDeniedError(
          "capability_denied",
          `Process ${actor.pid} cannot ${what} tools ${
            extra.join(", ")
          }: image ${resolved.id} does not list them`,
          { reason: `image:${resolved.id}` },
        ),
      );
    }
  }

  /** Requires that `actor` is the process itself (or not a process at all); a refusal is recorded. */
  requireSelf(actor: Actor, op: string, pid: string, what: string): void {
    if (actor.kind === "process" && actor.pid !== pid) {
      throw this.notAChild(
        actor,
        op,
        `process:${pid}`,
        `Process ${actor.pid} cannot ${what} process ${pid}: a process may only ${what} itself`,
      );
    }
  }
}
