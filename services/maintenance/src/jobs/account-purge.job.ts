import type pg from "pg";

export interface PurgeResult {
  proxiesDeleted: number;
  sourcesDeleted: number;
  accountsFinished: number;
  /** True when rows remain (time budget used up); the caller runs again. */
  more: boolean;
}

/**
 * Removes, in batches, the bulk rows of deleted accounts (listed in
 * account_purges): proxies with their statistics and response bodies
 * (per-protocol status, reputation and source links cascade), scrape
 * sources, daily roll-ups, dashboard counts. Each batch is its own short transaction, so no
 * lock is held long and the work resumes where it stopped after a crash.
 */
export async function purgeDeletedAccounts(
  pool: pg.Pool,
  { batchSize = 5000, budgetMs = 20_000 }: { batchSize?: number; budgetMs?: number } = {},
): Promise<PurgeResult> {
  const deadline = Date.now() + budgetMs;
  const result: PurgeResult = { proxiesDeleted: 0, sourcesDeleted: 0, accountsFinished: 0, more: false };
  const { rows } = await pool.query<{ user_id: number }>("SELECT user_id FROM account_purges ORDER BY requested_at LIMIT 100");
  for (const { user_id: userId } of rows) {
    for (;;) {
      if (Date.now() > deadline) {
        result.more = true;
        return result;
      }
      const deleted = await pool.query<{ id: number }>(
        `DELETE FROM proxies WHERE id IN (SELECT id FROM proxies WHERE user_id = $1 LIMIT $2) RETURNING id`,
        [userId, batchSize],
      );
      const ids = deleted.rows.map((r) => r.id);
      if (ids.length > 0) {
        const stats = await pool.query<{ id: string; created_at: Date }>(
          "DELETE FROM proxy_statistics WHERE proxy_id = ANY($1::int[]) RETURNING id, created_at",
          [ids],
        );
        if (stats.rows.length > 0) {
          await pool.query(
            `DELETE FROM proxy_statistic_responses r USING unnest($1::bigint[], $2::timestamptz[]) AS s(id, created_at)
             WHERE r.statistic_id = s.id AND r.created_at = s.created_at`,
            [stats.rows.map((s) => s.id), stats.rows.map((s) => s.created_at)],
          );
        }
        result.proxiesDeleted += ids.length;
      }
      if (ids.length < batchSize) break;
    }
    const sources = await pool.query("DELETE FROM scrape_sources WHERE user_id = $1", [userId]);
    result.sourcesDeleted += sources.rowCount ?? 0;
    await pool.query("DELETE FROM user_daily_stats WHERE user_id = $1", [userId]);
    await pool.query("DELETE FROM judge_daily_stats WHERE user_id = $1", [userId]);
    // The trigger-maintained dashboard counts of the account (net zero by now).
    await pool.query("DELETE FROM user_proxy_counts WHERE user_id = $1", [userId]);
    await pool.query("DELETE FROM account_purges WHERE user_id = $1", [userId]);
    result.accountsFinished += 1;
  }
  return result;
}
