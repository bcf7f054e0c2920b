/**
 * Search and fetch as models call them (issue 27): rows of arguments in the shapes coding agents
 * are trained on (Claude Code's Grep and Glob, ripgrep flags), run through the broker, each with
 * its expected result — and, on every row, no line of a denied directory, a secret-bearing file
 * or a known secret in what the model sees. Pathological patterns finish because the engine is
 * linear (a backtracking one would not return on them); fetch_url turns a local server's HTML
 * into Markdown and describes binary content.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { testRuntime } from "../testing.ts";
import { compileLinePattern } from "../runtime/base/line_pattern.ts";
import { grantNet } from "./net_fixture.ts";
import { grantFs, NEVER } from "./model_style_fixture.ts";
const SECRET = "sk-PLANTED-0123456789";

const FILES: Record<string, string> = {
  "src/app.ts": [
    'import { load } from "./util.ts";',
    "// TODO: handle errors",
    "export function loadConfig(path: string) {",
    "  return load(path);",
    "}",
    "const re = /a(b)*c [x] {1}/;",
    "",
  ].join("\n"),
  "src/util.ts": [
    "export function load(p: string) {",
    "  return Deno.readTextFileSync(p); // FIXME",
    "}",
    "",
  ].join("\n"),
  "src/view.tsx": "export const View = () => <div>todo</div>;\n",
  "docs/guide.md": "# Guide\nCall loadConfig first.\n",
  "private/notes.txt": "loadConfig: the secret plan TODO\n",
  ".env": "API_KEY=hunter2 loadConfig TODO\n",
  "config.txt": `key = ${SECRET} loadConfig\n`,
  "bin/blob.bin": "loadConfig\0\0TODO binary",
  "node_modules/dep/index.js": "// TODO: loadConfig in a dependency\n",
  ".git/COMMIT_EDITMSG": "TODO loadConfig\n",
};

/** What must never reach the model: the denied directory's, the secret file's, the secret. */
const NEVER_SHOWN = /secret plan|hunter2|sk-PLANTED/;

async function fixture(mode = "workspace-write") {
  const t = await testRuntime({
    prefix: "libos-model-search-",
    files: FILES,
    // The network tests run in full-access, where only the process's grants decide a host.
    mode,
    human: "queue",
    wall: false,
    secrets: [SECRET],
  });
  const pid = t.spawn({ tools: ["grep", "glob", "fetch_url"] });
  // The process may not read private/ (a deny capability, as an operator would set).
  grantFs({ runtime: t.runtime, pid }, "private", "subtree", "deny", ["read"]);
  return {
    ...t,
    pid,
    call: (name: string, args: Record<string, unknown>) =>
      t.runtime.tools.invoke(pid, { name, arguments: args }, NEVER),
  };
}

type Fixture = Awaited<ReturnType<typeof fixture>>;

/** The value of a call that must have succeeded. */
function ok(result: Awaited<ReturnType<Fixture["call"]>>): unknown {
  assert.ok(result.ok, result.forModel);
  return result.value;
}

interface Row {
  readonly name: string;
  readonly args: (f: Fixture) => Record<string, unknown>;
  /** The expected value (compared on the keys given), or the expected error. */
  readonly value?: Record<string, unknown>;
  readonly error?: { readonly code: string; readonly message: RegExp };
}

const m = (path: string, line: number, text: string, more: Record<string, unknown> = {}) => ({
  path,
  line,
  text,
  ...more,
});

const GREP_ROWS: readonly Row[] = [
  {
    name: "alternation",
    args: () => ({ pattern: "TODO|FIXME" }),
    value: {
      matches: [
        m("src/app.ts", 2, "// TODO: handle errors"),
        m("src/util.ts", 2, "  return Deno.readTextFileSync(p); // FIXME"),
      ],
      truncated: false,
    },
  },
  {
    name: "-i folds case",
    args: () => ({ pattern: "todo", "-i": true }),
    value: {
      matches: [
        m("src/app.ts", 2, "// TODO: handle errors"),
        m("src/view.tsx", 1, "export const View = () => <div>todo</div>;"),
      ],
    },
  },
  {
    name: "classes and a glob by name at any depth",
    args: () => ({ pattern: "function\\s+load\\w*\\(", glob: "*.ts", "-n": true }),
    value: {
      matches: [
        m("src/app.ts", 3, "export function loadConfig(path: string) {"),
        m("src/util.ts", 1, "export function load(p: string) {"),
      ],
    },
  },
  {
    name: "a glob with {a,b} alternatives",
    args: () => ({ pattern: "todo", case_insensitive: true, glob: "**/*.{tsx,md}" }),
    value: { matches: [m("src/view.tsx", 1, "export const View = () => <div>todo</div>;")] },
  },
  {
    name: "type ts takes .ts and .tsx",
    args: () => ({ pattern: "^export", type: "ts" }),
    value: {
      matches: [
        m("src/app.ts", 3, "export function loadConfig(path: string) {"),
        m("src/util.ts", 1, "export function load(p: string) {"),
        m("src/view.tsx", 1, "export const View = () => <div>todo</div>;"),
      ],
    },
  },
  {
    name: "-C gives context lines",
    args: () => ({ pattern: "return load", "-C": 1 }),
    value: {
      matches: [
        m("src/app.ts", 4, "  return load(path);", {
          before: ["export function loadConfig(path: string) {"],
          after: ["}"],
        }),
      ],
    },
  },
  {
    name: "-A and -B separately, adjacent matches not repeated",
    args: () => ({ pattern: "^(export|  return)", path: "src/util.ts", "-B": 2, "-A": 1 }),
    value: {
      matches: [
        m("src/util.ts", 1, "export function load(p: string) {"),
        m("src/util.ts", 2, "  return Deno.readTextFileSync(p); // FIXME", { after: ["}"] }),
      ],
    },
  },
  {
    name: "count per file",
    args: () => ({ pattern: "load", output_mode: "count", path: "src" }),
    value: {
      mode: "count",
      counts: [{ path: "src/app.ts", count: 3 }, { path: "src/util.ts", count: 1 }],
      total: 4,
    },
  },
  {
    name: "files_with_matches (the secret-bearing file's match is redacted text, still a match)",
    args: () => ({ pattern: "loadConfig", output_mode: "files_with_matches" }),
    value: {
      mode: "files_with_matches",
      paths: ["config.txt", "docs/guide.md", "src/app.ts"],
      binary: 1,
    },
  },
  {
    name: "literal text with regex metacharacters (fixed_strings)",
    args: () => ({ pattern: "a(b)*c [x] {1}", fixed_strings: true }),
    value: { matches: [m("src/app.ts", 6, "const re = /a(b)*c [x] {1}/;")] },
  },
  {
    name: "the original literal text argument",
    args: () => ({ text: "(b)*c" }),
    value: { matches: [m("src/app.ts", 6, "const re = /a(b)*c [x] {1}/;")] },
  },
  {
    name: "a file as path, ignoring the glob",
    args: () => ({ pattern: "FIXME", path: "src/util.ts", glob: "*.md" }),
    value: { matches: [m("src/util.ts", 2, "  return Deno.readTextFileSync(p); // FIXME")] },
  },
  {
    name: "an absolute path inside the workspace",
    args: (f) => ({ pattern: "FIXME", path: join(f.workspace, "src") }),
    value: { matches: [m("src/util.ts", 2, "  return Deno.readTextFileSync(p); // FIXME")] },
  },
  {
    name: "head_limit cuts, with a note naming the next offset",
    args: () => ({ pattern: "o", head_limit: 2 }),
    value: { truncated: true },
  },
  {
    name: "offset pages on",
    args: () => ({ pattern: "TODO|FIXME", offset: 1 }),
    value: { matches: [m("src/util.ts", 2, "  return Deno.readTextFileSync(p); // FIXME")] },
  },
  {
    name: "node_modules and .git are not entered unless named",
    args: () => ({ pattern: "loadConfig", output_mode: "files_with_matches", glob: "**/*.js" }),
    value: { paths: [] },
  },
  {
    name: "a glob naming node_modules enters it",
    args: () => ({ pattern: "TODO", glob: "node_modules/**" }),
    value: { matches: [m("node_modules/dep/index.js", 1, "// TODO: loadConfig in a dependency")] },
  },
  {
    name: "a path inside node_modules searches it",
    args: () => ({ pattern: "TODO", path: "node_modules/dep" }),
    value: { matches: [m("node_modules/dep/index.js", 1, "// TODO: loadConfig in a dependency")] },
  },
  {
    name: "invalid regex",
    args: () => ({ pattern: "loadConfig(" }),
    error: { code: "invalid_pattern", message: /missing closing \).*fixed_strings: true/ },
  },
  {
    name: "lookahead",
    args: () => ({ pattern: "load(?=Config)" }),
    error: { code: "invalid_pattern", message: /lookahead and lookbehind .* not supported/ },
  },
  {
    name: "backreference",
    args: () => ({ pattern: "(o)\\1" }),
    error: { code: "invalid_pattern", message: /backreferences/ },
  },
  {
    name: "multiline is refused",
    args: () => ({ pattern: "a.*b", multiline: true }),
    error: { code: "invalid_pattern", message: /multiline is not supported/ },
  },
  {
    name: "a line break in the pattern",
    args: () => ({ pattern: "export\\nfunction" }),
    error: { code: "invalid_pattern", message: /one line at a time/ },
  },
  {
    name: "an unknown type",
    args: () => ({ pattern: "x", type: "cobol" }),
    error: { code: "validation_failed", message: /Unknown file type "cobol"; use one of .*ts/ },
  },
  {
    name: "neither pattern nor text",
    args: () => ({ glob: "*.ts" }),
    error: { code: "invalid_arguments", message: /pattern/ },
  },
  {
    name: "a path outside the workspace",
    args: () => ({ pattern: "root", path: "../.." }),
    error: { code: "outside_workspace", message: /outside the workspace/ },
  },
];

/** The value's keys named in `expected`, compared. */
function assertHas(actual: unknown, expected: Record<string, unknown>, name: string): void {
  const value = actual as Record<string, unknown>;
  for (const [key, want] of Object.entries(expected)) {
    assert.deepEqual(value[key], want, `${name}: ${key}`);
  }
}

Deno.test("grep() as models call it: each row's result, and nothing from a denied directory, a secret-bearing file or a known secret ever shown", async () => {
  await using f = await fixture();
  for (const row of GREP_ROWS) {
    const result = await f.call("grep", row.args(f));
    assert.doesNotMatch(result.forModel, NEVER_SHOWN, row.name);
    if (row.error) {
      assert.equal(result.ok, false, `${row.name}: ${result.forModel}`);
      assert.equal(result.error?.code, row.error.code, `${row.name}: ${result.forModel}`);
      assert.match(result.error?.message ?? "", row.error.message, row.name);
      continue;
    }
    assert.ok(result.ok, `${row.name}: ${result.forModel}`);
    assertHas(result.value, row.value ?? {}, row.name);
  }
  assert.deepEqual(f.runtime.human.list(), [], "nobody was asked about the secret file");
});

Deno.test("grep() head_limit: the cut says so, and offset continues where it stopped", async () => {
  await using f = await fixture();
  const first = await f.call("grep", { pattern: "o", head_limit: 2 });
  const v = ok(first) as { matches: { path: string; line: number }[]; note: string };
  assert.equal(v.matches.length, 2);
  assert.match(v.note, /Stopped at head_limit 2: .* pass offset 2 for the next page/);
  const next = await f.call("grep", { pattern: "o", head_limit: 2, offset: 2 });
  const w = ok(next) as { matches: { path: string; line: number }[] };
  assert.equal(w.matches.length, 2);
  assert.notDeepEqual(w.matches[0], v.matches[0], "the next page, not the first again");
});

Deno.test("grep() redacts a known secret in the lines and context it returns, and matches the redacted text", async () => {
  await using f = await fixture();
  const result = await f.call("grep", { pattern: "key = ", "-A": 1 });
  assert.ok(result.ok, result.forModel);
  assert.deepEqual((ok(result) as { matches: unknown[] }).matches, [
    m("config.txt", 1, "key = [redacted] loadConfig"),
  ]);
  const probe = await f.call("grep", { pattern: "sk-PLANTED-\\d+" });
  assert.deepEqual((ok(probe) as { matches: unknown[] }).matches, [], "no oracle on the secret");
});

Deno.test("grep() from a working directory: relative paths and globs are the caller's", async () => {
  await using f = await fixture();
  f.runtime.processes.chdir(f.pid, "src");
  const result = await f.call("grep", { pattern: "FIXME", path: "." });
  assert.deepEqual((ok(result) as { matches: unknown[] }).matches, [
    m("src/util.ts", 2, "  return Deno.readTextFileSync(p); // FIXME"),
  ]);
  const glob = await f.call("glob", { pattern: "*.tsx" });
  assert.deepEqual((ok(glob) as { matches: string[] }).matches, ["src/view.tsx"]);
});

Deno.test("compileLinePattern() runs pathological patterns on a 100 KB line to the end: the engine is linear, not backtracking", () => {
  const line = "a".repeat(100_000);
  // Each of these takes exponential time in a backtracking engine on this input, so the test
  // returning at all shows the pattern ran on the linear-time engine.
  assert.equal(compileLinePattern("(a+)+b").test(line), false);
  assert.equal(compileLinePattern("(a|aa)*b").test(line), false);
  assert.equal(compileLinePattern("(a+)+$").test(line), true);
  assert.equal(compileLinePattern("(x+x+)+y").test("x".repeat(100_000)), false);
  assert.equal(compileLinePattern("(a+)+b").mayMatch(`${line}\n${line}`), false);
});

Deno.test("grep() attack: catastrophic patterns over a file of 100 KB lines finish, with no match", async () => {
  await using f = await fixture();
  Deno.writeTextFileSync(join(f.workspace, "big.txt"), `${"a".repeat(100_000)}\n`.repeat(5));
  for (const pattern of ["(a+)+b", "(a|aa)*b", "(x+x+)+y", "^(a|a?)+$b"]) {
    const result = await f.call("grep", { pattern, path: "big.txt" });
    assert.ok(result.ok, `${pattern}: ${result.forModel}`);
    assert.deepEqual((ok(result) as { matches: unknown[] }).matches, [], pattern);
  }
  const anchored = await f.call("grep", {
    pattern: "(a+)+$",
    path: "big.txt",
    output_mode: "count",
  });
  assert.deepEqual((ok(anchored) as { counts: unknown[] }).counts, [
    { path: "big.txt", count: 5 },
  ]);
});

Deno.test("glob() as models call it: newest first, {a,b} alternatives, relative to path, a cap with a note, node_modules and .git only when named; a denied directory is not listed", async () => {
  await using f = await fixture();
  const at = (p: string) => join(f.workspace, p);
  Deno.utimeSync(at("src/app.ts"), 1_000, 1_000);
  Deno.utimeSync(at("src/util.ts"), 3_000, 3_000);
  Deno.utimeSync(at("src/view.tsx"), 2_000, 2_000);
  const rows: [Record<string, unknown>, Record<string, unknown>][] = [
    [{ pattern: "**/*.ts" }, { matches: ["src/util.ts", "src/app.ts"], truncated: false }],
    [{ pattern: "src/**/*.{ts,tsx}" }, {
      matches: ["src/util.ts", "src/view.tsx", "src/app.ts"],
    }],
    [{ pattern: "*.ts", path: "src" }, { matches: ["src/util.ts", "src/app.ts"] }],
    [{ pattern: "**/*.{ts,tsx}", limit: 2 }, {
      matches: ["src/util.ts", "src/view.tsx"],
      truncated: true,
      note: "Showing the 2 newest of 3 matching files; narrow the pattern or path, or raise limit",
    }],
    [{ pattern: "**/*.txt" }, { matches: ["config.txt"] }],
    // Not entered unless named: a dependency's files, the repository's own.
    [{ pattern: "**/*.js" }, { matches: [] }],
    [{ pattern: "**/COMMIT_EDITMSG" }, { matches: [] }],
    [{ pattern: "node_modules/**/*.js" }, { matches: ["node_modules/dep/index.js"] }],
    [{ pattern: "*", path: ".git" }, { matches: [".git/COMMIT_EDITMSG"] }],
  ];
  for (const [args, expected] of rows) {
    const result = await f.call("glob", args);
    assert.ok(result.ok, result.forModel);
    assertHas(result.value, expected, JSON.stringify(args));
    assert.doesNotMatch(result.forModel, /private/, "the denied directory's files are not listed");
  }
});

// ------------------------------------------------------------------------------ fetch_url

const PAGE = `<!doctype html><html><head><title>Docs</title>
<style>body { color: red }</style><script>window.steal = "SCRIPT-BODY";</script></head>
<body><h1>Install</h1><p>Run <code>deno task ok</code>, then read <a href="/guide">the guide</a>.</p>
<ul><li>fast</li><li>safe_mode</li></ul><pre><code>deno test</code></pre></body></html>`;

function loopbackAllowed(): boolean {
  return Deno.permissions.querySync({ name: "net", host: "127.0.0.1" }).state === "granted";
}

function server(routes: Record<string, () => Response>) {
  const seen: string[] = [];
  const s = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const path = new URL(request.url).pathname;
    seen.push(path);
    return routes[path]?.() ?? new Response("missing", { status: 404 });
  });
  return { port: s.addr.port, seen, [Symbol.asyncDispose]: () => s.shutdown() };
}

Deno.test({
  name:
    "fetch_url() returns an HTML page as Markdown, text as is, binary described, and cuts at max_chars with a note",
  ignore: !loopbackAllowed(),
  async fn() {
    await using s = server({
      "/page": () =>
        new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } }),
      "/data": () => Response.json({ ok: true, items: [1, 2] }),
      "/logo.png": () =>
        new Response(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 13, 1, 2, 3]), {
          headers: { "content-type": "image/png" },
        }),
    });
    await using f = await fixture("full-access");
    grantNet(f, `127.0.0.1:${s.port}`, "exact", "allow", f.pid);
    const base = `http://127.0.0.1:${s.port}`;
    const page = await f.call("fetch_url", { url: `${base}/page` });
    assert.ok(page.ok, page.forModel);
    const v = page.value as Record<string, unknown>;
    assert.equal(v.format, "markdown");
    assert.equal(
      v.body,
      [
        "Docs",
        "",
        "# Install",
        "",
        "Run `deno task ok`, then read [the guide](/guide).",
        "",
        "-   fast",
        "-   safe_mode",
        "",
        "```",
        "deno test",
        "```",
      ].join("\n"),
    );
    assert.doesNotMatch(page.forModel, /SCRIPT-BODY|color: red/, "scripts and styles dropped");
    assert.equal(v.truncated, false);

    const data = await f.call("fetch_url", { url: `${base}/data` });
    assert.equal((ok(data) as { body: string }).body, '{"ok":true,"items":[1,2]}');
    assert.equal((ok(data) as { format: string }).format, "text");

    const png = await f.call("fetch_url", { url: `${base}/logo.png` });
    assert.deepEqual(
      [(ok(png) as { body: string }).body, (ok(png) as { format: string }).format],
      ["", "binary"],
    );
    assert.match(
      (ok(png) as { note: string }).note,
      /Binary content \(image\/png, 11 bytes\) is not shown/,
    );

    const cut = await f.call("fetch_url", { url: `${base}/page`, max_chars: 10 });
    assert.equal((ok(cut) as { body: string }).body, "Docs\n\n# In");
    assert.equal((ok(cut) as { truncated: boolean }).truncated, true);
    assert.match((ok(cut) as { note: string }).note, /cut at 10 of \d+ characters/);

    const fetchedCut = await f.call("fetch_url", { url: `${base}/page`, max_bytes: 100 });
    assert.equal((ok(fetchedCut) as { truncated: boolean }).truncated, true);
    assert.match((ok(fetchedCut) as { note: string }).note, /Only the first 100 bytes/);

    const raw = await f.call("fetch_url", { url: `${base}/page`, raw: true });
    assert.equal((ok(raw) as { body: string }).body, PAGE);
    assert.equal((ok(raw) as { format?: string }).format, undefined);
    assert.deepEqual(s.seen, ["/page", "/data", "/logo.png", "/page", "/page", "/page"]);
  },
});

Deno.test({
  name:
    "fetch_url() attack: a page nested thousands deep is reduced to its text instead of converted",
  ignore: !loopbackAllowed(),
  async fn() {
    const nested = `<html><body>${"<ul><li>deep".repeat(3000)}</body></html>`;
    await using s = server({
      "/deep": () => new Response(nested, { headers: { "content-type": "text/html" } }),
    });
    await using f = await fixture("full-access");
    grantNet(f, `127.0.0.1:${s.port}`, "exact", "allow", f.pid);
    const result = await f.call("fetch_url", { url: `http://127.0.0.1:${s.port}/deep` });
    assert.ok(result.ok, result.forModel);
    const v = result.value as { format: string; body: string; note: string };
    assert.equal(v.format, "text");
    assert.match(v.note, /nests elements deeper than 200/);
    assert.ok(v.body.startsWith("deep deep"), v.body.slice(0, 40));
  },
});

Deno.test("fetch_url() with no grant is refused before any conversion, as before (the same decision)", async () => {
  await using s = server({ "/page": () => new Response(PAGE) });
  await using f = await fixture("full-access");
  const result = await f.call("fetch_url", { url: `http://127.0.0.1:${s.port}/page` });
  assert.equal(result.ok, false);
  assert.equal(result.error?.code, "capability_denied", result.forModel);
  assert.deepEqual(s.seen, [], "the server saw no request");
});
