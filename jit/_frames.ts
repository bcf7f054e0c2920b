/**
 * The host's side of the sandbox's frame channel, bounded whatever the tool sends: lines are cut
 * on LF bytes and measured in bytes (a line of multi-byte characters costs what it weighs, not
 * its length in UTF-16 units), and no more than one line over the cap is ever buffered.
 *
 * @module
 */

/** One line of the stream. */
export interface FrameLine {
  readonly text: string;
  /** Its size in bytes, the newline not included. */
  readonly bytes: number;
}

const LF = 0x0a;

/** The bytes of `parts` (together `size` bytes) in one array. */
function joined(parts: readonly Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * Lines of a stream, split on LF bytes; `undefined` once for a line over `max` bytes (and then
 * nothing more: the caller ends the call). At most `max` bytes of a partial line are held.
 */
export async function* frameLines(
  stream: ReadableStream<Uint8Array>,
  max: number,
): AsyncGenerator<FrameLine | undefined> {
  const decoder = new TextDecoder();
  let parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    let at = 0;
    for (;;) {
      const newline = chunk.indexOf(LF, at);
      if (newline < 0) break;
      const piece = chunk.subarray(at, newline);
      const bytes = size + piece.length;
      if (bytes > max) {
        yield undefined;
        return;
      }
      const text = decoder.decode(size === 0 ? piece : joined([...parts, piece], bytes));
      parts = [];
      size = 0;
      at = newline + 1;
      yield { text, bytes };
    }
    if (at < chunk.length) {
      size += chunk.length - at;
      if (size > max) {
        yield undefined;
        return;
      }
      // Copied: the rest of this chunk waits for the line's end in a later one.
      parts.push(chunk.slice(at));
    }
  }
}
