/**
 * `decide(subject, action, context)`: the only place a decision is made (DESIGN §3). Layers,
 * first match wins:
 *
 * 1. **hardline** — irreversible destruction, deny in every mode (`policy_layers.ts`: every
 *    command a shell action will run, through any wrapper).
 * 2. **run ceiling** — run-scoped denies (`--deny RULE`), the mode's ceiling, protected paths
 *    (writes and deletes ask) and secret-bearing files (reads and writes ask). A ceiling deny
 *    decides; a ceiling ask caps whatever the later layers say at ask.
 * 3. **rules** — user/host rules, deny > ask > allow inside the layer (`policy_rules.ts`).
 * 4. **capabilities** — the most specific match wins, ties deny > ask > allow.
 * 5. **default** — deny.
 *
 * Every decision carries a stable reason naming its layer and source: `hardline:<rule>`,
 * `run:<n>`, `mode:<name>`, `protected:<glob>`, `rule:<file>#<n>`, `cap:<id>`, `default`.
 *
 * @module
 */
import { type ActionResource, type Effect, isRight, type Right, RIGHTS } from "./capability.ts";
import type { CapabilityMatch } from "./capability_index.ts";
import { ValidationError } from "../base/errors.ts";
import { modeCeiling, type ModeName } from "./modes.ts";
import {
  compileGlob,
  type GlobSet,
  globSet,
  type PathGlob,
  PROTECTED_GLOBS,
  SECRET_GLOBS,
} from "../base/path_glob.ts";
import { netHostPattern } from "../base/net_host.ts";

/** Who acts: a process. */
export interface Subject {
  readonly pid: string;
}

/** What is asked: one right on one concrete resource, with the action's canonical digest. */
export interface Action {
  readonly resource: ActionResource;
  readonly right: Right;
  /** `sha256:…` of the canonical action; digest-bound capabilities match only this. */
  readonly digest?: string;
}

/** The layer a decision came from. */
export type Layer = "hardline" | "run" | "mode" | "protected" | "rule" | "cap" | "default";

/** A decision: what to do, and why. */
export interface Decision {
  readonly effect: Effect;
  /** Stable: `hardline:<rule>`, `run:<n>`, `mode:<name>`, `protected:<glob>`, `rule:<file>#<n>`, `cap:<id>`, `default`. */
  readonly reason: string;
  readonly layer: Layer;
  /** The capability that decided (or that the ceiling capped), when one did. */
  readonly capability?: string;
  /** True when a human's approval of exactly this action (a digest-bound allow) decided. */
  readonly approval?: boolean;
  /**
   * On an ask from a rule or capability: the mode or protected-path ask that also applies, which
   * no capability lifts (so an "allow always" capability would not change the answer).
   */
  readonly ceiling?: string;
}

/** A run-scoped deny: `<type>[.<right>]:<glob>`, e.g. `fs.write:secrets/**`, `net:*`. */
export interface RunDeny {
  readonly source: string;
  readonly type: ActionResource["type"];
  readonly right: string | undefined;
  readonly glob: PathGlob;
}

const RUN_DENY = /^(fs|shell|net|object|namespace|human|image|tool|process)(?:\.([a-z]+))?:(.+)$/;

/**
 * Parses a run-scoped deny such as `fs.write:secrets/**` or `net:*`.
 * @throws {ValidationError} when it does not have that shape.
 */
export function parseRunDeny(source: string): RunDeny {
  const match = RUN_DENY.exec(source);
  if (!match) {
    throw new ValidationError(
      `Run deny ${
        JSON.stringify(source)
      } is not TYPE[.RIGHT]:GLOB (e.g. fs.write:secrets/**, net:*, shell:rm *)`,
    );
  }
  const type = match[1] as RunDeny["type"];
  const right = match[2];
  if (right !== undefined && !isRight(type, right)) {
    throw new ValidationError(
      `Run deny ${JSON.stringify(source)} names right ${
        JSON.stringify(right)
      }, which ${type} does not have (it has ${RIGHTS[type].join(", ")})`,
    );
  }
  const pattern = type === "net" ? netHostPattern(match[3]!) : match[3]!;
  return { source, type, right, glob: compileGlob(pattern, { segments: type === "fs" }) };
}

/** The protected and secret path globs, compiled once per runtime. */
export interface Protection {
  readonly protected: GlobSet;
  readonly secret: GlobSet;
}

/** Compiles the protected and secret globs, plus any extra protected paths (the database). */
export function compileProtection(extraProtected: readonly string[] = []): Protection {
  return {
    protected: globSet([...PROTECTED_GLOBS, ...extraProtected]),
    secret: globSet(SECRET_GLOBS),
  };
}

/** Facts about the run a decision depends on. */
export interface DecisionContext {
  readonly mode: ModeName;
  readonly denies: readonly RunDeny[];
  /** Whether shell commands run inside the OS wall. */
  readonly wall: boolean;
  readonly protection: Protection;
}

/** A layer that may have an opinion (hardline, rules). */
export interface DecisionLayer {
  decide(subject: Subject, action: Action, context: DecisionContext): Decision | undefined;
  /** Where the rule a reason of this layer names was written (the rules layer; explanations). */
  source?(reason: string): { source: string; line: number; text: string } | undefined;
}

/** The capability layer's view: the capability answer for a subject's action. */
export interface CapabilityView {
  match(subject: Subject, action: Action): CapabilityMatch | undefined;
  /** A live allow bound to exactly this action's digest (a human's approval), if any. */
  approval?(subject: Subject, action: Action): CapabilityMatch | undefined;
}

/** The layers `decide()` consults (the runtime passes the hardline floor and the policy rules). */
export interface Layers {
  readonly hardline?: DecisionLayer;
  readonly rules?: DecisionLayer;
  readonly capabilities: CapabilityView;
}

function actionKey(resource: ActionResource): string {
  if (resource.type === "fs") return resource.path;
  if (resource.type === "shell") return resource.argv.join(" ");
  return resource.key;
}

/** Layer 2: the run ceiling. A deny decides; an ask caps; `undefined` passes. */
function ceiling(subject: Subject, action: Action, context: DecisionContext): Decision | undefined {
  const key = actionKey(action.resource);
  for (const [i, deny] of context.denies.entries()) {
    if (
      deny.type === action.resource.type &&
      (deny.right === undefined || deny.right === action.right) && deny.glob.test(key)
    ) {
      return { effect: "deny", reason: `run:${i + 1}`, layer: "run" };
    }
  }
  const mode = modeCeiling(context.mode, action.resource, action.right, {
    pid: subject.pid,
    wall: context.wall,
  });
  if (mode === "deny") return { effect: "deny", reason: `mode:${context.mode}`, layer: "mode" };
  if (action.resource.type === "fs") {
    if (action.right === "write" || action.right === "delete") {
      const glob = context.protection.protected.match(key);
      if (glob) return { effect: "ask", reason: `protected:${glob.source}`, layer: "protected" };
    }
    // A secret-bearing file asks to be read, and to be created or overwritten: a planted
    // `.npmrc`, `.docker/config.json` or `.aws/config` redirects credentials or runs a program.
    if (action.right === "read" || action.right === "write") {
      const glob = context.protection.secret.match(key);
      if (glob) return { effect: "ask", reason: `protected:${glob.source}`, layer: "protected" };
    }
  }
  if (mode === "ask") return { effect: "ask", reason: `mode:${context.mode}`, layer: "mode" };
  return undefined;
}

/** Decides one action. Pure: everything it depends on is in its arguments. */
export function decide(
  subject: Subject,
  action: Action,
  context: DecisionContext,
  layers: Layers,
): Decision {
  const hard = layers.hardline?.decide(subject, action, context);
  if (hard) return hard;
  const cap = ceiling(subject, action, context);
  if (cap?.effect === "deny") return cap;
  let decision = layers.rules?.decide(subject, action, context);
  if (!decision) {
    const match = layers.capabilities.match(subject, action);
    decision = match
      ? {
        effect: match.effect,
        reason: `cap:${match.capability.id}`,
        layer: "cap",
        capability: match.capability.id,
      }
      : { effect: "deny", reason: "default", layer: "default" };
  }
  // An ask — from the ceiling, a rule or a capability — was a question for a human; their
  // approval of exactly this action answers it. A deny stands whatever anybody approved.
  if (decision.effect !== "deny" && (decision.effect === "ask" || cap)) {
    const approved = layers.capabilities.approval?.(subject, action);
    if (approved) {
      return {
        effect: "allow",
        reason: `cap:${approved.capability.id}`,
        layer: "cap",
        capability: approved.capability.id,
        approval: true,
      };
    }
  }
  // A ceiling ask caps an allow; a deny from the later layers stands.
  if (cap && decision.effect === "allow") {
    return {
      ...cap,
      ...(decision.capability === undefined ? {} : { capability: decision.capability }),
    };
  }
  if (cap && decision.effect === "ask") return { ...decision, ceiling: cap.reason };
  return decision;
}
