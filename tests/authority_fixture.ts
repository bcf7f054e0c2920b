/**
 * Handing a test process a right: the one way tests grant an allow capability, as the operator;
 * and a complete capability record for tests that decide without a runtime.
 *
 * @module
 */
import { Capability, type CapabilityResource } from "../runtime/authority/capability.ts";
import type { Runtime } from "../runtime/runtime.ts";

/** Grants process `pid` `rights` on `resource` (issued by the operator); returns the capability id. */
export function allow(
  runtime: { readonly authority: Runtime["authority"] },
  pid: string,
  resource: CapabilityResource,
  rights: readonly string[],
): string {
  return runtime.authority.capabilities.grant({
    subject: pid,
    resource,
    rights: [...rights],
    effect: "allow",
    issuer: "operator",
  }, "operator").id;
}

/** The process a {@link testCapability} belongs to unless it says otherwise. */
export const TEST_PID = "pid_000000000001";

/**
 * A complete, schema-valid capability (held by {@link TEST_PID} unless `fields` names a
 * subject); `n` becomes the id's hex number.
 */
export function testCapability(
  n: number,
  fields: Pick<Capability, "resource" | "rights" | "effect"> & Partial<Capability>,
): Capability {
  return Capability.parse({
    id: `cap_${n.toString(16).padStart(12, "0")}`,
    subject: TEST_PID,
    oneShot: false,
    usedAt: null,
    actionDigest: null,
    expiresAt: null,
    issuer: "test",
    derivedFrom: null,
    tier: "own",
    revokedAt: null,
    createdAt: 0,
    ...fields,
  });
}
