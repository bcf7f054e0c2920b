/**
 * Built-in model-facing tools: thin typed wrappers over runtime primitives that never touch
 * `Deno.*`, `fetch`, `node:*` or a provider themselves (DESIGN §1, §2). Built by the tool broker
 * and built-in tools issues; nothing is exported yet.
 *
 * @module
 */
export {};
