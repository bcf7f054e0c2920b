/**
 * What both stores do around their transactions the same way: refusing a step that returns a
 * promise, the per-transaction memo's shape, the commit listeners, and the commit fence
 * (`Store.fenceCommits`).
 *
 * @module
 */
import { StoreError } from "../base/errors.ts";
import type { AuditTail } from "./store.ts";

/**
 * Refuses a step callback's result that is a promise (DESIGN §6: no transaction spans an
 * `await`); the promise's own failure is swallowed, the refusal is what the caller sees.
 * @throws {TypeError} for a thenable.
 */
export function refuseAsyncStep(result: unknown): void {
  const thenable = (typeof result === "object" || typeof result === "function") &&
    result !== null && typeof (result as { then?: unknown }).then === "function";
  if (!thenable) return;
  Promise.resolve(result).catch(() => {});
  throw new TypeError(
    "Store.step() callbacks must be synchronous: a step may not span an await (DESIGN §6); load and record in the step, do the I/O outside it",
  );
}

/** What a store remembers within one open transaction (read once, then answered from here). */
export interface TransactionMemo {
  readonly tails: Map<string, AuditTail | undefined>;
  lastSeq?: number;
  dataVersion?: number;
  readonly versions: Map<string, number | undefined>;
}

/** An empty {@link TransactionMemo}. */
export function newMemo(): TransactionMemo {
  return { tails: new Map(), versions: new Map() };
}

/** The listeners told after each commit (`Store.onCommit`). */
export class CommitListeners {
  readonly #listeners = new Set<() => void>();

  /** Adds one; returns the function that removes it. */
  add(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Removes them all (the store closes). */
  clear(): void {
    this.#listeners.clear();
  }

  /**
   * Tells every listener of a commit to `location`; each runs even when one before it failed.
   * @throws {StoreError} `store_listener_failed` naming the first failure (the commit stands).
   */
  committed(location: string): void {
    let failure: unknown;
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure === undefined) return;
    throw new StoreError(
      "store_listener_failed",
      `The commit to "${location}" succeeded, but a commit listener failed (${
        failure instanceof Error ? failure.message : String(failure)
      }); the steps are saved, do not repeat them`,
      { cause: failure },
    );
  }
}

/** The fence of a store's commits (`Store.fenceCommits`): one at a time. */
export class CommitFence {
  #fence: { readonly owner: string; readonly roots: () => readonly string[] } | undefined;

  /** Fences every commit from now on; returns the function that lifts this fence. */
  set(owner: string, roots: () => readonly string[]): () => void {
    const fence = { owner, roots };
    this.#fence = fence;
    return () => {
      if (this.#fence === fence) this.#fence = undefined;
    };
  }

  /** What the commit about to happen must check: the owner and its roots now, if any. */
  now(): { readonly owner: string; readonly roots: readonly string[] } | undefined {
    const fence = this.#fence;
    if (fence === undefined) return undefined;
    const roots = fence.roots();
    return roots.length === 0 ? undefined : { owner: fence.owner, roots };
  }
}
