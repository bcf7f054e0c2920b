/**
 * Positions in one source text: swc reports UTF-8 byte offsets; violations report 1-based lines
 * and columns in UTF-16 code units (what editors and `String` indices use).
 *
 * @module
 */

/** A 1-based line and column, the column in UTF-16 code units. */
export interface Position {
  readonly line: number;
  readonly column: number;
}

/** Maps byte offsets of one source to string indices, lines and columns. */
export class SourceMap {
  readonly source: string;
  /** The UTF-8 length of the source. */
  readonly byteLength: number;
  /** `byteAt[i]`: the byte offset of UTF-16 index `i` (length + 1 entries). */
  readonly #byteAt: Uint32Array;
  /** The UTF-16 index where each line starts. */
  readonly #lineStarts: number[];

  constructor(source: string) {
    this.source = source;
    this.#byteAt = new Uint32Array(source.length + 1);
    this.#lineStarts = [0];
    let bytes = 0;
    for (let i = 0; i < source.length; i++) {
      this.#byteAt[i] = bytes;
      const unit = source.charCodeAt(i);
      if (unit === 0x0a) this.#lineStarts.push(i + 1);
      else if (unit === 0x0d && source.charCodeAt(i + 1) !== 0x0a) this.#lineStarts.push(i + 1);
      else if (unit === 0x2028 || unit === 0x2029) this.#lineStarts.push(i + 1);
      if (unit < 0x80) bytes += 1;
      else if (unit < 0x800) bytes += 2;
      else if (unit >= 0xd800 && unit <= 0xdbff && isLow(source.charCodeAt(i + 1))) {
        // A surrogate pair is one 4-byte code point; its second unit shares the offset.
        this.#byteAt[i + 1] = bytes;
        bytes += 4;
        i++;
      } else bytes += 3;
    }
    this.#byteAt[source.length] = bytes;
    this.byteLength = bytes;
  }

  /** The UTF-16 index of a byte offset (the first unit at or after it). */
  index(byteOffset: number): number {
    const target = Math.max(0, Math.min(byteOffset, this.byteLength));
    let lo = 0;
    let hi = this.source.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#byteAt[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The line and column of a UTF-16 index. */
  positionOfIndex(index: number): Position {
    let lo = 0;
    let hi = this.#lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.#lineStarts[mid]! <= index) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: index - this.#lineStarts[lo]! + 1 };
  }

  /** The line and column of a byte offset. */
  position(byteOffset: number): Position {
    return this.positionOfIndex(this.index(byteOffset));
  }

  /** The source text between two byte offsets. */
  slice(startByte: number, endByte: number): string {
    return this.source.slice(this.index(startByte), this.index(endByte));
  }
}

function isLow(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}
