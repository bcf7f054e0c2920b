/**
 * Tools that extend the agent: propose, validate and register a JIT tool (agent-written
 * TypeScript that runs in the permission-less sandbox, reaching the world only through checked
 * syscalls), and load an agent image from YAML.
 *
 * @module
 */
import { z } from "zod";
import { present, syscall, type SyscallOnlySpec, type ToolSpec } from "../runtime/broker/tool.ts";

const ProposeArgs = z.object({
  name: z.string().min(1).max(64).describe("snake_case; never a built-in's name"),
  description: z.string().min(1).max(2000),
  input_schema: z.record(z.string(), z.json()).describe("JSON Schema of the arguments"),
  output_schema: z.record(z.string(), z.json()).describe("JSON Schema of the result"),
  source: z.string().min(1).max(64 * 1024).describe(
    "TypeScript exporting `run(args, libos)`; reach the world only with `await libos.call(syscall, args)`",
  ),
  tests: z.array(z.json()).min(1).max(50).describe(
    "Each {name, args, syscalls: [{name, args, result}], expect}: the syscalls the tool must make, in order, and what they answer",
  ),
}).strict();

/** `propose_jit_tool`: stores a candidate tool (nothing runs yet). */
export const proposeJitTool: ToolSpec<typeof ProposeArgs> = {
  name: "propose_jit_tool",
  description:
    "Propose a new tool you wrote (TypeScript, with tests). Then validate_jit_tool, then register_jit_tool.",
  args: ProposeArgs,
  effects: ["jit"],
  run: (args, ctx) => ({ oid: ctx.jit.propose(args) }),
};

const OidArgs = z.object({ oid: z.string().min(1).max(128) }).strict();

/** `validate_jit_tool`: the validator, then each test in the sandbox against its scripted syscalls. */
export const validateJitTool: ToolSpec<typeof OidArgs> = {
  name: "validate_jit_tool",
  description:
    "Validate a proposed tool: static checks, then its tests in the sandbox. Fix and propose again if it fails.",
  args: OidArgs,
  effects: ["jit"],
  run: (args, ctx) => ctx.jit.validate(args.oid),
};

/** `register_jit_tool`: adds a validated tool to this process's own table. */
export const registerJitTool: ToolSpec<typeof OidArgs> = {
  name: "register_jit_tool",
  description:
    "Register a validated tool for yourself (it needs the register right, or your human's approval of its exact source).",
  args: OidArgs,
  effects: ["jit"],
  run: async (args, ctx) => ({ registered: await ctx.jit.register(args.oid) }),
};

const ImageArgs = z.object({
  yaml: z.string().min(1).max(256 * 1024).describe("An agent image in YAML"),
  replace: z.boolean().optional().describe("Replace an image of the same id you loaded before"),
}).strict();

/** `load_image_from_yaml`: loads an image (strict YAML; needs image write). */
export const loadImageFromYaml: ToolSpec<typeof ImageArgs> = {
  name: "load_image_from_yaml",
  description: "Load an agent image from YAML so you (or a child) can exec or spawn it.",
  args: ImageArgs,
  effects: ["image"],
  run: (args, ctx) => ctx.images.loadYaml(args.yaml, present({ replace: args.replace })),
};

/** Image syscalls no model-facing tool mirrors. */
export const imageSyscalls: SyscallOnlySpec<"image.list"> = {
  syscalls: { "image.list": syscall(z.object({}).strict(), (_a, sys) => sys.images.list()) },
  noTool: {
    "image.list": "the model is told its image; a tool may list the ids it may read",
  },
};
