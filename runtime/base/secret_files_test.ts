import assert from "node:assert/strict";
import { testCapability } from "../../tests/authority_fixture.ts";
import { type Action, compileProtection, decide, type Layers } from "../authority/decide.ts";
import type { ModeName } from "../authority/modes.ts";
import { SECRET_GLOBS } from "./path_glob.ts";
import { SECRET_FILES } from "./secret_files.ts";

/**
 * Paths each row must catch: workspace-relative, nested and in another case, as an agent would
 * name them. The first path of a row is matched by that row first (its reason names it).
 */
const EXAMPLES: Readonly<Record<string, readonly string[]>> = {
  "**/.env*": [".env", "app/.env.local", ".ENVRC"],
  "**/*.pem": ["certs/server.pem", "KEY.PEM"],
  "**/id_*": ["id_rsa", "deploy/ssh/id_ed25519"],
  "**/.npmrc": [".npmrc", "packages/web/.npmrc"],
  "**/.netrc": [".netrc"],
  "**/.git-credentials": [".git-credentials"],
  "**/.aws/*/**": [".aws/credentials", "home/.aws/sso/cache/token.json", ".AWS/config"],
  "**/.config/gcloud/*/**": [
    ".config/gcloud/credentials.db",
    "home/.config/gcloud/legacy_credentials/me/adc.json",
  ],
  "**/.azure/*/**": [".azure/msal_token_cache.json"],
  "**/.kube/config": [".kube/config", "home/.KUBE/Config"],
  "**/kubeconfig": ["ops/kubeconfig"],
  "**/*.kubeconfig": ["ops/prod.kubeconfig"],
  "**/.docker/config.json": [".docker/config.json"],
  "**/.terraform.d/credentials.tfrc.json": [".terraform.d/credentials.tfrc.json"],
  "**/.config/gh/hosts.yml": [".config/gh/hosts.yml"],
  "**/.config/hub": [".config/hub"],
  "**/doctl/config.yaml": [".config/doctl/config.yaml"],
  "**/.cargo/credentials.toml": [".cargo/credentials.toml"],
  "**/application_default_credentials.json": ["gcp/application_default_credentials.json"],
  "**/client_secret*.json": ["client_secret_123-abc.apps.googleusercontent.com.json"],
  "**/secrets/*/**": ["secrets/token.txt", "config/secrets/db/password", "SECRETS/x"],
  "**/.secrets/*/**": [".secrets/api"],
  "**/.ssh/*/**": [".ssh/authorized_keys", "home/.ssh/config"],
  "**/.gnupg/*/**": [".gnupg/private-keys-v1.d/ABCD.key"],
  "**/*.key": ["config/private.key", "config/master.key", "TLS/Server.KEY"],
  "**/*.keypair": ["deploy.keypair"],
  "**/*.p12": ["certs/client.p12"],
  "**/*.pfx": ["signing/code.pfx"],
  "**/*.pkcs12": ["me.pkcs12"],
  "**/*.p8": ["AuthKey_ABC123.p8"],
  "**/*.jks": ["android/release.jks"],
  "**/*.keystore": ["android/app/debug.keystore"],
  "**/*.keyring": ["login.keyring"],
  "**/*.ppk": ["putty/server.ppk"],
  "**/*.kdbx": ["vault/passwords.kdbx"],
  "**/*.kdb": ["old/passwords.kdb"],
  "**/*.keychain": ["login.keychain"],
  "**/*.agilekeychain": ["1Password.agilekeychain"],
  "**/*.psafe3": ["pwsafe.psafe3"],
  "**/*.kwallet": ["kdewallet.kwallet"],
  "**/*.keytab": ["krb5/http.keytab"],
  "**/*.ovpn": ["vpn/office.ovpn"],
  "**/otr.private_key": [".purple/otr.private_key"],
  "**/secring.*": ["gpg/secring.gpg"],
  "**/_netrc": ["_netrc"],
  "**/.pgpass": [".pgpass"],
  "**/.my.cnf": [".my.cnf"],
  "**/.mylogin.cnf": [".mylogin.cnf"],
  "**/.htpasswd": ["public/.htpasswd"],
  "**/.pypirc": [".pypirc"],
  "**/.dockercfg": [".dockercfg"],
  "**/.s3cfg": [".s3cfg"],
  "**/.boto": [".boto"],
  "**/.vault-token": [".vault-token"],
  "**/.databrickscfg": [".databrickscfg"],
  "**/*.tfvars": ["infra/terraform.tfvars", "infra/prod.auto.tfvars"],
  "**/*.tfvars.json": ["infra/terraform.tfvars.json"],
  "**/*.tfstate": ["infra/terraform.tfstate"],
  "**/*.tfstate.backup": ["infra/terraform.tfstate.backup"],
  "**/credentials": [".gem/credentials", "credentials"],
  "**/credentials.json": ["credentials.json", "keys/Credentials.JSON"],
  "**/credentials.xml": ["jenkins/credentials.xml"],
  "**/credentials.db": ["credentials.db"],
  "**/secrets.yml": ["config/secrets.yml"],
  "**/secrets.yaml": ["helm/secrets.yaml"],
  "**/secrets.json": ["secrets.json"],
  "**/secrets.toml": [".streamlit/secrets.toml"],
  "**/secret_token.rb": ["config/initializers/secret_token.rb"],
  "**/sftp-config.json": ["sftp-config.json"],
  "**/*.env": ["deploy/prod.env", "docker/web.ENV"],
};

/**
 * Paths that must NOT ask — each a false positive the table avoids on purpose (a prompt costs the
 * user), with why.
 */
const BENIGN: readonly (readonly [string, string])[] = [
  ["README.md", "ordinary documentation"],
  ["src/app.ts", "ordinary code"],
  ["src/keyboard.ts", "`*.key` is an extension, not a word inside a name"],
  ["docs/keys.md", "documentation about keys"],
  ["src/key.ts", "code named key"],
  ["src/auth/credentials.ts", "code about credentials (`credentials` matches an exact name)"],
  ["credentials_view.py", "code about credentials"],
  ["docs/credentials.md", "documentation about credentials"],
  ["src/secrets.ts", "code named secrets (`secrets.yml` etc. are data files)"],
  ["docs/secrets.md", "documentation about secrets"],
  ["secrets", "the secrets folder itself: listing it shows names, not secrets"],
  ["src/secret_scan.ts", "code about secrets"],
  ["certs/server.crt", "a certificate is public"],
  ["certs/ca.cer", "a certificate is public"],
  ["release/app.tar.gz.asc", "a detached signature (a private key block asks by content)"],
  ["src/env.ts", "code reading the environment, not a dotenv file"],
  ["environment.yml", "a conda environment, not a dotenv file"],
  ["infra/main.tf", "Terraform code, not its variables or state"],
  ["infra/variables.tf", "Terraform variable declarations, not their values"],
  [".aws-sam/build.toml", "SAM build output, not the .aws folder"],
  [".aws", "the .aws folder itself"],
  ["kube/deployment.yaml", "a manifest, not a kubeconfig"],
  [".kube/cache/discovery/x.json", "kubectl's discovery cache"],
  ["docker/config.json", "not under .docker"],
  ["src/keystore.ts", "code named keystore"],
  ["tokenizer.py", "a tokenizer"],
  ["package.json", "a manifest"],
  [".github/workflows/ci.yml", "CI configuration"],
  ["src/p12_parser.ts", "code about PKCS#12"],
];

/** A capability view that allows everything: only the ceiling can ask. */
function allowAll(): Layers {
  const capability = testCapability(1, {
    resource: { type: "fs", path: ".", scope: "subtree" },
    rights: ["read", "write"],
    effect: "allow",
  });
  return { capabilities: { match: () => ({ effect: "allow", capability }) } };
}

const MODES: readonly ModeName[] = ["workspace-write", "full-access"];

function decideOn(mode: ModeName, path: string, right: "read" | "write") {
  const action: Action = { resource: { type: "fs", path }, right };
  return decide(
    { pid: "pid_000000000001" },
    action,
    { mode, denies: [], wall: false, protection: compileProtection() },
    allowAll(),
  );
}

for (const row of SECRET_FILES) {
  const paths = EXAMPLES[row.glob] ?? [];
  Deno.test(`secret file ${row.glob} (${row.why}; from ${row.source}): reading and writing ${paths.join(", ")} ask under a grant that allows them`, () => {
    assert.ok(paths.length > 0, `${row.glob} has no example path in this test`);
    for (const mode of MODES) {
      for (const [k, path] of paths.entries()) {
        for (const right of ["read", "write"] as const) {
          const decision = decideOn(mode, path, right);
          assert.equal(decision.effect, "ask", `${mode} ${right} ${path}`);
          assert.match(decision.reason, /^protected:/, `${mode} ${right} ${path}`);
          // The row's first example is named by the row itself: its reason is precise.
          if (k === 0) assert.equal(decision.reason, `protected:${row.glob}`, path);
        }
      }
    }
  });
}

Deno.test("SECRET_FILES: every row has a test path, a reason and a source; no glob twice; SECRET_GLOBS is its globs", () => {
  const globs = SECRET_FILES.map((r) => r.glob);
  assert.deepEqual([...SECRET_GLOBS], globs);
  assert.equal(new Set(globs.map((g) => g.toLowerCase())).size, globs.length, "a duplicate glob");
  assert.deepEqual(Object.keys(EXAMPLES).sort(), [...globs].sort(), "rows and examples differ");
  for (const row of SECRET_FILES) {
    assert.ok(row.why.length > 5 && row.source.length > 3, row.glob);
  }
  for (const glob of [".env*", "*.pem", "id_*", ".npmrc", ".netrc", ".git-credentials"]) {
    assert.ok(globs.includes(`**/${glob}`), `DESIGN §2 promises ${glob}`);
  }
});

for (const [path, why] of BENIGN) {
  Deno.test(`secret files: ${path} is not secret-bearing (${why}) — reading and writing it do not ask`, () => {
    for (const mode of MODES) {
      for (const right of ["read", "write"] as const) {
        assert.deepEqual(
          decideOn(mode, path, right),
          {
            effect: "allow",
            reason: "cap:cap_000000000001",
            layer: "cap",
            capability: "cap_000000000001",
          },
          `${mode} ${right} ${path}`,
        );
      }
    }
  });
}
