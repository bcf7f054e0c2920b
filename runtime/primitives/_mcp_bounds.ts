/**
 * What an MCP server says is untrusted data: its tool names, descriptions, JSON Schemas and
 * results. This file bounds them: a schema is measured (size, depth) and kept as data — never
 * compiled or evaluated; a description is stripped of control, bidi and zero-width characters and
 * capped; a result is cut at a byte cap with a visible marker.
 *
 * @module
 */
import { LibosError } from "../base/errors.ts";
import type { JsonValue } from "../base/canonical_json.ts";

/** The largest tool input schema kept (serialised). */
export const MCP_SCHEMA_MAX_BYTES = 64 * 1024;
/** The deepest tool input schema kept. */
export const MCP_SCHEMA_MAX_DEPTH = 16;
/** The longest tool description shown to the model. */
export const MCP_DESCRIPTION_MAX_CHARS = 2000;
/** The most tools one server may list. */
export const MCP_MAX_TOOLS = 128;
/** The largest result text kept from one call (cut with a marker beyond). */
export const MCP_RESULT_MAX_BYTES = 256 * 1024;

/** MCP tool names the broker accepts (`mcp__<server>__<tool>` stays a valid tool name). */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,48}$/;

/** Something an MCP server said or did that libos refuses or bounds. */
export type McpErrorCode =
  | "mcp_schema_rejected"
  | "mcp_tool_rejected"
  | "mcp_tool_unknown"
  | "mcp_timeout"
  | "mcp_server_failed"
  | "mcp_outcome_unknown"
  | "mcp_result_too_large"
  | "mcp_transport_unsupported"
  | "mcp_wall_unavailable"
  | "mcp_server_refused"
  | "mcp_protocol_error"
  | "mcp_tool_error";

/** An MCP failure, with its stable code. */
export class McpError extends LibosError {
  /** Builds an MCP error; a server's misbehaviour is nobody's fault but the server's operator's. */
  constructor(code: McpErrorCode, message: string, options: { readonly cause?: unknown } = {}) {
    super(code, "operator", message, options);
  }
}

/**
 * Checks a tool's input schema as data: JSON only, at most {@link MCP_SCHEMA_MAX_BYTES}
 * serialised and {@link MCP_SCHEMA_MAX_DEPTH} deep, an object schema.
 * @throws {McpError} `mcp_schema_rejected` saying which bound it broke.
 */
export function checkToolSchema(server: string, tool: string, schema: unknown): JsonValue {
  const where = `the input schema of MCP tool ${server}/${tool}`;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    throw new McpError("mcp_schema_rejected", `Refused ${where}: it is not a JSON object`);
  }
  // Depth is measured iteratively: a schema bomb must not blow the stack before it is refused.
  const stack: [unknown, number][] = [[schema, 1]];
  let nodes = 0;
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (++nodes > 100_000) {
      throw new McpError("mcp_schema_rejected", `Refused ${where}: it has too many nodes`);
    }
    if (typeof value !== "object" || value === null) continue;
    if (depth > MCP_SCHEMA_MAX_DEPTH) {
      throw new McpError(
        "mcp_schema_rejected",
        `Refused ${where}: it is nested deeper than ${MCP_SCHEMA_MAX_DEPTH} levels`,
      );
    }
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  let text: string;
  try {
    text = JSON.stringify(schema);
  } catch (error) {
    throw new McpError("mcp_schema_rejected", `Refused ${where}: it is not JSON`, { cause: error });
  }
  const bytes = new TextEncoder().encode(text).length;
  if (bytes > MCP_SCHEMA_MAX_BYTES) {
    throw new McpError(
      "mcp_schema_rejected",
      `Refused ${where}: it is ${bytes} bytes; at most ${MCP_SCHEMA_MAX_BYTES} are kept`,
    );
  }
  const parsed = JSON.parse(text) as Record<string, JsonValue>;
  if (parsed.type !== undefined && parsed.type !== "object") {
    throw new McpError("mcp_schema_rejected", `Refused ${where}: its type is not "object"`);
  }
  return parsed;
}

/**
 * Checks a tool name the server listed.
 * @throws {McpError} `mcp_tool_rejected` for a name that is not a plain identifier.
 */
export function checkToolName(server: string, name: unknown): string {
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    throw new McpError(
      "mcp_tool_rejected",
      `Refused a tool of MCP server ${server}: its name ${
        JSON.stringify(String(name).slice(0, 64))
      } is not 1-48 letters, digits, '_' or '-'`,
    );
  }
  return name;
}

// C0/C1 controls (but tab and LF), DEL, bidi controls, zero-width characters, tag characters,
// variation selectors and the BOM: nothing a reader cannot see reaches the model.
const INVISIBLE =
  // deno-lint-ignore no-control-regex -- matching control characters is the point: they are removed
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u200B-\u200F\u202A-\u202E\u2060-\u206F\uFE00-\uFE0F\uFEFF\u{E0000}-\u{E007F}]/gu;

/**
 * A server's description as shown to the model: invisible characters removed, whitespace runs
 * collapsed, capped at {@link MCP_DESCRIPTION_MAX_CHARS}, and labelled as the server's words.
 */
export function safeDescription(server: string, text: unknown): string {
  const raw = typeof text === "string" ? text : "";
  let clean = raw.replace(INVISIBLE, "").replace(/[\t\n ]+/g, " ").trim();
  if (clean.length > MCP_DESCRIPTION_MAX_CHARS) {
    clean = `${clean.slice(0, MCP_DESCRIPTION_MAX_CHARS)}…[truncated ${
      clean.length - MCP_DESCRIPTION_MAX_CHARS
    } chars]`;
  }
  return `[MCP server ${server}; untrusted description] ${clean}`;
}

/** Text cut to at most `max` UTF-8 bytes with a visible marker; whether it was cut. */
export function capText(text: string, max = MCP_RESULT_MAX_BYTES): {
  readonly text: string;
  readonly truncated: boolean;
} {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= max) return { text, truncated: false };
  const kept = new TextDecoder("utf-8", { fatal: false }).decode(bytes.subarray(0, max))
    .replace(/\uFFFD$/, "");
  return {
    text: `${kept}…[truncated ${bytes.length - max} bytes]`,
    truncated: true,
  };
}
