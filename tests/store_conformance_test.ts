import { join } from "node:path";
import { SqliteStore } from "../runtime/store/sqlite_store.ts";
import { storeConformance } from "./store_conformance.ts";
import { PostgresStore } from "../runtime/store/postgres_store.ts";
import { freshSchema, POSTGRES_SKIP, postgresRequired, postgresUrl } from "./pg_fixture.ts";

storeConformance(
  "SQLite file",
  (() => {
    let dir: string | undefined;
    const path = () => join(dir!, "conformance.db");
    return {
      durable: true,
      create() {
        dir = Deno.makeTempDirSync({ prefix: "libos-conformance-" });
        return SqliteStore.open({ path: path() });
      },
      reopen: () => SqliteStore.open({ path: path() }),
      cleanup() {
        if (dir) Deno.removeSync(dir, { recursive: true });
        dir = undefined;
      },
    };
  })(),
);

storeConformance("SQLite :memory:", {
  durable: false,
  create: () => SqliteStore.open({ path: ":memory:" }),
});

if (postgresUrl() !== undefined || postgresRequired()) {
  storeConformance(
    "PostgreSQL",
    (() => {
      let schema: { url: string; drop(): void } | undefined;
      return {
        durable: true,
        create() {
          schema = freshSchema("conformance");
          return PostgresStore.open({ url: schema.url });
        },
        reopen: () => PostgresStore.open({ url: schema!.url }),
        cleanup() {
          schema?.drop();
          schema = undefined;
        },
      };
    })(),
  );
} else {
  Deno.test({ name: `Store conformance (PostgreSQL): ${POSTGRES_SKIP}`, ignore: true, fn() {} });
}
