/**
 * Runs one benchmark case in this process and prints its result as one JSON line, with this
 * process's peak resident set size (getrusage's ru_maxrss, the same figure as VmHWM) unless the
 * case reports the peak of what it measured (a process tree it runs).
 *
 * @module
 */
import process from "node:process";
import type { BenchCase } from "./_bench.ts";

if (import.meta.main) {
  const [file, name] = Deno.args;
  if (!file || !name) throw new Error("usage: _worker.ts <bench file URL> <case name>");
  const module = await import(file) as { CASES: readonly BenchCase[] };
  const found = module.CASES.find((c) => c.name === name);
  if (!found) throw new Error(`no case ${JSON.stringify(name)} in ${file}`);
  const result = await found.run();
  const line = JSON.stringify({
    ...result,
    peakRssKiB: result.peakRssKiB ?? process.resourceUsage().maxRSS,
  });
  Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
}
