/**
 * The user's libos settings: `config.jsonc` in the configuration directory
 * (`$XDG_CONFIG_HOME/libos/config.jsonc`, else `~/.config/libos/config.jsonc`). Only the user's
 * own directory is read — never a file in the workspace, which an agent can write.
 *
 * ```jsonc
 * {
 *   "version": 1,
 *   // Bound read-only into the OS wall and searched for programs (see toolchains.ts).
 *   "toolchains": ["~/.pyenv/versions/3.12.4", "/opt/node"]
 * }
 * ```
 *
 * @module
 */
import { isAbsolute, join } from "node:path";
import { z } from "zod";
import { ValidationError } from "../runtime/base/errors.ts";
import { type EnvReader, userConfigPath } from "../runtime/base/state_paths.ts";

export { userConfigPath };
import { parseStrictJsonc } from "../runtime/base/strict_jsonc.ts";

/** The largest `config.jsonc` read. */
export const USER_CONFIG_MAX_BYTES = 64 * 1024;

/** The settings file, as written. */
export const UserConfig = z.object({
  version: z.literal(1),
  toolchains: z.array(z.string().min(1).max(4096)).max(64).optional(),
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

/**
 * The user's settings (an absent file is no settings), with `~/` expanded.
 * @throws {ValidationError} naming the file, line and column of a problem, or a file that
 *   cannot be read.
 */
export function loadUserConfig(
  env: EnvReader,
  read: (path: string) => string = Deno.readTextFileSync,
): { readonly path: string | null; readonly toolchains: readonly string[] } {
  const path = userConfigPath(env);
  if (path === undefined) return { path: null, toolchains: [] };
  let text: string;
  try {
    text = read(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { path: null, toolchains: [] };
    throw new ValidationError(
      `Cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const config = parseStrictJsonc(text, path, UserConfig, {
    maxBytes: USER_CONFIG_MAX_BYTES,
    maxDepth: 4,
    what: 'the settings are {"version": 1, "toolchains": ["/opt/node", ...]}',
  });
  const home = env.get("HOME");
  return {
    path,
    toolchains: (config.toolchains ?? []).map((t, i) =>
      expandHome(t, home, `${path}: toolchains.${i}`)
    ),
  };
}
