/**
 * A private PostgreSQL cluster for a benchmark case: Debian's server (`/usr/lib/postgresql/N`),
 * its own data directory, loopback only, a free port, trust login for the user `libos` — stopped
 * and removed on dispose. As root, the server runs as the `postgres` user (it refuses root).
 *
 * @module
 */
import { join } from "node:path";

/** A running cluster. */
export interface Cluster extends AsyncDisposable {
  /** `postgres://libos@127.0.0.1:PORT/postgres`. */
  readonly url: string;
}

async function run(argv: readonly string[]): Promise<string> {
  const out = await new Deno.Command(argv[0]!, {
    args: argv.slice(1),
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${argv.join(" ")} failed:\n${text}`);
  return text;
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Starts a cluster (or uses `LIBOS_TEST_POSTGRES` when set). */
export async function startCluster(): Promise<Cluster> {
  const given = Deno.env.get("LIBOS_TEST_POSTGRES");
  if (given) return { url: given, [Symbol.asyncDispose]: async () => {} };
  const versions = [...Deno.readDirSync("/usr/lib/postgresql")].map((e) => e.name).sort();
  const bin = join("/usr/lib/postgresql", versions.at(-1) ?? "", "bin");
  const dir = Deno.makeTempDirSync({ prefix: "libos-bench-pg-" });
  const root = Deno.uid() === 0;
  const as = root ? ["runuser", "-u", "postgres", "--"] : [];
  if (root) await run(["chown", "postgres", dir]);
  const port = freePort();
  await run([
    ...as,
    join(bin, "initdb"),
    "-D",
    join(dir, "data"),
    "-A",
    "trust",
    "-U",
    "libos",
    "--no-sync",
  ]);
  await run([
    ...as,
    join(bin, "pg_ctl"),
    "-D",
    join(dir, "data"),
    "-w",
    "-l",
    join(dir, "log"),
    "-o",
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`,
    "start",
  ]);
  return {
    url: `postgres://libos@127.0.0.1:${port}/postgres`,
    async [Symbol.asyncDispose]() {
      await run([...as, join(bin, "pg_ctl"), "-D", join(dir, "data"), "-m", "immediate", "stop"])
        .catch(() => "");
      Deno.removeSync(dir, { recursive: true });
    },
  };
}
