/**
 * Fixtures for the network primitive's tests: a runtime on a temporary workspace with one
 * process, a primitive over any provider, net grants, and the typed-refusal assertion.
 */
import assert from "node:assert/strict";
import type { AuditRecord } from "../runtime/audit/audit_log.ts";
import { ApprovalRequiredError, LibosError } from "../runtime/base/errors.ts";
import type { HumanMode } from "../runtime/human/human_channel.ts";
import type { ApprovalDetails } from "../runtime/human/human_request.ts";
import { parsePolicy, PolicyRules } from "../runtime/policy/policy_rules.ts";
import { NetPrimitive, type NetPrimitiveOptions } from "../runtime/primitives/net.ts";
import type { NetProvider } from "../runtime/providers/net.ts";
import { type TestRuntime, testRuntime } from "../testing.ts";

/** One fixture (the shared test runtime with one process); dispose it to close and remove it. */
export interface NetFixture extends TestRuntime {
  readonly pid: string;
}

/** How to build one (default mode `full-access`, human mode `none`). */
export interface NetFixtureOptions {
  readonly mode?: string;
  /** Policy rules, or the text of a policy file. */
  readonly rules?: PolicyRules | string;
  readonly human?: HumanMode;
  readonly denies?: readonly string[];
}

/** Builds a fixture. */
export async function netFixture(options: NetFixtureOptions = {}): Promise<NetFixture> {
  const rules = typeof options.rules === "string"
    ? new PolicyRules(parsePolicy(options.rules, "test-policy"))
    : options.rules;
  const t = await testRuntime({
    prefix: "libos-net-",
    mode: options.mode ?? "full-access",
    ...(rules ? { rules } : {}),
    ...(options.human ? { human: options.human } : {}),
    ...(options.denies ? { denies: [...options.denies] } : {}),
  });
  return { ...t, pid: t.spawn() };
}

/** A network primitive of the fixture's runtime over `provider`. */
export function netOf(
  f: NetFixture,
  provider: NetProvider,
  extra: Pick<NetPrimitiveOptions, "human" | "limits"> = {},
): NetPrimitive {
  const { store, audit, events, clock, ids } = f.runtime;
  return new NetPrimitive({
    core: { store, audit, events, clock, ids },
    authority: f.runtime.authority,
    provider,
    processes: f.runtime.processes,
    ledger: f.runtime.ledger,
    ...extra,
  });
}

/** Grants (or denies) `connect` on `net:<key>` to `subject` (the fixture's process by default). */
export function grantNet(
  f: NetFixture,
  key: string,
  scope: "exact" | "prefix" | "any" = "exact",
  effect: "allow" | "ask" | "deny" = "allow",
  subject: string = f.pid,
): string {
  return f.runtime.authority.capabilities.grant({
    subject,
    resource: { type: "net", key, scope },
    rights: ["connect"],
    effect,
    issuer: "operator",
  }).id;
}

/** Runs `run`, requires a {@link LibosError} with `code`, and returns it. */
export async function refused(run: () => Promise<unknown>, code: string): Promise<LibosError> {
  let result: unknown;
  try {
    result = await run();
  } catch (error) {
    if (error instanceof LibosError && error.code === code) return error;
    throw new assert.AssertionError({
      message: `expected a refusal with code ${code}, got ${
        error instanceof Error ? `${error.name} ${"code" in error ? error.code : ""}: ` : ""
      }${error instanceof Error ? error.message : String(error)}`,
    });
  }
  throw new assert.AssertionError({
    message: `expected a refusal with code ${code}, but it succeeded: ${
      JSON.stringify(result).slice(0, 300)
    }`,
  });
}

/** The `net.fetch` audit records of `pid` (the fixture's process by default). */
export function netAudit(f: NetFixture, pid: string = f.pid): AuditRecord[] {
  return f.runtime.audit.query({ pid, action: "net.fetch", limit: 1000 });
}

/**
 * A stand-in for an interactive human: records every escalation and, while `approving()` holds,
 * mints what the real channel mints on "approve" — a one-shot `net:*` allow bound to the
 * request's digest; otherwise it refuses.
 */
export function testHuman(
  f: NetFixture,
  approving: () => boolean = () => true,
): {
  readonly human: Pick<NonNullable<NetPrimitiveOptions["human"]>, "escalate">;
  readonly asked: ApprovalDetails[];
} {
  const asked: ApprovalDetails[] = [];
  return {
    asked,
    human: {
      escalate(pid: string, details: ApprovalDetails): Promise<void> {
        asked.push(details);
        if (!approving()) {
          return Promise.reject(
            new ApprovalRequiredError("refused by the test human", {
              reason: "test",
              digest: details.digest,
            }),
          );
        }
        f.runtime.authority.capabilities.grant({
          subject: pid,
          resource: { type: "net", key: "*", scope: "any" },
          rights: ["connect"],
          effect: "allow",
          oneShot: true,
          actionDigest: details.digest,
          issuer: "human:test",
        });
        return Promise.resolve();
      },
    },
  };
}
