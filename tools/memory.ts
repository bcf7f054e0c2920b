/**
 * Object memory tools: create, read and append to typed objects; create and list namespaces;
 * move content between a file and an object without it ever entering a tool result (so a large
 * or sensitive file does not pass through the model's context). Every call goes through object
 * memory (and the filesystem primitive for files), decided on the calling process's capabilities.
 *
 * @module
 */
import { z } from "zod";
import { present, syscall, type SyscallOnlySpec, type ToolSpec } from "../runtime/broker/tool.ts";

const Oid = z.string().min(1).max(128).describe("An object id (obj_…)");
const Namespace = z.string().min(1).max(512).describe(
  "A namespace: process:<pid> (yours by default) or a shared one such as project",
);
const Name = z.string().min(1).max(512);
const Type = z.string().min(1).max(128).describe("What the object is, e.g. note, plan, finding");
const Tags = z.array(z.string().min(1).max(128)).max(64);

/** What the model is told about an object (its payload stays out of listings). */
function described(info: {
  oid: string;
  namespace: string;
  name: string | null;
  type: string;
  version: number;
  bytes: number;
}) {
  return {
    oid: info.oid,
    namespace: info.namespace,
    name: info.name,
    type: info.type,
    version: info.version,
    bytes: info.bytes,
  };
}

const CreateArgs = z.object({
  type: Type,
  payload: z.json().describe("Any JSON value"),
  name: Name.optional().describe("A name, unique in its namespace"),
  namespace: Namespace.optional(),
  tags: Tags.optional(),
}).strict();

/**
 * The syscall's object: the tool's own field schemas (in the order the syscall has always listed
 * them, which decides the first issue reported), and a name it may give as null (no name).
 */
const CreateSyscallArgs = z.object({
  namespace: CreateArgs.shape.namespace,
  name: Name.nullable().optional(),
  type: CreateArgs.shape.type,
  payload: CreateArgs.shape.payload,
  tags: CreateArgs.shape.tags,
}).strict();

/** `create_memory_object`: a new object (in the process's own namespace by default). */
export const createMemoryObject: ToolSpec<typeof CreateArgs, "memory.create"> = {
  name: "create_memory_object",
  description: "Store a typed JSON object in memory; returns its id.",
  args: CreateArgs,
  effects: ["memory.write"],
  run: (args, ctx) =>
    described(ctx.memory.create({
      ...present({ name: args.name, namespace: args.namespace, tags: args.tags }),
      type: args.type,
      payload: args.payload,
      provenance: { source: "model", label: "create_memory_object", ref: null },
    })),
  syscalls: {
    "memory.create": syscall(
      CreateSyscallArgs,
      (a, sys) =>
        sys.memory.create({
          type: a.type,
          payload: a.payload,
          ...present({ namespace: a.namespace, name: a.name, tags: a.tags }),
        }),
    ),
  },
};

const ReadArgs = z.object({
  oid: Oid.optional(),
  namespace: Namespace.optional().describe("With name: read by name instead of oid"),
  name: Name.optional(),
}).strict().refine(
  (a) =>
    a.oid !== undefined
      ? a.namespace === undefined && a.name === undefined
      : a.namespace !== undefined && a.name !== undefined,
  "give either oid, or namespace and name",
);

/** `read_memory_object`: an object and its payload, by id or by name. */
export const readMemoryObject: ToolSpec<
  typeof ReadArgs,
  "memory.read" | "memory.read_by_name"
> = {
  name: "read_memory_object",
  description: "Read a memory object (by oid, or by namespace and name) with its payload.",
  args: ReadArgs,
  effects: ["memory.read"],
  run: (args, ctx) => {
    const record = args.oid !== undefined
      ? ctx.memory.read(args.oid)
      : ctx.memory.readByName(args.namespace!, args.name!);
    return { ...described(record.info), payload: record.payload };
  },
  // A syscall reads by one key or the other: two syscalls, each with its half of the arguments.
  syscalls: {
    "memory.read": syscall(z.object({ oid: Oid }).strict(), (a, sys) => sys.memory.read(a.oid)),
    "memory.read_by_name": syscall(
      z.object({ namespace: Namespace, name: Name }).strict(),
      (a, sys) => sys.memory.readByName(a.namespace, a.name),
    ),
  },
};

const AppendArgs = z.object({
  oid: Oid,
  item: z.json().describe("Appended to an array payload; a string is added to a string payload"),
}).strict();

/** `append_memory_object`: adds to an array or string payload (compare-and-set on its version). */
export const appendMemoryObject: ToolSpec<typeof AppendArgs> = {
  name: "append_memory_object",
  description: "Append an item to a memory object whose payload is an array (or text to a string).",
  args: AppendArgs,
  effects: ["memory.read", "memory.write"],
  run: (args, ctx) => {
    const { info, payload } = ctx.memory.read(args.oid);
    let next;
    if (Array.isArray(payload)) next = [...payload, args.item];
    else if (typeof payload === "string" && typeof args.item === "string") {
      next = payload + args.item;
    } else {
      throw new TypeError(
        `Object ${args.oid} holds ${
          payload === null ? "null" : typeof payload
        }; append needs an array payload (or a string payload and a string item)`,
      );
    }
    // Refused if someone changed it since it was read: nothing is lost.
    return described(ctx.memory.update(args.oid, { payload: next, ifVersion: info.version }));
  },
};

const NamespaceArgs = z.object({ namespace: Namespace }).strict();

/** `create_memory_namespace`: a shared namespace (the creator may use it; others need grants). */
export const createMemoryNamespace: ToolSpec<typeof NamespaceArgs, "memory.create_namespace"> = {
  name: "create_memory_namespace",
  description: "Create a memory namespace (a folder of objects) others can be granted.",
  args: NamespaceArgs,
  effects: ["memory.write"],
  run: (args, ctx) => {
    ctx.memory.createNamespace(args.namespace);
    return { namespace: args.namespace, created: true };
  },
  syscalls: {
    "memory.create_namespace": syscall(NamespaceArgs, (a, sys) => {
      sys.memory.createNamespace(a.namespace);
      return { namespace: a.namespace, created: true };
    }),
  },
};

const ListArgs = z.object({ namespace: Namespace.optional() }).strict();

/** `list_memory_namespace`: the objects of a namespace the process may read (no payloads). */
export const listMemoryNamespace: ToolSpec<typeof ListArgs, "memory.list"> = {
  name: "list_memory_namespace",
  description: "List the objects of a memory namespace (yours by default), without payloads.",
  args: ListArgs,
  effects: ["memory.read"],
  run: (args, ctx) => ({ objects: ctx.memory.list(args.namespace).map(described) }),
  syscalls: { "memory.list": syscall(ListArgs, (a, sys) => sys.memory.list(a.namespace)) },
};

const UpdateArgs = z.object({ oid: Oid, payload: z.json() }).strict();

/** Memory syscalls no model-facing tool mirrors. */
export const memorySyscalls: SyscallOnlySpec<"memory.update"> = {
  syscalls: {
    "memory.update": syscall(
      UpdateArgs,
      (a, sys) => sys.memory.update(a.oid, { payload: a.payload }),
    ),
  },
  noTool: {
    "memory.update": "the model appends (append_memory_object); a tool may replace its payload",
  },
};

const FromFileArgs = z.object({
  path: z.string().min(1).max(4096),
  type: Type.optional().describe("Default file"),
  name: Name.optional(),
  namespace: Namespace.optional(),
}).strict();

/** `create_object_from_file`: a file's text into an object; the content never enters the result. */
export const createObjectFromFile: ToolSpec<typeof FromFileArgs> = {
  name: "create_object_from_file",
  description:
    "Copy a workspace text file into a memory object (the content is not shown to you; read the object when you need it).",
  args: FromFileArgs,
  effects: ["fs.read", "memory.write"],
  run: async (args, ctx) => {
    const read = await ctx.fs.readText(args.path, { maxBytes: 8 * 1024 * 1024 }) as {
      path: string;
      content: string;
      truncated: boolean;
      binary: { type: string } | null;
    };
    if (read.binary) {
      throw new TypeError(
        `Cannot copy "${read.path}" into an object: it is a binary file (${read.binary.type}), not text`,
      );
    }
    const info = ctx.memory.create({
      ...present({ name: args.name, namespace: args.namespace }),
      type: args.type ?? "file",
      payload: { path: read.path, content: read.content },
      provenance: { source: "file", label: read.path.slice(0, 200), ref: read.path },
    });
    return { ...described(info), path: read.path, truncated: read.truncated };
  },
};

const ToFileArgs = z.object({
  oid: Oid,
  path: z.string().min(1).max(4096),
  overwrite: z.boolean().optional(),
}).strict();

/** `write_object_to_file`: an object's text (a string payload, or its `content`) into a file. */
export const writeObjectToFile: ToolSpec<typeof ToFileArgs> = {
  name: "write_object_to_file",
  description:
    "Write a memory object's text (a string payload, or the content field of its payload) to a workspace file; the content is not shown to you.",
  args: ToFileArgs,
  effects: ["memory.read", "fs.write"],
  run: async (args, ctx) => {
    const { payload } = ctx.memory.read(args.oid);
    const field = payload !== null && typeof payload === "object"
      ? (payload as { content?: unknown }).content
      : undefined;
    const content = typeof payload === "string"
      ? payload
      : typeof field === "string" && !Array.isArray(payload)
      ? field
      : undefined;
    if (content === undefined) {
      throw new TypeError(
        `Object ${args.oid} holds no text: its payload must be a string or have a string content field`,
      );
    }
    const written = await ctx.fs.writeText(
      args.path,
      content,
      present({ overwrite: args.overwrite }),
    ) as { path: string; bytes: number; created: boolean };
    return { oid: args.oid, path: written.path, bytes: written.bytes, created: written.created };
  },
};
