/**
 * Host names as the network primitive decides on them: lower-case, punycode (IDNA), no trailing
 * dot. Policy rules, run denies and capabilities name hosts the way people write them
 * (`bücher.example`, `Example.COM.`); {@link netHostPattern} brings each to the decision key's
 * form, so a deny written in Unicode still meets the request it was written for.
 *
 * @module
 */
import { domainToASCII } from "node:url";
import { ValidationError } from "./errors.ts";

/**
 * The decision-key form of a host pattern or key: `[host][:port]`, where the host may hold `*`
 * wildcards. Labels are lower-cased and, when not ASCII, converted to punycode; trailing dots
 * of the host are dropped; an IPv6 literal in brackets is kept as written (lower-cased).
 * @throws {ValidationError} for a non-ASCII label that also holds a wildcard or is not a valid
 *   international name.
 */
export function netHostPattern(text: string): string {
  // An IPv6 literal (`[::1]`, `[::1]:80`) or anything already ASCII needs only the case and the
  // trailing dot.
  let host = text;
  let port = "";
  if (!text.startsWith("[")) {
    const colon = text.lastIndexOf(":");
    if (colon >= 0) {
      host = text.slice(0, colon);
      port = text.slice(colon);
    }
  }
  while (host.endsWith(".") && host.length > 1) host = host.slice(0, -1);
  const labels = host.split(".").map((label) => {
    // deno-lint-ignore no-control-regex
    if (/^[\x00-\x7f]*$/.test(label)) return label.toLowerCase();
    const ascii = label.includes("*") ? "" : domainToASCII(label);
    if (ascii === "" || ascii.includes(".")) {
      throw new ValidationError(
        `Host ${JSON.stringify(text)} has a label ${
          JSON.stringify(label)
        } libos cannot convert to punycode; write the host in its ASCII (xn--…) form`,
      );
    }
    return ascii;
  });
  return `${labels.join(".")}${port}`;
}

/**
 * Refuses a `net` resource with the `prefix` scope: a prefix of a host name also matches other
 * domains (`api.example.com` matches `api.example.com.attacker.net`). Granting and asking for a
 * permission both go through this.
 * @throws {ValidationError} for a net prefix.
 */
export function refuseNetPrefix(
  resource: { readonly type: string; readonly scope?: string; readonly key?: string },
): void {
  if (resource.type !== "net" || resource.scope !== "prefix") return;
  throw new ValidationError(
    `A prefix of net:${resource.key} cannot be granted: a prefix of a host name also matches other domains (api.example.com matches api.example.com.attacker.net); use an exact host or host:port, net:* for any, or a policy rule with a host glob such as *.example.com`,
  );
}
