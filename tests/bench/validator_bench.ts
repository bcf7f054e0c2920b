/**
 * JIT validator corpora benchmark (issue 21 §3): how often the validator refuses a tool written
 * the way models write them (each refusal costs an agent a turn) and how many hostile sources it
 * still refuses, with the time per validation over each corpus. The corpora are those of
 * `tests/jit_benign_corpus_test.ts` (`tests/fixtures/jit_benign/*.ts`) and
 * `tests/jit_validator_table_test.ts` (`tests/fixtures/jit/hostile.jsonl`). Arrival pattern:
 * back-to-back validations, one caller, the corpus cycled five times after a first pass that
 * counts (and warms the parser worker).
 *
 * @module
 */
import { JitValidator } from "../../jit/mod.ts";
import { benignCorpus, hostileCorpus } from "../jit_corpus_fixture.ts";
import { type BenchCase, measure } from "./_bench.ts";

/** Passes over a corpus that are timed. */
const ROUNDS = 5;

/** The JIT validator corpus rows. */
export const CASES: readonly BenchCase[] = [
  {
    group: "jit validator: corpora",
    name: "benign corpus (model-written tools): false positives",
    target: { maxP95Ms: 25 },
    async run() {
      const corpus = benignCorpus();
      await using validator = new JitValidator();
      const refused: string[] = [];
      for (const tool of corpus) {
        if ((await validator.validate(tool.source)).ok) continue;
        refused.push(tool.knownFalsePositive === undefined ? tool.name : `${tool.name} (known)`);
      }
      const unexpected = refused.filter((name) => !name.endsWith(" (known)")).length;
      let i = 0;
      return await measure(
        corpus.length * ROUNDS,
        () => validator.validate(corpus[i++ % corpus.length]!.source),
        `false positives ${refused.length}/${corpus.length} (${unexpected} unexpected)${
          refused.length > 0 ? `: ${refused.join(", ")}` : ""
        }; accepted ${corpus.length - refused.length}/${corpus.length}`,
      );
    },
  },
  {
    group: "jit validator: corpora",
    name: "hostile corpus (attack sources): refused",
    async run() {
      const rows = hostileCorpus();
      await using validator = new JitValidator();
      const missed: string[] = [];
      for (const row of rows) {
        if ((await validator.validate(row.source)).ok) missed.push(row.name);
      }
      let i = 0;
      return await measure(
        rows.length * ROUNDS,
        () => validator.validate(rows[i++ % rows.length]!.source),
        `refused ${rows.length - missed.length}/${rows.length}${
          missed.length > 0 ? `; accepted: ${missed.join(", ")}` : ""
        } (one over the size cap is refused unparsed)`,
      );
    },
  },
  {
    group: "jit validator: corpora",
    name: "256 KiB of emoji sequences (every ZWJ and VS16 looked at, all allowed)",
    async run() {
      // 👩‍💻 and ⚠️ in a comment: the invisible-character scan's worst case, no finding.
      const line = "// \u{1F469}\u200D\u{1F4BB} \u26A0\uFE0F\n";
      const body = line.repeat(Math.floor((256 * 1024 - 200) / line.length));
      const source = `${body}export function run(args, libos) { return args; }\n`;
      await using validator = new JitValidator();
      const report = await validator.validate(source);
      if (!report.ok) throw new Error(`refused: ${JSON.stringify(report.violations[0])}`);
      return await measure(20, () => validator.validate(source), `${source.length} UTF-16 units`);
    },
  },
];
