import pg from "pg";
import { formatIpv4, parseIpv4 } from "@roost/net";
import {
  ANONYMITY_LEVELS,
  ESTIMATED_TYPES,
  MAX_SEARCH_LENGTH,
  PROXY_PROTOCOLS,
  protocolMask,
  REPUTATION_LABELS,
  type ProxyProtocol,
  type ReputationLabel,
} from "./proxy-identity.js";

/**
 * What a list, an export or a delete keeps (DESIGN.md "Proxies"). Lists OR
 * within themselves, fields AND with each other; an empty list or an absent
 * field does not restrict.
 */
export interface ProxyFilters {
  /** IP prefix, exact `ip:port`, country code or type (list only). */
  search?: string;
  /** alive = alive on at least one protocol at the latest check; dead = everything else. */
  status?: "alive" | "dead";
  /** Alive on one of these at its latest check (with `dead`: not alive on one of them). */
  protocols: ProxyProtocol[];
  countries: string[];
  types: string[];
  anonymity: string[];
  reputation: ReputationLabel[];
  /** Milliseconds; keeps response_time <= this. Absent or 0 = no limit. */
  maxTimeoutMs?: number;
  /** Keeps rows whose latest success needed attempt <= this (never-alive rows have none). */
  maxRetries?: number;
  /** Only these ids (export `proxies`, delete `selected`). */
  ids?: number[];
  /** Only proxies linked to this scrape source (GET /api/scrapingSources/{id}/proxies). */
  sourceId?: number;
}

/**
 * The filter part of an export request and of delete Mode B (contract
 * "Export request"), as the gateway's schema parses it; null means absent.
 */
export interface BulkFilterRequest {
  proxies?: number[] | null;
  filter?: boolean | null;
  http?: boolean | null;
  https?: boolean | null;
  socks4?: boolean | null;
  socks5?: boolean | null;
  maxRetries?: number | null;
  /** Milliseconds; 0 means no limit. */
  maxTimeout?: number | null;
  proxyStatus?: "all" | "alive" | "dead" | null;
  reputationLabels?: ReputationLabel[] | null;
}

export const emptyFilters = (): ProxyFilters => ({ protocols: [], countries: [], types: [], anonymity: [], reputation: [] });

/** A filter value a client got wrong; the router answers 400 with the message. */
export class ProxyFilterError extends Error {
  override readonly name = "ProxyFilterError";
}

/** Repeated parameters (`?protocol=http&protocol=socks5`) and comma lists (`?protocol=http,socks5`) both work. */
function values(raw: unknown): string[] {
  // Absent (most parameters of most list requests): no Set and no copies.
  if (raw === undefined) return [];
  const list: unknown[] = Array.isArray(raw) ? raw : [raw];
  const out: string[] = [];
  for (const item of list) {
    if (typeof item !== "string") throw new ProxyFilterError("Malformed query parameter");
    for (const part of item.split(",")) {
      const trimmed = part.trim();
      if (trimmed !== "") out.push(trimmed);
    }
  }
  return out.length < 2 ? out : [...new Set(out)];
}

function oneOf<T extends string>(name: string, raw: unknown, allowed: readonly T[], normalise: (v: string) => string = (v) => v): T[] {
  return values(raw).map((value) => {
    const normalised = normalise(value);
    const match = allowed.find((candidate) => candidate === normalised);
    if (match === undefined) throw new ProxyFilterError(`${name} must be one of ${allowed.join(", ")}`);
    return match;
  });
}

function single(name: string, raw: unknown): string | undefined {
  const list = values(raw);
  if (list.length > 1) throw new ProxyFilterError(`${name} must be given once`);
  return list[0];
}

function nonNegativeInteger(name: string, raw: unknown): number | undefined {
  const text = single(name, raw);
  if (text === undefined) return undefined;
  if (!/^\d{1,10}$/.test(text) || Number(text) > 2_147_483_647) throw new ProxyFilterError(`${name} must be a non-negative integer`);
  return Number(text);
}

const anonymityOf = (value: string): string => (value.toLowerCase() === "n/a" ? "N/A" : value.toLowerCase());

/**
 * The list's query parameters (contract "Proxy list query parameters") as
 * filters; a wrong value throws ProxyFilterError. `page` and `pageSize` are
 * not filters and are ignored here.
 */
export function parseProxyFilters(query: Record<string, unknown>): ProxyFilters {
  const filters = emptyFilters();
  const rawSearch = Array.isArray(query.search) ? (query.search.length === 1 ? query.search[0] : null) : query.search;
  if (rawSearch === null || (rawSearch !== undefined && typeof rawSearch !== "string")) throw new ProxyFilterError("search must be given once");
  const search = typeof rawSearch === "string" && rawSearch.trim() !== "" ? rawSearch.trim() : undefined;
  if (search !== undefined) {
    if (search.length > MAX_SEARCH_LENGTH) throw new ProxyFilterError(`search must be at most ${MAX_SEARCH_LENGTH} characters`);
    filters.search = search;
  }
  const status = oneOf("status", query.status, ["alive", "dead"] as const, (v) => v.toLowerCase());
  if (status.length > 1) throw new ProxyFilterError("status must be given once");
  filters.status = status[0];
  filters.protocols = oneOf("protocol", query.protocol, PROXY_PROTOCOLS, (v) => v.toLowerCase());
  // The geo data's values: ISO 3166-1 alpha-2 codes and N/A. A well-formed code nobody has matches nothing.
  filters.countries = values(query.country).map((v) => {
    const upper = v.toUpperCase();
    if (upper !== "N/A" && !/^[A-Z]{2}$/.test(upper)) throw new ProxyFilterError("country must be a two-letter country code or N/A");
    return upper;
  });
  filters.types = oneOf("type", query.type, ESTIMATED_TYPES, (v) => v.toLowerCase());
  filters.anonymity = oneOf("anonymity", query.anonymity, ANONYMITY_LEVELS, anonymityOf);
  filters.reputation = oneOf("reputation", query.reputation, REPUTATION_LABELS, (v) => v.toLowerCase());
  const maxTimeout = nonNegativeInteger("maxTimeout", query.maxTimeout);
  if (maxTimeout) filters.maxTimeoutMs = maxTimeout;
  filters.maxRetries = nonNegativeInteger("maxRetries", query.maxRetries);
  return filters;
}

/**
 * Export and delete Mode B bodies as filters. With `filter` false only
 * `proxies`, `proxyStatus` and `reputationLabels` act. The protocol booleans
 * select protocols; none or all four selected means no protocol restriction.
 */
export function filtersFromBulkRequest(request: BulkFilterRequest, options: { ids: boolean }): ProxyFilters {
  const filters = emptyFilters();
  if (request.proxyStatus === "alive" || request.proxyStatus === "dead") filters.status = request.proxyStatus;
  filters.reputation = [...new Set(request.reputationLabels ?? [])];
  if (options.ids && request.proxies && request.proxies.length > 0) filters.ids = [...new Set(request.proxies)];
  if (request.filter === true) {
    const selected = PROXY_PROTOCOLS.filter((protocol) => request[protocol] === true);
    if (selected.length > 0 && selected.length < PROXY_PROTOCOLS.length) filters.protocols = selected;
    if (request.maxTimeout) filters.maxTimeoutMs = request.maxTimeout;
    if (request.maxRetries !== null && request.maxRetries !== undefined) filters.maxRetries = request.maxRetries;
  }
  return filters;
}

/** True when nothing but the owner restricts the rows. */
export function isUnfiltered(filters: ProxyFilters): boolean {
  return (
    filters.search === undefined &&
    filters.status === undefined &&
    filters.protocols.length === 0 &&
    filters.countries.length === 0 &&
    filters.types.length === 0 &&
    filters.anonymity.length === 0 &&
    filters.reputation.length === 0 &&
    filters.maxTimeoutMs === undefined &&
    filters.maxRetries === undefined &&
    filters.ids === undefined &&
    filters.sourceId === undefined
  );
}

/** A parameterised SQL condition: `text` uses `$n` placeholders numbered into `params`. */
export interface SqlCondition {
  text: string;
  params: unknown[];
}

const IP_PREFIX = /^[0-9.]{1,15}$/;
const IP_PORT = /^([0-9.]{7,15}):(\d{1,5})$/;

/** The search box: OR of IP prefix, exact ip:port, country code and type (prefix). */
function searchCondition(term: string, alias: string, param: (value: unknown) => string): string {
  const options: string[] = [];
  const ipPort = IP_PORT.exec(term);
  const ipNumber = ipPort ? parseIpv4(ipPort[1] ?? "") : -1;
  if (ipPort && ipNumber >= 0) {
    // As the upload stores it: leading zeros dropped (008.008.008.002:01080 is 8.8.8.2:1080).
    options.push(`(${alias}.ip = ${param(formatIpv4(ipNumber))} AND ${alias}.port = ${param(Number(ipPort[2]))})`);
  }
  if (IP_PREFIX.test(term)) options.push(`${alias}.ip LIKE ${param(`${term}%`)}`);
  const lower = term.toLowerCase();
  if (/^[a-z]{2}$/.test(lower) || lower === "n/a") options.push(`${alias}.country = ${param(lower === "n/a" ? "N/A" : lower.toUpperCase())}`);
  const types = lower.length >= 3 ? ESTIMATED_TYPES.filter((type) => type.startsWith(lower)) : [];
  if (types.length > 0) options.push(`${alias}.estimated_type = ANY(${param(types)}::text[])`);
  return options.length === 0 ? "FALSE" : `(${options.join(" OR ")})`;
}

/**
 * The WHERE clause every reader of the inventory shares (list, count, export, delete), so a filter means the
 * same everywhere. `userId` is always the first condition: every query hits a `(user_id, ...)` index and a
 * tenant never sees another's rows. Placeholders start after `firstParam - 1`.
 */
export function buildProxyWhere(userId: number, filters: ProxyFilters, alias = "p", firstParam = 1): SqlCondition {
  const params: unknown[] = [];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${firstParam + params.length - 1}`;
  };
  const conditions = [`${alias}.user_id = ${param(userId)}`];
  if (filters.ids !== undefined) conditions.push(`${alias}.id = ANY(${param(filters.ids)}::int[])`);
  if (filters.sourceId !== undefined) conditions.push(`EXISTS (SELECT 1 FROM proxy_sources ps WHERE ps.proxy_id = ${alias}.id AND ps.source_id = ${param(filters.sourceId)})`);
  if (filters.search !== undefined && filters.search.trim() !== "") conditions.push(searchCondition(filters.search.trim(), alias, param));
  // A protocol filter without status=dead selects alive rows (alive_protocols <> 0 means alive): saying
  // so lets PostgreSQL use the partial indexes on alive proxies (migration 20261124000000).
  if (filters.status === "alive" || (filters.protocols.length > 0 && filters.status !== "dead")) conditions.push(`${alias}.alive`);
  if (filters.status === "dead") conditions.push(`NOT ${alias}.alive`);
  if (filters.protocols.length > 0) {
    const mask = protocolMask(filters.protocols);
    conditions.push(
      filters.status === "dead"
        ? `(${alias}.alive_protocols & ${param(mask)}::smallint) <> ${param(mask)}::smallint`
        : `(${alias}.alive_protocols & ${param(mask)}::smallint) <> 0`,
    );
  }
  if (filters.countries.length > 0) conditions.push(`${alias}.country = ANY(${param(filters.countries)}::text[])`);
  if (filters.types.length > 0) conditions.push(`${alias}.estimated_type = ANY(${param(filters.types)}::text[])`);
  if (filters.anonymity.length > 0) conditions.push(`${alias}.anonymity_level = ANY(${param(filters.anonymity)}::text[])`);
  if (filters.reputation.length > 0) conditions.push(`${alias}.reputation_label = ANY(${param(filters.reputation)}::text[])`);
  if (filters.maxTimeoutMs !== undefined && filters.maxTimeoutMs > 0) conditions.push(`${alias}.response_time <= ${param(filters.maxTimeoutMs)}`);
  if (filters.maxRetries !== undefined) conditions.push(`${alias}.attempt <= ${param(filters.maxRetries)}`);
  return { text: conditions.join(" AND "), params };
}

/**
 * The condition with its parameters written in as literals, for a statement without parameters (`COPY (SELECT
 * ...) TO STDOUT`). Numbers must be safe integers, strings are quoted by the driver's escapeLiteral, arrays
 * become ARRAY[...] (each array placeholder carries its `::type[]` cast); values are never rescanned.
 */
export function inlineSqlCondition(condition: SqlCondition): string {
  const literal = (value: unknown): string => {
    if (typeof value === "number") {
      if (!Number.isSafeInteger(value)) throw new TypeError(`not an integer SQL parameter: ${value}`);
      return `(${value})`;
    }
    if (typeof value === "string") return pg.escapeLiteral(value);
    if (Array.isArray(value)) return `ARRAY[${value.map(literal).join(",")}]`;
    throw new TypeError(`unsupported SQL parameter of type ${typeof value}`);
  };
  return condition.text.replace(/\$(\d+)/g, (_placeholder, n: string) => {
    const index = Number(n) - 1;
    if (index < 0 || index >= condition.params.length) throw new RangeError(`no SQL parameter $${n}`);
    return literal(condition.params[index]);
  });
}
