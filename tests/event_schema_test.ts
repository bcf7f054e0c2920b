/**
 * The public event schema (issue 24): `schema/events.v<N>.json` is exactly what the zod
 * definitions generate (drift), a released version's schema only grows (compatibility: checked
 * against its frozen copy in `schema/frozen/`), and every kind the source emits is in the schema
 * and every kind in the schema is emitted somewhere (a static scan of `emit({ kind: … })`).
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { EVENT_KINDS, EVENT_VERSION, eventJsonSchema } from "../runtime/audit/events.ts";
import { breakingChanges } from "../schema/compat.ts";
import { schemaFileUrl, schemaText } from "../schema/generate.ts";

type JsonObject = { [key: string]: unknown };

const REPO = fileURLToPath(new URL("..", import.meta.url));
const FROZEN = join(REPO, "schema", "frozen");

function frozen(version: number): JsonObject {
  return JSON.parse(Deno.readTextFileSync(join(FROZEN, `events.v${version}.json`)));
}

/** The generated schema as plain JSON (a deep copy a case may change). */
function current(): JsonObject {
  return JSON.parse(JSON.stringify(eventJsonSchema()));
}

/** The variant of `kind` in a schema (its `oneOf` entry). */
function variant(schema: JsonObject, kind: string): JsonObject {
  const found = (schema.oneOf as JsonObject[]).find((v) =>
    ((v.properties as JsonObject).kind as JsonObject).const === kind
  );
  assert.ok(found, `no variant ${kind}`);
  return found;
}

function payload(schema: JsonObject, kind: string): JsonObject {
  return (variant(schema, kind).properties as JsonObject).payload as JsonObject;
}

Deno.test("schema/events.v<EVENT_VERSION>.json is exactly what the zod definitions generate (run deno task schema after changing runtime/audit/events.ts)", () => {
  const onDisk = Deno.readTextFileSync(schemaFileUrl());
  assert.equal(
    onDisk,
    schemaText(),
    `schema/events.v${EVENT_VERSION}.json is out of date: run "deno task schema" and commit it`,
  );
  // And it is the schema of every kind the code knows, no more, no less.
  const kinds = (JSON.parse(onDisk).oneOf as JsonObject[]).map((v) =>
    ((v.properties as JsonObject).kind as JsonObject).const
  );
  assert.deepEqual(kinds, [...EVENT_KINDS]);
});

Deno.test("the event schema of this EVENT_VERSION only grew since it was frozen: no kind or field removed, none made required, none narrowed (else bump EVENT_VERSION and freeze the new schema)", () => {
  const versions = [...Deno.readDirSync(FROZEN)]
    .map((e) => /^events\.v(\d+)\.json$/.exec(e.name)?.[1])
    .filter((v): v is string => v !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
  assert.ok(
    versions.includes(EVENT_VERSION),
    `schema/frozen/events.v${EVENT_VERSION}.json is missing: a new EVENT_VERSION freezes its schema (copy schema/events.v${EVENT_VERSION}.json there)`,
  );
  assert.ok(versions.every((v) => v <= EVENT_VERSION), `a frozen schema is newer than the code`);
  assert.deepEqual(breakingChanges(frozen(EVENT_VERSION), current()), []);
});

Deno.test("breakingChanges() names each breaking change (a kind or field removed, made required, narrowed, retyped, a new required field) and lets an optional field or a new kind pass", () => {
  const cases: [string, (s: JsonObject) => void, RegExp | null][] = [
    ["a kind removed", (s) => {
      s.oneOf = (s.oneOf as JsonObject[]).filter((v) => v !== variant(s, "tool.result"));
    }, /kind "tool\.result" was removed/],
    ["a payload field removed", (s) => {
      delete (payload(s, "decision").properties as JsonObject).layer;
    }, /kind "decision"\.payload: field "layer" was removed/],
    ["an envelope field removed", (s) => {
      delete (variant(s, "notice").properties as JsonObject).turn;
    }, /kind "notice": field "turn" was removed/],
    ["an optional field made required", (s) => {
      (payload(s, "human.request").required as string[]).push("resource");
    }, /field "resource" was made required/],
    ["a string narrowed", (s) => {
      ((payload(s, "decision").properties as JsonObject).resource as JsonObject).maxLength = 10;
    }, /field "resource" changed its schema/],
    ["an enum narrowed", (s) => {
      ((payload(s, "turn.ended").properties as JsonObject).outcome as JsonObject).enum = ["final"];
    }, /field "outcome" changed its schema/],
    ["a field retyped", (s) => {
      (payload(s, "tool.result").properties as JsonObject).exitCode = { type: "string" };
    }, /field "exitCode" changed its schema/],
    ["a new required field", (s) => {
      const p = payload(s, "checkpoint.created");
      (p.properties as JsonObject).size = { type: "integer" };
      (p.required as string[]).push("size");
    }, /new field "size" is required/],
    ["a new optional field", (s) => {
      (payload(s, "checkpoint.created").properties as JsonObject).label = { type: "string" };
    }, null],
    ["a new kind", (s) => {
      const copy = JSON.parse(JSON.stringify(variant(s, "notice")));
      copy.properties.kind.const = "notice.cleared";
      (s.oneOf as JsonObject[]).push(copy);
    }, null],
  ];
  for (const [name, change, expected] of cases) {
    const changed = current();
    change(changed);
    const problems = breakingChanges(current(), changed);
    if (expected === null) assert.deepEqual(problems, [], name);
    else {
      assert.equal(problems.length, 1, `${name}: ${problems.join("; ")}`);
      assert.match(problems[0]!, expected, name);
    }
  }
});

/** Every `.ts` file under the folders that emit events (tests and fixtures excluded). */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory && entry.name !== "fixtures") walk(path);
      else if (entry.isFile && path.endsWith(".ts") && !path.endsWith("_test.ts")) out.push(path);
    }
  };
  for (const dir of ["runtime", "cli", "jit", "tools", "images"]) {
    try {
      walk(join(REPO, dir));
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  return out;
}

Deno.test("every event kind the source emits is in the schema, and every kind in the schema has an emitter (static scan of emit({ kind: … }))", () => {
  const emitted = new Map<string, string[]>();
  let calls = 0;
  for (const file of sources()) {
    const text = Deno.readTextFileSync(file);
    // An emit call and the object literal it is given, up to its `kind:` (the first key).
    for (const match of text.matchAll(/\.emit\(\s*\{\s*kind:\s*"([^"]+)"/g)) {
      calls++;
      const kind = match[1]!;
      emitted.set(kind, [...(emitted.get(kind) ?? []), relative(REPO, file)]);
    }
    // An emit whose body is not a literal with its kind first is a kind this scan cannot see.
    for (const match of text.matchAll(/\.emit\(\s*([^{\s)][^,)]*)/g)) {
      assert.match(
        match[1]!,
        /^decisionEvent\(/,
        `${relative(REPO, file)}: emit(${
          match[1]
        }) — give emit an object literal whose first key is kind, so the schema scan sees it`,
      );
    }
  }
  assert.ok(calls >= 15, `the scan found only ${calls} emit calls: is the pattern still right?`);
  const known = new Set<string>(EVENT_KINDS);
  for (const [kind, files] of emitted) {
    assert.ok(known.has(kind), `${files.join(", ")} emit "${kind}", which is not in the schema`);
  }
  // The decision event is built by decisionEvent() (derived from an audit record).
  const withEmitter = new Set([...emitted.keys(), "decision"]);
  for (const kind of EVENT_KINDS) {
    assert.ok(withEmitter.has(kind), `"${kind}" is in the schema but nothing emits it`);
  }
});
