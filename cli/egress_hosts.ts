/**
 * Egress by grant (issue 25): the hosts an operator lets one run reach, from `--allow-host
 * HOST[:PORT]` and `"allowHosts"` in `config.jsonc`. Each is parsed strictly into the form the
 * network primitive decides on (the URL parser's host: lower-case, punycode, canonical IP text,
 * IPv6 in brackets) and turned into two things: the `net:` capabilities the run's top-level
 * process is granted, and the entries the launcher adds to Deno's `--allow-net`.
 *
 * A host without a port means its web ports, 80 and 443 — both walls stay port-bounded.
 *
 * Deno's wall: the network primitive resolves a name once and connects to the checked address
 * (DNS pinning), so Deno sees a lookup of the name and then a connection to an address. An IP
 * literal is granted exactly (`203.0.113.9:443`). A name is granted as the name (Deno checks a
 * lookup against the name alone, without a port) and the public IPv4 address space at its
 * ports — never loopback, private, link-local (cloud metadata) or other special ranges
 * ({@link PUBLIC_IPV4}), so a granted name whose DNS answers a private address is refused by
 * Deno even where an exact endpoint grant lets the primitive connect; to reach a service on
 * such an address, grant the address itself. Deno's `--allow-net` cannot express an IPv6
 * range: a name reaches only its IPv4 addresses (grant an IPv6 address literally).
 *
 * @module
 */
import { UsageError } from "../runtime/base/errors.ts";
import { formatIp, parseIp } from "../runtime/primitives/net_address.ts";

/** The most hosts one run may be granted. */
export const ALLOW_HOSTS_MAX = 32;
/** The longest `HOST[:PORT]` accepted. */
const HOST_TEXT_MAX = 300;
/** The ports a host without one means. */
export const WEB_PORTS: readonly number[] = Object.freeze([80, 443]);

/** One host a run may reach. */
export interface HostGrant {
  /** The primitive's decision key: a name (lower-case, punycode) or canonical IP (IPv6 bracketed). */
  readonly host: string;
  /** The port, or null for the web ports 80 and 443. */
  readonly port: number | null;
  /** Whether the host is an IP literal. */
  readonly literal: boolean;
}

/** `host` or `host:port`, as recorded in the run's governance. */
export function hostGrantText(grant: HostGrant): string {
  return grant.port === null ? grant.host : `${grant.host}:${grant.port}`;
}

/** The ports a grant covers. */
export function grantPorts(grant: HostGrant): readonly number[] {
  return grant.port === null ? WEB_PORTS : [grant.port];
}

/** The `net:` capability keys of a grant: one exact endpoint `host:port` per port. */
export function endpointKeys(grant: HostGrant): string[] {
  return grantPorts(grant).map((port) => `${grant.host}:${port}`);
}

const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;

/**
 * Parses one `HOST[:PORT]`: a host name (Unicode names become punycode) or an IP literal (IPv6
 * in brackets), and an optional port 1–65535.
 * @throws {UsageError} naming the value and `source`: a scheme, path, user info, query,
 *   wildcard, bad port, bad label or a bare IPv6 address.
 */
export function parseAllowHost(text: string, source: string): HostGrant {
  const refuse = (why: string): never => {
    throw new UsageError(
      `${source} ${
        JSON.stringify(text.slice(0, HOST_TEXT_MAX))
      } is not a host: ${why}; give HOST or HOST:PORT, e.g. api.example.com, docs.example.com:8443 or [2001:db8::1]:443`,
    );
  };
  if (typeof text !== "string" || text === "") return refuse("it is empty");
  if (text.length > HOST_TEXT_MAX) refuse(`it is longer than ${HOST_TEXT_MAX} characters`);
  if (text.includes("://")) refuse("a URL scheme is not part of a host");
  if (text.includes("*")) refuse("wildcards are not granted (name each host)");
  // deno-lint-ignore no-control-regex
  if (/[\x00-\x20\x7f/\\?#@%,;]/.test(text)) {
    refuse("it holds a space, control character, path, query, user info or list separator");
  }
  let hostText = text;
  let portText: string | undefined;
  if (text.startsWith("[")) {
    const end = text.indexOf("]");
    if (end < 0) refuse("an IPv6 address needs its closing bracket");
    hostText = text.slice(0, end + 1);
    const rest = text.slice(end + 1);
    if (rest !== "") {
      if (!rest.startsWith(":")) refuse("only :PORT may follow an IPv6 address");
      portText = rest.slice(1);
    }
  } else {
    const colons = text.split(":").length - 1;
    if (colons > 1) refuse("write an IPv6 address in brackets, e.g. [2001:db8::1]:443");
    if (colons === 1) {
      hostText = text.slice(0, text.indexOf(":"));
      portText = text.slice(text.indexOf(":") + 1);
    }
  }
  let port: number | null = null;
  if (portText !== undefined) {
    if (!/^[0-9]{1,5}$/.test(portText)) refuse("the port must be a number from 1 to 65535");
    port = Number(portText);
    if (port < 1 || port > 65535) refuse("the port must be a number from 1 to 65535");
  }
  // The URL parser's host, as the network primitive computes its decision key.
  const url = URL.parse(`http://${hostText}/`);
  if (!url || url.hostname === "") return refuse("it is not a valid host name or IP address");
  let host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  while (host.endsWith(".")) host = host.slice(0, -1);
  const ip = parseIp(host);
  if (ip) {
    const canonical = formatIp(ip);
    return { host: ip.family === 6 ? `[${canonical}]` : canonical, port, literal: true };
  }
  if (hostText.startsWith("[")) refuse("it is not a valid IPv6 address");
  const labels = host.split(".");
  if (host.length > 253 || labels.some((l) => !LABEL.test(l))) {
    refuse("each label of a host name is 1-63 letters, digits, hyphens or underscores");
  }
  if (/^[0-9]+$/.test(labels.at(-1)!)) refuse("the last label of a host name cannot be a number");
  return { host, port, literal: false };
}

/**
 * The run's host grants from their sources, in order, without repeats.
 * @throws {UsageError} for a bad value (named with its source) or more than {@link ALLOW_HOSTS_MAX}.
 */
export function parseAllowHosts(
  values: readonly { readonly text: string; readonly source: string }[],
): HostGrant[] {
  const out = new Map<string, HostGrant>();
  for (const { text, source } of values) {
    const grant = parseAllowHost(text, source);
    out.set(hostGrantText(grant), grant);
  }
  if (out.size > ALLOW_HOSTS_MAX) {
    throw new UsageError(
      `${out.size} hosts are granted (--allow-host and allowHosts); at most ${ALLOW_HOSTS_MAX} per run`,
    );
  }
  return [...out.values()];
}

/** The IPv4 ranges the network primitive refuses (see `classifyAddress`). */
const FORBIDDEN_IPV4: readonly string[] = Object.freeze([
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
]);

function cidrRange(cidr: string): [number, number] {
  const [base, bits] = cidr.split("/") as [string, string];
  const start = base.split(".").reduce((n, part) => n * 256 + Number(part), 0);
  return [start, start + 2 ** (32 - Number(bits)) - 1];
}

/** The smallest list of CIDR blocks covering 0.0.0.0/0 except the forbidden ranges. */
function publicIpv4(): string[] {
  const forbidden = FORBIDDEN_IPV4.map(cidrRange);
  const out: string[] = [];
  const visit = (start: number, bits: number) => {
    const end = start + 2 ** (32 - bits) - 1;
    if (forbidden.some(([a, b]) => a <= start && end <= b)) return;
    if (forbidden.every(([a, b]) => b < start || end < a)) {
      const text = [start >>> 24, (start >>> 16) & 255, (start >>> 8) & 255, start & 255];
      out.push(`${text.join(".")}/${bits}`);
      return;
    }
    visit(start, bits + 1);
    visit(start + 2 ** (32 - bits - 1), bits + 1);
  };
  visit(0, 0);
  return out;
}

/**
 * The public IPv4 address space as CIDR blocks: every address `classifyAddress` lets the
 * primitive connect to, and none it refuses (tested against it).
 */
export const PUBLIC_IPV4: readonly string[] = Object.freeze(publicIpv4());

/**
 * The `--allow-net` entries for one grant (see the module notes): an IP literal's endpoints
 * exactly; a name, and the public IPv4 space at its ports.
 */
export function denoNetEntries(grant: HostGrant): string[] {
  if (grant.literal) return endpointKeys(grant);
  return [
    grant.host,
    ...grantPorts(grant).flatMap((port) => PUBLIC_IPV4.map((c) => `${c}:${port}`)),
  ];
}
