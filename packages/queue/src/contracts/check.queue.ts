import { z } from "zod";
import { defineQueue } from "../queue-contract.js";

/** Proxy checks: each job carries a batch of proxy ids of one user, never one job per proxy. */
export const checkQueue = defineQueue({
  name: "check",
  jobs: {
    "check-batch": z
      .object({
        userId: z.number().int().positive(),
        proxyIds: z.array(z.number().int().positive()).min(1).max(5000),
      })
      .passthrough(),
  },
  defaultJobOptions: { removeOnComplete: 1000, removeOnFail: 1000, attempts: 2, backoff: { type: "exponential", delay: 2000 } },
});
