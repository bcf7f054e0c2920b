/**
 * `libos run` through the real launcher: a process's shell tool works under the bootstrap's
 * permissions, as under `libos agent` and `libos jit run`. Before, the tool failed before any
 * decision (no `shell.run` record): the launcher granted `setsid` and the program search path to
 * `agent`, `demo` and `jit run` only ("Requires run access to /usr/bin/setsid").
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sandbox, task } from "./_cli_sandbox.ts";
import { call, final } from "./agent_fixture.ts";
import { wallTestMode } from "./shell_fixture.ts";

const mode = wallTestMode();

Deno.test({
  name:
    "libos run through the launcher: a shell command the process holds a capability for runs (marker file); one it does not is decided — asked, and refused with no human — and never runs",
  ignore: mode.ignore,
  fn: async () => {
    using s = sandbox();
    const libos = (...args: string[]) => task(s.workspace, s.state, "libos", ...args);
    assert.equal((await libos("init")).status, 0);
    const script = join(s.workspace, "..", "script.jsonl");
    Deno.writeTextFileSync(
      script,
      [
        call("run_shell_command", { argv: ["touch", "RAN"] }),
        call("run_shell_command", { argv: ["touch", "REFUSED"] }),
        final("done"),
      ].join("\n") + "\n",
    );
    const spawned = await libos("spawn", "--goal", "touch", "--image", "coding-agent:v0", "--json");
    assert.equal(spawned.status, 0, spawned.stderr);
    const pid = (JSON.parse(spawned.stdout) as { process: { pid: string } }).process.pid;
    const granted = await libos(
      "grant",
      pid,
      "--resource",
      "shell:touch RAN",
      "--right",
      "execute",
    );
    assert.equal(granted.status, 0, granted.stderr);
    const run = await libos("run", "--model", `replay:${script}`, "--json");
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.ok(Deno.statSync(join(s.workspace, "RAN")).isFile, "the allowed command ran");
    assert.throws(() => Deno.statSync(join(s.workspace, "REFUSED")), Deno.errors.NotFound);
    const audit = await libos("audit", "query", "--json", "--pid", pid, "--action", "shell.run");
    const decided = (JSON.parse(audit.stdout) as {
      records: { resource: string; decision: string }[];
    }).records.map((r) => [r.resource, r.decision]);
    assert.deepEqual(decided, [["shell:touch RAN", "allow"], ["shell:touch REFUSED", "ask"]]);
  },
});
