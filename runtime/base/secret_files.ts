/**
 * What counts as a secret-bearing file, by path (DESIGN §2): one row per glob, with why it is
 * secret and which scanner's default rules it comes from. Reading one asks even under a broad
 * read grant, writing one asks in every mode that would otherwise allow it (`decide.ts`), and
 * the `--yes` shield masks every one inside the OS wall (`primitives/_shield.ts`).
 *
 * Globs are matched case-insensitively on canonical workspace-relative paths (`*` within a
 * segment, `**` any number of segments). The sources, read and re-expressed as globs (no
 * configuration copied): gitleaks' default config (its one path rule, `pkcs12-file`), the
 * "sensitive file" signatures of gitrob and shhgit, the key headers of detect-secrets and
 * pre-commit's `detect-private-key`, and the documented credential files of the tools
 * themselves (marked `libos`). What content alone gives away is `secret_scan.ts`'s concern.
 *
 * Chosen deliberately, because a false positive costs the user a prompt:
 * - exact names, not words: `credentials` and `credentials.json` ask, `credentials.ts` and
 *   `credentials_view.py` (code about credentials) do not; likewise `secrets.yml`, not
 *   `secrets.ts`;
 * - a secrets folder's *files* ask (`secrets/x`, at any depth), the folder itself does not, so
 *   listing it does not prompt;
 * - public material does not ask: certificates (`*.crt`, `*.cer`), `*.asc` (signatures and
 *   public keys far more often than exported private keys — a private key block is caught by
 *   its content), `.ssh/*.pub` is the exception that `.ssh/` and DESIGN's `id_*` bring along.
 *
 * @module
 */

/** One kind of secret-bearing file. */
export interface SecretFileRule {
  /** The glob, e.g. `**\/*.p12`. */
  readonly glob: string;
  /** Why such a file is secret (what it holds, or what writing it would do). */
  readonly why: string;
  /** Where the rule comes from: a scanner's rule or signature, DESIGN §2, or `libos`. */
  readonly source: string;
}

const GITROB = "gitrob / shhgit signatures";

/**
 * Every secret-bearing file form, most specific first (the first match names the reason
 * `protected:<glob>`).
 */
export const SECRET_FILES: readonly SecretFileRule[] = Object.freeze([
  // DESIGN §2's promise, kept as written.
  {
    glob: "**/.env*",
    why: "dotenv files: API keys and database passwords for the environment",
    source: `DESIGN §2; ${GITROB} (.env)`,
  },
  {
    glob: "**/*.pem",
    why: "PEM keys, and certificate bundles that carry their private key",
    source: `DESIGN §2; ${GITROB}`,
  },
  {
    glob: "**/id_*",
    why: "SSH private keys (id_rsa, id_ed25519, …)",
    source: `DESIGN §2; ${GITROB} (*_rsa, *_ed25519, …)`,
  },
  { glob: "**/.npmrc", why: "npm registry auth tokens", source: `DESIGN §2; ${GITROB}` },
  {
    glob: "**/.netrc",
    why: "logins and passwords curl, git and ftp send to hosts",
    source: `DESIGN §2; ${GITROB}`,
  },
  {
    glob: "**/.git-credentials",
    why: "git's credential-store helper keeps tokens here in plain text",
    source: "DESIGN §2; shhgit",
  },
  // Cloud CLIs' credential folders (before the generic names below, for a precise reason).
  {
    glob: "**/.aws/*/**",
    why:
      "AWS CLI access keys, SSO and CLI token caches; config's credential_process runs a program",
    source: `${GITROB} (aws/credentials); libos`,
  },
  {
    glob: "**/.config/gcloud/*/**",
    why: "gcloud credentials.db, access_tokens.db, legacy_credentials",
    source: `${GITROB} (credentials.db); libos`,
  },
  {
    glob: "**/.azure/*/**",
    why: "Azure CLI token caches (msal_token_cache.json, accessTokens.json)",
    source: "libos",
  },
  { glob: "**/.kube/config", why: "kubeconfig: cluster client keys and tokens", source: "libos" },
  { glob: "**/kubeconfig", why: "a kubeconfig under its usual name", source: "libos" },
  { glob: "**/*.kubeconfig", why: "a kubeconfig under its usual suffix", source: "libos" },
  {
    glob: "**/.docker/config.json",
    why: "Docker registry auths; its credHelpers name programs docker runs",
    source: "libos",
  },
  {
    glob: "**/.terraform.d/credentials.tfrc.json",
    why: "Terraform Cloud / Enterprise API tokens",
    source: "libos",
  },
  { glob: "**/.config/gh/hosts.yml", why: "GitHub CLI OAuth tokens", source: "libos" },
  { glob: "**/.config/hub", why: "hub (GitHub CLI) OAuth token", source: GITROB },
  { glob: "**/doctl/config.yaml", why: "DigitalOcean API token", source: GITROB },
  {
    glob: "**/.cargo/credentials.toml",
    why: "crates.io publish token",
    source: "libos",
  },
  {
    glob: "**/application_default_credentials.json",
    why: "gcloud application-default credentials (a refresh token or a service-account key)",
    source: `${GITROB} (adc.json); libos`,
  },
  {
    glob: "**/client_secret*.json",
    why: "Google OAuth client secrets, as Google's console names the download",
    source: "libos",
  },
  // Folders whose files are secrets, whatever their names.
  {
    glob: "**/secrets/*/**",
    why: "anything kept in a secrets folder (Docker, Kubernetes, app conventions)",
    source: "libos (issue 20)",
  },
  { glob: "**/.secrets/*/**", why: "anything kept in a .secrets folder", source: "libos" },
  {
    glob: "**/.ssh/*/**",
    why: "SSH keys; authorized_keys and config grant or redirect access when written",
    source: `${GITROB} (ssh/config); libos`,
  },
  {
    glob: "**/.gnupg/*/**",
    why: "GnuPG private keys (private-keys-v1.d) and trust database",
    source: "libos",
  },
  // Keys and key containers.
  {
    glob: "**/*.key",
    why: "private keys (TLS server.key, Rails master.key, …)",
    source: `${GITROB} (key, keypair)`,
  },
  { glob: "**/*.keypair", why: "private key pairs", source: GITROB },
  {
    glob: "**/*.p12",
    why: "PKCS#12 bundles: a private key with its certificate",
    source: `gitleaks pkcs12-file; ${GITROB}`,
  },
  {
    glob: "**/*.pfx",
    why: "PKCS#12 bundles (Windows name)",
    source: `gitleaks pkcs12-file; ${GITROB}`,
  },
  { glob: "**/*.pkcs12", why: "PKCS#12 bundles", source: GITROB },
  { glob: "**/*.p8", why: "PKCS#8 private keys (Apple's AuthKey_*.p8)", source: "libos" },
  { glob: "**/*.jks", why: "Java keystores", source: GITROB },
  {
    glob: "**/*.keystore",
    why: "Java and Android keystores (signing keys)",
    source: `${GITROB} (keystore, keyring)`,
  },
  { glob: "**/*.keyring", why: "GNOME keyrings", source: `${GITROB} (keystore, keyring)` },
  {
    glob: "**/*.ppk",
    why: "PuTTY private keys",
    source: "libos (detect-secrets' PuTTY-User-Key-File header)",
  },
  { glob: "**/*.kdbx", why: "KeePass password databases", source: `${GITROB} (kdbx?)` },
  { glob: "**/*.kdb", why: "KeePass 1 password databases", source: `${GITROB} (kdbx?)` },
  { glob: "**/*.keychain", why: "Apple keychains", source: GITROB },
  { glob: "**/*.agilekeychain", why: "1Password vaults", source: GITROB },
  { glob: "**/*.psafe3", why: "Password Safe databases", source: GITROB },
  { glob: "**/*.kwallet", why: "KDE wallets", source: GITROB },
  { glob: "**/*.keytab", why: "Kerberos keytabs: long-term keys", source: "libos" },
  {
    glob: "**/*.ovpn",
    why: "OpenVPN client profiles, usually with an inline private key",
    source: GITROB,
  },
  { glob: "**/otr.private_key", why: "Pidgin OTR private key", source: GITROB },
  { glob: "**/secring.*", why: "GnuPG 1 secret keyrings (secring.gpg)", source: "libos" },
  // Credential and token files.
  { glob: "**/_netrc", why: ".netrc under its Windows name", source: GITROB },
  { glob: "**/.pgpass", why: "PostgreSQL passwords", source: GITROB },
  { glob: "**/.my.cnf", why: "MySQL client passwords", source: "libos" },
  { glob: "**/.mylogin.cnf", why: "MySQL login paths (obfuscated passwords)", source: "libos" },
  { glob: "**/.htpasswd", why: "Apache password hashes", source: GITROB },
  { glob: "**/.pypirc", why: "PyPI upload credentials", source: "libos" },
  { glob: "**/.dockercfg", why: "Docker registry auths (legacy file)", source: GITROB },
  { glob: "**/.s3cfg", why: "s3cmd access keys", source: GITROB },
  { glob: "**/.boto", why: "boto / gsutil access keys", source: GITROB },
  { glob: "**/.vault-token", why: "HashiCorp Vault CLI token", source: "libos" },
  { glob: "**/.databrickscfg", why: "Databricks CLI tokens", source: "libos" },
  {
    glob: "**/*.tfvars",
    why: "Terraform variables: provider credentials, passwords",
    source: `${GITROB} (terraform.tfvars)`,
  },
  {
    glob: "**/*.tfvars.json",
    why: "Terraform variables in JSON",
    source: `${GITROB} (terraform.tfvars)`,
  },
  {
    glob: "**/*.tfstate",
    why: "Terraform state: every resource attribute in plain text, secrets included",
    source: "libos",
  },
  { glob: "**/*.tfstate.backup", why: "Terraform state backups", source: "libos" },
  {
    glob: "**/credentials",
    why: "credential files under their tools' name (.gem/credentials, .cargo/credentials, …)",
    source: `${GITROB} (aws/credentials, gem/credentials)`,
  },
  {
    glob: "**/credentials.json",
    why: "service-account and OAuth key files (Google, Pulumi, …)",
    source: GITROB,
  },
  { glob: "**/credentials.xml", why: "Jenkins credentials", source: GITROB },
  { glob: "**/credentials.db", why: "gcloud credential database", source: GITROB },
  { glob: "**/secrets.yml", why: "Rails secrets", source: "libos" },
  { glob: "**/secrets.yaml", why: "application secrets (YAML)", source: "libos" },
  { glob: "**/secrets.json", why: ".NET user secrets and the like", source: "libos" },
  { glob: "**/secrets.toml", why: "Streamlit and similar app secrets", source: "libos" },
  {
    glob: "**/secret_token.rb",
    why: "Rails secret token (forges sessions)",
    source: GITROB,
  },
  { glob: "**/sftp-config.json", why: "SFTP connection passwords", source: GITROB },
  {
    glob: "**/*.env",
    why: "dotenv files by another name (prod.env, Docker env_file)",
    source: `libos, after ${GITROB} (.env)`,
  },
]);
