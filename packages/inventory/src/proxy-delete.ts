import { buildProxyWhere, type ProxyFilters } from "./proxy-filter.js";
import type { SqlPool } from "./proxy-read.repository.js";

/** Deletes the user's matching proxies (their protocol status, reputations and source links cascade). */
export async function deleteProxies(pool: SqlPool, userId: number, filters: ProxyFilters): Promise<number> {
  const where = buildProxyWhere(userId, filters);
  const result = await pool.query(`DELETE FROM proxies p WHERE ${where.text}`, where.params);
  return result.rowCount ?? 0;
}

