/**
 * The context policy and the materializer's data shapes: how a process's view becomes model
 * context (DESIGN §6; images embed a policy later), what a materialization returns, and the
 * state it carries from one turn to the next.
 *
 * @module
 */
import { z } from "zod";
import type { JsonValue } from "../base/canonical_json.ts";
import { type ObjectInfo, ProvenanceSource } from "./memory_object.ts";

/** Characters per token assumed until the provider reports usage. */
export const CHARS_PER_TOKEN = 4;
/** Calibrated tokens-per-character ratios are clamped to this range. */
export const TOKENS_PER_CHAR_RANGE: readonly [number, number] = Object.freeze([1 / 32, 4]);

/** An ordering key of {@link ContextPolicy.order}. */
export const OrderKey = z.enum(["type", "provenance", "recent"]);
/** An ordering key. */
export type OrderKey = z.infer<typeof OrderKey>;

const unique = (keys: readonly string[]) => new Set(keys).size === keys.length;

/**
 * How a view becomes context. Pinned objects always come first (the prefix); every other
 * priority is configured here. The same order decides, when space runs out, which objects stay in
 * full (the first ones) and which become references or are left out (the last ones).
 */
export const ContextPolicy = z.object({
  /** The whole context's budget in estimated tokens. */
  budgetTokens: z.number().int().min(256).max(2_000_000).default(32_000),
  /**
   * One object's inline cap in estimated tokens; a larger object is shown as a reference.
   * Default: an eighth of `budgetTokens`.
   */
  perObjectMaxTokens: z.number().int().min(32).max(2_000_000).optional(),
  /** Characters of content a reference line previews (0: none). */
  summaryChars: z.number().int().min(0).max(2_000).default(160),
  /**
   * Ordering keys applied in sequence; ties always fall to recency (`updatedAt`, newest first),
   * then the oid. `type`: by `typePriority`; `provenance`: by `provenanceRank`; `recent`: newest
   * first.
   */
  order: z.array(OrderKey).max(3).refine(unique, "must not repeat a key").readonly()
    .default(["recent"]),
  /** Types in priority order for the `type` key; unlisted types come after, as equals. */
  typePriority: z.array(z.string().min(1).max(64)).max(64).refine(unique, "must not repeat a type")
    .readonly().default([]),
  /** Provenance sources in priority order for the `provenance` key; unlisted ones come last. */
  provenanceRank: z.array(ProvenanceSource).refine(unique, "must not repeat a source").readonly()
    .default(["user", "tool", "file", "model", "web"]),
  /**
   * Segments written in the last N turns (N = 1: this turn's) are kept before older ones when
   * space runs out, so new content is seen in full at least once when it fits at all.
   */
  keepRecentTurns: z.number().int().min(0).max(1_000).default(1),
  /**
   * The low-water mark of a compaction, as a fraction of the body's room: compacting below the
   * limit leaves room to append for several turns before the next rewrite (prompt caching).
   */
  compactionTarget: z.number().min(0.1).max(1).default(0.6),
  /**
   * The share of that low-water mark (and of the room, for recent segments) kept for reference lines to older objects: the newest (by
   * priority) keep their full content in the rest, the next ones keep a reference line, and only
   * the last are left out. 0 spends it all on full content.
   */
  referenceShare: z.number().min(0).max(1).default(0.25),
}).strict().refine(
  (p) => p.perObjectMaxTokens === undefined || p.perObjectMaxTokens <= p.budgetTokens,
  { message: "must not exceed budgetTokens", path: ["perObjectMaxTokens"] },
).transform((p) => ({
  ...p,
  perObjectMaxTokens: p.perObjectMaxTokens ?? Math.floor(p.budgetTokens / 8),
}));
/** A parsed context policy. */
export type ContextPolicy = z.output<typeof ContextPolicy>;
/** A context policy as written: every field optional. */
export type ContextPolicyInput = z.input<typeof ContextPolicy>;

/** The policy every field of which has its default value. */
export const DEFAULT_CONTEXT_POLICY: ContextPolicy = Object.freeze({
  budgetTokens: 32_000,
  perObjectMaxTokens: 4_000,
  summaryChars: 160,
  order: Object.freeze(["recent"] as const),
  typePriority: Object.freeze([]),
  provenanceRank: Object.freeze(["user", "tool", "file", "model", "web"] as const),
  keepRecentTurns: 1,
  compactionTarget: 0.6,
  referenceShare: 0.25,
});

/** The provider's count for the last prompt, which calibrates the estimate. */
export const ProviderUsage = z.object({
  /** Tokens the provider counted in the last prompt. */
  promptTokens: z.number().int().min(0),
  /** Characters of that whole prompt; default: the previous context text's length. */
  promptChars: z.number().int().min(1).optional(),
}).strict();
/** The provider's count for the last prompt. */
export type ProviderUsage = z.infer<typeof ProviderUsage>;

/**
 * What a segment shows: `header` (the format line), `full` (an object's content), `reference`
 * (a one-line summary), `handle` (a reference to an object whose payload was not loaded), or
 * `omitted` (the note that older objects are left out).
 */
export const SegmentKind = z.enum(["header", "full", "reference", "handle", "omitted"]);
/** What a segment shows. */
export type SegmentKind = z.infer<typeof SegmentKind>;

/** One piece of context text, with what it shows. */
export const Segment = z.object({
  kind: SegmentKind,
  /** The object shown, or null for the header and the note. */
  oid: z.string().max(64).nullable(),
  /** The object version shown. */
  version: z.number().int().min(1).nullable(),
  /** Identity of what was shown: version, content sha256 and name. */
  fingerprint: z.string().max(1024).nullable(),
  /** The turn this object version was first shown. */
  turn: z.number().int().min(1),
  /** The rendered text, ending with a newline. */
  text: z.string(),
}).strict().readonly();
/** One piece of context text. */
export type Segment = z.infer<typeof Segment>;

/** What one turn leaves for the next: JSON, opaque to callers. */
export const MaterializerState = z.object({
  format: z.literal(1),
  turn: z.number().int().min(1),
  tokensPerChar: z.number().min(TOKENS_PER_CHAR_RANGE[0]).max(TOKENS_PER_CHAR_RANGE[1]),
  prefix: z.array(Segment).readonly(),
  body: z.array(Segment).readonly(),
  /** Objects left out, by the fingerprint they had; they come back when they change. */
  omitted: z.array(
    z.object({ oid: z.string().max(64), fingerprint: z.string().max(1024) }).strict().readonly(),
  ).readonly(),
}).strict().readonly();
/** What one turn leaves for the next. */
export type MaterializerState = z.infer<typeof MaterializerState>;

/** One object of a view. */
export interface ViewObject {
  readonly info: ObjectInfo;
  /** The payload, or undefined when only the handle is known (or it is `volatile_lost`). */
  readonly payload?: JsonValue | undefined;
  /** Pinned objects form the stable prefix. */
  readonly pinned?: boolean | undefined;
}

/** The objects a process may read, as the object memory hands them over. */
export interface View {
  readonly objects: readonly ViewObject[];
}

/** Options of {@link materialize}. */
export interface MaterializeOptions {
  /** The policy (validated); default {@link DEFAULT_CONTEXT_POLICY}. */
  readonly policy?: ContextPolicyInput | undefined;
  /** The previous turn's `state` (validated), or nothing on the first turn. */
  readonly previous?: MaterializerState | undefined;
  /** The provider's usage for the previous prompt. */
  readonly usage?: ProviderUsage | undefined;
}

/** A turn's context. */
export interface MaterializedContext {
  /** The context text: the prefix's segments, then the body's. */
  readonly text: string;
  /** The header and the pinned objects. */
  readonly prefix: readonly Segment[];
  /** Everything after the prefix, in order. */
  readonly body: readonly Segment[];
  /** The body segments written this turn (appended, unless `compacted`). */
  readonly deltas: readonly Segment[];
  /** Objects shown only by a reference line, sorted. */
  readonly references: readonly string[];
  /** Objects of the view not shown at all, sorted. */
  readonly omitted: readonly string[];
  readonly tokens: {
    /** `ceil(text.length × tokensPerChar)`; never above `budget`. */
    readonly estimated: number;
    readonly budget: number;
    readonly tokensPerChar: number;
  };
  /** Length of the previous text that starts this one (what a prompt cache can reuse). */
  readonly reusedChars: number;
  /** Whether this turn rewrote the body to fit the budget. */
  readonly compacted: boolean;
  /**
   * Whether the text (and so `state`) holds content of a volatile object: such a state must stay
   * off disk, like the object's payload.
   */
  readonly holdsVolatile: boolean;
  /** Pass as `previous` next turn; JSON-serialisable. */
  readonly state: MaterializerState;
}
