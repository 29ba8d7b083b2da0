import { UnrecoverableError, Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import { ClosableConnection } from "./connection.js";
import type { JobName, JobPayload, QueueContract } from "./queue-contract.js";

/** One handler per job name: a missing handler is a type error, and a boot error below. */
export type Handlers<C extends QueueContract> = {
  [K in JobName<C>]: (payload: JobPayload<C, K>, job: Job) => Promise<unknown>;
};

export interface Consumer {
  readonly worker: Worker;
  close(): Promise<void>;
}

export function createConsumer<C extends QueueContract>(
  contract: C,
  handlers: Handlers<C>,
  options: { connection: Redis; prefix: string; concurrency?: number; onError?: (error: Error, job?: Job) => void },
): Consumer {
  for (const name of Object.keys(contract.jobs)) {
    if (typeof (handlers as Record<string, unknown>)[name] !== "function") {
      throw new Error(`queue ${contract.name}: no handler for job ${name}`);
    }
  }
  const worker = new Worker(
    contract.name,
    async (job: Job) => {
      const schema = contract.jobs[job.name];
      const handler = (handlers as Record<string, ((payload: unknown, job: Job) => Promise<unknown>) | undefined>)[job.name];
      if (!schema || !handler) throw new UnrecoverableError(`unknown job ${job.name} on queue ${contract.name}`);
      const parsed = schema.safeParse(job.data);
      if (!parsed.success) throw new UnrecoverableError(`invalid payload for ${contract.name}/${job.name}: ${parsed.error.message}`);
      return handler(parsed.data, job);
    },
    { connection: options.connection, prefix: options.prefix, concurrency: options.concurrency ?? 1 },
    ClosableConnection,
  );
  worker.on("error", (error) => options.onError?.(error));
  worker.on("failed", (job, error) => options.onError?.(error, job));
  let closed = false;
  return {
    worker,
    async close() {
      if (closed) return;
      closed = true;
      await startedOrTimeout(worker);
      await worker.close().catch(() => undefined);
    },
  };
}

/** How long closing a consumer waits for BullMQ to finish starting. */
const STARTUP_WAIT_MS = 2_000;

/**
 * Waits until both of the worker's connections finished starting (a round
 * trip on a healthy Redis), at most STARTUP_WAIT_MS. BullMQ closes a
 * connection that is still starting without waiting for its server check
 * (INFO); on its own duplicate, the blocking connection, that check then
 * fails after every listener was dropped and surfaces as an unhandled
 * "Connection is closed." error (ClosableConnection covers only the
 * connection we hand in). With Redis unreachable the wait runs out and that
 * error can still appear while the service stops.
 */
async function startedOrTimeout(worker: Worker): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, STARTUP_WAIT_MS);
  });
  try {
    await Promise.race([worker.waitUntilReady().then(() => undefined, () => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
