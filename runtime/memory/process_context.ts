/**
 * `processContext(memory, pid)`: a process's view, materialized — the objects it may read (its own
 * namespace, then what was passed or merged to it), each read with its own rights, turned into
 * model context under the policy's token budget (see `materializer.ts`). Objects tagged `pinned`
 * form the stable prefix; a volatile object whose payload was lost is shown by handle only.
 *
 * Where the returned `state` is kept between turns is the model executor's business: never where
 * the process can write it (it would shape its own context), and never on disk while
 * `holdsVolatile` is true.
 *
 * @module
 */
import type { JsonValue } from "../base/canonical_json.ts";
import { VolatileLostError } from "../base/errors.ts";
import {
  materialize,
  type MaterializedContext,
  type MaterializeOptions,
  type ViewObject,
} from "./materializer.ts";
import type { ObjectMemory } from "./object_memory.ts";

/** The tag that pins an object into the stable prefix of its process's context. */
export const PINNED_TAG = "pinned";

/** Materializes process `pid`'s view (pass last turn's `state` as `previous`). */
export function processContext(
  memory: ObjectMemory,
  pid: string,
  options: MaterializeOptions & {
    /** Object types left out of the view (the runtime's own bookkeeping records). */
    readonly skipTypes?: readonly string[];
  } = {},
): MaterializedContext {
  const skip = options.skipTypes ?? [];
  const objects: ViewObject[] = memory.view(pid).filter((info) => !skip.includes(info.type)).map(
    (info) => {
      let payload: JsonValue | undefined;
      try {
        payload = memory.read(pid, info.oid, { view: true }).payload;
      } catch (error) {
        if (!(error instanceof VolatileLostError)) throw error;
      }
      return {
        info,
        ...(payload === undefined ? {} : { payload }),
        pinned: info.metadata.tags.includes(PINNED_TAG),
      };
    },
  );
  const { skipTypes: _, ...materializeOptions } = options;
  return materialize({ objects }, materializeOptions);
}
