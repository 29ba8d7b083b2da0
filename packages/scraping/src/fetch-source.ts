import { isBlockedUrl } from "@roost/global-config";
import { guardedGet, OutboundBlockedError, type OutboundGuard } from "@roost/net";
import { extractProxyLines } from "./extract-proxies.js";
import { messageOf, type RobotsCache } from "./robots-cache.js";

/** The outcome a follower's `scrape_sources.last_status` records. */
export type ScrapeStatus = "ok" | "not_modified" | "robots_disallowed" | "blocked" | "error";

export interface FetchSourceOptions {
  guard: OutboundGuard;
  robots: RobotsCache;
  userAgent: string;
  /** scraper.timeout_ms: one deadline for every hop of the fetch. */
  timeoutMs: number;
  /** scraper.max_bytes: a longer body is an error, not a partial list. */
  maxBytes: number;
  respectRobots: boolean;
  /** website_blacklist of the global configuration. */
  websiteBlacklist: readonly string[];
  /** Validators of the last successful fetch, sent as a conditional request. */
  etag: string | null;
  lastModified: string | null;
}

export type FetchSourceResult =
  | { status: "ok"; lines: string[]; etag: string | null; lastModified: string | null }
  | { status: "not_modified" }
  | { status: "robots_disallowed" | "blocked" | "error"; error: string };

/** Redirects followed, each one checked by the guard again. */
export const MAX_SCRAPE_REDIRECTS = 5;

/**
 * One fetch of a source list: the website blacklist, then robots.txt (when
 * respected), then a conditional GET through the outbound guard. Never
 * throws: every failure is an outcome with its reason.
 */
export async function fetchSource(url: string, options: FetchSourceOptions): Promise<FetchSourceResult> {
  if (isBlockedUrl(url, options.websiteBlacklist)) return { status: "blocked", error: "the website blacklist blocks this source" };
  try {
    if (options.respectRobots) {
      const robots = await options.robots.check(url);
      if (robots.blocked) return { status: "blocked", error: robots.error ?? "refused by the outbound guard" };
      if (!robots.allowed) return { status: "robots_disallowed", error: robots.error ?? "robots.txt disallows this URL" };
    }
    const headers: Record<string, string> = {
      "user-agent": options.userAgent,
      accept: "text/plain, text/html, application/json;q=0.9, */*;q=0.5",
    };
    if (options.etag !== null) headers["if-none-match"] = options.etag;
    if (options.lastModified !== null) headers["if-modified-since"] = options.lastModified;
    const response = await guardedGet(options.guard, url, {
      timeoutMs: options.timeoutMs,
      maxBytes: options.maxBytes,
      maxRedirects: MAX_SCRAPE_REDIRECTS,
      headers,
    });
    if (response.status === 304) return { status: "not_modified" };
    if (response.status < 200 || response.status >= 300) return { status: "error", error: `HTTP ${response.status}` };
    const contentType = header(response.headers["content-type"]);
    return {
      status: "ok",
      lines: extractProxyLines(response.body.toString("utf8"), contentType ?? undefined),
      etag: header(response.headers.etag),
      lastModified: header(response.headers["last-modified"]),
    };
  } catch (error) {
    if (error instanceof OutboundBlockedError) return { status: "blocked", error: error.message };
    return { status: "error", error: messageOf(error) };
  }
}

function header(value: string | string[] | undefined): string | null {
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === "" ? null : first;
}
