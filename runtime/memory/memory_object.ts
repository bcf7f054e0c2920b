/**
 * Typed objects of the object memory (DESIGN §2, §6): what an object is, how namespaces and names
 * are spelled, and the capability resources that guard them.
 *
 * An object lives in one namespace — a process's own `process:<pid>`, or an explicit slash path
 * such as `project` or `team/notes` — under an optional name unique in that namespace. Names and
 * oids are not authority: every access is decided on `object:<namespace>/<oid>` (read, write,
 * delete, grant, link) and, for names and listings, on `namespace:<namespace>` (list, create).
 *
 * @module
 */
import { z } from "zod";
import type { ActionResource } from "../authority/capability.ts";

/** An object id: `obj_` and 12 hex digits (random: guessing one gives nothing anyway). */
export const Oid = z.string().regex(/^obj_[0-9a-f]{12}$/, "must be an object id (obj_ + 12 hex)");

/** A process's own namespace. */
export const PROCESS_NAMESPACE = /^process:pid_[0-9a-f]{12}$/;
/** An explicit namespace: up to 8 slash-separated segments of lowercase letters, digits, `._-`. */
export const EXPLICIT_NAMESPACE = /^[a-z0-9][a-z0-9._-]{0,63}(?:\/[a-z0-9][a-z0-9._-]{0,63}){0,7}$/;

/** A namespace key: `process:<pid>` or an explicit slash path. */
export const NamespaceKey = z.string().max(600).refine(
  (k) => PROCESS_NAMESPACE.test(k) || EXPLICIT_NAMESPACE.test(k),
  "must be process:<pid> or a slash path of lowercase segments (letters, digits, . _ -), e.g. team/notes",
);

/** An object name: unique within its namespace; no slash, no control or invisible characters. */
export const ObjectName = z.string().regex(
  /^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$/,
  "must be 1-128 characters of letters, digits and . _ : @ + - (starting with a letter or digit)",
);

/** An object type, e.g. `text`, `json`, `note`, `result`, `llm_context`, `tool.output`. */
export const ObjectType = z.string().regex(
  /^[a-z][a-z0-9_.-]{0,63}$/,
  "must be 1-64 lowercase letters, digits and _ . - (starting with a letter)",
);

/** Where the content came from — what a model should trust it as. */
export const ProvenanceSource = z.enum(["user", "tool", "file", "model", "web"]);
/** Where the content came from. */
export type ProvenanceSource = z.infer<typeof ProvenanceSource>;

/** The provenance of an object's content. */
export const Provenance = z.object({
  source: ProvenanceSource,
  /** A short label: the tool name, the file path, the model, the URL's host. */
  label: z.string().max(200),
  /** A reference: a path, a URL, an action id, an oid. */
  ref: z.string().max(4096).nullable(),
}).strict();
/** The provenance of an object's content. */
export type Provenance = z.infer<typeof Provenance>;

/** Searchable metadata: tags, and free attributes. */
export const ObjectMetadata = z.object({
  tags: z.array(z.string().regex(/^[a-z0-9][a-z0-9._:-]{0,63}$/)).max(32),
  attrs: z.record(z.string().max(64), z.json()),
}).strict();
/** Searchable metadata. */
export type ObjectMetadata = z.infer<typeof ObjectMetadata>;

/** An object's description, without its payload. */
export const ObjectInfo = z.object({
  oid: Oid,
  namespace: NamespaceKey,
  name: ObjectName.nullable(),
  type: ObjectType,
  metadata: ObjectMetadata,
  provenance: Provenance,
  /** 1 at creation, +1 on every update. */
  version: z.number().int().min(1),
  /** An immutable object's payload and metadata never change; it cannot be moved or renamed. */
  immutable: z.boolean(),
  /** A volatile object's payload never reaches disk; after a restart it is `volatile_lost`. */
  volatile: z.boolean(),
  /** The pid (or `operator`) that created it. */
  creator: z.string().min(1).max(64),
  /** Bytes of the payload's canonical JSON. */
  bytes: z.number().int().min(0),
  /**
   * sha256 (hex) of the payload's canonical JSON; null for a volatile object (a digest of a short
   * secret on disk would confirm a guess).
   */
  sha256: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
  createdAt: z.number().int(),
  updatedAt: z.number().int(),
}).strict();
/** An object's description, without its payload. */
export type ObjectInfo = z.infer<typeof ObjectInfo>;

/** A link between two objects, e.g. `derived_from`, `answers`, `cites`. */
export const ObjectLink = z.object({
  from: Oid,
  to: Oid,
  rel: z.string().regex(/^[a-z][a-z0-9_.-]{0,63}$/),
  createdAt: z.number().int(),
  creator: z.string().min(1).max(64),
}).strict();
/** A link between two objects. */
export type ObjectLink = z.infer<typeof ObjectLink>;

export { processNamespace } from "../authority/capability.ts";

/** The capability resource of object `oid` in `namespace`. */
export function objectResource(
  namespace: string,
  oid: string,
): ActionResource & { readonly type: "object"; readonly key: string } {
  return { type: "object", key: `${namespace}/${oid}` };
}

/** The capability resource of a namespace. */
export function namespaceResource(
  namespace: string,
): ActionResource & { readonly type: "namespace"; readonly key: string } {
  return { type: "namespace", key: namespace };
}
