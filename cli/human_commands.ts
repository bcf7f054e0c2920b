/**
 * Human commands (DESIGN §4): `human list`, `human show`, `human approve`, `human reject`,
 * `human answer`, `human interrupt`. They work on the same database as a runtime — from another
 * terminal while it runs (it notices through `PRAGMA data_version`) or after it stopped (the next
 * runtime resumes the process). Every decision is made as `human:cli` and audited.
 *
 * @module
 */
import { formatTime, renderApprovalRequest } from "../runtime/human/approval_render.ts";
import { UsageError } from "../runtime/base/errors.ts";
import {
  GrantScope,
  type HumanRequest,
  HumanRequestStatus,
  Remember,
} from "../runtime/human/human_request.ts";
import type { Runtime } from "../runtime/runtime.ts";
import {
  type CliIo,
  type Command,
  flagOption,
  integerOption,
  listOption,
  type ParsedArgs,
  stringOption,
} from "./_options.ts";
import { field, say } from "./_output.ts";
import { openRuntime } from "./_workspace.ts";
import { fileRememberer } from "./remembered_grants.ts";

/** Who a decision made here is recorded as. */
const BY = "human:cli";

function summary(r: HumanRequest): string {
  const what = r.approval
    ? `${r.approval.operation} ${r.approval.path ?? r.approval.resource}`
    : r.permission
    ? `${r.permission.rights.join(",")} on ${r.permission.resource.type}`
    : r.text ?? "";
  return [
    field(r.id, 40),
    field(r.pid, 40),
    r.kind.padEnd(10),
    r.status.padEnd(10),
    field(what, 80),
    r.expiresAt === null ? "-" : `expires ${formatTime(r.expiresAt)}`,
  ].join("  ");
}

function statusesOf(parsed: ParsedArgs): HumanRequestStatus[] | undefined {
  if (flagOption(parsed, "all")) return undefined;
  const given = listOption(parsed, "status");
  if (given.length === 0) return ["pending"];
  return given.map((s) => {
    const status = HumanRequestStatus.safeParse(s);
    if (!status.success) {
      throw new UsageError(
        `--status must be one of ${HumanRequestStatus.options.join(", ")}, got ${
          JSON.stringify(s)
        }`,
      );
    }
    return status.data;
  });
}

async function list(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const statuses = statusesOf(parsed);
  const pid = stringOption(parsed, "pid");
  const limit = integerOption(parsed, "limit", 1, 10_000) ?? 1000;
  await using runtime = await openRuntime(parsed, io, "read");
  const corrupt: string[] = [];
  const requests = runtime.human.list({
    statuses: statuses ?? HumanRequestStatus.options,
    limit,
    ...(pid === undefined ? {} : { pid }),
    // One unreadable row must not hide the rest of the queue.
    onCorrupt: (id) => corrupt.push(id),
  });
  for (const id of corrupt) {
    io.stderr(
      `libos: request ${
        field(id, 40)
      } is stored in a shape libos does not understand (edited outside libos) and is not listed\n`,
    );
  }
  return say(
    io,
    parsed,
    runtime.location.path,
    { requests },
    requests.length
      ? requests.map(summary).join("\n")
      : statuses?.length === 1 && statuses[0] === "pending"
      ? "No request waits for a human."
      : "No such requests.",
  );
}

function alwaysText(runtime: Runtime, request: HumanRequest): string[] {
  const options = runtime.human.alwaysOptions(request);
  if (request.status !== "pending" || options.length === 0) return [];
  return [
    "",
    `Approve once: libos human approve ${request.id}`,
    "Allow always (mints a standing, revocable capability; shown before it exists):",
    ...options.map((o) => `  --always ${o.scope.padEnd(7)}  ${field(o.description, 400)}`),
    "How far it holds (with --always):",
    "  --remember run      this run: its top-level process and every process of it (the default)",
    "  --remember project  this run, and every later libos agent run in this workspace (kept in",
    '                      your config, not the workspace; "libos grants list" shows it)',
    "  --remember process  the asking process only",
    `Reject: libos human reject ${request.id} [--reason TEXT]`,
  ];
}

async function show(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [id] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "read");
  const request = runtime.human.get(id!);
  return say(
    io,
    parsed,
    runtime.location.path,
    { request, always: runtime.human.alwaysOptions(request) },
    [renderApprovalRequest(request), ...alwaysText(runtime, request)].join("\n"),
  );
}

async function approve(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [id] = parsed.args;
  const alwaysRaw = stringOption(parsed, "always");
  let always: GrantScope | undefined;
  if (alwaysRaw !== undefined) {
    const scope = GrantScope.safeParse(alwaysRaw);
    if (!scope.success) {
      throw new UsageError(
        `--always must be one of ${GrantScope.options.join(", ")}, got ${
          JSON.stringify(alwaysRaw)
        }; "libos human show ${id}" lists the scopes a request offers`,
      );
    }
    always = scope.data;
  }
  const rememberRaw = stringOption(parsed, "remember");
  let remember: Remember | undefined;
  if (rememberRaw !== undefined) {
    const parsedRemember = Remember.safeParse(rememberRaw);
    if (!parsedRemember.success) {
      throw new UsageError(
        `--remember must be one of ${Remember.options.join(", ")}, got ${
          JSON.stringify(rememberRaw)
        }`,
      );
    }
    if (always === undefined) {
      throw new UsageError(
        `--remember applies to an allow-always answer; give --always SCOPE too ("libos human show ${id}" lists them)`,
      );
    }
    remember = parsedRemember.data;
  }
  await using runtime = await openRuntime(parsed, io, "write");
  runtime.human.rememberWith(fileRememberer(io.env, runtime.location.workspace));
  const option = always === undefined
    ? undefined
    : runtime.human.alwaysOptions(runtime.human.get(id!)).find((o) => o.scope === always);
  const decided = runtime.human.approve(id!, {
    by: BY,
    ...(always ? { always } : {}),
    ...(remember ? { remember } : {}),
  });
  const reach = decided.response?.remember;
  const minted = decided.response?.capabilities ?? [];
  return say(
    io,
    parsed,
    runtime.location.path,
    { request: decided },
    [
      `${field(id)}: approved; ${field(decided.pid)} resumes with ${
        decided.kind === "approval" ? "the approved action run once" : "the granted permission"
      } at its next quantum.`,
      ...(option ? [`Allow always: ${field(option.description, 400)}.`] : []),
      ...(reach === "run" || reach === "project"
        ? [
          `It holds for the whole run ${
            field(decided.pid)
          } is part of (its top-level process and every process of it)${
            reach === "project"
              ? `, and for every later libos agent run in ${
                field(runtime.location.workspace, 4096)
              }: remembered as ${
                field(decided.response?.remembered ?? "")
              } (libos grants list; libos grants revoke ${
                field(decided.response?.remembered ?? "")
              })`
              : ""
          }.`,
        ]
        : []),
      `Capabilities minted: ${minted.join(", ") || "none"}.`,
    ].join("\n"),
  );
}

async function reject(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [id] = parsed.args;
  const reason = stringOption(parsed, "reason");
  await using runtime = await openRuntime(parsed, io, "write");
  const decided = runtime.human.reject(id!, {
    by: BY,
    ...(reason === undefined ? {} : { reason }),
  });
  return say(
    io,
    parsed,
    runtime.location.path,
    { request: decided },
    `${field(id)}: rejected; ${
      field(decided.pid)
    } resumes with a failed result and nothing was done.`,
  );
}

async function answer(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [id, text] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "write");
  const decided = runtime.human.answer(id!, { by: BY, text: text! });
  return say(
    io,
    parsed,
    runtime.location.path,
    { request: decided },
    `${field(id)}: answered; ${field(decided.pid)} resumes with the answer.`,
  );
}

async function interrupt(parsed: ParsedArgs, io: CliIo): Promise<number> {
  const [pid, text] = parsed.args;
  await using runtime = await openRuntime(parsed, io, "write");
  runtime.processes.get(pid!);
  const sent = runtime.human.interrupt(pid!, text!, BY);
  return say(
    io,
    parsed,
    runtime.location.path,
    { request: sent },
    `${
      field(pid)
    }: interrupted with a message from you (${sent.id}); it reads it at its next quantum.`,
  );
}

/** The `human list` command. */
export const humanListCommand: Command = {
  name: "human list",
  summary: "list requests waiting for a human (approvals, questions, permissions)",
  usage: `Usage: libos human list [--all] [--status STATUS]... [--pid PID] [--limit N] [--json]

Lists pending requests, oldest first; --all includes decided ones, --status filters
(pending, approved, rejected, expired, answered, delivered, dispatched, cancelled).`,
  options: ["all", "status", "pid", "limit"],
  run: list,
};

/** The `human show` command. */
export const humanShowCommand: Command = {
  name: "human show",
  summary: "show one request exactly as a human must see it before deciding",
  usage: `Usage: libos human show ID [--json]

Shows the request with every value escaped: pid, primitive, operation, path and absolute path,
grant scope, will-create / will-overwrite, target facts, bytes and sha256, a preview or a
unified diff, the digest — and for a pending approval the "allow always" scopes and exactly
what each would grant.`,
  options: [],
  positionals: ["ID"],
  run: show,
};

/** The `human approve` command. */
export const humanApproveCommand: Command = {
  name: "human approve",
  summary: "approve a pending action or permission request",
  usage:
    `Usage: libos human approve ID [--always exact|prefix|path|subtree [--remember run|project|process]] [--json]

Approves this one action: a one-shot grant bound to its digest, so only exactly the action
shown runs — once, when the process resumes (a running runtime notices within a moment; a
stopped one on its next start). --always also mints a standing, revocable capability of that
scope ("libos human show ID" lists what each scope grants). --remember says how far it holds:
run (the default) — the run's top-level process and every process of it, those forked later
included; project — the run, and every later "libos agent" run in this workspace (kept in
grants.jsonc in your configuration directory, never in the workspace; listed by "libos grants
list", removed by "libos grants revoke ID"); process — the asking process only. A remembered
grant is a capability: the hardline, the mode's ceiling and the rules still overrule it.`,
  options: ["always", "remember"],
  positionals: ["ID"],
  run: approve,
};

/** The `human reject` command. */
export const humanRejectCommand: Command = {
  name: "human reject",
  summary: "reject a pending request (the process gets a failed result)",
  usage: `Usage: libos human reject ID [--reason TEXT] [--json]

Rejects an approval, permission request or question. The process resumes with a failed
result; the action is never run.`,
  options: ["reason"],
  positionals: ["ID"],
  run: reject,
};

/** The `human answer` command. */
export const humanAnswerCommand: Command = {
  name: "human answer",
  summary: "answer a process's question",
  usage: `Usage: libos human answer ID TEXT [--json]`,
  options: [],
  positionals: ["ID", "TEXT"],
  run: answer,
};

/** The `human interrupt` command. */
export const humanInterruptCommand: Command = {
  name: "human interrupt",
  summary: "send a process a message and interrupt it",
  usage: `Usage: libos human interrupt PID TEXT [--json]

Stores the message and interrupts the process: a sleeping or waiting one wakes, a running one
reads it when its quantum ends.`,
  options: [],
  positionals: ["PID", "TEXT"],
  run: interrupt,
};
