/**
 * Test fakes and fixtures for code that embeds Agent libOS: a clock that moves only when told,
 * reproducible ids, the scripted model that replays a session log (and the recorder that writes
 * one), in-memory stand-ins for the network and a spying filesystem, and {@link testRuntime}, a
 * runtime over a temporary workspace that removes itself when disposed. The runtime's own tests
 * use the same fixture. Nothing in `./mod.ts` imports this module.
 *
 * ```ts
 * import { executorFor } from "./mod.ts";
 * import { parseSessionLog, ScriptedModel, testRuntime } from "./testing.ts";
 *
 * await using t = await testRuntime({ mode: "workspace-write" });
 * const pid = t.spawn({ goal: "say hello" });
 * const model = new ScriptedModel(parseSessionLog('{"type":"model_turn","content":"hello"}'));
 * using scheduler = t.runtime.scheduler(executorFor(t.runtime, model));
 * await scheduler.runUntilIdle();
 * console.log(t.runtime.processes.get(pid).message === "hello"); // true
 * ```
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import type { SpawnOptions } from "./runtime/process/process_manager.ts";
import { createRuntime, type Runtime, type RuntimeOptions } from "./runtime/runtime.ts";

export { FakeClock } from "./runtime/base/clock.ts";
export { seededIds } from "./runtime/base/ids.ts";
export { RecordingModel, ScriptedModel } from "./runtime/model/scripted_model.ts";
export {
  ModelTurnRecord,
  parseSessionLog,
  SessionLogWriter,
  type SessionRecord,
} from "./runtime/model/session_log.ts";
export {
  type FakeNet,
  fakeNet,
  type FakeNetOptions,
  type FakeReply,
} from "./runtime/providers/net.ts";
export { type RecordedCall, recordingFilesystem } from "./runtime/providers/filesystem.ts";

/**
 * How {@link testRuntime} builds its runtime: the runtime's own options (all but `workspace`,
 * which the fixture makes; `db` defaults to `:memory:`), and the layout of the temporary
 * directory.
 */
export interface TestRuntimeOptions extends Omit<RuntimeOptions, "workspace"> {
  /** Prefix of the temporary directory's name (default `libos-test-`). */
  readonly prefix?: string;
  /**
   * The workspace, relative to the temporary directory (default: the directory itself), or an
   * absolute path elsewhere (which the caller removes).
   */
  readonly workspaceDir?: string;
  /** More directories to create under the temporary directory, beside or inside the workspace. */
  readonly dirs?: readonly string[];
  /** Files written into the workspace before the runtime opens: relative path → text. */
  readonly files?: Readonly<Record<string, string>>;
  /**
   * Runtime options that name paths in the temporary directory (a database file beside the
   * workspace, a search path of fake programs), given its real path; they override the others.
   */
  readonly fromRoot?: (root: string) => Omit<RuntimeOptions, "workspace">;
}

/** A runtime over a temporary workspace; `await using` closes it and removes the directory. */
export interface TestRuntime extends AsyncDisposable {
  /** The runtime. */
  readonly runtime: Runtime;
  /** The temporary directory (its real path), which holds the workspace. */
  readonly root: string;
  /** The workspace: `root`, or `workspaceDir` resolved against it. */
  readonly workspace: string;
  /** The database: `:memory:` unless the options named another. */
  readonly db: string;
  /** Spawns a process (goal `"g"`, image `base-agent:v0` unless `options` say) and returns its pid. */
  spawn(options?: Partial<SpawnOptions>): string;
  /**
   * Opens another runtime over the same workspace and database (the caller closes it): the
   * fixture's runtime options, overridden by `options`.
   */
  reopen(options?: Omit<RuntimeOptions, "workspace" | "db">): Promise<Runtime>;
}

/**
 * Creates a runtime over a fresh temporary workspace. Disposing it closes the runtime, then
 * removes the temporary directory (even when closing fails).
 *
 * @throws whatever `createRuntime()` throws, after removing the temporary directory.
 */
export async function testRuntime(options: TestRuntimeOptions = {}): Promise<TestRuntime> {
  const { prefix, workspaceDir, dirs, files, fromRoot, ...given } = options;
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: prefix ?? "libos-test-" }));
  const workspace = workspaceDir === undefined ? root : resolve(root, workspaceDir);
  const runtimeOptions = { ...given, ...fromRoot?.(root) };
  const db = runtimeOptions.db ?? ":memory:";
  let runtime: Runtime;
  try {
    for (const dir of [workspace, ...(dirs ?? []).map((d) => join(root, d))]) {
      Deno.mkdirSync(dir, { recursive: true });
    }
    for (const [path, text] of Object.entries(files ?? {})) {
      Deno.mkdirSync(dirname(join(workspace, path)), { recursive: true });
      Deno.writeTextFileSync(join(workspace, path), text);
    }
    runtime = await createRuntime({ ...runtimeOptions, workspace, db });
  } catch (error) {
    Deno.removeSync(root, { recursive: true });
    throw error;
  }
  return {
    runtime,
    root,
    workspace,
    db,
    spawn: (spawnOptions = {}) =>
      runtime.processes.spawn({ goal: "g", image: "base-agent:v0", ...spawnOptions }).pid,
    reopen: (more = {}) => createRuntime({ ...runtimeOptions, ...more, workspace, db }),
    async [Symbol.asyncDispose]() {
      try {
        await runtime.close();
      } finally {
        Deno.removeSync(root, { recursive: true });
      }
    },
  };
}
