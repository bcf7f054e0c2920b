/**
 * The shared fixture of the "as models call it" suites (`model_style_*_test.ts`): a runtime over
 * a temporary workspace with a directory beside it (outside it), one process whose tool calls go
 * through the broker as the agent's do, and a human who answers from a list and whose prompts are
 * kept; plus what those suites assert with — the whole tree under a directory (for "nothing
 * changed"), whether a path exists, a call that must park on a human and its resumption once
 * approved, and a replay script for the real `libos agent` launcher.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { HumanPendingError } from "../runtime/base/errors.ts";
import type { ToolResult } from "../runtime/broker/tool_broker.ts";
import type { HumanDecision, HumanPrompt } from "../runtime/human/human_channel.ts";
import type { SpawnOptions } from "../runtime/process/process_manager.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { testRuntime, type TestRuntimeOptions } from "../testing.ts";

/** A signal that never aborts: the calls in these suites run to their end. */
export const NEVER: AbortSignal = new AbortController().signal;

/** How {@link toolFixture} builds its runtime and its process. */
export interface ToolFixtureOptions
  extends Omit<TestRuntimeOptions, "workspaceDir" | "dirs" | "prompt"> {
  /** The human's answers, one per prompt, in order; once they run out every prompt is rejected. */
  readonly answers?: readonly HumanDecision[];
  /** The process (default: goal `"g"`, image `base-agent:v0`, the image's tools). */
  readonly spawn?: Partial<SpawnOptions>;
}

/** A runtime over `root/ws` with `root/outside` beside it; `await using` removes both. */
export interface ToolFixture extends AsyncDisposable {
  /** The runtime. */
  readonly runtime: Runtime;
  /** The temporary directory (real path) holding the workspace and the outside directory. */
  readonly root: string;
  /** The workspace (real path). */
  readonly ws: string;
  /** A directory beside the workspace, outside it. */
  readonly outside: string;
  /** The process whose calls {@link ToolFixture.call} makes. */
  readonly pid: string;
  /** What the human was shown, one entry per prompt. */
  readonly prompted: readonly string[];
  /** Calls a tool as the agent does (through the broker); the id counts up unless given. */
  call(tool: string, args: Record<string, unknown>, id?: string): Promise<ToolResult>;
  /** The absolute path of a workspace-relative one. */
  at(path: string): string;
}

/**
 * Creates a {@link ToolFixture}: full-access mode and no OS wall unless `options` say otherwise.
 *
 * @throws whatever `createRuntime()` throws, after removing the temporary directory.
 */
export async function toolFixture(options: ToolFixtureOptions = {}): Promise<ToolFixture> {
  const { answers: given, spawn, ...runtimeOptions } = options;
  const answers = [...(given ?? [])];
  const prompted: string[] = [];
  const prompt: HumanPrompt = {
    decide(_request, rendered) {
      prompted.push(rendered);
      return Promise.resolve(answers.shift() ?? { type: "reject", reason: "no answer left" });
    },
  };
  const t = await testRuntime({
    mode: "full-access",
    wall: false,
    ...runtimeOptions,
    workspaceDir: "ws",
    dirs: ["outside"],
    prompt,
  });
  const pid = t.spawn(spawn);
  let calls = 0;
  return {
    runtime: t.runtime,
    root: t.root,
    ws: t.workspace,
    outside: join(t.root, "outside"),
    pid,
    prompted,
    call: (name, args, id) =>
      t.runtime.tools.invoke(pid, { id: id ?? `call_${++calls}`, name, arguments: args }, NEVER),
    at: (path) => join(t.workspace, path),
    [Symbol.asyncDispose]: () => t[Symbol.asyncDispose](),
  };
}

/**
 * Every file (raw text, CR kept), directory (`"dir/": ""`) and symlink (`"-> target"`) under
 * `dir`, keyed by its path relative to `dir`: two of these are equal only if nothing changed.
 */
export function tree(dir: string, prefix = ""): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of Deno.readDirSync(join(dir, prefix))) {
    const rel = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isSymlink) out[rel] = `-> ${Deno.readLinkSync(join(dir, rel))}`;
    else if (entry.isDirectory) Object.assign(out, { [`${rel}/`]: "" }, tree(dir, rel));
    else out[rel] = Deno.readTextFileSync(join(dir, rel));
  }
  return out;
}

/** Whether anything (a file, a directory, a symlink, even a dangling one) is at `path`. */
export function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Asserts the call parked its process on a human (queue mode: the broker passes that on) and
 * returns the request's id.
 */
export async function parked(call: Promise<ToolResult>): Promise<string> {
  const error = await call.then(
    (result) => assert.fail(`expected the call to park, got ${JSON.stringify(result)}`),
    (e: unknown) => e,
  );
  assert.ok(error instanceof HumanPendingError, `parked, not ${String(error)}`);
  return error.request;
}

/** Approves the parked request `id` as a human and resumes the fixture's process with it. */
export function approveAndResume(
  f: ToolFixture,
  id: string,
): ReturnType<Runtime["human"]["resume"]> {
  f.runtime.human.approve(id, { by: "human:test" });
  return f.runtime.human.resume(f.pid, id, NEVER);
}

/**
 * Gives process `f.pid` an operator's capability with `effect` (allow, ask or deny) on the
 * workspace path `path` (`exact`, or the `subtree` under it) for `rights`.
 */
export function grantFs(
  f: { readonly runtime: Runtime; readonly pid: string },
  path: string,
  scope: "exact" | "subtree",
  effect: "allow" | "ask" | "deny",
  rights: readonly string[] = ["write"],
): void {
  f.runtime.authority.capabilities.grant({
    subject: f.pid,
    resource: { type: "fs", path, scope },
    rights: [...rights],
    effect,
    issuer: "operator",
  }, "operator");
}

/** Writes a replay script (one model turn a line) beside `workspace`, outside it; returns its path. */
export function replayScript(
  workspace: string,
  turns: readonly string[],
  name = "script.jsonl",
): string {
  const script = join(workspace, "..", name);
  Deno.writeTextFileSync(script, turns.join("\n") + "\n");
  return script;
}
