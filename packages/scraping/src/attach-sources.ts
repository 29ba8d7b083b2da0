import type { Logger } from "@roost/observability";
import { SCRAPE_JOB_PRIORITY } from "@roost/queue";
import type pg from "pg";
import { ensureFetches } from "./scrape-fetch.repository.js";
import type { ScrapeProducer } from "./scrape-runner.js";

/** Sources were saved but their `scrape-source` jobs could not be queued; the save was undone. */
export class SourcesNotQueuedError extends Error {
  override readonly name = "SourcesNotQueuedError";
}

export interface AttachSourcesDeps {
  pool: Pick<pg.Pool, "connect" | "query">;
  scrapes: Pick<ScrapeProducer, "enqueue">;
  logger: Logger;
}

/**
 * Makes the user follow these (already validated) URLs: new rows and their
 * fetch state in one transaction, then one `scrape-source` job per new
 * source (`ss-<id>`). When queueing fails the new rows are deleted again and
 * SourcesNotQueuedError is thrown. Returns the sources new for the user.
 */
export async function attachSources(deps: AttachSourcesDeps, userId: number, urls: readonly string[]): Promise<{ id: number; url: string }[]> {
  if (urls.length === 0) return [];
  const client = await deps.pool.connect();
  let added: { id: number; url: string }[];
  try {
    await client.query("BEGIN");
    const { rows } = await client.query<{ id: number; url: string }>(
      `INSERT INTO scrape_sources (user_id, url) SELECT $1, u FROM unnest($2::text[]) AS u
       ON CONFLICT (user_id, url) DO NOTHING RETURNING id, url`,
      [userId, urls],
    );
    await ensureFetches(client, rows.map((row) => row.url));
    await client.query("COMMIT");
    added = rows.sort((a, b) => a.id - b.id);
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
  try {
    for (const source of added) {
      await deps.scrapes.enqueue("scrape-source", { userId, sourceId: source.id }, { jobId: `ss-${source.id}`, priority: SCRAPE_JOB_PRIORITY });
    }
  } catch (error) {
    deps.logger.error("scrape sources not queued; their save is undone", { userId, sources: added.length, error });
    await deps.pool.query("DELETE FROM scrape_sources WHERE user_id = $1 AND id = ANY($2::int[])", [userId, added.map((source) => source.id)]);
    throw new SourcesNotQueuedError("scrape sources could not be queued", { cause: error });
  }
  return added;
}
