/**
 * A scratch workspace and state directory for CLI tests, with `runCli` wired to them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { sha256Hex } from "../runtime/base/canonical_json.ts";
import { runCli } from "../cli/mod.ts";

/** The repository root. */
export const REPO = fileURLToPath(new URL("..", import.meta.url));

/** What one CLI invocation printed and returned. */
export interface Run {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A scratch workspace with the CLI wired to it. */
export interface Sandbox extends Disposable {
  readonly workspace: string;
  readonly state: string;
  /** Runs the CLI in this process. */
  cli(...args: string[]): Promise<Run>;
  /** Parses stdout of a `--json` run. */
  json(...args: string[]): Promise<Run & { readonly doc: Record<string, unknown> }>;
  /** The workspace's default database file. */
  dbPath(): string;
}

/** Makes a sandbox; dispose it to remove everything. */
export function sandbox(): Sandbox {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-cli-" }));
  const workspace = join(root, "ws");
  const state = join(root, "state");
  Deno.mkdirSync(workspace);
  const env = {
    get: (name: string) =>
      ({ XDG_STATE_HOME: state, HOME: join(root, "home") } as Record<string, string>)[name],
  };
  const s: Sandbox = {
    workspace,
    state,
    async cli(...args) {
      let stdout = "";
      let stderr = "";
      const status = await runCli(args, {
        stdout: (t) => stdout += t,
        stderr: (t) => stderr += t,
        env,
        cwd: workspace,
      });
      return { status, stdout, stderr };
    },
    async json(...args) {
      const run = await s.cli(...args, "--json");
      return { ...run, doc: JSON.parse(run.stdout) };
    },
    dbPath: () => join(state, "libos", `${sha256Hex(workspace)}.db`),
    [Symbol.dispose]() {
      Deno.removeSync(root, { recursive: true });
    },
  };
  return s;
}

/** Runs raw SQL on a database with the audit triggers dropped, as a tamperer would. */
export function tamper(dbPath: string, sql: string): void {
  const raw = new DatabaseSync(dbPath);
  // A careful tamperer puts the append-only triggers back exactly as they were.
  const triggers = raw.prepare("SELECT sql FROM sqlite_schema WHERE type = 'trigger'").all();
  raw.exec("DROP TRIGGER IF EXISTS audit_no_update; DROP TRIGGER IF EXISTS audit_no_delete;");
  raw.exec(sql);
  for (const t of triggers) raw.exec(String(t.sql));
  raw.close();
}

/**
 * Runs `deno task …` in a fresh process. TMPDIR points at a private folder, so the temporary
 * directory grant does not happen to cover the workspace, state or database under test.
 */
export function task(cwd: string, state: string, ...args: string[]): Promise<Run> {
  return taskWith({}, cwd, state, ...args);
}

/** {@link task} with more environment variables (`OPENAI_*` for a local endpoint, …). */
export async function taskWith(
  more: Record<string, string>,
  cwd: string,
  state: string,
  ...args: string[]
): Promise<Run> {
  const temp = Deno.makeTempDirSync({ prefix: "libos-task-tmp-" });
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", `--config=${join(REPO, "deno.json")}`, ...args],
    cwd,
    // A fresh environment without INIT_CWD: under "deno task test" the outer task's INIT_CWD
    // would otherwise be inherited and win over the subprocess's cwd.
    clearEnv: true,
    env: {
      ...Object.fromEntries(Object.entries(Deno.env.toObject()).filter(([k]) => k !== "INIT_CWD")),
      ...more,
      XDG_STATE_HOME: state,
      TMPDIR: temp,
      DENO_NO_UPDATE_CHECK: "1",
      NO_COLOR: "1",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  Deno.removeSync(temp, { recursive: true });
  const decoder = new TextDecoder();
  return {
    status: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/**
 * A spawned process in `s` with a JIT tool registered for it through the in-process CLI: the
 * candidate (name, description, schemas, source, tests) is written to the workspace, proposed,
 * validated, the register right granted by the operator, and registered. Returns the pid.
 */
export async function withJitTool(
  s: Sandbox,
  candidate: { readonly name: string } & Record<string, unknown>,
): Promise<string> {
  const spawned = await s.json("spawn", "--goal", `use ${candidate.name}`);
  assert.equal(spawned.status, 0, spawned.stderr);
  const pid = (spawned.doc.process as { pid: string }).pid;
  const file = `${candidate.name}.json`;
  Deno.writeTextFileSync(join(s.workspace, file), JSON.stringify(candidate));
  const oid = (await s.json("jit", "propose", pid, file)).doc.oid as string;
  const validated = await s.json("jit", "validate", pid, oid);
  assert.equal(validated.doc.ok, true, validated.stdout);
  const granted = await s.cli(
    "grant",
    pid,
    "--resource",
    `tool:${candidate.name}`,
    "--right",
    "register",
  );
  assert.equal(granted.status, 0, granted.stderr);
  const registered = await s.cli("jit", "register", pid, oid);
  assert.equal(registered.status, 0, registered.stderr);
  return pid;
}
