import { dropExpiredStatistics, ensureStatisticsPartitions } from "@roost/checking";
import { parseStoredConfig } from "@roost/global-config";
import type pg from "pg";

/**
 * Keeps the statistics tables' daily partitions: two days ahead exist, and
 * days older than `checker.statistics_retention_days` (rows) and
 * `checker.response_retention_days` (bodies) are dropped whole.
 */
export async function maintainStatisticsPartitions(pool: pg.Pool, now = new Date()): Promise<{ created: string[]; dropped: string[] }> {
  const { rows } = await pool.query<{ config: unknown }>("SELECT config FROM global_config WHERE id = 1");
  const { checker } = parseStoredConfig(rows[0]?.config ?? {}).config;
  const created = await ensureStatisticsPartitions(pool, { now });
  const dropped = await dropExpiredStatistics(pool, { statisticsDays: checker.statistics_retention_days, responseDays: checker.response_retention_days, now });
  return { created, dropped };
}
