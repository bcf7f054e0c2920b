/**
 * Options that shape a run's policy, shared by `libos policy check` and `libos agent`: the shell
 * policy level (`--shell-policy`) and the policy files (the user's, `--policy FILE`..., and the
 * workspace's only with `--trust-workspace-policy`).
 *
 * @module
 */
import { resolve } from "node:path";
import { UsageError } from "../runtime/base/errors.ts";
import { type LoadedPolicy, loadPolicies } from "../runtime/policy/policy_files.ts";
import { loadUserConfig } from "./user_config.ts";
import type { PolicyRules } from "../runtime/policy/policy_rules.ts";
import { ShellPolicyLevel } from "../runtime/policy/shell_policy.ts";
import { type CliIo, flagOption, listOption, type ParsedArgs, stringOption } from "./_options.ts";
import { field } from "./_output.ts";

/**
 * The `--shell-policy` level, or undefined when not given.
 * @throws {UsageError} for an unknown level.
 */
export function shellPolicyOf(parsed: ParsedArgs): ShellPolicyLevel | undefined {
  const text = stringOption(parsed, "shell-policy");
  if (text === undefined) return undefined;
  const level = ShellPolicyLevel.safeParse(text);
  if (!level.success) {
    throw new UsageError(
      `--shell-policy must be one of ${ShellPolicyLevel.options.join(", ")}, got ${
        JSON.stringify(text)
      }`,
    );
  }
  return level.data;
}

/**
 * The policy rules in force; says on stderr when a workspace policy file is ignored.
 * @throws {ValidationError} naming the file, line and column of a bad rule, or a missing file.
 */
export function policyRulesOf(parsed: ParsedArgs, io: CliIo): PolicyRules {
  return loadedPolicyOf(parsed, io).rules;
}

/**
 * The policy files of the command line, read once, with their texts: the user's (unless
 * `--no-user-config` or `userConfig: false`), each `--policy FILE`, and the workspace's with
 * `--trust-workspace-policy`. Says on stderr when a workspace policy file is ignored, unless
 * `known(path)` says the run already decides by it.
 * @throws {ValidationError} naming the file, line and column of a bad rule, or a missing file.
 */
export function loadedPolicyOf(
  parsed: ParsedArgs,
  io: CliIo,
  options: { readonly userConfig?: boolean; readonly known?: (path: string) => boolean } = {},
): LoadedPolicy {
  const policy = loadPolicies({
    env: io.env,
    cwd: io.cwd,
    userConfig: options.userConfig ?? !flagOption(parsed, "no-user-config"),
    files: listOption(parsed, "policy"),
    workspace: resolve(io.cwd, stringOption(parsed, "workspace") ?? "."),
    trustWorkspace: flagOption(parsed, "trust-workspace-policy"),
  });
  if (policy.ignored && !options.known?.(policy.ignored)) {
    io.stderr(
      `libos: ignoring the workspace policy ${
        field(policy.ignored)
      } (pass --trust-workspace-policy to use it)\n`,
    );
  }
  return policy;
}

/**
 * The run's toolchain directories: the user's `config.jsonc` (unless `--no-user-config` or
 * `userConfig: false`), then each `--toolchain DIR` (relative to the invocation's directory).
 * They are checked when the runtime is built (see `toolchains.ts`).
 * @throws {ValidationError} for a settings file that cannot be read or parsed.
 */
export function toolchainsOf(
  parsed: ParsedArgs,
  io: CliIo,
  options: { readonly userConfig?: boolean } = {},
): string[] {
  const userConfig = options.userConfig ?? !flagOption(parsed, "no-user-config");
  const fromConfig = userConfig ? loadUserConfig(io.env).toolchains : [];
  const given = listOption(parsed, "toolchain").map((dir) => {
    if (dir.trim() === "") throw new UsageError("--toolchain needs a directory");
    return resolve(io.cwd, dir);
  });
  return [...new Set([...fromConfig, ...given])];
}
