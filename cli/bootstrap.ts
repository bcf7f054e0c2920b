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
import { configEnvFile, endpointHost, MODEL_ENV, parseEnvFile } from "./model_config.ts";
import { SYSTEM_PATH } from "../runtime/base/system_path.ts";
import { defaultDatabasePath, userConfigPath } from "../runtime/base/state_paths.ts";
import { DatabaseSync } from "node:sqlite";
import { denoNetEntries, hostGrantText, parseAllowHost } from "./egress_hosts.ts";
import { pgPassPath } from "../runtime/store/pg_pass.ts";

/** Environment variables the runtime reads. */
export const RUNTIME_ENV = [
  "HOME",
  // Read for hints only (which toolchain holds a program the user's shell would run); never
  // given to a command.
  "PATH",
  "XDG_STATE_HOME",
  "XDG_CONFIG_HOME",
  "TMPDIR",
  "NO_COLOR",
  "TERM",
  "LIBOS_CWD",
  // The yaml package reads these on every token (debug logging); the bootstrap blanks them.
  "LOG_TOKENS",
  "LOG_STREAM",
  // The database when --db is not given (a postgres:// URL may hold a password), and the
  // password of one that does not: read by libos only, never given to a command.
  "LIBOS_DB",
  "PGPASSWORD",
];

/**
 * The variables the PostgreSQL driver (postgres.js) reads for what a connection string leaves
 * out — the standard PG* names and the login name — granted only when the database is one.
 */
export const POSTGRES_ENV = [
  "PGHOST",
  "PGPORT",
  "PGUSER",
  "PGUSERNAME",
  "PGDATABASE",
  "PGAPPNAME",
  "PGTARGETSESSIONATTRS",
  ...[
    "SSL",
    "SSLNEGOTIATION",
    "MAX",
    "IDLE_TIMEOUT",
    "CONNECT_TIMEOUT",
    "MAX_LIFETIME",
    "MAX_PIPELINE",
    "BACKOFF",
    "KEEP_ALIVE",
    "PREPARE",
    "DEBUG",
    "FETCH_TYPES",
    "PUBLICATIONS",
    "TARGET_SESSION_ATTRS",
  ].map((name) => `PG${name}`),
  "USER",
  "USERNAME",
  "LOGNAME",
  // The password file libos reads itself (the driver does not): PGPASSFILE or ~/.pgpass.
  "PGPASSFILE",
];

/** What the bootstrap knows about the invocation. */
export interface BootstrapFacts {
  readonly args: readonly string[];
  /** The directory the user ran the command in. */
  readonly cwd: string;
  readonly env: { get(name: string): string | undefined };
  /** Canonicalises a path; returns the input when it does not exist. */
  readonly realPath: (path: string) => string;
  /** The Deno executable (JIT sandboxes run it). */
  readonly execPath?: string;
  /** `OPENAI_BASE_URL` from `--env-file` or `~/.config/libos/env`, when the environment has none. */
  readonly baseURL?: string;
  /** The toolchain directories of the user's `config.jsonc`. */
  readonly toolchains?: readonly string[];
  /**
   * `agent --resume`: what the run's last launch recorded that it reads again — policy files,
   * toolchains, a replay script (`recordedReads`). Read only; libos checks each against the
   * chained record.
   */
  readonly recorded?: readonly string[];
  /**
   * `agent`: the hosts the run may reach besides `--allow-host` — a new run's `allowHosts` from
   * `config.jsonc`, or what a resumed run's governance recorded (`recordedHosts`).
   */
  readonly hosts?: readonly string[];
}

/**
 * Every value of `--name VALUE` or `--name=VALUE` in raw arguments, up to a `--` (what follows it
 * is data, e.g. the argv `libos policy check` decides).
 */
function optionValues(args: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") break;
    if (arg === `--${name}`) {
      const value = args[i + 1];
      if (value !== undefined) values.push(value);
    } else if (arg?.startsWith(`--${name}=`)) values.push(arg.slice(name.length + 3));
  }
  return values;
}

/** The value of `--name` in raw arguments (the last one wins). */
function optionValue(args: readonly string[], name: string): string | undefined {
  return optionValues(args, name).at(-1);
}

/** The user's libos configuration directory (policy files live there). */
function configDir(env: BootstrapFacts["env"]): string | undefined {
  const xdg = env.get("XDG_CONFIG_HOME");
  if (xdg && isAbsolute(xdg)) return join(xdg, "libos");
  const home = env.get("HOME");
  if (home && isAbsolute(home)) return join(home, ".config", "libos");
  return undefined;
}

function stateDir(env: BootstrapFacts["env"]): string | undefined {
  const xdg = env.get("XDG_STATE_HOME");
  if (xdg && isAbsolute(xdg)) return join(xdg, "libos");
  const home = env.get("HOME");
  if (home && isAbsolute(home)) return join(home, ".local", "state", "libos");
  return undefined;
}

/** A path Deno's permission lists cannot express (they separate entries with commas). */
export class UnlistablePathError extends Error {
  /** Names the path that cannot be granted. */
  constructor(readonly path: string) {
    super(
      `Cannot run libos with ${
        JSON.stringify(path)
      }: Deno permission lists cannot contain a path with a comma; rename it or use a path without one`,
    );
  }
}

/**
 * Read on what the shell primitive looks at to start a command: the system directories it finds
 * programs in (`SYSTEM_PATH`; without them a bare name fails with a permission error, not "not
 * found"), each ancestor's `.git` (git finds a repository upwards, so the repository scan must be
 * able to look at them, and at nothing else of those directories), the toolchains it searches
 * first, and the user's `PATH` directories (for a hint only, when they would run another file).
 */
function grantShell(
  facts: BootstrapFacts,
  grant: (path: string, writable?: boolean) => void,
  toolchains: readonly string[],
): void {
  for (const dir of SYSTEM_PATH) grant(dir, false);
  const workspace = facts.realPath(
    resolve(facts.cwd, optionValue(facts.args, "workspace") ?? "."),
  );
  for (let dir = dirname(workspace);; dir = dirname(dir)) {
    if (!dir.includes(",")) grant(join(dir, ".git"), false);
    if (dir === dirname(dir)) break;
  }
  for (const dir of toolchains) grant(dir, false);
  for (const dir of (facts.env.get("PATH") ?? "").split(":")) {
    // Only what Deno's lists can hold; a hint is not worth refusing the run over.
    if (isAbsolute(dir) && dir !== "/" && !dir.includes(",")) grant(dir, false);
  }
}

/**
 * The `host:port` a `postgres://` URL connects to (port 5432 when it names none), or undefined
 * when `db` is not such a URL (a file path; a bad URL is refused by libos itself).
 */
export function postgresHost(db: string): string | undefined {
  if (!/^postgres(ql)?:\/\//i.test(db.trim())) return undefined;
  try {
    const url = new URL(db.trim());
    if (url.hostname === "" || url.hostname.includes(",")) return undefined;
    return `${url.hostname}:${url.port || "5432"}`;
  } catch {
    return undefined;
  }
}

/**
 * The `deno run` permission flags for one invocation. Each place is granted both as given and
 * as its real path, so a symlinked workspace, state directory or database works the same way
 * the runtime resolves it.
 * @throws {UnlistablePathError} for a path containing a comma.
 */
export function permissionFlags(facts: BootstrapFacts): string[] {
  const read = new Set<string>();
  const write = new Set<string>();
  const grant = (path: string, writable = true) => {
    for (const p of new Set([path, facts.realPath(path)])) {
      if (p.includes(",")) throw new UnlistablePathError(p);
      read.add(p);
      if (writable) write.add(p);
    }
  };
  // `events`, `replay` and `why` only read the database (SQLite makes its shared-memory file
  // itself): no write.
  const writes = !["events", "replay", "why"].includes(
    facts.args.find((a) => !a.startsWith("-")) ?? "",
  );
  grant(resolve(facts.cwd, optionValue(facts.args, "workspace") ?? "."), writes);
  const state = stateDir(facts.env);
  if (state) grant(state, writes);
  grant(facts.env.get("TMPDIR") || "/tmp", writes);
  // Read only: the user's policy files, and files named by --policy, --batch and --mcp-config.
  const config = configDir(facts.env);
  if (config) grant(config, false);
  for (
    const file of [
      ...optionValues(facts.args, "policy"),
      ...optionValues(facts.args, "batch"),
      ...optionValues(facts.args, "mcp-config"),
    ]
  ) {
    if (file !== "-" && file.trim() !== "") grant(resolve(facts.cwd, file), false);
  }
  // The remembered grants file ("allow always … for this project") and the temporary file it is
  // written through: an agent run (its prompt may remember an answer) may write those two files
  // only; `human approve` and `grants`, which run no agent, may also make the directory.
  const [first, second] = facts.args.filter((a) => !a.startsWith("-"));
  if (config && (first === "grants" || (first === "human" && second === "approve"))) {
    grant(config);
  } else if (config && first === "agent") {
    grant(join(config, "grants.jsonc"));
    grant(join(config, "grants.jsonc.tmp"));
  }
  // `jit check FILE...`: read on each file it names (every word after the command words that is
  // not an option; an option's value read by mistake is only a read grant on a missing path),
  // and on libos's own jit/ directory: Deno reads a Worker's modules as files.
  const words = facts.args.filter((a) => !a.startsWith("-"));
  let run: string | undefined;
  if (words[0] === "jit") {
    if (words[1] === "check") {
      for (const file of words.slice(2)) grant(resolve(facts.cwd, file), false);
    }
    if (words[1] === "propose" && words[3] !== undefined) {
      grant(resolve(facts.cwd, words[3]), false);
    }
    grant(fileURLToPath(new URL("../jit", import.meta.url)), false);
    // Validating and running start sandboxes: only setsid is run by Deno itself (it execs
    // setpriv, prlimit and deno in turn), and the sandbox reads the Deno executable's path.
    if ((words[1] === "validate" || words[1] === "run") && facts.execPath) {
      run = "/usr/bin/setsid";
      grant(facts.execPath, false);
    }
  }
  // `log` pages a long transcript through less (on a terminal): that program only.
  if (words[0] === "log") run = "less";
  // `run`/`step --model replay:FILE`: read on the script; `--record FILE`: write on the log.
  const model = optionValue(facts.args, "model");
  for (const prefix of ["replay:", "replay-each:"]) {
    if (model?.startsWith(prefix) && model.length > prefix.length) {
      grant(resolve(facts.cwd, model.slice(prefix.length)), false);
    }
  }
  // `replay --session FILE`: read on the session log.
  const session = optionValue(facts.args, "session");
  if (session !== undefined && session.trim() !== "") grant(resolve(facts.cwd, session), false);
  const record = optionValue(facts.args, "record");
  if (record !== undefined && record.trim() !== "") grant(resolve(facts.cwd, record));
  // An OpenAI-compatible model: its configuration variables, and the network to its endpoint only.
  let net: string | undefined;
  const envFile = optionValue(facts.args, "env-file");
  if (envFile !== undefined && envFile.trim() !== "") grant(resolve(facts.cwd, envFile), false);
  // `agent` defaults to an OpenAI-compatible endpoint; `run` and `step` use one when configured.
  const wantsEndpoint = model === "openai" || Boolean(model?.startsWith("openai:")) ||
    (model === undefined && words[0] === "agent") ||
    (model === undefined && (words[0] === "run" || words[0] === "step") &&
      Boolean(facts.env.get("OPENAI_MODEL")));
  if (wantsEndpoint) {
    const baseURL = facts.env.get("OPENAI_BASE_URL") ?? facts.baseURL;
    try {
      net = endpointHost(baseURL);
    } catch {
      net = undefined; // the runtime refuses the bad URL with a clear error
    }
  }
  // The demo runs a JIT tool in the sandbox (in its own temporary workspace under TMPDIR); an
  // agent's shell commands and JIT tools start the same way (setsid execs the rest in turn), and
  // so do those of the processes `run` and `step` drive.
  // `mcp serve` runs a client's calls as `agent` runs a model's (its JIT tools too), with no
  // model endpoint.
  const serves = words[0] === "mcp" && words[1] === "serve";
  const drives = ["demo", "agent", "run", "step", "worker"].includes(words[0] ?? "") || serves;
  if (drives && facts.execPath) {
    grant(fileURLToPath(new URL("../jit", import.meta.url)), false);
    run = "/usr/bin/setsid";
    grant(facts.execPath, false);
  }
  // An agent's shell commands, and a JIT tool's (`jit run`: its shell.run syscall goes through
  // the same primitive): the primitive looks bare names up in the system directories and the
  // operator's toolchains (and in the user's PATH, for a hint when they differ).
  if (words[0] === "agent" || serves) {
    const toolchains = optionValues(facts.args, "toolchain")
      .filter((dir) => dir.trim() !== "")
      .map((dir) => resolve(facts.cwd, dir));
    grantShell(facts, grant, [...toolchains, ...(facts.toolchains ?? [])]);
    for (const path of facts.recorded ?? []) {
      if (isAbsolute(path) && !path.includes(",")) grant(path, false);
    }
  }
  // Egress by grant (`agent` only): each host's entries (see egress_hosts.ts). A value that is
  // not a host grants nothing here; libos refuses the run naming it.
  const hosts = new Set<string>();
  if (words[0] === "agent") {
    for (const text of [...optionValues(facts.args, "allow-host"), ...(facts.hosts ?? [])]) {
      try {
        for (const entry of denoNetEntries(parseAllowHost(text, "--allow-host"))) hosts.add(entry);
      } catch { /* reported by libos itself */ }
    }
  }
  // `jit run`, `run` and `step` build their runtime without toolchains: the system directories
  // are their search path (a process's shell tool goes through the same primitive).
  if (
    (words[0] === "jit" && words[1] === "run") || ["run", "step", "worker"].includes(words[0] ?? "")
  ) {
    grantShell(facts, grant, []);
  }
  const db = optionValue(facts.args, "db") ?? (facts.env.get("LIBOS_DB")?.trim() || undefined);
  const postgres = db === undefined ? undefined : postgresHost(db);
  if (postgres !== undefined) {
    // A PostgreSQL database: the network to its server only, and read on the store's folder
    // (Deno reads the connection thread's module as a file).
    hosts.add(postgres);
    grant(fileURLToPath(new URL("../runtime/store", import.meta.url)), false);
    // The password file, read-only (libos reads it when it connects; no command ever sees it).
    const passFile = pgPassPath(facts.env);
    if (passFile !== undefined) grant(resolve(facts.cwd, passFile), false);
  } else if (db !== undefined && db !== ":memory:" && db.trim() !== "") {
    const file = resolve(facts.cwd, db);
    for (const dir of [dirname(file), facts.realPath(dirname(file))]) {
      // Reading the directory lets the runtime canonicalise the path it was given.
      grant(dir, false);
      const name = join(dir, file.slice(dirname(file).length + 1));
      for (const path of [name, facts.realPath(name)]) {
        for (const suffix of ["", "-wal", "-shm", "-journal"]) grant(`${path}${suffix}`, writes);
      }
    }
  }
  return [
    "--no-prompt",
    `--allow-read=${[...read].join(",")}`,
    // Never an empty --allow-write= (no write at all is no flag).
    ...(write.size > 0 ? [`--allow-write=${[...write].join(",")}`] : []),
    `--allow-env=${
      [
        ...RUNTIME_ENV,
        ...(wantsEndpoint ? MODEL_ENV : []),
        ...(postgres === undefined ? [] : POSTGRES_ENV),
      ].join(",")
    }`,
    ...(run ? [`--allow-run=${run}`] : []),
    ...(net || hosts.size > 0
      ? [`--allow-net=${[...new Set([net ?? [], ...hosts].flat())].join(",")}`]
      : []),
  ];
}

/**
 * The absolute paths the last launch of process `pid` recorded in its governance (policy files,
 * toolchains, a `replay:` script), read from the database without writing to it. A resume reads
 * them again, so the launcher grants read on them; libos compares each against the hash-chained
 * record (a changed policy file refuses the resume). Empty when there is nothing to read or the
 * database cannot be read now: libos then says which path to name again.
 */
export function recordedReads(databasePath: string, pid: string): string[] {
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(databasePath, { readOnly: true });
    const row = db.prepare(
      `SELECT detail FROM audit WHERE pid = ? AND action IN ('agent.start', 'agent.resume')
         AND detail IS NOT NULL ORDER BY seq DESC LIMIT 1`,
    ).get(pid);
    const detail = typeof row?.detail === "string" ? JSON.parse(row.detail) as unknown : null;
    const governance = (detail as { governance?: unknown } | null)?.governance;
    if (typeof governance !== "object" || governance === null) return [];
    const g = governance as { policies?: unknown; toolchains?: unknown; model?: unknown };
    const paths: string[] = [];
    if (Array.isArray(g.policies)) {
      for (const p of g.policies) {
        const path = (p as { path?: unknown } | null)?.path;
        if (typeof path === "string") paths.push(path);
      }
    }
    if (Array.isArray(g.toolchains)) {
      for (const t of g.toolchains) if (typeof t === "string") paths.push(t);
    }
    const spec = (g.model as { spec?: unknown } | null)?.spec;
    if (typeof spec === "string" && spec.startsWith("replay:")) paths.push(spec.slice(7));
    return paths.filter((p) => isAbsolute(p));
  } catch {
    // A database this launcher cannot read now (none yet, locked, another version): no grant.
    return [];
  } finally {
    db?.close();
  }
}

/**
 * The hosts (`host` or `host:port`) the last launch of process `pid` recorded in its governance
 * (`--allow-host`, `allowHosts`): a resume keeps them, so the launcher grants them again. Empty
 * when there are none or the database cannot be read now.
 */
export function recordedHosts(databasePath: string, pid: string): string[] {
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(databasePath, { readOnly: true });
    const row = db.prepare(
      `SELECT detail FROM audit WHERE pid = ? AND action IN ('agent.start', 'agent.resume')
         AND detail IS NOT NULL ORDER BY seq DESC LIMIT 1`,
    ).get(pid);
    const detail = typeof row?.detail === "string" ? JSON.parse(row.detail) as unknown : null;
    const hosts = (detail as { governance?: { hosts?: unknown } } | null)?.governance?.hosts;
    return Array.isArray(hosts) ? hosts.filter((h): h is string => typeof h === "string") : [];
  } catch {
    // A database this launcher cannot read now: no grant (libos says what it cannot reach).
    return [];
  } finally {
    db?.close();
  }
}

/** The database `libos agent --resume` will open, as libos computes it (see `state_paths.ts`). */
function resumeDatabase(
  args: readonly string[],
  cwd: string,
  env: BootstrapFacts["env"],
  realPath: (path: string) => string,
): string | undefined {
  const db = optionValue(args, "db") ?? (env.get("LIBOS_DB")?.trim() || undefined);
  // A resumed run on PostgreSQL names its policy files again (the launcher does not connect).
  if (db !== undefined && postgresHost(db) !== undefined) return undefined;
  if (db !== undefined) return db === ":memory:" ? undefined : resolve(cwd, db);
  const state = stateDir(env);
  if (!state) return undefined;
  const workspace = realPath(resolve(cwd, optionValue(args, "workspace") ?? "."));
  return defaultDatabasePath(state, workspace);
}

if (import.meta.main) {
  const cwd = Deno.env.get("INIT_CWD") ?? Deno.cwd();
  // The real path of the deepest part that exists, plus the rest: a state directory that
  // `init` is about to create still resolves through a symlinked parent.
  const realPath = (path: string): string => {
    try {
      return Deno.realPathSync(path);
    } catch {
      const parent = dirname(path);
      return parent === path
        ? path
        : join(realPath(parent), path.slice(parent.length + (parent.endsWith("/") ? 0 : 1)));
    }
  };
  const here = dirname(fileURLToPath(import.meta.url));
  let flags: string[];
  try {
    // The endpoint's base URL may live in the env file rather than the environment.
    const fileBaseURL = (): string | undefined => {
      const named = optionValue(Deno.args, "env-file");
      const file = named ? resolve(cwd, named) : configEnvFile(Deno.env);
      try {
        return file ? parseEnvFile(Deno.readTextFileSync(file), file).OPENAI_BASE_URL : undefined;
      } catch {
        return undefined;
      }
    };
    const baseURL = fileBaseURL();
    // A settings file that cannot be read grants nothing here; libos itself reads it again and
    // refuses the run with the reason.
    let toolchains: readonly string[] = [];
    let configHosts: readonly string[] = [];
    try {
      const file = Deno.args.includes("--no-user-config") ? undefined : userConfigPath(Deno.env);
      // Its parser (zod, jsonc) is loaded only when there is a file to parse.
      if (file !== undefined && Deno.statSync(file).isFile) {
        const config = (await import("./user_config.ts")).loadUserConfig(Deno.env);
        toolchains = config.toolchains;
        configHosts = config.allowHosts.map(hostGrantText);
      }
    } catch { /* missing: nothing to grant; unreadable or invalid: reported by libos itself */ }
    const command = Deno.args.find((a) => !a.startsWith("-"));
    const resume = command === "agent" ? optionValue(Deno.args, "resume") : undefined;
    const database = resume === undefined
      ? undefined
      : resumeDatabase(Deno.args, cwd, Deno.env, realPath);
    const recorded = database === undefined ? [] : recordedReads(database, resume!);
    // A new run reaches the config's hosts; a resumed one those its launch recorded.
    const hosts = resume === undefined
      ? configHosts
      : database === undefined
      ? []
      : recordedHosts(database, resume);
    flags = permissionFlags({
      hosts,
      toolchains,
      recorded,
      args: Deno.args,
      cwd,
      env: Deno.env,
      realPath,
      execPath: Deno.execPath(),
      ...(baseURL === undefined ? {} : { baseURL }),
    });
  } catch (error) {
    if (!(error instanceof UnlistablePathError)) throw error;
    const text = Deno.args.includes("--json")
      ? JSON.stringify({ error: { code: "usage", message: error.message } }) + "\n"
      : `libos: ${error.message}\n`;
    (Deno.args.includes("--json") ? Deno.stdout : Deno.stderr).writeSync(
      new TextEncoder().encode(text),
    );
    Deno.exit(2);
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      `--config=${join(here, "..", "deno.json")}`,
      ...flags,
      join(here, "main.ts"),
      ...Deno.args,
    ],
    cwd,
    // LOG_*: blank, so a debugging variable of the user's cannot make the YAML parser print.
    env: { LIBOS_CWD: cwd, DENO_NO_UPDATE_CHECK: "1", LOG_TOKENS: "", LOG_STREAM: "" },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  // Ctrl-C reaches libos itself (the same terminal process group): it decides what it means
  // (`libos agent` finishes its turn first); this wrapper only waits for its answer.
  Deno.addSignalListener("SIGINT", () => {});
  const status = await child.status;
  Deno.exit(status.signal === "SIGINT" ? 130 : status.code);
}
