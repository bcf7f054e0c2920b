/**
 * The parser worker of the JIT validator: swc (`@swc/wasm-web`) in its own Worker, parsing one
 * source per message and running the rules over its AST here, so only the violations cross
 * back (copying an AST between threads cost four times the parse). A Worker is the unit of
 * recycling: swc's source map keeps every source it has parsed and numbers positions across all
 * of them, so memory grows and positions drift until the instance is thrown away — terminating
 * the Worker throws it away (see `_swc_parser.ts`).
 *
 * The Wasm module is a source-phase import (`_swc_module.js`): it is part of the static module
 * graph, so it loads without any read permission (the CLI runs with almost none).
 *
 * @module
 */
import { initSync, parseSync, transformSync } from "npm:@swc/wasm-web@1.16.18";
import swcModule from "./_swc_module.js";
import { checkProgram, type JitViolation } from "./_rules.ts";
import { SourceMap } from "./_source_map.ts";

/**
 * One request: check a source against the rules (with the import specifiers it may use), or
 * transpile it to JavaScript (types stripped, nothing else changed).
 */
export type ParseRequest =
  | {
    readonly id: number;
    readonly kind: "check";
    readonly source: string;
    readonly allowImports: readonly string[];
  }
  | { readonly id: number; readonly kind: "transpile"; readonly source: string };

/**
 * One answer: the rules' violations; a syntax error (the instance stays usable); a failure of
 * the parser itself (a Wasm trap: the instance is spent); or positions that do not match the
 * source (the worker lost count: recycle it).
 */
export type ParseReply =
  | { readonly id: number; readonly kind: "checked"; readonly violations: JitViolation[] }
  | { readonly id: number; readonly kind: "syntax" | "failed"; readonly message: string }
  | { readonly id: number; readonly kind: "drift" }
  | { readonly id: number; readonly kind: "transpiled"; readonly code: string };

/**
 * swc's options for a transpile. Written out as plain data: the package's type declarations lag
 * its engine (they know neither `esnext` nor `tsEnumIsMutable`, which this version honours).
 */
const TRANSPILE: Readonly<Record<string, unknown>> = Object.freeze({
  jsc: {
    parser: { syntax: "typescript" },
    target: "esnext",
    transform: { tsEnumIsMutable: true },
  },
  isModule: true,
  sourceMaps: false,
});

/** The few members of the worker's global scope this file uses. */
interface WorkerScope {
  onmessage: ((event: MessageEvent<ParseRequest>) => void) | null;
  postMessage(message: ParseReply): void;
}

/** Answers requests until the worker is terminated. */
function serve(scope: WorkerScope): void {
  initSync({ module: swcModule });
  // swc gives each parsed source the next range of positions, one past the previous end.
  let base = 1;
  scope.onmessage = (event) => {
    const request = event.data;
    const { id, source } = request;
    if (request.kind === "transpile") {
      // swc numbers this source's positions too: the host recycles this worker afterwards.
      try {
        // Types stripped, nothing else: enums stay mutable objects (swc would otherwise inline
        // their members, which Deno does not) and newer syntax (`using`) is left to Deno.
        const { code } = transformSync(source, TRANSPILE as Parameters<typeof transformSync>[1]);
        if (code.includes("_ts_dispose_resources")) {
          // swc rewrites `using` into helpers that differ from Deno's own (a broken
          // SuppressedError): such a source runs as TypeScript, transpiled by Deno.
          scope.postMessage({ id, kind: "syntax", message: "left to Deno: explicit resources" });
          return;
        }
        scope.postMessage({ id, kind: "transpiled", code });
      } catch (error) {
        scope.postMessage({ id, kind: "syntax", message: String(error) });
      }
      return;
    }
    const { allowImports } = request;
    const map = new SourceMap(source);
    const start = base;
    base += map.byteLength + 1;
    let program: unknown;
    try {
      program = parseSync(source, { syntax: "typescript", target: "es2022" });
    } catch (error) {
      const message = String(error);
      const kind = message.includes("Syntax Error") ? "syntax" : "failed";
      scope.postMessage({ id, kind, message });
      return;
    }
    const span = (program as { span?: { start?: unknown; end?: unknown } }).span;
    if (
      typeof span?.start !== "number" || typeof span.end !== "number" || span.start < start ||
      span.end > start + map.byteLength
    ) {
      scope.postMessage({ id, kind: "drift" });
      return;
    }
    const violations = checkProgram(program, map, start, new Set(allowImports));
    scope.postMessage({ id, kind: "checked", violations });
  };
}

if (import.meta.main) serve(globalThis as unknown as WorkerScope);
