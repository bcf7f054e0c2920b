/**
 * The built-in agent images. Their source is `images/*.yaml` (imported as text: part of the
 * static module graph, no read permission needed); the runtime loads the JSON `deno task images`
 * makes from them (the YAML library reads environment variables, so it does not run inside the
 * runtime for its own images). They are data: validated by the registry like any loaded image,
 * and only an operator holding `image:<id>` admin may replace one.
 *
 * @module
 */
import type { AgentImageInput } from "../runtime/broker/image.ts";
import baseAgent from "./base-agent.yaml" with { type: "text" };
import built from "./builtin_images.json" with { type: "json" };
import codingAgent from "./coding-agent.yaml" with { type: "text" };
import reviewAgent from "./review-agent.yaml" with { type: "text" };
import toolmakerAgent from "./toolmaker-agent.yaml" with { type: "text" };

/** The built-in images' YAML, by file name. */
export function builtinImageSources(): Record<string, string> {
  return {
    "base-agent.yaml": baseAgent,
    "coding-agent.yaml": codingAgent,
    "review-agent.yaml": reviewAgent,
    "toolmaker-agent.yaml": toolmakerAgent,
  };
}

/** Every built-in image, a fresh copy each call (no shared mutable state). */
export function builtinImages(): AgentImageInput[] {
  return structuredClone(built) as unknown as AgentImageInput[];
}
