/** The libos version, as in `deno.json`. */
export const LIBOS_VERSION = "0.1.0";
