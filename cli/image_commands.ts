/**
 * Image and tool commands: `images list`, `images show ID`, `images load FILE`, `tools --pid`.
 * Loading reads the file here (the bootstrap grants read on the workspace and the temporary
 * directory) and hands the text to the registry's strict YAML loader; replacing a built-in image
 * needs `--replace --admin`.
 *
 * @module
 */
import { IllegalTransitionError, UsageError } from "../runtime/base/errors.ts";
import { isFinal } from "../runtime/process/process.ts";
import {
  type CliIo,
  type Command,
  flagOption,
  listOption,
  type ParsedArgs,
  stringOption,
} from "./_options.ts";
import { field, say } from "./_output.ts";
import { openRuntime } from "./_workspace.ts";
import { IMAGE_OPERATOR } from "../runtime/broker/image_registry.ts";
import { resolve } from "node:path";

/** Largest image file read (the strict loader has its own cap too). */
const MAX_FILE = 256 * 1024;

async function list(parsed: ParsedArgs, io: CliIo): Promise<number> {
  await using runtime = await openRuntime(parsed, io, "read");
  const images = runtime.images.list(IMAGE_OPERATOR);
  return say(
    io,
    parsed,
    runtime.location.path,
    { images },
    images.map((i) => `${i.id.padEnd(24)}  ${i.origin.padEnd(8)}  ${field(i.description, 80)}`)
      .join("\n"),
  );
}

async function show(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [id] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "read");
  const image = runtime.images.get(IMAGE_OPERATOR, id!);
  return say(
    io,
    parsed,
    runtime.location.path,
    { image },
    [
      `${image.id}  ${field(image.description, 200)}`,
      `max mode: ${image.safety.maxMode}`,
      `default tools: ${image.defaultTools.join(", ") || "-"}`,
      "required capabilities (granted to top-level spawns only, as far as the mode allows):",
      ...image.requiredCapabilities.map((c) =>
        `  ${field(JSON.stringify(c.resource), 200)} ${c.rights.join(",")}`
      ),
      "system prompt:",
      ...field(image.systemPrompt, 4000).split("\\n").map((l) => `  │ ${l}`),
    ].join("\n"),
  );
}

/**
 * Reads an image file named on the command line.
 * @throws {UsageError} when it cannot be read or is too large.
 */
function readImageFile(io: CliIo, file: string): string {
  const path = resolve(io.cwd, file);
  try {
    const info = Deno.statSync(path);
    if (!info.isFile) throw new UsageError(`${file} is not a file`);
    if (info.size > MAX_FILE) {
      throw new UsageError(
        `${file} is ${info.size} bytes; an image file may be at most ${MAX_FILE}`,
      );
    }
    return Deno.readTextFileSync(path);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(
      `Cannot read ${JSON.stringify(file)}: ${error instanceof Error ? error.message : error}`,
    );
  }
}

async function load(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [file] = parsed.args;
  const text = readImageFile(io, file!);
  await using runtime = await openRuntime(parsed, io, "create");
  const image = runtime.images.loadYaml(IMAGE_OPERATOR, text, {
    replace: flagOption(parsed, "replace"),
    admin: flagOption(parsed, "admin"),
    source: file!,
  });
  return say(
    io,
    parsed,
    runtime.location.path,
    { image },
    `Loaded image ${image.id} (${image.defaultTools.length} default tools).`,
  );
}

async function exec(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid] = parsed.args;
  const id = stringOption(parsed, "image");
  const file = stringOption(parsed, "file");
  if ((id === undefined) === (file === undefined)) {
    throw new UsageError(`"libos exec" needs --image ID or --file IMAGE.yaml (one of them)`);
  }
  const text = file === undefined ? undefined : readImageFile(io, file);
  const goal = stringOption(parsed, "goal");
  const tools = listOption(parsed, "tool");
  await using runtime = await openRuntime(parsed, io, "write");
  // The process first: a failed exec must not leave a replaced image behind.
  const target = runtime.processes.get(pid!);
  if (isFinal(target.status)) {
    throw new IllegalTransitionError(
      "illegal_transition",
      `${pid} is ${target.status}; a finished process cannot exec`,
    );
  }
  // A file goes through the registry like any load: strict YAML, validation, replace/admin.
  const image = text === undefined ? id! : runtime.images.loadYaml(IMAGE_OPERATOR, text, {
    replace: flagOption(parsed, "replace"),
    admin: flagOption(parsed, "admin"),
    source: file!,
  }).id;
  const before = runtime.processes.get(pid!).image;
  const p = runtime.processes.exec(pid!, {
    image,
    ...(tools.length ? { tools } : {}),
    ...(goal === undefined ? {} : { goal }),
  });
  return say(
    io,
    parsed,
    runtime.location.path,
    { process: p },
    `${pid}: ${before} -> ${p.image}; tools: ${
      p.tools.join(", ") || "-"
    } (its capabilities are unchanged)`,
  );
}

async function tools(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const pid = stringOption(parsed, "pid");
  await using runtime = await openRuntime(parsed, io, "read");
  if (pid === undefined) {
    const all = runtime.tools.builtins();
    return say(
      io,
      parsed,
      runtime.location.path,
      { tools: all.map((t) => ({ name: t.name, description: t.description, effects: t.effects })) },
      all.map((t) => `${t.name.padEnd(20)}  ${t.effects.join(",").padEnd(16)}  ${t.description}`)
        .join("\n"),
    );
  }
  const visible = runtime.tools.schemas(pid);
  return say(
    io,
    parsed,
    runtime.location.path,
    { pid, tools: visible },
    visible.length
      ? visible.map((t) => `${t.name.padEnd(20)}  ${field(t.description, 100)}`).join("\n")
      : `${pid} sees no tools.`,
  );
}

/** The `images list` command. */
export const imagesListCommand: Command = {
  name: "images list",
  summary: "list agent images (built-in and loaded)",
  usage: `Usage: libos images list [--json]`,
  options: [],
  run: list,
};

/** The `images show` command. */
export const imagesShowCommand: Command = {
  name: "images show",
  summary: "show an agent image",
  usage: `Usage: libos images show ID [--json]`,
  options: [],
  positionals: ["ID"],
  run: show,
};

/** The `images load` command. */
export const imagesLoadCommand: Command = {
  name: "images load",
  summary: "load an agent image from a YAML file",
  usage: `Usage: libos images load FILE [--replace [--admin]] [--json]

The file is parsed strictly: one document, unique keys, no aliases, merge keys or custom tags,
bounded size and depth; then validated as an image (id name:version, system prompt, default
tools, context policy, safety profile, required capabilities). An existing id needs --replace; a
built-in image also needs --admin.`,
  options: ["replace", "admin"],
  positionals: ["FILE"],
  run: load,
};

/** The `exec` command. */
export const execCommand: Command = {
  name: "exec",
  summary: "replace a process's image and tool table (never its capabilities)",
  usage:
    `Usage: libos exec PID (--image ID | --file IMAGE.yaml [--replace [--admin]]) [--goal TEXT] [--tool NAME]... [--json]

Keeps the pid, its capabilities and its memory; swaps the image, the tool table (default: the
image's) and optionally the goal. A file is loaded through the registry first, exactly like
"libos images load": strict YAML, validation, --replace for an existing id, --admin for a
built-in. The new image's required capabilities are never granted.`,
  options: ["image", "file", "goal", "tool", "replace", "admin"],
  positionals: ["PID"],
  run: exec,
};

/** The `tools` command. */
export const toolsCommand: Command = {
  name: "tools",
  summary: "list built-in tools, or the tools a process sees (--pid)",
  usage: `Usage: libos tools [--pid PID] [--json]

Without --pid: every built-in tool with the effects it may exercise. With --pid: the process's
tool table — the only tools its model is shown. Seeing a tool grants nothing: each call is still
decided on the process's capabilities.`,
  options: ["pid"],
  run: tools,
};
