import assert from "node:assert/strict";
import { TEST_PID, testCapability } from "../../tests/authority_fixture.ts";
import { Capability, type CapabilityResource, type Effect } from "./capability.ts";
import { CapabilityIndex } from "./capability_index.ts";
import {
  type Action,
  compileProtection,
  decide,
  type Decision,
  type DecisionContext,
  type DecisionLayer,
  type Layers,
  parseRunDeny,
} from "./decide.ts";
import { ValidationError } from "../base/errors.ts";
import { type ModeName, parseMode } from "./modes.ts";

const NOW = 1_000_000;
const PID = TEST_PID;
const OTHER = "pid_000000000002";
const D1 = `sha256:${"a".repeat(64)}`;
const D2 = `sha256:${"b".repeat(64)}`;

/** A complete, schema-valid capability held by {@link PID}. */
const cap = testCapability;

const fs = (path: string, scope: "exact" | "subtree" = "subtree"): CapabilityResource => ({
  type: "fs",
  path,
  scope,
});

const read = (path: string, digest?: string): Action => ({
  resource: { type: "fs", path },
  right: "read",
  ...(digest === undefined ? {} : { digest }),
});
const write = (path: string, digest?: string): Action => ({
  resource: { type: "fs", path },
  right: "write",
  ...(digest === undefined ? {} : { digest }),
});
const del = (path: string): Action => ({ resource: { type: "fs", path }, right: "delete" });
const shell = (...argv: string[]): Action => ({
  resource: { type: "shell", argv },
  right: "execute",
});
const connect = (host: string): Action => ({
  resource: { type: "net", key: host },
  right: "connect",
});
const objectWrite = (key: string): Action => ({
  resource: { type: "object", key },
  right: "write",
});

/** A fake layer that always answers `decision`. */
function always(decision: Decision | undefined): DecisionLayer {
  return { decide: () => decision };
}

const HARDLINE = always({ effect: "deny", reason: "hardline:rm-rf-root", layer: "hardline" });
const ABSTAIN = always(undefined);
const rule = (effect: Effect, n: number): DecisionLayer =>
  always({ effect, reason: `rule:policy.jsonc#${n}`, layer: "rule" });

// Capabilities used across cases; each id names itself in the expected reason.
const ALLOW_ALL_READ = cap(1, { resource: fs("."), rights: ["read"], effect: "allow" });
const ALLOW_ALL_WRITE = cap(2, { resource: fs("."), rights: ["write"], effect: "allow" });
const ALLOW_ALL_DELETE = cap(3, { resource: fs("."), rights: ["delete"], effect: "allow" });
const ALLOW_SHELL = cap(4, {
  resource: { type: "shell", argv: [], scope: "any" },
  rights: ["execute"],
  effect: "allow",
});
const ALLOW_NET = cap(5, {
  resource: { type: "net", key: "x", scope: "any" },
  rights: ["connect"],
  effect: "allow",
});
const ALLOW_OWN_SCRATCH = cap(6, {
  resource: { type: "object", key: `process:${PID}/`, scope: "prefix" },
  rights: ["write"],
  effect: "allow",
});
const ALLOW_ANY_OBJECT = cap(7, {
  resource: { type: "object", key: "x", scope: "any" },
  rights: ["write"],
  effect: "allow",
});
const DENY_SECRETS_READ = cap(8, { resource: fs("secrets"), rights: ["read"], effect: "deny" });
const DENY_DELETE = cap(9, { resource: fs("."), rights: ["delete"], effect: "deny" });
const DENY_GIT_WRITE = cap(10, { resource: fs(".git"), rights: ["write"], effect: "deny" });
const DENY_ALL_READ = cap(11, { resource: fs("."), rights: ["read"], effect: "deny" });
const DENY_SRC_READ = cap(12, { resource: fs("src"), rights: ["read"], effect: "deny" });
const ALLOW_SRC_A_EXACT = cap(13, {
  resource: fs("src/a.ts", "exact"),
  rights: ["read"],
  effect: "allow",
});
const ALLOW_SRC_READ = cap(14, { resource: fs("src"), rights: ["read"], effect: "allow" });
const DENY_SRC_A_EXACT = cap(15, {
  resource: fs("src/a.ts", "exact"),
  rights: ["read"],
  effect: "deny",
});
const ASK_SRC_GEN_READ = cap(16, { resource: fs("src/gen"), rights: ["read"], effect: "ask" });
const ASK_SRC_READ = cap(17, { resource: fs("src"), rights: ["read"], effect: "ask" });
const DENY_SRC_READ_TIE = cap(18, { resource: fs("src"), rights: ["read"], effect: "deny" });
const ASK_VENDOR_READ = cap(19, { resource: fs("Vendor"), rights: ["read"], effect: "ask" });
const ALLOW_DIGEST = cap(20, {
  resource: fs("src/a.ts", "exact"),
  rights: ["write"],
  effect: "allow",
  actionDigest: D1,
});
const APPROVE_GIT_CONFIG = cap(30, {
  resource: fs(".git/config", "exact"),
  rights: ["write"],
  effect: "allow",
  oneShot: true,
  actionDigest: D1,
});
const APPROVE_DELETE_A = cap(31, {
  resource: fs("src/a.ts", "exact"),
  rights: ["delete"],
  effect: "allow",
  oneShot: true,
  actionDigest: D1,
});
const EXPIRED = cap(21, {
  resource: fs("src/a.ts", "exact"),
  rights: ["read"],
  effect: "allow",
  expiresAt: NOW,
});
const NOT_YET_EXPIRED = cap(22, {
  resource: fs("src/a.ts", "exact"),
  rights: ["read"],
  effect: "allow",
  expiresAt: NOW + 1,
});
const REVOKED = cap(23, {
  resource: fs("src/a.ts", "exact"),
  rights: ["read"],
  effect: "allow",
  revokedAt: NOW - 10,
});
const USED_ONCE = cap(24, {
  resource: fs("src/a.ts", "exact"),
  rights: ["read"],
  effect: "allow",
  oneShot: true,
  usedAt: NOW - 10,
});
const UNUSED_ONCE = cap(25, {
  resource: fs("src/a.ts", "exact"),
  rights: ["read"],
  effect: "allow",
  oneShot: true,
});
const INHERITED_DENY_SECRETS = cap(26, {
  resource: fs("secrets"),
  rights: ["read"],
  effect: "deny",
  tier: "inherited",
});
const OWN_ALLOW_SECRET_X = cap(27, {
  resource: fs("secrets/x", "exact"),
  rights: ["read"],
  effect: "allow",
});
const INHERITED_ASK_ALL_READ = cap(28, {
  resource: fs("."),
  rights: ["read"],
  effect: "ask",
  tier: "inherited",
});
const INHERITED_ALLOW_ALL_READ = cap(29, {
  resource: fs("."),
  rights: ["read"],
  effect: "allow",
  tier: "inherited",
});
const OWN_DENY_SECRETS = cap(30, { resource: fs("secrets"), rights: ["read"], effect: "deny" });
const OWN_DENY_SRC_A = cap(31, {
  resource: fs("src/a.ts", "exact"),
  rights: ["read"],
  effect: "deny",
});
const ALLOW_GIT_PREFIX = cap(32, {
  resource: { type: "shell", argv: ["git"], scope: "prefix" },
  rights: ["execute"],
  effect: "allow",
});
const ALLOW_NET_EXAMPLE = cap(33, {
  resource: { type: "net", key: "example.com", scope: "exact" },
  rights: ["connect"],
  effect: "allow",
});

interface Case {
  readonly name: string;
  readonly mode: ModeName;
  readonly denies: readonly string[];
  readonly wall: boolean;
  readonly caps: readonly Capability[];
  readonly hardline?: DecisionLayer;
  readonly rules?: DecisionLayer;
  readonly action: Action;
  readonly expected: { readonly effect: Effect; readonly reason: string };
}

const id = (c: Capability) => `cap:${c.id}`;
const ask = (reason: string) => ({ effect: "ask", reason }) as const;
const deny = (reason: string) => ({ effect: "deny", reason }) as const;
const allow = (reason: string) => ({ effect: "allow", reason }) as const;

const CASES: readonly Case[] = [
  // Layer 1: hardline.
  {
    name: "hardline deny beats full-access, an allow capability and an allow rule",
    mode: "full-access",
    denies: [],
    wall: true,
    caps: [ALLOW_ALL_WRITE],
    hardline: HARDLINE,
    rules: rule("allow", 1),
    action: write("src/a.ts"),
    expected: deny("hardline:rm-rf-root"),
  },
  {
    name: "hardline deny comes before a run deny",
    mode: "full-access",
    denies: ["fs.write:**"],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    hardline: HARDLINE,
    action: write("src/a.ts"),
    expected: deny("hardline:rm-rf-root"),
  },
  {
    name: "a hardline layer with no opinion passes to the later layers",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    hardline: ABSTAIN,
    action: write("src/a.ts"),
    expected: allow(id(ALLOW_ALL_WRITE)),
  },
  // Layer 2: run-scoped denies.
  {
    name: "run deny fs.write:secrets/** beats a capability allow",
    mode: "full-access",
    denies: ["fs.write:secrets/**"],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    action: write("secrets/key"),
    expected: deny("run:1"),
  },
  {
    name: "run deny for write does not apply to a read",
    mode: "full-access",
    denies: ["fs.write:secrets/**"],
    wall: false,
    caps: [ALLOW_ALL_READ],
    // The folder itself: a file inside it is secret-bearing, and its read asks anyway.
    action: read("secrets"),
    expected: allow(id(ALLOW_ALL_READ)),
  },
  {
    name: "the second run deny in the list is named run:2",
    mode: "full-access",
    denies: ["net:*", "fs.write:secrets/**"],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    action: write("secrets/key"),
    expected: deny("run:2"),
  },
  {
    name: "a run deny with no right covers every right on its type",
    mode: "full-access",
    denies: ["fs:secrets/**"],
    wall: false,
    caps: [ALLOW_ALL_READ],
    action: read("secrets/key"),
    expected: deny("run:1"),
  },
  {
    name: "a run deny matches a case variant of its glob (attack: SECRETS/key)",
    mode: "full-access",
    denies: ["fs.write:secrets/**"],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    action: write("SECRETS/key"),
    expected: deny("run:1"),
  },
  {
    name: "a run deny beats a rules-layer allow (rules are below the run ceiling)",
    mode: "full-access",
    denies: ["fs.write:secrets/**"],
    wall: false,
    caps: [],
    rules: rule("allow", 1),
    action: write("secrets/key"),
    expected: deny("run:1"),
  },
  {
    name: "a run deny on net blocks a connection a capability allows",
    mode: "full-access",
    denies: ["net:*"],
    wall: false,
    caps: [ALLOW_NET],
    action: connect("example.com"),
    expected: deny("run:1"),
  },
  // Layer 2: the mode ceiling.
  {
    name: "read-only denies a write even with a write capability",
    mode: "read-only",
    denies: [],
    wall: true,
    caps: [ALLOW_ALL_WRITE],
    action: write("src/a.ts"),
    expected: deny("mode:read-only"),
  },
  {
    name: "read-only denies a delete even with a delete capability",
    mode: "read-only",
    denies: [],
    wall: true,
    caps: [ALLOW_ALL_DELETE],
    action: del("src/a.ts"),
    expected: deny("mode:read-only"),
  },
  {
    name: "read-only denies a network connection even with a net capability",
    mode: "read-only",
    denies: [],
    wall: true,
    caps: [ALLOW_NET],
    action: connect("example.com"),
    expected: deny("mode:read-only"),
  },
  {
    name: "read-only denies a shell run outside the OS wall",
    mode: "read-only",
    denies: [],
    wall: false,
    caps: [ALLOW_SHELL],
    action: shell("ls"),
    expected: deny("mode:read-only"),
  },
  {
    name: "read-only inside the OS wall passes a shell run to the capabilities",
    mode: "read-only",
    denies: [],
    wall: true,
    caps: [ALLOW_SHELL],
    action: shell("ls"),
    expected: allow(id(ALLOW_SHELL)),
  },
  {
    name: "read-only inside the OS wall with no shell capability falls to default",
    mode: "read-only",
    denies: [],
    wall: true,
    caps: [],
    action: shell("ls"),
    expected: deny("default"),
  },
  {
    name: "read-only lets a read through to the capabilities",
    mode: "read-only",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_READ],
    action: read("src/a.ts"),
    expected: allow(id(ALLOW_ALL_READ)),
  },
  {
    name: "plan lets a process write its own process:<pid> scratch object",
    mode: "plan",
    denies: [],
    wall: false,
    caps: [ALLOW_OWN_SCRATCH],
    action: objectWrite(`process:${PID}/x`),
    expected: allow(id(ALLOW_OWN_SCRATCH)),
  },
  {
    name: "plan denies a write to another process's scratch object",
    mode: "plan",
    denies: [],
    wall: false,
    caps: [ALLOW_ANY_OBJECT],
    action: objectWrite(`process:${OTHER}/x`),
    expected: deny("mode:plan"),
  },
  {
    name: "plan denies a write to a pid that merely starts with the process's pid",
    mode: "plan",
    denies: [],
    wall: false,
    caps: [ALLOW_ANY_OBJECT],
    action: objectWrite(`process:${PID}0/x`),
    expected: deny("mode:plan"),
  },
  {
    name: "plan denies a workspace write",
    mode: "plan",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    action: write("src/a.ts"),
    expected: deny("mode:plan"),
  },
  {
    name: "workspace-write asks for a delete a capability allows",
    mode: "workspace-write",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_DELETE],
    action: del("src/a.ts"),
    expected: ask("mode:workspace-write"),
  },
  {
    name: "workspace-write asks for a network connection a capability allows",
    mode: "workspace-write",
    denies: [],
    wall: false,
    caps: [ALLOW_NET],
    action: connect("example.com"),
    expected: ask("mode:workspace-write"),
  },
  {
    name: "workspace-write allows a write a capability allows",
    mode: "workspace-write",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    action: write("src/a.ts"),
    expected: allow(id(ALLOW_ALL_WRITE)),
  },
  {
    name: "workspace-write's ceiling ask does not lift a deny capability",
    mode: "workspace-write",
    denies: [],
    wall: false,
    caps: [DENY_DELETE],
    action: del("src/a.ts"),
    expected: deny(id(DENY_DELETE)),
  },
  {
    name: "workspace-write's ceiling ask does not turn the default deny into ask",
    mode: "workspace-write",
    denies: [],
    wall: false,
    caps: [],
    action: del("src/a.ts"),
    expected: deny("default"),
  },
  {
    name: "workspace-write passes a shell run to the capabilities",
    mode: "workspace-write",
    denies: [],
    wall: false,
    caps: [ALLOW_GIT_PREFIX],
    action: shell("git", "status"),
    expected: allow(id(ALLOW_GIT_PREFIX)),
  },
  {
    name: "full-access allows a delete a capability allows",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_DELETE],
    action: del("src/a.ts"),
    expected: allow(id(ALLOW_ALL_DELETE)),
  },
  {
    name: "full-access allows a connection a capability allows",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_NET_EXAMPLE],
    action: connect("example.com"),
    expected: allow(id(ALLOW_NET_EXAMPLE)),
  },
  // Layer 2: protected paths.
  {
    name: "protected: workspace-write asks for a write to .git/config",
    mode: "workspace-write",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    action: write(".git/config"),
    expected: ask("protected:**/.git/**"),
  },
  {
    name: "protected: full-access asks for a write to a nested pkg/.git/hooks/pre-commit",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    action: write("pkg/.git/hooks/pre-commit"),
    expected: ask("protected:**/.git/**"),
  },
  {
    name: "protected: full-access asks for a write to .gitmodules",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    action: write(".gitmodules"),
    expected: ask("protected:**/.gitmodules"),
  },
  {
    name: "protected: full-access asks for deleting .git itself",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_DELETE],
    action: del(".git"),
    expected: ask("protected:**/.git"),
  },
  {
    name: "protected: workspace-write names the protected path, not the mode, for a .git delete",
    mode: "workspace-write",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_DELETE],
    action: del(".git/config"),
    expected: ask("protected:**/.git/**"),
  },
  {
    name: "protected: a case variant .GIT/config still asks (attack: case folding)",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    action: write(".GIT/config"),
    expected: ask("protected:**/.git/**"),
  },
  {
    name: "protected: read-only's deny is stricter than the protected ask",
    mode: "read-only",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_DELETE],
    action: del(".gitmodules"),
    expected: deny("mode:read-only"),
  },
  {
    name: "protected: plan's deny is stricter than the protected ask",
    mode: "plan",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    action: write(".git/config"),
    expected: deny("mode:plan"),
  },
  {
    name: "protected: a deny capability on .git still denies (the ceiling ask does not lift it)",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE, DENY_GIT_WRITE],
    action: write(".git/config"),
    expected: deny(id(DENY_GIT_WRITE)),
  },
  {
    name: "protected: with no capability the default deny stands",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [],
    action: write(".git/config"),
    expected: deny("default"),
  },
  {
    name: "protected: reading .git/config is not protected",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_READ],
    action: read(".git/config"),
    expected: allow(id(ALLOW_ALL_READ)),
  },
  // Layer 2: secret-bearing reads.
  ...([
    [".env", "**/.env*"],
    ["deploy/.env.local", "**/.env*"],
    ["key.pem", "**/*.pem"],
    ["ssh/id_rsa", "**/id_*"],
    [".npmrc", "**/.npmrc"],
    ["home/.netrc", "**/.netrc"],
    [".git-credentials", "**/.git-credentials"],
    ["config/.ENV", "**/.env*"],
    // `.env*` as DESIGN §2 says: direnv's .envrc and other spellings too.
    [".envrc", "**/.env*"],
    ["app/.env_production", "**/.env*"],
  ] as const).map(([path, glob]): Case => ({
    name: `secret: reading ${path} asks even under an allow-all read capability`,
    mode: "workspace-write",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_READ],
    action: read(path),
    expected: ask(`protected:${glob}`),
  })),
  {
    name: "secret: reading .env asks under full-access too",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_READ],
    action: read(".env"),
    expected: ask("protected:**/.env*"),
  },
  {
    name: "secret: a deny capability on a secret file still denies",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [DENY_ALL_READ],
    action: read(".env"),
    expected: deny(id(DENY_ALL_READ)),
  },
  // Layer 3: rules.
  {
    name: "rules: a rules-layer deny wins over a capability allow",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_READ],
    rules: rule("deny", 1),
    action: read("src/a.ts"),
    expected: deny("rule:policy.jsonc#1"),
  },
  {
    name: "rules: an explicit ask rule is honoured though a capability allows",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_READ],
    rules: rule("ask", 2),
    action: read("src/a.ts"),
    expected: ask("rule:policy.jsonc#2"),
  },
  {
    name: "rules: a rules-layer allow wins over a capability deny (rules come first)",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [DENY_ALL_READ],
    rules: rule("allow", 3),
    action: read("src/a.ts"),
    expected: allow("rule:policy.jsonc#3"),
  },
  {
    name: "rules: a rules-layer allow is capped by the mode's ask",
    mode: "workspace-write",
    denies: [],
    wall: false,
    caps: [],
    rules: rule("allow", 4),
    action: del("src/a.ts"),
    expected: ask("mode:workspace-write"),
  },
  {
    name: "rules: a rules-layer allow is capped by a protected path's ask",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [],
    rules: rule("allow", 5),
    action: write(".git/config"),
    expected: ask("protected:**/.git/**"),
  },
  {
    name: "rules: a rules layer with no opinion passes to the capabilities",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_READ],
    rules: ABSTAIN,
    action: read("src/a.ts"),
    expected: allow(id(ALLOW_ALL_READ)),
  },
  // Layer 4: capabilities.
  {
    name: "caps: a deny on the secrets subtree beats an allow on the whole tree",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_READ, DENY_SECRETS_READ],
    action: read("secrets/x"),
    expected: deny(id(DENY_SECRETS_READ)),
  },
  {
    name: "caps: outside the denied subtree the allow on the whole tree applies",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_READ, DENY_SECRETS_READ],
    action: read("src/a.ts"),
    expected: allow(id(ALLOW_ALL_READ)),
  },
  {
    name: "caps: an exact allow beats a subtree deny",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [DENY_SRC_READ, ALLOW_SRC_A_EXACT],
    action: read("src/a.ts"),
    expected: allow(id(ALLOW_SRC_A_EXACT)),
  },
  {
    name: "caps: an exact deny beats a subtree allow",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_SRC_READ, DENY_SRC_A_EXACT],
    action: read("src/a.ts"),
    expected: deny(id(DENY_SRC_A_EXACT)),
  },
  {
    name: "caps: a deeper subtree beats a shallower one",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_SRC_READ, ASK_SRC_GEN_READ],
    action: read("src/gen/x.ts"),
    expected: ask(id(ASK_SRC_GEN_READ)),
  },
  {
    name: "caps: at equal specificity ask beats allow",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_SRC_READ, ASK_SRC_READ],
    action: read("src/a.ts"),
    expected: ask(id(ASK_SRC_READ)),
  },
  {
    name: "caps: at equal specificity ask beats allow whatever the order",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ASK_SRC_READ, ALLOW_SRC_READ],
    action: read("src/a.ts"),
    expected: ask(id(ASK_SRC_READ)),
  },
  {
    name: "caps: at equal specificity deny beats ask",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ASK_SRC_READ, DENY_SRC_READ_TIE],
    action: read("src/a.ts"),
    expected: deny(id(DENY_SRC_READ_TIE)),
  },
  {
    name: "caps: at equal specificity deny beats allow",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [DENY_SRC_READ_TIE, ALLOW_SRC_READ],
    action: read("src/a.ts"),
    expected: deny(id(DENY_SRC_READ_TIE)),
  },
  {
    name: "caps: a capability for another right does not match",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE],
    action: read("src/a.ts"),
    expected: deny("default"),
  },
  {
    name: "caps: a capability for another resource type does not match",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_NET, ALLOW_SHELL],
    action: read("src/a.ts"),
    expected: deny("default"),
  },
  {
    name: "caps: no capability at all is the default deny",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [],
    action: read("src/a.ts"),
    expected: deny("default"),
  },
  // Case folding only ever makes a decision stricter.
  {
    name: "fold: a deny on secrets also denies SECRETS/x",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_READ, DENY_SECRETS_READ],
    action: read("SECRETS/x"),
    expected: deny(id(DENY_SECRETS_READ)),
  },
  {
    name: "fold: an ask on Vendor also asks for vendor/x",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_READ, ASK_VENDOR_READ],
    action: read("vendor/x"),
    expected: ask(id(ASK_VENDOR_READ)),
  },
  {
    name: "fold: an allow on src does not allow SRC/x",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_SRC_READ],
    action: read("SRC/x"),
    expected: deny("default"),
  },
  {
    name: "fold: an exact allow on src/a.ts does not allow src/A.ts",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_SRC_A_EXACT],
    action: read("src/A.ts"),
    expected: deny("default"),
  },
  // Digest-bound, expiring, revoked and one-shot capabilities.
  {
    name:
      "digest: a digest-bound capability (a human's approval) answers only an ask, never lifts a default deny",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_DIGEST],
    action: write("src/a.ts", D1),
    expected: deny("default"),
  },
  {
    name: "digest: a human's approval of exactly this action answers a protected-path ask",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE, APPROVE_GIT_CONFIG],
    action: write(".git/config", D1),
    expected: allow(id(APPROVE_GIT_CONFIG)),
  },
  {
    name:
      "digest: an approval of one payload leaves the protected-path ask for another (attack: bait and switch)",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE, APPROVE_GIT_CONFIG],
    action: write(".git/config", D2),
    expected: ask("protected:**/.git/**"),
  },
  {
    name: "digest: an approval never beats a deny capability (attack: approve past a deny)",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_WRITE, DENY_GIT_WRITE, APPROVE_GIT_CONFIG],
    action: write(".git/config", D1),
    expected: deny(id(DENY_GIT_WRITE)),
  },
  {
    name: "digest: an approval answers a mode-ceiling ask for exactly its action",
    mode: "workspace-write",
    denies: [],
    wall: false,
    caps: [ALLOW_ALL_DELETE, APPROVE_DELETE_A],
    action: { ...del("src/a.ts"), digest: D1 },
    expected: allow(id(APPROVE_DELETE_A)),
  },
  {
    name: "digest: a digest-bound capability does not match another payload (attack: swap content)",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_DIGEST],
    action: write("src/a.ts", D2),
    expected: deny("default"),
  },
  {
    name: "digest: a digest-bound capability does not match an action without a digest",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [ALLOW_DIGEST],
    action: write("src/a.ts"),
    expected: deny("default"),
  },
  {
    name: "live: a capability whose expiresAt is now has expired",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [EXPIRED],
    action: read("src/a.ts"),
    expected: deny("default"),
  },
  {
    name: "live: a capability expiring after now still matches",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [NOT_YET_EXPIRED],
    action: read("src/a.ts"),
    expected: allow(id(NOT_YET_EXPIRED)),
  },
  {
    name: "live: a revoked capability does not match",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [REVOKED],
    action: read("src/a.ts"),
    expected: deny("default"),
  },
  {
    name: "live: a used one-shot capability does not match",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [USED_ONCE],
    action: read("src/a.ts"),
    expected: deny("default"),
  },
  {
    name: "live: an unused one-shot capability matches",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [UNUSED_ONCE],
    action: read("src/a.ts"),
    expected: allow(id(UNUSED_ONCE)),
  },
  // Inherited tier: a floor the subject's own grants cannot lift.
  {
    name: "tier: an allow-always capability never overrides a child's inherited deny",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [INHERITED_DENY_SECRETS, OWN_ALLOW_SECRET_X],
    action: read("secrets/x"),
    expected: deny(id(INHERITED_DENY_SECRETS)),
  },
  {
    name: "tier: an inherited ask is not lifted by a more specific own allow",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [INHERITED_ASK_ALL_READ, ALLOW_SRC_A_EXACT],
    action: read("src/a.ts"),
    expected: ask(id(INHERITED_ASK_ALL_READ)),
  },
  {
    name: "tier: an own deny still restricts an inherited allow",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [INHERITED_ALLOW_ALL_READ, OWN_DENY_SECRETS],
    action: read("secrets/x"),
    expected: deny(id(OWN_DENY_SECRETS)),
  },
  {
    name: "tier: an own deny still restricts an inherited ask",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [INHERITED_ASK_ALL_READ, OWN_DENY_SRC_A],
    action: read("src/a.ts"),
    expected: deny(id(OWN_DENY_SRC_A)),
  },
  {
    name: "tier: an inherited allow applies where the subject holds nothing of its own",
    mode: "full-access",
    denies: [],
    wall: false,
    caps: [INHERITED_ALLOW_ALL_READ, OWN_DENY_SECRETS],
    action: read("src/a.ts"),
    expected: allow(id(INHERITED_ALLOW_ALL_READ)),
  },
];

function context(c: Pick<Case, "mode" | "denies" | "wall">): DecisionContext {
  return {
    mode: c.mode,
    denies: c.denies.map(parseRunDeny),
    wall: c.wall,
    protection: compileProtection(),
  };
}

function layers(c: Pick<Case, "caps" | "hardline" | "rules">): Layers {
  const index = new CapabilityIndex(c.caps);
  return {
    ...(c.hardline ? { hardline: c.hardline } : {}),
    ...(c.rules ? { rules: c.rules } : {}),
    capabilities: {
      match: (_subject, a) => index.match(a.resource, a.right, a.digest, NOW),
      approval: (_subject, a) => index.approval(a.resource, a.right, a.digest, NOW),
    },
  };
}

Deno.test("decide() applies hardline, run ceiling, mode, protected paths, rules, capabilities and default in that order", () => {
  const names = new Set<string>();
  const mismatches: string[] = [];
  for (const c of CASES) {
    assert.ok(!names.has(c.name), `duplicate case name ${c.name}`);
    names.add(c.name);
    const got = decide({ pid: PID }, c.action, context(c), layers(c));
    if (got.effect !== c.expected.effect || got.reason !== c.expected.reason) {
      mismatches.push(
        `${c.name}: got ${got.effect} ${got.reason}, want ${c.expected.effect} ${c.expected.reason}`,
      );
    }
    // The reason names its layer.
    const prefix = got.reason.split(":")[0];
    assert.equal(
      got.layer,
      prefix === "run"
        ? "run"
        : prefix === "mode"
        ? "mode"
        : prefix === "protected"
        ? "protected"
        : prefix === "rule"
        ? "rule"
        : prefix === "cap"
        ? "cap"
        : prefix === "hardline"
        ? "hardline"
        : "default",
      `${c.name}: layer ${got.layer} does not match reason ${got.reason}`,
    );
  }
  assert.deepEqual(mismatches, []);
});

Deno.test("decide() names the capability a ceiling ask capped, and none when nothing decided", () => {
  const capped = decide(
    { pid: PID },
    del("src/a.ts"),
    context({ mode: "workspace-write", denies: [], wall: false }),
    layers({ caps: [ALLOW_ALL_DELETE] }),
  );
  assert.deepEqual(capped, {
    effect: "ask",
    reason: "mode:workspace-write",
    layer: "mode",
    capability: ALLOW_ALL_DELETE.id,
  });
  const fallthrough = decide(
    { pid: PID },
    read("src/a.ts"),
    context({ mode: "full-access", denies: [], wall: false }),
    layers({ caps: [] }),
  );
  assert.deepEqual(fallthrough, { effect: "deny", reason: "default", layer: "default" });
});

Deno.test("decide() run deny shell:rm * refuses rm with a path argument (attack: rm -rf /tmp/x slips past a * that stops at /)", () => {
  for (const argv of [["rm", "x"], ["rm", "-rf", "/tmp/x"], ["rm", "-rf", "src/a"]]) {
    const got = decide(
      { pid: PID },
      shell(...argv),
      context({ mode: "full-access", denies: ["shell:rm *"], wall: false }),
      layers({ caps: [ALLOW_SHELL] }),
    );
    assert.deepEqual(
      { effect: got.effect, reason: got.reason },
      { effect: "deny", reason: "run:1" },
      `argv ${JSON.stringify(argv)}`,
    );
  }
});

Deno.test("parseRunDeny() parses TYPE[.RIGHT]:GLOB and rejects anything else with ValidationError", () => {
  const parsed = parseRunDeny("fs.write:secrets/**");
  assert.equal(parsed.source, "fs.write:secrets/**");
  assert.equal(parsed.type, "fs");
  assert.equal(parsed.right, "write");
  assert.equal(parsed.glob.test("secrets/a/b"), true);
  assert.equal(parsed.glob.test("src/a"), false);
  const any = parseRunDeny("net:*");
  assert.equal(any.type, "net");
  assert.equal(any.right, undefined);
  for (
    const bad of [
      "",
      "secrets/**",
      "fs.write:",
      "disk:secrets/**",
      "fs.WRITE:x",
      "FS:x",
      ":x",
      "fs.:x",
      " fs:x",
    ]
  ) {
    assert.throws(
      () => parseRunDeny(bad),
      (error: unknown) => {
        assert.ok(error instanceof ValidationError, `${JSON.stringify(bad)} threw ${error}`);
        assert.equal(error.code, "validation_failed");
        assert.ok(error.message.includes(JSON.stringify(bad)), error.message);
        assert.match(error.message, /TYPE\[\.RIGHT\]:GLOB/);
        return true;
      },
      `${JSON.stringify(bad)} should be rejected`,
    );
  }
});

Deno.test("parseMode() accepts the canonical names and the aliases edit and full, and rejects unknown modes", () => {
  const cases: [string, ModeName][] = [
    ["read-only", "read-only"],
    ["plan", "plan"],
    ["workspace-write", "workspace-write"],
    ["full-access", "full-access"],
    ["edit", "workspace-write"],
    ["full", "full-access"],
  ];
  for (const [name, mode] of cases) assert.equal(parseMode(name), mode, name);
  for (const bad of ["", "yolo", "Full", "EDIT", "full-acess", "toString", "__proto__"]) {
    assert.throws(
      () => parseMode(bad),
      (error: unknown) => {
        assert.ok(error instanceof ValidationError, `${JSON.stringify(bad)} threw ${error}`);
        assert.ok(error.message.includes(JSON.stringify(bad)), error.message);
        assert.match(error.message, /read-only, plan, workspace-write \(edit\) or full-access/);
        return true;
      },
    );
  }
});

Deno.test("parseRunDeny() rejects a right its type does not know (attack: a typo'd --deny fs.wrte:secrets/** silently denies nothing)", () => {
  for (const bad of ["fs.wrte:secrets/**", "fs.execute:**", "net.read:*", "shell.write:rm *"]) {
    assert.throws(() => parseRunDeny(bad), ValidationError, JSON.stringify(bad));
  }
  assert.equal(parseRunDeny("shell.execute:rm *").right, "execute");
  assert.equal(parseRunDeny("net.connect:*").right, "connect");
});
