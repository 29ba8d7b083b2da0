import { z } from "zod";
import { defineQueue } from "../queue-contract.js";

/** One scrape source per job. */
export const scrapeQueue = defineQueue({
  name: "scrape",
  jobs: {
    "scrape-source": z.object({ userId: z.number().int().positive(), sourceId: z.number().int().positive() }).passthrough(),
  },
  defaultJobOptions: { removeOnComplete: 1000, removeOnFail: 1000, attempts: 2, backoff: { type: "exponential", delay: 5000 } },
});
