import assert from "node:assert/strict";
import { REDACTED, redactor } from "./redaction.ts";

Deno.test("redactor() replaces every secret in strings and keys, longest first, and ignores short ones", () => {
  const r = redactor(["sk-live-123456", "sk-live-123456-extended", "abc"]);
  assert.equal(r.text("key=sk-live-123456-extended;"), `key=${REDACTED};`);
  assert.deepEqual(
    r.json({ "sk-live-123456": ["x sk-live-123456 y", 1, null, { abc: "abc" }] }),
    { [REDACTED]: [`x ${REDACTED} y`, 1, null, { abc: "abc" }] },
  );
  const none = redactor([]);
  const value = { a: "sk-live-123456" };
  assert.equal(none.json(value), value, "nothing to hide: the same value");
});
