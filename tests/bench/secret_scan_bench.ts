/**
 * Secret content scan benchmark (issue 20): `SecretScanner.scan()` over 1 MiB of text — what a
 * read of that size pays before its content is returned (a default read is 256 KiB; grep reads
 * up to 1 MiB per file). Rows: this repository's TypeScript (ordinary text), random printable
 * ASCII, and an anchor-dense attack (`-----BEGIN ` with a 300-character non-key after each
 * header). Target: p95 ≤ 25 ms per MiB on every input. Competitor: the same table as one
 * JavaScript regular expression per rule (V8's backtracking irregexp), derived from the rows.
 * Arrival pattern: back-to-back scans of the same text, one caller.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type CharClass,
  CONTENT_RULES,
  type ContentRule,
  SecretScanner,
} from "../../runtime/base/secret_scan.ts";
import { type BenchCase, type BenchResult, measure } from "./_bench.ts";

const MIB = 1024 * 1024;
const SCANS = 60;

/** 1 MiB of this repository's own TypeScript. */
function repositoryText(): string {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "runtime");
  let text = "";
  for (const entry of Deno.readDirSync(root)) {
    if (entry.isFile && entry.name.endsWith(".ts")) {
      text += Deno.readTextFileSync(join(root, entry.name));
    }
  }
  return text.repeat(Math.ceil(MIB / text.length)).slice(0, MIB);
}

const INPUTS: Readonly<Record<string, () => string>> = {
  "repository TypeScript": repositoryText,
  "random printable ASCII": () =>
    Array.from({ length: MIB }, (_, i) => String.fromCharCode(33 + ((i * 2654435761) >>> 0) % 94))
      .join(""),
  "attack: header + 300 non-key chars": () =>
    `-----BEGIN RSA PRIVATE KEY-----${"!".repeat(300)}`.repeat(Math.floor(MIB / 331)),
};

const CLASS_SOURCE: Readonly<Record<CharClass, string>> = {
  alnum: "A-Za-z0-9",
  alpha: "A-Za-z",
  upper_digit: "A-Z0-9",
  digit: "0-9",
  hex: "0-9a-fA-F",
  word: "A-Za-z0-9_",
  word_dash: "A-Za-z0-9_\\-",
  base64: "A-Za-z0-9+/=",
  space: " \\t",
  assign: " \\t=:\"'",
  pem_label: "A-Z0-9 ",
  url_token: "A-Za-z0-9/_+",
};

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");

/** One rule as a regular expression, the way scanners write them (bounded quantifiers). */
function asRegExp(rule: ContentRule): RegExp {
  const tail = rule.tail.map((p) =>
    "literal" in p
      ? escape(p.literal)
      : "seek" in p
      ? `[\\s\\S]{0,${p.within}}?[${CLASS_SOURCE[p.seek]}]{${p.min}}`
      : `[${CLASS_SOURCE[p.run]}]{${p.min},${p.max}}`
  ).join("");
  const start = (rule.boundary ?? true) ? "(?<![A-Za-z0-9_])" : "";
  return new RegExp(`${start}(?:${rule.anchors.map(escape).join("|")})${tail}`);
}

function row(input: string, name: string, scanner: () => (text: string) => unknown): BenchCase {
  return {
    group: `secret scan: ${input}`,
    name,
    target: { maxP95Ms: 25 },
    async run(): Promise<BenchResult> {
      const text = INPUTS[input]!();
      const scan = scanner();
      return await measure(SCANS, () => scan(text), "1 MiB per scan, back to back");
    },
  };
}

/** The rows: per input, the scanner then the regular-expression competitor. */
export const CASES: readonly BenchCase[] = Object.keys(INPUTS).flatMap((input) => [
  row(input, "SecretScanner (one pass, bounded tails)", () => {
    const scanner = new SecretScanner();
    return (text) => scanner.scan(text);
  }),
  row(input, "competitor: one RegExp per rule", () => {
    const regexps = CONTENT_RULES.map(asRegExp);
    return (text) => regexps.find((r) => r.test(text));
  }),
]);
