/**
 * Built-in model-facing tools: thin typed wrappers over runtime primitives. Files here import only
 * `zod` and the tool types of `runtime/tool.ts`; they never touch `Deno.*`, `fetch`, `node:*`, a
 * provider or a global escape hatch — `tests/architecture_test.ts` parses every file with the
 * purity rule of `tests/lint/tools_purity.ts` to prove it (DESIGN §1, §2). The built-in tools
 * issue completes the set.
 *
 * @module
 */
import type { z } from "zod";
import type { ToolSpec } from "../runtime/tool.ts";
import { listDirectory, readTextFile, writeTextFile } from "./files.ts";
import { askHuman, getCurrentTime, humanOutput } from "./time_and_human.ts";

/** Every built-in tool's spec, in name order (the runtime defines and registers them). */
export function builtinToolSpecs(): ToolSpec<z.ZodType>[] {
  return [
    askHuman,
    getCurrentTime,
    humanOutput,
    listDirectory,
    readTextFile,
    writeTextFile,
  ] as unknown as ToolSpec<z.ZodType>[];
}
