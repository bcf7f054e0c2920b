/**
 * The authority service every primitive consults: it holds the run's decision context (mode,
 * run-scoped denies, whether the OS wall is on, protected paths), the capability table, and the
 * hardline and rule layers (`policy_layers.ts`, `policy_rules.ts`), and turns `decide()` answers into
 * typed errors. It also mints the capabilities a process starts with: the mode's default grant
 * set for a top-level process, lineage rights between a parent and its child, and delegated
 * scopes (see `delegation.ts`).
 *
 * Decisions are recorded by the component whose operation they gate (one record per decision,
 * see `audit_log.ts`): {@link Authority.gate} records a refusal where it is made; the allow is
 * recorded with the operation's effect, naming the `reason` of the decision this returned.
 *
 * @module
 */
import {
  type ActionResource,
  type CapabilityResource,
  processNamespace,
  resourceString,
  type Right,
} from "./capability.ts";
import { CapabilityTable, type GrantRequest } from "./capability_table.ts";
import {
  type Action,
  compileProtection,
  decide,
  type Decision,
  type DecisionContext,
  type DecisionLayer,
  type Layers,
  parseRunDeny,
} from "./decide.ts";
import { delegate, type InheritScope } from "./delegation.ts";
import { ApprovalRequiredError, CapabilityDeniedError } from "../base/errors.ts";
import {
  type DefaultGrant,
  defaultGrants,
  intersectGrant,
  type ModeName,
  narrower,
  parseMode,
} from "./modes.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import { digestOf } from "../base/canonical_json.ts";
import { type ExplainJson, recordedExplanation } from "./explain.ts";

/** How a run is bounded (DESIGN §3 layer 2). */
export interface RunOptions {
  /** `read-only`, `plan`, `workspace-write` (`edit`) or `full-access` (`full`); default `workspace-write`. */
  readonly mode?: string;
  /** Run-scoped denies, `TYPE[.RIGHT]:GLOB` each (`--deny`). */
  readonly denies?: readonly string[];
  /**
   * Whether shell commands run inside the OS wall: `true` requires it, `false` turns it off,
   * `"auto"` (the default) uses it when it works here — the shell primitive probes it on its
   * first run and records the answer with {@link Authority.setWall}.
   */
  readonly wall?: boolean | "auto";
}

/** What the authority service needs besides the runtime core. */
export interface AuthorityOptions extends RunOptions {
  readonly hardline?: DecisionLayer;
  readonly rules?: DecisionLayer;
  /** Workspace-relative globs protected on top of DESIGN §3's (the database, if it were inside). */
  readonly protectedPaths?: readonly string[];
}

function explain(decision: Decision, mode: ModeName): string {
  switch (decision.layer) {
    case "default":
      return "no capability allows it";
    case "mode":
      return `the ${mode} mode forbids it`;
    case "run":
      return `run deny #${decision.reason.slice(4)} forbids it`;
    case "protected":
      return `${decision.reason.slice("protected:".length)} is protected`;
    case "cap":
      return `capability ${decision.capability} ${
        decision.effect === "deny" ? "denies" : "asks for"
      } it`;
    default:
      return decision.reason;
  }
}

/** Decides and mints authority for one runtime. */
export class Authority {
  #ceilingOf: ((pid: string) => ModeName | null) | undefined;
  readonly #ceilings = new Map<string, ModeName>();
  #ceilingGeneration = -1;
  readonly capabilities: CapabilityTable;
  #context: DecisionContext;
  readonly #core: RuntimeCore;
  /** Built once: a check allocates nothing it does not have to. */
  readonly #layers: Layers;
  readonly #rules: DecisionLayer | undefined;

  /**
   * Builds the run's decision context.
   * @throws {ValidationError} for an unknown mode or a malformed run deny.
   */
  constructor(core: RuntimeCore, options: AuthorityOptions = {}) {
    this.#core = core;
    this.capabilities = new CapabilityTable(core);
    this.#context = {
      mode: parseMode(options.mode ?? "workspace-write"),
      denies: (options.denies ?? []).map(parseRunDeny),
      wall: options.wall === true,
      protection: compileProtection(options.protectedPaths ?? []),
    };
    this.#rules = options.rules;
    const capabilities = this.capabilities;
    this.#layers = {
      ...(options.hardline ? { hardline: options.hardline } : {}),
      ...(options.rules ? { rules: options.rules } : {}),
      capabilities: {
        match: (subject, a) => capabilities.match(subject.pid, a.resource, a.right, a.digest),
        approval: (subject, a) => capabilities.approval(subject.pid, a.resource, a.right, a.digest),
      },
    };
  }

  /** The run's decision context (mode, run denies, the wall, protected paths). */
  get context(): DecisionContext {
    return this.#context;
  }

  /**
   * Records whether shell commands run inside the OS wall (the shell primitive probes it on its
   * first run); `decide()` and the mode ceilings see it from then on.
   */
  setWall(wall: boolean): void {
    if (this.#context.wall !== wall) this.#context = { ...this.#context, wall };
  }

  /**
   * Wires where a process's own ceiling comes from (its images' `maxMode`, see `process.ts`); an
   * action is then decided under the narrower of the run's mode and the process's ceiling.
   */
  setCeilings(ceilingOf: (pid: string) => ModeName | null): void {
    this.#ceilingOf = ceilingOf;
    this.#ceilings.clear();
  }

  /** Forgets a process's cached ceiling (its exec narrowed it). */
  forgetCeiling(pid: string): void {
    this.#ceilings.delete(pid);
  }

  /** The decision context for `pid`: the run's, narrowed to the process's ceiling. */
  #contextOf(pid: string): DecisionContext {
    if (!this.#ceilingOf) return this.context;
    // The cache is dropped when another connection commits (it may have exec'd the process).
    const generation = this.capabilities.generation();
    if (generation !== this.#ceilingGeneration) {
      this.#ceilingGeneration = generation;
      this.#ceilings.clear();
    }
    let mode = this.#ceilings.get(pid);
    if (mode === undefined) {
      const ceiling = this.#ceilingOf(pid);
      mode = ceiling === null ? this.context.mode : narrower(this.context.mode, ceiling);
      if (this.#ceilings.size >= 10_000) this.#ceilings.clear();
      this.#ceilings.set(pid, mode);
    }
    return mode === this.context.mode ? this.context : { ...this.context, mode };
  }

  /** The mode `pid` acts under: the run's, narrowed to the process's ceiling. */
  modeOf(pid: string): ModeName {
    return this.#contextOf(pid).mode;
  }

  /** The decision for a process's action (no side effect). */
  decide(pid: string, action: Action): Decision {
    return this.capabilities.checked(() =>
      decide({ pid }, action, this.#contextOf(pid), this.#layers)
    );
  }

  /**
   * What a decision record whose authority is `reason` keeps to explain it later (`explain.ts`):
   * `{explain: …}` to merge into the record's detail for a rule (its file, line and text) or a
   * run deny (its text); undefined for every other reason, which explains itself.
   */
  explanation(reason: string): { explain: ExplainJson } | undefined {
    const c = reason.charCodeAt(0);
    // 'r': only rule: and run: reasons record anything; the rest return at once.
    if (c !== 114) return undefined;
    const rules = this.#rules;
    return recordedExplanation(reason, {
      rule: (r) => rules?.source?.(r),
      denies: this.#context.denies,
    });
  }

  /**
   * Requires `allow` for an action: returns the decision, consuming a one-shot capability that
   * allowed it (call it inside the step that records the action).
   * @throws {CapabilityDeniedError} when the decision is deny.
   * @throws {ApprovalRequiredError} when it is ask.
   */
  require(pid: string, action: Action, what: string): Decision {
    const decision = this.check(pid, action, what);
    this.consume(decision);
    return decision;
  }

  /**
   * {@link Authority.require} for a process's operation `op` (`process.fork`, `human.question`)
   * that records a refusal as the operation's one decision record — a deny, or an ask that goes
   * no further — in a step of its own, then throws it. Call it before the operation's step, so
   * the record is not rolled back with it; the allow is the caller's to record with its effect.
   * @throws {CapabilityDeniedError} when the decision is deny (recorded).
   * @throws {ApprovalRequiredError} when it is ask (recorded).
   */
  gate(pid: string, op: string, action: Action, what: string): Decision {
    try {
      return this.require(pid, action, what);
    } catch (error) {
      if (error instanceof CapabilityDeniedError || error instanceof ApprovalRequiredError) {
        this.#core.audit.append({
          actor: pid,
          pid,
          action: op,
          resource: resourceString(action.resource),
          decision: error instanceof ApprovalRequiredError ? "ask" : "deny",
          authority: error.reason,
          ...(action.digest === undefined ? {} : { inputDigest: action.digest }),
          ...explained(this.explanation(error.reason)),
        });
      }
      throw error;
    }
  }

  /**
   * Like {@link Authority.require}, but leaves a one-shot capability unconsumed: for checks made
   * twice (the path as written, then where it really leads) before the effect.
   * @throws {CapabilityDeniedError} when the decision is deny.
   * @throws {ApprovalRequiredError} when it is ask.
   */
  check(pid: string, action: Action, what: string): Decision {
    const decision = this.decide(pid, action);
    if (decision.effect === "deny") throw this.refusal(pid, action, decision, what);
    if (decision.effect === "ask") {
      const target = resourceString(action.resource);
      throw new ApprovalRequiredError(
        `Cannot ${what} yet: ${action.right} on ${target} needs a human's approval (${
          explain(decision, this.context.mode)
        })`,
        {
          reason: decision.reason,
          digest: action.digest ?? digestOf({ resource: target, right: action.right }),
        },
      );
    }
    return decision;
  }

  /** The typed error for a deny decision: what failed, why, and how to fix it. */
  refusal(pid: string, action: Action, decision: Decision, what: string): CapabilityDeniedError {
    return new CapabilityDeniedError(
      "capability_denied",
      `Cannot ${what}: process ${pid} lacks ${action.right} on ${
        resourceString(action.resource)
      } (${explain(decision, this.context.mode)}); ask a human with request_permission`,
      { reason: decision.reason },
    );
  }

  /** Uses up the one-shot capability an allow came from, if it came from one. */
  consume(decision: Decision): void {
    if (decision.effect !== "allow" || !decision.capability) return;
    if (!this.capabilities.isOneShot(decision.capability)) return;
    this.capabilities.consume(this.capabilities.get(decision.capability));
  }

  /**
   * Grants a top-level process its starting authority: the mode's default set — intersected with
   * what its image requires, under the narrower of the run's mode and the image's maximum — and
   * its rights over itself.
   */
  grantDefaults(pid: string, image?: ImageRequirements): void {
    const mode = image ? narrower(this.context.mode, image.maxMode) : this.context.mode;
    const issuer = `mode:${mode}`;
    for (const grant of defaultGrants(mode)) {
      const kept = image
        ? image.requiredCapabilities.map((q) => intersectGrant(grant, q))
          .filter((g): g is DefaultGrant => g !== undefined)
        : [grant];
      for (const g of kept) {
        this.capabilities.grant({
          subject: pid,
          resource: g.resource,
          rights: [...g.rights],
          effect: "allow",
          issuer,
        }, "runtime");
      }
    }
    this.grantSelf(pid);
  }

  /**
   * A process's rights over itself: spawn children and exec (exec never lifts other capabilities),
   * and its own object namespace `process:<pid>` (the mode's ceiling still applies: read-only
   * cannot write there).
   */
  grantSelf(pid: string): void {
    const self: [CapabilityResource, Right[]][] = [
      [{ type: "process", key: pid, scope: "exact" }, ["spawn", "exec"]],
      [{ type: "namespace", key: processNamespace(pid), scope: "exact" }, ["list", "create"]],
      [
        { type: "object", key: `${processNamespace(pid)}/`, scope: "prefix" },
        ["read", "write", "delete", "grant", "link"],
      ],
    ];
    for (const [resource, rights] of self) {
      this.capabilities.grant(
        { subject: pid, resource, rights, effect: "allow", issuer: "lineage" },
        "runtime",
      );
    }
  }

  /** A parent's rights over its new child: signal it and wait for it. */
  grantLineage(parent: string, child: string): void {
    this.capabilities.grant(
      {
        subject: parent,
        resource: { type: "process", key: child, scope: "exact" },
        rights: ["signal", "wait"],
        effect: "allow",
        issuer: "lineage",
      },
      "runtime",
    );
    this.grantSelf(child);
  }

  /**
   * Hands `child` the parent's effective authority over `scopes` (never more).
   * @throws {CapabilityDeniedError} `cannot_delegate` for a scope the parent does not hold.
   */
  delegate(parent: string, child: string, scopes: readonly InheritScope[]): GrantRequest[] {
    const grants = delegate(this.capabilities.list(parent), child, scopes, this.#core.clock.now());
    for (const grant of grants) this.capabilities.grant(grant, parent);
    return grants;
  }
}

const NO_DETAIL = Object.freeze({});

/**
 * What to spread into a decision record after its own fields: its detail with the explanation
 * added, or nothing when there is none to add (the record's own detail then stands).
 */
export function explained(
  explanation: { explain: ExplainJson } | undefined,
  detail?: Readonly<Record<string, string | number | boolean | null>>,
): { detail?: Record<string, string | number | boolean | null | ExplainJson> } {
  // Nothing to add: the caller's own detail (spread before this) stands, uncopied.
  if (explanation === undefined) return NO_DETAIL;
  return { detail: { ...detail, ...explanation } };
}

/** What of an image decides a top-level process's starting grants. */
export interface ImageRequirements {
  readonly maxMode: ModeName;
  readonly requiredCapabilities: readonly {
    readonly resource: CapabilityResource;
    readonly rights: readonly string[];
  }[];
}

/** A concrete filesystem action resource. */
export function fsResource(path: string): ActionResource {
  return { type: "fs", path };
}

/** A scope over a filesystem subtree, for delegation. */
export function fsScope(
  path: string,
  rights: readonly Right[],
  scope: "exact" | "subtree" = "subtree",
): InheritScope {
  const resource: CapabilityResource = { type: "fs", path, scope };
  return { resource, rights };
}
