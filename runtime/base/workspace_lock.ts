/**
 * The per-workspace lock that serialises filesystem primitives against shell runs: filesystem
 * primitives hold it shared (they may overlap each other), a shell run holds it exclusive while
 * it prepares and starts (the shield's and the repository scan's view of the workspace, the
 * approvals it uses up, its ledger intent) — not while the command runs, which would stall every
 * filesystem primitive of every process for as long as a test suite or a build takes. Inside
 * one runtime it is an async read-write lock; across runtimes on the same workspace it is also an
 * advisory `flock` on a lock file in the state directory.
 *
 * What it does not cover (the remaining window): programs outside libos (an editor, the user's
 * own terminal), a running shell command, and background processes a command leaves running
 * after it returns — they can change the workspace between a primitive's checks and its effect. The primitives' own
 * verification (identity checks after opening, see `primitives/filesystem.ts`) is what still
 * holds then.
 *
 * @module
 */

/** How long an unused shared lock is kept before it is released (ms). */
const LINGER_MS = 3;

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
  /** The pending release of a shared lock nobody in this runtime holds any more. */
  #linger: ReturnType<typeof setTimeout> | undefined;
  #lingerDue = false;
  /** Whether the shared lock was used since the linger timer was armed. */
  #touched = false;

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
      if (this.#held === "shared") this.#touched = true;
      if (want === "exclusive") this.#cancelLinger();
      if (want === this.#held) return;
      if (want === "none" && this.#held === "shared") {
        // Back-to-back primitives would lock and unlock the file for each operation (two
        // round trips through the event loop each): the shared lock lingers instead, until a
        // LINGER_MS passes in which nobody used it — so another runtime's shell run waits at
        // most twice LINGER_MS longer. One timer serves a whole burst of operations.
        if (!this.#lingerDue) {
          this.#armLinger();
          return;
        }
        this.#lingerDue = false;
      }
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

  /** Arms the linger timer, unless it is armed already. */
  #armLinger(): void {
    if (this.#linger !== undefined) return;
    this.#touched = false;
    this.#linger = setTimeout(() => {
      this.#linger = undefined;
      // Held again: the release that ends this use arms it anew.
      if (this.#readers > 0 || this.#writer) return;
      if (this.#touched) this.#armLinger();
      else {
        this.#lingerDue = true;
        void this.#sync();
      }
    }, LINGER_MS);
    Deno.unrefTimer(this.#linger);
  }

  #cancelLinger(): void {
    clearTimeout(this.#linger);
    this.#linger = undefined;
    this.#lingerDue = false;
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
    this.#cancelLinger();
    try {
      this.#file?.close();
    } catch { /* already closed */ }
    this.#file = undefined;
    this.#held = "none";
  }
}
