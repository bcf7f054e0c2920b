/**
 * Built-in model-facing tools: thin typed wrappers over runtime primitives. Files here import only
 * `zod` and `runtime/broker/tool.ts`; they never touch `Deno.*`, `fetch`, `node:*`, a provider or a
 * global escape hatch — `tests/architecture_test.ts` parses every file with the purity rule of
 * `tests/lint/tools_purity.ts` to prove it (DESIGN §1, §2).
 *
 * @module
 */
import type { z } from "zod";
import type { ToolSpec } from "../runtime/broker/tool.ts";
import {
  deleteDirectory,
  deleteFile,
  editFile,
  globFiles,
  grepFiles,
  readDirectory,
  readTextFile,
  writeDirectory,
  writeTextFile,
} from "./files.ts";
import {
  appendMemoryObject,
  createMemoryNamespace,
  createMemoryObject,
  createObjectFromFile,
  listMemoryNamespace,
  readMemoryObject,
  writeObjectToFile,
} from "./memory.ts";
import {
  loadImageFromYaml,
  proposeJitTool,
  registerJitTool,
  validateJitTool,
} from "./jit_and_images.ts";
import {
  checkpointCreate,
  execProcess,
  forkChildProcess,
  getWorkingDirectory,
  listChildProcesses,
  mergeChildMemory,
  processExit,
  setWorkingDirectory,
  signalChildProcess,
  spawnChildProcess,
  waitChildProcess,
} from "./process.ts";
import { parsePytestLog } from "./pytest_log.ts";
import { fetchUrl, runShellCommand } from "./shell_and_net.ts";
import {
  askHuman,
  echo,
  getCurrentTime,
  humanOutput,
  requestPermission,
  sleep,
} from "./time_and_human.ts";

/** Every built-in tool's spec, in name order (the runtime defines and registers them). */
export function builtinToolSpecs(): ToolSpec<z.ZodType>[] {
  const specs = [
    checkpointCreate,
    execProcess,
    forkChildProcess,
    getWorkingDirectory,
    listChildProcesses,
    loadImageFromYaml,
    mergeChildMemory,
    processExit,
    proposeJitTool,
    registerJitTool,
    setWorkingDirectory,
    signalChildProcess,
    spawnChildProcess,
    validateJitTool,
    waitChildProcess,
    appendMemoryObject,
    askHuman,
    createMemoryNamespace,
    createMemoryObject,
    createObjectFromFile,
    deleteDirectory,
    deleteFile,
    echo,
    editFile,
    fetchUrl,
    getCurrentTime,
    globFiles,
    grepFiles,
    humanOutput,
    listMemoryNamespace,
    parsePytestLog,
    readDirectory,
    readMemoryObject,
    readTextFile,
    requestPermission,
    runShellCommand,
    sleep,
    writeDirectory,
    writeObjectToFile,
    writeTextFile,
  ] as unknown as ToolSpec<z.ZodType>[];
  return specs.sort((a, b) => a.name < b.name ? -1 : 1);
}
