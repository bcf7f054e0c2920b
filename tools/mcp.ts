/**
 * The JIT syscall that calls a configured MCP server's tool (issue 25). The model has no tool of
 * this name: it calls each MCP tool by its own name (`mcp__<server>__<tool>`), which the broker
 * registers per run. A JIT tool reaches the same primitive, decided the same way.
 *
 * @module
 */
import { z } from "zod";
import { syscall, type SyscallOnlySpec } from "../runtime/broker/tool.ts";

const McpCallArgs = z.object({
  server: z.string().min(1).max(32),
  tool: z.string().min(1).max(48),
  // Its size is bounded by the primitive (256 KiB serialised), as the model's own call is.
  arguments: z.record(z.string().max(256), z.json()).optional(),
}).strict();

/** `mcp.call`: one call of `server`'s `tool` through the MCP primitive (decided, ledgered). */
export const mcpSyscalls: SyscallOnlySpec<"mcp.call"> = {
  syscalls: {
    "mcp.call": syscall(
      McpCallArgs,
      (a, sys, signal) =>
        sys.mcp.call({ server: a.server, tool: a.tool, arguments: a.arguments ?? {} }, signal),
    ),
  },
  noTool: {
    "mcp.call":
      "the model calls each MCP tool by its own name (mcp__<server>__<tool>), which the broker registers per run",
  },
};
