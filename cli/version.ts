/**
 * The version of libos: `libos --version` prints it. It equals `version` in `deno.json` (a test
 * holds the two together).
 *
 * @module
 */

/** This libos's version. */
export const LIBOS_VERSION = "0.1.0";
