/**
 * The fixed system directories a bare program name is looked up in (never the caller's `PATH`,
 * which an agent could point at the workspace). The CLI bootstrap grants read on them to runs
 * that start shell commands.
 *
 * @module
 */

/** The fixed system directories a bare program name is looked up in, in order. */
export const SYSTEM_PATH: readonly string[] = Object.freeze([
  "/usr/local/sbin",
  "/usr/local/bin",
  "/usr/sbin",
  "/usr/bin",
  "/sbin",
  "/bin",
]);
