/**
 * The network primitive: `net.fetch` — the only way any tool or syscall reaches the network
 * (DESIGN §2). Every hop of a request (the first one and each redirect) goes through the same
 * sequence, see {@link NetPrimitive.fetch}:
 *
 * 1. **URL** — WHATWG-parsed (which also normalises `http://2130706433/`, `http://0x7f.1/`,
 *    `http://0177.0.0.1/` and `http://127.1/` to `127.0.0.1`); only `http:` and `https:`; no
 *    user name or password; port 1–65535; the fragment is dropped.
 * 2. **decide** on `{ type: "net", key: <host> }` and on the endpoint `<host>:<port>`, right
 *    `connect`, with the request's digest; the stricter decision wins (explicit deny, then ask,
 *    then allow; the default deny only when neither decided), so an exact grant of one endpoint
 *    works by itself and an endpoint deny or ask holds however widely the host is granted.
 *    `<host>` is the URL's host name, lower-case, punycode, without a trailing dot, or a
 *    canonical IP literal, IPv6 in brackets (`[::1]`, endpoint `[::1]:8123`), so a host key never
 *    reads as an endpoint. Deny → audited, {@link CapabilityDeniedError}.
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
 *    only a short list of content headers follows a redirect to another origin (no credential,
 *    whatever its name). A redirect hop that needs a human is escalated only when the request is
 *    a GET or HEAD (an approved action is re-run from its first hop, which must be safe to
 *    repeat); otherwise it is refused.
 *
 * Every attempt is audited (`net.fetch` on `net:<host>`: allow with the address, port, status
 * and size; deny with the reason). Requests other than GET and HEAD run through the action
 * ledger when one is given (intent committed before anything is sent). Response bodies are
 * untrusted: the result carries `provenance: { source: "web", label: <host>, ref: <final URL> }`.
 *
 * @module
 */
import type { ActionLedger } from "../process/action_ledger.ts";
import { type Authority, explained } from "../authority/authority.ts";
import { digestOf, type JsonValue, sha256Hex } from "../base/canonical_json.ts";
import type { Action, Decision } from "../authority/decide.ts";
import {
  ApprovalRequiredError,
  IllegalTransitionError,
  LibosError,
  ValidationError,
} from "../base/errors.ts";
import { z } from "zod";
import { type ActionOperation, ActionRegistry, defineAction } from "../human/action_registry.ts";
import type { HumanChannel } from "../human/human_channel.ts";
import {
  actionApproval,
  type ApprovalDetails,
  type PendingAction,
} from "../human/human_request.ts";
import { isFinal } from "../process/process.ts";
import { ApprovalGate, type Attempt } from "./approval_gate.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { NetMethod, NetProvider, NetReply } from "../providers/net.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import { cutUtf8 } from "./_fs_support.ts";
import { classifyAddress, formatIp, type IpAddress, parseIp } from "./net_address.ts";
import { readableBody, type ReadableFormat } from "./net_readable.ts";
import {
  abortable,
  BODY_HEADERS,
  CROSS_ORIGIN_HEADERS,
  Deadline,
  errorCode,
  HEADER_VALUE_MAX,
  isHeaderValue,
  isTlsFailure,
  isToken,
  METHODS,
  NetError,
  type NetErrorCode,
  record,
  REDIRECT_STATUSES,
  RESERVED_HEADERS,
  SAFE_RESPONSE_HEADERS,
  shown,
  UNREACHED,
} from "./_net_support.ts";

export type { NetMethod } from "../providers/net.ts";
export { NetError, type NetErrorCode } from "./_net_support.ts";
export {
  classifyAddress,
  type ForbiddenRange,
  formatIp,
  type IpAddress,
  parseIp,
} from "./net_address.ts";

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
  /** Default and largest `maxChars` of a readable body (`readable`). */
  readonly readableChars: number;
  readonly readableCharsMax: number;
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
  readableChars: 100_000,
  readableCharsMax: 1_000_000,
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
  /**
   * Return the body readable (see `net_readable.ts`): HTML as Markdown, other text as is, binary
   * content described; cut at `maxChars` characters.
   */
  readonly readable?: boolean;
  readonly maxChars?: number;
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
  /** With `readable`: how the body was made readable. */
  readonly format?: ReadableFormat;
  /** With `readable`: what was cut, reduced or not shown. */
  readonly note?: string;
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

// ------------------------------------------------------------------------------ primitive

/** One hop's URL, parsed and checked for scheme, credentials and port. */
interface Target {
  /** The URL without its fragment. */
  readonly url: URL;
  /** The decision key: host name or canonical IP text (IPv6 in brackets). */
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
  /** Characters of readable text, or undefined for the body as it came. */
  readonly maxChars: number | undefined;
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
  readonly #gate: ApprovalGate;
  readonly #processes: ProcessManager | undefined;
  readonly #ledger: ActionLedger | undefined;
  readonly limits: NetLimits;

  /** Binds the primitive to a runtime. */
  constructor(options: NetPrimitiveOptions) {
    this.#core = options.core;
    this.#authority = options.authority;
    this.#net = options.provider;
    this.#gate = new ApprovalGate({ authority: options.authority, human: options.human });
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
      ...explained(this.#authority.explanation(authority), extra.detail),
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
    const maxChars = request.readable === true
      ? this.#integer("maxChars", request.maxChars, l.readableChars, 1, l.readableCharsMax)
      : undefined;
    const args: Record<string, JsonValue> = {
      url: request.url,
      method,
      headers: { ...headers },
      maxBytes,
      timeoutMs,
      maxRedirects,
      ...(request.body === undefined ? {} : { body: request.body }),
      ...(maxChars === undefined ? {} : { readable: true, maxChars }),
    };
    return { method, headers, maxBytes, timeoutMs, maxRedirects, body, maxChars, args };
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
    let bare = host;
    if (literal) {
      bare = formatIp(literal);
      // Bracketed, so an IPv6 host key can never read as an endpoint (`2001:db8::443`).
      host = literal.family === 6 ? `[${bare}]` : bare;
    }
    url.hash = "";
    return { url, host, port, endpoint: endpointOf(literal, bare, port), literal };
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
   * The decision for a hop: on the host and on the endpoint `<host>:<port>`, the stricter wins —
   * an explicit deny on either, then an ask on either, then an allow on either; only when neither
   * decided anything, the default deny. So a grant of the endpoint alone works, and a deny or ask
   * on an endpoint (`--deny net:*:25`, a rule) holds however widely the host is granted. A deny is
   * audited and thrown.
   */
  #decide(pid: string, target: Target, digest: string): { decision: Decision; action: Action } {
    const on = (key: string): Action => ({
      resource: { type: "net", key },
      right: "connect",
      digest,
    });
    const strictness = (d: Decision) =>
      d.effect === "deny" ? (d.layer === "default" ? 0 : 3) : d.effect === "ask" ? 2 : 1;
    let action = on(target.host);
    let decision = this.#authority.decide(pid, action);
    const endpoint = on(target.endpoint);
    const second = this.#authority.decide(pid, endpoint);
    if (strictness(second) > strictness(decision)) {
      action = endpoint;
      decision = second;
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
  ): Omit<ApprovalDetails, "action"> {
    const lines = [`${hop.method} ${target.url.href}`];
    for (const name of Object.keys(hop.headers).sort()) lines.push(`${name}: ${hop.headers[name]}`);
    if (hop.bodyText !== undefined) lines.push("", hop.bodyText.slice(0, 4000));
    return actionApproval({
      primitive: "network",
      operation: "net.fetch",
      resource: `net:${key}`,
      right: "connect",
      reason: decision.reason,
      grantScope: "this exact request, once (bound to its digest)",
      bytes: hop.body?.length ?? null,
      sha256: hop.bodySha256,
      // Raw: `renderApprovalRequest` escapes every line it shows (DESIGN §5).
      preview: lines.join("\n"),
      digest,
      ceiling: decision.ceiling ?? (decision.layer === "mode" ? decision.reason : null),
    });
  }

  /**
   * Decides a hop until it is allowed: a deny or a refused literal address throws; an ask goes
   * through the approval gate to the human (interactive approval decides again with the one-shot
   * grant, which `decide()` finds by the hop's digest).
   */
  async #permit(
    pid: string,
    target: Target,
    hop: Hop,
    digest: string,
    context: {
      readonly first: boolean;
      readonly repeatable: boolean;
      readonly call: Call;
      readonly standing?: string | undefined;
    },
  ): Promise<Decision> {
    const what = `fetch ${this.#quote(target)}`;
    return await this.#gate.pass(pid, {
      operation: "net.fetch",
      args: context.call.args,
      // Any host: the digest binds the method, URL, headers and body, so it meets the host and
      // endpoint decisions alike.
      grant: () => ({ type: "net", key: "*", scope: "any" }),
      attempt: (): Promise<Attempt<Decision>> => {
        const { decision, action } = this.#decide(pid, target, digest);
        const key = action.resource.type === "net" ? action.resource.key : target.host;
        // A literal address is checked before anyone is asked to approve it.
        if (target.literal) this.#check(pid, target, [target.literal], digest);
        if (decision.effect === "allow") return Promise.resolve({ type: "done", value: decision });
        if (context.standing !== undefined) {
          return Promise.resolve({
            type: "done",
            value: { effect: "allow", reason: context.standing, layer: "cap" },
          });
        }
        this.#record(pid, target.host, "ask", decision.reason, {
          inputDigest: digest,
          detail: { url: shown(target.url.href, 2048) },
        });
        const details = this.#details(target, key, hop, decision, digest);
        return Promise.resolve({ type: "ask", ask: { details, subject: what } });
      },
      unasked: (ask) => {
        const reason = ask.details.reason;
        if (!this.#gate.canAsk) {
          return new ApprovalRequiredError(
            `Cannot ${what} yet: connect on ${ask.details.resource} needs a human's approval (${reason})`,
            { reason, digest },
          );
        }
        if (!context.first && !context.repeatable) {
          return new NetError(
            "redirect_needs_approval",
            `Cannot follow the redirect to ${
              this.#quote(target)
            }: it needs a human's approval (${reason}), and a ${context.call.method} request cannot be re-run from its start once approved; grant connect on net:${target.host} first`,
          );
        }
        return undefined;
      },
      exhausted: (ask, n) =>
        new ApprovalRequiredError(
          `Cannot ${what}: it still needs approval after ${n - 1} approvals`,
          { reason: ask.details.reason, digest },
        ),
    });
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

  /**
   * Sends a hop to its checked addresses in order; the next one is tried only when a connection
   * never reached the server (nothing was sent). The hop's decision is recorded once: on failure
   * here, on success by the caller — either naming the addresses tried that were not reached.
   */
  async #send(
    pid: string,
    target: Target,
    hop: Hop,
    addresses: readonly Checked[],
    deadline: Deadline,
    maxBytes: number,
    audit: { readonly digest: string; readonly reason: string; readonly hop: number },
  ): Promise<{ reply: NetReply; address: string; unreached: string[] }> {
    const unreached: string[] = [];
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
        return { reply, address, unreached };
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
        if (!failure) {
          unreached.push(address);
          continue;
        }
        this.#record(pid, target.host, "allow", audit.reason, {
          inputDigest: audit.digest,
          detail: {
            url: shown(target.url.href, 2048),
            method: hop.method,
            address,
            port: target.port,
            hop: audit.hop,
            error: failure.code,
            ...(unreached.length ? { unreached: unreached.join(" ") } : {}),
          },
        });
        throw failure;
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
      (from.url.origin === to.url.origin || CROSS_ORIGIN_HEADERS.includes(name));
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
    maxChars: number | undefined,
  ): NetResponse {
    const truncated = reply.truncated || reply.bodyBytes.length > maxBytes;
    const kept = cutUtf8(reply.bodyBytes, maxBytes);
    const headers = record();
    for (const name of SAFE_RESPONSE_HEADERS) {
      const value = reply.headers[name];
      if (typeof value === "string") headers[name] = value.slice(0, HEADER_VALUE_MAX);
    }
    const body = new TextDecoder().decode(kept);
    const response = {
      url: target.url.href,
      status: reply.status,
      headers: { ...headers },
      body,
      bytes: kept.length,
      truncated,
      redirects: [...redirects],
      provenance: { source: "web", label: target.host, ref: target.url.href },
    } as const;
    if (maxChars === undefined) return response;
    const readable = readableBody(body, headers["content-type"], kept.length, maxChars);
    const notes = [
      ...(truncated ? [`Only the first ${kept.length} bytes were fetched (max_bytes)`] : []),
      ...(readable.note ? [readable.note] : []),
    ];
    return {
      ...response,
      body: readable.text,
      truncated: truncated || readable.cut,
      format: readable.format,
      ...(notes.length ? { note: notes.join("; ") } : {}),
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
    options: {
      readonly signal?: AbortSignal;
      /**
       * The caller's standing decision (an MCP HTTP session's start, decided once on the
       * process's `net:` grant): an ask is answered by it instead of a human; a deny and the
       * address policy still hold.
       */
      readonly standing?: string;
    } = {},
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
          standing: options.standing,
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
        // Every one-shot capability behind the hop is used up before it is sent.
        this.#gate.spend([decision, ...addresses.map((a) => a.unlock)]);
        const { reply, address, unreached } = await this.#send(
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
            ...(unreached.length ? { unreached: unreached.join(" ") } : {}),
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
        const response = this.#response(target, reply, redirects, call.maxBytes, call.maxChars);
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
    const registry = new ActionRegistry();
    registry.register(
      defineAction(
        "net.fetch",
        StoredFetch,
        (p, a) => this.fetch(p, storedRequest(a), signal ? { signal } : {}),
      ),
    );
    return await registry.dispatch(pid, action, new AbortController().signal);
  }
}

/** What a stored `net.fetch` carries (see {@link NetPrimitive.fetch}). */
const StoredFetch = z.object({
  url: z.string(),
  method: z.string().optional(),
  headers: z.record(z.string(), z.string()).optional(),
  body: z.string().optional(),
  maxBytes: z.number().optional(),
  timeoutMs: z.number().optional(),
  maxRedirects: z.number().optional(),
  readable: z.boolean().optional(),
  maxChars: z.number().optional(),
});

/** The request a stored `net.fetch` makes again (the method is checked by fetch itself). */
function storedRequest(a: z.output<typeof StoredFetch>): NetFetchRequest {
  const { method, ...rest } = a;
  const request = Object.fromEntries(
    Object.entries(rest).filter(([, v]) => v !== undefined),
  ) as Omit<NetFetchRequest, "method">;
  return method === undefined ? request : { ...request, method: method as NetMethod };
}

/**
 * The network's resumable operation (see `action_registry.ts`): the request again, from its
 * first hop, decided afresh — the one-shot approval bound to its digest now allows exactly it.
 */
export function netActions(net: NetPrimitive): ActionOperation[] {
  return [defineAction("net.fetch", StoredFetch, (pid, a) => net.fetch(pid, storedRequest(a)))];
}
