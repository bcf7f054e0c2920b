// @ts-self-types="./libos_std.d.ts"
// The vetted module tools may import (`jsr:@libos/std@0.1.0`, `jsr:@libos/std`): small pure text
// and number helpers, vendored so an allowlisted import works offline. The sandbox maps those
// specifiers here with --import-map and the harness imports it statically before any tool, so a
// tool's import of it needs no permission. Nothing here reaches the host.

/** The module's version. */
export const version = "0.1.0";

/** The lines of a text, without their line breaks. */
export function lines(text) {
  return String(text).split(/\r\n|\r|\n/);
}

/** The whitespace-separated words of a text. */
export function words(text) {
  return String(text).split(/\s+/).filter((word) => word !== "");
}

/** A text cut to at most `max` characters, with an ellipsis when cut. */
export function truncate(text, max) {
  const value = String(text);
  return value.length <= max ? value : `${value.slice(0, Math.max(0, max - 1))}…`;
}

/** The sum of some numbers. */
export function sum(values) {
  let total = 0;
  for (const value of values) total += Number(value);
  return total;
}

/** How often each distinct value occurs, most frequent first. */
export function counts(values) {
  const map = new Map();
  for (const value of values) map.set(value, (map.get(value) ?? 0) + 1);
  return [...map.entries()].sort((a, b) => b[1] - a[1]);
}
