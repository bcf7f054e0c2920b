/**
 * `renderApprovalRequest(request)`: what a human reads before deciding (DESIGN §5). One field per
 * line, each value through `escapePreview()`, so nothing an agent wrote — a path, content, a
 * reason — can move the cursor, clear the screen, reorder text, hide characters or forge a line.
 * Multiline content (a preview, a unified diff) keeps its line breaks but every one of its lines
 * starts with a gutter (`  │ `), so a line of content can never pass for a field or a verdict
 * ("APPROVED") printed by libos.
 *
 * @module
 */
import type { CapabilityResource } from "../authority/capability.ts";
import { escapePreview } from "../base/escape_preview.ts";
import type { HumanRequest } from "./human_request.ts";

/** How much of each kind of field is shown before the truncation marker. */
const LIMITS = Object.freeze({ field: 300, path: 4096, text: 4000, block: 20_000 });

/** How many arguments of an argv are shown, one line each; the rest are counted. */
const MAX_ARGS = 64;

/** One line per argument: escaped once, no quoting an argument could imitate. */
function argvLines(label: string, argv: readonly string[]): string[] {
  const shown = argv.slice(0, MAX_ARGS).map((arg, i) => line(`${label}[${i}]`, arg, LIMITS.text));
  if (argv.length > MAX_ARGS) {
    shown.push(
      `${label}: …[${argv.length - MAX_ARGS} more argument${
        argv.length - MAX_ARGS === 1 ? "" : "s"
      } not shown; --json shows every one]`,
    );
  }
  return shown;
}

/** The gutter every line of a multiline block starts with. */
export const GUTTER = "  │ ";

function line(
  label: string,
  value: string | number | boolean | null | undefined,
  max: number = LIMITS.field,
): string {
  const shown = value === null || value === undefined
    ? "-"
    : typeof value === "boolean"
    ? (value ? "yes" : "no")
    : escapePreview(String(value), { maxChars: max });
  return `${label}: ${shown}`;
}

function block(label: string, text: string | null, max: number = LIMITS.block): string[] {
  if (text === null) return [`${label}: -`];
  const escaped = escapePreview(text, { multiline: true, maxChars: max });
  return [`${label}:`, ...escaped.split("\n").map((l) => `${GUTTER}${l}`)];
}

/** A stored time as ISO 8601; a number no date can hold is shown as the number, never thrown on. */
export function formatTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${ms} (not a valid time)` : date.toISOString();
}

const SCOPES: Readonly<Record<CapabilityResource["scope"], string>> = Object.freeze({
  exact: "exactly this one",
  prefix: "everything that starts with this",
  subtree: "this directory and everything below it",
  any: "every resource of this type",
});

/** A requested resource, one unambiguous part per line (no notation an agent could imitate). */
function resourceLines(r: CapabilityResource): string[] {
  return [
    line("requested type", r.type),
    ...(r.type === "fs"
      ? [line("requested path", r.path, LIMITS.path)]
      : r.type === "shell"
      ? argvLines("requested argv", r.argv)
      : [line("requested key", r.key, LIMITS.path)]),
    line("requested scope", `${r.scope} (${SCOPES[r.scope]})`),
  ];
}

function facts(target: NonNullable<NonNullable<HumanRequest["approval"]>["target"]>): string {
  if (!target.exists) return "does not exist yet";
  const parts = [target.type ?? "unknown type"];
  if (target.size !== null) parts.push(`${target.size} bytes`);
  if (target.mtime !== null) parts.push(`modified ${formatTime(target.mtime)}`);
  if (target.links !== null && target.links > 1) parts.push(`${target.links} hard links`);
  return parts.join(", ");
}

/** The request as lines of text, every untrusted value escaped. */
export function renderApprovalRequest(request: HumanRequest): string {
  const out = [
    `${
      request.kind === "approval"
        ? "Approval"
        : request.kind === "permission"
        ? "Permission"
        : request.kind === "question"
        ? "Question"
        : request.kind === "output"
        ? "Message"
        : "Interrupt"
    } request ${request.id} (${request.status})`,
    line("process", request.pid),
    line("created", formatTime(request.createdAt)),
    line("expires", request.expiresAt === null ? null : formatTime(request.expiresAt)),
  ];
  const a = request.approval;
  if (a) {
    out.push(
      line("primitive", a.primitive),
      line("operation", a.operation),
      line("path", a.path, LIMITS.path),
      line("absolute path", a.absolutePath, LIMITS.path),
      line("resource", a.resource, LIMITS.path),
      line("right", a.right),
      line("why it asks", a.reason),
      line("grant scope", a.grantScope),
      line("will create", a.willCreate),
      line("will overwrite", a.willOverwrite),
      line("target", a.target ? facts(a.target) : null),
      line("bytes", a.bytes),
      line("sha256", a.sha256),
    );
    if (a.executable !== null) {
      out.push(
        line("executable", a.executable, LIMITS.path),
        ...argvLines("argv", a.argv ?? []),
        line("cwd", a.cwd, LIMITS.path),
        line("environment hash", a.envHash),
      );
    }
    out.push(line("digest", a.digest));
    if (a.justification) {
      out.push(...block("the model's stated reason (its words, not checked)", a.justification));
    }
    if (a.diff !== null) out.push(...block("diff", a.diff));
    else out.push(...block("preview", a.preview, LIMITS.text));
  }
  if (request.permission) {
    const p = request.permission;
    out.push(
      ...resourceLines(p.resource),
      line("requested rights", p.rights.join(", ")),
      ...block("their reason", p.reason, LIMITS.text),
    );
  }
  if (request.text !== null) {
    out.push(
      ...block(request.kind === "question" ? "question" : "text", request.text, LIMITS.text),
    );
  }
  if (request.response) {
    const r = request.response;
    out.push(
      line("decided by", r.by),
      line("decided at", formatTime(r.at)),
      ...(r.always ? [line("allow always", r.always)] : []),
      ...(r.reason !== undefined ? [line("reason", r.reason, LIMITS.text)] : []),
      ...(r.answer !== undefined ? block("answer", r.answer, LIMITS.text) : []),
      ...(r.capabilities?.length ? [line("capabilities minted", r.capabilities.join(", "))] : []),
    );
  }
  return out.join("\n");
}
