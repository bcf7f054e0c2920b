/**
 * `libos jit check`: the JIT validator over tool source files, as a person or a CI job runs it
 * before handing a tool to an agent (DESIGN §7).
 *
 * @module
 */
import { resolve } from "node:path";
import { QuantumEnd, UsageError } from "../runtime/base/errors.ts";
import { type JitReport, JitSandbox, JitValidator, lifecycleFor } from "../jit/mod.ts";
import type { Runtime } from "../runtime/runtime.ts";
import {
  type CliIo,
  type Command,
  flagOption,
  listOption,
  type ParsedArgs,
  stringOption,
} from "./_options.ts";
import { EXIT_FAILED, EXIT_OK, field, printJson, say } from "./_output.ts";
import { openRuntime } from "./_workspace.ts";

/** The largest file read, in bytes (the validator refuses sources over its own cap anyway). */
const FILE_MAX = 4 * 1024 * 1024;

/** One file's result, as printed under `--json`. */
interface FileResult extends JitReport {
  readonly file: string;
}

function readSource(path: string): string | { readonly error: string } {
  try {
    const info = Deno.statSync(path);
    if (!info.isFile) return { error: "it is not a regular file" };
    if (info.size > FILE_MAX) return { error: `it is ${info.size} bytes, over ${FILE_MAX}` };
    return new TextDecoder("utf-8", { fatal: true }).decode(Deno.readFileSync(path));
  } catch (error) {
    if (error instanceof TypeError) return { error: "it is not UTF-8 text" };
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

async function check(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const files = parsed.args;
  if (files.length === 0) throw new UsageError("Name at least one FILE to check");
  const allowImports = listOption(parsed, "allow-import");
  for (const spec of allowImports) {
    if (spec.trim() === "" || spec.length > 512) {
      throw new UsageError(`--allow-import needs a specifier of 1 to 512 characters`);
    }
  }
  const results: FileResult[] = [];
  {
    await using validator = new JitValidator({ allowImports });
    for (const file of files) {
      const source = readSource(resolve(io.cwd, file));
      if (typeof source !== "string") {
        results.push({
          file,
          ok: false,
          violations: [{
            rule: "io_error",
            message: `cannot read ${JSON.stringify(file)}: ${source.error}`,
            line: 1,
            column: 1,
          }],
        });
        continue;
      }
      results.push({ file, ...(await validator.validate(source)) });
    }
  }
  if (flagOption(parsed, "json")) printJson(io, results);
  else {
    for (const r of results) {
      io.stdout(`${field(r.file, 300)}: ${r.ok ? "ok" : "rejected"}\n`);
      for (const v of r.violations) {
        io.stdout(`  ${v.line}:${v.column}  ${v.rule}  ${field(v.message, 400)}\n`);
      }
    }
  }
  return results.every((r) => r.ok) ? EXIT_OK : EXIT_FAILED;
}

/** The `jit check` command. */
export const jitCheckCommand: Command = {
  name: "jit check",
  summary: "validate agent-written TypeScript tools (the JIT validator)",
  usage: `Usage: libos jit check [--allow-import SPEC]... [--json] FILE...

Checks each FILE as an agent-written tool: parsed with swc (what Deno runs), then refused for
any import not exactly on the allowlist (the vetted module, plus each --allow-import SPEC),
dynamic import(), import.meta, eval, Function and every route to them (.constructor, computed
names built from strings, the global object), host APIs (Deno, WebAssembly, Worker,
SharedArrayBuffer, Atomics, Reflect, fetch, ...), escaped identifiers, with, compiler pragmas,
and bidirectional or invisible characters anywhere (Trojan Source; shown escaped, \\u{202E});
a tool must export a run(args, libos) function (export async function run, export const
run = async (args, libos) => ..., or a default export). With --json, prints one JSON array of
{file, ok, violations: [{rule, message, line, column}]} (1-based, UTF-16 columns); an
unreadable file is ok: false with rule io_error. Exit: 0 all accepted, 1 any rejected, 2 usage.`,
  options: ["allow-import"],
  variadic: true,
  run: check,
};

/** The lifecycle of one command, over a runtime it owns; dispose it to stop its workers. */
function lifecycleOf(runtime: Runtime) {
  const sandbox = new JitSandbox();
  const validator = new JitValidator();
  return {
    lifecycle: lifecycleFor(runtime, { sandbox, validator }),
    async [Symbol.asyncDispose]() {
      await validator[Symbol.asyncDispose]();
      await sandbox[Symbol.asyncDispose]();
    },
  };
}

async function propose(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid, file] = parsed.args;
  const source = readSource(resolve(io.cwd, file!));
  if (typeof source !== "string") {
    throw new UsageError(`Cannot read the candidate ${JSON.stringify(file)}: ${source.error}`);
  }
  let candidate: unknown;
  try {
    candidate = JSON.parse(source);
  } catch {
    throw new UsageError(`The candidate ${JSON.stringify(file)} is not JSON`);
  }
  await using runtime = await openRuntime(parsed, io, "write");
  await using jit = lifecycleOf(runtime);
  const oid = jit.lifecycle.propose(pid!, candidate);
  return say(io, parsed, runtime.location.path, { oid }, `Proposed ${oid} for ${field(pid)}`);
}

async function validate(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid, oid] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "write");
  await using jit = lifecycleOf(runtime);
  const outcome = await jit.lifecycle.validate(pid!, oid!);
  if (flagOption(parsed, "json")) printJson(io, { db: runtime.location.path, ...outcome });
  else {
    io.stdout(`${field(oid)}: ${outcome.ok ? "passed" : "failed"}\n`);
    for (const v of outcome.static.violations) {
      io.stdout(`  ${v.line}:${v.column}  ${v.rule}  ${field(v.message, 300)}\n`);
    }
    for (const t of outcome.tests) {
      io.stdout(
        `  ${t.ok ? "ok  " : "FAIL"}  ${field(t.name, 100)}${
          t.message ? `  ${field(t.message, 300)}` : ""
        }\n`,
      );
    }
  }
  return outcome.ok ? EXIT_OK : EXIT_FAILED;
}

async function register(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid, oid] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "write");
  await using jit = lifecycleOf(runtime);
  const name = await jit.lifecycle.register(pid!, oid!);
  return say(
    io,
    parsed,
    runtime.location.path,
    { tool: name },
    `Registered ${field(name)} for ${field(pid)}`,
  );
}

async function run(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid, name] = parsed.args;
  const text = stringOption(parsed, "args") ?? "{}";
  let args: unknown;
  try {
    args = JSON.parse(text);
  } catch {
    throw new UsageError("--args must be JSON");
  }
  await using runtime = await openRuntime(parsed, io, "write");
  await using jit = lifecycleOf(runtime);
  jit.lifecycle.restore(pid!);
  const tool = runtime.tools.visible(pid!).find((t) => t.name === name && t.origin === "jit");
  if (!tool) {
    throw new UsageError(`Process ${pid} has no registered JIT tool named ${JSON.stringify(name)}`);
  }
  const parsedArgs = tool.args.safeParse(args);
  if (!parsedArgs.success) throw new UsageError(`--args do not match the tool's input schema`);
  let value;
  try {
    value = await tool.run(
      parsedArgs.data,
      {
        pid: pid!,
        signal: new AbortController().signal,
      } as Parameters<typeof tool.run>[1],
    );
  } catch (error) {
    if (!(error instanceof QuantumEnd) || error.outcome.type !== "exit") throw error;
    // The tool ended its process; with no scheduler here, the operator's command applies it.
    const { type: _, ...exit } = error.outcome;
    runtime.processes.exit(pid!, exit, { kind: "process", pid: pid! });
    return say(
      io,
      parsed,
      runtime.location.path,
      { exited: true, ...exit },
      `The tool ended process ${field(pid)}`,
    );
  }
  return say(io, parsed, runtime.location.path, { value }, JSON.stringify(value));
}

/** `jit propose PID FILE`. */
export const jitProposeCommand: Command = {
  name: "jit propose",
  summary: "store a candidate tool (a JSON file) for a process",
  usage: `Usage: libos jit propose PID FILE [--json]

FILE is a JSON candidate: {name, description, input_schema, output_schema, source, tests: [{name,
args, syscalls: [{name, args, result | error}], expect?}]}. Stored as an object in the process's
namespace; prints its oid.`,
  options: [],
  positionals: ["PID", "FILE"],
  run: propose,
};

/** `jit validate PID OID`. */
export const jitValidateCommand: Command = {
  name: "jit validate",
  summary: "validate a candidate: the static check, then its tests in the sandbox",
  usage: `Usage: libos jit validate PID OID [--json]

Runs the validator, then each test in the sandbox against its scripted syscalls. Exit 0 when
everything passed, 1 otherwise.`,
  options: [],
  positionals: ["PID", "OID"],
  run: validate,
};

/** `jit register PID OID`. */
export const jitRegisterCommand: Command = {
  name: "jit register",
  summary: "register a validated candidate in its process's tool table",
  usage: `Usage: libos jit register PID OID [--human queue|none] [--json]

Needs a passing validation of the candidate as it stands, and either the register right
on tool:NAME for the process (libos grant PID tool:NAME --right register) or, with
--human queue, a human's approval of this exact source: without the right it files an
approval request and exits 1; after "libos human approve ID", run it again (the approval
is used once, and an edited source needs a new one).`,
  options: ["human"],
  positionals: ["PID", "OID"],
  run: register,
};

/** `jit run PID NAME [--args JSON]`. */
export const jitRunCommand: Command = {
  name: "jit run",
  summary: "run a process's registered JIT tool once, under its capabilities",
  usage: `Usage: libos jit run PID NAME [--args JSON] [--human queue|none] [--json]

Runs the tool in the sandbox with the process's capabilities; prints its result. With
--human queue, a syscall that needs a human (an approval, a question) waits for
"libos human approve|answer ID" from another terminal; with none (the default) it is refused.`,
  options: ["args", "human"],
  positionals: ["PID", "NAME"],
  run,
};
