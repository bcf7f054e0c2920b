/**
 * The network provider: the host backend the network primitive (`runtime/primitives/net.ts`)
 * uses to resolve names and send one HTTP request. Primitives decide; providers only do. A
 * provider follows no redirect, applies no policy and never resolves a name on its own while
 * connecting: the primitive resolves once, checks every address, then hands the provider the
 * checked address.
 *
 * **How the host implementation pins the connection to the checked address** (no DNS
 * rebinding between check and connect) while TLS still verifies the original host name —
 * measured on Deno 2.9.6:
 *
 * - `node:http` / `node:https` `request()` is given `host: <the checked IP literal>`. A literal
 *   is never resolved, so the socket can only go to that address. A `lookup` function that can
 *   only answer with that same address is passed too, so even a code path that did look a name
 *   up would get the checked address back.
 * - The `Host` header is set explicitly to the URL's host (`setHost: false`), and for `https:`
 *   `servername` is the URL's host name: it is sent as SNI and `node:tls` verifies the server's
 *   certificate chain and its names against it (`rejectUnauthorized: true`). Measured: a server
 *   on 127.0.0.1 with a certificate for `test.example` is accepted for `https://test.example/`
 *   pinned to 127.0.0.1 and refused (`ERR_TLS_CERT_ALTNAME_INVALID`) for
 *   `https://wrong.example/` pinned to the same address; without its CA it is refused too.
 *
 * Rejected alternatives: `Deno.createHttpClient({ proxy: { transport: "tcp", hostname, port } })`
 * pins the TCP connection but then speaks plain HTTP even for an `https:` URL (measured:
 * "invalid HTTP version parsed" against a TLS server) — a silent downgrade; `fetch()` without a
 * custom client resolves the name itself (a second, unchecked resolution); `Deno.connect` +
 * `Deno.startTls({ hostname })` pins and verifies correctly but leaves an HTTP/1.1 client
 * (chunked bodies, keep-alive, header parsing) to be written by hand.
 *
 * Name resolution uses `node:dns` `lookup()` (the system resolver, `/etc/hosts` included), the
 * same answers a connection would get.
 *
 * @module
 */
import { lookup } from "node:dns/promises";
import { type IncomingMessage, request as httpRequest } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import { isIP } from "node:net";

/** The HTTP methods the network primitive sends. */
export type NetMethod = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";

/** One HTTP request, to an address the primitive has already checked. */
export interface NetRequest {
  /** The IP literal (IPv6 without brackets) to connect to — and nowhere else. */
  readonly address: string;
  readonly port: number;
  /** The checked URL: its scheme picks http or https, its host is the `Host` header and the TLS name. */
  readonly url: URL;
  readonly method: NetMethod;
  /** Request headers, lower-case names, already validated by the primitive. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array | undefined;
  /** Aborts the request (the primitive's total time cap, or its caller). */
  readonly signal: AbortSignal;
  /** Read at most this many body bytes; more is cut off and reported as `truncated`. */
  readonly maxBytes: number;
}

/** What came back (no redirect followed). */
export interface NetReply {
  readonly status: number;
  /** Lower-case names; a repeated header's values joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  /** At most `maxBytes` bytes of the body, as received (no content decoding is requested). */
  readonly bodyBytes: Uint8Array;
  /** Whether the body was longer than `maxBytes` (the connection was closed early). */
  readonly truncated: boolean;
}

/** Host network operations the network primitive needs. */
export interface NetProvider {
  /**
   * Every address a host name resolves to (IPv6 without brackets), in the resolver's order.
   * Throws when the name does not resolve.
   */
  resolve(host: string, signal?: AbortSignal): Promise<string[]>;
  /** Sends one request to `request.address` and reads at most `maxBytes` of the body. */
  request(request: NetRequest): Promise<NetReply>;
}

/** Options of {@link hostNet}. */
export interface HostNetOptions {
  /** PEM certificates trusted for `https:` (per `node:tls` `ca`); for tests with a local CA. */
  readonly caCerts?: readonly string[];
  /** The largest response head (status line and headers), in bytes (default 32 KiB). */
  readonly maxHeaderBytes?: number;
  /** The most response header lines (default 128). */
  readonly maxHeaders?: number;
}

/** The largest number of addresses {@link hostNet} returns for one name. */
const MAX_ADDRESSES = 64;

type LookupCallback = (
  error: Error | null,
  address: string | { address: string; family: number }[],
  family?: number,
) => void;

/** A `lookup` for `node:net` that can only ever answer with the checked address. */
function pinnedLookup(address: string, family: number) {
  return (_name: string, options: unknown, callback: LookupCallback) => {
    const all = typeof options === "object" && options !== null && "all" in options &&
      options.all === true;
    if (all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

function headersOf(message: IncomingMessage, max: number): Record<string, string> | undefined {
  const raw = message.rawHeaders;
  if (raw.length / 2 > max) return undefined;
  // A null-prototype record: a header named `__proto__` is just a header.
  const out: Record<string, string> = Object.create(null);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    out[name] = Object.hasOwn(out, name) ? `${out[name]}, ${value}` : value;
  }
  return out;
}

function send(req: NetRequest, options: HostNetOptions): Promise<NetReply> {
  const family = isIP(req.address);
  if (family === 0) {
    return Promise.reject(
      new TypeError(`The network provider connects to IP addresses only, not ${req.address}`),
    );
  }
  if (req.signal.aborted) return Promise.reject(req.signal.reason);
  const secure = req.url.protocol === "https:";
  const name = req.url.hostname.startsWith("[") ? req.url.hostname.slice(1, -1) : req.url.hostname;
  const headers: Record<string, string> = {
    ...req.headers,
    host: req.url.host,
    "accept-encoding": "identity",
    connection: "close",
  };
  if (req.body !== undefined) headers["content-length"] = String(req.body.length);
  const maxHeaders = options.maxHeaders ?? 128;
  const requestOptions: RequestOptions = {
    host: req.address,
    family,
    port: req.port,
    method: req.method,
    path: `${req.url.pathname}${req.url.search}`,
    headers,
    setHost: false,
    agent: false,
    lookup: pinnedLookup(req.address, family),
    maxHeaderSize: options.maxHeaderBytes ?? 32 * 1024,
    ...(secure
      ? {
        rejectUnauthorized: true,
        // SNI and certificate names: the URL's host name (an IP literal host is verified as such).
        ...(isIP(name) === 0 ? { servername: name } : {}),
        ...(options.caCerts ? { ca: [...options.caCerts] } : {}),
      }
      : {}),
  };
  return new Promise<NetReply>((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      req.signal.removeEventListener("abort", onAbort);
      fn();
    };
    const send = secure ? httpsRequest : httpRequest;
    const outgoing = send(requestOptions, (res) => {
      const replyHeaders = headersOf(res, maxHeaders);
      if (!replyHeaders) {
        outgoing.destroy();
        settle(() => reject(new RangeError(`The response has more than ${maxHeaders} headers`)));
        return;
      }
      const status = res.statusCode ?? 0;
      const chunks: Uint8Array[] = [];
      let size = 0;
      const finish = (truncated: boolean) =>
        settle(() => {
          const bodyBytes = new Uint8Array(size);
          let at = 0;
          for (const chunk of chunks) {
            bodyBytes.set(chunk, at);
            at += chunk.length;
          }
          resolve({ status, headers: replyHeaders, bodyBytes, truncated });
        });
      res.on("data", (chunk: Uint8Array) => {
        if (settled) return;
        const room = req.maxBytes - size;
        if (chunk.length > room) {
          chunks.push(chunk.subarray(0, room));
          size += room;
          finish(true);
          // Stop reading: the rest of the body is never received.
          outgoing.destroy();
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      res.on("end", () => finish(false));
      res.on("error", (error) => settle(() => reject(error)));
      res.on("close", () => {
        if (!res.complete) {
          settle(() => reject(new Error("The connection closed before the response body ended")));
        }
      });
    });
    const onAbort = () => {
      outgoing.destroy();
      settle(() => reject(req.signal.reason));
    };
    req.signal.addEventListener("abort", onAbort, { once: true });
    outgoing.on("error", (error) => settle(() => reject(error)));
    outgoing.end(req.body);
  });
}

/** The provider backed by the host's resolver and `node:http`/`node:https` (see the module notes). */
export function hostNet(options: HostNetOptions = {}): NetProvider {
  return {
    async resolve(host, signal) {
      signal?.throwIfAborted();
      const answers = await lookup(host, { all: true, order: "verbatim" });
      return answers.slice(0, MAX_ADDRESSES).map((a) => a.address);
    },
    request: (request) => send(request, options),
  };
}

/** What a {@link fakeNet} handler answers. */
export interface FakeReply {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
}

/** Options of {@link fakeNet}. */
export interface FakeNetOptions {
  /** Host name → the addresses it resolves to; any other name does not resolve. */
  readonly dns: Readonly<Record<string, readonly string[]>>;
  /** Answers a request (default: 200 with an empty body). It may wait for `request.signal`. */
  readonly handler?: (request: NetRequest) => FakeReply | Promise<FakeReply>;
}

/** A fake provider that records every lookup and request it sees. */
export interface FakeNet extends NetProvider {
  /** Every name `resolve` was asked for, in order. */
  readonly lookups: string[];
  /** Every request `request` was asked to send, in order. */
  readonly requests: NetRequest[];
}

/** A fake for tests: an in-memory resolver and a handler instead of the network. */
export function fakeNet(options: FakeNetOptions): FakeNet {
  const lookups: string[] = [];
  const requests: NetRequest[] = [];
  return {
    lookups,
    requests,
    resolve(host, signal) {
      signal?.throwIfAborted();
      lookups.push(host);
      if (!Object.hasOwn(options.dns, host)) {
        return Promise.reject(new Error(`getaddrinfo ENOTFOUND ${host}`));
      }
      return Promise.resolve([...options.dns[host]!]);
    },
    async request(request) {
      request.signal.throwIfAborted();
      requests.push(request);
      const answer = Promise.resolve(
        options.handler ? options.handler(request) : { status: 200 },
      );
      let onAbort: (() => void) | undefined;
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(request.signal.reason);
        request.signal.addEventListener("abort", onAbort, { once: true });
      });
      let reply: FakeReply;
      try {
        reply = await Promise.race([answer, aborted]);
      } finally {
        request.signal.removeEventListener("abort", onAbort!);
      }
      const body = typeof reply.body === "string"
        ? new TextEncoder().encode(reply.body)
        : reply.body ?? new Uint8Array();
      const headers: Record<string, string> = Object.create(null);
      for (const [name, value] of Object.entries(reply.headers ?? {})) {
        headers[name.toLowerCase()] = value;
      }
      return {
        status: reply.status,
        headers,
        bodyBytes: request.method === "HEAD" ? new Uint8Array() : body.slice(0, request.maxBytes),
        truncated: request.method !== "HEAD" && body.length > request.maxBytes,
      };
    },
  };
}
