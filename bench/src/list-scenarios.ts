import type pg from "pg";
import { splitRecordText } from "@roost/db";
import { parseProxyFilters, protocolsOfMask, selectProxyPageText, type ProxyPage } from "@roost/inventory";

/**
 * The list pages measured, each beside the raw SQL doing the same work on
 * the same database: the API's own page statement (`selectProxyPageText`
 * from @roost/inventory) with the filters of the API path, so the ratio
 * measures the HTTP layer and the page writer, not a different query.
 */
export interface ListScenario {
  name: string;
  /** Path and query of the API request for the i-th call. */
  apiPath(i: number): string;
}

const PAGE_SIZE = 40;

/** One page as the SQL side read it: the statement's record text and the total. */
export interface SqlPage {
  text: string | null;
  total: number;
}

/** Runs the SQL side of a scenario's i-th call: the statement the API sends for that path. */
export async function sqlSide(pool: pg.Pool, scenario: ListScenario, userId: number, i: number): Promise<SqlPage> {
  const url = new URL(scenario.apiPath(i), "http://bench");
  const page = Number(url.pathname.split("/").pop());
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(key);
    query[key] = values.length === 1 ? (values[0] ?? "") : values;
  }
  const { page: text, total } = await selectProxyPageText(pool, userId, parseProxyFilters(query), PAGE_SIZE, (page - 1) * PAGE_SIZE);
  return { text, total };
}

/** `ip LIKE` prefix of the search scenario (the API's search box treats `45.1` as an IP prefix). */
export const SEARCH_TERM = "45.1";

export const LIST_SCENARIOS: readonly ListScenario[] = [
  { name: "first page", apiPath: () => "/api/getProxyPage/1" },
  { name: "pages 1-100", apiPath: (i) => `/api/getProxyPage/${1 + (i % 100)}` },
  { name: "page 1000", apiPath: () => "/api/getProxyPage/1000" },
  { name: "status+country+reputation", apiPath: () => "/api/getProxyPage/1?status=alive&country=US&reputation=good" },
  // The Dead tab: ~70% of the rows, no partial index; the total from the counters' alive dimension.
  { name: "status=dead", apiPath: () => "/api/getProxyPage/1?status=dead" },
  { name: "search", apiPath: () => `/api/getProxyPage/1?search=${encodeURIComponent(SEARCH_TERM)}` },
];

/** Names of the scenarios the "first 100 unfiltered pages" target reads. */
export const FIRST_HUNDRED = "pages 1-100";

/** The statement's records (one per line, fields in the page statement's order) as values, decoded apart from the API's writer. */
function sqlRows(text: string | null): (string | null)[][] {
  if (!text) return [];
  return text.split(/\n(?=\()/).map((record) => splitRecordText(record));
}

/**
 * The differences between an API page body and the SQL side's page, field by
 * field and in order (empty when they agree). The totals are compared too.
 */
export function pageDifferences(apiBody: string, sqlPage: SqlPage): string[] {
  const api = JSON.parse(apiBody) as ProxyPage;
  const rows = sqlRows(sqlPage.text);
  const differences: string[] = [];
  if (api.total !== sqlPage.total) differences.push(`total: API ${api.total}, SQL ${sqlPage.total}`);
  if (api.proxies.length !== rows.length) differences.push(`rows: API ${api.proxies.length}, SQL ${rows.length}`);
  const count = Math.min(api.proxies.length, rows.length);
  for (let k = 0; k < count && differences.length < 5; k++) {
    const a = api.proxies[k];
    const s = rows[k];
    if (!a || !s) continue;
    const fromApi = [a.id, a.ip, a.port, a.protocols.join(","), a.estimated_type, a.response_time, a.country, a.anonymity_level, a.alive, a.latest_check, a.reputation.overall.label, a.reputation.overall.score];
    const [id, ip, port, mask, type, time, country, anonymity, alive, latest, label, score] = s;
    const fromSql = [Number(id), ip, Number(port), protocolsOfMask(Number(mask)).join(","), type, Number(time), country, anonymity, alive === "t", latest ?? null, label, Number(score)];
    const a1 = JSON.stringify(fromApi);
    const s1 = JSON.stringify(fromSql);
    if (a1 !== s1) differences.push(`row ${k}: API ${a1}, SQL ${s1}`);
  }
  return differences;
}
