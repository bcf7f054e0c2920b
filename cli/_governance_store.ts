/**
 * Where a run's governance lives (see `_run_governance.ts`): the newest `agent.start` or
 * `agent.resume` audit record of its top-level process, and — for each policy file — a copy of
 * the text read, an immutable object in the operator's `libos/policies` namespace (no process
 * holds a right there; the copy is used only when its digest matches the chained record). And
 * what a recorded policy file is now, on disk.
 *
 * @module
 */
import { sha256Hex } from "../runtime/base/canonical_json.ts";
import { ValidationError } from "../runtime/base/errors.ts";
import { OPERATOR_ACTOR } from "../runtime/memory/object_memory.ts";
import { readPolicyFile } from "../runtime/policy/policy_files.ts";
import type { Runtime } from "../runtime/runtime.ts";
import {
  type AppliedPolicy,
  type PolicyNow,
  type PolicySource,
  type RunGovernance,
  storedGovernance,
} from "./_run_governance.ts";

/** The namespace keeping the policy texts runs were launched with. */
export const POLICY_NAMESPACE = "libos/policies";
const POLICY_TYPE = "policy.text";

/** What the last launch of a run recorded. */
export interface LastLaunch {
  /** Its governance; undefined for a run launched before libos recorded it. */
  readonly governance: RunGovernance | undefined;
  /** The mode it named (all an older record holds). */
  readonly mode: string | undefined;
}

/**
 * The settings of the last launch of `pid`, from its audit records.
 * @throws {GovernanceError} `governance_unreadable` for a record libos cannot read.
 */
export function lastLaunch(runtime: Runtime, pid: string): LastLaunch {
  for (const action of ["agent.resume", "agent.start"]) {
    const [record] = runtime.audit.query({ pid, action, order: "desc", limit: 1 });
    const detail = record?.detail;
    if (detail) {
      const mode = typeof detail.mode === "string" ? detail.mode : undefined;
      return { governance: storedGovernance(detail, pid), mode };
    }
  }
  return { governance: undefined, mode: undefined };
}

/** A recorded policy file as it is now on disk. */
export function policyNow(source: PolicySource): PolicyNow {
  let text: string | undefined;
  try {
    text = readPolicyFile(source.path);
  } catch (error) {
    return {
      state: "unreadable",
      reason: error instanceof Error ? error.message : String(error),
    };
  }
  if (text === undefined) return { state: "vanished" };
  return sha256Hex(text) === source.sha256 ? { state: "same", text } : { state: "changed", text };
}

/**
 * The text a policy file had at launch, from its copy — only an operator's copy in
 * {@link POLICY_NAMESPACE} whose digest is the recorded one; undefined otherwise.
 */
export function recordedText(runtime: Runtime, source: PolicySource): string | undefined {
  if (source.copy === null) return undefined;
  try {
    const { info, payload } = runtime.memory.read(OPERATOR_ACTOR, source.copy);
    if (
      info.namespace !== POLICY_NAMESPACE || info.creator !== OPERATOR_ACTOR ||
      typeof payload !== "string" || sha256Hex(payload) !== source.sha256
    ) return undefined;
    return payload;
  } catch {
    return undefined; // deleted, or unreadable: not kept
  }
}

/**
 * Keeps a policy file's text as an immutable object (audited as the operator's) and returns its
 * id.
 * @throws {ValidationError} when the text does not match its digest.
 */
export function keepPolicyText(runtime: Runtime, policy: AppliedPolicy): string {
  if (sha256Hex(policy.text) !== policy.sha256) {
    throw new ValidationError(`The policy text of ${policy.path} does not match its digest`);
  }
  if (!runtime.store.getNamespace(POLICY_NAMESPACE)) {
    runtime.memory.createNamespace(OPERATOR_ACTOR, POLICY_NAMESPACE);
  }
  return runtime.memory.create(OPERATOR_ACTOR, {
    namespace: POLICY_NAMESPACE,
    type: POLICY_TYPE,
    payload: policy.text,
    attrs: { path: policy.path, sha256: policy.sha256 },
    provenance: { source: "file", label: "policy file", ref: policy.path },
    immutable: true,
  }).oid;
}
