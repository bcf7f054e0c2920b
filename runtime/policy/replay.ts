/**
 * Policy replay (issue 24): re-decides a stored run's recorded actions (`recorded_run.ts`) offline under a "what if"
 * governance — another mode, run denies, policy rules, shell level or wall — and says which
 * decisions would change. Nothing is performed and no model is called: the actions come from the
 * run's audit records (with the exact argv from its ledger and human requests), the decisions from
 * the same functions a run uses (`decide()` for files and the network, `decideShell()` for
 * commands, every nested command, with the hardline floor).
 *
 * What counts as the process's authority in the replay:
 * - the mode's default grants are re-derived from the replay's mode (a process that received a
 *   mode's grants at spawn receives the new mode's instead), narrowed as in the run to the
 *   process's own ceiling (its image's `maxMode`); an image's required capabilities are not
 *   intersected again;
 * - a human's one-shot approval is NOT standing authority: the action it allowed was an ask
 *   answered by a person, so it is recorded as `ask` (approved) and replayed without it — it
 *   reads `ask` again unless the new governance allows (or denies) it on its own;
 * - every other capability (lineage, an operator's grant, an "allow always" answer, a delegated
 *   scope) is kept as recorded, live from its grant to its revocation: a replayed action sees the
 *   capabilities that were live when it was made.
 *
 * Only effects are replayed (`fs.*`, `shell.run`, `net.fetch`); object memory, process and human
 * operations are not re-decided.
 *
 * @module
 */
import type { Capability, Effect } from "../authority/capability.ts";
import { CapabilityIndex } from "../authority/capability_index.ts";
import {
  capabilityChain,
  explainLine,
  explainRecord,
  recordedExplanation,
} from "../authority/explain.ts";
import {
  compileProtection,
  decide,
  type Decision,
  type DecisionContext,
  type Protection,
  type RunDeny,
} from "../authority/decide.ts";
import { defaultGrants, type ModeName, narrower } from "../authority/modes.ts";
import type { PolicyRules } from "./policy_rules.ts";
import type { Lifetime, RecordedAction } from "./recorded_run.ts";
import { HardlineLayer } from "./policy_layers.ts";
import type { ProgramTable } from "./shell_programs.ts";
import type { ScriptAnalyzer } from "./shell_argv.ts";
import { decideShell, type ShellPolicyLevel } from "./shell_policy.ts";

/** The governance a replay decides under. */
export interface ReplayGovernance {
  readonly mode: ModeName;
  readonly denies: readonly RunDeny[];
  readonly rules: PolicyRules | null;
  readonly level: ShellPolicyLevel;
  /** Whether shell commands would run inside the OS wall. */
  readonly wall: boolean;
}

/** A replayed decision: the effect, its stable reason, and one line that explains it. */
export interface ReplayDecision {
  readonly effect: Effect;
  readonly reason: string;
  readonly explanation: string;
}

/** One action with its replayed decision. */
export interface Replayed {
  readonly action: RecordedAction;
  readonly decision: ReplayDecision;
}

/** What a {@link Replayer} needs besides the governance. */
export interface ReplayerOptions {
  /** Every capability the processes held (see {@link RecordedRun.capabilities}). */
  readonly capabilities: readonly Capability[];
  /** The processes that received a mode's default grants (they get the replay mode's). */
  readonly modeGrants: Iterable<string>;
  /**
   * A process's own ceiling (its image's `maxMode`), as the run applied it: the process decides
   * under the narrower of the replay's mode and it, and its mode grants are that mode's.
   */
  readonly ceilingOf?: (pid: string) => ModeName | null;
  /**
   * Each capability's life in audit order ({@link RecordedRun.lifetimes}): an action with a
   * `seq` sees what was granted before it and not yet revoked. Without one, its times decide.
   */
  readonly lifetimes?: ReadonlyMap<string, Lifetime>;
  /** Parses `sh -c` bodies (null: every script is opaque, and the floor refuses it). */
  readonly scripts: ScriptAnalyzer | null;
  readonly programs: ProgramTable;
  /** Paths protected on top of DESIGN §3's. */
  readonly protectedPaths?: readonly string[];
}

/** The mode's default grants of one process, as capabilities with the id `mode:<name>`. */
function modeCapabilities(pid: string, mode: ModeName): Capability[] {
  return defaultGrants(mode).map((grant, i) => ({
    id: `mode:${mode}#${i + 1}`,
    subject: pid,
    resource: grant.resource,
    rights: [...grant.rights],
    effect: "allow",
    oneShot: false,
    usedAt: null,
    actionDigest: null,
    expiresAt: null,
    issuer: `mode:${mode}`,
    derivedFrom: null,
    tier: "own",
    revokedAt: null,
    createdAt: 0,
  }));
}

/** Re-decides recorded actions under one governance, with no effect. */
export class Replayer {
  readonly governance: ReplayGovernance;
  readonly #standing: readonly Capability[];
  /** Every capability by id (the mode's re-derived ones too), for explanations. */
  readonly #byId = new Map<string, Capability>();
  readonly #lifetimes: ReadonlyMap<string, Lifetime>;
  readonly #ceilingOf: (pid: string) => ModeName | null;
  readonly #modes = new Map<string, ModeName>();
  readonly #modeCaps = new Map<string, Capability[]>();
  readonly #indexes = new Map<string, CapabilityIndex>();
  readonly #context: DecisionContext;
  readonly #hardline: HardlineLayer;
  readonly #scripts: ScriptAnalyzer | null;
  readonly #programs: ProgramTable;

  /** Holds the governance and the standing capabilities (no one-shot approval, no mode grant). */
  constructor(governance: ReplayGovernance, options: ReplayerOptions) {
    this.governance = governance;
    // One-shot approvals are a person's answer to one ask, not standing authority; the mode's
    // grants are re-derived from the replay's mode.
    this.#standing = options.capabilities.filter((c) =>
      !c.oneShot && c.actionDigest === null && !c.issuer.startsWith("mode:")
    );
    this.#lifetimes = options.lifetimes ?? new Map();
    this.#ceilingOf = options.ceilingOf ?? (() => null);
    for (const pid of options.modeGrants) {
      this.#modeCaps.set(pid, modeCapabilities(pid, this.#modeOf(pid)));
    }
    for (const cap of [...options.capabilities, ...[...this.#modeCaps.values()].flat()]) {
      this.#byId.set(cap.id, cap);
    }
    const protection: Protection = compileProtection(options.protectedPaths ?? []);
    this.#context = {
      mode: governance.mode,
      denies: governance.denies,
      wall: governance.wall,
      protection,
    };
    this.#scripts = options.scripts;
    this.#programs = options.programs;
    this.#hardline = new HardlineLayer(() => options.scripts);
  }

  /** The mode `pid` decides under: the replay's, narrowed to the process's own ceiling. */
  #modeOf(pid: string): ModeName {
    let mode = this.#modes.get(pid);
    if (mode === undefined) {
      const ceiling = this.#ceilingOf(pid);
      mode = ceiling === null ? this.governance.mode : narrower(this.governance.mode, ceiling);
      this.#modes.set(pid, mode);
    }
    return mode;
  }

  #contextOf(pid: string): DecisionContext {
    const mode = this.#modeOf(pid);
    return mode === this.#context.mode ? this.#context : { ...this.#context, mode };
  }

  /** Whether `cap` was live when `action` was decided: by audit order, else by time. */
  #live(cap: Capability, action: RecordedAction): boolean {
    const life = this.#lifetimes.get(cap.id);
    const time = action.time;
    if (cap.expiresAt !== null && cap.expiresAt <= time) return false;
    if (life && action.seq !== null) {
      return life.from < action.seq && (life.to === null || life.to > action.seq);
    }
    return cap.createdAt <= time && (cap.revokedAt === null || cap.revokedAt > time);
  }

  /** The capabilities of the action's process live when it was made, indexed (cached by set). */
  #index(action: RecordedAction): CapabilityIndex {
    const pid = action.pid;
    const live = this.#standing.filter((c) => c.subject === pid && this.#live(c, action));
    const key = `${pid}\u0000${live.map((c) => c.id).join(",")}`;
    let index = this.#indexes.get(key);
    if (!index) {
      const caps = [...(this.#modeCaps.get(pid) ?? []), ...live].map((c) =>
        c.revokedAt === null && c.usedAt === null && c.expiresAt === null
          ? c
          : { ...c, revokedAt: null, usedAt: null, expiresAt: null }
      );
      index = new CapabilityIndex(caps);
      if (this.#indexes.size >= 10_000) this.#indexes.clear();
      this.#indexes.set(key, index);
    }
    return index;
  }

  /** The decision the governance would make for one recorded action. */
  decide(action: RecordedAction): ReplayDecision {
    const index = this.#index(action);
    if (action.resource.type === "shell") {
      const shell = decideShell({
        argv: action.resource.argv,
        level: this.governance.level,
        mode: this.#modeOf(action.pid),
        wall: this.governance.wall,
        denies: this.governance.denies,
        rules: this.governance.rules,
        scripts: this.#scripts,
        programs: this.#programs,
        pid: action.pid,
        capabilities: (argv) => {
          const match = index.match({ type: "shell", argv }, "execute", undefined, 0);
          if (!match) return undefined;
          return {
            effect: match.effect,
            reason: `cap:${match.capability.id}`,
            exact: match.capability.resource.type === "shell" &&
              match.capability.resource.scope === "exact",
          };
        },
      });
      const worst = shell.commands.find((c) => c.reason === shell.reason);
      const what = worst && shell.commands.length > 1 ? ` (on ${JSON.stringify(worst.argv)})` : "";
      return {
        effect: shell.decision,
        reason: shell.reason,
        explanation: `${this.#explain(shell.reason)}${what}`,
      };
    }
    const decision: Decision = decide(
      { pid: action.pid },
      { resource: action.resource, right: action.right },
      this.#contextOf(action.pid),
      {
        hardline: this.#hardline,
        ...(this.governance.rules ? { rules: this.governance.rules } : {}),
        capabilities: { match: (_s, a) => index.match(a.resource, a.right, a.digest, 0) },
      },
    );
    return {
      effect: decision.effect,
      reason: decision.reason,
      explanation: this.#explain(decision.reason),
    };
  }

  /**
   * One line saying why, by the explanation of recorded decisions (`explainLine()`): the layer
   * and its source — the rule's file, line and text, the run deny, the mode, the capability and
   * who granted it.
   */
  #explain(reason: string): string {
    const rules = this.governance.rules?.rules;
    const explain = recordedExplanation(reason, {
      rule: (r) => rules?.find((loaded) => loaded.reason === r)?.at,
      denies: this.governance.denies,
    });
    const record = { authority: reason, detail: explain ?? null };
    const chain = reason.startsWith("cap:")
      ? capabilityChain(reason.slice(4), {
        capability: (id) => this.#byId.get(id),
        grantedBy: () => null,
      })
      : [];
    return explainLine(explainRecord(record, chain));
  }
}

/** Every action with the decision `replayer` makes for it. */
export function replay(actions: readonly RecordedAction[], replayer: Replayer): Replayed[] {
  return actions.map((action) => ({ action, decision: replayer.decide(action) }));
}

/** The replayed actions whose decision differs from the recorded one. */
export function changes(replayed: readonly Replayed[]): Replayed[] {
  return replayed.filter((r) =>
    r.action.recorded !== null && r.action.recorded !== r.decision.effect
  );
}

/** How many decisions moved from one effect to another: `allow→ask` → n, in a fixed order. */
export function tally(changed: readonly Replayed[]): Record<string, number> {
  const out: Record<string, number> = {};
  const order: Effect[] = ["allow", "ask", "deny"];
  for (const from of order) {
    for (const to of order) {
      const n = changed.filter((r) => r.action.recorded === from && r.decision.effect === to)
        .length;
      if (n > 0) out[`${from}→${to}`] = n;
    }
  }
  return out;
}
