/**
 * Built-in model-facing tools: thin typed wrappers over runtime primitives, each declared once
 * with the JIT syscalls that mirror it (`syscalls`; the few syscalls no tool mirrors are declared
 * beside their tools with the reason). {@link syscallTable} collects them. Files here import only
 * `zod` and `runtime/broker/tool.ts`; they never touch `Deno.*`, `fetch`, `node:*`, a provider or a
 * global escape hatch — `tests/architecture_test.ts` parses every file with the purity rule of
 * `tests/lint/tools_purity.ts` to prove it (DESIGN §1, §2).
 *
 * @module
 */
import type { z } from "zod";
import type { SyscallSpec, ToolSpec } from "../runtime/broker/tool.ts";
import {
  deleteDirectory,
  deleteFile,
  editFile,
  fileSyscalls,
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
  memorySyscalls,
  readMemoryObject,
  writeObjectToFile,
} from "./memory.ts";
import {
  imageSyscalls,
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
import { mcpSyscalls } from "./mcp.ts";
import { applyPatchTool } from "./patch.ts";
import { updatePlan } from "./plan.ts";

/**
 * Every declaration of the tool surface: the model-facing tools and the syscalls no tool mirrors. The type of this list is where {@link SyscallName} comes from.
 */
function declarations() {
  // In the order syscalls are listed to a tool (an unknown syscall's error names them all).
  return [
    readTextFile,
    writeTextFile,
    readDirectory,
    writeDirectory,
    deleteFile,
    deleteDirectory,
    fileSyscalls,
    editFile,
    applyPatchTool,
    globFiles,
    grepFiles,
    getCurrentTime,
    sleep,
    createMemoryObject,
    readMemoryObject,
    listMemoryNamespace,
    memorySyscalls,
    createMemoryNamespace,
    humanOutput,
    askHuman,
    requestPermission,
    runShellCommand,
    fetchUrl,
    mcpSyscalls,
    getWorkingDirectory,
    listChildProcesses,
    forkChildProcess,
    spawnChildProcess,
    waitChildProcess,
    signalChildProcess,
    mergeChildMemory,
    processExit,
    execProcess,
    imageSyscalls,
    appendMemoryObject,
    checkpointCreate,
    createObjectFromFile,
    echo,
    loadImageFromYaml,
    parsePytestLog,
    proposeJitTool,
    registerJitTool,
    setWorkingDirectory,
    validateJitTool,
    writeObjectToFile,
    updatePlan,
  ] as const;
}

/** The syscall names a declaration holds (none for a tool without syscalls). */
type SyscallsOf<D> = D extends { readonly syscalls: infer Y } ? Extract<keyof Y, string> : never;

/**
 * Every JIT syscall: exactly the names the declarations hold. A name no declaration holds is not
 * a `SyscallName` (a type error, see `tests/tool_syscall_parity_test.ts`).
 */
export type SyscallName = SyscallsOf<ReturnType<typeof declarations>[number]>;

/** One syscall as the session serves it: its declaration, and the tool it mirrors (if any). */
export interface SyscallEntry {
  readonly name: SyscallName;
  /** The model-facing tool that declares it; null for a syscall no tool mirrors. */
  readonly tool: string | null;
  /** Why no tool mirrors it (for a syscall-only declaration). */
  readonly noTool: string | null;
  readonly spec: SyscallSpec;
}

/**
 * Every syscall, by name, built from the declarations (nothing else declares a syscall).
 * @throws {Error} when two declarations claim the same syscall (a defect of `tools/`).
 */
export function syscallTable(): ReadonlyMap<SyscallName, SyscallEntry> {
  const table = new Map<SyscallName, SyscallEntry>();
  for (const declaration of declarations()) {
    const syscalls: Readonly<Record<string, SyscallSpec>> = declaration.syscalls ?? {};
    const tool = "name" in declaration ? declaration.name : null;
    const reasons = new Map<string, string>(
      Object.entries("noTool" in declaration ? declaration.noTool : {}),
    );
    for (const [name, spec] of Object.entries(syscalls)) {
      if (table.has(name as SyscallName)) {
        throw new Error(
          `The syscall ${name} is declared twice (the second by ${
            tool ?? "a syscall-only declaration"
          })`,
        );
      }
      table.set(name as SyscallName, {
        name: name as SyscallName,
        tool,
        noTool: reasons.get(name) ?? null,
        spec,
      });
    }
  }
  return table;
}

/** Every built-in tool's spec, in name order (the runtime defines and registers them). */
export function builtinToolSpecs(): ToolSpec<z.ZodType>[] {
  const specs = declarations().filter((d) => "name" in d) as unknown as ToolSpec<z.ZodType>[];
  return specs.sort((a, b) => a.name < b.name ? -1 : 1);
}
