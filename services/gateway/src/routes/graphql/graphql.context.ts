import type { IncomingMessage, ServerResponse } from "node:http";
import type pg from "pg";
import type { Database, Tx } from "@roost/db";
import type { ProxyDb } from "@roost/inventory";
import type { GatewayDeps } from "../../gateway.deps.js";
import type { AuthContext } from "../../http/auth.middleware.js";
import type { PageStatements } from "../../db-limits/page-statements.js";
import { createLimiter, limitedPool } from "../../db-limits/statement-limiter.js";
import { GRAPHQL_DB_CONCURRENCY } from "./graphql.db-limiter.js";

/**
 * The database as one operation's resolvers reach it: every statement waits
 * for a slot of the operation's limiter before it takes a pooled connection.
 * The limit is per statement, not per resolver, because the shared services
 * run several statements at once (a filtered proxies page its page and a
 * count, the dashboard four queries).
 */
export interface OperationDb {
  /** The gateway's pool; `query()` (promise form, what the repositories use) waits for a slot, `connect()` is refused. */
  pool: pg.Pool;
  /** Prisma; each call, raw queries included, waits for a slot. No `$transaction`: see `asOneCall`. */
  prisma: Tx;
  /**
   * Runs `task` on the unlimited database as one call, in one slot: for a
   * transaction, which keeps one connection from BEGIN to COMMIT.
   */
  asOneCall<T>(task: (db: Database) => Promise<T>): Promise<T>;
  /**
   * The pool for a proxies page: its statements wait for the operation's
   * limiter and then for the process's list-page limit
   * (API_PAGE_QUERY_CONCURRENCY, shared with GET /api/getProxyPage).
   */
  pages: ProxyDb;
}

/**
 * Per-request context: the bearer guard ran before Apollo, so `auth` is
 * always set. `deps` leaves out the database so that resolvers can only
 * reach it through `db`.
 */
export interface GraphqlContext {
  deps: Omit<GatewayDeps, "db">;
  auth: AuthContext;
  db: OperationDb;
}

/** A new context, with its own limiter, for each operation. */
export function createGraphqlContext(deps: GatewayDeps, pages: PageStatements, auth: AuthContext, req: IncomingMessage, res: ServerResponse): GraphqlContext {
  const limiter = createLimiter(GRAPHQL_DB_CONCURRENCY);
  const prisma = deps.db.prisma.$extends({
    query: { $allOperations: ({ args, query }) => limiter.run(() => query(args)) },
  });
  return {
    deps,
    auth,
    db: {
      pool: limitedPool(deps.db.pool, limiter, "a GraphQL resolver runs pool.query() or asOneCall()"),
      // The same client with a query hook; its extended generics do not match `Tx`, its methods do.
      prisma: prisma as unknown as Tx,
      asOneCall: (task) => limiter.run(() => task(deps.db)),
      pages: { pool: limitedPool(pages.forRequest(req, res, auth.userId).pool, limiter, "a proxies page runs pool.query()") },
    },
  };
}
