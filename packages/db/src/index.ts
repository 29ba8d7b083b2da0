export { createDatabase, Prisma } from "./client.js";
export type { Database, DatabaseOptions, DbHandle, PrismaClient, Tx } from "./client.js";
export { limitTransactionWaits } from "./transaction-waits.js";
export { allowLongStatement, DEFAULT_DATABASE_LIMITS, runLongStatement } from "./statement-limits.js";
export { databaseUnavailable, isDatabaseUnavailable } from "./database-unavailable.js";
export { DatabaseUnavailableError } from "./fail-fast-pool.js";
export { defaultMigrationsDir, migrate, MigrationError, readMigrations } from "./migrate.js";
export type { MigrateResult, MigrationFile } from "./migrate.js";
export type {
  AccountPurge,
  BlacklistRange,
  EmailOutbox,
  GlobalConfig as GlobalConfigRow,
  JudgeDailyStat,
  PasswordResetToken,
  Proxy,
  ProxyProtocolStatus,
  ProxyReputation,
  ProxySource,
  ProxyStatistic,
  ProxyStatisticResponse,
  RevokedToken,
  RotatingProxy,
  ScrapeSource,
  User,
  UserDailyStat,
  UserJudge,
  UserSettings,
} from "./generated/client.js";
export { ascii, ByteWriter, plainDecimal } from "./codecs/byte-writer.js";
export { CopyOutError, CopyOutParser, CopyOutQuery } from "./codecs/copy-out.js";
export type { CopyRowWriter, Fed } from "./codecs/copy-out.js";
export { RecordTextError, splitRecordText } from "./codecs/record-text.js";
