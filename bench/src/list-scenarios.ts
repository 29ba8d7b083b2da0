import type pg from "pg";
import { protocolsOf } from "./bulk-scenarios.js";

/**
 * The list pages measured, each with the raw SQL doing the same work on the
 * same database (see `sqlSideStatements`). A scenario is data: the API path
 * of its i-th call, the page number and the filter the SQL side applies.
 */
export interface ListScenario {
  name: string;
  /** Path and query of the API request for the i-th call. */
  apiPath(i: number): string;
  /** The 1-based page of the i-th call. */
  page(i: number): number;
  filter: SqlFilter;
}

const PAGE_SIZE = 40;

const COLUMNS = `p.id, p.ip, p.port, p.alive_protocols, p.estimated_type, p.response_time, p.country,
  p.anonymity_level, p.alive, p.latest_check, p.reputation_label, p.reputation_score`;

/** A filter: SQL text using `$F1`, `$F2`, ... for its own parameters, and their values. */
export interface SqlFilter {
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

/** What the SQL side sends for one call: today a page statement and a total statement, run at once on two connections. */
export interface SqlSideStatements {
  page: pg.QueryConfig;
  total: pg.QueryConfig;
}

/**
 * The seam for the SQL side's statement: today a page statement and a total statement (not
 * the API's single one); it returns the API's statement once its builder is in a package.
 */
export function sqlSideStatements(scenario: ListScenario, userId: number, i: number): SqlSideStatements {
  const { filter } = scenario;
  const offset = (scenario.page(i) - 1) * PAGE_SIZE;
  const page: pg.QueryConfig =
    filter.statusAlive !== undefined
      ? {
          name: "bench_status_page",
          text: `SELECT ${COLUMNS} FROM proxies p WHERE p.id = ANY(roost_proxy_status_page_ids($1, $2, $3, $4)) ORDER BY p.id`,
          values: [userId, filter.statusAlive, PAGE_SIZE, offset],
        }
      : filter.text === ""
        ? {
            name: "bench_unfiltered_page",
            text: `SELECT ${COLUMNS} FROM proxies p WHERE p.id = ANY(roost_proxy_page_ids($1, $2, $3)) ORDER BY p.id`,
            values: [userId, PAGE_SIZE, offset],
          }
        : {
            text: `SELECT ${COLUMNS}
                     FROM (SELECT id FROM proxies WHERE user_id = $1${numbered(filter, 3)} ORDER BY id LIMIT $2 OFFSET $3) page
                     JOIN proxies p ON p.id = page.id
                    ORDER BY p.id`,
            values: [userId, PAGE_SIZE, offset, ...filter.params],
          };
  const total: pg.QueryConfig =
    filter.text === ""
      ? { text: `SELECT coalesce(sum(delta), 0) AS total FROM user_proxy_counts WHERE user_id = $1 AND dimension = 'country'`, values: [userId] }
      : filter.counter
        ? {
            text: `SELECT coalesce(sum(delta), 0) AS total FROM user_proxy_counts WHERE user_id = $1 AND dimension = $2 AND value = $3`,
            values: [userId, filter.counter.dimension, filter.counter.value],
          }
        : { text: `SELECT count(*) AS total FROM proxies WHERE user_id = $1${numbered(filter, 1)}`, values: [userId, ...filter.params] };
  return { page, total };
}

/** One page as the SQL side read it. */
export interface SqlPage {
  rows: Record<string, unknown>[];
  total: number;
}

/** Runs the SQL side of a scenario's i-th call. */
export async function sqlSide(pool: pg.Pool, scenario: ListScenario, userId: number, i: number): Promise<SqlPage> {
  const statements = sqlSideStatements(scenario, userId, i);
  const [page, total] = await Promise.all([pool.query<Record<string, unknown>>(statements.page), pool.query<{ total: string }>(statements.total)]);
  return { rows: page.rows, total: Number(total.rows[0]?.total ?? 0) };
}

/** `ip LIKE` prefix of the search scenario (the API's search box treats `45.1` as an IP prefix). */
export const SEARCH_TERM = "45.1";

export const LIST_SCENARIOS: readonly ListScenario[] = [
  { name: "first page", apiPath: () => "/api/getProxyPage/1", page: () => 1, filter: NO_FILTER },
  { name: "pages 1-100", apiPath: (i) => `/api/getProxyPage/${1 + (i % 100)}`, page: (i) => 1 + (i % 100), filter: NO_FILTER },
  { name: "page 1000", apiPath: () => "/api/getProxyPage/1000", page: () => 1000, filter: NO_FILTER },
  {
    name: "status+country+reputation",
    apiPath: () => "/api/getProxyPage/1?status=alive&country=US&reputation=good",
    page: () => 1,
    filter: { text: " AND alive AND country = ANY($F1::text[]) AND reputation_label = ANY($F2::text[])", params: [["US"], ["good"]] },
  },
  {
    // The Dead tab: ~70% of the rows, no partial index; the total from the counters' alive dimension.
    name: "status=dead",
    apiPath: () => "/api/getProxyPage/1?status=dead",
    page: () => 1,
    filter: { text: " AND NOT alive", params: [], counter: { dimension: "alive", value: "false" }, statusAlive: false },
  },
  {
    name: "search",
    apiPath: () => `/api/getProxyPage/1?search=${encodeURIComponent(SEARCH_TERM)}`,
    page: () => 1,
    filter: { text: " AND ip LIKE $F1", params: [`${SEARCH_TERM}%`] },
  },
];

/** Names of the scenarios the "first 100 unfiltered pages" target reads. */
export const FIRST_HUNDRED = "pages 1-100";

/** A list item as `GET /api/getProxyPage` sends it (the fields compared). */
interface ApiListItem {
  id: number;
  ip: string;
  port: number;
  protocols: string[];
  estimated_type: string;
  response_time: number;
  country: string;
  anonymity_level: string;
  alive: boolean;
  latest_check: string | null;
  reputation: { overall: { score: number; label: string } };
}

const latestCheckText = (value: unknown): string | null => (value instanceof Date ? value.toISOString() : value === null ? null : String(value));

/**
 * The differences between an API page body and the SQL side's rows, field by
 * field and in order (empty when they agree). The totals are compared too.
 */
export function pageDifferences(apiBody: string, sqlPage: SqlPage): string[] {
  const api = JSON.parse(apiBody) as { proxies: ApiListItem[]; total: number };
  const differences: string[] = [];
  if (api.total !== sqlPage.total) differences.push(`total: API ${api.total}, SQL ${sqlPage.total}`);
  if (api.proxies.length !== sqlPage.rows.length) differences.push(`rows: API ${api.proxies.length}, SQL ${sqlPage.rows.length}`);
  const count = Math.min(api.proxies.length, sqlPage.rows.length);
  for (let k = 0; k < count && differences.length < 5; k++) {
    const a = api.proxies[k];
    const s = sqlPage.rows[k];
    if (!a || !s) continue;
    const fromApi = [a.id, a.ip, a.port, a.protocols.join(","), a.estimated_type, a.response_time, a.country, a.anonymity_level, a.alive, a.latest_check, a.reputation.overall.label, a.reputation.overall.score];
    const fromSql = [
      Number(s.id), s.ip, Number(s.port), protocolsOf(Number(s.alive_protocols)).join(","), s.estimated_type, Number(s.response_time), s.country,
      s.anonymity_level, s.alive, latestCheckText(s.latest_check), s.reputation_label, Number(s.reputation_score),
    ];
    const a1 = JSON.stringify(fromApi);
    const s1 = JSON.stringify(fromSql);
    if (a1 !== s1) differences.push(`row ${k}: API ${a1}, SQL ${s1}`);
  }
  return differences;
}
