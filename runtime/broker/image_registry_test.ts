import assert from "node:assert/strict";
import { join } from "node:path";
import { FakeClock } from "../base/clock.ts";
import { CapabilityDeniedError, NotFoundError, ValidationError } from "../base/errors.ts";
import { seededIds } from "../base/ids.ts";
import { IMAGE_OPERATOR } from "./image_registry.ts";
import type { Runtime, RuntimeOptions } from "../runtime.ts";
import { testRuntime, type TestRuntimeOptions } from "../../testing.ts";
import { DOCS_READER } from "../../tests/sample_fixture.ts";

/** A new clock and id source for each runtime opened on the fixture's database. */
const fresh = () => ({
  clock: new FakeClock(Date.UTC(2026, 10, 29, 12)),
  ids: seededIds(Math.floor(Math.random() * 1e6)),
});

async function fixture(options: TestRuntimeOptions = {}) {
  const t = await testRuntime({
    prefix: "libos-images-",
    workspaceDir: "ws",
    fromRoot: (root) => ({ db: join(root, "images.db") }),
    ...fresh(),
    ...options,
  });
  return {
    ...t,
    open: (more: Omit<RuntimeOptions, "workspace" | "db"> = {}) =>
      t.reopen({ ...fresh(), ...options, ...more }),
  };
}

function fsRights(runtime: Runtime, pid: string): string[] {
  return runtime.authority.capabilities.list(pid)
    .filter((c) => c.resource.type === "fs")
    .map((c) => `${c.resource.type === "fs" ? c.resource.path : ""}:${c.rights.join(",")}`)
    .sort();
}

Deno.test("ImageRegistry lists the built-in images and serves them to processes that may read them", async () => {
  await using f = await fixture();
  const images = f.runtime.images;
  assert.deepEqual(images.list(IMAGE_OPERATOR).map((i) => [i.id, i.origin]), [
    ["base-agent:v0", "builtin"],
    ["coding-agent:v0", "builtin"],
    ["review-agent:v0", "builtin"],
    ["toolmaker-agent:v0", "builtin"],
  ]);
  const pid = f.runtime.processes.spawn({ goal: "g", image: "coding-agent:v0" }).pid;
  assert.equal(images.get(pid, "base-agent:v0").id, "base-agent:v0");
  assert.throws(() => images.get(pid, "nope:v1"), NotFoundError);
  for (const cap of f.runtime.authority.capabilities.list(pid)) {
    if (cap.resource.type === "image") f.runtime.authority.capabilities.revoke(cap.id);
  }
  assert.throws(() => images.get(pid, "base-agent:v0"), CapabilityDeniedError);
  assert.deepEqual(images.list(pid), []);
});

Deno.test("ImageRegistry.loadYaml() validates, persists across a restart, and refuses to overwrite without replace", async () => {
  await using f = await fixture();
  const image = f.runtime.images.loadYaml(IMAGE_OPERATOR, DOCS_READER, { source: "docs.yaml" });
  assert.equal(image.systemPrompt, "You read documentation.\nYou never write.\n");
  assert.equal(image.safety.maxMode, "read-only");
  assert.throws(
    () => f.runtime.images.loadYaml(IMAGE_OPERATOR, DOCS_READER),
    (e: unknown) => e instanceof ValidationError && /exists; pass replace/.test(e.message),
  );
  f.runtime.images.loadYaml(
    IMAGE_OPERATOR,
    DOCS_READER.replace("Reads the docs folder", "Reads docs"),
    { replace: true },
  );
  await f.runtime.close();
  await using again = await f.open();
  assert.equal(
    again.images.get(IMAGE_OPERATOR, "docs-reader:v1").description,
    "Reads docs and answers questions.",
  );
  assert.deepEqual(
    again.audit.query({ action: "image.load", limit: 10 }).map((r) => r.decision),
    ["allow", "allow"],
  );
});

Deno.test("ImageRegistry refuses hostile or invalid image YAML with a clear error and stores nothing", async () => {
  await using f = await fixture();
  const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i < 9; i++) {
    bomb.push(
      `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${
        Array(9).fill(`*${String.fromCharCode(96 + i)}`).join(",")
      }]`,
    );
  }
  const cases: [string, string, RegExp][] = [
    ["alias bomb", bomb.join("\n"), /alias/i],
    ["duplicate key", DOCS_READER + "name: other\n", /duplicate|twice/i],
    [
      "custom tag",
      DOCS_READER.replace("description: Reads", "description: !!js/function Reads"),
      /tag/i,
    ],
    [
      "__proto__ key",
      DOCS_READER + "__proto__: { polluted: true }\n",
      /valid agent image|unrecognized|key/i,
    ],
    [
      "deep nesting",
      `metadata: ${"[".repeat(200)}${"]".repeat(200)}\n` + DOCS_READER,
      /deep|depth|nest/i,
    ],
    [
      "oversized",
      DOCS_READER + `metadata: { pad: "${"x".repeat(300 * 1024)}" }\n`,
      /bytes|size|large/i,
    ],
    ["not an image", "just: a map\n", /valid agent image/i],
    [
      "bad id",
      DOCS_READER.replace("id: docs-reader:v1", "id: ../etc/passwd"),
      /valid agent image/i,
    ],
    [
      "unknown right",
      DOCS_READER.replace("rights: [read, stat]", "rights: [read, everything]"),
      /valid agent image/i,
    ],
    ["id mismatch", DOCS_READER.replace("version: v1", "version: v2"), /name:version/i],
  ];
  for (const [name, yaml, message] of cases) {
    assert.throws(
      () => f.runtime.images.loadYaml(IMAGE_OPERATOR, yaml, { source: `${name}.yaml` }),
      (e: unknown) => e instanceof ValidationError && message.test(e.message),
      name,
    );
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.deepEqual(f.runtime.images.list(IMAGE_OPERATOR).map((i) => i.id), [
    "base-agent:v0",
    "coding-agent:v0",
    "review-agent:v0",
    "toolmaker-agent:v0",
  ]);
});

Deno.test("A built-in image cannot be replaced without admin — not by the operator unasked, not by a process with write (attack: replace coding-agent)", async () => {
  await using f = await fixture();
  const hijack = DOCS_READER
    .replace("id: docs-reader:v1", "id: coding-agent:v0")
    .replace("name: docs-reader", "name: coding-agent")
    .replace("version: v1", "version: v0");
  assert.throws(
    () => f.runtime.images.loadYaml(IMAGE_OPERATOR, hijack, { replace: true }),
    (e: unknown) => e instanceof CapabilityDeniedError && /needs admin/.test(e.message),
  );
  const pid = f.runtime.processes.spawn({ goal: "g", image: "base-agent:v0" }).pid;
  f.runtime.authority.capabilities.grant({
    subject: pid,
    resource: { type: "image", key: "*", scope: "any" },
    rights: ["write"],
    effect: "allow",
    issuer: "operator",
  });
  assert.throws(
    () => f.runtime.images.loadYaml(pid, hijack, { replace: true }),
    (e: unknown) =>
      e instanceof CapabilityDeniedError && /admin on image:coding-agent:v0/.test(e.message),
  );
  assert.equal(
    f.runtime.images.get(IMAGE_OPERATOR, "coding-agent:v0").safety.maxMode,
    "full-access",
  );
  assert.ok(
    f.runtime.audit.query({ pid, action: "image.load", limit: 5 }).some((r) =>
      r.decision === "deny" && r.detail?.right === "admin"
    ),
    "the refusal is audited",
  );
  // The process may load an image of its own under its write right.
  f.runtime.images.loadYaml(pid, DOCS_READER);
  // An operator who says admin may replace it.
  f.runtime.images.loadYaml(IMAGE_OPERATOR, hijack, { replace: true, admin: true });
  assert.deepEqual(
    f.runtime.images.list(IMAGE_OPERATOR).find((i) => i.id === "coding-agent:v0")?.origin,
    "replaced",
  );
});

Deno.test("An image's required capabilities reach top-level spawns only, intersected with the mode and capped by its maxMode; children and exec get none", async () => {
  await using f = await fixture({ mode: "full-access" });
  f.runtime.images.loadYaml(IMAGE_OPERATOR, DOCS_READER);
  const top = f.runtime.processes.spawn({ goal: "read docs", image: "docs-reader:v1" });
  assert.deepEqual(top.tools, ["read_text_file", "read_directory", "ask_human"]);
  // Full-access would give the whole workspace read/write/delete; the image asks for docs
  // read/stat, and its maxMode (read-only) caps it anyway.
  assert.deepEqual(fsRights(f.runtime, top.pid), ["docs:read,stat"]);
  const decide = (pid: string, path: string, right: "read" | "write") =>
    f.runtime.authority.decide(pid, { resource: { type: "fs", path }, right }).effect;
  assert.equal(decide(top.pid, "docs/guide.md", "read"), "allow");
  assert.equal(decide(top.pid, "src/app.ts", "read"), "deny");
  assert.equal(decide(top.pid, "docs/guide.md", "write"), "deny");
  // A coding agent in the same run: the mode's full set, as its image asks for all of it.
  const coder = f.runtime.processes.spawn({ goal: "code", image: "coding-agent:v0" });
  assert.deepEqual(fsRights(f.runtime, coder.pid), [".:read,stat,write,delete"]);
  // A child with that image gets none of it.
  const child = f.runtime.processes.spawnChild(coder.pid, {
    goal: "docs",
    image: "docs-reader:v1",
  }, { kind: "process", pid: coder.pid });
  assert.deepEqual(fsRights(f.runtime, child.pid), []);
  // exec into it lifts nothing either.
  const before = fsRights(f.runtime, coder.pid);
  f.runtime.processes.exec(coder.pid, { image: "docs-reader:v1" }, {
    kind: "process",
    pid: coder.pid,
  });
  assert.deepEqual(fsRights(f.runtime, coder.pid), before);
  assert.throws(
    () => f.runtime.processes.spawn({ goal: "g", image: "ghost:v1" }),
    NotFoundError,
  );
  assert.throws(() => f.runtime.processes.exec(coder.pid, { image: "ghost:v1" }), NotFoundError);
  assert.equal(f.runtime.processes.get(coder.pid).image, "docs-reader:v1");
});
