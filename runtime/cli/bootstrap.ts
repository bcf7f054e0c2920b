/**
 * The `libos` entry point (DESIGN §11). The workspace and database are known only at run time, so
 * this small script computes them and re-executes `deno run` on `main.ts` with permissions
 * scoped to exactly those places: read and write on the workspace, the state directory, the
 * temporary directory and an explicit `--db` file; environment access only to the variables
 * libos reads. It is a second wall behind the runtime's own checks, not a replacement for them.
 *
 * @module
 */
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Environment variables the runtime reads. */
export const RUNTIME_ENV = [
  "HOME",
  "XDG_STATE_HOME",
  "XDG_CONFIG_HOME",
  "TMPDIR",
  "NO_COLOR",
  "TERM",
  "LIBOS_CWD",
];

/** What the bootstrap knows about the invocation. */
export interface BootstrapFacts {
  readonly args: readonly string[];
  /** The directory the user ran the command in. */
  readonly cwd: string;
  readonly env: { get(name: string): string | undefined };
  /** Canonicalises a path; returns the input when it does not exist. */
  readonly realPath: (path: string) => string;
}

/** The value of `--name VALUE` or `--name=VALUE` in raw arguments (the last one wins). */
function optionValue(args: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === `--${name}`) value = args[i + 1];
    else if (arg?.startsWith(`--${name}=`)) value = arg.slice(name.length + 3);
  }
  return value;
}

function stateDir(env: BootstrapFacts["env"]): string | undefined {
  const xdg = env.get("XDG_STATE_HOME");
  if (xdg && isAbsolute(xdg)) return join(xdg, "libos");
  const home = env.get("HOME");
  if (home && isAbsolute(home)) return join(home, ".local", "state", "libos");
  return undefined;
}

/** The `deno run` permission flags for one invocation. */
export function permissionFlags(facts: BootstrapFacts): string[] {
  const workspace = facts.realPath(resolve(facts.cwd, optionValue(facts.args, "workspace") ?? "."));
  const read = new Set<string>([workspace]);
  const write = new Set<string>([workspace]);
  const state = stateDir(facts.env);
  if (state) {
    read.add(state);
    write.add(state);
  }
  const temp = facts.realPath(facts.env.get("TMPDIR") || "/tmp");
  read.add(temp);
  write.add(temp);
  const db = optionValue(facts.args, "db");
  if (db !== undefined && db !== ":memory:" && db !== "") {
    const file = resolve(facts.cwd, db);
    const real = join(facts.realPath(dirname(file)), file.slice(dirname(file).length + 1));
    for (const path of [real, `${real}-wal`, `${real}-shm`, `${real}-journal`]) {
      read.add(path);
      write.add(path);
    }
    // Reading the directory lets the runtime canonicalise the path it was given.
    read.add(dirname(real));
  }
  const list = (paths: Set<string>) => [...paths].map((p) => p.replaceAll(",", ",,")).join(",");
  return [
    "--no-prompt",
    `--allow-read=${list(read)}`,
    `--allow-write=${list(write)}`,
    `--allow-env=${RUNTIME_ENV.join(",")}`,
  ];
}

if (import.meta.main) {
  const cwd = Deno.env.get("INIT_CWD") ?? Deno.cwd();
  const realPath = (path: string) => {
    try {
      return Deno.realPathSync(path);
    } catch {
      return path;
    }
  };
  const here = dirname(fileURLToPath(import.meta.url));
  const flags = permissionFlags({ args: Deno.args, cwd, env: Deno.env, realPath });
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      `--config=${join(here, "..", "..", "deno.json")}`,
      ...flags,
      join(here, "main.ts"),
      ...Deno.args,
    ],
    cwd,
    env: { LIBOS_CWD: cwd, DENO_NO_UPDATE_CHECK: "1" },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const status = await child.status;
  Deno.exit(status.code);
}
