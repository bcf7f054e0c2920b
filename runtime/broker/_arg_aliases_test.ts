import assert from "node:assert/strict";
import { z } from "zod";
import { parameterNames, resolveAliases } from "./_arg_aliases.ts";

const Edit = z.object({
  path: z.string(),
  old_string: z.string().optional(),
  new_string: z.string().optional(),
  edits: z.array(z.object({ old_string: z.string(), new_string: z.string() }).strict())
    .optional(),
}).strict();

const cases: readonly {
  readonly name: string;
  readonly schema: z.ZodType;
  readonly raw: unknown;
  readonly args?: unknown;
  readonly renamed?: readonly string[];
  readonly refused?: RegExp;
}[] = [
  {
    name: "Claude Code's file_path becomes path",
    schema: Edit,
    raw: { file_path: "a.ts", old_string: "x", new_string: "y" },
    args: { path: "a.ts", old_string: "x", new_string: "y" },
    renamed: ["file_path→path"],
  },
  {
    name: "OpenCode's camelCase names become ours",
    schema: Edit,
    raw: { filePath: "a.ts", oldString: "x", newString: "y" },
    args: { path: "a.ts", old_string: "x", new_string: "y" },
    renamed: ["filePath→path", "oldString→old_string", "newString→new_string"],
  },
  {
    name: "names inside a list of edits are renamed too",
    schema: Edit,
    raw: {
      path: "a.ts",
      edits: [{ oldString: "x", newString: "y" }, { old_string: "p", new_string: "q" }],
    },
    args: {
      path: "a.ts",
      edits: [{ old_string: "x", new_string: "y" }, { old_string: "p", new_string: "q" }],
    },
    renamed: ["edits.0.oldString→old_string", "edits.0.newString→new_string"],
  },
  {
    name: "two values for one parameter are refused, naming the one to keep",
    schema: Edit,
    raw: { path: "a.ts", file_path: "b.ts" },
    refused: /path and file_path were both given.*send only path/,
  },
  {
    name: "a conflict inside an edit is refused with its place",
    schema: Edit,
    raw: { path: "a.ts", edits: [{ old_string: "x", oldString: "z", new_string: "y" }] },
    refused: /edits\.0\.old_string and edits\.0\.oldString/,
  },
  {
    name: "a tool whose schema has the alias as its own parameter keeps it",
    schema: z.object({ path: z.string(), file_path: z.string() }).strict(),
    raw: { path: "a", file_path: "b" },
    args: { path: "a", file_path: "b" },
    renamed: [],
  },
  {
    name: "a tool without the canonical parameter is left alone (zod refuses the stranger)",
    schema: z.object({ text: z.string() }).strict(),
    raw: { file_path: "a" },
    args: { file_path: "a" },
    renamed: [],
  },
  {
    name: "an inherited name is not an alias (only own keys count)",
    schema: Edit,
    raw: Object.create({ file_path: "evil" }) as unknown,
    args: {},
    renamed: [],
  },
  {
    name: "arguments that are not an object pass through for zod to refuse",
    schema: Edit,
    raw: ["file_path"],
    args: ["file_path"],
    renamed: [],
  },
];

for (const c of cases) {
  Deno.test(`resolveAliases(): ${c.name}`, () => {
    const frozen = structuredClone(c.raw);
    const out = resolveAliases(c.schema, c.raw);
    if (c.refused) {
      assert.equal(out.ok, false);
      assert.match(out.ok ? "" : out.message, c.refused);
      return;
    }
    assert.ok(out.ok);
    assert.deepEqual(out.args, c.args);
    assert.deepEqual(out.renamed, c.renamed);
    // The caller's arguments are never changed.
    assert.deepEqual(structuredClone(c.raw), frozen);
  });
}

Deno.test("parameterNames(): the top-level parameters, under a default wrapper too", () => {
  assert.deepEqual(parameterNames(Edit), ["path", "old_string", "new_string", "edits"]);
  assert.deepEqual(parameterNames(Edit.default({ path: "." })), [
    "path",
    "old_string",
    "new_string",
    "edits",
  ]);
  assert.deepEqual(parameterNames(z.string()), []);
});
