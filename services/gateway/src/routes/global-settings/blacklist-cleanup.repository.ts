import type pg from "pg";
import { isBlockedUrl } from "@roost/global-config";

const BATCH = 5000;

export interface BlacklistCleanupResult {
  judgesRemoved: number;
  /** The scrape sources removed, for dropping their queued work. */
  sources: { id: number; url: string }[];
}

/**
 * Removes every user's judges and scrape sources whose host the website
 * blacklist now blocks (contract, save settings rule 2). Host matching
 * (subdomains included) is the same function the 400 uses, so it runs here
 * rather than in SQL; rows are read in id order in batches.
 */
export async function removeBlacklistedUserUrls(pool: pg.Pool, blacklist: readonly string[]): Promise<BlacklistCleanupResult> {
  if (blacklist.length === 0) return { judgesRemoved: 0, sources: [] };
  return {
    judgesRemoved: (await removeBlocked(pool, "user_judges", blacklist)).length,
    sources: await removeBlocked(pool, "scrape_sources", blacklist),
  };
}

async function removeBlocked(pool: pg.Pool, table: "user_judges" | "scrape_sources", blacklist: readonly string[]): Promise<{ id: number; url: string }[]> {
  const removed: { id: number; url: string }[] = [];
  let after = 0;
  for (;;) {
    const { rows } = await pool.query<{ id: number; url: string }>(
      `SELECT id, url FROM ${table} WHERE id > $1 ORDER BY id LIMIT $2`,
      [after, BATCH],
    );
    if (rows.length === 0) return removed;
    after = rows[rows.length - 1]?.id ?? after;
    const blocked = rows.filter((row) => isBlockedUrl(row.url, blacklist)).map((row) => row.id);
    if (blocked.length > 0) {
      const result = await pool.query<{ id: number; url: string }>(`DELETE FROM ${table} WHERE id = ANY($1::int[]) RETURNING id, url`, [blocked]);
      removed.push(...result.rows);
    }
    if (rows.length < BATCH) return removed;
  }
}
