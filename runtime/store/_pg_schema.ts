/**
 * The PostgreSQL schema of {@link PostgresStore}: the same tables and indexes as the SQLite
 * schema (`_schema.ts`), with every text column in the `C` collation (so ordering and prefix
 * ranges compare bytes, as SQLite does), `bigint` integers, an ordinal column where SQLite
 * orders by `rowid`, append-only triggers on the audit table, and a statement trigger on every
 * table that notifies `libos_data` (other connections' `dataVersion`).
 *
 * Migrations are forward-only; the version lives in `libos_schema`. Opening takes an advisory
 * lock, so several workers starting at once migrate once.
 *
 * @module
 */

/** One forward-only step. */
export interface PgMigration {
  readonly version: number;
  readonly statements: readonly string[];
}

const T = `text COLLATE "C"`;

/** Every table libos keeps (the notify trigger is attached to each). */
export const PG_TABLES = [
  "meta",
  "audit",
  "events",
  "processes",
  "actions",
  "capabilities",
  "human_requests",
  "objects",
  "object_links",
  "namespaces",
  "images",
  "retained",
  "leases",
] as const;

/** The migrations, in order. */
export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    statements: [
      `CREATE TABLE meta (key ${T} PRIMARY KEY, value ${T} NOT NULL)`,
      `CREATE TABLE audit (
        seq          bigint PRIMARY KEY CHECK (seq >= 1),
        chain        ${T} NOT NULL,
        chain_seq    bigint NOT NULL CHECK (chain_seq >= 1),
        time         bigint NOT NULL,
        actor        ${T} NOT NULL,
        pid          ${T},
        action       ${T} NOT NULL,
        resource     ${T} NOT NULL,
        decision     ${T} NOT NULL,
        authority    ${T} NOT NULL,
        input_digest ${T},
        correlation  ${T},
        parent       bigint,
        detail       ${T},
        prev         ${T} NOT NULL,
        hash         ${T} NOT NULL,
        UNIQUE (chain, chain_seq)
      )`,
      `CREATE INDEX audit_by_pid ON audit (pid, seq) WHERE pid IS NOT NULL`,
      `CREATE INDEX audit_by_action ON audit (action, seq)`,
      `CREATE INDEX audit_by_resource ON audit (resource, seq)`,
      `CREATE INDEX audit_by_time ON audit (time)`,
      `CREATE FUNCTION libos_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'audit records are append-only'; END $$`,
      `CREATE TRIGGER audit_no_update BEFORE UPDATE OR DELETE ON audit
        FOR EACH ROW EXECUTE FUNCTION libos_audit_append_only()`,
      `CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
        FOR EACH STATEMENT EXECUTE FUNCTION libos_audit_append_only()`,
      `CREATE TABLE events (
        seq     bigserial PRIMARY KEY,
        version bigint NOT NULL,
        session ${T} NOT NULL,
        turn    bigint NOT NULL,
        time    bigint NOT NULL,
        kind    ${T} NOT NULL,
        payload ${T} NOT NULL
      )`,
      `CREATE INDEX events_by_session ON events (session, seq)`,
      `CREATE TABLE processes (
        pid     ${T} PRIMARY KEY,
        parent  ${T},
        status  ${T} NOT NULL,
        data    ${T} NOT NULL,
        created bigint NOT NULL,
        updated bigint NOT NULL,
        version bigint NOT NULL
      )`,
      `CREATE INDEX processes_by_parent ON processes (parent) WHERE parent IS NOT NULL`,
      `CREATE TABLE actions (
        id       ${T} PRIMARY KEY,
        pid      ${T} NOT NULL,
        kind     ${T} NOT NULL,
        digest   ${T} NOT NULL,
        status   ${T} NOT NULL,
        request  ${T} NOT NULL,
        outcome  ${T},
        reported smallint NOT NULL,
        created  bigint NOT NULL,
        updated  bigint NOT NULL,
        ord      bigserial NOT NULL
      )`,
      `CREATE INDEX actions_executing ON actions (created) WHERE status = 'executing'`,
      `CREATE INDEX actions_unreported ON actions (pid, created) WHERE reported = 0`,
      `CREATE TABLE capabilities (
        id           ${T} PRIMARY KEY,
        subject      ${T} NOT NULL,
        derived_from ${T},
        revoked      bigint,
        data         ${T} NOT NULL,
        created      bigint NOT NULL
      )`,
      `CREATE INDEX capabilities_by_subject ON capabilities (subject)`,
      `CREATE INDEX capabilities_by_origin ON capabilities (derived_from) WHERE derived_from IS NOT NULL`,
      `CREATE TABLE human_requests (
        id      ${T} PRIMARY KEY,
        pid     ${T} NOT NULL,
        kind    ${T} NOT NULL,
        status  ${T} NOT NULL,
        data    ${T} NOT NULL,
        created bigint NOT NULL,
        expires bigint,
        ord     bigserial NOT NULL
      )`,
      `CREATE INDEX human_requests_by_status ON human_requests (status, created)`,
      `CREATE INDEX human_requests_by_pid ON human_requests (pid, created)`,
      `CREATE TABLE objects (
        oid       ${T} PRIMARY KEY,
        namespace ${T} NOT NULL,
        name      ${T},
        type      ${T} NOT NULL,
        creator   ${T} NOT NULL,
        data      ${T} NOT NULL,
        payload   ${T},
        volatile  smallint NOT NULL CHECK (volatile IN (0, 1)),
        created   bigint NOT NULL,
        updated   bigint NOT NULL,
        CHECK (volatile = 0 OR payload IS NULL)
      )`,
      `CREATE UNIQUE INDEX objects_by_name ON objects (namespace, name) WHERE name IS NOT NULL`,
      `CREATE INDEX objects_by_namespace ON objects (namespace, oid)`,
      `CREATE TABLE object_links (
        src     ${T} NOT NULL,
        dst     ${T} NOT NULL,
        rel     ${T} NOT NULL,
        creator ${T} NOT NULL,
        created bigint NOT NULL,
        PRIMARY KEY (src, dst, rel)
      )`,
      `CREATE INDEX object_links_by_dst ON object_links (dst)`,
      `CREATE TABLE namespaces (key ${T} PRIMARY KEY, creator ${T} NOT NULL, created bigint NOT NULL)`,
      `CREATE TABLE images (
        id      ${T} PRIMARY KEY,
        data    ${T} NOT NULL,
        loader  ${T} NOT NULL,
        created bigint NOT NULL,
        updated bigint NOT NULL
      )`,
      `CREATE TABLE retained (
        pid       ${T} PRIMARY KEY,
        namespace ${T} NOT NULL,
        since     bigint NOT NULL,
        objects   bigint NOT NULL CHECK (objects >= 0),
        bytes     bigint NOT NULL CHECK (bytes >= 0),
        removed   bigint
      )`,
      `CREATE INDEX retained_by_since ON retained (since, pid) WHERE removed IS NULL`,
      // One notification per changing transaction (identical payloads are folded at commit),
      // delivered to listeners only once it committed. The payload names the writer's server
      // process, so a store ignores its own commits, as SQLite's data_version does.
      `CREATE FUNCTION libos_notify() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_notify('libos_data', pg_backend_pid()::text); RETURN NULL; END $$`,
      ...PG_TABLES.filter((table) => table !== "leases").map(notifyTrigger),
    ],
  },
  {
    version: 2,
    statements: [
      // Workers' leases on process trees: one worker runs a tree at a time; a lease lapses
      // unless renewed, and another worker may then take the tree over. generation counts
      // changes of owner (a fencing token).
      `CREATE TABLE leases (
        root       ${T} PRIMARY KEY,
        owner      ${T} NOT NULL,
        expires    bigint NOT NULL,
        claimed    bigint NOT NULL,
        generation bigint NOT NULL
      )`,
      `CREATE INDEX leases_by_owner ON leases (owner)`,
      notifyTrigger("leases"),
      // Global audit order for several writers: each record's seq comes from this sequence.
      `CREATE SEQUENCE audit_seq`,
      `SELECT setval('audit_seq', coalesce(max(seq), 0) + 1, false) FROM audit`,
      // The head of each chain segment, written after (outside) the transaction that appended
      // to it: truncating a chain below its head is detected ("libos audit verify").
      `CREATE TABLE audit_heads (
        chain     ${T} PRIMARY KEY,
        chain_seq bigint NOT NULL,
        seq       bigint NOT NULL,
        hash      ${T} NOT NULL,
        time      bigint NOT NULL
      )`,
    ],
  },
  {
    version: 3,
    statements: [
      // The fence of a commit (Store.fenceNextCommit): the owner's leases on the roots (a JSON
      // array) are locked for the rest of the transaction, and one it does not hold any more
      // aborts the transaction (SQLSTATE LB001, which the store reports as store_lease_lost).
      `CREATE FUNCTION libos_fence(fence_owner text, fence_roots text) RETURNS integer
        LANGUAGE plpgsql AS $$
        DECLARE
          wanted text[] := ARRAY(SELECT jsonb_array_elements_text(fence_roots::jsonb));
          missing text;
        BEGIN
          PERFORM 1 FROM leases WHERE owner = fence_owner AND root = ANY (wanted) FOR SHARE;
          SELECT w INTO missing FROM unnest(wanted) AS w
            WHERE NOT EXISTS (SELECT 1 FROM leases l WHERE l.root = w AND l.owner = fence_owner)
            LIMIT 1;
          IF missing IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'LB001', MESSAGE = missing;
          END IF;
          RETURN cardinality(wanted);
        END $$`,
    ],
  },
];

function notifyTrigger(table: string): string {
  return `CREATE TRIGGER ${table}_notify AFTER INSERT OR UPDATE OR DELETE ON ${table}
    FOR EACH STATEMENT EXECUTE FUNCTION libos_notify()`;
}

/** The schema version this build writes. */
export const PG_SCHEMA_VERSION: number = PG_MIGRATIONS.length;
