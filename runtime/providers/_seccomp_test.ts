import assert from "node:assert/strict";
import { filterSupported, unixSocketFilter } from "./_seccomp.ts";
import { DEFAULT_RUN_LIMITS, DEFAULT_TOOLS, launchArgv, type ShellRunSpec } from "./shell.ts";

Deno.test("unixSocketFilter() is a classic BPF program of 8-byte instructions ending in allow", () => {
  for (const arch of ["x86_64", "aarch64"] as const) {
    const bytes = unixSocketFilter(arch);
    assert.equal(bytes.length % 8, 0);
    const view = new DataView(bytes.buffer);
    const count = bytes.length / 8;
    // The first instruction loads the architecture; the last returns SECCOMP_RET_ALLOW.
    assert.deepEqual([view.getUint16(0, true), view.getUint32(4, true)], [0x20, 4]);
    assert.deepEqual(
      [view.getUint16((count - 1) * 8, true), view.getUint32((count - 1) * 8 + 4, true)],
      [0x06, 0x7fff0000],
    );
    // Every jump lands inside the program.
    for (let i = 0; i < count; i++) {
      const code = view.getUint16(i * 8, true);
      if ((code & 0x07) !== 0x05) continue;
      assert.ok(i + 1 + view.getUint8(i * 8 + 2) < count, `jt of ${i}`);
      assert.ok(i + 1 + view.getUint8(i * 8 + 3) < count, `jf of ${i}`);
    }
  }
  assert.notDeepEqual(unixSocketFilter("x86_64"), unixSocketFilter("aarch64"));
});

Deno.test("filterSupported() knows x86_64 and aarch64 only", () => {
  assert.equal(filterSupported("x86_64"), true);
  assert.equal(filterSupported("aarch64"), true);
  assert.equal(filterSupported("riscv64"), false);
  assert.equal(filterSupported("__proto__"), false);
});

Deno.test("launchArgv() never starts a walled run without its seccomp filter", () => {
  const spec: ShellRunSpec = {
    executable: "/usr/bin/true",
    args: [],
    cwd: "/tmp",
    env: {},
    timeoutMs: 1000,
    maxOutputBytes: 100,
    wall: { workspace: "/tmp", writable: true, home: "/tmp", network: false },
  };
  assert.throws(() => launchArgv(spec, DEFAULT_TOOLS, DEFAULT_RUN_LIMITS, true), TypeError);
  const files = { seccomp: "/f.bpf", empty: "/e" };
  const argv = launchArgv(spec, DEFAULT_TOOLS, DEFAULT_RUN_LIMITS, true, files);
  const sh = argv.indexOf(DEFAULT_TOOLS.sh);
  assert.ok(sh > 0);
  // sh -c SCRIPT SECCOMP BWRAP EMPTY CREDENTIALS …: the script opens $0 on fd 3 and execs
  // bwrap with --seccomp 3, so no walled run goes without the filter.
  assert.equal(argv[sh + 1], "-c");
  assert.match(argv[sh + 2]!, /^exec 3<"\$0" \|\|/);
  assert.match(argv[sh + 2]!, /exec "\$b" --seccomp 3 /);
  assert.deepEqual(argv.slice(sh + 3, sh + 6), ["/f.bpf", DEFAULT_TOOLS.bwrap, "/e"]);
  assert.ok(argv.includes("--unshare-net"));
  // Unwalled runs need no filter.
  const plain = launchArgv({ ...spec, wall: null }, DEFAULT_TOOLS, DEFAULT_RUN_LIMITS, true);
  assert.equal(plain.includes(DEFAULT_TOOLS.bwrap), false);
});
