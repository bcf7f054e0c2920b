/**
 * Injectable host backends (DESIGN §1): filesystem today; shell, network and clock providers
 * arrive with the primitives that use them.
 *
 * @module
 */
export { type FilesystemProvider, hostFilesystem, type PathFacts } from "./filesystem.ts";
