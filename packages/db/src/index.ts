export { createDatabase, Prisma } from "./client.js";
export type { Database, DatabaseOptions, DbHandle, PrismaClient, Tx } from "./client.js";
export { defaultMigrationsDir, migrate, MigrationError, readMigrations } from "./migrate.js";
export type { MigrateResult, MigrationFile } from "./migrate.js";
