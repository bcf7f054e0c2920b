/**
 * Identifier generation as an injected dependency. Real runs use random ids; tests and
 * `--seed N` runs use a seeded source so ids repeat exactly.
 *
 * @module
 */

/** Makes identifiers such as `pid_3f2a9c01b7e4`. */
export interface IdSource {
  /** A fresh id with the given prefix (letters, digits and `_` only). */
  next(prefix: string): string;
}

const PREFIX = /^[a-z][a-z0-9_]{0,15}$/;

function checkPrefix(prefix: string): void {
  if (!PREFIX.test(prefix)) {
    throw new TypeError(
      `Id prefix ${
        JSON.stringify(prefix)
      } is invalid: use 1-16 lowercase letters, digits or "_", starting with a letter`,
    );
  }
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Ids with 48 random bits from the platform's cryptographic generator. */
export function randomIds(): IdSource {
  return {
    next(prefix) {
      checkPrefix(prefix);
      return `${prefix}_${hex(crypto.getRandomValues(new Uint8Array(6)))}`;
    },
  };
}

/** Deterministic ids from a 32-bit seed (mulberry32); the same seed gives the same sequence. */
export function seededIds(seed: number): IdSource {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new RangeError(`Seed must be an integer from 0 to 4294967295, got ${seed}`);
  }
  let state = seed >>> 0;
  const word = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  return {
    next(prefix) {
      checkPrefix(prefix);
      const hi = word().toString(16).padStart(8, "0");
      const lo = (word() & 0xffff).toString(16).padStart(4, "0");
      return `${prefix}_${hi}${lo}`;
    },
  };
}
