/**
 * The JIT validator's corpora, shared by the corpus test and the validator bench: benign tools
 * written the way models write them (`fixtures/jit_benign/*.ts`, one tool a file, its first line
 * `// args: {…}` the arguments it runs with, and a known false positive marked
 * `// known-false-positive: <reason>`), the hostile table (`fixtures/jit/hostile.jsonl`), and a
 * fake workspace that answers a benign tool's syscalls the way the real primitives shape them.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { JitRule, SyscallHandler } from "../jit/mod.ts";

const FIXTURES = fileURLToPath(new URL("./fixtures/", import.meta.url));

/** One benign tool. */
export interface BenignTool {
  readonly name: string;
  readonly source: string;
  readonly args: unknown;
  /** Why the validator refuses this benign tool, when it is a known false positive. */
  readonly knownFalsePositive?: string;
}

/** One hostile source and the rule it must raise. */
export interface HostileRow {
  readonly name: string;
  readonly rule: JitRule;
  readonly source: string;
}

/** The benign corpus, by file name. */
export function benignCorpus(): BenignTool[] {
  const dir = join(FIXTURES, "jit_benign");
  const files = [...Deno.readDirSync(dir)]
    .filter((e) => e.isFile && e.name.endsWith(".ts"))
    .map((e) => e.name)
    .sort();
  return files.map((file) => {
    const source = Deno.readTextFileSync(join(dir, file));
    const args = /^\/\/ args: (.*)$/m.exec(source)?.[1];
    if (args === undefined) throw new Error(`${file}: no "// args: {…}" line`);
    const known = /^\/\/ known-false-positive: (.*)$/m.exec(source)?.[1];
    return {
      name: file.slice(0, -".ts".length),
      source,
      args: JSON.parse(args),
      ...(known === undefined ? {} : { knownFalsePositive: known }),
    };
  });
}

/** The hostile table. */
export function hostileCorpus(): HostileRow[] {
  const text = Deno.readTextFileSync(join(FIXTURES, "jit", "hostile.jsonl"));
  return text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
}

/** The files of the fake workspace. */
const FILES: Readonly<Record<string, string>> = Object.freeze({
  "package.json": JSON.stringify(
    {
      name: "demo-app",
      version: "1.4.2",
      scripts: { test: "deno test", build: "deno task build" },
      dependencies: { zod: "^4.0.0", yaml: "^2.9.1" },
    },
    null,
    2,
  ) + "\n",
  "data.csv": "name,age,city\nAda,36,London\nLinus,28,Helsinki\nGrace,45,New York\n",
  "notes.md":
    "# Notes\n\n## Plan\nTODO: replace eval in the parser\n- [ ] write tests\n- [x] read the spec\n\n## Links\nSee https://example.com/docs and https://deno.land\n",
  "src/app.ts":
    'import { helper } from "./helper.ts";\n// TODO: drop the Deno.env call\nexport function main() {\n  return helper(Deno.env.get("HOME"));\n}\n',
  "src/helper.ts": "export function helper(x) {\n  return eval(x); // FIXME\n}\n",
  "app.log":
    "2024-05-01T10:00:00Z INFO start\n2024-05-01T10:00:01Z WARN slow disk\n2024-05-01T10:00:02Z ERROR boom: connection reset\n2024-05-01T10:00:03Z INFO done\n",
  "template.txt": "Hello {{name}}, your order {{order}} ships on {{date}}.\n",
  "config.json": JSON.stringify({ server: { port: 8080, host: "localhost" }, debug: false }),
});

/** What a glob pattern's last part matches (`*.ts`, `**\/*.md`), as the fake reads it. */
function globMatches(pattern: string): string[] {
  const last = pattern.split("/").pop() ?? "*";
  const suffix = last.startsWith("*") ? last.slice(1) : last;
  return Object.keys(FILES).filter((path) => path.endsWith(suffix));
}

/**
 * Answers a benign tool's syscalls from the fake workspace, shaped as the real primitives answer
 * (`fs.read_text` → `{path, content, …}`, `shell.run` → `{exitCode, stdout, …}`, …); a write
 * changes nothing. An unknown path is a `not_found` error, as in a real workspace.
 */
export const fakeWorkspace: SyscallHandler = (name, args) => {
  const path = typeof args.path === "string" ? args.path : ".";
  const missing = () => {
    const error = new Error(`No such file: ${path}`);
    (error as Error & { code: string }).code = "not_found";
    return Promise.reject(error);
  };
  switch (name) {
    case "fs.read_text": {
      const content = FILES[path];
      if (content === undefined) return missing();
      return Promise.resolve({
        path,
        content,
        bytes: content.length,
        size: content.length,
        truncated: false,
      });
    }
    case "fs.write_text":
      return Promise.resolve({
        path,
        bytes: String(args.content).length,
        sha256: "0".repeat(64),
        created: true,
      });
    case "fs.edit":
      return Promise.resolve({ path, replacements: 1, bytes: 10, sha256: "0".repeat(64) });
    case "fs.list": {
      const prefix = path === "." ? "" : `${path.replace(/\/$/, "")}/`;
      const names = new Map<string, "file" | "dir">();
      for (const file of Object.keys(FILES)) {
        if (!file.startsWith(prefix)) continue;
        const [first, ...rest] = file.slice(prefix.length).split("/");
        names.set(first!, rest.length > 0 ? "dir" : "file");
      }
      return Promise.resolve({
        path,
        entries: [...names].map(([n, type]) => ({ name: n, type })),
        truncated: false,
      });
    }
    case "fs.stat": {
      const content = FILES[path];
      const dir = Object.keys(FILES).some((f) => f.startsWith(`${path}/`));
      return Promise.resolve({
        path,
        exists: content !== undefined || dir,
        type: content !== undefined ? "file" : dir ? "dir" : null,
        size: content?.length ?? null,
        mtime: content === undefined ? null : 1714557600000,
      });
    }
    case "fs.glob":
      return Promise.resolve({
        matches: globMatches(String(args.pattern)),
        truncated: false,
        skipped: 0,
      });
    case "fs.grep": {
      const needle = String(args.text);
      const fold = args.ignore_case === true;
      const matches = Object.entries(FILES).flatMap(([file, content]) =>
        content.split("\n").flatMap((text, i) =>
          (fold ? text.toLowerCase().includes(needle.toLowerCase()) : text.includes(needle))
            ? [{ path: file, line: i + 1, text }]
            : []
        )
      );
      return Promise.resolve({
        matches,
        files: Object.keys(FILES).length,
        skipped: 0,
        truncated: false,
      });
    }
    case "fs.make_dir":
      return Promise.resolve({ path, created: [path] });
    case "fs.delete_file":
      return Promise.resolve({ path, deleted: true });
    case "clock.now":
      return Promise.resolve({
        iso: "2024-05-01T12:00:00.000Z",
        epochMs: 1714564800000,
        timeZone: typeof args.time_zone === "string" ? args.time_zone : "UTC",
      });
    case "clock.sleep":
      return Promise.resolve({ until: 1714564800000 + Number(args.ms) });
    case "memory.create":
      return Promise.resolve({ oid: "obj_000000000001", type: args.type, name: args.name ?? null });
    case "memory.read":
      return Promise.resolve({
        info: { oid: args.oid, type: "note" },
        payload: { text: "remember the milk" },
      });
    case "memory.list":
      return Promise.resolve([{ oid: "obj_000000000001", type: "note", name: "todo" }]);
    case "memory.update":
      return Promise.resolve({ oid: args.oid, version: 2 });
    case "human.output":
      return Promise.resolve(null);
    case "human.ask":
      return Promise.resolve("yes");
    case "shell.run": {
      const argv = Array.isArray(args.argv) ? args.argv.map(String) : [];
      const stdout = argv[0] === "git"
        ? " M src/app.ts\n?? notes.md\nA  data.csv\n"
        : argv[0] === "wc"
        ? "  4 data.csv\n"
        : `${argv.join(" ")}\n`;
      return Promise.resolve({
        exitCode: 0,
        signal: null,
        stdout,
        stderr: "",
        timedOut: false,
        argv,
      });
    }
    case "net.fetch": {
      const body = JSON.stringify({
        items: [{ id: 1, title: "first" }, { id: 2, title: "second" }],
      });
      return Promise.resolve({
        url: String(args.url),
        status: 200,
        headers: { "content-type": "application/json" },
        body,
        bytes: body.length,
        truncated: false,
        redirects: [],
      });
    }
    case "process.cwd":
      return Promise.resolve(".");
    case "process.list":
      return Promise.resolve([
        { pid: "pid_000000000002", status: "running", goal: "index the docs" },
        { pid: "pid_000000000003", status: "exited", goal: "count words" },
      ]);
    case "image.list":
      return Promise.resolve(["base", "coder"]);
    default:
      return Promise.reject(new Error(`the fake workspace has no syscall ${name}`));
  }
};
