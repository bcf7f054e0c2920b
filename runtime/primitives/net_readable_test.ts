import assert from "node:assert/strict";
import { HTML_CONVERT_CHARS_MAX, readableBody } from "./net_readable.ts";

Deno.test("readableBody() converts HTML to Markdown, keeps text, describes binary content", () => {
  const html = readableBody(
    "<html><body><h2>Title</h2><p>See <a href='https://x.test/a'>a</a>.</p><script>evil()</script></body></html>",
    "text/html; charset=utf-8",
    100,
    1000,
  );
  assert.deepEqual(html, {
    format: "markdown",
    text: "## Title\n\nSee [a](https://x.test/a).",
    cut: false,
  });
  assert.deepEqual(readableBody('{"a":1}', "application/json", 7, 1000), {
    format: "text",
    text: '{"a":1}',
    cut: false,
  });
  assert.equal(readableBody("<!DOCTYPE html><p>x</p>", undefined, 20, 1000).format, "markdown");
  const png = readableBody("\x89PNG\0\0", "image/png", 6, 1000);
  assert.deepEqual([png.format, png.text, png.note], [
    "binary",
    "",
    "Binary content (image/png, 6 bytes) is not shown as text",
  ]);
  assert.equal(readableBody("abc\0def", "text/plain", 7, 1000).format, "binary", "NUL: binary");
});

Deno.test("readableBody() keeps a known secret contiguous (no Markdown escapes) so redaction still finds it", () => {
  const out = readableBody("<p>key my_secret_value*1</p>", "text/html", 30, 1000);
  assert.equal(out.text, "key my_secret_value*1");
});

Deno.test("readableBody() attack: hostile HTML is bounded — too deep is reduced to text, too long is cut first", () => {
  const deep = readableBody(`${"<div>".repeat(500)}deep text`, "text/html", 0, 1000);
  assert.equal(deep.format, "text");
  assert.equal(deep.text, "deep text");
  assert.match(deep.note ?? "", /deeper than 200/);
  // 100,000 tags never closed: the scans stay linear (each "<" looks for one ">" once).
  const unclosed = readableBody(`<p>ok</p>${"<".repeat(100_000)}`, "text/html", 0, 1_000_000);
  assert.deepEqual([unclosed.format, unclosed.cut], ["markdown", false]);
  assert.ok(unclosed.text.startsWith("ok"), unclosed.text.slice(0, 20));
  const long = readableBody(`<p>${"w ".repeat(HTML_CONVERT_CHARS_MAX)}</p>`, "text/html", 0, 50);
  assert.equal(long.cut, true);
  assert.equal(long.text.length, 50);
  assert.match(
    long.note ?? "",
    /Only the first 524288 characters .* converted; The text was cut at 50/,
  );
});
