/**
 * Red-team attacks on the network primitive `net.fetch` (runtime/primitives/net.ts, the address
 * policy in net_address.ts, the host provider in runtime/providers/net.ts). Each test names the
 * attack, attempts it (through the real host provider and local `Deno.serve` servers on
 * 127.0.0.1 where a real connection matters, the fake provider otherwise) and asserts the refusal
 * and the absence of side effects: no request reached the server, nothing was resolved, nothing
 * was audited as allowed. Written by a red-team pass over issue 9; six attacks here worked when
 * written (endpoint denies and asks skipped once the host was allowed, Unicode host rules, IPv6
 * host keys read as endpoints, custom credential headers following a redirect) and were fixed.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import type { AuditRecord } from "../runtime/audit/audit_log.ts";
import { ApprovalRequiredError, HumanPendingError } from "../runtime/base/errors.ts";
import { NetError } from "../runtime/primitives/net.ts";
import {
  fakeNet,
  hostNet,
  type NetProvider,
  type NetReply,
  type NetRequest,
} from "../runtime/providers/net.ts";
import {
  grantNet,
  netAudit,
  type NetFixture,
  netFixture,
  type NetFixtureOptions,
  netOf,
  refused,
  testHuman,
} from "./net_fixture.ts";

// --------------------------------------------------------------------------------- fixture

type Fixture = NetFixture;
const fixture = (options: NetFixtureOptions = {}) => netFixture(options);
const grant = grantNet;

function allowedAudit(f: Fixture, pid: string = f.pid): AuditRecord[] {
  return netAudit(f, pid).filter((r) => r.decision === "allow");
}

const PUBLIC = "93.184.216.34";
const OTHER = "93.184.216.35";

const DNS: Record<string, string[]> = {
  "public.example": [PUBLIC],
  "other.example": [OTHER],
  "xn--bcher-kva.example": [PUBLIC],
};

/** A reply from a scripted provider. */
function reply(status = 200, headers: Record<string, string> = {}, body = "ok"): NetReply {
  return {
    status,
    headers,
    bodyBytes: new TextEncoder().encode(body),
    truncated: false,
  };
}

// ------------------------------------------------------------------------ local servers

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
  readonly headers: Record<string, string>;
  readonly body: string;
}

interface LocalServer extends AsyncDisposable {
  readonly port: number;
  readonly seen: Seen[];
}

function localServer(
  handler: (request: Request) => Response | Promise<Response> = () => new Response("secret"),
): LocalServer {
  const seen: Seen[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      seen.push({
        method: request.method,
        host: request.headers.get("host"),
        url: request.url,
        headers: Object.fromEntries(request.headers),
        body: await request.clone().text(),
      });
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

/** A raw TCP server that answers every connection with `response` (bytes as written). */
function rawServer(response: string): LocalServer & { readonly connections: () => number } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let connections = 0;
  const open = new Set<Deno.Conn>();
  const loop = (async () => {
    for await (const conn of listener) {
      connections++;
      open.add(conn);
      (async () => {
        try {
          const buffer = new Uint8Array(65536);
          await conn.read(buffer);
          await conn.write(new TextEncoder().encode(response));
        } catch {
          /* the client went away */
        } finally {
          try {
            conn.close();
          } catch { /* already closed */ }
          open.delete(conn);
        }
      })();
    }
  })().catch(() => {});
  const port = (listener.addr as Deno.NetAddr).port;
  return {
    port,
    seen: [],
    connections: () => connections,
    async [Symbol.asyncDispose]() {
      listener.close();
      for (const conn of open) {
        try {
          conn.close();
        } catch { /* already closed */ }
      }
      await loop;
    },
  };
}

// =============================================================== confirmed bypasses

Deno.test("NetPrimitive.fetch() honours a run deny on an endpoint (--deny net:*:25) however widely the host is granted (attack: port policy bypass)", async () => {
  await using f = await fixture({ denies: ["net:*:25"] });
  grant(f, "*", "any");
  const net = fakeNet({ dns: DNS });
  await refused(
    () => netOf(f, net).fetch(f.pid, { url: "http://public.example:25/" }),
    "capability_denied",
  );
  assert.deepEqual(net.requests, [], "nothing was sent to port 25");
  assert.deepEqual(allowedAudit(f), []);
});

Deno.test("NetPrimitive.fetch() honours an exact deny capability on an endpoint when the host itself is granted (attack: port policy bypass)", async () => {
  await using f = await fixture();
  grant(f, "public.example");
  grant(f, "public.example:8080", "exact", "deny");
  const net = fakeNet({ dns: DNS });
  await refused(
    () => netOf(f, net).fetch(f.pid, { url: "http://public.example:8080/admin" }),
    "capability_denied",
  );
  assert.deepEqual(net.lookups, [], "a denied endpoint is not even resolved");
  assert.deepEqual(net.requests, []);
});

Deno.test({
  name:
    "NetPrimitive.fetch() keeps an ask rule on a loopback endpoint when net:* allows the host: a wider grant removes no human check (attack: unlock ignores ask)",
  ...LOOPBACK,
  async fn() {
    await using server = localServer();
    const rules = JSON.stringify({
      version: 1,
      rules: [{ effect: "ask", host: `*:${server.port}` }],
    });
    const url = `http://127.0.0.1:${server.port}/`;
    // Baseline: with only the exact endpoint grant, the rule asks (no human channel: refused).
    {
      await using f = await fixture({ rules });
      grant(f, `127.0.0.1:${server.port}`);
      const error = await refused(
        () => netOf(f, hostNet()).fetch(f.pid, { url }),
        "approval_required",
      );
      assert.ok(error instanceof ApprovalRequiredError);
    }
    assert.deepEqual(server.seen, [], "baseline: the ask rule holds");
    // Adding net:* (a strictly wider allow) must not lift the operator's ask on that endpoint.
    {
      await using f = await fixture({ rules });
      grant(f, `127.0.0.1:${server.port}`);
      grant(f, "*", "any");
      await refused(() => netOf(f, hostNet()).fetch(f.pid, { url }), "approval_required");
      assert.deepEqual(allowedAudit(f), []);
    }
    assert.deepEqual(server.seen, [], "the loopback service saw no request without a human");
  },
});

Deno.test("NetPrimitive.fetch() applies a deny rule written with a Unicode host name to its punycode decision key (attack: IDN policy evasion)", async () => {
  const rules = JSON.stringify({
    version: 1,
    rules: [{ effect: "deny", host: "bücher.example" }, {
      effect: "deny",
      host: "*.bücher.example",
    }],
  });
  await using f = await fixture({ rules });
  grant(f, "*", "any");
  const net = fakeNet({ dns: DNS });
  await refused(
    () => netOf(f, net).fetch(f.pid, { url: "http://bücher.example/" }),
    "capability_denied",
  );
  assert.deepEqual(net.lookups, [], "the denied host is not resolved");
  assert.deepEqual(net.requests, []);
});

Deno.test("NetPrimitive.fetch() keeps a credential header of any name (x-api-key) from a redirect to another origin (attack: credential leak by redirect)", async () => {
  await using f = await fixture();
  grant(f, "*", "any");
  const net = fakeNet({
    dns: DNS,
    handler: (r) =>
      r.address === PUBLIC
        ? { status: 302, headers: { location: "http://other.example/steal" } }
        : { status: 200, body: "got it" },
  });
  await netOf(f, net).fetch(f.pid, {
    url: "http://public.example/api",
    headers: {
      authorization: "Bearer a",
      "x-api-key": "sk-secret",
      "x-auth-token": "t-secret",
    },
  });
  assert.equal(net.requests.length, 2);
  const cross = net.requests[1]!;
  assert.equal(cross.address, OTHER);
  assert.equal(cross.headers["authorization"], undefined, "authorization is dropped");
  assert.deepEqual(
    Object.keys(cross.headers).filter((k) => k === "x-api-key" || k === "x-auth-token"),
    [],
    "API-key headers must not reach another origin either",
  );
});

// ================================================================ address spellings

Deno.test({
  name:
    "NetPrimitive.fetch() refuses loopback/unspecified spellings with net:* through the host provider (attack: SSRF encodings)",
  ...LOOPBACK,
  async fn() {
    await using server = localServer();
    const p = server.port;
    const cases: [string, string][] = [
      [`http://0.1.2.3:${p}/`, "address_forbidden"],
      [`http://0.0.0.0:${p}/`, "address_forbidden"],
      [`http://0:${p}/`, "address_forbidden"],
      [`http://[::]:${p}/`, "address_forbidden"],
      [`http://[::7f00:1]:${p}/`, "address_forbidden"],
      [`http://[::127.0.0.1]:${p}/`, "address_forbidden"],
      [`http://[::0.0.0.1]:${p}/`, "address_forbidden"],
      [`http://[::ffff:7f00:1]:${p}/`, "address_forbidden"],
      [`http://[0:0:0:0:0:ffff:127.0.0.1]:${p}/`, "address_forbidden"],
      [`http://[::ffff:0:7f00:1]:${p}/`, "address_forbidden"],
      [`http://[64:ff9b::7f00:1]:${p}/`, "address_forbidden"],
      [`http://[2002:7f00:1::]:${p}/`, "address_forbidden"],
      [`http://127.0.0.1.:${p}/`, "address_forbidden"],
      [`http://0x7f.0x0.0x0.0x1:${p}/`, "address_forbidden"],
      [`http://017700000001:${p}/`, "address_forbidden"],
      [`http://127.000.000.001:${p}/`, "address_forbidden"],
      [`http:\\\\127.0.0.1:${p}\\`, "address_forbidden"],
      [`http://127.0.0.1\t:${p}/`, "address_forbidden"],
      [`http://%31%32%37.0.0.1:${p}/`, "address_forbidden"],
      [`http://１２７.０.０.１:${p}/`, "address_forbidden"],
      [`http://LOCALHOST.:${p}/`, "address_forbidden"],
      [`http://localhost..:${p}/`, "address_forbidden"],
      [`http://public.example@127.0.0.1:${p}/`, "credentials_forbidden"],
      [`http://[fe80::1%25lo]:${p}/`, "url_invalid"],
      [`http://[fe80::1%lo]:${p}/`, "url_invalid"],
      [`http://[::1%25lo]:${p}/`, "url_invalid"],
    ];
    for (const [url, code] of cases) {
      await using f = await fixture();
      grant(f, "*", "any");
      const error = await refused(() => netOf(f, hostNet()).fetch(f.pid, { url }), code);
      assert.ok(error instanceof NetError, url);
      assert.deepEqual(allowedAudit(f), [], url);
    }
    assert.deepEqual(server.seen, [], "the loopback server saw no request");
  },
});

Deno.test("NetPrimitive.fetch() refuses a zone ID, unspecified, mapped or oversized-list private answer from the resolver (attack: DNS answers)", async () => {
  const answers: Record<string, string[]> = {
    "zone.example": ["fe80::1%eth0"],
    "zone-public.example": [PUBLIC, "fe80::1%lo"],
    "unspec.example": ["0.0.0.0"],
    "unspec6.example": ["::"],
    "mapped-hex.example": ["::ffff:7f00:1"],
    "compat.example": ["::7f00:1"],
    "zero.example": ["0.1.2.3"],
    "late-private.example": [PUBLIC, OTHER, "127.0.0.1"],
    "bracketed.example": ["[::1]"],
    "spaced.example": [" 127.0.0.1"],
    "decimal.example": ["2130706433"],
  };
  for (const host of Object.keys(answers)) {
    await using f = await fixture();
    grant(f, "*", "any");
    const net = fakeNet({ dns: answers });
    await refused(
      () => netOf(f, net).fetch(f.pid, { url: `http://${host}/` }),
      "address_forbidden",
    );
    assert.deepEqual(net.requests, [], host);
    assert.deepEqual(allowedAudit(f), [], host);
  }
});

Deno.test("NetPrimitive.fetch() never tries a private answer listed past addressesMax (attack: hide the private answer beyond the cap)", async () => {
  await using f = await fixture();
  grant(f, "many.example");
  const publics = Array.from({ length: 4 }, (_, i) => `93.184.216.${40 + i}`);
  const net = fakeNet({
    dns: { "many.example": [...publics, "127.0.0.1", "10.0.0.1"] },
    handler: () => {
      throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    },
  });
  await refused(
    () =>
      netOf(f, net, { limits: { addressesMax: 4 } }).fetch(f.pid, { url: "http://many.example/" }),
    "request_failed",
  );
  assert.deepEqual(net.requests.map((r) => r.address), publics, "only the checked answers");
});

// ============================================================ grant keys and matching

Deno.test("NetPrimitive.fetch() does not widen grants by IDN look-alikes or another process; case and a trailing dot name the same host (attack: grant confusion)", async () => {
  await using f = await fixture();
  const other = f.runtime.processes.spawn({ goal: "other", image: "base-agent:v0" }).pid;
  grant(f, "apple.example");
  grant(f, "*", "any", "allow", other);
  const net = fakeNet({
    dns: { "example.com": [PUBLIC], "public.example": [PUBLIC], "xn--pple-43d.example": [PUBLIC] },
  });
  const primitive = netOf(f, net);
  for (
    const url of [
      "http://example.com/",
      "http://public.example./",
      "http://аpple.example/", // Cyrillic а
    ]
  ) {
    await refused(() => primitive.fetch(f.pid, { url }), "capability_denied");
  }
  assert.deepEqual(net.lookups, [], "nothing was resolved");
  assert.deepEqual(net.requests, []);
  assert.deepEqual(allowedAudit(f), []);
  // Grants are stored in the decision key's form: `EXAMPLE.com` and `public.example.` are the
  // hosts their writer meant, no more.
  grant(f, "EXAMPLE.com");
  grant(f, "public.example.");
  for (const url of ["http://example.com/", "http://public.example./"]) {
    assert.equal((await primitive.fetch(f.pid, { url })).status, 200, url);
  }
  await refused(
    () => primitive.fetch(f.pid, { url: "http://аpple.example/" }),
    "capability_denied",
  );
});

Deno.test("NetPrimitive.fetch() honours a deny capability written in upper case or through net:* with a trailing-dot URL (attack: deny evasion by spelling)", async () => {
  await using f = await fixture();
  grant(f, "*", "any");
  grant(f, "PUBLIC.Example", "exact", "deny");
  const net = fakeNet({ dns: DNS });
  const primitive = netOf(f, net);
  for (
    const url of ["http://public.example/", "http://PUBLIC.EXAMPLE./", "http://public.example../"]
  ) {
    await refused(() => primitive.fetch(f.pid, { url }), "capability_denied");
  }
  assert.deepEqual(net.lookups, []);
  assert.deepEqual(net.requests, []);
});

Deno.test({
  name:
    "NetPrimitive.fetch() unlocks loopback only at the exact granted endpoint: no port-less, prefix, other-port or https default-port widening (attack: endpoint grant confusion)",
  ...LOOPBACK,
  async fn() {
    await using server = localServer();
    const p = server.port;
    {
      await using f = await fixture();
      grant(f, "127.0.0.1");
      assert.throws(() => grant(f, "127.0.0.1", "prefix"), /prefix of a host name/);
      assert.throws(() => grant(f, `127.0.0.1:${p}`, "prefix"), /prefix of a host name/);
      grant(f, "localhost");
      await refused(
        () => netOf(f, hostNet()).fetch(f.pid, { url: `http://127.0.0.1:${p}/` }),
        "address_forbidden",
      );
      await refused(
        () => netOf(f, hostNet()).fetch(f.pid, { url: `http://localhost:${p}/` }),
        "address_forbidden",
      );
    }
    {
      // An exact grant for `127.0.0.1:<p>` does not open `localhost:<p>` by name when the name is
      // not granted, nor the same address on another port or scheme default.
      await using f = await fixture();
      grant(f, `127.0.0.1:${p}`);
      await refused(
        () => netOf(f, hostNet()).fetch(f.pid, { url: `http://localhost:${p}/` }),
        "capability_denied",
      );
      await refused(
        () => netOf(f, hostNet()).fetch(f.pid, { url: `http://127.0.0.1:${p + 1}/` }),
        "capability_denied",
      );
      await refused(
        () => netOf(f, hostNet()).fetch(f.pid, { url: "http://127.0.0.1/" }),
        "capability_denied",
      );
    }
    assert.deepEqual(server.seen, []);
  },
});

Deno.test("NetPrimitive.fetch() treats a URL's omitted default port as that port for endpoint grants, and https:443 is not http:80", async () => {
  await using f = await fixture();
  grant(f, "127.0.0.1:80");
  const net = fakeNet({ dns: {} });
  const primitive = netOf(f, net);
  await primitive.fetch(f.pid, { url: "http://127.0.0.1/" });
  await primitive.fetch(f.pid, { url: "http://127.0.0.1:80/" });
  await refused(() => primitive.fetch(f.pid, { url: "https://127.0.0.1/" }), "capability_denied");
  assert.deepEqual(net.requests.map((r) => `${r.url.protocol}${r.address}:${r.port}`), [
    "http:127.0.0.1:80",
    "http:127.0.0.1:80",
  ]);
});

// ======================================================================== redirects

Deno.test({
  name:
    "NetPrimitive.fetch() re-decides every redirect from a granted loopback endpoint (attack: pivot by Location)",
  ...LOOPBACK,
  async fn() {
    await using target = localServer(() => new Response("internal"));
    const t = target.port;
    const locations: [string, string][] = [
      [`//127.0.0.1:${t}/`, "capability_denied"],
      [`http://127.0.0.1:${t}/`, "capability_denied"],
      [`http://localhost:${t}/`, "capability_denied"],
      [`http://[::1]:${t}/`, "capability_denied"],
      [`http://user:pass@127.0.0.1:${t}/`, "credentials_forbidden"],
      [`http://169.254.169.254/latest/meta-data/`, "capability_denied"],
      ["file:///etc/passwd", "redirect_invalid"],
      [`http://127.0.0.1:0/`, "port_forbidden"],
      [`http://127.0.0.1:${"9".repeat(9000)}/`, "url_invalid"],
    ];
    let location = "";
    await using entry = localServer((r) =>
      new URL(r.url).pathname === "/done"
        ? new Response("done")
        : new Response(null, { status: 302, headers: { location } })
    );
    for (const [to, code] of locations) {
      location = to;
      await using f = await fixture();
      grant(f, `127.0.0.1:${entry.port}`);
      await refused(
        () => netOf(f, hostNet()).fetch(f.pid, { url: `http://127.0.0.1:${entry.port}/` }),
        code,
      );
    }
    assert.deepEqual(target.seen, [], "the second loopback service saw no request");
    // A relative redirect stays on the granted endpoint and is followed.
    location = "/done";
    await using f = await fixture();
    grant(f, `127.0.0.1:${entry.port}`);
    const response = await netOf(f, hostNet()).fetch(f.pid, {
      url: `http://127.0.0.1:${entry.port}/`,
    });
    assert.equal(response.body, "done");
  },
});

Deno.test({
  name:
    "NetPrimitive.fetch() refuses a redirect from a public host to loopback even with net:* and a grant on another loopback port (attack: redirect SSRF)",
  ...LOOPBACK,
  async fn() {
    await using target = localServer(() => new Response("internal"));
    await using f = await fixture();
    grant(f, "*", "any");
    grant(f, `127.0.0.1:${target.port + 1}`);
    for (
      const location of [
        `http://127.0.0.1:${target.port}/`,
        `http://localhost:${target.port}/`,
        `http://[::ffff:127.0.0.1]:${target.port}/`,
        `http://2130706433:${target.port}/`,
      ]
    ) {
      const provider: NetProvider = {
        resolve: (host) =>
          host === "public.example" ? Promise.resolve([PUBLIC]) : hostNet().resolve(host),
        request: (r) =>
          r.address === PUBLIC ? Promise.resolve(reply(307, { location })) : hostNet().request(r),
      };
      await refused(
        () =>
          netOf(f, provider).fetch(f.pid, {
            url: "http://public.example/",
            method: "POST",
            body: "secret",
          }),
        "address_forbidden",
      );
    }
    assert.deepEqual(target.seen, []);
  },
});

Deno.test("NetPrimitive.fetch() re-resolves and re-checks the same host on a redirect hop (attack: DNS rebinding on hop 2)", async () => {
  await using f = await fixture();
  grant(f, "rebind.example");
  let answers = 0;
  const sent: NetRequest[] = [];
  const provider: NetProvider = {
    resolve: () => Promise.resolve(answers++ === 0 ? [PUBLIC] : [PUBLIC, "169.254.169.254"]),
    request: (r) => {
      sent.push(r);
      return Promise.resolve(reply(302, { location: "/latest/meta-data/" }));
    },
  };
  const error = await refused(
    () => netOf(f, provider).fetch(f.pid, { url: "http://rebind.example/" }),
    "address_forbidden",
  );
  assert.equal((error as NetError).address, "169.254.169.254");
  assert.deepEqual(sent.map((r) => r.address), [PUBLIC], "nothing went to the metadata address");
});

Deno.test("NetPrimitive.fetch() drops credentials on https→http and cross-port redirects and turns 303 into a body-less GET (attack: downgrade leak)", async () => {
  await using f = await fixture();
  grant(f, "public.example");
  const net = fakeNet({
    dns: DNS,
    handler: (r) =>
      r.url.protocol === "https:"
        ? { status: 307, headers: { location: "http://public.example/plain" } }
        : r.url.pathname === "/plain"
        ? { status: 308, headers: { location: "http://public.example:8080/port" } }
        : r.url.pathname === "/port"
        ? { status: 303, headers: { location: "/final" } }
        : { status: 200 },
  });
  await netOf(f, net).fetch(f.pid, {
    url: "https://public.example/start",
    method: "PUT",
    headers: { authorization: "Bearer s", cookie: "sid=1", "content-type": "text/plain" },
    body: "data",
  });
  const [tls, plain, port, final] = net.requests;
  assert.equal(tls!.headers["authorization"], "Bearer s");
  assert.equal(plain!.headers["authorization"], undefined, "not over plain http");
  assert.equal(plain!.headers["cookie"], undefined);
  assert.equal(port!.headers["authorization"], undefined);
  assert.equal(final!.method, "GET");
  assert.equal(final!.body, undefined);
  assert.equal(final!.headers["content-type"], undefined);
});

Deno.test("NetPrimitive.fetch() refuses a POST redirect that needs approval instead of asking mid-flight (attack: approval for a non-repeatable hop)", async () => {
  await using f = await fixture({ mode: "workspace-write", human: "queue" });
  grant(f, "public.example");
  grant(f, "other.example");
  const { human, asked: approvals } = testHuman(f);

  const net = fakeNet({
    dns: DNS,
    handler: (r) =>
      r.address === PUBLIC
        ? { status: 307, headers: { location: "http://other.example/x" } }
        : { status: 200 },
  });
  await refused(
    () =>
      netOf(f, net, { human }).fetch(f.pid, {
        url: "http://public.example/",
        method: "POST",
        body: "b",
      }),
    "redirect_needs_approval",
  );
  assert.equal(approvals.length, 1, "only the first hop was approved");
  assert.deepEqual(net.requests.map((r) => r.address), [PUBLIC]);
});

// ========================================================================= approvals

Deno.test("NetPrimitive.fetch() does not reuse a one-shot approval for another URL, a redirect hop or another process (attack: approval replay)", async () => {
  await using f = await fixture({ mode: "workspace-write" });
  const other = f.runtime.processes.spawn({ goal: "other", image: "base-agent:v0" }).pid;
  grant(f, "public.example");
  grant(f, "public.example", "exact", "allow", other);
  let approve = true;
  const { human, asked: approvals } = testHuman(f, () => approve);

  const net = fakeNet({
    dns: DNS,
    handler: (r) =>
      r.url.pathname === "/a" ? { status: 302, headers: { location: "/b" } } : { status: 200 },
  });
  const primitive = netOf(f, net, { human });
  await primitive.fetch(f.pid, { url: "http://public.example/a" });
  assert.equal(approvals.length, 2, "the redirect hop needed its own approval");
  // Replay: the human now refuses everything; none of the used approvals may cover anything.
  approve = false;
  for (const url of ["http://public.example/a", "http://public.example/b"]) {
    await refused(() => primitive.fetch(f.pid, { url }), "approval_required");
    await refused(() => primitive.fetch(other, { url }), "approval_required");
  }
  assert.equal(net.requests.length, 2, "only the two approved hops were sent");
});

Deno.test("NetPrimitive.fetch() in queue mode parks with nothing sent, and a human approval can never unlock a name that resolves to loopback (attack: approve a private name)", async () => {
  await using f = await fixture({ mode: "workspace-write", human: "queue" });
  grant(f, "innocent.example");
  const net = fakeNet({ dns: { "innocent.example": ["127.0.0.1"] } });
  const primitive = netOf(f, net, { human: f.runtime.human });
  await assert.rejects(
    () => primitive.fetch(f.pid, { url: "http://innocent.example/" }),
    HumanPendingError,
  );
  assert.deepEqual(net.lookups, [], "nothing resolved before the human answers");
  const [request] = f.runtime.human.list({ pid: f.pid });
  assert.ok(request);
  assert.equal(request.approval?.resource, "net:innocent.example");
  // The real channel mints a one-shot net approval bound to the request's digest: it answers the
  // ask, and never opens loopback.
  f.runtime.human.approve(request.id, { by: "operator" });
  await refused(
    () => primitive.fetch(f.pid, { url: "http://innocent.example/" }),
    "address_forbidden",
  );
  assert.deepEqual(net.requests, [], "nothing was sent to 127.0.0.1");
});

// ==================================================================== headers, bodies

Deno.test("NetPrimitive.fetch() refuses header injection and framing headers before resolving anything (attack: request smuggling)", async () => {
  await using f = await fixture();
  grant(f, "*", "any");
  const net = fakeNet({ dns: DNS });
  const primitive = netOf(f, net);
  const bad: Record<string, string>[] = [
    { "x-a": "1\r\nHost: 127.0.0.1" },
    { "x-a": "1\nx-b: 2" },
    { "x-a": "1\u0000" },
    { "x-a": "\u0085" },
    { "x-a": "é" },
    { "x a": "1" },
    { "x-a:": "1" },
    { "x-a\r\nhost": "1" },
    { "": "1" },
    { Host: "127.0.0.1" },
    { "TRANSFER-ENCODING": "chunked" },
    { "content-length": "0" },
    { connection: "keep-alive, upgrade" },
    { upgrade: "websocket" },
    { te: "trailers" },
    { expect: "100-continue" },
    { "accept-encoding": "gzip" },
    { "proxy-authorization": "Basic x" },
    { "Proxy-Connection": "x" },
    { "keep-alive": "timeout=5" },
    { trailer: "x" },
  ];
  for (const headers of bad) {
    await refused(
      () => primitive.fetch(f.pid, { url: "http://public.example/", headers }),
      "validation_failed",
    );
  }
  assert.deepEqual(net.lookups, []);
  assert.deepEqual(net.requests, []);
  assert.deepEqual(allowedAudit(f), []);
});

Deno.test({
  name:
    "hostNet() sends exactly one request with its own Host, identity encoding and connection: close (attack: header override end to end)",
  ...LOOPBACK,
  async fn() {
    await using server = localServer(() => new Response("ok"));
    await using f = await fixture();
    grant(f, `127.0.0.1:${server.port}`);
    await netOf(f, hostNet()).fetch(f.pid, {
      url: `http://127.0.0.1:${server.port}/p?q=%0d%0aX:1 2`,
      method: "POST",
      headers: { "x-forwarded-host": "evil.example", "content-type": "text/plain" },
      body: "a\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
    });
    assert.equal(server.seen.length, 1, "no smuggled second request");
    const seen = server.seen[0]!;
    assert.equal(seen.host, `127.0.0.1:${server.port}`);
    assert.equal(seen.headers["accept-encoding"], "identity");
    assert.equal(new URL(seen.url).search, "?q=%0d%0aX:1%202");
  },
});

Deno.test({
  name:
    "hostNet() caps bodies that lie, bomb or drip: Content-Length lie, gzip bomb, oversized and too many headers, slow drip (attack: resource exhaustion)",
  ...LOOPBACK,
  async fn() {
    const bomb = new Uint8Array(gzipSync(new Uint8Array(32 * 1024 * 1024)));
    const drips: ReadableStreamDefaultController<Uint8Array>[] = [];
    await using server = localServer((r) => {
      const path = new URL(r.url).pathname;
      if (path === "/gzip") {
        return new Response(bomb, { headers: { "content-encoding": "gzip" } });
      }
      if (path === "/big-header") {
        return new Response("x", { headers: { "x-big": "a".repeat(200_000) } });
      }
      if (path === "/many-headers") {
        const headers = new Headers();
        for (let i = 0; i < 300; i++) headers.append(`x-h${i}`, "v");
        return new Response("x", { headers });
      }
      return new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            drips.push(controller);
            controller.enqueue(new Uint8Array([0x61]));
          },
        }),
      );
    });
    await using liar = rawServer(
      "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: close\r\n\r\nshort",
    );
    try {
      await using f = await fixture();
      grant(f, `127.0.0.1:${server.port}`);
      grant(f, `127.0.0.1:${liar.port}`);
      const primitive = netOf(f, hostNet());
      const base = `http://127.0.0.1:${server.port}`;
      const gz = await primitive.fetch(f.pid, { url: `${base}/gzip`, maxBytes: 4096 });
      assert.equal(gz.bytes, 4096, "the compressed body is cut at maxBytes, never inflated");
      assert.equal(gz.truncated, true);
      assert.equal(gz.headers["content-encoding"], "gzip");
      await refused(() => primitive.fetch(f.pid, { url: `${base}/big-header` }), "request_failed");
      await refused(
        () => primitive.fetch(f.pid, { url: `${base}/many-headers` }),
        "request_failed",
      );
      await refused(
        () => primitive.fetch(f.pid, { url: `${base}/drip`, timeoutMs: 300 }),
        "timeout",
      );
      await refused(
        () => primitive.fetch(f.pid, { url: `http://127.0.0.1:${liar.port}/` }),
        "request_failed",
      );
    } finally {
      for (const controller of drips) {
        try {
          controller.close();
        } catch { /* the client is gone */ }
      }
    }
  },
});

// ============================================================================= audit

Deno.test("NetPrimitive.fetch() keeps header values and bodies out of the audit log and the action ledger (attack: secret leak to records)", async () => {
  await using f = await fixture();
  grant(f, "public.example");
  const net = fakeNet({ dns: DNS, handler: () => ({ status: 500, body: "boom" }) });
  await netOf(f, net).fetch(f.pid, {
    url: "http://public.example/x",
    method: "POST",
    headers: { authorization: "Bearer SECRET-TOKEN-1", cookie: "sid=SECRET-COOKIE-2" },
    body: "SECRET-BODY-3",
  });
  const records = JSON.stringify([
    f.runtime.audit.query({ limit: 10_000 }),
    f.runtime.ledger.list(f.pid),
  ]);
  for (const secret of ["SECRET-TOKEN-1", "SECRET-COOKIE-2", "SECRET-BODY-3"]) {
    assert.ok(!records.includes(secret), `${secret} is not recorded`);
  }
});

Deno.test("NetPrimitive.fetch() does not read an IPv6 literal host key ending in :443 as an endpoint for an allow rule on *:443 (attack: host/endpoint key confusion)", async () => {
  const rules = JSON.stringify({ version: 1, rules: [{ effect: "allow", host: "*:443" }] });
  await using f = await fixture({ rules });
  const net = fakeNet({ dns: DNS });
  const primitive = netOf(f, net);
  // Baseline: the rule restricts a named host to port 443.
  await primitive.fetch(f.pid, { url: "https://public.example/" });
  await refused(
    () => primitive.fetch(f.pid, { url: "http://public.example:25/" }),
    "capability_denied",
  );
  // The same restriction must hold for a public IPv6 literal whose last group is 443.
  await refused(
    () => primitive.fetch(f.pid, { url: "http://[2606:4700:4700::443]:25/" }),
    "capability_denied",
  );
  assert.deepEqual(net.requests.map((r) => `${r.address} ${r.port}`), [`${PUBLIC} 443`]);
});
