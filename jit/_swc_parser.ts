/**
 * The host side of the parser worker (`_swc_worker.ts`): one parse at a time, a time cap per
 * parse, and recycling — a fresh Worker (a fresh swc instance) after a number of parses, after
 * any failure that is not a syntax error (a Wasm trap on deep nesting leaves the instance
 * unusable), and whenever the positions swc reports stop matching the source (the worker counts
 * positions itself; a mismatch means it lost count).
 *
 * @module
 */
import { LibosError } from "../runtime/base/errors.ts";
import type { JitViolation } from "./_rules.ts";
import type { ParseReply, ParseRequest } from "./_swc_worker.ts";

/** What a check gives: the rules' violations, or why the source did not parse. */
export type ParseOutcome =
  | { readonly ok: true; readonly violations: JitViolation[] }
  | { readonly ok: false; readonly message: string };

/** Options of {@link SwcParser}. */
export interface SwcParserOptions {
  /** Parses per Worker before it is replaced (default 500). */
  readonly recycleAfter?: number;
  /** The longest one parse may take, milliseconds (default 5,000). */
  readonly timeoutMs?: number;
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
   * Parses TypeScript and runs the rules over it (in the worker); a syntax error is an outcome,
   * not an exception.
   * @throws {LibosError} `validator_unavailable` when the parser itself cannot run.
   */
  check(source: string, allowImports: readonly string[]): Promise<ParseOutcome> {
    const run = this.#queue.then(() => this.#check(source, allowImports));
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Transpiles TypeScript to JavaScript (types stripped), or undefined when swc cannot (a syntax
   * error, a trap, no answer in time): the caller then runs the TypeScript as it is.
   */
  transpile(source: string): Promise<string | undefined> {
    const run = this.#queue.then(async () => {
      const reply = await this.#ask({ id: this.#nextId++, kind: "transpile", source });
      // The transform numbered positions this worker's next check would not expect.
      this.#recycle();
      return reply !== "timeout" && reply.kind === "transpiled" ? reply.code : undefined;
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  async #check(source: string, allowImports: readonly string[]): Promise<ParseOutcome> {
    for (let attempt = 1;; attempt++) {
      const reply = await this.#ask({ id: this.#nextId++, kind: "check", source, allowImports });
      if (reply === "timeout") {
        return { ok: false, message: `the parser gave no answer within ${this.#timeoutMs} ms` };
      }
      switch (reply.kind) {
        case "checked":
          return { ok: true, violations: reply.violations };
        case "syntax":
          return { ok: false, message: reply.message };
        case "failed":
          // A trap (deep nesting) leaves the instance unusable.
          this.#recycle();
          return { ok: false, message: reply.message };
        case "transpiled":
          return { ok: false, message: "the parser answered a check with a transpile" };
        case "drift":
          // The worker lost count of positions: start afresh once.
          this.#recycle();
          if (attempt >= 2) {
            return { ok: false, message: "the parser reported positions outside the source" };
          }
      }
    }
  }

  /**
   * Starts the worker now, so its start (swc's 18 MB Wasm module loading, on another thread)
   * overlaps the caller's own work instead of the first parse's wait. Idempotent.
   */
  warm(): void {
    this.#started();
  }

  #started(): Worker {
    return this.#worker ??= new Worker(new URL("./_swc_worker.ts", import.meta.url), {
      type: "module",
    });
  }

  #ask(request: ParseRequest): Promise<ParseReply | "timeout"> {
    if (this.#parses >= this.#recycleAfter) this.#recycle();
    this.#parses++;
    const worker = this.#started();
    const id = request.id;
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
      worker.postMessage(request);
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
