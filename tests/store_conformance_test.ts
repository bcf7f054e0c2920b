import { join } from "node:path";
import { SqliteStore } from "../runtime/store/sqlite_store.ts";
import { storeConformance } from "./store_conformance.ts";

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
