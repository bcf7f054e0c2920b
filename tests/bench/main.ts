/**
 * `deno task bench`: runs every `*_bench.ts` case, each in its own subprocess, and prints one
 * table with p50/p95/p99 latency, throughput, peak RSS, the ratio to the first row of its group,
 * and whether the row meets its target. `deno task bench -- FILTER` runs the cases whose group or
 * name contains FILTER.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BenchCase, type BenchResult, percentile } from "./_bench.ts";

interface Row {
  readonly bench: BenchCase;
  readonly result: BenchResult & { readonly peakRssKiB: number };
}

const HERE = dirname(fileURLToPath(import.meta.url));

function fmt(ms: number): string {
  if (!Number.isFinite(ms)) return "-";
  if (ms < 1) return `${(ms * 1000).toFixed(1)} µs`;
  if (ms < 1000) return `${ms.toFixed(2)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

function rate(ops: number, seconds: number): number {
  return seconds > 0 ? ops / seconds : Number.POSITIVE_INFINITY;
}

async function runCase(file: string, bench: BenchCase): Promise<Row> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      // The effects rows spawn programs and talk to a loopback server.
      "--allow-run",
      "--allow-net=127.0.0.1",
      "--allow-sys",
      join(HERE, "_worker.ts"),
      new URL(`file://${file}`).href,
      bench.name,
    ],
    env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (output.code !== 0) {
    throw new Error(
      `bench case ${JSON.stringify(bench.name)} failed:\n${
        new TextDecoder().decode(output.stderr)
      }`,
    );
  }
  const lines = new TextDecoder().decode(output.stdout).trim().split("\n");
  return { bench, result: JSON.parse(lines[lines.length - 1]!) };
}

function table(rows: readonly Row[]): string {
  const firstOfGroup = new Map<string, Row>();
  for (const row of rows) {
    if (!firstOfGroup.has(row.bench.group)) firstOfGroup.set(row.bench.group, row);
  }
  const header = [
    "group",
    "case",
    "n",
    "p50",
    "p95",
    "p99",
    "ops/s",
    "vs first",
    "peak RSS",
    "target",
    "note",
  ];
  const body = rows.map((row) => {
    const { result, bench } = row;
    const opsPerSecond = rate(result.ops, result.seconds);
    const first = firstOfGroup.get(bench.group)!;
    const ratio = opsPerSecond / rate(first.result.ops, first.result.seconds);
    const p95 = percentile(result.latenciesMs, 95);
    let target = "";
    if (bench.target?.minOpsPerSecond !== undefined) {
      target = `${
        opsPerSecond >= bench.target.minOpsPerSecond ? "MET" : "MISSED"
      } >= ${bench.target.minOpsPerSecond} ops/s`;
    }
    if (bench.target?.minRatio !== undefined) {
      target += `${target ? "; " : ""}${
        ratio >= bench.target.minRatio ? "MET" : "MISSED"
      } >= ${bench.target.minRatio}x the group's first row`;
    }
    if (bench.target?.maxP99Ms !== undefined) {
      const p99 = percentile(result.latenciesMs, 99);
      target += `${target ? "; " : ""}${p99 <= bench.target.maxP99Ms ? "MET" : "MISSED"} p99 <= ${
        fmt(bench.target.maxP99Ms)
      }`;
    }
    if (bench.target?.maxP50Ms !== undefined) {
      const p50 = percentile(result.latenciesMs, 50);
      target += `${target ? "; " : ""}${p50 <= bench.target.maxP50Ms ? "MET" : "MISSED"} p50 <= ${
        fmt(bench.target.maxP50Ms)
      }`;
    }
    if (bench.target?.maxP95Ms !== undefined) {
      target += `${target ? "; " : ""}${p95 <= bench.target.maxP95Ms ? "MET" : "MISSED"} p95 <= ${
        fmt(bench.target.maxP95Ms)
      }`;
    }
    return [
      bench.group,
      bench.name,
      String(result.ops),
      fmt(percentile(result.latenciesMs, 50)),
      fmt(p95),
      fmt(percentile(result.latenciesMs, 99)),
      Math.round(opsPerSecond).toLocaleString("en-US"),
      `${ratio.toFixed(2)}x`,
      `${(result.peakRssKiB / 1024).toFixed(1)} MiB`,
      target,
      result.note ?? "",
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ").trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("-|-"), ...body.map(line)].join("\n");
}

if (import.meta.main) {
  // `deno task bench -- FILTER` passes the "--" through.
  const filter = Deno.args.find((a) => a !== "--");
  const files = [...Deno.readDirSync(HERE)]
    .filter((e) => e.isFile && e.name.endsWith("_bench.ts") && !e.name.startsWith("_"))
    .map((e) => join(HERE, e.name))
    .sort();
  const rows: Row[] = [];
  const encoder = new TextEncoder();
  for (const file of files) {
    const { CASES } = await import(new URL(`file://${file}`).href) as {
      CASES: readonly BenchCase[];
    };
    for (const bench of CASES) {
      if (filter && !bench.name.includes(filter) && !bench.group.includes(filter)) continue;
      Deno.stderr.writeSync(encoder.encode(`running ${bench.group}: ${bench.name}\n`));
      rows.push(await runCase(file, bench));
    }
  }
  const cpus = navigator.hardwareConcurrency;
  Deno.stdout.writeSync(
    encoder.encode(
      `Agent libOS benchmarks — Deno ${Deno.version.deno}, ${Deno.build.os}/${Deno.build.arch}, ${cpus} CPUs; ` +
        `closed loop, one caller, back-to-back arrivals; each row in its own process\n\n${
          table(rows)
        }\n`,
    ),
  );
}
