import assert from "node:assert/strict";
import { ValidationError } from "./errors.ts";
import { netHostPattern } from "./net_host.ts";

Deno.test("netHostPattern() brings hosts and endpoints to the decision key's form", () => {
  const table: [string, string][] = [
    ["Example.COM", "example.com"],
    ["example.com.", "example.com"],
    ["example.com..", "example.com"],
    ["bücher.example", "xn--bcher-kva.example"],
    ["*.bücher.example", "*.xn--bcher-kva.example"],
    ["BÜCHER.example:8080", "xn--bcher-kva.example:8080"],
    ["*:443", "*:443"],
    ["*", "*"],
    ["[::1]:8123", "[::1]:8123"],
    ["[FE80::1]", "[fe80::1]"],
    ["127.0.0.1:80", "127.0.0.1:80"],
    ["api.*.example", "api.*.example"],
  ];
  for (const [input, expected] of table) assert.equal(netHostPattern(input), expected, input);
});

Deno.test("netHostPattern() refuses a non-ASCII label it cannot convert", () => {
  for (const bad of ["bü*.example", "a\u{200b}\u{fffe}.example"]) {
    assert.throws(() => netHostPattern(bad), ValidationError, bad);
  }
});
