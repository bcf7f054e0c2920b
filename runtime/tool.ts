/**
 * Tools (DESIGN §1, §2): `defineTool()` and the context a tool runs with.
 *
 * A tool is a name, a description, a zod schema of its arguments (the model sees the JSON Schema
 * derived from it), the kinds of effect it may exercise, and `run(args, ctx)`. `ctx` exposes only
 * primitives, already bound to the calling process: a tool cannot name another process, reach
 * `Deno`, the network or a provider, and every effect is still decided by the primitive on the
 * process's capabilities. Declaring effects narrows further: a tool that declared only `fs.read`
 * gets an error if it tries to write, whatever the process may do.
 *
 * @module
 */
import { z } from "zod";
import type { JsonValue } from "./canonical_json.ts";
import { CapabilityDeniedError, ValidationError } from "./errors.ts";
import type { ClockReading } from "./primitives/clock.ts";
import type { CreateObject, MemoryRecord } from "./object_memory.ts";
import type { ObjectInfo } from "./memory_object.ts";

/** The kinds of effect a tool may exercise through its context. */
export const ToolEffect = z.enum([
  "fs.read",
  "fs.write",
  "fs.delete",
  "clock",
  "memory.read",
  "memory.write",
  "human",
]);
/** A kind of effect a tool may exercise. */
export type ToolEffect = z.infer<typeof ToolEffect>;

/** A tool name: lowercase snake case, as models expect function names. */
export const ToolName = z.string().regex(
  /^[a-z][a-z0-9_]{0,63}$/,
  "must be 1-64 lowercase letters, digits and _ (starting with a letter)",
);

/** The primitives a tool may use, bound to the calling process. */
export interface ToolContext {
  /** The calling process. */
  readonly pid: string;
  /** Aborted when the call is cancelled (the process is terminated or its time runs out). */
  readonly signal: AbortSignal;
  readonly fs: {
    readText(path: string, options?: { readonly maxBytes?: number }): Promise<JsonValue>;
    writeText(
      path: string,
      content: string,
      options?: { readonly overwrite?: boolean },
    ): Promise<JsonValue>;
    listDir(path: string, options?: { readonly limit?: number }): Promise<JsonValue>;
    makeDir(path: string, options?: { readonly parents?: boolean }): Promise<JsonValue>;
    deleteFile(path: string, options?: { readonly missingOk?: boolean }): Promise<JsonValue>;
    deleteDir(path: string, options?: { readonly recursive?: boolean }): Promise<JsonValue>;
    stat(path: string): Promise<JsonValue>;
  };
  readonly clock: {
    now(options?: { readonly timeZone?: string }): ClockReading;
  };
  readonly memory: {
    create(input: CreateObject): ObjectInfo;
    read(oid: string): MemoryRecord;
    readByName(namespace: string, name: string): MemoryRecord;
    list(namespace?: string): ObjectInfo[];
    update(oid: string, change: { readonly payload: JsonValue }): ObjectInfo;
  };
  readonly human: {
    /** Asks the human; in queue mode the process parks and the answer comes back on resume. */
    ask(question: string): Promise<string>;
    /** Sends the human a message. */
    output(text: string): void;
  };
}

/** What a tool's `run` returns: JSON, handed to the model (capped) and stored as an object. */
export type ToolValue = JsonValue;

/** A tool definition, as the broker holds it. */
export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  /** Validates the model's arguments (the call fails closed on anything else). */
  readonly args: z.ZodType;
  /** The JSON Schema the model is shown, derived from `args`. */
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly effects: readonly ToolEffect[];
  /** Built-in tools ship with libos; JIT tools are registered by processes. */
  readonly origin: "builtin" | "jit";
  run(args: unknown, ctx: ToolContext): Promise<ToolValue> | ToolValue;
}

/** What {@link defineTool} takes. */
export interface ToolSpec<S extends z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly args: S;
  readonly effects: readonly ToolEffect[];
  run(args: z.output<S>, ctx: ToolContext): Promise<ToolValue> | ToolValue;
}

/**
 * Defines a built-in tool.
 * @throws {ValidationError} for a bad name, description or effect, or an argument schema that is
 *   not a JSON object schema.
 */
export function defineTool<S extends z.ZodType>(
  spec: ToolSpec<S>,
  origin: ToolDefinition["origin"] = "builtin",
): ToolDefinition {
  const name = ToolName.safeParse(spec.name);
  if (!name.success) {
    throw new ValidationError(
      `Tool name ${JSON.stringify(spec.name)} ${name.error.issues[0]?.message ?? "is invalid"}`,
    );
  }
  if (
    typeof spec.description !== "string" || spec.description.length < 1 ||
    spec.description.length > 2000
  ) {
    throw new ValidationError(`Tool ${spec.name} needs a description of 1-2000 characters`);
  }
  const effects = z.array(ToolEffect).max(16).safeParse(spec.effects);
  if (!effects.success) {
    throw new ValidationError(
      `Tool ${spec.name} declares an unknown effect; use ${ToolEffect.options.join(", ")}`,
    );
  }
  let parameters: Record<string, unknown>;
  try {
    parameters = z.toJSONSchema(spec.args, { io: "input" }) as Record<string, unknown>;
  } catch (error) {
    throw new ValidationError(
      `Tool ${spec.name}'s argument schema cannot be shown to a model as JSON Schema`,
      { cause: error },
    );
  }
  if (parameters.type !== "object") {
    throw new ValidationError(`Tool ${spec.name}'s arguments must be an object schema (z.object)`);
  }
  return Object.freeze({
    name: name.data,
    description: spec.description,
    args: spec.args,
    parameters: Object.freeze(parameters),
    effects: Object.freeze([...effects.data]),
    origin,
    run: (args: unknown, ctx: ToolContext) => spec.run(args as z.output<S>, ctx),
  });
}

/** The refusal when a tool uses an effect it did not declare. */
export function undeclared(tool: string, effect: ToolEffect): CapabilityDeniedError {
  return new CapabilityDeniedError(
    "capability_denied",
    `Tool ${tool} used ${effect}, which it does not declare; a tool may only use the effects it declares`,
    { reason: `tool:${tool}` },
  );
}
