// The JIT sandbox harness (DESIGN §7), run by a permission-less Deno: it takes its stdio, removes
// the host's doors from the global object, imports the tool from a data: URL, and speaks the
// protocol of jit/protocol.ts on stdin/stdout. Plain JavaScript, copied to a neutral temporary
// path per call, so stack traces reveal neither the install path nor the user.
// The vetted module, loaded with the harness so a tool's allowlisted import of it is already in
// the module graph (no permission needed); the sandbox's import map points here.
import "jsr:@libos/std@0.1.0";

const D = globalThis.Deno;
// The globals through which a tool could reach the host.
const HOST_DOORS = ["Deno", "Worker", "caches", "localStorage", "sessionStorage", "process"];

/**
 * Closes the host's doors in this isolate (the process's harness and each resident Worker run it):
 * each global in `names` becomes a getter that throws and cannot be redefined — deleting them was
 * not enough, since Deno's Node polyfills (node:fs, node:vm, node:worker_threads, …) look the
 * global Deno up when called, and a tool could plant a fake one to revive them. WebGPU (the
 * machine's GPU without any permission) and blob: URLs (code built at run time, imported) go too;
 * data: URLs stay (the tool itself arrives as one), so code from strings runs with exactly the
 * tool's own (lack of) authority. Self-contained: a Worker gets its source as text.
 */
function closeDoors(names) {
  for (const name of names) {
    try {
      Object.defineProperty(globalThis, name, {
        get() {
          throw new ReferenceError(`${name} is not available to tools`);
        },
        set() {
          throw new ReferenceError(`${name} is not available to tools`);
        },
        configurable: false,
        enumerable: false,
      });
    } catch {
      // A non-configurable global stays; the process has no permission to use it anyway.
    }
  }
  try {
    Object.defineProperty(navigator, "gpu", {
      get() {
        throw new ReferenceError("navigator.gpu is not available to tools");
      },
      configurable: false,
      enumerable: false,
    });
  } catch {
    // Already fixed in place: nothing to do.
  }
  try {
    Object.defineProperty(URL, "createObjectURL", {
      value() {
        throw new TypeError("blob: URLs are not available to tools");
      },
      writable: false,
      configurable: false,
    });
  } catch {
    // Already fixed in place: nothing to do.
  }
}
/**
 * What a syscall's reply gives the tool: its value, or a SyscallError carrying the host's code.
 * Self-contained, like {@link closeDoors}: a resident Worker gets its source as text.
 */
function replyValue(reply) {
  if (reply.ok) return reply.value;
  const error = new Error(reply.error?.message ?? "the syscall failed");
  error.name = "SyscallError";
  error.code = reply.error?.code ?? "failed";
  throw error;
}

/**
 * The tool's module, imported from a data: URL (it may read no file). JavaScript the host
 * transpiled skips Deno's own transpile (about 1 ms per call). Self-contained, as above.
 */
async function importTool(source, lang) {
  const bytes = new TextEncoder().encode(source);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  const media = lang === "javascript" ? "application/javascript" : "application/typescript";
  return await import(`data:${media};base64,${btoa(binary)}`);
}

/**
 * The tool's entry point as the validator reads it (jit/_run_export.ts): the export named run
 * when there is one, otherwise the default export. Self-contained, as above.
 */
function entryOf(tool) {
  const entry = "run" in tool ? "run" : "default";
  if (typeof tool[entry] !== "function") {
    throw new TypeError(
      "the tool exports no run function; write export async function run(args, libos) { … }",
    );
  }
  return tool[entry];
}

// Resident (a walled process bound to one agent process and one tool, serving its calls one after
// another): each call runs in a fresh Worker — its own isolate, globals, module instance and
// timers — ended when the call ends; this module never runs tool code itself.
const resident = D.args[0] === "resident";
const WorkerConstructor = globalThis.Worker;

const memoryUsage = () => D.memoryUsage();
const input = D.stdin.readable.getReader();
const output = D.stdout;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
// Every frame carries the run frame's nonce, which only this module holds: a tool that reaches
// fd 1 some other way cannot forge a frame the host accepts.
let nonce = "";
const write = (frame) => {
  const bytes = encoder.encode(JSON.stringify({ ...frame, n: nonce }) + "\n");
  for (let at = 0; at < bytes.length;) at += output.writeSync(bytes.subarray(at));
};
closeDoors(HOST_DOORS);

const text = (values) =>
  values.map((v) => {
    if (typeof v === "string") return v;
    try {
      return JSON.stringify(v);
    } catch {
      return String(v);
    }
  }).join(" ").slice(0, 16384);
// Every console method becomes a log frame (some, like table and dir, would otherwise print to
// stdout, which carries frames only).
const LEVELS = ["debug", "info", "log", "warn", "error"];
// The harness replaces the console (the lint rule guards against printing, which this prevents).
const consoleObject = globalThis["console"];
for (const key of Object.keys(consoleObject)) {
  if (typeof consoleObject[key] !== "function") continue;
  const level = LEVELS.includes(key) ? key : key === "trace" || key === "assert" ? "error" : "log";
  consoleObject[key] = key === "assert"
    ? (condition, ...values) => {
      if (!condition) write({ type: "log", level, text: text(["Assertion failed", ...values]) });
    }
    : (...values) => write({ type: "log", level, text: text(values) });
}

let buffered = "";
async function nextFrame() {
  for (;;) {
    const newline = buffered.indexOf("\n");
    if (newline >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      return JSON.parse(line);
    }
    const { value, done } = await input.read();
    if (done) throw new Error("the host closed the protocol");
    buffered += decoder.decode(value, { stream: true });
  }
}

if (resident) await serveResident();
else await serveOnce();

async function serveOnce() {
  const run = await nextFrame();
  nonce = typeof run.nonce === "string" ? run.nonce : "";
  if (run.type !== "run" || run.v !== 1) {
    write({ type: "error", name: "ProtocolError", message: "the first frame is not a v1 run frame" });
  } else {
    let next = 0;
    // Frames go out when the tool makes the call (the host serves them in order, and a call's wall
    // time pauses from then); one reader takes the replies and hands each to the call with its id,
    // so a tool that awaits several at once (Promise.all over libos.call) cannot have two readers
    // of stdin take each other's replies.
    const waiting = new Map();
    let reading = false;
    const failAll = (error) => {
      for (const { reject } of waiting.values()) reject(error);
      waiting.clear();
    };
    const pump = async () => {
      reading = true;
      try {
        while (waiting.size > 0) {
          const reply = await nextFrame();
          const call = reply.type === "syscall_result" ? waiting.get(reply.id) : undefined;
          if (!call) {
            failAll(new Error("the host answered out of order"));
            break;
          }
          waiting.delete(reply.id);
          call.resolve(reply);
        }
      } catch (error) {
        failAll(error);
      } finally {
        reading = false;
      }
    };
    const libos = Object.freeze({
      async call(name, args = {}) {
        const id = next++;
        const reply = await new Promise((resolve, reject) => {
          write({ type: "syscall", id, name: String(name), args });
          waiting.set(id, { resolve, reject });
          if (!reading) pump();
        });
        return replyValue(reply);
      },
    });
    try {
      const tool = await importTool(run.source, run.lang);
      const value = await entryOf(tool)(run.args, libos);
      write({ type: "result", value: value === undefined ? null : value });
    } catch (error) {
      // Out of memory is the harness's finding, not the tool's claim: a RangeError counts only
      // when the process really holds most of its budget.
      const usage = memoryUsage();
      const oom = error instanceof RangeError && typeof run.memoryBytes === "number" &&
        Math.max(usage.rss, usage.heapTotal + usage.external) > run.memoryBytes / 2;
      write({
        type: "error",
        name: String(error?.name ?? "Error").slice(0, 128),
        message: String(error?.message ?? error).slice(0, 4096),
        oom,
      });
    }
  }
}

/** Whether a RangeError a tool met was the process running out of its memory budget. */
function outOfMemory(isRangeError, budget) {
  const usage = memoryUsage();
  return isRangeError && typeof budget === "number" &&
    Math.max(usage.rss, usage.heapTotal + usage.external) > budget / 2;
}

/**
 * Serves run frames until the host closes stdin, each call in a Worker of its own started ahead
 * (while the previous call runs). The Worker inherits this process's lack of permissions; the
 * vetted module reaches it as a data: URL through the import map (it may read no file). Its
 * messages become frames here, with the nonce only this module holds, from plain data the Worker
 * sent (never its objects); the call's CPU time is measured here and ends it past its budget.
 * A run frame with `keep` (the host's `reuse: "worker"`) may be served by the Worker that served
 * this process's last call of the same source, when that call succeeded and left nothing running
 * (no syscall unanswered, no timer pending): the agent process's own calls of its own tool then
 * share the module's state, and skip a Worker's start.
 */
async function serveResident() {
  // CPU time of this process (one-shot processes have the kernel's limit per call instead).
  const cpuMs = () => {
    const used = D.cpuUsage();
    return (used.user + used.system) / 1000;
  };
  const source = [
    `const HOST_DOORS = ${JSON.stringify(HOST_DOORS)};`,
    ...[closeDoors, replyValue, importTool, entryOf].map(String),
    `(${workerMain.toString()})();`,
  ].join("\n");
  const url = `data:application/javascript,${encodeURIComponent(source)}`;
  const start = () => new WorkerConstructor(url, { type: "module" });
  // Workers started ahead, so that a call finds its Worker up.
  const spares = [start(), start()];
  // The Worker of the last call, kept for the next one of the same source (keep only).
  let kept;
  const retire = () => {
    for (const spare of spares) spare.terminate();
    kept?.worker.terminate();
    D.exit(0);
  };
  for (;;) {
    let run;
    try {
      run = await nextFrame();
    } catch {
      // The host closed the protocol: the process is retired.
      retire();
    }
    nonce = typeof run.nonce === "string" ? run.nonce : "";
    if (run.type !== "run" || run.v !== 1) {
      write({ type: "error", name: "ProtocolError", message: "the frame is not a v1 run frame" });
      retire();
    }
    const keep = run.keep === true;
    let worker;
    if (keep && kept !== undefined && kept.source === run.source) worker = kept.worker;
    else {
      kept?.worker.terminate();
      worker = spares.shift() ?? start();
    }
    kept = undefined;
    const clean = await callIn(worker, run, cpuMs);
    if (keep && clean) kept = { worker, source: run.source };
    else worker.terminate();
    // Starting a Worker blocks this thread until its isolate exists (tens of milliseconds):
    // done once the result is out, between calls, never in a call's way.
    while (spares.length < (kept === undefined ? 2 : 1)) spares.push(start());
  }
}

/**
 * Runs one call in `worker`; resolves once its result or error frame is written, with whether
 * the Worker may serve another call (it succeeded, and left no syscall and no timer behind).
 */
function callIn(worker, run, cpuMs) {
  return new Promise((resolve) => {
    const started = cpuMs();
    const budget = typeof run.cpuMs === "number" ? run.cpuMs : Infinity;
    let outstanding = 0;
    let reading = false;
    let finished = false;
    let pumping = Promise.resolve();
    const finish = (frame, idle = false) => {
      if (finished) return;
      finished = true;
      clearInterval(meter);
      write({ ...frame, cpu: Math.round(cpuMs()) });
      const clean = frame.type === "result" && idle && outstanding === 0;
      // Replies to syscalls the tool made before it finished are read before the next run.
      pumping.then(() => resolve(clean));
    };
    const pump = async () => {
      reading = true;
      try {
        while (outstanding > 0) {
          const reply = await nextFrame();
          outstanding--;
          if (!finished) worker.postMessage({ t: "reply", reply });
        }
      } catch (error) {
        finish({ type: "error", name: "ProtocolError", message: String(error), oom: false });
      } finally {
        reading = false;
      }
    };
    // The process's kernel limits are its backstop; each call is held to its own budgets here.
    const memoryBefore = memoryUsage().rss;
    const meter = setInterval(() => {
      if (memoryUsage().rss - memoryBefore > run.memoryBytes) {
        worker.terminate();
        finish({
          type: "error",
          name: "RangeError",
          message: `the call used more than ${run.memoryBytes} bytes of memory`,
          oom: true,
        });
        return;
      }
      if (cpuMs() - started <= budget) return;
      worker.terminate();
      finish({
        type: "error",
        name: "CpuLimit",
        message: `the call used more than ${budget} ms of CPU`,
        oom: false,
        limit: "cpu",
      });
    }, 20);
    worker.onmessage = (event) => {
      if (finished) return;
      const m = event.data;
      if (typeof m !== "object" || m === null) return;
      if (m.t === "log") {
        const level = LEVELS.includes(m.level) ? m.level : "log";
        write({ type: "log", level, text: String(m.text).slice(0, 16384) });
      } else if (m.t === "syscall") {
        write({ type: "syscall", id: m.id, name: String(m.name), args: m.args });
        outstanding++;
        if (!reading) pumping = pump();
      } else if (m.t === "result") {
        finish({ type: "result", value: m.value === undefined ? null : m.value }, m.idle === true);
      } else if (m.t === "error") {
        finish({
          type: "error",
          name: String(m.name).slice(0, 128),
          message: String(m.message).slice(0, 4096),
          oom: m.range === true && typeof run.memoryBytes === "number" &&
            (Number(m.memory) > run.memoryBytes / 2 || outOfMemory(true, run.memoryBytes)),
        });
      }
    };
    // An error the tool left uncaught (a throwing timer, a rejected promise nobody awaited).
    worker.onerror = (event) => {
      event.preventDefault();
      finish({
        type: "error",
        name: "Error",
        message: String(event.message ?? "uncaught error").slice(0, 4096),
        oom: false,
      });
    };
    worker.postMessage({
      t: "run",
      source: run.source,
      lang: run.lang === "javascript" ? "javascript" : "typescript",
      args: run.args,
    });
  });
}

/**
 * The Worker's own harness, started as the Worker's source: the same doors closed as in a
 * one-shot process, plus the Worker's own (postMessage, close); console and libos.call become
 * messages to the process's harness.
 */
function workerMain() {
  const post = globalThis.postMessage.bind(globalThis);
  const listen = globalThis.addEventListener.bind(globalThis);
  const D = globalThis.Deno;
  // This isolate's own use (its ArrayBuffers count in external), which the process's harness
  // cannot see from its isolate.
  const memoryUsed = () => {
    const usage = D.memoryUsage();
    return Math.max(usage.rss, usage.heapTotal + usage.external);
  };
  // The Worker's own doors too: a tool must not post frames past this isolate's harness.
  closeDoors([...HOST_DOORS, "postMessage", "close", "onmessage"]);
  const plain = (value) => JSON.parse(JSON.stringify(value === undefined ? null : value));
  const text = (values) =>
    values.map((v) => {
      if (typeof v === "string") return v;
      try {
        return JSON.stringify(v);
      } catch {
        return String(v);
      }
    }).join(" ").slice(0, 16384);
  const LEVELS = ["debug", "info", "log", "warn", "error"];
  const consoleObject = globalThis["console"];
  for (const key of Object.keys(consoleObject)) {
    if (typeof consoleObject[key] !== "function") continue;
    const level = LEVELS.includes(key)
      ? key
      : key === "trace" || key === "assert"
      ? "error"
      : "log";
    consoleObject[key] = key === "assert"
      ? (condition, ...values) => {
        if (!condition) post({ t: "log", level, text: text(["Assertion failed", ...values]) });
      }
      : (...values) => post({ t: "log", level, text: text(values) });
  }
  // Timers the tool's code has pending: a Worker that still has one when its call ends is not
  // kept for the next call (what the timer would run belongs to the call that set it).
  const timers = new Set();
  let untracked = false;
  const realSetTimeout = globalThis.setTimeout;
  const realSetInterval = globalThis.setInterval;
  const realClearTimeout = globalThis.clearTimeout;
  const realClearInterval = globalThis.clearInterval;
  globalThis.setTimeout = (fn, ...rest) => {
    if (typeof fn !== "function") untracked = true;
    const id = realSetTimeout((...values) => {
      timers.delete(id);
      if (typeof fn === "function") fn(...values);
    }, ...rest);
    timers.add(id);
    return id;
  };
  globalThis.setInterval = (fn, ...rest) => {
    if (typeof fn !== "function") untracked = true;
    const id = realSetInterval(fn, ...rest);
    timers.add(id);
    return id;
  };
  globalThis.clearTimeout = (id) => {
    timers.delete(id);
    realClearTimeout(id);
  };
  globalThis.clearInterval = (id) => {
    timers.delete(id);
    realClearInterval(id);
  };
  // Message channels deliver later, outside any timer: a call that opened one is not kept.
  for (const name of ["MessageChannel", "BroadcastChannel"]) {
    const Real = globalThis[name];
    if (typeof Real !== "function") continue;
    globalThis[name] = function (...values) {
      untracked = true;
      return new.target ? Reflect.construct(Real, values) : Real(...values);
    };
  }
  let next = 0;
  const waiting = new Map();
  // The run in progress: each run gets its own libos, which refuses once its run has ended (code a
  // call left behind cannot make syscalls that a later call of a kept Worker would answer for).
  let current = 0;
  const libosFor = (run) =>
    Object.freeze({
      async call(name, args = {}) {
        if (run !== current) {
          const error = new Error("the tool call that made this syscall has ended");
          error.name = "SyscallError";
          error.code = "call_ended";
          throw error;
        }
        const id = next++;
        const reply = await new Promise((resolve) => {
          waiting.set(id, resolve);
          post({ t: "syscall", id, name: String(name), args: plain(args) });
        });
        return replyValue(reply);
      },
    });
  let busy = false;
  // The module of the source this Worker last ran (a kept Worker runs the same source again).
  let loaded;
  listen("message", async (event) => {
    const m = event.data;
    if (m?.t === "reply") {
      const resolve = waiting.get(m.reply?.id);
      waiting.delete(m.reply?.id);
      resolve?.(m.reply);
      return;
    }
    if (m?.t !== "run" || busy) return;
    busy = true;
    const run = ++current;
    try {
      let tool = loaded?.source === m.source ? loaded.tool : undefined;
      if (tool === undefined) {
        tool = await importTool(m.source, m.lang);
        loaded = { source: m.source, tool };
      }
      const value = await entryOf(tool)(m.args, libosFor(run));
      current++;
      post({ t: "result", value: plain(value), idle: timers.size === 0 && !untracked });
    } catch (error) {
      current++;
      post({
        t: "error",
        range: error instanceof RangeError,
        memory: memoryUsed(),
        name: String(error?.name ?? "Error"),
        message: String(error?.message ?? error),
      });
    } finally {
      busy = false;
    }
  });
}
