/**
 * The proxy domain's fixed vocabulary: protocols and their bit in
 * `proxies.alive_protocols`, and the values of the label columns. SQL that
 * reads the bitmask is derived from here (`protocolOfMaskSql`).
 */

/** Protocols in bit order of `proxies.alive_protocols` (http 1, https 2, socks4 4, socks5 8). */
export const PROXY_PROTOCOLS = ["http", "https", "socks4", "socks5"] as const;
export type ProxyProtocol = (typeof PROXY_PROTOCOLS)[number];

export const REPUTATION_LABELS = ["good", "neutral", "poor", "unknown"] as const;
export type ReputationLabel = (typeof REPUTATION_LABELS)[number];

export const ANONYMITY_LEVELS = ["elite", "anonymous", "transparent", "N/A"] as const;
export const ESTIMATED_TYPES = ["datacenter", "residential", "mobile", "unknown"] as const;

export const protocolBit = (protocol: ProxyProtocol): number => 1 << PROXY_PROTOCOLS.indexOf(protocol);

/** The bitmask of a set of protocols. */
export const protocolMask = (protocols: readonly ProxyProtocol[]): number => protocols.reduce((bits, protocol) => bits | protocolBit(protocol), 0);

/** Alive protocols of a row from its bitmask, in bit order. */
export function protocolsOfMask(mask: number): ProxyProtocol[] {
  return PROXY_PROTOCOLS.filter((_, bit) => (mask & (1 << bit)) !== 0);
}

/** Order of protocols in answers (bit order); anything else sorts last. */
export function protocolOrder(protocol: string): number {
  const index = (PROXY_PROTOCOLS as readonly string[]).indexOf(protocol);
  return index < 0 ? PROXY_PROTOCOLS.length : index;
}

/**
 * SQL for "the one protocol of a mask with a single bit set, else `otherwise`"
 * and "the first protocol in bit order of a non-zero mask", over `mask` (a SQL
 * expression), both built from PROXY_PROTOCOLS.
 */
export function singleProtocolOfMaskSql(mask: string, otherwise: string): string {
  const cases = PROXY_PROTOCOLS.map((protocol) => `WHEN ${mask} = ${protocolBit(protocol)} THEN '${protocol}'`).join(" ");
  return `CASE ${cases} ELSE ${otherwise} END`;
}

export function firstProtocolOfMaskSql(mask: string): string {
  const last = PROXY_PROTOCOLS[PROXY_PROTOCOLS.length - 1];
  const cases = PROXY_PROTOCOLS.slice(0, -1)
    .map((protocol) => `WHEN ${mask} & ${protocolBit(protocol)} <> 0 THEN '${protocol}'`)
    .join(" ");
  return `CASE ${cases} ELSE '${last}' END`;
}

/** Paging of DESIGN.md: pageSize default 40, larger values clamp to 100. */
export const DEFAULT_PAGE_SIZE = 40;
export const MAX_PAGE_SIZE = 100;
/** Statistics `limit`: default 100, larger values clamp to 500. */
export const DEFAULT_STATISTICS_LIMIT = 100;
export const MAX_STATISTICS_LIMIT = 500;
/** Longest `search` term accepted. */
export const MAX_SEARCH_LENGTH = 200;
