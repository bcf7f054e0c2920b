/**
 * Where the model endpoint's configuration comes from (DESIGN §2): an explicit `--env-file`, the
 * process environment, or `env` in the user's libos configuration directory — in that order —
 * and never a `.env` inside the workspace. Keys: `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
 * `OPENAI_MODEL`, `OPENAI_API` (`auto`, `chat` or `responses`).
 *
 * @module
 */
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { UsageError } from "../runtime/base/errors.ts";
import { configDirectory, type EnvReader } from "../runtime/base/state_paths.ts";

/** The keys a model configuration reads. */
export const MODEL_ENV = Object.freeze([
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "OPENAI_MODEL",
  "OPENAI_API",
]);

/** A model endpoint's configuration. */
export interface ModelConfig {
  readonly apiKey?: string;
  readonly baseURL?: string;
  readonly model?: string;
  readonly api?: "auto" | "chat" | "responses";
}

/**
 * `KEY=VALUE` lines (blank lines and `#` comments skipped; `export ` and matching quotes
 * allowed).
 * @throws {UsageError} for a line that is not one.
 */
export function parseEnvFile(text: string, source: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) throw new UsageError(`${source} line ${i + 1} is not KEY=VALUE`);
    let value = m[2]!;
    if (/^(["']).*\1$/.test(value)) value = value.slice(1, -1);
    out[m[1]!] = value;
  }
  return out;
}

/** The libos configuration directory's env file (`$XDG_CONFIG_HOME/libos/env`), if any. */
export function configEnvFile(env: EnvReader): string | undefined {
  const dir = configDirectory(env);
  return dir === undefined ? undefined : join(dir, "env");
}

/**
 * The model configuration from its three sources.
 * @throws {UsageError} for an `--env-file` inside the workspace, or one that cannot be read.
 */
export function modelConfig(sources: {
  readonly env: EnvReader;
  readonly workspace: string;
  readonly cwd: string;
  readonly envFile?: string;
  readonly read: (path: string) => string | undefined;
  /** Canonicalises a path (a symlink to a file in the workspace is in the workspace). */
  readonly realPath?: (path: string) => string;
}): ModelConfig {
  const layers: Record<string, string>[] = [];
  if (sources.envFile !== undefined) {
    const path = resolve(sources.cwd, sources.envFile);
    const real = sources.realPath ?? ((p: string) => p);
    const inside = relative(real(sources.workspace), real(path));
    // `..env` is a name inside the workspace; only `..` as a whole segment leaves it.
    if (inside !== ".." && !inside.startsWith(`..${sep}`) && !isAbsolute(inside)) {
      throw new UsageError(
        `--env-file ${
          JSON.stringify(sources.envFile)
        } is inside the workspace, where an agent could write it; keep model secrets outside (e.g. ~/.config/libos/env)`,
      );
    }
    const text = sources.read(path);
    if (text === undefined) throw new UsageError(`Cannot read --env-file ${JSON.stringify(path)}`);
    layers.push(parseEnvFile(text, path));
  }
  const fromEnv: Record<string, string> = {};
  for (const key of MODEL_ENV) {
    let value: string | undefined;
    try {
      value = sources.env.get(key);
    } catch { /* not granted: not set */ }
    if (value) fromEnv[key] = value;
  }
  layers.push(fromEnv);
  const file = configEnvFile(sources.env);
  const text = file === undefined ? undefined : sources.read(file);
  if (text !== undefined) layers.push(parseEnvFile(text, file!));
  const get = (key: string) => layers.find((l) => l[key])?.[key];
  const api = get("OPENAI_API");
  if (api !== undefined && api !== "auto" && api !== "chat" && api !== "responses") {
    throw new UsageError(`OPENAI_API must be auto, chat or responses, not ${JSON.stringify(api)}`);
  }
  return {
    ...(get("OPENAI_API_KEY") ? { apiKey: get("OPENAI_API_KEY")! } : {}),
    ...(get("OPENAI_BASE_URL") ? { baseURL: get("OPENAI_BASE_URL")! } : {}),
    ...(get("OPENAI_MODEL") ? { model: get("OPENAI_MODEL")! } : {}),
    ...(api === undefined ? {} : { api }),
  };
}

/** The `host:port` a base URL reaches (OpenAI's by default): what the bootstrap lets the runtime connect to. */
export function endpointHost(baseURL: string | undefined): string {
  const url = new URL(baseURL ?? "https://api.openai.com/v1");
  const port = url.port || (url.protocol === "http:" ? "80" : "443");
  if (url.hostname.includes(",")) {
    // Deno's permission lists are comma-separated: such a host would grant several.
    throw new UsageError(`The model endpoint's host ${JSON.stringify(url.hostname)} holds a comma`);
  }
  return `${url.hostname}:${port}`;
}
