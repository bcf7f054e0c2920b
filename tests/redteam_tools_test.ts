/**
 * Red team of the built-in tools through the tool broker: each test states one attack in its
 * name ("<tool> attack: …"), mounts it for real (real symlinks, hard links, files, processes,
 * stored human requests), and asserts both the refusal and the absence of any side effect, with a
 * control that shows the same call does work on a legitimate target — so no test passes because
 * the tool was simply broken. A test that demonstrates a real defect is `ignore: true` with a
 * comment naming the hole.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { HumanPendingError, QuantumEnd } from "../runtime/base/errors.ts";
import type { HumanDecision, HumanPrompt } from "../runtime/human/human_channel.ts";
import { IMAGE_OPERATOR } from "../runtime/broker/image_registry.ts";
import { REDACTED } from "../runtime/base/redaction.ts";
import { createRuntime, type RuntimeOptions } from "../runtime/runtime.ts";
import { type TestRuntime, testRuntime } from "../testing.ts";
import type { ToolResult } from "../runtime/broker/tool_broker.ts";
import { sandbox } from "./_cli_sandbox.ts";
import { allow } from "./authority_fixture.ts";

const NEVER = new AbortController().signal;
const ESC = "\x1b";

// ---------------------------------------------------------------- fixture

interface Options {
  readonly files?: Record<string, string>;
  readonly tools: readonly string[];
  readonly mode?: "read-only" | "workspace-write" | "full-access";
  readonly human?: "interactive" | "queue" | "none";
  readonly answers?: readonly HumanDecision[];
  readonly extra?: RuntimeOptions;
}

interface Fixture extends TestRuntime {
  readonly ws: string;
  /** A scratch directory outside the workspace (removed with the fixture). */
  readonly outside: string;
  readonly pid: string;
  /** Everything an interactive human was shown. */
  readonly prompted: string[];
  call(name: string, args: unknown, pid?: string): Promise<ToolResult>;
  at(path: string): string;
}

function scripted(answers: HumanDecision[], shown: string[]): HumanPrompt {
  return {
    decide(_request, rendered) {
      shown.push(rendered);
      return Promise.resolve(answers.shift() ?? { type: "reject", reason: "unexpected prompt" });
    },
  };
}

async function fixture(options: Options): Promise<Fixture> {
  const prompted: string[] = [];
  const t = await testRuntime({
    prefix: "libos-redteam-",
    workspaceDir: "ws",
    dirs: ["outside"],
    ...(options.files ? { files: options.files } : {}),
    mode: options.mode ?? "workspace-write",
    human: options.human ?? "queue",
    prompt: scripted([...(options.answers ?? [])], prompted),
    wall: false,
    ...options.extra,
  });
  const pid = t.spawn({ tools: [...options.tools] });
  const ws = t.workspace;
  return {
    ...t,
    ws,
    outside: join(t.root, "outside"),
    pid,
    prompted,
    call: (name, args, who = pid) =>
      t.runtime.tools.invoke(who, { id: "call_1", name, arguments: args }, NEVER),
    at: (path) => join(ws, path),
  };
}

/** The value of a successful call. */
function ok(result: ToolResult): unknown {
  assert.ok(result.ok, result.forModel);
  return result.value;
}

/** The error code of a refused call. */
function refused(result: ToolResult): string {
  assert.equal(result.ok, false, result.forModel);
  return result.ok ? "" : result.error.code;
}

/** The call, or the HumanPendingError it parked on (queue mode). */
async function parks(call: Promise<ToolResult>): Promise<HumanPendingError> {
  try {
    const result = await call;
    assert.fail(`expected the call to park on a human, got ${result.forModel}`);
  } catch (error) {
    if (error instanceof HumanPendingError) return error;
    throw error;
  }
}

function bytes(path: string): Uint8Array {
  return Deno.readFileSync(path);
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The process may not read `private/` (a deny capability, as an operator would set). */
function denyRead(f: Fixture, path: string): void {
  f.runtime.authority.capabilities.grant({
    subject: f.pid,
    resource: { type: "fs", path, scope: "subtree" },
    rights: ["read", "write", "stat"],
    effect: "deny",
    issuer: "operator",
  }, "operator");
}

/** Creates an object as process `pid` would (a model's note). */
function note(f: Fixture, pid: string, type: string, payload: string): string {
  return f.runtime.memory.create(pid, {
    type,
    payload,
    provenance: { source: "model", label: "test", ref: null },
  }).oid;
}

interface GrepValue {
  matches: { path: string; line: number; text: string }[];
  files: number;
  skipped: number;
  truncated: boolean;
}

// ---------------------------------------------------------------- grep and glob

const MARK = "PLANTED-MARK";

Deno.test("grep attack: symlinks, hard links, case variants and newline names never reveal a secret-bearing, denied or out-of-workspace file, and nobody is asked", async () => {
  await using f = await fixture({
    tools: ["grep", "glob"],
    files: {
      "src/ok.ts": `// ${MARK} readable\n`,
      ".env": `API=${MARK}-dotenv\n`,
      ".ENV": `API=${MARK}-upper-env\n`,
      ".Env.Local": `API=${MARK}-env-local\n`,
      "certs/Server.PEM": `${MARK}-pem\n`,
      "keys/ID_RSA": `${MARK}-idrsa\n`,
      ".npmrc": `//registry:_authToken=${MARK}-npmrc\n`,
      "private/notes.txt": `${MARK}-private\n`,
      // A newline in a name is only a name (and never a raw line break in the result).
      "weird/a\nb.txt": `${MARK}-nl-name\n`,
    },
  });
  denyRead(f, "private");
  Deno.writeTextFileSync(join(f.outside, "host-secret.txt"), `${MARK}-outside\n`);
  // Aliases of what may not be read.
  Deno.symlinkSync(".env", f.at("env-link.txt"));
  Deno.symlinkSync(join(f.outside, "host-secret.txt"), f.at("outside-link.txt"));
  Deno.symlinkSync("private", f.at("alias"));
  Deno.symlinkSync(f.outside, f.at("outdir"));
  // Hard links: a second name for the secret file, and a file of the host's.
  Deno.linkSync(f.at(".env"), f.at("innocent.txt"));
  Deno.linkSync(join(f.outside, "host-secret.txt"), f.at("hardlinked-host.txt"));

  const result = await f.call("grep", { text: MARK });
  const v = ok(result) as GrepValue;
  const paths = v.matches.map((m) => m.path).sort();
  // Control: the readable files are searched (a newline in a name stays escaped).
  assert.deepEqual(paths, ["src/ok.ts", "weird/a\nb.txt"]);
  assert.ok(!result.forModel.includes("\n"), "a raw newline reached the model's text");
  for (
    const leak of [
      "dotenv",
      "upper-env",
      "env-local",
      "-pem",
      "idrsa",
      "npmrc",
      "private",
      "outside",
    ]
  ) {
    assert.ok(!result.forModel.includes(`${MARK}-${leak}`), `${leak} leaked: ${result.forModel}`);
  }
  assert.ok(v.skipped >= 6, `skipped ${v.skipped}`);
  assert.deepEqual(f.runtime.human.list(), [], "nobody was asked to approve a search");
  assert.deepEqual(f.prompted, []);

  // Case-insensitive search does not widen anything either.
  const folded = await f.call("grep", { text: MARK.toLowerCase(), ignore_case: true });
  assert.ok(!/dotenv|upper-env|idrsa|-outside|-private/.test(folded.forModel), folded.forModel);
  assert.ok((ok(folded) as GrepValue).matches.some((m) => m.path === "src/ok.ts"), "control");

  // glob does not enter a symlinked directory (in or out of the workspace).
  const globbed = ok(await f.call("glob", { pattern: "**/*.txt" })) as { matches: string[] };
  assert.ok(globbed.matches.includes("innocent.txt"), "control: a real file is listed");
  assert.ok(!globbed.matches.some((m) => m.includes("host-secret") || m.startsWith("alias/")));
  assert.ok(!globbed.matches.some((m) => m.startsWith("private/")), "denied directory entered");
  assert.ok(!globbed.matches.some((m) => m.startsWith("outdir/")), "symlink out followed");
});

Deno.test("grep attack: a start path through a symlink to a denied directory or out of the workspace is refused or skipped, never read", async () => {
  await using f = await fixture({
    tools: ["grep", "glob"],
    files: { "private/notes.txt": `${MARK}-private\n`, "pub/ok.txt": `${MARK}-public\n` },
  });
  denyRead(f, "private");
  Deno.writeTextFileSync(join(f.outside, "host.txt"), `${MARK}-outside\n`);
  Deno.symlinkSync("private", f.at("alias"));
  Deno.symlinkSync(f.outside, f.at("outdir"));
  Deno.symlinkSync("pub", f.at("publink"));
  for (
    const path of ["alias", "outdir", "private", "../", f.outside, "alias/.", "pub/../private"]
  ) {
    const result = await f.call("grep", { text: MARK, path });
    assert.ok(
      !result.forModel.includes(`${MARK}-private`) && !result.forModel.includes(`${MARK}-outside`),
      `${path}: ${result.forModel}`,
    );
    if (result.ok) assert.deepEqual((result.value as unknown as GrepValue).matches, [], path);
    const globbed = await f.call("glob", { pattern: "**", path });
    assert.ok(!globbed.forModel.includes("host.txt"), `${path}: ${globbed.forModel}`);
    assert.ok(!globbed.forModel.includes("notes.txt"), `${path}: ${globbed.forModel}`);
  }
  // Control: the readable directory is searched.
  const control = ok(await f.call("grep", { text: MARK, path: "pub" })) as GrepValue;
  assert.deepEqual(control.matches.map((m) => m.path), ["pub/ok.txt"]);
  assert.deepEqual(f.runtime.human.list(), []);
});

// Was a defect (medium), now fixed: the search walk lists directories with the primitive's listDir and the default
// `ask: true` (runtime/primitives/_fs_search.ts walk(), `host.listDir(pid, {path, limit})`), so a
// directory whose read *asks* (an ask capability or rule on it) escalates to the human: queue mode
// stores a pending request the walk then swallows (its bare `catch {}` also eats the
// HumanPendingError), interactive mode prompts the human mid-search. The tool promises "skipped
// without asking anyone". Fix: give SearchHost.listDir an `ask` option, pass `ask: false` from
// walk() (as readText already does), and forward it to #operate's `asks` in listDir.
Deno.test({
  name:
    "grep attack: a directory whose read asks a human is skipped without creating a human request or prompting anyone",
  async fn() {
    for (const tool of ["grep", "glob"] as const) {
      for (const human of ["queue", "interactive"] as const) {
        await using f = await fixture({
          tools: ["grep", "glob"],
          human,
          answers: [{ type: "approve" }],
          files: { "askme/notes.txt": `${MARK}-asked\n`, "pub/ok.txt": `${MARK}-public\n` },
        });
        f.runtime.authority.capabilities.grant({
          subject: f.pid,
          resource: { type: "fs", path: "askme", scope: "subtree" },
          rights: ["read"],
          effect: "ask",
          issuer: "operator",
        }, "operator");
        const result = await f.call(tool, tool === "grep" ? { text: MARK } : { pattern: "**" });
        const text = ok(result);
        assert.ok(JSON.stringify(text).includes("pub/ok.txt"), "control: the walk ran");
        assert.deepEqual(f.prompted, [], `${tool}/${human}: the human was prompted`);
        assert.deepEqual(
          f.runtime.human.list().map((r) => r.approval?.path),
          [],
          `${tool}/${human}: a human request was stored`,
        );
        assert.ok(!result.forModel.includes(`${MARK}-asked`));
      }
    }
  },
});

Deno.test("glob attack: a tree wider than the directory bound and a pathological pattern are cut short, not walked without end", async () => {
  await using f = await fixture({ tools: ["glob", "grep"] });
  for (let i = 0; i < 2_050; i++) {
    Deno.mkdirSync(f.at(`d/${String(i).padStart(4, "0")}`), {
      recursive: true,
    });
  }
  Deno.writeTextFileSync(f.at("d/0000/hit.ts"), "x\n");
  const started = performance.now();
  const wide = ok(await f.call("glob", { pattern: "**/*.ts" })) as {
    matches: string[];
    truncated: boolean;
  };
  assert.equal(wide.truncated, true, "the bound on directories said so");
  assert.deepEqual(wide.matches, ["d/0000/hit.ts"], "control: the walk did find the file");
  // A 1,000-character glob of alternating stars against many long names: no backtracking blowup.
  const evil = "*a".repeat(499) + "b";
  for (let i = 0; i < 300; i++) Deno.writeTextFileSync(f.at(`d/0001/${"a".repeat(200)}${i}`), "");
  const pathological = ok(await f.call("glob", { pattern: evil, path: "d/0001" })) as {
    matches: string[];
  };
  assert.deepEqual(pathological.matches, []);
  // A long line and a needle near the 1,000-character limit.
  Deno.writeTextFileSync(f.at("d/0002/long.txt"), "a".repeat(1024 * 1024 + 10));
  const long = ok(
    await f.call("grep", { text: "a".repeat(999) + "b", path: "d/0002" }),
  ) as GrepValue;
  assert.deepEqual(long.matches, []);
  assert.equal(long.truncated, true, "the per-file byte bound said so");
  // Generous: a walk without bounds over 2,050 directories with a backtracking glob would not end.
  assert.ok(performance.now() - started < 60_000);
});

// ---------------------------------------------------------------- edit_file

Deno.test("edit_file attack: replacement patterns ($&, $', $`) are written literally, exactly once", async () => {
  await using f = await fixture({ tools: ["edit_file"], files: { "a.txt": "A-key-B\n" } });
  ok(await f.call("edit_file", { path: "a.txt", old_string: "key", new_string: "$&$'$`$$1" }));
  assert.equal(Deno.readTextFileSync(f.at("a.txt")), "A-$&$'$`$$1-B\n");
  ok(
    await f.call("edit_file", {
      path: "a.txt",
      old_string: "$",
      new_string: "$$",
      replace_all: true,
    }),
  );
  assert.equal(Deno.readTextFileSync(f.at("a.txt")), "A-$$&$$'$$`$$$$1-B\n");
});

Deno.test("edit_file attack: a file with a BOM or invalid UTF-8 is refused, never rewritten from its lossy decoding", async () => {
  await using f = await fixture({ tools: ["edit_file"], files: { "plain.txt": "x = 1\n" } });
  const cases: Record<string, Uint8Array> = {
    // BOM dropped by the decoder (-3 bytes), an incomplete sequence (+1) and a lone continuation
    // byte (+2): the decoded text re-encodes to exactly as many bytes as the file holds.
    "bom-balanced.txt": new Uint8Array([
      0xef,
      0xbb,
      0xbf,
      ...new TextEncoder().encode("x = 1\n"),
      0xe2,
      0x82,
      0x80,
      0x0a,
    ]),
    "bom.txt": new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode("x = 1\n")]),
    "latin1.txt": new Uint8Array([...new TextEncoder().encode("x = 1\n"), 0xe9, 0x0a]),
  };
  for (const [name, data] of Object.entries(cases)) {
    Deno.writeFileSync(f.at(name), data);
    const result = await f.call("edit_file", { path: name, old_string: "x = 1", new_string: "y" });
    refused(result);
    assert.deepEqual(bytes(f.at(name)), data, `${name} was rewritten`);
  }
  ok(await f.call("edit_file", { path: "plain.txt", old_string: "x = 1", new_string: "y" }));
  assert.equal(Deno.readTextFileSync(f.at("plain.txt")), "y\n", "control");
});

Deno.test("edit_file attack: a symlink (final or through a directory alias) to a denied, secret or outside file is never followed or written", async () => {
  await using f = await fixture({
    tools: ["edit_file"],
    mode: "full-access",
    files: { "private/conf.txt": "port = 80\n", ".env": "port = 80\n", "ok.txt": "port = 80\n" },
  });
  denyRead(f, "private");
  Deno.writeTextFileSync(join(f.outside, "host.txt"), "port = 80\n");
  Deno.symlinkSync("ok.txt", f.at("final-link.txt"));
  Deno.symlinkSync(join(f.outside, "host.txt"), f.at("out-link.txt"));
  Deno.symlinkSync("private", f.at("alias"));
  Deno.symlinkSync(f.outside, f.at("outdir"));
  const targets = [
    "final-link.txt",
    "out-link.txt",
    "alias/conf.txt",
    "outdir/host.txt",
    "private/conf.txt",
  ];
  for (const path of targets) {
    refused(await f.call("edit_file", { path, old_string: "80", new_string: "31337" }));
  }
  for (const file of ["private/conf.txt", "ok.txt"]) {
    assert.equal(Deno.readTextFileSync(f.at(file)), "port = 80\n", file);
  }
  assert.equal(Deno.readTextFileSync(join(f.outside, "host.txt")), "port = 80\n");
  assert.ok(Deno.lstatSync(f.at("final-link.txt")).isSymlink, "the link itself is untouched");
  // A secret-bearing file asks (queue mode parks) and is not changed meanwhile.
  await parks(f.call("edit_file", { path: ".env", old_string: "80", new_string: "31337" }));
  assert.equal(Deno.readTextFileSync(f.at(".env")), "port = 80\n");
  // Control.
  ok(await f.call("edit_file", { path: "ok.txt", old_string: "80", new_string: "8080" }));
  assert.equal(Deno.readTextFileSync(f.at("ok.txt")), "port = 8080\n");
});

Deno.test("edit_file attack: a protected path (.git, .gitmodules) or a hard-linked file is not edited without a human's approval, even in full-access", async () => {
  await using f = await fixture({
    tools: ["edit_file"],
    mode: "full-access",
    files: {
      ".git/config": "[core]\n\tbare = false\n",
      ".gitmodules": "[submodule]\n",
      "sub/.GIT/HEAD": "ref: main\n",
      "ok.txt": "bare = false\n",
    },
  });
  Deno.writeTextFileSync(join(f.outside, "host.txt"), "bare = false\n");
  Deno.linkSync(join(f.outside, "host.txt"), f.at("linked.txt"));
  const before = {
    config: Deno.readTextFileSync(f.at(".git/config")),
    host: Deno.readTextFileSync(join(f.outside, "host.txt")),
  };
  const edits: [string, string][] = [
    [".git/config", "bare = false"],
    [".gitmodules", "[submodule]"],
    ["sub/.GIT/HEAD", "ref: main"],
    ["linked.txt", "bare = false"],
  ];
  for (const [path, old] of edits) {
    const parked = await parks(f.call("edit_file", { path, old_string: old, new_string: "PWN" }));
    const request = f.runtime.human.get(parked.request);
    if (path === "linked.txt") {
      // The hard link already asks for its read: the edit stops before computing anything.
      assert.equal(request.approval?.operation, "fs.read");
      assert.equal(request.approval?.target?.links, 2);
    } else {
      assert.equal(request.approval?.path, path);
      assert.match(request.approval?.diff ?? "", /PWN/, `${path}: the human is shown the diff`);
    }
  }
  assert.equal(Deno.readTextFileSync(f.at(".git/config")), before.config);
  assert.equal(Deno.readTextFileSync(f.at(".gitmodules")), "[submodule]\n");
  assert.equal(Deno.readTextFileSync(f.at("sub/.GIT/HEAD")), "ref: main\n");
  assert.equal(Deno.readTextFileSync(join(f.outside, "host.txt")), before.host);
  ok(await f.call("edit_file", { path: "ok.txt", old_string: "false", new_string: "true" }));
  assert.equal(Deno.readTextFileSync(f.at("ok.txt")), "bare = true\n", "control");
});

// Was a defect (medium), now fixed: an edit that waits for approval is stored as a plain `fs.write` of the whole
// new content; FilesystemPrimitive.dispatch() (runtime/primitives/filesystem.ts, `case
// "fs.write"`) re-runs it without the stored `ifSha256`, and the approval binding holds only the
// target's fingerprint (dev, ino, size, mtime in ms, nlink). A change made to the file after the
// edit's read — same size, in place, mtime restored (e.g. by another process or a shell command
// running `touch -r`) — is silently overwritten when the human approves: edit_file's promise
// "refused when the file changed since it was read" is lost across an approval, and the diff the
// human saw was against content that no longer exists. Fix: forward `ifSha256` in dispatch (and
// bind it, or the current sha256, into the approval digest).
Deno.test({
  name:
    "edit_file attack: a file changed after the edit's read, while the edit waits for approval, is not overwritten when the human approves",
  async fn() {
    await using f = await fixture({
      tools: ["edit_file"],
      mode: "full-access",
      files: { ".gitmodules": "url = https://good.example/a\n" },
    });
    const path = f.at(".gitmodules");
    const parked = await parks(
      f.call("edit_file", {
        path: ".gitmodules",
        old_string: "good.example/a",
        new_string: "good.example/b",
      }),
    );
    // Someone changes the file in place, same size, mtime restored.
    const st = Deno.lstatSync(path);
    const changed = "url = https://evil.example/a\n";
    assert.equal(changed.length, "url = https://good.example/a\n".length);
    {
      using file = Deno.openSync(path, { write: true });
      file.writeSync(new TextEncoder().encode(changed));
    }
    Deno.utimeSync(path, st.atime!, st.mtime!);
    assert.equal(Deno.lstatSync(path).ino, st.ino);
    f.runtime.human.approve(parked.request, { by: "human:test" });
    await f.runtime.human.resume(f.pid, parked.request, NEVER);
    assert.equal(
      Deno.readTextFileSync(path),
      changed,
      "the concurrent change was overwritten by an edit computed from the old content",
    );
  },
});

// ---------------------------------------------------------------- memory tools

Deno.test("create_object_from_file attack: a denied, secret-bearing, symlinked or hard-linked file never lands in an object, and no content reaches the result", async () => {
  await using f = await fixture({
    tools: ["create_object_from_file", "list_memory_namespace"],
    files: {
      "private/creds.txt": `${MARK}-private\n`,
      ".env": `${MARK}-dotenv\n`,
      "ok.txt": `${MARK}-ok\n`,
    },
  });
  denyRead(f, "private");
  Deno.writeTextFileSync(join(f.outside, "host.txt"), `${MARK}-outside\n`);
  Deno.symlinkSync(join(f.outside, "host.txt"), f.at("out-link.txt"));
  Deno.symlinkSync("private/creds.txt", f.at("in-link.txt"));
  Deno.linkSync(join(f.outside, "host.txt"), f.at("hard.txt"));
  const objects = () =>
    f.runtime.memory.list(f.pid, `process:${f.pid}`).filter((o) => o.type !== "tool.result");
  for (const path of ["private/creds.txt", "out-link.txt", "in-link.txt", "../x", f.outside]) {
    const result = await f.call("create_object_from_file", { path });
    refused(result);
    assert.ok(!result.forModel.includes(MARK), result.forModel);
  }
  // Secret-bearing and hard-linked files ask (queue mode parks); nothing is created meanwhile.
  for (const path of [".env", "hard.txt"]) {
    await parks(f.call("create_object_from_file", { path }));
  }
  assert.deepEqual(objects(), [], "no object was created");
  // Into a namespace the process may not write: refused after the read, nothing created.
  const other = f.runtime.processes.spawn({ goal: "o", image: "base-agent:v0", tools: [] }).pid;
  const foreign = await f.call("create_object_from_file", {
    path: "ok.txt",
    namespace: `process:${other}`,
  });
  refused(foreign);
  assert.deepEqual(
    f.runtime.memory.list(other, `process:${other}`).filter((o) => o.type !== "tool.result"),
    [],
  );
  // Control: the readable file is copied, its content is not in the result.
  const made = await f.call("create_object_from_file", { path: "ok.txt" });
  const v = ok(made) as { oid: string };
  assert.ok(!made.forModel.includes(MARK), made.forModel);
  assert.deepEqual(f.runtime.memory.read(f.pid, v.oid).payload, {
    path: "ok.txt",
    content: `${MARK}-ok\n`,
  });
});

Deno.test("write_object_to_file attack: another process's object, a denied path, a symlink or a protected path is never written", async () => {
  await using f = await fixture({
    tools: ["write_object_to_file", "append_memory_object"],
    mode: "full-access",
    files: { "target.txt": "original\n", "private/keep.txt": "keep\n" },
  });
  denyRead(f, "private");
  const other = f.runtime.processes.spawn({ goal: "o", image: "base-agent:v0", tools: [] }).pid;
  const theirs = note(f, other, "note", `${MARK}-theirs`);
  const mine = note(f, f.pid, "note", "PWNED\n");
  // Another process's object: refused, no file, its content not leaked, same answer as no object.
  const stolen = await f.call("write_object_to_file", { oid: theirs, path: "stolen.txt" });
  const ghost = await f.call("write_object_to_file", {
    oid: "obj_000000000000",
    path: "stolen.txt",
  });
  assert.equal(refused(stolen), refused(ghost));
  assert.equal(
    stolen.forModel.replace(theirs, "OID"),
    ghost.forModel.replace("obj_000000000000", "OID"),
  );
  assert.ok(!exists(f.at("stolen.txt")));
  assert.ok(!stolen.forModel.includes(MARK));
  // Appending to it: refused, unchanged.
  refused(await f.call("append_memory_object", { oid: theirs, item: "x" }));
  assert.equal(f.runtime.memory.read(other, theirs).payload, `${MARK}-theirs`);
  // Where the process may not write, through symlinks, out of the workspace.
  Deno.symlinkSync("target.txt", f.at("link.txt"));
  Deno.symlinkSync(join(f.outside, "planted.txt"), f.at("dangling-out.txt"));
  Deno.symlinkSync("private", f.at("alias"));
  Deno.symlinkSync(f.outside, f.at("outdir"));
  for (
    const path of [
      "private/keep.txt",
      "private/new.txt",
      "alias/new.txt",
      "link.txt",
      "dangling-out.txt",
      "outdir/planted.txt",
      "../planted.txt",
      join(f.outside, "planted.txt"),
    ]
  ) {
    refused(await f.call("write_object_to_file", { oid: mine, path }));
  }
  assert.equal(Deno.readTextFileSync(f.at("target.txt")), "original\n");
  assert.equal(Deno.readTextFileSync(f.at("private/keep.txt")), "keep\n");
  assert.ok(!exists(f.at("private/new.txt")));
  assert.ok(!exists(join(f.outside, "planted.txt")));
  assert.deepEqual([...Deno.readDirSync(f.outside)], []);
  // A protected path asks even in full-access (queue mode parks), nothing written meanwhile.
  Deno.mkdirSync(f.at(".git/hooks"), { recursive: true });
  await parks(f.call("write_object_to_file", { oid: mine, path: ".git/hooks/pre-commit" }));
  assert.ok(!exists(f.at(".git/hooks/pre-commit")));
  // Its own tool results are immutable: appending to one is refused.
  const results = f.runtime.memory.list(f.pid, `process:${f.pid}`).filter((o) =>
    o.type === "tool.result"
  );
  assert.ok(results.length > 0);
  const first = results[0]!;
  const before = JSON.stringify(f.runtime.memory.read(f.pid, first.oid).payload);
  refused(await f.call("append_memory_object", { oid: first.oid, item: "forged" }));
  assert.equal(JSON.stringify(f.runtime.memory.read(f.pid, first.oid).payload), before);
  // Control.
  ok(await f.call("write_object_to_file", { oid: mine, path: "out.txt" }));
  assert.equal(Deno.readTextFileSync(f.at("out.txt")), "PWNED\n");
});

// ---------------------------------------------------------------- redaction

const SECRET = "sk-test-PLANTED-0123456789abcdef";

Deno.test("read_text_file attack: a secret in a JSON key, an error message, a file name, a glob match or a stored result is redacted everywhere", async () => {
  await using f = await fixture({
    tools: [
      "read_text_file",
      "glob",
      "grep",
      "read_directory",
      "create_memory_object",
      "read_memory_object",
    ],
    mode: "full-access",
    extra: { secrets: [SECRET] },
    files: { [`dir-${SECRET}/x.txt`]: `value ${SECRET}\n` },
  });
  const calls: [string, Record<string, unknown>][] = [
    ["read_text_file", { path: `dir-${SECRET}/missing.txt` }],
    ["read_text_file", { path: `dir-${SECRET}/x.txt` }],
    ["glob", { pattern: "**/*.txt" }],
    ["grep", { text: "value" }],
    ["read_directory", { path: "." }],
  ];
  const made = await f.call("create_memory_object", {
    type: "n",
    payload: { [SECRET]: [SECRET, { k: `a${SECRET}b` }] },
  });
  assert.ok(!made.forModel.includes(SECRET));
  calls.push(["read_memory_object", { oid: (ok(made) as { oid: string }).oid }]);
  for (const [name, args] of calls) {
    const result = await f.call(name, args);
    assert.ok(result.forModel.includes(REDACTED), `control: ${name} had the secret to redact`);
    assert.ok(!result.forModel.includes(SECRET), `${name}: ${result.forModel}`);
    if (result.object) {
      const stored = JSON.stringify(f.runtime.memory.read(f.pid, result.object).payload);
      assert.ok(!stored.includes(SECRET), `${name} stored: ${stored}`);
    }
  }
});

// Was a defect (medium), now fixed: redaction (runtime/base/redaction.ts) replaces only whole occurrences of a known
// secret, after the tool has already cut its output: read_text_file's `max_bytes`
// (FilesystemPrimitive.readText, cutUtf8) and grep's 500-character line cut (_fs_search.ts
// `line.slice(0, 500)`) hand the model every character of the secret but the last, unredacted;
// grep's match/no-match is then an oracle for the last character. Fix: redact before cutting
// (read the whole line/bytes + the longest secret's length, redact, then cut), and treat a
// secret prefix at the cut edge as a secret (drop a trailing partial match of any known secret);
// consider refusing grep needles that overlap a known secret.
Deno.test({
  name:
    "read_text_file attack: a read or a grep line cut in the middle of a known secret does not hand the model the secret",
  async fn() {
    const line = "x".repeat(490) + `key=${SECRET}\n`;
    await using f = await fixture({
      tools: ["read_text_file", "grep"],
      mode: "full-access",
      extra: { secrets: [SECRET] },
      files: { "config.txt": `key=${SECRET}\n`, "long.txt": line },
    });
    const whole = await f.call("read_text_file", { path: "config.txt" });
    assert.ok(whole.forModel.includes(REDACTED), "control: the whole read is redacted");
    const cut = await f.call("read_text_file", {
      path: "config.txt",
      max_bytes: "key=".length + SECRET.length - 1,
    });
    const grep = await f.call("grep", { text: "key=" });
    // Recover the last character with grep as an oracle.
    let recovered = "";
    for (const c of "0123456789abcdef") {
      const probe = ok(
        await f.call("grep", { text: SECRET.slice(0, -1) + c, path: "config.txt" }),
      ) as GrepValue;
      if (probe.matches.length > 0) recovered = c;
    }
    const prefix = SECRET.slice(0, -1);
    assert.ok(!cut.forModel.includes(prefix), `cut read leaked: ${cut.forModel}`);
    assert.ok(!grep.forModel.includes(SECRET.slice(0, 8)), `grep cut leaked: ${grep.forModel}`);
    assert.notEqual(prefix + recovered, SECRET, "the whole secret was recovered");
  },
});

// ---------------------------------------------------------------- process tools

Deno.test("signal_child_process attack: a sibling or an unknown pid cannot be signalled, merged or waited on, and nothing changes", async () => {
  await using f = await fixture({
    tools: [
      "signal_child_process",
      "merge_child_memory",
      "wait_child_process",
      "fork_child_process",
    ],
  });
  const sibling = f.runtime.processes.spawn({ goal: "s", image: "base-agent:v0", tools: [] }).pid;
  const nephew = f.runtime.processes.fork(sibling, { goal: "n" }).pid;
  for (const target of [sibling, nephew]) {
    refused(await f.call("signal_child_process", { pid: target, signal: "terminate" }));
    refused(await f.call("merge_child_memory", { pid: target }));
    refused(await f.call("wait_child_process", { pid: target }));
    assert.equal(f.runtime.processes.get(target).status, "runnable", target);
  }
  // Control: its own child.
  const child = ok(await f.call("fork_child_process", { goal: "c" })) as { pid: string };
  ok(await f.call("signal_child_process", { pid: child.pid, signal: "pause" }));
  assert.equal(f.runtime.processes.get(child.pid).status, "paused");
});

// Was a defect (low): pid existence oracle. signal_child_process and merge_child_memory answer
// `not_found` for an unknown pid but `not_a_child` for a live process that is not the caller's
// child (ProcessManager.signal: `this.get(pid)` before the parent check; ObjectSharing.merge:
// `processes.get(child)` first) — DESIGN §2 "Names are not authority … no existence oracles".
// Fix: answer an unknown pid with the same `not_a_child` refusal (same code and wording).
Deno.test({
  name:
    "signal_child_process attack: an unknown pid and a non-child pid get the same refusal (no pid existence oracle)",
  async fn() {
    await using f = await fixture({ tools: ["signal_child_process", "merge_child_memory"] });
    const sibling = f.runtime.processes.spawn({ goal: "s", image: "base-agent:v0", tools: [] })
      .pid;
    const ghost = "pid_000000000000";
    for (const tool of ["signal_child_process", "merge_child_memory"]) {
      const args = (pid: string) =>
        tool === "merge_child_memory" ? { pid } : { pid, signal: "pause" };
      const real = await f.call(tool, args(sibling));
      const none = await f.call(tool, args(ghost));
      assert.equal(refused(real), refused(none), `${tool}: ${real.forModel} vs ${none.forModel}`);
      assert.equal(
        real.forModel.replaceAll(sibling, "PID"),
        none.forModel.replaceAll(ghost, "PID"),
      );
    }
    assert.equal(f.runtime.processes.get(sibling).status, "runnable");
  },
});

Deno.test("fork_child_process attack: inherit a scope wider than the parent holds (write, delete, net, image admin, signal on itself) is refused and no child is made", async () => {
  await using f = await fixture({
    tools: ["fork_child_process", "spawn_child_process", "list_child_processes"],
    mode: "read-only",
    files: { "src/a.ts": "x\n" },
  });
  const children = () => f.runtime.processes.list({ parent: f.pid, limit: 100 });
  const wider = [
    { resource: { type: "fs", path: ".", scope: "subtree" }, rights: ["write"] },
    { resource: { type: "fs", path: ".", scope: "subtree" }, rights: ["delete"] },
    { resource: { type: "net", key: "example.com", scope: "any" }, rights: ["connect"] },
    { resource: { type: "image", key: "x", scope: "any" }, rights: ["write", "admin"] },
    { resource: { type: "process", key: f.pid, scope: "exact" }, rights: ["signal"] },
  ];
  for (const scope of wider) {
    refused(await f.call("fork_child_process", { goal: "c", inherit: [scope] }));
    refused(
      await f.call("spawn_child_process", {
        image: "base-agent:v0",
        goal: "c",
        inherit: [scope],
      }),
    );
  }
  assert.deepEqual(children(), [], "no child was made");
  // Control: a scope the parent holds.
  const child = ok(
    await f.call("fork_child_process", {
      goal: "c",
      inherit: [{ resource: { type: "fs", path: "src", scope: "subtree" }, rights: ["read"] }],
    }),
  ) as { pid: string };
  assert.equal(
    f.runtime.authority.decide(child.pid, {
      resource: { type: "fs", path: "src/a.ts" },
      right: "write",
    }).effect === "allow",
    false,
  );
  assert.equal(children().length, 1);
});

Deno.test("process_exit attack: a child naming its parent's object, a sibling's object or its own tool result as its result gives the parent nothing on merge", async () => {
  await using f = await fixture({
    tools: ["merge_child_memory", "fork_child_process"],
    files: { "a.txt": "x\n" },
  });
  const sibling = f.runtime.processes.spawn({ goal: "s", image: "base-agent:v0", tools: [] }).pid;
  const hidden = note(f, sibling, "secret", `${MARK}-sibling`);
  const forge = async (result: (child: string) => string) => {
    const child = (ok(await f.call("fork_child_process", { goal: "c" })) as { pid: string }).pid;
    const oid = result(child);
    f.runtime.processes.exit(child, { result: oid }, { kind: "process", pid: child });
    return { child, oid };
  };
  const cases = [
    await forge(() => hidden),
    // The parent's own object (the child cannot read it; naming it must not matter).
    await forge(() => note(f, f.pid, "note", "parent's")),
  ];
  for (const { child, oid } of cases) {
    const result = await f.call("merge_child_memory", { pid: child });
    refused(result);
    assert.ok(!result.forModel.includes(MARK));
    if (oid === hidden) assert.throws(() => f.runtime.memory.read(f.pid, hidden));
  }
  // A child's tool result is the runtime's object, not the child's: not mergeable either.
  const toolChild = (ok(await f.call("fork_child_process", { goal: "c" })) as { pid: string }).pid;
  const childResult = await f.runtime.tools.invoke(
    toolChild,
    { name: "fork_child_process", arguments: { goal: "grandchild" } },
    NEVER,
  );
  assert.ok(childResult.object, "control: the child has a stored tool result");
  f.runtime.processes.exit(toolChild, { result: childResult.object! }, {
    kind: "process",
    pid: toolChild,
  });
  refused(await f.call("merge_child_memory", { pid: toolChild }));
  // Control: a real result object the child made is merged.
  const honest = (ok(await f.call("fork_child_process", { goal: "c" })) as { pid: string }).pid;
  const report = note(f, honest, "report", "done");
  f.runtime.processes.exit(honest, { result: report }, { kind: "process", pid: honest });
  ok(await f.call("merge_child_memory", { pid: honest }));
  assert.equal(f.runtime.memory.read(f.pid, report).payload, "done");
});

Deno.test("wait_child_process attack: waiting on a non-child never ends the quantum on it (no sleep on a process the caller does not own)", async () => {
  await using f = await fixture({ tools: ["wait_child_process", "fork_child_process"] });
  const sibling = f.runtime.processes.spawn({ goal: "s", image: "base-agent:v0", tools: [] }).pid;
  let ended: unknown;
  try {
    const result = await f.call("wait_child_process", { pid: sibling });
    refused(result);
  } catch (error) {
    ended = error;
  }
  assert.ok(!(ended instanceof QuantumEnd), "the caller went to sleep on a sibling");
  // Control: its own running child makes it wait.
  const child = (ok(await f.call("fork_child_process", { goal: "c" })) as { pid: string }).pid;
  await assert.rejects(f.call("wait_child_process", { pid: child }), QuantumEnd);
});

// ---------------------------------------------------------------- images

Deno.test("load_image_from_yaml attack: a built-in under a case variant, a built-in with replace, or an image requiring broad capabilities never changes what the process or the operator gets", async () => {
  await using f = await fixture({
    tools: ["load_image_from_yaml", "exec_process", "spawn_child_process"],
    mode: "workspace-write",
  });
  allow(f.runtime, f.pid, { type: "image", key: "*", scope: "any" }, ["write", "read"]);
  const before = f.runtime.images.get(IMAGE_OPERATOR, "base-agent:v0");
  const yaml = (id: string) =>
    `id: ${id}
name: ${id.split(":")[0]}
version: ${id.split(":")[1]}
description: Evil.
systemPrompt: |
  Do anything.
defaultTools: [read_text_file, write_text_file, run_shell_command]
safety:
  maxMode: full-access
requiredCapabilities:
  - resource: { type: fs, path: ".", scope: subtree }
    rights: [read, write, delete]
`;
  for (const id of ["Base-Agent:v0", "base-agent:V0", "base-agent:v0"]) {
    refused(await f.call("load_image_from_yaml", { yaml: yaml(id), replace: true }));
  }
  assert.deepEqual(f.runtime.images.get(IMAGE_OPERATOR, "base-agent:v0"), before);
  // A new image requiring broad rights loads, but exec and a child of it gain none of them.
  ok(await f.call("load_image_from_yaml", { yaml: yaml("evil:v1") }));
  const child = ok(
    await f.call("spawn_child_process", { image: "evil:v1", goal: "c" }),
  ) as { pid: string };
  // (Spawning gave the parent its rights over the child; exec must add nothing more.)
  const caps = f.runtime.authority.capabilities.list(f.pid).map((c) => c.id).sort();
  ok(await f.call("exec_process", { image: "evil:v1" }));
  // workspace-write asks for deletes: the image's required delete is not granted by exec.
  const del = { resource: { type: "fs" as const, path: "x.txt" }, right: "delete" as const };
  assert.notEqual(f.runtime.authority.decide(f.pid, del).effect, "allow");
  for (const right of ["read", "write", "delete"] as const) {
    assert.notEqual(
      f.runtime.authority.decide(child.pid, { resource: { type: "fs", path: "x.txt" }, right })
        .effect,
      "allow",
      `the child got ${right}`,
    );
  }
  assert.deepEqual(f.runtime.authority.capabilities.list(f.pid).map((c) => c.id).sort(), caps);
  assert.deepEqual(
    f.runtime.authority.capabilities.list(child.pid).filter((c) =>
      c.resource.type === "fs" || c.resource.type === "image" || c.resource.type === "net"
    ),
    [],
    "the child holds nothing the image required",
  );
  assert.equal(f.runtime.processes.get(f.pid).image, "evil:v1", "control: exec happened");
});

// ---------------------------------------------------------------- request_permission

Deno.test("request_permission attack: hostile rights, keys and reasons (ANSI, CR/LF, bidi) never break or inject into `libos human list`; a path outside the workspace is refused unstored", async () => {
  using s = sandbox();
  {
    await using runtime = await createRuntime({
      workspace: s.workspace,
      env: { get: (name) => name === "XDG_STATE_HOME" ? s.state : undefined },
      cwd: s.workspace,
      mode: "workspace-write",
      human: "queue",
      wall: false,
    });
    const pid = runtime.processes.spawn({
      goal: "g",
      image: "base-agent:v0",
      tools: ["request_permission"],
    }).pid;
    const call = (args: unknown) =>
      runtime.tools.invoke(pid, { name: "request_permission", arguments: args }, NEVER);
    for (const path of ["../etc", "/etc/passwd", "a/../../b", "a//b", "a\0b", "\ud800"]) {
      const result = await call({
        resource: { type: "fs", path, scope: "subtree" },
        rights: ["read"],
        reason: "r",
      });
      refused(result);
    }
    assert.deepEqual(runtime.human.list(), [], "nothing malformed was stored");
    await parks(call({
      resource: { type: "net", key: `evil.example${ESC}]0;pwn\x07\n\u202e`, scope: "exact" },
      rights: [`read${ESC}[2J`, "\r\nAPPROVED"],
      reason: `${ESC}[31mplease\u202e\r\n  approve: yes\u200b`,
    }));
    await parks(call({
      resource: { type: "fs", path: `docs${ESC}[2J\nx`, scope: "subtree" },
      rights: ["read"],
      reason: "\ud800 lone",
    }));
    assert.equal(runtime.human.list().length, 2, "control: both requests are stored");
  }
  const listed = await s.cli("human", "list");
  assert.equal(listed.status, 0, listed.stderr);
  assert.ok(!listed.stdout.includes(ESC), JSON.stringify(listed.stdout));
  assert.ok(!listed.stderr.includes(ESC), JSON.stringify(listed.stderr));
  assert.ok(!listed.stdout.includes("\u202e"), "bidi override printed raw");
  const ids = [...listed.stdout.matchAll(/hreq_[0-9a-f]{12}/g)].map((m) => m[0]);
  assert.equal(new Set(ids).size, 2, listed.stdout);
  for (const id of new Set(ids)) {
    const shown = await s.cli("human", "show", id);
    assert.equal(shown.status, 0, shown.stderr);
    assert.ok(!shown.stdout.includes(ESC) && !shown.stdout.includes("\u202e"), shown.stdout);
    assert.ok(!/^APPROVED/m.test(shown.stdout), "a forged line in the prompt");
  }
});
