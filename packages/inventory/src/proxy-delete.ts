import { runLongStatement } from "@roost/db";
import type pg from "pg";
import { buildProxyWhere, type ProxyFilters } from "./proxy-filter.js";

/**
 * Deletes the user's matching proxies (their protocol status, reputations and source links cascade)
 * as one statement under the long-statement deadline (DATABASE_LONG_STATEMENT_TIMEOUT_MS, ms).
 */
export async function deleteProxies(pool: Pick<pg.Pool, "connect">, userId: number, filters: ProxyFilters, { longStatementTimeoutMs }: { longStatementTimeoutMs?: number } = {}): Promise<number> {
  const where = buildProxyWhere(userId, filters);
  const result = await runLongStatement(pool, `DELETE FROM proxies p WHERE ${where.text}`, where.params, longStatementTimeoutMs);
  return result.rowCount ?? 0;
}
