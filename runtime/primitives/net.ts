/**
 * The network primitive: `net.fetch` — the only way any tool or syscall reaches the network
 * (DESIGN §2). Every hop of a request (the first one and each redirect) goes through the same
 * sequence, see {@link NetPrimitive.fetch}:
 *
 * 1. **URL** — WHATWG-parsed (which also normalises `http://2130706433/`, `http://0x7f.1/`,
 *    `http://0177.0.0.1/` and `http://127.1/` to `127.0.0.1`); only `http:` and `https:`; no
 *    user name or password; port 1–65535; the fragment is dropped.
 * 2. **decide** on `{ type: "net", key: <host> }`, right `connect`, with the request's digest.
 *    `<host>` is the URL's host name, lower-case, punycode, without a trailing dot, an IPv6
 *    literal without brackets (`::1`). When nothing decides for the host (the `default` deny),
 *    the endpoint key `<host>:<port>` (`[::1]:8123` for IPv6) is decided on instead, so an exact
 *    grant of one endpoint works by itself. Deny → audited, {@link CapabilityDeniedError}.
 * 3. A literal IP host is checked against the address policy (4) now, so a human is never asked
 *    to approve what would be refused anyway. Ask → audited, then the human channel
 *    (`human.escalate`); without a channel, {@link ApprovalRequiredError}. Names are resolved
 *    only after the decision allows: a DNS query is itself an effect that leaks the name (DNS
 *    exfiltration), so a process without authority causes none.
 * 4. **Resolve once; check every address.** Refused: loopback, unspecified, private, shared
 *    (CGNAT), link-local (cloud metadata included), multicast, broadcast, documentation,
 *    benchmarking and other reserved IPv4 ranges; for IPv6 everything outside `2000::/3` (so
 *    `::1`, `::`, IPv4-mapped/compatible/translated, `fc00::/7`, `fe80::/10`, `fec0::/10`,
 *    multicast), Teredo, documentation, ORCHID — and NAT64 (`64:ff9b::/96`) or 6to4
 *    (`2002::/16`) addresses whose embedded IPv4 address is refused. A name with one refused
 *    address among its answers is refused as a whole. See {@link classifyAddress}.
 *    **The one exception** is an explicit grant of the endpoint: a `net` capability with scope
 *    `exact`, effect allow, right `connect`, whose key is exactly `<address>:<port>`
 *    (`127.0.0.1:8123`, `[::1]:8123`) or `<host>:<port>` (`localhost:8123`) — and the endpoint
 *    key is not denied by `decide()` (rules, run denies, the mode). A wildcard (`net:*`) or
 *    prefix grant, a policy rule, or a human's one-shot approval never unlocks such an address.
 * 5. **Connect to the checked address** (never the name again; see `providers/net.ts` for how
 *    the host provider pins the connection while TLS verifies the host name), under the total
 *    time cap, reading at most `maxBytes` of the body.
 * 6. **Redirects** (301, 302, 303, 307, 308 with a `Location`) start again at 1 for the new URL,
 *    at most `maxRedirects` times. 303 (and 301/302 after a POST) become GET without a body;
 *    credentials headers are dropped when the origin changes. A redirect hop that needs a human
 *    is escalated only when the request is a GET or HEAD (an approved action is re-run from its
 *    first hop, which must be safe to repeat); otherwise it is refused.
 *
 * Every attempt is audited (`net.fetch` on `net:<host>`: allow with the address, port, status
 * and size; deny with the reason). Requests other than GET and HEAD run through the action
 * ledger when one is given (intent committed before anything is sent). Response bodies are
 * untrusted: the result carries `provenance: { source: "web", label: <host>, ref: <final URL> }`.
 *
 * @module
 */
import type { ActionLedger } from "../action_ledger.ts";
import type { Authority } from "../authority.ts";
import { digestOf, type JsonValue, sha256Hex } from "../canonical_json.ts";
import type { Action, Decision } from "../decide.ts";
import {
  ApprovalRequiredError,
  IllegalTransitionError,
  LibosError,
  type LibosErrorOptions,
  ValidationError,
} from "../errors.ts";
import { escapePreview } from "../escape_preview.ts";
import type { HumanChannel } from "../human_channel.ts";
import type { ApprovalDetails, PendingAction } from "../human_request.ts";
import type { Clock } from "../clock.ts";
import { isFinal } from "../process.ts";
import type { ProcessManager } from "../process_manager.ts";
import type { NetMethod, NetProvider, NetReply } from "../providers/net.ts";
import type { RuntimeCore } from "../runtime_core.ts";
import { cutUtf8 } from "./_fs_support.ts";

export type { NetMethod } from "../providers/net.ts";

// ------------------------------------------------------------------------------------ errors

/** Stable codes of {@link NetError}. */
export type NetErrorCode =
  | "url_invalid"
  | "scheme_forbidden"
  | "credentials_forbidden"
  | "port_forbidden"
  | "address_forbidden"
  | "dns_failed"
  | "redirect_limit"
  | "redirect_invalid"
  | "redirect_needs_approval"
  | "timeout"
  | "aborted"
  | "tls_failed"
  | "request_failed";

/** A network request refused by the URL or address policy, or one that failed on the way. */
export class NetError extends LibosError {
  declare readonly code: NetErrorCode;
  /** The refused or failing address, when there is one. */
  readonly address: string | null;
  /** For `address_forbidden`: the range the address is in, e.g. `loopback`. */
  readonly range: string | null;

  /** Builds a network error with one of the {@link NetErrorCode} codes. */
  constructor(
    code: NetErrorCode,
    message: string,
    options: LibosErrorOptions & { readonly address?: string; readonly range?: string } = {},
  ) {
    super(code, "caller", message, options);
    this.address = options.address ?? null;
    this.range = options.range ?? null;
  }
}

// ------------------------------------------------------------------------------------ limits

/** Bounds enforced inside the primitive, whatever a tool's schema says. */
export interface NetLimits {
  /** Default and largest `maxBytes` of a response body. */
  readonly responseBytes: number;
  readonly responseBytesMax: number;
  /** Default and largest total time of a request, redirects included, in milliseconds. */
  readonly timeoutMs: number;
  readonly timeoutMsMax: number;
  /** Default and largest number of redirects followed. */
  readonly redirects: number;
  readonly redirectsMax: number;
  /** Largest request body, in bytes (UTF-8). */
  readonly requestBodyBytesMax: number;
  /** Most request headers, and their largest total size (names and values). */
  readonly requestHeadersMax: number;
  readonly requestHeaderBytesMax: number;
  /** Longest URL (and redirect `Location`), in characters. */
  readonly urlCharsMax: number;
  /** Most addresses of one name that are checked (and tried); the rest are ignored. */
  readonly addressesMax: number;
}

/** The limits when nothing else is configured. */
export const DEFAULT_NET_LIMITS: NetLimits = Object.freeze({
  responseBytes: 1024 * 1024,
  responseBytesMax: 16 * 1024 * 1024,
  timeoutMs: 15_000,
  timeoutMsMax: 120_000,
  redirects: 5,
  redirectsMax: 20,
  requestBodyBytesMax: 1024 * 1024,
  requestHeadersMax: 64,
  requestHeaderBytesMax: 16 * 1024,
  urlCharsMax: 8192,
  addressesMax: 32,
});

// ------------------------------------------------------------------------------------ types

/** What `net.fetch` is asked to do. */
export interface NetFetchRequest {
  readonly url: string;
  /** Default `GET`. */
  readonly method?: NetMethod;
  /** Request headers; names are compared case-insensitively and sent lower-case. */
  readonly headers?: Readonly<Record<string, string>>;
  /** A UTF-8 text body, for POST, PUT, PATCH and DELETE. */
  readonly body?: string;
  readonly maxBytes?: number;
  readonly timeoutMs?: number;
  readonly maxRedirects?: number;
}

/** Where a response came from: untrusted web content (DESIGN §2). */
export type NetProvenance = {
  readonly source: "web";
  /** The host that sent the final response. */
  readonly label: string;
  /** The final URL. */
  readonly ref: string;
};

/** What `net.fetch` returns. */
export type NetResponse = {
  /** The final URL, after redirects. */
  readonly url: string;
  readonly status: number;
  /** A safe subset of the response headers, lower-case names. */
  readonly headers: { readonly [name: string]: string };
  /** The body as UTF-8 text (malformed bytes become U+FFFD), cut at a code point boundary. */
  readonly body: string;
  /** Bytes of the body kept. */
  readonly bytes: number;
  /** Whether the body was longer than `maxBytes`. */
  readonly truncated: boolean;
  /** Every URL a redirect led to, in order. */
  readonly redirects: readonly string[];
  readonly provenance: NetProvenance;
};

/** What the primitive needs. */
export interface NetPrimitiveOptions {
  readonly core: RuntimeCore;
  readonly authority: Authority;
  readonly provider: NetProvider;
  /** Where asks go; without it an ask is an {@link ApprovalRequiredError}. */
  readonly human?: Pick<HumanChannel, "escalate">;
  /** When given, a finished or unknown process is refused. */
  readonly processes?: ProcessManager;
  /** When given, requests other than GET and HEAD are recorded through it (at most once). */
  readonly ledger?: ActionLedger;
  readonly limits?: Partial<NetLimits>;
}

// --------------------------------------------------------------------------- addresses

/** A parsed IP address. */
export interface IpAddress {
  readonly family: 4 | 6;
  /** 4 or 16 bytes, network order. */
  readonly bytes: Uint8Array;
}

/** A range of addresses the primitive does not connect to. */
export interface ForbiddenRange {
  /** What it is, e.g. `loopback`, `private`, `link-local (cloud metadata)`. */
  readonly name: string;
  /** The range, e.g. `127.0.0.0/8`. */
  readonly cidr: string;
}

function digitOf(code: number, radix: number): number {
  let d = -1;
  if (code >= 0x30 && code <= 0x39) d = code - 0x30;
  else if (code >= 0x61 && code <= 0x66) d = code - 0x61 + 10;
  else if (code >= 0x41 && code <= 0x46) d = code - 0x41 + 10;
  return d >= 0 && d < radix ? d : -1;
}

/** One part of a WHATWG IPv4 address: decimal, `0x` hexadecimal or `0`-prefixed octal. */
function ipv4Part(part: string): number | undefined {
  if (part === "" || part.length > 34) return undefined;
  let radix = 10;
  let start = 0;
  if (part.length >= 2 && part[0] === "0" && (part[1] === "x" || part[1] === "X")) {
    radix = 16;
    start = 2;
  } else if (part.length >= 2 && part[0] === "0") {
    radix = 8;
    start = 1;
  }
  let value = 0;
  for (let i = start; i < part.length; i++) {
    const d = digitOf(part.charCodeAt(i), radix);
    if (d < 0) return undefined;
    value = value * radix + d;
    if (value > 0xffffffff) return undefined;
  }
  return value;
}

/**
 * An IPv4 address in any form the WHATWG URL parser (and `inet_aton`) accepts: one to four
 * parts, each decimal, hexadecimal or octal, the last filling the remaining bytes
 * (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1` are all 127.0.0.1).
 */
function parseIPv4(text: string): Uint8Array | undefined {
  if (text === "" || text.length > 64) return undefined;
  const parts = text.split(".");
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  if (parts.length > 4) return undefined;
  const numbers: number[] = [];
  for (const part of parts) {
    const n = ipv4Part(part);
    if (n === undefined) return undefined;
    numbers.push(n);
  }
  const last = numbers.pop()!;
  if (numbers.some((n) => n > 255) || last >= 256 ** (4 - numbers.length)) return undefined;
  let value = last;
  numbers.forEach((n, i) => value += n * 256 ** (3 - i));
  return new Uint8Array([value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255]);
}

/** A strict dotted-decimal IPv4 address (the tail of an IPv6 address). */
function parseDottedQuad(text: string): Uint8Array | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (const [i, part] of parts.entries()) {
    if (part === "" || part.length > 3 || (part.length > 1 && part[0] === "0")) return undefined;
    let n = 0;
    for (let j = 0; j < part.length; j++) {
      const d = digitOf(part.charCodeAt(j), 10);
      if (d < 0) return undefined;
      n = n * 10 + d;
    }
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

/** An IPv6 address (RFC 4291 text, no zone, no brackets). */
function parseIPv6(text: string): Uint8Array | undefined {
  if (text.length < 2 || text.length > 45) return undefined;
  const groups: number[] = [];
  let compress = -1;
  let i = 0;
  if (text.startsWith("::")) {
    compress = 0;
    i = 2;
  } else if (text[0] === ":") return undefined;
  while (i < text.length) {
    if (groups.length === 8) return undefined;
    let j = i;
    let value = 0;
    while (j < text.length && j - i < 4) {
      const d = digitOf(text.charCodeAt(j), 16);
      if (d < 0) break;
      value = value * 16 + d;
      j++;
    }
    if (text[j] === ".") {
      if (groups.length > 6) return undefined;
      const v4 = parseDottedQuad(text.slice(i));
      if (!v4) return undefined;
      groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      break;
    }
    if (j === i) return undefined;
    groups.push(value);
    i = j;
    if (i === text.length) break;
    if (text[i] !== ":") return undefined;
    i++;
    if (text[i] === ":") {
      if (compress !== -1) return undefined;
      compress = groups.length;
      i++;
    } else if (i === text.length) return undefined;
  }
  if (compress === -1 ? groups.length !== 8 : groups.length > 7) return undefined;
  const full = compress === -1 ? groups : [
    ...groups.slice(0, compress),
    ...new Array<number>(8 - groups.length).fill(0),
    ...groups.slice(compress),
  ];
  const out = new Uint8Array(16);
  full.forEach((g, k) => {
    out[2 * k] = g >>> 8;
    out[2 * k + 1] = g & 255;
  });
  return out;
}

/**
 * Parses an IP address: IPv4 in any WHATWG/`inet_aton` form, IPv6 with or without brackets.
 * Returns `undefined` for anything else (a host name; an IPv6 zone such as `%eth0`).
 */
export function parseIp(text: string): IpAddress | undefined {
  if (typeof text !== "string") return undefined;
  const bare = text.length > 2 && text.startsWith("[") && text.endsWith("]")
    ? text.slice(1, -1)
    : text;
  if (bare.includes(":")) {
    const bytes = parseIPv6(bare);
    return bytes ? { family: 6, bytes } : undefined;
  }
  const bytes = parseIPv4(bare);
  return bytes ? { family: 4, bytes } : undefined;
}

function groupsOf(ip: IpAddress): number[] {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((ip.bytes[i]! << 8) | ip.bytes[i + 1]!);
  return groups;
}

/** The canonical text of an address: dotted decimal, or RFC 5952 IPv6 (no brackets). */
export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) return [...ip.bytes].join(".");
  const groups = groupsOf(ip);
  // The longest run of at least two zero groups (the first on a tie) becomes "::".
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(":");
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

function v4Range(b: Uint8Array): ForbiddenRange | null {
  const [a = 0, x = 0, c = 0, d = 0] = b;
  if (a === 0) return { name: "unspecified (this network)", cidr: "0.0.0.0/8" };
  if (a === 10) return { name: "private", cidr: "10.0.0.0/8" };
  if (a === 100 && (x & 0xc0) === 64) return { name: "shared (CGNAT)", cidr: "100.64.0.0/10" };
  if (a === 127) return { name: "loopback", cidr: "127.0.0.0/8" };
  if (a === 169 && x === 254) {
    return c === 169 && d === 254
      ? { name: "link-local (cloud metadata)", cidr: "169.254.169.254/32" }
      : { name: "link-local", cidr: "169.254.0.0/16" };
  }
  if (a === 172 && (x & 0xf0) === 16) return { name: "private", cidr: "172.16.0.0/12" };
  if (a === 192 && x === 0 && c === 0) {
    return { name: "reserved (IETF protocol assignments)", cidr: "192.0.0.0/24" };
  }
  if (a === 192 && x === 0 && c === 2) return { name: "documentation", cidr: "192.0.2.0/24" };
  if (a === 192 && x === 88 && c === 99) {
    return { name: "reserved (6to4 relay anycast)", cidr: "192.88.99.0/24" };
  }
  if (a === 192 && x === 168) return { name: "private", cidr: "192.168.0.0/16" };
  if (a === 198 && (x & 0xfe) === 18) return { name: "benchmarking", cidr: "198.18.0.0/15" };
  if (a === 198 && x === 51 && c === 100) {
    return { name: "documentation", cidr: "198.51.100.0/24" };
  }
  if (a === 203 && x === 0 && c === 113) return { name: "documentation", cidr: "203.0.113.0/24" };
  if (a >= 224 && a <= 239) return { name: "multicast", cidr: "224.0.0.0/4" };
  if (a === 255 && x === 255 && c === 255 && d === 255) {
    return { name: "broadcast", cidr: "255.255.255.255/32" };
  }
  if (a >= 240) return { name: "reserved", cidr: "240.0.0.0/4" };
  return null;
}

/** The IPv4 address embedded in an IPv6 one at byte `offset`, classified. */
function embedded(ip: IpAddress, offset: number, via: string, cidr: string): ForbiddenRange | null {
  const inner = v4Range(ip.bytes.subarray(offset, offset + 4));
  if (!inner) return null;
  const v4 = [...ip.bytes.subarray(offset, offset + 4)].join(".");
  return { name: `${via} of ${v4}, ${inner.name}`, cidr: `${cidr} (${inner.cidr})` };
}

function v6Range(ip: IpAddress): ForbiddenRange | null {
  const g = groupsOf(ip);
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 8)) return { name: "unspecified", cidr: "::/128" };
  if (zero(0, 7) && g[7] === 1) return { name: "loopback", cidr: "::1/128" };
  if (zero(0, 5) && g[5] === 0xffff) {
    const v4 = [...ip.bytes.subarray(12)].join(".");
    return { name: `IPv4-mapped (${v4})`, cidr: "::ffff:0:0/96" };
  }
  if (zero(0, 6)) return { name: "IPv4-compatible (deprecated)", cidr: "::/96" };
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) {
    return { name: "IPv4-translated", cidr: "::ffff:0:0:0/96" };
  }
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) {
    return embedded(ip, 12, "NAT64", "64:ff9b::/96");
  }
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) {
    return { name: "local-use NAT64", cidr: "64:ff9b:1::/48" };
  }
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return { name: "private (unique local)", cidr: "fc00::/7" };
  if ((first & 0xffc0) === 0xfe80) return { name: "link-local", cidr: "fe80::/10" };
  if ((first & 0xffc0) === 0xfec0) return { name: "site-local (deprecated)", cidr: "fec0::/10" };
  if ((first & 0xff00) === 0xff00) return { name: "multicast", cidr: "ff00::/8" };
  if ((first & 0xe000) !== 0x2000) {
    return { name: "reserved (not global unicast)", cidr: "not in 2000::/3" };
  }
  if (first === 0x2001 && g[1] === 0) return { name: "Teredo", cidr: "2001::/32" };
  if (first === 0x2001 && g[1] === 0xdb8) return { name: "documentation", cidr: "2001:db8::/32" };
  if (first === 0x2001 && g[1] === 2 && g[2] === 0) {
    return { name: "benchmarking", cidr: "2001:2::/48" };
  }
  if (first === 0x2001 && ((g[1]! & 0xfff0) === 0x10 || (g[1]! & 0xfff0) === 0x20)) {
    return { name: "ORCHID", cidr: "2001:10::/28, 2001:20::/28" };
  }
  if (first === 0x3fff && (g[1]! & 0xf000) === 0) {
    return { name: "documentation", cidr: "3fff::/20" };
  }
  if (first === 0x2002) return embedded(ip, 2, "6to4", "2002::/16");
  return null;
}

/**
 * The forbidden range an address is in, or `null` for an address the primitive may connect to.
 * Text that is not an IP address is refused too (fail closed).
 */
export function classifyAddress(address: IpAddress | string): ForbiddenRange | null {
  const ip = typeof address === "string" ? parseIp(address) : address;
  if (!ip) return { name: "not an IP address", cidr: "-" };
  return ip.family === 4 ? v4Range(ip.bytes) : v6Range(ip);
}

// ----------------------------------------------------------------------------- helpers

const METHODS: readonly NetMethod[] = Object.freeze([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
]);

/** Headers a caller may not set: the provider owns framing, the host and the encoding. */
const RESERVED_HEADERS: readonly string[] = Object.freeze([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "expect",
  "accept-encoding",
]);

/** Response headers handed back (the rest — cookies, server details — are dropped). */
const SAFE_RESPONSE_HEADERS: readonly string[] = Object.freeze([
  "content-type",
  "content-length",
  "content-language",
  "content-encoding",
  "content-disposition",
  "last-modified",
  "etag",
  "cache-control",
  "expires",
  "date",
  "age",
  "vary",
  "location",
  "retry-after",
]);

/** Headers that carry credentials, dropped when a redirect changes the origin. */
const CREDENTIAL_HEADERS: readonly string[] = Object.freeze(["authorization", "cookie"]);

/** Headers that describe a body, dropped when a redirect turns the request into a GET. */
const BODY_HEADERS: readonly string[] = Object.freeze([
  "content-type",
  "content-language",
  "content-encoding",
  "content-location",
]);

const REDIRECT_STATUSES: readonly number[] = Object.freeze([301, 302, 303, 307, 308]);

/** Error codes of a connection that never reached the server (another address may be tried). */
const UNREACHED: readonly string[] = Object.freeze([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "EAFNOSUPPORT",
]);

/** The longest response header value handed back. */
const HEADER_VALUE_MAX = 2048;

/** The RFC 9110 `tchar` set of a header name. */
function isToken(name: string): boolean {
  if (name === "" || name.length > 256) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    const alnum = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
    if (!alnum && !"!#$%&'*+-.^_`|~".includes(name[i]!)) return false;
  }
  return true;
}

/** Visible ASCII, space and tab only: no CR, LF, NUL or anything a header could be split with. */
function isHeaderValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c !== 0x09 && (c < 0x20 || c > 0x7e)) return false;
  }
  return true;
}

/** A null-prototype record: a header called `__proto__` is just a header. */
function record(entries: Iterable<[string, string]> = []): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of entries) out[k] = v;
  return out;
}

/** Untrusted text as it may appear in a message or an audit record: escaped and cut. */
function shown(text: string, max = 300): string {
  return escapePreview(text, { maxChars: max });
}

function errorCode(error: unknown): string {
  if (typeof error === "object" && error !== null && "code" in error) {
    return String((error as { code: unknown }).code);
  }
  return "";
}

function isTlsFailure(error: unknown): boolean {
  const code = errorCode(error);
  return code.startsWith("ERR_TLS_") || code.startsWith("ERR_SSL_") || code.includes("CERT") ||
    code.startsWith("UNABLE_TO_") || code === "HOSTNAME_MISMATCH";
}

/**
 * The total time cap, on the runtime's clock (a fake clock in tests): armed at the first
 * network step — time spent waiting for a human does not count — and disposed when the request
 * ends.
 */
class Deadline implements Disposable {
  readonly #controller = new AbortController();
  /** Stops the clock's sleep when the request ends first. */
  readonly #stop = new AbortController();
  readonly #ms: number;
  readonly #clock: Clock;
  readonly #outer: AbortSignal | undefined;
  readonly #onOuter = () => this.#controller.abort(this.#outer?.reason);
  #armed = false;

  constructor(ms: number, clock: Clock, outer: AbortSignal | undefined) {
    this.#ms = ms;
    this.#clock = clock;
    this.#outer = outer;
    if (outer?.aborted) this.#controller.abort(outer.reason);
    else outer?.addEventListener("abort", this.#onOuter, { once: true });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  arm(): void {
    if (this.#armed || this.#controller.signal.aborted) return;
    this.#armed = true;
    this.#clock.sleep(this.#ms, this.#stop.signal).then(
      () =>
        this.#controller.abort(
          new NetError("timeout", `The request took longer than its ${this.#ms} ms limit`),
        ),
      () => {/* the request ended first */},
    );
  }

  /** The typed error for an aborted request: the timeout itself, or `aborted` by the caller. */
  failure(): NetError {
    const reason: unknown = this.#controller.signal.reason;
    if (reason instanceof NetError) return reason;
    return new NetError("aborted", "The request was aborted by its caller", { cause: reason });
  }

  [Symbol.dispose](): void {
    this.#stop.abort();
    this.#outer?.removeEventListener("abort", this.#onOuter);
  }
}

/** Waits for `promise` unless `signal` aborts first. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  let onAbort: () => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() =>
    signal.removeEventListener("abort", onAbort)
  );
}

// ------------------------------------------------------------------------------ primitive

/** One hop's URL, parsed and checked for scheme, credentials and port. */
interface Target {
  /** The URL without its fragment. */
  readonly url: URL;
  /** The decision key: host name or canonical IP text (IPv6 without brackets). */
  readonly host: string;
  readonly port: number;
  /** `<host>:<port>`, `[<ipv6>]:<port>`. */
  readonly endpoint: string;
  /** Set when the host is an IP literal. */
  readonly literal: IpAddress | undefined;
}

/** What one hop sends. */
interface Hop {
  readonly method: NetMethod;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array | undefined;
  readonly bodyText: string | undefined;
  readonly bodySha256: string | null;
}

/** A checked address of a hop, with the capability that unlocked it when it is forbidden. */
interface Checked {
  readonly address: string;
  readonly unlock: Decision | undefined;
}

/** The validated arguments of a call. */
interface Call {
  readonly method: NetMethod;
  readonly headers: Record<string, string>;
  readonly maxBytes: number;
  readonly timeoutMs: number;
  readonly maxRedirects: number;
  readonly body: Uint8Array | undefined;
  /** The arguments as an approval re-dispatches them. */
  readonly args: Record<string, JsonValue>;
}

function endpointOf(ip: IpAddress | undefined, host: string, port: number): string {
  return ip?.family === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The network primitive of one runtime. */
export class NetPrimitive {
  readonly #core: RuntimeCore;
  readonly #authority: Authority;
  readonly #net: NetProvider;
  readonly #human: Pick<HumanChannel, "escalate"> | undefined;
  readonly #processes: ProcessManager | undefined;
  readonly #ledger: ActionLedger | undefined;
  readonly limits: NetLimits;

  /** Binds the primitive to a runtime. */
  constructor(options: NetPrimitiveOptions) {
    this.#core = options.core;
    this.#authority = options.authority;
    this.#net = options.provider;
    this.#human = options.human;
    this.#processes = options.processes;
    this.#ledger = options.ledger;
    this.limits = { ...DEFAULT_NET_LIMITS, ...options.limits };
  }

  // ------------------------------------------------------------------------------ checks

  #record(
    pid: string,
    host: string,
    decision: "allow" | "ask" | "deny",
    authority: string,
    extra: {
      inputDigest?: string;
      detail?: Record<string, string | number | boolean | null>;
    } = {},
  ): void {
    this.#core.audit.append({
      actor: pid,
      pid,
      action: "net.fetch",
      resource: `net:${host}`,
      decision,
      authority,
      ...extra,
    });
  }

  /** Refuses a finished or unknown process (when the primitive knows the processes). */
  #alive(pid: string): void {
    if (!this.#processes) return;
    const p = this.#processes.get(pid);
    if (isFinal(p.status)) {
      throw new IllegalTransitionError(
        "illegal_transition",
        `Process ${pid} is ${p.status} and can reach no network`,
      );
    }
  }

  #integer(name: string, value: number | undefined, fallback: number, min: number, max: number) {
    const v = value ?? fallback;
    if (!Number.isInteger(v) || v < min || v > max) {
      throw new ValidationError(`${name} must be an integer from ${min} to ${max}, got ${v}`);
    }
    return v;
  }

  /** Validates a call's arguments (before anything is decided or sent). */
  #validate(request: NetFetchRequest): Call {
    if (typeof request !== "object" || request === null) {
      throw new ValidationError("net.fetch needs a request object with a url");
    }
    if (typeof request.url !== "string") throw new ValidationError("url must be text");
    if (request.url.length > this.limits.urlCharsMax) {
      throw new ValidationError(
        `The URL is ${request.url.length} characters; the limit is ${this.limits.urlCharsMax}`,
      );
    }
    const method = request.method ?? "GET";
    if (!METHODS.includes(method)) {
      throw new ValidationError(
        `method must be one of ${METHODS.join(", ")}, got ${JSON.stringify(shown(String(method)))}`,
      );
    }
    const l = this.limits;
    const maxBytes = this.#integer(
      "maxBytes",
      request.maxBytes,
      l.responseBytes,
      1,
      l.responseBytesMax,
    );
    const timeoutMs = this.#integer("timeoutMs", request.timeoutMs, l.timeoutMs, 1, l.timeoutMsMax);
    const maxRedirects = this.#integer(
      "maxRedirects",
      request.maxRedirects,
      l.redirects,
      0,
      l.redirectsMax,
    );
    const given = request.headers ?? {};
    if (typeof given !== "object" || given === null || Array.isArray(given)) {
      throw new ValidationError("headers must be an object of header names to text values");
    }
    const entries = Object.entries(given);
    if (entries.length > l.requestHeadersMax) {
      throw new ValidationError(
        `${entries.length} request headers; the limit is ${l.requestHeadersMax}`,
      );
    }
    const headers = record();
    let headerBytes = 0;
    for (const [rawName, value] of entries) {
      const name = rawName.toLowerCase();
      if (!isToken(name)) {
        throw new ValidationError(`Header name ${JSON.stringify(shown(rawName))} is not valid`);
      }
      if (RESERVED_HEADERS.includes(name) || name.startsWith("proxy-")) {
        throw new ValidationError(
          `Header ${JSON.stringify(name)} is set by libos itself and cannot be given`,
        );
      }
      if (typeof value !== "string" || !isHeaderValue(value)) {
        throw new ValidationError(
          `Header ${
            JSON.stringify(name)
          } must be text of visible ASCII characters, spaces and tabs (no CR, LF or NUL)`,
        );
      }
      if (Object.hasOwn(headers, name)) {
        throw new ValidationError(`Header ${JSON.stringify(name)} is given twice`);
      }
      headerBytes += name.length + value.length;
      headers[name] = value;
    }
    if (headerBytes > l.requestHeaderBytesMax) {
      throw new ValidationError(
        `The request headers take ${headerBytes} bytes; the limit is ${l.requestHeaderBytesMax}`,
      );
    }
    let body: Uint8Array | undefined;
    if (request.body !== undefined) {
      if (typeof request.body !== "string") throw new ValidationError("body must be text");
      if (method === "GET" || method === "HEAD") {
        throw new ValidationError(`A ${method} request carries no body`);
      }
      body = new TextEncoder().encode(request.body);
      if (body.length > l.requestBodyBytesMax) {
        throw new ValidationError(
          `The request body is ${body.length} bytes; the limit is ${l.requestBodyBytesMax}`,
        );
      }
    }
    const args: Record<string, JsonValue> = {
      url: request.url,
      method,
      headers: { ...headers },
      maxBytes,
      timeoutMs,
      maxRedirects,
      ...(request.body === undefined ? {} : { body: request.body }),
    };
    return { method, headers, maxBytes, timeoutMs, maxRedirects, body, args };
  }

  /** Parses and checks one hop's URL (`base` for a redirect's relative `Location`). */
  #target(pid: string, raw: string, base?: URL): Target {
    const refuse = (code: NetErrorCode, host: string, why: string): never => {
      this.#record(pid, host, "deny", "url_policy", {
        detail: { url: shown(raw, 2048), code },
      });
      throw new NetError(code, `Cannot fetch ${JSON.stringify(shown(raw))}: ${why}`);
    };
    if (raw.length > this.limits.urlCharsMax) {
      refuse("url_invalid", "", `it is longer than ${this.limits.urlCharsMax} characters`);
    }
    const url = URL.parse(raw, base);
    if (!url) return refuse("url_invalid", "", "it is not a valid URL");
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      refuse(
        base ? "redirect_invalid" : "scheme_forbidden",
        "",
        `only http: and https: URLs are fetched, not ${url.protocol}`,
      );
    }
    let host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    while (host.endsWith(".")) host = host.slice(0, -1);
    if (url.username !== "" || url.password !== "") {
      refuse(
        "credentials_forbidden",
        host,
        "a URL may not carry a user name or password; send credentials in a header instead",
      );
    }
    if (host === "") refuse("url_invalid", "", "it names no host");
    const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
    if (port < 1 || port > 65535) refuse("port_forbidden", host, `port ${port} is not usable`);
    const literal = parseIp(host);
    if (literal) host = formatIp(literal);
    url.hash = "";
    return { url, host, port, endpoint: endpointOf(literal, host, port), literal };
  }

  #digest(target: Target, hop: Hop): string {
    return digestOf({
      primitive: "net.fetch",
      method: hop.method,
      url: target.url.href,
      headers: Object.keys(hop.headers).sort().map((k) => [k, hop.headers[k]!]),
      body: hop.bodySha256,
    });
  }

  /**
   * The decision for a hop: on the host; when nothing decided for it (the default deny), on the
   * endpoint `<host>:<port>`. A deny is audited and thrown.
   */
  #decide(pid: string, target: Target, digest: string): { decision: Decision; action: Action } {
    const on = (key: string): Action => ({
      resource: { type: "net", key },
      right: "connect",
      digest,
    });
    let action = on(target.host);
    let decision = this.#authority.decide(pid, action);
    if (decision.effect === "deny" && decision.layer === "default") {
      const endpoint = on(target.endpoint);
      const second = this.#authority.decide(pid, endpoint);
      if (second.layer !== "default") {
        action = endpoint;
        decision = second;
      }
    }
    if (decision.effect === "deny") {
      this.#record(pid, target.host, "deny", decision.reason, {
        inputDigest: digest,
        detail: { url: shown(target.url.href, 2048), port: target.port },
      });
      throw this.#authority.refusal(pid, action, decision, `fetch ${this.#quote(target)}`);
    }
    return { decision, action };
  }

  #quote(target: Target): string {
    return JSON.stringify(shown(target.url.href));
  }

  /**
   * The capability that unlocks a forbidden address for this hop: an exact allow on
   * `<address>:<port>` or `<host>:<port>` that `decide()` does not deny. Nothing else does.
   */
  #unlock(pid: string, target: Target, ip: IpAddress, digest: string): Decision | undefined {
    const keys = [endpointOf(ip, formatIp(ip), target.port), target.endpoint];
    for (const key of new Set(keys)) {
      const resource = { type: "net", key } as const;
      const match = this.#authority.capabilities.match(pid, resource, "connect", digest);
      const cap = match?.capability;
      if (
        match?.effect !== "allow" || !cap || cap.resource.type !== "net" ||
        cap.resource.scope !== "exact" || cap.resource.key.toLowerCase() !== key
      ) continue;
      if (this.#authority.decide(pid, { resource, right: "connect", digest }).effect === "deny") {
        continue;
      }
      return { effect: "allow", reason: `cap:${cap.id}`, layer: "cap", capability: cap.id };
    }
    return undefined;
  }

  /** Checks addresses against the address policy; a forbidden one without an unlock is refused. */
  #check(pid: string, target: Target, ips: readonly IpAddress[], digest: string): Checked[] {
    return ips.map((ip) => {
      const address = formatIp(ip);
      const range = classifyAddress(ip);
      if (!range) return { address, unlock: undefined };
      const unlock = this.#unlock(pid, target, ip, digest);
      if (unlock) return { address, unlock };
      this.#record(pid, target.host, "deny", `address:${range.name}`, {
        inputDigest: digest,
        detail: { url: shown(target.url.href, 2048), address, range: range.cidr },
      });
      const subject = target.literal ? address : `${target.host} resolves to ${address}, which`;
      throw new NetError(
        "address_forbidden",
        `Cannot fetch ${
          this.#quote(target)
        }: ${subject} is in a range libos does not connect to: ${range.name} (${range.cidr}); an operator may grant exactly this endpoint as net:${
          endpointOf(ip, address, target.port)
        }`,
        { address, range: range.name },
      );
    });
  }

  /** What a human is shown for a hop that asked. */
  #details(
    target: Target,
    key: string,
    hop: Hop,
    decision: Decision,
    digest: string,
    args: Record<string, JsonValue>,
  ): ApprovalDetails {
    const lines = [`${hop.method} ${target.url.href}`];
    for (const name of Object.keys(hop.headers).sort()) lines.push(`${name}: ${hop.headers[name]}`);
    if (hop.bodyText !== undefined) lines.push("", hop.bodyText.slice(0, 4000));
    const action: PendingAction = {
      primitive: "net.fetch",
      args: args as PendingAction["args"],
    };
    return {
      primitive: "network",
      operation: "net.fetch",
      path: null,
      absolutePath: null,
      resource: `net:${key}`,
      right: "connect",
      reason: decision.reason,
      grantScope: "this exact request, once (bound to its digest)",
      willCreate: null,
      willOverwrite: null,
      target: null,
      bytes: hop.body?.length ?? null,
      sha256: hop.bodySha256,
      // Raw: `renderApprovalRequest` escapes every line it shows (DESIGN §5).
      preview: lines.join("\n"),
      diff: null,
      executable: null,
      argv: null,
      cwd: null,
      envHash: null,
      digest,
      ceiling: decision.ceiling ?? (decision.layer === "mode" ? decision.reason : null),
      action,
    };
  }

  /**
   * Decides a hop until it is allowed: a deny or a refused literal address throws; an ask goes
   * to the human (interactive approval decides again with the one-shot grant).
   */
  async #permit(
    pid: string,
    target: Target,
    hop: Hop,
    digest: string,
    context: { readonly first: boolean; readonly repeatable: boolean; readonly call: Call },
  ): Promise<Decision> {
    for (let attempt = 1;; attempt++) {
      const { decision, action } = this.#decide(pid, target, digest);
      const key = action.resource.type === "net" ? action.resource.key : target.host;
      // A literal address is checked before anyone is asked to approve it.
      if (target.literal) this.#check(pid, target, [target.literal], digest);
      if (decision.effect === "allow") return decision;
      this.#record(pid, target.host, "ask", decision.reason, {
        inputDigest: digest,
        detail: { url: shown(target.url.href, 2048) },
      });
      const what = `fetch ${this.#quote(target)}`;
      if (!this.#human) {
        throw new ApprovalRequiredError(
          `Cannot ${what} yet: connect on net:${key} needs a human's approval (${decision.reason})`,
          { reason: decision.reason, digest },
        );
      }
      if (!context.first && !context.repeatable) {
        throw new NetError(
          "redirect_needs_approval",
          `Cannot follow the redirect to ${
            this.#quote(target)
          }: it needs a human's approval (${decision.reason}), and a ${context.call.method} request cannot be re-run from its start once approved; grant connect on net:${target.host} first`,
        );
      }
      if (attempt >= 3) {
        throw new ApprovalRequiredError(
          `Cannot ${what}: it still needs approval after ${attempt - 1} approvals`,
          { reason: decision.reason, digest },
        );
      }
      // Interactive approval resolves (and the hop is decided again with the one-shot grant);
      // queue mode throws HumanPendingError (the process parks); none rejects.
      await this.#human.escalate(
        pid,
        this.#details(target, key, hop, decision, digest, context.call.args),
      );
    }
  }

  /** Audits a name that did not resolve (the decision allowed it) and returns the error. */
  #unresolved(
    pid: string,
    target: Target,
    digest: string,
    reason: string,
    why: string,
    cause?: unknown,
  ): NetError {
    this.#record(pid, target.host, "allow", reason, {
      inputDigest: digest,
      detail: { url: shown(target.url.href, 2048), error: "dns_failed" },
    });
    return new NetError(
      "dns_failed",
      `Cannot fetch ${this.#quote(target)}: the name ${target.host} ${why}`,
      cause === undefined ? {} : { cause },
    );
  }

  /** Resolves a hop's host once (a literal is not resolved) and checks every address. */
  async #locate(
    pid: string,
    target: Target,
    digest: string,
    reason: string,
    deadline: Deadline,
  ): Promise<Checked[]> {
    if (target.literal) return this.#check(pid, target, [target.literal], digest);
    let answers: string[];
    try {
      answers = await abortable(this.#net.resolve(target.host, deadline.signal), deadline.signal);
    } catch (error) {
      if (deadline.signal.aborted) throw deadline.failure();
      throw this.#unresolved(pid, target, digest, reason, "does not resolve", error);
    }
    if (answers.length === 0) {
      throw this.#unresolved(pid, target, digest, reason, "has no addresses");
    }
    const ips = answers.slice(0, this.limits.addressesMax).map((text) =>
      parseIp(text) ?? (() => {
        this.#record(pid, target.host, "deny", "address:not an IP address", {
          inputDigest: digest,
          detail: { url: shown(target.url.href, 2048), address: shown(String(text), 100) },
        });
        throw new NetError(
          "address_forbidden",
          `Cannot fetch ${this.#quote(target)}: the resolver answered ${
            JSON.stringify(shown(String(text), 100))
          }, which is not an IP address`,
          { range: "not an IP address" },
        );
      })()
    );
    return this.#check(pid, target, ips, digest);
  }

  /** Uses up every one-shot capability behind a hop before it is sent. */
  #spend(decisions: readonly (Decision | undefined)[]): void {
    const spent = new Set<string>();
    for (const d of decisions) {
      if (!d || d.effect !== "allow" || !d.capability || spent.has(d.capability)) continue;
      spent.add(d.capability);
      this.#authority.consume(d);
    }
  }

  /**
   * Sends a hop to its checked addresses in order; the next one is tried only when a connection
   * never reached the server (nothing was sent).
   */
  async #send(
    pid: string,
    target: Target,
    hop: Hop,
    addresses: readonly Checked[],
    deadline: Deadline,
    maxBytes: number,
    audit: { readonly digest: string; readonly reason: string; readonly hop: number },
  ): Promise<{ reply: NetReply; address: string }> {
    for (const [i, { address }] of addresses.entries()) {
      try {
        const reply = await abortable(
          this.#net.request({
            address,
            port: target.port,
            url: target.url,
            method: hop.method,
            headers: hop.headers,
            body: hop.body,
            signal: deadline.signal,
            maxBytes,
          }),
          deadline.signal,
        );
        return { reply, address };
      } catch (error) {
        const failure = deadline.signal.aborted
          ? deadline.failure()
          : UNREACHED.includes(errorCode(error)) && i + 1 < addresses.length
          ? undefined
          : new NetError(
            isTlsFailure(error) ? "tls_failed" : "request_failed",
            `Cannot fetch ${this.#quote(target)}: ${
              isTlsFailure(error)
                ? "the TLS handshake or certificate check failed"
                : "the request failed"
            } (${shown(error instanceof Error ? error.message : String(error), 200)})`,
            { address, cause: error },
          );
        this.#record(pid, target.host, "allow", audit.reason, {
          inputDigest: audit.digest,
          detail: {
            url: shown(target.url.href, 2048),
            method: hop.method,
            address,
            port: target.port,
            hop: audit.hop,
            error: failure?.code ?? "unreached",
          },
        });
        if (failure) throw failure;
      }
    }
    throw new NetError("request_failed", `Cannot fetch ${this.#quote(target)}: no address to try`);
  }

  /** The next hop after a redirect: the method and body it keeps, the headers it may carry. */
  #redirected(hop: Hop, status: number, from: Target, to: Target): Hop {
    const toGet = (status === 303 && hop.method !== "HEAD") ||
      ((status === 301 || status === 302) && hop.method === "POST");
    const keep = (name: string) =>
      !(toGet && BODY_HEADERS.includes(name)) &&
      !(from.url.origin !== to.url.origin && CREDENTIAL_HEADERS.includes(name));
    const headers = record(Object.entries(hop.headers).filter(([name]) => keep(name)));
    return toGet
      ? { method: "GET", headers, body: undefined, bodyText: undefined, bodySha256: null }
      : { ...hop, headers };
  }

  #response(
    target: Target,
    reply: NetReply,
    redirects: readonly string[],
    maxBytes: number,
  ): NetResponse {
    const truncated = reply.truncated || reply.bodyBytes.length > maxBytes;
    const kept = cutUtf8(reply.bodyBytes, maxBytes);
    const headers = record();
    for (const name of SAFE_RESPONSE_HEADERS) {
      const value = reply.headers[name];
      if (typeof value === "string") headers[name] = value.slice(0, HEADER_VALUE_MAX);
    }
    return {
      url: target.url.href,
      status: reply.status,
      headers: { ...headers },
      body: new TextDecoder().decode(kept),
      bytes: kept.length,
      truncated,
      redirects: [...redirects],
      provenance: { source: "web", label: target.host, ref: target.url.href },
    };
  }

  // ---------------------------------------------------------------------------- operations

  /**
   * Fetches a URL (see the module documentation for every check on the way).
   * @throws {ValidationError} for bad arguments (nothing is decided or sent).
   * @throws {NetError} `url_invalid`, `scheme_forbidden`, `credentials_forbidden`,
   *   `port_forbidden`, `address_forbidden` (nothing sent to that address), `redirect_limit`,
   *   `redirect_invalid`, `redirect_needs_approval`, `dns_failed`, `timeout`, `aborted`,
   *   `tls_failed`, `request_failed`.
   * @throws {CapabilityDeniedError} without connect on the host (or a rule or the mode denies).
   * @throws {ApprovalRequiredError} when it asks and no human channel is given;
   *   {@link HumanPendingError} / {@link HumanDecisionError} from the human channel.
   */
  async fetch(
    pid: string,
    request: NetFetchRequest,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<NetResponse> {
    this.#alive(pid);
    const call = this.#validate(request);
    const repeatable = call.method === "GET" || call.method === "HEAD";
    let target = this.#target(pid, request.url);
    let hop: Hop = {
      method: call.method,
      headers: call.headers,
      body: call.body,
      bodyText: request.body,
      bodySha256: call.body ? `sha256:${sha256Hex(call.body)}` : null,
    };
    const redirects: string[] = [];
    using deadline = new Deadline(call.timeoutMs, this.#core.clock, options.signal);
    let intent: string | undefined;
    try {
      for (let n = 0;; n++) {
        const digest = this.#digest(target, hop);
        const decision = await this.#permit(pid, target, hop, digest, {
          first: n === 0,
          repeatable,
          call,
        });
        deadline.arm();
        const addresses = await this.#locate(pid, target, digest, decision.reason, deadline);
        if (!repeatable && n === 0 && this.#ledger) {
          intent = this.#ledger.begin(pid, {
            kind: "net.fetch",
            request: {
              method: call.method,
              url: target.url.href,
              body: hop.bodySha256,
              bytes: call.body?.length ?? 0,
            },
          }).id;
        }
        this.#spend([decision, ...addresses.map((a) => a.unlock)]);
        const { reply, address } = await this.#send(
          pid,
          target,
          hop,
          addresses,
          deadline,
          call.maxBytes + 1,
          { digest, reason: decision.reason, hop: n },
        );
        const unlock = addresses.find((a) => a.address === address)?.unlock;
        this.#record(pid, target.host, "allow", decision.reason, {
          inputDigest: digest,
          detail: {
            url: shown(target.url.href, 2048),
            method: hop.method,
            address,
            port: target.port,
            hop: n,
            status: reply.status,
            bytes: cutUtf8(reply.bodyBytes, call.maxBytes).length,
            truncated: reply.truncated || reply.bodyBytes.length > call.maxBytes,
            ...(unlock ? { unlockedBy: unlock.reason } : {}),
          },
        });
        const location = reply.headers["location"];
        if (REDIRECT_STATUSES.includes(reply.status) && typeof location === "string") {
          if (redirects.length >= call.maxRedirects) {
            this.#record(pid, target.host, "deny", "redirect_limit", {
              inputDigest: digest,
              detail: { url: shown(target.url.href, 2048), redirects: redirects.length },
            });
            throw new NetError(
              "redirect_limit",
              `Cannot fetch ${
                JSON.stringify(shown(request.url))
              }: more than ${call.maxRedirects} redirects (the last led to ${this.#quote(target)})`,
            );
          }
          const next = this.#target(pid, location, target.url);
          redirects.push(next.url.href);
          hop = this.#redirected(hop, reply.status, target, next);
          target = next;
          continue;
        }
        const response = this.#response(target, reply, redirects, call.maxBytes);
        if (intent !== undefined) {
          this.#ledger!.finish(intent, {
            ok: true,
            value: { status: response.status, url: response.url, bytes: response.bytes },
          });
        }
        return response;
      }
    } catch (error) {
      if (intent !== undefined) {
        this.#ledger!.finish(intent, {
          ok: false,
          error: {
            code: error instanceof LibosError ? error.code : "failed",
            message: error instanceof Error ? error.message : String(error),
          },
        });
      }
      throw error;
    }
  }

  /**
   * Runs a stored pending action again (an approved one): the same request, decided afresh —
   * the one-shot approval bound to its digest now allows it.
   * @throws {ValidationError} for an operation this primitive does not have, or bad arguments.
   */
  async dispatch(pid: string, action: PendingAction, signal?: AbortSignal): Promise<JsonValue> {
    if (action.primitive !== "net.fetch") {
      throw new ValidationError(
        `The network primitive has no operation ${JSON.stringify(action.primitive)}`,
      );
    }
    const a = action.args;
    const number = (k: string) => (typeof a[k] === "number" ? { [k]: a[k] } : {});
    const headers = a.headers;
    if (typeof a.url !== "string") throw new ValidationError("Stored action net.fetch has no url");
    const request: NetFetchRequest = {
      url: a.url,
      ...(typeof a.method === "string" ? { method: a.method as NetMethod } : {}),
      ...(typeof headers === "object" && headers !== null && !Array.isArray(headers)
        ? { headers: headers as Record<string, string> }
        : {}),
      ...(typeof a.body === "string" ? { body: a.body } : {}),
      ...number("maxBytes"),
      ...number("timeoutMs"),
      ...number("maxRedirects"),
    };
    return await this.fetch(pid, request, signal ? { signal } : {});
  }
}
