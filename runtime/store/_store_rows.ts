/**
 * Row mapping for both stores: rows as node:sqlite returns them (the PostgreSQL store's rows have
 * the same shape) to the Store interface's row types.
 *
 * @module
 */
import type { SQLInputValue } from "node:sqlite";
import {
  type ActionRow,
  type AuditRow,
  type CapabilityRow,
  type EventRow,
  type HumanRequestRow,
  type ImageRow,
  type LeaseRow,
  type LinkRow,
  MAX_PAGE,
  type NamespaceRow,
  type ObjectRow,
  type ProcessRow,
  type RetainedRow,
} from "./store.ts";

/** A row as node:sqlite returns it; the PostgreSQL store's rows are read as this type too. */
export type Row = Record<string, SQLInputValue>;

/** Maps a `process` row. */
export function processRow(r: Row): ProcessRow {
  return {
    pid: String(r.pid),
    parent: nullableString(r.parent),
    status: String(r.status),
    data: String(r.data),
    created: Number(r.created),
    updated: Number(r.updated),
    version: Number(r.version),
  };
}

/** Maps a `capability` row. */
export function capabilityRow(r: Row): CapabilityRow {
  return {
    id: String(r.id),
    subject: String(r.subject),
    derivedFrom: nullableString(r.derived_from),
    revoked: r.revoked === null || r.revoked === undefined ? null : Number(r.revoked),
    data: String(r.data),
    created: Number(r.created),
  };
}

/** Maps a `humanRequest` row. */
export function humanRequestRow(r: Row): HumanRequestRow {
  return {
    id: String(r.id),
    pid: String(r.pid),
    kind: String(r.kind),
    status: String(r.status),
    data: String(r.data),
    created: Number(r.created),
    expires: r.expires === null || r.expires === undefined ? null : Number(r.expires),
  };
}

/** Maps a `action` row. */
export function actionRow(r: Row): ActionRow {
  return {
    id: String(r.id),
    pid: String(r.pid),
    kind: String(r.kind),
    digest: String(r.digest),
    status: String(r.status),
    request: String(r.request),
    outcome: nullableString(r.outcome),
    reported: Number(r.reported) !== 0,
    created: Number(r.created),
    updated: Number(r.updated),
  };
}

/** A page size within 0..MAX_PAGE. */
export function clampLimit(limit: number): number {
  return Math.max(0, Math.min(MAX_PAGE, Math.trunc(limit)));
}

/** A nullable text column. */
export function nullableString(value: SQLInputValue | undefined): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** Maps a `audit` row. */
export function auditRow(r: Row): AuditRow {
  return {
    seq: Number(r.seq),
    chain: String(r.chain),
    chainSeq: Number(r.chain_seq),
    time: Number(r.time),
    actor: String(r.actor),
    pid: nullableString(r.pid),
    action: String(r.action),
    resource: String(r.resource),
    decision: String(r.decision),
    authority: String(r.authority),
    inputDigest: nullableString(r.input_digest),
    correlation: nullableString(r.correlation),
    parent: r.parent === null || r.parent === undefined ? null : Number(r.parent),
    detail: nullableString(r.detail),
    prev: String(r.prev),
    hash: String(r.hash),
  };
}

/** Maps an `objects` row. */
export function objectRow(r: Row): ObjectRow {
  return {
    oid: String(r.oid),
    namespace: String(r.namespace),
    name: nullableString(r.name),
    type: String(r.type),
    creator: String(r.creator),
    data: String(r.data),
    payload: nullableString(r.payload),
    volatile: Number(r.volatile) !== 0,
    created: Number(r.created),
    updated: Number(r.updated),
  };
}

/** Maps an `object_links` row. */
export function linkRow(r: Row): LinkRow {
  return {
    from: String(r.src),
    to: String(r.dst),
    rel: String(r.rel),
    creator: String(r.creator),
    created: Number(r.created),
  };
}

/** Maps an `images` row. */
export function imageRow(r: Row): ImageRow {
  return {
    id: String(r.id),
    data: String(r.data),
    loader: String(r.loader),
    created: Number(r.created),
    updated: Number(r.updated),
  };
}

/** Maps a `retained` row. */
export function retainedRow(r: Row): RetainedRow {
  return {
    pid: String(r.pid),
    namespace: String(r.namespace),
    since: Number(r.since),
    objects: Number(r.objects),
    bytes: Number(r.bytes),
    removed: r.removed === null || r.removed === undefined ? null : Number(r.removed),
  };
}

/** Maps a `leases` row. */
export function leaseRow(r: Row): LeaseRow {
  return {
    root: String(r.root),
    owner: String(r.owner),
    expires: Number(r.expires),
    claimed: Number(r.claimed),
    generation: Number(r.generation),
  };
}

/** Maps an `events` row. */
export function eventRow(r: Row): EventRow {
  return {
    seq: Number(r.seq),
    version: Number(r.version),
    session: String(r.session),
    turn: Number(r.turn),
    time: Number(r.time),
    kind: String(r.kind),
    payload: String(r.payload),
  };
}

/** Maps a `namespaces` row. */
export function namespaceRow(r: Row): NamespaceRow {
  return { key: String(r.key), creator: String(r.creator), created: Number(r.created) };
}
