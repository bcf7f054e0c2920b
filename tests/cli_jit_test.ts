/**
 * `libos jit check`: the documented JSON, the readable report, unreadable files, the allowlist
 * option, exit statuses — in process, and once through the bootstrap's narrow permissions.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { permissionFlags } from "../cli/bootstrap.ts";
import { SYSTEM_PATH } from "../runtime/base/system_path.ts";
import { sandbox, task, withJitTool } from "./_cli_sandbox.ts";

const GOOD = "export function run(args, libos) {\n  return args;\n}\n";
const BAD =
  'import fs from "node:fs";\nexport function run(args, libos) {\n  return eval("1");\n}\n';

Deno.test("libos jit check --json prints one array of {file, ok, violations} and exits 1 on any rejection", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.workspace, "good.ts"), GOOD);
  Deno.writeTextFileSync(join(s.workspace, "bad.ts"), BAD);
  Deno.mkdirSync(join(s.workspace, "dir.ts"));
  const out = await s.cli("jit", "check", "--json", "good.ts", "bad.ts", "missing.ts", "dir.ts");
  assert.equal(out.status, 1, out.stderr);
  const doc = JSON.parse(out.stdout);
  assert.ok(Array.isArray(doc));
  assert.deepEqual(doc[0], { file: "good.ts", ok: true, violations: [] });
  assert.equal(doc[1].file, "bad.ts");
  assert.equal(doc[1].ok, false);
  assert.deepEqual(
    doc[1].violations.map((v: { rule: string; line: number; column: number }) => [
      v.rule,
      v.line,
      v.column,
    ]),
    [["import_forbidden", 1, 16], ["eval", 3, 10]],
  );
  for (const v of doc[1].violations) {
    assert.deepEqual(Object.keys(v).sort(), ["column", "line", "message", "rule"]);
  }
  for (const i of [2, 3]) {
    assert.equal(doc[i].ok, false);
    assert.equal(doc[i].violations[0].rule, "io_error");
  }
  const accepted = await s.cli("jit", "check", "--json", "good.ts");
  assert.equal(accepted.status, 0, accepted.stderr);
});

Deno.test("libos jit check without --json prints a readable report; --allow-import adds one specifier", async () => {
  using s = sandbox();
  const source = `import { x } from "@acme/util";\n${GOOD}`;
  Deno.writeTextFileSync(join(s.workspace, "tool.ts"), source);
  const refused = await s.cli("jit", "check", "tool.ts");
  assert.equal(refused.status, 1);
  assert.ok(
    refused.stdout.startsWith("tool.ts: rejected\n  1:19  import_forbidden  "),
    refused.stdout,
  );
  const allowed = await s.cli("jit", "check", "--allow-import", "@acme/util", "tool.ts");
  assert.equal(allowed.status, 0, allowed.stdout);
  assert.equal(allowed.stdout, "tool.ts: ok\n");
});

Deno.test("libos jit check attack: a Trojan Source tool is refused, and its bidi controls reach the terminal and the JSON only escaped", async () => {
  using s = sandbox();
  // Displayed, the early return sits inside the comment; run, it returns before the check.
  const source =
    "export function run(args, libos) {\n  /* end admins only \u202E { \u2066*/\n  return 1;\n}\n";
  Deno.writeTextFileSync(join(s.workspace, "trojan.ts"), source);
  const raw = /[\u202A-\u202E\u2066-\u2069]/;
  const text = await s.cli("jit", "check", "trojan.ts");
  assert.equal(text.status, 1);
  assert.match(text.stdout, /^trojan\.ts: rejected\n {2}2:22 {2}invisible_character {2}U\+202E /);
  assert.match(text.stdout, /u\{2066\}/);
  assert.doesNotMatch(text.stdout + text.stderr, raw);
  const json = await s.cli("jit", "check", "--json", "trojan.ts");
  assert.equal(json.status, 1);
  assert.doesNotMatch(json.stdout, raw);
  const [result] = JSON.parse(json.stdout);
  assert.deepEqual(
    result.violations.map((v: { rule: string; line: number; column: number }) => [
      v.rule,
      v.line,
      v.column,
    ]),
    [["invisible_character", 2, 22], ["invisible_character", 2, 26]],
  );
  assert.match(result.violations[0].message, /\(\\u\{202E\}\)/);
});

Deno.test("libos jit check refuses a missing FILE or an empty --allow-import as usage (exit 2)", async () => {
  using s = sandbox();
  assert.equal((await s.cli("jit", "check")).status, 2);
  Deno.writeTextFileSync(join(s.workspace, "tool.ts"), GOOD);
  assert.equal((await s.cli("jit", "check", "--allow-import", "", "tool.ts")).status, 2);
});

Deno.test("deno task libos jit check runs through the bootstrap: the file and the parser worker are readable, nothing else", async () => {
  using s = sandbox();
  const outside = Deno.makeTempDirSync({ prefix: "libos-jit-outside-" });
  try {
    // A file outside the workspace is named on the command line: it is granted, read and checked.
    Deno.writeTextFileSync(join(outside, "tool.ts"), BAD);
    const out = await task(
      s.workspace,
      s.state,
      "libos",
      "jit",
      "check",
      "--json",
      join(outside, "tool.ts"),
    );
    assert.equal(out.status, 1, out.stderr);
    const [result] = JSON.parse(out.stdout);
    assert.deepEqual(result.violations.map((v: { rule: string }) => v.rule), [
      "import_forbidden",
      "eval",
    ]);
    Deno.writeTextFileSync(join(outside, "good.ts"), GOOD);
    const ok = await task(s.workspace, s.state, "libos", "jit", "check", join(outside, "good.ts"));
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(ok.stderr, "");
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("deno task libos jit propose, validate, register and run a tool for a process, through the bootstrap", async () => {
  using s = sandbox();
  const spawn = await task(s.workspace, s.state, "libos", "spawn", "--goal", "count", "--json");
  assert.equal(spawn.status, 0, spawn.stderr);
  const pid = JSON.parse(spawn.stdout).process.pid as string;
  Deno.writeTextFileSync(join(s.workspace, "text.txt"), "one two three four");
  Deno.writeTextFileSync(
    join(s.workspace, "candidate.json"),
    JSON.stringify({
      name: "count_words",
      description: "Count the words of a workspace file.",
      input_schema: {
        type: "object",
        properties: { path: { type: "string" } },
        required: ["path"],
      },
      output_schema: { type: "integer" },
      source:
        'export async function run(args, libos) {\n  const f = await libos.call("fs.read_text", { path: args.path });\n  return f.content.split(" ").length;\n}\n',
      tests: [{
        name: "two words",
        args: { path: "a.txt" },
        syscalls: [{ name: "fs.read_text", args: { path: "a.txt" }, result: { content: "a b" } }],
        expect: 2,
      }],
    }),
  );
  const proposed = await task(
    s.workspace,
    s.state,
    "libos",
    "jit",
    "propose",
    pid,
    "candidate.json",
    "--json",
  );
  assert.equal(proposed.status, 0, proposed.stderr);
  const oid = JSON.parse(proposed.stdout).oid as string;
  const validated = await task(
    s.workspace,
    s.state,
    "libos",
    "jit",
    "validate",
    pid,
    oid,
    "--json",
  );
  assert.equal(validated.status, 0, validated.stdout + validated.stderr);
  assert.equal(JSON.parse(validated.stdout).ok, true);
  // Without the register right: refused (exit 1), nothing registered.
  const refused = await task(s.workspace, s.state, "libos", "jit", "register", pid, oid);
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /register right on tool:count_words/);
  // With a human in the queue: an approval request for this exact source, then approved.
  const asked = await task(
    s.workspace,
    s.state,
    "libos",
    "jit",
    "register",
    pid,
    oid,
    "--human",
    "queue",
  );
  assert.equal(asked.status, 1, asked.stderr);
  const request = /hreq_[0-9a-f]{12}/.exec(asked.stderr)?.[0];
  assert.ok(request, asked.stderr);
  const approved = await task(s.workspace, s.state, "libos", "human", "approve", request);
  assert.equal(approved.status, 0, approved.stderr);
  const registered = await task(s.workspace, s.state, "libos", "jit", "register", pid, oid);
  assert.equal(registered.status, 0, registered.stderr);
  // A later invocation (a restart) runs it: restored from its stored source.
  const ran = await task(
    s.workspace,
    s.state,
    "libos",
    "jit",
    "run",
    pid,
    "count_words",
    "--args",
    '{"path":"text.txt"}',
    "--json",
  );
  assert.equal(ran.status, 0, ran.stderr);
  assert.equal(JSON.parse(ran.stdout).value, 4);
});

Deno.test("deno task libos jit run --human queue waits inside the tool's human.ask until another terminal answers", async () => {
  using s = sandbox();
  const pid = await withJitTool(s, {
    name: "asker",
    description: "Ask the human for a colour.",
    input_schema: { type: "object" },
    output_schema: { type: "string" },
    source:
      'export async function run(args, libos) {\n  return "colour: " + await libos.call("human.ask", { question: "Which colour?" });\n}\n',
    tests: [{
      name: "asks",
      args: {},
      syscalls: [{ name: "human.ask", args: { question: "Which colour?" }, result: "red" }],
      expect: "colour: red",
    }],
  });
  // The run blocks in its own process (through the bootstrap) while this "terminal" answers.
  const running = task(
    s.workspace,
    s.state,
    "libos",
    "jit",
    "run",
    pid,
    "asker",
    "--human",
    "queue",
    "--json",
  );
  let question: string | undefined;
  for (let i = 0; i < 600 && !question; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const listed = await s.json("human", "list");
    question = (listed.doc.requests as { id: string }[])[0]?.id;
  }
  assert.ok(question, "the tool's question reached the queue");
  const answered = await s.cli("human", "answer", question, "blue");
  assert.equal(answered.status, 0, answered.stderr);
  const ran = await running;
  assert.equal(ran.status, 0, ran.stderr);
  assert.equal(JSON.parse(ran.stdout).value, "colour: blue");
});

Deno.test("bootstrap permissionFlags() for libos jit run: read on the system directories a tool's shell.run looks programs up in, run on setsid only; jit check gets neither", () => {
  const facts = {
    cwd: "/home/u/projects/app",
    env: { get: (n: string) => ({ HOME: "/home/u", PATH: "/opt/tool/bin:/usr/bin" })[n] },
    realPath: (p: string) => p,
    execPath: "/usr/bin/deno",
  };
  const flag = (flags: string[], name: string) =>
    (flags.find((f) => f.startsWith(`--allow-${name}=`)) ?? "").split("=")[1]?.split(",") ?? [];
  const run = permissionFlags({ ...facts, args: ["jit", "run", "pid_1", "tool"] });
  const read = flag(run, "read");
  for (const dir of SYSTEM_PATH) assert.ok(read.includes(dir), `read ${dir}`);
  assert.ok(
    read.includes("/home/u/projects/.git") && read.includes("/home/.git") && read.includes("/.git"),
    "each ancestor's .git",
  );
  assert.ok(read.includes("/opt/tool/bin"), "the PATH directories, for a hint");
  assert.deepEqual(flag(run, "run"), ["/usr/bin/setsid"]);
  // Nothing becomes writable, and no directory is granted whole beyond the usual places.
  assert.deepEqual(
    flag(run, "write"),
    flag(permissionFlags({ ...facts, args: ["init"] }), "write"),
  );
  assert.ok(!read.includes("/") && !read.includes("/work"), read.join(","));
  const check = permissionFlags({ ...facts, args: ["jit", "check", "t.ts"] });
  assert.ok(!flag(check, "read").includes("/usr/bin"));
  assert.deepEqual(flag(check, "run"), []);
});

Deno.test("deno task libos jit run: a tool's shell.run runs through the launcher's own permissions when the process may run the command, and runs nothing when it may not", async () => {
  using s = sandbox();
  const argv = ["touch", "marker.txt"];
  const pid = await withJitTool(s, {
    name: "toucher",
    description: "Touch a marker file.",
    input_schema: { type: "object" },
    output_schema: {},
    source: `export const run = async (args, libos) => {
  const out = await libos.call("shell.run", { argv: ${JSON.stringify(argv)} });
  return { exitCode: out.exitCode, wall: out.wall };
};
`,
    tests: [{
      name: "touches",
      args: {},
      syscalls: [{ name: "shell.run", args: { argv }, result: { exitCode: 0, wall: true } }],
      expect: { exitCode: 0, wall: true },
    }],
  });
  const marker = join(s.workspace, "marker.txt");
  const exists = () => {
    try {
      return Deno.statSync(marker).isFile;
    } catch {
      return false;
    }
  };
  // Attack: the process holds no right to run it, and no human is reachable: refused by the
  // decision (not by a missing read permission), and nothing ran.
  const refused = await task(s.workspace, s.state, "libos", "jit", "run", pid, "toucher", "--json");
  assert.equal(refused.status, 1, refused.stderr);
  const error = JSON.parse(refused.stdout).error;
  assert.match(
    error.message,
    /Cannot shell\.run shell:touch marker\.txt: it needs a human's approval/,
  );
  assert.doesNotMatch(error.message, /--allow-read|Requires read access/);
  assert.equal(exists(), false);
  // With the right to run exactly this command: it runs, through the launcher, inside the wall.
  const granted = await s.cli(
    "grant",
    pid,
    "--resource",
    `shell:${argv.join(" ")}`,
    "--right",
    "execute",
  );
  assert.equal(granted.status, 0, granted.stderr);
  const ran = await task(s.workspace, s.state, "libos", "jit", "run", pid, "toucher", "--json");
  assert.equal(ran.status, 0, ran.stdout + ran.stderr);
  assert.deepEqual(JSON.parse(ran.stdout).value, { exitCode: 0, wall: true });
  assert.equal(exists(), true);
});
