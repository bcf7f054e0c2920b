import assert from "node:assert/strict";
import { randomIds, seededIds } from "./ids.ts";

Deno.test("seededIds() gives the same sequence for the same seed and a different one for another seed", () => {
  const a = seededIds(42);
  const b = seededIds(42);
  const c = seededIds(43);
  const seqA = [a.next("pid"), a.next("obj"), a.next("pid")];
  assert.deepEqual([b.next("pid"), b.next("obj"), b.next("pid")], seqA);
  assert.notDeepEqual([c.next("pid"), c.next("obj"), c.next("pid")], seqA);
  for (const id of seqA) assert.match(id, /^(pid|obj)_[0-9a-f]{12}$/);
});

Deno.test("randomIds() gives prefixed ids that do not repeat", () => {
  const ids = randomIds();
  const seen = new Set(Array.from({ length: 1000 }, () => ids.next("ses")));
  assert.equal(seen.size, 1000);
  for (const id of seen) assert.match(id, /^ses_[0-9a-f]{12}$/);
});

Deno.test("IdSource.next() refuses a prefix that could smuggle separators into an id", () => {
  for (const source of [randomIds(), seededIds(1)]) {
    for (const bad of ["", "PID", "p/id", "a".repeat(17), "1abc", "pid:x"]) {
      assert.throws(() => source.next(bad), TypeError, bad);
    }
  }
  assert.throws(() => seededIds(-1), RangeError);
  assert.throws(() => seededIds(1.5), RangeError);
});
