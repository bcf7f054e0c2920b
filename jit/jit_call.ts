/**
 * One JIT tool call end to end: a syscall session bound to the calling process, the sandbox
 * running the tool, and the call recorded in the action ledger (`jit.call`: intent committed
 * before the sandbox starts, outcome after) and audited (`jit.call` on `tool:<name>`: allow with
 * the number of syscalls, or deny with the breach or failure code).
 *
 * Each syscall is charged to the process's tool-call budget as the built-in tool it mirrors would
 * be; the syscall that finds the budget exhausted ends the whole call with that
 * `BudgetExhaustedError` (the process has failed). Time the process waits on its human is not
 * host time spent serving the tool (the sandbox's `maxServingMs`).
 *
 * Through the ledger, a call cut off by a restart is never lost: the next runtime finds it
 * `executing` and reports `interrupted_by_restart` to the process (DESIGN §6). An exit or exec
 * the tool asked for is applied after its result frame — and only when the call succeeded.
 *
 * @module
 */
import type { ActionLedger } from "../runtime/process/action_ledger.ts";
import { digestOf, type JsonValue, sha256Hex } from "../runtime/base/canonical_json.ts";
import { BudgetExhaustedError, errorInfo, LibosError, QuantumEnd } from "../runtime/base/errors.ts";
import type { RuntimeCore } from "../runtime/audit/runtime_core.ts";
import { type DeferredOp, LibOSSyscallSession, type SyscallTargets } from "./syscall_session.ts";
import type { JitSandbox, SandboxResult } from "./sandbox.ts";

/** What a call needs from the runtime. */
export interface JitCallHost {
  readonly core: RuntimeCore;
  readonly targets: SyscallTargets;
  readonly sandbox: JitSandbox;
  readonly ledger: Pick<ActionLedger, "begin" | "finish">;
}

/** One call. */
export interface JitCall {
  readonly pid: string;
  /** The tool's name (audit resource, provenance label of what it writes). */
  readonly tool: string;
  /** The tool's TypeScript: what identifies the call in the ledger. */
  readonly source: string;
  /** The same source transpiled to JavaScript, when the caller has it: what then runs. */
  readonly compiled?: string;
  readonly args: unknown;
  readonly signal?: AbortSignal;
  /**
   * The call runs inside its process's quantum (a model called the tool through the broker): an
   * exit the tool asked for then ends the quantum through the scheduler — a {@link QuantumEnd},
   * exactly as the built-in `process_exit` does — instead of being applied here.
   */
  readonly inQuantum?: boolean;
}

/** What a call produced, and the exit or exec it applied after its result frame. */
export interface JitCallResult extends SandboxResult {
  readonly applied: DeferredOp | null;
}

/** The digest of a call's arguments (anything that is not JSON is refused by the sandbox later). */
function argsDigest(args: unknown): string {
  try {
    return digestOf(args as JsonValue);
  } catch {
    return sha256Hex(String(args));
  }
}

/**
 * Runs a tool for a process under that process's capabilities.
 * @throws {SandboxError} when the tool fails or breaches a limit; {@link BudgetExhaustedError}
 *   when its syscalls exhaust the process's tool calls; whatever the process manager refuses
 *   about a deferred exit or exec (audited and recorded either way).
 */
export async function callJitTool(host: JitCallHost, call: JitCall): Promise<JitCallResult> {
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
  // The intent is committed before the sandbox starts: a restart finds it.
  const action = host.ledger.begin(call.pid, {
    kind: "jit.call",
    request: { tool: call.tool, source: sha256Hex(call.source), args: argsDigest(call.args) },
  });
  const failed = (error: unknown, code: string) => {
    host.ledger.finish(action.id, { ok: false, error: errorInfo(error) });
    audit("deny", code);
  };
  let result: SandboxResult;
  try {
    result = await host.sandbox.call(
      call.compiled ?? call.source,
      call.args,
      (name, args, signal) => session.call(name, args, signal),
      call.signal,
      {
        ...(call.compiled === undefined ? {} : { language: "javascript" }),
        waitingOnHuman: () => session.waitingOnHuman(),
        endsCall: (error) => error instanceof BudgetExhaustedError,
      },
    );
  } catch (error) {
    failed(error, error instanceof LibosError ? error.code : "sandbox_failed");
    throw error;
  }
  let applied: DeferredOp | undefined;
  const deferred = session.deferred;
  if (call.inQuantum && deferred?.kind === "exit") {
    host.ledger.finish(action.id, {
      ok: true,
      value: { syscalls: session.count, applied: "exit" },
    });
    audit("allow", `syscalls:${session.count}`);
    throw new QuantumEnd(`Tool ${call.tool} ended its process`, {
      type: "exit",
      ...(deferred.result === undefined ? {} : { result: deferred.result }),
      ...(deferred.message === undefined ? {} : { message: deferred.message }),
    });
  }
  try {
    applied = session.applyDeferred();
  } catch (error) {
    failed(error, error instanceof LibosError ? error.code : "failed");
    throw error;
  }
  host.ledger.finish(action.id, {
    ok: true,
    value: { syscalls: session.count, applied: applied?.kind ?? null },
  });
  audit("allow", `syscalls:${session.count}`);
  return { ...result, applied: applied ?? null };
}
