/**
 * The JIT validator: the static check of an agent-written TypeScript tool before it may run
 * (DESIGN §7). It is one layer of two — the sandbox (a permission-less Deno with code generation
 * from strings disabled) holds on its own — so it refuses whatever it cannot show harmless.
 *
 * **Why swc.** Deno itself parses TypeScript with swc; validating with the same parser means the
 * validator sees exactly the program Deno will run (no construct that one parser reads one way
 * and the runtime another). It is `@swc/wasm-web` 1.16.18 (pinned): 0.3 ms per 2 KB parse, and
 * the Wasm module is a source-phase import, so it loads with no permission at all. Its costs:
 * swc's source map keeps every source it parsed and numbers positions across all of them (memory
 * grows, positions drift), so it runs in a Worker that is recycled (`_swc_parser.ts`), and
 * positions are computed per parse from the base the worker counts; a Wasm trap (deep nesting)
 * recycles it too. The TypeScript compiler API was the alternative: exact UTF-16 positions and no
 * drift, but a second parser with its own opinion of the syntax, 9 MB of JavaScript to load, and
 * an error-tolerant parse that needs its diagnostics consulted to notice a rejection.
 *
 * The rules (`_rules.ts`, ids in {@link JIT_RULES}): imports only of specifiers exactly on the
 * allowlist (the vetted module's import-map keys, plus `allowImports`), no import attributes or
 * phases, no dynamic `import()`, `import.meta`, `eval`, `Function`, `.constructor` or
 * `__proto__` (by name, by literal, or destructured), no global object (`globalThis`, `self`,
 * `window`, …), no host API (`Deno`, `WebAssembly`, `Worker`, `SharedArrayBuffer`, `Atomics`,
 * `Reflect`, `fetch`, …), no property name built at run time from strings or calls, no lookup
 * by a name that routes out (`o["eval"]`, `o[k]` where `k` folds to `"constructor"`), and a
 * name only where it can reach a lookup: `"constructor"` or `"__proto__"` kept as a value in a
 * program that also looks properties up by run-time keys (a global's name as a value, like
 * `name === "Deno"`, reaches nothing), no identifier spelled with escapes, no `with`, no
 * compiler pragma (`@jsxImportSource`, `@deno-types`, `/// <reference`), and an exported `run`
 * function (every form models write, `export const run = async (args, libos) => …` and default
 * exports included: `_run_export.ts`, read the same way by the harness). A parse failure is a
 * rejection. Read in the raw text rather than the AST: no bidirectional control or invisible
 * character anywhere, comments and strings included (`_invisible.ts`, Trojan Source); every
 * message shows such characters escaped (`\u{202E}`), never raw.
 *
 * @module
 */
import { SwcParser, type SwcParserOptions } from "./_swc_parser.ts";
import type { JitViolation } from "./_rules.ts";
import { escapeInvisible, findInvisible } from "./_invisible.ts";

export { JIT_RULES, type JitRule, type JitViolation } from "./_rules.ts";

/**
 * The import-map keys of the vetted module the repository ships for tools (the sandbox issue
 * vendors it and maps these keys to it); a tool may import exactly these strings, plus what an
 * operator adds.
 */
export const VETTED_IMPORTS: readonly string[] = Object.freeze([
  "jsr:@libos/std@0.1.0",
  "jsr:@libos/std",
]);

/** The largest tool source the validator reads, in UTF-16 code units. */
export const JIT_SOURCE_MAX = 256 * 1024;

/** The most violations one report lists. */
const VIOLATIONS_MAX = 200;

/** A validation's answer. */
export interface JitReport {
  readonly ok: boolean;
  /** In source order; empty when `ok`. */
  readonly violations: readonly JitViolation[];
}

/** Options of {@link JitValidator}. */
export interface JitValidatorOptions {
  /** Import specifiers allowed besides {@link VETTED_IMPORTS} (exact strings). */
  readonly allowImports?: readonly string[];
  readonly parser?: SwcParserOptions;
}

/** Validates tool sources. Dispose it to stop the parser worker. */
export class JitValidator implements AsyncDisposable {
  readonly #parser: SwcParser;
  readonly #allowImports: ReadonlySet<string>;

  constructor(options: JitValidatorOptions = {}) {
    this.#parser = new SwcParser(options.parser);
    this.#allowImports = new Set([...VETTED_IMPORTS, ...(options.allowImports ?? [])]);
  }

  /** The import specifiers a tool may use. */
  get allowedImports(): readonly string[] {
    return [...this.#allowImports];
  }

  /**
   * Starts the parser now (it otherwise starts with the first validation), so that its start
   * overlaps the caller's other work. Validates nothing.
   */
  warm(): void {
    this.#parser.warm();
  }

  /**
   * The source as JavaScript (types stripped by the same swc that validates), or undefined when
   * it cannot be transpiled; what a registered tool runs, so that each call spares Deno's own
   * transpile. It checks nothing: validate first.
   */
  transpile(source: string): Promise<string | undefined> {
    return this.#parser.transpile(source);
  }

  /**
   * Checks one source.
   * @throws {TypeError} when `source` is not a string.
   */
  async validate(source: string): Promise<JitReport> {
    if (typeof source !== "string") {
      throw new TypeError(`A tool source is a string, got ${typeof source}`);
    }
    if (source.length > JIT_SOURCE_MAX) {
      return rejected({
        rule: "too_large",
        message: `the source is ${source.length} characters; tools are at most ${JIT_SOURCE_MAX}`,
        line: 1,
        column: 1,
      });
    }
    // Read in the raw text, not the AST: comments and the inside of strings count too.
    const hidden = findInvisible(source, VIOLATIONS_MAX);
    const checked = await this.#parser.check(source, [...this.#allowImports]);
    const violations = dedupe(
      checked.ok
        ? [...checked.violations, ...hidden]
        : [parseViolation(checked.message), ...hidden],
    );
    return { ok: violations.length === 0, violations };
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.#parser[Symbol.asyncDispose]();
  }
}

function rejected(violation: JitViolation): JitReport {
  return { ok: false, violations: [violation] };
}

/**
 * Sorted by position, one per rule and place, at most {@link VIOLATIONS_MAX}; each message with
 * its unprintable characters escaped (a message quotes the source, and reaches a terminal or a
 * model as it is).
 */
function dedupe(violations: readonly JitViolation[]): JitViolation[] {
  const seen = new Set<string>();
  const out: JitViolation[] = [];
  const sorted = [...violations].sort((a, b) =>
    a.line - b.line || a.column - b.column || a.rule.localeCompare(b.rule)
  );
  for (const v of sorted) {
    const key = `${v.rule}:${v.line}:${v.column}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ ...v, message: escapeInvisible(v.message) });
    if (out.length >= VIOLATIONS_MAX) break;
  }
  return out;
}

/**
 * A parse failure as a violation: swc's message names the line (`,-[L:C]`) and points a caret
 * under the column in its excerpt.
 */
function parseViolation(message: string): JitViolation {
  const lines = message.split("\n");
  const headline = lines.find((l) => l.trim().startsWith("x "))?.trim().slice(2) ??
    lines[0]?.trim() ?? "unparseable";
  let line = 1;
  let column = 1;
  const header = lines.find((l) => l.includes(",-["));
  if (header) {
    const inner = header.slice(header.indexOf(",-[") + 3, header.indexOf("]"));
    const [l] = inner.split(":");
    const parsed = Number(l);
    if (Number.isInteger(parsed) && parsed > 0) line = parsed;
  }
  const caretLine = lines.find((l) => l.includes("^") && l.trimStart().startsWith(":"));
  if (caretLine) {
    const bar = caretLine.indexOf(":");
    const caret = caretLine.indexOf("^");
    if (caret > bar + 1) column = caret - (bar + 2) + 1;
  }
  return {
    rule: "parse_error",
    message: `the source does not parse: ${headline.slice(0, 300)}`,
    line,
    column,
  };
}
