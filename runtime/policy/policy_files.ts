/**
 * Where policy rules come from (DESIGN §3): the user's configuration directory
 * (`$XDG_CONFIG_HOME/libos/policy.jsonc`, else `~/.config/libos/policy.jsonc`), files named with
 * `--policy`, and — only with `--trust-workspace-policy` — the workspace's own
 * `.libos/policy.jsonc` (an agent that can write the workspace could otherwise write its own
 * policy). Any file that fails to parse refuses the whole set: a policy is never half-applied.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { ValidationError } from "../base/errors.ts";
import { type LoadedRule, parsePolicy, POLICY_MAX_BYTES, PolicyRules } from "./policy_rules.ts";
import { configDirectory, type EnvReader } from "../base/state_paths.ts";

/** Where to look for rules. */
export interface PolicySources {
  readonly env: EnvReader;
  readonly cwd: string;
  /** Read the user's configuration directory (default true). */
  readonly userConfig?: boolean;
  /** Files named on the command line, in order. */
  readonly files?: readonly string[];
  /** The workspace (its policy file is read only when trusted). */
  readonly workspace?: string;
  readonly trustWorkspace?: boolean;
}

/** One policy file as it was read: its absolute path and the text its rules came from. */
export interface PolicyText {
  readonly path: string;
  readonly text: string;
}

/** The rules and what was read or deliberately left out. */
export interface LoadedPolicy {
  readonly rules: PolicyRules;
  readonly files: readonly string[];
  /** Each file's text, in order (what a run records to re-apply its policy on resume). */
  readonly texts: readonly PolicyText[];
  /** A workspace policy file that exists but was ignored (not trusted). */
  readonly ignored: string | null;
}

/** The user's policy file path, or undefined when no home is known. */
export function userPolicyPath(env: EnvReader): string | undefined {
  const dir = configDirectory(env);
  return dir === undefined ? undefined : join(dir, "policy.jsonc");
}

/**
 * A policy file's text, or undefined when there is no such file.
 * @throws {ValidationError} for a path that is not a file, is over the size cap or cannot be read
 *   (no permission included).
 */
export function readPolicyFile(path: string): string | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new ValidationError(`Cannot read the policy file ${path}: ${(error as Error).message}`);
  }
  if (!info.isFile) throw new ValidationError(`The policy path ${path} is not a file`);
  if (info.size > POLICY_MAX_BYTES) {
    throw new ValidationError(
      `${path} is ${info.size} bytes; a policy file may be at most ${POLICY_MAX_BYTES}`,
    );
  }
  return Deno.readTextFileSync(path);
}

/**
 * Loads every policy file in order: the user's, then `--policy` files, then (trusted only) the
 * workspace's.
 * @throws {ValidationError} naming the file, line and column of the first problem; a `--policy`
 *   file that does not exist is an error too.
 */
export function loadPolicies(sources: PolicySources): LoadedPolicy {
  const rules: LoadedRule[] = [];
  const files: string[] = [];
  const texts: PolicyText[] = [];
  const add = (path: string, text: string) => {
    rules.push(...parsePolicy(text, path));
    files.push(path);
    texts.push({ path, text });
  };
  if (sources.userConfig !== false) {
    const user = userPolicyPath(sources.env);
    const text = user === undefined ? undefined : readPolicyFile(user);
    if (user !== undefined && text !== undefined) add(user, text);
  }
  for (const file of sources.files ?? []) {
    const path = resolve(sources.cwd, file);
    const text = readPolicyFile(path);
    if (text === undefined) {
      throw new ValidationError(`The policy file ${file} does not exist`);
    }
    add(path, text);
  }
  let ignored: string | null = null;
  if (sources.workspace !== undefined) {
    const path = join(sources.workspace, ".libos", "policy.jsonc");
    const text = readPolicyFile(path);
    if (text !== undefined) {
      if (sources.trustWorkspace) add(path, text);
      else ignored = path;
    }
  }
  return { rules: new PolicyRules(rules), files, texts, ignored };
}
