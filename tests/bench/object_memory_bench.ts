/**
 * Object memory read benchmark (issue 20): what one `ObjectMemory.read()` by a process costs —
 * the capability decision, the audit record of that decision, decoding and the payload — on a
 * file database with group commit, the runtime's default; then the read that renders a process's
 * view into its context every turn (decided, not recorded). Competitors, measured in the same run:
 * the same read by the runtime itself (no decision, no record), and the store lookup with the
 * decode alone (no checks at all).
 *
 * Arrival pattern: back-to-back reads of random objects among 1,000 (about 200 bytes each) in the
 * reading process's own namespace, one caller. No target: the rows say what deciding and
 * recording a read costs, as ratios to the first row of the group.
 *
 * @module
 */
import { join } from "node:path";
import { processNamespace } from "../../runtime/memory/memory_object.ts";
import { createRuntime, type Runtime } from "../../runtime/runtime.ts";
import { type BenchCase, benchDir, measure } from "./_bench.ts";

const OBJECTS = 1_000;
const READS = 20_000;

async function setup(dir: string): Promise<{ runtime: Runtime; pid: string; oids: string[] }> {
  const workspace = join(dir, "ws");
  Deno.mkdirSync(workspace);
  const runtime = await createRuntime({
    workspace,
    db: join(dir, "b.db"),
    env: { get: (n) => (n === "XDG_STATE_HOME" ? join(dir, "state") : undefined) },
  });
  const pid = runtime.processes.spawn({ goal: "bench", image: "base-agent:v0" }).pid;
  const oids = runtime.store.step(() =>
    Array.from({ length: OBJECTS }, (_, i) =>
      runtime.memory.create(pid, {
        type: "note",
        payload: { n: i, text: `note ${i} `.repeat(16) },
        tags: ["bench"],
        provenance: { source: "model", label: "bench", ref: null },
      }).oid)
  );
  runtime.store.flush();
  return { runtime, pid, oids };
}

function readCase(
  name: string,
  read: (runtime: Runtime, pid: string, oid: string) => unknown,
  note: string,
): BenchCase {
  return {
    group: "object read",
    name,
    async run() {
      using dir = benchDir();
      const { runtime, pid, oids } = await setup(dir.path);
      let i = 0;
      const result = await measure(
        READS,
        () => {
          read(runtime, pid, oids[(i++ * 7919) % OBJECTS]!);
        },
        note,
        500,
      );
      runtime.store.flush();
      await runtime.close();
      return result;
    },
  };
}

/** The object read rows. */
export const CASES: readonly BenchCase[] = [
  readCase(
    "ObjectMemory.read() by a process (decide + audit record)",
    (runtime, pid, oid) => runtime.memory.read(pid, oid),
    `${OBJECTS} objects, random oid, file db, group commit`,
  ),
  readCase(
    "ObjectMemory.read() rendering a process's view (decided, not recorded)",
    (runtime, pid, oid) => runtime.memory.read(pid, oid, { view: true }),
    "the per-turn context render's read",
  ),
  readCase(
    "ObjectMemory.read() by the runtime (no decision, no record; competitor)",
    (runtime, _pid, oid) => runtime.memory.read("runtime", oid),
    "same objects, the runtime's own read",
  ),
  readCase(
    "store.getObject() + JSON.parse (no checks; competitor)",
    (runtime, pid, oid) => {
      const row = runtime.store.getObject(oid);
      if (!row || row.namespace !== processNamespace(pid)) throw new Error("bench object missing");
      return [JSON.parse(row.data), JSON.parse(row.payload ?? "null")];
    },
    "the row and its payload, decoded",
  ),
];
