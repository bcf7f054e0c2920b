/**
 * Polls a process tree's memory every 5 ms until its root exits, then prints the largest sum over
 * the tree's processes alive at once, in KiB: their proportional set sizes (PSS), so that pages
 * several processes share — the Deno binary's, a forked child's before it execs — count once
 * (summed RSS counted a 160 MiB process twice whenever it forked). Run by `demo_bench.ts` as its
 * own process: Deno reads `/proc` only with every permission, which a bench case does not hold.
 *
 * @module
 */

/** The sum of PSS over `pid` and its descendants, in KiB. */
async function treeRssKiB(pid: number): Promise<number> {
  let total = 0;
  const pending = [pid];
  while (pending.length > 0) {
    const at = pending.pop()!;
    try {
      const rollup = await Deno.readTextFile(`/proc/${at}/smaps_rollup`);
      total += Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
      for await (const task of Deno.readDir(`/proc/${at}/task`)) {
        const children = await Deno.readTextFile(`/proc/${at}/task/${task.name}/children`);
        for (const child of children.trim().split(/\s+/)) if (child) pending.push(Number(child));
      }
    } catch {
      // Gone between two reads: it no longer counts.
    }
  }
  return total;
}

if (import.meta.main) {
  const root = Number(Deno.args[0]);
  let peak = 0;
  for (;;) {
    try {
      await Deno.stat(`/proc/${root}`);
    } catch {
      break;
    }
    peak = Math.max(peak, await treeRssKiB(root));
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  Deno.stdout.writeSync(new TextEncoder().encode(`${peak}\n`));
}
