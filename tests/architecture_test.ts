/**
 * Architecture rules that no single module can check about itself: no ambient authority in the
 * task definitions, no work at import time, no module-level mutable state, and the layout rules
 * of STYLE.md.
 */
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const CODE_FOLDERS = ["runtime", "jit", "tools", "images"];

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

Deno.test("importing mod.ts does no work at import time: it loads with no permissions and prints nothing", async () => {
  const probeDir = Deno.makeTempDirSync({ prefix: "libos-import-" });
  try {
    const probe = join(probeDir, "probe.ts");
    Deno.writeTextFileSync(
      probe,
      `import * as libos from ${
        JSON.stringify(new URL("../mod.ts", import.meta.url).href)
      };\nconsole.log(typeof libos.createRuntime);\n`,
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

Deno.test("no module keeps module-level mutable state (top-level let/var or mutable containers)", () => {
  const offenders: string[] = [];
  const mutable =
    /^(export\s+)?(let|var)\s|^(export\s+)?const\s+\w+(\s*:[^=]+)?=\s*(new\s+(Map|Set|WeakMap|WeakSet|Array)\b|\[\s*\]|\{\s*\})/;
  for (const folder of [...CODE_FOLDERS, "mod.ts"]) {
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
