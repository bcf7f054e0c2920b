/**
 * The `Store` interface: every durable byte of the runtime goes through it, so a second backend
 * (PostgreSQL, for several workers) can be added later and must pass `tests/store_conformance.ts`.
 *
 * Contract, which the conformance suite pins:
 * - The interface is synchronous. A {@link Store.step} callback therefore cannot await, which is
 *   how "no transaction ever spans an `await`" (DESIGN §6) is enforced by construction; a callback
 *   that returns a promise is rolled back and refused. (A networked backend can still implement a
 *   synchronous interface by blocking on a worker thread.)
 * - Writes happen inside steps. A step is atomic: if its callback throws, exactly that step's
 *   writes are undone and earlier steps stay. Steps may nest.
 * - Steps are group-committed: a finished step becomes durable at the next commit, which happens
 *   after a batch of steps, after a few milliseconds, or when {@link Store.flush} is called. Callers
 *   flush before starting any external effect.
 * - Rows are plain data; the store neither hashes nor interprets them. Text must not contain
 *   NUL or unpaired surrogates (SQLite would not store it as given); callers validate.
 *
 * @module
 */
import { StoreError } from "../base/errors.ts";

/** One stored audit record, exactly as the audit log hashed it. */
export interface AuditRow {
  /** Global order of records in this database, 1, 2, 3, ... */
  readonly seq: number;
  /** The hash chain (segment) this record belongs to. */
  readonly chain: string;
  /** Position in its chain, 1, 2, 3, ... with no gaps. */
  readonly chainSeq: number;
  /** Milliseconds since the epoch. */
  readonly time: number;
  readonly actor: string;
  readonly pid: string | null;
  readonly action: string;
  readonly resource: string;
  readonly decision: string;
  readonly authority: string;
  readonly inputDigest: string | null;
  readonly correlation: string | null;
  readonly parent: number | null;
  /** Canonical JSON text of the record's details, or null. */
  readonly detail: string | null;
  /** Hash of the previous record of the same chain (64 zeros for the first). */
  readonly prev: string;
  readonly hash: string;
}

/** The last record of a chain, which the next append links to. */
export interface AuditTail {
  readonly seq: number;
  readonly chainSeq: number;
  readonly hash: string;
}

/** A bounded audit query; every filter is optional and they combine with AND. */
export interface AuditQuery {
  readonly pid?: string;
  readonly actor?: string;
  readonly action?: string;
  /** Matches actions that start with this text, e.g. `fs.`. */
  readonly actionPrefix?: string;
  readonly resource?: string;
  /** Matches resources that start with this text, e.g. `filesystem:workspace:src/`. */
  readonly resourcePrefix?: string;
  readonly decision?: string;
  readonly correlation?: string;
  /** Inclusive lower bound on `time`. */
  readonly since?: number;
  /** Exclusive upper bound on `time`. */
  readonly until?: number;
  /** Only records with `seq` greater than this (a cursor). */
  readonly afterSeq?: number;
  /** Only records with `seq` less than this (a cursor for descending pages). */
  readonly beforeSeq?: number;
  readonly limit: number;
  readonly order: "asc" | "desc";
}

/** One stored event. */
export interface EventRow {
  readonly seq: number;
  readonly version: number;
  readonly session: string;
  readonly turn: number;
  readonly time: number;
  readonly kind: string;
  /** JSON text of the payload. */
  readonly payload: string;
}

/** A bounded read of events after a cursor. */
export interface EventRead {
  readonly after: number;
  /** Never return events with `seq` above this (the committed high-water mark). */
  readonly upTo?: number;
  readonly session?: string;
  readonly kinds?: readonly string[];
  readonly limit: number;
}

/** One stored process: its JSON document plus the columns that are indexed. */
export interface ProcessRow {
  readonly pid: string;
  readonly parent: string | null;
  readonly status: string;
  /** JSON text of the whole process. */
  readonly data: string;
  readonly created: number;
  readonly updated: number;
  /** 1 on insert, one more on every write. */
  readonly version: number;
}

/** Which processes to list. */
export interface ProcessQuery {
  readonly statuses?: readonly string[];
  readonly parent?: string;
  /** Only pids sorting after this one (a cursor). */
  readonly afterPid?: string;
  readonly limit: number;
}

/** One action in the at-most-once ledger. */
export interface ActionRow {
  readonly id: string;
  readonly pid: string;
  readonly kind: string;
  readonly digest: string;
  /** `executing`, `done`, `failed`, `outcome_unknown` or `cancelled`. */
  readonly status: string;
  /** JSON text of what was asked. */
  readonly request: string;
  /** JSON text of what happened, once known. */
  readonly outcome: string | null;
  /** Whether the owning process has been told the outcome. */
  readonly reported: boolean;
  readonly created: number;
  readonly updated: number;
}

/** Which actions to list. */
export interface ActionQuery {
  readonly status?: string;
  readonly pid?: string;
  /** Only actions whose outcome the process has not been told yet. */
  readonly unreported?: boolean;
  readonly limit: number;
}

/** One stored capability: its JSON document plus the indexed columns. */
export interface CapabilityRow {
  readonly id: string;
  readonly subject: string;
  readonly derivedFrom: string | null;
  readonly revoked: number | null;
  /** JSON text of the whole capability. */
  readonly data: string;
  readonly created: number;
}

/** Which capabilities to list (one filter at least). */
export interface CapabilityQuery {
  readonly subject?: string;
  readonly derivedFrom?: string;
  /** Only ids sorting after this one (a cursor). */
  readonly afterId?: string;
  readonly limit: number;
}

/** One stored human request: its JSON document plus the indexed columns. */
export interface HumanRequestRow {
  readonly id: string;
  readonly pid: string;
  readonly kind: string;
  readonly status: string;
  /** JSON text of the whole request. */
  readonly data: string;
  readonly created: number;
  readonly expires: number | null;
}

/** Which human requests to list, oldest first. */
export interface HumanRequestQuery {
  readonly statuses?: readonly string[];
  readonly pid?: string;
  /** Only requests that expire before this time (ms since the epoch). */
  readonly expiringBefore?: number;
  readonly limit: number;
}

/** One stored object: its description (JSON) and, unless volatile, its payload (JSON). */
export interface ObjectRow {
  readonly oid: string;
  readonly namespace: string;
  readonly name: string | null;
  readonly type: string;
  readonly creator: string;
  /** JSON text of the object's description (without the payload). */
  readonly data: string;
  /** Canonical JSON of the payload; null for a volatile object. */
  readonly payload: string | null;
  readonly volatile: boolean;
  readonly created: number;
  readonly updated: number;
}

/** Which objects to list, in oid order. */
export interface ObjectQuery {
  /** Objects in any of these namespaces (an empty list matches nothing). */
  readonly namespaces?: readonly string[];
  readonly type?: string;
  readonly creator?: string;
  /** Only objects whose name starts with this. */
  readonly namePrefix?: string;
  readonly afterOid?: string;
  readonly limit: number;
}

/** A link between two objects. */
export interface LinkRow {
  readonly from: string;
  readonly to: string;
  readonly rel: string;
  readonly creator: string;
  readonly created: number;
}

/** An explicit namespace. */
export interface NamespaceRow {
  readonly key: string;
  readonly creator: string;
  readonly created: number;
}

/** A stored agent image. */
export interface ImageRow {
  readonly id: string;
  /** JSON text of the validated image. */
  readonly data: string;
  /** Who loaded it (an operator or a pid). */
  readonly loader: string;
  readonly created: number;
  readonly updated: number;
}

/** What a finished process left for review: its namespace's objects, kept until gc removes them. */
export interface RetainedRow {
  readonly pid: string;
  readonly namespace: string;
  /** When the process finished and its objects became retained (ms since the epoch). */
  readonly since: number;
  /** How many objects and bytes (descriptions and payloads) were kept then. */
  readonly objects: number;
  readonly bytes: number;
  /** When gc removed them; null while they are kept. */
  readonly removed: number | null;
}

/** Which retained rows to list, oldest first (by `since`, then pid). */
export interface RetainedQuery {
  /** Only rows still kept (`false`) or only removed ones (`true`); both when absent. */
  readonly removed?: boolean;
  /** Only rows retained before this time (exclusive). */
  readonly before?: number;
  /** A cursor: rows after this (since, pid). */
  readonly after?: { readonly since: number; readonly pid: string };
  readonly limit: number;
}

/** A worker's lease on one process tree (several workers sharing one database; issue 26). */
export interface LeaseRow {
  /** The tree's top-level process. */
  readonly root: string;
  /** The worker holding it. */
  readonly owner: string;
  /** When it lapses unless renewed (ms since the epoch). */
  readonly expires: number;
  /** When this owner claimed it. */
  readonly claimed: number;
  /** One more at every change of owner: a fencing token. */
  readonly generation: number;
}

/** How many objects a namespace holds and their bytes (descriptions plus payloads, as stored). */
export interface NamespaceUsage {
  readonly objects: number;
  readonly bytes: number;
}

/** The durable state of one runtime. See the module documentation for the contract. */
export interface Store extends Disposable {
  /** An absolute file path, or `:memory:`. */
  readonly location: string;
  /** The schema version the store is at after opening. */
  readonly schemaVersion: number;

  /** Runs `fn` atomically inside the current group-commit batch and returns its result. */
  step<T>(fn: () => T): T;
  /** Commits every finished step now. Throws inside a step. */
  flush(): void;
  /** Calls `listener` after every successful commit; returns the unsubscribe function. */
  onCommit(listener: () => void): () => void;
  /** A number that changes when another connection commits (SQLite's `data_version`). */
  dataVersion(): number;
  /**
   * Calls `listener`, soon and asynchronously, after another connection commits (PostgreSQL's
   * LISTEN/NOTIFY). Absent where the backend cannot tell: callers then look at
   * {@link Store.dataVersion} when they have reason to. Returns the unsubscribe function.
   */
  onExternalCommit?(listener: () => void): () => void;
  /** Flushes and closes. Further calls throw `store_closed`. Idempotent. */
  close(): void;

  getMeta(key: string): string | undefined;
  setMeta(key: string, value: string): void;

  /** The last record of `chain`, if any. */
  auditTail(chain: string): AuditTail | undefined;
  /** Appends a record; `seq` and `chainSeq` must be the next ones. */
  insertAudit(row: AuditRow): void;
  queryAudit(query: AuditQuery): AuditRow[];
  /** Records of `chain` with `chainSeq` greater than `afterChainSeq`, in chain order. */
  scanAudit(chain: string, afterChainSeq: number, limit: number): AuditRow[];
  /** Every chain that has at least one record. */
  auditChains(): string[];
  /** The largest `seq` in the audit table, 0 when empty. */
  lastAuditSeq(): number;
  /**
   * The `seq` the next appended record takes: one more than the last on a single-writer store,
   * the next value of a shared sequence where several workers append (increasing, maybe gaps).
   */
  nextAuditSeq(): number;
  /**
   * The head of each chain as recorded inside the database, outside the transactions that
   * appended (PostgreSQL's equivalent of the head file). Absent where the head lives in a file.
   */
  auditHeads?(): Record<string, AuditTail>;
  /** How many audit records there are (verification compares it with what the chains hold). */
  countAudit(): number;

  /** Appends an event and returns its `seq`. */
  insertEvent(row: Omit<EventRow, "seq">): number;
  readEvents(read: EventRead): EventRow[];
  /** The largest event `seq`, 0 when empty. */
  lastEventSeq(): number;

  /** Inserts or replaces a process and returns its new version. */
  putProcess(row: Omit<ProcessRow, "version">): number;
  getProcess(pid: string): ProcessRow | undefined;
  /** The current version of a process row, without reading the row. */
  getProcessVersion(pid: string): number | undefined;
  /** Processes in pid order. */
  listProcesses(query: ProcessQuery): ProcessRow[];
  /** How many children of `parent` are not in one of the `finished` statuses. */
  countLiveChildren(parent: string, finished: readonly string[]): number;

  /** Inserts or replaces an action. */
  putAction(row: ActionRow): void;
  getAction(id: string): ActionRow | undefined;
  /** Actions in creation order. */
  listActions(query: ActionQuery): ActionRow[];

  /** Inserts or replaces a capability. */
  putCapability(row: CapabilityRow): void;
  getCapability(id: string): CapabilityRow | undefined;
  /** Capabilities of a subject, or derived from one capability, in id order. */
  listCapabilities(query: CapabilityQuery): CapabilityRow[];

  /** Inserts or replaces a human request. */
  putHumanRequest(row: HumanRequestRow): void;
  getHumanRequest(id: string): HumanRequestRow | undefined;
  listHumanRequests(query: HumanRequestQuery): HumanRequestRow[];

  /**
   * Stores an object, replacing the row with its oid.
   * @throws {StoreError} `store_conflict` when another object has the same name in the namespace.
   */
  putObject(row: ObjectRow): void;
  getObject(oid: string): ObjectRow | undefined;
  getObjectByName(namespace: string, name: string): ObjectRow | undefined;
  listObjects(query: ObjectQuery): ObjectRow[];
  /** Deletes an object and every link from or to it; false when there was none. */
  deleteObject(oid: string): boolean;
  /** Stores a link (storing it again changes nothing). */
  putLink(row: LinkRow): void;
  deleteLink(from: string, to: string, rel: string): boolean;
  /** Links from or to `oid`, oldest first. */
  listLinks(oid: string, limit: number): LinkRow[];
  putNamespace(row: NamespaceRow): void;
  getNamespace(key: string): NamespaceRow | undefined;
  /** Explicit namespaces in key order, after `afterKey`. */
  listNamespaces(afterKey: string | undefined, limit: number): NamespaceRow[];
  /** How many objects `namespace` holds, and their stored bytes. */
  namespaceUsage(namespace: string): NamespaceUsage;
  /** Inserts or replaces the retention row of a process. */
  putRetained(row: RetainedRow): void;
  getRetained(pid: string): RetainedRow | undefined;
  listRetained(query: RetainedQuery): RetainedRow[];
  /** Stores an image, replacing the row with its id. */
  putImage(row: ImageRow): void;
  getImage(id: string): ImageRow | undefined;
  /** Images in id order, after `afterId`. */
  listImages(afterId: string | undefined, limit: number): ImageRow[];

  /**
   * Claims up to `limit` process trees for `owner`: live top-level processes (status not one of
   * `finished`) that no one holds — no lease, or one that lapsed before `now` — and that `owner`
   * does not hold already. Two owners never hold one tree. Commits before returning (a lease is
   * a promise to other workers). Returns the claimed roots, oldest-updated first.
   */
  claimTrees(
    owner: string,
    now: number,
    ttlMs: number,
    limit: number,
    finished: readonly string[],
    options?: {
      /** Only trees whose lease lapsed (a dead worker's): taken over before new work. */
      readonly lapsedOnly?: boolean;
    },
  ): string[];
  /** Extends every lease `owner` still holds to `now + ttlMs`; returns their roots. Commits. */
  renewLeases(owner: string, now: number, ttlMs: number): string[];
  /** Gives up `owner`'s lease on `root` (false when it held none). Commits. */
  releaseLease(owner: string, root: string): boolean;
  /** Every lease, in root order. */
  listLeases(limit: number): LeaseRow[];
  /**
   * Fences every commit from now on: a commit goes through only if `owner` still holds the
   * lease of every root `roots()` names at that moment, checked inside the committing
   * transaction (the leases held until it ends, so no claim slips in between). A commit whose
   * fence fails is rolled back whole and the store fails with `store_lease_lost`: a worker
   * paused past its lease writes nothing more, for any tree (its batch may hold writes for the
   * lost one). Returns the function that lifts the fence.
   */
  fenceCommits(owner: string, roots: () => readonly string[]): () => void;
  /**
   * A networked store: ends this connection's session when it sits in an open transaction for
   * longer than `ms` (its row locks would otherwise block other workers for as long as this one
   * is paused). Commits what is pending first. A store with nothing to bound has no such method.
   */
  limitIdleTransactions?(ms: number): void;
}

/** Largest page any bounded read returns. */
export const MAX_PAGE = 10_000;

/**
 * The error of a fenced commit whose lease is gone (see {@link Store.fenceCommits}).
 */
export function leaseLostError(location: string, owner: string, root: string): StoreError {
  return new StoreError(
    "store_lease_lost",
    `Worker ${owner} no longer holds the lease on process tree ${root} in "${location}": it was paused or cut off for longer than the lease TTL, and another worker runs that tree now. Nothing since this worker's last commit was saved; restart the worker (its other trees lapse and are taken over)`,
  );
}
