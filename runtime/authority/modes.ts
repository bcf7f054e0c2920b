/**
 * The four modes (DESIGN §3). A mode is two things: a ceiling (layer 2 of `decide()`) that denies
 * or asks whatever it does not allow, whatever a rule or capability says; and the default grant
 * set a top-level process receives at spawn.
 *
 * | mode | ceiling | default grants |
 * | --- | --- | --- |
 * | `read-only` | denies writes, deletes, network; shell only inside the OS wall | workspace read |
 * | `plan` | like read-only, but the process may write its own `process:<pid>` objects | workspace read |
 * | `workspace-write` (`edit`) | asks for file deletes and network | workspace read, write and delete (which the ceiling makes ask) |
 * | `full-access` (`full`) | none beyond hardline and protected paths | workspace read, write, delete |
 *
 * Every mode also grants `human:owner` write: a process may always ask its human.
 *
 * @module
 */
import { z } from "zod";
import {
  type ActionResource,
  type CapabilityResource,
  type Effect,
  inSubtree,
  type Right,
} from "./capability.ts";
import { ValidationError } from "../base/errors.ts";

/** A mode's canonical name. */
export const ModeName = z.enum(["read-only", "plan", "workspace-write", "full-access"]);
/** A mode's canonical name. */
export type ModeName = z.infer<typeof ModeName>;

const ALIASES: Readonly<Record<string, ModeName>> = Object.freeze({
  "read-only": "read-only",
  readonly: "read-only",
  plan: "plan",
  "workspace-write": "workspace-write",
  edit: "workspace-write",
  "full-access": "full-access",
  full: "full-access",
});

/**
 * The canonical mode for a name or alias (`edit`, `full`).
 * @throws {ValidationError} for an unknown mode.
 */
export function parseMode(name: string): ModeName {
  const mode = Object.hasOwn(ALIASES, name) ? ALIASES[name] : undefined;
  if (!mode) {
    throw new ValidationError(
      `Unknown mode ${
        JSON.stringify(name)
      }: use read-only, plan, workspace-write (edit) or full-access (full)`,
    );
  }
  return mode;
}

/** What a mode's ceiling does to an action: deny it, cap it at ask, or let later layers decide. */
export type Ceiling = Exclude<Effect, "allow"> | "pass";

/** Facts the ceiling needs besides the action. */
export interface CeilingFacts {
  /** The acting process (its own `process:<pid>` namespace is writable under `plan`). */
  readonly pid: string;
  /** Whether shell commands run inside the OS wall. */
  readonly wall: boolean;
}

function ownScratch(resource: ActionResource, pid: string): boolean {
  if (resource.type !== "namespace" && resource.type !== "object") return false;
  const own = `process:${pid}`;
  return resource.key === own || resource.key.startsWith(`${own}/`);
}

const WRITES: readonly string[] = Object.freeze([
  "write",
  "delete",
  "create",
  "register",
  "link",
  "grant",
]);

/** The ceiling a mode puts on one action. */
export function modeCeiling(
  mode: ModeName,
  resource: ActionResource,
  right: Right,
  facts: CeilingFacts,
): Ceiling {
  if (mode === "full-access") return "pass";
  if (mode === "workspace-write") {
    if (resource.type === "net") return "ask";
    // Deleting files asks; a process's objects are its own memory (their rights decide).
    if (right === "delete" && resource.type === "fs") return "ask";
    return "pass";
  }
  // read-only and plan: an MCP tool's effects are the server's to say, so none runs.
  if (resource.type === "net" || resource.type === "mcp") return "deny";
  if (resource.type === "shell") return facts.wall ? "pass" : "deny";
  if (resource.type === "human" || resource.type === "process") return "pass";
  if (WRITES.includes(right)) {
    return mode === "plan" && ownScratch(resource, facts.pid) ? "pass" : "deny";
  }
  return "pass";
}

/** A grant a mode gives a top-level process at spawn. */
export interface DefaultGrant {
  readonly resource: CapabilityResource;
  readonly rights: readonly Right[];
}

/** Every mode lets a top-level process talk to its human (ask, report, request a permission). */
const HUMAN_OWNER: DefaultGrant = Object.freeze({
  resource: Object.freeze({ type: "human", key: "owner", scope: "exact" }),
  rights: Object.freeze(["write"]),
}) as DefaultGrant;

/** Every mode lets a process read agent images (to exec one, or to see what it is). */
const IMAGE_READ: DefaultGrant = Object.freeze({
  resource: Object.freeze({ type: "image", key: "*", scope: "any" }),
  rights: Object.freeze(["read"]),
}) as DefaultGrant;

/** The default grant set of a mode (its own namespace comes with every process, not the mode). */
export function defaultGrants(mode: ModeName): DefaultGrant[] {
  return [...workspaceGrants(mode), HUMAN_OWNER, IMAGE_READ];
}

const ORDER: readonly ModeName[] = Object.freeze([
  "read-only",
  "plan",
  "workspace-write",
  "full-access",
]);

/** The narrower of two modes (an image's maximum caps the run's mode for its grants). */
export function narrower(a: ModeName, b: ModeName): ModeName {
  return ORDER.indexOf(a) <= ORDER.indexOf(b) ? a : b;
}

/**
 * What of a default grant an image's requirement keeps: the requirement's resource if the grant
 * covers it, with the rights both name; undefined when they do not meet.
 */
export function intersectGrant(
  grant: DefaultGrant,
  required: { readonly resource: CapabilityResource; readonly rights: readonly string[] },
): DefaultGrant | undefined {
  const g = grant.resource;
  const q = required.resource;
  if (g.type !== q.type) return undefined;
  let covers = false;
  if (g.type === "fs" && q.type === "fs") {
    covers = g.scope === "subtree"
      ? inSubtree(g.path, q.path)
      : q.scope === "exact" && q.path === g.path;
  } else if (g.type === "shell" && q.type === "shell") {
    covers = g.scope === "any" ||
      (g.scope === "prefix" && q.scope !== "any" &&
        g.argv.every((t, i) => q.argv[i] === t)) ||
      (g.scope === "exact" && q.scope === "exact" && g.argv.length === q.argv.length &&
        g.argv.every((t, i) => q.argv[i] === t));
  } else if ("key" in g && "key" in q) {
    covers = g.scope === "any" ||
      (g.scope === "prefix" && q.scope !== "any" && q.key.startsWith(g.key)) ||
      (g.scope === "exact" && q.scope === "exact" && q.key === g.key);
  }
  if (!covers) return undefined;
  const rights = grant.rights.filter((r) => required.rights.includes(r));
  return rights.length ? { resource: q, rights } : undefined;
}

function workspaceGrants(mode: ModeName): DefaultGrant[] {
  const workspace = (rights: Right[]): DefaultGrant => ({
    resource: { type: "fs", path: ".", scope: "subtree" },
    rights,
  });
  switch (mode) {
    case "read-only":
      return [workspace(["read", "stat"])];
    case "plan":
      // Its own namespace comes with every process (Authority.grantSelf); plan's ceiling lets
      // it write there.
      return [workspace(["read", "stat"])];
    case "workspace-write":
      // Delete is granted so that a delete reaches the human: the mode's ceiling makes it ask.
      return [workspace(["read", "stat", "write", "delete"])];
    case "full-access":
      return [workspace(["read", "stat", "write", "delete"])];
  }
}
