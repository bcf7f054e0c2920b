/**
 * The registry of resumable actions: how an approved action, parked with its human request,
 * finds its way back to the code that performs it.
 *
 * Each primitive (and the JIT tool lifecycle, for `tool.*`) registers its operations by exact
 * name — `fs.write`, `shell.run`, `net.fetch`, `tool.register` — each with a zod schema of the
 * arguments it stores. When a parked process resumes, the stored {@link PendingAction} is looked
 * up by that exact name, its arguments are parsed against the operation's schema, and only then
 * is it run. An unknown name or arguments that do not parse (a database edited outside libos, a
 * row from a libos that had other operations) are a {@link ValidationError} naming the
 * operation, and nothing runs. Stored rows keep their format (`primitive` + `args`), so
 * requests parked by an earlier libos still resume.
 *
 * A schema strips keys it does not know rather than refusing them: what an earlier libos stored
 * beside the arguments was ignored then and is ignored now.
 *
 * @module
 */
import type { z } from "zod";
import type { JsonValue } from "../base/canonical_json.ts";
import { ValidationError } from "../base/errors.ts";
import type { PendingAction } from "./human_request.ts";

/** The shape of an operation name: a word, a dot, a word (`fs.write`), as stored actions have. */
const OPERATION_NAME = /^[a-z]+\.[a-z_]+$/;

/** One operation an approved action can name: its exact name, stored arguments and its run. */
export interface ActionOperation {
  /** The exact name stored actions carry in `primitive`, e.g. `fs.write`. */
  readonly name: string;
  /** The schema of the arguments it stores. */
  readonly args: z.ZodType;
  /**
   * Parses stored arguments against {@link args} and runs the operation with them.
   * @throws {ValidationError} when the arguments do not parse (nothing runs).
   */
  resume(pid: string, stored: unknown, signal: AbortSignal): Promise<JsonValue>;
}

/**
 * Declares an operation: `run` receives the arguments as the schema parsed them (typed).
 * @throws {TypeError} for a name that is not `word.word`.
 * @example
 * ```ts
 * defineAction("fs.stat", z.object({ path: z.string() }), (pid, a) => fs.stat(pid, a));
 * ```
 */
export function defineAction<S extends z.ZodType>(
  name: string,
  args: S,
  run: (pid: string, args: z.output<S>, signal: AbortSignal) => Promise<JsonValue>,
): ActionOperation {
  if (!OPERATION_NAME.test(name)) {
    throw new TypeError(`An operation name is a word, a dot and a word (fs.write), not ${name}`);
  }
  return {
    name,
    args,
    resume(pid, stored, signal) {
      const parsed = args.safeParse(stored);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return Promise.reject(
          new ValidationError(
            `Stored action ${name} has malformed arguments (${issue?.path.join(".") || "args"}: ${
              issue?.message ?? "invalid"
            }); the database was edited outside libos or by another version — nothing was run; reject the request`,
          ),
        );
      }
      return run(pid, parsed.data, signal);
    },
  };
}

/** Operations by exact name; what the human channel runs an approved action through. */
export class ActionRegistry {
  readonly #operations = new Map<string, ActionOperation>();

  /**
   * Registers operations. A later registration of the same name replaces the earlier one (a
   * runtime whose JIT lifecycle is built again routes its `tool.register` to the newest).
   */
  register(...operations: readonly ActionOperation[]): void {
    for (const operation of operations) this.#operations.set(operation.name, operation);
  }

  /** The registered operation names, sorted. */
  names(): string[] {
    return [...this.#operations.keys()].sort();
  }

  /**
   * Runs a stored action through the operation it names, its arguments parsed first.
   * @throws {ValidationError} for an operation nobody registered, or malformed arguments (nothing
   *   runs); whatever the operation throws.
   */
  dispatch(pid: string, action: PendingAction, signal: AbortSignal): Promise<JsonValue> {
    const operation = this.#operations.get(action.primitive);
    if (!operation) {
      return Promise.reject(
        new ValidationError(
          `No operation ${
            JSON.stringify(action.primitive)
          } is registered to run approved actions (known: ${
            this.names().join(", ") || "none"
          }); nothing was run`,
        ),
      );
    }
    return operation.resume(pid, action.args, signal);
  }
}
