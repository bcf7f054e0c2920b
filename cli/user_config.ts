/**
 * The user's libos settings: `config.jsonc` in the configuration directory
 * (`$XDG_CONFIG_HOME/libos/config.jsonc`, else `~/.config/libos/config.jsonc`). Only the user's
 * own directory is read — never a file in the workspace, which an agent can write.
 *
 * ```jsonc
 * {
 *   "version": 1,
 *   // Bound read-only into the OS wall and searched for programs (see toolchains.ts).
 *   "toolchains": ["~/.pyenv/versions/3.12.4", "/opt/node"],
 *   // Hosts every new run may reach (see egress_hosts.ts): HOST or HOST:PORT, no wildcards.
 *   "allowHosts": ["docs.python.org", "registry.example.com:8443"]
 * }
 * ```
 *
 * @module
 */
import { isAbsolute, join } from "node:path";
import { z } from "zod";
import { ValidationError } from "../runtime/base/errors.ts";
import { ALLOW_HOSTS_MAX, type HostGrant, parseAllowHosts } from "./egress_hosts.ts";
import { type EnvReader, userConfigPath } from "../runtime/base/state_paths.ts";

export { userConfigPath };
import { parseStrictJsonc } from "../runtime/base/strict_jsonc.ts";

/** The largest `config.jsonc` read. */
export const USER_CONFIG_MAX_BYTES = 64 * 1024;

/** The settings file, as written. */
export const UserConfig = z.object({
  version: z.literal(1),
  toolchains: z.array(z.string().min(1).max(4096)).max(64).optional(),
  allowHosts: z.array(z.string().min(1).max(300)).max(ALLOW_HOSTS_MAX).optional(),
}).strict();
/** The settings file, as written. */
export type UserConfig = z.infer<typeof UserConfig>;

/**
 * `~/…` under the user's home; other paths as given.
 * @throws {ValidationError} for `~/…` without a home, or a relative path.
 */
export function expandHome(path: string, home: string | undefined, source: string): string {
  if (path === "~" || path.startsWith("~/")) {
    if (!home || !isAbsolute(home)) {
      throw new ValidationError(`${source}: ${JSON.stringify(path)} needs HOME to be set`);
    }
    return join(home, path.slice(1));
  }
  if (!isAbsolute(path)) {
    throw new ValidationError(
      `${source}: ${JSON.stringify(path)} is relative; give an absolute path or one under ~/`,
    );
  }
  return path;
}

/** The user's settings, as a run applies them. */
export interface LoadedUserConfig {
  readonly path: string | null;
  readonly toolchains: readonly string[];
  /** `allowHosts`, parsed (see `egress_hosts.ts`). */
  readonly allowHosts: readonly HostGrant[];
}

/**
 * The user's settings (an absent file is no settings), with `~/` expanded.
 * @throws {ValidationError} naming the file, line and column of a problem, or a file that
 *   cannot be read; `UsageError` naming an `allowHosts` value that is not a host.
 */
export function loadUserConfig(
  env: EnvReader,
  read: (path: string) => string = Deno.readTextFileSync,
): LoadedUserConfig {
  const none = { path: null, toolchains: [], allowHosts: [] };
  const path = userConfigPath(env);
  if (path === undefined) return none;
  let text: string;
  try {
    text = read(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return none;
    throw new ValidationError(
      `Cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const config = parseStrictJsonc(text, path, UserConfig, {
    maxBytes: USER_CONFIG_MAX_BYTES,
    maxDepth: 4,
    what:
      'the settings are {"version": 1, "toolchains": ["/opt/node", ...], "allowHosts": ["docs.example.com", ...]}',
  });
  const home = env.get("HOME");
  return {
    path,
    toolchains: (config.toolchains ?? []).map((t, i) =>
      expandHome(t, home, `${path}: toolchains.${i}`)
    ),
    allowHosts: parseAllowHosts(
      (config.allowHosts ?? []).map((text, i) => ({ text, source: `${path}: allowHosts.${i}` })),
    ),
  };
}
