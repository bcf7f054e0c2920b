/**
 * The runtime layer: store, audit chain, event log, processes and their scheduler, decide() and
 * capabilities, the primitives, and the human channel (later issues add object memory, tools and
 * the model executor).
 *
 * @module
 */
export {
  type AuditEntry,
  type AuditFilter,
  auditHash,
  AuditLog,
  type AuditProblem,
  type AuditRecord,
  type AuditVerification,
  GENESIS_HASH,
  MAIN_CHAIN,
} from "./audit_log.ts";
export { type ChainHead, type HeadFile, readHeadFile } from "./audit_head.ts";
export { canonicalJson, digestOf, type JsonValue, sha256Hex } from "./canonical_json.ts";
export { type Clock, FakeClock, systemClock } from "./clock.ts";
export { type DatabaseLocation, locateDatabase, openDatabase } from "./database.ts";
export {
  ApprovalRequiredError,
  AuditError,
  BudgetExhaustedError,
  CapabilityDeniedError,
  type ErrorInfo,
  errorInfo,
  type Fault,
  HumanDecisionError,
  type HumanErrorCode,
  HumanPendingError,
  IllegalTransitionError,
  LibosError,
  NotFoundError,
  OutsideWorkspaceError,
  StoreError,
  type StoreErrorCode,
  UnsafePathError,
  UsageError,
  ValidationError,
  VolatileLostError,
} from "./errors.ts";
export { escapePreview, type EscapePreviewOptions } from "./escape_preview.ts";
export {
  ActionLedger,
  type ActionOutcome,
  type ActionRecord,
  type ActionRequest,
} from "./action_ledger.ts";
export { Authority, type RunOptions } from "./authority.ts";
export {
  type Capability,
  type CapabilityResource,
  type Effect,
  resourceString,
  type Right,
} from "./capability.ts";
export { type Action, type Decision, parseRunDeny } from "./decide.ts";
export { type ModeName, parseMode } from "./modes.ts";
export { type AgentProcess, type Budgets, type ProcessStatus, type Signal } from "./process.ts";
export { ProcessManager, type QuantumResult, type SpawnOptions } from "./process_manager.ts";
export {
  type ProcessDriver,
  type QuantumContext,
  type QuantumReport,
  type RunReport,
  type RunUntilIdleOptions,
  Scheduler,
} from "./scheduler.ts";
export { FilesystemPrimitive } from "./primitives/filesystem.ts";
export { ClockPrimitive } from "./primitives/clock.ts";
export { ShellPolicyLevel } from "./shell_policy.ts";
export {
  type LoadedRule,
  parsePolicy,
  POLICY_MAX_BYTES,
  PolicyFile,
  PolicyRule,
  PolicyRules,
} from "./policy_rules.ts";
export {
  type LoadedPolicy,
  loadPolicies,
  type PolicySources,
  userPolicyPath,
} from "./policy_files.ts";
export {
  DEFAULT_GIT_IDENTITY,
  DEFAULT_SHELL_LIMITS,
  type GitIdentity,
  type ShellLimits,
  ShellPrimitive,
  type ShellPrimitiveOptions,
  type ShellRunArgs,
  type ShellRunOutput,
  SYSTEM_PATH,
  type WallSetting,
} from "./primitives/shell.ts";
export {
  DEFAULT_RUN_LIMITS,
  hostShell,
  type ResolvedProgram,
  type RunLimits,
  type ShellProvider,
  type ShellRunResult,
  type ShellRunSpec,
  type WallSpec,
} from "./providers/shell.ts";
export {
  classifyAddress,
  DEFAULT_NET_LIMITS,
  NetError,
  type NetErrorCode,
  type NetFetchRequest,
  type NetLimits,
  NetPrimitive,
  type NetPrimitiveOptions,
  type NetResponse,
  parseIp,
} from "./primitives/net.ts";
export {
  type FakeNet,
  fakeNet,
  hostNet,
  type NetMethod,
  type NetProvider,
  type NetReply,
  type NetRequest,
} from "./providers/net.ts";
export {
  type FilesystemProvider,
  hostFilesystem,
  recordingFilesystem,
} from "./providers/filesystem.ts";
export {
  type AlwaysOption,
  HumanChannel,
  type HumanDecision,
  type HumanMode,
  type HumanPrompt,
  type HumanResolution,
} from "./human_channel.ts";
export {
  type ApprovalDetails,
  GrantScope,
  HumanRequest,
  HumanRequestKind,
  HumanRequestStatus,
  type PendingAction,
  type PermissionRequest,
} from "./human_request.ts";
export { GUTTER, renderApprovalRequest } from "./approval_render.ts";
export { type TerminalIo, terminalPrompt } from "./tty_prompt.ts";
export { type UnifiedDiff, unifiedDiff } from "./unified_diff.ts";
export {
  type ObjectInfo,
  type ObjectLink,
  processNamespace,
  type Provenance,
} from "./memory_object.ts";
export {
  type CreateObject,
  DEFAULT_OBJECT_LIMITS,
  type MemoryRecord,
  type ObjectHandle,
  type ObjectLimits,
  ObjectMemory,
  type ObjectQueryOptions,
  OPERATOR_ACTOR,
  type QueryResult,
} from "./object_memory.ts";
export {
  ContextPolicy,
  DEFAULT_CONTEXT_POLICY,
  materialize,
  type MaterializedContext,
  type MaterializeOptions,
  MaterializerState,
  parseContextPolicy,
  ProviderUsage,
  type View,
  type ViewObject,
} from "./materializer.ts";
export { PINNED_TAG, processContext } from "./process_context.ts";
export {
  defineTool,
  type ToolContext,
  type ToolDefinition,
  ToolEffect,
  type ToolSpec,
  type ToolValue,
} from "./tool.ts";
export { ToolBroker, type ToolCall, type ToolResult, type ToolSchema } from "./tool_broker.ts";
export {
  AgentImage,
  type AgentImageInput,
  ImageId,
  RequiredCapability,
  SafetyProfile,
} from "./image.ts";
export {
  IMAGE_OPERATOR,
  ImageRegistry,
  type ImageSummary,
  type LoadOptions,
} from "./image_registry.ts";
export { parseStrictYaml, STRICT_YAML_LIMITS, type StrictYamlOptions } from "./strict_yaml.ts";
export { EventLog, type SubscribeOptions } from "./event_log.ts";
export { EVENT_VERSION, type EventBody, type EventEnvelope, type EventKind } from "./events.ts";
export { type IdSource, randomIds, seededIds } from "./ids.ts";
export { createRuntime, type Primitives, type Runtime, type RuntimeOptions } from "./runtime.ts";
export { SCHEMA_VERSION } from "./_schema.ts";
export { SqliteStore, type SqliteStoreOptions } from "./sqlite_store.ts";
export { type EnvReader, MEMORY_DB } from "./state_paths.ts";
export type { AuditQuery, AuditRow, AuditTail, EventRead, EventRow, Store } from "./store.ts";
export { LIBOS_VERSION } from "./version.ts";
export {
  type DeferredOp,
  LibOSSyscallSession,
  runtimeTargets,
  type SyscallName,
  type SyscallTargets,
} from "./syscall_session.ts";
export {
  type ChatMessage,
  FinishReason,
  type ModelClient,
  ModelError,
  type ModelErrorCode,
  type ModelReply,
  type ModelRequest,
  ModelToolCall,
  type ModelToolSchema,
  TokenUsage,
} from "./model_client.ts";
export { OpenAIModel, type OpenAIModelOptions } from "./openai_model.ts";
export {
  ModelTurnRecord,
  parseSessionLog,
  SESSION_LINE_MAX,
  SESSION_LINES_MAX,
  SessionLogWriter,
  type SessionRecord,
} from "./session_log.ts";
export { RecordingModel, ScriptedModel } from "./scripted_model.ts";
export {
  type ExecutorEvent,
  executorFor,
  type ExecutorObserver,
  type ExecutorOptions,
  ModelExecutor,
  type TurnOutcome,
} from "./executor.ts";
export { REDACTED, type Redactor, redactor } from "./redaction.ts";
export { RESERVED_TYPES } from "./object_memory.ts";
