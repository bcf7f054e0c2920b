/**
 * IP addresses for the network primitive: every textual form the WHATWG URL parser and
 * `inet_aton` accept ({@link parseIp}), a canonical text ({@link formatIp}), and the
 * special-purpose ranges no request may reach without an exact endpoint grant
 * ({@link classifyAddress}). Pure functions over bytes: no regular expression, no DNS.
 *
 * @module
 */
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
