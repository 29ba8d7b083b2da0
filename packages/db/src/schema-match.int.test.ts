import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { createTestDatabase, type TestDatabase } from "@roost/testkit";
import { compareDatabaseWithPrismaSchema, defaultSchemaPath } from "./schema-compare.test-support.js";

/**
 * Our migrations are hand-written SQL (DESIGN.md: `prisma migrate` cannot run
 * here), so this is what keeps them equal to prisma/schema.prisma: tables,
 * columns (type, nullability, default), primary keys, unique and plain
 * indexes (columns, order, method, operator class) and foreign keys (columns,
 * target, actions), names included. The expected side is parsed from
 * schema.prisma by Prisma's own parser, never copied by hand.
 */

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: "roost-schema-match" });
  await client.connect();
  return client;
}

/** Replaces exactly one match, so an edit that stops matching fails loudly instead of testing nothing. */
function replaceOnce(source: string, pattern: RegExp, replacement: string): string {
  const matches = source.match(new RegExp(pattern.source, `${pattern.flags.replace("g", "")}g`)) ?? [];
  if (matches.length !== 1) throw new Error(`expected one match of ${pattern} in schema.prisma, found ${matches.length}`);
  return source.replace(pattern, replacement);
}

describe("migrated database matches prisma/schema.prisma", () => {
  let db: TestDatabase;
  let client: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = await connect(db.url);
  });

  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  it("has exactly the tables, columns, keys, indexes and foreign keys schema.prisma declares", async () => {
    const { differences, compared } = await compareDatabaseWithPrismaSchema(client);
    // toEqual prints every difference line on failure.
    expect(differences).toEqual([]);

    // An empty diff only means something if the expected side was not empty:
    // every `model` block became a table and every kind of object was compared.
    const source = await readFile(defaultSchemaPath, "utf8");
    const modelBlocks = source.match(/^model\s+\w+\s*\{/gm) ?? [];
    expect(compared.tables).toBe(modelBlocks.length);
    expect(compared.tables).toBeGreaterThan(0);
    expect(compared.columns).toBeGreaterThan(compared.tables);
    expect(compared.primaryKeys).toBeGreaterThan(0);
    expect(compared.uniqueIndexes).toBeGreaterThan(0);
    expect(compared.indexes).toBeGreaterThan(0);
    expect(compared.foreignKeys).toBeGreaterThan(0);
  });

  it("derives its expectations from schema.prisma itself (edited copy against the same database)", async () => {
    let source = await readFile(defaultSchemaPath, "utf8");
    source = replaceOnce(source, /(\brole\s+String\s+)@default\("user"\)/, '$1@default("member")');
    source = replaceOnce(source, /model User \{\n/, "model User {\n  nickname String?\n");
    source = replaceOnce(source, /(@@index\(\[cidr\(ops: InetOps\)\], type: )Gist\)/, "$1SpGist)");
    source = replaceOnce(source, /@@unique\(\[userId, name\]\)/, "@@unique([name, userId])");
    const dir = await mkdtemp(path.join(os.tmpdir(), "roost-schema-"));
    try {
      const schemaPath = path.join(dir, "schema.prisma");
      await writeFile(schemaPath, source);
      const { differences } = await compareDatabaseWithPrismaSchema(client, { schemaPath });
      expect(differences).toEqual([
        expect.stringMatching(/^column "users"\."nickname": missing from the database/),
        expect.stringMatching(/^column "users"\."role": default expected 'member'::text, found 'user'::text$/),
        expect.stringMatching(/^index "blacklist_ranges_cidr_idx" on table "blacklist_ranges": expected index USING spgist .*, found index USING gist/),
        expect.stringMatching(/^index "rotating_proxies_name_user_id_key" on table "rotating_proxies": missing from the database/),
        expect.stringMatching(/^index "rotating_proxies_user_id_name_key" on table "rotating_proxies": in the database .* but not in schema\.prisma$/),
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

interface Mutation {
  name: string;
  sql: string;
  /** Exactly the differences the comparison must report for this change, nothing more. */
  expected: RegExp[];
}

/**
 * One change at a time, each inside a transaction that is rolled back, so
 * each change is seen alone against an otherwise matching database.
 */
const mutations: Mutation[] = [
  {
    name: "a dropped index",
    sql: `DROP INDEX "proxies_alive_user_id_id_idx"`,
    expected: [/^index "proxies_alive_user_id_id_idx" on table "proxies": missing from the database/],
  },
  {
    name: "a partial index built over every row",
    sql: `DROP INDEX "proxies_alive_user_id_country_id_idx";
          CREATE INDEX "proxies_alive_user_id_country_id_idx" ON "proxies" ("user_id", "country", "id", "reputation_label", "alive_protocols", "anonymity_level", "estimated_type", "response_time", "attempt")`,
    expected: [/^index "proxies_alive_user_id_country_id_idx" on table "proxies": expected .* WHERE alive, found .*"attempt"\)$/],
  },
  {
    name: "a partial index with another predicate",
    sql: `DROP INDEX "proxies_rated_user_id_reputation_score_id_idx";
          CREATE INDEX "proxies_rated_user_id_reputation_score_id_idx" ON "proxies" ("user_id", "reputation_score" DESC, "id") WHERE reputation_label <> 'poor'`,
    expected: [/^index "proxies_rated_user_id_reputation_score_id_idx" on table "proxies": expected .*'unknown'.*, found .*'poor'/],
  },
  {
    name: "a dropped unique index",
    sql: `DROP INDEX "users_email_key"`,
    expected: [/^index "users_email_key" on table "users": missing from the database \(expected unique index/],
  },
  {
    name: "a unique index turned into a plain one",
    sql: `DROP INDEX "users_email_key"; CREATE INDEX "users_email_key" ON "users" ("email")`,
    expected: [/^index "users_email_key" on table "users": expected unique index .*, found index USING btree/],
  },
  {
    name: "a unique index declared as a UNIQUE constraint instead",
    sql: `DROP INDEX "users_email_key"; ALTER TABLE "users" ADD CONSTRAINT "users_email_key" UNIQUE ("email")`,
    expected: [/^index "users_email_key" on table "users": expected unique index .*, found unique constraint/],
  },
  {
    name: "unique index columns in another order",
    sql: `DROP INDEX "user_judges_user_id_url_key"; CREATE UNIQUE INDEX "user_judges_user_id_url_key" ON "user_judges" ("url", "user_id")`,
    expected: [/^index "user_judges_user_id_url_key" on table "user_judges": expected .*\("user_id", "url"\), found .*\("url", "user_id"\)/],
  },
  {
    name: "an index that lost its DESC",
    sql: `DROP INDEX "proxy_statistics_proxy_id_created_at_idx"; CREATE INDEX "proxy_statistics_proxy_id_created_at_idx" ON "proxy_statistics" ("proxy_id", "created_at")`,
    expected: [/^index "proxy_statistics_proxy_id_created_at_idx" on table "proxy_statistics": expected .*"created_at" DESC\), found .*"created_at"\)$/],
  },
  {
    name: "an index on another method (GiST -> SP-GiST)",
    sql: `DROP INDEX "blacklist_ranges_cidr_idx"; CREATE INDEX "blacklist_ranges_cidr_idx" ON "blacklist_ranges" USING spgist ("cidr" inet_ops)`,
    expected: [/^index "blacklist_ranges_cidr_idx" on table "blacklist_ranges": expected index USING gist .*, found index USING spgist/],
  },
  {
    name: "an index on another method (btree -> hash)",
    sql: `DROP INDEX "revoked_tokens_expires_at_idx"; CREATE INDEX "revoked_tokens_expires_at_idx" ON "revoked_tokens" USING hash ("expires_at")`,
    expected: [/^index "revoked_tokens_expires_at_idx" on table "revoked_tokens": expected index USING btree .*, found index USING hash/],
  },
  {
    name: "an index with a non-default operator class",
    sql: `DROP INDEX "proxies_user_id_ip_port_username_password_key";
          CREATE UNIQUE INDEX "proxies_user_id_ip_port_username_password_key" ON "proxies" ("user_id", "ip", "port", "username" text_pattern_ops, "password")`,
    expected: [/^index "proxies_user_id_ip_port_username_password_key" on table "proxies": expected .*, found .*"username" text_pattern_ops/],
  },
  {
    name: "an index under another name",
    sql: `ALTER INDEX "scrape_sources_next_scrape_at_idx" RENAME TO "scrape_sources_next_idx"`,
    expected: [
      /^index "scrape_sources_next_idx" on table "scrape_sources": in the database .* but not in schema\.prisma/,
      /^index "scrape_sources_next_scrape_at_idx" on table "scrape_sources": missing from the database/,
    ],
  },
  {
    name: "a dropped primary key",
    sql: `ALTER TABLE "account_purges" DROP CONSTRAINT "account_purges_pkey"`,
    expected: [/^primary key "account_purges_pkey" on table "account_purges": missing from the database/],
  },
  {
    name: "a column made NOT NULL",
    sql: `ALTER TABLE "proxies" ALTER COLUMN "scheme_hint" SET NOT NULL`,
    expected: [/^column "proxies"\."scheme_hint": expected nullable, found NOT NULL$/],
  },
  {
    name: "a column made nullable",
    sql: `ALTER TABLE "users" ALTER COLUMN "password_hash" DROP NOT NULL`,
    expected: [/^column "users"\."password_hash": expected NOT NULL, found nullable$/],
  },
  {
    name: "a changed default",
    sql: `ALTER TABLE "proxies" ALTER COLUMN "country" SET DEFAULT 'XX'`,
    expected: [/^column "proxies"\."country": default expected 'N\/A'::text, found 'XX'::text$/],
  },
  {
    name: "a dropped default",
    sql: `ALTER TABLE "users" ALTER COLUMN "created_at" DROP DEFAULT`,
    expected: [/^column "users"\."created_at": default expected CURRENT_TIMESTAMP, found none$/],
  },
  {
    name: "a default that is now() instead of CURRENT_TIMESTAMP",
    sql: `ALTER TABLE "email_outbox" ALTER COLUMN "next_attempt_at" SET DEFAULT now()`,
    expected: [/^column "email_outbox"\."next_attempt_at": default expected CURRENT_TIMESTAMP, found now\(\)$/],
  },
  {
    name: "an autoincrement column without its sequence default",
    sql: `ALTER TABLE "users" ALTER COLUMN "id" DROP DEFAULT`,
    expected: [/^column "users"\."id": default expected nextval\('users_id_seq'::regclass\), found none$/],
  },
  {
    name: "a timestamp with another precision",
    sql: `ALTER TABLE "password_reset_tokens" ALTER COLUMN "used_at" TYPE TIMESTAMPTZ(6)`,
    expected: [/^column "password_reset_tokens"\."used_at": type expected timestamp\(3\) with time zone, found timestamp\(6\) with time zone$/],
  },
  {
    name: "a timestamp without time zone",
    sql: `ALTER TABLE "proxies" ALTER COLUMN "latest_check" TYPE TIMESTAMP(3)`,
    expected: [/^column "proxies"\."latest_check": type expected timestamp\(3\) with time zone, found timestamp\(3\) without time zone$/],
  },
  {
    name: "an array column that is no longer an array",
    sql: `ALTER TABLE "rotating_proxies" ALTER COLUMN "reputation_labels" TYPE TEXT USING array_to_string("reputation_labels", ',')`,
    expected: [/^column "rotating_proxies"\."reputation_labels": type expected text\[\], found text$/],
  },
  {
    name: "a REAL column widened to DOUBLE PRECISION",
    sql: `ALTER TABLE "proxy_reputations" ALTER COLUMN "score" TYPE DOUBLE PRECISION`,
    expected: [/^column "proxy_reputations"\."score": type expected real, found double precision$/],
  },
  {
    name: "an extra column",
    sql: `ALTER TABLE "users" ADD COLUMN "nickname" TEXT`,
    expected: [/^column "users"\."nickname": in the database \(text\) but not in schema\.prisma$/],
  },
  {
    name: "a dropped column",
    sql: `ALTER TABLE "scrape_sources" DROP COLUMN "last_error"`,
    expected: [/^column "scrape_sources"\."last_error": missing from the database/],
  },
  {
    name: "a dropped foreign key",
    sql: `ALTER TABLE "user_judges" DROP CONSTRAINT "user_judges_user_id_fkey"`,
    expected: [/^foreign key "user_judges_user_id_fkey" on table "user_judges": missing from the database/],
  },
  {
    name: "a foreign key with another ON DELETE action",
    sql: `ALTER TABLE "proxy_sources" DROP CONSTRAINT "proxy_sources_source_id_fkey",
          ADD CONSTRAINT "proxy_sources_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "scrape_sources" ("id") ON DELETE RESTRICT ON UPDATE CASCADE`,
    expected: [/^foreign key "proxy_sources_source_id_fkey" on table "proxy_sources": expected .*ON DELETE CASCADE.*, found .*ON DELETE RESTRICT/],
  },
  {
    name: "a foreign key with another ON UPDATE action",
    sql: `ALTER TABLE "password_reset_tokens" DROP CONSTRAINT "password_reset_tokens_user_id_fkey",
          ADD CONSTRAINT "password_reset_tokens_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users" ("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    expected: [/^foreign key "password_reset_tokens_user_id_fkey" on table "password_reset_tokens": expected .*ON UPDATE CASCADE, found .*ON UPDATE NO ACTION/],
  },
  {
    name: "an extra foreign key",
    sql: `ALTER TABLE "proxies" ADD CONSTRAINT "proxies_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users" ("id") ON DELETE CASCADE ON UPDATE CASCADE`,
    expected: [/^foreign key "proxies_user_id_fkey" on table "proxies": in the database .* but not in schema\.prisma$/],
  },
  {
    name: "an extra table",
    sql: `CREATE TABLE "stray" ("id" INTEGER PRIMARY KEY)`,
    expected: [/^table "stray": in the database but not in schema\.prisma$/],
  },
  {
    name: "a dropped table",
    sql: `DROP TABLE "account_purges"`,
    expected: [/^table "account_purges": missing from the database$/],
  },
];

describe("schema comparison negative controls", () => {
  let db: TestDatabase;
  let client: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = await connect(db.url);
    // Each control starts from a database that matches, so what it reports is its change alone.
    expect((await compareDatabaseWithPrismaSchema(client)).differences).toEqual([]);
  });

  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  it.each(mutations)("reports $name", async ({ sql, expected }) => {
    await client.query("BEGIN");
    try {
      await client.query(sql);
      const { differences } = await compareDatabaseWithPrismaSchema(client);
      expect(differences).toEqual(expected.map((pattern) => expect.stringMatching(pattern)));
    } finally {
      await client.query("ROLLBACK");
    }
  });

  it("ignores partitions of the partitioned statistics tables", async () => {
    // Daily partitions come and go at runtime (retention); they are not part of the Prisma schema.
    await client.query("BEGIN");
    try {
      await client.query(
        `CREATE TABLE "proxy_statistics_p20991231" PARTITION OF "proxy_statistics" FOR VALUES FROM ('2099-12-31') TO ('2100-01-01');
         CREATE TABLE "proxy_statistic_responses_p20991231" PARTITION OF "proxy_statistic_responses" FOR VALUES FROM ('2099-12-31') TO ('2100-01-01')`,
      );
      expect((await compareDatabaseWithPrismaSchema(client)).differences).toEqual([]);
    } finally {
      await client.query("ROLLBACK");
    }
  });

  it("is left matching after every control was rolled back", async () => {
    expect((await compareDatabaseWithPrismaSchema(client)).differences).toEqual([]);
  });
});
