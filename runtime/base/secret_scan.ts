/**
 * What counts as a secret by content (DESIGN §2): private-key blocks and the token formats
 * secret scanners know, found in text a read is about to return. A read whose bytes carry one
 * goes to the human like a secret-named file (`primitives/filesystem.ts`); the path rules are
 * `secret_files.ts`.
 *
 * The rules are data: a literal anchor (case-sensitive, at a word boundary unless said
 * otherwise) and a tail of character runs and literals with bounded lengths. They were learnt
 * from gitleaks' default rules, detect-secrets' and pre-commit's private-key headers and
 * shhgit's content signatures, and re-expressed here (no pattern copied); each row names its
 * source. Matching is linear-time with no regular expression over host input: one pass over the
 * text dispatches each pair of characters to the anchors that start with it, and each run of a
 * tail is matched possessively (it never gives characters back), reading at most `max`
 * characters — so the cost is O(text × anchors per pair + hits × tail), every tail bounded.
 *
 * What is deliberately not a rule: generic `password=…` or high-entropy strings (gitleaks'
 * noisiest rules; every fixture and hash would prompt), URLs with a user:password (documentation
 * is full of `postgres://user:password@localhost`), JWTs (short-lived by design), and test-mode
 * keys (Stripe `sk_test_`). A token in another encoding (base64, UTF-16) is not seen.
 *
 * Hand-written for a linear-time guarantee and offline use: secretlint and detect-secrets match
 * with backtracking regular expressions (JavaScript's, Python's), and gitleaks, linear in Go's
 * RE2, is a separate program; a read's bytes are host input and must be scanned in-process, in
 * time proportional to their length, with no helper binary.
 *
 * @module
 */

/** A character class, by name. */
export type CharClass =
  | "alnum"
  | "alpha"
  | "upper_digit"
  | "digit"
  | "hex"
  | "word"
  | "word_dash"
  | "base64"
  | "space"
  | "assign"
  | "pem_label"
  | "url_token";

function isClass(cls: CharClass, c: number): boolean {
  const digit = c >= 48 && c <= 57;
  const upper = c >= 65 && c <= 90;
  const lower = c >= 97 && c <= 122;
  switch (cls) {
    case "alnum":
      return digit || upper || lower;
    case "alpha":
      return upper || lower;
    case "upper_digit":
      return digit || upper;
    case "digit":
      return digit;
    case "hex":
      return digit || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
    case "word":
      return digit || upper || lower || c === 95;
    case "word_dash":
      return digit || upper || lower || c === 95 || c === 45;
    case "base64":
      return digit || upper || lower || c === 43 || c === 47 || c === 61;
    case "space":
      return c === 32 || c === 9;
    case "assign":
      // Between a key and its value: blanks, `=`, `:`, quotes.
      return c === 32 || c === 9 || c === 61 || c === 58 || c === 34 || c === 39;
    case "pem_label":
      return digit || upper || c === 32;
    case "url_token":
      return digit || upper || lower || c === 47 || c === 95 || c === 43;
  }
}

/** One piece of a rule's tail. */
export type TailPart =
  | {
    /** A run of `cls` characters: at least `min`, taking at most `max` (never giving back). */
    readonly run: CharClass;
    readonly min: number;
    readonly max: number;
    /** The run's text, without trailing blanks, must end with one of these. */
    readonly endsWith?: readonly string[];
  }
  | { readonly literal: string }
  | {
    /** Somewhere in the next `within` characters, a run of at least `min` `seek` characters. */
    readonly seek: CharClass;
    readonly min: number;
    readonly within: number;
  };

/** One kind of secret content. */
export interface ContentRule {
  /** Stable id: audit reasons name it as `protected:content:<id>`. */
  readonly id: string;
  /** What it is. */
  readonly why: string;
  /** The scanner rule(s) it was learnt from. */
  readonly source: string;
  /** Literal anchors; the rule is tried at every occurrence of each. */
  readonly anchors: readonly string[];
  /** What must follow an anchor. */
  readonly tail: readonly TailPart[];
  /** Whether the character before the anchor must not be a word character (default true). */
  readonly boundary?: boolean;
  /** A character of this class right after the match makes it no match (a longer word). */
  readonly notFollowedBy?: CharClass;
  /** Documented placeholders: a match ending with this is not a secret (AWS's `…EXAMPLE`). */
  readonly placeholderSuffix?: string;
}

const run = (cls: CharClass, min: number, max = min): TailPart => ({ run: cls, min, max });
const lit = (literal: string): TailPart => ({ literal });

/** Every content rule (the more specific first, where two could match the same text). */
export const CONTENT_RULES: readonly ContentRule[] = Object.freeze([
  {
    id: "gcp-service-account-key",
    why: "a Google Cloud service-account key file (JSON with a private key and its id)",
    source: 'shhgit "Google (GCM) Service account"; gitleaks gcp rules',
    anchors: ['"private_key_id"'],
    boundary: false,
    tail: [run("space", 0, 8), lit(":"), run("space", 0, 8), lit('"'), run("hex", 40), lit('"')],
  },
  {
    id: "private-key",
    why: "a PEM private key block: RSA, EC, DSA, OPENSSH, PKCS#8, ENCRYPTED, PGP, SSH2",
    source:
      "gitleaks private-key; detect-secrets PrivateKeyDetector; pre-commit detect-private-key",
    anchors: ["-----BEGIN ", "---- BEGIN "],
    boundary: false,
    tail: [
      { run: "pem_label", min: 11, max: 64, endsWith: ["PRIVATE KEY", "PRIVATE KEY BLOCK"] },
      lit("-"),
      // The key itself: code that only compares a header line is not a key.
      { seek: "base64", min: 40, within: 256 },
    ],
  },
  {
    id: "putty-private-key",
    why: "a PuTTY private key file",
    source: "detect-secrets PrivateKeyDetector; pre-commit detect-private-key",
    anchors: ["PuTTY-User-Key-File-"],
    tail: [run("digit", 1, 2), lit(":")],
  },
  {
    id: "age-secret-key",
    why: "an age encryption secret key",
    source: "gitleaks age-secret-key",
    anchors: ["AGE-SECRET-KEY-1"],
    tail: [run("upper_digit", 58)],
  },
  {
    id: "aws-access-key-id",
    why: "an AWS access key id (long-term AKIA, temporary ASIA, …)",
    source: "gitleaks aws-access-token; shhgit; detect-secrets AWSKeyDetector",
    anchors: ["AKIA", "ASIA", "ABIA", "ACCA"],
    tail: [run("upper_digit", 16)],
    notFollowedBy: "word",
    placeholderSuffix: "EXAMPLE",
  },
  {
    id: "aws-secret-access-key",
    why: "an AWS secret access key assigned to its usual name",
    source: "shhgit AWS Secret Access Key; detect-secrets AWSKeyDetector",
    anchors: ["aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"],
    tail: [run("assign", 1, 8), run("base64", 40)],
    notFollowedBy: "base64",
    placeholderSuffix: "EXAMPLEKEY",
  },
  {
    id: "github-token",
    why: "a GitHub token (personal, OAuth, user-to-server, server-to-server, refresh)",
    source: "gitleaks github-pat, github-oauth, github-app-token, github-refresh-token",
    anchors: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
    tail: [run("alnum", 36)],
  },
  {
    id: "github-fine-grained-pat",
    why: "a GitHub fine-grained personal access token",
    source: "gitleaks github-fine-grained-pat",
    anchors: ["github_pat_"],
    tail: [run("word", 82)],
  },
  {
    id: "gitlab-token",
    why: "a GitLab personal access token",
    source: "gitleaks gitlab-pat, gitlab-pat-routable",
    anchors: ["glpat-"],
    tail: [run("word_dash", 20)],
  },
  {
    id: "slack-token",
    why: "a Slack bot, user, app or refresh token",
    source: "gitleaks slack-bot-token, slack-user-token, slack-legacy-token; shhgit",
    anchors: ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxo-", "xoxe-"],
    tail: [run("digit", 1, 13), lit("-"), run("word_dash", 8)],
  },
  {
    id: "slack-webhook",
    why: "a Slack incoming-webhook URL (anyone holding it can post)",
    source: "gitleaks slack-webhook-url; shhgit",
    anchors: ["hooks.slack.com/services/"],
    boundary: false,
    tail: [run("url_token", 40)],
  },
  {
    id: "stripe-live-key",
    why: "a Stripe live or production secret / restricted key (test-mode keys are left out)",
    source: "gitleaks stripe-access-token; shhgit",
    anchors: ["sk_live_", "rk_live_", "sk_prod_", "rk_prod_"],
    tail: [run("alnum", 20)],
  },
  {
    id: "google-api-key",
    why: "a Google API key",
    source: "gitleaks gcp-api-key; shhgit",
    anchors: ["AIza"],
    tail: [run("word_dash", 35)],
    notFollowedBy: "word_dash",
  },
  {
    id: "google-oauth-access-token",
    why: "a Google OAuth access token",
    source: "shhgit Google OAuth Access Token",
    anchors: ["ya29."],
    tail: [run("word_dash", 30)],
  },
  {
    id: "anthropic-api-key",
    why: "an Anthropic API or admin key",
    source: "gitleaks anthropic-api-key, anthropic-admin-api-key",
    anchors: ["sk-ant-"],
    tail: [run("word_dash", 40)],
  },
  {
    id: "openai-api-key",
    why: "an OpenAI project, service-account or admin key",
    source: "gitleaks openai-api-key",
    anchors: ["sk-proj-", "sk-svcacct-", "sk-admin-"],
    tail: [run("word_dash", 40)],
  },
  {
    id: "openai-legacy-key",
    why: "an OpenAI user key (the T3BlbkFJ marker is base64 of OpenAI)",
    source: "gitleaks openai-api-key",
    anchors: ["sk-"],
    tail: [run("alnum", 20), lit("T3BlbkFJ"), run("alnum", 20)],
  },
  {
    id: "npm-token",
    why: "an npm access token",
    source: "gitleaks npm-access-token",
    anchors: ["npm_"],
    tail: [run("alnum", 36)],
    notFollowedBy: "alnum",
  },
  {
    id: "pypi-token",
    why: "a PyPI upload token (its macaroon starts with the base64 of pypi.org)",
    source: "gitleaks pypi-upload-token",
    anchors: ["pypi-AgEIcHlwaS5vcmc"],
    tail: [run("word_dash", 50)],
  },
  {
    id: "huggingface-token",
    why: "a Hugging Face access token",
    source: "gitleaks huggingface-access-token",
    anchors: ["hf_"],
    tail: [run("alpha", 34)],
    notFollowedBy: "word",
  },
  {
    id: "hashicorp-vault-token",
    why: "a HashiCorp Vault service or batch token",
    source: "gitleaks vault-service-token, vault-batch-token",
    anchors: ["hvs.", "hvb."],
    tail: [run("word_dash", 90)],
  },
  {
    id: "digitalocean-token",
    why: "a DigitalOcean personal, OAuth or refresh token",
    source: "gitleaks digitalocean-pat, digitalocean-access-token, digitalocean-refresh-token",
    anchors: ["dop_v1_", "doo_v1_", "dor_v1_"],
    tail: [run("hex", 64)],
  },
  {
    id: "sendgrid-api-key",
    why: "a SendGrid API key",
    source: "gitleaks sendgrid-api-token; shhgit",
    anchors: ["SG."],
    tail: [run("word_dash", 22), lit("."), run("word_dash", 43)],
  },
  {
    id: "shopify-token",
    why: "a Shopify access token or shared secret",
    source: "gitleaks shopify-access-token, shopify-shared-secret, …",
    anchors: ["shpat_", "shpss_", "shpca_", "shppa_"],
    tail: [run("hex", 32)],
  },
  {
    id: "databricks-token",
    why: "a Databricks API token",
    source: "gitleaks databricks-api-token",
    anchors: ["dapi"],
    tail: [run("hex", 32)],
    notFollowedBy: "alnum",
  },
]);

/** The longest text a rule can span: how far past a read's cut the scan must look. */
export const SECRET_SCAN_LOOKAHEAD = 512;

/** What a scan found: the first secret in the text, and the rule that knows it. */
export interface SecretFound {
  readonly rule: string;
  /** UTF-16 index of the anchor in the scanned text. */
  readonly index: number;
}

/** The classes, in bit order. */
const CLASSES: readonly CharClass[] = Object.freeze([
  "alnum",
  "alpha",
  "upper_digit",
  "digit",
  "hex",
  "word",
  "word_dash",
  "base64",
  "space",
  "assign",
  "pem_label",
  "url_token",
]);

const bit = (cls: CharClass): number => 1 << CLASSES.indexOf(cls);

/** A tail part with its class as a bit mask. */
type Compiled =
  | {
    readonly kind: "run";
    readonly mask: number;
    readonly min: number;
    readonly max: number;
    readonly endsWith: readonly string[] | undefined;
  }
  | { readonly kind: "literal"; readonly literal: string }
  | { readonly kind: "seek"; readonly mask: number; readonly min: number; readonly within: number };

/** One anchor, compiled: the rule it starts and what must follow it. */
interface Entry {
  readonly anchor: string;
  readonly rule: ContentRule;
  readonly boundary: boolean;
  readonly tail: readonly Compiled[];
  /** 0: nothing is checked after the match. */
  readonly notFollowedBy: number;
}

/**
 * A compiled rule table: one pass over the text, dispatching on each character to the anchors
 * that start with it (skipping, inside a word, the anchors that must start one), then a bounded
 * possessive match of the tail. Build one per runtime and reuse it.
 */
export class SecretScanner {
  /** Anchors by their first two characters, `first * 128 + second` (all anchors are ASCII). */
  readonly #byPair: readonly (readonly Entry[] | undefined)[];
  /** For each ASCII character, the bits of the classes it belongs to. */
  readonly #masks: Uint16Array;

  /**
   * Compiles `rules`.
   * @throws {TypeError} for an anchor that is empty or not ASCII.
   */
  constructor(readonly rules: readonly ContentRule[] = CONTENT_RULES) {
    this.#masks = new Uint16Array(128);
    for (let c = 0; c < 128; c++) {
      for (const cls of CLASSES) if (isClass(cls, c)) this.#masks[c]! |= bit(cls);
    }
    const byPair: Entry[][] = [];
    for (const rule of rules) {
      const tail = rule.tail.map((part): Compiled =>
        "literal" in part
          ? { kind: "literal", literal: part.literal }
          : "seek" in part
          ? { kind: "seek", mask: bit(part.seek), min: part.min, within: part.within }
          : {
            kind: "run",
            mask: bit(part.run),
            min: part.min,
            max: part.max,
            endsWith: part.endsWith,
          }
      );
      for (const anchor of rule.anchors) {
        if (anchor.length < 2 || [...anchor].some((c) => c.charCodeAt(0) > 127)) {
          throw new TypeError(
            `Secret rule ${rule.id}: anchor ${
              JSON.stringify(anchor)
            } must be ASCII, 2 characters or more`,
          );
        }
        (byPair[anchor.charCodeAt(0) * 128 + anchor.charCodeAt(1)] ??= []).push({
          anchor,
          rule,
          boundary: rule.boundary ?? true,
          tail,
          notFollowedBy: rule.notFollowedBy === undefined ? 0 : bit(rule.notFollowedBy),
        });
      }
    }
    this.#byPair = Array.from({ length: 128 * 128 }, (_, k) => byPair[k]);
  }

  #mask(text: string, at: number): number {
    const c = text.charCodeAt(at);
    return c < 128 ? this.#masks[c]! : 0;
  }

  /** The end of the match of `tail` from `at`, or -1. Possessive: no part gives back text. */
  #tail(text: string, at: number, tail: readonly Compiled[]): number {
    let p = at;
    for (const part of tail) {
      if (part.kind === "literal") {
        if (!text.startsWith(part.literal, p)) return -1;
        p += part.literal.length;
      } else if (part.kind === "seek") {
        const limit = Math.min(text.length, p + part.within);
        let length = 0;
        for (; p < limit && length < part.min; p++) {
          length = this.#mask(text, p) & part.mask ? length + 1 : 0;
        }
        if (length < part.min) return -1;
      } else {
        const start = p;
        const limit = Math.min(text.length, p + part.max);
        while (p < limit && this.#mask(text, p) & part.mask) p++;
        if (p - start < part.min) return -1;
        if (part.endsWith) {
          const taken = text.slice(start, p).trimEnd();
          if (!part.endsWith.some((end) => taken.endsWith(end))) return -1;
        }
      }
    }
    return p;
  }

  /** The end of the match of `entry` at `at`, or -1. */
  #matchEnd(text: string, at: number, entry: Entry): number {
    if (!text.startsWith(entry.anchor, at)) return -1;
    const end = this.#tail(text, at + entry.anchor.length, entry.tail);
    if (end < 0) return -1;
    if (entry.notFollowedBy && end < text.length && this.#mask(text, end) & entry.notFollowedBy) {
      return -1;
    }
    const placeholder = entry.rule.placeholderSuffix;
    return placeholder === undefined || !text.slice(at, end).endsWith(placeholder) ? end : -1;
  }

  /** Every secret from `from` on, in order, each with where its match ends. Linear. */
  *#all(text: string, from = 0): Generator<SecretFound & { readonly end: number }> {
    const byPair = this.#byPair;
    const n = text.length;
    let previousWord = from > 0 && isWordChar(text.charCodeAt(from - 1));
    let c = text.charCodeAt(from);
    for (let i = from; i < n; i++) {
      // NaN past the end: no anchor pair matches it.
      const next = text.charCodeAt(i + 1);
      if ((c | next) < 128) {
        const entries = byPair[(c << 7) | next];
        if (entries !== undefined) {
          for (const entry of entries) {
            if (entry.boundary && previousWord) continue;
            const end = this.#matchEnd(text, i, entry);
            if (end >= 0) {
              yield { rule: entry.rule.id, index: i, end };
              break;
            }
          }
        }
      }
      previousWord = isWordChar(c);
      c = next;
    }
  }

  /** The first secret in `text` (by position), or undefined. Linear in the text. */
  scan(text: string): SecretFound | undefined {
    for (const found of this.#all(text)) return { rule: found.rule, index: found.index };
    return undefined;
  }

  /**
   * `text` with every secret replaced by `[redacted: RULE]` (a key block through its `END` line,
   * or to the end of the text when it has none), and the rules found. For output a command
   * already printed: it cannot ask any more, so what it would show is withheld. Linear.
   */
  redact(text: string): { readonly text: string; readonly rules: readonly string[] } {
    const rules: string[] = [];
    let out = "";
    let kept = 0;
    let from = 0;
    for (;;) {
      const found = this.#all(text, from).next();
      if (found.done) break;
      const { rule, index } = found.value;
      let end = found.value.end;
      if (BLOCK_RULES.includes(rule)) {
        const close = END_MARKERS.map((m) => text.indexOf(m, end)).filter((i) => i >= 0);
        if (close.length === 0) end = text.length;
        else {
          const newline = text.indexOf("\n", Math.min(...close));
          end = newline < 0 ? text.length : newline;
        }
      }
      out += `${text.slice(kept, index)}[redacted: ${rule}]`;
      if (!rules.includes(rule)) rules.push(rule);
      kept = end;
      from = end;
    }
    return { text: rules.length === 0 ? text : out + text.slice(kept), rules };
  }
}

/** Rules whose match is the head of a block: redaction takes the block through its end. */
const BLOCK_RULES: readonly string[] = Object.freeze(["private-key", "putty-private-key"]);
/** How a key block ends (PEM, SSH2 and PuTTY forms). */
const END_MARKERS: readonly string[] = Object.freeze(["-----END ", "---- END ", "Private-MAC:"]);

function isWordChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}

/** The first secret in `text` by `rules` (a {@link SecretScanner} built for this call). */
export function scanSecrets(
  text: string,
  rules: readonly ContentRule[] = CONTENT_RULES,
): SecretFound | undefined {
  return new SecretScanner(rules).scan(text);
}
