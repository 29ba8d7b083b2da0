import { z } from "zod";
import { defineQueue } from "../queue-contract.js";

/**
 * Proxy checks: each `check-batch` carries a batch of proxy ids of one user,
 * never one job per proxy; `check-tick` claims due proxies into batches
 * (a job scheduler, and a wake-up with CHECK_WAKE_JOB_ID after an upload).
 */
export const checkQueue = defineQueue({
  name: "check",
  jobs: {
    "check-tick": z.object({}).passthrough(),
    "check-batch": z
      .object({
        userId: z.number().int().positive(),
        proxyIds: z.array(z.number().int().positive()).min(1).max(5000),
      })
      .passthrough(),
  },
  defaultJobOptions: { removeOnComplete: 1000, removeOnFail: 1000, attempts: 2, backoff: { type: "exponential", delay: 2000 } },
});

/** Id of the wake-up tick: while one waits, further wake-ups are the same job. */
export const CHECK_WAKE_JOB_ID = "check-wake";

/** Seconds between scheduled ticks. */
export const CHECK_TICK_SECONDS = 2;

/** Priority of check-batch jobs: ticks (no priority) go first, so a wake-up never waits behind batches. */
export const CHECK_BATCH_PRIORITY = 10;
