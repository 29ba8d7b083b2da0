import type { DbHandle } from "@roost/db";

/**
 * Reads for the dashboard. Totals come from the daily roll-ups; breakdowns
 * from the trigger-maintained `user_proxy_counts` log; nothing here scans a
 * user's proxies (docs/dashboard.md has the measurements behind that).
 */

export interface DailyTotals {
  checks: number;
  scraped: number;
  checksWeek: number;
  scrapedWeek: number;
}

/** Sums of user_daily_stats; "week" = days on or after `weekStartDay` (UTC, `YYYY-MM-DD`). */
export async function readDailyTotals(db: DbHandle, userId: number, weekStartDay: string): Promise<DailyTotals> {
  const rows = await db.$queryRaw<{ checks: bigint; scraped: bigint; checks_week: bigint; scraped_week: bigint }[]>`
    SELECT coalesce(sum(checks), 0)::bigint AS checks,
           coalesce(sum(scraped), 0)::bigint AS scraped,
           coalesce(sum(checks) FILTER (WHERE day >= ${weekStartDay}::date), 0)::bigint AS checks_week,
           coalesce(sum(scraped) FILTER (WHERE day >= ${weekStartDay}::date), 0)::bigint AS scraped_week
    FROM user_daily_stats
    WHERE user_id = ${userId}`;
  const row = rows[0];
  return {
    checks: Number(row?.checks ?? 0),
    scraped: Number(row?.scraped ?? 0),
    checksWeek: Number(row?.checks_week ?? 0),
    scrapedWeek: Number(row?.scraped_week ?? 0),
  };
}

export interface JudgeTotals {
  judgeUrl: string;
  elite: number;
  anonymous: number;
  transparent: number;
}

/** Valid proxies per judge and anonymity over all of judge_daily_stats, busiest judge first. */
export async function readJudgeTotals(db: DbHandle, userId: number): Promise<JudgeTotals[]> {
  const rows = await db.$queryRaw<{ judge_url: string; elite: bigint; anonymous: bigint; transparent: bigint }[]>`
    SELECT judge_url,
           sum(elite)::bigint AS elite,
           sum(anonymous)::bigint AS anonymous,
           sum(transparent)::bigint AS transparent
    FROM judge_daily_stats
    WHERE user_id = ${userId}
    GROUP BY judge_url
    ORDER BY sum(elite + anonymous + transparent) DESC, judge_url ASC`;
  return rows.map((r) => ({
    judgeUrl: r.judge_url,
    elite: Number(r.elite),
    anonymous: Number(r.anonymous),
    transparent: Number(r.transparent),
  }));
}

export type CountDimension = "country" | "reputation";

export interface ProxyCounts {
  /** Non-zero counts per dimension and value. */
  counts: { dimension: CountDimension; value: string; count: number }[];
  /** Rows of the delta log read to get them (decides when to fold). */
  logRows: number;
  /** Keys with a non-zero count in every dimension, the list's `alive` included: the rows a fold leaves. */
  keys: number;
}

/** Current per-country and per-reputation-label proxy counts of a user. */
export async function readProxyCounts(db: DbHandle, userId: number): Promise<ProxyCounts> {
  const rows = await db.$queryRaw<{ dimension: string; value: string; count: bigint; log_rows: number }[]>`
    SELECT dimension, value, sum(delta)::bigint AS count, count(*)::int AS log_rows
    FROM user_proxy_counts
    WHERE user_id = ${userId}
    GROUP BY dimension, value`;
  let logRows = 0;
  let keys = 0;
  const counts: ProxyCounts["counts"] = [];
  for (const row of rows) {
    logRows += row.log_rows;
    const count = Number(row.count);
    if (count !== 0) keys++;
    if (count !== 0 && (row.dimension === "country" || row.dimension === "reputation")) {
      counts.push({ dimension: row.dimension, value: row.value, count });
    }
  }
  return { counts, logRows, keys };
}

export interface TopProxyRow {
  id: number;
  ip: string;
  port: number;
  score: number;
  label: string;
}

/** Highest overall reputation score among rated proxies (ties: lowest id); null when none is rated. */
export async function readTopReputationProxy(db: DbHandle, userId: number): Promise<TopProxyRow | null> {
  // real -> text -> float8 keeps the score as stored and as the list and export write it:
  // float4's text is its shortest exact form (87.3, not 87.30000305; 99.12346, where
  // real -> numeric rounds to six digits, 99.1235).
  const rows = await db.$queryRaw<TopProxyRow[]>`
    SELECT id, ip, port, reputation_score::text::float8 AS score, reputation_label AS label
    FROM proxies
    WHERE user_id = ${userId} AND reputation_label <> 'unknown'
    ORDER BY reputation_score DESC, id ASC
    LIMIT 1`;
  return rows[0] ?? null;
}
