import type pg from "pg";
import type { ScrapeProducer } from "./scrape-runner.js";

/** Queued jobs are read this many at a time. */
const JOB_PAGE = 1000;

export interface DroppedScrapeWork {
  /** `scrape_fetches` rows deleted: URLs nobody follows now. */
  fetchesRemoved: number;
  /** Waiting `scrape-url` and `scrape-source` jobs removed from the queue. */
  jobsRemoved: number;
}

/**
 * After sources were removed from every user (a newly blocked host): deletes
 * the fetch state of those URLs that nobody follows now, and removes the
 * waiting `scrape-url` jobs of those states and `scrape-source` jobs of the
 * removed sources, so they neither hold places of the bounded queue nor run.
 * A job already running is left to finish: it finds its source or URL gone.
 */
export async function dropScrapeWork(
  deps: { pool: Pick<pg.Pool, "query">; scrapes: Pick<ScrapeProducer, "queue"> },
  removed: { sourceIds: readonly number[]; urls: readonly string[] },
): Promise<DroppedScrapeWork> {
  if (removed.sourceIds.length === 0 && removed.urls.length === 0) return { fetchesRemoved: 0, jobsRemoved: 0 };
  const { rows } = await deps.pool.query<{ id: number }>(
    `DELETE FROM scrape_fetches f WHERE f.url = ANY($1::text[])
        AND NOT EXISTS (SELECT 1 FROM scrape_sources s WHERE s.url = f.url)
     RETURNING f.id`,
    [[...removed.urls]],
  );
  const fetchIds = new Set(rows.map((row) => row.id));
  const sourceIds = new Set(removed.sourceIds);
  const doomed = (job: { name: string; data: unknown }): boolean => {
    const data = job.data as { fetchId?: unknown; sourceId?: unknown };
    if (job.name === "scrape-url") return typeof data.fetchId === "number" && fetchIds.has(data.fetchId);
    if (job.name === "scrape-source") return typeof data.sourceId === "number" && sourceIds.has(data.sourceId);
    return false;
  };
  const queue = deps.scrapes.queue;
  const jobIds: string[] = [];
  // One state at a time: getJobs applies its range to each state it is given.
  for (const state of ["wait", "prioritized", "delayed", "paused"] as const) {
    for (let start = 0; ; start += JOB_PAGE) {
      const page = await queue.getJobs([state], start, start + JOB_PAGE - 1, true);
      for (const job of page) if (job?.id !== undefined && doomed(job)) jobIds.push(job.id);
      if (page.length < JOB_PAGE) break;
    }
  }
  let jobsRemoved = 0;
  // 0 means a worker took the job meanwhile (it is locked) or it is gone already.
  for (const id of jobIds) jobsRemoved += await queue.remove(id);
  return { fetchesRemoved: fetchIds.size, jobsRemoved };
}
