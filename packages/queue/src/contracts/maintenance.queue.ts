import { z } from "zod";
import { defineQueue } from "../queue-contract.js";

/**
 * Periodic housekeeping. Schedules are BullMQ job schedulers (one per job
 * name), so exactly one instance runs each tick however many are up.
 */
export const maintenanceQueue = defineQueue({
  name: "maintenance",
  jobs: {
    /** Deletes expired or used password-reset tokens. */
    "cleanup-reset-tokens": z.object({}).passthrough(),
    /** Deletes revoked-token rows whose tokens have expired anyway. */
    "cleanup-revoked-tokens": z.object({}).passthrough(),
    /** Makes the statistics' daily partitions ahead and drops those past retention. */
    "statistics-partitions": z.object({}).passthrough(),
    /** Fetches the blacklist sources due (blacklist_interval_seconds) and removes proxies inside their ranges. */
    "blacklist-refresh": z.object({}).passthrough(),
    /** Removes in batches the bulk rows of deleted accounts. */
    "purge-deleted-accounts": z.object({ batchSize: z.number().int().positive().optional() }).passthrough(),
    /**
     * Downloads GeoLite2 Country and ASN when due (docs/geo.md); `force` skips
     * the interval (the admin just set or changed the key).
     */
    "geolite-update": z.object({ force: z.boolean().optional() }).passthrough(),
    /** Continues re-deriving existing proxies' country, AS and type after a GeoLite update. */
    "geolite-rederive": z.object({ batchSize: z.number().int().positive().optional() }).passthrough(),
  },
  defaultJobOptions: { removeOnComplete: 100, removeOnFail: 500, attempts: 3, backoff: { type: "exponential", delay: 5000 } },
});

/** How often each maintenance job runs, in seconds. */
export const maintenanceSchedules: Record<keyof typeof maintenanceQueue.jobs, number> = {
  "cleanup-reset-tokens": 15 * 60,
  "cleanup-revoked-tokens": 60 * 60,
  "purge-deleted-accounts": 60,
  "statistics-partitions": 60 * 60,
  // Cheap when not due: the job compares geolite.interval_seconds with the last success.
  "geolite-update": 10 * 60,
  // Resumes a pass a lost job left unfinished; a no-op when none is pending.
  "geolite-rederive": 5 * 60,
  // Each run fetches only the sources whose ranges are older than blacklist_interval_seconds.
  "blacklist-refresh": 60,
};
