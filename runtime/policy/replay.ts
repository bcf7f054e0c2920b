/**
 * Policy replay (issue 24): re-decides a stored run's recorded actions offline under a "what if"
 * governance — another mode, run denies, policy rules, shell level or wall — and says which
 * decisions would change. Nothing is performed and no model is called: the actions come from the
 * run's audit records (with the exact argv from its ledger and human requests), the decisions from
 * the same functions a run uses (`decide()` for files and the network, `decideShell()` for
 * commands, every nested command, with the hardline floor).
 *
 * What counts as the process's authority in the replay:
 * - the mode's default grants are re-derived from the replay's mode (a process that received a
 *   mode's grants at spawn receives the new mode's instead; an image's narrower requirements are
 *   not re-applied);
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
import type { ActionResource, Capability, Effect, Right } from "../authority/capability.ts";
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
import { defaultGrants, type ModeName, ModeName as ModeNames } from "../authority/modes.ts";
import type { AuditQuery, AuditRow, Store } from "../store/store.ts";
import type { PolicyRules } from "./policy_rules.ts";
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

/** One recorded effect, as the replay re-decides it. */
export interface RecordedAction {
  /** The audit record's `seq` (null for an action from a session log). */
  readonly seq: number | null;
  /** The process's model turn it belongs to (1-based), when known. */
  readonly turn: number | null;
  readonly pid: string;
  /** The audited operation: `fs.read`, `fs.write`, `shell.run`, `net.fetch`, … */
  readonly action: string;
  readonly resource: ActionResource;
  readonly right: Right;
  /** What the run decided; an action a human approved once is `ask`. Null: not recorded. */
  readonly recorded: Effect | null;
  /** A human approved it once (the run asked, a person said yes). */
  readonly approved: boolean;
  /** The recorded decision's authority (null for a session log). */
  readonly authority: string | null;
  /** When it was decided (ms since the epoch): which capabilities were live. */
  readonly time: number;
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

/** A stored run, as the replay needs it. */
export interface RecordedRun {
  readonly pid: string;
  /** The run's processes: the top-level one first, then its descendants. */
  readonly pids: readonly string[];
  readonly actions: readonly RecordedAction[];
  /** Every capability the tree's processes held at some point. */
  readonly capabilities: readonly Capability[];
  /** Each capability's life in audit order: the seq of its grant and of its revocation. */
  readonly lifetimes: ReadonlyMap<string, Lifetime>;
  /** The processes that received a mode's default grants, and that mode. */
  readonly modeGrants: ReadonlyMap<string, ModeName>;
  /** Whether the run's commands ran inside the OS wall, when a record says. */
  readonly wall: boolean | undefined;
  /** Model turns seen (the `model.turn` objects the tree's processes kept). */
  readonly turns: number;
}

/** When a capability was live, in audit order: granted at `from`, revoked at `to` (or never). */
export interface Lifetime {
  readonly from: number;
  readonly to: number | null;
}

const PAGE = 1000;

/** The right an audited filesystem operation asks for. */
const FS_RIGHTS: Readonly<Record<string, Right>> = Object.freeze({
  "fs.read": "read",
  "fs.list": "read",
  "fs.stat": "stat",
  "fs.write": "write",
  "fs.mkdir": "write",
  "fs.delete": "delete",
  "fs.rmdir": "delete",
});

function allRows(
  store: Store,
  filter: Omit<AuditQuery, "afterSeq" | "limit" | "order">,
): AuditRow[] {
  const rows: AuditRow[] = [];
  let afterSeq = 0;
  for (;;) {
    const page = store.queryAudit({ ...filter, afterSeq, limit: PAGE, order: "asc" });
    rows.push(...page);
    if (page.length < PAGE) return rows;
    afterSeq = page[page.length - 1]!.seq;
  }
}

function treeOf(store: Store, pid: string): string[] {
  const out: string[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (out.includes(next)) continue;
    out.push(next);
    let afterPid: string | undefined;
    for (;;) {
      const page = store.listProcesses({
        parent: next,
        limit: PAGE,
        ...(afterPid === undefined ? {} : { afterPid }),
      });
      queue.push(...page.map((p) => p.pid));
      if (page.length < PAGE) break;
      afterPid = page[page.length - 1]!.pid;
    }
  }
  return out;
}

function capabilitiesOf(store: Store, pid: string): Capability[] {
  const caps: Capability[] = [];
  let afterId: string | undefined;
  for (;;) {
    const page = store.listCapabilities({
      subject: pid,
      limit: PAGE,
      ...(afterId === undefined ? {} : { afterId }),
    });
    caps.push(...page.map((row) => JSON.parse(row.data) as Capability));
    if (page.length < PAGE) return caps;
    afterId = page[page.length - 1]!.id;
  }
}

function detailOf(row: AuditRow): Record<string, unknown> | null {
  return row.detail === null ? null : JSON.parse(row.detail) as Record<string, unknown>;
}

function stringArray(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.length > 0 && value.every((t) => typeof t === "string")
    ? value as string[]
    : undefined;
}

/** The exact argv of every command the tree asked about or ran, by its audited resource. */
function argvIndex(store: Store, pids: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const add = (argv: string[] | undefined) => {
    if (argv) out.set(`shell:${argv.join(" ")}`.slice(0, 4096), argv);
  };
  for (const pid of pids) {
    for (const row of store.listActions({ pid, limit: 10_000 })) {
      if (row.kind === "shell.run") {
        add(stringArray((JSON.parse(row.request) as Record<string, unknown>).argv));
      }
    }
    for (const row of store.listHumanRequests({ pid, limit: 10_000 })) {
      const data = JSON.parse(row.data) as { approval?: { argv?: unknown } };
      add(stringArray(data.approval?.argv));
    }
  }
  return out;
}

/**
 * The recorded run of `pid` and its descendants: every effect decision in audit order (an ask a
 * human approved and the allow that followed it are one action, recorded as an approved ask),
 * the capabilities held, which processes got a mode's grants, and the wall.
 */
export function recordedRun(store: Store, pid: string): RecordedRun {
  const pids = treeOf(store, pid);
  // The process's own records, and the runtime's records of its model turns (no pid on them).
  const bySeq = new Map<number, AuditRow>();
  for (const p of pids) {
    for (const row of allRows(store, { pid: p })) bySeq.set(row.seq, row);
    const turns = { action: "object.create", resourcePrefix: `object:process:${p}/` };
    for (const row of allRows(store, turns)) bySeq.set(row.seq, row);
  }
  const rows = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  const capabilities = pids.flatMap((p) => capabilitiesOf(store, p));
  const oneShot = new Set(capabilities.filter((c) => c.oneShot).map((c) => c.id));
  const modeGrants = new Map<string, ModeName>();
  for (const cap of capabilities) {
    const mode = cap.issuer.startsWith("mode:") ? cap.issuer.slice(5) : undefined;
    const parsed = ModeNames.safeParse(mode);
    if (parsed.success) modeGrants.set(cap.subject, parsed.data);
  }
  const argv = argvIndex(store, pids);
  const turnsOf = new Map<string, number>();
  let turns = 0;
  let wall: boolean | undefined;
  const actions: RecordedAction[] = [];
  const lifetimes = new Map<string, Lifetime>();
  for (const row of rows) {
    const detail = detailOf(row);
    if (row.action === "capability.grant" && row.correlation !== null) {
      lifetimes.set(row.correlation, { from: row.seq, to: null });
      continue;
    }
    if (row.action === "capability.revoke" && row.correlation !== null) {
      const life = lifetimes.get(row.correlation);
      if (life && life.to === null) lifetimes.set(row.correlation, { ...life, to: row.seq });
      continue;
    }
    if (row.action === "object.create" && detail?.type === "model.turn") {
      const owner = pids.find((p) => row.resource.startsWith(`object:process:${p}/`));
      if (owner) {
        turnsOf.set(owner, (turnsOf.get(owner) ?? 0) + 1);
        turns++;
      }
      continue;
    }
    if (row.pid === null || row.actor !== row.pid) continue;
    if (row.decision !== "allow" && row.decision !== "ask" && row.decision !== "deny") continue;
    let resource: ActionResource;
    let right: Right;
    if (row.action === "shell.run" && row.resource.startsWith("shell:")) {
      resource = {
        type: "shell",
        argv: argv.get(row.resource) ?? row.resource.slice(6).split(" "),
      };
      right = "execute";
      if (typeof detail?.wall === "boolean") wall = detail.wall;
    } else if (row.action === "net.fetch" && row.resource.startsWith("net:")) {
      resource = { type: "net", key: row.resource.slice(4) };
      right = "connect";
    } else if (Object.hasOwn(FS_RIGHTS, row.action) && row.resource.startsWith("fs:")) {
      resource = { type: "fs", path: row.resource.slice(3) };
      right = FS_RIGHTS[row.action]!;
    } else continue;
    const approved = row.decision === "allow" && row.authority.startsWith("cap:") &&
      oneShot.has(row.authority.slice(4));
    if (approved) {
      // The ask this approval answered is the same action: one entry, an approved ask.
      const i = actions.findLastIndex((a) =>
        a.pid === row.pid && a.action === row.action && a.recorded === "ask" && !a.approved &&
        sameResource(a.resource, resource)
      );
      if (i !== -1) actions.splice(i, 1);
    }
    actions.push({
      seq: row.seq,
      turn: (turnsOf.get(row.pid) ?? 0) + 1,
      pid: row.pid,
      action: row.action,
      resource,
      right,
      recorded: approved ? "ask" : row.decision,
      approved,
      authority: row.authority,
      time: row.time,
    });
  }
  // A process that kept no model turn (the demo plays the model) has no turn numbers.
  const numbered = actions.map((a) => turnsOf.has(a.pid) ? a : { ...a, turn: null });
  return { pid, pids, actions: numbered, capabilities, lifetimes, modeGrants, wall, turns };
}

function sameResource(a: ActionResource, b: ActionResource): boolean {
  if (a.type === "shell" && b.type === "shell") {
    return a.argv.length === b.argv.length && a.argv.every((t, i) => t === b.argv[i]);
  }
  if (a.type === "fs" && b.type === "fs") return a.path === b.path;
  return a.type === b.type && "key" in a && "key" in b && a.key === b.key;
}

/** What a {@link Replayer} needs besides the governance. */
export interface ReplayerOptions {
  /** Every capability the processes held (see {@link RecordedRun.capabilities}). */
  readonly capabilities: readonly Capability[];
  /** The processes that received a mode's default grants (they get the replay mode's). */
  readonly modeGrants: Iterable<string>;
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
    for (const pid of options.modeGrants) {
      this.#modeCaps.set(pid, modeCapabilities(pid, governance.mode));
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
        mode: this.governance.mode,
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
      this.#context,
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
