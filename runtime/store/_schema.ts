/**
 * The SQLite schema as forward-only migrations. `PRAGMA user_version` holds the number of the
 * last migration applied; a database whose version is above the last one here was written by a
 * newer libos and is refused unmodified. Migrations are append-only: never edit a released one.
 *
 * @module
 */

/** `PRAGMA application_id` of a libos database: "LBOS". */
export const APPLICATION_ID = 0x4c424f53;

/** One migration: the SQL that moves the schema from `version - 1` to `version`. */
export interface Migration {
  readonly version: number;
  readonly sql: string;
}

/** Every migration, in order. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
      ) STRICT;

      CREATE TABLE audit (
        seq          INTEGER PRIMARY KEY CHECK (seq >= 1),
        chain        TEXT    NOT NULL,
        chain_seq    INTEGER NOT NULL CHECK (chain_seq >= 1),
        time         INTEGER NOT NULL,
        actor        TEXT    NOT NULL,
        pid          TEXT,
        action       TEXT    NOT NULL,
        resource     TEXT    NOT NULL,
        decision     TEXT    NOT NULL,
        authority    TEXT    NOT NULL,
        input_digest TEXT,
        correlation  TEXT,
        parent       INTEGER,
        detail       TEXT,
        prev         TEXT    NOT NULL,
        hash         TEXT    NOT NULL,
        UNIQUE (chain, chain_seq)
      ) STRICT;
      -- A few indexes for the questions people ask: what did this process do, who touched this
      -- resource, every use of this action, what happened in this time range. Decision and actor
      -- have few distinct values and are filtered, not indexed.
      CREATE INDEX audit_by_pid      ON audit (pid, seq) WHERE pid IS NOT NULL;
      CREATE INDEX audit_by_action   ON audit (action, seq);
      CREATE INDEX audit_by_resource ON audit (resource, seq);
      CREATE INDEX audit_by_time     ON audit (time);
      -- Append-only for every connection that goes through SQL; tampering needs to drop these,
      -- and the hash chain plus the head file catch what such a tamperer does.
      CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
        BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END;
      CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
        BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END;

      CREATE TABLE events (
        seq     INTEGER PRIMARY KEY,
        version INTEGER NOT NULL,
        session TEXT    NOT NULL,
        turn    INTEGER NOT NULL,
        time    INTEGER NOT NULL,
        kind    TEXT    NOT NULL,
        payload TEXT    NOT NULL
      ) STRICT;
      CREATE INDEX events_by_session ON events (session, seq);
    `,
  },
  {
    version: 2,
    sql: `
      -- A process row is its JSON document; status and parent are copied into columns. Only
      -- parent is indexed: status changes twice per quantum, and an index on it would be
      -- rewritten each time, while the scans by status (recovery, ps) are rare.
      CREATE TABLE processes (
        pid     TEXT    PRIMARY KEY,
        parent  TEXT,
        status  TEXT    NOT NULL,
        data    TEXT    NOT NULL,
        created INTEGER NOT NULL,
        updated INTEGER NOT NULL,
        -- Bumped by every write, so a reader can tell a cached copy is current without
        -- reading the document again.
        version INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX processes_by_parent ON processes (parent) WHERE parent IS NOT NULL;

      -- The at-most-once ledger: an action is committed as executing before its effect starts,
      -- and as done, failed or outcome_unknown after.
      CREATE TABLE actions (
        id       TEXT    PRIMARY KEY,
        pid      TEXT    NOT NULL,
        kind     TEXT    NOT NULL,
        digest   TEXT    NOT NULL,
        status   TEXT    NOT NULL,
        request  TEXT    NOT NULL,
        outcome  TEXT,
        reported INTEGER NOT NULL,
        created  INTEGER NOT NULL,
        updated  INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX actions_executing ON actions (created) WHERE status = 'executing';
      CREATE INDEX actions_unreported ON actions (pid, created) WHERE reported = 0;
    `,
  },
  {
    version: 3,
    sql: `
      -- A capability row is its JSON document; subject, derivation and revocation are columns
      -- for the per-subject load and the revocation cascade.
      CREATE TABLE capabilities (
        id           TEXT    PRIMARY KEY,
        subject      TEXT    NOT NULL,
        derived_from TEXT,
        revoked      INTEGER,
        data         TEXT    NOT NULL,
        created      INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX capabilities_by_subject ON capabilities (subject);
      CREATE INDEX capabilities_by_origin ON capabilities (derived_from) WHERE derived_from IS NOT NULL;
    `,
  },
  {
    version: 4,
    sql: `
      -- Everything between a process and its human: approvals, questions, permission requests,
      -- outputs, interrupts. Durable, so a decision survives restarts and other terminals.
      CREATE TABLE human_requests (
        id      TEXT    PRIMARY KEY,
        pid     TEXT    NOT NULL,
        kind    TEXT    NOT NULL,
        status  TEXT    NOT NULL,
        data    TEXT    NOT NULL,
        created INTEGER NOT NULL,
        expires INTEGER
      ) STRICT;
      CREATE INDEX human_requests_by_status ON human_requests (status, created);
      CREATE INDEX human_requests_by_pid ON human_requests (pid, created);
    `,
  },
  {
    version: 5,
    sql: `
      -- Typed objects. The payload is canonical JSON; NULL for a volatile object, whose payload
      -- lives only in the memory of the runtime that created it.
      CREATE TABLE objects (
        oid       TEXT    PRIMARY KEY,
        namespace TEXT    NOT NULL,
        name      TEXT,
        type      TEXT    NOT NULL,
        creator   TEXT    NOT NULL,
        data      TEXT    NOT NULL,
        payload   TEXT,
        volatile  INTEGER NOT NULL CHECK (volatile IN (0, 1)),
        created   INTEGER NOT NULL,
        updated   INTEGER NOT NULL,
        CHECK (volatile = 0 OR payload IS NULL)
      ) STRICT;
      -- A name is unique within its namespace (the same name may live in two namespaces).
      CREATE UNIQUE INDEX objects_by_name ON objects (namespace, name) WHERE name IS NOT NULL;
      CREATE INDEX objects_by_namespace ON objects (namespace, oid);

      CREATE TABLE object_links (
        src     TEXT    NOT NULL,
        dst     TEXT    NOT NULL,
        rel     TEXT    NOT NULL,
        creator TEXT    NOT NULL,
        created INTEGER NOT NULL,
        PRIMARY KEY (src, dst, rel)
      ) STRICT;
      CREATE INDEX object_links_by_dst ON object_links (dst);

      -- Explicit namespaces (process namespaces exist with their process).
      CREATE TABLE namespaces (
        key     TEXT    PRIMARY KEY,
        creator TEXT    NOT NULL,
        created INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 6,
    sql: `
      -- Agent images loaded at run time (built-in ones ship with libos; a row with a built-in's
      -- id replaces it, which needs image admin).
      CREATE TABLE images (
        id      TEXT    PRIMARY KEY,
        data    TEXT    NOT NULL,
        loader  TEXT    NOT NULL,
        created INTEGER NOT NULL,
        updated INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 7,
    sql: `
      -- What a finished process left for review (issue 23): its own namespace's objects — tool
      -- results, turns, checkpoints — are kept, unreachable by any live process, from since
      -- (when it finished) until libos gc removes them (removed: when; NULL while kept).
      CREATE TABLE retained (
        pid       TEXT    PRIMARY KEY,
        namespace TEXT    NOT NULL,
        since     INTEGER NOT NULL,
        objects   INTEGER NOT NULL CHECK (objects >= 0),
        bytes     INTEGER NOT NULL CHECK (bytes >= 0),
        removed   INTEGER
      ) STRICT;
      CREATE INDEX retained_by_since ON retained (since, pid) WHERE removed IS NULL;
    `,
  },
  {
    version: 8,
    sql: `
      -- Workers' leases on process trees (issue 26): one worker runs a tree at a time; a lease
      -- lapses unless renewed, and another worker may then take the tree over. generation counts
      -- changes of owner (a fencing token).
      CREATE TABLE leases (
        root       TEXT    PRIMARY KEY,
        owner      TEXT    NOT NULL,
        expires    INTEGER NOT NULL,
        claimed    INTEGER NOT NULL,
        generation INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX leases_by_owner ON leases (owner);
    `,
  },
];

/** The schema version this build writes. */
export const SCHEMA_VERSION: number = MIGRATIONS.length;
