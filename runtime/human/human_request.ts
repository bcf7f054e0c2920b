/**
 * Human requests (DESIGN §4, §5): everything that passes between a process and its human, kept
 * durable so that a decision survives restarts and can be made from another terminal.
 *
 * Kinds: a per-use `approval` (a primitive asked; the exact pending action is stored and is
 * re-dispatched once when approved), a `question` (answered with text), a standing `permission`
 * request (approval mints a capability), an `output` (a message to the human), an `interrupt`
 * (a message from the human that also signals the process).
 *
 * @module
 */
import { z } from "zod";
import { CapabilityResource } from "../authority/capability.ts";

/** What kind of exchange a request is. */
export const HumanRequestKind = z.enum([
  "approval",
  "question",
  "permission",
  "output",
  "interrupt",
]);
/** What kind of exchange a request is. */
export type HumanRequestKind = z.infer<typeof HumanRequestKind>;

/** Where a request is in its life. `dispatched`: an approved action was handed back to run. */
export const HumanRequestStatus = z.enum([
  "pending",
  "approved",
  "rejected",
  "expired",
  "answered",
  "delivered",
  "dispatched",
  "cancelled",
]);
/** Where a request is in its life. */
export type HumanRequestStatus = z.infer<typeof HumanRequestStatus>;

/** How far an "allow always" answer reaches (DESIGN §5). */
export const GrantScope = z.enum(["exact", "prefix", "path", "subtree"]);
/** How far an "allow always" answer reaches. */
export type GrantScope = z.infer<typeof GrantScope>;

/**
 * How long and where an "allow always" answer holds: `process`, the asking process only (and
 * what it delegates); `run`, every process of its run — the top-level process, the processes
 * alive in its tree, and those forked later, each copy derived from its parent's so a child never
 * holds more than its parent; `project`, the run as well, and remembered in the user's config for
 * every later `libos agent` run in the same workspace. The default is `run`.
 */
export const Remember = z.enum(["process", "run", "project"]);
/** How long and where an "allow always" answer holds. */
export type Remember = z.infer<typeof Remember>;

/** The action a per-use approval stands for, re-dispatched once when approved. */
export const PendingAction = z.object({
  /** The primitive operation, e.g. `fs.write`. */
  primitive: z.string().regex(/^[a-z]+\.[a-z_]+$/),
  /** Its arguments, exactly as first called. */
  args: z.record(z.string(), z.json()),
}).strict();
/** The action a per-use approval stands for. */
export type PendingAction = z.infer<typeof PendingAction>;

/** Facts about the target the human may see (the process may not, without stat). */
export const TargetFacts = z.object({
  exists: z.boolean(),
  type: z.string().nullable(),
  size: z.number().nullable(),
  mtime: z.number().nullable(),
  links: z.number().nullable(),
}).strict();

/** The longest stated reason kept with a request (a longer one is cut, never refused). */
export const JUSTIFICATION_MAX = 500;

/** What a human is shown before approving one action (DESIGN §5). */
export const ApprovalDetails = z.object({
  primitive: z.string(),
  operation: z.string(),
  /** Workspace-relative path, and the absolute one, when the action is on a file. */
  path: z.string().nullable(),
  absolutePath: z.string().nullable(),
  resource: z.string(),
  right: z.string(),
  /** Why `decide()` asked: `protected:**\/.git/**`, `mode:workspace-write`, `cap:…`. */
  reason: z.string(),
  /** What approving grants: this one action, once. */
  grantScope: z.string(),
  willCreate: z.boolean().nullable(),
  willOverwrite: z.boolean().nullable(),
  target: TargetFacts.nullable(),
  bytes: z.number().int().nullable(),
  sha256: z.string().nullable(),
  /** The start of the content (raw; rendering escapes it). */
  preview: z.string().nullable(),
  /** A unified diff against the current content, for edits (raw; rendering escapes it). */
  diff: z.string().nullable(),
  /** For shell-shaped actions: the resolved executable, argv, cwd and environment hash. */
  executable: z.string().nullable(),
  argv: z.array(z.string()).nullable(),
  cwd: z.string().nullable(),
  envHash: z.string().nullable(),
  /** The canonical digest of the action; the one-shot grant is bound to it. */
  digest: z.string(),
  /**
   * A mode or protected-path ask that applies whatever a capability says (so no "allow always"
   * scope is offered), when there is one.
   */
  ceiling: z.string().nullable().optional(),
  /**
   * When a policy rule asked: where it was written (file and 1-based line) and its text, for the
   * card's "asked by" line. Absent for any other reason, and in requests parked before it existed.
   */
  rule: z.object({
    source: z.string().max(4096),
    line: z.number().int().positive(),
    text: z.string().max(4096),
  }).strict().optional(),
  /**
   * The "allow always" scopes the primitive found would really allow this action next time
   * (shell runs; files derive theirs from the asking capability).
   */
  offers: z.array(
    z.object({
      scope: GrantScope,
      resource: CapabilityResource,
      rights: z.array(z.string()).min(1).max(16),
    }).strict(),
  ).optional(),
  /**
   * The resource of the one-shot capability approving mints, as the primitive that asked names it
   * (bound to {@link digest}, so a wide resource lets nothing else through). Requests parked by
   * earlier versions lack it; the request book derives it from {@link primitive} for those.
   */
  grant: CapabilityResource.optional(),
  /**
   * The reason the model gave for the call (its tool call's optional `justification`): the
   * model's words, untrusted, shown escaped and marked as such. Absent when it gave none.
   */
  justification: z.string().max(JUSTIFICATION_MAX).nullable().optional(),
  action: PendingAction,
}).strict();
/** What a human is shown before approving one action. */
export type ApprovalDetails = z.infer<typeof ApprovalDetails>;

/** The fields only an approval on a file has (null for any other action). */
type FileFields = "path" | "absolutePath" | "willCreate" | "willOverwrite" | "target" | "diff";
/** The fields only a shell-shaped approval has. */
type ShellFields = "executable" | "argv" | "cwd" | "envHash";

/**
 * The preview of an action that is not on a file (a shell run, a request, a tool registration):
 * the file fields are null, and the shell fields too unless given. The approval gate adds the
 * parked action.
 */
export function actionApproval(
  fields:
    & Omit<ApprovalDetails, FileFields | ShellFields | "action">
    & Partial<Pick<ApprovalDetails, ShellFields>>,
): Omit<ApprovalDetails, "action"> {
  return {
    path: null,
    absolutePath: null,
    willCreate: null,
    willOverwrite: null,
    target: null,
    diff: null,
    executable: null,
    argv: null,
    cwd: null,
    envHash: null,
    ...fields,
  };
}

/** A standing permission request (`request_permission`): approval mints a capability. */
export const PermissionRequest = z.object({
  resource: CapabilityResource,
  rights: z.array(z.string()).min(1).max(16),
  /** The process's own words (untrusted; rendering escapes them). */
  reason: z.string().max(4096),
}).strict();
/** A standing permission request. */
export type PermissionRequest = z.infer<typeof PermissionRequest>;

/** What the human decided, and who and when. */
export const HumanResponse = z.object({
  by: z.string(),
  at: z.number().int(),
  answer: z.string().max(100_000).optional(),
  reason: z.string().max(4096).optional(),
  always: GrantScope.optional(),
  /** How far the "allow always" reaches (requests decided before it was recorded: `process`). */
  remember: Remember.optional(),
  /** The remembered grant's id in the user's grants file, for `project`. */
  remembered: z.string().max(64).optional(),
  /** Capabilities minted by the decision. */
  capabilities: z.array(z.string()).optional(),
}).strict();
/** What the human decided. */
export type HumanResponse = z.infer<typeof HumanResponse>;

/** A stored human request. */
export const HumanRequest = z.object({
  id: z.string().regex(/^hreq_[0-9a-f]{12}$/),
  pid: z.string().regex(/^pid_[0-9a-f]{12}$/),
  kind: HumanRequestKind,
  status: HumanRequestStatus,
  approval: ApprovalDetails.nullable(),
  /** The question, output or interrupt text (untrusted when from a process). */
  text: z.string().max(100_000).nullable(),
  permission: PermissionRequest.nullable(),
  response: HumanResponse.nullable(),
  createdAt: z.number().int(),
  updatedAt: z.number().int(),
  expiresAt: z.number().int().nullable(),
}).strict();
/** A stored human request. */
export type HumanRequest = z.infer<typeof HumanRequest>;
