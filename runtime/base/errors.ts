/**
 * The error taxonomy of Agent libOS.
 *
 * Every error the runtime raises on purpose is a {@link LibosError} with a stable string `code`
 * that callers branch on (never on message text) and a `fault` that says who has to act: the
 * caller (bad arguments), the operator (configuration, the machine), or the runtime itself.
 * Messages say what failed, why, and how to fix it.
 *
 * @module
 */

/** Who is at fault for an error, and so who has to act on it. */
export type Fault = "caller" | "operator" | "runtime";

/** Options every {@link LibosError} constructor accepts. */
export interface LibosErrorOptions {
  /** The underlying error, always passed on when there is one. */
  readonly cause?: unknown;
}

/** Base class of every deliberate runtime error: a stable `code` plus a readable message. */
export class LibosError extends Error {
  /** Stable machine-readable code, e.g. `store_locked`. */
  readonly code: string;
  /** Who has to act on the error. */
  readonly fault: Fault;

  /** Builds an error with its stable code, fault and message. */
  constructor(code: string, fault: Fault, message: string, options: LibosErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.fault = fault;
  }
}

/** Input that failed a schema or a bound: the caller sent something the runtime refuses. */
export class ValidationError extends LibosError {
  /** Builds a `validation_failed` error. */
  constructor(message: string, options: LibosErrorOptions = {}) {
    super("validation_failed", "caller", message, options);
  }
}

/** A named thing does not exist (only ever raised to a caller allowed to know that). */
export class NotFoundError extends LibosError {
  /** Builds a `not_found` error. */
  constructor(message: string, options: LibosErrorOptions = {}) {
    super("not_found", "caller", message, options);
  }
}

/** A command line that cannot be understood; the CLI exits with status 2. */
export class UsageError extends LibosError {
  /** Builds a `usage` error. */
  constructor(message: string, options: LibosErrorOptions = {}) {
    super("usage", "caller", message, options);
  }
}

/** Stable codes of {@link StoreError}. */
export type StoreErrorCode =
  | "store_corrupt"
  | "store_locked"
  | "store_newer_schema"
  | "store_foreign"
  | "store_io"
  | "store_closed"
  | "store_failed"
  | "store_conflict"
  | "store_outdated"
  | "store_readonly"
  | "store_listener_failed"
  | "store_lease_lost";

/** A database that cannot be opened or written; the file is left exactly as it was. */
export class StoreError extends LibosError {
  declare readonly code: StoreErrorCode;

  /** Builds a store error with one of the {@link StoreErrorCode} codes. */
  constructor(code: StoreErrorCode, message: string, options: LibosErrorOptions = {}) {
    super(
      code,
      code === "store_failed" || code === "store_closed" || code === "store_lease_lost"
        ? "runtime"
        : "operator",
      message,
      options,
    );
  }
}

/** Stable codes of {@link AuditError}. */
export type AuditErrorCode = "audit_head_missing" | "audit_head_invalid" | "audit_tampered";

/** The audit chain or its head file is missing, unreadable, or does not verify. */
export class AuditError extends LibosError {
  declare readonly code: AuditErrorCode;

  /** Builds an audit error with one of the {@link AuditErrorCode} codes. */
  constructor(code: AuditErrorCode, message: string, options: LibosErrorOptions = {}) {
    super(code, "operator", message, options);
  }
}

/** Stable codes of {@link IllegalTransitionError}. */
export type TransitionErrorCode = "illegal_transition" | "not_a_child" | "no_children";

/** A lifecycle operation the process's state or lineage does not allow; nothing was changed. */
export class IllegalTransitionError extends LibosError {
  declare readonly code: TransitionErrorCode;

  /** Builds an error with one of the {@link TransitionErrorCode} codes. */
  constructor(code: TransitionErrorCode, message: string, options: LibosErrorOptions = {}) {
    super(code, "caller", message, options);
  }
}

/** A budget ran out; `kind` says which (`tool_calls`, `live_children`, `wall_time`, `model_tokens`). */
export class BudgetExhaustedError extends LibosError {
  /** Which budget ran out. */
  readonly kind: string;

  /** Builds a `budget_exhausted` error for one budget kind. */
  constructor(kind: string, message: string, options: LibosErrorOptions = {}) {
    super("budget_exhausted", "caller", message, options);
    this.kind = kind;
  }
}

/** Stable codes of {@link CapabilityDeniedError}. */
export type DenialCode = "capability_denied" | "cannot_delegate";

/** The decision for an action was deny: the caller lacks the authority (or a rule forbids it). */
export class CapabilityDeniedError extends LibosError {
  declare readonly code: DenialCode;
  /** The stable reason of the decision, e.g. `cap:cap_…`, `mode:read-only`, `default`. */
  readonly reason: string;

  /** Builds a denial with its code, message and (for decisions) the decision's reason. */
  constructor(
    code: DenialCode,
    message: string,
    options: LibosErrorOptions & { readonly reason?: string } = {},
  ) {
    super(code, "caller", message, options);
    this.reason = options.reason ?? "default";
  }
}

/** The decision for an action was ask: it needs a human's approval first (DESIGN §4, §5). */
export class ApprovalRequiredError extends LibosError {
  /** The stable reason of the decision that asked. */
  readonly reason: string;
  /** The canonical digest of the exact action an approval would be bound to. */
  readonly digest: string;

  /** Builds an `approval_required` error for one action. */
  constructor(
    message: string,
    options: LibosErrorOptions & { readonly reason: string; readonly digest: string },
  ) {
    super("approval_required", "caller", message, options);
    this.reason = options.reason;
    this.digest = options.digest;
  }
}

/**
 * A volatile object's payload is gone: it lived only in the memory of a runtime that has since
 * stopped (DESIGN §6). The object's description survives; its payload does not.
 */
export class VolatileLostError extends LibosError {
  declare readonly code: "volatile_lost";

  /** Builds the error for one object. */
  constructor(message: string, options: LibosErrorOptions = {}) {
    super("volatile_lost", "runtime", message, options);
  }
}

/** Stable codes of {@link HumanDecisionError}. */
export type HumanErrorCode = "approval_rejected" | "approval_expired" | "human_unavailable";

/**
 * A human rejected the request, it expired (which counts as a rejection), or no human is
 * reachable (human mode `none`: every ask is denied at once).
 */
export class HumanDecisionError extends LibosError {
  declare readonly code: HumanErrorCode;
  /** The human request it was about (none in mode `none`: nothing was stored). */
  readonly request: string | null;
  /** Why `decide()` asked (`protected:**\/.env`, `mode:workspace-write`, …), when an action asked. */
  readonly reason: string | null;

  /** Builds a rejection, expiry or unreachable-human refusal. */
  constructor(
    code: HumanErrorCode,
    message: string,
    options: LibosErrorOptions & {
      readonly request?: string | null;
      readonly reason?: string | null;
    } = {},
  ) {
    super(code, "caller", message, options);
    this.request = options.request ?? null;
    this.reason = options.reason ?? null;
  }
}

/**
 * A tool ends its process's quantum (DESIGN §1): the process waits for a child, or exits. The
 * broker lets it through and the scheduler makes `outcome` the quantum's result — what the model
 * asked for, applied by the one code path that moves processes (a tool never moves its own
 * process mid-quantum).
 */
export class QuantumEnd extends LibosError {
  /** What the quantum ends with. */
  readonly outcome:
    | { readonly type: "wait_child"; readonly pid: string | null }
    | { readonly type: "exit"; readonly result?: string; readonly message?: string };

  /** Builds a `quantum_end` for one outcome. */
  constructor(message: string, outcome: QuantumEnd["outcome"]) {
    super("quantum_end", "caller", message);
    this.outcome = outcome;
  }
}

/** The action waits for a human: the process parks in `waiting_human` on `request`. */
export class HumanPendingError extends LibosError {
  /** The durable human request the process waits on. */
  readonly request: string;

  /** Builds a `human_pending` error for one request. */
  constructor(message: string, options: LibosErrorOptions & { readonly request: string }) {
    super("human_pending", "caller", message, options);
    this.request = options.request;
  }
}

/** A path libos will not operate on: a symlink as the final component, a file that changed while being opened, the workspace root. */
export class UnsafePathError extends LibosError {
  /** Builds an `unsafe_path` error. */
  constructor(message: string, options: LibosErrorOptions = {}) {
    super("unsafe_path", "caller", message, options);
  }
}

/** A path that leads outside the workspace, lexically or through a symlink. */
export class OutsideWorkspaceError extends LibosError {
  /** Builds an `outside_workspace` error. */
  constructor(message: string, options: LibosErrorOptions = {}) {
    super("outside_workspace", "caller", message, options);
  }
}

/** Stable codes of {@link PatchError}. */
export type PatchErrorCode =
  | "patch_invalid"
  | "patch_mismatch"
  | "patch_rolled_back"
  | "patch_partial";

/**
 * A patch that could not be applied (`apply_patch`): malformed (`patch_invalid`, at `line`), a
 * hunk that does not match the file (`patch_mismatch`), a write that failed midway and was undone
 * (`patch_rolled_back`), or one whose undo failed too (`patch_partial`, the runtime's fault: the
 * message names every file left changed).
 */
export class PatchError extends LibosError {
  declare readonly code: PatchErrorCode;
  /** The patch line (1-based) the error is about, when there is one. */
  readonly line: number | null;

  /** Builds a patch error with one of the {@link PatchErrorCode} codes. */
  constructor(
    code: PatchErrorCode,
    message: string,
    options: LibosErrorOptions & { readonly line?: number } = {},
  ) {
    super(code, code === "patch_partial" ? "runtime" : "caller", message, options);
    this.line = options.line ?? null;
  }
}

/**
 * A search pattern the engine cannot run (`invalid_pattern`): a regular expression that does not
 * parse, or uses what the linear-time engine has no way to run (lookaround, backreferences).
 */
export class InvalidPatternError extends LibosError {
  /** The pattern as given. */
  readonly pattern: string;
  /** Builds an `invalid_pattern` error for `pattern`. */
  constructor(pattern: string, message: string, options: LibosErrorOptions = {}) {
    super("invalid_pattern", "caller", message, options);
    this.pattern = pattern;
  }
}

/** The `{code, message}` pair that error envelopes carry. */
export interface ErrorInfo {
  readonly code: string;
  readonly message: string;
}

/** Describes any thrown value as `{code, message}`; unknown errors get the code `internal`. */
export function errorInfo(error: unknown): ErrorInfo {
  if (error instanceof LibosError) return { code: error.code, message: error.message };
  if (error instanceof SuppressedError) {
    // `await using` closing after a failure: what failed first says what to do.
    const first = errorInfo(error.suppressed);
    const then = errorInfo(error.error);
    return {
      code: first.code,
      message: then.message === first.message
        ? first.message
        : `${first.message} (closing afterwards failed too: ${then.message})`,
    };
  }
  if (error instanceof Deno.errors.NotCapable) {
    return {
      code: "permission_denied",
      message: `${
        error.message.replace(/, run again with .*$/, "")
      }: libos runs with access only to the workspace, its state directory, the temporary directory and an explicit --db; use paths inside those`,
    };
  }
  if (error instanceof Error) {
    return { code: "internal", message: `${error.name}: ${error.message}` };
  }
  return { code: "internal", message: String(error) };
}
