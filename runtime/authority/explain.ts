/**
 * Decision explanations: which layer of `decide()` (or of the shell policy) decided, and from
 * what — the rule's file, line and text, the run deny, the mode, the protected glob, or the
 * capability and the chain of grants it came from.
 *
 * What is kept at decision time is only what the database cannot give back later (a policy
 * file may be edited after the run): a rule's source, line and text and a run deny's text, as the
 * record's `detail.explain` ({@link recordedExplanation}). Everything else is derived when asked:
 * the layer from the record's `authority` (its grammar is stable, see `decide.ts`), a capability's
 * chain from the capability rows and their grant records. Records made before explanations
 * existed are answered the same way, from `authority` alone.
 *
 * @module
 */
import { z } from "zod";
import type { JsonValue } from "../base/canonical_json.ts";
import { escapePreview } from "../base/escape_preview.ts";
import { type Capability, resourceString } from "./capability.ts";

/** The longest rule text kept with a record (a longer one is cut, marked by `…`). */
const RULE_TEXT_MAX = 1000;
/** The longest file name kept with a record. */
const SOURCE_MAX = 1000;
/** The longest nested command kept with a shell run's record. */
const COMMAND_MAX = 500;

/** What a decision record keeps at decision time, as its `detail.explain`. */
export const RecordedExplanation = z.object({
  rule: z.object({
    source: z.string().max(SOURCE_MAX + 1),
    line: z.number().int().positive(),
    text: z.string().max(RULE_TEXT_MAX + 1),
  }).strict().optional(),
  /** The run deny (`--deny`) a `run:<n>` names, as written. */
  deny: z.string().max(RULE_TEXT_MAX + 1).optional(),
  /** For a shell run: the nested command that decided, when it is not the argv itself. */
  command: z.string().max(COMMAND_MAX + 1).optional(),
}).strict();
/** What a decision record keeps at decision time. */
export type RecordedExplanation = z.infer<typeof RecordedExplanation>;

/** The recorded explanation as JSON (what {@link recordedExplanation} returns to store). */
export type ExplainJson = {
  rule?: { source: string; line: number; text: string };
  deny?: string;
  command?: string;
};

/** Where the recorder finds what a reason names (the run's rules and run denies). */
export interface ExplanationSources {
  /** The rule a `rule:<file>#<n>` reason names. */
  rule(reason: string): { source: string; line: number; text: string } | undefined;
  /** The run denies' texts, in order (`run:<n>` is 1-based). */
  readonly denies: readonly { readonly source: string }[];
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/**
 * The `detail.explain` to record with a decision whose authority is `reason`, or undefined when
 * the authority alone (and the database) explains it — every capability, mode, protected-path,
 * hardline and default decision, so the hot path of allows adds nothing to its record.
 */
export function recordedExplanation(
  reason: string,
  sources: ExplanationSources,
): { explain: ExplainJson } | undefined {
  if (reason.startsWith("rule:")) {
    const rule = sources.rule(reason);
    if (!rule) return undefined;
    return {
      explain: {
        rule: {
          source: cut(rule.source, SOURCE_MAX),
          line: rule.line,
          text: cut(rule.text, RULE_TEXT_MAX),
        },
      },
    };
  }
  if (reason.startsWith("run:")) {
    const deny = sources.denies[Number(reason.slice(4)) - 1];
    return deny ? { explain: { deny: cut(deny.source, RULE_TEXT_MAX) } } : undefined;
  }
  return undefined;
}

/** What of a shell decision {@link shellExplanation} reads (`decideShell()`'s answer). */
export interface ShellDecided {
  readonly decision: string;
  readonly reason: string;
  readonly commands: readonly {
    readonly argv: readonly string[];
    readonly decision: string;
    readonly reason: string;
  }[];
}

/**
 * {@link recordedExplanation} for a shell run decided by `decided`: with the nested command
 * that decided (`sh -c "ls && rm -rf /"` → `rm -rf /`) when it is not the run's argv itself.
 */
export function shellExplanation(
  argv: readonly string[],
  decided: ShellDecided,
  recorded: { explain: ExplainJson } | undefined,
): { explain: ExplainJson } | undefined {
  const command = decided.commands.find((c) =>
    c.decision === decided.decision && c.reason === decided.reason
  );
  if (
    !command ||
    (command.argv.length === argv.length && command.argv.every((t, i) => t === argv[i]))
  ) return recorded;
  return { explain: { ...recorded?.explain, command: cut(command.argv.join(" "), COMMAND_MAX) } };
}

/** The kinds of answer an explanation names. */
export type ExplainLayer =
  | "hardline"
  | "run"
  | "mode"
  | "protected"
  | "rule"
  | "capability"
  | "default"
  | "shell-policy"
  | "read-only"
  | "human"
  | "runtime";

/** One link of a capability's chain: who granted it, when, and what it was attenuated from. */
export interface CapabilityLink {
  readonly id: string;
  readonly subject: string;
  /** `operator`, `mode:<name>` (the mode's default grants at spawn), `lineage`, `lineage:<parent>` (a delegation), `human:<request>`, `user-config:<id>`. */
  readonly issuer: string;
  /** The actor of its grant record (`human:terminal`, `operator`, `runtime`, a pid), when found. */
  readonly grantedBy: string | null;
  readonly at: number;
  readonly effect: string;
  readonly resource: string;
  readonly rights: readonly string[];
  readonly derivedFrom: string | null;
  readonly revokedAt: number | null;
}

/** A decision's explanation. */
export interface Explanation {
  readonly layer: ExplainLayer;
  /** The record's authority, as recorded. */
  readonly authority: string;
  /**
   * For the shell policy, its kind (`shell-policy`, `wrapper`, `inline_code`, `workspace_code`,
   * `opaque`, `git_config`, `open_ended`); for the runtime's own rules, the rule's name.
   */
  readonly kind: string;
  /** What the authority names after its layer: the hardline rule, mode, glob, level, label. */
  readonly detail: string;
  /** A rule: its file and number; line and text when recorded (null for older records). */
  readonly rule?: {
    readonly source: string;
    readonly index: number | null;
    readonly line: number | null;
    readonly text: string | null;
  };
  /** A run deny: its number and, when recorded, its text. */
  readonly deny?: { readonly index: number; readonly text: string | null };
  /** A capability: its id and, when looked up, its chain (the deciding capability first). */
  readonly capability?: { readonly id: string; readonly chain: readonly CapabilityLink[] };
  /** A shell run: the nested command that decided, when it is not the argv itself. */
  readonly command?: string;
}

const SHELL_KINDS = new Set([
  "wrapper",
  "inline_code",
  "workspace_code",
  "opaque",
  "git_config",
  "open_ended",
]);

/** What of a record an explanation is derived from. */
export interface ExplainableRecord {
  readonly authority: string;
  readonly detail?: { readonly [key: string]: JsonValue } | null;
}

/**
 * Explains a recorded decision from its authority and its `detail.explain` (when recorded);
 * `chain` is the capability chain when the caller looked it up (`libos why`).
 */
export function explainRecord(
  record: ExplainableRecord,
  chain: readonly CapabilityLink[] = [],
): Explanation {
  const authority = record.authority;
  const parsed = RecordedExplanation.safeParse(record.detail?.explain ?? {});
  const recorded = parsed.success ? parsed.data : {};
  const colon = authority.indexOf(":");
  const head = colon < 0 ? authority : authority.slice(0, colon);
  const rest = colon < 0 ? "" : authority.slice(colon + 1);
  const base = {
    authority,
    kind: head,
    detail: rest,
    ...(recorded.command === undefined ? {} : { command: recorded.command }),
  };
  switch (head) {
    case "hardline":
    case "mode":
    case "protected":
    case "shell-policy":
    case "read-only":
      return { ...base, layer: head };
    case "default":
      return { ...base, layer: "default" };
    case "human":
      return { ...base, layer: "human" };
    case "run": {
      const index = Number(rest);
      return {
        ...base,
        layer: "run",
        deny: { index: Number.isInteger(index) ? index : 0, text: recorded.deny ?? null },
      };
    }
    case "rule": {
      const hash = rest.lastIndexOf("#");
      const index = hash < 0 ? NaN : Number(rest.slice(hash + 1));
      const file = hash < 0 ? rest : rest.slice(0, hash);
      return {
        ...base,
        layer: "rule",
        rule: {
          source: recorded.rule?.source ?? file,
          index: Number.isInteger(index) ? index : null,
          line: recorded.rule?.line ?? null,
          text: recorded.rule?.text ?? null,
        },
      };
    }
    case "cap":
      return { ...base, layer: "capability", capability: { id: rest, chain } };
    default:
      return { ...base, layer: SHELL_KINDS.has(head) ? "shell-policy" : "runtime" };
  }
}

function esc(text: string, max = 300): string {
  return escapePreview(text, { maxChars: max });
}

/** Who granted a capability, in words: `human:terminal via hreq_…`, `the mode's defaults (edit)`. */
export function grantedByLine(link: CapabilityLink): string {
  const issuer = link.issuer;
  if (issuer.startsWith("human:")) {
    const request = issuer.slice("human:".length).split(":")[0]!;
    return `${esc(link.grantedBy ?? "a human")} via ${esc(request)}`;
  }
  if (issuer.startsWith("mode:")) {
    return `the ${esc(issuer.slice(5))} mode's default grants at spawn`;
  }
  if (issuer.startsWith("user-config:")) {
    return `a remembered grant (user-config ${esc(issuer.slice("user-config:".length))})`;
  }
  if (issuer === "lineage") return "lineage (its own process)";
  if (issuer === "operator") return "the operator";
  // A parent's delegation at fork or spawn: `lineage:<parent pid>`.
  if (issuer.startsWith("lineage:")) return `delegation by ${esc(issuer.slice(8))}`;
  if (link.derivedFrom !== null) return `delegation by ${esc(issuer)}`;
  return esc(issuer);
}

/**
 * One short escaped line explaining a decision, for cards, transcripts and `audit query
 * --explain`: `rule ~/.config/libos/policy.jsonc:7 {"effect":"ask","path":".github/**"}`,
 * `capability cap_x (granted by human:terminal via hreq_y, from cap_z)`, `mode read-only`.
 */
export function explainLine(explained: Explanation | ExplainableRecord): string {
  const e = "layer" in explained ? explained : explainRecord(explained);
  const line = layerLine(e);
  return e.command === undefined ? line : `${line} (in ${esc(e.command, 200)})`;
}

function layerLine(e: Explanation): string {
  switch (e.layer) {
    case "hardline":
      return `hardline ${esc(e.detail)}`;
    case "run":
      return `run deny #${e.deny?.index ?? "?"}${
        e.deny?.text == null ? "" : ` ${esc(e.deny.text, 200)}`
      }`;
    case "mode":
      return `mode ${esc(e.detail)}`;
    case "protected":
      return `protected path ${esc(e.detail)}`;
    case "rule": {
      const r = e.rule!;
      const where = r.line === null
        ? `${esc(r.source, 200)} #${r.index ?? "?"}`
        : `${esc(r.source, 200)}:${r.line}`;
      return `rule ${where}${r.text === null ? "" : ` ${esc(r.text, 200)}`}`;
    }
    case "capability": {
      const c = e.capability!;
      const first = c.chain[0];
      if (!first) return `capability ${esc(c.id)}`;
      const from = first.derivedFrom === null ? "" : `, from ${esc(first.derivedFrom)}`;
      return `capability ${esc(c.id)} (granted by ${grantedByLine(first)}${from})`;
    }
    case "default":
      return "default deny (no rule or capability allows it)";
    case "read-only":
      return `read-only command ${esc(e.detail)}`;
    case "shell-policy":
      return e.kind === "shell-policy"
        ? `shell policy ${esc(e.detail)}`
        : `shell policy: ${esc(e.kind)} ${esc(e.detail.trim())}`;
    case "human":
      return `a human's answer (${esc(e.authority)})`;
    case "runtime":
      return `runtime ${esc(e.authority)}`;
  }
}

/** Where {@link capabilityChain} looks capabilities and their grant records up. */
export interface ChainLookups {
  /** The stored capability, or undefined when there is none. */
  capability(id: string): Capability | undefined;
  /** The actor of the capability's `capability.grant` record, or null when not found. */
  grantedBy(id: string): string | null;
}

/** The longest chain followed (a delegation tree is never this deep; a cycle stops at once). */
const CHAIN_MAX = 32;

/**
 * A capability and the chain of parents it was attenuated from (`derivedFrom`), the deciding
 * capability first, each with who issued it, who granted it and when. A capability no longer
 * stored ends the chain.
 */
export function capabilityChain(id: string, lookups: ChainLookups): CapabilityLink[] {
  const chain: CapabilityLink[] = [];
  const seen = new Set<string>();
  let next: string | null = id;
  while (next !== null && !seen.has(next) && chain.length < CHAIN_MAX) {
    seen.add(next);
    const cap = lookups.capability(next);
    if (!cap) break;
    chain.push({
      id: cap.id,
      subject: cap.subject,
      issuer: cap.issuer,
      grantedBy: lookups.grantedBy(cap.id),
      at: cap.createdAt,
      effect: cap.effect,
      resource: resourceString(cap.resource),
      rights: cap.rights,
      derivedFrom: cap.derivedFrom,
      revokedAt: cap.revokedAt,
    });
    next = cap.derivedFrom;
  }
  return chain;
}
