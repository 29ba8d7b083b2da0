import { createHash, randomUUID } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

/**
 * Applies the hand-written migrations in prisma/migrations and records them in
 * `_prisma_migrations` the way Prisma does (same table, sha256 checksums, the
 * same advisory lock), so `prisma migrate deploy` keeps working for anyone
 * with the engine. Prisma's CLI cannot run on machines without internet.
 */

/** Prisma's migration advisory lock key. */
const PRISMA_ADVISORY_LOCK = 72707369;

const here = path.dirname(fileURLToPath(import.meta.url));
/** prisma/migrations, from packages/db/{src,dist}. */
export const defaultMigrationsDir = path.resolve(here, "../../../prisma/migrations");

export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateResult {
  applied: string[];
  alreadyApplied: string[];
}

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MigrationError";
  }
}

export async function readMigrations(dir = defaultMigrationsDir): Promise<MigrationFile[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const files: MigrationFile[] = [];
  for (const name of names) {
    const sql = await readFile(path.join(dir, name, "migration.sql"), "utf8");
    files.push({ name, sql, checksum: createHash("sha256").update(sql).digest("hex") });
  }
  return files;
}

const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

/** Applies every pending migration in order; safe to run from several processes at once. */
export async function migrate(databaseUrl: string, dir = defaultMigrationsDir): Promise<MigrateResult> {
  const migrations = await readMigrations(dir);
  const client = new pg.Client({ connectionString: databaseUrl, application_name: "roost-migrate" });
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [PRISMA_ADVISORY_LOCK]);
    try {
      await client.query(CREATE_MIGRATIONS_TABLE);
      const { rows } = await client.query<AppliedRow>(
        `SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" ORDER BY started_at`,
      );
      const result: MigrateResult = { applied: [], alreadyApplied: [] };
      for (const migration of migrations) {
        const records = rows.filter((r) => r.migration_name === migration.name && r.rolled_back_at === null);
        const failed = records.find((r) => r.finished_at === null);
        if (failed) {
          throw new MigrationError(
            `Migration ${migration.name} failed earlier and was not rolled back; fix the database and mark it resolved`,
          );
        }
        const done = records.find((r) => r.finished_at !== null);
        if (done) {
          if (done.checksum !== migration.checksum) {
            throw new MigrationError(`Migration ${migration.name} was changed after it was applied (checksum mismatch)`);
          }
          result.alreadyApplied.push(migration.name);
          continue;
        }
        await applyOne(client, migration);
        result.applied.push(migration.name);
      }
      return result;
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [PRISMA_ADVISORY_LOCK]).catch(() => undefined);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function applyOne(client: pg.Client, migration: MigrationFile): Promise<void> {
  const id = randomUUID();
  await client.query(
    `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count)
     VALUES ($1, $2, $3, now(), 0)`,
    [id, migration.checksum, migration.name],
  );
  try {
    await client.query("BEGIN");
    await client.query(migration.sql);
    await client.query(
      `UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`,
      [id],
    );
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    const message = error instanceof Error ? error.message : String(error);
    // Like Prisma: the failed attempt stays recorded (finished_at NULL) with its logs.
    await client
      .query(`UPDATE "_prisma_migrations" SET logs = $2 WHERE id = $1`, [id, message])
      .catch(() => undefined);
    throw new MigrationError(`Migration ${migration.name} failed: ${message}`);
  }
}
