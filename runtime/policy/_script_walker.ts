/**
 * The walk (step 3 of `shell_script.ts`): what a parsed `sh -c` body does — every simple command
 * with its literal argv, and every reason it cannot be fully seen through — decided over the
 * syntax tree mvdan-sh built (`_script_syntax.ts`). The decisions are listed in the header of
 * `shell_script.ts`.
 *
 * @module
 */
import type { ScriptAnalysis, ScriptCommand } from "./shell_script.ts";
import {
  call,
  child,
  children,
  flag,
  operator,
  type Operators,
  quote,
  type SyntaxApi,
  text,
  VARIABLE_TESTS,
  where,
} from "./_script_syntax.ts";
import {
  ExpansionScan,
  isDescriptor,
  isLiteral,
  isNumber,
  unescapeDoubleQuoted,
  unescapeUnquoted,
  type WordRole,
} from "./_script_words.ts";

/** Most reasons listed; the rest are counted in one last reason. */
const MAX_REASONS = 32;

/** Targets of an output redirection that write no file. */
const SAFE_SINKS: readonly string[] = Object.freeze(["/dev/null", "/dev/stdout", "/dev/stderr"]);
/**
 * Variables the shell or the dynamic loader turns into code or a program lookup: `PATH` (which
 * file a command name runs), `BASH_ENV`/`ENV` (sourced by child shells), the prompts (`PS4` is
 * expanded by `set -x`, with command substitution), `LD_*` (loaded into every child).
 */
const CODE_VARIABLES: readonly string[] = Object.freeze([
  "PATH",
  "BASH_ENV",
  "ENV",
  "PS0",
  "PS1",
  "PS2",
  "PS4",
  "PROMPT_COMMAND",
  "SHELLOPTS",
  "BASHOPTS",
  "LD_PRELOAD",
  "LD_LIBRARY_PATH",
  "LD_AUDIT",
]);
const CODE_VARIABLE_EFFECT = "changes which code later commands run";

/** Builtins that declare variables; the parser makes a declaration clause of them. */
const DECLARATION_BUILTINS: readonly string[] = Object.freeze([
  "declare",
  "typeset",
  "local",
  "export",
  "readonly",
]);
/** Builtins whose arguments name variables; a subscript in a name is evaluated as arithmetic. */
const NAME_BUILTINS: readonly string[] = Object.freeze([
  "read",
  "unset",
  "getopts",
  "wait",
  "mapfile",
  "readarray",
  ...DECLARATION_BUILTINS,
]);

interface Found {
  readonly command: ScriptCommand;
  readonly offset: number;
}

/** One analysis: walks a parsed file, collecting commands and reasons. */
export class ScriptWalker {
  readonly #api: SyntaxApi;
  readonly #ops: Operators;
  readonly #found: Found[] = [];
  readonly #reasons: string[] = [];
  readonly #seen = new Set<string>();
  #unlisted = 0;
  readonly #counts = new Map<string, number>();
  /** Above 0 while walking what syntax.Walk of this build skips (so the census skips it too). */
  #uncounted = 0;

  readonly #script: string;
  readonly #partial: ScriptCommand[] = [];

  constructor(api: SyntaxApi, ops: Operators, script: string) {
    this.#api = api;
    this.#ops = ops;
    this.#script = script;
  }

  analyze(file: object): ScriptAnalysis {
    this.#enter(file);
    for (const stmt of children(file, "Stmts")) this.#stmt(stmt);
    this.#census(file);
    const commands = this.#found
      .map((found, index) => ({ ...found, index }))
      .sort((a, b) => a.offset - b.offset || a.index - b.index)
      .map((found) => found.command);
    const opaque = [...this.#reasons];
    if (this.#unlisted > 0) {
      opaque.push(`opaque: ${this.#unlisted} more reasons or repeats not listed`);
    }
    return Object.freeze({
      commands: Object.freeze(commands),
      partial: Object.freeze([...this.#partial]),
      opaque: Object.freeze(opaque),
    });
  }

  /** A word's source text (what the script says, before the shell rewrites it). */
  #source(word: object): string {
    try {
      const from = call(call(word, "Pos"), "Offset");
      const to = call(call(word, "End"), "Offset");
      if (typeof from === "number" && typeof to === "number" && to >= from) {
        return this.#script.slice(from, to);
      }
    } catch {
      // fall through
    }
    return "?";
  }

  /**
   * Records a reason once. Built lazily, and at most {@link MAX_REASONS} are listed: positions
   * cost a call into GopherJS each, and a script with thousands of `$x` needs no thousand lines.
   */
  #opaque(reason: () => string): void {
    if (this.#reasons.length >= MAX_REASONS) {
      this.#unlisted++;
      return;
    }
    const text = reason();
    if (this.#seen.has(text)) return;
    this.#seen.add(text);
    this.#reasons.push(text);
  }

  /** Counts a node for the census and returns its kind. */
  #enter(node: object): string {
    const kind = this.#api.NodeType(node);
    if (this.#uncounted === 0) this.#counts.set(kind, (this.#counts.get(kind) ?? 0) + 1);
    return kind;
  }

  /** Compares the walk with the library's own `syntax.Walk`, node kind by node kind. */
  #census(file: object): void {
    const counts = new Map<string, number>();
    this.#api.Walk(file, (node) => {
      if (node !== null && typeof node === "object") {
        const kind = this.#api.NodeType(node);
        if (kind !== "Comment") counts.set(kind, (counts.get(kind) ?? 0) + 1);
      }
      return true;
    });
    for (const kind of new Set([...counts.keys(), ...this.#counts.keys()])) {
      const expected = counts.get(kind) ?? 0;
      const seen = this.#counts.get(kind) ?? 0;
      if (expected !== seen) {
        this.#opaque(() =>
          `internal: the walk saw ${seen} of ${expected} ${kind} nodes; fail closed`
        );
      }
    }
  }

  #stmts(node: object, key: string): void {
    for (const stmt of children(node, key)) this.#stmt(stmt);
  }

  #stmt(stmt: object): void {
    this.#enter(stmt);
    if (flag(stmt, "Coprocess")) this.#opaque(() => `coproc: a coprocess at ${where(stmt)}`);
    const command = child(stmt, "Cmd");
    if (command !== null) this.#command(command);
    for (const redirect of children(stmt, "Redirs")) this.#redirect(redirect);
  }

  #command(node: object): void {
    const kind = this.#enter(node);
    switch (kind) {
      case "CallExpr":
        return this.#call(node);
      case "Subshell":
      case "Block":
        return this.#stmts(node, "Stmts");
      case "BinaryCmd":
        for (const key of ["X", "Y"]) {
          const side = child(node, key);
          if (side !== null) this.#stmt(side);
        }
        return;
      case "IfClause":
        return this.#ifClause(node);
      case "WhileClause":
        this.#stmts(node, "Cond");
        return this.#stmts(node, "Do");
      case "ForClause":
        return this.#forClause(node);
      case "CaseClause":
        return this.#caseClause(node);
      case "FuncDecl": {
        const name = child(node, "Name");
        const label = name === null ? "?" : this.#lit(name);
        this.#opaque(() =>
          `function definition: ${quote(label)} at ${
            where(node)
          }; a later command of that name runs the function`
        );
        const body = child(node, "Body");
        if (body !== null) this.#stmt(body);
        return;
      }
      case "ArithmCmd":
        return this.#arithmetic(child(node, "X"));
      case "LetClause":
        for (const expr of children(node, "Exprs")) this.#arithmetic(expr);
        return;
      case "TestClause":
        this.#test(child(node, "X"));
        return;
      case "DeclClause":
        return this.#declClause(node);
      case "TimeClause": {
        const inner = child(node, "Stmt");
        if (inner !== null) this.#stmt(inner);
        return;
      }
      case "CoprocClause": {
        this.#opaque(() => `coproc: a coprocess at ${where(node)}`);
        const name = child(node, "Name");
        if (name !== null) this.#word(name, "pattern");
        const inner = child(node, "Stmt");
        if (inner !== null) this.#stmt(inner);
        return;
      }
      default:
        this.#opaque(() => `unknown node: ${kind} at ${where(node)}; fail closed`);
    }
  }

  #ifClause(node: object): void {
    this.#stmts(node, "Cond");
    this.#stmts(node, "Then");
    const otherwise = child(node, "Else");
    if (otherwise !== null) {
      this.#enter(otherwise);
      this.#ifClause(otherwise);
    }
  }

  #forClause(node: object): void {
    const loop = child(node, "Loop");
    if (loop !== null) {
      const kind = this.#enter(loop);
      if (kind === "WordIter") {
        const name = child(loop, "Name");
        if (name !== null) this.#lit(name);
        for (const item of children(loop, "Items")) this.#word(item, "argument", "for loop");
      } else if (kind === "CStyleLoop") {
        for (const key of ["Init", "Cond", "Post"]) this.#arithmetic(child(loop, key));
      } else {
        this.#opaque(() => `unknown node: ${kind} at ${where(loop)}; fail closed`);
      }
    }
    this.#stmts(node, "Do");
  }

  #caseClause(node: object): void {
    const subject = child(node, "Word");
    if (subject !== null) this.#word(subject, "pattern");
    for (const item of children(node, "Items")) {
      this.#enter(item);
      for (const pattern of children(item, "Patterns")) this.#word(pattern, "pattern");
      this.#stmts(item, "Stmts");
    }
  }

  #call(node: object): void {
    const assignments = children(node, "Assigns").map((assign) => this.#assign(assign));
    const words = children(node, "Args");
    const name = words[0] === undefined ? null : this.#peekName(words[0]);
    const argv = words.map((word, index) =>
      this.#word(word, "argument", index === 0 ? "the command name" : quote(name ?? "?"))
    );
    if (argv.length > 0 && argv[0] === null) {
      this.#opaque(() =>
        `command name: not literal at ${where(node)}; what runs is decided at run time`
      );
    }
    if (!isLiteral(argv) || !isLiteral(assignments)) {
      // Reported for the hardline floor, each unresolved word as its source text.
      if (this.#partial.length < 256) {
        this.#partial.push(Object.freeze({
          argv: Object.freeze(argv.map((w, i) => w ?? this.#source(words[i]!))),
          assignments: Object.freeze(assignments.map((a) => a ?? "?")),
        }));
      }
      return;
    }
    this.#found.push({
      command: Object.freeze({
        argv: Object.freeze(argv),
        assignments: Object.freeze(assignments),
      }),
      offset: this.#offset(node),
    });
    if (argv.length > 0) this.#builtin(argv, node);
  }

  /** The literal command name for labels, without counting nodes or recording reasons. */
  #peekName(word: object): string | null {
    const parts = children(word, "Parts");
    const first = parts[0];
    if (parts.length !== 1 || first === undefined) return null;
    return this.#api.NodeType(first) === "Lit" ? text(first, "Value") : null;
  }

  #offset(node: object): number {
    try {
      const offset = call(call(node, "Pos"), "Offset");
      return typeof offset === "number" ? offset : 0;
    } catch {
      return 0;
    }
  }

  /**
   * Reasons for builtins that run code or rebind names the argv does not show. `declared`: the
   * argv comes from a declaration clause whose assignments {@link ScriptWalker.#assign} checked.
   */
  #builtin(argv: readonly string[], node: object, declared = false): void {
    let i = 0;
    while (argv[i] === "builtin" || argv[i] === "command") {
      i++;
      while (argv[i]?.startsWith("-") && argv[i] !== "--") {
        if (argv[i] === "-v" || argv[i] === "-V") return; // a lookup, runs nothing
        i++;
      }
      if (argv[i] === "--") i++;
    }
    const name = argv[i];
    const args = argv.slice(i + 1);
    const reason = (what: string) => this.#opaque(() => `${name}: ${what} at ${where(node)}`);
    switch (name) {
      case "eval":
        return reason("runs its arguments as shell code");
      case "source":
      case ".":
        return reason("runs the shell code in a file");
      case "exec":
        if (args.length > 0) reason("replaces the shell with a program and its arguments");
        return;
      case "alias":
        return reason("aliases change what later commands mean");
      case "trap":
        return reason("runs shell code on a signal or at exit");
      case "enable":
        return reason("can load builtins from a shared object");
      case "fc":
        return reason("re-runs commands from the history");
      case "complete":
      case "compgen":
        return reason("-C and -F run commands");
      case "hash":
        if (args.some((arg) => arg.startsWith("-") && arg.includes("p"))) {
          reason("-p makes a name run another file");
        }
        return;
      case "let":
        if (!args.every(isNumber)) reason("arithmetic on a variable can run commands");
        return;
      case "printf": {
        const target = args[args.indexOf("-v") + 1];
        if (args.includes("-v") && target !== undefined) {
          if (target.includes("[")) {
            reason("a subscript in a variable name is evaluated and can run commands");
          }
          if (CODE_VARIABLES.includes(target)) reason(`sets ${target}, ${CODE_VARIABLE_EFFECT}`);
        }
        return;
      }
      case "test":
      case "[": {
        const target = args.findIndex((arg) => VARIABLE_TESTS.includes(arg));
        if (target >= 0 && args[target + 1]?.includes("[")) {
          reason("a subscript in a variable name is evaluated and can run commands");
        }
        return;
      }
    }
    if (name !== undefined && NAME_BUILTINS.includes(name)) {
      const declaration = DECLARATION_BUILTINS.includes(name);
      for (const arg of declared ? [] : args) {
        const variable = arg.split(/\+?=/)[0]!;
        if (CODE_VARIABLES.includes(variable) && (!declaration || arg.includes("="))) {
          reason(`sets ${variable}, ${CODE_VARIABLE_EFFECT}`);
        }
      }
      if (args.some((arg) => arg.includes("["))) {
        reason("a subscript in a variable name is evaluated and can run commands");
      }
      if ((name === "mapfile" || name === "readarray") && args.some((a) => /^-\w*C/.test(a))) {
        reason("-C runs a callback command");
      }
    }
  }

  /** `NAME=value` of an assignment, or null when it is not literal. */
  #assign(node: object): string | null {
    this.#enter(node);
    const name = child(node, "Name");
    const label = name === null ? "" : this.#lit(name);
    const index = child(node, "Index");
    if (index !== null) {
      this.#opaque(() => `assignment: element of array ${quote(label)} at ${where(node)}`);
      this.#arithmetic(index);
    }
    const array = child(node, "Array");
    if (array !== null) {
      this.#opaque(() => `assignment: array ${quote(label)} at ${where(node)}`);
      this.#enter(array);
      for (const element of children(array, "Elems")) {
        this.#enter(element);
        this.#arithmetic(child(element, "Index"));
        const value = child(element, "Value");
        if (value !== null) this.#word(value, "assignment");
      }
    }
    const valueWord = child(node, "Value");
    const naked = flag(node, "Naked");
    const value = valueWord === null
      ? ""
      : this.#word(valueWord, naked ? "argument" : "assignment", "an assignment");
    if (index !== null || array !== null || value === null) return null;
    if (naked) return name === null ? value : label;
    if (CODE_VARIABLES.includes(label)) {
      this.#opaque(() => `environment: ${label}= at ${where(node)} ${CODE_VARIABLE_EFFECT}`);
    }
    return `${label}${flag(node, "Append") ? "+=" : "="}${value}`;
  }

  #declClause(node: object): void {
    // syntax.Walk of this mvdan-sh build does not visit Variant, so neither does the census.
    const variant = child(node, "Variant");
    const name = variant === null ? "declare" : text(variant, "Value");
    const args = children(node, "Args").map((assign) => this.#assign(assign));
    if (!isLiteral(args)) return;
    const argv = [name, ...args];
    this.#found.push({
      command: Object.freeze({ argv: Object.freeze(argv), assignments: Object.freeze([]) }),
      offset: this.#offset(node),
    });
    this.#builtin(argv, node, true);
  }

  #redirect(node: object): void {
    this.#enter(node);
    const op = this.#ops.redirect.get(operator(node)) ?? "?";
    const fd = child(node, "N");
    if (fd !== null) {
      const number = this.#lit(fd);
      if (!isNumber(number)) {
        this.#opaque(() =>
          `redirection: named descriptor ${quote(number)} at ${where(node)} assigns a variable`
        );
      }
    }
    const targetWord = child(node, "Word");
    const body = child(node, "Hdoc");
    if (op === "<<" || op === "<<-") {
      if (targetWord !== null) this.#word(targetWord, "pattern");
      if (body !== null) this.#word(body, "pattern", "a heredoc");
      return;
    }
    const target = targetWord === null ? null : this.#word(targetWord, "pattern", "a redirection");
    if (body !== null) this.#word(body, "pattern", "a heredoc");
    const at = () => where(node);
    switch (op) {
      case "<<<":
        return;
      case ">&":
      case "<&":
        if (target !== null && !isDescriptor(target)) {
          this.#opaque(() => `redirection: ${op} ${quote(target)} at ${at()} opens a file`);
        }
        return;
      case "<":
        if (target !== null && target !== "/dev/null") {
          this.#opaque(() =>
            `redirection: < reads ${quote(target)} at ${at()}, which no read check sees`
          );
        }
        return;
      case ">":
      case ">>":
      case ">|":
      case "&>":
      case "&>>":
      case "<>":
        if (target !== null && !SAFE_SINKS.includes(target)) {
          this.#opaque(() =>
            `redirection: ${op} writes ${quote(target)} at ${at()}, which no write check sees`
          );
        }
        return;
      default:
        this.#opaque(() => `redirection: unknown operator at ${at()}; fail closed`);
    }
  }

  /** The value of a Lit that is a name or a number (counted, taken verbatim). */
  #lit(node: object): string {
    this.#enter(node);
    return text(node, "Value");
  }

  /**
   * The literal value of a word, or null (with a reason) when the shell would compute it.
   * `role` says which expansions the shell applies; `owner` labels reasons.
   */
  #word(word: object, role: WordRole, owner = "a word"): string | null {
    this.#enter(word);
    const parts = children(word, "Parts");
    const scan = new ExpansionScan(role);
    let value = "";
    let literal = true;
    for (const [index, part] of parts.entries()) {
      const kind = this.#enter(part);
      if (kind === "Lit") {
        const raw = text(part, "Value");
        scan.unquoted(raw, index === 0);
        value += unescapeUnquoted(raw);
      } else if (kind === "SglQuoted") {
        const quoted = text(part, "Value");
        scan.quoted(quoted);
        if (flag(part, "Dollar")) {
          this.#opaque(() =>
            `ANSI-C quoting: $'…' in ${owner} at ${where(part)} decodes differently per shell`
          );
          literal = false;
        }
        value += quoted;
      } else if (kind === "DblQuoted") {
        if (flag(part, "Dollar")) {
          this.#opaque(() =>
            `locale quoting: $"…" in ${owner} at ${where(part)} is translated at run time`
          );
          literal = false;
        }
        for (const inner of children(part, "Parts")) {
          if (this.#enter(inner) === "Lit") {
            const quoted = unescapeDoubleQuoted(text(inner, "Value"));
            scan.quoted(quoted);
            value += quoted;
          } else {
            this.#expansion(inner, owner);
            literal = false;
          }
        }
      } else if (kind === "ExtGlob" && role !== "argument") {
        // In a case pattern or [[ ]] it matches a string, it lists no files.
        const pattern = child(part, "Pattern");
        if (pattern !== null) this.#lit(pattern);
        literal = false;
      } else {
        this.#expansion(part, owner, kind);
        literal = false;
      }
    }
    const found = scan.finding();
    if (found !== null) {
      this.#opaque(() =>
        `${found} in ${owner} at ${where(word)}; the shell rewrites it at run time`
      );
      return null;
    }
    return literal ? value : null;
  }

  /** A word part the shell computes: records why and walks what is inside. */
  #expansion(part: object, owner: string, known?: string): void {
    const kind = known ?? this.#api.NodeType(part);
    const at = () => `in ${owner} at ${where(part)}`;
    switch (kind) {
      case "ParamExp": {
        const param = child(part, "Param");
        const name = param === null ? "?" : this.#lit(param);
        this.#opaque(() => `parameter expansion: $${name} ${at()}`);
        this.#arithmetic(child(part, "Index"));
        const slice = child(part, "Slice");
        if (slice !== null) {
          // syntax.Walk of this build skips ${x:offset:length}; walked here all the same.
          this.#uncounted++;
          try {
            this.#arithmetic(child(slice, "Offset"));
            this.#arithmetic(child(slice, "Length"));
          } finally {
            this.#uncounted--;
          }
        }
        const replace = child(part, "Repl");
        if (replace !== null) {
          for (const key of ["Orig", "With"]) {
            const word = child(replace, key);
            if (word !== null) this.#word(word, "pattern", owner);
          }
        }
        const expansion = child(part, "Exp");
        const word = expansion === null ? null : child(expansion, "Word");
        if (word !== null) this.#word(word, "pattern", owner);
        return;
      }
      case "CmdSubst":
        this.#opaque(() =>
          `command substitution: ${flag(part, "Backquotes") ? "`…`" : "$(…)"} ${at()}`
        );
        return this.#stmts(part, "Stmts");
      case "ProcSubst":
        this.#opaque(() => `process substitution: <(…) or >(…) ${at()}`);
        return this.#stmts(part, "Stmts");
      case "ArithmExp":
        this.#opaque(() => `arithmetic expansion: $((…)) ${at()}`);
        return this.#arithmetic(child(part, "X"));
      case "ExtGlob": {
        const pattern = child(part, "Pattern");
        if (pattern !== null) this.#lit(pattern);
        this.#opaque(() => `glob: extended glob ${at()}`);
        return;
      }
      default:
        this.#opaque(() => `unknown node: ${kind} ${at()}; fail closed`);
    }
  }

  /** Arithmetic: opaque when it reads or writes a variable (whose value Bash evaluates). */
  #arithmetic(node: object | null): void {
    if (node === null) return;
    if (this.#api.NodeType(node) === "Word") {
      const value = this.#word(node, "pattern", "arithmetic");
      if (value !== null && !isNumber(value)) {
        this.#opaque(() =>
          `arithmetic: reads variable ${quote(value)} at ${
            where(node)
          }; its value is evaluated and can run commands`
        );
      }
      return;
    }
    const kind = this.#enter(node);
    switch (kind) {
      case "BinaryArithm":
        this.#arithmetic(child(node, "X"));
        return this.#arithmetic(child(node, "Y"));
      case "UnaryArithm":
      case "ParenArithm":
        return this.#arithmetic(child(node, "X"));
      default:
        this.#opaque(() => `unknown node: ${kind} at ${where(node)}; fail closed`);
    }
  }

  /** `[[ … ]]`: returns an operand's literal value so operators can check it. */
  #test(node: object | null): string | null {
    if (node === null) return null;
    if (this.#api.NodeType(node) === "Word") return this.#word(node, "pattern", "[[ ]]");
    const kind = this.#enter(node);
    switch (kind) {
      case "BinaryTest": {
        const op = operator(node);
        const left = this.#test(child(node, "X"));
        const right = this.#test(child(node, "Y"));
        if (this.#ops.arithmeticTest.includes(op)) {
          for (const operand of [left, right]) {
            if (operand !== null && !isNumber(operand)) {
              this.#opaque(() =>
                `arithmetic: [[ ]] compares ${quote(operand)} at ${
                  where(node)
                }; its value is evaluated and can run commands`
              );
            }
          }
        }
        return null;
      }
      case "UnaryTest": {
        const operand = this.#test(child(node, "X"));
        if (this.#ops.variableTest.includes(operator(node)) && operand?.includes("[")) {
          this.#opaque(() =>
            `subscript: [[ ]] tests ${quote(operand)} at ${
              where(node)
            }; a subscript is evaluated and can run commands`
          );
        }
        return null;
      }
      case "ParenTest":
        return this.#test(child(node, "X"));
      default:
        this.#opaque(() => `unknown node: ${kind} at ${where(node)}; fail closed`);
        return null;
    }
  }
}
