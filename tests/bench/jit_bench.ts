/**
 * JIT validator benchmark (issue 10): validations per second of a typical 2 KB tool, through
 * the public `JitValidator` (a parse in the swc worker, the rules over the AST, positions).
 * Competitor: the prototype's kind of check — regular expressions over the text — which is
 * faster and blind (it passed `import x from"…"`, comments between tokens, `[].constructor`).
 * Arrival pattern: back-to-back validations, one caller; the first (worker start-up and Wasm
 * instantiation) is reported separately.
 *
 * @module
 */
import { JitValidator } from "../../jit/mod.ts";
import { type BenchCase, measure } from "./_bench.ts";

/** A typical tool: types, a class, async code, string handling; about 2 KB. */
const TOOL = `import type { Std } from "jsr:@libos/std@0.1.0";

interface Args {
  readonly path: string;
  readonly pattern: string;
  readonly limit?: number;
}

interface Match {
  readonly line: number;
  readonly text: string;
}

class Matcher {
  readonly #needle: string;
  #count = 0;

  constructor(needle: string) {
    this.#needle = needle.toLowerCase();
  }

  get count(): number {
    return this.#count;
  }

  test(text: string): boolean {
    const hit = text.toLowerCase().includes(this.#needle);
    if (hit) this.#count++;
    return hit;
  }
}

function clamp(value: number | undefined, low: number, high: number): number {
  if (value === undefined || Number.isNaN(value)) return high;
  return Math.min(high, Math.max(low, Math.trunc(value)));
}

function summarise(matches: readonly Match[]): string {
  const lines = matches.map((m) => \`\${String(m.line).padStart(5)}: \${m.text.slice(0, 120)}\`);
  return lines.join("\\n");
}

export async function run(args: Args, libos: { call(name: string, args: unknown): Promise<unknown> }) {
  const limit = clamp(args.limit, 1, 500);
  const file = await libos.call("fs.read_text", { path: args.path }) as { text: string };
  const matcher = new Matcher(args.pattern);
  const matches: Match[] = [];
  for (const [i, text] of file.text.split("\\n").entries()) {
    if (matcher.test(text)) matches.push({ line: i + 1, text });
    if (matches.length >= limit) break;
  }
  const byLength = new Map<number, number>();
  for (const m of matches) byLength.set(m.text.length, (byLength.get(m.text.length) ?? 0) + 1);
  const longest = [...byLength.keys()].sort((a, b) => b - a)[0] ?? 0;
  return {
    path: args.path,
    count: matcher.count,
    longest,
    report: summarise(matches),
    truncated: matches.length >= limit,
  };
}
`;

/** The JIT validator rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "jit validator: 2 KB tool",
    name: "JitValidator.validate() (swc worker + AST rules)",
    async run() {
      await using validator = new JitValidator();
      const first = performance.now();
      const report = await validator.validate(TOOL);
      const startup = performance.now() - first;
      if (!report.ok) throw new Error(`the bench tool is refused: ${JSON.stringify(report)}`);
      return await measure(
        3000,
        () => validator.validate(TOOL),
        `${TOOL.length} chars; first call (worker + Wasm start-up) ${startup.toFixed(0)} ms`,
      );
    },
  },
  {
    group: "jit validator: 2 KB tool",
    name: "regular expressions over the text (competitor, the prototype's kind)",
    run() {
      const patterns = [
        /\bimport\s+[^;]*\s+from\s+["'](?!jsr:@libos\/std)/,
        /\bimport\s*\(/,
        /\beval\s*\(/,
        /\bnew\s+Function\s*\(/,
        /\bDeno\./,
        /\bglobalThis\b/,
      ];
      return measure(
        30000,
        () => patterns.some((p) => p.test(TOOL)),
        'fast and blind: misses import x from"…", comments between tokens, [].constructor',
      );
    },
  },
];
