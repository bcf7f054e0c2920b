/**
 * Policy rules (DESIGN §3, layer 3): JSONC files of allow / ask / deny rules over tool names,
 * argv token prefixes, canonical path globs and URL hosts.
 *
 * ```jsonc
 * {
 *   "version": 1,
 *   "rules": [
 *     { "effect": "deny", "shell": ["env"] },                        // any argv starting so
 *     { "effect": "allow", "shell": ["git", "status"], "exact": true },
 *     { "effect": "ask", "tool": "write_*" },                          // a tool-name glob
 *     { "effect": "allow", "tool": "mcp__github__get_*" },             // MCP tools, by broker name
 *     { "effect": "deny", "path": "secrets/**", "rights": ["read"] },  // a path glob
 *     { "effect": "allow", "host": "*.npmjs.org" }                    // a URL host glob
 *   ]
 * }
 * ```
 *
 * Parsing is strict (`parseStrictJsonc`, over `npm:jsonc-parser`): a size cap, a depth limit,
 * duplicate keys refused, null-prototype objects, then zod; any problem refuses the whole file
 * with its line and column — a policy is never half-applied. Within the layer deny beats ask beats
 * allow; an explicit ask is always honoured (DESIGN §3). Deny and ask match shell argv after
 * normalisation (bare program names, case folded); allow matches exact tokens only (DESIGN §2).
 *
 * @module
 */
import { z } from "zod";
import { type Node, parseTree } from "jsonc-parser";
import { foldArgv, mcpToolName } from "../authority/capability.ts";
import type {
  Action,
  Decision,
  DecisionContext,
  DecisionLayer,
  Subject,
} from "../authority/decide.ts";
import { compileGlob, type PathGlob } from "../base/path_glob.ts";
import { netHostPattern } from "../base/net_host.ts";
import { parseStrictJsonc } from "../base/strict_jsonc.ts";

/** The largest policy file read. */
export const POLICY_MAX_BYTES = 256 * 1024;
/** The deepest nesting a policy file may have. */
const MAX_DEPTH = 16;

const Effect = z.enum(["allow", "ask", "deny"]);
const Glob = z.string().min(1).max(1024);

/** One rule, as written. */
export const PolicyRule = z.object({
  effect: Effect,
  tool: Glob.optional(),
  shell: z.array(z.string().min(1).max(4096)).min(1).max(64).optional(),
  /** For `shell`: the argv must equal the rule, not merely start with it. */
  exact: z.boolean().optional(),
  path: Glob.optional(),
  /** For `path`: the rights it concerns (default all). */
  rights: z.array(z.enum(["read", "write", "delete", "stat"])).min(1).optional(),
  host: Glob.optional(),
  note: z.string().max(500).optional(),
}).strict().refine(
  (r) => [r.tool, r.shell, r.path, r.host].filter((t) => t !== undefined).length === 1,
  "a rule names exactly one of tool, shell, path or host",
).refine((r) => r.exact === undefined || r.shell !== undefined, "exact applies to shell rules")
  .refine((r) => r.rights === undefined || r.path !== undefined, "rights apply to path rules");
/** One rule, as written. */
export type PolicyRule = z.infer<typeof PolicyRule>;

/** A policy file. */
export const PolicyFile = z.object({
  version: z.literal(1),
  rules: z.array(PolicyRule).max(1000),
}).strict();

/** A rule with where it came from, compiled for matching. */
export interface LoadedRule {
  readonly rule: PolicyRule;
  /** `rule:<file>#<n>` (n from 1). */
  readonly reason: string;
  /** The rule as one line of JSON, for `matched_rule`. */
  readonly text: string;
  /** Where it was written: the file and the 1-based line its `{` is on (explanations). */
  readonly at: RuleSource;
  readonly glob: PathGlob | null;
  readonly folded: readonly string[] | null;
}

/**
 * Parses a policy file's text.
 * @throws {ValidationError} naming the file, line and column, for anything wrong; nothing of the
 *   file applies then.
 */
export function parsePolicy(text: string, source: string): LoadedRule[] {
  const parsed = parseStrictJsonc(text, source, PolicyFile, {
    maxBytes: POLICY_MAX_BYTES,
    maxDepth: MAX_DEPTH,
    what: 'a policy is {"version": 1, "rules": [...]}',
  });
  const lines = ruleLines(text, parsed.rules.length);
  return parsed.rules.map((rule, i) => {
    const text = JSON.stringify(rule);
    return {
      rule,
      reason: `rule:${source}#${i + 1}`,
      text,
      at: Object.freeze({ source, line: lines[i] ?? 1, text }),
      glob: rule.tool !== undefined
        ? compileGlob(rule.tool, { segments: false })
        : rule.path !== undefined
        ? compileGlob(rule.path)
        : rule.host !== undefined
        ? compileGlob(netHostPattern(rule.host), { segments: false })
        : null,
      folded: rule.shell ? foldArgv(rule.shell) : null,
    };
  });
}

/** Where a rule came from: its file, line and text (one line of JSON), for explanations. */
export interface RuleSource {
  readonly source: string;
  readonly line: number;
  readonly text: string;
}

/**
 * The 1-based line of each rule's opening brace. Called on text `parseStrictJsonc` accepted, so
 * the tree is there; a rule it cannot place gets line 1 rather than failing a valid policy.
 */
function ruleLines(text: string, count: number): number[] {
  const root = parseTree(text, [], { allowTrailingComma: true, disallowComments: false });
  const rules: Node | undefined = root?.children?.find((p) => p.children?.[0]?.value === "rules")
    ?.children?.[1];
  const offsets = (rules?.children ?? []).slice(0, count).map((n) => n.offset);
  const lines: number[] = [];
  let line = 1;
  let at = 0;
  for (const offset of offsets) {
    for (; at < offset && at < text.length; at++) if (text.charCodeAt(at) === 10) line++;
    lines.push(line);
  }
  return lines;
}

const RANK = { allow: 0, ask: 1, deny: 2 } as const;

/** The rules in force for a run: every file's, in order. */
export class PolicyRules implements DecisionLayer {
  readonly rules: readonly LoadedRule[];
  #sources: Map<string, RuleSource> | undefined;

  /** Holds the rules of the given files, in order. */
  constructor(rules: readonly LoadedRule[]) {
    this.rules = Object.freeze([...rules]);
  }

  /** Where the rule a reason (`rule:<file>#<n>`) names was written, if it is one of these. */
  source(reason: string): RuleSource | undefined {
    if (!reason.startsWith("rule:")) return undefined;
    this.#sources ??= new Map(this.rules.map((r) => [r.reason, r.at]));
    return this.#sources.get(reason);
  }

  /** The rules matching an action, in file order. */
  matching(action: Action): LoadedRule[] {
    const r = action.resource;
    // Folded once per action, not once per rule: the rules compare against the same argv.
    let folded: string[] | undefined;
    const fold = (argv: readonly string[]) => folded ??= foldArgv(argv);
    return this.rules.filter((loaded) => {
      const rule = loaded.rule;
      if (r.type === "shell") {
        if (!rule.shell) return false;
        return rule.effect === "allow"
          ? tokensMatch(rule.shell, r.argv, rule.exact === true)
          : tokensMatch(loaded.folded!, fold(r.argv), rule.exact === true);
      }
      if (r.type === "fs") {
        if (rule.path === undefined) return false;
        if (rule.rights && !rule.rights.includes(action.right as "read")) return false;
        return loaded.glob!.test(r.path);
      }
      if (r.type === "net") return rule.host !== undefined && loaded.glob!.test(r.key);
      if (r.type === "tool") return rule.tool !== undefined && loaded.glob!.test(r.key);
      // An MCP tool is named by its libos tool name: `mcp:github/create-issue` is
      // mcp__github__create_issue.
      if (r.type === "mcp") return rule.tool !== undefined && loaded.glob!.test(mcpToolName(r.key));
      return false;
    });
  }

  /** The strictest matching rule, or undefined: deny beats ask beats allow. */
  strictest(action: Action): LoadedRule | undefined {
    let best: LoadedRule | undefined;
    for (const loaded of this.matching(action)) {
      if (!best || RANK[loaded.rule.effect] > RANK[best.rule.effect]) best = loaded;
    }
    return best;
  }

  /** Layer 3 of `decide()`. */
  decide(_subject: Subject, action: Action, _context: DecisionContext): Decision | undefined {
    const best = this.strictest(action);
    return best ? { effect: best.rule.effect, reason: best.reason, layer: "rule" } : undefined;
  }
}

function tokensMatch(rule: readonly string[], argv: readonly string[], exact: boolean): boolean {
  if (exact ? argv.length !== rule.length : argv.length < rule.length) return false;
  for (let i = 0; i < rule.length; i++) if (rule[i] !== argv[i]) return false;
  return true;
}
