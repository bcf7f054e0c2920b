/**
 * The model a command's `--model` names: `replay:FILE.jsonl` (the scripted model) or
 * `openai[:MODEL]` (an OpenAI-compatible endpoint configured by `OPENAI_*` from `--env-file`,
 * the environment or `~/.config/libos/env`), wrapped by `--record FILE` (each reply appended to
 * a chained session log).
 *
 * @module
 */
import { resolve } from "node:path";
import { UsageError } from "../runtime/base/errors.ts";
import type { ModelClient } from "../runtime/model/model_client.ts";
import { OpenAIModel } from "../runtime/model/openai_model.ts";
import { RecordingModel, ScriptedModel } from "../runtime/model/scripted_model.ts";
import { SessionLogWriter } from "../runtime/model/session_log.ts";
import { type ModelConfig, modelConfig } from "./model_config.ts";
import { type CliIo, type ParsedArgs, stringOption } from "./_options.ts";

/** A chosen model and the secrets to redact while it runs (the API key). */
export interface ModelChoice {
  readonly model: ModelClient;
  readonly secrets: readonly string[];
  /** How the model was named, for reports: `replay:/ABSOLUTE/FILE` or `openai:MODEL`. */
  readonly spec: string;
  /** The endpoint's base URL without credentials, query or fragment; null for OpenAI's own or a script. */
  readonly endpoint: string | null;
  /** Scripted models are positioned per run: a resumed run skips the turns already taken. */
  readonly scripted?: ScriptedModel;
}

function configOf(parsed: ParsedArgs, io: CliIo): ModelConfig {
  const envFile = stringOption(parsed, "env-file");
  return modelConfig({
    env: io.env,
    workspace: resolve(io.cwd, stringOption(parsed, "workspace") ?? "."),
    cwd: io.cwd,
    ...(envFile === undefined ? {} : { envFile }),
    read: (path) => {
      try {
        return Deno.readTextFileSync(path);
      } catch {
        return undefined;
      }
    },
    realPath: (path) => {
      try {
        return Deno.realPathSync(path);
      } catch (error) {
        // A file that does not exist is reported by the read; one that cannot be resolved
        // cannot be shown to lie outside the workspace.
        if (error instanceof Deno.errors.NotFound) return path;
        throw new UsageError(
          `Cannot resolve ${JSON.stringify(path)} (${
            error instanceof Error ? error.message : String(error)
          }); name an env file libos can read`,
          { cause: error },
        );
      }
    },
  });
}

/**
 * A base URL as a run records it: no user name, password, query or fragment (where a key could
 * hide). One that is not a URL is recorded as such; the model client refuses it when called.
 */
function endpointOf(baseURL: string): string {
  try {
    const url = new URL(baseURL);
    return `${url.origin}${url.pathname}`;
  } catch {
    return "(not a URL)";
  }
}

/**
 * The model of `--model`, or of `fallback` when it is absent (`libos agent` falls back to
 * `openai`; `run` and `step` to `OPENAI_MODEL` when it is configured, else none).
 * @throws {UsageError} for another form, an endpoint without a model name or a key.
 */
export function chooseModel(
  parsed: ParsedArgs,
  io: CliIo,
  fallback: "openai" | "configured",
): ModelChoice | undefined {
  let spec = stringOption(parsed, "model");
  if (spec === undefined) {
    if (fallback === "openai") spec = "openai";
    else if (configOf(parsed, io).model !== undefined) spec = "openai";
    else return undefined;
  }
  let model: ModelClient;
  let scripted: ScriptedModel | undefined;
  let secrets: string[] = [];
  let name = spec;
  let endpoint: string | null = null;
  const each = spec.startsWith("replay-each:");
  if ((spec.startsWith("replay:") || each) && spec.length > spec.indexOf(":") + 1) {
    // replay-each: every process follows the script by its own turn count (workers, benches).
    const file = resolve(io.cwd, spec.slice(spec.indexOf(":") + 1));
    scripted = ScriptedModel.fromFile(file, { eachProcess: each });
    model = scripted;
    name = `${each ? "replay-each" : "replay"}:${file}`;
  } else if (spec === "openai" || (spec.startsWith("openai:") && spec.length > "openai:".length)) {
    const c = configOf(parsed, io);
    const modelName = spec === "openai" ? c.model : spec.slice("openai:".length);
    if (modelName === undefined || modelName.trim() === "") {
      throw new UsageError(
        "No model is configured: pass --model openai:MODEL (with OPENAI_API_KEY, and OPENAI_BASE_URL for an endpoint other than OpenAI's) or set OPENAI_MODEL in the environment, in ~/.config/libos/env or in a file given with --env-file; --model replay:FILE.jsonl runs a scripted model offline",
      );
    }
    if (!c.apiKey) {
      throw new UsageError(
        "No OPENAI_API_KEY: set it in the environment, in ~/.config/libos/env, or in a file given with --env-file (never a .env inside the workspace)",
      );
    }
    model = new OpenAIModel({
      apiKey: c.apiKey,
      model: modelName,
      ...(c.baseURL === undefined ? {} : { baseURL: c.baseURL }),
      ...(c.api === undefined ? {} : { api: c.api }),
    });
    secrets = [c.apiKey];
    name = `openai:${modelName}`;
    endpoint = c.baseURL === undefined ? null : endpointOf(c.baseURL);
  } else {
    throw new UsageError(
      `--model must be replay:FILE.jsonl, replay-each:FILE.jsonl, openai or openai:MODEL, not ${
        JSON.stringify(spec)
      }`,
    );
  }
  const record = stringOption(parsed, "record");
  const base = { secrets, spec: name, endpoint, ...(scripted ? { scripted } : {}) };
  if (record === undefined) return { model, ...base };
  const file = resolve(io.cwd, record);
  return {
    model: new RecordingModel(
      model,
      new SessionLogWriter((line) => Deno.writeTextFileSync(file, line, { append: true })),
    ),
    ...base,
  };
}
