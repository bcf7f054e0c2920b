/**
 * Process tools: the working directory, children (fork, spawn, list, signal, wait, merge their
 * results), exec and exit. A process acts on itself and its own children only, and a child holds
 * only what its parent hands it (`inherit`, never more than the parent holds). Waiting and
 * exiting end the process's quantum: the scheduler applies them.
 *
 * @module
 */
import { z } from "zod";
import { CHILD_WAIT_MS_MAX } from "./caps.ts";
import {
  BudgetsSchema,
  CapabilityResourceSchema,
  present,
  syscall,
  type ToolSpec,
} from "../runtime/broker/tool.ts";

const Pid = z.string().min(1).max(64).describe("A process id (pid_…)");

const Budgets = z.object({
  maxToolCalls: z.number().int().min(0).optional(),
  maxLiveChildren: z.number().int().min(0).optional(),
  maxWallTimeMs: z.number().int().min(1).optional(),
  maxModelTokens: z.number().int().min(0).optional(),
}).strict().describe("Carved out of your own remaining budgets");

const Rights = z.array(z.string().min(1).max(32)).min(1).max(16);

const Inherit = z.array(
  z.object({
    resource: z.union([
      z.object({
        type: z.literal("fs"),
        path: z.string().min(1).max(4096),
        scope: z.enum(["exact", "subtree"]),
      }).strict(),
      z.object({
        type: z.enum(["net", "object", "namespace", "image", "tool", "process", "human"]),
        key: z.string().min(1).max(4096),
        scope: z.enum(["exact", "prefix", "any"]),
      }).strict(),
    ]),
    rights: Rights,
  }).strict(),
).max(64).describe("Scopes of your authority to hand the child (nothing by default)");

/**
 * What a syscall's child is handed: the process manager's own budgets (each bounded) and any
 * capability resource, with the tool's rights and count caps.
 */
const ChildSyscallArgs = {
  budgets: BudgetsSchema.partial().strict().optional(),
  inherit: z.array(z.object({ resource: CapabilityResourceSchema, rights: Rights }).strict())
    .max(64).optional(),
};

const None = z.object({}).strict();

/** `get_working_directory`: the process's working directory. */
export const getWorkingDirectory: ToolSpec<typeof None, "process.cwd"> = {
  name: "get_working_directory",
  description: "Your working directory (workspace-relative).",
  args: None,
  effects: ["process"],
  run: (_args, ctx) => ({ cwd: ctx.process.cwd() }),
  syscalls: { "process.cwd": syscall(None, (_a, sys) => sys.process.cwd()) },
};

const ChdirArgs = z.object({ path: z.string().min(1).max(4096) }).strict();

/** `set_working_directory`: changes it (inside the workspace). */
export const setWorkingDirectory: ToolSpec<typeof ChdirArgs> = {
  name: "set_working_directory",
  description: "Change your working directory (it must be a directory inside the workspace).",
  args: ChdirArgs,
  effects: ["process"],
  run: (args, ctx) => ({ cwd: ctx.process.chdir(args.path) }),
};

/** `list_child_processes`: the process's children and their status. */
export const listChildProcesses: ToolSpec<typeof None, "process.list"> = {
  name: "list_child_processes",
  description: "List your child processes with their status and result.",
  args: None,
  effects: ["process"],
  run: (_args, ctx) => ({ children: ctx.process.children() }),
  syscalls: { "process.list": syscall(None, (_a, sys) => sys.process.children()) },
};

const ForkArgs = z.object({
  goal: z.string().min(1).max(100_000).optional().describe("Default: your own goal"),
  budgets: Budgets.optional(),
  inherit: Inherit.optional(),
}).strict();

/** `fork_child_process`: a child with this process's image and tools. */
export const forkChildProcess: ToolSpec<typeof ForkArgs, "process.fork"> = {
  name: "fork_child_process",
  description:
    "Start a child process with your image and tools and a goal of its own; it holds only the authority you hand it.",
  args: ForkArgs,
  effects: ["process"],
  run: (args, ctx) =>
    ctx.process.fork(present({ goal: args.goal, budgets: args.budgets, inherit: args.inherit })),
  syscalls: {
    "process.fork": syscall(
      ForkArgs.extend(ChildSyscallArgs),
      (a, sys) =>
        sys.process.fork(present({ goal: a.goal, budgets: a.budgets, inherit: a.inherit })),
    ),
  },
};

const SpawnArgs = z.object({
  image: z.string().min(1).max(200).describe("An image id, e.g. review-agent:v0"),
  goal: z.string().min(1).max(100_000),
  tools: z.array(z.string().min(1).max(128)).max(1000).optional().describe(
    "A narrower tool table than the image's (default: the image's)",
  ),
  budgets: Budgets.optional(),
  inherit: Inherit.optional(),
}).strict();

/** `spawn_child_process`: a fresh child with its own image. */
export const spawnChildProcess: ToolSpec<typeof SpawnArgs, "process.spawn_child"> = {
  name: "spawn_child_process",
  description:
    "Start a child process from an image, with a goal; it holds only the authority you hand it.",
  args: SpawnArgs,
  effects: ["process"],
  run: (args, ctx) =>
    ctx.process.spawnChild({
      image: args.image,
      goal: args.goal,
      ...present({ tools: args.tools, budgets: args.budgets, inherit: args.inherit }),
    }),
  syscalls: {
    "process.spawn_child": syscall(
      SpawnArgs.extend(ChildSyscallArgs),
      (a, sys) =>
        sys.process.spawnChild({
          image: a.image,
          goal: a.goal,
          ...present({ tools: a.tools, budgets: a.budgets, inherit: a.inherit }),
        }),
    ),
  },
};

const WaitArgs = z.object({
  pid: Pid.optional().describe("The child to wait for (default: any child)"),
}).strict();

/** How long a syscall's `process.wait` blocks when the tool names no `timeout_ms`. */
const WAIT_DEFAULT_MS = 60_000;

/**
 * A syscall's wait holds its call open (the built-in parks its process instead): a child or any
 * (null), and how long to block, bounded by `tools/caps.ts`.
 */
const WaitSyscallArgs = z.object({
  pid: Pid.nullable().default(null),
  timeout_ms: z.number().int().min(0).max(CHILD_WAIT_MS_MAX).default(WAIT_DEFAULT_MS),
}).strict();

/**
 * `wait_child_process`: a finished child at once if there is one; otherwise the process sleeps
 * until one finishes (its quantum ends; the result comes back when it wakes).
 */
export const waitChildProcess: ToolSpec<typeof WaitArgs, "process.wait"> = {
  name: "wait_child_process",
  description:
    "Wait for a child process (or any) to finish and get its status and result. If none has finished yet, you sleep until one does.",
  args: WaitArgs,
  effects: ["process"],
  run: (args, ctx) => {
    const child = args.pid ?? null;
    const finished = ctx.process.collect(child);
    if (finished !== null) return { child: finished };
    return ctx.process.wait(child);
  },
  syscalls: {
    "process.wait": syscall(
      WaitSyscallArgs,
      (a, sys, signal) => sys.process.wait(a.pid, a.timeout_ms, signal),
    ),
  },
};

const SignalArgs = z.object({
  pid: Pid,
  signal: z.enum(["pause", "resume", "cancel", "interrupt", "terminate"]),
}).strict();

/** `signal_child_process`: pause, resume, cancel, interrupt or terminate a child. */
export const signalChildProcess: ToolSpec<typeof SignalArgs, "process.signal"> = {
  name: "signal_child_process",
  description:
    "Send one of your child processes a signal (pause, resume, cancel, interrupt, terminate).",
  args: SignalArgs,
  effects: ["process"],
  run: (args, ctx) => ({ child: ctx.process.signal(args.pid, args.signal) }),
  syscalls: {
    "process.signal": syscall(SignalArgs, (a, sys) => sys.process.signal(a.pid, a.signal)),
  },
};

const MergeArgs = z.object({ pid: Pid }).strict();

/** `merge_child_memory`: read access to a finished child's result object. */
export const mergeChildMemory: ToolSpec<typeof MergeArgs, "process.merge"> = {
  name: "merge_child_memory",
  description:
    "Take in the result object of a finished child process (it must be an object the child made).",
  args: MergeArgs,
  effects: ["process"],
  run: (args, ctx) => ({ merged: ctx.process.merge(args.pid) }),
  syscalls: { "process.merge": syscall(MergeArgs, (a, sys) => sys.memory.merge(a.pid)) },
};

const ExecArgs = z.object({
  image: z.string().min(1).max(200),
  tools: z.array(z.string().min(1).max(128)).max(1000).optional(),
  goal: z.string().min(1).max(100_000).optional(),
}).strict();

/** `exec_process`: replaces the process's image and tool table; its capabilities stay. */
export const execProcess: ToolSpec<typeof ExecArgs, "process.exec"> = {
  name: "exec_process",
  description:
    "Switch yourself to another image (and its tools); your authority does not change. Your JIT tools are dropped.",
  args: ExecArgs,
  effects: ["process"],
  run: (args, ctx) =>
    ctx.process.exec({ image: args.image, ...present({ tools: args.tools, goal: args.goal }) }),
  // Applied after the tool's result frame: a tool never replaces its process while it runs.
  syscalls: {
    "process.exec": syscall(
      ExecArgs,
      (a, sys) =>
        sys.process.exec({ image: a.image, ...present({ tools: a.tools, goal: a.goal }) }),
    ),
  },
};

const ExitArgs = z.object({
  result: z.string().min(1).max(128).optional().describe(
    "The oid of an object holding your result (your parent can merge it)",
  ),
  message: z.string().max(4096).optional().describe("A one-line summary"),
}).strict();

/** `process_exit`: ends the process with an optional result object. */
export const processExit: ToolSpec<typeof ExitArgs, "process.exit"> = {
  name: "process_exit",
  description: "Finish: end your process, naming the object that holds your result.",
  args: ExitArgs,
  effects: ["process"],
  run: (args, ctx) => ctx.process.exit(present({ result: args.result, message: args.message })),
  // Applied after the tool's result frame: a tool never ends its process while it runs.
  syscalls: {
    "process.exit": syscall(
      ExitArgs,
      (a, sys) => sys.process.exit(present({ result: a.result, message: a.message })),
    ),
  },
};

const CheckpointArgs = z.object({
  label: z.string().max(200).optional().describe("What this moment is, e.g. before refactoring"),
}).strict();

/** `checkpoint_create`: a checkpoint of the process (an operator can restore it later). */
export const checkpointCreate: ToolSpec<typeof CheckpointArgs> = {
  name: "checkpoint_create",
  description:
    "Save a checkpoint of yourself (state, memory objects, capabilities) before a risky step; your human can restore it. Effects outside memory (files written, commands run) are not undone by a restore.",
  args: CheckpointArgs,
  effects: ["process"],
  run: (args, ctx) => ({ checkpoint: ctx.process.checkpoint(args.label ?? "") }),
};
