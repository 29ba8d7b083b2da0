import type pg from "pg";

type Queryable = Pick<pg.Pool | pg.PoolClient, "query">;

/** A source row of the list (GET /api/getScrapingSourcesPage/{page}). */
export interface SourceSummary {
  id: number;
  url: string;
  proxy_count: number;
  alive_count: number;
  dead_count: number;
  unknown_count: number;
  added_at: string;
  last_scraped_at: string | null;
}

export interface SourceDetail extends SourceSummary {
  last_status: string | null;
  last_error: string | null;
  last_duration_ms: number | null;
  last_proxy_count: number | null;
  /** Links whose last_seen_at equals last_scraped_at. */
  found_by_last_scrape: number;
}

/** Counts per source: linked, alive, checked and not alive, never checked. */
const COUNTS = `
  (SELECT count(*)::int FROM proxy_sources l WHERE l.source_id = s.id) AS proxy_count,
  (SELECT count(*)::int FROM proxy_sources l JOIN proxies p ON p.id = l.proxy_id WHERE l.source_id = s.id AND p.alive) AS alive_count,
  (SELECT count(*)::int FROM proxy_sources l JOIN proxies p ON p.id = l.proxy_id WHERE l.source_id = s.id AND NOT p.alive AND p.latest_check IS NOT NULL) AS dead_count,
  (SELECT count(*)::int FROM proxy_sources l JOIN proxies p ON p.id = l.proxy_id WHERE l.source_id = s.id AND p.latest_check IS NULL) AS unknown_count`;

const iso = (value: Date | null): string | null => (value === null ? null : value.toISOString());

interface SummaryRow {
  id: number;
  url: string;
  proxy_count: number;
  alive_count: number;
  dead_count: number;
  unknown_count: number;
  added_at: Date;
  last_scraped_at: Date | null;
}

function summary(row: SummaryRow): SourceSummary {
  return {
    id: row.id,
    url: row.url,
    proxy_count: row.proxy_count,
    alive_count: row.alive_count,
    dead_count: row.dead_count,
    unknown_count: row.unknown_count,
    added_at: row.added_at.toISOString(),
    last_scraped_at: iso(row.last_scraped_at),
  };
}

export async function deleteSourcesById(pool: Queryable, userId: number, ids: readonly number[]): Promise<number> {
  if (ids.length === 0) return 0;
  const { rowCount } = await pool.query("DELETE FROM scrape_sources WHERE user_id = $1 AND id = ANY($2::int[])", [userId, ids]);
  return rowCount ?? 0;
}

export async function countSources(pool: Queryable, userId: number): Promise<number> {
  const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM scrape_sources WHERE user_id = $1", [userId]);
  return rows[0]?.n ?? 0;
}

/** One page of the user's sources, oldest first; `search` matches part of the URL (case-insensitive). */
export async function selectSourcePage(pool: Queryable, userId: number, page: number, pageSize: number, search: string | undefined): Promise<SourceSummary[]> {
  const { rows } = await pool.query<SummaryRow>(
    `SELECT s.id, s.url, s.added_at, s.last_scraped_at, ${COUNTS}
       FROM scrape_sources s
      WHERE s.user_id = $1 AND ($4::text IS NULL OR strpos(lower(s.url), lower($4)) > 0)
      ORDER BY s.id LIMIT $2 OFFSET $3`,
    [userId, pageSize, (page - 1) * pageSize, search ?? null],
  );
  return rows.map(summary);
}

export async function selectSourceDetail(pool: Queryable, userId: number, sourceId: number): Promise<SourceDetail | null> {
  const { rows } = await pool.query<
    SummaryRow & { last_status: string | null; last_error: string | null; last_duration_ms: number | null; last_proxy_count: number | null; found: number }
  >(
    `SELECT s.id, s.url, s.added_at, s.last_scraped_at, s.last_status, s.last_error, s.last_duration_ms, s.last_proxy_count, ${COUNTS},
            (SELECT count(*)::int FROM proxy_sources l WHERE l.source_id = s.id AND l.last_seen_at = s.last_scraped_at) AS found
       FROM scrape_sources s WHERE s.id = $1 AND s.user_id = $2`,
    [sourceId, userId],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    ...summary(row),
    last_status: row.last_status,
    last_error: row.last_error,
    last_duration_ms: row.last_duration_ms,
    last_proxy_count: row.last_proxy_count,
    found_by_last_scrape: row.found,
  };
}

export async function sourceIsUsers(pool: Queryable, userId: number, sourceId: number): Promise<boolean> {
  const { rowCount } = await pool.query("SELECT 1 FROM scrape_sources WHERE id = $1 AND user_id = $2", [sourceId, userId]);
  return (rowCount ?? 0) > 0;
}
