import assert from "node:assert/strict";
import { join } from "node:path";
import { StoreError } from "../base/errors.ts";
import { pgPassLookup, pgPassPath, readPgPass } from "./pg_pass.ts";

const KEY = { host: "db.example", port: "5432", database: "app", user: "alice" };

const LOOKUPS: readonly {
  readonly name: string;
  readonly text: string;
  readonly key?: typeof KEY;
  readonly password: string | undefined;
}[] = [
  { name: "an exact line", text: "db.example:5432:app:alice:s3cret\n", password: "s3cret" },
  { name: "wildcards", text: "*:*:*:alice:wild\n", password: "wild" },
  {
    name: "the first matching line wins",
    text: "db.example:5432:app:alice:first\n*:*:*:*:second\n",
    password: "first",
  },
  {
    name: "a line for another host, port, database or user does not match",
    text: "other:5432:app:alice:a\ndb.example:5433:app:alice:b\n" +
      "db.example:5432:other:alice:c\ndb.example:5432:app:bob:d\n",
    password: undefined,
  },
  {
    name: "comments and blank lines are skipped",
    text: "# *:*:*:*:no\n\n*:*:*:*:yes\n",
    password: "yes",
  },
  {
    name: "\\: and \\\\ are escapes, in the password too",
    text: "db.example:5432:app:alice:pa\\:ss\\\\word\n",
    password: "pa:ss\\word",
  },
  {
    name: "a colon in the password needs no escape after the fourth field",
    text: "db.example:5432:app:alice:a:b:c\n",
    password: "a:b:c",
  },
  { name: "CRLF line ends", text: "*:*:*:alice:crlf\r\n", password: "crlf" },
  {
    name: "a line with too few fields is skipped",
    text: "db.example:5432:s3cret\n",
    password: undefined,
  },
  {
    name: "an IPv6 host as written in the file",
    text: "\\:\\:1:5432:app:alice:v6\n",
    key: { ...KEY, host: "::1" },
    password: "v6",
  },
  {
    name: "an unknown user matches only a * user",
    text: "db.example:5432:app:alice:no\ndb.example:5432:app:*:any\n",
    key: { ...KEY, user: "" },
    password: "any",
  },
];

for (const row of LOOKUPS) {
  Deno.test(`pgPassLookup(): ${row.name}`, () => {
    assert.equal(pgPassLookup(row.text, row.key ?? KEY), row.password);
  });
}

Deno.test("pgPassPath(): PGPASSFILE, else ~/.pgpass, else none", () => {
  const env = (vars: Record<string, string>) => ({ get: (n: string) => vars[n] });
  assert.equal(pgPassPath(env({ PGPASSFILE: "/etc/pw", HOME: "/home/a" })), "/etc/pw");
  assert.equal(pgPassPath(env({ HOME: "/home/a" })), "/home/a/.pgpass");
  assert.equal(pgPassPath(env({})), undefined);
});

Deno.test("readPgPass(): a missing file is no password; a file others can read is refused with chmod 600, and its password never shown", () => {
  const dir = Deno.makeTempDirSync({ prefix: "libos-pgpass-" });
  try {
    const file = join(dir, "pgpass");
    assert.equal(readPgPass(file, KEY), undefined);
    Deno.writeTextFileSync(file, "*:*:*:*:never-shown\n");
    Deno.chmodSync(file, 0o644);
    let error: unknown;
    try {
      readPgPass(file, KEY);
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof StoreError);
    assert.equal(error.code, "store_io");
    assert.match(error.message, /can be read by others \(mode 644\); run "chmod 600/);
    assert.ok(!error.message.includes("never-shown"));
    Deno.chmodSync(file, 0o600);
    assert.equal(readPgPass(file, KEY), "never-shown");
    // A directory where the file should be is refused, not read.
    assert.throws(() => readPgPass(dir, KEY), /not a plain file/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
