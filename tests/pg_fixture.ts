/**
 * Where the PostgreSQL tests find a server: `LIBOS_TEST_POSTGRES` (a connection string whose
 * user may create schemas), which `.ci/run` sets to the private cluster it starts. Without it the
 * tests are skipped with a message saying how to run them — except under `.ci/run`
 * (`LIBOS_REQUIRE_POSTGRES=1`), where a missing server fails them.
 *
 * @module
 */
import { dropPostgresSchema, runPostgresStatements } from "../runtime/store/postgres_store.ts";

/** The test server's connection string, or undefined when none is configured. */
export function postgresUrl(): string | undefined {
  const url = Deno.env.get("LIBOS_TEST_POSTGRES")?.trim();
  return url ? url : undefined;
}

/** Whether PostgreSQL tests must run (CI), so a missing server is a failure. */
export function postgresRequired(): boolean {
  return Deno.env.get("LIBOS_REQUIRE_POSTGRES") === "1";
}

/** A message for a skipped PostgreSQL test. */
export const POSTGRES_SKIP =
  "skipped: no PostgreSQL server (set LIBOS_TEST_POSTGRES=postgres://USER@127.0.0.1:PORT/DB; .ci/run starts one)";

/** A fresh schema's connection string on the test server (drop it with the returned function). */
export function freshSchema(prefix = "t"): { url: string; drop(): void } {
  const base = postgresUrl();
  if (base === undefined) {
    throw new Error(`LIBOS_TEST_POSTGRES is not set but PostgreSQL tests are required (.ci/run)`);
  }
  const schema = `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const url = new URL(base);
  url.searchParams.set("schema", schema);
  return { url: url.href, drop: () => dropPostgresSchema(url.href) };
}

/**
 * Registers a PostgreSQL test: run when a server is configured or required, otherwise
 * registered as ignored under a name that says why.
 */
export function pgTest(name: string, fn: (t: Deno.TestContext) => void | Promise<void>): void {
  const runs = postgresUrl() !== undefined || postgresRequired();
  Deno.test({
    name: runs ? name : `${name} (${POSTGRES_SKIP})`,
    ignore: !runs,
    sanitizeResources: false,
    sanitizeOps: false,
    fn,
  });
}

/** Runs statements as the test server's (superuser) login, in its public schema; their rows. */
export function asAdmin(...statements: readonly string[]): Record<string, unknown>[][] {
  const base = postgresUrl();
  if (base === undefined) throw new Error("LIBOS_TEST_POSTGRES is not set");
  const url = new URL(base);
  url.searchParams.delete("schema");
  return runPostgresStatements(url.href, statements);
}
