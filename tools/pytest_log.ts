/**
 * `parse_pytest_log`: reads the text of a pytest run (its short summary and final line) into
 * counts and the failing tests, so a model can act on a long log without re-reading it. Pure: it
 * touches nothing.
 *
 * @module
 */
import { z } from "zod";
import type { ToolSpec } from "../runtime/broker/tool.ts";

const Args = z.object({
  log: z.string().max(4 * 1024 * 1024).describe(
    "The output of a pytest run (as read_text_file shows it, line numbers included, is fine too)",
  ),
}).strict();

const COUNT_WORDS = ["passed", "failed", "errors", "skipped", "xfailed", "xpassed", "warnings"];

/** What a pytest log says. */
export interface PytestSummary {
  /** Whether the final `=== … in Ns ===` line was found (false: the run was cut short). */
  readonly complete: boolean;
  readonly counts: Record<string, number>;
  readonly duration_s: number | null;
  /** `FAILED` and `ERROR` lines of the short test summary, at most 200. */
  readonly failures: {
    readonly kind: "failed" | "error";
    readonly test: string;
    readonly message: string;
  }[];
}

const ESC = String.fromCharCode(27);

/** A line without its ANSI colour codes (`ESC [ … m`), which pytest adds on a terminal. */
function withoutColour(line: string): string {
  const [first, ...rest] = line.split(ESC);
  return (first ?? "") + rest.map((part) => part.replace(/^\[[0-9;]*m/, "")).join("");
}

/** The line-number prefix of read_text_file's numbered view. */
const NUMBERED = /^ *\d+\t/;

/** Parses a pytest log (exported for tests). */
export function parsePytest(log: string): PytestSummary {
  const counts = new Map<string, number>(COUNT_WORDS.map((w) => [w, 0]));
  let complete = false;
  let duration: number | null = null;
  const failures: PytestSummary["failures"][number][] = [];
  // A log pasted from read_text_file carries its numbers (`    12\t…` on every line): drop them.
  const lines = log.split("\n");
  const numbered = lines.some((l) => l !== "") &&
    lines.every((l) => l === "" || NUMBERED.test(l));
  for (const raw of numbered ? lines.map((l) => l.replace(NUMBERED, "")) : lines) {
    const line = withoutColour(raw).trimEnd();
    // A test id may hold spaces inside its parameter brackets: test_x[a b].
    const result = /^(FAILED|ERROR) ([^\s[]+(?:\[[^\]]*\])?)(?: - (.*))?$/.exec(line);
    if (result && failures.length < 200) {
      failures.push({
        kind: result[1] === "FAILED" ? "failed" : "error",
        test: result[2]!.slice(0, 500),
        message: (result[3] ?? "").slice(0, 500),
      });
      continue;
    }
    // The final line: "==== 2 failed, 10 passed, 1 warning in 0.52s ====" ("no tests ran"), or
    // with -q the same without the = borders.
    const final =
      /^(?:=+ )?((?:\d+ \w+(?:, )?)+|no tests ran) in ([0-9.]+)s(?: \([^)]*\))?(?: =+)?$/.exec(
        line,
      );
    if (final) {
      complete = true;
      duration = Number(final[2]);
      for (const word of COUNT_WORDS) counts.set(word, 0);
      for (const part of final[1]!.split(",")) {
        const m = /(\d+) (\w+)/.exec(part.trim());
        if (!m) continue;
        const word = m[2] === "error" ? "errors" : m[2] === "warning" ? "warnings" : m[2]!;
        if (counts.has(word)) counts.set(word, Number(m[1]));
      }
    }
  }
  return { complete, counts: Object.fromEntries(counts), duration_s: duration, failures };
}

/** `parse_pytest_log`: counts and failing tests of a pytest run. */
export const parsePytestLog: ToolSpec<typeof Args> = {
  name: "parse_pytest_log",
  description:
    "Summarise a pytest run's output: counts (passed, failed, errors, skipped, …), duration, and each failing test with its message.",
  args: Args,
  effects: [],
  run: (args) => {
    const s = parsePytest(args.log);
    return {
      complete: s.complete,
      counts: s.counts,
      duration_s: s.duration_s,
      failures: s.failures.map((f) => ({ ...f })),
    };
  },
};
