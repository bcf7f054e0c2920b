import assert from "node:assert/strict";
import { compileGlob, globSet, PROTECTED_GLOBS, SECRET_GLOBS } from "./path_glob.ts";

Deno.test("compileGlob() matches segments with *, any depth with **, and nothing across a slash with ?", () => {
  const cases: [string, string, boolean][] = [
    ["*.ts", "a.ts", true],
    ["*.ts", "src/a.ts", false],
    ["**/*.ts", "a.ts", true],
    ["**/*.ts", "src/deep/a.ts", true],
    ["src/**", "src/a/b", true],
    ["src/**", "srcx/a", false],
    ["a?c", "abc", true],
    ["a?c", "a/c", false],
    ["secrets/**", "secrets/x", true],
    ["a.b", "axb", false],
    ["(x)", "(x)", true],
  ];
  for (const [glob, path, expected] of cases) {
    assert.equal(compileGlob(glob).test(path), expected, `${glob} ~ ${path}`);
  }
  assert.throws(() => compileGlob(""), TypeError);
});

Deno.test("protected and secret globs match at any depth and regardless of case (stricter only)", () => {
  const protectedGlobs = PROTECTED_GLOBS.map((g) => compileGlob(g));
  const secret = SECRET_GLOBS.map((g) => compileGlob(g));
  const hit = (globs: typeof secret, path: string) => globs.some((g) => g.test(path));
  for (
    const path of [
      ".git",
      ".git/config",
      "pkg/.git/hooks/pre-commit",
      "a/b/.GIT/HEAD",
      ".gitmodules",
      "sub/.gitmodules",
      ".libos",
      ".libos/policy.jsonc",
    ]
  ) {
    assert.ok(hit(protectedGlobs, path), path);
  }
  for (const path of [".gitignore", "src/git.ts", "x.git"]) {
    assert.ok(!hit(protectedGlobs, path), path);
  }
  for (
    const path of [
      ".env",
      ".env.local",
      "deploy/.ENV",
      "key.pem",
      "ssh/id_rsa",
      ".npmrc",
      "a/.netrc",
      ".git-credentials",
    ]
  ) {
    assert.ok(hit(secret, path), path);
  }
  for (const path of ["env.ts", "src/environment.md", "pem.txt"]) {
    assert.ok(!hit(secret, path), path);
  }
});

Deno.test("compileGlob() answers pathological paths and keys without a regular expression (attack: catastrophic backtracking)", () => {
  // Many stars against long inputs that almost match: a backtracking regex takes time
  // polynomial in the input to the power of the stars; this matcher is O(pattern × input).
  const path = `${"a/".repeat(2000)}c`;
  assert.equal(compileGlob("**/a/**/a/**/a/**/a/**/b").test(path), false);
  assert.equal(compileGlob("**/a/**/a/**/c").test(path), true);
  const key = `${"a".repeat(4000)}c`;
  const loose = (g: string) => compileGlob(g, { segments: false });
  assert.equal(loose("*a*a*a*a*a*a*b").test(key), false);
  assert.equal(loose("*a*a*c").test(key), true);
  assert.equal(loose("rm *").test("rm -rf /tmp/x"), true);
  assert.equal(compileGlob("secrets/**").test("secrets"), true, "stricter: the directory too");
  assert.equal(compileGlob("**/.git").test("x.git"), false);
  assert.equal(compileGlob("src/*.TS").test("src/a.ts"), true, "case-insensitive");
});

Deno.test("globSet().match() names the first matching glob in order, as trying each would (its name and extension lookups change no answer)", () => {
  const sources = [
    "**/secrets/*/**",
    "**/*.env",
    "**/.env*",
    "**/credentials",
    "**/*.tfvars.json",
    "**/*.json",
    "**/.aws/*/**",
    "**/credentials.json",
    "src/**",
    "**/id_*",
    "**/*.key",
    "**/.git",
  ];
  const set = globSet(sources);
  const compiled = sources.map((s) => compileGlob(s));
  const paths = [
    "secrets/prod.env",
    "a/.env",
    "prod.env",
    ".ENV.local",
    ".aws/credentials",
    "credentials",
    "x/credentials.json",
    "infra/terraform.tfvars.json",
    "src/id_rsa",
    "src/server.key",
    "docs/readme.md",
    "x.git",
    "repo/.GIT",
    "key",
    "pem",
    "",
    "a//b",
  ];
  for (const path of paths) {
    assert.equal(
      set.match(path)?.source,
      compiled.find((g) => g.test(path))?.source,
      path,
    );
  }
});
