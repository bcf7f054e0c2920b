/**
 * Injectable host backends (DESIGN §1): filesystem (with a recording fake for tests) and clock
 * (`runtime/clock.ts`: the system clock and `FakeClock`); shell and network providers arrive
 * with the primitives that use them.
 *
 * @module
 */
export {
  type DirEntry,
  type FileHandle,
  type FilesystemProvider,
  hostFilesystem,
  type PathFacts,
  type RecordedCall,
  recordingFilesystem,
} from "./filesystem.ts";
