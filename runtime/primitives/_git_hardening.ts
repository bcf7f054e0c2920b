/**
 * Git hardening for shell runs (DESIGN §2, the external-effects issue). A repository is data an
 * attacker may have written — a vendored `pkg/.git/config`, a `.gitattributes` naming a filter —
 * and git runs programs named by its configuration: `core.fsmonitor` on every status, filter
 * drivers on add and diff, diff drivers and `diff.external` on diff, aliases starting with `!`,
 * pagers, editors, credential helpers, hooks.
 *
 * What every run gets, for every git it starts (nested ones in `sh -c` or `make` included), through
 * `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` — git's environment form of `-c`,
 * which outranks every configuration file:
 * - fixed overrides: `core.fsmonitor=false`, `core.hooksPath=/dev/null`, `core.pager=cat`,
 *   `core.editor=false`, `sequence.editor=false`, `core.askPass=`, `credential.helper=`,
 *   `protocol.ext.allow=never`, `safe.bareRepository=explicit`, `commit.gpgSign=false`,
 *   `tag.gpgSign=false`;
 * - per repository: every key that names a program in the configuration of the repository
 *   around the run's directory and of every repository found below it (`findRepositories`) is
 *   overridden — `filter.*.clean|smudge|process` and `diff.*.textconv` with nothing (no filter,
 *   no conversion: the command still works), `diff.external`, `diff.*.command`, `merge.*.driver`,
 *   `alias.*` and the like with an empty program (git refuses to run it, loudly). A key the
 *   tables do not know whose variable is named like a program (`…cmd`, `…command`, `…program`,
 *   `…helper`, `…hook`, …) is neutralised too. A `.git` symlink counts as a repository (git
 *   follows it).
 *
 * `diff.external=` is not among the fixed overrides: git 2.39 treats an empty value as a program
 * named "" and fails every diff. It is overridden where a repository sets it.
 *
 * The environment also carries `GIT_CONFIG_NOSYSTEM=1` and `GIT_CONFIG_GLOBAL` naming libos's own
 * file (a default commit identity, nothing else; HOME is a scratch directory), so repository files
 * are the only configuration git reads besides ours.
 *
 * @module
 */
import { boundedWalk } from "./_walk.ts";
import { join } from "node:path";
import type { FilesystemProvider } from "../providers/filesystem.ts";

/** The overrides every run gets. */
export const GIT_FIXED_CONFIG: readonly (readonly [string, string])[] = Object.freeze(
  [
    ["core.fsmonitor", "false"],
    ["core.hooksPath", "/dev/null"],
    ["core.pager", "cat"],
    ["core.editor", "false"],
    ["sequence.editor", "false"],
    ["core.askPass", ""],
    ["credential.helper", ""],
    ["protocol.ext.allow", "never"],
    ["safe.bareRepository", "explicit"],
    // Signing runs gpg.program or gpg.ssh.defaultKeyCommand: never on an agent's commit or tag.
    ["commit.gpgSign", "false"],
    ["tag.gpgSign", "false"],
  ] as const,
);

/** How many repositories one run's scan reads the configuration of. */
export const GIT_REPOSITORIES_MAX = 64;

/** How many overrides one run may carry (a configuration with more is refused). */
export const GIT_OVERRIDES_MAX = 2000;

/** Keys `section.variable` (no subsection) that name a program, and their neutral value. */
const PLAIN: Readonly<Record<string, string>> = Object.freeze({
  "diff.external": "",
  "core.sshcommand": "",
  "core.gitproxy": "",
  "core.alternaterefscommand": "",
  "core.fsmonitor": "false",
  "core.hookspath": "/dev/null",
  "core.pager": "cat",
  "core.editor": "false",
  "core.askpass": "",
  "sequence.editor": "false",
  "credential.helper": "",
  "gpg.program": "false",
  "web.browser": "",
  "ssh.variant": "ssh",
  "trace2.normaltarget": "false",
  "trace2.perftarget": "false",
  "trace2.eventtarget": "false",
  "sendemail.sendmailcmd": "",
  "sendemail.smtpserver": "",
  "sendemail.tocmd": "",
  "sendemail.cccmd": "",
  "sendemail.headercmd": "",
  "interactive.difffilter": "",
  "imap.tunnel": "",
  "instaweb.httpd": "",
  "uploadpack.packobjectshook": "",
});

/** Keys `section.<name>.variable` that name a program, by `section.variable`. */
const NAMED: Readonly<Record<string, string>> = Object.freeze({
  "filter.clean": "",
  "filter.smudge": "",
  "filter.process": "",
  "diff.textconv": "",
  "diff.command": "",
  "merge.driver": "",
  "credential.helper": "",
  "gpg.program": "false",
  "difftool.cmd": "",
  "mergetool.cmd": "",
  "man.cmd": "",
  "browser.cmd": "",
  "remote.uploadpack": "",
  "remote.receivepack": "",
  "remote.proxy": "",
  "http.proxy": "",
  "submodule.update": "checkout",
  "gpg.defaultkeycommand": "",
  "tar.command": "",
  "difftool.path": "",
  "mergetool.path": "",
  "man.path": "",
  "browser.path": "",
  "guitool.cmd": "",
  "sendemail.sendmailcmd": "",
  "sendemail.smtpserver": "",
  "sendemail.tocmd": "",
  "sendemail.cccmd": "",
  "sendemail.headercmd": "",
});

/**
 * Variable names that name a program whatever their section: a key a future git (or a table
 * above) does not know is neutralised when its variable ends like one of these.
 */
const PROGRAM_SUFFIXES: readonly string[] = Object.freeze([
  "cmd",
  "command",
  "program",
  "helper",
  "driver",
  "editor",
  "tunnel",
  "httpd",
  "textconv",
  "filter",
  "hook",
  "askpass",
]);

/** Sections every variable of which names a program (`alias.x`, `pager.log`). */
const WHOLE: Readonly<Record<string, string>> = Object.freeze({
  alias: "",
  pager: "false",
});

/**
 * The neutral value for a configuration key a repository sets, when the key names a program;
 * undefined for a harmless key. Section and variable names compare case-insensitively (git's
 * rule), the subsection exactly.
 */
export function neutralValue(key: string): string | undefined {
  const first = key.indexOf(".");
  const last = key.lastIndexOf(".");
  if (first <= 0 || last === key.length - 1) return undefined;
  const section = key.slice(0, first).toLowerCase();
  const variable = key.slice(last + 1).toLowerCase();
  if (Object.hasOwn(WHOLE, section)) return WHOLE[section];
  const shape = `${section}.${variable}`;
  const table = first === last ? PLAIN : NAMED;
  if (Object.hasOwn(table, shape)) return table[shape];
  // Not in the tables: a variable named like a program is neutralised anyway (deny by shape).
  return PROGRAM_SUFFIXES.some((suffix) => variable.endsWith(suffix)) ? "" : undefined;
}

/**
 * The keys of `git config --list --null --name-only --show-scope` output, from repository files
 * only (`local`, `worktree`; a `command` scope entry is ours, and system and global are off).
 */
export function repositoryKeys(output: string): string[] {
  const parts = output.split("\0");
  const keys: string[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const scope = parts[i];
    const key = parts[i + 1];
    if (key && (scope === "local" || scope === "worktree")) keys.push(key);
  }
  return keys;
}

/** The overrides for a set of repository keys: the fixed ones, then each neutralised key once. */
export function gitOverrides(keys: Iterable<string>): [string, string][] {
  const out: [string, string][] = GIT_FIXED_CONFIG.map(([k, v]) => [k, v]);
  const seen = new Set(out.map(([k]) => canonicalKey(k)));
  for (const key of keys) {
    const value = neutralValue(key);
    const canonical = canonicalKey(key);
    if (value === undefined || seen.has(canonical)) continue;
    seen.add(canonical);
    out.push([key, value]);
  }
  return out;
}

/** A key as git compares it: section and variable lower-cased, the subsection as written. */
function canonicalKey(key: string): string {
  const first = key.indexOf(".");
  const last = key.lastIndexOf(".");
  if (first === last) return key.toLowerCase();
  return `${key.slice(0, first).toLowerCase()}${key.slice(first, last)}${
    key.slice(last).toLowerCase()
  }`;
}

/** The environment form of the overrides (`GIT_CONFIG_COUNT` and its pairs). */
export function gitConfigEnv(overrides: readonly (readonly [string, string])[]): Record<
  string,
  string
> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(overrides.length) };
  for (const [i, [key, value]] of overrides.entries()) {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  }
  return env;
}

/** The repositories whose configuration a run can reach. */
export interface RepositoryScan {
  /** Work-tree directories (each has a `.git` directory or file), absolute. */
  readonly repositories: string[];
  /** True when the walk below the run's directory stopped at its budget. */
  readonly partial: boolean;
  /**
   * Directories that could not be looked at (no permission, a name the host cannot spell back):
   * a repository there would be missed, so the caller treats each as a gap.
   */
  readonly unreadable: string[];
}

/** How many directories the walk below a run's directory visits at most. */
export const REPOSITORY_SCAN_BUDGET = 20_000;

/**
 * The repository around `start` (the nearest directory upwards with a `.git`, wherever it is)
 * and every repository below it, without following symbolic links and without entering `.git`
 * directories, visiting at most `budget` directories. What cannot be looked at is reported, not
 * taken for "no repository".
 */
export function findRepositories(
  fs: FilesystemProvider,
  start: string,
  budget = REPOSITORY_SCAN_BUDGET,
): RepositoryScan {
  const repositories: string[] = [];
  const unreadable: string[] = [];
  const hasGit = (dir: string) => {
    try {
      // Followed: git takes a `.git` symlink (to a directory or a gitdir file) as its own.
      const facts = fs.stat(join(dir, ".git"));
      return facts.isDirectory || facts.isFile;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory)) {
        unreadable.push(dir);
      }
      return false;
    }
  };
  for (let dir = start;; dir = join(dir, "..")) {
    if (hasGit(dir)) {
      repositories.push(dir);
      break;
    }
    if (dir === "/") break;
  }
  const { partial } = boundedWalk(fs, start, budget, (child, entry) => {
    if (!entry.isDirectory || entry.isSymlink || entry.name === ".git") return false;
    if (entry.name.includes("\uFFFD")) {
      // Not UTF-8: the host cannot name it back to look inside.
      unreadable.push(child);
      return false;
    }
    if (hasGit(child) && !repositories.includes(child)) repositories.push(child);
    return true;
  }, (dir) => unreadable.push(dir));
  return { repositories, partial, unreadable };
}
