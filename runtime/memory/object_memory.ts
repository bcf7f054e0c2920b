/**
 * The object memory (DESIGN §2, §6): typed objects in namespaces, behind capabilities.
 *
 * - **Names are not authority.** Every access is decided on `object:<namespace>/<oid>`; a lookup
 *   by name or a listing first needs `namespace:<namespace>` list. Knowing an oid gives nothing.
 * - **No existence oracle.** A caller that may not read an object gets the same error whether it
 *   exists or not; a caller that may not list a namespace learns nothing about its names.
 * - **Attenuation.** Passing an object to another process needs `grant` on it and hands over only
 *   rights the giver holds, derived from the giver's capability (revoking it revokes the copy),
 *   never outliving it.
 * - **Volatile** payloads never reach disk: they live in this runtime's memory only, and after a
 *   restart reading one is a typed `volatile_lost` error.
 * - **Exit** retains a process's scratch objects (its namespace: tool results, turns,
 *   checkpoints) for review — `libos log` reads them, `libos gc` removes them by age or size —
 *   and no process reaches them any more, whatever it holds: to a process a retained object is
 *   one that is not there (no oracle). Only the object its exit result names stays reachable;
 *   its parent can then merge that result — and only an object the child itself created in its
 *   own namespace: a forged oid grants nothing. Volatile objects go at exit (never on disk).
 *
 * @module
 */
import type { Authority } from "../authority/authority.ts";
import type { JsonValue } from "../base/canonical_json.ts";
import type { Capability, Right } from "../authority/capability.ts";
import {
  CapabilityDeniedError,
  NotFoundError,
  StoreError,
  ValidationError,
} from "../base/errors.ts";
import {
  EXPLICIT_NAMESPACE,
  NamespaceKey,
  namespaceResource,
  type ObjectInfo,
  type ObjectLink,
  ObjectName,
  objectResource,
  ObjectType,
  processNamespace,
  Provenance,
} from "./memory_object.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";

import {
  DEFAULT_OBJECT_LIMITS,
  isPrivileged,
  type MemoryActor,
  OBJECT_RIGHTS,
  ObjectAccess,
  type ObjectLimits,
  parse,
  RUNTIME_ACTOR,
} from "./_object_access.ts";
import { type ObjectHandle, ObjectSharing } from "./object_sharing.ts";
import {
  listObjects,
  type ObjectQueryOptions,
  queryObjects,
  type QueryResult,
} from "./object_query.ts";

export {
  DEFAULT_OBJECT_LIMITS,
  type MemoryActor,
  type ObjectLimits,
  OPERATOR_ACTOR,
  RUNTIME_ACTOR,
} from "./_object_access.ts";
export type { ObjectHandle } from "./object_sharing.ts";
export type { ObjectQueryOptions, QueryResult } from "./object_query.ts";

/**
 * Object types only the runtime (or the operator) creates: a process cannot forge a tool result
 * (`tool.result`), a passing validation of a JIT tool (`jit.validation`), a registration
 * (`jit.registration`) or a turn of its own conversation (`model.turn`) — the JIT lifecycle and
 * the model executor trust these because of it.
 */
export const RESERVED_TYPES: readonly string[] = Object.freeze([
  "tool.result",
  "jit.validation",
  "jit.registration",
  "model.turn",
  "checkpoint",
]);
/** What creating an object takes. */
export interface CreateObject {
  /** Default: the acting process's own namespace. */
  readonly namespace?: string;
  readonly name?: string | null;
  readonly type: string;
  readonly payload: JsonValue;
  readonly tags?: readonly string[];
  readonly attrs?: Readonly<Record<string, JsonValue>>;
  readonly provenance: Provenance;
  readonly immutable?: boolean;
  readonly volatile?: boolean;
}

/** An object with its payload. */
export interface MemoryRecord {
  readonly info: ObjectInfo;
  readonly payload: JsonValue;
}

/** What the memory needs. */
export interface ObjectMemoryOptions {
  readonly authority: Authority;
  readonly processes: ProcessManager;
  readonly limits?: Partial<ObjectLimits>;
}

/** The object memory of one runtime. */
export class ObjectMemory {
  readonly limits: ObjectLimits;
  readonly #a: ObjectAccess;
  readonly #sharing: ObjectSharing;

  /** Binds the memory to a runtime; a finishing process's scratch objects are retained. */
  constructor(core: RuntimeCore, options: ObjectMemoryOptions) {
    this.limits = { ...DEFAULT_OBJECT_LIMITS, ...options.limits };
    this.#a = new ObjectAccess(core, options.authority, options.processes, this.limits);
    // A process's view is the runtime rendering its context, not a listing it asked for.
    this.#sharing = new ObjectSharing(
      this.#a,
      (actor, ns, opts) => listObjects(this.#a, actor, ns, opts, { record: false }),
    );
    options.processes.onFinished((p) => this.#sharing.retain(p));
  }

  // ---------------------------------------------------------------- namespaces

  /**
   * Creates an explicit namespace (`project`, `team/notes`). A process needs namespace create on
   * it (e.g. a prefix grant on `team/`) and becomes its owner: list and create on it, and every
   * object right under it.
   * @throws {ValidationError} for a malformed key or one that exists.
   */
  createNamespace(actor: MemoryActor, key: string): void {
    if (!EXPLICIT_NAMESPACE.test(key)) {
      throw new ValidationError(
        `${
          JSON.stringify(key)
        } is not an explicit namespace: use lowercase slash-separated segments, e.g. team/notes (process:<pid> namespaces come with their process)`,
      );
    }
    this.#a.step(() => {
      this.#a.require(
        actor,
        "namespace.create",
        namespaceResource(key),
        "create",
        () => this.#a.namespaceRefusal(actor, key, "create"),
      );
      if (this.#a.core.store.getNamespace(key)) {
        throw new ValidationError(`Namespace ${key} already exists`);
      }
      this.#a.core.store.putNamespace({
        key,
        creator: actor,
        created: Math.trunc(this.#a.core.clock.now()),
      });
      if (!isPrivileged(actor)) {
        this.#a.authority.capabilities.grant({
          subject: actor,
          resource: { type: "namespace", key, scope: "exact" },
          rights: ["list", "create"],
          effect: "allow",
          issuer: `namespace:${key}`,
        }, "runtime");
        this.#a.authority.capabilities.grant({
          subject: actor,
          resource: { type: "object", key: `${key}/`, scope: "prefix" },
          rights: [...OBJECT_RIGHTS],
          effect: "allow",
          issuer: `namespace:${key}`,
        }, "runtime");
      }
      this.#a.allowed(actor, "namespace.create", `namespace:${key}`);
    });
  }

  // ---------------------------------------------------------------- objects

  /**
   * Creates an object (in the actor's own namespace by default).
   * @throws {CapabilityDeniedError} without namespace create (the same whether the namespace
   *   exists or not); {@link ValidationError} for bad input or a name taken in the namespace.
   */
  create(actor: MemoryActor, input: CreateObject): ObjectInfo {
    if (isPrivileged(actor) && input.namespace === undefined) {
      throw new ValidationError("The operator must name the namespace an object is created in");
    }
    const namespace = parse(NamespaceKey, input.namespace ?? processNamespace(actor), "namespace");
    const name = input.name === undefined || input.name === null
      ? null
      : parse(ObjectName, input.name, "name");
    const type = parse(ObjectType, input.type, "type");
    if (RESERVED_TYPES.includes(type) && !isPrivileged(actor)) {
      throw new ValidationError(
        `The object type ${type} is reserved for records the runtime stores (${
          RESERVED_TYPES.join(", ")
        }); choose another type`,
      );
    }
    const metadata = this.#a.metadata(input.tags ?? [], input.attrs ?? {});
    const provenance = parse(Provenance, input.provenance, "provenance");
    const payload = this.#a.serialise(input.payload);
    return this.#a.step(() => {
      this.#a.require(
        actor,
        "object.create",
        namespaceResource(namespace),
        "create",
        () => this.#a.namespaceRefusal(actor, namespace, "create"),
      );
      if (!this.#a.namespaceExists(namespace)) {
        throw this.#a.namespaceRefusal(actor, namespace, "create");
      }
      if (name !== null) this.#a.mayName(actor, "object.create", namespace);
      if (name !== null && this.#a.core.store.getObjectByName(namespace, name)) {
        throw new ValidationError(
          `The name ${JSON.stringify(name)} is taken in namespace ${namespace}; choose another`,
        );
      }
      const now = Math.trunc(this.#a.core.clock.now());
      const oid = this.#a.core.ids.next("obj");
      if (this.#a.core.store.getObject(oid)) {
        // Creating never replaces: an id that repeats (a reused seed) is refused.
        throw new StoreError(
          "store_conflict",
          `Object id ${oid} is already in use; the id source repeated itself — nothing was created`,
        );
      }
      const volatile = input.volatile ?? false;
      const info: ObjectInfo = {
        oid,
        namespace,
        name,
        type,
        metadata,
        provenance,
        version: 1,
        immutable: input.immutable ?? false,
        volatile,
        creator: actor,
        bytes: payload.bytes,
        sha256: volatile ? null : payload.sha256,
        createdAt: now,
        updatedAt: now,
      };
      this.#a.save(info, payload.text);
      if (info.volatile) this.#a.volatile.set(info.oid, JSON.parse(payload.text) as JsonValue);
      this.#a.allowed(actor, "object.create", `object:${namespace}/${info.oid}`, {
        type,
        bytes: payload.bytes,
        volatile: info.volatile,
      });
      return info;
    });
  }

  /**
   * Reads an object and its payload. `view: true` is the runtime rendering the process's own
   * view into its context (each turn, every object in it): decided like any read, but not a
   * request of the process, so it leaves no record (a refusal still does).
   * @throws {CapabilityDeniedError} without read — the same error when there is no such object;
   *   {@link VolatileLostError} for a volatile object after a restart.
   */
  read(actor: MemoryActor, oid: string, options: { readonly view?: boolean } = {}): MemoryRecord {
    return this.#a.reading(() => {
      const row = this.#a.visible(actor, oid, "read", "object.read");
      const info = this.#a.decode(row);
      const payload = this.#a.payload(row, info);
      if (!options.view) {
        this.#a.allowed(actor, "object.read", `object:${row.namespace}/${row.oid}`, undefined, {
          read: true,
        });
      }
      return { info, payload };
    });
  }

  /** An object's description (no payload), with read. */
  info(actor: MemoryActor, oid: string): ObjectInfo {
    return this.#a.reading(() => {
      const row = this.#a.visible(actor, oid, "read", "object.read");
      const info = this.#a.decode(row);
      this.#a.allowed(actor, "object.read", `object:${row.namespace}/${row.oid}`, {
        payload: false,
      }, { read: true });
      return info;
    });
  }

  /**
   * An object by name. Needs namespace list first (without it, the same refusal whether the name
   * exists or not), then read on the object.
   * @throws {CapabilityDeniedError}; {@link NotFoundError} only for a caller that may list.
   */
  readByName(actor: MemoryActor, namespace: string, name: string): MemoryRecord {
    const ns = parse(NamespaceKey, namespace, "namespace");
    const objectName = parse(ObjectName, name, "name");
    return this.#a.reading(() => {
      this.#a.require(
        actor,
        "object.lookup",
        namespaceResource(ns),
        "list",
        () => this.#a.namespaceRefusal(actor, ns, "list"),
      );
      const found = this.#a.core.store.getObjectByName(ns, objectName);
      // A retained object is, to a process, one that is not there.
      const row = found && !isPrivileged(actor) && this.#a.retained(found.namespace, found.oid)
        ? undefined
        : found;
      if (!row) throw new NotFoundError(`No object named ${JSON.stringify(objectName)} in ${ns}`);
      const read = this.#a.require(
        actor,
        "object.read",
        objectResource(row.namespace, row.oid),
        "read",
        () =>
          new CapabilityDeniedError(
            "capability_denied",
            `${actor} may list ${ns} but lacks read on ${objectName}; a process that holds it can grant it`,
            { reason: "object" },
          ),
      );
      const info = this.#a.decode(row);
      const payload = this.#a.payload(row, info);
      this.#a.allowed(actor, "object.read", `object:${row.namespace}/${row.oid}`, {
        by: "name",
      }, { read: true, primary: read });
      return { info, payload };
    });
  }

  /** The objects of a namespace the actor may read (needs namespace list), in oid order. */
  list(
    actor: MemoryActor,
    namespace?: string,
    options: { readonly limit?: number; readonly after?: string } = {},
  ): ObjectInfo[] {
    return listObjects(this.#a, actor, namespace, options);
  }

  /**
   * The runtime's own records of a reserved type in a namespace (see {@link RESERVED_TYPES}),
   * every page of them, oldest oid first: for the runtime's use (the JIT lifecycle), never a
   * process's. At most `max`.
   * @throws {ValidationError} for a type that is not reserved.
   */
  records(namespace: string, type: string, max = 10_000): MemoryRecord[] {
    if (!RESERVED_TYPES.includes(type)) {
      throw new ValidationError(`${type} is not a reserved record type`);
    }
    const out: MemoryRecord[] = [];
    let after: string | undefined;
    while (out.length < max) {
      const rows = this.#a.core.store.listObjects({
        namespaces: [namespace],
        type,
        creator: RUNTIME_ACTOR,
        limit: 500,
        ...(after === undefined ? {} : { afterOid: after }),
      });
      for (const row of rows) {
        const info = this.#a.decode(row);
        if (info.immutable) out.push({ info, payload: this.#a.payload(row, info) });
      }
      if (rows.length < 500) break;
      after = rows[rows.length - 1]!.oid;
    }
    return out.slice(0, max);
  }

  /**
   * Deletes the runtime's records of a reserved type in a namespace (audited): what an exec does
   * to the registrations of the JIT tools it drops. Returns how many.
   */
  dropRecords(namespace: string, type: string): number {
    const found = this.records(namespace, type);
    for (const { info } of found) this.delete(RUNTIME_ACTOR, info.oid);
    return found.length;
  }

  /**
   * A bounded query over the namespaces the actor may list: only objects it may read, at most
   * `limit`, scanning at most `queryScanMax` rows (then `truncated`).
   */
  query(actor: MemoryActor, options: ObjectQueryOptions = {}): QueryResult {
    return queryObjects(this.#a, actor, options);
  }

  /**
   * Replaces an object's payload and/or metadata (version + 1). `ifVersion` makes it a
   * compare-and-set.
   * @throws {CapabilityDeniedError} without write (the same when there is none);
   *   {@link ValidationError} for an immutable object; {@link StoreError} `store_conflict` when
   *   `ifVersion` is not the current version.
   */
  update(
    actor: MemoryActor,
    oid: string,
    change: {
      readonly payload?: JsonValue;
      readonly tags?: readonly string[];
      readonly attrs?: Readonly<Record<string, JsonValue>>;
      readonly ifVersion?: number;
    },
  ): ObjectInfo {
    const payload = change.payload === undefined ? undefined : this.#a.serialise(change.payload);
    return this.#a.step(() => {
      const row = this.#a.visible(actor, oid, "write", "object.write");
      const info = this.#a.decode(row);
      if (info.immutable) throw new ValidationError(`Object ${oid} is immutable`);
      if (change.ifVersion !== undefined && change.ifVersion !== info.version) {
        throw new StoreError(
          "store_conflict",
          `Object ${oid} is at version ${info.version}, not ${change.ifVersion}; read it again`,
        );
      }
      const metadata = this.#a.metadata(
        change.tags === undefined ? info.metadata.tags : change.tags,
        change.attrs === undefined ? info.metadata.attrs : change.attrs,
      );
      const next: ObjectInfo = {
        ...info,
        metadata,
        version: info.version + 1,
        updatedAt: Math.trunc(this.#a.core.clock.now()),
        ...(payload ? { bytes: payload.bytes, sha256: info.volatile ? null : payload.sha256 } : {}),
      };
      this.#a.save(next, payload ? payload.text : row.payload);
      if (payload && next.volatile) {
        this.#a.volatile.set(oid, JSON.parse(payload.text) as JsonValue);
      }
      this.#a.allowed(actor, "object.write", `object:${info.namespace}/${oid}`, {
        version: next.version,
      });
      return next;
    });
  }

  /**
   * Renames an object within its namespace (null removes the name).
   * @throws {ValidationError} for an immutable object or a name taken.
   */
  rename(actor: MemoryActor, oid: string, name: string | null): ObjectInfo {
    const newName = name === null ? null : parse(ObjectName, name, "name");
    return this.#a.step(() => {
      const row = this.#a.visible(actor, oid, "write", "object.rename");
      const info = this.#a.decode(row);
      if (info.immutable) throw new ValidationError(`Object ${oid} is immutable`);
      if (newName !== null) this.#a.mayName(actor, "object.rename", info.namespace);
      const next = { ...info, name: newName, updatedAt: Math.trunc(this.#a.core.clock.now()) };
      this.#a.save(next, row.payload);
      this.#a.allowed(actor, "object.rename", `object:${info.namespace}/${oid}`);
      return next;
    });
  }

  /**
   * Moves a mutable object to another namespace: delete on it where it is, create in the target.
   * Its rights follow the namespace (capabilities on the old key no longer reach it).
   */
  move(
    actor: MemoryActor,
    oid: string,
    namespace: string,
    options: { readonly name?: string | null } = {},
  ): ObjectInfo {
    const target = parse(NamespaceKey, namespace, "namespace");
    const newName = options.name === undefined
      ? undefined
      : options.name === null
      ? null
      : parse(ObjectName, options.name, "name");
    return this.#a.step(() => {
      const row = this.#a.visible(actor, oid, "delete", "object.move");
      const info = this.#a.decode(row);
      if (info.immutable) throw new ValidationError(`Object ${oid} is immutable and cannot move`);
      this.#a.require(
        actor,
        "object.move",
        namespaceResource(target),
        "create",
        () => this.#a.namespaceRefusal(actor, target, "create"),
      );
      if (!this.#a.namespaceExists(target)) throw this.#a.namespaceRefusal(actor, target, "create");
      const name = newName === undefined ? info.name : newName;
      if (name !== null) this.#a.mayName(actor, "object.move", target);
      const next: ObjectInfo = {
        ...info,
        namespace: target,
        name,
        updatedAt: Math.trunc(this.#a.core.clock.now()),
      };
      this.#a.save(next, row.payload);
      this.#a.allowed(actor, "object.move", `object:${target}/${oid}`, { from: info.namespace });
      return next;
    });
  }

  /** Deletes an object and its links. */
  delete(actor: MemoryActor, oid: string): void {
    this.#a.step(() => {
      const row = this.#a.visible(actor, oid, "delete", "object.delete");
      this.#a.core.store.deleteObject(oid);
      this.#a.volatile.delete(oid);
      this.#a.allowed(actor, "object.delete", `object:${row.namespace}/${oid}`);
    });
  }

  // ---------------------------------------------------------------- sharing

  /** Links `from` to `to` (`rel`, e.g. `derived_from`): link on `from`, read on `to`. */
  link(actor: MemoryActor, from: string, to: string, rel: string): ObjectLink {
    return this.#sharing.link(actor, from, to, rel);
  }

  /** Removes a link (link on `from`); false when there was none. */
  unlink(actor: MemoryActor, from: string, to: string, rel: string): boolean {
    return this.#sharing.unlink(actor, from, to, rel);
  }

  /** Links from or to an object the actor may read, whose other end it may read too. */
  links(actor: MemoryActor, oid: string): ObjectLink[] {
    return this.#sharing.links(actor, oid);
  }

  /** The actor's handle on an object (see {@link ObjectSharing.handle}). */
  handle(actor: MemoryActor, oid: string): ObjectHandle {
    return this.#sharing.handle(actor, oid);
  }

  /** Passes rights on an object to another process (see {@link ObjectSharing.grant}). */
  grant(
    actor: MemoryActor,
    oid: string,
    to: string,
    rights: readonly Right[],
    options: { readonly expiresAt?: number } = {},
  ): Capability[] {
    return this.#sharing.grant(actor, oid, to, rights, options);
  }

  /** Merges a finished child's result into its parent (see {@link ObjectSharing.merge}). */
  merge(parent: string, child: string): ObjectInfo {
    return this.#sharing.merge(parent, child);
  }

  /** A process's view (see {@link ObjectSharing.view}). */
  view(pid: string, limit: number = this.limits.pageMax): ObjectInfo[] {
    return this.#sharing.view(pid, limit);
  }
}
