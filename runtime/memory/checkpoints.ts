/**
 * Checkpoints of a process (issue 14): what it was at a moment — its row (cwd, image, tool
 * table, goal, status, budgets used, pending action), its capabilities, the objects of its own
 * namespace with their versions and payloads (immutable records — tool results, turns — are
 * history, kept as they are), and where the audit log stood. `create`, `list`,
 * `diff` against now, and `restore`: the process's cwd, image, tool table and goal, and its own
 * objects (changed ones rewritten to their checkpointed payload, new ones deleted, deleted ones
 * recreated), and capabilities granted to it since are revoked. A restore never pretends to undo
 * external effects: it lists every file write or delete, command and request the process made
 * since, from the audit log, as irreversible.
 *
 * Checkpoints are runtime records (`checkpoint`, a reserved type) in the process's namespace: the
 * process can read them, never forge or alter one.
 *
 * @module
 */
import type { AuditLog } from "../audit/audit_log.ts";
import type { Authority } from "../authority/authority.ts";
import type { JsonValue } from "../base/canonical_json.ts";
import { IllegalTransitionError, NotFoundError, ValidationError } from "../base/errors.ts";
import { processNamespace } from "./memory_object.ts";
import { type ObjectMemory, RUNTIME_ACTOR } from "./object_memory.ts";
import { type AgentProcess, isFinal } from "../process/process.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";

/** An object as a checkpoint keeps it. */
interface KeptObject {
  readonly oid: string;
  readonly name: string | null;
  readonly type: string;
  readonly version: number;
  readonly sha256: string | null;
  /** Absent for a volatile object (its payload never reaches disk). */
  readonly payload?: JsonValue;
  readonly tags: readonly string[];
}

/** A checkpoint. */
export interface Checkpoint {
  /** The checkpoint's id (the oid of its record). */
  readonly id: string;
  readonly pid: string;
  readonly label: string;
  readonly at: number;
  readonly process: Pick<
    AgentProcess,
    "status" | "image" | "tools" | "cwd" | "goal" | "usage" | "pending" | "ceiling"
  >;
  /** Live capability ids of the process. */
  readonly capabilities: readonly string[];
  readonly objects: readonly KeptObject[];
  /** The audit log's last sequence number when it was taken. */
  readonly auditSeq: number;
}

/** What changed since a checkpoint. */
export interface CheckpointDiff {
  readonly process: Record<string, { readonly then: JsonValue; readonly now: JsonValue }>;
  readonly objects: {
    readonly added: readonly string[];
    readonly removed: readonly string[];
    readonly changed: readonly string[];
  };
  readonly capabilities: { readonly granted: readonly string[]; readonly gone: readonly string[] };
  /** External effects since (file writes and deletes, commands, requests): irreversible. */
  readonly irreversible: readonly {
    readonly seq: number;
    readonly action: string;
    readonly resource: string;
  }[];
}

/** Audit actions whose effect left the runtime: a restore cannot take them back. */
const EXTERNAL = Object.freeze(["fs.write", "fs.delete", "fs.mkdir", "shell.run", "net.fetch"]);

const TYPE = "checkpoint";

/** The most objects a checkpoint keeps (a process holding more cannot be checkpointed). */
const MAX_OBJECTS = 10_000;

/** What checkpoints need. */
export interface CheckpointOptions {
  readonly core: RuntimeCore;
  readonly processes: ProcessManager;
  readonly memory: ObjectMemory;
  readonly authority: Authority;
}

/** Checkpoints of one runtime's processes. */
export class Checkpoints {
  readonly #o: CheckpointOptions;

  constructor(options: CheckpointOptions) {
    this.#o = options;
  }

  #audit(): AuditLog {
    return this.#o.core.audit;
  }

  /** The objects of `pid`'s own namespace, as a checkpoint keeps them (its bookkeeping aside). */
  #objects(pid: string): KeptObject[] {
    const { memory } = this.#o;
    // Every page: a checkpoint that missed an object would delete it on restore.
    const infos: ReturnType<ObjectMemory["list"]> = [];
    let after: string | undefined;
    for (;;) {
      const page = memory.list(RUNTIME_ACTOR, processNamespace(pid), {
        limit: 1000,
        ...(after === undefined ? {} : { after }),
      });
      infos.push(...page);
      if (page.length < 1000) break;
      if (infos.length >= MAX_OBJECTS) {
        throw new ValidationError(
          `Process ${pid} holds more than ${MAX_OBJECTS} objects: too many to checkpoint; release some first`,
        );
      }
      after = page[page.length - 1]!.oid;
    }
    return infos
      .filter((info) => info.type !== TYPE && !info.immutable)
      .map((info) => {
        let payload: JsonValue | undefined;
        if (!info.volatile) payload = memory.read(RUNTIME_ACTOR, info.oid).payload;
        return {
          oid: info.oid,
          name: info.name,
          type: info.type,
          version: info.version,
          sha256: info.sha256,
          tags: [...info.metadata.tags],
          ...(payload === undefined ? {} : { payload }),
        };
      });
  }

  #capabilities(pid: string): string[] {
    return this.#o.authority.capabilities.list(pid).filter((c) => c.revokedAt === null)
      .map((c) => c.id).sort();
  }

  /**
   * Takes a checkpoint of `pid` for `by` (the process itself through its tool, or the operator);
   * returns it. A process may always checkpoint itself: its record names `self`.
   * @throws {IllegalTransitionError} for a finished process.
   */
  create(pid: string, label = "", by = "operator"): Checkpoint {
    const p = this.#o.processes.get(pid);
    if (isFinal(p.status)) {
      throw new IllegalTransitionError(
        "illegal_transition",
        `Process ${pid} is ${p.status}: there is nothing left to checkpoint`,
      );
    }
    this.#o.core.store.flush();
    const tail = this.#audit().query({ limit: 1, order: "desc" })[0];
    const body = {
      pid,
      label: label.slice(0, 200),
      at: Math.trunc(this.#o.core.clock.now()),
      process: {
        status: p.status,
        image: p.image,
        tools: [...p.tools],
        cwd: p.cwd,
        goal: p.goal,
        usage: p.usage,
        pending: p.pending,
        ceiling: p.ceiling,
      },
      capabilities: this.#capabilities(pid),
      objects: this.#objects(pid),
      auditSeq: tail?.seq ?? 0,
    };
    const info = this.#o.core.store.step(() => {
      const created = this.#o.memory.create(RUNTIME_ACTOR, {
        namespace: processNamespace(pid),
        type: TYPE,
        payload: body as unknown as JsonValue,
        tags: ["checkpoint"],
        provenance: { source: "tool", label: "checkpoint", ref: null },
        immutable: true,
      });
      this.#audit().append({
        actor: by,
        pid,
        action: "checkpoint.create",
        resource: `process:${pid}`,
        decision: "allow",
        authority: by === pid ? "self" : by,
        correlation: created.oid,
        detail: { objects: body.objects.length },
      });
      this.#o.core.events.emit({
        kind: "checkpoint.created",
        payload: {
          pid,
          checkpoint: created.oid,
          by: by.slice(0, 256),
          objects: body.objects.length,
        },
      });
      return created;
    });
    return { id: info.oid, ...body };
  }

  /** `pid`'s checkpoints, oldest first. */
  list(pid: string): Checkpoint[] {
    return this.#o.memory.records(processNamespace(pid), TYPE)
      .map((r) => ({ id: r.info.oid, ...(r.payload as unknown as Omit<Checkpoint, "id">) }))
      .filter((c) => c.pid === pid)
      .sort((a, b) => a.at - b.at || a.auditSeq - b.auditSeq);
  }

  /**
   * A checkpoint of `pid` by id.
   * @throws {NotFoundError} when it has none by that id.
   */
  get(pid: string, id: string): Checkpoint {
    const found = this.list(pid).find((c) => c.id === id);
    if (!found) {
      throw new NotFoundError(
        `Process ${pid} has no checkpoint ${
          JSON.stringify(id)
        }; list them with "libos checkpoint list ${pid}"`,
      );
    }
    return found;
  }

  /** What changed for `pid` since checkpoint `id`. */
  diff(pid: string, id: string): CheckpointDiff {
    const cp = this.get(pid, id);
    const p = this.#o.processes.get(pid);
    const process: Record<string, { then: JsonValue; now: JsonValue }> = {};
    for (const key of ["status", "image", "tools", "cwd", "goal", "pending", "ceiling"] as const) {
      const then = cp.process[key] as unknown as JsonValue;
      const now = p[key] as unknown as JsonValue;
      if (JSON.stringify(then) !== JSON.stringify(now)) process[key] = { then, now };
    }
    const before = new Map(cp.objects.map((o) => [o.oid, o]));
    const after = new Map(this.#objects(pid).map((o) => [o.oid, o]));
    const capsNow = this.#capabilities(pid);
    return {
      process,
      objects: {
        added: [...after.keys()].filter((oid) => !before.has(oid)).sort(),
        removed: [...before.keys()].filter((oid) => !after.has(oid)).sort(),
        // By content: a restored object has a newer version and the same payload.
        changed: [...after.values()].filter((o) => {
          const was = before.get(o.oid);
          if (was === undefined) return false;
          return was.sha256 !== null && o.sha256 !== null
            ? was.sha256 !== o.sha256 || JSON.stringify(was.tags) !== JSON.stringify(o.tags)
            : was.version !== o.version;
        }).map((o) => o.oid).sort(),
      },
      capabilities: {
        granted: capsNow.filter((c) => !cp.capabilities.includes(c)),
        gone: cp.capabilities.filter((c) => !capsNow.includes(c)),
      },
      irreversible: this.#irreversible(pid, cp.auditSeq),
    };
  }

  #irreversible(pid: string, afterSeq: number): CheckpointDiff["irreversible"] {
    this.#o.core.store.flush();
    return this.#audit().query({ pid, afterSeq, decision: "allow", limit: 1000 })
      .filter((r) => EXTERNAL.includes(r.action))
      .map((r) => ({ seq: r.seq, action: r.action, resource: r.resource }));
  }

  /**
   * Restores `pid` to checkpoint `id` (see the module doc) and returns what changed, including
   * the external effects it could not undo.
   * @throws {IllegalTransitionError} for a finished or running process (pause it first).
   */
  restore(pid: string, id: string, by = "operator"): CheckpointDiff {
    const p = this.#o.processes.get(pid);
    if (isFinal(p.status) || p.status === "running") {
      throw new IllegalTransitionError(
        "illegal_transition",
        `Cannot restore process ${pid} while it is ${p.status}${
          p.status === "running" ? "; pause it first" : ""
        }`,
      );
    }
    const cp = this.get(pid, id);
    const diff = this.diff(pid, id);
    const { memory, core } = this.#o;
    core.store.step(() => {
      const kept = new Map(cp.objects.map((o) => [o.oid, o]));
      for (const oid of diff.objects.added) memory.delete(RUNTIME_ACTOR, oid);
      for (const oid of diff.objects.changed) {
        const o = kept.get(oid)!;
        if (o.payload !== undefined) {
          memory.update(RUNTIME_ACTOR, oid, { payload: o.payload, tags: o.tags });
        }
      }
      for (const oid of diff.objects.removed) {
        const o = kept.get(oid)!;
        if (o.payload === undefined) continue;
        memory.create(RUNTIME_ACTOR, {
          namespace: processNamespace(pid),
          ...(o.name === null ? {} : { name: o.name }),
          type: o.type,
          payload: o.payload,
          tags: o.tags,
          provenance: { source: "tool", label: "checkpoint restore", ref: cp.id },
        });
      }
      for (const cap of diff.capabilities.granted) {
        this.#o.authority.capabilities.revoke(cap, by);
      }
      this.#o.processes.restoreShape(pid, {
        image: cp.process.image,
        tools: cp.process.tools,
        cwd: cp.process.cwd,
        goal: cp.process.goal,
      });
      core.audit.append({
        actor: by,
        pid,
        action: "checkpoint.restore",
        resource: `process:${pid}`,
        decision: "allow",
        authority: by,
        correlation: cp.id,
        detail: {
          objects: diff.objects.added.length + diff.objects.changed.length +
            diff.objects.removed.length,
          revoked: diff.capabilities.granted.length,
          irreversible: diff.irreversible.length,
        },
      });
      core.events.emit({
        kind: "checkpoint.restored",
        payload: {
          pid,
          checkpoint: cp.id,
          by: by.slice(0, 256),
          objects: diff.objects.added.length + diff.objects.changed.length +
            diff.objects.removed.length,
          revoked: diff.capabilities.granted.length,
          irreversible: diff.irreversible.length,
        },
      });
    });
    return diff;
  }
}
