/**
 * The parser worker of the JIT validator: swc (`@swc/wasm-web`) in its own Worker, answering one
 * parse per message. A Worker is the unit of recycling: swc's source map keeps every source it
 * has parsed and numbers positions across all of them, so memory grows and positions drift
 * until the instance is thrown away — terminating the Worker throws it away (see
 * `_swc_parser.ts`).
 *
 * The Wasm module is a source-phase import (`_swc_module.js`): it is part of the static module
 * graph, so it loads without any read permission (the CLI runs with almost none).
 *
 * @module
 */
import { initSync, parseSync } from "npm:@swc/wasm-web@1.16.18";
import swcModule from "./_swc_module.js";

/** One parse request. */
export interface ParseRequest {
  readonly id: number;
  readonly source: string;
}

/** One parse answer: the program, and the position swc gave the source's first byte. */
export type ParseReply =
  | { readonly id: number; readonly ok: true; readonly program: unknown; readonly base: number }
  | { readonly id: number; readonly ok: false; readonly message: string; readonly base: number };

/** The few members of the worker's global scope this file uses. */
interface WorkerScope {
  onmessage: ((event: MessageEvent<ParseRequest>) => void) | null;
  postMessage(message: ParseReply): void;
}

/** The UTF-8 length of a string (swc positions count bytes). */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Answers parse requests until the worker is terminated. */
function serve(scope: WorkerScope): void {
  initSync({ module: swcModule });
  // swc gives each parsed source the next range of positions, one past the previous end.
  let base = 1;
  scope.onmessage = (event) => {
    const { id, source } = event.data;
    const start = base;
    base += utf8Length(source) + 1;
    try {
      const program = parseSync(source, { syntax: "typescript", target: "es2022" });
      scope.postMessage({ id, ok: true, program, base: start });
    } catch (error) {
      scope.postMessage({ id, ok: false, message: String(error), base: start });
    }
  };
}

if (import.meta.main) serve(globalThis as unknown as WorkerScope);
