/**
 * The event kinds of the host event stream. Every event travels in the same versioned envelope
 * (`version`, `seq`, `session`, `turn`, `time`, `kind`, `payload`); later issues add kinds to
 * {@link EventBody}, and the envelope does not change.
 *
 * @module
 */
import { z } from "zod";

/**
 * The envelope version this build writes. Within one version the schema only grows: a new kind
 * or a new optional field. Removing a kind or a field, making a field required, or narrowing one
 * is a breaking change and needs the version bumped (with a new frozen copy under
 * `schema/frozen/`); `tests/event_schema_test.ts` enforces it.
 */
export const EVENT_VERSION = 1;

/** Bounded text: every string a host receives has a limit. */
function text(max: number) {
  return z.string().max(max);
}

/** A runtime session began: what it runs on. */
export const SessionStarted = z.object({
  kind: z.literal("session.started"),
  payload: z.object({
    workspace: text(4096),
    database: text(4096),
    libos: text(64),
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
    image: text(256),
    how: z.enum(["spawn", "fork", "spawn_child"]),
  }).strict(),
}).strict();

/** A process changed status for a reason a host may show (quantum boundaries are not events). */
export const ProcessStatusChanged = z.object({
  kind: z.literal("process.status"),
  payload: z.object({
    pid: PidText,
    from: text(64),
    to: text(64),
    /** The lifecycle event: sleep, wait_child, wake, pause, resume, exit, fail, terminate, ... */
    cause: text(64),
    message: z.string().max(4096).nullable(),
  }).strict(),
}).strict();

/** A process replaced its image and tool table (same pid). */
export const ProcessExec = z.object({
  kind: z.literal("process.exec"),
  payload: z.object({
    pid: PidText,
    from: text(256),
    to: text(256),
    tools: z.number().int().nonnegative(),
  }).strict(),
}).strict();

/** An action's outcome became unknown because the runtime stopped while it was executing. */
export const ActionOutcomeUnknown = z.object({
  kind: z.literal("action.outcome_unknown"),
  payload: z.object({ pid: PidText, action: text(128), actionKind: text(64) }).strict(),
}).strict();

/** A human request was made: an approval, a question, a permission request, an output, an interrupt. */
export const HumanRequested = z.object({
  kind: z.literal("human.request"),
  payload: z.object({
    id: text(128),
    pid: PidText,
    requestKind: text(64),
    /**
     * The resource an approval or permission request is about (cut), null for others; absent
     * from events written before libos recorded it.
     */
    resource: text(1024).nullable().optional(),
  }).strict(),
}).strict();

/** A human request was decided, answered, expired or cancelled. */
export const HumanDecided = z.object({
  kind: z.literal("human.decision"),
  payload: z.object({ id: text(128), pid: PidText, status: text(64), by: text(256) }).strict(),
}).strict();

/** The most characters of a resource, an authority or a tool name an event carries. */
export const EVENT_TEXT_MAX = { resource: 1024, authority: 500, tool: 64, code: 64 } as const;

/** How a model turn ended (the executor's `TurnOutcome`). */
export const TurnOutcome = z.enum(["tool_calls", "final", "length_truncated", "refused", "error"]);

/** A model turn began: the process asked the model (turn `seq` of process `pid`). */
export const TurnStarted = z.object({
  kind: z.literal("turn.started"),
  payload: z.object({ pid: PidText, seq: z.number().int().positive() }).strict(),
}).strict();

/**
 * A model turn was kept: how it ended, the tokens it was charged (null when the model could not
 * be reached), and how many tool calls it made. The model's text is not in the event: read it
 * with `libos log PID`.
 */
export const TurnEnded = z.object({
  kind: z.literal("turn.ended"),
  payload: z.object({
    pid: PidText,
    seq: z.number().int().positive(),
    outcome: TurnOutcome,
    tokens: z.number().int().nonnegative().nullable(),
    toolCalls: z.number().int().nonnegative(),
  }).strict(),
}).strict();

/**
 * A tool call of turn `seq` is about to run. Its arguments are not in the event (they may hold
 * secrets): the decisions it causes and the stored result are.
 */
export const ToolCalled = z.object({
  kind: z.literal("tool.call"),
  payload: z.object({
    pid: PidText,
    seq: z.number().int().nonnegative(),
    /** The model's id for the call, when it gave one. */
    callId: text(128).nullable(),
    tool: text(EVENT_TEXT_MAX.tool),
  }).strict(),
}).strict();

/**
 * A tool call's result: whether it succeeded, its error code or a command's exit code, its size,
 * and the `tool.result` object that holds it whole (never its content: it may hold secrets).
 */
export const ToolResulted = z.object({
  kind: z.literal("tool.result"),
  payload: z.object({
    pid: PidText,
    seq: z.number().int().nonnegative(),
    callId: text(128).nullable(),
    tool: text(EVENT_TEXT_MAX.tool),
    ok: z.boolean(),
    /** The typed error's code when `ok` is false. */
    errorCode: z.string().regex(/^[a-z][a-z0-9_]*$/).max(EVENT_TEXT_MAX.code).nullable(),
    /** A command's exit code, when the tool ran one and it exited (null: none, or killed). */
    exitCode: z.number().int().nullable(),
    /** The `tool.result` object holding the whole result (read it with `libos memory show`). */
    object: text(128).nullable(),
    /** The length in characters of what the model was handed (cut when `truncated`). */
    chars: z.number().int().nonnegative(),
    /** Whether the model was handed only the start of it. */
    truncated: z.boolean(),
  }).strict(),
}).strict();

/** The layer of `decide()` (or the part of the runtime) a decision came from. */
export const DecisionLayer = z.enum([
  "hardline",
  "run",
  "mode",
  "protected",
  "rule",
  "cap",
  "default",
  "human",
  "runtime",
]);
/** The layer a decision came from. */
export type DecisionLayer = z.infer<typeof DecisionLayer>;

/**
 * An allow, ask or deny the audit log recorded, derived from that record (`auditSeq`): who, what,
 * on which resource (cut to 1,024 characters), and what decided it. `libos audit query` shows
 * the whole record.
 */
export const DecisionMade = z.object({
  kind: z.literal("decision"),
  payload: z.object({
    auditSeq: z.number().int().positive(),
    pid: text(200).nullable(),
    actor: text(200),
    action: text(100),
    resource: text(EVENT_TEXT_MAX.resource),
    effect: z.enum(["allow", "ask", "deny"]),
    /** What decided: `cap:<id>`, `rule:<file>#<n>`, `mode:<name>`, `human:<request>`, `default`, ... */
    authority: text(EVENT_TEXT_MAX.authority),
    layer: DecisionLayer,
  }).strict(),
}).strict();

/** A checkpoint of a process was taken. */
export const CheckpointCreated = z.object({
  kind: z.literal("checkpoint.created"),
  payload: z.object({
    pid: PidText,
    checkpoint: text(128),
    by: text(256),
    objects: z.number().int().nonnegative(),
  }).strict(),
}).strict();

/** A process was restored to a checkpoint. */
export const CheckpointRestored = z.object({
  kind: z.literal("checkpoint.restored"),
  payload: z.object({
    pid: PidText,
    checkpoint: text(128),
    by: text(256),
    /** Objects added back, changed back or removed. */
    objects: z.number().int().nonnegative(),
    /** Capabilities granted after the checkpoint, now revoked. */
    revoked: z.number().int().nonnegative(),
    /** Effects the restore could not undo (files written, commands run). */
    irreversible: z.number().int().nonnegative(),
  }).strict(),
}).strict();

/** Every event body, in the order the schema file lists them. */
const BODIES = [
  SessionStarted,
  SessionEnded,
  Notice,
  ProcessSpawned,
  ProcessStatusChanged,
  ProcessExec,
  ActionOutcomeUnknown,
  HumanRequested,
  HumanDecided,
  TurnStarted,
  TurnEnded,
  ToolCalled,
  ToolResulted,
  DecisionMade,
  CheckpointCreated,
  CheckpointRestored,
] as const;

/** The kind and payload of an event: a discriminated union on `kind`. */
export const EventBody = z.discriminatedUnion("kind", BODIES);
/** The kind and payload of an event. */
export type EventBody = z.infer<typeof EventBody>;
/** Every event kind. */
export type EventKind = EventBody["kind"];
/** Every event kind, as a list (what `libos events --kind` accepts). */
export const EVENT_KINDS: readonly EventKind[] = BODIES.map((b) => b.shape.kind.value);

/** The envelope fields common to every event. */
export const EventHeader = z.object({
  version: z.literal(EVENT_VERSION),
  /** Position in this database's event log: the cursor for `subscribe({after})`. */
  seq: z.number().int().positive(),
  session: z.string().min(1).max(128),
  /** The agent turn the event belongs to; 0 outside any turn. */
  turn: z.number().int().nonnegative(),
  /** ISO 8601 UTC time. */
  time: z.string().max(32),
}).strict();

/** A complete event as hosts receive it. */
export type EventEnvelope = z.infer<typeof EventHeader> & EventBody;

/**
 * A complete event, as one JSON object (what `libos events --json` prints, one per line): the
 * header's fields and one kind's `kind` and `payload`.
 */
export const Event = z.discriminatedUnion(
  "kind",
  BODIES.map((body) => EventHeader.extend(body.shape)) as unknown as [
    z.ZodObject<z.ZodRawShape>,
    ...z.ZodObject<z.ZodRawShape>[],
  ],
);

/**
 * The JSON Schema of {@link Event} for this {@link EVENT_VERSION}: what `schema/events.v1.json`
 * holds (`deno task schema` writes it; a test keeps the two equal).
 */
export function eventJsonSchema(): Record<string, unknown> {
  return {
    title: `libos event, version ${EVENT_VERSION}`,
    description:
      "One event of the libos event log: a versioned envelope (version, seq, session, turn, time) with a kind and its payload. `libos events --json` prints one per line.",
    ...z.toJSONSchema(Event, { target: "draft-2020-12", unrepresentable: "throw" }),
  };
}
