/**
 * `libos jit check`: the JIT validator over tool source files, as a person or a CI job runs it
 * before handing a tool to an agent (DESIGN §7).
 *
 * @module
 */
import { resolve } from "node:path";
import { UsageError } from "../errors.ts";
import { type JitReport, JitValidator } from "../../jit/mod.ts";
import { type CliIo, type Command, flagOption, listOption, type ParsedArgs } from "./_options.ts";
import { EXIT_FAILED, EXIT_OK, field, printJson } from "./_output.ts";

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
SharedArrayBuffer, Atomics, Reflect, fetch, ...), escaped identifiers, with, compiler pragmas;
a tool must export function run(args, libos). With --json, prints one JSON array of
{file, ok, violations: [{rule, message, line, column}]} (1-based, UTF-16 columns); an
unreadable file is ok: false with rule io_error. Exit: 0 all accepted, 1 any rejected, 2 usage.`,
  options: ["allow-import"],
  variadic: true,
  run: check,
};
