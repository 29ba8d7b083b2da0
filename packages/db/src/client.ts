import pg from "pg";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient, Prisma } from "./generated/client.js";
import { FailFastPool } from "./fail-fast-pool.js";
import { DEFAULT_DATABASE_LIMITS } from "./statement-limits.js";

export { Prisma };
export type { PrismaClient };

/** A transaction handle; repositories accept one so callers can compose work. */
export type Tx = Prisma.TransactionClient;

/** Either the client or a transaction: what a repository method runs against. */
export type DbHandle = PrismaClient | Tx;

export interface Database {
  /** Prisma client over the shared pool. */
  readonly prisma: PrismaClient;
  /** The same pool for hot paths that use SQL directly (bulk upsert, export streams). */
  readonly pool: pg.Pool;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl: string;
  /** Pool size; default 10. */
  maxConnections?: number;
  /**
   * Milliseconds a caller may wait for a connection (a free pooled one, or a
   * new one being opened) before failing; default 5000.
   */
  connectTimeoutMs?: number;
  /** Client-side deadline of every query in ms (pg `query_timeout`); default 10000. */
  queryTimeoutMs?: number;
  /** After the server failed to answer in time, connections are refused at once for this long (ms); default 2000. */
  failFastMs?: number;
  /** Server-side `statement_timeout` of every session in ms; default 8000. 0 = none. */
  statementTimeoutMs?: number;
  /** Server-side `idle_in_transaction_session_timeout` in ms; default 60000. 0 = none. */
  idleInTransactionTimeoutMs?: number;
  applicationName?: string;
}

// BIGINT columns (statistics ids, outbox ids) come back as strings from pg by
// default; parse them as JS numbers only where safe is the caller's job, so we
// leave pg's default and let Prisma return bigint.

/** Opens one pool and a Prisma client on it. */
export function createDatabase(options: DatabaseOptions): Database {
  const pool = new FailFastPool({
    connectionString: options.databaseUrl,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_DATABASE_LIMITS.acquireTimeoutMs,
    query_timeout: options.queryTimeoutMs ?? DEFAULT_DATABASE_LIMITS.queryTimeoutMs,
    statement_timeout: options.statementTimeoutMs ?? DEFAULT_DATABASE_LIMITS.statementTimeoutMs,
    idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? DEFAULT_DATABASE_LIMITS.idleInTransactionTimeoutMs,
    application_name: options.applicationName ?? "roost",
  }, options.failFastMs ?? 2_000);
  // An idle client that errors (server restart) must not crash the process.
  pool.on("error", () => undefined);
  // Nor one that is checked out: pg-pool listens for a client's errors only while it sits idle, and
  // a connection lost while a caller holds it (terminated by an administrator or an idle-in-transaction
  // timeout, a server restart, a stalled export whose backend was killed) emits 'error' with nobody
  // listening. The holder still learns of it: its next query fails, and the pool drops the client
  // when it comes back.
  pool.on("connect", (client) => {
    client.on("error", () => undefined);
  });
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  let closed = false;
  return {
    prisma,
    pool,
    async close() {
      if (closed) return;
      closed = true;
      await prisma.$disconnect().catch(() => undefined);
      await pool.end().catch(() => undefined);
    },
  };
}
