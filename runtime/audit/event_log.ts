/**
 * The persisted event log and its subscription API. Events are stored first and delivered after
 * the commit that made them durable, so a host never sees an event that a crash or a rolled-back
 * step could take back. Subscribers pull pages from the store from their own cursor: a slow
 * subscriber costs no memory, and a host that restarts resumes from the last `seq` it saw.
 *
 * @module
 */
import type { Clock } from "../base/clock.ts";
import { ValidationError } from "../base/errors.ts";
import {
  type DecisionLayer,
  EVENT_TEXT_MAX,
  EVENT_VERSION,
  EventBody,
  type EventEnvelope,
  type EventKind,
} from "./events.ts";
import type { DecisionRecord } from "./audit_log.ts";
import type { EventRow, Store } from "../store/store.ts";

/** Options of {@link EventLog}. */
export interface EventLogOptions {
  readonly clock: Clock;
  /** The session id stamped on every event this log emits. */
  readonly session: string;
  /** Applied to every string in a payload before it is stored (secret redaction). */
  readonly redact?: (text: string) => string;
}

/** What to read or follow. */
export interface EventSelection {
  /** Start after this `seq` (0 replays everything). */
  readonly after?: number;
  readonly session?: string;
  readonly kinds?: readonly EventKind[];
}

/** Options of {@link EventLog.subscribe}. */
export interface SubscribeOptions extends EventSelection {
  /** Ends the iteration when aborted. */
  readonly signal?: AbortSignal;
}

const PAGE = 256;

/** `text` cut to `max` characters, the cut marked with an ellipsis. */
function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * The layer an authority names: `decide()`'s reasons start with their layer (`cap:…`,
 * `rule:…`, `mode:…`), a human's answer with `human:`, `default` is the default deny; anything
 * else (`runtime`, `tool_table`, `budget:…`, `lineage:…`) is the runtime's own bookkeeping.
 */
function layerOf(authority: string): DecisionLayer {
  if (authority === "default") return "default";
  const prefix = authority.slice(0, Math.max(0, authority.indexOf(":")));
  switch (prefix) {
    case "hardline":
    case "run":
    case "mode":
    case "protected":
    case "rule":
    case "cap":
    case "human":
      return prefix;
    default:
      return "runtime";
  }
}

/**
 * The `decision` event of an audit decision record: derived from the record (its `seq` is the
 * event's `auditSeq`), with the resource and the authority cut to the schema's bounds.
 */
export function decisionEvent(record: DecisionRecord): EventBody {
  return {
    kind: "decision",
    payload: {
      auditSeq: record.seq,
      pid: record.pid === null ? null : cut(record.pid, 200),
      actor: cut(record.actor, 200),
      action: cut(record.action, 100),
      resource: cut(record.resource, EVENT_TEXT_MAX.resource),
      effect: record.decision,
      authority: cut(record.authority, EVENT_TEXT_MAX.authority),
      layer: layerOf(record.authority),
    },
  };
}

function redactStrings(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === "string") return redact(value);
  if (Array.isArray(value)) return value.map((v) => redactStrings(v, redact));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactStrings(v, redact)]));
  }
  return value;
}

/** Emits, reads and follows the events of one store. */
export class EventLog implements Disposable {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #redact: ((text: string) => string) | undefined;
  readonly session: string;
  readonly #unsubscribe: () => void;
  #committed: number;
  #closed = false;
  #wake: PromiseWithResolvers<void> = Promise.withResolvers<void>();

  /** Binds the log to a store; subscribers wake after each commit. */
  constructor(store: Store, options: EventLogOptions) {
    this.#store = store;
    this.#clock = options.clock;
    this.#redact = options.redact;
    this.session = options.session;
    // Commit first, so the starting cursor never counts events a later rollback could take back.
    store.flush();
    this.#committed = store.lastEventSeq();
    this.#unsubscribe = store.onCommit(() => {
      this.#committed = this.#store.lastEventSeq();
      this.#notify();
    });
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = Promise.withResolvers<void>();
    wake.resolve();
  }

  /** The `seq` of the newest committed event (the cursor a new live subscriber starts from). */
  get committedSeq(): number {
    return this.#committed;
  }

  /**
   * Validates and stores an event (in its own step, or inside the caller's) and returns it.
   * It reaches subscribers after the next commit.
   * @throws {ValidationError} when the body does not match its kind's schema.
   */
  emit(body: EventBody, options: { readonly turn?: number } = {}): EventEnvelope {
    const candidate = this.#redact
      ? { ...body, payload: redactStrings(body.payload, this.#redact) }
      : body;
    const parsed = EventBody.safeParse(candidate);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ValidationError(
        `Cannot emit event ${JSON.stringify(body.kind)}: ${issue?.path.join(".") || "body"} ${
          issue?.message ?? "is invalid"
        }`,
        { cause: parsed.error },
      );
    }
    const turn = options.turn ?? 0;
    if (!Number.isInteger(turn) || turn < 0) {
      throw new RangeError(`Event turn must be a non-negative integer, got ${turn}`);
    }
    const time = Math.trunc(this.#clock.now());
    const seq = this.#store.insertEvent({
      version: EVENT_VERSION,
      session: this.session,
      turn,
      time,
      kind: parsed.data.kind,
      payload: JSON.stringify(parsed.data.payload),
    });
    return {
      version: EVENT_VERSION,
      seq,
      session: this.session,
      turn,
      time: new Date(time).toISOString(),
      ...parsed.data,
    };
  }

  /** Stored events after a cursor, oldest first (including this runtime's uncommitted ones). */
  read(selection: EventSelection & { readonly limit?: number } = {}): EventEnvelope[] {
    return this.#store.readEvents({
      after: selection.after ?? 0,
      limit: selection.limit ?? PAGE,
      ...(selection.session === undefined ? {} : { session: selection.session }),
      ...(selection.kinds === undefined ? {} : { kinds: selection.kinds }),
    }).map(decode);
  }

  /**
   * Follows committed events as an async iterator: first those after `after` (default: only new
   * ones), then each new commit's, until the signal aborts or the log closes.
   */
  subscribe(options: SubscribeOptions = {}): AsyncIterableIterator<EventEnvelope> {
    // The cursor is fixed now, not at the first next(): events committed in between are delivered.
    return this.#follow(options, options.after ?? this.#committed);
  }

  async *#follow(options: SubscribeOptions, start: number): AsyncIterableIterator<EventEnvelope> {
    let cursor = start;
    const signal = options.signal;
    while (!this.#closed && !signal?.aborted) {
      const rows = this.#store.readEvents({
        after: cursor,
        upTo: this.#committed,
        limit: PAGE,
        ...(options.session === undefined ? {} : { session: options.session }),
        ...(options.kinds === undefined ? {} : { kinds: options.kinds }),
      });
      if (rows.length === 0) {
        // Kinds or sessions filtered out still move the cursor, so the next read starts later.
        cursor = Math.max(cursor, this.#committed);
        await this.#nextWake(signal);
        continue;
      }
      for (const row of rows) {
        cursor = row.seq;
        yield decode(row);
        if (this.#closed || signal?.aborted) return;
      }
    }
  }

  /**
   * Resolves at the next commit (or close), or when `signal` aborts. The abort listener lives
   * only as long as this one wait, so a long subscription does not pile up reactions on a
   * promise that never settles.
   */
  #nextWake(signal: AbortSignal | undefined): Promise<void> {
    const woken = this.#wake.promise;
    if (!signal) return woken;
    return new Promise<void>((resolve) => {
      const done = () => {
        signal.removeEventListener("abort", done);
        resolve();
      };
      signal.addEventListener("abort", done, { once: true });
      woken.then(done);
    });
  }

  /** Ends every subscription and stops following commits. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe();
    this.#notify();
  }

  /** Same as {@link EventLog.close}. */
  [Symbol.dispose](): void {
    this.close();
  }
}

function decode(row: EventRow): EventEnvelope {
  let payload: unknown;
  try {
    payload = JSON.parse(row.payload);
  } catch (error) {
    throw new ValidationError(
      `Stored event ${row.seq} has a payload that is not JSON; the database was edited outside libos`,
      { cause: error },
    );
  }
  const parsed = EventBody.safeParse({ kind: row.kind, payload });
  if (!parsed.success || row.version !== EVENT_VERSION) {
    throw new ValidationError(
      `Stored event ${row.seq} (kind ${
        JSON.stringify(row.kind)
      }, version ${row.version}) is not one this libos understands; upgrade libos to read it`,
    );
  }
  return {
    version: EVENT_VERSION,
    seq: row.seq,
    session: row.session,
    turn: row.turn,
    time: new Date(row.time).toISOString(),
    ...parsed.data,
  };
}
