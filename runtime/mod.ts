/**
 * The runtime layer: store, audit chain, event log, and (in later issues) processes, decide(),
 * capabilities, the human queue, object memory, primitives and the model executor.
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
  AuditError,
  type ErrorInfo,
  errorInfo,
  type Fault,
  LibosError,
  NotFoundError,
  StoreError,
  type StoreErrorCode,
  UsageError,
  ValidationError,
} from "./errors.ts";
export { escapePreview, type EscapePreviewOptions } from "./escape_preview.ts";
export { EventLog, type SubscribeOptions } from "./event_log.ts";
export { EVENT_VERSION, type EventBody, type EventEnvelope, type EventKind } from "./events.ts";
export { type IdSource, randomIds, seededIds } from "./ids.ts";
export { createRuntime, type Runtime, type RuntimeOptions } from "./runtime.ts";
export { SCHEMA_VERSION } from "./_schema.ts";
export { SqliteStore, type SqliteStoreOptions } from "./sqlite_store.ts";
export { type EnvReader, MEMORY_DB } from "./state_paths.ts";
export type { AuditQuery, AuditRow, AuditTail, EventRead, EventRow, Store } from "./store.ts";
export { LIBOS_VERSION } from "./version.ts";
