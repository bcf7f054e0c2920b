/**
 * One JIT tool call end to end: a syscall session bound to the calling process, the sandbox
 * running the tool, and the call audited (`jit.call` on `tool:<name>`: allow with the number of
 * syscalls, or deny with the breach or failure code).
 *
 * @module
 */
import type { RuntimeCore } from "../runtime/runtime_core.ts";
import { LibOSSyscallSession, type SyscallTargets } from "../runtime/syscall_session.ts";
import { type JitSandbox, SandboxError, type SandboxResult } from "./sandbox.ts";

/** What a call needs from the runtime. */
export interface JitCallHost {
  readonly core: RuntimeCore;
  readonly targets: SyscallTargets;
  readonly sandbox: JitSandbox;
}

/** One call. */
export interface JitCall {
  readonly pid: string;
  /** The tool's name (audit resource, provenance label of what it writes). */
  readonly tool: string;
  readonly source: string;
  readonly args: unknown;
  readonly signal?: AbortSignal;
}

/**
 * Runs a tool for a process under that process's capabilities.
 * @throws {SandboxError} when the tool fails or breaches a limit (audited either way).
 */
export async function callJitTool(host: JitCallHost, call: JitCall): Promise<SandboxResult> {
  const session = new LibOSSyscallSession(host.core, host.targets, call.pid, call.tool);
  const audit = (decision: "allow" | "deny", authority: string) =>
    host.core.audit.append({
      actor: call.pid,
      pid: call.pid,
      action: "jit.call",
      resource: `tool:${call.tool}`,
      decision,
      authority,
    });
  try {
    const result = await host.sandbox.call(
      call.source,
      call.args,
      (name, args, signal) => session.call(name, args, signal),
      call.signal,
    );
    audit("allow", `syscalls:${session.count}`);
    return result;
  } catch (error) {
    audit("deny", error instanceof SandboxError ? error.code : "sandbox_failed");
    throw error;
  }
}
