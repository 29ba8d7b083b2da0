import { envInt } from "./env-types.js";

/**
 * The database pool's deadlines, shared by every service's schema (spread
 * into its object). Values in milliseconds; `databaseLimits` turns a parsed
 * config into `createDatabase` options.
 */
export const databaseLimitsEnv = {
  /** Longest wait for a database connection (pooled or new) before 503; 5000. */
  DATABASE_ACQUIRE_TIMEOUT_MS: envInt(5_000, 100, 120_000),
  /** Client-side deadline of every query (a stopped server cannot enforce its own); 10000. */
  DATABASE_QUERY_TIMEOUT_MS: envInt(10_000, 100, 600_000),
  /** Server-side statement_timeout of every session; 8000, 0 = none. */
  DATABASE_STATEMENT_TIMEOUT_MS: envInt(8_000, 0, 600_000),
  /** Server-side idle_in_transaction_session_timeout; 60000, 0 = none. */
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: envInt(60_000, 0, 3_600_000),
  /** Deadline of exports and bulk deletes (server and client side); 1800000 (30 min). */
  DATABASE_LONG_STATEMENT_TIMEOUT_MS: envInt(1_800_000, 1_000, 86_400_000),
};

export interface DatabaseLimitsConfig {
  DATABASE_ACQUIRE_TIMEOUT_MS: number;
  DATABASE_QUERY_TIMEOUT_MS: number;
  DATABASE_STATEMENT_TIMEOUT_MS: number;
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: number;
  DATABASE_LONG_STATEMENT_TIMEOUT_MS: number;
}

/** `createDatabase` options from a parsed config holding `databaseLimitsEnv`. */
export function databaseLimits(config: DatabaseLimitsConfig): {
  connectTimeoutMs: number;
  queryTimeoutMs: number;
  statementTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
} {
  return {
    connectTimeoutMs: config.DATABASE_ACQUIRE_TIMEOUT_MS,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    idleInTransactionTimeoutMs: config.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  };
}
