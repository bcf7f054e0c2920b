/**
 * A stored run's recorded actions, as policy replay (`replay.ts`) re-decides them: every effect
 * decision of a process and its descendants in audit order — `fs.*`, `shell.run` (with the exact
 * argv from the action ledger or the human request), `net.fetch` — numbered by the process's model
 * turns (the `model.turn` objects the runtime records; no turn numbers for a process that kept
 * none), with the capabilities the processes held and when each was live in audit order. An ask a
 * human approved and the allow its one-shot approval gave are one action: an approved ask.
 *
 * @module
 */
import type { ActionResource, Capability, Effect, Right } from "../authority/capability.ts";
import { type ModeName, ModeName as ModeNames } from "../authority/modes.ts";
import type { AuditQuery, AuditRow, Store } from "../store/store.ts";

/** One recorded effect, as the replay re-decides it. */
export interface RecordedAction {
  /** The audit record's `seq` (null for an action from a session log). */
  readonly seq: number | null;
  /** The process's model turn it belongs to (1-based), when known. */
  readonly turn: number | null;
  readonly pid: string;
  /** The audited operation: `fs.read`, `fs.write`, `shell.run`, `net.fetch`, … */
  readonly action: string;
  readonly resource: ActionResource;
  readonly right: Right;
  /** What the run decided; an action a human approved once is `ask`. Null: not recorded. */
  readonly recorded: Effect | null;
  /** A human approved it once (the run asked, a person said yes). */
  readonly approved: boolean;
  /** The recorded decision's authority (null for a session log). */
  readonly authority: string | null;
  /** When it was decided (ms since the epoch): which capabilities were live. */
  readonly time: number;
}

/** A stored run, as the replay needs it. */
export interface RecordedRun {
  readonly pid: string;
  /** The run's processes: the top-level one first, then its descendants. */
  readonly pids: readonly string[];
  readonly actions: readonly RecordedAction[];
  /** Every capability the tree's processes held at some point. */
  readonly capabilities: readonly Capability[];
  /** Each capability's life in audit order: the seq of its grant and of its revocation. */
  readonly lifetimes: ReadonlyMap<string, Lifetime>;
  /** The processes that received a mode's default grants, and that mode. */
  readonly modeGrants: ReadonlyMap<string, ModeName>;
  /** Whether the run's commands ran inside the OS wall, when a record says. */
  readonly wall: boolean | undefined;
  /** Model turns seen (the `model.turn` objects the tree's processes kept). */
  readonly turns: number;
}

/** When a capability was live, in audit order: granted at `from`, revoked at `to` (or never). */
export interface Lifetime {
  readonly from: number;
  readonly to: number | null;
}

const PAGE = 1000;

/** The right an audited filesystem operation asks for. */
const FS_RIGHTS: Readonly<Record<string, Right>> = Object.freeze({
  "fs.read": "read",
  "fs.list": "read",
  "fs.stat": "stat",
  "fs.write": "write",
  "fs.mkdir": "write",
  "fs.delete": "delete",
  "fs.rmdir": "delete",
});

function allRows(
  store: Store,
  filter: Omit<AuditQuery, "afterSeq" | "limit" | "order">,
): AuditRow[] {
  const rows: AuditRow[] = [];
  let afterSeq = 0;
  for (;;) {
    const page = store.queryAudit({ ...filter, afterSeq, limit: PAGE, order: "asc" });
    rows.push(...page);
    if (page.length < PAGE) return rows;
    afterSeq = page[page.length - 1]!.seq;
  }
}

function treeOf(store: Store, pid: string): string[] {
  const out: string[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (out.includes(next)) continue;
    out.push(next);
    let afterPid: string | undefined;
    for (;;) {
      const page = store.listProcesses({
        parent: next,
        limit: PAGE,
        ...(afterPid === undefined ? {} : { afterPid }),
      });
      queue.push(...page.map((p) => p.pid));
      if (page.length < PAGE) break;
      afterPid = page[page.length - 1]!.pid;
    }
  }
  return out;
}

function capabilitiesOf(store: Store, pid: string): Capability[] {
  const caps: Capability[] = [];
  let afterId: string | undefined;
  for (;;) {
    const page = store.listCapabilities({
      subject: pid,
      limit: PAGE,
      ...(afterId === undefined ? {} : { afterId }),
    });
    caps.push(...page.map((row) => JSON.parse(row.data) as Capability));
    if (page.length < PAGE) return caps;
    afterId = page[page.length - 1]!.id;
  }
}

function detailOf(row: AuditRow): Record<string, unknown> | null {
  return row.detail === null ? null : JSON.parse(row.detail) as Record<string, unknown>;
}

function stringArray(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.length > 0 && value.every((t) => typeof t === "string")
    ? value as string[]
    : undefined;
}

/** The exact argv of every command the tree asked about or ran, by its audited resource. */
function argvIndex(store: Store, pids: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const add = (argv: string[] | undefined) => {
    if (argv) out.set(`shell:${argv.join(" ")}`.slice(0, 4096), argv);
  };
  for (const pid of pids) {
    for (const row of store.listActions({ pid, limit: 10_000 })) {
      if (row.kind === "shell.run") {
        add(stringArray((JSON.parse(row.request) as Record<string, unknown>).argv));
      }
    }
    for (const row of store.listHumanRequests({ pid, limit: 10_000 })) {
      const data = JSON.parse(row.data) as { approval?: { argv?: unknown } };
      add(stringArray(data.approval?.argv));
    }
  }
  return out;
}

/**
 * The recorded run of `pid` and its descendants: every effect decision in audit order (an ask a
 * human approved and the allow that followed it are one action, recorded as an approved ask),
 * the capabilities held, which processes got a mode's grants, and the wall.
 */
export function recordedRun(store: Store, pid: string): RecordedRun {
  const pids = treeOf(store, pid);
  // The process's own records, and the runtime's records of its model turns (no pid on them).
  const bySeq = new Map<number, AuditRow>();
  for (const p of pids) {
    for (const row of allRows(store, { pid: p })) bySeq.set(row.seq, row);
    const turns = { action: "object.create", resourcePrefix: `object:process:${p}/` };
    for (const row of allRows(store, turns)) bySeq.set(row.seq, row);
  }
  const rows = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  const capabilities = pids.flatMap((p) => capabilitiesOf(store, p));
  const oneShot = new Set(capabilities.filter((c) => c.oneShot).map((c) => c.id));
  const modeGrants = new Map<string, ModeName>();
  for (const cap of capabilities) {
    const mode = cap.issuer.startsWith("mode:") ? cap.issuer.slice(5) : undefined;
    const parsed = ModeNames.safeParse(mode);
    if (parsed.success) modeGrants.set(cap.subject, parsed.data);
  }
  const argv = argvIndex(store, pids);
  const turnsOf = new Map<string, number>();
  let turns = 0;
  let wall: boolean | undefined;
  const actions: RecordedAction[] = [];
  const lifetimes = new Map<string, Lifetime>();
  for (const row of rows) {
    const detail = detailOf(row);
    if (row.action === "capability.grant" && row.correlation !== null) {
      lifetimes.set(row.correlation, { from: row.seq, to: null });
      continue;
    }
    if (row.action === "capability.revoke" && row.correlation !== null) {
      const life = lifetimes.get(row.correlation);
      if (life && life.to === null) lifetimes.set(row.correlation, { ...life, to: row.seq });
      continue;
    }
    if (row.action === "object.create" && detail?.type === "model.turn") {
      const owner = pids.find((p) => row.resource.startsWith(`object:process:${p}/`));
      if (owner) {
        turnsOf.set(owner, (turnsOf.get(owner) ?? 0) + 1);
        turns++;
      }
      continue;
    }
    if (row.pid === null || row.actor !== row.pid) continue;
    if (row.decision !== "allow" && row.decision !== "ask" && row.decision !== "deny") continue;
    let resource: ActionResource;
    let right: Right;
    if (row.action === "shell.run" && row.resource.startsWith("shell:")) {
      resource = {
        type: "shell",
        argv: argv.get(row.resource) ?? row.resource.slice(6).split(" "),
      };
      right = "execute";
      if (typeof detail?.wall === "boolean") wall = detail.wall;
    } else if (row.action === "net.fetch" && row.resource.startsWith("net:")) {
      resource = { type: "net", key: row.resource.slice(4) };
      right = "connect";
    } else if (Object.hasOwn(FS_RIGHTS, row.action) && row.resource.startsWith("fs:")) {
      resource = { type: "fs", path: row.resource.slice(3) };
      right = FS_RIGHTS[row.action]!;
    } else continue;
    const approved = row.decision === "allow" && row.authority.startsWith("cap:") &&
      oneShot.has(row.authority.slice(4));
    if (approved) {
      // The ask this approval answered is the same action: one entry, an approved ask.
      const i = actions.findLastIndex((a) =>
        a.pid === row.pid && a.action === row.action && a.recorded === "ask" && !a.approved &&
        sameResource(a.resource, resource)
      );
      if (i !== -1) actions.splice(i, 1);
    }
    actions.push({
      seq: row.seq,
      turn: (turnsOf.get(row.pid) ?? 0) + 1,
      pid: row.pid,
      action: row.action,
      resource,
      right,
      recorded: approved ? "ask" : row.decision,
      approved,
      authority: row.authority,
      time: row.time,
    });
  }
  // A process that kept no model turn (the demo plays the model) has no turn numbers.
  const numbered = actions.map((a) => turnsOf.has(a.pid) ? a : { ...a, turn: null });
  return { pid, pids, actions: numbered, capabilities, lifetimes, modeGrants, wall, turns };
}

function sameResource(a: ActionResource, b: ActionResource): boolean {
  if (a.type === "shell" && b.type === "shell") {
    return a.argv.length === b.argv.length && a.argv.every((t, i) => t === b.argv[i]);
  }
  if (a.type === "fs" && b.type === "fs") return a.path === b.path;
  return a.type === b.type && "key" in a && "key" in b && a.key === b.key;
}
