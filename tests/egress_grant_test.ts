/**
 * Egress by grant (issue 25): `libos agent --allow-host HOST[:PORT]` and `allowHosts` in
 * `config.jsonc`. The parser's table, the launcher's `--allow-net` table, the public address
 * space Deno is given for a name against the primitive's own address policy, and runs through
 * the real launcher against a local server (the operator's exact grant of `127.0.0.1:PORT` is
 * the one seam that lets the network primitive reach a loopback address, see net.ts step 4).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { UsageError } from "../runtime/base/errors.ts";
import { classifyAddress } from "../runtime/primitives/net_address.ts";
import {
  ALLOW_HOSTS_MAX,
  denoNetEntries,
  parseAllowHost,
  parseAllowHosts,
  PUBLIC_IPV4,
} from "../cli/egress_hosts.ts";
import { type BootstrapFacts, permissionFlags } from "../cli/bootstrap.ts";
import { loadUserConfig } from "../cli/user_config.ts";
import { REPO, sandbox, taskWith } from "./_cli_sandbox.ts";
import { call, final } from "./agent_fixture.ts";
import { netFixture, netOf } from "./net_fixture.ts";
import { fakeNet, type NetProvider } from "../runtime/providers/net.ts";
import { NetError } from "../runtime/primitives/net.ts";

// ------------------------------------------------------------------------------ the parser

Deno.test("parseAllowHost() brings each accepted form to the network primitive's decision key", () => {
  const cases: [string, string, number | null, boolean][] = [
    ["Example.COM", "example.com", null, false],
    ["example.com.", "example.com", null, false],
    ["docs.example.com:8443", "docs.example.com", 8443, false],
    ["bücher.example", "xn--bcher-kva.example", null, false],
    ["localhost:11434", "localhost", 11434, false],
    ["127.0.0.1:8080", "127.0.0.1", 8080, true],
    // The URL parser's IPv4 forms: the key is the canonical address a fetch URL decides on.
    ["2130706433", "127.0.0.1", null, true],
    ["0x7f.1:80", "127.0.0.1", 80, true],
    ["[2001:DB8:0:0::1]:443", "[2001:db8::1]", 443, true],
    ["[::1]", "[::1]", null, true],
    ["a_b.example", "a_b.example", null, false],
  ];
  for (const [text, host, port, literal] of cases) {
    assert.deepEqual(parseAllowHost(text, "--allow-host"), { host, port, literal }, text);
  }
});

Deno.test("parseAllowHost() refuses a scheme, path, user info, wildcard, bad port or bad label, naming the value", () => {
  const refused: [string, RegExp][] = [
    ["https://example.com", /URL scheme/],
    ["example.com/path", /path/],
    ["user@example.com", /user info/],
    ["user:pw@example.com", /user info/],
    ["*.example.com", /wildcards/],
    ["example.*", /wildcards/],
    ["example.com:0", /port/],
    ["example.com:65536", /port/],
    ["example.com:", /port/],
    ["example.com:+80", /port/],
    ["example.com:80:81", /IPv6 address in brackets/],
    ["::1", /IPv6 address in brackets/],
    ["[::1", /closing bracket/],
    ["[::1]x", /only :PORT/],
    ["[example.com]", /not a valid/],
    ["exa mple.com", /space/],
    ["example.com\n", /control/],
    ["a.com,b.com", /list separator/],
    ["ex%41mple.com", /path, query/],
    ["-bad.example", /label/],
    ["bad-.example", /label/],
    ["a..example", /label/],
    [`${"a".repeat(64)}.example`, /label/],
    ["host.123", /not a valid|number/],
    ["", /empty/],
    ["x".repeat(301), /longer than/],
  ];
  for (const [text, why] of refused) {
    assert.throws(
      () => parseAllowHost(text, "--allow-host"),
      (e: unknown) =>
        e instanceof UsageError && e.code === "usage" && why.test(e.message) &&
        e.message.includes(`--allow-host ${JSON.stringify(text.slice(0, 300))}`),
      JSON.stringify(text),
    );
  }
});

Deno.test("parseAllowHosts() drops repeats (one key per host) and refuses more than the limit", () => {
  const hosts = parseAllowHosts([
    { text: "Example.com", source: "a" },
    { text: "example.com.", source: "b" },
    { text: "example.com:443", source: "c" },
  ]);
  assert.deepEqual(hosts.map((h) => [h.host, h.port]), [["example.com", null], [
    "example.com",
    443,
  ]]);
  const many = Array.from({ length: ALLOW_HOSTS_MAX + 1 }, (_, i) => ({
    text: `h${i}.example`,
    source: "--allow-host",
  }));
  assert.throws(() => parseAllowHosts(many), (e: unknown) => e instanceof UsageError);
  assert.equal(parseAllowHosts(many.slice(1)).length, ALLOW_HOSTS_MAX);
});

Deno.test("loadUserConfig(): allowHosts is read strictly; a bad value refuses naming the file and entry", () => {
  const env = (dir: string) => ({ get: (n: string) => n === "XDG_CONFIG_HOME" ? dir : undefined });
  const text = (hosts: unknown) => JSON.stringify({ version: 1, allowHosts: hosts });
  const read = (hosts: unknown) => () => text(hosts);
  const ok = loadUserConfig(env("/cfg"), read(["Docs.Example.com", "10.0.0.5:8080"]));
  assert.deepEqual(ok.allowHosts.map((h) => [h.host, h.port]), [["docs.example.com", null], [
    "10.0.0.5",
    8080,
  ]]);
  assert.throws(
    () => loadUserConfig(env("/cfg"), read(["ok.example", "http://evil.example/"])),
    (e: unknown) =>
      e instanceof UsageError && e.message.includes("/cfg/libos/config.jsonc: allowHosts.1") &&
      e.message.includes('"http://evil.example/"'),
  );
  // Not a list of text, or too many: the strict schema refuses before any host is parsed.
  assert.throws(() => loadUserConfig(env("/cfg"), read("evil.example")));
  assert.throws(() =>
    loadUserConfig(
      env("/cfg"),
      read(Array.from({ length: ALLOW_HOSTS_MAX + 1 }, (_, i) => `h${i}.example`)),
    )
  );
});

// ------------------------------------------------------------- Deno's wall for a host name

function ipv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join(".");
}

function covered(value: number): boolean {
  return PUBLIC_IPV4.some((cidr) => {
    const [base, bits] = cidr.split("/") as [string, string];
    const start = base.split(".").reduce((n, p) => n * 256 + Number(p), 0);
    return value >= start && value < start + 2 ** (32 - Number(bits));
  });
}

Deno.test("PUBLIC_IPV4 is exactly the IPv4 space the net primitive connects to: no loopback, private, metadata or reserved address", () => {
  for (const cidr of PUBLIC_IPV4) {
    const [base, bits] = cidr.split("/") as [string, string];
    const start = base.split(".").reduce((n, p) => n * 256 + Number(p), 0);
    const last = start + 2 ** (32 - Number(bits)) - 1;
    assert.equal(classifyAddress(ipv4(start)), null, cidr);
    assert.equal(classifyAddress(ipv4(last)), null, cidr);
  }
  const refused = [
    "0.0.0.0",
    "10.1.2.3",
    "100.64.0.1",
    "127.0.0.1",
    "169.254.169.254",
    "172.16.0.1",
    "172.31.255.255",
    "192.0.0.1",
    "192.0.2.1",
    "192.88.99.1",
    "192.168.1.1",
    "198.18.0.1",
    "198.51.100.1",
    "203.0.113.1",
    "224.0.0.1",
    "255.255.255.255",
  ];
  for (const address of refused) {
    const value = address.split(".").reduce((n, p) => n * 256 + Number(p), 0);
    assert.equal(covered(value), false, address);
    assert.notEqual(classifyAddress(address), null, address);
  }
  // A property over many addresses: covered exactly when the primitive would connect.
  let seed = 0x2545f491;
  for (let i = 0; i < 20_000; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    const value = (seed ^ (seed << 7)) >>> 0;
    assert.equal(covered(value), classifyAddress(ipv4(value)) === null, ipv4(value));
  }
});

// ---------------------------------------------------------------- the launcher's --allow-net

function facts(args: string[], over: Partial<BootstrapFacts> = {}): BootstrapFacts {
  return {
    args,
    cwd: "/work",
    env: {
      get: (name: string) =>
        ({ HOME: "/home/u", OPENAI_BASE_URL: "https://api.example.com/v1" } as Record<
          string,
          string
        >)[name],
    },
    realPath: (p: string) => p,
    ...over,
  };
}

function netFlag(flags: string[]): string[] | undefined {
  const flag = flags.find((f) => f.startsWith("--allow-net="));
  return flag === undefined ? undefined : flag.slice("--allow-net=".length).split(",");
}

const PUBLIC_AT = (port: number) => PUBLIC_IPV4.map((c) => `${c}:${port}`);

Deno.test("permissionFlags(): --allow-host adds exactly its hosts to --allow-net beside the model endpoint, and nothing else", () => {
  const table: {
    name: string;
    args: string[];
    over?: Partial<BootstrapFacts>;
    net: string[] | undefined;
  }[] = [
    {
      name: "no host: the model endpoint only",
      args: ["agent", "--goal", "g"],
      net: ["api.example.com:443"],
    },
    {
      name: "an IP literal with its port: exactly that endpoint",
      args: ["agent", "--goal", "g", "--allow-host", "127.0.0.1:8080"],
      net: ["api.example.com:443", "127.0.0.1:8080"],
    },
    {
      name: "an IPv6 literal, =-form",
      args: ["agent", "--goal", "g", "--allow-host=[2001:db8::1]:8443"],
      net: ["api.example.com:443", "[2001:db8::1]:8443"],
    },
    {
      name: "an IP literal without a port: its web ports",
      args: ["agent", "--goal", "g", "--allow-host", "203.0.113.9"],
      net: ["api.example.com:443", "203.0.113.9:80", "203.0.113.9:443"],
    },
    {
      name: "a name with a port: the name (for its lookup) and the public IPv4 space at that port",
      args: ["agent", "--goal", "g", "--allow-host", "Docs.Example.com:8443"],
      net: ["api.example.com:443", "docs.example.com", ...PUBLIC_AT(8443)],
    },
    {
      name: "a name without a port: 80 and 443; two names share the address entries",
      args: ["agent", "--goal", "g", "--allow-host", "a.example", "--allow-host", "b.example"],
      net: ["api.example.com:443", "a.example", ...PUBLIC_AT(80), ...PUBLIC_AT(443), "b.example"],
    },
    {
      name: "a scripted model: no endpoint, the hosts only",
      args: ["agent", "--goal", "g", "--model", "replay:/s.jsonl", "--allow-host", "127.0.0.1:9"],
      net: ["127.0.0.1:9"],
    },
    {
      name: "a value that is not a host grants nothing (libos refuses it)",
      args: ["agent", "--goal", "g", "--allow-host", "http://evil.example/", "--allow-host", "*.x"],
      net: ["api.example.com:443"],
    },
    {
      name: "config or recorded hosts (facts.hosts) come too",
      args: ["agent", "--resume", "pid_000000000001", "--model", "replay:/s.jsonl"],
      over: { hosts: ["10.0.0.5:8080"] },
      net: ["10.0.0.5:8080"],
    },
    {
      name: "after -- an --allow-host is data",
      args: ["agent", "--goal", "g", "--model", "replay:/s.jsonl", "--", "--allow-host", "1.2.3.4"],
      net: undefined,
    },
    {
      name: "other commands take no host (run, step, policy check, human)",
      args: ["run", "--model", "replay:/s.jsonl", "--allow-host", "127.0.0.1:9"],
      over: { hosts: ["10.0.0.5:8080"] },
      net: undefined,
    },
    {
      name: "step",
      args: ["step", "pid_1", "--model", "replay:/s.jsonl", "--allow-host", "127.0.0.1:9"],
      net: undefined,
    },
    {
      name: "human approve",
      args: ["human", "approve", "hreq_1", "--allow-host", "127.0.0.1:9"],
      net: undefined,
    },
  ];
  for (const c of table) {
    assert.deepEqual(netFlag(permissionFlags(facts(c.args, c.over))), c.net, c.name);
  }
  // Never a private or loopback range for a name; never a range without a port.
  const named = netFlag(
    permissionFlags(facts(["agent", "--goal", "g", "--allow-host", "x.example"])),
  )!;
  for (const entry of named) {
    assert.ok(!/^(127|10|169\.254|192\.168)\./.test(entry), entry);
    if (entry.includes("/")) assert.match(entry, /\/\d+:(80|443)$/, entry);
  }
});

Deno.test("denoNetEntries(): an IP literal is granted exactly; a name never as a bare address range", () => {
  assert.deepEqual(denoNetEntries(parseAllowHost("127.0.0.1:5", "t")), ["127.0.0.1:5"]);
  const entries = denoNetEntries(parseAllowHost("x.example:5", "t"));
  assert.equal(entries[0], "x.example");
  assert.ok(entries.slice(1).every((e) => e.endsWith(":5")));
});

// ---------------------------------------------------------------- through the real launcher

/** A local HTTP server that counts what reaches it; `redirect` answers 302 to that URL. */
function server(redirect?: () => string) {
  const paths: string[] = [];
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    paths.push(new URL(req.url).pathname);
    return redirect
      ? new Response(null, { status: 302, headers: { location: redirect() } })
      : new Response("hello from the granted host");
  });
  return {
    paths,
    port: http.addr.port,
    url: (path: string) => `http://127.0.0.1:${http.addr.port}${path}`,
    [Symbol.asyncDispose]: () => http.shutdown(),
  };
}

/** Loads a copy of the coding agent (which offers `fetch_url`) under its own id, fetch-agent:v0. */
async function loadFetchImage(
  s: { readonly workspace: string; readonly state: string },
  env: Record<string, string>,
): Promise<void> {
  const yaml = Deno.readTextFileSync(join(REPO, "images", "coding-agent.yaml"))
    .replace("id: coding-agent:v0", "id: fetch-agent:v0")
    .replace("name: coding-agent", "name: fetch-agent");
  assert.match(yaml, /\n {2}- fetch_url\n/, "the coding agent offers fetch_url");
  Deno.writeTextFileSync(join(s.workspace, "fetch-agent.yaml"), yaml);
  const loaded = await taskWith(
    env,
    s.workspace,
    s.state,
    "libos",
    "images",
    "load",
    "fetch-agent.yaml",
  );
  assert.equal(loaded.status, 0, loaded.stderr);
}

interface NetRecord {
  readonly decision: string;
  readonly authority: string;
  readonly detail: string | null;
}

function netRecords(db: string): NetRecord[] {
  const raw = new DatabaseSync(db, { readOnly: true });
  try {
    return raw.prepare(
      "SELECT decision, authority, detail FROM audit WHERE action = 'net.fetch' ORDER BY seq",
    ).all() as unknown as NetRecord[];
  } finally {
    raw.close();
  }
}

/** The text of every stored tool result, oldest first. */
function toolResults(db: string): string[] {
  const raw = new DatabaseSync(db, { readOnly: true });
  try {
    return (raw.prepare(
      "SELECT payload FROM objects WHERE type = 'tool.result' ORDER BY created, rowid",
    ).all() as { payload: string }[]).map((r) => r.payload);
  } finally {
    raw.close();
  }
}

/** A launcher environment: a config directory of its own, no model endpoint variables. */
function launcherEnv(root: string): Record<string, string> {
  const config = join(root, "config");
  Deno.mkdirSync(join(config, "libos"), { recursive: true });
  return { XDG_CONFIG_HOME: config, HOME: join(root, "home"), OPENAI_BASE_URL: "" };
}

Deno.test({
  name:
    "libos agent --allow-host (launcher): without it a fetch never reaches the host; with it and full-access it reaches it once; a redirect to an ungranted host is refused; a walled command has no network",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    using s = sandbox();
    await using target = server();
    await using other = server();
    await using redirector = server(() => other.url("/stolen"));
    const root = join(s.workspace, "..");
    const env = launcherEnv(root);
    await loadFetchImage(s, env);
    const script = (name: string, lines: string[]) => {
      const file = join(root, `${name}.jsonl`);
      Deno.writeTextFileSync(file, lines.join("\n") + "\n");
      return `replay:${file}`;
    };
    const agent = (model: string, ...more: string[]) =>
      taskWith(
        env,
        s.workspace,
        s.state,
        "libos",
        "agent",
        "--goal",
        "fetch",
        "--image",
        "fetch-agent:v0",
        "--model",
        model,
        "--json",
        ...more,
      );

    // 1. No grant: the primitive refuses by default (no capability), nothing is sent.
    const none = await agent(
      script("none", [call("fetch_url", { url: target.url("/none") }), final("done")]),
      "--mode",
      "full-access",
      "--human",
      "none",
    );
    assert.equal(none.status, 0, none.stdout + none.stderr);
    assert.deepEqual(target.paths, []);
    assert.deepEqual(netRecords(s.dbPath()).map((r) => [r.decision, r.authority]), [[
      "deny",
      "default",
    ]]);

    // 2. Deno's wall alone: the workspace's remembered grants give the process the capability,
    // but without --allow-host the launcher's permission does not cover the host.
    const grantsFile = join(env.XDG_CONFIG_HOME!, "libos", "grants.jsonc");
    Deno.writeTextFileSync(
      grantsFile,
      JSON.stringify({
        version: 1,
        workspaces: {
          [s.workspace]: [{
            id: "grant_0123456789ab",
            resource: { type: "net", key: `127.0.0.1:${target.port}`, scope: "exact" },
            rights: ["connect"],
            scope: "exact",
            request: "hreq_0123456789ab",
            by: "human:cli",
            at: "2026-12-02T10:00:00.000Z",
          }],
        },
      }),
    );
    const walled = await agent(
      script("walled", [call("fetch_url", { url: target.url("/walled") }), final("done")]),
      "--mode",
      "full-access",
      "--human",
      "none",
    );
    Deno.removeSync(grantsFile);
    assert.equal(walled.status, 0, walled.stdout + walled.stderr);
    assert.deepEqual(target.paths, [], "Deno's wall let a request through");
    const denoWall = netRecords(s.dbPath()).at(-1)!;
    assert.equal(denoWall.decision, "allow"); // the primitive allowed: the capability
    assert.match(denoWall.detail ?? "", /"error":"request_failed"/);
    assert.match(toolResults(s.dbPath()).at(-1)!, /Requires net access to \\"127\.0\.0\.1:\d+\\"/);

    // 3. Granted, full-access: the request reaches the host exactly once.
    const granted = await agent(
      script("granted", [call("fetch_url", { url: target.url("/granted") }), final("done")]),
      "--mode",
      "full-access",
      "--human",
      "none",
      "--allow-host",
      `127.0.0.1:${target.port}`,
    );
    assert.equal(granted.status, 0, granted.stdout + granted.stderr);
    assert.deepEqual(target.paths, ["/granted"]);
    const pid = (JSON.parse(granted.stdout) as { pid: string }).pid;
    const raw = new DatabaseSync(s.dbPath(), { readOnly: true });
    const start = raw.prepare(
      "SELECT detail FROM audit WHERE pid = ? AND action = 'agent.start'",
    ).get(pid) as { detail: string };
    const caps = raw.prepare(
      "SELECT actor, resource, detail FROM audit WHERE pid = ? AND action LIKE 'capability.grant%'",
    ).all(pid) as { actor: string; resource: string; detail: string }[];
    raw.close();
    assert.deepEqual(
      (JSON.parse(start.detail) as { governance: { hosts: string[] } }).governance.hosts,
      [`127.0.0.1:${target.port}`],
    );
    assert.ok(
      caps.some((c) =>
        c.actor === "operator" && c.resource === `net:127.0.0.1:${target.port}` &&
        c.detail.includes('"rights":["connect"]')
      ),
      JSON.stringify(caps),
    );

    // 4. Granted, but the host redirects to another (ungranted) one: refused, never sent there.
    const redirected = await agent(
      script("redirect", [call("fetch_url", { url: redirector.url("/r") }), final("done")]),
      "--mode",
      "full-access",
      "--human",
      "none",
      "--allow-host",
      `127.0.0.1:${redirector.port}`,
    );
    assert.equal(redirected.status, 0, redirected.stdout + redirected.stderr);
    assert.deepEqual(redirector.paths, ["/r"]);
    assert.deepEqual(other.paths, [], "the redirect reached an ungranted host");
    const last = netRecords(s.dbPath()).at(-1)!;
    assert.deepEqual([last.decision, last.authority], ["deny", "default"]);

    // 5. workspace-write: the grant makes the host allowed by capability, the mode still asks —
    // with nobody to answer, nothing is sent.
    const asked = await agent(
      script("asked", [call("fetch_url", { url: target.url("/asked") }), final("done")]),
      "--human",
      "none",
      "--allow-host",
      `127.0.0.1:${target.port}`,
    );
    assert.equal(asked.status, 0, asked.stdout + asked.stderr);
    assert.deepEqual(target.paths, ["/granted"]);
    assert.deepEqual(
      netRecords(s.dbPath()).slice(-1).map((r) => [r.decision, r.authority]),
      [["ask", "mode:workspace-write"]],
    );

    // 6. A command inside the OS wall: still no network, though the host is granted.
    const recordsBefore = netRecords(s.dbPath()).length;
    const probe = `import urllib.request\ntry:\n    urllib.request.urlopen("${
      target.url("/shell")
    }", timeout=3)\n    print("REACHED")\nexcept Exception as e:\n    print("NO-NETWORK", type(e).__name__)\n`;
    Deno.writeTextFileSync(join(s.workspace, "probe.py"), probe);
    const shell = await agent(
      script("shell", [
        call("run_shell_command", { argv: ["python3", "probe.py"] }),
        final("done"),
      ]),
      "--mode",
      "full-access",
      "--yes",
      "--allow-host",
      `127.0.0.1:${target.port}`,
    );
    assert.equal(shell.status, 0, shell.stdout + shell.stderr);
    assert.deepEqual(target.paths, ["/granted"], "a walled command reached the granted host");
    assert.doesNotMatch(shell.stdout + shell.stderr, /REACHED/);
    const results = toolResults(s.dbPath());
    assert.match(results.at(-1)!, /NO-NETWORK/);
    assert.ok(
      netRecords(s.dbPath()).length === recordsBefore,
      "a walled command went through the network primitive",
    );
  },
});

Deno.test({
  name:
    "libos agent --resume (launcher): the recorded host is kept; another --allow-host is refused without --widen and nothing runs",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    using s = sandbox();
    await using target = server();
    await using other = server();
    const root = join(s.workspace, "..");
    const env = launcherEnv(root);
    await loadFetchImage(s, env);
    const file = join(root, "park.jsonl");
    Deno.writeTextFileSync(
      file,
      [
        call("fetch_url", { url: target.url("/after-resume") }),
        call("fetch_url", { url: other.url("/other") }),
        final("done"),
      ].join("\n") + "\n",
    );
    const agent = (...more: string[]) =>
      taskWith(
        env,
        s.workspace,
        s.state,
        "libos",
        "agent",
        "--model",
        `replay:${file}`,
        "--json",
        ...more,
      );
    // workspace-write asks; queue parks the run (exit 3) before anything is sent.
    const parked = await agent(
      "--goal",
      "fetch",
      "--image",
      "fetch-agent:v0",
      "--human",
      "queue",
      "--allow-host",
      `127.0.0.1:${target.port}`,
    );
    assert.equal(parked.status, 3, parked.stdout + parked.stderr);
    assert.deepEqual(target.paths, []);
    const pid = (JSON.parse(parked.stdout) as { pid: string }).pid;
    const records = () => netRecords(s.dbPath()).length;
    const before = records();

    const widened = await agent("--resume", pid, "--allow-host", `127.0.0.1:${other.port}`);
    assert.notEqual(widened.status, 0, widened.stdout + widened.stderr);
    const refusal = JSON.parse(widened.stdout) as { error: { code: string; message: string } };
    assert.equal(refusal.error.code, "governance_widened");
    assert.match(refusal.error.message, new RegExp(`host 127\\.0\\.0\\.1:${other.port}`));
    assert.equal(records(), before, "a refused resume decided something");
    assert.deepEqual([target.paths, other.paths], [[], []]);

    // The parked fetch approved from another process, then resumed under --widen with the new
    // host: the recorded host is still reachable (launcher permission and capability kept),
    // the approved request is sent exactly once, and the new host is reached in full-access.
    const request = (JSON.parse(parked.stdout) as { waiting: { request: string } }).waiting.request;
    const approved = await taskWith(
      env,
      s.workspace,
      s.state,
      "libos",
      "human",
      "approve",
      request,
    );
    assert.equal(approved.status, 0, approved.stdout + approved.stderr);
    const resumed = await agent(
      "--resume",
      pid,
      "--widen",
      "--mode",
      "full-access",
      "--allow-host",
      `127.0.0.1:${other.port}`,
    );
    assert.equal(resumed.status, 0, resumed.stdout + resumed.stderr);
    assert.deepEqual([target.paths, other.paths], [["/after-resume"], ["/other"]]);
  },
});

Deno.test("libos agent: a bad --allow-host or allowHosts value is a usage error naming it, and nothing is recorded", async () => {
  using s = sandbox();
  const script = join(s.workspace, "..", "s.jsonl");
  Deno.writeTextFileSync(script, final("done") + "\n");
  for (const value of ["https://evil.example/", "*.example.com", "evil.example:99999"]) {
    const run = await s.cli(
      "agent",
      "--goal",
      "g",
      "--model",
      `replay:${script}`,
      "--allow-host",
      value,
    );
    assert.equal(run.status, 2, run.stderr);
    assert.match(
      run.stderr,
      new RegExp(`--allow-host ${JSON.stringify(value).replace(/[.*?]/g, "\\$&")}`),
    );
    assert.equal(existsFile(s.dbPath()), false, "a refused run created its database");
  }
  const config = join(s.workspace, "..", "home", ".config", "libos");
  Deno.mkdirSync(config, { recursive: true });
  Deno.writeTextFileSync(
    join(config, "config.jsonc"),
    '{"version": 1, "allowHosts": ["ok.example", "user@evil.example"]}',
  );
  const run = await s.cli("agent", "--goal", "g", "--model", `replay:${script}`);
  assert.equal(run.status, 2, run.stderr);
  assert.match(run.stderr, /config\.jsonc: allowHosts\.1 "user@evil\.example" is not a host/);
  assert.equal(existsFile(s.dbPath()), false, "a refused run created its database");
});

function existsFile(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("NetPrimitive.fetch(): an address Deno's permission refuses (NotCapable, nothing sent) is skipped for the name's next address, and named as unreached", async () => {
  await using f = await netFixture();
  f.runtime.authority.capabilities.grant({
    subject: f.pid,
    resource: { type: "net", key: "dual.example:443", scope: "exact" },
    rights: ["connect"],
    effect: "allow",
    issuer: "operator:allow-host",
  });
  const sent: string[] = [];
  const inner = fakeNet({ dns: { "dual.example": ["2606:4700::1", "93.184.216.34"] } });
  const provider: NetProvider = {
    resolve: inner.resolve,
    request(request) {
      if (request.address.includes(":")) {
        return Promise.reject(
          new Deno.errors.NotCapable('Requires net access to "[2606:4700::1]:443"'),
        );
      }
      sent.push(request.address);
      return inner.request(request);
    },
  };
  const response = await netOf(f, provider).fetch(f.pid, { url: "https://dual.example/" });
  assert.equal(response.status, 200);
  assert.deepEqual(sent, ["93.184.216.34"]);
  const record = f.runtime.audit.query({ pid: f.pid, limit: 1000 })
    .filter((r) => r.action === "net.fetch").at(-1)!;
  assert.equal(record.detail?.unreached, "2606:4700::1");
  // The only address refused by Deno: the request fails, typed, with Deno's reason.
  const only = fakeNet({ dns: { "dual.example": ["2606:4700::1"] } });
  await assert.rejects(
    netOf(f, { resolve: only.resolve, request: provider.request }).fetch(f.pid, {
      url: "https://dual.example/",
    }),
    (e: unknown) =>
      e instanceof NetError && e.code === "request_failed" &&
      /Requires net access/.test(e.message),
  );
});

Deno.test("libos agent --allow-host: the start line names the hosts; the process holds exact connect endpoints (80 and 443 for a host alone), never net:*", async () => {
  using s = sandbox();
  const script = join(s.workspace, "..", "s.jsonl");
  Deno.writeTextFileSync(script, final("done") + "\n");
  const run = await s.cli(
    "agent",
    "--goal",
    "g",
    "--model",
    `replay:${script}`,
    "--human",
    "none",
    "--allow-host",
    "Docs.Example.com",
    "--allow-host",
    "[2001:db8::1]:8443",
  );
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stderr, /, hosts docs\.example\.com \[2001:db8::1\]:8443, model/);
  const raw = new DatabaseSync(s.dbPath(), { readOnly: true });
  const caps = (raw.prepare("SELECT data FROM capabilities").all() as { data: string }[])
    .map((r) =>
      JSON.parse(r.data) as {
        resource: { type: string; key?: string; scope: string };
        issuer: string;
        effect: string;
        rights: string[];
      }
    )
    .filter((c) => c.resource.type === "net");
  raw.close();
  assert.deepEqual(
    caps.map((c) => [c.resource.key, c.resource.scope, c.issuer, c.effect, c.rights.join()]).sort(),
    [
      ["[2001:db8::1]:8443", "exact", "operator:allow-host", "allow", "connect"],
      ["docs.example.com:443", "exact", "operator:allow-host", "allow", "connect"],
      ["docs.example.com:80", "exact", "operator:allow-host", "allow", "connect"],
    ],
  );
});
