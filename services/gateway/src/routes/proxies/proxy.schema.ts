import { z } from "zod";

/** Protocols in bit order of `proxies.alive_protocols` (http 1, https 2, socks4 4, socks5 8). */
export const PROXY_PROTOCOLS = ["http", "https", "socks4", "socks5"] as const;
export type ProxyProtocol = (typeof PROXY_PROTOCOLS)[number];

export const REPUTATION_LABELS = ["good", "neutral", "poor", "unknown"] as const;
export type ReputationLabel = (typeof REPUTATION_LABELS)[number];

export const ANONYMITY_LEVELS = ["elite", "anonymous", "transparent", "N/A"] as const;
export const ESTIMATED_TYPES = ["datacenter", "residential", "mobile", "unknown"] as const;

export const protocolBit = (protocol: ProxyProtocol): number => 1 << PROXY_PROTOCOLS.indexOf(protocol);

/** Alive protocols of a row from its bitmask, in bit order. */
export function protocolsOfMask(mask: number): ProxyProtocol[] {
  return PROXY_PROTOCOLS.filter((_, bit) => (mask & (1 << bit)) !== 0);
}

/** Paging of DESIGN.md: pageSize default 40, larger values clamp to 100. */
export const DEFAULT_PAGE_SIZE = 40;
export const MAX_PAGE_SIZE = 100;
/** Statistics `limit`: default 100, larger values clamp to 500. */
export const DEFAULT_STATISTICS_LIMIT = 100;
export const MAX_STATISTICS_LIMIT = 500;
/** Longest `search` term accepted. */
export const MAX_SEARCH_LENGTH = 200;
/** Most ids one export or delete request may list. */
export const MAX_REQUEST_IDS = 1_000_000;

const id = z.number().int().positive().max(2_147_483_647);
const ids = z.array(id).max(MAX_REQUEST_IDS);
const nonNegative = z.number().int().min(0).max(2_147_483_647);

/**
 * The filter part shared by the export request and delete Mode B (contract
 * "Export request"). Booleans and numbers only act with `filter: true`;
 * `proxyStatus` and `reputationLabels` act always; `proxies` restricts to
 * those ids. Nulls are accepted as "absent" (clients send them).
 */
export const bulkFilterSchema = z.object({
  proxies: ids.nullish(),
  filter: z.boolean().nullish(),
  http: z.boolean().nullish(),
  https: z.boolean().nullish(),
  socks4: z.boolean().nullish(),
  socks5: z.boolean().nullish(),
  maxRetries: nonNegative.nullish(),
  /** Milliseconds; 0 means no limit. */
  maxTimeout: nonNegative.nullish(),
  proxyStatus: z.enum(["all", "alive", "dead"]).nullish(),
  reputationLabels: z.array(z.enum(REPUTATION_LABELS)).max(REPUTATION_LABELS.length * 4).nullish(),
});
export type BulkFilterRequest = z.output<typeof bulkFilterSchema>;

export const exportRequestSchema = bulkFilterSchema.extend({
  /** A template (docs/proxies.md), `json` or `csv`; default `ip:port`. */
  outputFormat: z.string().max(1000).nullish(),
});
export type ExportRequest = z.output<typeof exportRequestSchema>;

/** Delete Mode A: a JSON array of ids. */
export const deleteModeASchema = ids;

/**
 * Delete Mode B: the filter object plus `scope`. Strict, unlike export's: a
 * misspelled filter (`status` for `proxyStatus`) beside `scope: "all"` would
 * otherwise be dropped and the delete widened to every proxy of the caller.
 */
export const deleteModeBSchema = bulkFilterSchema
  .extend({
    scope: z.enum(["selected", "all"]).nullish(),
  })
  .strict();
export type DeleteModeB = z.output<typeof deleteModeBSchema>;
