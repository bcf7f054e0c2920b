import assert from "node:assert/strict";
import { createRuntime } from "../runtime/runtime.ts";
import { IMAGE_OPERATOR } from "../runtime/broker/image_registry.ts";
import { builtinImages, builtinImageSources } from "./builtin.ts";
import { buildBuiltinImages } from "./build.ts";

Deno.test("builtinImages() loads each images/*.yaml, and every default tool of each resolves to a built-in tool", async () => {
  await using runtime = await createRuntime({ db: ":memory:" });
  const ids = builtinImages().map((i) => i.id);
  assert.deepEqual(ids.sort(), [
    "base-agent:v0",
    "coding-agent:v0",
    "review-agent:v0",
    "toolmaker-agent:v0",
  ]);
  assert.equal(Object.keys(builtinImageSources()).length, ids.length);
  const builtins = new Set(runtime.tools.builtins().map((t) => t.name));
  for (const id of ids) {
    const image = runtime.images.get(IMAGE_OPERATOR, id);
    assert.ok(image.systemPrompt.length > 200, `${id} has a real system prompt`);
    const missing = image.defaultTools.filter((t) => !builtins.has(t));
    assert.deepEqual(missing, [], `${id}: default tools that do not exist`);
    // A process of the image sees exactly those tools.
    const pid = runtime.processes.spawn({ goal: "g", image: id }).pid;
    assert.deepEqual(
      runtime.tools.schemas(pid).map((s) => s.name).sort(),
      [...image.defaultTools].sort(),
    );
  }
});

Deno.test("builtinImages() gives the reviewer no write tool and a read-only ceiling; the coding prompt covers the five steps and approvals", () => {
  const byId = new Map(builtinImages().map((i) => [i.id, i]));
  const review = byId.get("review-agent:v0")!;
  assert.equal(review.safety?.maxMode, "read-only");
  for (const tool of ["write_text_file", "edit_file", "delete_file", "write_directory"]) {
    assert.ok(!review.defaultTools?.includes(tool), `review-agent must not have ${tool}`);
  }
  const prompt = byId.get("coding-agent:v0")!.systemPrompt ?? "";
  for (const step of ["Orient", "Reproduce", "Edit", "Verify", "Report", "Approvals"]) {
    assert.match(prompt, new RegExp(step), step);
  }
});

Deno.test("images/builtin_images.json is what images/*.yaml make (run deno task images after editing one)", () => {
  const json = Deno.readTextFileSync(new URL("./builtin_images.json", import.meta.url));
  assert.equal(json, buildBuiltinImages(), "stale: run deno task images");
});
