/**
 * Injectable host backends (DESIGN §1): filesystem (with a recording fake for tests), shell (the
 * launcher and the OS wall), network (with an in-memory fake for tests) and clock
 * (`runtime/base/clock.ts`: the system clock and `FakeClock`).
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
export {
  DEFAULT_RUN_LIMITS,
  DEFAULT_TOOLS,
  hostShell,
  type HostTools,
  type ResolvedProgram,
  type RunLimits,
  type ShellProvider,
  type ShellRunResult,
  type ShellRunSpec,
  type WallSpec,
} from "./shell.ts";
export {
  type FakeNet,
  fakeNet,
  type FakeNetOptions,
  type FakeReply,
  hostNet,
  type HostNetOptions,
  type NetMethod,
  type NetProvider,
  type NetReply,
  type NetRequest,
} from "./net.ts";
