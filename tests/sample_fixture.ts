/**
 * Samples several test files share: JIT tool candidates (a word counter with one scripted test,
 * and an echo-shaped candidate for any source) and a narrow agent image in YAML.
 *
 * @module
 */
import type { ToolCandidate } from "../jit/tool_lifecycle.ts";

/** A word counter that reads a file through fs.read_text, with one test (three words). */
export function wordCounter(overrides: Partial<ToolCandidate> = {}): ToolCandidate {
  return {
    name: "count_words",
    description: "Count the words of a workspace text file.",
    input_schema: {
      type: "object",
      properties: { path: { type: "string" } },
      required: ["path"],
      additionalProperties: false,
    },
    output_schema: {
      type: "object",
      properties: { words: { type: "integer" } },
      required: ["words"],
    },
    source: `export async function run(args, libos) {
      const file = await libos.call("fs.read_text", { path: args.path });
      return { words: file.content.split(/\\s+/).filter(Boolean).length };
    }`,
    tests: [{
      name: "three words",
      args: { path: "a.txt" },
      syscalls: [{
        name: "fs.read_text",
        args: { path: "a.txt" },
        result: { content: "one two three" },
      }],
      expect: { words: 3 },
    }],
    ...overrides,
  };
}

/** A narrow image that reads docs only. */
export const DOCS_READER = `# A narrow image: reads docs only.
id: docs-reader:v1
name: docs-reader
version: v1
description: Reads the docs folder and answers questions.
systemPrompt: |
  You read documentation.
  You never write.
defaultTools: [read_text_file, read_directory, ask_human]
safety:
  maxMode: read-only
requiredCapabilities:
  - resource: { type: fs, path: docs, scope: subtree }
    rights: [read, stat]
  - resource: { type: human, key: owner, scope: exact }
    rights: [write]
`;

/** The source of a harmless tool (what the echo-shaped candidate's test expects). */
export const BENIGN = `export function run() { return "benign"; }`;

/** A candidate for any source, whose one test expects "benign" and no syscall. */
export function echoCandidate(source: string, name = "echo_tool"): ToolCandidate {
  return {
    name,
    description: "Echo.",
    input_schema: { type: "object" },
    output_schema: {},
    source,
    tests: [{ name: "t", args: {}, syscalls: [], expect: "benign" }],
  };
}
