/**
 * Handing a test process a right: the one way tests grant an allow capability, as the operator.
 *
 * @module
 */
import type { CapabilityResource } from "../runtime/capability.ts";
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
