/**
 * The README and the pages of `docs/` never show a command or example that fails: their
 * TypeScript examples run, and every `deno task libos …` line parses and runs against a scratch
 * workspace.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));
/** The README and every page of `docs/`: what a user reads. */
const PAGES = [
  Deno.readTextFileSync(join(REPO, "README.md")),
  ...[...Deno.readDirSync(join(REPO, "docs"))]
    .filter((e) => e.isFile && e.name.endsWith(".md"))
    .map((e) => Deno.readTextFileSync(join(REPO, "docs", e.name))),
];

function blocks(language: string): string[] {
  const pattern = new RegExp("```" + language + "\\n([\\s\\S]*?)```", "g");
  return PAGES.flatMap((page) => [...page.matchAll(pattern)].map((m) => m[1]!));
}

function cleanEnv(extra: Record<string, string>): Record<string, string> {
  return {
    ...Object.fromEntries(Object.entries(Deno.env.toObject()).filter(([k]) => k !== "INIT_CWD")),
    DENO_NO_UPDATE_CHECK: "1",
    NO_COLOR: "1",
    ...extra,
  };
}

Deno.test("README and docs: TypeScript examples run as written", async () => {
  const examples = blocks("ts");
  assert.ok(examples.length >= 1);
  const dir = Deno.makeTempDirSync({ prefix: "libos-readme-" });
  try {
    for (const [i, code] of examples.entries()) {
      const file = join(dir, `example_${i}.ts`);
      Deno.writeTextFileSync(
        file,
        code
          .replaceAll('"./mod.ts"', JSON.stringify(new URL("../mod.ts", import.meta.url).href))
          .replaceAll(
            '"./testing.ts"',
            JSON.stringify(new URL("../testing.ts", import.meta.url).href),
          ),
      );
      const output = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--quiet",
          "--no-prompt",
          `--config=${join(REPO, "deno.json")}`,
          // Reading the system directories and running programs: the shell example.
          "--allow-read",
          `--allow-write=${dir}`,
          "--allow-run",
          "--allow-env",
          file,
        ],
        cwd: dir,
        clearEnv: true,
        env: cleanEnv({ XDG_STATE_HOME: join(dir, "state"), TMPDIR: dir }),
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(output.code, 0, `example ${i}: ${new TextDecoder().decode(output.stderr)}`);
      const stdout = new TextDecoder().decode(output.stdout);
      assert.match(stdout, /true\n$/, `example ${i} printed: ${stdout}`);
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("README and docs: libos commands all parse and run in a scratch workspace (no usage errors)", async () => {
  const commands = blocks("sh").flatMap((b) => b.split("\n")).map((l) =>
    l.replace(/\s+#.*$/, "").trim()
  )
    .filter((l) => l.startsWith("deno task libos "));
  assert.ok(commands.length >= 5, commands.join("\n"));
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-readme-cli-" }));
  try {
    const workspace = join(root, "ws");
    Deno.mkdirSync(workspace);
    Deno.mkdirSync(join(root, "tmp"));
    for (const line of commands) {
      const args = [...line.slice("deno task libos ".length).matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)]
        .map((m) => m[1] ?? m[2] ?? m[3]!)
        // Files of the repository are named from its root, where the README is read.
        .map((a) => {
          const file = /^(replay:)?((?:jit\/)?examples\/.*)$/.exec(a);
          return file ? `${file[1] ?? ""}${join(REPO, file[2]!)}` : a;
        });
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["task", "--quiet", `--config=${join(REPO, "deno.json")}`, "libos", ...args],
        cwd: workspace,
        clearEnv: true,
        // A private TMPDIR, so the temporary-directory grant does not cover what is tested.
        env: cleanEnv({ XDG_STATE_HOME: join(root, "state"), TMPDIR: join(root, "tmp") }),
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(output.stderr);
      assert.equal(output.code, 0, `${line}\n${stderr}`);
    }
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("README: its policy example is examples/policy.jsonc as it is, and a valid policy", async () => {
  const { parsePolicy } = await import("../runtime/policy/policy_rules.ts");
  const readme = Deno.readTextFileSync(join(REPO, "README.md"));
  const shown = /```jsonc\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(shown, "the README shows a policy");
  const file = Deno.readTextFileSync(join(REPO, "examples", "policy.jsonc"));
  assert.ok(file.endsWith(shown), "the README shows the file's rules exactly");
  const rules = parsePolicy(file, "examples/policy.jsonc");
  assert.equal(rules.length, 6);
});
