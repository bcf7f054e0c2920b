/**
 * The transcript of a run (issue 23), for `libos log PID`: everything a process left — kept while
 * it runs and retained after it finishes until `libos gc` — read back in order: its turns (the
 * model's text and tokens), each tool call with its arguments and result (a command's exit code
 * and output tail, an error), the diff of each edit (from the approval that showed it, else from
 * the edit's own arguments), every decision from the audit log with who or what decided it (the
 * rule, capability or mode; the human request and who answered it), its checkpoints, and at the
 * end the files it changed. Built from the store as it is; rendering it (escaped) is
 * `transcript_render.ts`.
 *
 * Where a record is gone (a run before retention, or one `libos gc` collected), the audit log
 * still holds every decision: the transcript says so instead of pretending.
 *
 * @module
 */
import type { AuditLog, AuditRecord } from "../audit/audit_log.ts";
import type { JsonValue } from "../base/canonical_json.ts";
import { NotFoundError } from "../base/errors.ts";
import { unifiedDiff } from "../base/unified_diff.ts";
import { HumanRequest } from "../human/human_request.ts";
import { processNamespace } from "../memory/memory_object.ts";
import type { ObjectMemory } from "../memory/object_memory.ts";
import type { AgentProcess } from "../process/process.ts";
import type { ProcessManager } from "../process/process_manager.ts";
import type { Store } from "../store/store.ts";
import type { TurnRecord } from "./executor.ts";
import { auditOf, type FilesChanged, filesChanged } from "./files_changed.ts";

export { type FileChange, type FilesChanged, filesChanged } from "./files_changed.ts";

/** What a transcript is read from (a runtime has all of it). */
export interface TranscriptSource {
  readonly store: Store;
  readonly audit: AuditLog;
  readonly processes: ProcessManager;
  readonly memory: ObjectMemory;
}

/** One entry of a transcript (`libos log --json` prints an array of them). */
export type TranscriptEntry =
  | {
    readonly type: "process";
    readonly pid: string;
    readonly parent: string | null;
    readonly image: string;
    readonly goal: string;
    readonly status: string;
    readonly message: string | null;
    readonly createdAt: number;
    readonly finishedAt: number | null;
    readonly tokens: number;
    readonly toolCalls: number;
    /** When its records became retained, and when gc removed them (null: never). */
    readonly retained: { readonly since: number; readonly removed: number | null } | null;
    /** Why no turn is shown, when none is. */
    readonly note: string | null;
  }
  | {
    readonly type: "turn";
    readonly pid: string;
    readonly seq: number;
    readonly outcome: string;
    readonly content: string | null;
    /** Tokens charged for the turn, when the turn recorded them. */
    readonly tokens: number | null;
  }
  | {
    readonly type: "tool_call";
    readonly pid: string;
    readonly seq: number;
    readonly id: string;
    readonly name: string;
    readonly arguments: JsonValue;
  }
  | {
    readonly type: "tool_result";
    readonly pid: string;
    readonly seq: number;
    readonly id: string;
    readonly name: string;
    /** null when the outcome is not known (not stored). */
    readonly ok: boolean | null;
    readonly exitCode: number | null;
    /** A command's last lines of output (stdout, then stderr). */
    readonly output: string | null;
    readonly error: { readonly code: string; readonly message: string } | null;
    /** Any other value, as JSON text (cut). */
    readonly value: string | null;
    /** The stored result object, when there is one. */
    readonly object: string | null;
    readonly note: string | null;
  }
  | {
    readonly type: "diff";
    readonly pid: string;
    readonly seq: number;
    readonly path: string;
    readonly diff: string;
    /** `approval`: what the human was shown; `edit`: the edit's own old and new text. */
    readonly source: "approval" | "edit";
  }
  | {
    readonly type: "decision";
    readonly pid: string;
    readonly auditSeq: number;
    readonly time: number;
    readonly actor: string;
    readonly action: string;
    readonly resource: string;
    readonly effect: string;
    /** What decided: a rule, capability, mode, layer or human. */
    readonly authority: string;
    /** The human request behind it, and who answered it. */
    readonly request: string | null;
    readonly by: string | null;
    readonly detail: { readonly [key: string]: JsonValue } | null;
  }
  | {
    readonly type: "checkpoint";
    readonly pid: string;
    readonly id: string;
    readonly label: string;
    readonly at: number;
  }
  | ({ readonly type: "files_changed" } & FilesChanged)
  | {
    readonly type: "total";
    readonly processes: number;
    readonly turns: number;
    readonly toolCalls: number;
    readonly tokens: number;
  };

const PAGE = 5_000;
const OUTPUT_LINES = 20;
const VALUE_CHARS = 600;
/** Records that only say the ledger moved: the decision and the result say it better. */
const QUIET = Object.freeze(["action.intent", "action.done", "tool.invoke"]);

/**
 * `pid` and its descendants, parents first: the processes of one run (what a launcher passes to
 * `filesChanged` for its end-of-run summary).
 */
export function processTree(processes: ProcessManager, pid: string): string[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    for (const child of processes.list({ parent: out[i]!, limit: 1000 })) out.push(child.pid);
  }
  return out;
}

/** A stored result (`{ok, value}` or `{ok, error}`; a cut one is text), as a transcript shows it. */
function resultOf(
  payload: JsonValue,
): Pick<
  Extract<TranscriptEntry, { type: "tool_result" }>,
  "ok" | "exitCode" | "output" | "error" | "value"
> {
  let p: JsonValue = payload;
  if (typeof payload === "string") {
    try {
      p = JSON.parse(payload) as JsonValue;
    } catch {
      const value = payload.slice(0, VALUE_CHARS);
      return { ok: null, exitCode: null, output: null, error: null, value };
    }
  }
  const o = typeof p === "object" && p !== null && !Array.isArray(p)
    ? p as { readonly [key: string]: JsonValue }
    : {};
  const ok = typeof o.ok === "boolean" ? o.ok : null;
  const e = o.error as { readonly [key: string]: JsonValue } | undefined;
  const error = typeof e === "object" && e !== null && !Array.isArray(e)
    ? { code: String(e.code ?? "error"), message: String(e.message ?? "") }
    : null;
  const v = o.value;
  const obj = typeof v === "object" && v !== null && !Array.isArray(v)
    ? v as { readonly [key: string]: JsonValue }
    : null;
  if (obj && (typeof obj.exitCode === "number" || obj.exitCode === null) && "stdout" in obj) {
    const text = [obj.stdout, obj.stderr].filter((t): t is string => typeof t === "string")
      .map((t) => t.replace(/\s+$/, "")).filter((t) => t !== "").join("\n");
    return {
      ok,
      exitCode: obj.exitCode as number | null,
      output: text === "" ? null : text.split("\n").slice(-OUTPUT_LINES).join("\n"),
      error,
      value: null,
    };
  }
  const value = v === undefined ? null : JSON.stringify(v).slice(0, VALUE_CHARS);
  return { ok, exitCode: null, output: null, error, value };
}

/** What a call ended with when its result was not stored: the approval it waited on, and after. */
function pendingNote(
  approval: HumanRequest | undefined,
  ledger: ReturnType<Store["listActions"]>,
): Pick<Extract<TranscriptEntry, { type: "tool_result" }>, "ok" | "exitCode" | "note"> {
  if (!approval) {
    return { ok: null, exitCode: null, note: "no result was stored for this call" };
  }
  const who = approval.response ? ` by ${approval.response.by}` : "";
  const asked = `it waited on the human (request ${approval.id}, ${approval.status}${who})`;
  const digest = approval.approval?.digest;
  const action = ledger.find((a) => {
    if (a.created < approval.createdAt || digest === undefined) return false;
    try {
      return (JSON.parse(a.request) as { digest?: unknown }).digest === digest;
    } catch {
      return false;
    }
  });
  if (!action?.outcome) return { ok: null, exitCode: null, note: asked };
  try {
    const outcome = JSON.parse(action.outcome) as {
      ok?: boolean;
      value?: { exitCode?: number | null };
      error?: { code?: string };
    };
    const code = outcome.value?.exitCode;
    return {
      ok: outcome.ok ?? null,
      exitCode: typeof code === "number" ? code : null,
      note: `${asked}; then it ran (${action.status}${
        outcome.error?.code ? `: ${outcome.error.code}` : ""
      }); its output was not stored`,
    };
  } catch {
    return { ok: null, exitCode: null, note: asked };
  }
}

/**
 * The transcript of process `pid` (with `tree`, its descendants after it), in order.
 * @throws {NotFoundError} for an unknown pid, saying how to list processes.
 */
export function transcript(
  source: TranscriptSource,
  pid: string,
  options: { readonly tree?: boolean } = {},
): TranscriptEntry[] {
  const root = source.processes.find(pid);
  if (!root) {
    throw new NotFoundError(
      `No process ${
        JSON.stringify(pid)
      } in this database; list processes with "libos ps" (or "libos sessions" for agent runs)`,
    );
  }
  const pids = options.tree ? processTree(source.processes, pid) : [pid];
  const out: TranscriptEntry[] = [];
  let turns = 0;
  let tokens = 0;
  let toolCalls = 0;
  for (const one of pids) {
    const p = source.processes.get(one);
    const entries = processEntries(source, p);
    turns += entries.filter((e) => e.type === "turn").length;
    tokens += p.usage.modelTokens;
    toolCalls += p.usage.toolCalls;
    out.push(...entries);
  }
  out.push({ type: "files_changed", ...filesChanged(source.audit, pids) });
  out.push({ type: "total", processes: pids.length, turns, toolCalls, tokens });
  return out;
}

function processEntries(source: TranscriptSource, p: AgentProcess): TranscriptEntry[] {
  const { store, audit, memory } = source;
  const ns = processNamespace(p.pid);
  const turnRecords = memory.records(ns, "model.turn")
    .map((r) => ({ oid: r.info.oid, turn: r.payload as unknown as TurnRecord }))
    .filter((t) => t.turn.pid === p.pid)
    .sort((a, b) => a.turn.seq - b.turn.seq);
  // Results by tool and call id, in the order they were stored (a model may reuse an id).
  const results = new Map<string, { payload: JsonValue; oid: string }[]>();
  const stored = memory.records(ns, "tool.result").sort((a, b) =>
    a.info.createdAt - b.info.createdAt
  );
  for (const r of stored) {
    const key = `${r.info.provenance.label}\u0000${r.info.provenance.ref ?? ""}`;
    results.set(key, [...(results.get(key) ?? []), { payload: r.payload, oid: r.info.oid }]);
  }
  const records = auditOf(audit, p.pid);
  // Who answered the request behind a capability: `cap:<id>` → the human's grant record.
  const granted = new Map<string, { request: string; by: string }>();
  for (const r of records) {
    if (r.action === "capability.grant" && r.correlation && r.authority.startsWith("human:hreq_")) {
      granted.set(r.correlation, { request: r.authority.slice("human:".length), by: r.actor });
    }
  }
  const approvals = new Map<string, HumanRequest>();
  for (const row of store.listHumanRequests({ pid: p.pid, limit: PAGE })) {
    try {
      const h = HumanRequest.parse(JSON.parse(row.data));
      approvals.set(h.id, h);
    } catch {
      // A request libos cannot read (edited outside libos): its decisions still show.
    }
  }
  const ledger = store.listActions({ pid: p.pid, limit: PAGE });
  // Where each turn was kept in the audit order: the decisions before it belong to it.
  const keptAt = turnRecords.map((t) =>
    audit.query({
      action: "object.create",
      resource: `object:${ns}/${t.oid}`,
      limit: 1,
    })[0]?.seq ?? Number.MAX_SAFE_INTEGER
  );
  const retained = store.getRetained(p.pid);
  const out: TranscriptEntry[] = [{
    type: "process",
    pid: p.pid,
    parent: p.parent,
    image: p.image,
    goal: p.goal,
    status: p.status,
    message: p.message,
    createdAt: p.createdAt,
    finishedAt: p.finishedAt,
    tokens: p.usage.modelTokens,
    toolCalls: p.usage.toolCalls,
    retained: retained ? { since: retained.since, removed: retained.removed } : null,
    note: turnRecords.length > 0
      ? null
      : retained?.removed != null
      ? "its turns and tool results were removed by libos gc; the decisions below are from the audit log, which is never cut"
      : "no turn was kept (it has not run, or it finished before libos retained runs); the decisions below are from the audit log",
  }];
  const decisionsIn = (from: number, to: number): TranscriptEntry[] =>
    records.filter((r) => r.seq > from && r.seq <= to && shown(r)).map((r) => decision(r));
  const decision = (r: AuditRecord): TranscriptEntry => {
    let request: string | null = r.correlation?.startsWith("hreq_") ? r.correlation : null;
    let by: string | null = r.actor.startsWith("human:") ? r.actor : null;
    if (r.authority.startsWith("cap:")) {
      const human = granted.get(r.authority.slice("cap:".length));
      if (human) [request, by] = [human.request, human.by];
    }
    if (request !== null && by === null) {
      const answered = approvals.get(request)?.response?.by;
      if (answered) by = answered;
    }
    return {
      type: "decision",
      pid: p.pid,
      auditSeq: r.seq,
      time: r.time,
      actor: r.actor,
      action: r.action,
      resource: r.resource,
      effect: r.decision,
      authority: r.authority,
      request,
      by,
      detail: r.detail,
    };
  };
  let from = 0;
  turnRecords.forEach(({ turn }, i) => {
    const to = keptAt[i]!;
    out.push({
      type: "turn",
      pid: p.pid,
      seq: turn.seq,
      outcome: turn.outcome,
      content: turn.content,
      tokens: typeof (turn as { tokens?: unknown }).tokens === "number"
        ? (turn as unknown as { tokens: number }).tokens
        : null,
    });
    const window = records.filter((r) => r.seq > from && r.seq <= to);
    const asked = window.filter((r) => r.action === "human.approval" && r.correlation)
      .map((r) => approvals.get(r.correlation!)).filter((h): h is HumanRequest => h !== undefined);
    for (const call of turn.toolCalls) {
      const args =
        (typeof call.arguments === "string" ? call.arguments : call.arguments ?? null) as JsonValue;
      out.push({
        type: "tool_call",
        pid: p.pid,
        seq: turn.seq,
        id: call.id,
        name: call.name,
        arguments: args,
      });
      out.push(...diffs(p.pid, turn.seq, call.name, args, asked));
      const key = `${call.name}\u0000${call.id}`;
      const kept = results.get(key)?.shift();
      const base = { type: "tool_result" as const, pid: p.pid, seq: turn.seq, id: call.id };
      if (kept !== undefined) {
        out.push({
          ...base,
          name: call.name,
          ...resultOf(kept.payload),
          object: kept.oid,
          note: null,
        });
      } else if (Object.hasOwn(turn.results, call.id)) {
        out.push({
          ...base,
          name: call.name,
          ...resultOf(turn.results[call.id]!),
          object: null,
          note: "as the model was shown it",
        });
      } else {
        const approval = asked.find((h) => h.approval?.action !== undefined);
        out.push({
          ...base,
          name: call.name,
          output: null,
          error: null,
          value: null,
          object: null,
          ...pendingNote(approval, ledger),
        });
      }
    }
    out.push(...decisionsIn(from, to));
    from = to;
  });
  out.push(...decisionsIn(from, Number.MAX_SAFE_INTEGER));
  for (const r of memory.records(ns, "checkpoint")) {
    const c = r.payload as { label?: unknown; at?: unknown; pid?: unknown };
    if (c.pid !== p.pid) continue;
    out.push({
      type: "checkpoint",
      pid: p.pid,
      id: r.info.oid,
      label: typeof c.label === "string" ? c.label : "",
      at: typeof c.at === "number" ? c.at : r.info.createdAt,
    });
  }
  return out;
}

/** Whether a record belongs in a transcript (the ledger's own steps and allowed tool calls do not). */
function shown(r: AuditRecord): boolean {
  if (QUIET.includes(r.action)) return r.decision === "deny" || r.decision === "ask";
  return true;
}

/** The diffs of a call: what an approval showed the human, else an edit's own old and new text. */
function diffs(
  pid: string,
  seq: number,
  name: string,
  args: JsonValue,
  asked: readonly HumanRequest[],
): TranscriptEntry[] {
  const a = typeof args === "object" && args !== null && !Array.isArray(args)
    ? args as { readonly [key: string]: JsonValue }
    : {};
  const path = typeof a.path === "string" ? a.path : null;
  const shownToHuman = asked.filter((h) =>
    h.approval?.diff && (path === null || h.approval.path === path)
  );
  if (shownToHuman.length > 0) {
    return shownToHuman.map((h) => ({
      type: "diff",
      pid,
      seq,
      path: h.approval!.path ?? path ?? "",
      diff: h.approval!.diff!,
      source: "approval",
    }));
  }
  if (
    name === "edit_file" && path && typeof a.old_string === "string" &&
    typeof a.new_string === "string"
  ) {
    const d = unifiedDiff(a.old_string, a.new_string, { fromLabel: path, toLabel: path });
    if (d.text !== "") return [{ type: "diff", pid, seq, path, diff: d.text, source: "edit" }];
  }
  return [];
}
