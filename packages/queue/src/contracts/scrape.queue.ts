import { z } from "zod";
import { defineQueue } from "../queue-contract.js";

/**
 * Scraping (docs/scraper.md): `scrape-tick` claims due source URLs into
 * `scrape-url` jobs (a job scheduler, and a wake-up with SCRAPE_WAKE_JOB_ID);
 * one `scrape-url` fetches one URL for every user who follows it;
 * `scrape-source` hands a newly added source its URL's last result, or makes
 * the URL due at once.
 */
export const scrapeQueue = defineQueue({
  name: "scrape",
  jobs: {
    "scrape-source": z.object({ userId: z.number().int().positive(), sourceId: z.number().int().positive() }).passthrough(),
    "scrape-tick": z.object({}).passthrough(),
    // leasedUntil: the claim's lease end (ms); a job whose claim was superseded does nothing.
    "scrape-url": z.object({ fetchId: z.number().int().positive(), leasedUntil: z.number().int().positive().optional() }).passthrough(),
  },
  defaultJobOptions: { removeOnComplete: 1000, removeOnFail: 1000, attempts: 2, backoff: { type: "exponential", delay: 5000 } },
});

/** Id of the wake-up tick: while one waits, further wake-ups are the same job. */
export const SCRAPE_WAKE_JOB_ID = "scrape-wake";

/** Seconds between scheduled ticks. */
export const SCRAPE_TICK_SECONDS = 5;

/** Priority of scrape-url and scrape-source jobs: ticks (no priority) go first. */
export const SCRAPE_JOB_PRIORITY = 10;
