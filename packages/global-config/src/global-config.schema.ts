import { z } from "zod";
import { judgeRegexProblem } from "./judge-regex.js";
import { normalizeBlacklistEntry } from "./website-blacklist.js";

/**
 * The admin's global configuration (GET /api/global/settings, POST
 * /api/saveSettings). Shape and defaults are fixed by DESIGN.md. Objects are
 * strict: an unknown key is a 400, not silently dropped.
 */

const httpUrl = z
  .string()
  .trim()
  .max(2048)
  .refine((value) => {
    try {
      const url = new URL(value);
      return url.protocol === "http:" || url.protocol === "https:";
    } catch {
      return false;
    }
  }, "must be an http(s) URL");

const int = (min: number, max: number) => z.number().int().min(min).max(max);

export const judgeSchema = z.strictObject({
  url: httpUrl,
  /** `default` means the built-in judge-answer check; anything else is a regular expression. */
  regex: z
    .string()
    .max(1024)
    // The checker runs judge regexes in RE2 (linear time): what RE2 cannot compile is refused here.
    .refine((value) => judgeRegexProblem(value) === null, "must be `default` or a regular expression RE2 accepts (no lookaround or backreferences)"),
});

const headerName = z.string().trim().min(1).max(128).regex(/^[A-Za-z0-9-]+$/, "must be an HTTP header name");

/**
 * Host names for the website blacklist: `example.com` blocks it and every
 * subdomain. Entries are stored in canonical form (see
 * normalizeBlacklistEntry): `*.Example.COM.` is kept as `example.com`.
 */
const HOST_NAME = /^(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const domain = z
  .string()
  .max(1024)
  .transform(normalizeBlacklistEntry)
  .refine((value) => value.length <= 253 && HOST_NAME.test(value), "must be a domain name such as example.com");

export const globalConfigSchema = z.strictObject({
  protocols: z.strictObject({ http: z.boolean(), https: z.boolean(), socks4: z.boolean(), socks5: z.boolean() }),
  checker: z.strictObject({
    interval_seconds: int(60, 30 * 86400),
    timeout_ms: int(100, 60000),
    retries: int(0, 10),
    concurrency: int(1, 20000),
    judges: z.array(judgeSchema).max(100),
    use_https_for_socks: z.boolean(),
    ip_lookup: z.union([httpUrl, z.literal("")]),
    standard_headers: z.array(headerName).max(100),
    proxy_headers: z.array(headerName).max(100),
    save_responses: z.boolean(),
    statistics_retention_days: int(1, 3650),
    response_retention_days: int(1, 3650),
  }),
  scraper: z.strictObject({
    interval_seconds: int(60, 30 * 86400),
    timeout_ms: int(100, 600000),
    max_bytes: int(1024, 1024 * 1024 * 1024),
    respect_robots_txt: z.boolean(),
    scrape_sites: z.array(httpUrl).max(10000),
  }),
  proxy_limits: z.strictObject({
    enabled: z.boolean(),
    max_per_user: int(1, 100_000_000),
    exclude_admins: z.boolean(),
  }),
  geolite: z.strictObject({
    api_key: z.string().max(256),
    auto_update: z.boolean(),
    interval_seconds: int(3600, 30 * 86400),
    download_base_url: httpUrl,
  }),
  blacklist_sources: z.array(httpUrl).max(1000),
  blacklist_interval_seconds: int(60, 30 * 86400),
  website_blacklist: z.array(domain).max(10000),
  rotating_proxies: z
    .strictObject({ port_start: int(1, 65535), port_end: int(1, 65535) })
    .refine((r) => r.port_start <= r.port_end, "port_start must not exceed port_end"),
});

export type GlobalConfig = z.output<typeof globalConfigSchema>;

export const defaultGlobalConfig: GlobalConfig = {
  protocols: { http: true, https: true, socks4: true, socks5: true },
  checker: {
    interval_seconds: 3600,
    timeout_ms: 5000,
    retries: 1,
    concurrency: 512,
    judges: [
      { url: "http://azenv.net/", regex: "default" },
      { url: "https://pool.proxyspace.pro/judge.php", regex: "default" },
    ],
    use_https_for_socks: true,
    ip_lookup: "https://api.ipify.org",
    standard_headers: ["USER-AGENT", "HOST", "ACCEPT", "ACCEPT-ENCODING"],
    proxy_headers: ["VIA", "X-FORWARDED-FOR", "FORWARDED", "X-REAL-IP", "CLIENT-IP", "X-PROXY-ID"],
    save_responses: true,
    statistics_retention_days: 30,
    response_retention_days: 7,
  },
  scraper: { interval_seconds: 21600, timeout_ms: 15000, max_bytes: 8388608, respect_robots_txt: true, scrape_sites: [] },
  proxy_limits: { enabled: false, max_per_user: 100000, exclude_admins: true },
  geolite: { api_key: "", auto_update: true, interval_seconds: 86400, download_base_url: "https://download.maxmind.com" },
  blacklist_sources: ["https://www.spamhaus.org/drop/drop.txt"],
  blacklist_interval_seconds: 21600,
  website_blacklist: [],
  rotating_proxies: { port_start: 20000, port_end: 20100 },
};
