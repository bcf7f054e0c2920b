/**
 * The compatibility rule of the event schema: within one `EVENT_VERSION` the JSON Schema may only
 * grow. {@link breakingChanges} compares a frozen copy of a version's schema
 * (`schema/frozen/events.v<N>.json`, written once when the version is first released) with what
 * the code generates now, and lists every change a host written against the frozen copy could
 * trip over: a kind removed, a field removed, a field made required, a field's schema changed
 * (narrowed, retyped), or a new field that is required.
 *
 * @module
 */

/** A JSON Schema document or one of its subschemas, parsed from JSON. */
export type JsonObject = { readonly [key: string]: unknown };

function object(value: unknown): JsonObject | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as JsonObject
    : undefined;
}

/** The envelope variants of a schema by kind (`oneOf` entries with a `kind` const). */
function variants(schema: JsonObject): Map<string, JsonObject> {
  const out = new Map<string, JsonObject>();
  const list = schema.oneOf;
  if (!Array.isArray(list)) return out;
  for (const entry of list) {
    const variant = object(entry);
    const kind = object(object(variant?.properties)?.kind)?.const;
    if (variant && typeof kind === "string") out.set(kind, variant);
  }
  return out;
}

function required(schema: JsonObject | undefined): Set<string> {
  const list = schema?.required;
  return new Set(Array.isArray(list) ? list.filter((x): x is string => typeof x === "string") : []);
}

function properties(schema: JsonObject | undefined): Map<string, unknown> {
  return new Map(Object.entries(object(schema?.properties) ?? {}));
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => canonical(v) ?? null);
  const o = object(value);
  if (o === undefined) return value;
  return Object.fromEntries(
    Object.keys(o).sort().map((k) => [k, canonical(o[k]) ?? null]),
  );
}

/** Compares one object schema (the envelope, or a payload) field by field. */
function compareObject(
  where: string,
  frozen: JsonObject | undefined,
  current: JsonObject | undefined,
  problems: string[],
  nested: string | undefined,
): void {
  const frozenProps = properties(frozen);
  const currentProps = properties(current);
  const frozenRequired = required(frozen);
  const currentRequired = required(current);
  for (const [name, schema] of frozenProps) {
    if (!currentProps.has(name)) {
      problems.push(`${where}: field "${name}" was removed`);
      continue;
    }
    if (!frozenRequired.has(name) && currentRequired.has(name)) {
      problems.push(`${where}: field "${name}" was made required`);
    }
    if (name === nested) {
      compareObject(
        `${where}.${name}`,
        object(schema),
        object(currentProps.get(name)),
        problems,
        undefined,
      );
    } else if (!same(schema, currentProps.get(name))) {
      problems.push(`${where}: field "${name}" changed its schema (narrowed, widened or retyped)`);
    }
  }
  for (const name of currentProps.keys()) {
    if (!frozenProps.has(name) && currentRequired.has(name)) {
      problems.push(`${where}: new field "${name}" is required (a new field must be optional)`);
    }
  }
  if (!same(frozen?.additionalProperties, current?.additionalProperties)) {
    problems.push(`${where}: additionalProperties changed`);
  }
}

/**
 * Every breaking change from `frozen` (a released version's schema) to `current` (what the code
 * generates for the same version), as one sentence each; empty when `current` only grew.
 */
export function breakingChanges(frozen: JsonObject, current: JsonObject): string[] {
  const problems: string[] = [];
  const before = variants(frozen);
  const after = variants(current);
  if (before.size === 0) problems.push("the frozen schema lists no event kinds");
  for (const [kind, variant] of before) {
    const now = after.get(kind);
    if (now === undefined) {
      problems.push(`kind "${kind}" was removed`);
      continue;
    }
    compareObject(`kind "${kind}"`, variant, now, problems, "payload");
  }
  return problems;
}
