/**
 * MCP server configuration: the common `mcpServers` JSON shape other agents keep
 * (`{"mcpServers": {"name": {"command", "args", "env"} | {"url"}}}`), parsed strictly (size and
 * depth caps, duplicate keys refused, unknown keys refused) with the file, line and column of any
 * problem. A server's `env` is the only environment it gets beyond the wall's fixed allowlist:
 * a secret reaches a server only where the config names it.
 *
 * @module
 */
import { z } from "zod";
import { LibosError } from "../base/errors.ts";
import { parseStrictJsonc } from "../base/strict_jsonc.ts";

/** The largest MCP configuration file read. */
export const MCP_CONFIG_MAX_BYTES = 64 * 1024;
/** The most servers one run configures. */
export const MCP_MAX_SERVERS = 16;

/** A server name: a safe identifier, so `mcp__<server>__<tool>` and `mcp:<server>/<tool>` parse. */
export const McpServerName = z.string().regex(
  /^[a-z][a-z0-9-]{0,31}$/,
  "a server name is 1-32 lowercase letters, digits or '-', starting with a letter",
);

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "not an environment name");

/** A server started as a process, talking JSON-RPC lines on its stdin and stdout. */
export const McpStdioServer = z.object({
  type: z.literal("stdio").optional(),
  command: z.string().min(1).max(4096).refine((s) => !s.includes("\0"), "must not contain NUL"),
  args: z.array(z.string().max(4096).refine((s) => !s.includes("\0"), "must not contain NUL"))
    .max(64).optional(),
  env: z.record(EnvName, z.string().max(16 * 1024)).optional(),
  /** Where it runs, relative to the workspace (default: the workspace). */
  cwd: z.string().min(1).max(4096).optional(),
}).strict();
/** A stdio server. */
export type McpStdioServer = z.infer<typeof McpStdioServer>;

/** A Streamable HTTP server. */
export const McpHttpServer = z.object({
  type: z.enum(["http", "streamable-http", "sse"]).optional(),
  url: z.url({ protocol: /^https?$/ }).max(4096),
  headers: z.record(z.string().min(1).max(256), z.string().max(16 * 1024)).optional(),
}).strict();
/** An HTTP server. */
export type McpHttpServer = z.infer<typeof McpHttpServer>;

/** One configured server. */
export const McpServerConfig = z.union([McpStdioServer, McpHttpServer]);
/** One configured server. */
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/** A whole file. */
export const McpConfigFile = z.object({
  mcpServers: z.record(z.string(), McpServerConfig).superRefine((servers, ctx) => {
    for (const name of Object.keys(servers)) {
      if (!McpServerName.safeParse(name).success) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `${
            JSON.stringify(name.slice(0, 64))
          }: a server name is 1-32 lowercase letters, digits or '-', starting with a letter`,
        });
      }
    }
    if (Object.keys(servers).length > MCP_MAX_SERVERS) {
      ctx.addIssue({ code: "custom", message: `at most ${MCP_MAX_SERVERS} servers` });
    }
  }),
}).strict();
/** A whole file. */
export type McpConfigFile = z.infer<typeof McpConfigFile>;

/** One server as the runtime holds it: its name, where it was configured, and how to reach it. */
export interface McpServerEntry {
  readonly name: string;
  /** The file that configured it (for messages). */
  readonly source: string;
  readonly config: McpServerConfig;
}

/** An MCP configuration that cannot be used. */
export class McpConfigError extends LibosError {
  /** Builds an `mcp_config_invalid` error. */
  constructor(message: string, options: { readonly cause?: unknown } = {}) {
    super("mcp_config_invalid", "operator", message, options);
  }
}

/**
 * Parses one configuration file's text.
 * @throws {McpConfigError} naming the file, line and column of the problem.
 */
export function parseMcpConfig(text: string, source: string): McpServerEntry[] {
  let file: McpConfigFile;
  try {
    file = parseStrictJsonc(text, source, McpConfigFile, {
      maxBytes: MCP_CONFIG_MAX_BYTES,
      maxDepth: 6,
      what: 'an MCP configuration is {"mcpServers": {"name": {"command": "...", "args": []}}}',
    });
  } catch (error) {
    throw new McpConfigError(
      `Invalid MCP configuration: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  return Object.entries(file.mcpServers).map(([name, config]) => ({ name, source, config }));
}

/**
 * Merges configurations in order (user's, `--mcp-config`, a trusted workspace's): a later file
 * may not silently replace a server an earlier one named.
 * @throws {McpConfigError} for a name configured twice, or too many servers.
 */
export function mergeMcpConfigs(files: readonly (readonly McpServerEntry[])[]): McpServerEntry[] {
  const out = new Map<string, McpServerEntry>();
  for (const entries of files) {
    for (const entry of entries) {
      const earlier = out.get(entry.name);
      if (earlier) {
        throw new McpConfigError(
          `MCP server ${
            JSON.stringify(entry.name)
          } is configured in both ${earlier.source} and ${entry.source}; rename one of them`,
        );
      }
      out.set(entry.name, entry);
    }
  }
  if (out.size > MCP_MAX_SERVERS) {
    throw new McpConfigError(
      `${out.size} MCP servers are configured; at most ${MCP_MAX_SERVERS} may be`,
    );
  }
  return [...out.values()];
}

/**
 * Reads and parses the files that exist (an absent optional file is no servers).
 * @throws {McpConfigError} for a file that cannot be read or parsed.
 */
export function loadMcpConfigs(
  files: readonly { readonly path: string; readonly optional: boolean }[],
  read: (path: string) => string = Deno.readTextFileSync,
): McpServerEntry[] {
  const parsed: McpServerEntry[][] = [];
  for (const { path, optional } of files) {
    let text: string;
    try {
      text = read(path);
    } catch (error) {
      if (optional && error instanceof Deno.errors.NotFound) continue;
      throw new McpConfigError(
        `Cannot read the MCP configuration ${path}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    parsed.push(parseMcpConfig(text, path));
  }
  return mergeMcpConfigs(parsed);
}
