/**
 * The JIT validator against tools written the way models write them (issue 21 §3): arrow
 * functions, helpers, classes, enums, generics, regexes and strings that name forbidden globals,
 * every export form. Each refusal costs an agent a turn, so the false-positive count is held at
 * the known ones (each with its reason in its file); each accepted tool also runs in the real
 * sandbox against a fake workspace, so the corpus is working code and the harness calls what the
 * validator accepted.
 */
import assert from "node:assert/strict";
import { JitSandbox, JitValidator } from "../jit/mod.ts";
import { benignCorpus, fakeWorkspace, hostileCorpus } from "./jit_corpus_fixture.ts";

Deno.test("JitValidator.validate() accepts every benign model-written tool but the listed known false positives (false positives beyond them: 0)", async () => {
  const corpus = benignCorpus();
  assert.ok(corpus.length >= 40, `${corpus.length} benign tools`);
  await using validator = new JitValidator();
  const unexpected: string[] = [];
  const stale: string[] = [];
  for (const tool of corpus) {
    const report = await validator.validate(tool.source);
    if (!report.ok && tool.knownFalsePositive === undefined) {
      unexpected.push(`${tool.name}: ${JSON.stringify(report.violations)}`);
    }
    if (report.ok && tool.knownFalsePositive !== undefined) stale.push(tool.name);
  }
  assert.deepEqual(unexpected, [], "false positives");
  assert.deepEqual(stale, [], "listed as known false positives, but accepted: unlist them");
  const known = corpus.filter((t) => t.knownFalsePositive !== undefined).length;
  assert.ok(known <= 1, `${known} known false positives of ${corpus.length}`);
});

Deno.test("every accepted benign tool runs in the real sandbox, as the JavaScript a registered tool runs, against a fake workspace", async () => {
  await using validator = new JitValidator();
  await using sandbox = new JitSandbox();
  const failures: string[] = [];
  const tools = benignCorpus().filter((t) => t.knownFalsePositive === undefined);
  const compiled = new Map<string, string | undefined>();
  for (const tool of tools) compiled.set(tool.name, await validator.transpile(tool.source));
  // A call per CPU at a time (up to four): each sandbox call is its own process.
  const width = Math.max(1, Math.min(4, navigator.hardwareConcurrency));
  const lanes = Array.from({ length: width }, async (_, lane) => {
    for (let i = lane; i < tools.length; i += width) {
      const tool = tools[i]!;
      const js = compiled.get(tool.name);
      try {
        const result = await sandbox.call(
          js ?? tool.source,
          tool.args,
          fakeWorkspace,
          undefined,
          js === undefined ? {} : { language: "javascript" },
        );
        if (result.value === null) failures.push(`${tool.name}: returned nothing`);
      } catch (error) {
        failures.push(`${tool.name}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  });
  await Promise.all(lanes);
  assert.deepEqual(failures, []);
});

Deno.test("JitValidator.validate() still refuses every hostile source after the narrowing (the corpus the bench counts)", async () => {
  const rows = hostileCorpus();
  await using validator = new JitValidator();
  const accepted: string[] = [];
  for (const row of rows) {
    if ((await validator.validate(row.source)).ok) accepted.push(row.name);
  }
  assert.deepEqual(accepted, [], `${accepted.length} of ${rows.length} hostile sources accepted`);
});
