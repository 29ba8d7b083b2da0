import type { DbHandle } from "@roost/db";
import { foldUserCounters, type SqlPool } from "@roost/inventory";
import {
  readDailyTotals,
  readJudgeTotals,
  readProxyCounts,
  readTopReputationProxy,
} from "./dashboard.repository.js";
import { REPUTATION_LABELS, type CountryCount, type DashboardInfo, type ReputationBreakdown } from "./dashboard.schema.js";

/** Days of the weekly totals: today (UTC) and the 6 days before, i.e. 7 × 24 h of daily roll-ups. */
export const WEEK_DAYS = 7;

/**
 * Delta-log rows a user may have beyond one per key before a read folds them.
 * Reads stay a few dozen index entries; folding is one short statement.
 */
export const FOLD_SLACK_ROWS = 64;

const DAY_MS = 24 * 3600 * 1000;

/** `YYYY-MM-DD` (UTC) of the first day counted in the weekly totals. */
export function weekStartDay(now: Date): string {
  return new Date(now.getTime() - (WEEK_DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
}

function isReputationLabel(value: string): value is keyof ReputationBreakdown {
  return (REPUTATION_LABELS as readonly string[]).includes(value);
}

/** The dashboard of one user; every number is that user's alone. */
export async function getDashboardInfo({ prisma: db, pool }: { prisma: DbHandle; pool: SqlPool }, userId: number, now: Date = new Date()): Promise<DashboardInfo> {
  const [totals, judges, proxyCounts, top] = await Promise.all([
    readDailyTotals(db, userId, weekStartDay(now)),
    readJudgeTotals(db, userId),
    readProxyCounts(db, userId),
    readTopReputationProxy(db, userId),
  ]);

  const reputation: ReputationBreakdown = { good: 0, neutral: 0, poor: 0, unknown: 0 };
  const countries: CountryCount[] = [];
  for (const { dimension, value, count } of proxyCounts.counts) {
    if (count <= 0) continue;
    if (dimension === "country") countries.push({ country: value, count });
    else if (isReputationLabel(value)) reputation[value] = count;
  }
  countries.sort((a, b) => b.count - a.count || (a.country < b.country ? -1 : a.country > b.country ? 1 : 0));

  if (proxyCounts.logRows > proxyCounts.keys + FOLD_SLACK_ROWS) await foldUserCounters(pool, userId);

  const info: DashboardInfo = {
    total_checks: totals.checks,
    total_scraped: totals.scraped,
    total_checks_week: totals.checksWeek,
    total_scraped_week: totals.scrapedWeek,
    reputation_breakdown: reputation,
    country_breakdown: countries,
    judge_valid_proxies: judges.map((j) => ({
      judge_url: j.judgeUrl,
      elite_proxies: j.elite,
      anonymous_proxies: j.anonymous,
      transparent_proxies: j.transparent,
    })),
  };
  if (top) info.top_reputation_proxy = { proxy_id: top.id, ip: top.ip, port: top.port, score: top.score, label: top.label };
  return info;
}
