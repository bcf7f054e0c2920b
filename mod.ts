/**
 * Agent libOS for Deno: a runtime in which LLM agents run as long-lived, capability-controlled
 * processes. This module is the embedded API — what a host program needs to do what the `libos`
 * command line does: create a runtime, spawn and run processes, decide on their actions, answer
 * the human channel, define tools and load images, drive a model, and branch on typed errors.
 * Test fakes and fixtures (a fake clock, seeded ids, the scripted model, a runtime over a
 * temporary workspace) live behind `./testing.ts`.
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

// The runtime and its parts (reached as `runtime.processes`, `runtime.human`, …).
export {
  createRuntime,
  type Primitives,
  type Runtime,
  type RuntimeOptions,
} from "./runtime/runtime.ts";
export { LIBOS_VERSION } from "./runtime/base/version.ts";
export type { EnvReader } from "./runtime/base/state_paths.ts";
export type { DatabaseLocation } from "./runtime/store/database.ts";
export type { JsonValue } from "./runtime/base/canonical_json.ts";

// Processes and the scheduler.
export type { AgentProcess, Budgets, ProcessStatus, Signal } from "./runtime/process/process.ts";
export type {
  ProcessManager,
  QuantumResult,
  SpawnOptions,
} from "./runtime/process/process_manager.ts";
export type {
  ProcessDriver,
  QuantumContext,
  QuantumReport,
  RunReport,
  RunUntilIdleOptions,
  Scheduler,
} from "./runtime/kernel/scheduler.ts";

// Deciding: capabilities, modes and policy.
export type { Authority, RunOptions } from "./runtime/authority/authority.ts";
export type { Action, Decision, DecisionLayer, Layer } from "./runtime/authority/decide.ts";
export type {
  ActionResource,
  Capability,
  CapabilityResource,
  Effect,
  Right,
} from "./runtime/authority/capability.ts";
export { type ModeName, parseMode } from "./runtime/authority/modes.ts";
export { type LoadedRule, parsePolicy, PolicyRules } from "./runtime/policy/policy_rules.ts";
export {
  type LoadedPolicy,
  loadPolicies,
  type PolicySources,
} from "./runtime/policy/policy_files.ts";
export { ShellPolicyLevel } from "./runtime/policy/shell_policy.ts";

// The primitives a tool or a host reaches the world through.
export type { FilesystemPrimitive } from "./runtime/primitives/filesystem.ts";
export type { ShellLimits, ShellPrimitive } from "./runtime/primitives/shell.ts";
export type { NetLimits, NetPrimitive } from "./runtime/primitives/net.ts";
export type { ClockPrimitive } from "./runtime/primitives/clock.ts";
export type { ObjectLimits, ObjectMemory } from "./runtime/memory/object_memory.ts";

// The human channel.
export type {
  AlwaysOption,
  HumanChannel,
  HumanDecision,
  HumanMode,
  HumanPrompt,
  HumanResolution,
} from "./runtime/human/human_channel.ts";
export {
  type ApprovalDetails,
  GrantScope,
  HumanRequest,
  type PermissionRequest,
} from "./runtime/human/human_request.ts";
export type { ActionOutcome } from "./runtime/process/action_ledger.ts";
export { renderApprovalRequest } from "./runtime/human/approval_render.ts";
export { type TerminalIo, terminalPrompt } from "./runtime/human/tty_prompt.ts";

// Tools and images.
export {
  defineTool,
  type GrepOptions,
  type ToolContext,
  type ToolDefinition,
  ToolEffect,
  type ToolSpec,
  type ToolValue,
} from "./runtime/broker/tool.ts";
export type { ToolBroker, ToolCall, ToolResult } from "./runtime/broker/tool_broker.ts";
export { AgentImage } from "./runtime/broker/image.ts";
export type { ImageRegistry } from "./runtime/broker/image_registry.ts";
export { JitSandbox, JitValidator, lifecycleFor } from "./jit/mod.ts";

// Models.
export {
  type ChatMessage,
  FinishReason,
  type ModelClient,
  type ModelReply,
  type ModelRequest,
  ModelToolCall,
  type ModelToolSchema,
  TokenUsage,
} from "./runtime/model/model_client.ts";
export { OpenAIModel, type OpenAIModelOptions } from "./runtime/model/openai_model.ts";
export {
  type ExecutorEvent,
  executorFor,
  type ExecutorOptions,
  type ModelExecutor,
  type TurnOutcome,
} from "./runtime/model/executor.ts";

// What a host injects: time, ids, and the providers that touch the machine.
export { type Clock, systemClock } from "./runtime/base/clock.ts";
export { type IdSource, randomIds } from "./runtime/base/ids.ts";
export type {
  DirEntry,
  FileHandle,
  FilesystemProvider,
  PathFacts,
} from "./runtime/providers/filesystem.ts";
export type {
  ResolvedProgram,
  ShellProvider,
  ShellRunResult,
  ShellRunSpec,
} from "./runtime/providers/shell.ts";
export type { NetProvider, NetReply, NetRequest } from "./runtime/providers/net.ts";

// The record: audit chain and event log.
export type { AuditFilter, AuditRecord, AuditVerification } from "./runtime/audit/audit_log.ts";
export type { EventBody, EventEnvelope, EventKind } from "./runtime/audit/events.ts";
export { Event, EVENT_VERSION, eventJsonSchema } from "./runtime/audit/events.ts";

// Errors: callers branch on the class or its stable `code`, never on message text.
export {
  ApprovalRequiredError,
  AuditError,
  type AuditErrorCode,
  BudgetExhaustedError,
  CapabilityDeniedError,
  type DenialCode,
  type ErrorInfo,
  errorInfo,
  type Fault,
  HumanDecisionError,
  type HumanErrorCode,
  HumanPendingError,
  IllegalTransitionError,
  InvalidPatternError,
  LibosError,
  NotFoundError,
  OutsideWorkspaceError,
  StoreError,
  type StoreErrorCode,
  type TransitionErrorCode,
  UnsafePathError,
  UsageError,
  ValidationError,
  VolatileLostError,
} from "./runtime/base/errors.ts";
export { NetError, type NetErrorCode } from "./runtime/primitives/net.ts";
export { ModelError, type ModelErrorCode } from "./runtime/model/model_client.ts";
export { SandboxError, type SandboxErrorCode } from "./jit/sandbox.ts";
