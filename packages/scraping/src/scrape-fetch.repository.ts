import type pg from "pg";
import type { ScrapeStatus } from "./fetch-source.js";

type Queryable = Pick<pg.Pool | pg.PoolClient, "query">;

/** A source URL claimed for one `scrape-url` job. */
export interface ClaimedFetch {
  fetchId: number;
  url: string;
  /** The lease's end as stored (ms): the claim is current while `next_fetch_at` still equals it. */
  leasedUntil: number;
}

/**
 * Claims up to `limit` due URLs, fair across users: each user's due URLs are
 * ranked oldest first and the claim takes every user's first before anyone's
 * second, so one user's thousand sources delay another's one by at most one
 * claim. Claimed rows move to now + lease (SKIP LOCKED); URLs without a
 * follower whose account exists are never claimed.
 */
export async function claimDueFetches(pool: Queryable, { limit, leaseMs }: { limit: number; leaseMs: number }): Promise<ClaimedFetch[]> {
  const { rows } = await pool.query<{ id: number; url: string; next_fetch_at: Date }>(
    `WITH due AS (
       SELECT f.id, f.next_fetch_at,
              row_number() OVER (PARTITION BY s.user_id ORDER BY f.next_fetch_at, f.id) AS place
         FROM scrape_fetches f
         JOIN scrape_sources s ON s.url = f.url
         JOIN users u ON u.id = s.user_id
        WHERE f.next_fetch_at <= now()
     ), picked AS (
       SELECT id, min(place) AS place, min(next_fetch_at) AS due FROM due GROUP BY id
        ORDER BY place, due, id LIMIT $1
     ), locked AS (
       SELECT f.id FROM scrape_fetches f JOIN picked ON picked.id = f.id
        WHERE f.next_fetch_at <= now()
        FOR UPDATE OF f SKIP LOCKED
     )
     UPDATE scrape_fetches f SET next_fetch_at = now() + make_interval(secs => $2::float8 / 1000)
       FROM locked WHERE f.id = locked.id
     RETURNING f.id, f.url, f.next_fetch_at`,
    [limit, leaseMs],
  );
  return rows.map((row) => ({ fetchId: row.id, url: row.url, leasedUntil: row.next_fetch_at.getTime() })).sort((a, b) => a.fetchId - b.fetchId);
}

/**
 * "Due now" as stored: timestamptz(3) rounds to the nearest millisecond, so a
 * plain now() may be stored up to half a millisecond ahead and miss a claim
 * made in that millisecond; truncating never lands in the future.
 */
const DUE_NOW = "date_trunc('milliseconds', now())";

/** Gives every followed URL without a fetch state one, due at once (sources written by any path get scraped). */
export async function adoptUnfetchedSources(pool: Queryable): Promise<number> {
  const { rowCount } = await pool.query(
    `INSERT INTO scrape_fetches (url, next_fetch_at)
     SELECT DISTINCT s.url, ${DUE_NOW} FROM scrape_sources s WHERE NOT EXISTS (SELECT 1 FROM scrape_fetches f WHERE f.url = s.url)
     ON CONFLICT (url) DO NOTHING`,
  );
  return rowCount ?? 0;
}

/** Makes sure each URL has its fetch state; new ones are due at once. Returns the states' ids by URL. */
export async function ensureFetches(client: Queryable, urls: readonly string[]): Promise<Map<string, number>> {
  if (urls.length === 0) return new Map();
  const { rows } = await client.query<{ id: number; url: string }>(
    `WITH added AS (
       INSERT INTO scrape_fetches (url, next_fetch_at) SELECT DISTINCT u, ${DUE_NOW} FROM unnest($1::text[]) AS u ON CONFLICT (url) DO NOTHING RETURNING id, url
     )
     SELECT id, url FROM added UNION ALL SELECT id, url FROM scrape_fetches WHERE url = ANY($1::text[])`,
    [urls],
  );
  return new Map(rows.map((row) => [row.url, row.id]));
}

export interface FetchState {
  fetchId: number;
  url: string;
  etag: string | null;
  lastModified: string | null;
  lastFetchedAt: Date | null;
  nextFetchAt: Date;
  lastStatus: ScrapeStatus | null;
  lastDurationMs: number | null;
  /** The proxy lines of the last successful fetch; null before the first. */
  proxyLines: string | null;
}

const FETCH_COLUMNS = `id, url, etag, last_modified, last_fetched_at, next_fetch_at, last_status, last_duration_ms, proxy_lines`;

interface FetchRow {
  id: number;
  url: string;
  etag: string | null;
  last_modified: string | null;
  last_fetched_at: Date | null;
  next_fetch_at: Date;
  last_status: ScrapeStatus | null;
  last_duration_ms: number | null;
  proxy_lines: string | null;
}

function fetchState(row: FetchRow): FetchState {
  return {
    fetchId: row.id,
    url: row.url,
    etag: row.etag,
    lastModified: row.last_modified,
    lastFetchedAt: row.last_fetched_at,
    nextFetchAt: row.next_fetch_at,
    lastStatus: row.last_status,
    lastDurationMs: row.last_duration_ms,
    proxyLines: row.proxy_lines,
  };
}

export async function selectFetch(pool: Queryable, fetchId: number): Promise<FetchState | null> {
  const { rows } = await pool.query<FetchRow>(`SELECT ${FETCH_COLUMNS} FROM scrape_fetches WHERE id = $1`, [fetchId]);
  return rows[0] ? fetchState(rows[0]) : null;
}

export async function selectFetchByUrl(pool: Queryable, url: string): Promise<FetchState | null> {
  const { rows } = await pool.query<FetchRow>(`SELECT ${FETCH_COLUMNS} FROM scrape_fetches WHERE url = $1`, [url]);
  return rows[0] ? fetchState(rows[0]) : null;
}

export interface FetchRecord {
  status: ScrapeStatus;
  error: string | null;
  durationMs: number;
  fetchedAt: Date;
  /** Set on a 200: the new validators and proxy lines (a failure keeps the old ones). */
  fresh?: { etag: string | null; lastModified: string | null; proxyLines: string };
}

/**
 * A fetch's outcome; the URL stays leased (next_fetch_at untouched) until
 * scheduleNextFetch, so a job that dies before every follower got the result
 * leaves the URL to be claimed again when the lease ends.
 */
export async function recordFetch(pool: Queryable, fetchId: number, record: FetchRecord): Promise<void> {
  await pool.query(
    `UPDATE scrape_fetches SET last_status = $2, last_error = $3, last_duration_ms = $4, last_fetched_at = $5,
            etag = CASE WHEN $6 THEN $7 ELSE etag END,
            last_modified = CASE WHEN $6 THEN $8 ELSE last_modified END,
            proxy_lines = CASE WHEN $6 THEN $9 ELSE proxy_lines END
      WHERE id = $1`,
    [
      fetchId,
      record.status,
      record.error,
      record.durationMs,
      record.fetchedAt,
      record.fresh !== undefined,
      record.fresh?.etag ?? null,
      record.fresh?.lastModified ?? null,
      record.fresh?.proxyLines ?? null,
    ],
  );
}

/** Ends a URL's lease once every follower has the fetch's result: due again one interval after the fetch. */
export async function scheduleNextFetch(pool: Queryable, fetchId: number, fetchedAt: Date, intervalSeconds: number): Promise<void> {
  await pool.query("UPDATE scrape_fetches SET next_fetch_at = $2::timestamptz + make_interval(secs => $3) WHERE id = $1", [fetchId, fetchedAt, intervalSeconds]);
}

/**
 * Makes a URL due now (a new follower of a URL never fetched successfully).
 * A URL never fetched at all is already due or leased to a running job, which
 * serves followers added while it runs: it is left alone.
 */
export async function makeFetchDue(pool: Queryable, fetchId: number): Promise<void> {
  await pool.query(`UPDATE scrape_fetches SET next_fetch_at = ${DUE_NOW} WHERE id = $1 AND next_fetch_at > ${DUE_NOW} AND last_fetched_at IS NOT NULL`, [fetchId]);
}

/**
 * Deletes the fetch state of every URL nobody follows any more (sources
 * deleted by their users, or purged with their accounts). A follower added
 * meanwhile gets a new one (adoptUnfetchedSources, or its scrape-source job).
 */
export async function deleteUnfollowedFetches(pool: Queryable): Promise<number> {
  const { rowCount } = await pool.query("DELETE FROM scrape_fetches f WHERE NOT EXISTS (SELECT 1 FROM scrape_sources s WHERE s.url = f.url)");
  return rowCount ?? 0;
}

/** Fetch states nobody follows any more. */
export async function deleteUnfollowedFetch(pool: Queryable, fetchId: number): Promise<boolean> {
  const { rowCount } = await pool.query(
    "DELETE FROM scrape_fetches f WHERE f.id = $1 AND NOT EXISTS (SELECT 1 FROM scrape_sources s WHERE s.url = f.url)",
    [fetchId],
  );
  return (rowCount ?? 0) > 0;
}

export interface Follower {
  sourceId: number;
  userId: number;
  role: string;
}

/** Users following a URL whose accounts exist (a deleted account's rows are being purged). */
export async function selectFollowers(pool: Queryable, url: string): Promise<Follower[]> {
  const { rows } = await pool.query<{ id: number; user_id: number; role: string }>(
    "SELECT s.id, s.user_id, u.role FROM scrape_sources s JOIN users u ON u.id = s.user_id WHERE s.url = $1 ORDER BY s.id",
    [url],
  );
  return rows.map((row) => ({ sourceId: row.id, userId: row.user_id, role: row.role }));
}

export async function selectFollower(pool: Queryable, userId: number, sourceId: number): Promise<(Follower & { url: string }) | null> {
  const { rows } = await pool.query<{ id: number; user_id: number; role: string; url: string }>(
    "SELECT s.id, s.user_id, u.role, s.url FROM scrape_sources s JOIN users u ON u.id = s.user_id WHERE s.id = $1 AND s.user_id = $2",
    [sourceId, userId],
  );
  const row = rows[0];
  return row ? { sourceId: row.id, userId: row.user_id, role: row.role, url: row.url } : null;
}

export interface SourceRecord {
  status: ScrapeStatus;
  error: string | null;
  durationMs: number;
  scrapedAt: Date;
  proxyCount: number;
  nextScrapeInSec: number;
}

/** One follower's outcome of a scrape; `scraped` of today's roll-up counts the proxies found. */
export async function recordSourceScrape(pool: Queryable, follower: Follower, record: SourceRecord): Promise<void> {
  await pool.query(
    `WITH source AS (
       UPDATE scrape_sources SET last_scraped_at = $2, last_status = $3, last_error = $4, last_duration_ms = $5,
              last_proxy_count = $6, next_scrape_at = $2::timestamptz + make_interval(secs => $7)
        WHERE id = $1 RETURNING user_id
     )
     INSERT INTO user_daily_stats (user_id, day, scraped)
     SELECT user_id, (now() AT TIME ZONE 'UTC')::date, $6 FROM source WHERE $6 > 0 AND EXISTS (SELECT 1 FROM users WHERE id = source.user_id)
     ON CONFLICT (user_id, day) DO UPDATE SET scraped = user_daily_stats.scraped + EXCLUDED.scraped`,
    [follower.sourceId, record.scrapedAt, record.status, record.error, record.durationMs, record.proxyCount, record.nextScrapeInSec],
  );
}
