/**
 * Shell decisions (DESIGN §3): `decideShell()` decides an argv by deciding every command it will
 * run (`analyzeArgv()`), in layer order — hardline floor, run ceiling (run denies, the mode),
 * rules, capabilities, then the process's shell policy level — and takes the strictest.
 *
 * Policy levels (the run's `shellPolicy` option of `createRuntime`, used by the shell
 * primitive; `libos policy check` takes it as `--shell-policy`):
 * - `always_deny`: every command is denied;
 * - `allowlist_auto_else_ask`: a command runs on its own only when a rule or capability allows
 *   it (allow matches exact tokens: `./git` and `/usr/bin/git` are not `git`) — or, inside the
 *   OS wall, when it is read-only (`ls`, `cat README.md`, `git status`: the table
 *   `_read_only_programs.ts`), and then it runs confined (the workspace read-only, secret-bearing
 *   files masked: {@link ShellDecision.confined}); else ask;
 * - `blocklist_ask_else_auto`: a plain command runs unless a rule or capability denies or asks;
 *   code and anything opaque asks;
 * - `always_allow`: everything runs — interpreters and test runners included — but what the
 *   hardline floor or the run ceiling stops and what cannot be seen through; flagged
 *   `high_risk`.
 *
 * Below `always_allow`: inline interpreter code is asked about unless a rule allows that exact
 * argv; programs that run workspace code ask unless the shell runs inside the OS wall and a rule
 * allows them. At every level: git with config-changing options (only an exact allow lets it
 * run) and anything opaque are never auto-allowed, and a destructive program whose operands
 * arrive at run time (`xargs rm -rf`) asks. Wrappers are commands too — a rule on `sudo` or
 * `env` applies — transparent otherwise, except privileged ones under an allowlist.
 *
 * @module
 */
import { z } from "zod";
import type { Effect } from "../authority/capability.ts";
import type { RunDeny } from "../authority/decide.ts";
import { ValidationError } from "../base/errors.ts";
import { SCRIPT_LIMITS } from "./shell_script.ts";
import { hardlineRule, isForkBomb } from "./hardline.ts";
import { modeCeiling, type ModeName } from "../authority/modes.ts";
import type { PolicyRules } from "./policy_rules.ts";
import {
  analyzeArgv,
  type CommandKind,
  isDestructive,
  malformedProgram,
  type NestedCommand,
  type ScriptAnalyzer,
} from "./shell_argv.ts";
import type { ProgramTable } from "./shell_programs.ts";
import { readOnlyCommand } from "./_read_only_programs.ts";

export { readOnlyCommand, SHOWS_HISTORY } from "./_read_only_programs.ts";

/** A process's shell policy level. */
export const ShellPolicyLevel = z.enum([
  "always_deny",
  "allowlist_auto_else_ask",
  "blocklist_ask_else_auto",
  "always_allow",
]);
/** A process's shell policy level. */
export type ShellPolicyLevel = z.infer<typeof ShellPolicyLevel>;

/** What a capability says about one command's argv (the process's shell capabilities). */
export interface ShellCapabilityAnswer {
  readonly effect: Effect;
  readonly reason: string;
  /** Whether the capability names this exact argv (not a prefix of it). */
  readonly exact: boolean;
}

/** What a shell decision needs. */
export interface ShellDecisionInput {
  readonly argv: readonly string[];
  readonly level: ShellPolicyLevel;
  readonly mode: ModeName;
  /** Whether the shell runs inside the OS wall (the external-effects issue). */
  readonly wall: boolean;
  readonly denies: readonly RunDeny[];
  readonly rules: PolicyRules | null;
  /** The capability layer of a process (absent in `libos policy check`: there is no process). */
  readonly capabilities?: (argv: readonly string[]) => ShellCapabilityAnswer | undefined;
  /** Parses `sh -c` bodies (absent: every script is opaque). */
  readonly scripts: ScriptAnalyzer | null;
  /** The programs-that-run-programs table, built once by the caller (absent: scanned per call). */
  readonly programs?: ProgramTable;
  /** The deciding process, for the mode's own-namespace rule (default: none). */
  readonly pid?: string;
  /**
   * Why read-only commands may not run confined this time (the shell primitive could not make
   * the shield): they ask as any other command, and the reason says why. Absent: they run
   * confined inside the wall under `allowlist_auto_else_ask`.
   */
  readonly readOnlyWithheld?: string;
}

/** The decision for one nested command. */
export interface CommandDecision {
  readonly argv: readonly string[];
  readonly via: readonly string[];
  readonly kind: CommandKind;
  readonly decision: Effect;
  readonly reason: string;
  /** The rule that decided, as one line of JSON, when a rule did. */
  readonly matchedRule: string | null;
}

/** The decision for an argv. */
export interface ShellDecision {
  readonly decision: Effect;
  readonly reason: string;
  readonly matchedRule: string | null;
  /** Allowed under `always_allow`: nothing but the floor and the ceiling looked at it. */
  readonly highRisk: boolean;
  /**
   * Allowed, and at least one command only because it is read-only (`read-only:<label>`): the
   * run must be confined — the workspace read-only, secret-bearing files masked.
   */
  readonly confined: boolean;
  readonly commands: readonly CommandDecision[];
}

/** The largest argv (all tokens, UTF-8 bytes) decided at all; bigger is refused. */
export const SHELL_HARD_CAP = 1024 * 1024;

/** The reason prefix of a command allowed because it is read-only. */
export const READ_ONLY = "read-only:";

const RANK: Readonly<Record<Effect, number>> = Object.freeze({ allow: 0, ask: 1, deny: 2 });

function decideCommand(input: ShellDecisionInput, command: NestedCommand): CommandDecision {
  const base = { argv: command.argv, via: command.via, kind: command.kind };
  const verdict = (decision: Effect, reason: string, matchedRule: string | null = null) => ({
    ...base,
    decision,
    reason,
    matchedRule,
  });
  // 1. The hardline floor — with each path find substitutes for `{}`, too.
  const hard = hardlineRule(command.argv) ??
    command.roots.map((root) => hardlineRule(command.argv.map((t) => t === "{}" ? root : t)))
      .find((rule) => rule !== undefined);
  if (hard) return verdict("deny", `hardline:${hard}`);
  if (command.argv.some((token) => token.length <= SCRIPT_LIMITS.maxBytes && isForkBomb(token))) {
    return verdict("deny", "hardline:fork-bomb");
  }
  // 2. The run ceiling: run denies, then the mode.
  const key = command.argv.join(" ");
  for (const [i, deny] of input.denies.entries()) {
    if (
      deny.type === "shell" && (deny.right === undefined || deny.right === "execute") &&
      deny.glob.test(key)
    ) {
      return verdict("deny", `run:${i + 1}`);
    }
  }
  const ceiling = modeCeiling(input.mode, { type: "shell", argv: command.argv }, "execute", {
    pid: input.pid ?? "",
    wall: input.wall,
  });
  if (ceiling === "deny") return verdict("deny", `mode:${input.mode}`);
  // 3. Rules: deny and an explicit ask always stand.
  const rule = input.rules?.strictest({
    resource: { type: "shell", argv: command.argv },
    right: "execute",
  });
  if (rule && rule.rule.effect !== "allow") {
    return verdict(rule.rule.effect, rule.reason, rule.text);
  }
  // 4. Capabilities: a deny or an ask stands.
  const cap = input.capabilities?.(command.argv);
  if (cap && cap.effect !== "allow") return verdict(cap.effect, cap.reason);
  if (ceiling === "ask") return verdict("ask", `mode:${input.mode}`);
  // A destructive program whose operands arrive at run time: the floor cannot see them.
  if (
    command.openEnded && isDestructive(command.argv) && input.level !== "always_deny" &&
    !(rule?.rule.effect === "allow" && !rule.rule.exact)
  ) {
    return verdict(
      "ask",
      "open_ended: its operands arrive at run time, where the hardline floor cannot see them",
    );
  }
  // What explicitly allows this command: an allow rule or capability (exact where it must be).
  const allowExact = (rule?.rule.exact === true) || (cap?.effect === "allow" && cap.exact);
  const allowAny = rule !== undefined || cap?.effect === "allow";
  const allowedBy = rule
    ? { reason: rule.reason, text: rule.text as string | null }
    : cap
    ? { reason: cap.reason, text: null }
    : undefined;
  // 5. The level, and what no level auto-allows.
  const level = input.level;
  if (level === "always_deny") return verdict("deny", "shell-policy:always_deny");
  if (command.kind === "opaque") {
    return verdict("ask", `opaque: ${command.reason ?? "cannot be seen through"}`);
  }
  if (command.kind === "git_config") {
    // Never auto-allowed: an allow rule for that exact argv is the only way through.
    return allowExact && allowedBy
      ? verdict("allow", allowedBy.reason, allowedBy.text)
      : verdict("ask", `git_config: ${command.reason}`);
  }
  if (command.kind === "wrapper") {
    // A wrapper is transparent — what it runs is decided on its own — unless a rule or a
    // capability named it (done above), or it changes privileges, which needs its own allow.
    if (allowedBy) return verdict("allow", allowedBy.reason, allowedBy.text);
    if (!command.privileged || level === "always_allow") {
      return verdict("allow", `wrapper: ${command.argv[0]}`);
    }
    return level === "blocklist_ask_else_auto"
      ? verdict("allow", "shell-policy:blocklist_ask_else_auto")
      : verdict("ask", `wrapper: ${command.argv[0]} runs its command with other privileges`);
  }
  // always_allow runs code too (test runners included): flagged high_risk.
  if (level === "always_allow") return verdict("allow", "shell-policy:always_allow");
  const openEnded = command.openEnded;
  switch (command.kind) {
    case "inline_code":
      // Opaque code: only an allow for this exact argv lets it run.
      return allowExact && !openEnded && allowedBy
        ? verdict("allow", allowedBy.reason, allowedBy.text)
        : verdict("ask", `inline_code: ${command.reason}`);
    case "workspace_code":
      return input.wall && allowAny && allowedBy && !(openEnded && allowExact)
        ? verdict("allow", allowedBy.reason, allowedBy.text)
        : verdict(
          "ask",
          `workspace_code: ${command.reason}${input.wall ? "" : " (outside the OS wall)"}`,
        );
    default:
      break;
  }
  // An exact allow cannot vouch for arguments appended at run time (xargs, find -exec … +).
  if (allowedBy && !(openEnded && allowExact)) {
    return verdict("allow", allowedBy.reason, allowedBy.text);
  }
  if (level === "blocklist_ask_else_auto") {
    return verdict("allow", "shell-policy:blocklist_ask_else_auto");
  }
  // A read-only command runs without asking — inside the wall only, confined (the caller binds
  // the workspace read-only and masks secret-bearing files). Not with variables set for it
  // (RIPGREP_CONFIG_PATH can name a --pre program) nor with operands that arrive at run time.
  const label = input.wall && command.kind === "plain" && !openEnded && command.env.length === 0
    ? readOnlyCommand(command.argv)
    : null;
  if (label !== null) {
    return input.readOnlyWithheld === undefined
      ? verdict("allow", `${READ_ONLY}${label}`)
      : verdict(
        "ask",
        `shell-policy:allowlist_auto_else_ask (read-only ${label}, but not confined: ${input.readOnlyWithheld})`,
      );
  }
  return verdict("ask", "shell-policy:allowlist_auto_else_ask");
}

/** The UTF-8 length of `text` (a lone surrogate counts as the 3 bytes of U+FFFD), without copying it. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Decides an argv: every nested command, the strictest wins.
 * @throws {ValidationError} for an empty argv, a non-string token, or an argv over the hard cap.
 */
export function decideShell(input: ShellDecisionInput): ShellDecision {
  const argv = input.argv;
  if (!Array.isArray(argv) || argv.length === 0 || argv.some((t) => typeof t !== "string")) {
    throw new ValidationError("A command is a non-empty array of strings (argv)");
  }
  // Its UTF-8 size (tokens and the NUL between them), counted once, in one pass, stopping at the
  // cap: the size of a hostile argv must not cost more than reading it.
  let bytes = argv.length - 1;
  for (const token of argv) {
    bytes += utf8Length(token);
    if (bytes > SHELL_HARD_CAP) {
      throw new ValidationError(
        `The command is over ${SHELL_HARD_CAP} bytes; nothing that large is decided`,
      );
    }
  }
  const malformed = malformedProgram(argv[0]!);
  if (malformed) {
    throw new ValidationError(
      `The program name ${malformed}: argv[0] must be a program, not shell syntax. Pass the program and each argument as separate tokens (["ls", "-la"]), set variables with ["env", "NAME=value", …], or run a shell line as ["sh", "-c", "…"]`,
    );
  }
  const commands = analyzeArgv(argv, input.scripts, input.programs).map((c) =>
    decideCommand(input, c)
  );
  let worst: CommandDecision | undefined;
  for (const c of commands) {
    // The strictest; among equals, a command over the wrapper that ran it (its reason says more).
    if (
      !worst || RANK[c.decision] > RANK[worst.decision] ||
      (RANK[c.decision] === RANK[worst.decision] && worst.kind === "wrapper" &&
        c.kind !== "wrapper")
    ) worst = c;
  }
  if (!worst) {
    // Nothing runs (an empty script): nothing to allow or refuse.
    return {
      decision: "allow",
      reason: "nothing runs",
      matchedRule: null,
      highRisk: false,
      confined: false,
      commands,
    };
  }
  return {
    decision: worst.decision,
    reason: worst.reason,
    matchedRule: worst.matchedRule,
    highRisk: worst.decision === "allow" && input.level === "always_allow",
    confined: worst.decision === "allow" &&
      commands.some((c) => c.decision === "allow" && c.reason.startsWith(READ_ONLY)),
    commands,
  };
}
