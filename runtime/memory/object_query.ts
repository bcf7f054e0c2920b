/**
 * Listing and querying the object memory: only objects the caller may read, in namespaces it may
 * list, bounded in what is scanned and returned. A listing or a query is one operation with one
 * decision record (`namespace.list`, `object.query`); which objects it shows is a filter, not a
 * decision of its own (see `audit_log.ts`).
 *
 * @module
 */
import { isPrivileged, type MemoryActor, type ObjectAccess, parse } from "./_object_access.ts";
import { ValidationError } from "../base/errors.ts";
import {
  NamespaceKey,
  namespaceResource,
  type ObjectInfo,
  objectResource,
  ObjectType,
  processNamespace,
} from "./memory_object.ts";
import type { ObjectRow } from "../store/store.ts";

/** What a query looks for; every filter narrows. */
export interface ObjectQueryOptions {
  /** One namespace (needs list); default: every namespace the caller may list. */
  readonly namespace?: string;
  readonly type?: string;
  /** Objects carrying every one of these tags. */
  readonly tags?: readonly string[];
  /** A case-insensitive substring of the name, tags, attributes or textual payload. */
  readonly text?: string;
  /** A name prefix. */
  readonly name?: string;
  readonly limit?: number;
}

/** What a query found, and whether it stopped at its scan bound. */
export interface QueryResult {
  readonly objects: ObjectInfo[];
  /** True when the scan bound was reached before the whole scope was searched. */
  readonly truncated: boolean;
}

/**
 * The objects of a namespace the actor may read (needs namespace list), in oid order.
 * `record: false` is the runtime rendering a process's own view (decided, not recorded).
 */
export function listObjects(
  a: ObjectAccess,
  actor: MemoryActor,
  namespace?: string,
  options: { readonly limit?: number; readonly after?: string } = {},
  audit: { readonly record?: boolean } = {},
): ObjectInfo[] {
  const ns = parse(NamespaceKey, namespace ?? processNamespace(actor), "namespace");
  const asked = options.limit ?? a.limits.pageMax;
  if (!Number.isInteger(asked) || asked < 1) {
    throw new ValidationError(`A listing limit must be a positive integer, got ${asked}`);
  }
  return a.reading(() => {
    a.require(
      actor,
      "namespace.list",
      namespaceResource(ns),
      "list",
      () => a.namespaceRefusal(actor, ns, "list"),
    );
    const out = listPage(a, actor, ns, asked, options.after);
    if (audit.record !== false) {
      a.allowed(actor, "namespace.list", `namespace:${ns}`, { objects: out.length }, {
        read: true,
      });
    }
    return out;
  });
}

function listPage(
  a: ObjectAccess,
  actor: MemoryActor,
  ns: string,
  asked: number,
  start: string | undefined,
): ObjectInfo[] {
  const limit = Math.min(asked, a.limits.pageMax);
  const out: ObjectInfo[] = [];
  let after = start;
  for (let scanned = 0; out.length < limit && scanned < a.limits.queryScanMax;) {
    const rows = a.core.store.listObjects({
      namespaces: [ns],
      limit: 500,
      ...(after === undefined ? {} : { afterOid: after }),
    });
    for (const row of rows) {
      if (out.length >= limit) break;
      if (a.may(actor, objectResource(row.namespace, row.oid), "read")) {
        out.push(a.decode(row));
      }
    }
    scanned += rows.length;
    if (rows.length < 500) break;
    after = rows[rows.length - 1]!.oid;
  }
  return out;
}

/**
 * A bounded query over the namespaces the actor may list: only objects it may read, at most
 * `limit`, scanning at most `queryScanMax` rows (then `truncated`).
 */
export function queryObjects(
  a: ObjectAccess,
  actor: MemoryActor,
  options: ObjectQueryOptions = {},
): QueryResult {
  const asked = options.limit ?? 100;
  if (!Number.isInteger(asked) || asked < 1) {
    throw new ValidationError(`A query limit must be a positive integer, got ${asked}`);
  }
  const limit = Math.min(asked, a.limits.pageMax);
  const type = options.type === undefined ? undefined : parse(ObjectType, options.type, "type");
  const text = options.text?.toLowerCase();
  if (text !== undefined && (text.length === 0 || text.length > 256)) {
    throw new ValidationError("A text query must be 1-256 characters");
  }
  const one = options.namespace === undefined
    ? undefined
    : parse(NamespaceKey, options.namespace, "namespace");
  return a.reading(() => {
    if (one !== undefined) {
      a.require(
        actor,
        "object.query",
        namespaceResource(one),
        "list",
        () => a.namespaceRefusal(actor, one, "list"),
      );
    } else {
      // No namespace named: the query covers those the actor may list, and nothing else.
      a.passed(actor, "object.query", "namespace:*", "filter:namespace.list");
    }
    const found = scan(a, actor, one === undefined ? listable(a, actor) : [one], {
      limit,
      type,
      text,
      ...(options.tags === undefined ? {} : { tags: options.tags }),
      ...(options.name === undefined ? {} : { name: options.name }),
    });
    a.allowed(actor, "object.query", `namespace:${one ?? "*"}`, {
      objects: found.objects.length,
      truncated: found.truncated,
    }, { read: true });
    return found;
  });
}

/** The bounded scan of a query over `namespaces`. */
function scan(
  a: ObjectAccess,
  actor: MemoryActor,
  namespaces: string[],
  options: {
    readonly limit: number;
    readonly type: string | undefined;
    readonly text: string | undefined;
    readonly tags?: readonly string[];
    readonly name?: string;
  },
): QueryResult {
  const { limit, type, text } = options;
  const out: ObjectInfo[] = [];
  let scanned = 0;
  let after: string | undefined;
  for (;;) {
    const rows = a.core.store.listObjects({
      namespaces,
      ...(type === undefined ? {} : { type }),
      ...(options.name === undefined ? {} : { namePrefix: options.name }),
      limit: Math.min(500, a.limits.queryScanMax - scanned),
      ...(after === undefined ? {} : { afterOid: after }),
    });
    for (const row of rows) {
      if (out.length >= limit) return { objects: out, truncated: false };
      if (!a.may(actor, objectResource(row.namespace, row.oid), "read")) continue;
      const info = a.decode(row);
      if (options.tags && !options.tags.every((t) => info.metadata.tags.includes(t))) continue;
      if (text !== undefined && !mentions(a, row, info, text)) continue;
      out.push(info);
    }
    scanned += rows.length;
    if (rows.length === 0 || rows.length < 500) return { objects: out, truncated: false };
    if (scanned >= a.limits.queryScanMax) return { objects: out, truncated: true };
    after = rows[rows.length - 1]!.oid;
  }
}

/**
 * The namespaces an actor may list: its own, then explicit ones (exact or prefix grants alike),
 * at most 1000 of them — the operator lists every explicit namespace.
 */
function listable(a: ObjectAccess, actor: MemoryActor): string[] {
  const out = isPrivileged(actor) ? [] : [processNamespace(actor)];
  const consider = (key: string) => {
    if (!out.includes(key) && a.may(actor, namespaceResource(key), "list")) out.push(key);
  };
  // Namespaces named exactly by the actor's capabilities (another process's, shared with it)...
  if (!isPrivileged(actor)) {
    for (const cap of a.authority.capabilities.list(actor)) {
      if (cap.resource.type === "namespace" && cap.resource.scope === "exact") {
        consider(cap.resource.key);
      }
    }
  }
  // ...and explicit namespaces, which prefix grants reach too.
  let after: string | undefined;
  for (let seen = 0; seen < 1000;) {
    const page = a.core.store.listNamespaces(after, 200);
    for (const ns of page) consider(ns.key);
    seen += page.length;
    if (page.length < 200) break;
    after = page[page.length - 1]!.key;
  }
  return out;
}

function mentions(a: ObjectAccess, row: ObjectRow, info: ObjectInfo, text: string): boolean {
  const haystacks = [
    info.name ?? "",
    info.type,
    ...info.metadata.tags,
    JSON.stringify(info.metadata.attrs),
  ];
  if (!row.volatile && row.payload !== null && row.payload.length <= 64 * 1024) {
    haystacks.push(row.payload);
  } else if (row.volatile && a.volatile.has(row.oid)) {
    const text = JSON.stringify(a.volatile.get(row.oid));
    if (text.length <= 64 * 1024) haystacks.push(text);
  }
  return haystacks.some((h) => h.toLowerCase().includes(text));
}
