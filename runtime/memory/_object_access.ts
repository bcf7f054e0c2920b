/**
 * What every part of the object memory shares: the runtime it is bound to, the decisions (with
 * the one "invisible" refusal that tells nothing about existence) and their audit records, row
 * decoding, payloads — the volatile ones held in this runtime's memory only — and input parsing.
 *
 * Every operation runs as one {@link ObjectAccess.step} and leaves one decision record (see
 * `audit_log.ts`): a refusal when it is made (written after the step, which rolls back), or the
 * allow its body writes with {@link ObjectAccess.allowed}, naming the first check it passed; an
 * operation that passed its checks and then failed leaves that allow with `detail.failed`.
 *
 * @module
 */
import type { z } from "zod";
import type { Authority } from "../authority/authority.ts";
import { canonicalJson, type JsonValue, sha256Hex } from "../base/canonical_json.ts";
import type { ActionResource, Right } from "../authority/capability.ts";
import type { Decision } from "../authority/decide.ts";
import type { AuditEntry } from "../audit/audit_log.ts";
import {
  CapabilityDeniedError,
  LibosError,
  NotFoundError,
  StoreError,
  ValidationError,
  VolatileLostError,
} from "../base/errors.ts";
import {
  EXPLICIT_NAMESPACE,
  ObjectInfo,
  ObjectMetadata,
  objectResource,
  Oid,
  PROCESS_NAMESPACE,
} from "./memory_object.ts";
import { isFinal } from "../process/process.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import type { ObjectRow } from "../store/store.ts";

/** Who acts: a process, or the operator (the host or the CLI; audited as such, never decided). */
export type MemoryActor = string;

/** The operator: the host or the command line. */
export const OPERATOR_ACTOR = "operator";
/** The runtime itself (e.g. storing a tool's result in its process's namespace). */
export const RUNTIME_ACTOR = "runtime";

/** Whether an actor is the operator or the runtime: audited, never decided. */
export function isPrivileged(actor: MemoryActor): boolean {
  return actor === OPERATOR_ACTOR || actor === RUNTIME_ACTOR;
}

/** Bounds enforced inside the object memory. */
export interface ObjectLimits {
  /** Largest payload (canonical JSON bytes). */
  readonly payloadBytesMax: number;
  /** Most rows a query scans before it stops (and says it was cut). */
  readonly queryScanMax: number;
  /** Largest page a listing or query returns. */
  readonly pageMax: number;
}

/** The limits when nothing else is configured. */
export const DEFAULT_OBJECT_LIMITS: ObjectLimits = Object.freeze({
  payloadBytesMax: 1024 * 1024,
  queryScanMax: 10_000,
  pageMax: 1000,
});

/** The rights objects know. */
export const OBJECT_RIGHTS: readonly Right[] = Object.freeze([
  "read",
  "write",
  "delete",
  "grant",
  "link",
]);

/** A check an operation passed: what it was, on what, and the reason of the decision. */
interface Passed {
  readonly actor: MemoryActor;
  readonly action: string;
  readonly resource: string;
  readonly reason: string;
}

/** What the operation running in the current step decided so far. */
interface Operation {
  /** Refusals, written after the step (a rolled-back step would lose them). */
  readonly refusals: AuditEntry[];
  readonly passed: Passed[];
}

/** A decision record's detail. */
type Detail = Record<string, string | number | boolean | null>;

/** Parses with a schema; a failure is a ValidationError naming the field. */
export function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length ? ` (${issue.path.map(String).join(".")})` : "";
  throw new ValidationError(`Invalid ${what}${where}: ${issue?.message ?? "invalid"}`);
}

/** The shared state and checks of one runtime's object memory. */
export class ObjectAccess {
  readonly core: RuntimeCore;
  readonly authority: Authority;
  readonly processes: ProcessManager;
  readonly limits: ObjectLimits;
  /** Payloads of volatile objects: this runtime's memory only. */
  readonly volatile: Map<string, JsonValue> = new Map();
  /** The operation running in the current step, if any. */
  #op: Operation | null = null;

  /** Binds the access to a runtime. */
  constructor(
    core: RuntimeCore,
    authority: Authority,
    processes: ProcessManager,
    limits: ObjectLimits,
  ) {
    this.core = core;
    this.authority = authority;
    this.processes = processes;
    this.limits = limits;
  }

  /**
   * Records a decision about an object operation of an actor: an allow at once (inside the
   * operation's step, with its effect), a refusal after the step (which rolls back).
   */
  audit(
    actor: MemoryActor,
    action: string,
    resource: string,
    decision: "allow" | "ask" | "deny",
    authority: string,
    detail?: Detail,
  ): void {
    const entry: AuditEntry = {
      actor,
      ...(isPrivileged(actor) ? {} : { pid: actor }),
      action,
      resource,
      decision,
      authority,
      ...(detail ? { detail } : {}),
    };
    if (decision !== "allow" && this.#op) this.#op.refusals.push(entry);
    else this.core.audit.append(entry);
  }

  /**
   * Records the allow of the operation running in this step — its one decision record — naming
   * the first check it passed (the others' reasons in `detail.also`). A read by the operator or
   * the runtime (`read: true`) is not decided and leaves no record.
   */
  allowed(
    actor: MemoryActor,
    action: string,
    resource: string,
    detail?: Detail,
    options: {
      readonly read?: boolean;
      /** The check that names the allow, when it is not the first one passed. */
      readonly primary?: Decision;
    } = {},
  ): void {
    if (options.read && isPrivileged(actor)) return;
    const reasons = [
      ...new Set([
        ...(options.primary ? [options.primary.reason] : []),
        ...(this.#op?.passed ?? []).map((c) => c.reason),
      ]),
    ];
    const also = reasons.slice(1);
    this.audit(
      actor,
      action,
      resource,
      "allow",
      reasons[0] ?? (isPrivileged(actor) ? actor : "self"),
      also.length ? { ...detail, also: also.join(" ") } : detail,
    );
  }

  /** Notes a check the current operation passed (`reason` names the operation's allow). */
  passed(actor: MemoryActor, action: string, resource: string, reason: string): void {
    this.#op?.passed.push({ actor, action, resource, reason });
  }

  /**
   * Runs `fn` as one operation's store step. A refusal inside it rolls the step back, and the
   * refusal's record is written afterwards, in a step of its own, so none goes unrecorded; an
   * operation of a process that passed its checks and then failed is recorded as allowed, with
   * `detail.failed` (its own allow record, if it wrote one, went with the step).
   */
  step<T>(fn: () => T): T {
    return this.#operation(() => this.core.store.step(fn));
  }

  /**
   * Runs `fn` as one operation that writes nothing but its decision record (a read): recorded
   * like {@link ObjectAccess.step}, without a store step around it — the hot path stays short,
   * and the operator's reads (not recorded) write nothing, so a read-only database serves them.
   */
  reading<T>(fn: () => T): T {
    return this.#operation(fn);
  }

  #operation<T>(fn: () => T): T {
    if (this.#op) return fn();
    const op: Operation = { refusals: [], passed: [] };
    this.#op = op;
    try {
      return fn();
    } catch (error) {
      const first = op.passed[0];
      if (first && op.refusals.length === 0 && !isPrivileged(first.actor)) {
        op.refusals.push({
          actor: first.actor,
          pid: first.actor,
          action: first.action,
          resource: first.resource,
          decision: "allow",
          authority: first.reason,
          detail: { failed: error instanceof LibosError ? error.code : "failed" },
        });
      }
      throw error;
    } finally {
      this.#op = null;
      for (const entry of op.refusals) this.core.audit.append(entry);
    }
  }

  /**
   * The decision for an actor's action: the operator is always allowed; a process that has
   * finished (or never existed) may do nothing.
   */
  decision(actor: MemoryActor, resource: ActionResource, right: Right): Decision {
    if (isPrivileged(actor)) return { effect: "allow", reason: actor, layer: "cap" };
    const p = this.processes.find(actor);
    if (!p || isFinal(p.status)) return { effect: "deny", reason: "default", layer: "default" };
    if (resource.type === "object") {
      const at = resource.key.lastIndexOf("/");
      if (this.retained(resource.key.slice(0, at), resource.key.slice(at + 1))) {
        return { effect: "deny", reason: "retained", layer: "default" };
      }
    }
    return this.authority.decide(actor, { resource, right });
  }

  /**
   * Whether an object is retained: it lives in the namespace of a process that has finished and
   * is not the result that process named. Retained objects are kept for review (`libos log`)
   * until `libos gc` removes them, and no process reaches them — whatever capability it holds,
   * it gets the answer a deleted object gives. The operator may read them.
   */
  retained(namespace: string, oid: string): boolean {
    if (!PROCESS_NAMESPACE.test(namespace)) return false;
    const p = this.processes.find(namespace.slice("process:".length));
    return p !== undefined && isFinal(p.status) && p.result !== oid;
  }

  may(actor: MemoryActor, resource: ActionResource, right: Right): boolean {
    return this.decision(actor, resource, right).effect === "allow";
  }

  /**
   * Requires `right` on `resource` for operation `action`; a refusal is recorded and thrown as
   * `refusal()` (so callers choose a message that tells nothing the actor may not know). An ask
   * is refused the same way (recorded as the ask it was): objects have no route to a human yet,
   * and an approval error would tell an object exists where a refusal does not.
   */
  require(
    actor: MemoryActor,
    action: string,
    resource: ActionResource,
    right: Right,
    refusal: (decision: Decision) => Error,
  ): Decision {
    const decision = this.decision(actor, resource, right);
    const key = `${resource.type}:${"key" in resource ? resource.key : ""}`;
    if (decision.effect === "allow") {
      this.passed(actor, action, key, decision.reason);
      return decision;
    }
    this.audit(actor, action, key, decision.effect, decision.reason, { right });
    throw refusal(decision);
  }

  /** The one answer for "no such object" and "you may not": identical, so nothing leaks. */
  invisible(actor: MemoryActor, oid: string, right: Right): CapabilityDeniedError {
    return new CapabilityDeniedError(
      "capability_denied",
      `${actor} cannot ${right} object ${
        JSON.stringify(oid)
      }: it does not exist or ${actor} lacks ${right} on it; a process that holds it can grant it`,
      { reason: "object" },
    );
  }

  /** The row of an object the actor may act on with `right`, or the one invisible error. */
  visible(actor: MemoryActor, oid: string, right: Right, action: string): ObjectRow {
    const found = Oid.safeParse(oid).success ? this.core.store.getObject(oid) : undefined;
    // A retained object is, to every process, an object that is not there.
    const row = found && !isPrivileged(actor) && this.retained(found.namespace, found.oid)
      ? undefined
      : found;
    if (!row && isPrivileged(actor)) {
      // The operator may see everything, so telling it "no such object" leaks nothing.
      throw new NotFoundError(`No object ${JSON.stringify(oid)}; list them with "libos memory ls"`);
    }
    if (!row) {
      this.audit(actor, action, `object:?/${String(oid).slice(0, 64)}`, "deny", "not_visible", {
        right,
      });
      throw this.invisible(actor, oid, right);
    }
    this.require(
      actor,
      action,
      objectResource(row.namespace, row.oid),
      right,
      () => this.invisible(actor, oid, right),
    );
    return row;
  }

  decode(row: ObjectRow): ObjectInfo {
    try {
      return ObjectInfo.parse(JSON.parse(row.data));
    } catch (error) {
      throw new StoreError(
        "store_corrupt",
        `Object ${row.oid} is stored in a shape this libos does not understand; the database was edited outside libos`,
        { cause: error },
      );
    }
  }

  payload(row: ObjectRow, info: ObjectInfo): JsonValue {
    if (row.volatile) {
      if (!this.volatile.has(row.oid)) {
        throw new VolatileLostError(
          `Object ${row.oid}${
            info.name ? ` (${info.name})` : ""
          } was volatile: its payload lived only in the memory of a runtime that has stopped; recreate it`,
        );
      }
      return structuredClone(this.volatile.get(row.oid)!);
    }
    try {
      return JSON.parse(row.payload ?? "null") as JsonValue;
    } catch (error) {
      throw new StoreError(
        "store_corrupt",
        `The payload of object ${row.oid} is not JSON; the database was edited outside libos`,
        { cause: error },
      );
    }
  }

  serialise(payload: JsonValue): { text: string; bytes: number; sha256: string } {
    let text: string;
    try {
      text = canonicalJson(payload);
    } catch (error) {
      throw new ValidationError(
        `An object's payload must be JSON (no undefined, functions, cycles or non-finite numbers)`,
        { cause: error },
      );
    }
    const data = new TextEncoder().encode(text);
    if (data.length > this.limits.payloadBytesMax) {
      throw new ValidationError(
        `The payload is ${data.length} bytes; the limit is ${this.limits.payloadBytesMax} (store large content in a file)`,
      );
    }
    return { text, bytes: data.length, sha256: sha256Hex(data) };
  }

  save(info: ObjectInfo, payloadText: string | null): void {
    try {
      this.core.store.putObject({
        oid: info.oid,
        namespace: info.namespace,
        name: info.name,
        type: info.type,
        creator: info.creator,
        data: JSON.stringify(info),
        payload: info.volatile ? null : payloadText,
        volatile: info.volatile,
        created: info.createdAt,
        updated: info.updatedAt,
      });
    } catch (error) {
      if (error instanceof StoreError && error.code === "store_conflict") {
        throw new ValidationError(
          `The name ${
            JSON.stringify(info.name)
          } is taken in namespace ${info.namespace}; choose another`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  /** Validated metadata, at most 16 KiB of JSON (it is stored even for volatile objects). */
  metadata(tags: readonly string[], attrs: Readonly<Record<string, JsonValue>>): ObjectMetadata {
    const metadata = parse(ObjectMetadata, { tags: [...tags], attrs: { ...attrs } }, "metadata");
    const bytes = new TextEncoder().encode(JSON.stringify(metadata)).length;
    if (bytes > 16 * 1024) {
      throw new ValidationError(
        `An object's tags and attributes take ${bytes} bytes; the limit is 16384 (put content in the payload)`,
      );
    }
    return metadata;
  }

  /**
   * Giving an object a name in `namespace` needs namespace list: otherwise "name taken" would tell
   * a caller which names exist where it may not look.
   */
  mayName(actor: MemoryActor, action: string, namespace: string): void {
    this.require(
      actor,
      action,
      { type: "namespace", key: namespace },
      "list",
      () =>
        new CapabilityDeniedError(
          "capability_denied",
          `${actor} cannot name objects in namespace ${
            JSON.stringify(namespace)
          }: naming needs namespace list there (or create the object without a name)`,
          { reason: "namespace" },
        ),
    );
  }

  /** Whether `namespace` exists: a live process's own, or an explicit one. */
  namespaceExists(namespace: string): boolean {
    if (EXPLICIT_NAMESPACE.test(namespace)) {
      return this.core.store.getNamespace(namespace) !== undefined;
    }
    const pid = namespace.slice("process:".length);
    const p = this.processes.find(pid);
    return p !== undefined && !isFinal(p.status);
  }

  /** The refusal for a namespace; only about its own namespace does an actor learn why. */
  namespaceRefusal(actor: MemoryActor, namespace: string, right: Right): CapabilityDeniedError {
    if (!isPrivileged(actor) && namespace === `process:${actor}`) {
      const d = this.decision(actor, { type: "namespace", key: namespace }, right);
      return new CapabilityDeniedError(
        "capability_denied",
        `${actor} cannot ${right} in its own namespace: ${d.reason}${
          d.reason.startsWith("mode:") ? " (the run's mode forbids it; run in another mode)" : ""
        }`,
        { reason: d.reason },
      );
    }
    return new CapabilityDeniedError(
      "capability_denied",
      `${actor} cannot ${right} in namespace ${
        JSON.stringify(namespace)
      }: it does not exist or ${actor} lacks namespace ${right} on it`,
      { reason: "namespace" },
    );
  }
}
