/**
 * Search benchmark (issue 27): `FilesystemPrimitive.grep` over a generated tree of 5,000 files
 * (50 directories × 100 files of ~10 KB of code-like text, 50 MB), each file listed, read,
 * decided, audited, secret-scanned and matched — a literal search, a regular expression with
 * alternation and classes (re2js, linear time), and the same regular expression in count mode;
 * `glob` over the same tree (each match dated through `stat`). Competitor: GNU `grep -rE` over
 * the same tree (no decisions, no audit, native code). Then the linear-time evidence: the
 * catastrophic pattern `(a+)+b` on one line of n and of 2n characters — a backtracking engine
 * never returns on either; here the 2n row takes about twice the n row (ratio ≈ 0.5x in the
 * "vs first" column) — beside a literal search of the same line.
 *
 * Arrival pattern: back-to-back searches of the same tree, one caller. No target: the rows say
 * what a guarded, linear-time search costs.
 *
 * @module
 */
import { join } from "node:path";
import { createRuntime, type Runtime } from "../../runtime/runtime.ts";
import { type BenchCase, benchDir, type BenchResult, measure } from "./_bench.ts";

const DIRS = 50;
const FILES_PER_DIR = 100;
const FILE_CHARS = 10_000;
const FILES = DIRS * FILES_PER_DIR;

const WORDS = [
  "const",
  "function",
  "return",
  "value",
  "import",
  "export",
  "await",
  "string",
  "number",
  "if",
  "else",
  "for",
  "result",
  "config",
  "handler",
];

/** Writes the tree; returns its size in bytes. */
function generate(ws: string): number {
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  let bytes = 0;
  let lines = 0;
  for (let d = 0; d < DIRS; d++) {
    const dir = join(ws, `pkg${String(d).padStart(2, "0")}`);
    Deno.mkdirSync(dir, { recursive: true });
    for (let f = 0; f < FILES_PER_DIR; f++) {
      let text = "";
      while (text.length < FILE_CHARS) {
        let line = "  ";
        const n = 3 + Math.floor(next() * 10);
        for (let i = 0; i < n; i++) {
          line += WORDS[Math.floor(next() * WORDS.length)] + (next() < 0.2 ? "(x); " : " ");
        }
        // Rare lines for the searches to find: one in about 5,000 of each kind.
        lines++;
        if (lines % 4_999 === 0) line += "// TODO(owner): loadConfigFast";
        else if (lines % 5_003 === 0) line += "function saveState_v2(x)";
        text += `${line}\n`;
      }
      Deno.writeTextFileSync(join(dir, `m${f}.ts`), text);
      bytes += text.length;
    }
  }
  return bytes;
}

async function treeRuntime(dir: string): Promise<{ runtime: Runtime; pid: string; ws: string }> {
  const ws = join(dir, "ws");
  Deno.mkdirSync(ws);
  const runtime = await createRuntime({
    workspace: ws,
    db: join(dir, "b.db"),
    env: { get: (n) => (n === "XDG_STATE_HOME" ? join(dir, "state") : undefined) },
    mode: "workspace-write",
  });
  const pid = runtime.processes.spawn({ goal: "bench", image: "base-agent:v0" }).pid;
  return { runtime, pid, ws };
}

/** files/s and MB/s of a run that searched `files` files of `bytes` bytes per op. */
function rates(result: BenchResult, files: number, bytes: number, what: string): BenchResult {
  const seconds = result.seconds / result.ops;
  return {
    ...result,
    note: `${what}; ${Math.round(files / seconds)} files/s, ${
      (bytes / 1e6 / seconds).toFixed(1)
    } MB/s`,
  };
}

const GROUP = `grep: ${FILES.toLocaleString("en-US")} files / 50 MB`;
const RUNS = 5;

function grepCase(
  name: string,
  args: Parameters<Runtime["primitives"]["fs"]["grep"]>[1],
  expect: (value: unknown) => boolean,
): BenchCase {
  return {
    group: GROUP,
    name,
    async run() {
      using dir = benchDir();
      const { runtime, pid, ws } = await treeRuntime(dir.path);
      try {
        const bytes = generate(ws);
        const result = await measure(
          RUNS,
          async () => {
            const found = await runtime.primitives.fs.grep(pid, { ...args, maxMatches: 2_000 });
            if (found.files !== FILES || found.truncated || !expect(found)) {
              throw new Error(`unexpected: ${JSON.stringify(found).slice(0, 300)}`);
            }
          },
          "",
          1,
        );
        return rates(result, FILES, bytes, "every file listed, read, decided, audited");
      } finally {
        await runtime.close();
      }
    },
  };
}

const some = (key: string) => (value: unknown) => {
  const list = (value as Record<string, unknown>)[key];
  return Array.isArray(list) && list.length > 0;
};

function gnuGrep(): BenchCase {
  return {
    group: GROUP,
    name: "GNU grep -rEn, same regex (competitor: native, no checks)",
    async run() {
      using dir = benchDir();
      const ws = join(dir.path, "ws");
      Deno.mkdirSync(ws);
      const bytes = generate(ws);
      const result = await measure(
        RUNS,
        async () => {
          const out = await new Deno.Command("grep", {
            args: ["-rEn", "loadConfig\\w+|function\\s+save[A-Z]\\w*_v[0-9]", ws],
            stdout: "piped",
            stderr: "null",
          }).output();
          if (!out.success) throw new Error("grep found nothing");
        },
        "",
        1,
      );
      return rates(result, FILES, bytes, "GNU grep 3, native code");
    },
  };
}

function globCase(): BenchCase {
  return {
    group: `glob: ${FILES.toLocaleString("en-US")} files`,
    name: "glob **/*.ts, every match dated and sorted newest first (limit 100)",
    async run() {
      using dir = benchDir();
      const { runtime, pid, ws } = await treeRuntime(dir.path);
      try {
        generate(ws);
        const result = await measure(
          RUNS,
          async () => {
            const found = await runtime.primitives.fs.glob(pid, { glob: "**/*.ts", limit: 100 });
            if (found.matches.length !== 100) throw new Error("expected 100 matches");
          },
          "",
          1,
        );
        return {
          ...result,
          note: `${Math.round(FILES / (result.seconds / result.ops))} files/s (list + stat each)`,
        };
      } finally {
        await runtime.close();
      }
    },
  };
}

/** One line of `chars` × "a" in a file, grepped for `pattern` through the primitive. */
function lineCase(name: string, chars: number, args: { pattern?: string; text?: string }) {
  return {
    group: "grep: catastrophic (a+)+b on one line, n vs 2n",
    name,
    async run(): Promise<BenchResult> {
      using dir = benchDir();
      const { runtime, pid, ws } = await treeRuntime(dir.path);
      try {
        Deno.writeTextFileSync(join(ws, "line.txt"), "a".repeat(chars));
        const result = await measure(
          20,
          async () => {
            const found = await runtime.primitives.fs.grep(pid, { ...args, path: "line.txt" });
            if (!("matches" in found) || found.matches.length !== 0) throw new Error("a match");
          },
          "",
          2,
        );
        return rates(result, 1, chars, "no match, as expected");
      } finally {
        await runtime.close();
      }
    },
  };
}

const N = 512 * 1024;

/** The rows. */
export const CASES: readonly BenchCase[] = [
  grepCase('literal text (text: "loadConfigFast")', { text: "loadConfigFast" }, some("matches")),
  grepCase(
    "regex, alternation + classes (re2js)",
    { pattern: "loadConfig\\w+|function\\s+save[A-Z]\\w*_v\\d" },
    some("matches"),
  ),
  grepCase(
    "regex, count mode",
    { pattern: "loadConfig\\w+|function\\s+save[A-Z]\\w*_v\\d", mode: "count" },
    some("counts"),
  ),
  grepCase(
    "regex, -i, no match anywhere",
    { pattern: "never[_-]?there\\d+", ignoreCase: true },
    () => true,
  ),
  gnuGrep(),
  globCase(),
  lineCase(`(a+)+b, n = ${N / 1024} KiB`, N, { pattern: "(a+)+b" }),
  lineCase(`(a+)+b, 2n = ${(2 * N) / 1024} KiB`, 2 * N, { pattern: "(a+)+b" }),
  lineCase(`literal "b", 2n = ${(2 * N) / 1024} KiB`, 2 * N, { text: "b" }),
];
