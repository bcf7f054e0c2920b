/**
 * Helpers of the network primitive: the methods and headers it accepts and hands back, header
 * validation, error classification, and the total time cap of a request.
 *
 * @module
 */
import type { Clock } from "../base/clock.ts";
import { LibosError, type LibosErrorOptions } from "../base/errors.ts";
import { escapePreview } from "../base/escape_preview.ts";
import type { NetMethod } from "../providers/net.ts";

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

export const METHODS: readonly NetMethod[] = Object.freeze([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
]);

/** Headers a caller may not set: the provider owns framing, the host and the encoding. */
export const RESERVED_HEADERS: readonly string[] = Object.freeze([
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
export const SAFE_RESPONSE_HEADERS: readonly string[] = Object.freeze([
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
  // A Streamable HTTP MCP server's session (runtime/primitives/_mcp_http.ts).
  "mcp-session-id",
]);

/**
 * The only headers a redirect to another origin carries on: credentials of every spelling
 * (`authorization`, `cookie`, `x-api-key`, `x-auth-token`, …) stay with the origin they were
 * meant for.
 */
export const CROSS_ORIGIN_HEADERS: readonly string[] = Object.freeze([
  "accept",
  "accept-language",
  "cache-control",
  "content-language",
  "content-type",
  "pragma",
  "user-agent",
]);

/** Headers that describe a body, dropped when a redirect turns the request into a GET. */
export const BODY_HEADERS: readonly string[] = Object.freeze([
  "content-type",
  "content-language",
  "content-encoding",
  "content-location",
]);

export const REDIRECT_STATUSES: readonly number[] = Object.freeze([301, 302, 303, 307, 308]);

/** Error codes of a connection that never reached the server (another address may be tried). */
export const UNREACHED: readonly string[] = Object.freeze([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "EAFNOSUPPORT",
  // Deno's permission wall refused the connection before anything was sent: under the launcher
  // a host name granted with --allow-host reaches only its IPv4 addresses (see errorCode).
  "ENOTCAPABLE",
]);

/** The longest response header value handed back. */
export const HEADER_VALUE_MAX = 2048;

/** The RFC 9110 `tchar` set of a header name. */
export function isToken(name: string): boolean {
  if (name === "" || name.length > 256) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    const alnum = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
    if (!alnum && !"!#$%&'*+-.^_`|~".includes(name[i]!)) return false;
  }
  return true;
}

/** Visible ASCII, space and tab only: no CR, LF, NUL or anything a header could be split with. */
export function isHeaderValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c !== 0x09 && (c < 0x20 || c > 0x7e)) return false;
  }
  return true;
}

/** A null-prototype record: a header called `__proto__` is just a header. */
export function record(entries: Iterable<[string, string]> = []): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of entries) out[k] = v;
  return out;
}

/** Untrusted text as it may appear in a message or an audit record: escaped and cut. */
export function shown(text: string, max = 300): string {
  return escapePreview(text, { maxChars: max });
}

export function errorCode(error: unknown): string {
  // Deno's NotCapable carries no code; it is raised before the socket connects.
  if (error instanceof Deno.errors.NotCapable) return "ENOTCAPABLE";
  if (typeof error === "object" && error !== null && "code" in error) {
    return String((error as { code: unknown }).code);
  }
  return "";
}

export function isTlsFailure(error: unknown): boolean {
  const code = errorCode(error);
  return code.startsWith("ERR_TLS_") || code.startsWith("ERR_SSL_") || code.includes("CERT") ||
    code.startsWith("UNABLE_TO_") || code === "HOSTNAME_MISMATCH";
}

/**
 * The total time cap, on the runtime's clock (a fake clock in tests): armed at the first
 * network step — time spent waiting for a human does not count — and disposed when the request
 * ends.
 */
export class Deadline implements Disposable {
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
      (error: unknown) => {
        // The request ended first (the stop signal). A timer that failed otherwise cannot
        // bound the request: it ends now rather than run unbounded.
        if (this.#stop.signal.aborted) return;
        this.#controller.abort(
          new NetError("timeout", `The request's ${this.#ms} ms limit could not be kept`, {
            cause: error,
          }),
        );
      },
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
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
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
