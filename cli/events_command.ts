/**
 * `libos events [--follow] [--after SEQ] [--kind K]... [--json]`: the public event log of a
 * workspace's database, oldest first — process lifecycle, turns, tool calls and results,
 * decisions, human requests and answers, checkpoints (`runtime/audit/events.ts`,
 * `schema/events.v1.json`). `--follow` keeps printing what other libos processes write, polling
 * the database; the database is opened read-only and never written.
 *
 * @module
 */
import { EventLog } from "../runtime/audit/event_log.ts";
import { EVENT_KINDS, type EventEnvelope, type EventKind } from "../runtime/audit/events.ts";
import { pauseFor, systemClock } from "../runtime/base/clock.ts";
import { UsageError } from "../runtime/base/errors.ts";
import { MEMORY_DB } from "../runtime/base/state_paths.ts";
import { openDatabase } from "../runtime/store/database.ts";
import {
  type CliIo,
  type Command,
  flagOption,
  listOption,
  type ParsedArgs,
  stringOption,
} from "./_options.ts";
import { EXIT_OK, field } from "./_output.ts";
import { locateFrom } from "./_workspace.ts";

/** Events read per query. */
const PAGE = 256;
/** How long `--follow` waits between two polls of the database when nothing new was there. */
export const FOLLOW_POLL_MS = 200;

/**
 * `--after SEQ`: a sequence number (0 = from the start).
 * @throws {UsageError} when it is not a non-negative integer.
 */
function afterOption(parsed: ParsedArgs): number {
  const raw = stringOption(parsed, "after");
  if (raw === undefined) return 0;
  if (!/^\d{1,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new UsageError(
      `--after must be an event sequence number (an integer >= 0, as printed in the seq field), got ${
        JSON.stringify(raw)
      }`,
    );
  }
  return Number(raw);
}

/**
 * `--kind K`, repeatable: each one of the schema's kinds.
 * @throws {UsageError} for a kind the schema does not have.
 */
function kindsOption(parsed: ParsedArgs): readonly EventKind[] | undefined {
  const kinds = listOption(parsed, "kind");
  if (kinds.length === 0) return undefined;
  for (const kind of kinds) {
    if (!(EVENT_KINDS as readonly string[]).includes(kind)) {
      throw new UsageError(
        `--kind ${JSON.stringify(kind.slice(0, 64))} is not an event kind; the kinds are ${
          EVENT_KINDS.join(", ")
        }`,
      );
    }
  }
  return kinds as EventKind[];
}

/** One event as one escaped terminal line: seq, time, kind, then the payload's fields. */
function line(event: EventEnvelope): string {
  const fields = Object.entries(event.payload as Record<string, unknown>)
    .map(([key, value]) =>
      `${key}=${field(typeof value === "string" ? value : JSON.stringify(value) ?? null, 120)}`
    );
  return [
    String(event.seq),
    event.time,
    field(event.kind, 64),
    ...(event.turn > 0 ? [`turn=${event.turn}`] : []),
    ...fields,
  ].join("  ");
}

/** Whether a write failed because the reader went away (`libos events | head`). */
function readerGone(error: unknown): boolean {
  return error instanceof Deno.errors.BrokenPipe ||
    (error instanceof Error && /broken pipe|EPIPE/i.test(error.message));
}

async function events(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const after = afterOption(parsed);
  const kinds = kindsOption(parsed);
  const follow = flagOption(parsed, "follow");
  const json = flagOption(parsed, "json");
  if (stringOption(parsed, "db") === MEMORY_DB) {
    throw new UsageError(`--db :memory: has no events to read; pass a database file or omit --db`);
  }
  const location = locateFrom(parsed, io);
  const store = openDatabase(location, { create: false, readOnly: true });
  const stop = new AbortController();
  // Ctrl-C ends a follow cleanly (exit 0, everything printed so far complete).
  const interrupt = follow
    ? io.onInterrupt?.(() => {
      stop.abort();
      return "handled";
    })
    : undefined;
  try {
    using log = new EventLog(store, { clock: systemClock(), session: "reader" });
    let cursor = after;
    while (!stop.signal.aborted) {
      const page = log.read({
        after: cursor,
        limit: PAGE,
        ...(kinds === undefined ? {} : { kinds }),
      });
      for (const event of page) {
        try {
          io.stdout(`${json ? JSON.stringify(event) : line(event)}\n`);
        } catch (error) {
          if (readerGone(error)) return EXIT_OK;
          throw error;
        }
        cursor = event.seq;
      }
      if (page.length === PAGE) continue;
      if (!follow) break;
      await pauseFor(FOLLOW_POLL_MS, stop.signal);
    }
    return EXIT_OK;
  } finally {
    interrupt?.[Symbol.dispose]();
    store.close();
  }
}

/** `events [--follow] [--after SEQ] [--kind K]... [--json]`. */
export const eventsCommand: Command = {
  name: "events",
  summary: "the event log: lifecycle, turns, tool calls, decisions, human requests, checkpoints",
  usage: `Usage: libos events [--follow] [--after SEQ] [--kind KIND]... [--json]

Prints the workspace's events in order, one per line: its sequence number, time, kind and
payload (every value escaped). Events are the public, versioned stream a host subscribes to:
process lifecycle, model turns, tool calls and their results (never their arguments or output),
every allow/ask/deny decision the audit log records, human requests and answers, checkpoints.
The database is only read.
  --json         one JSON object per line, exactly the shape of schema/events.v1.json
  --after SEQ    only events after sequence number SEQ (resume where you stopped)
  --kind KIND    only events of this kind (repeatable): ${EVENT_KINDS.join(", ")}
  --follow       keep printing events as other libos commands write them, until Ctrl-C
See docs/events.md for each kind and the versioning rule.`,
  options: ["follow", "after", "kind"],
  run: events,
};
