/**
 * Agent-written TypeScript tools ("JIT tools", DESIGN §7): the AST validator (this issue) and,
 * with the sandbox issue, the permission-less Deno sandbox they run in, reaching the world only
 * through checked syscalls.
 *
 * @module
 */
export {
  JIT_RULES,
  JIT_SOURCE_MAX,
  type JitReport,
  type JitRule,
  JitValidator,
  type JitValidatorOptions,
  type JitViolation,
  VETTED_IMPORTS,
} from "./validator.ts";
