/**
 * Agent images (DESIGN §1, §3): what a process runs as — a system prompt, the tools it sees by
 * default, how its context is materialized, a safety profile, and the capabilities it needs.
 *
 * Required capabilities are a *request*, not a grant: a top-level process receives the mode's
 * default grants intersected with them (never more than the mode gives, never more than the
 * image asks for); children and `exec` never receive them.
 *
 * @module
 */
import { z } from "zod";
import { CapabilityResource, RIGHTS } from "../authority/capability.ts";
import { ContextPolicy } from "../memory/context_policy.ts";
import { ModeName } from "../authority/modes.ts";
import { ToolName } from "./tool.ts";

/** An image id: `name:version`, e.g. `coding-agent:v0`. */
export const ImageId = z.string().regex(
  /^[a-z][a-z0-9-]{0,63}:[a-z0-9][a-z0-9._-]{0,31}$/,
  "must be name:version in lowercase, e.g. coding-agent:v0",
);

/** One capability an image asks a top-level process to receive (if the mode allows it). */
export const RequiredCapability = z.object({
  resource: CapabilityResource,
  rights: z.array(z.string().min(1).max(32)).min(1).max(16),
}).strict().refine(
  (r) => r.rights.every((right) => (RIGHTS[r.resource.type] as readonly string[]).includes(right)),
  "a right the resource type does not know",
);
/** One capability an image asks for. */
export type RequiredCapability = z.infer<typeof RequiredCapability>;

/** What an image promises about how it may be run. */
export const SafetyProfile = z.object({
  /** The most permissive mode the image may run under; a run in a wider mode is capped to it. */
  maxMode: ModeName,
  /** Free text for the operator (what the image is for, what it must never do). */
  notes: z.string().max(4000).default(""),
}).strict();
/** What an image promises about how it may be run. */
export type SafetyProfile = z.infer<typeof SafetyProfile>;

/** An agent image. */
export const AgentImage = z.object({
  id: ImageId,
  name: z.string().min(1).max(100),
  version: z.string().min(1).max(32),
  description: z.string().max(2000).default(""),
  systemPrompt: z.string().min(1).max(32_000),
  defaultTools: z.array(ToolName).max(100).refine(
    (t) => new Set(t).size === t.length,
    "lists a tool twice",
  ),
  contextPolicy: ContextPolicy.optional(),
  safety: SafetyProfile,
  requiredCapabilities: z.array(RequiredCapability).max(64),
  metadata: z.record(z.string().max(64), z.json()).default({}),
}).strict().refine(
  (image) => image.id === `${image.name}:${image.version}`,
  "id must be name:version",
);
/** An agent image. */
export type AgentImage = z.output<typeof AgentImage>;
/** An agent image as written (defaults not applied). */
export type AgentImageInput = z.input<typeof AgentImage>;
