import type { Database } from "@roost/db";
import { parseProxyFilters, ProxyFilterError, type ProxyFilters } from "./proxy-filter.js";
import { proxyPageJson } from "./proxy-page-json.js";
import {
  countMatchingProxies,
  countUserProxies,
  proxyBelongsTo,
  selectFilterValues,
  selectProxyDetail,
  selectProxyPageText,
  selectStatistic,
  selectStatistics,
  type FilterValues,
  type ProxyRow,
  type StatisticRow,
} from "./proxy-read.repository.js";
import {
  ANONYMITY_LEVELS,
  DEFAULT_PAGE_SIZE,
  DEFAULT_STATISTICS_LIMIT,
  ESTIMATED_TYPES,
  MAX_PAGE_SIZE,
  MAX_STATISTICS_LIMIT,
  protocolOrder,
  protocolsOfMask,
  type ProxyProtocol,
} from "./proxy-identity.js";

/**
 * The read side of the proxy inventory: what REST, GraphQL and the dashboard
 * share. Every function takes the owner's id and never returns another
 * tenant's rows; a missing or foreign id is `null`.
 */

export { parseProxyFilters, ProxyFilterError };
export type { FilterValues, ProxyFilters };

/** Only the pool is needed: pass `deps.db`. */
export type ProxyDb = Pick<Database, "pool">;

export interface ReputationRecord {
  kind: string;
  score: number;
  label: string;
}

/** The contract's Proxy list row (plus `protocols`, the protocols alive at the latest check). */
export interface ProxyListItem {
  id: number;
  ip: string;
  port: number;
  protocols: ProxyProtocol[];
  estimated_type: string;
  response_time: number;
  country: string;
  anonymity_level: string;
  alive: boolean;
  /** ISO 8601, null when never checked. */
  latest_check: string | null;
  reputation: { overall: ReputationRecord };
}

export interface ProxyPage {
  proxies: ProxyListItem[];
  /** Rows matching the filters (not just this page). */
  total: number;
}

const MAX_PAGE = 2_147_483_647;

/** `{page}` of the path: a positive integer (any size), else ProxyFilterError. */
export function parsePage(raw: unknown): number {
  if (typeof raw !== "string" || !/^\d{1,400}$/.test(raw) || Number(raw) < 1) throw new ProxyFilterError("page must be a positive integer");
  // Any page past 2^31 - 1 is past the end of any list (ids are 32-bit): same answer, safe offset.
  return Math.min(Number(raw), MAX_PAGE);
}

/** `pageSize`: default 40, a positive integer, clamped to 100. */
export function parsePageSize(raw: unknown): number {
  return positiveClamped("pageSize", raw, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
}

/** Statistics `limit`: default 100, a positive integer, clamped to 500. */
export function parseStatisticsLimit(raw: unknown): number {
  return positiveClamped("limit", raw, DEFAULT_STATISTICS_LIMIT, MAX_STATISTICS_LIMIT);
}

function positiveClamped(name: string, raw: unknown, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  if (typeof raw !== "string" || !/^\d{1,400}$/.test(raw) || Number(raw) < 1) throw new ProxyFilterError(`${name} must be a positive integer`);
  return Math.min(Number(raw), max);
}

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

/** A list row as the contract shapes it (the detail's row; pages are written by proxyPageJson). */
export function toListItem(row: ProxyRow): ProxyListItem {
  return {
    id: row.id,
    ip: row.ip,
    port: row.port,
    protocols: protocolsOfMask(row.alive_protocols),
    estimated_type: row.estimated_type,
    response_time: row.response_time,
    country: row.country,
    anonymity_level: row.anonymity_level,
    alive: row.alive,
    latest_check: iso(row.latest_check),
    reputation: { overall: { kind: "overall", score: row.reputation_score, label: row.reputation_label } },
  };
}

/** Page number and size as OFFSET and LIMIT (1-based page; size clamped to 1..100). */
function pageWindow(page: number, pageSize: number): { limit: number; offset: number } {
  const limit = Math.min(Math.max(1, Math.floor(pageSize)), MAX_PAGE_SIZE);
  return { limit, offset: (Math.max(1, Math.floor(page)) - 1) * limit };
}

/**
 * One page of the user's proxies in id order with the true total, as the
 * UTF-8 bytes of `{proxies, total}` (1-based `page`; past the end an empty
 * list). One statement reads the page as text and `proxyPageJson` writes it.
 */
export async function listProxiesJson(db: ProxyDb, userId: number, filters: ProxyFilters, page: number, pageSize: number): Promise<Buffer> {
  const { limit, offset } = pageWindow(page, pageSize);
  const { page: text, total } = await selectProxyPageText(db.pool, userId, filters, limit, offset);
  return proxyPageJson(text, total);
}

/** The same page as objects (GraphQL): a view over `listProxiesJson`, so both answers are one path. */
export async function listProxies(db: ProxyDb, userId: number, filters: ProxyFilters, page: number, pageSize: number): Promise<ProxyPage> {
  return JSON.parse((await listProxiesJson(db, userId, filters, page, pageSize)).toString("utf8")) as ProxyPage;
}

/** Every proxy of the user (GET /api/getProxyCount). */
export function countProxies(db: ProxyDb, userId: number): Promise<number> {
  return countUserProxies(db.pool, userId);
}

/** Rows matching the filters. */
export function countFilteredProxies(db: ProxyDb, userId: number, filters: ProxyFilters): Promise<number> {
  return countMatchingProxies(db.pool, userId, filters);
}

/** GET /api/proxyFilters: countries, types and anonymity levels present in the user's list. */
export function listFilterValues(db: ProxyDb, userId: number): Promise<FilterValues> {
  return selectFilterValues(db.pool, userId, ESTIMATED_TYPES, ANONYMITY_LEVELS);
}

/** The contract's Proxy statistic. */
export interface ProxyStatistic {
  id: number;
  alive: boolean;
  attempt: number;
  response_time: number;
  protocol: string;
  anonymity_level: string;
  judge: string;
  created_at: string;
}

export interface ProxyStatisticDetail extends ProxyStatistic {
  response_body: string;
  regex: string;
}

export interface ProtocolResult {
  protocol: string;
  alive: boolean;
  attempt: number;
  response_time: number;
  anonymity_level: string;
  judge: string;
  checked_at: string;
  /** Results in the uptime window (the last 64 at most), how many were alive, and their share in percent. */
  check_count: number;
  success_count: number;
  uptime_percentage: number;
}

/**
 * GET /api/proxies/{id}: the list row, credentials and bookkeeping, the
 * latest result per protocol, the latest statistic, and the reputation
 * breakdown keyed by kind (`overall` plus one per protocol).
 */
export interface ProxyDetail extends ProxyListItem {
  username: string;
  password: string;
  has_auth: boolean;
  scheme_hint: string | null;
  asn: number | null;
  attempt: number | null;
  consecutive_failures: number;
  next_check_at: string;
  created_at: string;
  protocol_results: ProtocolResult[];
  latest_statistic: ProxyStatistic | null;
  reputation: { overall: ReputationRecord } & Record<string, ReputationRecord>;
}

const toStatistic = (row: StatisticRow): ProxyStatistic => ({
  id: Number(row.id),
  alive: row.alive,
  attempt: row.attempt,
  response_time: row.response_time,
  protocol: row.protocol,
  anonymity_level: row.anonymity_level,
  judge: row.judge_url,
  created_at: row.created_at.toISOString(),
});

export async function getProxyDetail(db: ProxyDb, userId: number, proxyId: number): Promise<ProxyDetail | null> {
  const found = await selectProxyDetail(db.pool, userId, proxyId);
  if (!found) return null;
  const { proxy, protocols, reputations, latest } = found;
  const item = toListItem(proxy);
  const reputation: { overall: ReputationRecord } & Record<string, ReputationRecord> = { overall: item.reputation.overall };
  // `overall` stays the row's copy, so the detail agrees with the list.
  for (const row of [...reputations].sort((a, b) => protocolOrder(a.kind) - protocolOrder(b.kind))) {
    if (row.kind !== "overall") reputation[row.kind] = { kind: row.kind, score: row.score, label: row.label };
  }
  return {
    ...item,
    username: proxy.username,
    password: proxy.password,
    has_auth: proxy.username !== "",
    scheme_hint: proxy.scheme_hint,
    asn: proxy.asn,
    attempt: proxy.attempt,
    consecutive_failures: proxy.consecutive_failures,
    next_check_at: proxy.next_check_at.toISOString(),
    created_at: proxy.created_at.toISOString(),
    protocol_results: [...protocols]
      .sort((a, b) => protocolOrder(a.protocol) - protocolOrder(b.protocol))
      .map((row) => ({
        protocol: row.protocol,
        alive: row.alive,
        attempt: row.attempt,
        response_time: row.response_time,
        anonymity_level: row.anonymity_level,
        judge: row.judge_url,
        checked_at: row.checked_at.toISOString(),
        check_count: row.check_count,
        success_count: row.success_count,
        uptime_percentage: row.check_count === 0 ? 0 : Math.round((row.success_count / row.check_count) * 100),
      })),
    latest_statistic: latest ? toStatistic(latest) : null,
    reputation,
  };
}

/** Newest first; null when the proxy is not the user's. */
export async function listStatistics(db: ProxyDb, userId: number, proxyId: number, limit: number): Promise<ProxyStatistic[] | null> {
  const clamped = Math.min(Math.max(1, Math.floor(limit)), MAX_STATISTICS_LIMIT);
  const [owned, rows] = await Promise.all([
    proxyBelongsTo(db.pool, userId, proxyId),
    selectStatistics(db.pool, userId, proxyId, clamped),
  ]);
  return owned ? rows.map(toStatistic) : null;
}

/** One statistic with its judge response; null when it is not this user's proxy's. */
export async function getStatisticDetail(db: ProxyDb, userId: number, proxyId: number, statisticId: string): Promise<ProxyStatisticDetail | null> {
  const row = await selectStatistic(db.pool, userId, proxyId, statisticId);
  if (!row) return null;
  return { ...toStatistic(row), response_body: row.body ?? "", regex: row.regex };
}
