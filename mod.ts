/**
 * Agent libOS for Deno: a runtime in which LLM agents run as long-lived, capability-controlled
 * processes. This module is the embedded API; the `libos` command line is its other surface.
 *
 * ```ts
 * import { createRuntime } from "./mod.ts";
 *
 * await using runtime = await createRuntime({ db: ":memory:" });
 * runtime.audit.append({
 *   actor: "operator",
 *   action: "example.run",
 *   resource: "",
 *   decision: "none",
 *   authority: "operator",
 * });
 * console.log(runtime.audit.verify({ head: false }).ok); // true
 * ```
 *
 * @module
 */
export * from "./runtime/mod.ts";
export * from "./jit/mod.ts";
