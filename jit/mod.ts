/**
 * Agent-written TypeScript tools ("JIT tools", DESIGN §7): the AST validator, and the
 * permission-less Deno sandbox they run in, reaching the world only through syscall frames the
 * host answers through a syscall session bound to the calling process; the tool lifecycle
 * (propose, validate, register) and the call itself, recorded in the action ledger.
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
export {
  DEFAULT_SANDBOX_LIMITS,
  DENO_BASE_DATA_MIB,
  JitSandbox,
  type JitSandboxOptions,
  SandboxError,
  type SandboxErrorCode,
  type SandboxLimits,
  type SandboxResult,
  type SandboxTools,
  type SyscallHandler,
  type ToolLog,
} from "./sandbox.ts";
export { HostFrame, PROTOCOL_VERSION, ToolFrame } from "./protocol.ts";
export { callJitTool, type JitCall, type JitCallHost, type JitCallResult } from "./jit_call.ts";
export {
  ExpectedSyscall,
  JitToolLifecycle,
  lifecycleFor,
  ToolCandidate,
  type ToolLifecycleOptions,
  ToolTest,
  type ToolTestReport,
  type ToolValidation,
} from "./tool_lifecycle.ts";
export {
  type DeferredOp,
  LibOSSyscallSession,
  runtimeTargets,
  type SyscallName,
  type SyscallTargets,
} from "./syscall_session.ts";
