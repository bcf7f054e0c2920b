/**
 * A run's governance (issue 21 §4): what `libos agent` ran a process tree under — the mode, the
 * human, the `--yes` shield, the shell policy level, the run denies, the policy files (absolute
 * path and sha-256 of the text read; the text itself kept as an object), the toolchains, the hosts
 * it may reach (`--allow-host`) and the model (its name and endpoint, never a key). A launch records it in its `agent.start` audit
 * record (hash-chained, written before the run does anything, so a killed launcher leaves it);
 * each resume re-applies the last one recorded and records what it applied in `agent.resume`.
 *
 * A resume may narrow it — a stricter mode or shell level, more denies, a policy file of deny
 * rules only (a deny rule can only refuse more: within the rules layer deny beats ask and allow,
 * and a shell decision takes the strictest layer) — or change who answers (`--human`, a person or
 * nobody). Everything else is a widening: a looser mode or level, `--yes`, another toolchain, a
 * policy file with an allow or ask rule (an ask can turn a default deny into a question a person
 * may approve), another host (`--allow-host`). A widening is refused with `governance_widened` unless `--widen` accepts it; it is
 * then shown and audited, and it is the run's governance from then on. A policy file that
 * changed, vanished or cannot be read since refuses the resume (`policy_changed`,
 * `policy_unverified`) until `--policy-from launch` (the text recorded) or `--policy-from current`
 * (the file as it is now) says which holds. A different model is not more authority: it is shown
 * and audited.
 *
 * @module
 */
import { isAbsolute } from "node:path";
import { z } from "zod";
import { canonicalJson, type JsonValue, sha256Hex } from "../runtime/base/canonical_json.ts";
import { LibosError, UsageError } from "../runtime/base/errors.ts";
import { Oid } from "../runtime/memory/memory_object.ts";
import { ModeName } from "../runtime/authority/modes.ts";
import type { PolicyText } from "../runtime/policy/policy_files.ts";
import { parsePolicy, PolicyRules } from "../runtime/policy/policy_rules.ts";
import { ShellPolicyLevel } from "../runtime/policy/shell_policy.ts";
import { ALLOW_HOSTS_MAX } from "./egress_hosts.ts";

/** Who answers a run's requests: a person (`interactive`, `queue`), nobody (`none`) or `--yes`. */
export const HumanChoice = z.enum(["interactive", "queue", "none", "yes"]);
/** Who answers a run's requests. */
export type HumanChoice = z.infer<typeof HumanChoice>;

/** One policy file a run decides by: where it is, the digest of the text read, and its copy. */
export const PolicySource = z.object({
  path: z.string().min(1).max(4096).refine(isAbsolute, "must be an absolute path"),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** The object keeping the text (`--policy-from launch` applies it); null until stored. */
  copy: Oid.nullable(),
}).strict();
/** One policy file a run decides by. */
export type PolicySource = z.infer<typeof PolicySource>;

/** The model a run thinks with: `replay:/abs/file` or `openai:NAME`, and its endpoint (no key). */
export const ModelRef = z.object({
  spec: z.string().min(1).max(4200),
  /** The base URL without credentials, query or fragment; null for OpenAI's own, or none. */
  endpoint: z.string().min(1).max(2048).nullable(),
}).strict();
/** The model a run thinks with. */
export type ModelRef = z.infer<typeof ModelRef>;

/** A run's governance, as recorded in `agent.start` / `agent.resume` (detail `governance`). */
export const RunGovernance = z.object({
  version: z.literal(1),
  mode: ModeName,
  human: HumanChoice,
  /** The `--yes` shield (every command walled, secrets covered); once on, it stays on. */
  shield: z.boolean(),
  shellPolicy: ShellPolicyLevel,
  /** Run denies, in order (decisions name them `run:<n>`). */
  denies: z.array(z.string().min(1).max(1024)).max(100),
  /** Policy files, in the order their rules apply. */
  policies: z.array(PolicySource).max(32),
  toolchains: z.array(z.string().min(1).max(4096).refine(isAbsolute)).max(32),
  /**
   * Hosts the run may reach (`--allow-host`, `allowHosts`), as `host` or `host:port` in the
   * network primitive's form; absent from records written before libos had them (none).
   */
  hosts: z.array(z.string().min(1).max(300)).max(ALLOW_HOSTS_MAX).default([]),
  model: ModelRef,
}).strict();
/** A run's governance. */
export type RunGovernance = z.infer<typeof RunGovernance>;

/** The shell policy level when none is given (the shell primitive's default). */
export const DEFAULT_SHELL_POLICY: ShellPolicyLevel = "allowlist_auto_else_ask";
/** The mode when none is given. */
export const DEFAULT_MODE: ModeName = "workspace-write";
/** How long the recorded governance may be, so that its audit record stays under the cap. */
const RECORD_MAX_CHARS = 12_000;

/** Stable codes of {@link GovernanceError}. */
export type GovernanceErrorCode =
  | "governance_widened"
  | "policy_changed"
  | "policy_unverified"
  | "governance_unreadable";

/** A resume refused over its governance; nothing was recorded and nothing ran. */
export class GovernanceError extends LibosError {
  declare readonly code: GovernanceErrorCode;

  /** Builds a refusal with one of the {@link GovernanceErrorCode} codes. */
  constructor(code: GovernanceErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, "caller", message, options);
  }
}

/** A policy file's text with its digest and copy: what a run's rules are built from. */
export interface AppliedPolicy extends PolicySource {
  readonly text: string;
}

/** What the command line of a launch or resume says (undefined: not given). */
export interface GovernanceFlags {
  readonly mode: ModeName | undefined;
  readonly human: HumanChoice | undefined;
  readonly shellPolicy: ShellPolicyLevel | undefined;
  readonly denies: readonly string[];
  /** The policy files this invocation reads itself (a launch: all of them), in order. */
  readonly policies: readonly PolicyText[];
  /** Toolchain directories (a launch: the user's config and `--toolchain`; a resume: the flags). */
  readonly toolchains: readonly string[];
  /** Hosts (`host` or `host:port`; a launch: the user's config and `--allow-host`; a resume: the flags). */
  readonly hosts: readonly string[];
  readonly model: ModelRef;
}

/** The governance a launch or resume applies, and what it changed. */
export interface GovernancePlan {
  /** Copies of texts not kept yet are null until {@link withCopies}. */
  readonly governance: RunGovernance;
  readonly policies: readonly AppliedPolicy[];
  /**
   * Who answers in this invocation: the governance's human, but `queue` for an interactive run
   * resumed where there is no terminal (a person answers later, as the launch meant).
   */
  readonly human: HumanChoice;
  /** More authority than recorded, accepted with `--widen`. */
  readonly widened: readonly string[];
  /** Less authority than recorded. */
  readonly narrowed: readonly string[];
  /** Other changes, shown and audited: the human, the model, which policy text holds. */
  readonly changes: readonly string[];
  /** False for a resume of a run whose launch recorded no governance. */
  readonly recorded: boolean;
}

/** What a recorded policy file is now. */
export type PolicyNow =
  | { readonly state: "same"; readonly text: string }
  | { readonly state: "changed"; readonly text: string }
  | { readonly state: "vanished" }
  | { readonly state: "unreadable"; readonly reason: string };

/** What a resume needs besides its flags. */
export interface ResumeFacts {
  readonly pid: string;
  /** A recorded policy file as it is now. */
  readonly now: (source: PolicySource) => PolicyNow;
  /** The text a recorded policy file had, from its copy; undefined when none is kept. */
  readonly recordedText: (source: PolicySource) => string | undefined;
  /** Whether a person can answer at a terminal here. */
  readonly terminal: boolean;
  readonly widen: boolean;
  readonly policyFrom: "launch" | "current" | undefined;
}

const short = (digest: string) => digest.slice(0, 12);
const applied = (p: PolicyText, copy: string | null = null): AppliedPolicy => ({
  path: p.path,
  sha256: sha256Hex(p.text),
  copy,
  text: p.text,
});
const rank = <T extends string>(order: readonly T[], value: T) => order.indexOf(value);

/** The rules of a plan's policy files, in order (a rule's reason names its file). */
export function rulesOf(plan: GovernancePlan): PolicyRules {
  return new PolicyRules(plan.policies.flatMap((p) => parsePolicy(p.text, p.path)));
}

/**
 * The governance of a new run (or of a resumed run whose launch recorded none): the flags, with
 * the defaults where they say nothing.
 */
export function launchGovernance(
  flags: GovernanceFlags,
  defaults: { readonly mode: ModeName; readonly terminal: boolean },
): GovernancePlan {
  const human = flags.human ?? (defaults.terminal ? "interactive" : "none");
  const policies = flags.policies.map((p) => applied(p));
  return {
    governance: {
      version: 1,
      mode: flags.mode ?? defaults.mode,
      human,
      shield: human === "yes",
      shellPolicy: flags.shellPolicy ?? DEFAULT_SHELL_POLICY,
      denies: [...new Set(flags.denies)],
      policies: policies.map(({ text: _text, ...source }) => source),
      toolchains: [...new Set(flags.toolchains)],
      hosts: [...new Set(flags.hosts)],
      model: flags.model,
    },
    policies,
    human,
    widened: [],
    narrowed: [],
    changes: [],
    recorded: true,
  };
}

/** The recorded policy files as this resume applies them, with the changes and refusals found. */
function recordedPolicies(stored: RunGovernance, facts: ResumeFacts) {
  const kept: AppliedPolicy[] = [];
  const changes: string[] = [];
  const drifted: string[] = [];
  let changed = false;
  for (const source of stored.policies) {
    const now = facts.now(source);
    if (now.state === "same") {
      kept.push({ ...source, text: now.text });
      continue;
    }
    const what = now.state === "changed"
      ? `changed (sha256 ${short(source.sha256)} at launch, ${short(sha256Hex(now.text))} now)`
      : now.state === "vanished"
      ? "vanished"
      : `cannot be read here (${now.reason}); name it with --policy ${source.path} so libos may read it`;
    changed ||= now.state !== "unreadable";
    if (facts.policyFrom === undefined) {
      drifted.push(`${source.path} ${what}`);
    } else if (facts.policyFrom === "launch") {
      const text = facts.recordedText(source);
      if (text === undefined) {
        throw new GovernanceError(
          "policy_changed",
          `Cannot resume ${facts.pid} with --policy-from launch: the text of ${source.path} recorded at launch is no longer kept; restore the file (sha256 ${
            short(source.sha256)
          }) or use --policy-from current`,
        );
      }
      kept.push({ ...source, text });
      changes.push(`policy ${source.path} ${what}: the text recorded at launch holds`);
    } else if (now.state === "unreadable") {
      throw new GovernanceError(
        "policy_unverified",
        `Cannot resume ${facts.pid} with --policy-from current: the policy file ${source.path} ${what}, or use --policy-from launch`,
      );
    } else if (now.state === "changed") {
      kept.push(applied({ path: source.path, text: now.text }));
      changes.push(`policy ${source.path} ${what}: its current text holds`);
    } else {
      changes.push(`policy ${source.path} vanished: its rules no longer apply`);
    }
  }
  if (drifted.length > 0) {
    throw new GovernanceError(
      changed ? "policy_changed" : "policy_unverified",
      `Cannot resume ${facts.pid}: the policy files it was launched with are not as they were: ${
        drifted.join("; ")
      }. Say which policy holds: --policy-from launch (the text recorded at launch) or --policy-from current (the files as they are now; a vanished file's rules are dropped), or restore the files`,
    );
  }
  return { kept, changes };
}

/**
 * The governance a resume applies: the one recorded, narrowed or (with `--widen`) widened by the
 * flags given.
 * @throws {GovernanceError} `policy_changed` / `policy_unverified` for a recorded policy file
 *   that is not as it was and no `--policy-from`; `governance_widened` for a widening without
 *   `--widen`. Nothing has been recorded then.
 */
export function resumeGovernance(
  stored: RunGovernance,
  flags: GovernanceFlags,
  facts: ResumeFacts,
): GovernancePlan {
  const widened: string[] = [];
  const narrowed: string[] = [];
  const { kept, changes } = recordedPolicies(stored, facts);
  const compare = <T extends string>(what: string, order: readonly T[], from: T, to?: T): T => {
    if (to === undefined || to === from) return from;
    (rank(order, to) > rank(order, from) ? widened : narrowed).push(`${what} ${from} → ${to}`);
    return to;
  };
  const mode = compare("mode", ModeName.options, stored.mode, flags.mode);
  const shellPolicy = compare(
    "shell policy",
    ShellPolicyLevel.options,
    stored.shellPolicy,
    flags.shellPolicy,
  );
  const human = flags.human ?? stored.human;
  let answering = human;
  if (flags.human !== undefined && flags.human !== stored.human) {
    if (flags.human === "yes") {
      widened.push(`--yes: every action approved without a person (launched with ${stored.human})`);
    } else if (stored.human === "yes") narrowed.push(`human yes → ${flags.human}`);
    else changes.push(`human ${stored.human} → ${flags.human}`);
  } else if (flags.human === undefined && human === "interactive" && !facts.terminal) {
    answering = "queue";
    changes.push(
      "no terminal here: requests wait for libos human this time (queue); the run stays interactive",
    );
  }
  const denies = [...stored.denies];
  for (const rule of flags.denies) {
    if (denies.includes(rule)) continue;
    denies.push(rule);
    narrowed.push(`--deny ${rule}`);
  }
  const policies = [...kept];
  const recordedPaths = new Set(stored.policies.map((p) => p.path));
  for (const p of flags.policies) {
    if (recordedPaths.has(p.path) || policies.some((q) => q.path === p.path)) continue;
    const denyOnly = parsePolicy(p.text, p.path).every((r) => r.rule.effect === "deny");
    policies.push(applied(p));
    if (denyOnly) narrowed.push(`policy ${p.path} (deny rules only)`);
    else {
      widened.push(
        `policy ${p.path}: its allow or ask rules can let through what is refused now`,
      );
    }
  }
  const toolchains = [...stored.toolchains];
  for (const dir of flags.toolchains) {
    if (toolchains.includes(dir)) continue;
    toolchains.push(dir);
    widened.push(`toolchain ${dir}: its programs and files visible to every command`);
  }
  const hosts = [...stored.hosts];
  for (const host of flags.hosts) {
    if (hosts.includes(host)) continue;
    hosts.push(host);
    widened.push(`host ${host}: the run may connect to it (--allow-host)`);
  }
  const model = flags.model;
  if (model.spec !== stored.model.spec || model.endpoint !== stored.model.endpoint) {
    const show = (m: ModelRef) => `${m.spec}${m.endpoint === null ? "" : ` at ${m.endpoint}`}`;
    changes.push(`model ${show(stored.model)} → ${show(model)}`);
  }
  if (widened.length > 0 && !facts.widen) {
    throw new GovernanceError(
      "governance_widened",
      `Cannot resume ${facts.pid} with more authority than it was launched with: ${
        widened.join("; ")
      }. Pass --widen to accept this (it is shown and audited, and holds for the run from then on), or resume without these flags to keep the run's governance`,
    );
  }
  return {
    governance: {
      version: 1,
      mode,
      human,
      shield: stored.shield || human === "yes",
      shellPolicy,
      denies,
      policies: policies.map(({ text: _text, ...source }) => source),
      toolchains,
      hosts,
      model,
    },
    policies,
    human: answering,
    widened,
    narrowed,
    changes,
    recorded: true,
  };
}

/** The plan with each policy text's copy (`keep` stores those not kept yet and names the object). */
export function withCopies(
  plan: GovernancePlan,
  keep: (policy: AppliedPolicy) => string,
): GovernancePlan {
  const policies = plan.policies.map((p) => p.copy === null ? { ...p, copy: keep(p) } : p);
  return {
    ...plan,
    policies,
    governance: {
      ...plan.governance,
      policies: policies.map(({ text: _text, ...source }) => source),
    },
  };
}

/**
 * The recorded governance in a launch record's detail: `undefined` when it has none (a run
 * launched before libos recorded it).
 * @throws {GovernanceError} `governance_unreadable` for one libos cannot read.
 */
export function storedGovernance(
  detail: { readonly [key: string]: JsonValue } | null,
  pid: string,
): RunGovernance | undefined {
  if (detail?.governance === undefined) return undefined;
  const parsed = RunGovernance.safeParse(detail.governance);
  if (!parsed.success) {
    throw new GovernanceError(
      "governance_unreadable",
      `Cannot resume ${pid}: the governance its launch recorded cannot be read (${
        parsed.error.issues[0]?.message ?? "invalid"
      }); it was written by another version of libos — start a new run with libos agent --goal`,
    );
  }
  return parsed.data;
}

/** What `agent.start` / `agent.resume` record about governance (the plan, as JSON). */
export function governanceDetail(plan: GovernancePlan): Record<string, JsonValue> {
  return {
    governance: plan.governance as unknown as JsonValue,
    ...(plan.recorded ? {} : { governance_recorded_at_launch: false }),
    ...(plan.widened.length === 0 ? {} : { widened: [...plan.widened] }),
    ...(plan.narrowed.length === 0 ? {} : { narrowed: [...plan.narrowed] }),
    ...(plan.changes.length === 0 ? {} : { changes: [...plan.changes] }),
  };
}

/**
 * Refuses a plan too large to record (checked before anything is written: the audit record
 * carries it whole).
 * @throws {UsageError} naming what to shorten.
 */
export function checkRecordable(plan: GovernancePlan): void {
  const probe = withCopies(plan, () => "obj_000000000000");
  const size = canonicalJson(governanceDetail(probe)).length;
  if (size > RECORD_MAX_CHARS) {
    throw new UsageError(
      `The run's governance is too large to record (${size} characters, at most ${RECORD_MAX_CHARS}): give fewer or shorter --deny rules, --policy files, --toolchain directories or --allow-host hosts`,
    );
  }
}

/** Lines that say what a resume changed (for stderr); none for a launch. */
export function describeChanges(plan: GovernancePlan, pid: string): string[] {
  const lines: string[] = [];
  if (!plan.recorded) {
    lines.push(
      `the launch of ${pid} recorded no governance (it predates libos recording it): this resume applies mode ${plan.governance.mode} and the flags given, and records them for the next`,
    );
  }
  for (const w of plan.widened) lines.push(`widened (--widen): ${w}`);
  for (const n of plan.narrowed) lines.push(`narrowed: ${n}`);
  for (const c of plan.changes) lines.push(`changed: ${c}`);
  return lines;
}
