import { findBlockedUrls, hasBlockedUrls, type GlobalConfig, type GlobalConfigStore } from "@roost/global-config";
import type { Database } from "@roost/db";
import type { Logger } from "@roost/observability";
import type { Producer, scrapeQueue } from "@roost/queue";
import { dropScrapeWork } from "@roost/scraping";
import { badRequest } from "../../http/http-error.js";
import { removeBlacklistedUserUrls } from "./blacklist-cleanup.repository.js";

/** At most this many validation problems are named in one 400. */
const MAX_REPORTED_ISSUES = 5;

export interface GlobalSettingsService {
  read(): GlobalConfig;
  /**
   * Deep-merges `patch` into the stored config (omitted keys keep their
   * values) and broadcasts it. 400 for unknown keys, wrong types or ranges,
   * and for URLs the merged config's own website blacklist blocks; a refused
   * save changes nothing. When the blacklist grew, every user's judges and
   * scrape sources it now blocks are removed before this resolves, with the
   * fetch state and the waiting scrape jobs of those sources.
   */
  save(patch: unknown): Promise<void>;
}

export function createGlobalSettingsService(deps: {
  globalConfig: GlobalConfigStore;
  db: Database;
  logger: Logger;
  queues: { scrape: Pick<Producer<typeof scrapeQueue>, "queue"> };
}): GlobalSettingsService {
  return {
    read: () => deps.globalConfig.current(),

    async save(patch) {
      const result = await deps.globalConfig.update(patch, refuseBlockedUrls);
      if (!result.ok) throw badRequest(result.issues.slice(0, MAX_REPORTED_ISSUES).join("; "));
      const previous = new Set(result.previous.website_blacklist);
      if (result.config.website_blacklist.some((entry) => !previous.has(entry))) {
        const removed = await removeBlacklistedUserUrls(deps.db.pool, result.config.website_blacklist);
        let dropped = null;
        try {
          dropped = await dropScrapeWork(
            { pool: deps.db.pool, scrapes: deps.queues.scrape },
            { sourceIds: removed.sources.map((source) => source.id), urls: [...new Set(removed.sources.map((source) => source.url))] },
          );
        } catch (error) {
          // The save stands: a job left behind finds its source or URL gone when it runs.
          deps.logger.warn("scrape work of blocked sources not dropped", { error });
        }
        deps.logger.info("website blacklist applied to user judges and sources", { judgesRemoved: removed.judgesRemoved, sourcesRemoved: removed.sources.length, ...dropped });
      }
    },
  };
}

/**
 * Runs under the store's row lock on the merged config, so the blacklist that
 * counts is the one being saved (adding `bad.org` while a judge points at it
 * is refused until the judge goes too) and the stored config never holds a
 * blocked URL.
 */
function refuseBlockedUrls(merged: GlobalConfig): void {
  const blocked = findBlockedUrls(merged);
  if (!hasBlockedUrls(blocked)) return;
  throw badRequest("Some URLs are blocked by the website blacklist", {
    blocked_websites: blocked,
    website_blacklist: merged.website_blacklist,
  });
}
