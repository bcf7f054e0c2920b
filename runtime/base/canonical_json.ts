/**
 * Canonical JSON and sha256 digests. The audit chain and approval digests hash canonical JSON, so
 * the same value always gives the same bytes: object keys sorted by code unit, no whitespace,
 * no `undefined`, no non-finite numbers, `-0` written as `0`.
 *
 * Hand-written on purpose (about 80 lines over `node:crypto`'s sha256): the bytes are the audit
 * chain's and the approvals' identity, so they must not change with a dependency's upgrade, and
 * a value `JSON.stringify` would silently change (`undefined` dropped, `NaN` as `null`, a hole,
 * a class instance) is refused here rather than hashed.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** A JSON value. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | readonly JsonValue[]
  | { readonly [key: string]: JsonValue };

const MAX_DEPTH = 64;

function write(value: unknown, depth: number, path: string): string {
  if (depth > MAX_DEPTH) {
    throw new TypeError(`Cannot canonicalize ${path}: nested deeper than ${MAX_DEPTH}`);
  }
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) {
        throw new TypeError(`Cannot canonicalize ${path}: ${value} is not a finite number`);
      }
      return Object.is(value, -0) ? "0" : JSON.stringify(value);
    case "object": {
      if (Array.isArray(value)) {
        // An index loop, not map(): map() skips holes, which would print as invalid JSON.
        const items: string[] = [];
        for (let i = 0; i < value.length; i++) {
          if (!(i in value) || value[i] === undefined) {
            throw new TypeError(
              `Cannot canonicalize ${path}[${i}]: a hole or undefined is not JSON`,
            );
          }
          items.push(write(value[i], depth + 1, `${path}[${i}]`));
        }
        return `[${items.join(",")}]`;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        throw new TypeError(`Cannot canonicalize ${path}: only plain objects and arrays are JSON`);
      }
      const entries = Object.keys(value).sort().map((key) => {
        const v = (value as Record<string, unknown>)[key];
        if (v === undefined) {
          throw new TypeError(`Cannot canonicalize ${path}.${key}: undefined is not JSON`);
        }
        return `${JSON.stringify(key)}:${write(v, depth + 1, `${path}.${key}`)}`;
      });
      return `{${entries.join(",")}}`;
    }
    default:
      throw new TypeError(`Cannot canonicalize ${path}: a ${typeof value} is not JSON`);
  }
}

/** The canonical JSON text of `value`; throws `TypeError` for anything that is not plain JSON. */
export function canonicalJson(value: JsonValue): string {
  return write(value, 0, "value");
}

/** Lowercase hex sha256 of a string (UTF-8) or bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** The `sha256:<hex>` digest of a JSON value's canonical form. */
export function digestOf(value: JsonValue): string {
  return `sha256:${sha256Hex(canonicalJson(value))}`;
}
