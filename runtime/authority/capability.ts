/**
 * Capabilities: who may do what to which resource (DESIGN §2, §3). A capability names a subject
 * (a process), a typed resource with a scope, the rights it covers, and an effect — allow, ask or
 * deny — with optional one-shot use, a bound action digest, an expiry, the issuer, the capability
 * it was derived from, and revocation. The four familiar policies are names for effect + use:
 * `always_allow`, `always_deny`, `ask_each_time`, `allow_once`.
 *
 * Resources are typed strings' structured form: a filesystem path (canonical, workspace-relative)
 * with `exact` or `subtree` scope; an object id; a namespace (slash path); a human; a shell argv
 * (exact or token prefix); a network host; an image id; a tool name; a process id; an MCP
 * server's tool (`mcp:<server>/<tool>`).
 *
 * @module
 */
import { z } from "zod";

/** The resource types capabilities can name. */
export const ResourceType = z.enum([
  "fs",
  "object",
  "namespace",
  "human",
  "shell",
  "net",
  "image",
  "tool",
  "process",
  "mcp",
]);
/** A resource type. */
export type ResourceType = z.infer<typeof ResourceType>;

/** The rights each resource type knows. */
export const RIGHTS = {
  fs: ["read", "write", "delete", "stat"],
  object: ["read", "write", "delete", "grant", "link"],
  namespace: ["list", "create", "delete"],
  human: ["write"],
  shell: ["execute"],
  net: ["connect"],
  image: ["read", "write", "admin"],
  tool: ["invoke", "register"],
  process: ["spawn", "signal", "wait", "exec"],
  /** An MCP server's tool, keyed `<server>/<tool>` (a `<server>/` prefix is all of its tools). */
  mcp: ["invoke"],
} as const satisfies Record<ResourceType, readonly string[]>;

/** A right, such as `read` or `signal`. */
export type Right = (typeof RIGHTS)[ResourceType][number];

/** What a matching capability does to a request. */
export const Effect = z.enum(["allow", "ask", "deny"]);
/** What a matching capability does to a request. */
export type Effect = z.infer<typeof Effect>;

/** How far a capability's resource reaches. */
export const Scope = z.enum(["exact", "subtree", "prefix", "any"]);
/** How far a capability's resource reaches. */
export type Scope = z.infer<typeof Scope>;

const CanonicalPath = z.string().min(1).max(4096).refine(
  (p) =>
    p === "." ||
    (!p.startsWith("/") && !p.split("/").some((s) => s === "" || s === "." || s === "..")),
  "must be a canonical workspace-relative path (no leading /, no empty, . or .. segments)",
).refine(
  (p) => !p.includes("\0") && p.isWellFormed(),
  "must not contain NUL or unpaired surrogates",
);

/** The resource part of a capability. */
export const CapabilityResource = z.discriminatedUnion("type", [
  z.object({ type: z.literal("fs"), path: CanonicalPath, scope: z.enum(["exact", "subtree"]) })
    .strict(),
  z.object({
    type: z.literal("shell"),
    argv: z.array(z.string().min(1).max(4096)).max(256),
    scope: z.enum(["exact", "prefix", "any"]),
  }).strict(),
  z.object({
    type: z.enum(["object", "namespace", "human", "net", "image", "tool", "process", "mcp"]),
    key: z.string().min(1).max(4096),
    scope: z.enum(["exact", "prefix", "any"]),
  }).strict(),
]);
/** The resource part of a capability. */
export type CapabilityResource = z.infer<typeof CapabilityResource>;

/** A concrete resource an action touches. */
export type ActionResource =
  | { readonly type: "fs"; readonly path: string }
  | { readonly type: "shell"; readonly argv: readonly string[] }
  | {
    readonly type: "object" | "namespace" | "human" | "net" | "image" | "tool" | "process" | "mcp";
    readonly key: string;
  };

/** A stored capability. */
export const Capability = z.object({
  id: z.string().regex(/^cap_[0-9a-f]{12}$/),
  subject: z.string().min(1).max(64),
  resource: CapabilityResource,
  rights: z.array(z.string().min(1).max(32)).min(1).max(16),
  effect: Effect,
  /** Consumed by the first matching call (an `allow_once` grant). */
  oneShot: z.boolean(),
  /** When a one-shot capability was used; it matches nothing after that. */
  usedAt: z.number().int().nullable(),
  /** Matches only an action with exactly this canonical digest (an approval bound to an action). */
  actionDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/).nullable(),
  expiresAt: z.number().int().nullable(),
  /** Who issued it: `operator`, `mode:<name>`, `lineage`, `human:<request>`, a pid. */
  issuer: z.string().min(1).max(200),
  /** The capability it was derived from (delegation); revoking that one revokes this one. */
  derivedFrom: z.string().nullable(),
  /**
   * `inherited` capabilities came from a parent at fork or spawn: their deny and ask act as a
   * floor that the child's own later grants (an "allow always" answer, say) cannot lift.
   */
  tier: z.enum(["own", "inherited"]),
  revokedAt: z.number().int().nullable(),
  createdAt: z.number().int(),
}).strict();
/** A stored capability. */
export type Capability = z.infer<typeof Capability>;

/** The policy name of a capability's effect and use. */
export function policyOf(
  cap: Pick<Capability, "effect" | "oneShot">,
): "always_allow" | "always_deny" | "ask_each_time" | "allow_once" {
  if (cap.effect === "deny") return "always_deny";
  if (cap.effect === "ask") return "ask_each_time";
  return cap.oneShot ? "allow_once" : "always_allow";
}

/** Whether `right` is one the resource type knows. */
export function isRight(type: ResourceType, right: string): right is Right {
  return (RIGHTS[type] as readonly string[]).includes(right);
}

/** The human-readable resource string, e.g. `fs:src/app.ts` or `process:pid_…`. */
export function resourceString(resource: ActionResource | CapabilityResource): string {
  if (resource.type === "fs") {
    const scope = "scope" in resource && resource.scope === "subtree" ? "/**" : "";
    return `fs:${resource.path}${scope}`;
  }
  if (resource.type === "shell") {
    const argv = resource.argv.join(" ");
    const scope = "scope" in resource
      ? (resource.scope === "prefix" ? " …" : resource.scope === "any" ? "*" : "")
      : "";
    return `shell:${argv}${scope}`;
  }
  const scope = "scope" in resource
    ? (resource.scope === "prefix" ? "*" : resource.scope === "any" ? "*" : "")
    : "";
  return `${resource.type}:${
    "scope" in resource && resource.scope === "any" ? "" : resource.key
  }${scope}`;
}

/**
 * The argv as deny and ask matching sees it: case folded, and the program (first token) reduced
 * to its bare name — no directory, no `.exe`, no version suffix — so `/usr/bin/Python3.11` and
 * `rm.exe` meet a deny on `python` or `rm`. Only deny and ask use it: normalisation may only
 * ever make a decision stricter (DESIGN §2); allow matches exact tokens.
 */
export function foldArgv(argv: readonly string[]): string[] {
  return argv.map((token, i) => {
    const lower = token.toLowerCase();
    if (i > 0) return lower;
    const name = lower.slice(lower.lastIndexOf("/") + 1).replace(/\.exe$/, "");
    return name.replace(/[-_.]?\d+(\.\d+)*$/, "") || name;
  });
}

/** Whether the canonical path `path` lies in (or is) the subtree rooted at `root`. */
export function inSubtree(root: string, path: string): boolean {
  return root === "." || path === root || path.startsWith(root + "/");
}

/**
 * How specifically a capability's resource matches a concrete one, or `undefined` when it does
 * not match. Larger is more specific: exact beats any prefix, a longer prefix beats a shorter
 * one, and `any` is the least specific. `caseFold` compares paths and keys case-insensitively,
 * which only deny and ask capabilities use (normalisation only ever makes a decision stricter).
 */
export function specificity(
  cap: CapabilityResource,
  action: ActionResource,
  caseFold: boolean,
): number | undefined {
  if (cap.type !== action.type) return undefined;
  const fold = (s: string) => (caseFold ? s.toLowerCase() : s);
  if (cap.type === "fs" && action.type === "fs") {
    const root = fold(cap.path);
    const path = fold(action.path);
    if (cap.scope === "exact") return root === path ? 1_000_000 : undefined;
    if (!inSubtree(root, path)) return undefined;
    return root === "." ? 1 : 2 + root.split("/").length;
  }
  if (cap.type === "shell" && action.type === "shell") {
    if (cap.scope === "any") return 0;
    const want = caseFold ? foldArgv(cap.argv) : cap.argv;
    const have = caseFold ? foldArgv(action.argv) : action.argv;
    if (cap.scope === "exact") {
      return want.length === have.length && want.every((t, i) => t === have[i])
        ? 1_000_000
        : undefined;
    }
    return want.length <= have.length && want.every((t, i) => t === have[i])
      ? 1 + want.length
      : undefined;
  }
  if (
    cap.type !== "fs" && cap.type !== "shell" && action.type !== "fs" && action.type !== "shell"
  ) {
    if (cap.scope === "any") return 0;
    const key = fold(cap.key);
    const have = fold(action.key);
    if (cap.scope === "exact") return key === have ? 1_000_000 : undefined;
    // A plain string prefix: a namespace subtree is written with its trailing slash (`project/`).
    return have.startsWith(key) ? 1 + key.length : undefined;
  }
  return undefined;
}

/**
 * The tool name an MCP tool goes by in libos (`mcp__<server>__<tool>`, lowercase, `-` as `_`),
 * from its resource key `<server>/<tool>`: what the model calls and what `tool` rules name.
 */
export function mcpToolName(key: string): string {
  const slash = key.indexOf("/");
  return `mcp__${key.slice(0, slash)}__${key.slice(slash + 1)}`.toLowerCase().replaceAll("-", "_");
}

/** The namespace of process `pid` in the object memory (its own objects live there). */
export function processNamespace(pid: string): string {
  return `process:${pid}`;
}
