/**
 * The lifecycle of an agent-written tool (DESIGN §7): `propose` stores a candidate as a durable
 * object in the proposing process's namespace; `validate` runs the static validator, then each of
 * the candidate's tests in the sandbox against a scripted syscall mock (expected syscalls consumed
 * in order, arguments compared, unconsumed expectations fail, the output checked against the
 * output schema); `register` needs a passing validation of the source as it stands and the
 * `register` right on `tool:<name>` or a human's approval of that exact source, and puts the tool
 * in the registering process's own table only (a built-in is never shadowed). A registered tool
 * runs through {@link callJitTool} under the calling process's capabilities.
 *
 * What the lifecycle trusts is what the process cannot write: validation outcomes and
 * registrations are the runtime's own immutable records (`jit.validation`, `jit.registration`,
 * object types only the runtime creates) in the process's namespace, bound to its pid and to the
 * source's sha256; the candidate object itself is the process's and proves nothing.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import { z } from "zod";
import type { Authority } from "../runtime/authority/authority.ts";
import { digestOf, type JsonValue, sha256Hex } from "../runtime/base/canonical_json.ts";
import { ApprovalRequiredError, LibosError, ValidationError } from "../runtime/base/errors.ts";
import {
  type ActionOperation,
  ActionRegistry,
  defineAction,
} from "../runtime/human/action_registry.ts";
import type { HumanChannel } from "../runtime/human/human_channel.ts";
import { ApprovalGate, type Attempt } from "../runtime/primitives/approval_gate.ts";
import { actionApproval, type PendingAction } from "../runtime/human/human_request.ts";
import { type ObjectMemory, RUNTIME_ACTOR } from "../runtime/memory/object_memory.ts";
import { processNamespace } from "../runtime/memory/memory_object.ts";
import { ToolName } from "../runtime/broker/tool.ts";
import type { ToolBroker } from "../runtime/broker/tool_broker.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { runtimeTargets } from "./syscall_session.ts";
import { callJitTool, type JitCallHost } from "./jit_call.ts";
import { type JitSandbox, SandboxError } from "./sandbox.ts";
import { JIT_SOURCE_MAX, type JitReport, type JitValidator } from "./validator.ts";

const Json: z.ZodType<JsonValue> = z.json();

/** One expected syscall of a test, and what the mock answers. */
export const ExpectedSyscall = z.object({
  name: z.string().min(1).max(64),
  args: z.record(z.string(), Json),
  result: Json.optional(),
  error: z.object({ code: z.string().min(1).max(64), message: z.string().max(4096) }).strict()
    .optional(),
}).strict();

/** One test of a candidate. */
export const ToolTest = z.object({
  name: z.string().min(1).max(200),
  args: Json,
  syscalls: z.array(ExpectedSyscall).max(1000).default([]),
  /** When given, the result must equal it. */
  expect: Json.optional(),
}).strict();

/** What `propose` takes. */
export const ToolCandidate = z.object({
  name: ToolName,
  description: z.string().min(1).max(2000),
  input_schema: z.record(z.string(), Json),
  output_schema: z.record(z.string(), Json),
  source: z.string().min(1).max(JIT_SOURCE_MAX),
  tests: z.array(ToolTest).min(1).max(50),
}).strict();
/** A candidate tool. */
export type ToolCandidate = z.infer<typeof ToolCandidate>;

/** One test's outcome. */
export interface ToolTestReport {
  readonly name: string;
  readonly ok: boolean;
  readonly message?: string;
}

/** A validation's outcome. */
export interface ToolValidation {
  readonly ok: boolean;
  readonly static: JitReport;
  readonly tests: readonly ToolTestReport[];
}

/** What the lifecycle needs. */
export interface ToolLifecycleOptions {
  readonly host: JitCallHost;
  readonly validator: JitValidator;
  readonly memory: Pick<ObjectMemory, "create" | "read" | "records">;
  readonly authority: Pick<Authority, "decide" | "consume" | "refusal" | "capabilities">;
  /** Where a registration without the right goes for approval (none: it is refused). */
  readonly human?: Pick<HumanChannel, "escalate" | "mode">;
  readonly tools: Pick<ToolBroker, "registerJit" | "visible">;
}

/** The candidate object's type in object memory (the process's own, editable). */
const CANDIDATE_TYPE = "jit.candidate";
/** The runtime's record of a validation outcome for one candidate and source (reserved type). */
const VALIDATION_TYPE = "jit.validation";
/** The runtime's record of a registration, with the source registered (reserved type). */
const REGISTRATION_TYPE = "jit.registration";

/** Builds a zod schema from a JSON Schema; refuses one zod cannot read. */
function schemaOf(json: Record<string, JsonValue>, what: string): z.ZodType {
  try {
    return z.fromJSONSchema(json as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (error) {
    throw new ValidationError(`The ${what} is not a JSON Schema libos can read: ${error}`, {
      cause: error,
    });
  }
}

/** Propose, validate and register agent-written tools. */
export class JitToolLifecycle {
  readonly #o: ToolLifecycleOptions;

  constructor(options: ToolLifecycleOptions) {
    this.#o = options;
  }

  /**
   * Stores a candidate as an object of process `pid` (its own namespace) and returns its oid.
   * @throws {ValidationError} for a malformed candidate or unreadable schemas.
   */
  propose(pid: string, candidate: unknown): string {
    const parsed = ToolCandidate.safeParse(candidate);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ValidationError(
        `Cannot propose the tool: ${issue?.path.join(".") || "candidate"} ${
          issue?.message ?? "is invalid"
        }`,
      );
    }
    schemaOf(parsed.data.input_schema, "input schema");
    schemaOf(parsed.data.output_schema, "output schema");
    const info = this.#o.memory.create(pid, {
      type: CANDIDATE_TYPE,
      payload: { candidate: parsed.data as unknown as JsonValue },
      provenance: { source: "model", label: parsed.data.name, ref: null },
    });
    return info.oid;
  }

  /**
   * Reads a stored candidate back (refusing anything that is not one), and its passing
   * validation as it stands, if any: a `jit.validation` record the runtime stored for this object
   * and this source's sha256 — never anything the candidate object itself says (the process may
   * write that). The record carries the JavaScript the tests ran, which is what registering runs.
   */
  #candidate(
    pid: string,
    oid: string,
  ): { candidate: ToolCandidate; passed: { compiled: string | null } | undefined } {
    const record = this.#o.memory.read(pid, oid);
    if (record.info.type !== CANDIDATE_TYPE) {
      throw new ValidationError(`Object ${oid} is a ${record.info.type}, not a tool candidate`);
    }
    const candidate = ToolCandidate.parse((record.payload as { candidate?: unknown }).candidate);
    const source = sha256Hex(candidate.source);
    let passed: { compiled: string | null } | undefined;
    for (const payload of this.#records(pid, VALIDATION_TYPE)) {
      const v = payload as {
        candidate?: unknown;
        source?: unknown;
        ok?: unknown;
        compiled?: unknown;
      };
      if (v.candidate !== oid || v.source !== source || v.ok !== true) continue;
      passed = { compiled: typeof v.compiled === "string" ? v.compiled : null };
    }
    return { candidate, passed };
  }

  /**
   * The runtime's own records of one type in process `pid`'s namespace — reserved types a process
   * cannot create (`RESERVED_TYPES`), immutable, created by the runtime — bound to `pid`; every
   * page of them.
   */
  #records(pid: string, type: string): JsonValue[] {
    return this.#o.memory.records(processNamespace(pid), type)
      .map((r) => r.payload)
      .filter((payload) => (payload as { pid?: unknown }).pid === pid);
  }

  /** Stores one of the runtime's records in process `pid`'s namespace (immutable). */
  #record(pid: string, type: string, label: string, payload: Record<string, JsonValue>): void {
    this.#o.memory.create(RUNTIME_ACTOR, {
      namespace: processNamespace(pid),
      type,
      payload: { ...payload, pid },
      provenance: { source: "tool", label, ref: null },
      immutable: true,
    });
  }

  /**
   * Validates a stored candidate: the static validator, then every test in the sandbox against
   * its scripted syscalls. The outcome is stored on the candidate.
   */
  async validate(pid: string, oid: string): Promise<ToolValidation> {
    const { candidate } = this.#candidate(pid, oid);
    const report = await this.#o.validator.validate(candidate.source);
    const tests: ToolTestReport[] = [];
    // The tests run what a registered tool will run: the source transpiled once on the host
    // (the TypeScript itself when swc cannot transpile it).
    const compiled = report.ok ? await this.#o.validator.transpile(candidate.source) : undefined;
    if (report.ok) {
      const input = schemaOf(candidate.input_schema, "input schema");
      const output = schemaOf(candidate.output_schema, "output schema");
      for (const test of candidate.tests) {
        tests.push(await this.#runTest(pid, candidate, compiled, test, input, output));
      }
    }
    const ok = report.ok && tests.every((t) => t.ok);
    this.#record(pid, VALIDATION_TYPE, candidate.name, {
      candidate: oid,
      source: sha256Hex(candidate.source),
      compiled: compiled ?? null,
      ok,
      tests: tests as unknown as JsonValue,
    });
    return { ok, static: report, tests };
  }

  async #runTest(
    pid: string,
    candidate: ToolCandidate,
    compiled: string | undefined,
    test: z.infer<typeof ToolTest>,
    input: z.ZodType,
    output: z.ZodType,
  ): Promise<ToolTestReport> {
    const fail = (message: string) => ({ name: test.name, ok: false, message });
    if (!input.safeParse(test.args).success) return fail("its args do not match the input schema");
    const expected = [...test.syscalls];
    let mismatch: string | undefined;
    const mock = (name: string, args: Record<string, unknown>) => {
      const next = expected.shift();
      if (!next) {
        mismatch ??= `unexpected syscall ${name}`;
        return Promise.reject(new LibosError("unexpected_syscall", "caller", mismatch));
      }
      if (next.name !== name || !isDeepStrictEqual(next.args, args)) {
        mismatch ??= `expected syscall ${next.name} ${JSON.stringify(next.args)}, got ${name} ${
          JSON.stringify(args)
        }`.slice(0, 500);
        return Promise.reject(new LibosError("unexpected_syscall", "caller", mismatch));
      }
      if (next.error) {
        return Promise.reject(new LibosError(next.error.code, "caller", next.error.message));
      }
      return Promise.resolve(next.result ?? null);
    };
    let value: unknown;
    try {
      value = (await this.#o.host.sandbox.call(
        compiled ?? candidate.source,
        test.args,
        mock,
        undefined,
        compiled === undefined ? {} : { language: "javascript" },
      )).value;
    } catch (error) {
      // A test run that breaches a sandbox limit is audited like a call that does (the tool
      // throwing is only a failed test).
      if (error instanceof SandboxError && error.code !== "tool_error") {
        this.#o.host.core.audit.append({
          actor: pid,
          pid,
          action: "jit.test",
          resource: `tool:${candidate.name}`,
          decision: "deny",
          authority: error.code,
        });
      }
      return fail(mismatch ?? (error instanceof SandboxError ? error.message : String(error)));
    }
    if (mismatch) return fail(mismatch);
    if (expected.length > 0) return fail(`${expected.length} expected syscall(s) never made`);
    if (!output.safeParse(value).success) {
      return fail("its result does not match the output schema");
    }
    if (test.expect !== undefined && !isDeepStrictEqual(test.expect, value)) {
      return fail(
        `expected ${JSON.stringify(test.expect)}, got ${JSON.stringify(value)}`.slice(0, 500),
      );
    }
    return { name: test.name, ok: true };
  }

  /**
   * Registers a validated candidate in process `pid`'s own tool table. It needs the `register`
   * right on `tool:<name>`, or — when the process holds no such right and nothing denies it — a
   * human's approval of this exact source: a one-shot grant bound to the digest of the name and
   * the source's sha256, so an edited source asks again. Interactive: the prompt answers now.
   * Queue: {@link HumanPendingError}; once approved, the parked process's resume registers it
   * (or the operator runs `libos jit register` again).
   * @throws {ApprovalRequiredError} when it would need a human and there is none;
   *   {@link CapabilityDeniedError} when a capability or rule denies it;
   *   {@link ValidationError} when the candidate has not passed validation as it stands.
   */
  async register(pid: string, oid: string): Promise<string> {
    const { candidate, passed } = this.#candidate(pid, oid);
    if (!passed) {
      throw new ValidationError(
        `Tool ${candidate.name} has not passed validation as it stands; validate it first`,
      );
    }
    const source = sha256Hex(candidate.source);
    const digest = digestOf({ primitive: "tool.register", name: candidate.name, source });
    const action = {
      resource: { type: "tool" as const, key: candidate.name },
      right: "register" as const,
      digest,
    };
    // One decision record per decision (see runtime/audit/audit_log.ts): the allow names what allowed
    // it (through the tool broker's registration record); a deny or an ask is recorded here.
    const refused = (effect: "ask" | "deny", reason: string) =>
      this.#o.host.core.audit.append({
        actor: pid,
        pid,
        action: "tool.register",
        resource: `tool:${candidate.name}`,
        decision: effect,
        authority: reason,
        inputDigest: digest,
      });
    const what = `register tool ${candidate.name}`;
    const unapproved = (reason: string) =>
      new ApprovalRequiredError(
        `Cannot register tool ${candidate.name}: it needs the register right on tool:${candidate.name} (${reason}) or a human's approval; grant it (libos grant PID tool:${candidate.name} --right register) or run with a human (--human queue)`,
        { reason, digest },
      );
    const human = this.#o.human;
    const gate = new ApprovalGate({ authority: this.#o.authority, human });
    const allowed = await gate.pass(pid, {
      operation: "tool.register",
      args: { oid, name: candidate.name, content: candidate.source },
      // That tool name; the digest binds the exact source.
      grant: () => ({ type: "tool", key: candidate.name, scope: "exact" }),
      attempt: (): Promise<Attempt<string>> => {
        const decision = this.#o.authority.decide(pid, action);
        if (decision.effect === "allow") {
          gate.spend([decision]);
          return Promise.resolve({ type: "done", value: decision.reason });
        }
        // Nothing granted it (the default) or something asks: a human may approve it. A
        // capability or rule that denies it is final.
        const askable = decision.effect === "ask" || decision.reason === "default";
        if (!askable) {
          refused("deny", decision.reason);
          throw this.#o.authority.refusal(pid, action, decision, what);
        }
        // A human's approval of exactly this source (one-shot, digest-bound) answers it.
        const approved = gate.approval(pid, action.resource, action.right, digest);
        if (approved) {
          gate.spend([approved]);
          return Promise.resolve({ type: "done", value: `cap:${approved.id}` });
        }
        refused("ask", decision.reason);
        const details = actionApproval({
          primitive: "tool",
          operation: "tool.register",
          resource: `tool:${candidate.name}`,
          right: "register",
          reason: decision.reason,
          grantScope: "this tool with exactly this source, once",
          bytes: new TextEncoder().encode(candidate.source).length,
          sha256: source,
          preview: candidate.source,
          digest,
          ceiling: null,
        });
        return Promise.resolve({ type: "ask", ask: { details, subject: candidate.name } });
      },
      unasked: (ask) =>
        !human || human.mode === "none" ? unapproved(ask.details.reason) : undefined,
      // One approval: a second ask means the source it was bound to changed.
      attempts: 2,
      exhausted: (ask) => unapproved(ask.details.reason),
    });
    this.#install(pid, candidate, passed.compiled, allowed);
    // What restore and inherit use: its own copy of exactly the source registered (and the
    // JavaScript its tests ran), which no later edit of the candidate changes.
    this.#record(pid, REGISTRATION_TYPE, candidate.name, {
      candidate: candidate as unknown as JsonValue,
      source: source,
      compiled: passed.compiled,
    });
    return candidate.name;
  }

  /**
   * Runs an approved registration again (the human channel's `tool.register` operation): the
   * stored candidate must still carry the source the human approved.
   */
  async dispatch(pid: string, action: PendingAction): Promise<JsonValue> {
    const registry = new ActionRegistry();
    registry.register(...toolActions(this));
    return await registry.dispatch(pid, action, new AbortController().signal);
  }

  /**
   * Process `pid`'s registrations: the runtime's records, each with the source registered and
   * the JavaScript its tests ran (null: the TypeScript runs as it is).
   */
  #registered(
    pid: string,
  ): { candidate: ToolCandidate; compiled: string | null; payload: JsonValue }[] {
    const out: { candidate: ToolCandidate; compiled: string | null; payload: JsonValue }[] = [];
    for (const payload of this.#records(pid, REGISTRATION_TYPE)) {
      const record = payload as { candidate?: unknown; source?: unknown; compiled?: unknown };
      const parsed = ToolCandidate.safeParse(record.candidate);
      if (!parsed.success || record.source !== sha256Hex(parsed.data.source)) continue;
      const compiled = typeof record.compiled === "string" ? record.compiled : null;
      out.push({ candidate: parsed.data, compiled, payload });
    }
    return out;
  }

  /**
   * Puts back the tools process `pid` registered before, each exactly as registered (the
   * runtime's registration record keeps the source; editing the candidate changes nothing):
   * after a restart, the runtime calls this for a process before it runs. Returns their names.
   */
  restore(pid: string): string[] {
    const names: string[] = [];
    for (const { candidate, compiled } of this.#registered(pid)) {
      try {
        this.#install(pid, candidate, compiled);
        names.push(candidate.name);
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
      }
    }
    return names;
  }

  /**
   * At a fork: passes on to the child each of its parent's registered tools that the child was
   * granted — it holds the `register` right on `tool:<name>`, which the parent can delegate only
   * when it holds it standing (an approval used once cannot be handed on). The child gets its own
   * stored copy, so the tool outlives the parent and survives a restart. Returns their names.
   */
  inherit(parent: string, child: string): string[] {
    const names: string[] = [];
    for (const { candidate, compiled, payload } of this.#registered(parent)) {
      const decision = this.#o.authority.decide(child, {
        resource: { type: "tool", key: candidate.name },
        right: "register",
      });
      if (decision.effect !== "allow" || decision.approval) continue;
      // Already passed on (another lifecycle of the same runtime heard the same fork).
      if (this.#o.tools.visible(child).some((t) => t.name === candidate.name)) continue;
      const { pid: _, ...registration } = payload as Record<string, JsonValue>;
      this.#record(child, REGISTRATION_TYPE, candidate.name, registration);
      this.#install(child, candidate, compiled, decision.reason);
      names.push(candidate.name);
    }
    return names;
  }

  /**
   * Puts a tool in `pid`'s table; it runs `compiled` (the JavaScript its tests ran) if any.
   * `authority` is the decision that allowed it (none: a stored registration put back).
   */
  #install(
    pid: string,
    candidate: ToolCandidate,
    compiled: string | null,
    authority?: string,
  ): void {
    const args = schemaOf(candidate.input_schema, "input schema");
    const host = this.#o.host;
    this.#o.tools.registerJit(pid, {
      name: candidate.name,
      description: candidate.description,
      args,
      parameters: candidate.input_schema,
      effects: [],
      origin: "jit",
      run: async (callArgs, ctx) => {
        const result = await callJitTool(host, {
          pid: ctx.pid,
          tool: candidate.name,
          source: candidate.source,
          ...(compiled === null ? {} : { compiled }),
          args: callArgs,
          signal: ctx.signal,
          inQuantum: true,
        });
        return result.value as JsonValue;
      },
    }, authority);
  }
}

/** The lifecycle of a runtime: its memory, authority and tool broker, and its primitives as targets. */
export function lifecycleFor(
  runtime: Runtime,
  parts: { readonly sandbox: JitSandbox; readonly validator: JitValidator },
): JitToolLifecycle {
  const lifecycle = new JitToolLifecycle({
    host: {
      core: runtime,
      targets: runtimeTargets(runtime),
      sandbox: parts.sandbox,
      ledger: runtime.ledger,
    },
    validator: parts.validator,
    memory: runtime.memory,
    authority: runtime.authority,
    tools: runtime.tools,
    human: runtime.human,
  });
  // An approved registration runs again through this lifecycle when its process resumes.
  runtime.human.actions.register(...toolActions(lifecycle));
  // The propose/validate/register_jit_tool built-ins go through this lifecycle.
  runtime.tools.attachJit({
    propose: (pid, candidate) => lifecycle.propose(pid, candidate),
    validate: (pid, oid) => lifecycle.validate(pid, oid),
    register: (pid, oid) => lifecycle.register(pid, oid),
    restore: (pid) => lifecycle.restore(pid),
  });
  // A fork passes on the JIT tools its child was granted.
  runtime.processes.onFork((child, parent) => lifecycle.inherit(parent.pid, child.pid));
  return lifecycle;
}

/** What a stored `tool.register` carries: the candidate, and the name and source shown. */
const StoredRegistration = z.object({ oid: z.string() });

/**
 * The lifecycle's resumable operation (see `runtime/human/action_registry.ts`): registering the
 * stored candidate again, which must still carry the source the human approved (its digest).
 */
export function toolActions(lifecycle: JitToolLifecycle): ActionOperation[] {
  return [
    defineAction("tool.register", StoredRegistration, async (pid, a) => ({
      registered: await lifecycle.register(pid, a.oid),
    })),
  ];
}
