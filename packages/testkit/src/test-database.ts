import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import { migrate, readMigrations } from "@roost/db";

/**
 * Every test gets its own database, cloned from a template that holds the
 * migrated schema. The template's name carries a hash of the migrations, so a
 * changed migration builds a fresh template and stale ones are never reused.
 * Each run writes the time into its template's comment; templates of other
 * migration sets (earlier schemas, or another checkout on the same server)
 * unused for a week are dropped, so a developer's server does not collect
 * one per schema change.
 */

import { testServerUrl } from "./test-env.js";

export { testServerUrl };

const TEMPLATE_LOCK = 72707370;

/** Templates of other migration sets unused for this long are dropped. */
export const TEMPLATE_IDLE_DROP_SEC = 7 * 24 * 3600;

const USED_AT = /^roost test template, last used (\d+)$/;

export function databaseUrlFor(name: string): string {
  const url = new URL(testServerUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: testServerUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function templateName(): Promise<string> {
  const migrations = await readMigrations();
  const hash = createHash("sha256");
  for (const m of migrations) hash.update(m.name).update(m.checksum);
  return `roost_tpl_${hash.digest("hex").slice(0, 16)}`;
}

/** Creates the migrated template if missing; safe across parallel jest runs. */
export async function ensureTemplate(): Promise<string> {
  const name = await templateName();
  await withAdmin(async (admin) => {
    await admin.query("SELECT pg_advisory_lock($1)", [TEMPLATE_LOCK]);
    try {
      const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
      if (exists.rowCount === 0) {
        const building = `${name}_build`;
        await admin.query(`DROP DATABASE IF EXISTS "${building}"`);
        await admin.query(`CREATE DATABASE "${building}"`);
        await migrate(databaseUrlFor(building));
        await admin.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
      }
      if (!templateMarked) {
        await admin.query(`COMMENT ON DATABASE "${name}" IS 'roost test template, last used ${Math.floor(Date.now() / 1000)}'`);
        templateMarked = true;
      }
      await dropStaleTestDatabases(admin);
      await dropIdleTemplates(admin, name);
    } finally {
      await admin.query("SELECT pg_advisory_unlock($1)", [TEMPLATE_LOCK]);
    }
  });
  return name;
}

/** Once per process: the template's last-use time is written on the first use. */
let templateMarked = false;

/**
 * Other templates (roost_tpl_<hash>, and builds a crash left) whose comment
 * says they were last used over a week ago, or that have none. Called under
 * the template lock, so no build is in progress; a template being cloned at
 * this moment cannot be dropped (no FORCE) and is left for next time.
 */
async function dropIdleTemplates(admin: pg.Client, current: string): Promise<void> {
  const { rows } = await admin.query<{ datname: string; comment: string | null }>(
    "SELECT datname, shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname LIKE 'roost\\_tpl\\_%' AND datname <> $1",
    [current],
  );
  const cutoff = Math.floor(Date.now() / 1000) - TEMPLATE_IDLE_DROP_SEC;
  for (const { datname, comment } of rows) {
    const usedAt = Number(USED_AT.exec(comment ?? "")?.[1] ?? 0);
    if (usedAt < cutoff) await admin.query(`DROP DATABASE IF EXISTS "${datname}"`).catch(() => undefined);
  }
}

/** Test databases are named roost_t_<epoch seconds>_<random>; drop those older than 2 hours. */
async function dropStaleTestDatabases(admin: pg.Client): Promise<void> {
  const { rows } = await admin.query<{ datname: string }>(
    "SELECT datname FROM pg_database WHERE datname LIKE 'roost_t\\_%'",
  );
  const cutoff = Math.floor(Date.now() / 1000) - 2 * 3600;
  for (const { datname } of rows) {
    const created = Number(datname.split("_")[2]);
    if (Number.isFinite(created) && created < cutoff) {
      await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => undefined);
    }
  }
}

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** A fresh, migrated, empty database for one test file (or one test). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = await ensureTemplate();
  const name = `roost_t_${Math.floor(Date.now() / 1000)}_${randomBytes(5).toString("hex")}`;
  await withAdmin((admin) => admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
  return {
    name,
    url: databaseUrlFor(name),
    async drop() {
      await withAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).catch(() => undefined);
    },
  };
}

/** An empty database with no schema at all (for migration tests). */
export async function createEmptyDatabase(): Promise<TestDatabase> {
  const name = `roost_t_${Math.floor(Date.now() / 1000)}_${randomBytes(5).toString("hex")}`;
  await withAdmin((admin) => admin.query(`CREATE DATABASE "${name}"`));
  return {
    name,
    url: databaseUrlFor(name),
    async drop() {
      await withAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).catch(() => undefined);
    },
  };
}
