/**
 * An example agent-written tool, as the JIT validator accepts it: it counts the lines of a text
 * that contain a word, reaching the file only through `libos.call` (a checked syscall).
 *
 * `deno task libos jit check jit/examples/count_matches.ts` accepts it.
 *
 * @module
 */

/** What the model passes. */
export interface Args {
  readonly path: string;
  readonly word: string;
}

/** The one host door a tool gets (the sandbox issue defines the syscalls behind it). */
export interface Libos {
  call(name: string, args: Record<string, unknown>): Promise<unknown>;
}

/** Counts the lines of `args.path` that contain `args.word`, ignoring case. */
export async function run(args: Args, libos: Libos): Promise<{ lines: number; matches: number }> {
  const file = await libos.call("fs.read_text", { path: args.path }) as { text: string };
  const needle = args.word.toLowerCase();
  const lines = file.text.split("\n");
  let matches = 0;
  for (const line of lines) {
    if (line.toLowerCase().includes(needle)) matches++;
  }
  return { lines: lines.length, matches };
}
