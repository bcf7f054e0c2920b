/**
 * The `libos` process entry, started by `bootstrap.ts` with narrow permissions (DESIGN §11).
 * Paths on the command line are resolved against `LIBOS_CWD`, the directory the user ran the
 * command in, which the bootstrap passes on.
 *
 * @module
 */
import { runCli } from "./mod.ts";

if (import.meta.main) {
  const encoder = new TextEncoder();
  const cwd = Deno.env.get("LIBOS_CWD");
  if (cwd === undefined) {
    Deno.stderr.writeSync(
      encoder.encode(
        `libos: start libos through "deno task libos" (cli/bootstrap.ts), which sets LIBOS_CWD\n`,
      ),
    );
    Deno.exit(2);
  }
  const write = (stream: { writeSync(p: Uint8Array): number }, text: string) => {
    const bytes = encoder.encode(text);
    let done = 0;
    while (done < bytes.length) done += stream.writeSync(bytes.subarray(done));
  };
  const status = await runCli(Deno.args, {
    stdout: (text) => write(Deno.stdout, text),
    stderr: (text) => write(Deno.stderr, text),
    env: Deno.env,
    cwd,
    terminal: {
      read: (buffer) => Deno.stdin.read(buffer),
      isTerminal: () => Deno.stdin.isTerminal(),
      write: (text) => write(Deno.stderr, text),
    },
    stderrIsTerminal: Deno.stderr.isTerminal(),
    stdoutIsTerminal: Deno.stdout.isTerminal(),
    onInterrupt: (handler) => {
      const listener = () => {
        if (handler() === "exit") Deno.exit(130);
      };
      Deno.addSignalListener("SIGINT", listener);
      return { [Symbol.dispose]: () => Deno.removeSignalListener("SIGINT", listener) };
    },
    columns: () => {
      try {
        return Deno.consoleSize().columns;
      } catch {
        return undefined;
      }
    },
    readStdin: async () => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of Deno.stdin.readable) {
        size += chunk.length;
        // Bounded: a batch larger than this is refused by the command anyway.
        if (size > 64 * 1024 * 1024) break;
        chunks.push(chunk);
      }
      const all = new Uint8Array(size > 64 * 1024 * 1024 ? 64 * 1024 * 1024 : size);
      let at = 0;
      for (const chunk of chunks) {
        all.set(chunk.subarray(0, all.length - at), at);
        at += chunk.length;
        if (at >= all.length) break;
      }
      return new TextDecoder().decode(all);
    },
  });
  Deno.exit(status);
}
