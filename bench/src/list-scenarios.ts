import type pg from "pg";

/**
 * The list pages measured, each with the raw SQL doing the same work on the
 * same database: the page (ids first from the index, then those rows: the
 * standard deferred join, or for an unfiltered page the schema's
 * `roost_proxy_page_ids` in a prepared statement) and the exact total, run
 * on two pooled connections at once. Unfiltered and status-only totals come
 * from the per-user counters (`user_proxy_counts`), other filtered ones
 * from count(*).
 */
export interface ListScenario {
  name: string;
  /** Path and query of the API request for the i-th call. */
  apiPath(i: number): string;
  /** The raw SQL for the i-th call; resolves with the total it computed. */
  sql(pool: pg.Pool, userId: number, i: number): Promise<number>;
}

const PAGE_SIZE = 40;

const COLUMNS = `p.id, p.ip, p.port, p.alive_protocols, p.estimated_type, p.response_time, p.country,
  p.anonymity_level, p.alive, p.latest_check, p.reputation_label, p.reputation_score`;

/** A filter: SQL text using `$F1`, `$F2`, ... for its own parameters, and their values. */
interface SqlFilter {
  text: string;
  params: unknown[];
  /** The per-user counter that holds this filter's total (`user_proxy_counts` dimension and value), when one does. */
  counter?: { dimension: string; value: string };
  /** A status-only filter: its ids from the schema's `roost_proxy_status_page_ids` (migration 20261126200000), as the API reads them. */
  statusAlive?: boolean;
}

const NO_FILTER: SqlFilter = { text: "", params: [] };

/** Numbers the filter's `$Fk` placeholders after `before` other parameters. */
const numbered = (filter: SqlFilter, before: number): string => filter.text.replaceAll(/\$F(\d+)/g, (_, k: string) => `$${before + Number(k)}`);

/** The page's rows, read the way the schema offers for the filter. */
function pageRows(pool: pg.Pool, userId: number, offset: number, filter: SqlFilter): Promise<unknown> {
  if (filter.statusAlive !== undefined) {
    // What the schema offers the Alive / Dead tabs (migration 20261126200000), as for the unfiltered list.
    return pool.query({
      name: "bench_status_page",
      text: `SELECT ${COLUMNS} FROM proxies p WHERE p.id = ANY(roost_proxy_status_page_ids($1, $2, $3, $4)) ORDER BY p.id`,
      values: [userId, filter.statusAlive, PAGE_SIZE, offset],
    });
  }
  if (filter.text === "") {
    // What the schema offers the unfiltered list (migration 20261125000000): ids from one cached plan, a prepared statement.
    return pool.query({
      name: "bench_unfiltered_page",
      text: `SELECT ${COLUMNS} FROM proxies p WHERE p.id = ANY(roost_proxy_page_ids($1, $2, $3)) ORDER BY p.id`,
      values: [userId, PAGE_SIZE, offset],
    });
  }
  return pool.query(
    `SELECT ${COLUMNS}
       FROM (SELECT id FROM proxies WHERE user_id = $1${numbered(filter, 3)} ORDER BY id LIMIT $2 OFFSET $3) page
       JOIN proxies p ON p.id = page.id
      ORDER BY p.id`,
    [userId, PAGE_SIZE, offset, ...filter.params],
  );
}

async function pageAndTotal(pool: pg.Pool, userId: number, page: number, filter: SqlFilter): Promise<number> {
  const offset = (page - 1) * PAGE_SIZE;
  const pageQuery = pageRows(pool, userId, offset, filter);
  const totalQuery =
    filter.text === ""
      ? pool.query<{ total: string }>(
          `SELECT coalesce(sum(delta), 0) AS total FROM user_proxy_counts WHERE user_id = $1 AND dimension = 'country'`,
          [userId],
        )
      : filter.counter
        ? pool.query<{ total: string }>(
            `SELECT coalesce(sum(delta), 0) AS total FROM user_proxy_counts WHERE user_id = $1 AND dimension = $2 AND value = $3`,
            [userId, filter.counter.dimension, filter.counter.value],
          )
        : pool.query<{ total: string }>(`SELECT count(*) AS total FROM proxies WHERE user_id = $1${numbered(filter, 1)}`, [userId, ...filter.params]);
  const [, total] = await Promise.all([pageQuery, totalQuery]);
  return Number(total.rows[0]?.total ?? 0);
}

/** `ip LIKE` prefix of the search scenario (the API's search box treats `45.1` as an IP prefix). */
export const SEARCH_TERM = "45.1";

export const LIST_SCENARIOS: readonly ListScenario[] = [
  {
    name: "first page",
    apiPath: () => "/api/getProxyPage/1",
    sql: (pool, userId) => pageAndTotal(pool, userId, 1, NO_FILTER),
  },
  {
    name: "pages 1-100",
    apiPath: (i) => `/api/getProxyPage/${1 + (i % 100)}`,
    sql: (pool, userId, i) => pageAndTotal(pool, userId, 1 + (i % 100), NO_FILTER),
  },
  {
    name: "page 1000",
    apiPath: () => "/api/getProxyPage/1000",
    sql: (pool, userId) => pageAndTotal(pool, userId, 1000, NO_FILTER),
  },
  {
    name: "status+country+reputation",
    apiPath: () => "/api/getProxyPage/1?status=alive&country=US&reputation=good",
    sql: (pool, userId) =>
      pageAndTotal(pool, userId, 1, {
        text: " AND alive AND country = ANY($F1::text[]) AND reputation_label = ANY($F2::text[])",
        params: [["US"], ["good"]],
      }),
  },
  {
    // The Dead tab: ~70% of the rows, no partial index; the total from the counters' alive dimension.
    name: "status=dead",
    apiPath: () => "/api/getProxyPage/1?status=dead",
    sql: (pool, userId) => pageAndTotal(pool, userId, 1, { text: " AND NOT alive", params: [], counter: { dimension: "alive", value: "false" }, statusAlive: false }),
  },
  {
    name: "search",
    apiPath: () => `/api/getProxyPage/1?search=${encodeURIComponent(SEARCH_TERM)}`,
    sql: (pool, userId) => pageAndTotal(pool, userId, 1, { text: " AND ip LIKE $F1", params: [`${SEARCH_TERM}%`] }),
  },
];

/** Names of the scenarios the "first 100 unfiltered pages" target reads. */
export const FIRST_HUNDRED = "pages 1-100";
