/**
 * The `--yes` shield (`runtime/primitives/_shield.ts`) with the secret-bearing file forms of
 * `runtime/base/secret_files.ts`: every file under a `secrets/` folder, cloud CLI credentials, key
 * containers — and what a symlink named like a secret leads to inside the workspace (`.env` →
 * `config/dev_settings`, `secrets` → `vault/`, `.aws` → `aws-creds/`), which a command reads
 * through the link. Each attack runs real commands in the wall beside an unshielded control.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { shieldMounts } from "../runtime/primitives/shell.ts";
import { hostFilesystem } from "../runtime/providers/filesystem.ts";
import { runWorkspaceScript, shellFixture, wallTestMode } from "./shell_fixture.ts";

const mode = wallTestMode();
const SECRET = "SECRET-files-5e1d";

/** Secret-bearing files by path (named, in folders, behind links) and innocent ones. */
function seed(ws: string): void {
  const put = (path: string, text: string) => {
    Deno.mkdirSync(join(ws, path, ".."), { recursive: true });
    Deno.writeTextFileSync(join(ws, path), text);
  };
  for (
    const path of [
      "secrets/token.txt",
      "config/secrets/db/password",
      ".aws/credentials",
      "config/private.key",
      "certs/client.p12",
      "infra/terraform.tfstate",
      ".kube/config",
      "deploy/prod.env",
    ]
  ) put(path, `${SECRET}\n`);
  put("README.md", "plain readme\n");
  put("src/keyboard.ts", "export const keys = 1;\n");
  // Innocent names, reached through links named like secrets.
  put("config/dev_settings", `${SECRET}\n`);
  Deno.symlinkSync("config/dev_settings", join(ws, ".env"));
  put("vault/token", `${SECRET}\n`);
  Deno.symlinkSync("vault", join(ws, "private"));
  Deno.mkdirSync(join(ws, "app"));
  Deno.symlinkSync("../vault", join(ws, "app", "secrets"));
  put("aws-creds/credentials", `${SECRET}\n`);
  Deno.symlinkSync("aws-creds", join(ws, ".AWS"));
  // Links that lead nowhere secret, or nowhere.
  Deno.symlinkSync("README.md", join(ws, "readme-link.md"));
  Deno.symlinkSync("missing", join(ws, ".env.local"));
}

Deno.test("shieldMounts() masks every secret-bearing form (secrets/ folders, cloud credentials, key containers, *.env) and what a link named like a secret leads to, and nothing innocent", () => {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "libos-shield-files-" }));
  try {
    seed(ws);
    const mounts = shieldMounts(hostFilesystem(), ws);
    assert.equal(mounts.incomplete, null);
    assert.deepEqual(
      [...mounts.masked].map((p) => p.slice(ws.length + 1)).sort(),
      [
        ".aws/credentials",
        "aws-creds/credentials",
        "certs/client.p12",
        "config/dev_settings",
        "config/private.key",
        "config/secrets/db/password",
        "deploy/prod.env",
        "infra/terraform.tfstate",
        ".kube/config",
        "secrets/token.txt",
        "vault/token",
      ].sort(),
    );
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
});

Deno.test({
  name:
    "Shield attack: shielded commands read no file under secrets/, no cloud credential, no key, nothing behind a link named like a secret; unshielded, the same command reads them all (control)",
  ignore: mode.ignore,
  fn: async () => {
    const script = [
      "cat secrets/token.txt config/secrets/db/password .aws/credentials .AWS/credentials",
      "cat config/private.key certs/client.p12 infra/terraform.tfstate .kube/config deploy/prod.env",
      "cat .env app/secrets/token 2>/dev/null",
      "grep -r SECRET- . 2>/dev/null",
      "cat README.md",
      "true",
    ].join("; ");
    await using shielded = await shellFixture({
      level: "always_allow",
      wall: true,
      extra: { shieldShell: true },
    });
    seed(shielded.ws);
    const r = await runWorkspaceScript(shielded, script);
    assert.equal(r.wall, true);
    assert.ok(!r.stdout.includes(SECRET), `no secret in ${JSON.stringify(r.stdout)}`);
    assert.match(r.stdout, /plain readme/, "the command ran");
    assert.equal(Deno.readTextFileSync(join(shielded.ws, "vault", "token")), `${SECRET}\n`);
    // Control: without the shield, the same command reads every one of them.
    await using open = await shellFixture({ level: "always_allow", wall: true });
    seed(open.ws);
    const c = await runWorkspaceScript(open, script);
    assert.ok(c.stdout.split(SECRET).length - 1 >= 12, `unshielded: ${c.stdout}`);
  },
});
