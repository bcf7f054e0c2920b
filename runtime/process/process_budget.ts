/**
 * Budget arithmetic, kept pure so it can be tested exhaustively: what a process has left, what
 * a child may be given (carved out of its parent's remainder, never more), and what comes back
 * when the child finishes.
 *
 * @module
 */
import type { AgentProcess, Budgets, Usage } from "./process.ts";

/** What a process may still spend. */
export interface Remaining {
  readonly toolCalls: number;
  readonly modelTokens: number;
  /** Milliseconds until its wall-time deadline. */
  readonly wallTimeMs: number;
}

/** The remainder of a process's budgets at `now`. */
export function remaining(
  p: Pick<AgentProcess, "budgets" | "usage" | "createdAt">,
  now: number,
): Remaining {
  return {
    toolCalls: Math.max(0, p.budgets.maxToolCalls - p.usage.toolCalls - p.usage.delegatedToolCalls),
    modelTokens: Math.max(
      0,
      p.budgets.maxModelTokens - p.usage.modelTokens - p.usage.delegatedModelTokens,
    ),
    wallTimeMs: Math.max(0, p.createdAt + p.budgets.maxWallTimeMs - now),
  };
}

/** The wall-time deadline of a process, in milliseconds since the epoch. */
export function deadline(p: Pick<AgentProcess, "budgets" | "createdAt">): number {
  return p.createdAt + p.budgets.maxWallTimeMs;
}

/**
 * A child's budgets: what was asked, capped by the parent's remainder; what was not asked is
 * half the parent's remainder (so the parent can still work), and live children no more than the
 * parent's own limit. The child's deadline never passes the parent's.
 */
export function childBudgets(
  parent: AgentProcess,
  requested: Partial<Budgets>,
  now: number,
): Budgets {
  const left = remaining(parent, now);
  const pick = (asked: number | undefined, available: number) =>
    Math.min(asked ?? Math.floor(available / 2), available);
  return {
    // The parent keeps one tool call: without it, it could not even collect the child it made.
    maxToolCalls: pick(requested.maxToolCalls, Math.max(0, left.toolCalls - 1)),
    maxModelTokens: pick(requested.maxModelTokens, left.modelTokens),
    maxLiveChildren: Math.min(
      requested.maxLiveChildren ?? parent.budgets.maxLiveChildren,
      parent.budgets.maxLiveChildren,
    ),
    maxWallTimeMs: Math.max(
      1,
      Math.min(requested.maxWallTimeMs ?? left.wallTimeMs, left.wallTimeMs),
    ),
  };
}

/** The parent's usage after handing `child` its allowance. */
export function reserve(parentUsage: Usage, child: Budgets): Usage {
  return {
    ...parentUsage,
    delegatedToolCalls: parentUsage.delegatedToolCalls + child.maxToolCalls,
    delegatedModelTokens: parentUsage.delegatedModelTokens + child.maxModelTokens,
  };
}

/** The parent's usage after `child` finished: the reservation ends, what it used is kept. */
export function settle(parentUsage: Usage, child: Pick<AgentProcess, "budgets" | "usage">): Usage {
  return {
    toolCalls: parentUsage.toolCalls + child.usage.toolCalls,
    modelTokens: parentUsage.modelTokens + child.usage.modelTokens,
    delegatedToolCalls: Math.max(0, parentUsage.delegatedToolCalls - child.budgets.maxToolCalls),
    delegatedModelTokens: Math.max(
      0,
      parentUsage.delegatedModelTokens - child.budgets.maxModelTokens,
    ),
  };
}
