/**
 * Redaction (DESIGN §2): known secret values — the model key, the runtime's own secret variables —
 * never reach the model, the stored tool results or the logs. Every string in a JSON value (keys
 * included) has each secret replaced with `[redacted]`; secrets shorter than 4 characters are
 * ignored (they would redact ordinary text).
 *
 * Hand-written: a substring replacement over a JSON value, a few lines no library would shorten.
 *
 * @module
 */
import type { JsonValue } from "./canonical_json.ts";

/** What replaces a secret. */
export const REDACTED = "[redacted]";

/** Removes known secrets from JSON values. */
export interface Redactor {
  /** The value with every secret replaced (the same value when there is nothing to hide). */
  json(value: JsonValue): JsonValue;
  /** The text with every secret replaced. */
  text(value: string): string;
}

/** A redactor for these secret values (longest first, so a secret inside another goes too). */
export function redactor(secrets: readonly string[]): Redactor {
  const known = [...new Set(secrets.filter((s) => typeof s === "string" && s.length >= 4))]
    .sort((a, b) => b.length - a.length);
  const text = (value: string): string => {
    let out = value;
    for (const secret of known) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    }
    return out;
  };
  const json = (value: JsonValue): JsonValue => {
    if (typeof value === "string") return text(value);
    if (Array.isArray(value)) return value.map(json);
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [text(k), json(v)]));
    }
    return value;
  };
  return known.length === 0 ? { json: (v) => v, text: (v) => v } : { json, text };
}
