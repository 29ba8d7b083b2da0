import type { JobsOptions } from "bullmq";
import type { z } from "zod";

/** Job name → zod schema of its payload. Payloads only grow by optional fields. */
export type JobSchemas = Record<string, z.ZodType>;

export interface QueueContract<J extends JobSchemas = JobSchemas> {
  /** BullMQ queue name (the key prefix is per deployment, see QUEUE_PREFIX). */
  readonly name: string;
  readonly jobs: J;
  readonly defaultJobOptions: JobsOptions;
}

export type JobName<C extends QueueContract> = keyof C["jobs"] & string;
export type JobInput<C extends QueueContract, K extends JobName<C>> = z.input<C["jobs"][K]>;
export type JobPayload<C extends QueueContract, K extends JobName<C>> = z.output<C["jobs"][K]>;

export function defineQueue<J extends JobSchemas>(contract: QueueContract<J>): QueueContract<J> {
  return contract;
}
