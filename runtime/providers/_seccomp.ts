/**
 * The seccomp filter of the OS wall: a classic BPF program, loaded by bwrap (`--seccomp FD`),
 * that stops a walled command from creating a Unix-domain socket with `socket(2)` and from
 * setting up io_uring (which can create and connect sockets without `socket(2)`).
 *
 * Why: a read-only mount does not stop `connect(2)` to a socket file on it — a walled command
 * could talk to `/run/docker.sock`, the D-Bus system bus or any other host daemon listening on a
 * path it can see (measured when the wall bound the whole host read-only: curl `--unix-socket`
 * reached a host listener). The allowlist wall shows no `/run` and no `/var`, but a socket in the
 * workspace or a toolchain directory would still be one; the filter stays. `socketpair(2)` is a
 * different system call and stays allowed (pipes between a program's own processes, as libuv and
 * Python use them), as are Internet sockets (the network namespace decides those).
 *
 * System calls of another architecture (32-bit `int 0x80` on x86_64, the x32 ABI) are refused
 * with ENOSYS: their socket calls cannot be inspected (`socketcall` passes its arguments in
 * memory).
 *
 * @module
 */

/** The architectures a filter exists for (Deno's `Deno.build.arch`). */
export type FilterArch = "x86_64" | "aarch64";

const AUDIT_ARCH: Readonly<Record<FilterArch, number>> = Object.freeze({
  x86_64: 0xc000003e,
  aarch64: 0xc00000b7,
});
const NR_SOCKET: Readonly<Record<FilterArch, number>> = Object.freeze({
  x86_64: 41,
  aarch64: 198,
});
/** io_uring_setup has the same number on every architecture (the unified table). */
const NR_IO_URING_SETUP = 425;
/** x86_64's x32 ABI marks its system call numbers with this bit. */
const X32_BIT = 0x40000000;
const AF_UNIX = 1;
const EACCES = 13;
const ENOSYS = 38;

// Classic BPF opcodes (linux/bpf_common.h) and seccomp return values (linux/seccomp.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const RET_K = 0x06;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
// Offsets in struct seccomp_data: nr, arch, then the arguments (the low half of args[0] first
// on these little-endian architectures).
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0_LOW = 16;

/** Whether a filter exists for `arch`. */
export function filterSupported(arch: string): arch is FilterArch {
  return Object.hasOwn(AUDIT_ARCH, arch);
}

/** The filter program for `arch`, as the bytes bwrap reads (8 bytes per instruction). */
export function unixSocketFilter(arch: FilterArch): Uint8Array {
  // [code, jt, jf, k]; jumps are relative to the next instruction.
  const program: [number, number, number, number][] = [
    /* 0 */ [LD_W_ABS, 0, 0, OFFSET_ARCH],
    /* 1 */ [JEQ_K, 1, 0, AUDIT_ARCH[arch]],
    /* 2 */ [RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS],
    /* 3 */ [LD_W_ABS, 0, 0, OFFSET_NR],
    /* 4 */ [JGE_K, 0, 1, X32_BIT],
    /* 5 */ [RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS],
    /* 6 */ [JEQ_K, 0, 1, NR_IO_URING_SETUP],
    /* 7 */ [RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS],
    /* 8 */ [JEQ_K, 0, 3, NR_SOCKET[arch]],
    /* 9 */ [LD_W_ABS, 0, 0, OFFSET_ARG0_LOW],
    /* 10 */ [JEQ_K, 0, 1, AF_UNIX],
    /* 11 */ [RET_K, 0, 0, SECCOMP_RET_ERRNO | EACCES],
    /* 12 */ [RET_K, 0, 0, SECCOMP_RET_ALLOW],
  ];
  const bytes = new Uint8Array(program.length * 8);
  const view = new DataView(bytes.buffer);
  for (const [i, [code, jt, jf, k]] of program.entries()) {
    view.setUint16(i * 8, code, true);
    view.setUint8(i * 8 + 2, jt);
    view.setUint8(i * 8 + 3, jf);
    view.setUint32(i * 8 + 4, k >>> 0, true);
  }
  return bytes;
}
