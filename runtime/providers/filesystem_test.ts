import assert from "node:assert/strict";
import { join } from "node:path";
import { hostFilesystem } from "./filesystem.ts";

Deno.test("hostFilesystem() FileHandle.read() returns the whole file up to its bound, across its growing buffer", () => {
  const dir = Deno.makeTempDirSync({ prefix: "libos-provider-" });
  try {
    const fs = hostFilesystem();
    const bytes = Uint8Array.from({ length: 300_000 }, (_, i) => i % 251);
    const cases: [string, Uint8Array, number, number][] = [
      ["empty", new Uint8Array(), 1024 * 1024, 0],
      ["shorter than the first buffer", bytes.subarray(0, 1000), 1024 * 1024, 1000],
      ["exactly the first buffer", bytes.subarray(0, 65_536), 1024 * 1024, 65_536],
      ["longer than the first buffer", bytes, 1024 * 1024, 300_000],
      ["cut at the bound inside a grown buffer", bytes, 100_001, 100_001],
      ["cut at a small bound", bytes, 10, 10],
    ];
    for (const [name, content, max, expected] of cases) {
      const path = join(dir, "f");
      Deno.writeFileSync(path, content);
      using handle = fs.open(path);
      const read = handle.read(max);
      assert.equal(read.length, expected, name);
      assert.deepEqual(read, content.subarray(0, expected), name);
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
