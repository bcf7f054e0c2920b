/**
 * What the trace checker reads from a store, in shapes of its own (the audit layer sits below
 * authority, process and human, so it declares the few stored fields it needs), and the small
 * pure helpers behind its invariants: resource coverage, and how a ledger action's decision record
 * is recognised.
 *
 * @module
 */
import { z } from "zod";
import type { AuditLog, AuditRecord } from "./audit_log.ts";
import { StoreError } from "../base/errors.ts";
import type { Store } from "../store/store.ts";

/** Rows read per page. */
export const PAGE = 10_000;

/** A stored capability's resource (declared here: audit is below authority). */
export const StoredResource = z.union([
  z.object({ type: z.literal("fs"), path: z.string(), scope: z.enum(["exact", "subtree"]) }),
  z.object({
    type: z.literal("shell"),
    argv: z.array(z.string()),
    scope: z.enum(["exact", "prefix", "any"]),
  }),
  z.object({ type: z.string(), key: z.string(), scope: z.enum(["exact", "prefix", "any"]) }),
]);
/** A stored capability's resource. */
export type StoredResource = z.infer<typeof StoredResource>;

/** The stored capability fields the checker reads. */
export const StoredCapability = z.object({
  id: z.string(),
  subject: z.string(),
  resource: StoredResource,
  rights: z.array(z.string()),
  effect: z.enum(["allow", "ask", "deny"]),
  oneShot: z.boolean(),
  usedAt: z.number().nullable(),
  actionDigest: z.string().nullable(),
  expiresAt: z.number().nullable(),
  issuer: z.string(),
  derivedFrom: z.string().nullable(),
  tier: z.enum(["own", "inherited"]),
  revokedAt: z.number().nullable(),
  createdAt: z.number(),
});
/** The stored capability fields the checker reads. */
export type StoredCapability = z.infer<typeof StoredCapability>;

/** The stored process fields the checker reads. */
export const StoredProcess = z.object({
  pid: z.string(),
  parent: z.string().nullable(),
  ceiling: z.string().nullable().default(null),
});

/** The stored human request fields the checker reads. */
export const StoredRequest = z.object({
  id: z.string(),
  pid: z.string(),
  kind: z.string(),
  status: z.string(),
});

/** The modes, narrowest first. */
export const MODES: readonly string[] = ["read-only", "plan", "workspace-write", "full-access"];

/**
 * A stored JSON document parsed with `schema`.
 * @throws {StoreError} `store_corrupt` when it is not JSON or not of that shape.
 */
export function parsed<T>(schema: z.ZodType<T>, text: string, what: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StoreError(
      "store_corrupt",
      `Cannot check the trace: ${what} is not JSON; the database was edited outside libos`,
      { cause: error },
    );
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new StoreError(
      "store_corrupt",
      `Cannot check the trace: ${what} is stored in a shape this libos does not understand; the database was edited outside libos`,
      { cause: result.error },
    );
  }
  return result.data;
}

/** A pid's audit records, oldest first. */
export function recordsOf(audit: AuditLog, pid: string): AuditRecord[] {
  const out: AuditRecord[] = [];
  let after = 0;
  for (;;) {
    const page = audit.query({ pid, afterSeq: after, limit: PAGE });
    out.push(...page);
    if (page.length < PAGE) return out;
    after = page[page.length - 1]!.seq;
  }
}

/** Every capability of a subject, live or not. */
export function capabilitiesOf(store: Store, subject: string): StoredCapability[] {
  const out: StoredCapability[] = [];
  let after: string | undefined;
  for (;;) {
    const page = store.listCapabilities({
      subject,
      limit: PAGE,
      ...(after === undefined ? {} : { afterId: after }),
    });
    out.push(...page.map((r) => parsed(StoredCapability, r.data, `capability ${r.id}`)));
    if (page.length < PAGE) return out;
    after = page[page.length - 1]!.id;
  }
}

/** The pid and, with `tree`, every descendant, parents before children. */
export function processTree(store: Store, pid: string, tree: boolean): string[] {
  const out = [pid];
  if (!tree) return out;
  for (let i = 0; i < out.length; i++) {
    let after: string | undefined;
    for (;;) {
      const page = store.listProcesses({
        parent: out[i]!,
        limit: 1000,
        ...(after === undefined ? {} : { afterPid: after }),
      });
      out.push(...page.map((r) => r.pid));
      if (page.length < 1000) break;
      after = page[page.length - 1]!.pid;
    }
  }
  return out;
}

/** Whether capability resource `outer` covers all of `inner` (`fold`: as deny and ask match). */
export function covers(outer: StoredResource, inner: StoredResource, fold: boolean): boolean {
  const text = (s: string) => (fold ? s.toLowerCase() : s);
  if (outer.type !== inner.type) return false;
  if (outer.type === "fs" && "path" in outer && "path" in inner) {
    const o = text(outer.path);
    const i = text(inner.path);
    if (outer.scope === "exact") return inner.scope === "exact" && o === i;
    return o === "." || i === o || i.startsWith(o + "/");
  }
  if ("argv" in outer && "argv" in inner) {
    if (outer.scope === "any") return true;
    const o = outer.argv.map(text);
    const i = inner.argv.map(text);
    const fits = o.length <= i.length && o.every((t, n) => t === i[n]);
    if (outer.scope === "exact") return inner.scope === "exact" && fits && o.length === i.length;
    return fits && inner.scope !== "any";
  }
  if ("key" in outer && "key" in inner) {
    if (outer.scope === "any") return true;
    if (outer.scope === "exact") {
      return inner.scope === "exact" && text(inner.key) === text(outer.key);
    }
    return inner.scope !== "any" && text(inner.key).startsWith(text(outer.key));
  }
  return false;
}

/** How a ledger action's decision record is recognised. */
export function decisionMatcher(
  kind: string,
  request: unknown,
): ((r: AuditRecord) => boolean) | undefined {
  const req = typeof request === "object" && request !== null
    ? request as Record<string, unknown>
    : {};
  if (kind.startsWith("fs.") && typeof req.path === "string") {
    const resource = `fs:${req.path}`;
    return (r) => r.resource === resource;
  }
  if (kind === "shell.run" && typeof req.digest === "string") {
    const digest = req.digest;
    return (r) => r.inputDigest === digest;
  }
  if (kind === "jit.call" && typeof req.tool === "string") {
    const resource = `tool:${req.tool}`;
    return (r) => r.resource === resource;
  }
  if (kind === "net.fetch" && typeof req.url === "string") {
    const url = URL.parse(req.url);
    const href = req.url;
    return (r) =>
      (url !== null && r.resource === `net:${url.hostname}`) ||
      (r.detail !== null && r.detail.url === href);
  }
  return undefined;
}

/** What an action acted on, for messages: ` on <path|argv|url|tool>`. */
export function subjectOf(request: unknown): string {
  if (typeof request !== "object" || request === null) return "";
  const r = request as Record<string, unknown>;
  const subject = typeof r.path === "string"
    ? r.path
    : Array.isArray(r.argv)
    ? r.argv.join(" ")
    : typeof r.url === "string"
    ? r.url
    : typeof r.tool === "string"
    ? r.tool
    : undefined;
  return subject === undefined ? "" : ` on ${JSON.stringify(subject.slice(0, 200))}`;
}
