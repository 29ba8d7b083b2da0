import { z } from "zod";
import { judgeSchema } from "@roost/global-config";

/** Columns a client may show in the proxy lists, in their default order. */
export const PROXY_COLUMNS = [
  "id",
  "ip",
  "port",
  "protocols",
  "estimated_type",
  "response_time",
  "country",
  "anonymity_level",
  "alive",
  "latest_check",
  "reputation",
] as const;

/** Columns of the scrape-source list, in their default order. */
export const SCRAPE_SOURCE_LIST_COLUMNS = [
  "id",
  "url",
  "proxy_count",
  "alive_count",
  "dead_count",
  "unknown_count",
  "added_at",
  "last_scraped_at",
] as const;

const columns = (allowed: readonly string[]) =>
  z
    .array(z.string().refine((c) => allowed.includes(c), { message: `unknown column; allowed: ${allowed.join(", ")}` }))
    .max(allowed.length)
    .refine((list) => new Set(list).size === list.length, "columns must not repeat");

/**
 * POST /api/user/settings: the full object or any subset. Unknown keys are
 * ignored (the contract lets `scraping_sources` ride along and persists it
 * only through /api/scrapingSources); wrong types or ranges are a 400.
 */
export const userSettingsUpdateSchema = z
  .object({
    http_protocol: z.boolean(),
    https_protocol: z.boolean(),
    socks4_protocol: z.boolean(),
    socks5_protocol: z.boolean(),
    /** Milliseconds. */
    timeout: z.number().int().min(100).max(60000),
    retries: z.number().int().min(0).max(10),
    UseHttpsForSocks: z.boolean(),
    transport_protocol: z.literal("tcp", { message: "only tcp is supported" }),
    auto_remove_failing_proxies: z.boolean(),
    auto_remove_failure_threshold: z.number().int().min(1).max(100),
    judges: z
      .array(judgeSchema)
      .max(100)
      .refine((list) => new Set(list.map((j) => j.url)).size === list.length, "judge URLs must not repeat"),
    proxy_list_columns: columns(PROXY_COLUMNS),
    scrape_source_proxy_columns: columns(PROXY_COLUMNS),
    scrape_source_list_columns: columns(SCRAPE_SOURCE_LIST_COLUMNS),
  })
  .partial();

export type UserSettingsUpdate = z.output<typeof userSettingsUpdateSchema>;

/** The contract's User settings object. */
export interface UserSettingsView {
  http_protocol: boolean;
  https_protocol: boolean;
  socks4_protocol: boolean;
  socks5_protocol: boolean;
  timeout: number;
  retries: number;
  UseHttpsForSocks: boolean;
  transport_protocol: string;
  auto_remove_failing_proxies: boolean;
  auto_remove_failure_threshold: number;
  judges: { url: string; regex: string }[];
  scraping_sources: string[];
  proxy_list_columns: string[];
  scrape_source_proxy_columns: string[];
  scrape_source_list_columns: string[];
}
