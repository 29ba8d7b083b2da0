import pg from "pg";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient, Prisma } from "./generated/client.js";

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
  /** Milliseconds a connection attempt may take before failing; default 5000. */
  connectTimeoutMs?: number;
  applicationName?: string;
}

// BIGINT columns (statistics ids, outbox ids) come back as strings from pg by
// default; parse them as JS numbers only where safe is the caller's job, so we
// leave pg's default and let Prisma return bigint.

/** Opens one pool and a Prisma client on it. */
export function createDatabase(options: DatabaseOptions): Database {
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    application_name: options.applicationName ?? "roost",
  });
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
