import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createEmptyDatabase, type TestDatabase } from "@roost/testkit";
import { defaultMigrationsDir, migrate } from "./migrate.js";

/** A database migrated up to, not including, `migration`: to test what that migration does to existing rows. */
export async function databaseBefore(migration: string): Promise<{ database: TestDatabase; close(): Promise<void> }> {
  const database = await createEmptyDatabase();
  const before = await mkdtemp(path.join(os.tmpdir(), "roost-migrations-"));
  for (const entry of await readdir(defaultMigrationsDir, { withFileTypes: true })) {
    if (entry.isDirectory() && entry.name < migration) await cp(path.join(defaultMigrationsDir, entry.name), path.join(before, entry.name), { recursive: true });
  }
  await migrate(database.url, before);
  return {
    database,
    async close() {
      await rm(before, { recursive: true, force: true });
      await database.drop();
    },
  };
}
