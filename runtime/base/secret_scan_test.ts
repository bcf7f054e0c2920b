import assert from "node:assert/strict";
import { CONTENT_RULES, scanSecrets, SECRET_SCAN_LOOKAHEAD, SecretScanner } from "./secret_scan.ts";

/**
 * Deterministic filler from an alphabet (a fixed LCG). Tokens are assembled at run time, so this
 * file holds no literal token a repository scanner (or a push protection) would flag.
 */
function chars(alphabet: string, n: number, seed = 7): string {
  let x = seed;
  let out = "";
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out += alphabet[x % alphabet.length];
  }
  return out;
}
const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const HEX = "0123456789abcdef";
const B64 = `${ALNUM}+/`;
const alnum = (n: number) => chars(ALNUM, n);
const hex = (n: number) => chars(HEX, n);
/** Concatenates pieces: keeps each token out of this file's text. */
const t = (...pieces: string[]) => pieces.join("");

/** A PEM block with a body of base64 lines. */
function pem(label: string, dashes = "-----"): string {
  const body = Array.from({ length: 4 }, (_, i) => chars(B64, 64, i + 1)).join("\n");
  return `${dashes}BEGIN ${label}${dashes}\n${body}\n${dashes}END ${label}${dashes}\n`;
}

/** Per rule: texts that carry its secret, and look-alikes that must not (with why). */
const CASES: Readonly<
  Record<string, { readonly hits: readonly string[]; readonly misses: readonly [string, string][] }>
> = {
  "gcp-service-account-key": {
    hits: [
      t('{\n  "type": "service_account",\n  "project_id": "demo",\n  "private', '_key_id": "') +
      hex(40) + '",\n',
    ],
    misses: [['{"private_key_id": "<your key id>"}', "a placeholder, not a 40-hex id"]],
  },
  "private-key": {
    hits: [
      pem("RSA PRIVATE KEY"),
      pem("EC PRIVATE KEY"),
      pem("DSA PRIVATE KEY"),
      pem("OPENSSH PRIVATE KEY"),
      pem("PRIVATE KEY"),
      pem("ENCRYPTED PRIVATE KEY"),
      pem("PGP PRIVATE KEY BLOCK"),
      pem("SSH2 ENCRYPTED PRIVATE KEY ", "---- "),
      // Inside JSON, with escaped newlines (a service-account file).
      t('"private_key": "-----BEGIN PRIVATE KEY-----\\n', chars(B64, 64), '\\n"'),
      t(
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,",
        hex(32).toUpperCase(),
        "\n\n",
        chars(B64, 64),
      ),
    ],
    misses: [
      [pem("PUBLIC KEY"), "a public key"],
      [pem("CERTIFICATE"), "a certificate"],
      [
        'if (line === "-----BEGIN RSA PRIVATE KEY-----") return parse(rest);',
        "code comparing a header line, with no key after it",
      ],
      ["-----begin rsa private key-----\n" + chars(B64, 64), "not PEM (lower case)"],
    ],
  },
  "putty-private-key": {
    hits: [t("PuTTY-User-Key-File-", "3: ssh-ed25519\nEncryption: none\n")],
    misses: [["The PuTTY-User-Key-File- header starts a .ppk file", "prose about the format"]],
  },
  "age-secret-key": {
    hits: [t("# created\nAGE-SECRET-", "KEY-1", chars("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58))],
    misses: [["AGE-SECRET-KEY-1...", "a placeholder"]],
  },
  "aws-access-key-id": {
    hits: [
      t("aws_access_key_id = AK", "IA", chars(UPPER, 16)),
      t('"AccessKeyId": "AS', "IA", chars(UPPER, 16), '"'),
    ],
    misses: [
      [t("AK", "IAIOSFODNN7EXAMPLE"), "AWS's documented example key"],
      [t("AK", "IA", chars(UPPER, 24)), "a longer upper-case word"],
      [t("XAK", "IA", chars(UPPER, 16)), "inside a word"],
      [t("ak", "ia", chars(UPPER, 16).toLowerCase()), "lower case"],
    ],
  },
  "aws-secret-access-key": {
    hits: [
      t("aws_secret_", "access_key = ", chars(B64, 40)),
      t("AWS_SECRET_", "ACCESS_KEY='", chars(B64, 40), "'"),
    ],
    misses: [
      [t("aws_secret_", "access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"), "AWS's example"],
      [t("AWS_SECRET_", "ACCESS_KEY=${{ secrets.AWS_SECRET }}"), "a reference, not a value"],
    ],
  },
  "github-token": {
    hits: [t("gh", "p_", alnum(36)), t("token: gh", "s_", alnum(36)), t("gh", "o_", alnum(36))],
    misses: [
      [t("gh", "p_xxxxxxxxxxxxxxxxxxxx"), "a placeholder, too short"],
      [t("hig", "hp_", alnum(36)), "GLSL's highp_ inside a word"],
    ],
  },
  "github-fine-grained-pat": {
    hits: [t("github", "_pat_", chars(`${ALNUM}_`, 82))],
    misses: [[t("github", "_pat_<token>"), "a placeholder"]],
  },
  "gitlab-token": {
    hits: [t("glp", "at-", chars(`${ALNUM}-_`, 20))],
    misses: [[t("glp", "at-xxxx"), "too short"]],
  },
  "slack-token": {
    hits: [
      t("xo", "xb-", "1234567890-1234567890-", alnum(24)),
      t("xo", "xp-", "1234567890-1234567890-1234567890-", hex(32)),
      t("xo", "xe.xo", "xp-1-", alnum(150)),
    ],
    misses: [[t("xo", "xb-your-token-here"), "no numeric part"]],
  },
  "slack-webhook": {
    hits: [t("https://hooks.slack.com/", "services/T", alnum(8), "/B", alnum(8), "/", alnum(24))],
    misses: [["https://hooks.slack.com/services/...", "an elided URL"]],
  },
  "stripe-live-key": {
    hits: [t("sk_", "live_", alnum(24)), t("rk_", "live_", alnum(99))],
    misses: [
      [t("sk_", "test_", alnum(24)), "a test-mode key (left out on purpose)"],
      [t("sk_", "live_xxxx"), "too short"],
    ],
  },
  "google-api-key": {
    hits: [t("key=AI", "za", chars(`${ALNUM}-_`, 35), "&")],
    misses: [
      [t("AI", "zaSyShort"), "too short"],
      [t("AI", "za", alnum(40)), "longer than a key"],
    ],
  },
  "google-oauth-access-token": {
    hits: [t("Authorization: Bearer ya", "29.", chars(`${ALNUM}-_`, 120))],
    misses: [[t("ya", "29.placeholder"), "too short"]],
  },
  "anthropic-api-key": {
    hits: [t("sk-", "ant-api03-", chars(`${ALNUM}-_`, 93), "AA")],
    misses: [[t("sk-", "ant-..."), "an elided key"]],
  },
  "openai-api-key": {
    hits: [t("OPENAI_API_KEY=sk-", "proj-", chars(`${ALNUM}-_`, 156))],
    misses: [[t("sk-", "proj-YOUR_KEY"), "a placeholder"]],
  },
  "openai-legacy-key": {
    hits: [t("sk-", alnum(20), "T3Blbk", "FJ", alnum(20))],
    misses: [
      [t("sk-", alnum(48)), "no T3BlbkFJ marker"],
      [t("task-", alnum(20), "T3Blbk", "FJ", alnum(20)), "inside a word"],
    ],
  },
  "npm-token": {
    hits: [t("//registry.npmjs.org/:_authToken=np", "m_", alnum(36))],
    misses: [
      ["npm_config_registry=https://registry.npmjs.org/", "an npm_ environment variable"],
      [t("np", "m_", alnum(40)), "longer than a token"],
    ],
  },
  "pypi-token": {
    hits: [t("password = pypi-", "AgEIcHlwaS5vcmc", chars(`${ALNUM}-_`, 120))],
    misses: [["password = pypi-token-here", "a placeholder"]],
  },
  "huggingface-token": {
    hits: [
      t("HF_TOKEN=h", "f_", chars("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 34)),
    ],
    misses: [
      ["from huggingface_hub import hf_hub_download", "an identifier"],
      [t("h", "f_", "a".repeat(34), "1"), "followed by more of a word"],
    ],
  },
  "hashicorp-vault-token": {
    hits: [t("VAULT_TOKEN=hv", "s.", chars(`${ALNUM}-_`, 95))],
    misses: [[t("hv", "s.short"), "too short"]],
  },
  "digitalocean-token": {
    hits: [t("do", "p_v1_", hex(64))],
    misses: [[t("do", "p_v1_", "g".repeat(64)), "not hex"]],
  },
  "sendgrid-api-key": {
    hits: [t("S", "G.", chars(`${ALNUM}-_`, 22), ".", chars(`${ALNUM}-_`, 43))],
    misses: [[t("MS", "G.", alnum(22), ".", alnum(43)), "inside a word"]],
  },
  "shopify-token": {
    hits: [t("shp", "at_", hex(32))],
    misses: [[t("shp", "at_<token>"), "a placeholder"]],
  },
  "databricks-token": {
    hits: [t("da", "pi", hex(32))],
    misses: [
      ["dapi_version = 2", "an identifier"],
      [t("da", "pi", hex(40)), "a longer hex string"],
    ],
  },
};

for (const rule of CONTENT_RULES) {
  const cases = CASES[rule.id];
  Deno.test(`scanSecrets() rule ${rule.id} (${rule.why}; from ${rule.source}): finds it in text, and not its look-alikes`, () => {
    assert.ok(cases, `${rule.id} has no cases in this test`);
    for (const hit of cases.hits) {
      // Alone, and inside ordinary text on a line of its own.
      for (const text of [hit, `# config\nname = "demo"\n${hit}\nmore = 1\n`]) {
        assert.equal(scanSecrets(text, [rule])?.rule, rule.id, `${rule.id} missed: ${text}`);
        assert.ok(scanSecrets(text) !== undefined, `the whole table missed ${rule.id}`);
      }
    }
    for (const [miss, why] of cases.misses) {
      assert.equal(scanSecrets(miss, [rule]), undefined, `${rule.id} matched ${why}: ${miss}`);
    }
  });
}

Deno.test("CONTENT_RULES: every rule has cases, a unique id, anchors, and fits in the scan lookahead (a read's cut cannot hide one)", () => {
  const ids = CONTENT_RULES.map((r) => r.id);
  assert.equal(new Set(ids).size, ids.length, "duplicate rule id");
  assert.deepEqual(Object.keys(CASES).sort(), [...ids].sort(), "rules and cases differ");
  for (const rule of CONTENT_RULES) {
    assert.match(rule.id, /^[a-z0-9-]+$/, rule.id);
    assert.ok(rule.anchors.length > 0 && rule.anchors.every((a) => a.length >= 3), rule.id);
    const span = Math.max(...rule.anchors.map((a) => a.length)) +
      rule.tail.reduce(
        (n, p) => n + ("literal" in p ? p.literal.length : "seek" in p ? p.within : p.max),
        1,
      );
    assert.ok(span <= SECRET_SCAN_LOOKAHEAD, `${rule.id} spans ${span} characters`);
  }
});

Deno.test("scanSecrets() finds nothing in ordinary text: this repository's scanner, its tests' sources and README", () => {
  for (const file of ["./secret_scan.ts", "./secret_files.ts", "./secret_scan_test.ts"]) {
    const text = Deno.readTextFileSync(new URL(file, import.meta.url));
    assert.equal(scanSecrets(text), undefined, file);
  }
  assert.equal(
    scanSecrets(Deno.readTextFileSync(new URL("../../README.md", import.meta.url))),
    undefined,
  );
  assert.equal(scanSecrets(""), undefined);
});

Deno.test("scanSecrets() on pathological text (attack: anchors without end, near-misses, 4 MiB) answers in one linear pass", () => {
  // Each input would make a backtracking pattern like `-----BEGIN[ A-Z]{0,100}PRIVATE KEY` or
  // `(sk|rk)_live_[a-z0-9]{10,99}` work per anchor × tail; here every tail is bounded.
  const mib = 1024 * 1024;
  const inputs = [
    "-----BEGIN ".repeat((4 * mib) / 11),
    `-----BEGIN ${"A ".repeat(30)}`.repeat((4 * mib) / 71),
    `-----BEGIN RSA PRIVATE KEY-----${"!".repeat(300)}`.repeat((4 * mib) / 331),
    "AKIA".repeat(mib),
    `sk_live_${"a".repeat(19)} `.repeat((4 * mib) / 28),
    `pypi-AgEIcHlwaS5vcmc${"a".repeat(49)} `.repeat((4 * mib) / 70),
    "a".repeat(4 * mib),
    "sk-".repeat((4 * mib) / 3),
  ];
  for (const text of inputs) assert.equal(scanSecrets(text), undefined, text.slice(0, 40));
  // A run of anchors that does form a token at its end is found.
  assert.equal(
    scanSecrets(`${"AKIA".repeat(1000)} ${t("AK", "IA", chars(UPPER, 16))}`)?.rule,
    "aws-access-key-id",
  );
});

Deno.test("SecretScanner.redact() withholds each secret — a key block through its END line, a token by its match — and keeps the rest", () => {
  const scanner = new SecretScanner();
  const body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7abcdefghijklmnop";
  const key = `-----BEGIN RSA PRIVATE KEY-----\n${body}\n${body}\n-----END RSA PRIVATE KEY-----`;
  const token = ["ghp", "_", "B".repeat(36)].join("");
  const text = `before\n${key}\nbetween ${token} after\n`;
  const out = scanner.redact(text);
  assert.deepEqual(out.rules, ["private-key", "github-token"]);
  assert.equal(
    out.text,
    "before\n[redacted: private-key]\nbetween [redacted: github-token] after\n",
  );
  // A key cut off before its END: withheld to the end of the text (fail closed).
  const cut = scanner.redact(`x\n-----BEGIN PRIVATE KEY-----\n${body}\n${body}`);
  assert.equal(cut.text, "x\n[redacted: private-key]");
  // Benign text is returned as it was, untouched.
  const benign = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\nghp_short\n";
  assert.deepEqual(scanner.redact(benign), { text: benign, rules: [] });
  // Linear on hostile input: many headers without a body.
  const hostile = "-----BEGIN PRIVATE KEY-----\n".repeat(20_000);
  assert.equal(scanner.redact(hostile).rules.length, 0);
});
