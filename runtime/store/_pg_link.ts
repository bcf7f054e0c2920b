/**
 * The synchronous side of the PostgreSQL connection thread (`_pg_worker.ts`): posts a request
 * and blocks on the shared buffer until the answer is written (DESIGN §6: the `Store` interface
 * is synchronous; a networked backend blocks on a worker thread).
 *
 * @module
 */
import {
  HEADER_BYTES,
  type NumberedRequest,
  type PgEvent,
  type PgReply,
  type PgRequest,
  type PgResult,
  type PgStatement,
  SLOT,
} from "./_pg_worker.ts";

export type { PgResult, PgStatement };

/** A failed request: the server's SQLSTATE (or a socket code) and its scrubbed message. */
export class PgFailure extends Error {
  /** SQLSTATE, a socket code such as `ECONNREFUSED`, or `LIBOS_TIMEOUT`/`LIBOS_CLOSED`. */
  readonly code: string;
  /** Which statement of the batch failed. */
  readonly index: number;
  /** The constraint a violation names. */
  readonly constraint: string | undefined;

  /** Wraps one failed answer. */
  constructor(code: string, message: string, index: number, constraint?: string) {
    super(message);
    this.name = "PgFailure";
    this.code = code;
    this.index = index;
    this.constraint = constraint;
  }
}

/** How to open a {@link PgLink}. */
export interface PgLinkOptions {
  readonly url: string;
  readonly schema: string;
  /** Also LISTEN for other connections' commits (the store's `dataVersion`). */
  readonly listen: boolean;
  /** The longest a statement may run on the server, and (plus a margin) the longest a wait lasts. */
  readonly statementTimeoutMs: number;
  readonly applicationName: string;
}

/** Largest answer one request may return (a page of 10,000 large rows still fits). */
const MAX_ANSWER_BYTES = 1 << 30;

/** A connection thread and the buffer it answers through. */
export class PgLink {
  readonly #worker: Worker;
  readonly #buffer: SharedArrayBuffer;
  readonly #header: Int32Array;
  readonly #waitMs: number;
  readonly #decoder = new TextDecoder();
  #closed = false;
  readonly #commitListeners = new Set<() => void>();
  /** The writer connection's server process id (its own commits do not count as others'). */
  readonly backend: number;

  private constructor(worker: Worker, buffer: SharedArrayBuffer, waitMs: number, backend: number) {
    this.#worker = worker;
    this.#buffer = buffer;
    this.#header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    this.#waitMs = waitMs;
    this.backend = backend;
    worker.onmessage = (event: MessageEvent<PgEvent>) => {
      if (event.data?.kind !== "commit") return;
      for (const listener of [...this.#commitListeners]) listener();
    };
  }

  /** Calls `listener` (on this thread's event loop) after another connection commits. */
  onCommit(listener: () => void): () => void {
    this.#commitListeners.add(listener);
    return () => this.#commitListeners.delete(listener);
  }

  /**
   * Starts the connection thread and connects (both connections when `listen`).
   * @throws {PgFailure} when the server cannot be reached or refuses the login.
   */
  static open(options: PgLinkOptions): PgLink {
    const buffer = new SharedArrayBuffer(HEADER_BYTES + (1 << 16), {
      maxByteLength: MAX_ANSWER_BYTES,
    });
    const worker = new Worker(new URL("./_pg_worker.ts", import.meta.url), { type: "module" });
    // Connecting may take up to the connect timeout (10 s) and the worker's start.
    const waitMs = options.statementTimeoutMs + 5_000;
    const header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    const reply = exchange(
      worker,
      header,
      buffer,
      {
        kind: "open",
        url: options.url,
        schema: options.schema,
        buffer,
        applicationName: options.applicationName,
        statementTimeoutMs: options.statementTimeoutMs,
        listen: options.listen,
      },
      Math.max(waitMs, 20_000),
      new TextDecoder(),
    );
    if (!reply.ok) {
      worker.terminate();
      throw new PgFailure(reply.code, reply.message, reply.index, reply.constraint);
    }
    return new PgLink(worker, buffer, waitMs, reply.backend ?? 0);
  }

  /**
   * Runs a batch of statements pipelined on the writer connection; returns one result each.
   * `continuing` (the default): they belong to a transaction begun earlier, so they are refused
   * if the session it was begun in has ended; false for a new transaction or a read outside one.
   * `session`: settings, applied again first on any new session the driver opens.
   * @throws {PgFailure} for the first statement that failed (later ones did not run).
   */
  run(
    statements: readonly PgStatement[],
    options: { readonly continuing?: boolean; readonly session?: boolean } = {},
  ): PgResult[] {
    const reply = this.#ask({
      kind: "run",
      statements,
      continuing: options.continuing ?? true,
      session: options.session ?? false,
    });
    if (!reply.ok) throw new PgFailure(reply.code, reply.message, reply.index, reply.constraint);
    return reply.results;
  }

  /** How many commits of other connections the listener has seen, after a round trip to it. */
  syncedVersion(): number {
    const reply = this.#ask({ kind: "sync" });
    if (!reply.ok) throw new PgFailure(reply.code, reply.message, reply.index, reply.constraint);
    return this.seenVersion();
  }

  /** The listener's counter as it stands (no round trip). */
  seenVersion(): number {
    return Atomics.load(this.#header, SLOT.version);
  }

  /** Whether the listening connection has closed (then `dataVersion` cannot be trusted). */
  listenerLost(): boolean {
    return Atomics.load(this.#header, SLOT.listenerLost) === 1;
  }

  /** Ends both connections and the thread. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#commitListeners.clear();
    try {
      this.#ask({ kind: "close" }, 3_000);
    } catch { /* the thread is terminated below either way */ }
    this.#worker.terminate();
  }

  #ask(request: PgRequest, waitMs = this.#waitMs): PgReply {
    if (this.#closed && request.kind !== "close") {
      return { ok: false, code: "LIBOS_CLOSED", message: "the connection is closed", index: 0 };
    }
    const reply = exchange(
      this.#worker,
      this.#header,
      this.#buffer,
      request,
      waitMs,
      this.#decoder,
    );
    if (!reply.ok && reply.code === "LIBOS_TIMEOUT") {
      // The thread may still write a late answer into the buffer: it is not used again.
      this.#closed = true;
      this.#worker.terminate();
    }
    return reply;
  }
}

function exchange(
  worker: Worker,
  header: Int32Array,
  buffer: SharedArrayBuffer,
  request: PgRequest,
  waitMs: number,
  decoder: TextDecoder,
): PgReply {
  // Numbered: an answer written for an earlier request is never read as this one's.
  const n = (Atomics.load(header, SLOT.request) + 1) | 0 || 1;
  Atomics.store(header, SLOT.state, 0);
  const numbered: NumberedRequest = { ...request, n };
  worker.postMessage(numbered);
  const deadline = performance.now() + waitMs;
  let outcome: "ok" | "timed-out" = "ok";
  for (;;) {
    const seen = Atomics.load(header, SLOT.request);
    if (seen === n) break;
    const left = deadline - performance.now();
    if (left <= 0 || Atomics.wait(header, SLOT.request, seen, left) === "timed-out") {
      outcome = Atomics.load(header, SLOT.request) === n ? "ok" : "timed-out";
      break;
    }
  }
  if (outcome === "timed-out") {
    return {
      ok: false,
      code: "LIBOS_TIMEOUT",
      message: `PostgreSQL did not answer within ${Math.round(waitMs / 1000)} s`,
      index: 0,
    };
  }
  const length = Atomics.load(header, SLOT.length);
  // A copy: TextDecoder does not read shared memory.
  const bytes = new Uint8Array(length);
  bytes.set(new Uint8Array(buffer, HEADER_BYTES, length));
  return JSON.parse(decoder.decode(bytes)) as PgReply;
}
