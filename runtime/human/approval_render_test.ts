import assert from "node:assert/strict";
import { renderApprovalRequest } from "./approval_render.ts";
import type { CapabilityResource } from "../authority/capability.ts";
import { type ApprovalDetails, HumanRequest } from "./human_request.ts";

// Expected renderings below are derived from the escaping contract (DESIGN §5, escape_preview.ts)
// and the layout the module documents, not copied from the function's output. `String.raw` keeps
// each expectation readable as exactly what the human sees: `\x1B` in one is four characters.

/** The gutter the module documents for every line of a multiline block. */
const G = "  │ ";

const ID = "hreq_0123456789ab";
const PID = "pid_3f2a9c01b7e4";
const CREATED = Date.UTC(2025, 0, 2, 3, 4, 5);
const CREATED_ISO = "2025-01-02T03:04:05.000Z";
const EXPIRES_ISO = "2025-01-02T04:04:05.000Z"; // an hour after CREATED
const DECIDED = CREATED + 60_000;
const DECIDED_ISO = "2025-01-02T03:05:05.000Z";
const SHA256 = "0123456789abcdef".repeat(4);
const DIGEST = `sha256:${"fedcba9876543210".repeat(4)}`;
const ENV_HASH = `sha256:${"00112233445566778899aabbccddeeff".repeat(2)}`;
/** How many arguments of an argv are shown, one line each (approval_render.ts's `MAX_ARGS`). */
const MAX_ARGS = 64;

/** `spec` written in Unicode tag characters (U+E0020–U+E007E), e.g. `gbeng`. */
function tags(spec: string): string {
  return Array.from(spec, (c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join("");
}

const BLACK_FLAG = "\u{1F3F4}";
const CANCEL_TAG = "\u{E007F}";
const ENGLAND = BLACK_FLAG + tags("gbeng") + CANCEL_TAG;
const SCOTLAND = BLACK_FLAG + tags("gbsct") + CANCEL_TAG;
const WALES = BLACK_FLAG + tags("gbwls") + CANCEL_TAG;
const MAN = "\u{1F468}";
const FAMILY = "\u{1F468}\u200D\u{1F469}\u200D\u{1F467}"; // man ZWJ woman ZWJ girl
const RAINBOW_FLAG = "\u{1F3F3}\uFE0F\u200D\u{1F308}"; // white flag VS16 ZWJ rainbow
const HEART = "\u2764";
const RED_HEART = "\u2764\uFE0F";
const KEYCAP_ONE = "1\uFE0F\u20E3";
const KEYCAP_HASH = "#\uFE0F\u20E3";
const JAPAN = "\u{1F1EF}\u{1F1F5}"; // regional indicators J P
const THUMBS_UP_MEDIUM = "\u{1F44D}\u{1F3FD}";

// ---------------------------------------------------------------------------------- fixtures

function approvalDetails(overrides: Partial<ApprovalDetails> = {}): ApprovalDetails {
  return {
    primitive: "fs.write",
    operation: "write",
    path: "src/app.ts",
    absolutePath: "/srv/project/src/app.ts",
    resource: "fs:src/app.ts",
    right: "write",
    reason: "mode:workspace-write",
    grantScope: "this action, once",
    willCreate: false,
    willOverwrite: true,
    target: { exists: true, type: "file", size: 12, mtime: CREATED, links: 1 },
    bytes: 20,
    sha256: SHA256,
    preview: "hello",
    diff: null,
    executable: null,
    argv: null,
    cwd: null,
    envHash: null,
    digest: DIGEST,
    action: { primitive: "fs.write", args: { path: "src/app.ts" } },
    ...overrides,
  };
}

/** A stored request, parsed by the `HumanRequest` schema so that every fixture is a real one. */
function humanRequest(fields: Partial<HumanRequest>): HumanRequest {
  return HumanRequest.parse(unchecked(fields));
}

/**
 * The same request without schema validation: the renderer must stay safe and bounded even on
 * data the schema would refuse (a database edited outside libos).
 */
function unchecked(fields: Partial<HumanRequest>): HumanRequest {
  return ({
    id: ID,
    pid: PID,
    kind: "approval",
    status: "pending",
    approval: null,
    text: null,
    permission: null,
    response: null,
    createdAt: CREATED,
    updatedAt: CREATED,
    expiresAt: CREATED + 3_600_000,
    ...fields,
  }) as HumanRequest;
}

/** The times the head shows, as the lines render them (ISO 8601 unless a row says otherwise). */
interface HeadTimes {
  readonly created?: string;
  readonly expires?: string;
}

function head(kind: string, status: string, times: HeadTimes = {}): string[] {
  return [
    `${kind} request ${ID} (${status})`,
    `process: ${PID}`,
    `created: ${times.created ?? CREATED_ISO}`,
    `expires: ${times.expires ?? EXPIRES_ISO}`,
  ];
}

interface ApprovalSlots extends HeadTimes {
  readonly path?: readonly string[];
  readonly absolutePath?: readonly string[];
  readonly reason?: readonly string[];
  readonly target?: readonly string[];
  /** The executable, argv, cwd and environment hash lines, shown only for shell-shaped actions. */
  readonly shell?: readonly string[];
  readonly content?: readonly string[];
}

/** The rendering of the approval fixture, with the lines of one field replaced. */
function approvalLines(slots: ApprovalSlots, status = "pending"): string[] {
  return [
    ...head("Approval", status, slots),
    "primitive: fs.write",
    "operation: write",
    ...(slots.path ?? ["path: src/app.ts"]),
    ...(slots.absolutePath ?? ["absolute path: /srv/project/src/app.ts"]),
    "resource: fs:src/app.ts",
    "right: write",
    ...(slots.reason ?? ["why it asks: mode:workspace-write"]),
    "grant scope: this action, once",
    "will create: no",
    "will overwrite: yes",
    ...(slots.target ?? [`target: file, 12 bytes, modified ${CREATED_ISO}`]),
    "bytes: 20",
    `sha256: ${SHA256}`,
    ...(slots.shell ?? []),
    `digest: ${DIGEST}`,
    ...(slots.content ?? ["preview:", `${G}hello`]),
  ];
}

/** What each scope means, in the words the rendering contract gives the human. */
const SCOPE_MEANING: Readonly<Record<CapabilityResource["scope"], string>> = {
  exact: "exactly this one",
  prefix: "everything that starts with this",
  subtree: "this directory and everything below it",
  any: "every resource of this type",
};

/** The line naming a requested scope and what it means. */
function scopeLine(scope: CapabilityResource["scope"]): string {
  return `requested scope: ${scope} (${SCOPE_MEANING[scope]})`;
}

/** A permission request for `resource`, asking for `rights`, with a plain reason. */
function permissionRequest(
  resource: CapabilityResource,
  rights: readonly string[],
): HumanRequest {
  return humanRequest({
    kind: "permission",
    permission: { resource, rights: [...rights], reason: "need it for the build" },
  });
}

/** The rendering of a permission request, given the lines its resource renders as. */
function permissionLines(resourceLines: readonly string[], rights: string): string[] {
  return [
    ...head("Permission", "pending"),
    ...resourceLines,
    `requested rights: ${rights}`,
    "their reason:",
    `${G}need it for the build`,
  ];
}

const DECIDED_LINES = ["decided by: human:terminal", `decided at: ${DECIDED_ISO}`];

/** Where a row puts its untrusted string: a field of the `HumanRequest` schema. */
type Field =
  | "approval.path"
  | "approval.absolutePath"
  | "approval.reason"
  | "approval.preview"
  | "approval.diff"
  | "permission.path"
  | "permission.key"
  | "permission.reason"
  | "text"
  | "response.reason"
  | "response.answer";

/** Where a row puts its untrusted list of arguments. */
type ArgvField = "approval.argv" | "permission.argv";

interface FieldFixture<Input> {
  /** A valid request carrying `input` in the field. */
  readonly request: (input: Input) => HumanRequest;
  /** The whole expected rendering, given the expected lines of the field. */
  readonly rendering: (lines: readonly string[]) => string;
}

const FIELDS: Readonly<Record<Field, FieldFixture<string>>> = {
  "approval.path": {
    request: (input) => humanRequest({ approval: approvalDetails({ path: input }) }),
    rendering: (lines) => approvalLines({ path: lines }).join("\n"),
  },
  "approval.absolutePath": {
    request: (input) => humanRequest({ approval: approvalDetails({ absolutePath: input }) }),
    rendering: (lines) => approvalLines({ absolutePath: lines }).join("\n"),
  },
  "approval.reason": {
    request: (input) => humanRequest({ approval: approvalDetails({ reason: input }) }),
    rendering: (lines) => approvalLines({ reason: lines }).join("\n"),
  },
  "approval.preview": {
    request: (input) => humanRequest({ approval: approvalDetails({ preview: input }) }),
    rendering: (lines) => approvalLines({ content: lines }).join("\n"),
  },
  "approval.diff": {
    // A diff, when there is one, is shown instead of the preview.
    request: (input) => humanRequest({ approval: approvalDetails({ diff: input }) }),
    rendering: (lines) => approvalLines({ content: lines }).join("\n"),
  },
  "permission.path": {
    request: (input) => permissionRequest({ type: "fs", path: input, scope: "subtree" }, ["write"]),
    rendering: (lines) =>
      permissionLines(["requested type: fs", ...lines, scopeLine("subtree")], "write").join("\n"),
  },
  "permission.key": {
    request: (input) =>
      permissionRequest({ type: "net", key: input, scope: "prefix" }, ["connect"]),
    rendering: (lines) =>
      permissionLines(["requested type: net", ...lines, scopeLine("prefix")], "connect").join("\n"),
  },
  "permission.reason": {
    request: (input) =>
      humanRequest({
        kind: "permission",
        permission: {
          resource: { type: "fs", path: "src", scope: "subtree" },
          rights: ["write"],
          reason: input,
        },
      }),
    rendering: (lines) =>
      [
        ...head("Permission", "pending"),
        "requested type: fs",
        "requested path: src",
        scopeLine("subtree"),
        "requested rights: write",
        ...lines,
      ].join("\n"),
  },
  "text": {
    request: (input) => humanRequest({ kind: "question", text: input }),
    rendering: (lines) => [...head("Question", "pending"), ...lines].join("\n"),
  },
  "response.reason": {
    request: (input) =>
      humanRequest({
        status: "rejected",
        approval: approvalDetails(),
        response: { by: "human:terminal", at: DECIDED, reason: input },
      }),
    rendering: (lines) => [...approvalLines({}, "rejected"), ...DECIDED_LINES, ...lines].join("\n"),
  },
  "response.answer": {
    request: (input) =>
      humanRequest({
        kind: "question",
        status: "answered",
        text: "Which branch?",
        response: { by: "human:terminal", at: DECIDED, answer: input },
      }),
    rendering: (lines) =>
      [
        ...head("Question", "answered"),
        "question:",
        `${G}Which branch?`,
        ...DECIDED_LINES,
        ...lines,
      ].join("\n"),
  },
};

const ARGV_FIELDS: Readonly<Record<ArgvField, FieldFixture<readonly string[]>>> = {
  "approval.argv": {
    // Only a shell-shaped action has an executable, and only then are argv, cwd and env shown.
    request: (argv) =>
      humanRequest({
        approval: approvalDetails({
          executable: "/usr/bin/git",
          argv: [...argv],
          cwd: "/srv/project",
          envHash: ENV_HASH,
        }),
      }),
    rendering: (lines) =>
      approvalLines({
        shell: [
          "executable: /usr/bin/git",
          ...lines,
          "cwd: /srv/project",
          `environment hash: ${ENV_HASH}`,
        ],
      }).join("\n"),
  },
  "permission.argv": {
    request: (argv) =>
      permissionRequest({ type: "shell", argv: [...argv], scope: "exact" }, ["execute"]),
    rendering: (lines) =>
      permissionLines(["requested type: shell", ...lines, scopeLine("exact")], "execute").join(
        "\n",
      ),
  },
};

interface TextRow {
  readonly name: string;
  readonly field: Field;
  readonly input: string;
  /** The exact lines the field renders as; every other line of the request stays as it was. */
  readonly expected: readonly string[];
}

interface ArgvRow {
  readonly name: string;
  readonly field: ArgvField;
  readonly argv: readonly string[];
  /** The exact lines the arguments render as; every other line of the request stays as it was. */
  readonly expected: readonly string[];
}

type Row = TextRow | ArgvRow;

// ---------------------------------------------------------------------------------- hostile rows

const HOSTILE_ROWS: readonly Row[] = [
  {
    name: "ANSI clear screen and cursor home in a path",
    field: "approval.path",
    input: "\x1b[2J\x1b[Hsrc/app.ts",
    expected: [String.raw`path: \x1B[2J\x1B[Hsrc/app.ts`],
  },
  {
    name: "cursor up and erase line rewriting the reason libos asks",
    field: "approval.reason",
    input: "protected:**/.git/**\x1b[1A\x1b[2Kmode:read-only",
    expected: [String.raw`why it asks: protected:**/.git/**\x1B[1A\x1B[2Kmode:read-only`],
  },
  {
    name: "cursor up and erase line inside a preview",
    field: "approval.preview",
    input: "ok\n\x1b[1A\x1b[2Kharmless",
    expected: ["preview:", `${G}ok`, String.raw`${G}\x1B[1A\x1B[2Kharmless`],
  },
  {
    name: "OSC 8 hyperlink ended by ST in a diff",
    field: "approval.diff",
    input: "+see \x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\",
    expected: ["diff:", String.raw`${G}+see \x1B]8;;https://evil.example/\x1B\\docs\x1B]8;;\x1B\\`],
  },
  {
    name: "OSC 8 hyperlink ended by BEL in a path",
    field: "approval.path",
    input: "\x1b]8;;https://evil.example/\x07src/app.ts\x1b]8;;\x07",
    expected: [String.raw`path: \x1B]8;;https://evil.example/\x07src/app.ts\x1B]8;;\x07`],
  },
  {
    name: "OSC 0 window title ended by BEL in a question",
    field: "text",
    input: "\x1b]0;libos: approved\x07Which branch?",
    expected: ["question:", String.raw`${G}\x1B]0;libos: approved\x07Which branch?`],
  },
  {
    name: "OSC 0 window title ended by ST in a permission reason",
    field: "permission.reason",
    input: "\x1b]0;sudo\x1b\\need write",
    expected: ["their reason:", String.raw`${G}\x1B]0;sudo\x1B\\need write`],
  },
  {
    name: "8-bit C1 CSI, OSC and ST in a permission reason",
    field: "permission.reason",
    input: "\u009b2J\u009b31mgrant\u009d0;t\u009c",
    expected: ["their reason:", String.raw`${G}\x9B2J\x9B31mgrant\x9D0;t\x9C`],
  },
  {
    name: "bare CR overwriting a one-line path",
    field: "approval.path",
    input: "safe.txt\rAPPROVED",
    expected: [String.raw`path: safe.txt\rAPPROVED`],
  },
  {
    name: "bare CR overwriting a line inside a preview",
    field: "approval.preview",
    input: "echo safe\rrm -rf ~  \nnext",
    expected: ["preview:", String.raw`${G}echo safe\rrm -rf ~  `, `${G}next`],
  },
  {
    name: "LF forging a libos header and verdict after a one-line path",
    field: "approval.path",
    input: `x\nApproval request ${ID} (approved)\ndecided by: human`,
    expected: [String.raw`path: x\nApproval request ${ID} (approved)\ndecided by: human`],
  },
  {
    name: "CRLF forging a field after the reason libos asks",
    field: "approval.reason",
    input: "mode:workspace-write\r\nwill overwrite: no",
    expected: [String.raw`why it asks: mode:workspace-write\r\nwill overwrite: no`],
  },
  {
    name: "LF forging a verdict in the response reason",
    field: "response.reason",
    input: "ok\ndecided by: human\nallow always: subtree",
    expected: [String.raw`reason: ok\ndecided by: human\nallow always: subtree`],
  },
  {
    name: "Unicode line and paragraph separators and NEL forging lines in a path",
    field: "approval.path",
    input: "x\u2028decided by: human\u2029\u0085will create: no",
    expected: [String.raw`path: x\u{2028}decided by: human\u{2029}\x85will create: no`],
  },
  {
    name: "fake field and verdict lines in a preview stay behind the gutter",
    field: "approval.preview",
    input: `hello\nwill overwrite: no\ndecided by: human\nApproval request ${ID} (approved)`,
    expected: [
      "preview:",
      `${G}hello`,
      `${G}will overwrite: no`,
      `${G}decided by: human`,
      `${G}Approval request ${ID} (approved)`,
    ],
  },
  {
    name: "fake answer and verdict lines in an answer stay behind the gutter",
    field: "response.answer",
    input: "main\nanswer: main\n\x1b[2Jdecided by: human",
    expected: ["answer:", `${G}main`, `${G}answer: main`, String.raw`${G}\x1B[2Jdecided by: human`],
  },
  {
    name: "right-to-left override reversing a file extension in a path",
    field: "approval.path",
    input: "invoice\u202Etxt.exe",
    expected: [String.raw`path: invoice\u{202E}txt.exe`],
  },
  {
    name: "Trojan Source override and isolates commenting out a check in a diff",
    field: "approval.diff",
    input:
      "-if (!isAdmin) return;\n+/*\u202E } \u2066if (isAdmin)\u2069 \u2066 begin admins only */",
    expected: [
      "diff:",
      `${G}-if (!isAdmin) return;`,
      String.raw`${G}+/*\u{202E} } \u{2066}if (isAdmin)\u{2069} \u{2066} begin admins only */`,
    ],
  },
  {
    name: "first-strong and right-to-left isolates, embedding and RLM in a question",
    field: "text",
    input: "\u2068abc\u2069 \u2067fed\u2069 \u202Aq\u202C \u200F",
    expected: [
      "question:",
      String.raw`${G}\u{2068}abc\u{2069} \u{2067}fed\u{2069} \u{202A}q\u{202C} \u{200F}`,
    ],
  },
  {
    name: "zero-width space splitting a path",
    field: "approval.path",
    input: "pay\u200Bpal/config.json",
    expected: [String.raw`path: pay\u{200B}pal/config.json`],
  },
  {
    name: "zero-width joiner and non-joiner between letters in a path",
    field: "approval.path",
    input: "rm\u200D\u200C.txt",
    expected: [String.raw`path: rm\u{200D}\u{200C}.txt`],
  },
  {
    name: "zero-width joiner after an emoji with no emoji to join in a question",
    field: "text",
    input: `${MAN}\u200Dx`,
    expected: ["question:", String.raw`${G}${MAN}\u{200D}x`],
  },
  {
    name: "byte order mark and word joiner in a preview",
    field: "approval.preview",
    input: "\uFEFFimport \u2060x",
    expected: ["preview:", String.raw`${G}\u{FEFF}import \u{2060}x`],
  },
  {
    name: "tag characters smuggling an instruction after ordinary text",
    field: "text",
    input: `ok${tags("approve")}`,
    expected: [
      "question:",
      String.raw`${G}ok\u{E0061}\u{E0070}\u{E0070}\u{E0072}\u{E006F}\u{E0076}\u{E0065}`,
    ],
  },
  {
    name: "tag characters behind a black flag with no cancel tag in a path",
    field: "approval.path",
    input: `${BLACK_FLAG}${tags("gbeng")}.txt`,
    expected: [String.raw`path: ${BLACK_FLAG}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}.txt`],
  },
  {
    // Only gbeng, gbsct and gbwls are RGI tag sequences (UTS #51); any other tag spec behind a
    // black flag is no emoji a terminal draws, so its tag characters would hide the word "ignore".
    name: "tag characters spelling a word behind a black flag, shaped like a subdivision flag",
    field: "text",
    input: `${BLACK_FLAG}${tags("ignore")}${CANCEL_TAG}`,
    expected: [
      "question:",
      String.raw`${G}${BLACK_FLAG}\u{E0069}\u{E0067}\u{E006E}\u{E006F}\u{E0072}\u{E0065}\u{E007F}`,
    ],
  },
  {
    // US-CA is a real CLDR subdivision, so the spec is well-formed, but it is not RGI: the tag
    // characters would be drawn as nothing (or as a bare black flag) while they stay in the bytes.
    name: "tag characters of a subdivision that is not RGI (usca) behind a black flag",
    field: "text",
    input: `${BLACK_FLAG}${tags("usca")}${CANCEL_TAG}`,
    expected: [
      "question:",
      String.raw`${G}${BLACK_FLAG}\u{E0075}\u{E0073}\u{E0063}\u{E0061}\u{E007F}`,
    ],
  },
  {
    name: "a tag spec longer than any RGI flag's (gbengland) behind a black flag in a path",
    field: "approval.path",
    input: `${BLACK_FLAG}${tags("gbengland")}${CANCEL_TAG}.svg`,
    expected: [
      String.raw`path: ${BLACK_FLAG}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}` +
      String.raw`\u{E006C}\u{E0061}\u{E006E}\u{E0064}\u{E007F}.svg`,
    ],
  },
  {
    name: "VS16, VS15 and VS1 after a letter in a path",
    field: "approval.path",
    input: "a\uFE0F\uFE0E\uFE00.txt",
    expected: [String.raw`path: a\u{FE0F}\u{FE0E}\u{FE00}.txt`],
  },
  {
    name: "a second VS16 after an emoji, and VS15 after a heart, in a question",
    field: "text",
    input: `${RED_HEART}\uFE0F ${HEART}\uFE0E`,
    expected: ["question:", String.raw`${G}${RED_HEART}\u{FE0F} ${HEART}\u{FE0E}`],
  },
  {
    name: "DEL and NUL in a path",
    field: "approval.path",
    input: "a\x7f\0b.txt",
    expected: [String.raw`path: a\x7F\x00b.txt`],
  },
  {
    name: "backspaces overwriting a command in a question",
    field: "text",
    input: "rm -rf /\b\b\b\bls",
    expected: ["question:", String.raw`${G}rm -rf /\x08\x08\x08\x08ls`],
  },
  {
    name: "lone surrogate in a path",
    field: "approval.path",
    input: "a\uD800b",
    expected: [String.raw`path: a\u{D800}b`],
  },
  {
    name: "Hangul filler and soft hyphen hiding in a path",
    field: "approval.path",
    input: "src/\u3164/ad\u00ADmin.ts",
    expected: [String.raw`path: src/\u{3164}/ad\u{00AD}min.ts`],
  },
  {
    name: "typed backslash-x1b imitating an escape in a path renders with its backslash doubled",
    field: "approval.path",
    input: String.raw`\x1b[2J`,
    expected: [String.raw`path: \\x1b[2J`],
  },
  {
    name: "typed escapes next to real ones in a preview stay distinguishable",
    field: "approval.preview",
    input: "\\x1B[2J\x1b[2J\\u{202E}\u202E\\n",
    expected: ["preview:", String.raw`${G}\\x1B[2J\x1B[2J\\u{202E}\u{202E}\\n`],
  },
  {
    name: "typed backslash-n imitating an escaped LF in the response reason",
    field: "response.reason",
    input: String.raw`ok\nwill overwrite: no`,
    expected: [String.raw`reason: ok\\nwill overwrite: no`],
  },
  {
    name: "over-long reason libos asks truncated at 300 code points with the marker",
    field: "approval.reason",
    input: "a".repeat(310),
    expected: [`why it asks: ${"a".repeat(300)}…[truncated 10 chars]`],
  },
  {
    name: "over-long run of ESC truncated by input code points, not by output length",
    field: "approval.reason",
    input: "\x1b".repeat(305),
    expected: [`why it asks: ${String.raw`\x1B`.repeat(300)}…[truncated 5 chars]`],
  },
  {
    name: "over-long path truncated at 4096 code points with the marker",
    field: "approval.path",
    input: "dir/".repeat(1030),
    expected: [`path: ${"dir/".repeat(1024)}…[truncated 24 chars]`],
  },
  {
    name: "over-long preview truncated at 4000 code points, the marker behind the gutter",
    field: "approval.preview",
    input: `${"line\n".repeat(1000)}tail`,
    expected: ["preview:", ...Array<string>(800).fill(`${G}line`), `${G}…[truncated 1004 chars]`],
  },
  {
    name: "over-long diff truncated at 20000 code points with the marker",
    field: "approval.diff",
    input: "+x\n".repeat(7000),
    expected: ["diff:", ...Array<string>(6666).fill(`${G}+x`), `${G}+x…[truncated 1000 chars]`],
  },
  {
    name: "over-long question cut before an emoji sequence, never inside it",
    field: "text",
    input: `${"a".repeat(3999)}${FAMILY}b`,
    expected: ["question:", `${G}${"a".repeat(3999)}…[truncated 6 chars]`],
  },
  {
    name: "right-to-left override reversing the extension of a requested path",
    field: "permission.path",
    input: "bin/\u202Egnp.sh",
    expected: [String.raw`requested path: bin/\u{202E}gnp.sh`],
  },
  {
    name: "LF in a requested path forging a narrower scope line",
    field: "permission.path",
    input: `build\n${scopeLine("exact")}`,
    expected: [String.raw`requested path: build\nrequested scope: exact (exactly this one)`],
  },
  {
    name: "ANSI erase line and cursor column in a requested key",
    field: "permission.key",
    input: "\x1b[2K\x1b[1Gapi.example.com",
    expected: [String.raw`requested key: \x1B[2K\x1B[1Gapi.example.com`],
  },
  {
    name: "bare CR in a requested key overwriting it with a harmless-looking host",
    field: "permission.key",
    input: "evil.example\rapi.example.com",
    expected: [String.raw`requested key: evil.example\rapi.example.com`],
  },
  {
    name: `", " and "]" in one shell argument faking argument boundaries stay on its own line`,
    field: "permission.argv",
    argv: ["git", `status", "--short"], ["rm", "-rf", "/`, "--short"],
    expected: [
      "requested argv[0]: git",
      `requested argv[1]: status", "--short"], ["rm", "-rf", "/`,
      "requested argv[2]: --short",
    ],
  },
  {
    name: "LF in a shell argument forging the next argument and a wider scope",
    field: "permission.argv",
    argv: ["ls", `x\nrequested argv[2]: /\n${scopeLine("any")}`],
    expected: [
      "requested argv[0]: ls",
      String.raw`requested argv[1]: x\nrequested argv[2]: /\n` +
      "requested scope: any (every resource of this type)",
    ],
  },
  {
    name: "shell argument at the schema's 4096 maximum truncated at 4000 code points",
    field: "permission.argv",
    argv: ["echo", "b".repeat(4096)],
    expected: [
      "requested argv[0]: echo",
      `requested argv[1]: ${"b".repeat(4000)}…[truncated 96 chars]`,
    ],
  },
  {
    name: "256 shell arguments, the schema's maximum: 64 lines, then one counting the other 192",
    field: "permission.argv",
    argv: Array.from({ length: 256 }, (_, i) => `x${i}`),
    expected: [
      ...Array.from({ length: MAX_ARGS }, (_, i) => `requested argv[${i}]: x${i}`),
      "requested argv: …[192 more arguments not shown; --json shows every one]",
    ],
  },
  {
    name: `quotes and ", " in an argument imitating the JSON argv notation stay on its own line`,
    field: "approval.argv",
    argv: ["push", `origin", "--force`],
    expected: ["argv[0]: push", `argv[1]: origin", "--force`],
  },
  {
    name: "LF in an argument forging the next argument",
    field: "approval.argv",
    argv: ["status", "--short\nargv[2]: --force"],
    expected: ["argv[0]: status", String.raw`argv[1]: --short\nargv[2]: --force`],
  },
  {
    name: "CR and ANSI erase line in an argument rewriting the command shown",
    field: "approval.argv",
    argv: ["status\r\x1b[2Kpush", "--force"],
    expected: [String.raw`argv[0]: status\r\x1B[2Kpush`, "argv[1]: --force"],
  },
  {
    name: "right-to-left override in an argument",
    field: "approval.argv",
    argv: ["add", "\u202Ecod.exe"],
    expected: ["argv[0]: add", String.raw`argv[1]: \u{202E}cod.exe`],
  },
  {
    name: "argument over 4000 code points truncated with the marker",
    field: "approval.argv",
    argv: ["a".repeat(4001)],
    expected: [`argv[0]: ${"a".repeat(4000)}…[truncated 1 chars]`],
  },
  {
    name: "a 65th argument past the cap is counted on a line of its own, not dropped silently",
    field: "approval.argv",
    argv: [...Array<string>(MAX_ARGS).fill("status"), "--force"],
    expected: [
      ...Array.from({ length: MAX_ARGS }, (_, i) => `argv[${i}]: status`),
      "argv: …[1 more argument not shown; --json shows every one]",
    ],
  },
];

// ---------------------------------------------------------------------------------- benign rows

const BENIGN_ROWS: readonly Row[] = [
  {
    name: "plain ASCII path",
    field: "approval.path",
    input: "lib/util/strings.ts",
    expected: ["path: lib/util/strings.ts"],
  },
  {
    name: "path with spaces and parentheses",
    field: "approval.path",
    input: "My Documents/notes 2024 (final).md",
    expected: ["path: My Documents/notes 2024 (final).md"],
  },
  {
    name: "CJK path",
    field: "approval.path",
    input: "文档/报告.txt",
    expected: ["path: 文档/报告.txt"],
  },
  {
    name: "CJK question",
    field: "text",
    input: "这个文件可以覆盖吗？",
    expected: ["question:", `${G}这个文件可以覆盖吗？`],
  },
  {
    name: "accented Latin, precomposed and with a combining accent",
    field: "approval.path",
    input: "café/résumé-naïve-e\u0301.txt",
    expected: ["path: café/résumé-naïve-e\u0301.txt"],
  },
  {
    name: "Arabic and Hebrew letters without bidi controls",
    field: "text",
    input: "مرحبا שלום",
    expected: ["question:", `${G}مرحبا שלום`],
  },
  {
    name: "family emoji ZWJ sequence",
    field: "text",
    input: `${FAMILY} family photo?`,
    expected: ["question:", `${G}${FAMILY} family photo?`],
  },
  {
    name: "keycap emoji sequences",
    field: "text",
    input: `press ${KEYCAP_ONE} or ${KEYCAP_HASH}`,
    expected: ["question:", `${G}press ${KEYCAP_ONE} or ${KEYCAP_HASH}`],
  },
  {
    name: "regional indicator flag in a path",
    field: "approval.path",
    input: `flags/${JAPAN}.svg`,
    expected: [`path: flags/${JAPAN}.svg`],
  },
  {
    name: "England subdivision flag (tag sequence) in a path",
    field: "approval.path",
    input: `flags/${ENGLAND}.svg`,
    expected: [`path: flags/${ENGLAND}.svg`],
  },
  {
    name: "skin-tone modifier and emoji presentation sequence in a permission reason",
    field: "permission.reason",
    input: `thanks ${THUMBS_UP_MEDIUM} ${RED_HEART}`,
    expected: ["their reason:", `${G}thanks ${THUMBS_UP_MEDIUM} ${RED_HEART}`],
  },
  {
    name: "rainbow flag ZWJ sequence in the response reason",
    field: "response.reason",
    input: `looks fine ${RAINBOW_FLAG}`,
    expected: [`reason: looks fine ${RAINBOW_FLAG}`],
  },
  {
    name: "multi-line unified diff keeps each line behind the gutter",
    field: "approval.diff",
    input: "--- a/src/app.ts\n+++ b/src/app.ts\n@@ -1,2 +1,2 @@\n-const a = 1;\n" +
      "+const a = 2;\n const b = 3;\n",
    expected: [
      "diff:",
      `${G}--- a/src/app.ts`,
      `${G}+++ b/src/app.ts`,
      `${G}@@ -1,2 +1,2 @@`,
      `${G}-const a = 1;`,
      `${G}+const a = 2;`,
      `${G} const b = 3;`,
      // The diff's final LF ends a last, empty line, which still gets its gutter.
      G,
    ],
  },
  {
    name: "tabs in a preview are shown as \\t, not expanded",
    field: "approval.preview",
    input: "all:\n\tgo build\t# tab",
    expected: ["preview:", `${G}all:`, String.raw`${G}\tgo build\t# tab`],
  },
  {
    name: "tab in a one-line path is shown as \\t",
    field: "approval.path",
    input: "a\tb.txt",
    expected: [String.raw`path: a\tb.txt`],
  },
  {
    name: "Windows absolute path shows each backslash doubled",
    field: "approval.absolutePath",
    input: "C:\\Users\\me\\app.ts",
    expected: [String.raw`absolute path: C:\\Users\\me\\app.ts`],
  },
  {
    name: "multi-line answer",
    field: "response.answer",
    input: "line one\nline two",
    expected: ["answer:", `${G}line one`, `${G}line two`],
  },
  {
    name: "empty preview",
    field: "approval.preview",
    input: "",
    expected: ["preview:", G],
  },
  {
    name: "path of exactly 4096 code points is not truncated",
    field: "approval.path",
    input: "a".repeat(4096),
    expected: [`path: ${"a".repeat(4096)}`],
  },
  {
    name: "Scotland and Wales subdivision flags (tag sequences) in a question",
    field: "text",
    input: `${SCOTLAND} or ${WALES}?`,
    expected: ["question:", `${G}${SCOTLAND} or ${WALES}?`],
  },
  {
    name: "requested path of 4096 code points, the schema's maximum, is shown whole",
    field: "permission.path",
    input: "a".repeat(4096),
    expected: [`requested path: ${"a".repeat(4096)}`],
  },
  {
    // Like a path, a key is never cut short: a truncated key would hide part of what is granted.
    name: "requested key of 4096 code points, the schema's maximum, is shown whole",
    field: "permission.key",
    input: "k".repeat(4096),
    expected: [`requested key: ${"k".repeat(4096)}`],
  },
  {
    name: "requested key with a port",
    field: "permission.key",
    input: "api.example.com:443",
    expected: ["requested key: api.example.com:443"],
  },
  {
    name: "arguments with spaces and commas, one line each and unquoted",
    field: "approval.argv",
    argv: ["commit", "-m", "fix: a, b"],
    expected: ["argv[0]: commit", "argv[1]: -m", "argv[2]: fix: a, b"],
  },
  {
    name: "an empty argument still gets its own line",
    field: "approval.argv",
    argv: ["log", "", "--oneline"],
    expected: ["argv[0]: log", "argv[1]: ", "argv[2]: --oneline"],
  },
  {
    name: "Windows path argument shows each backslash doubled",
    field: "approval.argv",
    argv: ["-C", "C:\\work\\repo"],
    expected: ["argv[0]: -C", String.raw`argv[1]: C:\\work\\repo`],
  },
  {
    name: "CJK and an emoji ZWJ sequence in an argument",
    field: "approval.argv",
    argv: ["commit", "-m", `修复 ${FAMILY}`],
    expected: ["argv[0]: commit", "argv[1]: -m", `argv[2]: 修复 ${FAMILY}`],
  },
  {
    name: "no arguments: no argv lines at all",
    field: "approval.argv",
    argv: [],
    expected: [],
  },
  {
    name: "exactly 64 shell arguments are all shown, with no line counting more",
    field: "permission.argv",
    argv: Array.from({ length: MAX_ARGS }, (_, i) => `t${i}`),
    expected: Array.from({ length: MAX_ARGS }, (_, i) => `requested argv[${i}]: t${i}`),
  },
];

/** The row's request and its whole expected rendering. */
function fixtureOf(row: Row): { readonly request: HumanRequest; readonly expected: string } {
  if ("argv" in row) {
    const fixture = ARGV_FIELDS[row.field];
    return { request: fixture.request(row.argv), expected: fixture.rendering(row.expected) };
  }
  const fixture = FIELDS[row.field];
  return { request: fixture.request(row.input), expected: fixture.rendering(row.expected) };
}

function renderRow(row: Row): { readonly actual: string; readonly expected: string } {
  const { request, expected } = fixtureOf(row);
  return { actual: renderApprovalRequest(request), expected };
}

Deno.test("renderApprovalRequest() shows each hostile value as visible escapes inside its own field, exactly as the escaping contract says", async (t) => {
  for (const row of HOSTILE_ROWS) {
    await t.step(`${row.field}: ${row.name}`, () => {
      const { actual, expected } = renderRow(row);
      assert.strictEqual(actual, expected);
    });
  }
});

Deno.test("renderApprovalRequest() shows benign paths, CJK, accents and emoji sequences unchanged and keeps diff lines behind the gutter", async (t) => {
  for (const row of BENIGN_ROWS) {
    await t.step(`${row.field}: ${row.name}`, () => {
      const { actual, expected } = renderRow(row);
      assert.strictEqual(actual, expected);
    });
  }
});

// ------------------------------------------------------------------------ requested resources

interface ResourceRow {
  readonly name: string;
  readonly resource: CapabilityResource;
  readonly rights: readonly string[];
  /** The exact lines the resource renders as, from `requested type` to `requested scope`. */
  readonly expected: readonly string[];
}

/** Every type of resource the schema allows with every scope it allows for that type. */
const RESOURCE_ROWS: readonly ResourceRow[] = [
  {
    name: "one file",
    resource: { type: "fs", path: "src/app.ts", scope: "exact" },
    rights: ["read"],
    expected: ["requested type: fs", "requested path: src/app.ts", scopeLine("exact")],
  },
  {
    name: "a directory and everything below it",
    resource: { type: "fs", path: "src", scope: "subtree" },
    rights: ["write", "delete"],
    expected: ["requested type: fs", "requested path: src", scopeLine("subtree")],
  },
  {
    // The old one-line notation showed this as `fs:src/**`, the same text as the src subtree.
    name: "a file literally named ** under src reads differently from the src subtree",
    resource: { type: "fs", path: "src/**", scope: "exact" },
    rights: ["write"],
    expected: ["requested type: fs", "requested path: src/**", scopeLine("exact")],
  },
  {
    name: "the whole workspace",
    resource: { type: "fs", path: ".", scope: "subtree" },
    rights: ["read"],
    expected: ["requested type: fs", "requested path: .", scopeLine("subtree")],
  },
  {
    name: "one exact command",
    resource: { type: "shell", argv: ["git", "status"], scope: "exact" },
    rights: ["execute"],
    expected: [
      "requested type: shell",
      "requested argv[0]: git",
      "requested argv[1]: status",
      scopeLine("exact"),
    ],
  },
  {
    name: "every command that starts with these arguments",
    resource: { type: "shell", argv: ["git"], scope: "prefix" },
    rights: ["execute"],
    expected: ["requested type: shell", "requested argv[0]: git", scopeLine("prefix")],
  },
  {
    name: "every command, with no arguments to show",
    resource: { type: "shell", argv: [], scope: "any" },
    rights: ["execute"],
    expected: ["requested type: shell", scopeLine("any")],
  },
  {
    name: "one network host",
    resource: { type: "net", key: "api.example.com:443", scope: "exact" },
    rights: ["connect"],
    expected: ["requested type: net", "requested key: api.example.com:443", scopeLine("exact")],
  },
  {
    name: "every namespace under a prefix",
    resource: { type: "namespace", key: "jobs/", scope: "prefix" },
    rights: ["list", "create"],
    expected: ["requested type: namespace", "requested key: jobs/", scopeLine("prefix")],
  },
  {
    name: "every tool",
    resource: { type: "tool", key: "search", scope: "any" },
    rights: ["invoke"],
    expected: ["requested type: tool", "requested key: search", scopeLine("any")],
  },
  {
    name: "one process",
    resource: { type: "process", key: "pid_3f2a", scope: "exact" },
    rights: ["signal"],
    expected: ["requested type: process", "requested key: pid_3f2a", scopeLine("exact")],
  },
];

Deno.test("renderApprovalRequest() shows a requested resource as its type, its path, key or each argument, and its scope in words", async (t) => {
  for (const row of RESOURCE_ROWS) {
    await t.step(`${row.resource.type} ${row.resource.scope}: ${row.name}`, () => {
      const actual = renderApprovalRequest(permissionRequest(row.resource, row.rights));
      const expected = permissionLines(row.expected, row.rights.join(", ")).join("\n");
      assert.strictEqual(actual, expected);
    });
  }
});

// ---------------------------------------------------------------------------------- times

/** One more millisecond than a Date can hold (ECMA-262: ±8.64e15 ms around the epoch). */
const PAST_LATEST = 8_640_000_000_000_001;

interface TimeRow {
  readonly name: string;
  readonly request: HumanRequest;
  readonly expected: readonly string[];
}

const TIME_ROWS: readonly TimeRow[] = [
  {
    name: "a created time past the last Date and a target modified at 1e17 ms",
    request: humanRequest({
      createdAt: PAST_LATEST,
      approval: approvalDetails({
        target: { exists: true, type: "file", size: 12, mtime: 1e17, links: 1 },
      }),
    }),
    expected: approvalLines({
      created: "8640000000000001 (not a valid time)",
      target: ["target: file, 12 bytes, modified 100000000000000000 (not a valid time)"],
    }),
  },
  {
    name: "an expiry before the first Date and a decision at the largest safe integer",
    request: humanRequest({
      status: "rejected",
      expiresAt: -PAST_LATEST,
      approval: approvalDetails(),
      response: { by: "human:terminal", at: Number.MAX_SAFE_INTEGER },
    }),
    expected: [
      ...approvalLines({ expires: "-8640000000000001 (not a valid time)" }, "rejected"),
      "decided by: human:terminal",
      "decided at: 9007199254740991 (not a valid time)",
    ],
  },
  {
    // The ends of the range still are valid times, in ECMA-262's expanded-year ISO format.
    name: "the last and the first time a Date can hold are shown as ISO 8601",
    request: humanRequest({
      createdAt: 8.64e15,
      approval: approvalDetails({
        target: { exists: true, type: "file", size: 12, mtime: -8.64e15, links: 1 },
      }),
    }),
    expected: approvalLines({
      created: "+275760-09-13T00:00:00.000Z",
      target: ["target: file, 12 bytes, modified -271821-04-20T00:00:00.000Z"],
    }),
  },
];

Deno.test("renderApprovalRequest() shows a time no Date can hold as its number, marked not a valid time, instead of throwing, and the ends of the range as ISO 8601", async (t) => {
  for (const row of TIME_ROWS) {
    await t.step(row.name, () => {
      assert.strictEqual(renderApprovalRequest(row.request), row.expected.join("\n"));
    });
  }
});

// ------------------------------------------------------------------------- whole-text checks

/** The only tag sequences let through: the three subdivision flags that are RGI emoji. */
const RGI_TAG_FLAGS = [ENGLAND, SCOTLAND, WALES];
const INVISIBLE =
  /[\p{Default_Ignorable_Code_Point}\p{Bidi_Control}\u2028\u2029\uFFF9-\uFFFB\u{E0000}-\u{E007F}]/u;
const JOINS_AFTER = /[\p{Extended_Pictographic}\p{Emoji_Modifier}\p{Regional_Indicator}\uFE0F]/u;
const EMOJI = /\p{Emoji}/u;

/**
 * The first code point in `text` that could drive, reorder or hide what a terminal shows,
 * described, or `undefined`. LF is allowed (it separates the lines); ZWJ only between emoji;
 * VS16 only after an emoji; tag characters only inside an RGI subdivision flag. Written
 * independently of escape_preview.ts.
 */
function unsafeCodePoint(text: string): string | undefined {
  let rest = text;
  for (const flag of RGI_TAG_FLAGS) rest = rest.replaceAll(flag, BLACK_FLAG);
  const chars = Array.from(rest);
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i] ?? "";
    const cp = ch.codePointAt(0) ?? -1;
    const where = `U+${cp.toString(16).toUpperCase().padStart(4, "0")} at code point ${i}`;
    if (cp === 0x0a) continue;
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return `control ${where}`;
    if (cp >= 0xd800 && cp <= 0xdfff) return `lone surrogate ${where}`;
    if (!INVISIBLE.test(ch)) continue;
    const before = chars[i - 1] ?? "";
    const after = chars[i + 1] ?? "";
    if (cp === 0x200d && JOINS_AFTER.test(before) && EMOJI.test(after)) continue;
    if (cp === 0xfe0f && EMOJI.test(before)) continue;
    return `invisible ${where}`;
  }
  return undefined;
}

/** Labels of one-line fields: `label: value`. */
const LINE_LABELS = [
  "process",
  "created",
  "expires",
  "primitive",
  "operation",
  "path",
  "absolute path",
  "resource",
  "right",
  "why it asks",
  "grant scope",
  "will create",
  "will overwrite",
  "target",
  "bytes",
  "sha256",
  "executable",
  "cwd",
  "environment hash",
  "digest",
  "requested type",
  "requested path",
  "requested key",
  "requested scope",
  "requested rights",
  "decided by",
  "decided at",
  "allow always",
  "reason",
  "capabilities minted",
];
/** Labels of multiline blocks: `label:` then gutter lines, or `label: -` when absent. */
const BLOCK_LABELS = ["preview", "diff", "their reason", "question", "text", "answer"];
/** Lists shown one argument a line, `argv[0]: …`, with at most one line counting the rest. */
const ARGV_LISTS = ["argv", "requested argv"];
const ARGUMENT = /^(argv|requested argv)\[(0|[1-9][0-9]*)\]: /;
const MORE_ARGUMENTS =
  /^(argv|requested argv): …\[([1-9][0-9]*) more arguments? not shown; --json shows every one\]$/;
const HEADER =
  /^(?:Approval|Permission|Question|Message|Interrupt) request hreq_[0-9a-f]{12} \((?:pending|approved|rejected|expired|answered|delivered|dispatched|cancelled)\)$/;

/**
 * Why the layout of `text` would let agent-written content pass for libos's own lines, or
 * `undefined`: the header must be the first line and only there; every other line must open
 * with a field label (each label once) or with the gutter, and gutter lines may only follow
 * a block label or another gutter line. Arguments are labelled `argv[i]` (or `requested
 * argv[i]`), each index once and in order from 0, at most MAX_ARGS of them; the line counting
 * the rest comes once, right after the last one shown.
 */
function layoutProblem(text: string): string | undefined {
  const lines = text.split("\n");
  if (!HEADER.test(lines[0] ?? "")) return `first line is not the header: ${lines[0]}`;
  const seen = new Set<string>();
  /** How many arguments of each list have been shown so far. */
  const shown = new Map<string, number>(ARGV_LISTS.map((list) => [list, 0]));
  let inBlock = false;
  for (let i = 1; i < lines.length; i++) {
    const l = lines[i] ?? "";
    const where = `line ${i}: ${JSON.stringify(l.slice(0, 60))}`;
    if (l.startsWith(G)) {
      if (!inBlock) return `gutter line outside a block at ${where}`;
      continue;
    }
    inBlock = false;
    const argument = ARGUMENT.exec(l);
    const more = MORE_ARGUMENTS.exec(l);
    if (argument !== null || more !== null) {
      const list = argument?.[1] ?? more?.[1] ?? "";
      const label = argument === null ? list : `${list}[${argument[2]}]`;
      const count = shown.get(list) ?? 0;
      if (seen.has(label)) return `label "${label}" appears twice, at ${where}`;
      seen.add(label);
      if (more !== null) {
        if (count !== MAX_ARGS) {
          return `"${list}" counts more arguments after only ${count} shown, at ${where}`;
        }
        if (lines[i - 1]?.startsWith(`${list}[${MAX_ARGS - 1}]: `) !== true) {
          return `"${list}" counts more arguments away from the last one shown, at ${where}`;
        }
        continue;
      }
      if (Number(argument?.[2]) !== count) {
        return `argument "${label}" out of order, ${list}[${count}] expected, at ${where}`;
      }
      if (count === MAX_ARGS) return `more than ${MAX_ARGS} arguments of "${list}" at ${where}`;
      shown.set(list, count + 1);
      continue;
    }
    const block = BLOCK_LABELS.find((b) => l === `${b}:` || l === `${b}: -`);
    const label = block ?? LINE_LABELS.find((b) => l.startsWith(`${b}: `));
    if (label === undefined) return `line opens with no field label and no gutter at ${where}`;
    if (seen.has(label)) return `label "${label}" appears twice, at ${where}`;
    seen.add(label);
    inBlock = block !== undefined && l === `${block}:`;
  }
  return undefined;
}

Deno.test("renderApprovalRequest() output for each hostile request carries no raw control, bidi or invisible character and no line an agent could make look like a field or a verdict", async (t) => {
  // The checkers must catch what they are for, or the loop below proves nothing.
  assert.match(unsafeCodePoint("a\x1b[2J") ?? "", /^control U\+001B/);
  assert.match(unsafeCodePoint("a\u009bb") ?? "", /^control U\+009B/);
  assert.match(unsafeCodePoint("a\rb") ?? "", /^control U\+000D/);
  assert.match(unsafeCodePoint("a\u202Eb") ?? "", /^invisible U\+202E/);
  assert.match(unsafeCodePoint("a\u200Db") ?? "", /^invisible U\+200D/);
  assert.match(unsafeCodePoint("a\uFE0F") ?? "", /^invisible U\+FE0F/);
  assert.match(unsafeCodePoint(`ok${tags("x")}`) ?? "", /^invisible U\+E0078/);
  assert.match(unsafeCodePoint(`${BLACK_FLAG}${tags("ignore")}${CANCEL_TAG}`) ?? "", /^invisible/);
  assert.match(unsafeCodePoint(`${BLACK_FLAG}${tags("usca")}${CANCEL_TAG}`) ?? "", /^invisible/);
  assert.strictEqual(
    unsafeCodePoint(
      `${FAMILY}${ENGLAND}${SCOTLAND}${WALES}${RED_HEART}${KEYCAP_ONE}${RAINBOW_FLAG}\n`,
    ),
    undefined,
  );
  assert.match(
    layoutProblem(`Approval request ${ID} (pending)\npath: a\n${G}x`) ?? "",
    /^gutter line outside a block/,
  );
  assert.match(
    layoutProblem(`Approval request ${ID} (pending)\npath: a\ndecided by: human\npath: b`) ?? "",
    /^label "path" appears twice/,
  );
  assert.match(
    layoutProblem(`Approval request ${ID} (pending)\nAPPROVED`) ?? "",
    /^line opens with no field label/,
  );
  assert.match(
    layoutProblem(
      `Approval request ${ID} (pending)\npreview:\n${G}a\nApproval request ${ID} (x)`,
    ) ??
      "",
    /^line opens with no field label/,
  );
  // The old one-line JSON argv is no layout the renderer has any more.
  assert.match(
    layoutProblem(`Approval request ${ID} (pending)\nargv: ["git", "status"]`) ?? "",
    /^line opens with no field label/,
  );
  const header = `Approval request ${ID} (pending)`;
  const args = (list: string, n: number) => Array.from({ length: n }, (_, i) => `${list}[${i}]: a`);
  const more = (list: string) => `${list}: …[1 more argument not shown; --json shows every one]`;
  assert.match(
    layoutProblem([header, "argv[0]: a", "argv[0]: b"].join("\n")) ?? "",
    /^label "argv\[0\]" appears twice/,
  );
  assert.match(
    layoutProblem([header, "requested argv[0]: a", "requested argv[2]: b"].join("\n")) ?? "",
    /^argument "requested argv\[2\]" out of order/,
  );
  assert.match(
    layoutProblem([header, ...args("argv", MAX_ARGS + 1)].join("\n")) ?? "",
    /^more than 64 arguments of "argv"/,
  );
  assert.match(
    layoutProblem([header, ...args("argv", 2), more("argv")].join("\n")) ?? "",
    /^"argv" counts more arguments after only 2 shown/,
  );
  assert.match(
    layoutProblem([header, ...args("argv", MAX_ARGS), "cwd: /", more("argv")].join("\n")) ?? "",
    /^"argv" counts more arguments away from the last one shown/,
  );
  assert.match(
    layoutProblem([header, ...args("argv", MAX_ARGS), more("argv"), more("argv")].join("\n")) ??
      "",
    /^label "argv" appears twice/,
  );
  assert.strictEqual(
    layoutProblem(
      [
        header,
        ...args("argv", MAX_ARGS),
        more("argv"),
        ...args("requested argv", MAX_ARGS),
        more("requested argv"),
      ].join("\n"),
    ),
    undefined,
  );

  for (const row of HOSTILE_ROWS) {
    await t.step(`${row.field}: ${row.name}`, () => {
      const text = renderApprovalRequest(fixtureOf(row).request);
      assert.strictEqual(unsafeCodePoint(text), undefined);
      assert.strictEqual(layoutProblem(text), undefined);
    });
  }
});

// ---------------------------------------------------------------------- maximally hostile request

/** approval_render.ts's `LIMITS` (not exported), restated: code points shown per kind of field. */
const LIMITS = { field: 300, path: 4096, text: 4000, block: 20_000 } as const;
/** The longest escape of one input code point: `\u{E01EF}`, a supplementary variation selector. */
const MAX_ESCAPE = String.raw`\u{E01EF}`.length;
/** Every label a line can open with, the highest argument index shown included. */
const ALL_LABELS = [...LINE_LABELS, ...BLOCK_LABELS, `requested argv[${MAX_ARGS - 1}]`];
/** The longest label of any line, with its `: `. */
const LONGEST_LABEL = Math.max(...ALL_LABELS.map((l) => l.length)) + ": ".length;
/** No count, of code points or of arguments left out, has more digits: nothing is that long. */
const LONGEST_COUNT = String(Number.MAX_SAFE_INTEGER);
const MARKER_MAX = `…[truncated ${LONGEST_COUNT} chars]`.length;
/** Longer than any label plus `: `, the first gutter, a truncation marker and the line's LF. */
const PER_FIELD_OVERHEAD = LONGEST_LABEL + G.length + MARKER_MAX + 1;
/** The longest line counting the arguments not shown, with its LF. */
const MORE_ARGUMENTS_MAX =
  `requested argv: …[${LONGEST_COUNT} more arguments not shown; --json shows every one]`.length + 1;
/**
 * Fields of the maximally hostile request (a shell permission) by the limit each is shown with:
 * one-line fields at `field`: process, created, expires, primitive, operation, right, why it
 * asks, grant scope, will create, will overwrite, target, bytes, sha256, environment hash,
 * digest, requested type, requested scope, requested rights, decided by, decided at, allow
 * always, capabilities minted; at `path`: path, absolute path, resource, executable, cwd; at
 * `text`: MAX_ARGS arguments of the approval's argv and MAX_ARGS of the requested argv, reason,
 * and the their reason, text and answer blocks; at `block`: the diff. Each argv also has one
 * line counting the arguments not shown.
 */
const FIELD_LIMITS = [
  ...Array<number>(22).fill(LIMITS.field),
  ...Array<number>(5).fill(LIMITS.path),
  ...Array<number>(2 * MAX_ARGS + 4).fill(LIMITS.text),
  LIMITS.block,
];
/** The longest header: the longest kind and the longest status, with its LF. */
const HEADER_MAX = `Permission request ${ID} (dispatched)`.length + 1;
/**
 * Every input code point renders as at most MAX_ESCAPE units (an LF in a block as LF plus the
 * gutter, 5 units), so a field shown with limit L takes at most MAX_ESCAPE × L units plus overhead.
 */
const RENDER_BOUND = HEADER_MAX + 2 * MORE_ARGUMENTS_MAX +
  FIELD_LIMITS.reduce((sum, limit) => sum + MAX_ESCAPE * limit + PER_FIELD_OVERHEAD, 0);

/** The largest string length the schema allows anywhere; used where a field has no maximum. */
const HUGE = 100_000;
/** Every hostile and emoji input above, one after the other. */
const MIX = [...HOSTILE_ROWS, ...BENIGN_ROWS]
  .map((r) => ("argv" in r ? r.argv.join("") : r.input).slice(0, 200))
  .join("") + `\u{E01EF}\uDBFF${WALES}${SCOTLAND}`;

/** `n` UTF-16 units of the mix, repeated; the cut may leave a lone surrogate, which is fine. */
function hostile(n: number): string {
  return MIX.repeat(Math.ceil(n / MIX.length)).slice(0, n);
}

/**
 * `n` UTF-16 units whose escapes are longest: the worst case for the size of the output. Per code
 * point that is U+E01EF (`\u{E01EF}`: 9 units out of 2 in), but where the schema caps a string at
 * fewer than two units per code point shown (4096 units against LIMITS.text), a one-unit
 * invisible, U+200B (`\u{200B}`: 8 units out of 1 in), renders longer.
 */
function longestEscapes(n: number): string {
  return n >= 2 * LIMITS.block ? "\u{E01EF}".repeat(Math.floor(n / 2)) : "\u200B".repeat(n);
}

/** Every string of the request at the schema's maximum (or HUGE), filled by `fill`. */
function maximallyHostile(
  kind: HumanRequest["kind"],
  fill: (n: number) => string,
): HumanRequest {
  // The largest time a Date can show: extreme, yet a valid ISO string.
  const latest = 8.64e15;
  return unchecked({
    pid: fill(HUGE),
    kind,
    status: "dispatched",
    createdAt: latest,
    updatedAt: latest,
    expiresAt: latest,
    approval: {
      primitive: fill(HUGE),
      operation: fill(HUGE),
      path: fill(HUGE),
      absolutePath: fill(HUGE),
      resource: fill(HUGE),
      right: fill(HUGE),
      reason: fill(HUGE),
      grantScope: fill(HUGE),
      willCreate: true,
      willOverwrite: true,
      target: {
        exists: true,
        type: fill(HUGE),
        size: Number.MAX_SAFE_INTEGER,
        mtime: latest,
        links: Number.MAX_SAFE_INTEGER,
      },
      bytes: Number.MAX_SAFE_INTEGER,
      sha256: fill(HUGE),
      preview: fill(HUGE),
      diff: fill(HUGE),
      executable: fill(HUGE),
      // The schema caps neither how many arguments nor how long each one is.
      argv: Array<string>(256).fill(fill(HUGE)),
      cwd: fill(HUGE),
      envHash: fill(HUGE),
      digest: fill(HUGE),
      action: { primitive: "fs.write", args: { content: fill(HUGE) } },
    },
    text: fill(HUGE),
    permission: {
      resource: {
        type: "shell",
        argv: Array.from({ length: 256 }, () => fill(4096)),
        scope: "prefix",
      },
      rights: Array.from({ length: 16 }, () => fill(HUGE)),
      reason: fill(4096),
    },
    response: {
      by: fill(HUGE),
      at: latest,
      answer: fill(HUGE),
      reason: fill(4096),
      always: "subtree",
      capabilities: Array.from({ length: 64 }, () => fill(4096)),
    },
  });
}

Deno.test("renderApprovalRequest() never throws on a maximally hostile request and stays within a size bound derived from its limits", () => {
  const fillers = [
    { name: "the mix of every row", fill: hostile },
    { name: "the longest escapes", fill: longestEscapes },
  ];
  // Every field over its limit carries the marker, and with either filler every string over its
  // limit is: 13 one-line fields at `field` (all but created, expires, will create, will
  // overwrite, bytes, requested type, requested scope, decided at and allow always), the 5 at
  // `path`, the MAX_ARGS arguments shown of each argv, reason, their reason, text and answer,
  // and the diff.
  const markers = 13 + 5 + 2 * MAX_ARGS + 4 + 1;
  const truncated = /…\[truncated \d+ chars\]/g;
  for (const { name, fill } of fillers) {
    // The strings the schema caps at 4096 units are over LIMITS.text, so they count above.
    assert.ok(Array.from(fill(4096)).length > LIMITS.text, `${name}: 4096 units fit the limit`);
    for (const kind of ["approval", "permission", "question", "output", "interrupt"] as const) {
      const what = `${kind} request filled with ${name}`;
      const text = renderApprovalRequest(maximallyHostile(kind, fill));
      assert.ok(
        text.length <= RENDER_BOUND,
        `${what}: ${text.length} UTF-16 units, more than the bound ${RENDER_BOUND}`,
      );
      assert.strictEqual(text.match(truncated)?.length, markers, what);
      assert.strictEqual(layoutProblem(text), undefined, what);
    }
  }
  // The bound is not vacuous: the worst case comes close to it.
  const worst = renderApprovalRequest(maximallyHostile("approval", longestEscapes)).length;
  assert.ok(worst > 0.8 * RENDER_BOUND, `worst case ${worst} is far below ${RENDER_BOUND}`);
});
