/**
 * The host side of the parser worker (`_swc_worker.ts`): one parse at a time, a time cap per
 * parse, and recycling — a fresh Worker (a fresh swc instance) after a number of parses, after
 * any failure that is not a syntax error (a Wasm trap on deep nesting leaves the instance
 * unusable), and whenever the positions swc reports stop matching the source (the worker counts
 * positions itself; a mismatch means it lost count).
 *
 * @module
 */
import { LibosError } from "../runtime/errors.ts";
import type { ParseReply } from "./_swc_worker.ts";

/** What a parse gives the rules: the program and the position of the source's first byte. */
export type ParseOutcome =
  | { readonly ok: true; readonly program: unknown; readonly base: number }
  | { readonly ok: false; readonly message: string };

/** Options of {@link SwcParser}. */
export interface SwcParserOptions {
  /** Parses per Worker before it is replaced (default 500). */
  readonly recycleAfter?: number;
  /** The longest one parse may take, milliseconds (default 5,000). */
  readonly timeoutMs?: number;
}

/** A span as swc reports it. */
interface Span {
  readonly start: number;
  readonly end: number;
}

function spanOf(program: unknown): Span | undefined {
  if (typeof program !== "object" || program === null || !("span" in program)) return undefined;
  const span = program.span;
  if (typeof span !== "object" || span === null) return undefined;
  const { start, end } = span as Record<string, unknown>;
  return typeof start === "number" && typeof end === "number" ? { start, end } : undefined;
}

/** swc in a recycled Worker. Dispose it to terminate the Worker. */
export class SwcParser implements AsyncDisposable {
  readonly #recycleAfter: number;
  readonly #timeoutMs: number;
  #worker: Worker | undefined;
  #parses = 0;
  #nextId = 0;
  /** The previous parse, so parses run one at a time. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: SwcParserOptions = {}) {
    this.#recycleAfter = options.recycleAfter ?? 500;
    this.#timeoutMs = options.timeoutMs ?? 5_000;
  }

  /**
   * Parses TypeScript; a syntax error is an outcome, not an exception.
   * @throws {LibosError} `validator_unavailable` when the parser itself cannot run.
   */
  parse(source: string, byteLength: number): Promise<ParseOutcome> {
    const run = this.#queue.then(() => this.#parse(source, byteLength));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #parse(source: string, byteLength: number): Promise<ParseOutcome> {
    for (let attempt = 1;; attempt++) {
      const reply = await this.#ask(source);
      if (reply === "timeout") {
        return { ok: false, message: `the parser gave no answer within ${this.#timeoutMs} ms` };
      }
      if (!reply.ok) {
        // A syntax error leaves swc usable; anything else (a trap) does not.
        if (!reply.message.includes("Syntax Error")) this.#recycle();
        return { ok: false, message: reply.message };
      }
      const span = spanOf(reply.program);
      const inside = span !== undefined && span.start >= reply.base &&
        span.end <= reply.base + byteLength;
      if (inside) return { ok: true, program: reply.program, base: reply.base };
      // The worker lost count of positions: start afresh once.
      this.#recycle();
      if (attempt >= 2) {
        return { ok: false, message: "the parser reported positions outside the source" };
      }
    }
  }

  #ask(source: string): Promise<ParseReply | "timeout"> {
    if (this.#parses >= this.#recycleAfter) this.#recycle();
    this.#parses++;
    const worker = this.#worker ??= new Worker(new URL("./_swc_worker.ts", import.meta.url), {
      type: "module",
    });
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        this.#recycle();
        resolve("timeout");
      }, this.#timeoutMs);
      const onMessage = (event: MessageEvent<ParseReply>) => {
        if (event.data.id !== id) return;
        cleanup();
        resolve(event.data);
      };
      const onError = (event: ErrorEvent) => {
        event.preventDefault();
        cleanup();
        this.#recycle();
        reject(
          new LibosError(
            "validator_unavailable",
            "runtime",
            `The JIT validator's parser could not run (${event.message}); nothing was validated. Check that libos can read its jit/ directory and that the pinned @swc/wasm-web package is installed (deno install)`,
          ),
        );
      };
      const cleanup = () => {
        clearTimeout(timer);
        worker.removeEventListener("message", onMessage);
        worker.removeEventListener("error", onError);
      };
      worker.addEventListener("message", onMessage);
      worker.addEventListener("error", onError);
      worker.postMessage({ id, source });
    });
  }

  #recycle(): void {
    this.#worker?.terminate();
    this.#worker = undefined;
    this.#parses = 0;
  }

  [Symbol.asyncDispose](): Promise<void> {
    const done = this.#queue.then(() => this.#recycle());
    return done;
  }
}
