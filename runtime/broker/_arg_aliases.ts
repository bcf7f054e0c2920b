/**
 * The parameter names models send for ours. Models are trained on the tools of the coding agents
 * people use, so a read arrives as `{"file_path": …}` (Claude Code, Gemini CLI), `{"filePath": …}`
 * (OpenCode) or `{"absolute_path": …}` (older Gemini CLI), an edit as `oldString`/`newString`, a
 * write as `file_text` (Anthropic's text editor tool), a command as Codex's `command`/`workdir`. Refusing those costs the model a turn to
 * learn our spelling; this module renames them before the arguments are validated, so what is
 * validated, decided and audited is always the canonical form.
 *
 * A name is renamed only where the tool's schema has the canonical key and not the alias (a tool
 * that really takes `file` or `text` keeps it), and never when both are given: two values for one
 * parameter are refused, naming the one to keep.
 *
 * @module
 */
import { z } from "zod";

/** Canonical parameter → the names models send for it. */
const ALIASES: Readonly<Record<string, readonly string[]>> = {
  path: ["file_path", "filePath", "filepath", "absolute_path", "absolutePath", "dir_path"],
  old_string: ["oldString", "old_str", "old_text", "oldText"],
  new_string: ["newString", "new_str", "new_text", "newText"],
  replace_all: ["replaceAll"],
  content: ["contents", "file_text", "fileText"],
  // Codex's shell tool: {"command": ["git", "status"], "workdir": "app"}. A command line as one
  // string (Claude Code's Bash) is not renamed: it is not an argv, and the refusal says so.
  argv: ["command", "cmd"],
  cwd: ["workdir", "working_directory"],
};

/** Aliases renamed only when their value has the canonical parameter's shape. */
const SHAPED: Readonly<Record<string, (value: unknown) => boolean>> = {
  argv: Array.isArray,
};

/** What renaming did: the arguments to validate, and each rename as `alias→canonical`. */
export type AliasOutcome =
  | { readonly ok: true; readonly args: unknown; readonly renamed: readonly string[] }
  | { readonly ok: false; readonly message: string };

/** The schema under optional/default/nullable wrappers. */
function unwrapped(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (let depth = 0; depth < 8; depth++) {
    if (
      !(current instanceof z.ZodOptional || current instanceof z.ZodNullable ||
        current instanceof z.ZodDefault)
    ) break;
    current = current.unwrap() as z.ZodType;
  }
  return current;
}

/** The object schema under wrappers, if there is one. */
function objectOf(schema: z.ZodType): z.ZodObject | undefined {
  const inner = unwrapped(schema);
  return inner instanceof z.ZodObject ? inner : undefined;
}

/** The element schema of an array (under wrappers), if the schema is one. */
function elementOf(schema: z.ZodType): z.ZodType | undefined {
  const inner = unwrapped(schema);
  return inner instanceof z.ZodArray ? inner.element as z.ZodType : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Renames the alias parameters in `raw` (and in arrays of objects below it, such as `edits`)
 * that `schema` knows by their canonical name. The input is not changed.
 */
export function resolveAliases(schema: z.ZodType, raw: unknown, at = ""): AliasOutcome {
  const object = objectOf(schema);
  if (object === undefined || !isRecord(raw)) return { ok: true, args: raw, renamed: [] };
  const shape = object.shape as Record<string, z.ZodType>;
  const out: Record<string, unknown> = { ...raw };
  const renamed: string[] = [];
  for (const [canonical, aliases] of Object.entries(ALIASES)) {
    if (!(canonical in shape)) continue;
    for (const alias of aliases) {
      if (alias in shape || !Object.hasOwn(out, alias)) continue;
      if (SHAPED[canonical]?.(out[alias]) === false) continue;
      if (Object.hasOwn(out, canonical)) {
        return {
          ok: false,
          message:
            `${at}${canonical} and ${at}${alias} were both given; they name the same parameter, send only ${canonical}`,
        };
      }
      out[canonical] = out[alias];
      delete out[alias];
      renamed.push(`${at}${alias}→${canonical}`);
    }
  }
  for (const [key, field] of Object.entries(shape)) {
    const element = elementOf(field);
    const items = out[key];
    if (element === undefined || !Array.isArray(items)) continue;
    const next: unknown[] = [];
    for (const [i, item] of items.entries()) {
      const inner = resolveAliases(element, item, `${at}${key}.${i}.`);
      if (!inner.ok) return inner;
      next.push(inner.args);
      renamed.push(...inner.renamed);
    }
    if (renamed.length > 0) out[key] = next;
  }
  return renamed.length === 0 ? { ok: true, args: raw, renamed } : { ok: true, args: out, renamed };
}

/** A parameter's schema without its wrappers (for a refusal that names its shape). */
export function parameterSchema(schema: z.ZodType, key: string): z.ZodType | undefined {
  const field = objectOf(schema)?.shape[key] as z.ZodType | undefined;
  return field === undefined ? undefined : unwrapped(field);
}

/** The parameter `key` stands for in `schema`, when it is one of our aliases for it. */
export function aliasOf(schema: z.ZodType, key: string): string | undefined {
  const object = objectOf(schema);
  if (object === undefined || key in object.shape) return undefined;
  return Object.entries(ALIASES).find(([canonical, aliases]) =>
    canonical in object.shape && aliases.includes(key)
  )?.[0];
}

/** The top-level parameter names a tool takes (for a refusal that says what it takes). */
export function parameterNames(schema: z.ZodType): readonly string[] {
  const object = objectOf(schema);
  return object === undefined ? [] : Object.keys(object.shape);
}
