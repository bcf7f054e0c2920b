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
} from "./audit/audit_log.ts";
export { type ChainHead, type HeadFile, readHeadFile } from "./audit/audit_head.ts";
export { canonicalJson, digestOf, type JsonValue, sha256Hex } from "./base/canonical_json.ts";
export { type Clock, FakeClock, systemClock } from "./base/clock.ts";
export { type DatabaseLocation, locateDatabase, openDatabase } from "./store/database.ts";
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
  InvalidPatternError,
  LibosError,
  NotFoundError,
  OutsideWorkspaceError,
  StoreError,
  type StoreErrorCode,
  UnsafePathError,
  UsageError,
  ValidationError,
  VolatileLostError,
} from "./base/errors.ts";
export { escapePreview, type EscapePreviewOptions } from "./base/escape_preview.ts";
export {
  ActionLedger,
  type ActionOutcome,
  type ActionRecord,
  type ActionRequest,
} from "./process/action_ledger.ts";
export { Authority, type RunOptions } from "./authority/authority.ts";
export {
  type Capability,
  type CapabilityResource,
  type Effect,
  resourceString,
  type Right,
} from "./authority/capability.ts";
export { type Action, type Decision, parseRunDeny } from "./authority/decide.ts";
export { type ModeName, parseMode } from "./authority/modes.ts";
export {
  type AgentProcess,
  type Budgets,
  type ProcessStatus,
  type Signal,
} from "./process/process.ts";
export {
  ProcessManager,
  type QuantumResult,
  type SpawnOptions,
} from "./process/process_manager.ts";
export {
  type ProcessDriver,
  type QuantumContext,
  type QuantumReport,
  type RunReport,
  type RunUntilIdleOptions,
  Scheduler,
} from "./kernel/scheduler.ts";
export { FilesystemPrimitive } from "./primitives/filesystem.ts";
export { ClockPrimitive } from "./primitives/clock.ts";
export { ShellPolicyLevel } from "./policy/shell_policy.ts";
export {
  type LoadedRule,
  parsePolicy,
  POLICY_MAX_BYTES,
  PolicyFile,
  PolicyRule,
  PolicyRules,
} from "./policy/policy_rules.ts";
export {
  type LoadedPolicy,
  loadPolicies,
  type PolicySources,
  userPolicyPath,
} from "./policy/policy_files.ts";
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
} from "./human/human_channel.ts";
export {
  type ApprovalDetails,
  GrantScope,
  HumanRequest,
  HumanRequestKind,
  HumanRequestStatus,
  type PendingAction,
  type PermissionRequest,
} from "./human/human_request.ts";
export { GUTTER, renderApprovalRequest } from "./human/approval_render.ts";
export { type TerminalIo, terminalPrompt } from "./human/tty_prompt.ts";
export { type UnifiedDiff, unifiedDiff } from "./base/unified_diff.ts";
export {
  type ObjectInfo,
  type ObjectLink,
  processNamespace,
  type Provenance,
} from "./memory/memory_object.ts";
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
} from "./memory/object_memory.ts";
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
} from "./memory/materializer.ts";
export { PINNED_TAG, processContext } from "./memory/process_context.ts";
export {
  defineTool,
  type GrepOptions,
  type ToolContext,
  type ToolDefinition,
  ToolEffect,
  type ToolSpec,
  type ToolValue,
} from "./broker/tool.ts";
export {
  ToolBroker,
  type ToolCall,
  type ToolResult,
  type ToolSchema,
} from "./broker/tool_broker.ts";
export {
  AgentImage,
  type AgentImageInput,
  ImageId,
  RequiredCapability,
  SafetyProfile,
} from "./broker/image.ts";
export {
  IMAGE_OPERATOR,
  ImageRegistry,
  type ImageSummary,
  type LoadOptions,
} from "./broker/image_registry.ts";
export { parseStrictYaml, STRICT_YAML_LIMITS, type StrictYamlOptions } from "./base/strict_yaml.ts";
export { EventLog, type SubscribeOptions } from "./audit/event_log.ts";
export {
  EVENT_VERSION,
  type EventBody,
  type EventEnvelope,
  type EventKind,
} from "./audit/events.ts";
export { type IdSource, randomIds, seededIds } from "./base/ids.ts";
export { createRuntime, type Primitives, type Runtime, type RuntimeOptions } from "./runtime.ts";
export { SCHEMA_VERSION, SqliteStore, type SqliteStoreOptions } from "./store/sqlite_store.ts";
export { type EnvReader, MEMORY_DB } from "./base/state_paths.ts";
export type { AuditQuery, AuditRow, AuditTail, EventRead, EventRow, Store } from "./store/store.ts";
export { LIBOS_VERSION } from "./base/version.ts";
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
} from "./model/model_client.ts";
export { OpenAIModel, type OpenAIModelOptions } from "./model/openai_model.ts";
export {
  ModelTurnRecord,
  parseSessionLog,
  SESSION_LINE_MAX,
  SESSION_LINES_MAX,
  SessionLogWriter,
  type SessionRecord,
} from "./model/session_log.ts";
export { RecordingModel, ScriptedModel } from "./model/scripted_model.ts";
export {
  type ExecutorEvent,
  executorFor,
  type ExecutorObserver,
  type ExecutorOptions,
  ModelExecutor,
  type TurnOutcome,
} from "./model/executor.ts";
export { REDACTED, type Redactor, redactor } from "./base/redaction.ts";
export { RESERVED_TYPES } from "./memory/object_memory.ts";
