/**
 * The run's MCP servers for `libos agent` (issue 25): the user's `mcp.json` in the configuration
 * directory (not with `--no-user-config`), each `--mcp-config FILE`, and the workspace's own
 * `.mcp.json` only with `--trust-workspace-mcp` (the agent can write the workspace). Read again
 * on `--resume` from the same flags: an approved MCP call resumes through its server.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { configDirectory } from "../runtime/base/state_paths.ts";
import { loadMcpConfigs, type McpServerEntry } from "../runtime/primitives/mcp.ts";
import { type CliIo, flagOption, listOption, type ParsedArgs } from "./_options.ts";

/**
 * The configured servers, merged in order (a name configured twice is refused).
 * @throws {McpConfigError} naming the file, line and column of a problem.
 */
export function mcpServersOf(
  parsed: ParsedArgs,
  io: CliIo,
  workspace: string,
  read?: (path: string) => string,
): McpServerEntry[] {
  const files: { path: string; optional: boolean }[] = [];
  const config = configDirectory(io.env);
  if (config !== undefined && !flagOption(parsed, "no-user-config")) {
    files.push({ path: join(config, "mcp.json"), optional: true });
  }
  for (const file of listOption(parsed, "mcp-config")) {
    files.push({ path: resolve(io.cwd, file), optional: false });
  }
  const own = join(workspace, ".mcp.json");
  if (flagOption(parsed, "trust-workspace-mcp")) {
    files.push({ path: own, optional: true });
  } else {
    try {
      Deno.statSync(own);
      io.stderr(
        `libos agent: ignoring the workspace's ${own} (pass --trust-workspace-mcp to use it)\n`,
      );
    } catch (error) {
      // Absent (or unreadable): nothing to say about a file that is not used anyway.
      if (!(error instanceof Deno.errors.NotFound) && !(error instanceof Deno.errors.NotCapable)) {
        throw error;
      }
    }
  }
  return read ? loadMcpConfigs(files, read) : loadMcpConfigs(files);
}
