import type { Logger } from "@roost/observability";
import { CHECK_BATCH_PRIORITY, type checkQueue, type Producer } from "@roost/queue";
import type pg from "pg";
import { claimDueChecks } from "./check-schedule.repository.js";

export interface CheckSchedulerOptions {
  /** Most check-batch jobs waiting in Redis at once (all checker processes together); default 16. */
  maxQueuedBatches?: number;
  /** Proxies per check-batch job; default 250. */
  batchSize?: number;
  /** Lease of a claimed batch in ms; default 10 minutes. */
  leaseMs?: number;
}

export interface CheckTickResult {
  batches: number;
  proxies: number;
  /** Batches waiting when the tick started. */
  waiting: number;
}

export const DEFAULT_CHECK_BATCH_SIZE = 250;

/**
 * Batches one checker runs at once to keep `probesAtOnce` probes busy: a
 * batch holds its place until its slowest probe ends and its results are
 * written, so three batches' worth of probes wait behind each slot.
 */
export function batchesAtOnce(probesAtOnce: number, batchSize: number): number {
  return Math.ceil(probesAtOnce / Math.max(1, batchSize)) * 3 + 1;
}

/**
 * One scheduler tick: while fewer than `maxQueuedBatches` check-batch jobs
 * wait, claims due proxies (one batch per user per round, claimDueChecks)
 * and enqueues a job per batch with an id that names the claim. Redis holds
 * a bounded number of batches whatever the list size; PostgreSQL holds the
 * schedule, so a batch lost with Redis is claimed again when its lease ends.
 */
export async function runCheckTick(
  deps: { pool: Pick<pg.Pool, "query">; checks: Pick<Producer<typeof checkQueue>, "enqueue" | "queue">; logger: Logger },
  options: CheckSchedulerOptions = {},
): Promise<CheckTickResult> {
  const maxQueued = options.maxQueuedBatches ?? 16;
  const batchSize = options.batchSize ?? DEFAULT_CHECK_BATCH_SIZE;
  const leaseMs = options.leaseMs ?? 10 * 60_000;
  const waiting = await deps.checks.queue.getJobCountByTypes("wait", "prioritized", "paused");
  let room = maxQueued - waiting;
  let batches = 0;
  let proxies = 0;
  while (room > 0) {
    const claimed = await claimDueChecks(deps.pool, { users: room, batchSize, leaseMs });
    if (claimed.length === 0) break;
    const claimedAt = Date.now();
    for (const batch of claimed) {
      // Ids name the claim (user, first proxy, time): never `:`, never integer-looking.
      const jobId = `cb-${batch.userId}-${batch.proxyIds[0] ?? 0}-${claimedAt}`;
      await deps.checks.enqueue("check-batch", { userId: batch.userId, proxyIds: batch.proxyIds }, { jobId, priority: CHECK_BATCH_PRIORITY });
    }
    room -= claimed.length;
    batches += claimed.length;
    proxies += claimed.reduce((n, batch) => n + batch.proxyIds.length, 0);
  }
  if (batches > 0) deps.logger.debug("check batches queued", { batches, proxies, waiting });
  return { batches, proxies, waiting };
}
