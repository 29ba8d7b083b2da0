import type pg from "pg";
import { buildProxyWhere, isUnfiltered, type ProxyFilters } from "./proxy-filter.js";

/**
 * Reads of the proxy inventory, in SQL on the pool (DESIGN.md lets hot paths
 * skip Prisma): every query starts with `user_id = $1` and walks one of the
 * `(user_id, ..., id)` indexes in id order.
 */
export type SqlPool = Pick<pg.ClientBase, "query">;

export interface ProxyRow {
  id: number;
  ip: string;
  port: number;
  alive_protocols: number;
  estimated_type: string;
  response_time: number;
  country: string;
  anonymity_level: string;
  alive: boolean;
  latest_check: Date | null;
  reputation_label: string;
  reputation_score: number;
}

const ROW_COLUMNS = `p.id, p.ip, p.port, p.alive_protocols, p.estimated_type, p.response_time, p.country,
  p.anonymity_level, p.alive, p.latest_check, p.reputation_label, p.reputation_score`;

/** Every column as the text PostgreSQL sent. */
const RAW_TEXT = { getTypeParser: () => (value: string) => value };

const TUPLE_COLUMNS = `p.id, p.ip, p.port, p.alive_protocols, p.estimated_type, p.response_time, p.country, p.anonymity_level, p.alive,
  to_char(p.latest_check AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), p.reputation_label, p.reputation_score`;

/**
 * One page and its total in one round trip, the page as one text value: each row's record text, newline-joined
 * in id order (fields: id, ip, port, alive_protocols, estimated_type, response_time, country, anonymity_level,
 * alive as t/f, latest_check as toISOString() or NULL, reputation_label, score as the `real`'s shortest text).
 */
export async function selectProxyPageText(
  pool: SqlPool,
  userId: number,
  filters: ProxyFilters,
  limit: number,
  offset: number,
): Promise<{ page: string | null; total: number }> {
  const where = buildProxyWhere(userId, filters, "p", 3);
  const params: unknown[] = [limit, offset, ...where.params];
  const next = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const counter = totalFromCounters(filters);
  // A count(*) total is slow on large lists, so it runs beside the page on a second connection.
  let total = `(SELECT NULL::text AS total, 0 AS row_count)`;
  if (counter) {
    const keys = next(counter.keys);
    total = `(SELECT COALESCE(sum(delta) FILTER (WHERE ${keys}::text[] IS NULL OR value = ANY(${keys}::text[])), 0) AS total, count(*)::int AS row_count
                FROM user_proxy_counts WHERE user_id = $3 AND dimension = ${next(counter.dimension)})`;
  }
  const counted = counter ? null : countMatchingProxies(pool, userId, filters);
  counted?.catch(() => undefined);
  // The unfiltered page and the Alive / Dead tabs are named statements with one plan (their ids come from
  // roost_proxy_page_ids and roost_proxy_status_page_ids). Their texts are kept, so the driver's check that
  // a name keeps its text compares one string with itself.
  let name: string | undefined;
  let text: string;
  if (isUnfiltered(filters)) {
    name = "roost_proxy_page_unfiltered";
    text = unfilteredPageText ??= pageStatement(`proxies p CROSS JOIN ${total} c WHERE p.id = ANY(roost_proxy_page_ids($3, $1, $2))`);
  } else if (counter?.dimension === "alive") {
    const wantAlive = next(filters.status === "alive");
    name = "roost_proxy_page_status";
    text = statusPageText ??= pageStatement(`proxies p CROSS JOIN ${total} c WHERE p.id = ANY(roost_proxy_status_page_ids($3, ${wantAlive}::boolean, $1, $2))`);
  } else {
    text = pageStatement(`(SELECT p.id FROM proxies p WHERE ${where.text} ORDER BY p.id LIMIT $1 OFFSET $2) page
       JOIN proxies p ON p.id = page.id
       CROSS JOIN ${total} c`);
  }
  // Grouped by the one total row: an empty page gives no row at all.
  const result = await pool.query<[page: string, total: string | null, counterRows: string]>({
    name,
    text,
    values: params,
    rowMode: "array",
    types: RAW_TEXT,
  });
  const first = result.rows[0];
  const page = first ? first[0] : null;
  if (counted) return { page, total: await counted };
  if (!first) return { page, total: await countMatchingProxies(pool, userId, filters) };
  if (Number(first[2]) > FOLD_THRESHOLD) await foldUserCounters(pool, userId);
  return { page, total: Number(first[1]) };
}

const pageStatement = (from: string): string => `SELECT string_agg(ROW(${TUPLE_COLUMNS})::text, E'\\n' ORDER BY p.id), c.total::text, c.row_count
       FROM ${from}
      GROUP BY c.total, c.row_count`;

/** The unfiltered page's and the status-only page's statement texts, kept after their first use (their values are all parameters). */
let unfilteredPageText: string | undefined;
let statusPageText: string | undefined;

/** The dimensions of `user_proxy_counts` (migrations 20261123000000 and 20261126100000). */
type CounterDimension = "country" | "reputation" | "alive";

/** Which counters hold the total of these filters, or null when only a count(*) has it. */
function totalFromCounters(filters: ProxyFilters): { dimension: CounterDimension; keys: string[] | null } | null {
  if (isUnfiltered(filters)) return { dimension: "country", keys: null };
  if (isUnfiltered({ ...filters, countries: [] })) return { dimension: "country", keys: filters.countries };
  if (isUnfiltered({ ...filters, reputation: [] })) return { dimension: "reputation", keys: filters.reputation };
  // The Alive / Dead tabs: the capture function logs `alive` as 'true' or 'false'.
  if (isUnfiltered({ ...filters, status: undefined })) return { dimension: "alive", keys: [filters.status === "alive" ? "true" : "false"] };
  return null;
}

/** Rows matching the filters; unfiltered and single-dimension counts come from the per-user counters. */
export async function countMatchingProxies(pool: SqlPool, userId: number, filters: ProxyFilters): Promise<number> {
  const counter = totalFromCounters(filters);
  if (counter) return counterSum(pool, userId, counter.dimension, counter.keys);
  const where = buildProxyWhere(userId, filters);
  const { rows } = await pool.query<{ total: string }>(`SELECT count(*) AS total FROM proxies p WHERE ${where.text}`, where.params);
  return Number(rows[0]?.total ?? 0);
}

/**
 * Delta rows of `user_proxy_counts` (written by triggers on proxies) fold into one row per key past this
 * many rows of one dimension. Every unfiltered page sums them, so the log is kept short; folded, a list
 * has at most one row per country.
 */
export const FOLD_THRESHOLD = 256;

/** All proxies of a user: the sum of the `country` deltas (every row has exactly one country). */
export async function countUserProxies(pool: SqlPool, userId: number): Promise<number> {
  return counterSum(pool, userId, "country", null);
}

async function counterSum(pool: SqlPool, userId: number, dimension: CounterDimension, keys: string[] | null): Promise<number> {
  const { rows } = await pool.query<{ total: string | null; row_count: number }>(
    `SELECT sum(delta) FILTER (WHERE $3::text[] IS NULL OR value = ANY($3::text[])) AS total, count(*)::int AS row_count
       FROM user_proxy_counts WHERE user_id = $1 AND dimension = $2`,
    [userId, dimension, keys],
  );
  const row = rows[0];
  if (row && row.row_count > FOLD_THRESHOLD) await foldUserCounters(pool, userId);
  return Number(row?.total ?? 0);
}

/**
 * Replaces a user's delta rows by one row per key in a single statement.
 * Safe with concurrent writers (their new rows are not in this statement's
 * snapshot and survive) and with concurrent folds (a row is deleted once).
 */
export async function foldUserCounters(pool: SqlPool, userId: number): Promise<void> {
  await pool.query(
    `WITH gone AS (DELETE FROM user_proxy_counts WHERE user_id = $1 RETURNING dimension, value, delta)
     INSERT INTO user_proxy_counts (user_id, dimension, value, delta)
     SELECT $1, dimension, value, sum(delta) FROM gone GROUP BY dimension, value HAVING sum(delta) <> 0`,
    [userId],
  );
}

export interface FilterValues {
  countries: string[];
  types: string[];
  anonymityLevels: string[];
}

/**
 * Values present in the user's list. Countries come from the counters;
 * types and anonymity levels have four values each, so each is one
 * existence probe instead of a scan of the list.
 */
export async function selectFilterValues(pool: SqlPool, userId: number, types: readonly string[], levels: readonly string[]): Promise<FilterValues> {
  const [countries, present] = await Promise.all([
    pool.query<{ value: string }>(
      `SELECT value FROM user_proxy_counts WHERE user_id = $1 AND dimension = 'country'
        GROUP BY value HAVING sum(delta) > 0 ORDER BY value`,
      [userId],
    ),
    pool.query<{ types: string[]; levels: string[] }>(
      `SELECT ARRAY(SELECT t FROM unnest($2::text[]) WITH ORDINALITY AS u(t, n)
                     WHERE EXISTS (SELECT 1 FROM proxies p WHERE p.user_id = $1 AND p.estimated_type = u.t) ORDER BY n) AS types,
              ARRAY(SELECT a FROM unnest($3::text[]) WITH ORDINALITY AS u(a, n)
                     WHERE EXISTS (SELECT 1 FROM proxies p WHERE p.user_id = $1 AND p.anonymity_level = u.a) ORDER BY n) AS levels`,
      [userId, types, levels],
    ),
  ]);
  return {
    countries: countries.rows.map((r) => r.value),
    types: present.rows[0]?.types ?? [],
    anonymityLevels: present.rows[0]?.levels ?? [],
  };
}

export interface ProxyDetailRow extends ProxyRow {
  username: string;
  password: string;
  scheme_hint: string | null;
  asn: number | null;
  attempt: number | null;
  next_check_at: Date;
  consecutive_failures: number;
  created_at: Date;
}

export interface ProtocolStatusRow {
  protocol: string;
  alive: boolean;
  attempt: number;
  response_time: number;
  anonymity_level: string;
  judge_url: string;
  /** Results in the uptime window (the last 64 at most) and how many were alive. */
  check_count: number;
  success_count: number;
  checked_at: Date;
}

export interface ReputationRow {
  kind: string;
  score: number;
  label: string;
  updated_at: Date;
}

export interface StatisticRow {
  id: string;
  alive: boolean;
  attempt: number;
  response_time: number;
  protocol: string;
  anonymity_level: string;
  judge_url: string;
  created_at: Date;
}

export interface StatisticDetailRow extends StatisticRow {
  regex: string;
  body: string | null;
}

export async function selectProxyDetail(
  pool: SqlPool,
  userId: number,
  proxyId: number,
): Promise<{ proxy: ProxyDetailRow; protocols: ProtocolStatusRow[]; reputations: ReputationRow[]; latest: StatisticRow | null } | null> {
  const { rows } = await pool.query<ProxyDetailRow>(
    `SELECT ${ROW_COLUMNS}, p.username, p.password, p.scheme_hint, p.asn, p.attempt, p.next_check_at,
            p.consecutive_failures, p.created_at
       FROM proxies p WHERE p.id = $1 AND p.user_id = $2`,
    [proxyId, userId],
  );
  const proxy = rows[0];
  if (!proxy) return null;
  const [protocols, reputations, latest] = await Promise.all([
    pool.query<ProtocolStatusRow>(
      `SELECT protocol, alive, attempt, response_time, anonymity_level, judge_url, history_length::int AS check_count,
              bit_count(history::bit(64))::int AS success_count, checked_at
         FROM proxy_protocol_status WHERE proxy_id = $1`,
      [proxyId],
    ),
    pool.query<ReputationRow>(`SELECT kind, score, label, updated_at FROM proxy_reputations WHERE proxy_id = $1`, [proxyId]),
    selectStatistics(pool, userId, proxyId, 1),
  ]);
  return { proxy, protocols: protocols.rows, reputations: reputations.rows, latest: latest[0] ?? null };
}

/** True when the proxy exists and belongs to the user. */
export async function proxyBelongsTo(pool: SqlPool, userId: number, proxyId: number): Promise<boolean> {
  const { rowCount } = await pool.query(`SELECT 1 FROM proxies WHERE id = $1 AND user_id = $2`, [proxyId, userId]);
  return (rowCount ?? 0) > 0;
}

/** Newest first, through `(proxy_id, created_at DESC)` on every partition. */
export async function selectStatistics(pool: SqlPool, userId: number, proxyId: number, limit: number): Promise<StatisticRow[]> {
  const { rows } = await pool.query<StatisticRow>(
    `SELECT id::text AS id, alive, attempt, response_time, protocol, anonymity_level, judge_url, created_at
       FROM proxy_statistics WHERE proxy_id = $1 AND user_id = $2
      ORDER BY created_at DESC, id DESC LIMIT $3`,
    [proxyId, userId, limit],
  );
  return rows;
}

export async function selectStatistic(pool: SqlPool, userId: number, proxyId: number, statisticId: string): Promise<StatisticDetailRow | null> {
  const { rows } = await pool.query<StatisticDetailRow>(
    `SELECT s.id::text AS id, s.alive, s.attempt, s.response_time, s.protocol, s.anonymity_level, s.judge_url, s.created_at,
            s.regex, r.body
       FROM proxy_statistics s
       LEFT JOIN proxy_statistic_responses r ON r.statistic_id = s.id AND r.created_at = s.created_at
      WHERE s.id = $1::bigint AND s.proxy_id = $2 AND s.user_id = $3`,
    [statisticId, proxyId, userId],
  );
  return rows[0] ?? null;
}
