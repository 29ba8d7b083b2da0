import type { GlobalConfig } from "./global-config.schema.js";
import { isBlockedUrl } from "./website-blacklist.js";

/** The URLs of a config that its own website blacklist blocks, per field of the save-settings 400. */
export interface BlockedUrls {
  /** From `checker.judges[].url`. */
  judges: string[];
  /** From `scraper.scrape_sites`. */
  scrape_sites: string[];
  blacklist_sources: string[];
  /** `checker.ip_lookup`, as a one-element list when blocked. */
  ip_lookup: string[];
}

export function findBlockedUrls(config: GlobalConfig): BlockedUrls {
  const blacklist = config.website_blacklist;
  const blocked = (urls: readonly string[]) => urls.filter((url) => isBlockedUrl(url, blacklist));
  return {
    judges: blocked(config.checker.judges.map((judge) => judge.url)),
    scrape_sites: blocked(config.scraper.scrape_sites),
    blacklist_sources: blocked(config.blacklist_sources),
    ip_lookup: config.checker.ip_lookup === "" ? [] : blocked([config.checker.ip_lookup]),
  };
}

export function hasBlockedUrls(blocked: BlockedUrls): boolean {
  return Object.values(blocked).some((urls) => urls.length > 0);
}
