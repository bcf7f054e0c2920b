/**
 * The per-workspace lock that serialises filesystem primitives against shell runs: filesystem
 * primitives hold it shared (they may overlap each other), a shell run holds it exclusive. Inside
 * one runtime it is an async read-write lock; across runtimes on the same workspace it is also an
 * advisory `flock` on a lock file in the state directory.
 *
 * What it does not cover (the remaining window): programs outside libos (an editor, the user's
 * own terminal), and background processes a shell command leaves running after it returns — they
 * can change the workspace between a primitive's checks and its effect. The primitives' own
 * verification (identity checks after opening, see `primitives/filesystem.ts`) is what still
 * holds then.
 *
 * @module
 */

interface Waiter {
  readonly exclusive: boolean;
  readonly resolve: () => void;
}

/** A read-write lock over one workspace. */
export class WorkspaceLock implements Disposable {
  readonly #path: string | null;
  #file: Deno.FsFile | undefined;
  #readers = 0;
  #writer = false;
  #queue: Waiter[] = [];
  /** What this runtime holds of the cross-process lock, and the chain that changes it in order. */
  #held: "none" | "shared" | "exclusive" = "none";
  #chain: Promise<void> = Promise.resolve();

  /** `lockFile` is the cross-process lock file, or `null` for an in-process lock only. */
  constructor(lockFile: string | null) {
    this.#path = lockFile;
  }

  #grantable(exclusive: boolean): boolean {
    return exclusive
      ? !this.#writer && this.#readers === 0
      : !this.#writer && !this.#queue.some((w) => w.exclusive);
  }

  /** Brings the cross-process lock in line with what this runtime's holders need. */
  #sync(): Promise<void> {
    const step = this.#chain.catch(() => {}).then(async () => {
      if (this.#path === null) return;
      const want = this.#writer ? "exclusive" : this.#readers > 0 ? "shared" : "none";
      if (want === this.#held) return;
      this.#file ??= await Deno.open(this.#path, {
        read: true,
        write: true,
        create: true,
        mode: 0o600,
      });
      if (want === "none") await this.#file.unlock();
      else await this.#file.lock(want === "exclusive");
      this.#held = want;
    });
    this.#chain = step;
    return step;
  }

  async #acquire(exclusive: boolean): Promise<void> {
    if (!this.#grantable(exclusive)) {
      await new Promise<void>((resolve) => this.#queue.push({ exclusive, resolve }));
    } else if (exclusive) {
      this.#writer = true;
    } else {
      this.#readers++;
    }
    await this.#sync();
  }

  async #release(exclusive: boolean): Promise<void> {
    if (exclusive) this.#writer = false;
    else this.#readers--;
    // Wake the next writer, or every reader queued before it.
    while (this.#queue.length > 0) {
      const next = this.#queue[0]!;
      if (next.exclusive) {
        if (this.#writer || this.#readers > 0) break;
        this.#queue.shift();
        this.#writer = true;
        next.resolve();
        break;
      }
      if (this.#writer) break;
      this.#queue.shift();
      this.#readers++;
      next.resolve();
    }
    await this.#sync();
  }

  /** Runs `fn` holding the lock shared (filesystem primitives). */
  async shared<T>(fn: () => T | Promise<T>): Promise<T> {
    await this.#acquire(false);
    try {
      return await fn();
    } finally {
      await this.#release(false);
    }
  }

  /** Runs `fn` holding the lock exclusively (shell runs). */
  async exclusive<T>(fn: () => T | Promise<T>): Promise<T> {
    await this.#acquire(true);
    try {
      return await fn();
    } finally {
      await this.#release(true);
    }
  }

  /** Closes the lock file (which releases the cross-process lock). */
  [Symbol.dispose](): void {
    try {
      this.#file?.close();
    } catch { /* already closed */ }
    this.#file = undefined;
    this.#held = "none";
  }
}
