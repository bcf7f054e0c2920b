/**
 * The at-most-once ledger (DESIGN §6). An effect runs in three phases: (1) a synchronous step
 * records the action as `executing` with its digest, and the batch is committed before anything
 * else happens; (2) the effect runs outside any transaction; (3) a second step records `done` or
 * `failed` with the outcome. A runtime that reopens and finds an action still `executing` cannot
 * know whether the effect happened, so it marks it `outcome_unknown`, audits that, and reports
 * it to the process as a typed failed result — it never runs it again.
 *
 * @module
 */
import { z } from "zod";
import type { AuditLog } from "../audit/audit_log.ts";
import { digestOf, type JsonValue } from "../base/canonical_json.ts";
import type { Clock } from "../base/clock.ts";
import { errorInfo, IllegalTransitionError, StoreError, ValidationError } from "../base/errors.ts";
import type { EventLog } from "../audit/event_log.ts";
import type { IdSource } from "../base/ids.ts";
import { isFinal } from "./process.ts";
import type { ProcessManager } from "./process_manager.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import type { ActionRow, Store } from "../store/store.ts";

/** Where an action is in its life. */
export const ActionStatus = z.enum(["executing", "done", "failed", "outcome_unknown", "cancelled"]);
/** Where an action is in its life. */
export type ActionStatus = z.infer<typeof ActionStatus>;

/** What an effect produced: a value, or a typed error. */
export const ActionOutcome = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), value: z.json() }).strict(),
  z.object({
    ok: z.literal(false),
    error: z.object({ code: z.string(), message: z.string() }).strict(),
  }).strict(),
]);
/** What an effect produced. */
export type ActionOutcome = { readonly ok: true; readonly value: JsonValue } | {
  readonly ok: false;
  readonly error: { readonly code: string; readonly message: string };
};

/** A stored action as callers see it. */
export interface ActionRecord {
  readonly id: string;
  readonly pid: string;
  readonly kind: string;
  readonly digest: string;
  readonly status: ActionStatus;
  readonly request: JsonValue;
  readonly outcome: ActionOutcome | null;
  readonly reported: boolean;
  readonly created: number;
  readonly updated: number;
}

/** What to perform. */
export interface ActionRequest {
  /** What sort of effect: `tool_call`, `fs.write`, `shell.run`, ... */
  readonly kind: string;
  /** What exactly is asked; its canonical digest identifies the action. */
  readonly request: JsonValue;
}

/** What the ledger needs. */
export interface ActionLedgerOptions extends RuntimeCore {
  readonly processes: ProcessManager;
}

const KIND = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/;

function decode(row: ActionRow): ActionRecord {
  try {
    return {
      ...row,
      status: ActionStatus.parse(row.status),
      request: JSON.parse(row.request),
      outcome: row.outcome === null
        ? null
        : ActionOutcome.parse(JSON.parse(row.outcome)) as ActionOutcome,
    };
  } catch (error) {
    throw new StoreError(
      "store_corrupt",
      `Action ${row.id} is stored in a shape this libos does not understand; the database was edited outside libos`,
      { cause: error },
    );
  }
}

/**
 * What a process is told about an action a restart cut off. A JIT call is `interrupted_by_restart`
 * (its sandbox died with the runtime; each syscall it made is audited and went through the ledger
 * itself where it had an effect); any other action's outcome is unknown.
 */
function cutOff(row: ActionRow): { code: string; message: string } {
  if (row.kind === "jit.call") {
    return {
      code: "interrupted_by_restart",
      message:
        `The runtime stopped while JIT tool call ${row.id} was running; the tool was cut off and was not run again (what its syscalls did before is in the audit log). Call it again if it is still needed`,
    };
  }
  return {
    code: "outcome_unknown",
    message:
      `The runtime stopped while action ${row.id} (${row.kind}) was executing, so whether it took effect is unknown; it was not run again. Check its effect before retrying`,
  };
}

/**
 * Asked before a process's effect (see {@link ActionLedger.guard}); throws to stop it.
 * `intent`: before the intent is recorded and committed; `effect`: after, just before it starts.
 */
export type EffectGuard = (pid: string, phase: "intent" | "effect") => void;

/** Records intents and outcomes of effects so that none runs twice and none is silently lost. */
export class ActionLedger {
  readonly #store: Store;
  readonly #audit: AuditLog;
  readonly #events: EventLog;
  readonly #clock: Clock;
  readonly #ids: IdSource;
  readonly #processes: ProcessManager;
  /**
   * Pids that may have outcomes they were not told yet. Unreported outcomes are rare (recovery,
   * or an outcome recorded with `reported: false`), so this spares every quantum a query.
   */
  readonly #maybeUnreported = new Set<string>();
  /** Who may start effects, asked before each intent and before each effect ({@link guard}). */
  readonly #guards = new Set<EffectGuard>();

  /** Binds the ledger to a runtime. */
  constructor(options: ActionLedgerOptions) {
    this.#store = options.store;
    this.#audit = options.audit;
    this.#events = options.events;
    this.#clock = options.clock;
    this.#ids = options.ids;
    this.#processes = options.processes;
    for (const row of this.#store.listActions({ unreported: true, limit: 10_000 })) {
      this.#maybeUnreported.add(row.pid);
    }
  }

  /**
   * Adds a guard asked before every effect of a process, twice: before its intent is recorded
   * (`intent`, when the guard may fence the intent's commit with
   * {@link Store.fenceNextCommit}) and after that commit, just before the effect starts
   * (`effect`). A guard that throws stops the effect: before the intent nothing is recorded;
   * after it the action stays `executing` and is reported `outcome_unknown` by whoever recovers
   * the process. A runtime worker uses this so that a worker paused past its lease starts no
   * effect in a tree another worker runs now. Returns the function that removes the guard.
   */
  guard(guard: EffectGuard): () => void {
    this.#guards.add(guard);
    return () => this.#guards.delete(guard);
  }

  #ask(pid: string, phase: "intent" | "effect"): void {
    for (const guard of this.#guards) guard(pid, phase);
  }

  /** The action with this id, if any. */
  find(id: string): ActionRecord | undefined {
    const row = this.#store.getAction(id);
    return row === undefined ? undefined : decode(row);
  }

  /** A process's actions, oldest first. */
  list(pid: string, limit = 1000): ActionRecord[] {
    return this.#store.listActions({ pid, limit }).map(decode);
  }

  /**
   * Phase 1: records the intent as `executing` and commits it. Returns the action id.
   * @throws {IllegalTransitionError} when the process is finished.
   */
  begin(pid: string, action: ActionRequest): ActionRecord {
    if (!KIND.test(action.kind)) {
      throw new ValidationError(
        `Action kind ${
          JSON.stringify(action.kind)
        } is invalid: use dotted lowercase words such as fs.write`,
      );
    }
    const digest = digestOf({ kind: action.kind, request: action.request });
    this.#ask(pid, "intent");
    const record = this.#store.step(() => {
      const p = this.#processes.get(pid);
      if (isFinal(p.status)) {
        throw new IllegalTransitionError(
          "illegal_transition",
          `Process ${pid} is ${p.status} and can start no action`,
        );
      }
      const now = this.#clock.now();
      const row: ActionRow = {
        id: this.#ids.next("act"),
        pid,
        kind: action.kind,
        digest,
        status: "executing",
        request: JSON.stringify(action.request),
        outcome: null,
        reported: false,
        created: now,
        updated: now,
      };
      this.#store.putAction(row);
      this.#processes.setPending(pid, row.id);
      this.#audit.append({
        actor: pid,
        pid,
        action: "action.intent",
        resource: `action:${row.id}`,
        decision: "none",
        authority: "runtime",
        inputDigest: digest,
        correlation: row.id,
        detail: { kind: action.kind },
      });
      return decode(row);
    });
    // The forced commit: the intent is durable before the effect can start.
    this.#store.flush();
    this.#ask(pid, "effect");
    return record;
  }

  /** Phase 3: records the outcome of an action that was `executing`. */
  finish(
    id: string,
    outcome: ActionOutcome,
    options: { readonly reported?: boolean } = {},
  ): ActionRecord {
    return this.#store.step(() => {
      const current = this.find(id);
      if (!current) throw new ValidationError(`No action ${JSON.stringify(id)} to finish`);
      if (current.status !== "executing") {
        throw new IllegalTransitionError(
          "illegal_transition",
          `Action ${id} is ${current.status}, not executing; its outcome was already recorded`,
        );
      }
      // An effect cut off mid-way (a server that died during a call) is unknown, not failed.
      const status: ActionStatus = outcome.ok
        ? "done"
        : outcome.error.code === "outcome_unknown"
        ? "outcome_unknown"
        : "failed";
      const row: ActionRow = {
        ...this.#store.getAction(id)!,
        status,
        outcome: JSON.stringify(outcome),
        reported: options.reported ?? true,
        updated: this.#clock.now(),
      };
      this.#store.putAction(row);
      if (!row.reported) this.#maybeUnreported.add(current.pid);
      const p = this.#processes.find(current.pid);
      if (p && p.pending === id && !isFinal(p.status)) {
        this.#processes.setPending(current.pid, null);
      }
      this.#audit.append({
        actor: current.pid,
        pid: current.pid,
        action: outcome.ok ? "action.done" : `action.${status}`,
        resource: `action:${id}`,
        decision: "none",
        authority: "runtime",
        inputDigest: current.digest,
        correlation: id,
        ...(outcome.ok ? {} : { detail: { code: outcome.error.code } }),
      });
      return decode(row);
    });
  }

  /**
   * Runs `effect` at most once for `pid`: intent committed before, outcome recorded after.
   * A thrown error becomes a failed outcome; the outcome is returned, never thrown.
   */
  async perform(
    pid: string,
    action: ActionRequest,
    effect: (signal: AbortSignal) => Promise<JsonValue>,
    signal: AbortSignal = new AbortController().signal,
  ): Promise<ActionOutcome> {
    const { id } = this.begin(pid, action);
    let outcome: ActionOutcome;
    try {
      outcome = { ok: true, value: await effect(signal) };
    } catch (error) {
      outcome = { ok: false, error: errorInfo(error) };
    }
    this.finish(id, outcome);
    return outcome;
  }

  /**
   * After a restart: every action still `executing` becomes `outcome_unknown`, is audited and
   * evented, and waits to be reported to its process. Returns those actions. `accept` limits it
   * to some processes' actions (a launcher recovers only its own process tree).
   */
  recover(accept: (pid: string) => boolean = () => true): ActionRecord[] {
    return this.#store.step(() => {
      const found: ActionRecord[] = [];
      for (const row of this.#store.listActions({ status: "executing", limit: 10_000 })) {
        if (!accept(row.pid)) continue;
        const outcome: ActionOutcome = { ok: false, error: cutOff(row) };
        const updated: ActionRow = {
          ...row,
          status: "outcome_unknown",
          outcome: JSON.stringify(outcome),
          reported: false,
          updated: this.#clock.now(),
        };
        this.#store.putAction(updated);
        this.#maybeUnreported.add(row.pid);
        this.#audit.append({
          actor: "runtime",
          pid: row.pid,
          action: "action.outcome_unknown",
          resource: `action:${row.id}`,
          decision: "none",
          authority: "runtime",
          inputDigest: row.digest,
          correlation: row.id,
          detail: { kind: row.kind },
        });
        this.#events.emit({
          kind: "action.outcome_unknown",
          payload: { pid: row.pid, action: row.id, actionKind: row.kind },
        });
        found.push(decode(updated));
      }
      return found;
    });
  }

  /** Finished actions whose outcome the process has not been told yet. */
  unreported(pid: string): ActionRecord[] {
    if (!this.#maybeUnreported.has(pid)) return [];
    const found = this.#store.listActions({ pid, unreported: true, limit: 1000 }).map(decode)
      .filter((a) => a.status !== "executing");
    if (found.length === 0) this.#maybeUnreported.delete(pid);
    return found;
  }

  /** Notes that the process has been told these outcomes. */
  markReported(ids: readonly string[]): void {
    if (ids.length === 0) return;
    this.#store.step(() => {
      for (const id of ids) {
        const row = this.#store.getAction(id);
        if (row && !row.reported) {
          this.#store.putAction({ ...row, reported: true, updated: this.#clock.now() });
        }
      }
    });
  }
}
