import { Queue, type JobsOptions } from "bullmq";
import type { Redis } from "ioredis";
import { ClosableConnection } from "./connection.js";
import type { JobInput, JobName, QueueContract } from "./queue-contract.js";

export interface Producer<C extends QueueContract> {
  readonly queue: Queue;
  /** Validates the payload against the contract, then adds the job. */
  enqueue<K extends JobName<C>>(name: K, payload: JobInput<C, K>, options?: JobsOptions): Promise<string>;
  /** Registers (or updates) a repeating scheduler for `name`, id = name. */
  schedule<K extends JobName<C>>(name: K, everySeconds: number, payload: JobInput<C, K>): Promise<void>;
  close(): Promise<void>;
}

export function createProducer<C extends QueueContract>(
  contract: C,
  options: { connection: Redis; prefix: string },
): Producer<C> {
  const queue = new Queue(contract.name, {
    connection: options.connection,
    prefix: options.prefix,
    defaultJobOptions: contract.defaultJobOptions,
  }, ClosableConnection);
  queue.on("error", () => undefined);
  let closed = false;
  return {
    queue,
    async enqueue(name, payload, jobOptions) {
      const schema = contract.jobs[name];
      if (!schema) throw new Error(`queue ${contract.name} has no job ${name}`);
      const data: unknown = schema.parse(payload);
      const job = await queue.add(name, data, jobOptions);
      return job.id ?? "";
    },
    async schedule(name, everySeconds, payload) {
      const schema = contract.jobs[name];
      if (!schema) throw new Error(`queue ${contract.name} has no job ${name}`);
      await queue.upsertJobScheduler(name, { every: everySeconds * 1000 }, { name, data: schema.parse(payload) });
    },
    async close() {
      if (closed) return;
      closed = true;
      await queue.close().catch(() => undefined);
    },
  };
}
