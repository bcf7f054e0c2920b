/**
 * Reading one word of a parsed `sh -c` body (for `_script_walker.ts`): its text as the program
 * receives it (escapes resolved as the shell resolves them), whether a value is a number or a
 * descriptor, and the expansions — globs, braces, tilde — the shell would apply to its unquoted
 * text, which make the argv unknown. Linear in the word: the two regular expressions here are
 * anchored and have no nested repetition, and a word is part of a script the pre-scan capped.
 *
 * @module
 */

/** Words in these positions undergo pathname, brace and tilde expansion. */
export type WordRole = "argument" | "assignment" | "pattern";

/** Whether every word of a list resolved to literal text. */
export function isLiteral(values: readonly (string | null)[]): values is string[] {
  return values.every((value) => value !== null);
}

/** A plain integer literal: decimal, octal, `0x` hex or `base#digits`. */
export function isNumber(value: string): boolean {
  return /^(?:0[xX][0-9a-fA-F]+|[0-9]+(?:#[0-9a-zA-Z@_]+)?)$/.test(value);
}

/** The target of `>&`/`<&` that duplicates or closes a descriptor (`1`, `-`, `3-`). */
export function isDescriptor(value: string): boolean {
  return value === "-" || /^[0-9]+-?$/.test(value);
}

/** Unquoted text as the program receives it: `\c` → `c`, backslash-newline removed. */
export function unescapeUnquoted(raw: string): string {
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === "\\" && i + 1 < raw.length) {
      i++;
      if (raw[i] !== "\n") out += raw[i];
    } else {
      out += c;
    }
  }
  return out;
}

/** Text inside `"…"`: a backslash escapes only `$`, backtick, `"`, `\` and newline. */
export function unescapeDoubleQuoted(raw: string): string {
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    const next = raw[i + 1];
    if (c === "\\" && next !== undefined && '$`"\\\n'.includes(next)) {
      i++;
      if (next !== "\n") out += next;
    } else {
      out += c;
    }
  }
  return out;
}

/**
 * Finds the expansions the shell applies to the unquoted text of one word: globs and brace
 * expansion (arguments only) and tilde expansion (arguments and assignments).
 */
export class ExpansionScan {
  readonly #role: WordRole;
  #finding: string | null = null;
  #brace = 0; // 0 none, 1 after `{`, 2 after `{` and `,` or `..`
  #bracket = false;
  #last = ""; // the previous unquoted character, "" at the start or after quoted text

  /** A scan of one word in position `role`. */
  constructor(role: WordRole) {
    this.#role = role;
  }

  /** The first expansion found, or null. */
  finding(): string | null {
    return this.#finding;
  }

  #found(what: string): void {
    this.#finding ??= what;
  }

  /** Scans a run of unquoted text (`first`: it starts the word). */
  unquoted(raw: string, first: boolean): void {
    for (let i = 0; i < raw.length; i++) {
      const c = raw[i]!;
      if (c === "\\") {
        i++;
        this.#last = "\\";
        continue;
      }
      if (c === "~" && this.#role !== "pattern") {
        const atStart = first && i === 0;
        const afterAssign = this.#last === "=" || this.#last === ":";
        if (atStart || afterAssign) this.#found("tilde expansion: ~");
      }
      if (this.#role === "argument") {
        if (c === "*" || c === "?") this.#found(`glob: ${c}`);
        else if (c === "[") this.#bracket = true;
        else if (c === "]" && this.#bracket) this.#found("glob: […]");
        else if (c === "{") this.#brace = Math.max(this.#brace, 1);
        else if ((c === "," || (c === "." && this.#last === ".")) && this.#brace > 0) {
          this.#brace = 2;
        } else if (c === "}") {
          if (this.#brace === 2) this.#found("brace expansion: {…}");
          this.#brace = 0;
        }
      }
      this.#last = c;
    }
  }

  /** Notes a run of quoted text: a `]` in it still closes an open `[` glob. */
  quoted(value: string): void {
    if (this.#bracket && value.includes("]")) this.#found("glob: […]");
    this.#last = "";
  }
}
