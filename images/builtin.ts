/**
 * The built-in agent images. They are data: the registry validates them like any loaded image,
 * and only an operator holding `image:<id>` admin may replace one.
 *
 * @module
 */
import type { AgentImageInput } from "../runtime/image.ts";

const WORKSPACE = { type: "fs", path: ".", scope: "subtree" } as const;
const HUMAN = { type: "human", key: "owner", scope: "exact" } as const;
const IMAGES = { type: "image", key: "*", scope: "any" } as const;

/** Every built-in image, freshly built (no shared mutable state). */
export function builtinImages(): AgentImageInput[] {
  return [
    {
      id: "base-agent:v0",
      name: "base-agent",
      version: "v0",
      description: "A general agent that talks to its human and keeps notes; no file tools.",
      systemPrompt:
        "You are an agent running inside Agent libOS. You act only through the tools you are given; every effect is checked against your capabilities, and a refusal tells you why. Ask your human when you need a decision or a permission.",
      defaultTools: ["get_current_time", "ask_human", "human_output"],
      safety: { maxMode: "full-access", notes: "" },
      requiredCapabilities: [
        { resource: WORKSPACE, rights: ["read", "stat", "write", "delete"] },
        { resource: HUMAN, rights: ["write"] },
        { resource: IMAGES, rights: ["read"] },
      ],
    },
    {
      id: "coding-agent:v0",
      name: "coding-agent",
      version: "v0",
      description: "A coding agent: reads, writes and lists workspace files.",
      systemPrompt:
        "You are a careful coding agent running inside Agent libOS. Read before you write, keep changes small, and explain what you changed. Files outside the workspace, secrets and .git are out of bounds unless your human approves.",
      defaultTools: [
        "read_text_file",
        "write_text_file",
        "read_directory",
        "get_current_time",
        "ask_human",
        "human_output",
      ],
      contextPolicy: { budgetTokens: 32_000 },
      safety: {
        maxMode: "full-access",
        notes: "Never deletes without a capability that allows it; .git and secrets ask.",
      },
      requiredCapabilities: [
        { resource: WORKSPACE, rights: ["read", "stat", "write", "delete"] },
        { resource: HUMAN, rights: ["write"] },
        { resource: IMAGES, rights: ["read"] },
      ],
    },
  ];
}
