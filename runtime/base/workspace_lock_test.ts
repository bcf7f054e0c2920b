import assert from "node:assert/strict";
import { join } from "node:path";
import { WorkspaceLock } from "./workspace_lock.ts";

/** Resolves to true when `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
  const done = await Promise.race([promise.then(() => true), timeout]);
  clearTimeout(timer);
  return done;
}

Deno.test("WorkspaceLock.shared() holds the cross-process lock while in use and releases it shortly after the last holder", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "libos-lock-" });
  const path = join(dir, "workspace.lock");
  try {
    using lock = new WorkspaceLock(path);
    // Another open file description on the same file stands for another runtime.
    using other = Deno.openSync(path, { read: true, write: true, create: true });
    let release!: () => void;
    const held = lock.shared(() => new Promise<void>((resolve) => release = resolve));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const exclusive = other.lock(true);
    assert.equal(await settlesWithin(exclusive, 100), false, "a shell run elsewhere waits");
    release();
    await held;
    // Released within the linger (a few ms), not held for good.
    assert.equal(await settlesWithin(exclusive, 2_000), true, "then it gets the lock");
    await other.unlock();
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("WorkspaceLock.exclusive() after back-to-back shared holders takes the file lock exclusively", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "libos-lock-" });
  const path = join(dir, "workspace.lock");
  try {
    using lock = new WorkspaceLock(path);
    using other = Deno.openSync(path, { read: true, write: true, create: true });
    for (let i = 0; i < 5; i++) await lock.shared(() => i);
    let release!: () => void;
    const held = lock.exclusive(() => new Promise<void>((resolve) => release = resolve));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Even a shared lock elsewhere waits while this runtime holds it exclusively.
    const shared = other.lock(false);
    assert.equal(await settlesWithin(shared, 100), false);
    release();
    await held;
    assert.equal(await settlesWithin(shared, 2_000), true);
    await other.unlock();
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
