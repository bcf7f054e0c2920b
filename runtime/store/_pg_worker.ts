/**
 * The PostgreSQL connection thread of {@link PostgresStore} (DESIGN §6). The `Store` interface
 * is synchronous, so the store's own thread posts each request here and blocks on a shared
 * buffer (`Atomics.wait`) until this thread, which owns the sockets, writes the answer into it.
 * Requests are batches of statements, sent pipelined on one connection (postgres.js), so a
 * step's writes cost one round trip, not one each.
 *
 * A second connection LISTENs on `libos_data`: each transaction that changes a libos table
 * notifies it (a statement trigger), and every notification from a connection other than this
 * store's own writer advances the counter in the shared buffer — the store's `dataVersion()`.
 *
 * The connection string arrives in a message (never in argv or the environment) and never leaves
 * this thread; error messages are scrubbed of it before they are written back.
 *
 * @module
 */
import postgres from "postgres";

/** Header slots of the shared buffer (Int32 each). */
export const SLOT = {
  /** 0 while a request is pending, 1 when its answer is written. */
  state: 0,
  /** The answer's length in bytes (after the header). */
  length: 1,
  /** Commits by other connections seen by the listener (wraps at 2^31). */
  version: 2,
  /** 1 once the listener connection failed (the counter can no longer be trusted). */
  listenerLost: 3,
  /** The number of the request the answer belongs to. */
  request: 4,
} as const;

/** Bytes of the header before the answer. */
export const HEADER_BYTES = 32;

/** One statement of a batch. */
export interface PgStatement {
  readonly sql: string;
  readonly params: readonly (string | number | null)[];
}

/** A request to the connection thread. */
export type PgRequest =
  | {
    readonly kind: "open";
    readonly url: string;
    /** The schema every statement runs in (created if missing). */
    readonly schema: string;
    readonly buffer: SharedArrayBuffer;
    readonly applicationName: string;
    readonly statementTimeoutMs: number;
    readonly listen: boolean;
  }
  | {
    readonly kind: "run";
    readonly statements: readonly PgStatement[];
    /** The statements belong to a transaction begun in an earlier request (default true). */
    readonly continuing?: boolean;
    /** Session settings: run again first on any new session the driver opens. */
    readonly session?: boolean;
  }
  | { readonly kind: "sync" }
  | { readonly kind: "close" };

/** A request as posted: numbered, so an answer is never taken for another request's. */
export type NumberedRequest = PgRequest & { readonly n: number };

/** One statement's answer: its rows and how many rows it changed. */
export interface PgResult {
  readonly rows: Record<string, string | number | boolean | null>[];
  readonly count: number;
}

/** The answer to a request. */
export type PgReply =
  | { readonly ok: true; readonly results: PgResult[]; readonly backend?: number }
  | {
    readonly ok: false;
    /** SQLSTATE for a server error, the socket's code (`ECONNREFUSED`...) otherwise. */
    readonly code: string;
    readonly message: string;
    /** Which statement of the batch failed. */
    readonly index: number;
    /** The constraint a violation names, when there is one. */
    readonly constraint?: string;
  };

/** The members of the worker's global scope this file uses. */
interface WorkerScope {
  onmessage: ((event: MessageEvent<NumberedRequest>) => void) | null;
  postMessage(message: PgEvent): void;
}

/** What the connection thread tells the store's thread unasked: another connection committed. */
export interface PgEvent {
  readonly kind: "commit";
}

type Sql = ReturnType<typeof postgres>;

/** Removes every form of the connection string's password from a message. */
function scrub(message: string, secrets: readonly string[]): string {
  let out = message;
  for (const secret of secrets) if (secret.length > 0) out = out.split(secret).join("***");
  return out;
}

function secretsOf(url: string): string[] {
  try {
    const parsed = new URL(url);
    const password = parsed.password;
    return password === "" ? [url] : [url, password, decodeURIComponent(password), parsed.href];
  } catch {
    return [url];
  }
}

/** Runs the connection thread on `scope` (the worker's global scope). */
export function serve(scope: WorkerScope): void {
  let buffer: SharedArrayBuffer | undefined;
  let header: Int32Array | undefined;
  let writer: Sql | undefined;
  let listener: Sql | undefined;
  let backend = 0;
  /** The writer's session ended: it is never used again (see `open`). */
  let writerLost = false;
  let secrets: string[] = [];
  /** The request being answered. */
  let current = 0;
  const encoder = new TextEncoder();

  const answer = (reply: PgReply) => {
    if (!buffer || !header) return;
    const bytes = encoder.encode(JSON.stringify(reply));
    const needed = HEADER_BYTES + bytes.length;
    if (needed > buffer.byteLength) {
      if (needed > buffer.maxByteLength) {
        const tooBig: PgReply = {
          ok: false,
          code: "LIBOS_TOO_LARGE",
          message:
            `the answer is ${bytes.length} bytes, more than the ${buffer.maxByteLength} bytes one read may return`,
          index: 0,
        };
        answer(tooBig);
        return;
      }
      buffer.grow(Math.min(buffer.maxByteLength, Math.max(needed, buffer.byteLength * 2)));
    }
    new Uint8Array(buffer, HEADER_BYTES, bytes.length).set(bytes);
    Atomics.store(header, SLOT.length, bytes.length);
    Atomics.store(header, SLOT.state, 1);
    // Written last: the waiting thread reads the answer once this names its request.
    Atomics.store(header, SLOT.request, current);
    Atomics.notify(header, SLOT.request);
  };

  const failure = (error: unknown, index: number): PgReply => {
    const e = error as { code?: unknown; message?: unknown; constraint_name?: unknown };
    return {
      ok: false,
      code: typeof e?.code === "string" ? e.code : "LIBOS_UNKNOWN",
      message: scrub(typeof e?.message === "string" ? e.message : String(error), secrets),
      index,
      ...(typeof e?.constraint_name === "string" ? { constraint: e.constraint_name } : {}),
    };
  };

  const open = async (request: Extract<PgRequest, { kind: "open" }>) => {
    buffer = request.buffer;
    header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    secrets = secretsOf(request.url);
    const options = {
      max: 1,
      prepare: true,
      onnotice: () => {},
      connect_timeout: 10,
      // Never recycled: the driver's default closes a connection after 30 to 60 minutes, and a
      // transaction open on it would end with it (see writerLost).
      max_lifetime: 0,
      connection: {
        application_name: request.applicationName,
        search_path: request.schema,
        statement_timeout: request.statementTimeoutMs,
        // A client that stops in the middle of a transaction (paused, hung) must not hold its
        // row locks for ever: the server ends its session (workers lower this below their
        // lease, Store.limitIdleTransactions).
        idle_in_transaction_session_timeout: 60_000,
      },
      // Integers and timestamps as the text the server sends: the store converts what it reads.
      types: {},
      fetch_types: false,
    } as const;
    try {
      // A writer whose session ended (the server ended it, the network dropped) is never used
      // again: the driver would reconnect for the next statement, which would then run outside
      // the transaction the store believes open — committed at once, or lost.
      writer = postgres(request.url, { ...options, onclose: () => (writerLost = true) });
      const [row] = await writer.unsafe("SELECT pg_backend_pid() AS pid");
      backend = Number(row?.pid ?? 0);
      if (request.listen) {
        const version = header;
        // `onnotify` is an option postgres.js honours but does not declare in its types.
        const listening = {
          ...options,
          onnotify: (_channel: string, payload: string) => {
            if (payload === String(backend)) return;
            Atomics.add(version, SLOT.version, 1);
            scope.postMessage({ kind: "commit" });
          },
          onclose: () => Atomics.store(version, SLOT.listenerLost, 1),
        } as unknown as typeof options;
        listener = postgres(request.url, listening);
        await listener.unsafe("LISTEN libos_data");
      }
      answer({ ok: true, results: [], backend });
    } catch (error) {
      answer(failure(error, 0));
    }
  };

  /** Session settings to apply again on a new session (`session` requests). */
  const setup: PgStatement[] = [];
  const run = async (statements: readonly PgStatement[], continuing: boolean, session: boolean) => {
    const sql = writer;
    if (!sql) {
      answer({ ok: false, code: "LIBOS_CLOSED", message: "the connection is closed", index: 0 });
      return;
    }
    // A new transaction (or a read outside one) may run on the driver's new session; what
    // continues a transaction of the old one may not.
    if (writerLost && !continuing) {
      writerLost = false;
      try {
        for (const s of setup) await sql.unsafe(s.sql, s.params as (string | number | null)[]);
      } catch (error) {
        answer(failure(error, 0));
        return;
      }
    }
    if (writerLost) {
      answer({
        ok: false,
        code: "LIBOS_SESSION_LOST",
        message:
          "the server ended this connection's session (it sat in a transaction past idle_in_transaction_session_timeout — the process was paused or hung — or the server restarted, or the network dropped); what it had not committed is gone",
        index: 0,
      });
      return;
    }
    // Pipelined: every statement is sent before the first answer is awaited.
    const pending = statements.map((s) =>
      sql.unsafe(s.sql, s.params as (string | number | null)[], { prepare: true })
    );
    const settled = await Promise.allSettled(pending);
    const results: PgResult[] = [];
    for (const [index, outcome] of settled.entries()) {
      if (outcome.status === "rejected") {
        answer(failure(outcome.reason, index));
        return;
      }
      const rows = [...outcome.value] as Record<string, string | number | boolean | null>[];
      results.push({ rows, count: outcome.value.count ?? rows.length });
    }
    if (session) setup.push(...statements);
    answer({ ok: true, results });
  };

  const sync = async () => {
    try {
      // A round trip on the listening connection: the server delivers every notification
      // committed before it, so the counter is current when the answer arrives.
      if (listener) await listener.unsafe("SELECT 1");
      answer({ ok: true, results: [] });
    } catch (error) {
      answer(failure(error, 0));
    }
  };

  const close = async () => {
    const ends = [writer?.end({ timeout: 1 }), listener?.end({ timeout: 1 })];
    writer = undefined;
    listener = undefined;
    await Promise.allSettled(ends);
    answer({ ok: true, results: [] });
  };

  scope.onmessage = (event) => {
    const request = event.data;
    current = request.n;
    const work = request.kind === "open"
      ? open(request)
      : request.kind === "run"
      ? run(request.statements, request.continuing ?? true, request.session ?? false)
      : request.kind === "sync"
      ? sync()
      : close();
    work.catch((error) => answer(failure(error, 0)));
  };
}

if (import.meta.main) serve(globalThis as unknown as WorkerScope);
