import { z } from "zod";
import { defineQueue } from "../queue-contract.js";

/**
 * Wake-ups for the mailer. The outbox table is the source of truth; a lost
 * wake-up only delays a mail until the mailer's next poll.
 */
export const mailQueue = defineQueue({
  name: "mail",
  jobs: {
    wake: z.object({ outboxId: z.string().optional() }).passthrough(),
  },
  defaultJobOptions: { removeOnComplete: true, removeOnFail: 100, attempts: 1 },
});
