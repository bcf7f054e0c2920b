/**
 * The event kinds of the host event stream. Every event travels in the same versioned envelope
 * (`version`, `seq`, `session`, `turn`, `time`, `kind`, `payload`); later issues add kinds to
 * {@link EventBody}, and the envelope does not change.
 *
 * @module
 */
import { z } from "zod";

/** The envelope version this build writes. */
export const EVENT_VERSION = 1;

/** A runtime session began: what it runs on. */
export const SessionStarted = z.object({
  kind: z.literal("session.started"),
  payload: z.object({
    workspace: z.string(),
    database: z.string(),
    libos: z.string(),
  }).strict(),
}).strict();

/** A runtime session ended. */
export const SessionEnded = z.object({
  kind: z.literal("session.ended"),
  payload: z.object({ reason: z.enum(["closed", "failed"]) }).strict(),
}).strict();

/** Something a host should show its user: a degraded wall, a missing head file, ... */
export const Notice = z.object({
  kind: z.literal("notice"),
  payload: z.object({
    level: z.enum(["info", "warn", "error"]),
    code: z.string().regex(/^[a-z][a-z0-9_]*$/).max(64),
    message: z.string().max(4096),
  }).strict(),
}).strict();

const PidText = z.string().min(1).max(64);

/** A process was created by spawn, fork or spawn_child. */
export const ProcessSpawned = z.object({
  kind: z.literal("process.spawned"),
  payload: z.object({
    pid: PidText,
    parent: PidText.nullable(),
    image: z.string(),
    how: z.enum(["spawn", "fork", "spawn_child"]),
  }).strict(),
}).strict();

/** A process changed status for a reason a host may show (quantum boundaries are not events). */
export const ProcessStatusChanged = z.object({
  kind: z.literal("process.status"),
  payload: z.object({
    pid: PidText,
    from: z.string(),
    to: z.string(),
    /** The lifecycle event: sleep, wait_child, wake, pause, resume, exit, fail, terminate, ... */
    cause: z.string(),
    message: z.string().max(4096).nullable(),
  }).strict(),
}).strict();

/** A process replaced its image and tool table (same pid). */
export const ProcessExec = z.object({
  kind: z.literal("process.exec"),
  payload: z.object({ pid: PidText, from: z.string(), to: z.string(), tools: z.number().int() })
    .strict(),
}).strict();

/** An action's outcome became unknown because the runtime stopped while it was executing. */
export const ActionOutcomeUnknown = z.object({
  kind: z.literal("action.outcome_unknown"),
  payload: z.object({ pid: PidText, action: z.string(), actionKind: z.string() }).strict(),
}).strict();

/** A human request was made: an approval, a question, a permission request, an output, an interrupt. */
export const HumanRequested = z.object({
  kind: z.literal("human.request"),
  payload: z.object({ id: z.string(), pid: PidText, requestKind: z.string() }).strict(),
}).strict();

/** A human request was decided, answered, expired or cancelled. */
export const HumanDecided = z.object({
  kind: z.literal("human.decision"),
  payload: z.object({ id: z.string(), pid: PidText, status: z.string(), by: z.string() }).strict(),
}).strict();

/** The kind and payload of an event: a discriminated union on `kind`. */
export const EventBody = z.discriminatedUnion("kind", [
  SessionStarted,
  SessionEnded,
  Notice,
  ProcessSpawned,
  ProcessStatusChanged,
  ProcessExec,
  ActionOutcomeUnknown,
  HumanRequested,
  HumanDecided,
]);
/** The kind and payload of an event. */
export type EventBody = z.infer<typeof EventBody>;
/** Every event kind. */
export type EventKind = EventBody["kind"];

/** The envelope fields common to every event. */
export const EventHeader = z.object({
  version: z.literal(EVENT_VERSION),
  /** Position in this database's event log: the cursor for `subscribe({after})`. */
  seq: z.number().int().positive(),
  session: z.string().min(1),
  /** The agent turn the event belongs to; 0 outside any turn. */
  turn: z.number().int().nonnegative(),
  /** ISO 8601 UTC time. */
  time: z.string(),
}).strict();

/** A complete event as hosts receive it. */
export type EventEnvelope = z.infer<typeof EventHeader> & EventBody;
